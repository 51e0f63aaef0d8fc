/* test-store.c - unit tests for the run store: create, insert, finish,
 * get by id and prefix, list filters, orphan detection against a really
 * dead pid, retention, migration of a real version-1 database, refusal of
 * corrupt and too-new files, many processes writing at once, statuses,
 * and the JSON view. Each test works in its own temporary directory. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "supervise/capture.h"
#include "record/store.h"
#include "lib/util.h"

struct fixture {
        char dir[64];
        char *path;
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-store-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        f->path = xasprintf("%s/state/sub/hutch.db", f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
                return -1;
        free(f->path);
        free(f);
        return 0;
}

static struct store *open_ok(const char *path)
{
        struct store *s = NULL;
        _cleanup_free_ char *error = NULL;
        int r = store_open(path, &s, &error);
        if (r < 0)
                fail_msg("store_open: %s", error);
        return s;
}

/* A record with a given id, status and start time. */
static struct run_record *make(const char *id, enum run_status status, uint64_t started)
{
        struct run_record *rec = run_record_new();
        char *argv[] = { "sh", "-c", "echo hi", NULL };
        assert_int_equal(run_record_begin(rec, argv, "/tmp", "default"), 0);
        if (id)
                snprintf(rec->id, sizeof(rec->id), "%s", id);
        rec->status = status;
        rec->started_at_ms = started;
        if (status != RUN_RUNNING) {
                rec->finished_at_ms = started + 10;
                rec->duration_ms = 10;
                rec->exit_code = status == RUN_SUCCESS ? 0 : 1;
        }
        return rec;
}

static void insert(struct store *s, const char *id, enum run_status status, uint64_t started)
{
        _cleanup_run_record_ struct run_record *rec = make(id, status, started);
        assert_int_equal(store_run_insert(s, rec), 0);
}

static void open_creates(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_free_ char *dir = xasprintf("%s/state/sub", f->dir);
        struct stat st;

        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
        assert_int_equal(store_schema_version(s), store_current_schema_version());
        assert_int_equal(store_current_schema_version(), 13);
        s = store_close(s);
        /* opening again is a no-op migration */
        s = open_ok(f->path);
        assert_int_equal(store_schema_version(s), store_current_schema_version());
}

static void default_path(void **state)
{
        _cleanup_free_ char *p = NULL;
        setenv("HUTCH_STATE_DIR", "/x/state", 1);
        assert_int_equal(store_default_path(&p), 0);
        assert_string_equal(p, "/x/state/hutch.db");
        free(TAKE_PTR(p));
        unsetenv("HUTCH_STATE_DIR");
        setenv("XDG_STATE_HOME", "/x/xdg", 1);
        assert_int_equal(store_default_path(&p), 0);
        assert_string_equal(p, "/x/xdg/hutch/hutch.db");
        free(TAKE_PTR(p));
        setenv("XDG_STATE_HOME", "", 1);
        setenv("HOME", "/home/u", 1);
        assert_int_equal(store_default_path(&p), 0);
        assert_string_equal(p, "/home/u/.local/state/hutch/hutch.db");
        free(TAKE_PTR(p));
        unsetenv("XDG_STATE_HOME");
        unsetenv("HOME");
        assert_int_equal(store_default_path(&p), -ENOENT);
}

static void insert_finish_get(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        _cleanup_run_record_ struct run_record *got = NULL;
        _cleanup_run_record_ struct run_record *done = NULL;
        _cleanup_capture_ struct capture *out = capture_new(4);
        _cleanup_capture_ struct capture *err = capture_new(64);
        char *argv[] = { "python3", "-c", "print('a b')", NULL };
        static const char raw_err[] = "bin\0ary\xff\n";

        assert_int_equal(run_record_begin(rec, argv, "/home/u/p", "python"), 0);
        assert_true(ulid_valid(rec->id));
        assert_int_equal(rec->supervisor_pid, getpid());
        rec->limits_json = xstrdup("{\"timeout_ms\":30000}");
        rec->session = xstrdup("s1");
        rec->profile_text = xstrdup("[limits]\ntimeout = 30s\n");
        rec->profile_sha256 = xstrdup("abc123");
        assert_int_equal(store_run_insert(s, rec), 0);
        /* the same id twice is refused */
        assert_int_equal(store_run_insert(s, rec), -EEXIST);

        assert_int_equal(store_run_get(s, rec->id, &got, NULL), 0);
        assert_int_equal(got->status, RUN_RUNNING);
        assert_int_equal(got->finished_at_ms, RUN_UNSET);
        assert_int_equal(got->exit_code, -1);
        assert_int_equal(got->job_exit_code, -1);
        assert_string_equal(got->argv[2], "print('a b')");
        assert_null(got->argv[3]);
        assert_string_equal(got->profile_text, "[limits]\ntimeout = 30s\n");
        assert_false(run_record_is_orphan(got));

        assert_int_equal(store_run_heartbeat(s, rec->id, 4242), 0);
        assert_int_equal(store_run_heartbeat(s, "01ARYZ6S41TSV4RRFFQ69G5FAV", 1), -ENOENT);

        capture_append(out, "0123456789\n", 11);
        capture_append(err, raw_err, sizeof(raw_err) - 1);
        run_output_from_capture(&rec->out, out);
        run_output_from_capture(&rec->err, err);
        rec->status = RUN_FAILED;
        rec->exit_code = 3;
        rec->job_exit_code = 3;
        rec->message = xstrdup("exited with 3");
        rec->finished_at_ms = rec->started_at_ms + 1234;
        rec->duration_ms = 1234;
        rec->cpu_user_ms = 100;
        rec->cpu_sys_ms = 20;
        rec->peak_memory_bytes = 10 << 20;
        rec->enforcement_json = xstrdup("{\"memory\":\"cgroup\"}");
        assert_int_equal(store_run_finish(s, rec), 0);

        assert_int_equal(store_run_get(s, rec->id, &done, NULL), 0);
        assert_int_equal(done->status, RUN_FAILED);
        assert_int_equal(done->exit_code, 3);
        assert_int_equal(done->job_exit_code, 3);
        assert_int_equal(done->signal, 0);
        assert_string_equal(done->message, "exited with 3");
        assert_int_equal(done->finished_at_ms, rec->started_at_ms + 1234);
        assert_int_equal(done->duration_ms, 1234);
        assert_int_equal(done->cpu_user_ms, 100);
        assert_int_equal(done->cpu_sys_ms, 20);
        assert_int_equal(done->peak_memory_bytes, 10 << 20);
        assert_int_equal(done->out.total_bytes, 11);
        assert_int_equal(done->out.lines, 1);
        assert_true(done->out.truncated);
        assert_int_equal(done->out.len, rec->out.len);
        assert_memory_equal(done->out.data, rec->out.data, rec->out.len);
        assert_int_equal(done->err.len, sizeof(raw_err) - 1);
        assert_memory_equal(done->err.data, raw_err, sizeof(raw_err) - 1);
        assert_false(done->err.truncated);
        assert_int_equal(done->err.lines, 1);
        assert_string_equal(done->limits_json, "{\"timeout_ms\":30000}");
        assert_string_equal(done->enforcement_json, "{\"memory\":\"cgroup\"}");
        assert_string_equal(done->session, "s1");
        assert_string_equal(done->cwd, "/home/u/p");
        assert_string_equal(done->profile, "python");
        assert_int_equal(done->supervisor_pid, getpid());
        assert_int_equal(done->supervisor_start, rec->supervisor_start);
        assert_true(done->heartbeat_at_ms >= rec->started_at_ms);

        /* finishing a run that is not there */
        snprintf(rec->id, sizeof(rec->id), "01ARYZ6S41TSV4RRFFQ69G5FAV");
        assert_int_equal(store_run_finish(s, rec), -ENOENT);
}

static void prefixes(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *got = NULL;
        _cleanup_strv_ char **candidates = NULL;

        insert(s, "01AAAAAAAA0000000000000001", RUN_SUCCESS, 1000);
        insert(s, "01AAAAAAAA0000000000000002", RUN_SUCCESS, 2000);
        insert(s, "01AAAAAAAB0000000000000003", RUN_FAILED, 3000);

        assert_int_equal(store_run_get(s, "01AAAAAAAB", &got, NULL), 0);
        assert_string_equal(got->id, "01AAAAAAAB0000000000000003");
        got = run_record_free(got);
        assert_int_equal(store_run_get(s, "01aaaaaaab0000000000000003", &got, NULL), 0);
        assert_string_equal(got->id, "01AAAAAAAB0000000000000003");
        got = run_record_free(got);
        assert_int_equal(store_run_get(s, "01AAAAAAAA0000000000000002", &got, NULL), 0);
        assert_int_equal(got->started_at_ms, 2000);
        got = run_record_free(got);

        assert_int_equal(store_run_get(s, "01aa", &got, &candidates), -ENOTUNIQ);
        assert_null(got);
        assert_int_equal(strv_length(candidates), 3);
        assert_string_equal(candidates[0], "01AAAAAAAA0000000000000001");
        strv_free(TAKE_PTR(candidates));
        assert_int_equal(store_run_get(s, "01AAAAAAAA", &got, &candidates), -ENOTUNIQ);
        assert_int_equal(strv_length(candidates), 2);

        assert_int_equal(store_run_get(s, "01A", &got, NULL), -EINVAL);
        assert_int_equal(store_run_get(s, "01A-", &got, NULL), -EINVAL);
        assert_int_equal(store_run_get(s, "ZZZZ", &got, NULL), -ENOENT);
        assert_int_equal(store_run_get(s, "01AAAAAAAC", &got, NULL), -ENOENT);
        assert_int_equal(store_run_get(s, "01AAAAAAAA00000000000000019", &got, NULL), -ENOENT);
        assert_null(got);
}

static void list_filters(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        struct store_filter flt = STORE_FILTER_ALL;
        struct run_record **recs = NULL;
        size_t n;

        insert(s, "01AAAAAAAA0000000000000001", RUN_SUCCESS, 1000);
        insert(s, "01AAAAAAAA0000000000000002", RUN_FAILED, 2000);
        insert(s, "01AAAAAAAA0000000000000003", RUN_TIMEOUT, 3000);
        insert(s, "01AAAAAAAA0000000000000004", RUN_FAILED, 4000);
        insert(s, "01AAAAAAAA0000000000000005", RUN_RUNNING, 5000);   /* our pid: alive */

        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 5);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(recs[i]->started_at_ms, 5000 - 1000 * i);  /* newest first */
                assert_null(recs[i]->out.data);                             /* no output in lists */
        }
        run_record_free_many(recs, n);

        flt.status = RUN_FAILED;
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(recs[0]->id, "01AAAAAAAA0000000000000004");
        assert_string_equal(recs[1]->id, "01AAAAAAAA0000000000000002");
        run_record_free_many(recs, n);

        flt.limit = 1;
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(recs[0]->id, "01AAAAAAAA0000000000000004");
        run_record_free_many(recs, n);

        flt = STORE_FILTER_ALL;
        flt.since_ms = 3000;
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 3);
        run_record_free_many(recs, n);

        flt.status = RUN_RUNNING;
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 1);
        run_record_free_many(recs, n);

        flt.status = RUN_ORPHANED;
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 0);
        run_record_free_many(recs, n);
}

static pid_t dead_pid(void)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(0);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        return pid;
}

static void orphans(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *dead = make("01AAAAAAAA0000000000000001", RUN_RUNNING, 1000);
        _cleanup_run_record_ struct run_record *reused = make("01AAAAAAAA0000000000000002", RUN_RUNNING, 2000);
        _cleanup_run_record_ struct run_record *alive = make("01AAAAAAAA0000000000000003", RUN_RUNNING, 3000);
        _cleanup_run_record_ struct run_record *got = NULL;
        _cleanup_strv_ char **ids = NULL;
        struct store_filter flt = STORE_FILTER_ALL;
        struct run_record **recs = NULL;
        uint64_t start;
        size_t n;

        assert_int_equal(proc_start_time(getpid(), &start), 0);
        assert_int_equal(alive->supervisor_start, start);
        dead->supervisor_pid = dead_pid();
        assert_int_equal(proc_start_time(dead->supervisor_pid, &start), -ESRCH);
        /* our pid, but "started" at another time: the pid was reused */
        reused->supervisor_start = alive->supervisor_start + 1;

        assert_true(run_record_is_orphan(dead));
        assert_true(run_record_is_orphan(reused));
        assert_false(run_record_is_orphan(alive));
        dead->status = RUN_SUCCESS;
        assert_false(run_record_is_orphan(dead));       /* only running rows */
        dead->status = RUN_RUNNING;

        assert_int_equal(store_run_insert(s, dead), 0);
        assert_int_equal(store_run_insert(s, reused), 0);
        assert_int_equal(store_run_insert(s, alive), 0);

        flt.status = RUN_ORPHANED;
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(recs[0]->status, RUN_RUNNING);         /* stored status unchanged */
        run_record_free_many(recs, n);

        assert_int_equal(store_mark_orphans(s, true, &ids), 2);
        strv_free(TAKE_PTR(ids));
        assert_int_equal(store_run_get(s, dead->id, &got, NULL), 0);
        assert_int_equal(got->status, RUN_RUNNING);             /* dry run */
        got = run_record_free(got);

        assert_int_equal(store_mark_orphans(s, false, &ids), 2);
        assert_int_equal(strv_length(ids), 2);
        assert_int_equal(store_run_get(s, dead->id, &got, NULL), 0);
        assert_int_equal(got->status, RUN_ORPHANED);
        assert_int_equal(got->finished_at_ms, RUN_UNSET);
        assert_non_null(strstr(got->message, "died"));
        got = run_record_free(got);
        assert_int_equal(store_run_get(s, alive->id, &got, NULL), 0);
        assert_int_equal(got->status, RUN_RUNNING);
        assert_int_equal(store_mark_orphans(s, false, NULL), 0);

        flt.status = RUN_ORPHANED;
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(recs[0]->status, RUN_ORPHANED);
        run_record_free_many(recs, n);
}

static void retention(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        struct store_filter flt = STORE_FILTER_ALL;
        struct run_record **recs = NULL;
        size_t n;

        insert(s, "01AAAAAAAA0000000000000001", RUN_SUCCESS, 1000);
        insert(s, "01AAAAAAAA0000000000000002", RUN_ORPHANED, 2000);
        insert(s, "01AAAAAAAA0000000000000003", RUN_RUNNING, 3000);    /* never deleted */
        insert(s, "01AAAAAAAA0000000000000004", RUN_FAILED, 9000);

        assert_int_equal(store_delete_older_than(s, 5000, true), 2);
        assert_int_equal(store_delete_older_than(s, 5000, false), 2);
        assert_int_equal(store_delete_older_than(s, 5000, false), 0);
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(recs[0]->id, "01AAAAAAAA0000000000000004");
        assert_string_equal(recs[1]->id, "01AAAAAAAA0000000000000003");
        run_record_free_many(recs, n);
}

/* The version-1 schema exactly as hutch 0.1 created it. Frozen here on
 * purpose: if migration 1 in store.c changes, this test still checks the
 * upgrade of databases that already exist. */
static const char v1_schema[] =
        "CREATE TABLE runs (id TEXT PRIMARY KEY NOT NULL, argv TEXT NOT NULL, cwd TEXT, "
        "profile TEXT, status TEXT NOT NULL, exit_code INTEGER, signal INTEGER, message TEXT, "
        "started_at INTEGER NOT NULL, finished_at INTEGER, duration_ms INTEGER, "
        "cpu_user_ms INTEGER, cpu_sys_ms INTEGER, peak_memory_bytes INTEGER, stdout BLOB, "
        "stderr BLOB, stdout_bytes INTEGER NOT NULL DEFAULT 0, "
        "stderr_bytes INTEGER NOT NULL DEFAULT 0, stdout_lines INTEGER NOT NULL DEFAULT 0, "
        "stderr_lines INTEGER NOT NULL DEFAULT 0, stdout_truncated INTEGER NOT NULL DEFAULT 0, "
        "stderr_truncated INTEGER NOT NULL DEFAULT 0, limits TEXT, enforcement TEXT, "
        "supervisor_pid INTEGER, supervisor_start INTEGER, heartbeat_at INTEGER);"
        "CREATE INDEX runs_started ON runs(started_at, id);"
        "INSERT INTO runs (id, argv, status, exit_code, started_at, finished_at, stdout, stdout_bytes, stdout_lines) "
        "VALUES ('01AAAAAAAA0000000000000001', '[\"true\"]', 'success', 0, 1000, 1005, x'6f6b0a', 3, 1);"
        "PRAGMA user_version = 1;";

static void raw_sql(const char *path, const char *sql)
{
        sqlite3 *db;
        _cleanup_free_ char *dir = xstrdup(path);
        *strrchr(dir, '/') = '\0';
        assert_int_equal(mkdir_p(dir, 0700), 0);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

static void migration_from_v1(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *old = NULL;
        _cleanup_run_record_ struct run_record *keyed = NULL;
        _cleanup_run_record_ struct run_record *again = NULL;
        _cleanup_run_record_ struct run_record *found = NULL;

        raw_sql(f->path, v1_schema);
        s = open_ok(f->path);
        assert_int_equal(store_schema_version(s), store_current_schema_version());

        assert_int_equal(store_run_get(s, "01AAAAAAAA", &old, NULL), 0);
        assert_int_equal(old->status, RUN_SUCCESS);
        assert_string_equal(old->argv[0], "true");
        assert_int_equal(old->out.len, 3);
        assert_memory_equal(old->out.data, "ok\n", 3);
        assert_null(old->session);
        assert_null(old->idempotency_key);

        /* the version-2 columns and the unique key index work */
        keyed = make(NULL, RUN_SUCCESS, 2000);
        keyed->idempotency_key = xstrdup("job-42");
        keyed->rerun_of = xstrdup(old->id);
        assert_int_equal(store_run_insert(s, keyed), 0);
        again = make(NULL, RUN_SUCCESS, 3000);
        again->idempotency_key = xstrdup("job-42");
        assert_int_equal(store_run_insert(s, again), -EEXIST);
        assert_int_equal(store_run_get_by_key(s, "job-42", &found), 0);
        assert_string_equal(found->id, keyed->id);
        assert_string_equal(found->rerun_of, old->id);
        s = store_close(s);

        /* re-opening does not migrate twice */
        s = open_ok(f->path);
        assert_int_equal(store_schema_version(s), store_current_schema_version());
}

static void too_new(void **state)
{
        struct fixture *f = *state;
        struct store *s = NULL;
        _cleanup_free_ char *error = NULL;

        raw_sql(f->path, "CREATE TABLE runs (id TEXT); PRAGMA user_version = 99;");
        assert_int_equal(store_open(f->path, &s, &error), -EPROTONOSUPPORT);
        assert_null(s);
        assert_non_null(strstr(error, "newer"));
}

static void corrupt(void **state)
{
        struct fixture *f = *state;
        struct store *s = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ char *dir = xasprintf("%s/state/sub", f->dir);
        char junk[8192];

        assert_int_equal(mkdir_p(dir, 0700), 0);
        for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (char)("this is not a database "[i % 23]);
        junk[sizeof(junk) - 1] = '\0';
        assert_int_equal(write_file(f->path, junk, 0600), 0);

        assert_int_equal(store_open(f->path, &s, &error), -EBADMSG);
        assert_null(s);
        assert_non_null(error);
        assert_non_null(strstr(error, f->path));
        assert_non_null(strstr(error, "not a database"));
}

static int child_runs(const char *path, int rfd, int runs)
{
        char go;
        if (read(rfd, &go, 1) != 0)     /* wait until the parent closes the pipe */
                return 10;
        for (int i = 0; i < runs; i++) {
                struct store *s = NULL;
                _cleanup_free_ char *error = NULL;
                _cleanup_run_record_ struct run_record *rec = run_record_new();
                char *argv[] = { "true", NULL };

                if (store_open(path, &s, &error) < 0) {
                        fprintf(stderr, "# child %d: open: %s\n", getpid(), error);
                        return 1;
                }
                if (run_record_begin(rec, argv, "/", "default") < 0 ||
                    store_run_insert(s, rec) < 0) {
                        fprintf(stderr, "# child %d: insert: %s\n", getpid(), store_error(s));
                        return 2;
                }
                for (int h = 0; h < 3; h++)
                        if (store_run_heartbeat(s, rec->id, now_realtime_ms()) < 0) {
                                fprintf(stderr, "# child %d: heartbeat: %s\n", getpid(), store_error(s));
                                return 3;
                        }
                rec->status = RUN_SUCCESS;
                rec->exit_code = 0;
                rec->out.data = xstrdup("hello\n");
                rec->out.len = 6;
                rec->out.total_bytes = 6;
                rec->out.lines = 1;
                if (store_run_finish(s, rec) < 0) {
                        fprintf(stderr, "# child %d: finish: %s\n", getpid(), store_error(s));
                        return 4;
                }
                store_close(s);
        }
        return 0;
}

static void concurrent(void **state)
{
        struct fixture *f = *state;
        const int procs = 8, per_proc = 5;
        _cleanup_store_ struct store *s = NULL;
        struct store_filter flt = STORE_FILTER_ALL;
        struct run_record **recs = NULL;
        pid_t pids[8];
        int fds[2];
        size_t n;

        /* a fresh database: the children also race to create and migrate it */
        assert_int_equal(pipe(fds), 0);
        for (int i = 0; i < procs; i++) {
                pids[i] = fork();
                assert_true(pids[i] >= 0);
                if (pids[i] == 0) {
                        close(fds[1]);
                        _exit(child_runs(f->path, fds[0], per_proc));
                }
        }
        close(fds[0]);
        close(fds[1]);  /* go */
        /* reap every child before judging, so none outlives the fixture */
        int failed = 0;
        for (int i = 0; i < procs; i++) {
                int status;
                assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        failed++;
        }
        assert_int_equal(failed, 0);

        s = open_ok(f->path);
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, procs * per_proc);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(recs[i]->status, RUN_SUCCESS);
                assert_int_equal(recs[i]->out.total_bytes, 6);
        }
        run_record_free_many(recs, n);
}

static void statuses(void **state)
{
        static const char *const names[] = {
                "running", "success", "failed", "signaled", "timeout", "cpu_timeout", "oom",
                "cancelled", "setup_error", "not_found", "not_executable", "compile_error",
                "orphaned", "disk_limit",
        };
        assert_int_equal(ELEMENTSOF(names), _RUN_STATUS_MAX);
        for (int i = 0; i < _RUN_STATUS_MAX; i++) {
                assert_string_equal(run_status_to_string((enum run_status)i), names[i]);
                assert_int_equal(run_status_from_string(names[i]), i);
        }
        assert_int_equal(run_status_from_string("exploded"), _RUN_STATUS_INVALID);
        assert_int_equal(run_status_from_string(NULL), _RUN_STATUS_INVALID);
        assert_string_equal(run_status_to_string(_RUN_STATUS_MAX), "unknown");
}

static void json_view(void **state)
{
        static const char *const fields[] = {
                "schema", "id", "status", "exit_code", "signal", "job_exit_code", "message", "error_code", "retryable",
                "argv", "cwd", "started_at", "finished_at", "duration_ms", "cpu_user_ms", "cpu_sys_ms",
                "cpu_ms", "peak_memory_mb", "stdout", "stderr", "stdout_bytes",
                "stderr_bytes", "stdout_lines", "stderr_lines", "stdout_truncated",
                "stderr_truncated", "output_lost", "limits", "enforcement", "profile", "profile_sha256", "rerun_of",
                "session", "lang", "code", "idempotency_key",
        };
        _cleanup_run_record_ struct run_record *rec = make("01ARYZ6S41TSV4RRFFQ69G5FAV", RUN_SIGNALED, 1469918176385ULL);
        json_t *j, *k;
        const char *key;
        _cleanup_free_ char *line = NULL;

        rec->exit_code = -1;
        rec->signal = 9;
        rec->cpu_user_ms = 7;
        rec->cpu_sys_ms = RUN_UNSET;
        rec->peak_memory_bytes = 3 * 1048576 + 1048576 / 2;
        rec->out.data = xstrdup("\x1b[32mok\x1b[0m \xff\n");
        rec->out.len = strlen(rec->out.data);
        rec->out.total_bytes = 5000;
        rec->out.lines = 100;
        rec->out.truncated = true;
        rec->limits_json = xstrdup("{\"timeout_ms\":1000}");

        j = run_record_to_json(rec, true);
        assert_int_equal(json_object_size(j), ELEMENTSOF(fields));
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                assert_non_null(json_object_get(j, fields[i]));
        json_object_foreach(j, key, k) {
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                        known |= streq(key, fields[i]);
                assert_true(known);
        }
        assert_string_equal(json_string_value(json_object_get(j, "schema")), "hutch.result/1");
        assert_string_equal(json_string_value(json_object_get(j, "status")), "signaled");
        assert_true(json_is_null(json_object_get(j, "exit_code")));
        assert_int_equal(json_integer_value(json_object_get(j, "signal")), 9);
        assert_true(json_is_null(json_object_get(j, "job_exit_code")));
        assert_string_equal(json_string_value(json_object_get(j, "error_code")), "signaled");
        assert_true(json_is_false(json_object_get(j, "retryable")));
        assert_string_equal(json_string_value(json_object_get(j, "started_at")), "2016-07-30T22:36:16.385Z");
        assert_string_equal(json_string_value(json_object_get(j, "finished_at")), "2016-07-30T22:36:16.395Z");
        assert_int_equal(json_integer_value(json_object_get(j, "cpu_ms")), 7);
        assert_true(json_is_null(json_object_get(j, "cpu_sys_ms")));
        assert_true(json_real_value(json_object_get(j, "peak_memory_mb")) == 3.5);
        assert_string_equal(json_string_value(json_object_get(j, "stdout")), "ok \xef\xbf\xbd\n");
        assert_string_equal(json_string_value(json_object_get(j, "stderr")), "");
        assert_int_equal(json_integer_value(json_object_get(j, "stdout_bytes")), 5000);
        assert_int_equal(json_integer_value(json_object_get(j, "stdout_lines")), 100);
        assert_true(json_is_true(json_object_get(j, "stdout_truncated")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "limits"), "timeout_ms")), 1000);
        assert_true(json_is_null(json_object_get(j, "enforcement")));
        assert_string_equal(json_string_value(json_array_get(json_object_get(j, "argv"), 2)), "echo hi");
        assert_string_equal(json_string_value(json_object_get(j, "profile")), "default");
        json_decref(j);

        /* the codes of the other statuses: only a lost run is retryable */
        rec->status = RUN_SETUP_ERROR;
        j = run_record_to_json(rec, false);
        assert_string_equal(json_string_value(json_object_get(j, "error_code")), "setup_refused");
        json_decref(j);
        rec->status = RUN_ORPHANED;
        j = run_record_to_json(rec, false);
        assert_string_equal(json_string_value(json_object_get(j, "error_code")), "orphaned");
        assert_true(json_is_true(json_object_get(j, "retryable")));
        json_decref(j);
        rec->status = RUN_SUCCESS;
        j = run_record_to_json(rec, false);
        assert_true(json_is_null(json_object_get(j, "error_code")));
        assert_true(json_is_false(json_object_get(j, "retryable")));
        json_decref(j);
        rec->status = RUN_SIGNALED;

        /* without output: no text, counts stay */
        j = run_record_to_json(rec, false);
        assert_null(json_object_get(j, "stdout"));
        assert_null(json_object_get(j, "stderr"));
        assert_non_null(json_object_get(j, "stdout_bytes"));
        json_decref(j);

        line = run_record_to_json_string(rec, false);
        assert_null(strchr(line, '\n'));
        assert_non_null(strstr(line, "\"peak_memory_mb\":3.5,"));
}

/* files rows: written in one go, read back per run and kind, listed as
 * blobs for gc, and gone with their run */
/* Frames in the WAL, as a second connection sees them (its PASSIVE
 * checkpoint reports the log's length). */
static int wal_frames(const char *db)
{
        sqlite3 *c = NULL;
        sqlite3_stmt *st = NULL;
        int frames = -1;

        if (sqlite3_open(db, &c) == SQLITE_OK &&
            sqlite3_prepare_v2(c, "PRAGMA wal_checkpoint(PASSIVE)", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
                frames = sqlite3_column_int(st, 1);
        sqlite3_finalize(st);
        sqlite3_close(c);
        return frames;
}

/* Deferred checkpoints: commits only grow the WAL; the due checkpoint
 * starts it over with one small frame, so the next commit needs no
 * header sync and the next open reads almost nothing. */
static void deferred_checkpoints(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        char id[32];

        store_defer_checkpoints(s);
        for (int i = 0; i < 80; i++) {
                snprintf(id, sizeof(id), "01DEFER%019d", i);
                insert(s, id, RUN_SUCCESS, 1000 + (uint64_t)i);
        }
        /* no commit checkpointed (that would restart the WAL near 64) */
        assert_true(wal_frames(f->path) > 150);
        store_checkpoint_if_due(s);
        int after = wal_frames(f->path);
        assert_true(after > 0 && after <= 2);
        store_checkpoint_if_due(s);              /* not due: nothing moves */
        assert_int_equal(wal_frames(f->path), after);
        s = store_close(s);

        /* everything is still there, in a store at the current version */
        s = open_ok(f->path);
        assert_int_equal(store_schema_version(s), store_current_schema_version());
        _cleanup_run_record_ struct run_record *got = NULL;
        assert_int_equal(store_run_get(s, "01DEFER0000000000000000079", &got, NULL), 0);
}

static void files_roundtrip(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        struct file_record in[3] = {
                { .path = "b/new", .kind = "added", .size = 3, .mode = 0100644 },
                { .path = "a", .kind = "modified", .size = 5, .mode = 0100755, .old_mode = 0100644 },
                { .path = "report.pdf", .kind = "output", .size = 9, .mode = 0100644, .mime = "application/pdf" },
        };
        struct file_record *out = NULL;
        _cleanup_strv_ char **blobs = NULL;
        size_t n = 0;
        char *dir = NULL, *session = NULL;

        memset(in[0].sha256, 'a', 64);
        memset(in[1].sha256, 'b', 64);
        memset(in[1].old_sha256, 'c', 64);
        memset(in[2].sha256, 'a', 64);
        insert(s, "01JF0000000000000000000001", RUN_SUCCESS, 1000);
        insert(s, "01JF0000000000000000000002", RUN_SUCCESS, 2000);
        assert_int_equal(store_files_add(s, "01JF0000000000000000000001", in, 3), 0);
        assert_int_equal(store_workspace_set(s, "01JF0000000000000000000001", "/src", NULL), 0);

        assert_int_equal(store_files_list(s, "01JF0000000000000000000001", NULL, &out, &n), 0);
        assert_int_equal(n, 3);
        /* workspace changes by path first, outputs last */
        assert_string_equal(out[0].path, "a");
        assert_string_equal(out[0].kind, "modified");
        assert_int_equal(out[0].mode, 0100755);
        assert_int_equal(out[0].old_mode, 0100644);
        assert_int_equal(out[0].old_sha256[0], 'c');
        assert_string_equal(out[1].path, "b/new");
        assert_string_equal(out[1].old_sha256, "");
        assert_null(out[1].mime);
        assert_string_equal(out[2].kind, "output");
        assert_string_equal(out[2].mime, "application/pdf");
        file_records_free(out, n);

        assert_int_equal(store_files_list(s, "01JF0000000000000000000001", "output", &out, &n), 0);
        assert_int_equal(n, 1);
        file_records_free(out, n);
        assert_int_equal(store_files_list(s, "01JF0000000000000000000002", NULL, &out, &n), 0);
        assert_int_equal(n, 0);
        file_records_free(out, n);

        assert_int_equal(store_files_all_blobs(s, &blobs), 0);
        assert_int_equal(strv_length(blobs), 3);        /* a..., b..., c... once each */

        assert_int_equal(store_workspace_get(s, "01JF0000000000000000000001", &dir, &session), 0);
        assert_string_equal(dir, "/src");
        assert_null(session);
        free(dir);
        assert_int_equal(store_workspace_get(s, "01JF0000000000000000000002", &dir, &session), -ENOENT);

        /* deleting the run deletes its rows */
        assert_int_equal(store_delete_older_than(s, 1500, false), 1);
        assert_int_equal(store_files_list(s, "01JF0000000000000000000001", NULL, &out, &n), 0);
        assert_int_equal(n, 0);
        file_records_free(out, n);
        assert_int_equal(store_workspace_get(s, "01JF0000000000000000000001", NULL, NULL), -ENOENT);
}

/* The files summary travels with the final update: written in its
 * transaction, never without it, and only when the record carries one. */
static void summary_with_finish(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *a = make("01JF0000000000000000000011", RUN_SUCCESS, 1000);
        _cleanup_run_record_ struct run_record *b = make("01JF0000000000000000000012", RUN_SUCCESS, 2000);
        char *error = NULL;
        uint64_t unlisted = 0;
        int committed = 5;

        a->status = b->status = RUN_RUNNING;
        assert_int_equal(store_run_insert(s, a), 0);
        assert_int_equal(store_run_insert(s, b), 0);
        a->status = b->status = RUN_SUCCESS;

        a->files_summary = true;
        a->files_error = xstrdup("artifacts /workspace/output: Too many levels of symbolic links");
        a->files_unlisted = 7;
        assert_int_equal(a->committed, -1);     /* no session */
        assert_int_equal(store_run_finish(s, a), 0);
        assert_int_equal(store_files_summary_get(s, a->id, &error, &unlisted, &committed), 0);
        assert_string_equal(error, a->files_error);
        assert_int_equal(unlisted, 7);
        assert_int_equal(committed, -1);
        free(error);
        /* a session run's commit, both ways */
        for (int c = 0; c <= 1; c++) {
                a->committed = c;
                assert_int_equal(store_run_finish(s, a), 0);
                assert_int_equal(store_files_summary_get(s, a->id, NULL, NULL, &committed), 0);
                assert_int_equal(committed, c);
        }

        /* none asked for: none written */
        assert_int_equal(store_run_finish(s, b), 0);
        assert_int_equal(store_files_summary_get(s, b->id, NULL, NULL, NULL), -ENOENT);

        /* a final update that finds no run writes no summary either */
        snprintf(b->id, sizeof(b->id), "01JF0000000000000000000013");
        b->files_summary = true;
        assert_int_equal(store_run_finish(s, b), -ENOENT);
        assert_int_equal(store_files_summary_get(s, b->id, NULL, NULL, NULL), -ENOENT);
}

/* Connections added in two batches (a live sandbox's published ports,
 * then its egress decisions) keep both: the second goes after the
 * first, in order, and replaces none of it. */
static void connections_append(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *a = make("01JF0000000000000000000001", RUN_SUCCESS, 1000);
        assert_int_equal(store_run_insert(s, a), 0);
        json_t *first = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "proto", "tcp", "decision", "published",
                                  "dest", "127.0.0.1:8000", "proto", "tcp", "decision", "published", "dest",
                                  "127.0.0.1:8001");
        json_t *second = json_pack("[{s:s, s:s, s:s}]", "proto", "tcp", "decision", "allowed", "dest",
                                   "example.test:443");
        assert_int_equal(store_connections_add(s, a->id, first), 0);
        assert_int_equal(store_connections_add(s, a->id, second), 0);
        json_t *got = store_connections_json(s, a->id);
        assert_int_equal(json_array_size(got), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "dest")), "127.0.0.1:8000");
        assert_string_equal(json_string_value(json_object_get(json_array_get(got, 1), "dest")), "127.0.0.1:8001");
        assert_string_equal(json_string_value(json_object_get(json_array_get(got, 2), "dest")), "example.test:443");
        json_decref(first);
        json_decref(second);
        json_decref(got);
}

/* Labels, the label and session filters, and lookups by idempotency key. */
static void labels_and_keys(void **state)
{
        struct fixture *f = *state;
        _cleanup_store_ struct store *s = open_ok(f->path);
        _cleanup_run_record_ struct run_record *a = make("01JF0000000000000000000001", RUN_SUCCESS, 1000);
        _cleanup_run_record_ struct run_record *b = make("01JF0000000000000000000002", RUN_RUNNING, 2000);
        _cleanup_run_record_ struct run_record *got = NULL;
        _cleanup_strv_ char **labels = NULL;
        char *la[] = { "team=infra", "kind=ci", NULL };
        char *lb[] = { "team=web", NULL };
        struct store_filter flt = STORE_FILTER_ALL;
        struct run_record **recs = NULL;
        size_t n = 0;

        a->idempotency_key = xstrdup("key-a");
        b->idempotency_key = xstrdup("key-b");
        b->session = xstrdup("s1");
        assert_int_equal(store_run_insert(s, a), 0);
        assert_int_equal(store_run_insert(s, b), 0);
        assert_int_equal(store_labels_set(s, a->id, la), 0);
        assert_int_equal(store_labels_set(s, b->id, lb), 0);

        assert_int_equal(store_labels_get(s, a->id, &labels), 0);
        assert_int_equal(strv_length(labels), 2);
        assert_string_equal(labels[0], "kind=ci");      /* by key */
        assert_string_equal(labels[1], "team=infra");

        flt.label = "team=infra";
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(recs[0]->id, a->id);
        run_record_free_many(recs, n);
        flt.label = "team=nobody";
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 0);
        run_record_free_many(recs, n);
        flt.label = NULL;
        flt.session = "s1";
        assert_int_equal(store_run_list(s, &flt, &recs, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(recs[0]->id, b->id);
        run_record_free_many(recs, n);

        /* a running row is found by its key too: the caller decides */
        assert_int_equal(store_run_get_by_key(s, "key-b", &got), 0);
        assert_int_equal(got->status, RUN_RUNNING);
        got = run_record_free(got);
        assert_int_equal(store_run_get_by_key(s, "key-a", &got), 0);
        assert_string_equal(got->id, a->id);
        got = run_record_free(got);
        assert_int_equal(store_run_get_by_key(s, "key-none", &got), -ENOENT);
        /* a key names one run only */
        _cleanup_run_record_ struct run_record *c = make("01JF0000000000000000000003", RUN_SUCCESS, 3000);
        c->idempotency_key = xstrdup("key-a");
        assert_int_equal(store_run_insert(s, c), -EEXIST);

        /* labels go with their run */
        assert_int_equal(store_delete_older_than(s, 1500, false), 1);
        strv_free(labels);
        labels = NULL;
        assert_int_equal(store_labels_get(s, a->id, &labels), 0);
        assert_null(labels);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(open_creates, setup, teardown),
                cmocka_unit_test(default_path),
                cmocka_unit_test_setup_teardown(insert_finish_get, setup, teardown),
                cmocka_unit_test_setup_teardown(prefixes, setup, teardown),
                cmocka_unit_test_setup_teardown(list_filters, setup, teardown),
                cmocka_unit_test_setup_teardown(orphans, setup, teardown),
                cmocka_unit_test_setup_teardown(retention, setup, teardown),
                cmocka_unit_test_setup_teardown(migration_from_v1, setup, teardown),
                cmocka_unit_test_setup_teardown(too_new, setup, teardown),
                cmocka_unit_test_setup_teardown(corrupt, setup, teardown),
                cmocka_unit_test_setup_teardown(concurrent, setup, teardown),
                cmocka_unit_test(statuses),
                cmocka_unit_test(json_view),
                cmocka_unit_test_setup_teardown(files_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(summary_with_finish, setup, teardown),
                cmocka_unit_test_setup_teardown(deferred_checkpoints, setup, teardown),
                cmocka_unit_test_setup_teardown(labels_and_keys, setup, teardown),
                cmocka_unit_test_setup_teardown(connections_append, setup, teardown),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
