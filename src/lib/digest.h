/* digest.h - SHA-256 (FIPS 180-4), streaming.
 *
 * hutch names every stored blob, changed file and artifact by the SHA-256
 * of its content, written as 64 lowercase hex digits plus a NUL
 * (DIGEST_HEX_SIZE bytes), computed by nettle. The context is a plain
 * struct so callers can keep it on the stack; its fields are private to
 * digest.c.
 *
 *      struct digest d;
 *      digest_init(&d);
 *      digest_update(&d, buf, n);      (any number of times, any sizes)
 *      digest_final(&d, raw);          (32 bytes; d is then spent)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nettle/sha2.h>

#define DIGEST_RAW_SIZE 32
#define DIGEST_HEX_SIZE 65      /* 64 hex digits + NUL */

struct digest {
        struct sha256_ctx ctx;
};

/* Start a new hash. Cannot fail. */
void digest_init(struct digest *d);

/* Hash n more bytes of data (data may be NULL when n is 0). */
void digest_update(struct digest *d, const void *data, size_t n);

/* Finish: write the 32-byte hash to out. d must be re-initialised before
 * it is used again. */
void digest_final(struct digest *d, uint8_t out[DIGEST_RAW_SIZE]);

/* Finish and write the hash as 64 lowercase hex digits + NUL. */
void digest_final_hex(struct digest *d, char hex[DIGEST_HEX_SIZE]);

/* Hash of a whole buffer, as hex. */
void digest_buffer(const void *data, size_t n, char hex[DIGEST_HEX_SIZE]);

/* Read fd from its current offset to EOF and write the hash as hex.
 * Returns the number of bytes read (>= 0) or -errno; hex is written
 * only on success. The fd is not closed. */
int64_t digest_fd_size(int fd, char hex[DIGEST_HEX_SIZE]);

/* Same, returning 0 on success. */
int digest_fd(int fd, char hex[DIGEST_HEX_SIZE]);

/* true if s is exactly 64 lowercase hex digits (a valid digest name). */
bool digest_hex_valid(const char *s);
