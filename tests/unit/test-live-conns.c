/* test-live-conns.c - unit tests for a live sandbox's connections
 * recorded as they end (run/live-conns.c): what the egress helper
 * reports lands in the sandbox's run, and a helper that reports without
 * end (were the job ever to own it) is capped by the supervisor too,
 * the excess counted in one summary row. */
#include "config.h"

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/util.h"
#include "net/egress.h"
#include "egress-fake.h"
#include "record/store.h"
#include "run/live-conns.h"
#include "run/run.h"

struct fixture {
        char dir[64];
        struct store *s;
        char id[ULID_LEN + 1];
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        _cleanup_free_ char *error = NULL;
        snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-live-conns-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        _cleanup_free_ char *db = xasprintf("%s/hutch.db", f->dir);
        if (store_open(db, &f->s, &error) < 0)
                return -1;
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        char *argv[] = { "sandbox", "box", NULL };
        if (run_record_begin(rec, argv, "/", "default") < 0 || store_run_insert(f->s, rec) < 0)
                return -1;
        memcpy(f->id, rec->id, sizeof(f->id));
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        store_close(f->s);
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
                return -1;
        free(f);
        return 0;
}


/* n report lines, each taken by the loop as it would: a round per
 * readable socket, until the socket is drained. */
static void report(struct live_conns *c, int w, size_t n, struct store *s, const char *id)
{
        char line[128];
        for (size_t i = 0; i < n; i++) {
                int len = snprintf(line, sizeof(line),
                                   "{\"proto\":\"tcp\",\"time_ms\":%zu,\"decision\":\"allow\",\"dst\":\"127.0.0.1:%zu\"}\n",
                                   i + 1, i % 60000 + 1);
                assert_int_equal(write_all(w, line, (size_t)len), 0);
                /* each small write is a buffer of its own in the socket: drain often */
                if (i % 100 == 99 || i + 1 == n) {
                        struct pollfd p;
                        for (;;) {
                                live_conns_poll(c, &p);
                                if (poll(&p, 1, 0) <= 0)
                                        break;
                                live_conns_run(c, &p, NULL, s, id);
                        }
                }
        }
}

static size_t count_proto(json_t *rows, const char *proto, json_int_t *dropped)
{
        size_t i, n = 0;
        json_t *o;
        json_array_foreach(rows, i, o) {
                if (strcmp(json_string_value(json_object_get(o, "proto")) ?: "", proto) == 0) {
                        n++;
                        if (dropped)
                                *dropped = json_integer_value(json_object_get(o, "dropped"));
                }
        }
        return n;
}

static void reported_rows_are_recorded(void **state)
{
        struct fixture *f = *state;
        struct egress e;
        int w;
        egress_fake(&e, &w);
        struct live_conns *c = live_conns_new(&e);
        report(c, w, 25, f->s, f->id);
        close(w);
        live_conns_free(c, NULL, f->s, f->id);
        json_t *rows = store_connections_json(f->s, f->id);
        assert_non_null(rows);
        assert_int_equal(count_proto(rows, "tcp", NULL), 25);
        assert_int_equal(count_proto(rows, "summary", NULL), 0);
        json_decref(rows);
        close(e.ctl_fd);
        waitpid(e.pid, NULL, 0);
}

static void a_helper_reporting_without_end_is_capped(void **state)
{
        struct fixture *f = *state;
        struct egress e;
        int w;
        const size_t cap = 2 * EGRESS_MAX_RECORDS + 2, more = 1500;
        egress_fake(&e, &w);
        struct live_conns *c = live_conns_new(&e);
        report(c, w, cap + more, f->s, f->id);
        close(w);
        live_conns_free(c, NULL, f->s, f->id);
        json_t *rows = store_connections_json(f->s, f->id);
        assert_non_null(rows);
        json_int_t dropped = 0;
        assert_int_equal(count_proto(rows, "tcp", NULL), cap);
        assert_int_equal(count_proto(rows, "summary", &dropped), 1);
        assert_int_equal(dropped, (json_int_t)more);
        json_decref(rows);
        close(e.ctl_fd);
        waitpid(e.pid, NULL, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(reported_rows_are_recorded, setup, teardown),
                cmocka_unit_test_setup_teardown(a_helper_reporting_without_end_is_capped, setup, teardown),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
