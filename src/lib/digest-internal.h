/* digest-internal.h - the SHA-256 block functions behind digest.c.
 *
 * Two implementations of FIPS 180-4 §6.2.2 over whole 64-byte blocks:
 * the portable one in digest.c, and one in digest-shani.c that uses the
 * x86 SHA extensions where the CPU has them. digest.c picks one per
 * call; the unit tests run both on the same input and compare. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The 64 round constants (FIPS 180-4 §4.2.2), 16-byte aligned. */
extern const uint32_t digest_k[64];

/* Fold n_blocks consecutive 64-byte blocks into the state h. */
void digest_blocks_portable(uint32_t h[8], const uint8_t *blocks, size_t n_blocks);

/* Whether this CPU runs digest_blocks_shani() (SHA, SSSE3, SSE4.1);
 * always false where it is not built (not x86-64). */
bool digest_shani_usable(void);

/* As digest_blocks_portable(); only where digest_shani_usable(). */
void digest_blocks_shani(uint32_t h[8], const uint8_t *blocks, size_t n_blocks);
