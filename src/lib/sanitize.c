/* sanitize.c - escape-sequence stripping and UTF-8 repair (see sanitize.h).
 *
 * One pass over the input. The output is never longer than 3x the input
 * (a lone invalid byte becomes the three bytes of U+FFFD), which bounds
 * the one allocation.
 */
#include "config.h"

#include <string.h>

#include "lib/sanitize.h"
#include "lib/util.h"

static const char replacement[] = "\xef\xbf\xbd";

/* Length of the valid UTF-8 sequence at p (at most n bytes available), or
 * -k where k >= 1 is the length of the maximal invalid subpart to replace
 * with one U+FFFD (Unicode's "maximal subpart" practice). */
static int utf8_sequence(const unsigned char *p, size_t n)
{
        unsigned c = p[0];
        int need;
        unsigned lo = 0x80, hi = 0xbf;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                need = 1;
        else if (c >= 0xe0 && c <= 0xef) {
                need = 2;
                if (c == 0xe0)
                        lo = 0xa0;      /* no overlongs */
                else if (c == 0xed)
                        hi = 0x9f;      /* no surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
                need = 3;
                if (c == 0xf0)
                        lo = 0x90;      /* no overlongs */
                else if (c == 0xf4)
                        hi = 0x8f;      /* nothing above U+10FFFF */
        } else
                return -1;

        for (int i = 1; i <= need; i++) {
                if ((size_t)i >= n)
                        return -i;
                unsigned b = p[i];
                unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xbf;
                if (b < l || b > h)
                        return -i;
        }
        return need + 1;
}

/* Length of the escape sequence starting with ESC at p, so it can be
 * skipped. An unterminated sequence runs to the end of the input. */
static size_t escape_length(const unsigned char *p, size_t n)
{
        size_t i;

        if (n < 2)
                return n;
        switch (p[1]) {
        case '[':       /* CSI: parameters 0x30-0x3f, intermediates 0x20-0x2f, final 0x40-0x7e */
                for (i = 2; i < n; i++)
                        if (p[i] >= 0x40 && p[i] <= 0x7e)
                                return i + 1;
                        else if (p[i] < 0x20 || p[i] > 0x3f)
                                return i;       /* malformed: drop what we saw */
                return n;
        case ']':       /* OSC */
        case 'P':       /* DCS */
        case 'X':       /* SOS */
        case '^':       /* PM */
        case '_':       /* APC */
                for (i = 2; i < n; i++) {
                        if (p[i] == 0x07)
                                return i + 1;
                        if (p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\')
                                return i + 2;
                }
                return n;
        default:
                /* ESC, intermediates (0x20-0x2f), one final byte */
                for (i = 1; i < n && p[i] >= 0x20 && p[i] <= 0x2f; i++)
                        ;
                return i < n ? i + 1 : n;
        }
}

char *sanitize_text(const char *buf, size_t n, size_t *ret_len)
{
        const unsigned char *p = (const unsigned char *)buf;
        char *out = xmalloc(n * 3 + 1);
        size_t i = 0, o = 0;

        while (i < n) {
                if (p[i] == 0x1b) {
                        i += escape_length(p + i, n - i);
                        continue;
                }
                int len = utf8_sequence(p + i, n - i);
                if (len < 0) {
                        memcpy(out + o, replacement, 3);
                        o += 3;
                        i += (size_t)-len;
                        continue;
                }
                if (len == 2 && p[i] == 0xc2 && p[i + 1] == 0x9b) {
                        /* 8-bit CSI: skip it and its parameters like ESC [ */
                        size_t j = i + 2;
                        while (j < n && !(p[j] >= 0x40 && p[j] <= 0x7e))
                                j++;
                        i = j < n ? j + 1 : n;
                        continue;
                }
                memcpy(out + o, p + i, (size_t)len);
                o += (size_t)len;
                i += (size_t)len;
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}
