/* test-hostio.c - unit tests for the caller's output side (hostio.c):
 * hostio_send() writes straight through while nothing is pending, queues
 * behind what is (bytes never overtake older ones), drops but goes on
 * when the disk is full, and says -EPIPE once the reader is gone; for a
 * pipe, a socket and a character device. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "supervise/hostio.h"
#include "tap-skip.h"

#define CAP (256u << 10)

static void make_pipe(int p[2])
{
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        /* the smallest a pipe can be, so that filling it is cheap */
        assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) > 0);
}

/* Read everything the pipe holds now. */
static size_t drain(int fd, char *buf, size_t max)
{
        size_t got = 0;
        int fl = fcntl(fd, F_GETFL);
        assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
        for (;;) {
                ssize_t n = read(fd, buf + got, max - got);
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        assert_int_equal(fcntl(fd, F_SETFL, fl), 0);
        return got;
}

/* A reader that keeps up: everything is written at once, nothing kept.
 * wfd is what hostio writes to, rfd its reader's end. */
static void sends_at_once(int wfd, int rfd)
{
        char got[64];
        struct hostio *h = hostio_new(wfd, true, CAP);

        assert_int_equal(hostio_send(h, "hello ", 6), 0);
        assert_int_equal(hostio_send(h, "world", 5), 0);
        assert_int_equal(hostio_pending(h), 0);
        assert_int_equal(drain(rfd, got, sizeof(got)), 11);
        assert_memory_equal(got, "hello world", 11);
        hostio_free(h);
}

static void writes_through_when_nothing_waits(void **state)
{
        (void)state;
        int p[2];
        make_pipe(p);
        sends_at_once(p[1], p[0]);
        close(p[0]);
        close(p[1]);
}

/* A full pipe takes nothing: the bytes wait, and later ones queue behind
 * them even once the pipe has room again. */
static void queues_behind_pending_bytes(void **state)
{
        (void)state;
        int p[2];
        static char fill[8192], got[16384];
        make_pipe(p);
        struct hostio *h = hostio_new(p[1], true, CAP);

        memset(fill, 'f', sizeof(fill));
        assert_int_equal(hostio_send(h, fill, sizeof(fill)), 0);
        size_t queued = hostio_pending(h);
        assert_true(queued > 0 && queued < sizeof(fill));
        assert_int_equal(hostio_send(h, "abc", 3), 0);
        assert_int_equal(hostio_pending(h), queued + 3);

        /* room again: still nothing may overtake what waits */
        size_t first = drain(p[0], got, sizeof(got));
        assert_int_equal(first, sizeof(fill) - queued);
        assert_int_equal(hostio_send(h, "def", 3), 0);
        size_t total = first;
        for (int round = 0; round < 8; round++) {
                total += drain(p[0], got + total, sizeof(got) - total);
                assert_int_equal(hostio_flush(h), 0);
        }
        assert_int_equal(total, sizeof(fill) + 6);
        assert_int_equal(hostio_pending(h), 0);
        for (size_t i = 0; i < sizeof(fill); i++)
                if (got[i] != 'f')
                        fail_msg("byte %zu is '%c', not 'f'", i, got[i]);
        assert_memory_equal(got + sizeof(fill), "abcdef", 6);
        hostio_free(h);
        close(p[0]);
        close(p[1]);
}

/* With secrets, a value becomes its marker, also when split over two
 * sends; only a tail that could start a value waits, and
 * hostio_release() passes it on at the end. */
static void redacts_what_it_passes_on(void **state)
{
        (void)state;
        int p[2];
        char got[256];
        char *secrets[] = { "TOK=secret123", NULL };
        make_pipe(p);
        struct hostio *h = hostio_new(p[1], true, CAP);
        hostio_set_secrets(h, secrets);

        assert_int_equal(hostio_send(h, "a secr", 6), 0);
        assert_int_equal(drain(p[0], got, sizeof(got)), 2);
        assert_memory_equal(got, "a ", 2);
        assert_int_equal(hostio_send(h, "et123 b\n", 8), 0);
        size_t n = drain(p[0], got, sizeof(got));
        assert_int_equal(n, strlen("[secret TOK] b\n"));
        assert_memory_equal(got, "[secret TOK] b\n", n);
        /* nothing that could start the value: passed on whole, at once */
        assert_int_equal(hostio_send(h, "plain", 5), 0);
        assert_int_equal(drain(p[0], got, sizeof(got)), 5);
        assert_int_equal(hostio_send(h, "x sec", 5), 0);
        assert_int_equal(drain(p[0], got, sizeof(got)), 2);
        assert_int_equal(hostio_release(h), 0);
        assert_int_equal(drain(p[0], got, sizeof(got)), 3);
        assert_memory_equal(got, "sec", 3);
        hostio_free(h);
        close(p[0]);
        close(p[1]);
}

/* A marker longer than the value it replaces is queued whole past the
 * capacity the send had room in; room is then 0, and nothing is lost. */
static void redaction_may_outgrow_the_room(void **state)
{
        (void)state;
        int p[2];
        static char fill[4096], got[8192];
        char *secrets[] = { "LONGNAME=ab", NULL };
        make_pipe(p);
        memset(fill, 'f', sizeof(fill));
        assert_int_equal(write(p[1], fill, sizeof(fill)), (ssize_t)sizeof(fill));
        struct hostio *h = hostio_new(p[1], true, 4);
        hostio_set_secrets(h, secrets);

        assert_int_equal(hostio_send(h, "ab", 2), 0);
        assert_int_equal(hostio_pending(h), strlen("[secret LONGNAME]"));
        assert_int_equal(hostio_room(h), 0);
        assert_int_equal(drain(p[0], got, sizeof(got)), sizeof(fill));
        assert_int_equal(hostio_flush(h), 0);
        size_t n = drain(p[0], got, sizeof(got));
        assert_int_equal(n, strlen("[secret LONGNAME]"));
        assert_memory_equal(got, "[secret LONGNAME]", n);
        assert_int_equal(hostio_room(h), 4);
        hostio_free(h);
        close(p[0]);
        close(p[1]);
}

/* /dev/full says ENOSPC: a full disk drops the output but is no reader
 * that left. */
static void full_disk_drops_but_goes_on(void **state)
{
        (void)state;
        int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                tap_skip("no /dev/full on this host");
        struct hostio *h = hostio_new(fd, true, CAP);

        assert_int_equal(hostio_send(h, "lost", 4), 0);
        assert_int_equal(hostio_pending(h), 0);
        assert_false(hostio_gone(h));
        assert_int_equal(hostio_room(h), CAP);
        hostio_free(h);
        close(fd);
}

/* The reader closed its end: -EPIPE, now and for every later call, and
 * nothing is kept. */
static void reader_gone_is_epipe(void **state)
{
        (void)state;
        int p[2];
        make_pipe(p);
        struct hostio *h = hostio_new(p[1], true, CAP);
        close(p[0]);

        assert_int_equal(hostio_send(h, "x", 1), -EPIPE);
        assert_true(hostio_gone(h));
        assert_int_equal(hostio_pending(h), 0);
        assert_int_equal(hostio_send(h, "y", 1), -EPIPE);
        hostio_free(h);
        close(p[1]);
}

/* A socket goes through send(MSG_DONTWAIT) the same way. */
static void socket_writes_through(void **state)
{
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        sends_at_once(sv[0], sv[1]);
        close(sv[0]);
        close(sv[1]);
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(writes_through_when_nothing_waits),
                cmocka_unit_test(queues_behind_pending_bytes),
                cmocka_unit_test(full_disk_drops_but_goes_on),
                cmocka_unit_test(reader_gone_is_epipe),
                cmocka_unit_test(redacts_what_it_passes_on),
                cmocka_unit_test(redaction_may_outgrow_the_room),
                cmocka_unit_test(socket_writes_through),
        };
        /* as in the supervisor: a write to a pipe without a reader must
         * fail with EPIPE, not kill us */
        signal(SIGPIPE, SIG_IGN);
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
