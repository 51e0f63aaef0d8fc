/* base64.c - RFC 4648 base64 encoding and strict decoding (see base64.h). */
#include "config.h"

#include <string.h>

#include "lib/base64.h"
#include "lib/util.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *buf, size_t n, size_t *ret_len)
{
        const unsigned char *in = buf;
        char *out = xmalloc((n + 2) / 3 * 4 + 1), *p = out;
        size_t i;

        for (i = 0; i + 2 < n; i += 3) {
                unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
                *p++ = alphabet[v >> 18 & 63];
                *p++ = alphabet[v >> 12 & 63];
                *p++ = alphabet[v >> 6 & 63];
                *p++ = alphabet[v & 63];
        }
        if (i < n) {
                unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
                *p++ = alphabet[v >> 18 & 63];
                *p++ = alphabet[v >> 12 & 63];
                *p++ = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
                *p++ = '=';
        }
        *p = '\0';
        if (ret_len)
                *ret_len = (size_t)(p - out);
        return out;
}

static int value_of(char c)
{
        const char *p = c ? strchr(alphabet, c) : NULL;
        return p ? (int)(p - alphabet) : -1;
}

int base64_decode(const char *text, size_t n, char **ret, size_t *ret_len)
{
        size_t pad = 0, len = 0;
        unsigned acc = 0;
        int bits = 0;
        char *out;

        while (pad < 2 && n > 0 && text[n - 1] == '=') {
                n--;
                pad++;
        }
        if (n % 4 == 1 || (pad && (n + pad) % 4 != 0))
                return -EINVAL;
        out = xmalloc(n / 4 * 3 + 3);
        for (size_t i = 0; i < n; i++) {
                int v = value_of(text[i]);
                if (v < 0) {
                        free(out);
                        return -EINVAL;
                }
                acc = acc << 6 | (unsigned)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[len++] = (char)(acc >> bits & 0xff);
                }
        }
        /* the bits left over must be zero, or the text is not canonical */
        if (acc & ((1u << bits) - 1)) {
                free(out);
                return -EINVAL;
        }
        out[len] = '\0';
        *ret = out;
        *ret_len = len;
        return 0;
}
