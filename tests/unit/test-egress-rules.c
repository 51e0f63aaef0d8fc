/* test-egress-rules.c - unit tests for the egress rules (net/rules.c) and
 * the host-side decision (net/resolve.c): parsing, matching, and the
 * fail-closed defaults for loopback, link-local (the metadata address),
 * private and unique-local ranges and the host's own addresses. The
 * resolver is injected: nothing here resolves a name or dials. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "lib/util.h"
#include "net/resolve.h"
#include "net/rules.h"

static struct egress_addr A(const char *s)
{
        struct egress_addr a;
        assert_int_equal(egress_addr_parse(s, &a), 0);
        return a;
}

static void parse(struct egress_rules *r, char **allow, char **deny, char **hosts)
{
        const char *bad = NULL;
        assert_int_equal(egress_rules_parse(allow, deny, hosts, r, &bad), 0);
}

static void rule_syntax(void **state)
{
        const char *good[] = { "pypi.org", "pypi.org:443", "*.pythonhosted.org", "*.example.com:8000-8100",
                               "*", "*:22", "10.0.0.0/8", "10.1.2.3:5432", "[2001:db8::1]:443",
                               "2001:db8::/32", "api.test:*", "Example.COM:80", "1.2.3.4" };
        const char *bad[] = { "", ":443", "pypi.org:", "pypi.org:0", "pypi.org:65536", "pypi.org:http",
                              "a..b", "-a.com", "*.", "**.com", "*.*.com", "10.0.0.0/33", "10.0.0.0/",
                              "[2001:db8::1", "[::1]x", "host:1:2", "a b", "pypi.org:443-80",
                              "x_/8", "ünïcode.com" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_null(egress_rule_check(good[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (egress_rule_check(bad[i]) == NULL)
                        fail_msg("accepted bad rule \"%s\"", bad[i]);
        }
        assert_null(egress_host_check("api.test=127.0.0.1"));
        assert_null(egress_host_check("v6.test=::1"));
        assert_non_null(egress_host_check("api.test"));
        assert_non_null(egress_host_check("=1.2.3.4"));
        assert_non_null(egress_host_check("api.test=localhost"));

        struct egress_rules r;
        const char *which = NULL;
        assert_int_equal(egress_rules_parse((char *[]){ "ok.com", "bad..com", NULL }, NULL, NULL, &r, &which),
                         -EINVAL);
        assert_string_equal(which, "bad..com");
}

static void matching(void **state)
{
        struct egress_rules r;
        parse(&r, (char *[]){ "pypi.org", "*.pythonhosted.org", "api.test:8080", "203.0.113.0/24:22", NULL },
              (char *[]){ "evil.pythonhosted.org", NULL }, NULL);
        struct egress_addr pub = A("203.0.113.7");

        /* default ports are 443 and 80 */
        assert_true(egress_rules_decide(&r, "pypi.org", NULL, 443).allowed);
        assert_true(egress_rules_decide(&r, "PYPI.org", NULL, 80).allowed);
        assert_false(egress_rules_decide(&r, "pypi.org", NULL, 22).allowed);
        /* exact names are exact */
        assert_false(egress_rules_decide(&r, "www.pypi.org", NULL, 443).allowed);
        assert_false(egress_rules_decide(&r, "pypi.org.evil.com", NULL, 443).allowed);
        /* a suffix covers names below it, not itself nor look-alikes */
        assert_true(egress_rules_decide(&r, "files.pythonhosted.org", NULL, 443).allowed);
        assert_false(egress_rules_decide(&r, "pythonhosted.org", NULL, 443).allowed);
        assert_false(egress_rules_decide(&r, "xpythonhosted.org", NULL, 443).allowed);
        /* deny comes first */
        struct egress_verdict v = egress_rules_decide(&r, "evil.pythonhosted.org", NULL, 443);
        assert_false(v.allowed);
        assert_string_equal(v.reason, "deny rule");
        assert_string_equal(v.rule->text, "evil.pythonhosted.org");
        /* explicit port */
        assert_true(egress_rules_decide(&r, "api.test", NULL, 8080).allowed);
        assert_false(egress_rules_decide(&r, "api.test", NULL, 443).allowed);
        /* address rules judge addresses only */
        assert_true(egress_rules_decide(&r, NULL, &pub, 22).allowed);
        assert_false(egress_rules_decide(&r, NULL, &pub, 443).allowed);
        v = egress_rules_decide(&r, "unknown.com", NULL, 443);
        assert_false(v.allowed);
        assert_null(v.rule);
        assert_string_equal(v.reason, "no rule");
        /* the DNS stub answers names an allow rule names, whatever the port */
        assert_non_null(egress_rules_name_allowed(&r, "api.test"));
        assert_non_null(egress_rules_name_allowed(&r, "a.pythonhosted.org"));
        assert_null(egress_rules_name_allowed(&r, "evil.pythonhosted.org"));
        assert_null(egress_rules_name_allowed(&r, "example.com"));
        egress_rules_done(&r);
}

static void classes(void **state)
{
        static const struct {
                const char *addr, *class;
        } cases[] = {
                { "169.254.169.254", "link-local" },    /* cloud metadata */
                { "fd00:ec2::254", "unique-local" },    /* AWS metadata over IPv6 */
                { "127.0.0.1", "loopback" },
                { "127.255.0.1", "loopback" },
                { "::1", "loopback" },
                { "0.0.0.0", "unspecified" },
                { "::", "unspecified" },
                { "10.0.0.1", "private" },
                { "172.16.0.1", "private" },
                { "172.31.255.255", "private" },
                { "192.168.1.1", "private" },
                { "100.64.0.1", "private" },
                { "fe80::1", "link-local" },
                { "fc00::1", "unique-local" },
                { "::ffff:10.0.0.1", "private" },       /* v4-mapped is judged as v4 */
                { "::ffff:169.254.169.254", "link-local" },
                { "64:ff9b::a9fe:a9fe", "link-local" }, /* NAT64 of 169.254.169.254 */
                { "2002:7f00:1::", "loopback" },        /* 6to4 of 127.0.0.1 */
                { "224.0.0.1", "multicast" },
                { "255.255.255.255", "reserved" },
                { "198.18.0.1", "reserved" },           /* the stub's own stand-ins */
                { "172.32.0.1", NULL },
                { "8.8.8.8", NULL },
                { "203.0.113.9", NULL },
                { "2606:4700::1111", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct egress_addr a = A(cases[i].addr);
                const char *c = egress_addr_class(&a);
                if (cases[i].class == NULL ? c != NULL : (c == NULL || !streq(c, cases[i].class)))
                        fail_msg("%s: class %s, expected %s", cases[i].addr, c ? c : "(public)",
                                 cases[i].class ? cases[i].class : "(public)");
        }
}

static void fail_closed(void **state)
{
        struct egress_rules r;
        struct egress_addr meta = A("169.254.169.254"), lan = A("10.1.2.3"), lo = A("127.0.0.1"),
                           ula = A("fd12::1"), pub = A("8.8.8.8"), own = A("203.0.113.50");

        /* wildcards open nothing that fails closed */
        parse(&r, (char *[]){ "*", "*:*", "0.0.0.0/0:*", "[::/0]:*", "10.0.0.0/7:*", NULL }, NULL, NULL);
        assert_string_equal(egress_may_dial(&r, &meta, 80, false, NULL, 0), "link-local");
        assert_string_equal(egress_may_dial(&r, &lan, 443, false, NULL, 0), "private");
        assert_string_equal(egress_may_dial(&r, &lo, 443, false, NULL, 0), "loopback");
        assert_string_equal(egress_may_dial(&r, &ula, 443, false, NULL, 0), "unique-local");
        assert_null(egress_may_dial(&r, &pub, 443, false, NULL, 0));
        /* the host's own public address is refused too */
        assert_string_equal(egress_may_dial(&r, &own, 443, false, &own, 1), "host address");
        egress_rules_done(&r);

        /* named by IP or a CIDR inside the class: open, on its ports */
        parse(&r, (char *[]){ "169.254.169.254:80", "10.1.0.0/16:443", "203.0.113.50:443", NULL }, NULL, NULL);
        assert_null(egress_may_dial(&r, &meta, 80, false, NULL, 0));
        assert_non_null(egress_may_dial(&r, &meta, 443, false, NULL, 0));
        assert_null(egress_may_dial(&r, &lan, 443, false, NULL, 0));
        struct egress_addr lan2 = A("10.2.0.1");
        assert_non_null(egress_may_dial(&r, &lan2, 443, false, NULL, 0));
        assert_null(egress_may_dial(&r, &own, 443, false, &own, 1));
        egress_rules_done(&r);

        /* --add-host names its address */
        parse(&r, (char *[]){ "api.test:8080", NULL }, NULL, (char *[]){ "api.test=127.0.0.1", NULL });
        assert_null(egress_may_dial(&r, &lo, 8080, true, NULL, 0));
        assert_non_null(egress_may_dial(&r, &lo, 8080, false, NULL, 0));
        egress_rules_done(&r);

        /* a deny IP rule holds even for an address a name resolved to */
        parse(&r, (char *[]){ "*", NULL }, (char *[]){ "8.8.8.0/24", NULL }, NULL);
        assert_string_equal(egress_may_dial(&r, &pub, 443, false, NULL, 0), "deny rule");
        egress_rules_done(&r);
}

/* ---- the decision, with an injected resolver ----------------------------- */

struct answers {
        const char *name;
        const char *addrs[3];
        int calls;
};

static int fake_resolve(const char *name, struct egress_addr *out, size_t max, void *userdata)
{
        struct answers *a = userdata;
        size_t n = 0;
        a->calls++;
        if (!streq(name, a->name))
                return -ENOENT;
        for (; n < max && n < 3 && a->addrs[n]; n++)
                out[n] = A(a->addrs[n]);
        return (int)n;
}

static struct peek_result tls_sni(const char *name)
{
        struct peek_result p = { .kind = PEEK_TLS };
        snprintf(p.name, sizeof(p.name), "%s", name);
        return p;
}

static void decide_rebinding(void **state)
{
        struct egress_rules r;
        struct egress_decision d;
        parse(&r, (char *[]){ "api.example.com", "*.cdn.example", NULL }, NULL, NULL);
        struct peek_result pk = tls_sni("api.example.com");
        struct egress_request req = { .dest = A("198.18.0.1"), .dest_port = 443,
                                      .stub_name = "api.example.com", .peek = &pk };

        /* the name resolves to the metadata service: refused after resolution */
        struct answers ans = { "api.example.com", { "169.254.169.254" } };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);
        assert_string_equal(d.reason, "link-local");
        assert_true(d.has_refused);
        assert_int_equal(ans.calls, 1);

        /* mixed answers: only the public one is dialled */
        struct answers mixed = { "api.example.com", { "127.0.0.1", "93.184.216.34", "10.0.0.1" } };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &mixed, &d);
        assert_true(d.allowed);
        assert_int_equal(d.n_addrs, 1);
        struct egress_addr want = A("93.184.216.34");
        assert_true(egress_addr_equal(&d.addrs[0], &want));
        egress_rules_done(&r);
}

static void decide_names(void **state)
{
        struct egress_rules r;
        struct egress_decision d;
        struct answers ans = { "api.example.com", { "93.184.216.34" } };
        parse(&r, (char *[]){ "api.example.com", NULL }, NULL, NULL);

        /* SNI that differs from the name the job looked up */
        struct peek_result other = tls_sni("evil.example.net");
        struct egress_request req = { .dest = A("198.18.0.1"), .dest_port = 443,
                                      .stub_name = "api.example.com", .peek = &other };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);
        assert_string_equal(d.reason, "SNI mismatch");

        /* domain fronting: a private IP dialled with an allowed SNI reaches
         * the name's own address, never the IP the job chose */
        struct peek_result ok = tls_sni("api.example.com");
        req = (struct egress_request) { .dest = A("10.0.0.5"), .dest_port = 443, .peek = &ok };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_true(d.allowed);
        assert_int_equal(d.n_addrs, 1);
        struct egress_addr want = A("93.184.216.34");
        assert_true(egress_addr_equal(&d.addrs[0], &want));

        /* no name at all: only address rules; a private IP stays closed */
        struct peek_result none = { .kind = PEEK_OTHER };
        req = (struct egress_request) { .dest = A("10.0.0.5"), .dest_port = 443, .peek = &none };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);
        assert_string_equal(d.reason, "no rule");

        /* a stand-in address the stub never handed out */
        req = (struct egress_request) { .dest = A("198.18.3.3"), .dest_port = 443, .stub_unknown = true,
                                        .peek = &none };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);

        /* the proxy: CONNECT names the target and its port */
        struct peek_result conn = { .kind = PEEK_CONNECT, .port = 443, .name = "api.example.com" };
        req = (struct egress_request) { .dest = A("127.0.0.1"), .dest_port = 3128, .via_proxy = true,
                                        .peek = &conn };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_true(d.allowed);
        assert_int_equal(d.port, 443);
        conn.port = 22;
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);
        /* an IP literal through the proxy: address rules judge it, as
         * they would a direct connection to it */
        struct peek_result lit = { .kind = PEEK_HTTP, .port = 443, .has_addr = true, .addr = A("10.0.0.5") };
        req.peek = &lit;
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);
        assert_string_equal(d.reason, "no rule");
        lit.has_addr = false;
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);
        assert_string_equal(d.reason, "proxy request without a host name or address");
        egress_rules_done(&r);

        parse(&r, (char *[]){ "10.0.0.5:8080", NULL }, NULL, NULL);
        lit = (struct peek_result) { .kind = PEEK_HTTP, .port = 8080, .has_addr = true, .addr = A("10.0.0.5") };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_true(d.allowed);
        assert_int_equal(d.port, 8080);
        assert_int_equal(d.n_addrs, 1);
        want = A("10.0.0.5");
        assert_true(egress_addr_equal(&d.addrs[0], &want));
        lit.port = 8081;
        egress_decide(&r, &req, NULL, 0, fake_resolve, &ans, &d);
        assert_false(d.allowed);
        egress_rules_done(&r);

        /* --add-host: no resolution, loopback allowed because it was named */
        parse(&r, (char *[]){ "api.test:8080", NULL }, NULL, (char *[]){ "api.test=127.0.0.1", NULL });
        struct answers never = { "nothing" };
        req = (struct egress_request) { .dest = A("198.18.0.1"), .dest_port = 8080, .stub_name = "api.test",
                                        .peek = &none };
        egress_decide(&r, &req, NULL, 0, fake_resolve, &never, &d);
        assert_true(d.allowed);
        assert_int_equal(never.calls, 0);
        want = A("127.0.0.1");
        assert_true(egress_addr_equal(&d.addrs[0], &want));
        egress_rules_done(&r);
}

static void ports(void **state)
{
        struct egress_rules r;
        uint16_t *p = NULL;
        parse(&r, (char *[]){ "a.com", "b.com:8000-8002", "c.com:443", NULL }, NULL, NULL);
        assert_int_equal(egress_rules_ports(&r, 128, &p), 5);
        assert_int_equal(p[0], 80);
        assert_int_equal(p[1], 443);
        assert_int_equal(p[2], 8000);
        assert_int_equal(p[4], 8002);
        free(p);
        egress_rules_done(&r);
        parse(&r, (char *[]){ "a.com:*", NULL }, NULL, NULL);
        assert_int_equal(egress_rules_ports(&r, 128, &p), -E2BIG);
        egress_rules_done(&r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(rule_syntax),
                cmocka_unit_test(matching),
                cmocka_unit_test(classes),
                cmocka_unit_test(fail_closed),
                cmocka_unit_test(decide_rebinding),
                cmocka_unit_test(decide_names),
                cmocka_unit_test(ports),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
