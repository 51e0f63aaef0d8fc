/* fuzz-redact.c - libFuzzer target: arbitrary bytes as a job's output,
 * redacted (lib/redact.c) with up to four secrets whose values the input
 * also picks. The first byte says how many secrets, each next byte how
 * long its value is; the values are taken from the input and mapped to
 * bytes no marker contains (digits and bytes >= 0x80), so that no marker
 * can join with the text around it into a value. Then no value may be
 * left anywhere in what redact() returns, and a NULL answer means the
 * input held no value at all. The same text is then redacted as a
 * stream is (supervise/: capture, events, the pass-through), in chunks
 * the text picks: no value may be left in what comes out either, and
 * the bytes left as they are must be those redact() leaves.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/redact.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "redact: %s\n", what);
                abort();
        }
}

static int holds_value(const char *buf, size_t n, char *const *secrets)
{
        for (char *const *s = secrets; *s; s++) {
                const char *v = strchr(*s, '=') + 1;
                if (*v && memmem(buf, n, v, strlen(v)))
                        return 1;
        }
        return 0;
}

/* text[0..n) as a stream redacts it: chunks of 1 to 6 bytes (each
 * chunk's first byte picks its length), each through redact_cut() and
 * redact_range(), looking back at what went out. */
static char *redact_stream(const char *text, size_t n, char *const *secrets, size_t *ret_len)
{
        char *held = NULL, *out = xmalloc(1);
        size_t held_len = 0, seen = 0, len = 0;

        for (size_t at = 0; at <= n;) {
                bool end = at == n;
                size_t k = end ? 0 : MIN(n - at, (size_t)1 + (unsigned char)text[at] % 6);
                size_t wlen = held_len + k, skip = seen, cut, clean_len;
                char *work = xmalloc(wlen + 1);
                if (held_len)
                        memcpy(work, held, held_len);
                memcpy(work + held_len, text + at, k);
                cut = end ? wlen : MAX(redact_cut(work, wlen, secrets), skip);
                check(cut >= skip && cut <= wlen, "cut outside the new bytes");
                check(wlen - cut + 1 <= MAX(redact_max_len(secrets), (size_t)1), "more than the longest value less one byte waits");
                char *clean = redact_range(work, cut, skip, secrets, &clean_len);
                const char *p = clean ? clean : work + skip;
                size_t pn = clean ? clean_len : cut - skip;
                out = xrealloc(out, len + pn + 1);
                memcpy(out + len, p, pn);
                len += pn;
                free(clean);
                size_t back = end ? 0 : MIN(cut, redact_lookbehind(secrets));
                free(held);
                held_len = wlen - cut + back;
                held = xmalloc(held_len + 1);
                memcpy(held, work + cut - back, held_len);
                seen = back;
                free(work);
                if (end)
                        break;
                at += k;
        }
        free(held);
        out[len] = '\0';
        *ret_len = len;
        return out;
}

/* buf[0..n) without its "[secret X]" markers (X one letter). */
static size_t plain_bytes(const char *buf, size_t n, char *out)
{
        size_t w = 0;
        for (size_t i = 0; i < n;) {
                if (n - i >= 10 && memcmp(buf + i, "[secret ", 8) == 0 && buf[i + 9] == ']') {
                        i += 10;
                        continue;
                }
                out[w++] = buf[i++];
        }
        return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *secrets[5] = { NULL };
        size_t n_secrets, off = 1;

        if (size < 1)
                return 0;
        n_secrets = data[0] % 5;
        for (size_t i = 0; i < n_secrets; i++) {
                size_t vlen = off < size ? data[off++] % 12 : 0;
                if (vlen > size - off)
                        vlen = size - off;
                char *s = xmalloc(3 + vlen + 1);
                s[0] = (char)('A' + i);
                s[1] = '=';
                for (size_t j = 0; j < vlen; j++) {
                        unsigned char c = data[off + j];
                        /* digits and high bytes: nothing a marker holds; never NUL */
                        s[2 + j] = (char)(c & 0x80 ? c : '0' + c % 10);
                }
                s[2 + vlen] = '\0';
                off += vlen;
                secrets[i] = s;
        }
        const char *text = (const char *)data + off;
        size_t n = size - off, len = 0;

        char *r = redact(text, n, secrets, &len);
        if (r) {
                check(r[len] == '\0', "result not terminated");
                check(!holds_value(r, len, secrets), "a secret value is left in the output");
        } else
                check(!holds_value(text, n, secrets), "NULL returned for output holding a value");

        size_t slen;
        char *streamed = redact_stream(text, n, secrets, &slen);
        check(!holds_value(streamed, slen, secrets), "a secret value is left in the streamed output");
        if (!memchr(text, '[', n)) {
                /* no '[' of the job's: every "[secret X]" is a marker */
                char *a = xmalloc(slen + 1), *b = xmalloc((r ? len : n) + 1);
                size_t an = plain_bytes(streamed, slen, a), bn = plain_bytes(r ? r : text, r ? len : n, b);
                check(an == bn && memcmp(a, b, an) == 0, "the stream left other bytes than redact()");
                free(a);
                free(b);
        }
        free(streamed);
        free(r);

        for (size_t i = 0; i < n_secrets; i++)
                free(secrets[i]);
        return 0;
}
