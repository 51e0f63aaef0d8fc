/* test-import.c - unit tests for export and import (exchange.h): a run
 * exported from one store and imported into another twice is stored
 * once and unchanged (long lines the JSON view folds included); a conflicting record for a stored id is refused
 * with the differing field and leaves nothing of its transaction; the
 * parser refuses what hutch export never writes, naming the field; the
 * node filter sees imported and local runs. Each test works in its own
 * temporary directory. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "lib/util.h"
#include "record/exchange.h"
#include "record/store.h"

struct fixture {
        char dir[64];
        struct store *a, *b;
};

static struct store *open_ok(const char *path)
{
        struct store *s = NULL;
        _cleanup_free_ char *error = NULL;
        if (store_open(path, &s, &error) < 0)
                fail_msg("store_open: %s", error);
        return s;
}

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-import-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        _cleanup_free_ char *a = xasprintf("%s/a/hutch.db", f->dir);
        _cleanup_free_ char *b = xasprintf("%s/b/hutch.db", f->dir);
        f->a = open_ok(a);
        f->b = open_ok(b);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        store_close(f->a);
        store_close(f->b);
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
                return -1;
        free(f);
        return 0;
}

/* A finished run in s, with output (an escape sequence in it), labels
 * and code; its id in id. */
static void add_run(struct store *s, char id[ULID_LEN + 1], int exit_code)
{
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        char *argv[] = { "python3", "-c", "print(42)", NULL };
        char *labels[] = { "task=7", "slurm.node=node1", NULL };

        assert_int_equal(run_record_begin(rec, argv, "/tmp", "python"), 0);
        rec->status = exit_code ? RUN_FAILED : RUN_SUCCESS;
        rec->exit_code = exit_code;
        rec->finished_at_ms = rec->started_at_ms + 25;
        rec->duration_ms = 25;
        rec->cpu_user_ms = 7;
        rec->cpu_sys_ms = 3;
        rec->peak_memory_bytes = 12897485;
        /* a line the JSON view folds, and an escape sequence it drops */
        char *longline = xmalloc(10001);
        memset(longline, 'x', 10000);
        longline[10000] = '\0';
        rec->out.data = xasprintf("42\n%s\n\033[31mred\033[0m\n", longline);
        free(longline);
        rec->out.len = strlen(rec->out.data);
        rec->out.total_bytes = rec->out.len;
        rec->out.lines = 2;
        rec->err.data = xstrdup("");
        rec->limits_json = xstrdup("{\"memory_bytes\":536870912,\"cpus\":1.0}");
        rec->enforcement_json = xstrdup("{\"network\":\"none\"}");
        rec->lang = xstrdup("python");
        rec->code = xstrdup("print(42)\n");
        rec->code_len = strlen(rec->code);
        assert_int_equal(store_run_insert(s, rec), 0);
        assert_int_equal(store_labels_set(s, rec->id, labels), 0);
        memcpy(id, rec->id, ULID_LEN + 1);
}

/* The export line of run id in s. */
static char *export_line(struct store *s, const char *id, bool with_output)
{
        _cleanup_run_record_ struct run_record *rec = NULL;
        assert_int_equal(store_run_get(s, id, &rec, NULL), 0);
        json_t *o = exchange_store_json(s, rec, with_output, "node1");
        assert_non_null(o);
        char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(o);
        return line;
}

/* Import one line into s in its own transaction: what store_import_add()
 * returned; *conflict gets the differing field. */
static int import_as(struct store *s, const char *local_node, const char *line, char **conflict)
{
        struct exchange_record x;
        _cleanup_free_ char *field = NULL, *why = NULL;
        int r = exchange_parse_record(line, strlen(line), &x, &field, &why);
        if (r < 0)
                fail_msg("parse: %s: %s", field, why);
        assert_int_equal(store_import_begin(s), 0);
        r = store_import_add(s, &x, local_node, 1000, conflict);
        if (r < 0)
                store_import_abort(s);
        else
                assert_int_equal(store_import_commit(s), 0);
        exchange_record_done(&x);
        return r;
}

static int import_line(struct store *s, const char *line, char **conflict)
{
        return import_as(s, "node2", line, conflict);
}

static size_t count_runs(struct store *s)
{
        struct run_record **recs = NULL;
        size_t n = 0;
        assert_int_equal(store_run_list(s, &STORE_FILTER_ALL, &recs, &n), 0);
        run_record_free_many(recs, n);
        return n;
}

static void idempotent(void **state)
{
        struct fixture *f = *state;
        char id[ULID_LEN + 1];
        char *conflict = NULL;

        add_run(f->a, id, 0);
        _cleanup_free_ char *line = export_line(f->a, id, true);
        assert_int_equal(import_line(f->b, line, &conflict), 1);
        assert_int_equal(count_runs(f->b), 1);

        /* twice: nothing changes, and the store's own export says the same */
        _cleanup_free_ char *again = export_line(f->b, id, true);
        assert_int_equal(import_line(f->b, line, &conflict), 0);
        assert_int_equal(import_line(f->b, again, &conflict), 0);
        assert_int_equal(count_runs(f->b), 1);
        _cleanup_free_ char *third = export_line(f->b, id, true);
        assert_string_equal(again, third);

        /* without output, and back into the store it came from */
        _cleanup_free_ char *bare = export_line(f->b, id, false);
        assert_int_equal(import_line(f->b, bare, &conflict), 0);
        assert_int_equal(import_as(f->a, "node1", line, &conflict), 0);
        assert_int_equal(count_runs(f->a), 1);

        /* the imported run keeps its node, labels and sanitised output */
        _cleanup_free_ char *node = NULL;
        uint64_t at = 0;
        assert_int_equal(store_origin_get(f->b, id, &node, &at), 0);
        assert_string_equal(node, "node1");
        assert_int_equal(at, 1000);
        assert_int_equal(store_origin_get(f->a, id, NULL, NULL), -ENOENT);
        _cleanup_run_record_ struct run_record *rec = NULL;
        assert_int_equal(store_run_get(f->b, id, &rec, NULL), 0);
        assert_int_equal(rec->out.len, 3 + 10001 + 4);
        assert_memory_equal(rec->out.data + 3 + 10001, "red\n", 4);
        assert_int_equal(rec->supervisor_pid, 0);
        assert_null(rec->idempotency_key);
        assert_string_equal(rec->code, "print(42)\n");
        _cleanup_strv_ char **labels = NULL;
        assert_int_equal(store_labels_get(f->b, id, &labels), 0);
        assert_int_equal(strv_length(labels), 2);
        assert_true(strv_contains(labels, "slurm.node=node1"));

        /* gc never judges it: it is not running, and has no supervisor here */
        assert_int_equal(store_mark_orphans(f->b, true, NULL), 0);
}

static void conflict_refused(void **state)
{
        struct fixture *f = *state;
        char id[ULID_LEN + 1], other[ULID_LEN + 1];
        _cleanup_free_ char *conflict = NULL;

        add_run(f->a, id, 0);
        add_run(f->a, other, 1);
        _cleanup_free_ char *line = export_line(f->a, id, true);
        _cleanup_free_ char *second = export_line(f->a, other, false);
        assert_int_equal(import_line(f->b, line, &conflict), 1);

        /* the same id, another exit code */
        json_t *o = json_loads(line, 0, NULL);
        json_object_set_new(o, "exit_code", json_integer(3));
        json_object_set_new(o, "status", json_string("failed"));
        _cleanup_free_ char *bad = json_dumps(o, JSON_COMPACT);
        json_decref(o);

        /* one transaction: a new record, then the conflict, then abort */
        struct exchange_record x, y;
        _cleanup_free_ char *field = NULL, *why = NULL;
        assert_int_equal(exchange_parse_record(second, strlen(second), &x, &field, &why), 0);
        assert_int_equal(exchange_parse_record(bad, strlen(bad), &y, &field, &why), 0);
        assert_int_equal(store_import_begin(f->b), 0);
        assert_int_equal(store_import_add(f->b, &x, "node2", 2000, &conflict), 1);
        assert_int_equal(store_import_add(f->b, &y, "node2", 2000, &conflict), -EEXIST);
        assert_string_equal(conflict, "status");
        store_import_abort(f->b);
        exchange_record_done(&x);
        exchange_record_done(&y);

        /* nothing of the failed import is left; the first run is intact */
        assert_int_equal(count_runs(f->b), 1);
        _cleanup_run_record_ struct run_record *rec = NULL;
        assert_int_equal(store_run_get(f->b, other, &rec, NULL), -ENOENT);
        assert_int_equal(store_run_get(f->b, id, &rec, NULL), 0);
        assert_int_equal(rec->exit_code, 0);

        /* a different node for the same id is a conflict too */
        o = json_loads(line, 0, NULL);
        json_object_set_new(o, "node", json_string("node9"));
        _cleanup_free_ char *moved = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        free(conflict);
        conflict = NULL;
        assert_int_equal(import_line(f->b, moved, &conflict), -EEXIST);
        assert_string_equal(conflict, "node");
}

/* The field exchange_parse_record() names for text, or fails. */
static void refused(const char *text, const char *want_field)
{
        struct exchange_record x;
        _cleanup_free_ char *field = NULL, *why = NULL;
        int r = exchange_parse_record(text, strlen(text), &x, &field, &why);
        exchange_record_done(&x);
        if (r != -EINVAL)
                fail_msg("accepted: %s", text);
        if (!streq(field, want_field))
                fail_msg("%s: named %s (%s), not %s", text, field, why, want_field);
}

#define BASE "\"schema\":\"hutch.result/1\",\"id\":\"01M8RS9YV0P51W0WAG7AJT37SW\",\"argv\":[\"true\"]," \
             "\"started_at\":\"2026-12-01T12:29:36.992Z\""

static void hostile_input(void **state)
{
        (void)state;
        struct exchange_record x;
        _cleanup_free_ char *field = NULL, *why = NULL;
        const char *good = "{" BASE ",\"status\":\"success\",\"node\":\"n1\"}";
        assert_int_equal(exchange_parse_record(good, strlen(good), &x, &field, &why), 0);
        assert_int_equal(x.rec->exit_code, -1);
        exchange_record_done(&x);

        refused("[]", "");
        refused("{\"schema\":\"hutch.result/2\"}", "/schema");
        refused("{" BASE ",\"status\":\"success\"}", "/node");
        refused("{" BASE ",\"status\":\"running\",\"node\":\"n1\"}", "/status");
        refused("{" BASE ",\"status\":\"bogus\",\"node\":\"n1\"}", "/status");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1;rm\"}", "/node");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"message\":\"a\\u0000b\"}", "/message");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"exit_code\":300}", "/exit_code");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"duration_ms\":-1}", "/duration_ms");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"finished_at\":\"2026-02-30T00:00:00.000Z\"}",
                "/finished_at");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"cpu_user_ms\":1,\"cpu_ms\":5}", "/cpu_ms");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"labels\":{\"a=b\":\"c\"}}", "/labels/a=b");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"labels\":{\"a/~\":7}}", "/labels/a~1~0");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"stdout\":\"x\"}", "/stderr");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"supervisor_pid\":1}", "/supervisor_pid");
        refused("{" BASE ",\"status\":\"success\",\"node\":\"n1\",\"node\":\"n2\"}", "");
        refused("{\"schema\":\"hutch.result/1\",\"id\":\"not-an-id\",\"argv\":[],\"status\":\"success\","
                "\"started_at\":\"2026-12-01T12:29:36.992Z\",\"node\":\"n1\"}", "/id");

        /* too many labels */
        json_t *o = json_loads("{" BASE ",\"status\":\"success\",\"node\":\"n1\"}", 0, NULL);
        json_t *labels = json_object();
        for (int i = 0; i < 300; i++) {
                char k[16];
                snprintf(k, sizeof(k), "k%d", i);
                json_object_set_new(labels, k, json_string("v"));
        }
        json_object_set_new(o, "labels", labels);
        _cleanup_free_ char *many = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        refused(many, "/labels");
}

static void node_filter(void **state)
{
        struct fixture *f = *state;
        char id[ULID_LEN + 1], local[ULID_LEN + 1];
        char *conflict = NULL;
        struct run_record **recs = NULL;
        size_t n = 0;

        add_run(f->a, id, 0);
        add_run(f->b, local, 0);
        _cleanup_free_ char *line = export_line(f->a, id, false);
        assert_int_equal(import_line(f->b, line, &conflict), 1);

        struct store_filter flt = STORE_FILTER_ALL;
        flt.node = "node1";
        flt.local_node = "here";
        assert_int_equal(store_run_list(f->b, &flt, &recs, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(recs[0]->id, id);
        run_record_free_many(recs, n);
        flt.node = "here";
        assert_int_equal(store_run_list(f->b, &flt, &recs, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(recs[0]->id, local);
        run_record_free_many(recs, n);

        /* deleting a run takes its origin with it */
        assert_int_equal(store_delete_older_than(f->b, UINT64_MAX / 2, false), 2);
        assert_int_equal(store_origin_get(f->b, id, NULL, NULL), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(idempotent, setup, teardown),
                cmocka_unit_test_setup_teardown(conflict_refused, setup, teardown),
                cmocka_unit_test(hostile_input),
                cmocka_unit_test_setup_teardown(node_filter, setup, teardown),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
