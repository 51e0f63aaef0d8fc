/* digest.c - SHA-256 through nettle's implementation (FIPS 180-4).
 *
 * The hash itself is a maintained library's: nettle picks the CPU's SHA
 * instructions where it has them, and gets its fixes from the
 * distribution. What is hutch's here is the shape the callers use: hex
 * names, whole buffers and descriptors read to EOF.
 *
 * nettle over OpenSSL's libcrypto: the same throughput on the README's
 * machine, and a fifteenth of the size for the loader to map and bind
 * (the startup bench decides). The dynamic build loads it at the first
 * digest, not at every start (digest-load.h).
 */
#include "config.h"

#include <string.h>

#include "lib/digest.h"
#include "lib/digest-load.h"
#include "lib/util.h"

void digest_init(struct digest *d)
{
        digest_sha256()->init(&d->ctx);
}

void digest_update(struct digest *d, const void *data, size_t n)
{
        if (n == 0)
                return;
        digest_sha256()->update(&d->ctx, n, data);
}

void digest_final(struct digest *d, uint8_t out[DIGEST_RAW_SIZE])
{
        digest_sha256()->digest(&d->ctx, DIGEST_RAW_SIZE, out);
        memset(d, 0, sizeof(*d));
}

void digest_final_hex(struct digest *d, char hex[DIGEST_HEX_SIZE])
{
        static const char digits[] = "0123456789abcdef";
        uint8_t raw[DIGEST_RAW_SIZE];

        digest_final(d, raw);
        for (int i = 0; i < DIGEST_RAW_SIZE; i++) {
                hex[2 * i] = digits[raw[i] >> 4];
                hex[2 * i + 1] = digits[raw[i] & 15];
        }
        hex[64] = '\0';
}

void digest_buffer(const void *data, size_t n, char hex[DIGEST_HEX_SIZE])
{
        struct digest d;

        digest_init(&d);
        digest_update(&d, data, n);
        digest_final_hex(&d, hex);
}

int64_t digest_fd_size(int fd, char hex[DIGEST_HEX_SIZE])
{
        _cleanup_free_ uint8_t *buf = xmalloc(128 * 1024);
        struct digest d;
        int64_t total = 0;

        digest_init(&d);
        for (;;) {
                ssize_t r = read(fd, buf, 128 * 1024);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (r == 0)
                        break;
                digest_update(&d, buf, (size_t)r);
                total += r;
        }
        digest_final_hex(&d, hex);
        return total;
}

int digest_fd(int fd, char hex[DIGEST_HEX_SIZE])
{
        int64_t r = digest_fd_size(fd, hex);
        return r < 0 ? (int)r : 0;
}

bool digest_hex_valid(const char *s)
{
        if (!s)
                return false;
        for (int i = 0; i < 64; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s[64] == '\0';
}
