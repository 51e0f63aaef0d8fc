/* store.c - the SQLite run history (see store.h).
 *
 * Shape of the data: one row per run in `runs`, written twice (inserted
 * running before the job starts, completed when it ends) with heartbeat
 * updates in between, read by the history verbs. Up to a few hundred
 * thousand rows; each carries at most 2 x 2 x capture-limit bytes of
 * output. Workload: many short-lived hutch processes writing at once (one
 * connection each), so every write takes the write lock up front with
 * BEGIN IMMEDIATE (in WAL mode a deferred transaction that later wants to
 * write can fail at once with SQLITE_BUSY, without waiting) and every
 * connection has a busy timeout.
 *
 * The schema is versioned with PRAGMA user_version. migrations[i] takes a
 * database from version i to i+1; migrations only ever get appended, and
 * a database written by a newer hutch is refused rather than guessed at.
 */
#include "config.h"

#include <ctype.h>
#include <libgen.h>
#include <sqlite3.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/sanitize.h"
#include "record/store.h"
#include "lib/util.h"

/* Long enough for dozens of concurrent hutch processes queueing for the
 * write lock (each holds it for a millisecond or so); short enough that a
 * stuck process is reported rather than waited for forever. */
#define STORE_BUSY_TIMEOUT_MS 30000
/* WAL frames (pages) after which a commit checkpoints */
#define STORE_CHECKPOINT_FRAMES 64

#define MAX_CANDIDATES 10
#define MIN_PREFIX 4

static const char *const migrations[] = {
        /* 0 -> 1: the initial schema */
        "CREATE TABLE runs (\n"
        "        id TEXT PRIMARY KEY NOT NULL,\n"
        "        argv TEXT NOT NULL,\n"
        "        cwd TEXT,\n"
        "        profile TEXT,\n"
        "        status TEXT NOT NULL,\n"
        "        exit_code INTEGER,\n"
        "        signal INTEGER,\n"
        "        message TEXT,\n"
        "        started_at INTEGER NOT NULL,\n"
        "        finished_at INTEGER,\n"
        "        duration_ms INTEGER,\n"
        "        cpu_user_ms INTEGER,\n"
        "        cpu_sys_ms INTEGER,\n"
        "        peak_memory_bytes INTEGER,\n"
        "        stdout BLOB,\n"
        "        stderr BLOB,\n"
        "        stdout_bytes INTEGER NOT NULL DEFAULT 0,\n"
        "        stderr_bytes INTEGER NOT NULL DEFAULT 0,\n"
        "        stdout_lines INTEGER NOT NULL DEFAULT 0,\n"
        "        stderr_lines INTEGER NOT NULL DEFAULT 0,\n"
        "        stdout_truncated INTEGER NOT NULL DEFAULT 0,\n"
        "        stderr_truncated INTEGER NOT NULL DEFAULT 0,\n"
        "        limits TEXT,\n"
        "        enforcement TEXT,\n"
        "        supervisor_pid INTEGER,\n"
        "        supervisor_start INTEGER,\n"
        "        heartbeat_at INTEGER\n"
        ");\n"
        "CREATE INDEX runs_started ON runs(started_at, id);\n",

        /* 1 -> 2: what sessions, idempotency, rerun and profile provenance
         * need, and an index for `ls --status` */
        "ALTER TABLE runs ADD COLUMN session TEXT;\n"
        "ALTER TABLE runs ADD COLUMN idempotency_key TEXT;\n"
        "ALTER TABLE runs ADD COLUMN rerun_of TEXT;\n"
        "ALTER TABLE runs ADD COLUMN profile_text TEXT;\n"
        "ALTER TABLE runs ADD COLUMN profile_sha256 TEXT;\n"
        "CREATE UNIQUE INDEX runs_idempotency_key ON runs(idempotency_key)\n"
        "        WHERE idempotency_key IS NOT NULL;\n"
        "CREATE INDEX runs_session ON runs(session, started_at) WHERE session IS NOT NULL;\n"
        "CREATE INDEX runs_status ON runs(status, started_at);\n",

        /* 2 -> 3: the code of a --lang run, so `hutch rerun` can repeat it */
        "ALTER TABLE runs ADD COLUMN lang TEXT;\n"
        "ALTER TABLE runs ADD COLUMN code BLOB;\n",

        /* 3 -> 4: what a run changed and left behind (workspace change
         * sets, artifacts) and where its workspace came from; rows go
         * with their run */
        "CREATE TABLE files (\n"
        "        run_id TEXT NOT NULL,\n"
        "        path TEXT NOT NULL,\n"
        "        kind TEXT NOT NULL,\n"
        "        size INTEGER,\n"
        "        mode INTEGER,\n"
        "        sha256 TEXT,\n"
        "        old_mode INTEGER,\n"
        "        old_sha256 TEXT,\n"
        "        link_target TEXT,\n"
        "        skip TEXT,\n"
        "        mime TEXT,\n"
        "        PRIMARY KEY (run_id, kind, path)\n"
        ");\n"
        "CREATE INDEX files_sha256 ON files(sha256) WHERE sha256 IS NOT NULL;\n"
        "CREATE TABLE run_workspace (\n"
        "        run_id TEXT PRIMARY KEY NOT NULL,\n"
        "        workdir TEXT,\n"
        "        session TEXT\n"
        ");\n"
        "CREATE TRIGGER runs_delete_files AFTER DELETE ON runs BEGIN\n"
        "        DELETE FROM files WHERE run_id = old.id;\n"
        "        DELETE FROM run_workspace WHERE run_id = old.id;\n"
        "END;\n",
};

struct store {
        sqlite3 *db;
        char *path;
        char *error;
        int wal_frames;         /* after our last commit, once checkpoints are deferred */
};

/* ---- records ------------------------------------------------------------ */

struct run_record *run_record_new(void)
{
        struct run_record *rec = xcalloc(1, sizeof(*rec));
        rec->status = RUN_RUNNING;
        rec->exit_code = -1;
        rec->started_at_ms = RUN_UNSET;
        rec->finished_at_ms = RUN_UNSET;
        rec->duration_ms = RUN_UNSET;
        rec->cpu_user_ms = RUN_UNSET;
        rec->cpu_sys_ms = RUN_UNSET;
        rec->peak_memory_bytes = RUN_UNSET;
        rec->supervisor_start = RUN_UNSET;
        rec->heartbeat_at_ms = RUN_UNSET;
        return rec;
}

struct run_record *run_record_free(struct run_record *rec)
{
        if (!rec)
                return NULL;
        strv_free(rec->argv);
        free(rec->cwd);
        free(rec->profile);
        free(rec->message);
        free(rec->out.data);
        free(rec->err.data);
        free(rec->limits_json);
        free(rec->enforcement_json);
        free(rec->session);
        free(rec->idempotency_key);
        free(rec->rerun_of);
        free(rec->profile_text);
        free(rec->profile_sha256);
        free(rec->lang);
        free(rec->code);
        free(rec);
        return NULL;
}

void run_record_free_many(struct run_record **recs, size_t n)
{
        if (!recs)
                return;
        for (size_t i = 0; i < n; i++)
                run_record_free(recs[i]);
        free(recs);
}

int run_record_begin(struct run_record *rec, char *const *argv, const char *cwd,
                     const char *profile)
{
        uint64_t start;
        int r;

        r = ulid_new(rec->id);
        if (r < 0)
                return r;
        /* without /proc the pid alone has to tell whether we are alive */
        if (proc_start_time(getpid(), &start) < 0)
                start = RUN_UNSET;
        strv_free(rec->argv);
        rec->argv = NULL;
        for (size_t i = 0; argv && argv[i]; i++)
                rec->argv = strv_append(rec->argv, argv[i]);
        free(rec->cwd);
        rec->cwd = cwd ? xstrdup(cwd) : NULL;
        free(rec->profile);
        rec->profile = profile ? xstrdup(profile) : NULL;
        rec->status = RUN_RUNNING;
        rec->started_at_ms = now_realtime_ms();
        rec->heartbeat_at_ms = rec->started_at_ms;
        rec->supervisor_pid = getpid();
        rec->supervisor_start = start;
        return 0;
}

int run_output_from_capture(struct run_output *o, const struct capture *c)
{
        free(o->data);
        capture_render(c, &o->data, &o->len, &o->truncated);
        o->total_bytes = capture_total_bytes(c);
        o->lines = capture_total_lines(c);
        return 0;
}

int proc_start_time(pid_t pid, uint64_t *ret)
{
        char path[64];
        _cleanup_free_ char *text = NULL;
        unsigned long long start;
        char *p;
        int r;

        if (pid <= 0)
                return -ESRCH;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        r = read_file(path, &text, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        /* "pid (comm) state ppid ...": comm may hold spaces and parens, so
         * count fields from the last ')' */
        p = strrchr(text, ')');
        if (!p || p[1] != ' ')
                return -EIO;
        p += 2;
        if (*p == 'Z' || *p == 'X')
                return -ESRCH;
        for (int field = 3; field < 22; field++) {
                p = strchr(p, ' ');
                if (!p)
                        return -EIO;
                p++;
        }
        if (sscanf(p, "%llu", &start) != 1)
                return -EIO;
        *ret = start;
        return 0;
}

bool run_record_is_orphan(const struct run_record *rec)
{
        uint64_t start;
        int r;

        if (rec->status != RUN_RUNNING || rec->supervisor_pid <= 0)
                return false;
        r = proc_start_time(rec->supervisor_pid, &start);
        if (r == -ESRCH)
                return true;
        if (r < 0)
                return false;   /* cannot tell: do not call it dead */
        return rec->supervisor_start != RUN_UNSET && start != rec->supervisor_start;
}

/* ---- JSON --------------------------------------------------------------- */

const char *format_iso8601_ms(uint64_t ms, char *buf, size_t len)
{
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        char base[32];

        gmtime_r(&t, &tm);
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, len, "%s.%03uZ", base, (unsigned)(ms % 1000));
        return buf;
}

static json_t *json_u64(uint64_t v)
{
        return v == RUN_UNSET ? json_null() : json_integer((json_int_t)v);
}

/* A JSON string for s (NULL -> null); invalid UTF-8 is repaired. */
static json_t *json_text(const char *s)
{
        json_t *j;
        if (!s)
                return json_null();
        j = json_string(s);
        if (!j) {
                _cleanup_free_ char *clean = sanitize_text(s, strlen(s), NULL);
                j = json_string(clean);
        }
        return j ? j : json_null();
}

static json_t *json_time(uint64_t ms)
{
        char buf[64];
        if (ms == RUN_UNSET)
                return json_null();
        return json_string(format_iso8601_ms(ms, buf, sizeof(buf)));
}

static json_t *json_embedded(const char *text)
{
        json_t *j;
        if (!text)
                return json_null();
        j = json_loads(text, JSON_DECODE_ANY, NULL);
        return j ? j : json_null();
}

static json_t *json_output(const struct run_output *o)
{
        size_t len;
        _cleanup_free_ char *clean = sanitize_text(o->data ? o->data : "", o->len, &len);
        json_t *j = json_stringn(clean, len);
        return j ? j : json_null();
}

static json_t *json_argv(char *const *argv)
{
        json_t *a = json_array();
        for (size_t i = 0; argv && argv[i]; i++)
                json_array_append_new(a, json_text(argv[i]));
        return a;
}

json_t *run_record_to_json(const struct run_record *rec, bool with_output)
{
        json_t *o = json_object();

        json_object_set_new(o, "schema", json_string("hutch.result/1"));
        json_object_set_new(o, "id", json_string(rec->id));
        json_object_set_new(o, "status", json_string(run_status_to_string(rec->status)));
        json_object_set_new(o, "exit_code", rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null());
        json_object_set_new(o, "signal", rec->signal > 0 ? json_integer(rec->signal) : json_null());
        json_object_set_new(o, "message", json_text(rec->message));
        json_object_set_new(o, "argv", json_argv(rec->argv));
        json_object_set_new(o, "cwd", json_text(rec->cwd));
        json_object_set_new(o, "started_at", json_time(rec->started_at_ms));
        json_object_set_new(o, "finished_at", json_time(rec->finished_at_ms));
        json_object_set_new(o, "duration_ms", json_u64(rec->duration_ms));
        json_object_set_new(o, "cpu_user_ms", json_u64(rec->cpu_user_ms));
        json_object_set_new(o, "cpu_sys_ms", json_u64(rec->cpu_sys_ms));
        if (rec->cpu_user_ms == RUN_UNSET && rec->cpu_sys_ms == RUN_UNSET)
                json_object_set_new(o, "cpu_ms", json_null());
        else
                json_object_set_new(o, "cpu_ms", json_integer((json_int_t)(
                        (rec->cpu_user_ms == RUN_UNSET ? 0 : rec->cpu_user_ms) +
                        (rec->cpu_sys_ms == RUN_UNSET ? 0 : rec->cpu_sys_ms))));
        if (rec->peak_memory_bytes == RUN_UNSET)
                json_object_set_new(o, "peak_memory_mb", json_null());
        else
                /* MiB with one decimal, rounded to nearest */
                json_object_set_new(o, "peak_memory_mb",
                                    json_real((double)((rec->peak_memory_bytes * 10 + 524288) / 1048576) / 10.0));
        if (with_output) {
                json_object_set_new(o, "stdout", json_output(&rec->out));
                json_object_set_new(o, "stderr", json_output(&rec->err));
        }
        json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)rec->out.total_bytes));
        json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)rec->err.total_bytes));
        json_object_set_new(o, "stdout_lines", json_integer((json_int_t)rec->out.lines));
        json_object_set_new(o, "stderr_lines", json_integer((json_int_t)rec->err.lines));
        json_object_set_new(o, "stdout_truncated", json_boolean(rec->out.truncated));
        json_object_set_new(o, "stderr_truncated", json_boolean(rec->err.truncated));
        json_object_set_new(o, "limits", json_embedded(rec->limits_json));
        json_object_set_new(o, "enforcement", json_embedded(rec->enforcement_json));
        json_object_set_new(o, "profile", json_text(rec->profile));
        json_object_set_new(o, "profile_sha256", json_text(rec->profile_sha256));
        json_object_set_new(o, "rerun_of", json_text(rec->rerun_of));
        json_object_set_new(o, "session", json_text(rec->session));
        return o;
}

char *run_record_to_json_string(const struct run_record *rec, bool with_output)
{
        json_t *o = run_record_to_json(rec, with_output);
        char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(o);
        if (!s)
                s = xstrdup("{}");      /* only on allocation failure */
        return s;
}

/* argv as JSON array text for the argv column. */
static char *argv_to_text(char *const *argv)
{
        json_t *a = json_argv(argv);
        char *s = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        return s ? s : xstrdup("[]");
}

static char **argv_from_text(const char *text)
{
        json_t *a = text ? json_loads(text, 0, NULL) : NULL;
        char **v = NULL;
        size_t i;
        json_t *e;

        if (!json_is_array(a)) {
                json_decref(a);
                return NULL;
        }
        json_array_foreach(a, i, e)
                if (json_is_string(e))
                        v = strv_append(v, json_string_value(e));
        json_decref(a);
        return v;
}

/* ---- SQLite plumbing ---------------------------------------------------- */

static int errno_from_sqlite(int rc)
{
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_NOTADB:
        case SQLITE_CORRUPT:
                return -EBADMSG;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
        case SQLITE_CANTOPEN:
                return -EACCES;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        default:
                return -EIO;
        }
}

/* Remember sqlite's message for rc and return rc as -errno. */
static int fail(struct store *s, int rc)
{
        free(s->error);
        s->error = xasprintf("%s: %s", s->path, sqlite3_errmsg(s->db));
        return errno_from_sqlite(rc) ?: -EIO;
}

static int fail_msg(struct store *s, int error, const char *msg)
{
        free(s->error);
        s->error = xasprintf("%s: %s", s->path, msg);
        return error;
}

static int exec(struct store *s, const char *sql)
{
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : fail(s, rc);
}

static int prepare(struct store *s, const char *sql, sqlite3_stmt **ret)
{
        int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
        return rc == SQLITE_OK ? 0 : fail(s, rc);
}

static void finalizep(sqlite3_stmt **st)
{
        sqlite3_finalize(*st);
}
#define _cleanup_stmt_ _cleanup_(finalizep)

static int begin_write(struct store *s)
{
        return exec(s, "BEGIN IMMEDIATE");
}

static int commit(struct store *s)
{
        int r = exec(s, "COMMIT");
        if (r < 0)
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

static void rollback(struct store *s)
{
        if (!sqlite3_get_autocommit(s->db))
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
        if (v)
                sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, i);
}

static void bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
        if (v == RUN_UNSET)
                sqlite3_bind_null(st, i);
        else
                sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

static void bind_int_or_null(sqlite3_stmt *st, int i, int v, bool set)
{
        if (set)
                sqlite3_bind_int(st, i, v);
        else
                sqlite3_bind_null(st, i);
}

static void bind_blob(sqlite3_stmt *st, int i, const struct run_output *o)
{
        if (o->data)
                sqlite3_bind_blob64(st, i, o->data, o->len, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, i);
}

static char *column_text(sqlite3_stmt *st, int i)
{
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? xstrdup((const char *)t) : NULL;
}

static uint64_t column_u64(sqlite3_stmt *st, int i)
{
        if (sqlite3_column_type(st, i) == SQLITE_NULL)
                return RUN_UNSET;
        return (uint64_t)sqlite3_column_int64(st, i);
}

/* ---- open, schema ------------------------------------------------------- */

int store_current_schema_version(void)
{
        return (int)ELEMENTSOF(migrations);
}

int store_default_path(char **ret)
{
        const char *dir = getenv("HUTCH_STATE_DIR");
        const char *xdg = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");

        if (dir && *dir)
                *ret = xasprintf("%s/hutch.db", dir);
        else if (xdg && *xdg)
                *ret = xasprintf("%s/hutch/hutch.db", xdg);
        else if (home && *home)
                *ret = xasprintf("%s/.local/state/hutch/hutch.db", home);
        else
                return -ENOENT;
        return 0;
}

const char *store_error(const struct store *s)
{
        return s && s->error ? s->error : "no error";
}

const char *store_path(const struct store *s)
{
        return s->path;
}

int store_schema_version(struct store *s)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = prepare(s, "PRAGMA user_version", &st);
        if (r < 0)
                return r;
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return fail(s, rc);
        return sqlite3_column_int(st, 0);
}

static int migrate(struct store *s)
{
        int current = store_current_schema_version();
        int version, r;

        version = store_schema_version(s);
        if (version < 0)
                return version;
        if (version == current)
                return 0;
        if (version > current) {
                char msg[128];
                snprintf(msg, sizeof(msg),
                         "schema version %d is newer than this hutch understands (%d); upgrade hutch",
                         version, current);
                return fail_msg(s, -EPROTONOSUPPORT, msg);
        }

        r = begin_write(s);
        if (r < 0)
                return r;
        /* another hutch may have migrated while we waited for the lock */
        version = store_schema_version(s);
        if (version < 0) {
                rollback(s);
                return version;
        }
        for (int v = version; v < current; v++) {
                r = exec(s, migrations[v]);
                if (r < 0) {
                        rollback(s);
                        return r;
                }
        }
        if (version < current) {
                char sql[64];
                snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", current);
                r = exec(s, sql);
                if (r < 0) {
                        rollback(s);
                        return r;
                }
        }
        return commit(s);
}

/* Step st like sqlite3_step(), but wait out SQLITE_BUSY for up to the
 * busy timeout even where SQLite does not call its busy handler (changing
 * the journal mode of a new database while another process does too). */
static int step_patiently(sqlite3_stmt *st)
{
        uint64_t deadline = now_monotonic_ms() + STORE_BUSY_TIMEOUT_MS;
        unsigned seed = (unsigned)getpid();
        int rc;

        for (;;) {
                rc = sqlite3_step(st);
                if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
                        return rc;
                if (now_monotonic_ms() >= deadline)
                        return rc;
                sqlite3_reset(st);
                usleep(1000 + (unsigned)rand_r(&seed) % 9000);
        }
}

static int configure(struct store *s)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        const unsigned char *mode;
        int r, rc;

        sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
        /* the first statement that reads the file: a non-database fails
         * here. WAL mode is persistent, so usually there is nothing to
         * change; only the first open of a new database switches it. */
        r = prepare(s, "PRAGMA journal_mode", &st);
        if (r < 0)
                return r;
        rc = step_patiently(st);
        if (rc != SQLITE_ROW)
                return fail(s, rc);
        mode = sqlite3_column_text(st, 0);
        if (!mode || strcasecmp((const char *)mode, "wal") != 0) {
                sqlite3_finalize(TAKE_PTR(st));
                r = prepare(s, "PRAGMA journal_mode = WAL", &st);
                if (r < 0)
                        return r;
                rc = step_patiently(st);
                if (rc != SQLITE_ROW)
                        return fail(s, rc);
        }
        sqlite3_finalize(TAKE_PTR(st));
        r = exec(s, "PRAGMA synchronous = NORMAL");
        if (r < 0)
                return r;
        /* Without a checkpoint on close (see store_open()), the next open
         * rebuilds its index from the whole WAL: keep the WAL short. */
        rc = sqlite3_wal_autocheckpoint(s->db, STORE_CHECKPOINT_FRAMES);
        if (rc != SQLITE_OK)
                return fail(s, rc);
        return exec(s, "PRAGMA foreign_keys = ON");
}

int store_open(const char *path, struct store **ret, char **ret_error)
{
        struct store *s;
        _cleanup_free_ char *copy = xstrdup(path);
        const char *dir = dirname(copy);
        int r, rc;

        r = mkdir_p(dir, 0700);
        if (r < 0) {
                if (ret_error)
                        *ret_error = xasprintf("%s: cannot create directory %s: %s",
                                               path, dir, strerror(-r));
                return r;
        }

        s = xcalloc(1, sizeof(*s));
        s->path = xstrdup(path);
        rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
        if (rc != SQLITE_OK) {
                r = s->db ? fail(s, rc) : fail_msg(s, -ENOMEM, "out of memory");
                goto fail;
        }
        sqlite3_extended_result_codes(s->db, 0);
        /* Every hutch run opens and closes the store, and is usually its last
         * connection: by default SQLite would then checkpoint and delete
         * the WAL on close and create it again on the next open, three
         * disk syncs per run. Keep the WAL and leave checkpoints to the
         * automatic ones (every 64 pages, see configure()), which amortise
         * the syncs over many runs. Committed rows are in the WAL either way; with
         * synchronous=NORMAL they survive any crash of hutch, and only an OS
         * crash or power loss can lose the last few. */
        int on = 1;
        (void)sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);

        r = configure(s);
        if (r < 0)
                goto fail;
        r = migrate(s);
        if (r < 0)
                goto fail;

        *ret = s;
        return 0;
fail:
        if (ret_error)
                *ret_error = xstrdup(s->error ? s->error : path);
        store_close(s);
        return r;
}

static int note_wal_frames(void *userdata, sqlite3 *db, const char *name, int frames)
{
        struct store *s = userdata;
        (void)db;
        (void)name;
        s->wal_frames = frames;
        return SQLITE_OK;
}

void store_defer_checkpoints(struct store *s)
{
        /* replaces the hook sqlite3_wal_autocheckpoint() installed */
        sqlite3_wal_hook(s->db, note_wal_frames, s);
}

void store_checkpoint_if_due(struct store *s)
{
        if (!s || s->wal_frames < STORE_CHECKPOINT_FRAMES)
                return;
        /* RESTART, so that the next write starts the WAL over: the next
         * hutch to open the store (usually the first connection, the WAL
         * index gone with the last one) rebuilds the index from every
         * valid frame in the file, checkpointed or not, and would find
         * it over the threshold again. The file keeps its size, so later
         * appends reuse its blocks (TRUNCATE made every run's writes
         * allocate them again, measurably slower). Without waiting: a
         * reader or writer in the way makes this return busy at once and
         * leaves the WAL to a later run; so does a full disk. */
        sqlite3_busy_timeout(s->db, 0);
        if (sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_RESTART, NULL, NULL) == SQLITE_OK) {
                s->wal_frames = 0;
                /* The first frame after a restart makes SQLite write and
                 * sync a new WAL header (twice): do it now, not in the
                 * next run's row while its job starts. Rewriting
                 * user_version with its own value is the smallest write
                 * there is. */
                if (exec(s, "BEGIN IMMEDIATE") == 0) {
                        int version = store_schema_version(s);
                        _cleanup_free_ char *sql = xasprintf("PRAGMA user_version = %d", version);
                        if (version < 0 || exec(s, sql) < 0 || exec(s, "COMMIT") < 0)
                                (void)exec(s, "ROLLBACK");
                }
        }
        sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
}

struct store *store_close(struct store *s)
{
        if (!s)
                return NULL;
        sqlite3_close_v2(s->db);
        free(s->path);
        free(s->error);
        free(s);
        return NULL;
}

/* ---- rows --------------------------------------------------------------- */

/* The columns every read selects, in this order. */
#define RUN_COLUMNS \
        "id, argv, cwd, profile, status, exit_code, signal, message, "  \
        "started_at, finished_at, duration_ms, cpu_user_ms, cpu_sys_ms, " \
        "peak_memory_bytes, stdout_bytes, stderr_bytes, stdout_lines, " \
        "stderr_lines, stdout_truncated, stderr_truncated, limits, "    \
        "enforcement, supervisor_pid, supervisor_start, heartbeat_at, " \
        "session, idempotency_key, rerun_of, profile_sha256"
/* ... and a full read adds these. */
#define DETAIL_COLUMNS ", stdout, stderr, profile_text, lang, code"

static void read_output(sqlite3_stmt *st, int i, struct run_output *o)
{
        const void *p = sqlite3_column_blob(st, i);
        size_t n = (size_t)sqlite3_column_bytes(st, i);

        free(o->data);
        o->data = xmalloc(n + 1);
        if (n)
                memcpy(o->data, p, n);
        o->data[n] = '\0';
        o->len = n;
}

static struct run_record *read_row(sqlite3_stmt *st, bool detail)
{
        struct run_record *rec = run_record_new();
        const unsigned char *id = sqlite3_column_text(st, 0);
        _cleanup_free_ char *status = NULL;
        int i = 0;

        snprintf(rec->id, sizeof(rec->id), "%s", id ? (const char *)id : "");
        i++;
        {
                _cleanup_free_ char *argv = column_text(st, i++);
                rec->argv = argv_from_text(argv);
        }
        rec->cwd = column_text(st, i++);
        rec->profile = column_text(st, i++);
        status = column_text(st, i++);
        rec->status = run_status_from_string(status);
        rec->exit_code = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int(st, i);
        i++;
        rec->signal = sqlite3_column_int(st, i++);
        rec->message = column_text(st, i++);
        rec->started_at_ms = column_u64(st, i++);
        rec->finished_at_ms = column_u64(st, i++);
        rec->duration_ms = column_u64(st, i++);
        rec->cpu_user_ms = column_u64(st, i++);
        rec->cpu_sys_ms = column_u64(st, i++);
        rec->peak_memory_bytes = column_u64(st, i++);
        rec->out.total_bytes = (uint64_t)sqlite3_column_int64(st, i++);
        rec->err.total_bytes = (uint64_t)sqlite3_column_int64(st, i++);
        rec->out.lines = (uint64_t)sqlite3_column_int64(st, i++);
        rec->err.lines = (uint64_t)sqlite3_column_int64(st, i++);
        rec->out.truncated = sqlite3_column_int(st, i++) != 0;
        rec->err.truncated = sqlite3_column_int(st, i++) != 0;
        rec->limits_json = column_text(st, i++);
        rec->enforcement_json = column_text(st, i++);
        rec->supervisor_pid = (pid_t)sqlite3_column_int(st, i++);
        rec->supervisor_start = column_u64(st, i++);
        rec->heartbeat_at_ms = column_u64(st, i++);
        rec->session = column_text(st, i++);
        rec->idempotency_key = column_text(st, i++);
        rec->rerun_of = column_text(st, i++);
        rec->profile_sha256 = column_text(st, i++);
        if (detail) {
                read_output(st, i++, &rec->out);
                read_output(st, i++, &rec->err);
                rec->profile_text = column_text(st, i++);
                rec->lang = column_text(st, i++);
                if (sqlite3_column_type(st, i) != SQLITE_NULL) {
                        struct run_output code = { 0 };
                        read_output(st, i, &code);
                        rec->code = code.data;
                        rec->code_len = code.len;
                }
                i++;
        }
        return rec;
}

/* Begin a write transaction with its one statement prepared; on failure
 * nothing is left open. Pair with finish_update(). */
static int begin_statement(struct store *s, const char *sql, sqlite3_stmt **ret)
{
        int r = begin_write(s);
        if (r < 0)
                return r;
        r = prepare(s, sql, ret);
        if (r < 0)
                rollback(s);
        return r;
}

/* Run the one write statement of a transaction begun with
 * begin_statement() and commit, or roll back on failure. must_change:
 * the statement must touch a row (an UPDATE of a run that does not exist is -ENOENT).
 * Takes ownership of st. */
static int finish_update(struct store *s, sqlite3_stmt *st, bool must_change)
{
        int rc = sqlite3_step(st), r = 0;

        if (rc != SQLITE_DONE)
                r = fail(s, rc);
        else if (must_change && sqlite3_changes(s->db) == 0)
                r = fail_msg(s, -ENOENT, "no such run");
        sqlite3_finalize(st);
        if (r < 0) {
                rollback(s);
                return r;
        }
        return commit(s);
}

int store_run_insert(struct store *s, const struct run_record *rec)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *argv = argv_to_text(rec->argv);
        int r;

        r = begin_statement(s,
                    "INSERT INTO runs (" RUN_COLUMNS DETAIL_COLUMNS ") VALUES ("
                    "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
                    "?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, "
                    "?31, ?32, ?33, ?34)", &st);
        if (r < 0)
                return r;
        bind_text(st, 1, rec->id);
        bind_text(st, 2, argv);
        bind_text(st, 3, rec->cwd);
        bind_text(st, 4, rec->profile);
        bind_text(st, 5, run_status_to_string(rec->status));
        bind_int_or_null(st, 6, rec->exit_code, rec->exit_code >= 0);
        bind_int_or_null(st, 7, rec->signal, rec->signal > 0);
        bind_text(st, 8, rec->message);
        bind_u64(st, 9, rec->started_at_ms == RUN_UNSET ? now_realtime_ms() : rec->started_at_ms);
        bind_u64(st, 10, rec->finished_at_ms);
        bind_u64(st, 11, rec->duration_ms);
        bind_u64(st, 12, rec->cpu_user_ms);
        bind_u64(st, 13, rec->cpu_sys_ms);
        bind_u64(st, 14, rec->peak_memory_bytes);
        sqlite3_bind_int64(st, 15, (sqlite3_int64)rec->out.total_bytes);
        sqlite3_bind_int64(st, 16, (sqlite3_int64)rec->err.total_bytes);
        sqlite3_bind_int64(st, 17, (sqlite3_int64)rec->out.lines);
        sqlite3_bind_int64(st, 18, (sqlite3_int64)rec->err.lines);
        sqlite3_bind_int(st, 19, rec->out.truncated);
        sqlite3_bind_int(st, 20, rec->err.truncated);
        bind_text(st, 21, rec->limits_json);
        bind_text(st, 22, rec->enforcement_json);
        bind_int_or_null(st, 23, rec->supervisor_pid, rec->supervisor_pid > 0);
        bind_u64(st, 24, rec->supervisor_start);
        bind_u64(st, 25, rec->heartbeat_at_ms);
        bind_text(st, 26, rec->session);
        bind_text(st, 27, rec->idempotency_key);
        bind_text(st, 28, rec->rerun_of);
        bind_text(st, 29, rec->profile_sha256);
        bind_blob(st, 30, &rec->out);
        bind_blob(st, 31, &rec->err);
        bind_text(st, 32, rec->profile_text);
        bind_text(st, 33, rec->lang);
        if (rec->code)
                sqlite3_bind_blob64(st, 34, rec->code, rec->code_len, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, 34);
        return finish_update(s, TAKE_PTR(st), false);
}

int store_run_heartbeat(struct store *s, const char *id, uint64_t now_ms)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r;

        r = begin_statement(s, "UPDATE runs SET heartbeat_at = ?1 WHERE id = ?2", &st);
        if (r < 0)
                return r;
        bind_u64(st, 1, now_ms);
        bind_text(st, 2, id);
        return finish_update(s, TAKE_PTR(st), true);
}

int store_run_finish(struct store *s, const struct run_record *rec)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r;

        r = begin_statement(s,
                    "UPDATE runs SET status = ?2, exit_code = ?3, signal = ?4, message = ?5, "
                    "finished_at = ?6, duration_ms = ?7, cpu_user_ms = ?8, cpu_sys_ms = ?9, "
                    "peak_memory_bytes = ?10, stdout = ?11, stderr = ?12, stdout_bytes = ?13, "
                    "stderr_bytes = ?14, stdout_lines = ?15, stderr_lines = ?16, "
                    "stdout_truncated = ?17, stderr_truncated = ?18, limits = ?19, "
                    "enforcement = ?20, heartbeat_at = ?21 WHERE id = ?1", &st);
        if (r < 0)
                return r;
        bind_text(st, 1, rec->id);
        bind_text(st, 2, run_status_to_string(rec->status));
        bind_int_or_null(st, 3, rec->exit_code, rec->exit_code >= 0);
        bind_int_or_null(st, 4, rec->signal, rec->signal > 0);
        bind_text(st, 5, rec->message);
        bind_u64(st, 6, rec->finished_at_ms == RUN_UNSET ? now_realtime_ms() : rec->finished_at_ms);
        bind_u64(st, 7, rec->duration_ms);
        bind_u64(st, 8, rec->cpu_user_ms);
        bind_u64(st, 9, rec->cpu_sys_ms);
        bind_u64(st, 10, rec->peak_memory_bytes);
        bind_blob(st, 11, &rec->out);
        bind_blob(st, 12, &rec->err);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)rec->out.total_bytes);
        sqlite3_bind_int64(st, 14, (sqlite3_int64)rec->err.total_bytes);
        sqlite3_bind_int64(st, 15, (sqlite3_int64)rec->out.lines);
        sqlite3_bind_int64(st, 16, (sqlite3_int64)rec->err.lines);
        sqlite3_bind_int(st, 17, rec->out.truncated);
        sqlite3_bind_int(st, 18, rec->err.truncated);
        bind_text(st, 19, rec->limits_json);
        bind_text(st, 20, rec->enforcement_json);
        bind_u64(st, 21, now_realtime_ms());
        return finish_update(s, TAKE_PTR(st), true);
}

static int get_exact(struct store *s, const char *id, struct run_record **ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = prepare(s, "SELECT " RUN_COLUMNS DETAIL_COLUMNS " FROM runs WHERE id = ?1", &st);
        if (r < 0)
                return r;
        bind_text(st, 1, id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return fail(s, rc);
        *ret = read_row(st, true);
        return 0;
}

int store_run_get(struct store *s, const char *id_or_prefix, struct run_record **ret,
                  char ***ret_candidates)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *prefix = xstrdup(id_or_prefix);
        _cleanup_free_ char *upper = NULL;
        _cleanup_strv_ char **ids = NULL;
        size_t len = strlen(prefix);
        int r, rc;

        for (char *p = prefix; *p; p++) {
                if (!ulid_char_valid(*p))
                        return fail_msg(s, -EINVAL, "not a run id");
                *p = (char)toupper((unsigned char)*p);
        }
        if (len == ULID_LEN) {
                r = get_exact(s, prefix, ret);
                if (r != -ENOENT)
                        return r;
        }
        if (len < MIN_PREFIX)
                return fail_msg(s, -EINVAL, "run id prefix too short");
        if (len > ULID_LEN)
                return -ENOENT;

        /* every id starting with prefix sorts in [prefix, prefix "~"): ids
         * are made of [0-9A-Z] only, all below '~' */
        upper = xasprintf("%s~", prefix);
        r = prepare(s, "SELECT id FROM runs WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT ?3", &st);
        if (r < 0)
                return r;
        bind_text(st, 1, prefix);
        bind_text(st, 2, upper);
        sqlite3_bind_int(st, 3, MAX_CANDIDATES + 1);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                ids = strv_append(ids, (const char *)sqlite3_column_text(st, 0));
        if (rc != SQLITE_DONE)
                return fail(s, rc);
        if (strv_length(ids) == 0)
                return -ENOENT;
        if (strv_length(ids) > 1) {
                if (ret_candidates) {
                        if (strv_length(ids) > MAX_CANDIDATES) {
                                free(ids[MAX_CANDIDATES]);
                                ids[MAX_CANDIDATES] = NULL;
                        }
                        *ret_candidates = TAKE_PTR(ids);
                }
                return -ENOTUNIQ;
        }
        return get_exact(s, ids[0], ret);
}

int store_run_get_by_key(struct store *s, const char *key, struct run_record **ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = prepare(s, "SELECT " RUN_COLUMNS DETAIL_COLUMNS " FROM runs "
                       "WHERE idempotency_key = ?1 AND status != 'running'", &st);
        if (r < 0)
                return r;
        bind_text(st, 1, key);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return fail(s, rc);
        *ret = read_row(st, true);
        return 0;
}

static bool matches_status(const struct run_record *rec, int status)
{
        if (status == RUN_RUNNING)
                return rec->status == RUN_RUNNING && !run_record_is_orphan(rec);
        if (status == RUN_ORPHANED)
                return rec->status == RUN_ORPHANED || run_record_is_orphan(rec);
        return true;    /* the query already filtered */
}

int store_run_foreach(struct store *s, const struct store_filter *f,
                      int (*cb)(struct run_record *rec, void *userdata), void *userdata)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *sql = NULL;
        /* running/orphaned depend on a process check the query cannot do */
        bool post = f->status == RUN_RUNNING || f->status == RUN_ORPHANED;
        size_t n = 0;
        int r, rc, arg = 1;

        sql = xasprintf("SELECT " RUN_COLUMNS " FROM runs WHERE 1%s%s "
                        "ORDER BY started_at DESC, id DESC%s",
                        f->status < 0 ? "" :
                        post ? " AND status IN ('running', 'orphaned')" : " AND status = ?",
                        f->since_ms > 0 ? " AND started_at >= ?" : "",
                        f->limit > 0 && !post ? " LIMIT ?" : "");
        r = prepare(s, sql, &st);
        if (r < 0)
                return r;
        if (f->status >= 0 && !post)
                bind_text(st, arg++, run_status_to_string(f->status));
        if (f->since_ms > 0)
                bind_u64(st, arg++, f->since_ms);
        if (f->limit > 0 && !post)
                sqlite3_bind_int64(st, arg++, (sqlite3_int64)MIN(f->limit, (size_t)INT64_MAX));

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct run_record *rec = read_row(st, false);
                if (post && !matches_status(rec, f->status)) {
                        run_record_free(rec);
                        continue;
                }
                r = cb(rec, userdata);
                if (r < 0)
                        return r;
                if (f->limit > 0 && ++n >= f->limit)
                        return 0;
        }
        if (rc != SQLITE_DONE)
                return fail(s, rc);
        return 0;
}

struct collect {
        struct run_record **recs;
        size_t n, cap;
};

static int collect_one(struct run_record *rec, void *userdata)
{
        struct collect *c = userdata;
        if (c->n == c->cap)
                c->recs = xrealloc(c->recs, (c->cap = c->cap ? c->cap * 2 : 64) * sizeof(*c->recs));
        c->recs[c->n++] = rec;
        return 0;
}

int store_run_list(struct store *s, const struct store_filter *f,
                   struct run_record ***ret, size_t *ret_n)
{
        struct collect c = {};
        int r;

        r = store_run_foreach(s, f, collect_one, &c);
        if (r < 0) {
                run_record_free_many(c.recs, c.n);
                return r;
        }
        *ret = c.recs;
        *ret_n = c.n;
        return 0;
}

int store_mark_orphans(struct store *s, bool dry_run, char ***ret_ids)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_ char **ids = NULL;
        _cleanup_strv_ char **done = NULL;
        int r, rc, count = 0;

        /* find them first, outside the write lock: looking at /proc is slow
         * compared with a write transaction */
        r = prepare(s, "SELECT " RUN_COLUMNS " FROM runs WHERE status = 'running'", &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                _cleanup_run_record_ struct run_record *rec = read_row(st, false);
                if (run_record_is_orphan(rec))
                        ids = strv_append(ids, rec->id);
        }
        if (rc != SQLITE_DONE)
                return fail(s, rc);
        sqlite3_finalize(TAKE_PTR(st));

        if (dry_run || !ids) {
                count = (int)strv_length(ids);
                if (ret_ids)
                        *ret_ids = TAKE_PTR(ids);
                return count;
        }

        r = begin_write(s);
        if (r < 0)
                return r;
        r = prepare(s, "UPDATE runs SET status = 'orphaned', finished_at = NULL, "
                       "message = 'supervisor (pid ' || ifnull(supervisor_pid, '?') || ') died' "
                       "WHERE id = ?1 AND status = 'running'", &st);
        if (r < 0)
                goto out;
        for (char **id = ids; *id; id++) {
                sqlite3_reset(st);
                bind_text(st, 1, *id);
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE) {
                        r = fail(s, rc);
                        goto out;
                }
                /* a supervisor that finished in between keeps its outcome */
                if (sqlite3_changes(s->db) > 0) {
                        done = strv_append(done, *id);
                        count++;
                }
        }
        sqlite3_finalize(TAKE_PTR(st));
        r = commit(s);
        if (r < 0)
                return r;
        if (ret_ids)
                *ret_ids = TAKE_PTR(done);
        return count;
out:
        rollback(s);
        return r;
}

int store_delete_older_than(struct store *s, uint64_t before_ms, bool dry_run)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc, count;

        if (dry_run) {
                r = prepare(s, "SELECT count(*) FROM runs WHERE started_at < ?1 "
                               "AND status != 'running'", &st);
                if (r < 0)
                        return r;
                bind_u64(st, 1, before_ms);
                rc = sqlite3_step(st);
                if (rc != SQLITE_ROW)
                        return fail(s, rc);
                return sqlite3_column_int(st, 0);
        }

        r = begin_write(s);
        if (r < 0)
                return r;
        r = prepare(s, "DELETE FROM runs WHERE started_at < ?1 AND status != 'running'", &st);
        if (r < 0)
                goto out;
        bind_u64(st, 1, before_ms);
        rc = sqlite3_step(st);
        if (rc != SQLITE_DONE) {
                r = fail(s, rc);
                goto out;
        }
        count = sqlite3_changes(s->db);
        sqlite3_finalize(TAKE_PTR(st));
        r = commit(s);
        return r < 0 ? r : count;
out:
        rollback(s);
        return r;
}

/* ---- files -------------------------------------------------------------- */

void file_records_free(struct file_record *f, size_t n)
{
        if (!f)
                return;
        for (size_t i = 0; i < n; i++) {
                free(f[i].path);
                free(f[i].link_target);
                free(f[i].skip);
                free(f[i].mime);
        }
        free(f);
}

static void bind_hex(sqlite3_stmt *st, int i, const char *hex)
{
        bind_text(st, i, hex && hex[0] ? hex : NULL);
}

int store_files_add(struct store *s, const char *run_id, const struct file_record *f, size_t n)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = begin_write(s);
        if (r < 0)
                return r;
        r = prepare(s, "INSERT OR REPLACE INTO files (run_id, path, kind, size, mode, sha256, old_mode, "
                       "old_sha256, link_target, skip, mime) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    &st);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < n; i++) {
                sqlite3_reset(st);
                bind_text(st, 1, run_id);
                bind_text(st, 2, f[i].path);
                bind_text(st, 3, f[i].kind);
                bind_u64(st, 4, f[i].size);
                sqlite3_bind_int64(st, 5, f[i].mode);
                bind_hex(st, 6, f[i].sha256);
                sqlite3_bind_int64(st, 7, f[i].old_mode);
                bind_hex(st, 8, f[i].old_sha256);
                bind_text(st, 9, f[i].link_target);
                bind_text(st, 10, f[i].skip);
                bind_text(st, 11, f[i].mime);
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE) {
                        r = fail(s, rc);
                        goto out;
                }
        }
        sqlite3_finalize(TAKE_PTR(st));
        return commit(s);
out:
        rollback(s);
        return r;
}

static void column_hex(sqlite3_stmt *st, int i, char hex[DIGEST_HEX_SIZE])
{
        const unsigned char *t = sqlite3_column_text(st, i);
        snprintf(hex, DIGEST_HEX_SIZE, "%s", t ? (const char *)t : "");
}

int store_files_list(struct store *s, const char *run_id, const char *kind,
                     struct file_record **ret, size_t *ret_n)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        struct file_record *v = NULL;
        size_t n = 0;
        int r, rc;

        r = prepare(s, "SELECT path, kind, size, mode, sha256, old_mode, old_sha256, link_target, skip, mime "
                       "FROM files WHERE run_id = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY kind = 'output', path",
                    &st);
        if (r < 0)
                return r;
        bind_text(st, 1, run_id);
        bind_text(st, 2, kind);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                v = xrealloc(v, (n + 1) * sizeof(*v));
                struct file_record *f = &v[n++];
                *f = (struct file_record) { 0 };
                f->path = column_text(st, 0);
                f->kind = NULL;
                const unsigned char *k = sqlite3_column_text(st, 1);
                static const char *const kinds[] = { "output", "added", "modified", "deleted" };
                f->kind = "unknown";
                for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                        if (k && streq((const char *)k, kinds[i]))
                                f->kind = kinds[i];
                f->size = column_u64(st, 2);
                f->mode = (mode_t)sqlite3_column_int64(st, 3);
                column_hex(st, 4, f->sha256);
                f->old_mode = (mode_t)sqlite3_column_int64(st, 5);
                column_hex(st, 6, f->old_sha256);
                f->link_target = column_text(st, 7);
                f->skip = column_text(st, 8);
                f->mime = column_text(st, 9);
        }
        if (rc != SQLITE_DONE) {
                file_records_free(v, n);
                return fail(s, rc);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int store_files_all_blobs(struct store *s, char ***ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        char **v = NULL;
        int r, rc;

        r = prepare(s, "SELECT sha256 FROM files WHERE sha256 IS NOT NULL "
                       "UNION SELECT old_sha256 FROM files WHERE old_sha256 IS NOT NULL", &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                v = strv_append(v, (const char *)sqlite3_column_text(st, 0));
        if (rc != SQLITE_DONE) {
                strv_free(v);
                return fail(s, rc);
        }
        *ret = v;
        return 0;
}

int store_workspace_set(struct store *s, const char *run_id, const char *workdir, const char *session)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r;

        r = begin_statement(s, "INSERT OR REPLACE INTO run_workspace (run_id, workdir, session) VALUES (?1, ?2, ?3)", &st);
        if (r < 0)
                return r;
        bind_text(st, 1, run_id);
        bind_text(st, 2, workdir);
        bind_text(st, 3, session);
        return finish_update(s, TAKE_PTR(st), false);
}

int store_workspace_get(struct store *s, const char *run_id, char **ret_workdir, char **ret_session)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = prepare(s, "SELECT workdir, session FROM run_workspace WHERE run_id = ?1", &st);
        if (r < 0)
                return r;
        bind_text(st, 1, run_id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return fail(s, rc);
        if (ret_workdir)
                *ret_workdir = column_text(st, 0);
        if (ret_session)
                *ret_session = column_text(st, 1);
        return 0;
}
