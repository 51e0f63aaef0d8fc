/* digest-load.h - where digest.c's SHA-256 comes from: nettle, loaded
 * with dlopen() the first time a digest is taken (the dynamic build), or
 * linked in (hutch-static).
 *
 * Every start of the dynamic hutch used to map and bind libnettle (447
 * symbol bindings: Debian links it with immediate binding) before main(),
 * on the path to the sandbox's clone. A run takes its first digest after
 * the clone (the seccomp cache's key, the stored profile's name), while
 * the sandbox builds itself, and most other verbs take none. Only
 * digest.c calls this.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

struct digest_sha256 {
        void (*init)(struct sha256_ctx *ctx);
        void (*update)(struct sha256_ctx *ctx, size_t length, const uint8_t *data);
        void (*digest)(struct sha256_ctx *ctx, size_t length, uint8_t *out);
};

/* nettle's three functions, loaded on the first call. A library that
 * cannot be loaded, or lacks one of them, is a broken install (the
 * package depends on it): logged, then abort(), as a digest cannot fail
 * (digest.h). */
const struct digest_sha256 *digest_sha256(void);
