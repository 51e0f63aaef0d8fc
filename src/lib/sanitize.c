/* sanitize.c - escape-sequence stripping and UTF-8 repair (see sanitize.h).
 *
 * The terminal filter (sanitize_tty_stream) is the same idea as a
 * stream: stateful across writes, so a sequence split by stdio's
 * buffering is still caught.
 *
 * One pass over the input. The output is never longer than 3x the input
 * (a lone invalid byte becomes the three bytes of U+FFFD), which bounds
 * the one allocation.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
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
                if (len == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0 && p[i + 1] != 0x9b) {
                        i += 2;         /* other C1 controls (U+0080-U+009F, e.g. U+009D OSC): dropped */
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

char *sanitize_fold(const char *text, size_t n, size_t width, size_t *ret_len)
{
        static const char mark[] = SANITIZE_FOLD_MARK;
        const size_t mark_len = sizeof(mark) - 1;
        size_t marks = width ? n / width + 1 : 0;
        char *out = xmalloc(n + marks * mark_len + 1);
        size_t o = 0, run = 0;

        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)text[i];
                /* break before a character's first byte, never inside it */
                if (width && run >= width && c != '\n' && (c & 0xc0) != 0x80) {
                        memcpy(out + o, mark, mark_len);
                        o += mark_len;
                        run = 0;
                }
                out[o++] = (char)c;
                run = c == '\n' ? 0 : run + 1;
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

/* ---- terminals ------------------------------------------------------------ */

struct tty_filter {
        int fd;
        unsigned char pending[4];       /* an incomplete UTF-8 sequence */
        size_t n_pending;
};

static int put_all(int fd, const char *s, size_t n)
{
        return write_all(fd, s, n);
}

/* Write unit p[0..len) of valid UTF-8 or one invalid byte, neutralised:
 * C0 controls but tab and newline, DEL and C1 controls (U+0080-U+009F,
 * whose UTF-8 form a terminal may obey like ESC [ or ESC ]) become
 * visible text; so do bytes that are not UTF-8 (a raw 0x9b is CSI to an
 * 8-bit terminal). Everything else goes out as it is. */
static int put_unit(int fd, const unsigned char *p, int len)
{
        char buf[16];

        if (len < 0) {
                snprintf(buf, sizeof(buf), "\\x%02x", p[0]);
                return put_all(fd, buf, strlen(buf));
        }
        if (len == 1 && (p[0] < 0x20 || p[0] == 0x7f) && p[0] != '\n' && p[0] != '\t') {
                buf[0] = '^';
                buf[1] = p[0] == 0x7f ? '?' : (char)(p[0] + 0x40);
                return put_all(fd, buf, 2);
        }
        if (len == 2 && p[0] == 0xc2 && p[1] < 0xa0) {
                snprintf(buf, sizeof(buf), "\\u%04x", p[1]);
                return put_all(fd, buf, strlen(buf));
        }
        return put_all(fd, (const char *)p, (size_t)len);
}

static ssize_t tty_write(void *cookie, const char *buf, size_t n)
{
        struct tty_filter *t = cookie;
        unsigned char work[4 + 4096];
        size_t done = 0;

        while (done < n) {
                size_t take = MIN(n - done, sizeof(work) - t->n_pending);
                size_t have, i = 0;

                memcpy(work, t->pending, t->n_pending);
                memcpy(work + t->n_pending, buf + done, take);
                have = t->n_pending + take;
                t->n_pending = 0;
                done += take;
                while (i < have) {
                        int len = utf8_sequence(work + i, have - i);
                        /* a sequence cut by the end of this write: wait for the rest */
                        if (len < 0 && (size_t)-len == have - i && have - i < 4 && work[i] >= 0xc2 &&
                            work[i] <= 0xf4) {
                                memcpy(t->pending, work + i, have - i);
                                t->n_pending = have - i;
                                break;
                        }
                        if (put_unit(t->fd, work + i, len < 0 ? -1 : len) < 0)
                                return -1;
                        i += len < 0 ? 1 : (size_t)len;
                }
        }
        return (ssize_t)n;
}

static int tty_close(void *cookie)
{
        struct tty_filter *t = cookie;
        for (size_t i = 0; i < t->n_pending; i++)
                (void)put_unit(t->fd, t->pending + i, -1);
        free(t);
        return 0;
}

FILE *sanitize_tty_stream(int fd)
{
        struct tty_filter *t = xcalloc(1, sizeof(*t));
        t->fd = fd;
        FILE *f = fopencookie(t, "w", (cookie_io_functions_t) { .write = tty_write, .close = tty_close });
        if (!f)
                free(t);
        return f;
}

char *sanitize_base64(const void *data, size_t n)
{
        static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const unsigned char *p = data;
        char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;

        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                             (i + 2 < n ? p[i + 2] : 0);
                *o++ = a[v >> 18 & 63];
                *o++ = a[v >> 12 & 63];
                *o++ = i + 1 < n ? a[v >> 6 & 63] : '=';
                *o++ = i + 2 < n ? a[v & 63] : '=';
        }
        *o = '\0';
        return out;
}

bool sanitize_utf8_valid(const char *s, size_t n)
{
        for (size_t i = 0; i < n;) {
                int len = utf8_sequence((const unsigned char *)s + i, n - i);
                if (len < 0 || s[i] == '\0')
                        return false;
                i += (size_t)len;
        }
        return true;
}

static bool needs_quotes(const char *w)
{
        if (!*w)
                return true;
        for (const char *p = w; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            "0123456789_@%+=:,./-", *p) && !((unsigned char)*p & 0x80))
                        return true;
        return false;
}

char *sanitize_argv_line(char *const *argv, size_t max_width)
{
        size_t cap = 64, len = 0, width = 0;
        char *out = xmalloc(cap);

#define PUT(c) do {                                                     \
                if (len + 8 >= cap)                                     \
                        out = xrealloc(out, cap *= 2);                  \
                out[len++] = (c);                                       \
        } while (0)

        for (size_t i = 0; argv && argv[i]; i++) {
                bool quote = needs_quotes(argv[i]);
                if (i > 0)
                        PUT(' ');
                if (quote)
                        PUT('\'');
                for (const char *p = argv[i]; *p; p++) {
                        unsigned char c = (unsigned char)*p;
                        if (c == '\'') {
                                PUT('\'');
                                PUT('\\');
                                PUT('\'');
                                PUT('\'');
                        } else
                                PUT(c < 0x20 || c == 0x7f ? '?' : (char)c);
                }
                if (quote)
                        PUT('\'');
        }
        out[len] = '\0';
#undef PUT

        if (max_width == 0)
                return out;
        /* cut at max_width characters (UTF-8 continuation bytes are free) */
        for (size_t i = 0; i < len; i++) {
                if (((unsigned char)out[i] & 0xc0) == 0x80)
                        continue;
                if (++width == max_width && i + 1 < len) {
                        /* room for "…" (3 bytes) instead of this character */
                        size_t rest = 0;
                        for (size_t j = i + 1; j < len; j++)
                                rest += ((unsigned char)out[j] & 0xc0) != 0x80;
                        if (rest == 0)
                                break;
                        out = xrealloc(out, i + 4);
                        memcpy(out + i, "\xe2\x80\xa6", 3);
                        out[i + 3] = '\0';
                        break;
                }
        }
        return out;
}

char *sanitize_code_line(const char *lang, const char *code, size_t len, size_t max)
{
        size_t i = 0;
        while (code && i < len && (code[i] == '\n' || code[i] == '\r' || code[i] == ' ' || code[i] == '\t'))
                i++;
        size_t n = code && i < len ? strcspn(code + i, "\r\n") : 0;
        n = MIN(n, code ? len - i : 0);
        bool cut = n > max;
        if (cut) {
                n = max;
                /* back to the start of a UTF-8 character */
                while (n > 0 && ((unsigned char)code[i + n] & 0xc0) == 0x80)
                        n--;
        }
        _cleanup_free_ char *clean = n ? sanitize_text(code + i, n, NULL) : NULL;
        return xasprintf("%s: %s%s", lang ? lang : "?", clean ? clean : "", cut ? "..." : "");
}

/* Whether the valid UTF-8 character p[0..len) is one a reader does not
 * see as itself: a C1 control, or a character that breaks a line
 * (U+2028, U+2029) or reorders it (the bidi marks, embeddings,
 * overrides and isolates: "Trojan Source"). */
static bool hidden_character(const unsigned char *p, int len)
{
        if (len == 2)
                return (p[0] == 0xc2 && p[1] <= 0x9f) || (p[0] == 0xd8 && p[1] == 0x9c);
        if (len != 3 || p[0] != 0xe2)
                return false;
        unsigned cp = 0x2000 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu);
        return cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
               (cp >= 0x2066 && cp <= 0x2069);
}

/* How many bytes from p (n available) are one unit for
 * sanitize_quote_name(), negative when they are to be escaped. */
static int quote_unit(const unsigned char *p, size_t n)
{
        if (*p < 0x80)
                return *p < 0x20 || *p == 0x7f || *p == '\\' || *p == '"' ? -1 : 1;
        int len = utf8_sequence(p, n);
        return len > 0 && hidden_character(p, len) ? -len : len;
}

char *sanitize_quote_name(const char *s)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t n = strlen(s), i;
        int len;

        for (i = 0; i < n; i += (size_t)(len < 0 ? -len : len))
                if ((len = quote_unit(u + i, n - i)) < 0)
                        break;
        if (i == n)
                return xstrdup(s);

        /* at most 4 bytes ("\ooo") per input byte, the quotes, the NUL */
        char *out = xmalloc(n * 4 + 3), *o = out;
        *o++ = '"';
        for (i = 0; i < n;) {
                len = quote_unit(u + i, n - i);
                if (len > 0) {
                        memcpy(o, s + i, (size_t)len);
                        o += len;
                        i += (size_t)len;
                        continue;
                }
                for (int k = 0; k < -len; k++, i++) {
                        static const char named[] = "\a\b\t\n\v\f\r\\\"", letter[] = "abtnvfr\\\"";
                        const char *m = s[i] ? strchr(named, s[i]) : NULL;
                        *o++ = '\\';
                        if (m)
                                *o++ = letter[m - named];
                        else {
                                *o++ = (char)('0' + (u[i] >> 6));
                                *o++ = (char)('0' + (u[i] >> 3 & 7));
                                *o++ = (char)('0' + (u[i] & 7));
                        }
                }
        }
        *o++ = '"';
        *o = '\0';
        return out;
}
