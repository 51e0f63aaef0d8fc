/* store.c - the SQLite connection behind the run history (see store.h):
 * opening and configuring it, the schema and its migrations, WAL
 * checkpoints, closing. The queries live in store-runs.c and
 * store-files.c, the SQLite plumbing they share in store-sql.c, the
 * records in memory and their JSON in store-record.c.
 *
 * Workload: many short-lived hutch processes writing at once (one
 * connection each), so every connection has a busy timeout and every
 * write takes the write lock up front (see store-sql.c).
 *
 * The schema is versioned with PRAGMA user_version. migrations[i] takes a
 * database from version i to i+1; migrations only ever get appended, and
 * a database written by a newer hutch is refused rather than guessed at.
 */
#include "config.h"

#include <libgen.h>
#include <sqlite3.h>
#include <string.h>
#include <strings.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

/* Long enough for dozens of concurrent hutch processes queueing for the
 * write lock (each holds it for a millisecond or so); short enough that a
 * stuck process is reported rather than waited for forever. */
#define STORE_BUSY_TIMEOUT_MS 30000
/* WAL frames (pages) after which a commit checkpoints */
#define STORE_CHECKPOINT_FRAMES 64

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

        /* 4 -> 5: whether a run's files were recorded in full: the error
         * that stopped their collection, and how many were skipped
         * without a row of their own (over the caps), so a record never
         * claims more than happened */
        "CREATE TABLE run_files_summary (\n"
        "        run_id TEXT PRIMARY KEY NOT NULL,\n"
        "        error TEXT,\n"
        "        unlisted INTEGER NOT NULL DEFAULT 0\n"
        ");\n"
        "CREATE TRIGGER runs_delete_files_summary AFTER DELETE ON runs BEGIN\n"
        "        DELETE FROM run_files_summary WHERE run_id = old.id;\n"
        "END;\n",
};

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

        r = store_prepare(s, "PRAGMA user_version", &st);
        if (r < 0)
                return r;
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return store_fail(s, rc);
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
                return store_fail_msg(s, -EPROTONOSUPPORT, msg);
        }

        r = store_begin_write(s);
        if (r < 0)
                return r;
        /* another hutch may have migrated while we waited for the lock */
        version = store_schema_version(s);
        if (version < 0) {
                store_rollback(s);
                return version;
        }
        for (int v = version; v < current; v++) {
                r = store_exec(s, migrations[v]);
                if (r < 0) {
                        store_rollback(s);
                        return r;
                }
        }
        if (version < current) {
                char sql[64];
                snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", current);
                r = store_exec(s, sql);
                if (r < 0) {
                        store_rollback(s);
                        return r;
                }
        }
        return store_commit(s);
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
        r = store_prepare(s, "PRAGMA journal_mode", &st);
        if (r < 0)
                return r;
        rc = step_patiently(st);
        if (rc != SQLITE_ROW)
                return store_fail(s, rc);
        mode = sqlite3_column_text(st, 0);
        if (!mode || strcasecmp((const char *)mode, "wal") != 0) {
                sqlite3_finalize(TAKE_PTR(st));
                r = store_prepare(s, "PRAGMA journal_mode = WAL", &st);
                if (r < 0)
                        return r;
                rc = step_patiently(st);
                if (rc != SQLITE_ROW)
                        return store_fail(s, rc);
        }
        sqlite3_finalize(TAKE_PTR(st));
        r = store_exec(s, "PRAGMA synchronous = NORMAL");
        if (r < 0)
                return r;
        /* Without a checkpoint on close (see store_open()), the next open
         * rebuilds its index from the whole WAL: keep the WAL short. */
        rc = sqlite3_wal_autocheckpoint(s->db, STORE_CHECKPOINT_FRAMES);
        if (rc != SQLITE_OK)
                return store_fail(s, rc);
        return store_exec(s, "PRAGMA foreign_keys = ON");
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
                r = s->db ? store_fail(s, rc) : store_fail_msg(s, -ENOMEM, "out of memory");
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
                if (store_exec(s, "BEGIN IMMEDIATE") == 0) {
                        int version = store_schema_version(s);
                        _cleanup_free_ char *sql = xasprintf("PRAGMA user_version = %d", version);
                        if (version < 0 || store_exec(s, sql) < 0 || store_exec(s, "COMMIT") < 0)
                                (void)store_exec(s, "ROLLBACK");
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
