/* test-live-publish.c - unit tests for `sandbox start --publish`'s
 * parser and host listener (run/live-publish.c): what the user types is
 * checked strictly, and the host side is bound to 127.0.0.1 whatever
 * was asked. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/live-publish.h"

static void parse_good(void **state)
{
        struct live_port p;
        const char *why = NULL;
        (void)state;
        assert_int_equal(live_publish_parse("8000", &p, &why), 0);
        assert_int_equal(p.host_port, 0);
        assert_int_equal(p.port, 8000);
        assert_int_equal(p.fd, -1);
        assert_int_equal(live_publish_parse("18080:80", &p, &why), 0);
        assert_int_equal(p.host_port, 18080);
        assert_int_equal(p.port, 80);
        assert_int_equal(live_publish_parse("0:65535", &p, &why), 0);
        assert_int_equal(p.host_port, 0);
        assert_int_equal(p.port, 65535);
        assert_int_equal(live_publish_parse("127.0.0.1:9000:90", &p, &why), 0);
        assert_int_equal(p.host_port, 9000);
        assert_int_equal(p.port, 90);
}

static void parse_bad(void **state)
{
        const char *bad[] = { "", "0", "65536", "70000", "8000:0", "1:2:3", "-1", "+80", " 80", "80 ", "80:",
                              ":80", "abc", "8000:abc", "0.0.0.0:80:80", "127.0.0.2:80:80", "[::1]:80:80",
                              "localhost:80:80", "99999999999999999999", "127.0.0.1:", "127.0.0.1:80:" };
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct live_port p = { .host_port = 7, .port = 7, .fd = 7 };
                const char *why = NULL;
                assert_int_equal(live_publish_parse(bad[i], &p, &why), -EINVAL);
                assert_non_null(why);
                /* left alone on failure */
                assert_int_equal(p.port, 7);
        }
}

static void bind_loopback_only(void **state)
{
        struct live_port p = { .host_port = 0, .port = 80, .fd = -1 };
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);
        (void)state;
        assert_int_equal(live_publish_bind(&p), 0);
        assert_true(p.fd >= 0);
        assert_true(p.host_port > 0);
        assert_int_equal(getsockname(p.fd, (struct sockaddr *)&sa, &len), 0);
        assert_int_equal(sa.sin_family, AF_INET);
        assert_int_equal(ntohl(sa.sin_addr.s_addr), INADDR_LOOPBACK);
        assert_int_equal(ntohs(sa.sin_port), p.host_port);
        /* the same port again is in use */
        struct live_port q = { .host_port = p.host_port, .port = 81, .fd = -1 };
        assert_int_equal(live_publish_bind(&q), -EADDRINUSE);
        assert_int_equal(q.fd, -1);
        close(p.fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parse_good),
                cmocka_unit_test(parse_bad),
                cmocka_unit_test(bind_loopback_only),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
