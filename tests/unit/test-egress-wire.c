/* test-egress-wire.c - unit tests for what the egress helper reads off
 * the wire: the SNI/Host/CONNECT peek (net/peek.c) and the stub DNS's
 * query parser and answers (net/dns.c). Inputs are hostile: truncated,
 * oversized and lying lengths must be refused, never read past. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "lib/util.h"
#include "net/dns.h"
#include "net/peek.h"

/* A minimal TLS 1.2 record holding a ClientHello with one SNI. */
static size_t client_hello(uint8_t *b, const char *sni)
{
        size_t nl = sni ? strlen(sni) : 0, p = 0;
        uint8_t body[512];
        size_t q = 0;
        body[q++] = 3;
        body[q++] = 3;                  /* client_version */
        memset(body + q, 0x42, 32);     /* random */
        q += 32;
        body[q++] = 0;                  /* session id */
        body[q++] = 0;
        body[q++] = 2;                  /* cipher suites */
        body[q++] = 0x13;
        body[q++] = 0x01;
        body[q++] = 1;                  /* compression */
        body[q++] = 0;
        size_t ext_at = q;
        q += 2;
        if (sni) {
                body[q++] = 0;          /* server_name */
                body[q++] = 0;
                body[q++] = (uint8_t)((nl + 5) >> 8);
                body[q++] = (uint8_t)(nl + 5);
                body[q++] = (uint8_t)((nl + 3) >> 8);
                body[q++] = (uint8_t)(nl + 3);
                body[q++] = 0;          /* host_name */
                body[q++] = (uint8_t)(nl >> 8);
                body[q++] = (uint8_t)nl;
                memcpy(body + q, sni, nl);
                q += nl;
        }
        body[ext_at] = (uint8_t)((q - ext_at - 2) >> 8);
        body[ext_at + 1] = (uint8_t)(q - ext_at - 2);

        b[p++] = 0x16;
        b[p++] = 3;
        b[p++] = 1;
        b[p++] = (uint8_t)((q + 4) >> 8);
        b[p++] = (uint8_t)(q + 4);
        b[p++] = 1;                     /* ClientHello */
        b[p++] = 0;
        b[p++] = (uint8_t)(q >> 8);
        b[p++] = (uint8_t)q;
        memcpy(b + p, body, q);
        return p + q;
}

static void tls(void **state)
{
        uint8_t b[1024];
        struct peek_result r;
        size_t n = client_hello(b, "API.Example.com");

        assert_int_equal(peek_parse(b, n, &r), PEEK_TLS);
        assert_string_equal(r.name, "api.example.com");
        /* every shorter prefix asks for more, never guesses */
        for (size_t i = 1; i < n; i++)
                assert_int_equal(peek_parse(b, i, &r), PEEK_MORE);
        /* no SNI */
        n = client_hello(b, NULL);
        assert_int_equal(peek_parse(b, n, &r), PEEK_TLS);
        assert_string_equal(r.name, "");
        /* an SNI that is no host name gives no name */
        n = client_hello(b, "bad name\n.com");
        assert_int_equal(peek_parse(b, n, &r), PEEK_OTHER);
        assert_string_equal(r.name, "");
        n = client_hello(b, "10.0.0.1");
        peek_parse(b, n, &r);
        assert_string_equal(r.name, "");
        /* a lying extension length is refused */
        n = client_hello(b, "api.example.com");
        b[9 + 2 + 32 + 1 + 2 + 2 + 2 + 1] = 0xff;       /* extensions length, high byte */
        assert_int_equal(peek_parse(b, n, &r), PEEK_OTHER);
        assert_string_equal(r.name, "");
}

static void http(void **state)
{
        struct peek_result r;
        const char *get = "GET /simple/ HTTP/1.1\r\nUser-Agent: x\r\nhOsT:  Files.Example.org:8080 \r\n\r\n";
        assert_int_equal(peek_parse((const uint8_t *)get, strlen(get), &r), PEEK_HTTP);
        assert_string_equal(r.name, "files.example.org");
        assert_int_equal(r.port, 8080);
        assert_int_equal(peek_parse((const uint8_t *)get, 20, &r), PEEK_MORE);
        assert_int_equal(peek_parse((const uint8_t *)"GE", 2, &r), PEEK_MORE);

        const char *nohost = "GET / HTTP/1.0\r\n\r\n";
        assert_int_equal(peek_parse((const uint8_t *)nohost, strlen(nohost), &r), PEEK_HTTP);
        assert_string_equal(r.name, "");

        const char *conn = "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\nHELLO";
        assert_int_equal(peek_parse((const uint8_t *)conn, strlen(conn), &r), PEEK_CONNECT);
        assert_string_equal(r.name, "api.example.com");
        assert_int_equal(r.port, 443);
        assert_int_equal(r.head_len, strlen(conn) - 5);
        const char *noport = "CONNECT api.example.com HTTP/1.1\r\n\r\n";
        assert_int_equal(peek_parse((const uint8_t *)noport, strlen(noport), &r), PEEK_CONNECT);
        assert_string_equal(r.name, "");

        /* IP literals are no names: an address, for address rules */
        const char *lit4 = "GET http://10.0.0.5:8080/x HTTP/1.1\r\nHost: 10.0.0.5:8080\r\n\r\n";
        assert_int_equal(peek_parse((const uint8_t *)lit4, strlen(lit4), &r), PEEK_HTTP);
        assert_string_equal(r.name, "");
        assert_true(r.has_addr);
        assert_int_equal(r.addr.family, AF_INET);
        assert_memory_equal(r.addr.bytes, ((uint8_t[]){ 10, 0, 0, 5 }), 4);
        assert_int_equal(r.port, 8080);
        const char *lit6 = "CONNECT [::1]:443 HTTP/1.1\r\n\r\n";
        assert_int_equal(peek_parse((const uint8_t *)lit6, strlen(lit6), &r), PEEK_CONNECT);
        assert_string_equal(r.name, "");
        assert_true(r.has_addr);
        assert_int_equal(r.addr.family, AF_INET6);
        assert_int_equal(r.addr.bytes[15], 1);
        assert_int_equal(r.port, 443);
        /* neither a name nor an address: nothing to judge by */
        const char *bad[] = { "CONNECT [::1:443 HTTP/1.1\r\n\r\n", "CONNECT [::1]x:443 HTTP/1.1\r\n\r\n",
                              "CONNECT [zz]:443 HTTP/1.1\r\n\r\n", "CONNECT 10.0.0.5 HTTP/1.1\r\n\r\n",
                              "GET / HTTP/1.1\r\nHost: [10.0.0.5]:80\r\n\r\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                peek_parse((const uint8_t *)bad[i], strlen(bad[i]), &r);
                assert_string_equal(r.name, "");
                assert_false(r.has_addr);
        }

        assert_int_equal(peek_parse((const uint8_t *)"SSH-2.0-OpenSSH\r\n", 17, &r), PEEK_OTHER);
        assert_int_equal(peek_parse((const uint8_t *)"\x00\x01", 2, &r), PEEK_OTHER);
}

/* A query for name/type as a resolver sends it. */
static size_t query(uint8_t *b, const char *name, uint16_t type)
{
        size_t p = 12;
        memset(b, 0, 12);
        b[0] = 0xab;
        b[1] = 0xcd;
        b[2] = 0x01;                    /* RD */
        b[5] = 1;                       /* one question */
        for (const char *l = name; *l;) {
                const char *dot = strchr(l, '.');
                size_t n = dot ? (size_t)(dot - l) : strlen(l);
                b[p++] = (uint8_t)n;
                memcpy(b + p, l, n);
                p += n;
                l += n + (dot ? 1 : 0);
        }
        b[p++] = 0;
        b[p++] = (uint8_t)(type >> 8);
        b[p++] = (uint8_t)type;
        b[p++] = 0;
        b[p++] = 1;
        return p;
}

/* A request in absolute form, rewritten to origin form for the origin. */
static void origin_form(void **state)
{
        static const struct { const char *in, *out; } cases[] = {
                { "GET http://api.test:8080/x/y?q=1 HTTP/1.1\r\nHost: api.test:8080\r\n\r\n",
                  "GET /x/y?q=1 HTTP/1.1\r\nHost: api.test:8080\r\n\r\n" },
                { "POST HTTP://api.test HTTP/1.0\r\n\r\nbody", "POST / HTTP/1.0\r\n\r\nbody" },
                { "GET http://api.test?x HTTP/1.1\r\n\r\n", "GET /?x HTTP/1.1\r\n\r\n" },
                /* already origin form, or not a request line: unchanged */
                { "GET /x HTTP/1.1\r\n\r\n", "GET /x HTTP/1.1\r\n\r\n" },
                { "GET http://api.test/x", "GET http://api.test/x" },
                { "GET http://api.test\r\n\r\n", "GET http://api.test\r\n\r\n" },
                { " http://a/ HTTP/1.1\r\n", " http://a/ HTTP/1.1\r\n" },
                { "GET https://api.test/ HTTP/1.1\r\n", "GET https://api.test/ HTTP/1.1\r\n" },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                uint8_t buf[256];
                size_t n = strlen(cases[i].in);
                memcpy(buf, cases[i].in, n);
                n = peek_origin_form(buf, n);
                assert_int_equal(n, strlen(cases[i].out));
                assert_memory_equal(buf, cases[i].out, n);
        }
}

static void dns(void **state)
{
        uint8_t q[512], out[512];
        struct dns_query dq;
        size_t n = query(q, "Api.Test", DNS_TYPE_A);

        assert_int_equal(dns_parse_query(q, n, &dq), 0);
        assert_string_equal(dq.name, "api.test");
        assert_int_equal(dq.qtype, DNS_TYPE_A);
        assert_int_equal(dq.id, 0xabcd);

        const uint8_t ip[4] = { 198, 18, 0, 1 };
        int len = dns_build_answer(q, &dq, DNS_RCODE_OK, ip, 5, out, sizeof(out));
        assert_int_equal(len, (int)n + 16);
        assert_int_equal(out[0], 0xab);
        assert_int_equal(out[2] & 0x80, 0x80);          /* an answer */
        assert_int_equal(out[2] & 0x01, 0x01);          /* RD kept */
        assert_int_equal(out[3] & 0x0f, 0);
        assert_int_equal(out[7], 1);                    /* one answer */
        assert_memory_equal(out + len - 4, ip, 4);

        len = dns_build_answer(q, &dq, DNS_RCODE_NXDOMAIN, NULL, 0, out, sizeof(out));
        assert_int_equal(len, (int)n);
        assert_int_equal(out[3] & 0x0f, DNS_RCODE_NXDOMAIN);
        assert_int_equal(out[7], 0);

        /* truncated, compressed, answers instead of questions */
        for (size_t i = 0; i < n; i++)
                assert_int_not_equal(dns_parse_query(q, i, &dq), 0);
        n = query(q, "a.test", DNS_TYPE_A);
        q[12] = 0xc0;
        assert_int_equal(dns_parse_query(q, n, &dq), -EBADMSG);
        n = query(q, "a.test", DNS_TYPE_A);
        q[2] |= 0x80;
        assert_int_equal(dns_parse_query(q, n, &dq), -EBADMSG);
        n = query(q, "a.test", DNS_TYPE_A);
        q[5] = 2;
        assert_int_equal(dns_parse_query(q, n, &dq), -EBADMSG);
        /* a label with a dot or a control byte in it is no name */
        n = query(q, "a.test", DNS_TYPE_A);
        q[13] = '.';
        assert_int_equal(dns_parse_query(q, n, &dq), -EBADMSG);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(tls),
                cmocka_unit_test(http),
                cmocka_unit_test(dns),
                cmocka_unit_test(origin_form),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
