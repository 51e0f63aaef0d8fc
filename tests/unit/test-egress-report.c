/* test-egress-report.c - unit tests for the supervisor's reading of the
 * egress helper's streamed report (net/egress-report.c): lines split
 * across reads, junk, a bounded read, an over-long line, the end, and
 * egress_finish() taking only what the live reads left. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/util.h"
#include "net/egress.h"
#include "egress-fake.h"


static void put(int fd, const char *s)
{
        assert_int_equal(write_all(fd, s, strlen(s)), 0);
}

static json_int_t time_of(json_t *arr, size_t i)
{
        return json_integer_value(json_object_get(json_array_get(arr, i), "time_ms"));
}

static void split_lines_and_junk(void **state)
{
        (void)state;
        struct egress e;
        int w;
        egress_fake(&e, &w);
        json_t *arr = json_array();

        assert_int_equal(egress_report_fd(&e), e.ctl_fd);
        /* nothing there: no wait, nothing taken */
        assert_int_equal(egress_report_read(&e, 65536, arr), 0);
        put(w, "{\"proto\":\"tcp\",\"time_ms\":5}\n{\"proto\":\"dn");
        assert_int_equal(egress_report_read(&e, 65536, arr), 1);
        put(w, "s\",\"time_ms\":3}\nnot json\n[1]\n");
        assert_int_equal(egress_report_read(&e, 65536, arr), 1);
        assert_int_equal(json_array_size(arr), 2);
        assert_int_equal(time_of(arr, 0), 5);
        assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 1), "proto")), "dns");

        /* the rest at the end, sorted by time, none of the above again */
        put(w, "{\"time_ms\":9}\n{\"time_ms\":1}\n");
        close(w);
        json_t *rest = NULL;
        assert_int_equal(egress_finish(&e, 2000, &rest), 0);
        assert_int_equal(json_array_size(rest), 2);
        assert_int_equal(time_of(rest, 0), 1);
        assert_int_equal(time_of(rest, 1), 9);
        assert_null(json_object_get(json_array_get(rest, 0), "seq"));
        assert_int_equal(e.pid, 0);
        assert_int_equal(e.ctl_fd, -1);
        json_decref(rest);
        json_decref(arr);
}

static void read_is_bounded(void **state)
{
        (void)state;
        struct egress e;
        int w;
        egress_fake(&e, &w);
        json_t *arr = json_array();

        for (int i = 0; i < 100; i++)
                put(w, "{\"proto\":\"tcp\",\"time_ms\":1}\n");     /* 29 bytes */
        /* 64 bytes: two lines at most, whatever waits */
        int n = egress_report_read(&e, 64, arr);
        assert_true(n >= 1 && n <= 2);
        assert_int_equal(json_array_size(arr), (size_t)n);
        while (egress_report_read(&e, 64, arr) > 0)
                ;
        assert_int_equal(json_array_size(arr), 100);
        close(w);
        json_t *rest = NULL;
        assert_int_equal(egress_finish(&e, 2000, &rest), 0);
        assert_int_equal(json_array_size(rest), 0);
        json_decref(rest);
        json_decref(arr);
}

static void overlong_line_dropped_and_end(void **state)
{
        (void)state;
        struct egress e;
        int w;
        egress_fake(&e, &w);
        json_t *arr = json_array();

        /* no newline in 300 KiB: not a line of the helper's, dropped */
        size_t big = 300u << 10;
        char *junk = xmalloc(big + 1);
        memset(junk, 'x', big);
        junk[big] = '\0';
        pid_t writer = fork();
        assert_true(writer >= 0);
        if (writer == 0) {
                put(w, junk);
                put(w, "tail\n{\"time_ms\":7}\n");
                _exit(0);
        }
        free(junk);
        int got = 0;
        for (int i = 0; i < 2000 && got == 0; i++) {
                int n = egress_report_read(&e, 65536, arr);
                assert_true(n >= 0);
                got += n;
                if (n == 0)
                        usleep(1000);
        }
        assert_int_equal(waitpid(writer, NULL, 0), writer);
        assert_int_equal(got, 1);
        assert_int_equal(time_of(arr, 0), 7);

        /* the helper's end: said once, then nothing is polled */
        close(w);
        assert_int_equal(egress_report_read(&e, 65536, arr), -EPIPE);
        assert_int_equal(egress_report_fd(&e), -1);
        assert_int_equal(egress_report_read(&e, 65536, arr), 0);
        json_t *rest = NULL;
        assert_int_equal(egress_finish(&e, 2000, &rest), 0);
        assert_int_equal(json_array_size(rest), 0);
        json_decref(rest);
        json_decref(arr);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(split_lines_and_junk),
                cmocka_unit_test(read_is_bounded),
                cmocka_unit_test(overlong_line_dropped_and_end),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
