/* archive-dl.c - the forwarders of archive-dl.h: libarchive is dlopen()ed
 * the first time an image's archive is read, not at every start of hutch.
 *
 * Each forwarder resolves its symbol once, from the one handle; the
 * library is never unloaded (an archive may be open for the rest of the
 * process). A missing library is an error of archive_read_new() (NULL,
 * which callers already treat as failure) and of archive_dl_load(), which
 * names it.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "image/archive-dl.h"
#include "lib/log.h"
#include "lib/util.h"

#define LIBARCHIVE_SONAME "libarchive.so.13"

static void *handle(char **ret_error)
{
        static void *lib;

        if (!lib) {
                lib = dlopen(LIBARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
                if (!lib && ret_error)
                        *ret_error = xasprintf("cannot load %s (Debian package libarchive13): %s",
                                               LIBARCHIVE_SONAME, dlerror());
        }
        return lib;
}

static void *symbol(const char *name)
{
        void *lib = handle(NULL), *fn = lib ? dlsym(lib, name) : NULL;

        if (!fn) {
                /* only reachable with an archive archive_read_new() made,
                 * so the library is loaded; a symbol it lacks is a broken
                 * install, not input hutch can handle */
                log_error("%s: %s", LIBARCHIVE_SONAME, lib ? dlerror() : "not loaded");
                abort();
        }
        return fn;
}

int archive_dl_load(char **ret_error)
{
        return handle(ret_error) ? 0 : -ENOENT;
}

struct archive *hutch_archive_read_new(void)
{
        static struct archive *(*fn)(void);

        if (!fn) {
                void *lib = handle(NULL);
                if (!lib)
                        return NULL;
                fn = (struct archive * (*)(void)) dlsym(lib, "archive_read_new");
                if (!fn)
                        return NULL;
        }
        return fn();
}

#define HUTCH_ARCHIVE_FORWARD(ret, name, params, args) \
        ret hutch_##name params \
        { \
                static ret (*fn) params; \
                if (!fn) \
                        fn = (ret (*) params) symbol(#name); \
                return fn args; \
        }
HUTCH_ARCHIVE_FUNCTIONS(HUTCH_ARCHIVE_FORWARD)
