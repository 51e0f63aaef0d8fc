/* test-store-gc.c - what `hutch gc` deletes with a run: its rows in every
 * table keyed by run_id (the schema has no triggers since version 11, so
 * store_delete_older_than() does the cascade), the rows of runs already
 * gone, and nothing of the runs it keeps; and a schema-10 store loses its
 * triggers on the way to 11. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <string.h>

#include "record/store.h"
#include "lib/util.h"
#include "store-fixture.h"

static int raw_count(const char *path, const char *sql)
{
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        int n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

static void insert_run(struct store *s, const char *id, enum run_status status, uint64_t started)
{
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        char *argv[] = { "true", NULL };
        assert_int_equal(run_record_begin(rec, argv, "/tmp", "default"), 0);
        snprintf(rec->id, sizeof(rec->id), "%s", id);
        rec->status = status;
        rec->started_at_ms = started;
        if (status != RUN_RUNNING) {
                rec->finished_at_ms = started + 10;
                rec->exit_code = 0;
        }
        assert_int_equal(store_run_insert(s, rec), 0);
}

/* one row for run `id` in each table keyed by run_id */
static void insert_run_rows(const char *path, const char *id)
{
        _cleanup_free_ char *sql = xasprintf(
                "INSERT INTO files (run_id, path, kind) VALUES ('%1$s', 'a', 'changed');"
                "INSERT INTO run_workspace (run_id, workdir) VALUES ('%1$s', '/src');"
                "INSERT INTO run_files_summary (run_id) VALUES ('%1$s');"
                "INSERT INTO connections (run_id, seq, proto) VALUES ('%1$s', 1, 'tcp');"
                "INSERT INTO run_labels (run_id, key, value) VALUES ('%1$s', 'k', 'v');"
                "INSERT INTO run_origin (run_id, node, imported_at) VALUES ('%1$s', 'n', 1);", id);
        raw_sql(path, sql);
}

static const char *const tables[] = {
        "files", "run_workspace", "run_files_summary", "connections", "run_labels", "run_origin",
};

/* rows of run `id` across all those tables */
static int rows_of(const char *path, const char *id)
{
        int n = 0;
        for (size_t i = 0; i < ELEMENTSOF(tables); i++) {
                _cleanup_free_ char *sql = xasprintf("SELECT count(*) FROM %s WHERE run_id = '%s'", tables[i], id);
                n += raw_count(path, sql);
        }
        return n;
}

#define OLD "01JG0000000000000000000001"
#define NEW "01JG0000000000000000000002"
#define RUNNING "01JG0000000000000000000003"
#define GONE "01JG0000000000000000000004"       /* its row deleted by hand */

static void cascade(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);

        insert_run(s, OLD, RUN_SUCCESS, 1000);
        insert_run(s, NEW, RUN_SUCCESS, 3000);
        insert_run(s, RUNNING, RUN_RUNNING, 1000);
        const char *ids[] = { OLD, NEW, RUNNING, GONE };
        for (size_t i = 0; i < ELEMENTSOF(ids); i++)
                insert_run_rows(f->path, ids[i]);
        assert_int_equal(rows_of(f->path, GONE), (int)ELEMENTSOF(tables));
        assert_int_equal(raw_count(f->path, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 0);

        /* a dry run deletes nothing */
        assert_int_equal(store_delete_older_than(s, 2000, true), 1);
        assert_int_equal(rows_of(f->path, OLD), (int)ELEMENTSOF(tables));

        assert_int_equal(store_delete_older_than(s, 2000, false), 1);
        assert_int_equal(rows_of(f->path, OLD), 0);
        assert_int_equal(rows_of(f->path, GONE), 0);
        assert_int_equal(rows_of(f->path, NEW), (int)ELEMENTSOF(tables));
        assert_int_equal(rows_of(f->path, RUNNING), (int)ELEMENTSOF(tables));
        assert_int_equal(raw_count(f->path, "SELECT count(*) FROM runs"), 2);
}

/* A store of schema 10 (with its triggers) comes out of the migration
 * without them, its rows kept, and gc still takes a run's rows with it. */
static void triggers_dropped_on_migration(void **state)
{
        struct fixture *f = *state;
        struct store *s = open_ok(f->path);
        insert_run(s, OLD, RUN_SUCCESS, 1000);
        s = store_close(s);
        insert_run_rows(f->path, OLD);
        raw_sql(f->path,
                "CREATE TRIGGER runs_delete_files AFTER DELETE ON runs BEGIN "
                "DELETE FROM files WHERE run_id = old.id; DELETE FROM run_workspace WHERE run_id = old.id; END;"
                "CREATE TRIGGER runs_delete_labels AFTER DELETE ON runs BEGIN "
                "DELETE FROM run_labels WHERE run_id = old.id; END;"
                "PRAGMA user_version = 10;");

        s = open_ok(f->path);
        assert_int_equal(store_schema_version(s), store_current_schema_version());
        assert_int_equal(store_current_schema_version(), 13);
        assert_int_equal(raw_count(f->path, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 0);
        assert_int_equal(rows_of(f->path, OLD), (int)ELEMENTSOF(tables));
        assert_int_equal(store_delete_older_than(s, 2000, false), 1);
        assert_int_equal(rows_of(f->path, OLD), 0);
        store_close(s);
}

int main(void)
{
        cmocka_set_message_output(CM_OUTPUT_TAP);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(cascade, setup, teardown),
                cmocka_unit_test_setup_teardown(triggers_dropped_on_migration, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
