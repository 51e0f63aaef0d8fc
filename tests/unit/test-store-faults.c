/* test-store-faults.c - unit tests for the run store under faults: a
 * final update that does not fit (the outcome still lands, output_lost
 * says why), stored output that no longer matches its checksum,
 * user_version values hutch never wrote or set back, tables that do not
 * match their version (also after the schema check's stamp), read-only opening, a database that vanished or
 * was truncated while its history remains, quick_check, and the check
 * after an unclean shutdown, and a batch of writes that fails or is cut
 * short leaving none of them. Each test works in its own temporary
 * directory. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"
#include "store-fixture.h"

/* A finished run with some output, inserted running and finished. */
static struct run_record *run_one(struct store *s, size_t out_len)
{
        struct run_record *rec = run_record_new();
        char *argv[] = { "sh", "-c", "exit 3", NULL };
        assert_int_equal(run_record_begin(rec, argv, "/tmp", "default"), 0);
        assert_int_equal(store_run_insert(s, rec), 0);
        rec->status = RUN_FAILED;
        rec->exit_code = 3;
        rec->duration_ms = 42;
        rec->cpu_user_ms = 7;
        rec->out.data = xmalloc(out_len + 1);
        for (size_t i = 0; i < out_len; i++)
                rec->out.data[i] = (char)('a' + (i * 7919) % 26);
        rec->out.data[out_len] = '\0';
        rec->out.len = out_len;
        rec->out.total_bytes = 3 * out_len;
        rec->out.lines = 5;
        rec->out.truncated = true;
        return rec;
}

static void full_disk_outcome_lands(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *rec = run_one(s, 512 * 1024);
        _cleanup_run_record_ struct run_record *back = NULL;
        sqlite3_stmt *st;

        /* the database may grow by only a few pages: SQLITE_FULL, as on a
         * full disk */
        assert_int_equal(sqlite3_prepare_v2(s->db, "PRAGMA page_count", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        _cleanup_free_ char *sql = xasprintf("PRAGMA max_page_count = %d", sqlite3_column_int(st, 0) + 4);
        sqlite3_finalize(st);
        assert_int_equal(store_exec(s, sql), 0);

        assert_int_equal(store_run_finish(s, rec), 1);
        assert_non_null(rec->output_lost);
        assert_non_null(strstr(rec->output_lost, "could not be stored"));

        assert_int_equal(store_run_get(s, rec->id, &back, NULL), 0);
        assert_int_equal(back->status, RUN_FAILED);
        assert_int_equal(back->exit_code, 3);
        assert_int_equal(back->duration_ms, 42);
        assert_int_equal(back->cpu_user_ms, 7);
        assert_int_equal(back->out.total_bytes, 3 * 512 * 1024);
        assert_int_equal(back->out.lines, 5);
        assert_int_equal(back->out.len, 0);
        assert_string_equal(back->output_lost, rec->output_lost);
        assert_false(run_record_is_orphan(back));
}

static void reserve_is_kept_and_released(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_free_ char *reserve = xasprintf("%s-reserve", f->path);
        struct stat st;

        assert_int_equal(stat(reserve, &st), 0);
        assert_true(st.st_blocks * 512 >= 128 * 1024);  /* real blocks, not a hole */
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(store_release_reserve(s), 0);
        assert_int_equal(store_release_reserve(s), -ENOENT);
        s = store_close(s);
        s = open_ok(f->path);
        assert_int_equal(stat(reserve, &st), 0);
}

static void checksum_mismatch_refused(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *rec = run_one(s, 1000);
        struct run_record *back = NULL;

        assert_int_equal(store_run_finish(s, rec), 0);
        assert_int_equal(store_run_get(s, rec->id, &back, NULL), 0);
        assert_memory_equal(back->out.data, rec->out.data, 1000);
        back = run_record_free(back);

        /* one byte of the stored stdout changes */
        _cleanup_free_ char *sql = xasprintf(
                "UPDATE runs SET stdout = CAST('x' || substr(stdout, 2) AS BLOB) WHERE id = '%s'", rec->id);
        assert_int_equal(store_exec(s, sql), 0);
        assert_int_equal(store_run_get(s, rec->id, &back, NULL), -EBADMSG);
        assert_null(back);
        assert_non_null(strstr(store_error(s), "stdout does not match its checksum"));
        assert_non_null(strstr(store_error(s), rec->id));
        /* listing still works: it does not read the bytes */
        struct run_record **recs = NULL;
        size_t n = 0;
        assert_int_equal(store_run_list(s, &STORE_FILTER_ALL, &recs, &n), 0);
        assert_int_equal(n, 1);
        run_record_free_many(recs, n);
}

static void expect_open_error(const char *path, int error, const char *const *words)
{
        struct store *s = NULL;
        _cleanup_free_ char *msg = NULL;
        assert_int_equal(store_open(path, &s, &msg), error);
        assert_null(s);
        assert_non_null(msg);
        assert_null(strchr(msg, '\n'));
        for (; *words; words++)
                if (!strstr(msg, *words))
                        fail_msg("\"%s\" not in: %s", *words, msg);
}

static void negative_version(void **state)
{
        struct fixture *f = *state;
        store_close(open_ok(f->path));
        raw_sql(f->path, "PRAGMA user_version = -5");
        expect_open_error(f->path, -EPROTO, (const char *const[]) { "-5", "move it away", NULL });
        struct store *s = NULL;
        _cleanup_free_ char *msg = NULL;
        assert_int_equal(store_open_readonly(f->path, &s, &msg), -EPROTO);
        assert_non_null(strstr(msg, "-5"));
}

static void version_set_back_is_idempotent(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *rec = run_one(s, 10);
        _cleanup_run_record_ struct run_record *back = NULL;
        assert_int_equal(store_run_finish(s, rec), 0);
        s = store_close(s);

        for (int v = 0; v < store_current_schema_version(); v++) {
                _cleanup_free_ char *sql = xasprintf("PRAGMA user_version = %d", v);
                raw_sql(f->path, sql);
                s = open_ok(f->path);
                assert_int_equal(store_schema_version(s), store_current_schema_version());
                s = store_close(s);
        }
        s = open_ok(f->path);
        assert_int_equal(store_run_get(s, rec->id, &back, NULL), 0);
        assert_int_equal(back->exit_code, 3);
}

static void inconsistent_tables(void **state)
{
        struct fixture *f = *state;
        store_close(open_ok(f->path));
        /* the current version claimed, a column of it missing */
        raw_sql(f->path, "ALTER TABLE runs DROP COLUMN stderr_sha256");
        _cleanup_free_ char *version = xasprintf("schema version %d", store_current_schema_version());
        expect_open_error(f->path, -EPROTO,
                          (const char *const[]) { version, "stderr_sha256", "inconsistent", NULL });
}

static int raw_int(const char *path, const char *sql)
{
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        int v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

/* The schema check is skipped only while application_id holds the stamp
 * of the schema cookie it passed with: a foreign id gets the full check
 * and is stamped over; a schema change after the stamp is caught by the
 * writer and by a reader alike. */
static void schema_stamp_follows_the_schema(void **state)
{
        struct fixture *f = *state;
        store_close(open_ok(f->path));
        int cookie = raw_int(f->path, "PRAGMA schema_version");
        assert_int_equal(raw_int(f->path, "PRAGMA application_id"), (int)(0x68757463u ^ (unsigned)cookie));
        raw_sql(f->path, "PRAGMA application_id = 1234");
        store_close(open_ok(f->path));
        assert_int_equal(raw_int(f->path, "PRAGMA application_id"), (int)(0x68757463u ^ (unsigned)cookie));

        raw_sql(f->path, "ALTER TABLE connections DROP COLUMN end_reason");
        assert_int_not_equal(raw_int(f->path, "PRAGMA schema_version"), cookie);
        struct store *s = NULL;
        _cleanup_free_ char *msg = NULL;
        assert_int_equal(store_open_readonly(f->path, &s, &msg), -EPROTO);
        assert_non_null(strstr(msg, "end_reason"));
        expect_open_error(f->path, -EPROTO, (const char *const[]) { "connections", "end_reason", NULL });
}

static void vanished_store_reported(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *blob = xasprintf("%s/blobs/ab", f->dir);
        _cleanup_free_ char *wal = xasprintf("%s-wal", f->path);
        store_close(open_ok(f->path));

        assert_int_equal(mkdir_p(blob, 0700), 0);
        assert_int_equal(truncate(f->path, 0), 0);
        (void)unlink(wal);
        expect_open_error(f->path, -ENODATA, (const char *const[]) { "empty", "blob store", NULL });
        assert_int_equal(unlink(f->path), 0);
        expect_open_error(f->path, -ENODATA, (const char *const[]) { "missing", "blob store", NULL });
        /* nothing was created in its place */
        assert_int_equal(access(f->path, F_OK), -1);
}

static void readonly_open(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *rec = run_one(s, 100);
        _cleanup_run_record_ struct run_record *back = NULL;
        _cleanup_free_ char *error = NULL;
        assert_int_equal(store_run_finish(s, rec), 0);
        s = store_close(s);

        assert_int_equal(store_open_readonly(f->path, &s, &error), 0);
        assert_int_equal(store_run_get(s, rec->id, &back, NULL), 0);
        assert_int_equal(back->exit_code, 3);
        assert_int_equal(store_run_heartbeat(s, rec->id, 1), -EROFS);
        s = store_close(s);

        /* no database yet: a reader creates none */
        _cleanup_free_ char *none = xasprintf("%s/none.db", f->dir);
        assert_int_equal(store_open_readonly(none, &s, NULL), -ENOENT);
        assert_int_equal(access(none, F_OK), -1);
}

/* Fill pages 2.. of the database file with junk (page 1, the schema,
 * stays readable, so opening works and only a check finds it). */
/* Whether page pageno holds the schema (page 1 and, once the schema
 * outgrows it, the pages its b-tree spread to), by SQLite's dbstat. */
static bool schema_page(const char *path, long pageno)
{
        sqlite3 *db;
        sqlite3_stmt *st = NULL;
        bool hit = pageno == 1;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT 1 FROM dbstat WHERE name = 'sqlite_schema' AND pageno = ?1",
                               -1, &st, NULL) == SQLITE_OK) {
                sqlite3_bind_int64(st, 1, pageno);
                hit = hit || sqlite3_step(st) == SQLITE_ROW;
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        return hit;
}

static void damage_pages(const char *path)
{
        struct stat st;
        char junk[4096];
        memset(junk, 0x5a, sizeof(junk));
        assert_int_equal(stat(path, &st), 0);
        bool *keep = xcalloc((size_t)st.st_size / 4096 + 2, sizeof(*keep));
        for (off_t off = 0; off < st.st_size; off += 4096)
                keep[off / 4096] = schema_page(path, (long)(off / 4096) + 1);
        int fd = open(path, O_WRONLY);
        assert_true(fd >= 0);
        /* junk over every page but the schema's */
        for (off_t off = 4096; off < st.st_size; off += 4096)
                if (!keep[off / 4096])
                        assert_int_equal(pwrite(fd, junk, sizeof(junk), off), (ssize_t)sizeof(junk));
        close(fd);
        free(keep);
}

static void quick_check_and_unclean_shutdown(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *marker = xasprintf("%s-open", f->path);
        _cleanup_free_ char *problem = NULL;
        struct store *s = open_ok(f->path);

        for (int i = 0; i < 20; i++) {
                _cleanup_run_record_ struct run_record *rec = run_one(s, 3000);
                assert_int_equal(store_run_finish(s, rec), 0);
        }
        assert_int_equal(store_quick_check(s, &problem), 0);
        assert_null(problem);
        s = store_close(s);
        /* a plain connection checkpoints the WAL into the file on close */
        raw_sql(f->path, "PRAGMA wal_checkpoint(TRUNCATE)");
        assert_int_equal(read_file(marker, &problem, NULL), 0);
        assert_string_equal(problem, "0");      /* closed cleanly */
        free(problem);
        problem = NULL;
        damage_pages(f->path);

        /* after a clean shutdown the open does not read every page... */
        s = open_ok(f->path);
        assert_int_equal(store_quick_check(s, &problem), -EBADMSG);
        assert_non_null(problem);
        s = store_close(s);

        /* ... after an unclean one it does, and refuses to write */
        assert_int_equal(write_file(marker, "1", 0600), 0);
        expect_open_error(f->path, -EBADMSG, (const char *const[]) { "damaged", "quick_check", NULL });
}

static struct run_record *running(const char *id)
{
        struct run_record *rec = run_record_new();
        char *argv[] = { "true", NULL };
        assert_int_equal(run_record_begin(rec, argv, "/tmp", "default"), 0);
        snprintf(rec->id, sizeof(rec->id), "%s", id);
        return rec;
}

static struct store *open_reader(const char *path)
{
        struct store *s = NULL;
        _cleanup_free_ char *error = NULL;
        if (store_open_readonly(path, &s, &error) < 0)
                fail_msg("store_open_readonly: %s", error);
        return s;
}

static bool has_run(struct store *s, const char *id)
{
        _cleanup_run_record_ struct run_record *got = NULL;
        int r = store_run_get(s, id, &got, NULL);
        assert_true(r == 0 || r == -ENOENT);
        return r == 0;
}

/* A batch is one transaction: nobody sees its row before it ends, a
 * failed write takes the writes before it back, and a store closed with
 * a batch open (hutch killed between the row and its labels) keeps
 * none of it. */
static void batch_is_all_or_nothing(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_store_ struct store *reader = open_reader(f->path);
        _cleanup_run_record_ struct run_record *a = running("01JF0000000000000000000A01");
        _cleanup_run_record_ struct run_record *b = running("01JF0000000000000000000A02");
        _cleanup_run_record_ struct run_record *c = running("01JF0000000000000000000A03");
        _cleanup_strv_ char **labels = NULL;
        _cleanup_free_ char *workdir = NULL;
        char *la[] = { "team=infra", NULL };

        assert_int_equal(store_batch_begin(s), 0);
        assert_int_equal(store_batch_begin(s), -EBUSY);
        assert_int_equal(store_run_insert(s, a), 0);
        assert_int_equal(store_labels_set(s, a->id, la), 0);
        assert_int_equal(store_workspace_set(s, a->id, "/srv/w", NULL), 0);
        assert_false(has_run(reader, a->id));           /* not committed yet */
        assert_int_equal(store_batch_end(s, true), 0);
        assert_true(has_run(reader, a->id));
        assert_int_equal(store_labels_get(reader, a->id, &labels), 0);
        assert_int_equal(strv_length(labels), 1);
        assert_int_equal(store_workspace_get(reader, a->id, &workdir, NULL), 0);
        assert_string_equal(workdir, "/srv/w");
        assert_int_equal(store_batch_end(s, true), 0);  /* none open */

        /* b's row, then a write that fails: neither lands */
        assert_int_equal(store_batch_begin(s), 0);
        assert_int_equal(store_run_insert(s, b), 0);
        assert_int_equal(store_run_insert(s, a), -EEXIST);
        assert_int_equal(store_labels_set(s, b->id, la), -ECANCELED);
        assert_int_equal(store_batch_end(s, true), -ECANCELED);
        assert_false(has_run(s, b->id));
        assert_false(has_run(reader, b->id));
        /* the store writes on as before, outside any batch */
        assert_int_equal(store_run_insert(s, b), 0);
        assert_true(has_run(reader, b->id));

        /* closed in the middle of a batch */
        assert_int_equal(store_batch_begin(s), 0);
        assert_int_equal(store_run_insert(s, c), 0);
        s = store_close(s);
        s = open_ok(f->path);
        assert_false(has_run(s, c->id));
        assert_false(has_run(reader, c->id));
        assert_true(has_run(s, b->id));
}

/* A write waits for the lock another connection holds: it gets it once
 * that one lets go, and gives up with -EBUSY once its own timeout has
 * passed, never sooner. */
static void write_lock_is_waited_for_then_given_up(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *holder = open_ok(f->path);
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *a = running("01JF0000000000000000000B01");
        _cleanup_run_record_ struct run_record *b = running("01JF0000000000000000000B02");

        assert_int_equal(store_batch_begin(holder), 0);
        store_set_busy_timeout(s, 150);
        uint64_t t0 = now_monotonic_ms();
        assert_int_equal(store_run_insert(s, a), -EBUSY);
        uint64_t waited = now_monotonic_ms() - t0;
        assert_true(waited >= 150);
        assert_true(waited < 5000);
        assert_int_equal(store_batch_end(holder, false), 0);

        /* held by another process for 100 ms: the wait ends with it */
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct store *other = NULL;
                char c = 'n';
                if (store_open(f->path, &other, NULL) == 0 && store_batch_begin(other) == 0)
                        c = 'y';
                (void)!write(ready[1], &c, 1);
                usleep(100 * 1000);
                _exit(c == 'y' && store_batch_end(other, false) == 0 ? 0 : 1);
        }
        char c = 0;
        assert_int_equal(read(ready[0], &c, 1), 1);
        assert_int_equal(c, 'y');
        store_set_busy_timeout(s, 10000);
        assert_int_equal(store_run_insert(s, b), 0);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(ready[0]);
        close(ready[1]);
}

/* The final update compiled while the job runs (store_run_prepare_finish())
 * lands as one compiled at the end does, also after another connection
 * changed the schema in between; a store closed with it unused leaves
 * nothing open. */
static void finish_prepared_early(void **state)
{
        struct fixture *f = *state;
        _cleanup_run_record_ struct run_record *got = NULL;
        struct store *s = open_ok(f->path);
        struct run_record *rec = run_record_new();
        char *argv[] = { "true", NULL };

        assert_int_equal(run_record_begin(rec, argv, "/tmp", "default"), 0);
        assert_int_equal(store_run_insert(s, rec), 0);
        store_run_prepare_finish(s);
        assert_non_null(s->finish_st);
        raw_sql(f->path, "CREATE TABLE later_addition (x INTEGER)");
        rec->status = RUN_FAILED;
        rec->exit_code = 7;
        assert_int_equal(store_run_finish(s, rec), 0);
        assert_null(s->finish_st);      /* used once: the next update compiles its own */
        assert_int_equal(store_run_get(s, rec->id, &got, NULL), 0);
        assert_int_equal(got->status, RUN_FAILED);
        assert_int_equal(got->exit_code, 7);

        store_run_prepare_finish(s);
        s = store_close(s);             /* finalizes it, or the connection would linger */
        s = open_ok(f->path);
        store_close(s);
        run_record_free(rec);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(full_disk_outcome_lands, setup, teardown),
                cmocka_unit_test_setup_teardown(reserve_is_kept_and_released, setup, teardown),
                cmocka_unit_test_setup_teardown(checksum_mismatch_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(negative_version, setup, teardown),
                cmocka_unit_test_setup_teardown(version_set_back_is_idempotent, setup, teardown),
                cmocka_unit_test_setup_teardown(inconsistent_tables, setup, teardown),
                cmocka_unit_test_setup_teardown(schema_stamp_follows_the_schema, setup, teardown),
                cmocka_unit_test_setup_teardown(vanished_store_reported, setup, teardown),
                cmocka_unit_test_setup_teardown(readonly_open, setup, teardown),
                cmocka_unit_test_setup_teardown(quick_check_and_unclean_shutdown, setup, teardown),
                cmocka_unit_test_setup_teardown(batch_is_all_or_nothing, setup, teardown),
                cmocka_unit_test_setup_teardown(write_lock_is_waited_for_then_given_up, setup, teardown),
                cmocka_unit_test_setup_teardown(finish_prepared_early, setup, teardown),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
