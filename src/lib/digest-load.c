/* digest-load.c - nettle's SHA-256 for digest.c (digest-load.h).
 * hutch-static links its own copy, compiled with HUTCH_STATIC_BUILD, ahead
 * of src/libhutch.a, whose copy (the dlopen() one) is then never pulled in.
 */
#include "config.h"

#include <stdlib.h>

#include "lib/digest-load.h"
#include "lib/log.h"

#ifdef HUTCH_STATIC_BUILD

const struct digest_sha256 *digest_sha256(void)
{
        static const struct digest_sha256 linked = {
                .init = nettle_sha256_init, .update = nettle_sha256_update, .digest = nettle_sha256_digest,
        };
        return &linked;
}

#else

#include <dlfcn.h>

#include <nettle/version.h>

/* the soname of the nettle hutch was built against */
#if NETTLE_VERSION_MAJOR == 3 && NETTLE_VERSION_MINOR >= 6
#define NETTLE_SONAME "libnettle.so.8"
#elif NETTLE_VERSION_MAJOR == 3 && NETTLE_VERSION_MINOR == 5
#define NETTLE_SONAME "libnettle.so.7"
#elif NETTLE_VERSION_MAJOR == 3 && NETTLE_VERSION_MINOR == 4
#define NETTLE_SONAME "libnettle.so.6"
#else
#error "unknown nettle version: say which soname it has in digest-load.c"
#endif

static void *need(void *lib, const char *name)
{
        void *fn = lib ? dlsym(lib, name) : NULL;
        if (!fn) {
                log_error("cannot load SHA-256 from %s (Debian package libnettle8): %s", NETTLE_SONAME,
                          dlerror());
                abort();
        }
        return fn;
}

const struct digest_sha256 *digest_sha256(void)
{
        static struct digest_sha256 loaded;

        if (!loaded.digest) {
                /* never closed: digests are taken for the rest of the process */
                void *lib = dlopen(NETTLE_SONAME, RTLD_NOW | RTLD_LOCAL);
                loaded.init = (void (*)(struct sha256_ctx *))need(lib, "nettle_sha256_init");
                loaded.update = (void (*)(struct sha256_ctx *, size_t, const uint8_t *))
                        need(lib, "nettle_sha256_update");
                loaded.digest = (void (*)(struct sha256_ctx *, size_t, uint8_t *))need(lib, "nettle_sha256_digest");
        }
        return &loaded;
}

#endif
