/* fuzz-dns.c - libFuzzer target: arbitrary bytes as one datagram the job
 * sends to the stub DNS (net/dns.c). The parser must never read past the
 * datagram or write past the query's name; a query it accepts has a
 * NUL-terminated, lower-case name of host-name bytes, a question that
 * ends inside the datagram, and an answer (with and without an address)
 * that fits the smallest buffer the stub uses and says what was asked.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "dns: %s\n", what);
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct dns_query q;
        static const uint8_t a4[4] = { 127, 0, 0, 7 };
        uint8_t out[512];
        int r;

        memset(&q, 0xa5, sizeof(q));
        r = dns_parse_query(data, size, &q);
        check(r == 0 || r == -22 /* EINVAL */ || r == -74 /* EBADMSG */, "unexpected return value");
        if (r != 0)
                return 0;
        size_t nlen = strnlen(q.name, sizeof(q.name));
        check(nlen < sizeof(q.name), "name not terminated");
        for (size_t i = 0; i < nlen; i++)
                check(q.name[i] > 0x20 && q.name[i] < 0x7f && !(q.name[i] >= 'A' && q.name[i] <= 'Z'),
                      "name has a byte no host name has");
        check(q.question_end >= 12 + 1 + 4 && q.question_end <= size, "question outside the datagram");
        check(!(q.flags & 0x8000), "a response accepted as a query");

        for (int with = 0; with < 2; with++) {
                memset(out, 0, sizeof(out));
                r = dns_build_answer(data, &q, DNS_RCODE_NXDOMAIN, with ? a4 : NULL, 60, out, sizeof(out));
                if (r == -105 /* ENOBUFS */) {
                        check(q.question_end + 16 > sizeof(out), "ENOBUFS for an answer that fits");
                        continue;
                }
                check(r >= 0 && (size_t)r <= sizeof(out), "answer longer than its buffer");
                check((size_t)r == q.question_end + (with ? 16 : 0), "answer length");
                check(out[0] == data[0] && out[1] == data[1], "answer id differs");
                check((out[2] & 0x80) != 0, "answer without QR");
                check(memcmp(out + 12, data + 12, q.question_end - 12) == 0, "question not copied");
        }
        return 0;
}
