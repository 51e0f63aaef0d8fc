/* fuzz-peek.c - libFuzzer target: arbitrary bytes as the first bytes of
 * a connection the job opens through the egress proxy (net/peek.c: TLS
 * ClientHello SNI, HTTP Host, CONNECT target). The peek must never read
 * past what was received; whatever name it returns is NUL-terminated and
 * a valid host name (a rule may match it), never a partial one; a
 * CONNECT head lies inside the bytes; and every prefix of the input is
 * parsed without harm too, as the relay parses each partial read.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/peek.h"
#include "net/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "peek: %s\n", what);
                abort();
        }
}

static enum peek_kind one(const uint8_t *data, size_t n)
{
        struct peek_result r;
        /* an exact-size copy, so that a read one past the end is caught */
        uint8_t *copy = malloc(n ? n : 1);
        enum peek_kind k;

        check(copy != NULL, "out of memory");
        if (n)
                memcpy(copy, data, n);
        k = peek_parse(copy, n, &r);
        free(copy);
        check(k == r.kind, "return value and kind differ");
        check(k >= PEEK_MORE && k < _PEEK_KIND_MAX, "kind out of range");
        check(memchr(r.name, '\0', sizeof(r.name)) != NULL, "name not terminated");
        if (r.name[0])
                check(k == PEEK_TLS || k == PEEK_HTTP || k == PEEK_CONNECT, "a name without a kind that has one");
        if (r.name[0])
                check(egress_name_valid(r.name), "name returned that is not a valid host name");
        if (k == PEEK_CONNECT)
                check(r.head_len > 0 && r.head_len <= n, "CONNECT head outside the bytes");
        return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        enum peek_kind whole = one(data, size);
        /* the relay reads in pieces: a few prefixes as well */
        if (size > 1) {
                one(data, size / 2);
                one(data, size - 1);
        }
        (void)whole;
        return 0;
}
