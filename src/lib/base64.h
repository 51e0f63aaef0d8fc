/* base64.h - RFC 4648 base64 (standard alphabet, '=' padding), for
 * binary data in JSON: request files given as base64 and output events
 * whose bytes are not UTF-8. */
#pragma once

#include <stddef.h>

/* Encode buf[0..n) as a new NUL-terminated string (*ret_len, if not
 * NULL, gets its length). Never NULL. */
char *base64_encode(const void *buf, size_t n, size_t *ret_len);
/* Decode text[0..n) into a new buffer (NUL-terminated for convenience)
 * and *ret_len bytes. Padding is optional; whitespace and any other
 * character outside the alphabet is an error. 0, or -EINVAL. */
int base64_decode(const char *text, size_t n, char **ret, size_t *ret_len);
