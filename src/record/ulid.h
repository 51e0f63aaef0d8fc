/* ulid.h - run ids: 26 characters of Crockford base32 (ULID layout).
 *
 * The first 10 characters encode a 48-bit millisecond Unix timestamp, the
 * last 16 encode 80 random bits from getrandom(). Ids therefore sort by
 * creation time as plain strings, and any unique prefix names a run.
 * Within one process ids are strictly increasing even when the clock
 * stands still or steps back: the previous id's random part is
 * incremented instead of drawing a new one.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define ULID_LEN 26

/* Fill ret with a new NUL-terminated id. 0, or -errno if no randomness
 * could be had (getrandom failed). Not thread-safe: it keeps the last id
 * in a static to stay monotonic (hutch is single-threaded). */
int ulid_new(char ret[ULID_LEN + 1]);

/* Encode a timestamp (low 48 bits used) and 10 random bytes (big-endian)
 * into ret, NUL-terminated. Pure; used by ulid_new() and the tests. */
void ulid_encode(uint64_t ms, const uint8_t rnd[10], char ret[ULID_LEN + 1]);

/* The timestamp of a well-formed id, in ms since the epoch, or 0 if s is
 * not a well-formed id. */
uint64_t ulid_timestamp_ms(const char *s);

/* Whether s is a 26-character id in upper-case Crockford base32 whose
 * first character is at most '7' (a 48-bit timestamp). */
bool ulid_valid(const char *s);

/* Whether c (either case) is a Crockford base32 digit. */
bool ulid_char_valid(char c);
