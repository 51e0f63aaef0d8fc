/* digest.c - SHA-256 as specified in FIPS 180-4 (§4.1.2 functions, §4.2.2
 * constants, §5.1.1 padding, §6.2 computation).
 *
 * Data shape: input arrives in arbitrary pieces; whole 64-byte blocks are
 * compressed straight from the caller's buffer, a trailing partial block
 * waits in d->block. Throughput matters for 100 MB artifacts, so the
 * message schedule is computed in a 16-word ring rather than 64 words,
 * and where the CPU has SHA instructions they do the blocks instead
 * (digest-shani.c, about five times as fast).
 */
#include "config.h"

#include <string.h>

#include "lib/digest.h"
#include "lib/digest-internal.h"
#include "lib/util.h"

/* §4.2.2; 16-byte aligned for digest-shani.c, which loads four at a time */
const uint32_t digest_k[64] __attribute__((aligned(16))) = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x) (ROTR(x, 2) ^ ROTR(x, 13) ^ ROTR(x, 22))
#define BSIG1(x) (ROTR(x, 6) ^ ROTR(x, 11) ^ ROTR(x, 25))
#define SSIG0(x) (ROTR(x, 7) ^ ROTR(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROTR(x, 17) ^ ROTR(x, 19) ^ ((x) >> 10))

static uint32_t load_be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

static void compress(uint32_t h[8], const uint8_t *block)
{
        uint32_t w[16];
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
        uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];

        for (int t = 0; t < 64; t++) {
                uint32_t wt, t1, t2;

                if (t < 16)
                        wt = w[t] = load_be32(block + 4 * t);
                else
                        wt = w[t & 15] = SSIG1(w[(t - 2) & 15]) + w[(t - 7) & 15] +
                                         SSIG0(w[(t - 15) & 15]) + w[t & 15];
                t1 = hh + BSIG1(e) + CH(e, f, g) + digest_k[t] + wt;
                t2 = BSIG0(a) + MAJ(a, b, c);
                hh = g;
                g = f;
                f = e;
                e = d + t1;
                d = c;
                c = b;
                b = a;
                a = t1 + t2;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
        h[5] += f;
        h[6] += g;
        h[7] += hh;
}

void digest_blocks_portable(uint32_t h[8], const uint8_t *blocks, size_t n_blocks)
{
        for (; n_blocks > 0; n_blocks--, blocks += 64)
                compress(h, blocks);
}

/* The CPU's own SHA-256 rounds where it has them (digest-shani.c). */
static void fold_blocks(uint32_t h[8], const uint8_t *p, size_t n_blocks)
{
        if (digest_shani_usable())
                digest_blocks_shani(h, p, n_blocks);
        else
                digest_blocks_portable(h, p, n_blocks);
}

void digest_init(struct digest *d)
{
        static const uint32_t H0[8] = {
                0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
        };
        memcpy(d->h, H0, sizeof(H0));
        d->length = 0;
        d->used = 0;
}

void digest_update(struct digest *d, const void *data, size_t n)
{
        const uint8_t *p = data;

        if (n == 0)
                return;
        d->length += n;
        if (d->used > 0) {
                size_t take = MIN(n, sizeof(d->block) - d->used);
                memcpy(d->block + d->used, p, take);
                d->used += take;
                p += take;
                n -= take;
                if (d->used < sizeof(d->block))
                        return;
                fold_blocks(d->h, d->block, 1);
                d->used = 0;
        }
        if (n >= 64) {
                fold_blocks(d->h, p, n / 64);
                p += n & ~(size_t)63;
                n &= 63;
        }
        if (n > 0) {
                memcpy(d->block, p, n);
                d->used = n;
        }
}

void digest_final(struct digest *d, uint8_t out[DIGEST_RAW_SIZE])
{
        uint64_t bits = d->length * 8;

        /* §5.1.1: a 1 bit, zeros up to 56 mod 64, then the 64-bit length */
        d->block[d->used++] = 0x80;
        if (d->used > 56) {
                memset(d->block + d->used, 0, 64 - d->used);
                fold_blocks(d->h, d->block, 1);
                d->used = 0;
        }
        memset(d->block + d->used, 0, 56 - d->used);
        store_be32(d->block + 56, (uint32_t)(bits >> 32));
        store_be32(d->block + 60, (uint32_t)bits);
        fold_blocks(d->h, d->block, 1);
        for (int i = 0; i < 8; i++)
                store_be32(out + 4 * i, d->h[i]);
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
