/* fuzz-redact.c - libFuzzer target: arbitrary bytes as a job's output,
 * redacted (lib/redact.c) with up to four secrets whose values the input
 * also picks. The first byte says how many secrets, each next byte how
 * long its value is; the values are taken from the input and mapped to
 * bytes no marker contains (digits and bytes >= 0x80), so that no marker
 * can join with the text around it into a value. Then no value may be
 * left anywhere in what redact() returns, and a NULL answer means the
 * input held no value at all. (Cutting a stream into chunks is the
 * caller's part, supervise/events.c, and not fuzzed here.)
 */
#include "config.h"

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
        free(r);

        for (size_t i = 0; i < n_secrets; i++)
                free(secrets[i]);
        return 0;
}
