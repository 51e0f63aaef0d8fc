/* test-live-publish.c - unit tests for `sandbox start --publish`
 * (run/live-publish.c): what the user types is checked strictly, the
 * host side is bound to 127.0.0.1 whatever was asked, and the supervisor
 * connects no socket "init" hands it that is not a TCP socket of the
 * sandbox's own network namespace. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/util.h"
#include "record/store.h"
#include "run/live-publish.h"
#include "sandbox/sync.h"

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

/* One connection through p's listener, with "init" (the test) answering
 * its socket request with fd: the client must be reset, never relayed,
 * and the record must say why. */
static void refused_socket(int fd, const char *what)
{
        char dir[] = "/tmp/test-live-publish.XXXXXX";
        struct live_port port = { .host_port = 0, .port = 9, .fd = -1 };
        struct pollfd pfd[LIVE_PUBLISH_POLL];
        int sync[2];
        char op = 0, c;

        assert_non_null(mkdtemp(dir));
        setenv("HUTCH_STATE_DIR", dir, 1);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync), 0);
        assert_int_equal(live_publish_bind(&port), 0);
        /* init's network namespace is ours: a socket of the host's */
        struct live_publish *p = live_publish_new(&port, 1, sync[0], getpid());
        assert_non_null(p);

        int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port.host_port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        assert_int_equal(connect(client, (struct sockaddr *)&sa, sizeof(sa)), 0);
        live_publish_poll(p, pfd, true);
        assert_true(poll(pfd, LIVE_PUBLISH_POLL, 5000) > 0);
        live_publish_run(p, pfd);
        assert_true(live_publish_busy(p));
        assert_int_equal(recv(sync[1], &op, 1, MSG_DONTWAIT), 1);
        assert_int_equal(op, SANDBOX_MSG_SOCKET);

        live_publish_socket(p, fd, 0);
        assert_false(live_publish_busy(p));
        /* reset at once, nothing relayed */
        assert_int_equal(recv(client, &c, 1, 0), -1);
        assert_int_equal(errno, ECONNRESET);

        assert_int_equal(live_publish_finish(p, "01JF0000000000000000000009"), 0);
        assert_int_equal(port.fd, -1);
        _cleanup_free_ char *db = xasprintf("%s/hutch.db", dir);
        struct store *s = NULL;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(store_open(db, &s, &err), 0);
        json_t *rows = store_connections_json(s, "01JF0000000000000000000009");
        assert_int_equal(json_array_size(rows), 1);
        json_t *r = json_array_get(rows, 0);
        print_message("# %s: %s\n", what, json_string_value(json_object_get(r, "end")));
        assert_string_equal(json_string_value(json_object_get(r, "end")), "no socket from the sandbox");
        assert_string_equal(json_string_value(json_object_get(r, "decision")), "published");
        assert_int_equal(json_integer_value(json_object_get(r, "bytes_in")), 0);
        json_decref(rows);
        store_close(s);
        close(client);
        close(sync[0]);
        close(sync[1]);
        _cleanup_free_ char *rm = xasprintf("rm -rf '%s'", dir);
        assert_int_equal(system(rm), 0);
}

static void host_socket_refused(void **state)
{
        (void)state;
        /* a TCP socket of the right kind, but in the host's namespace */
        refused_socket(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "a host TCP socket");
}

static void wrong_kinds_refused(void **state)
{
        int pipefd[2];
        (void)state;
        refused_socket(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), "a UDP socket");
        refused_socket(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), "a unix socket");
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        close(pipefd[1]);
        refused_socket(pipefd[0], "a pipe");
        /* init could not make one: no fd, an error */
        refused_socket(-1, "none");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parse_good),
                cmocka_unit_test(parse_bad),
                cmocka_unit_test(bind_loopback_only),
                cmocka_unit_test(host_socket_refused),
                cmocka_unit_test(wrong_kinds_refused),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
