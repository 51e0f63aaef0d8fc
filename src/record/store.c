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
 * The schema is versioned with PRAGMA user_version. The migrations
 * themselves are in store-migrations.c; each is run idempotently here
 * (run_migration()), and every version this hutch did not
 * write (newer, negative, or tables that do not match it) is refused
 * with one line saying what was found and what to do.
 *
 * Faults the open looks for: a database that vanished or was truncated
 * while its history remains (store-durable.c), a writer that died with
 * the store open (the PATH-open marker, then quick_check), a state dir
 * too full for a final update (the PATH-reserve file); the code for
 * these files beside the database, and the syncs that make a commit
 * durable, is in store-durable.c. Readers open read-only, immutable
 * when they cannot make the -wal/-shm files.
 */
#include "config.h"

#include <fcntl.h>
#include <libgen.h>
#include <sqlite3.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/log.h"
#include "lib/util.h"

/* Long enough for dozens of concurrent hutch processes queueing for the
 * write lock (each holds it for a millisecond or so); short enough that a
 * stuck process is reported rather than waited for forever. */
/* WAL frames (pages) after which a commit checkpoints. What a damaged
 * WAL can lose is what is not checkpointed yet: SQLite ignores every
 * frame after one whose checksum fails, so the runs committed since the
 * last checkpoint (a `hutch run -- true` in a workspace writes 10
 * frames: 6 for its row, 2 for its files summary, 2 for its outcome;
 * labels add theirs: about the last 5 to 7 runs at 64) are gone with
 * it, silently. Checkpointing every 16 frames
 * (the last 3 to 5 runs) raised the median start-up in bench/startup.sh
 * from about 14 to 23 ms on an ext4 disk (two syncs per checkpoint, four
 * times as often), so it stays at 64: hutch's own crashes never damage
 * the WAL, and disk damage that does is found by quick_check. */
#define STORE_CHECKPOINT_FRAMES 64

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

/* PRAGMA user_version into *ret. Any 32-bit value is a version here
 * (a negative one is damage or someone else's doing, not an error). */
static int read_user_version(struct store *s, int *ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = store_prepare(s, "PRAGMA user_version", &st);
        if (r < 0)
                return r;
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return store_fail(s, rc);
        *ret = sqlite3_column_int(st, 0);
        return 0;
}

int store_schema_version(struct store *s)
{
        int version, r = read_user_version(s, &version);
        return r < 0 ? r : version;
}

/* The columns this hutch reads and writes, table by table: a database
 * whose user_version claims the current schema but lacks one of them was
 * changed behind hutch's back, and is refused with the column's name
 * rather than failing later on some query. */
static const char *const schema_columns[][2] = {
        { "runs", "id, argv, cwd, profile, status, exit_code, signal, message, started_at, "
                  "finished_at, duration_ms, cpu_user_ms, cpu_sys_ms, peak_memory_bytes, stdout, "
                  "stderr, stdout_bytes, stderr_bytes, stdout_lines, stderr_lines, "
                  "stdout_truncated, stderr_truncated, limits, enforcement, supervisor_pid, "
                  "supervisor_start, heartbeat_at, session, idempotency_key, rerun_of, "
                  "profile_text, profile_sha256, lang, code, output_lost, stdout_sha256, "
                  "stderr_sha256, job_exit_code" },
        { "files", "run_id, path, kind, size, mode, sha256, old_mode, old_sha256, link_target, skip, mime, "
                   "lower_changed" },
        { "run_workspace", "run_id, workdir, session" },
        { "run_files_summary", "run_id, error, unlisted, committed" },
        { "connections", "run_id, seq, time, proto, pid, dest, sni, host, name, resolved, decision, rule, "
                         "reason, bytes_out, bytes_in, duration_ms, end_reason, dropped" },
        { "run_labels", "run_id, key, value" },
        { "run_origin", "run_id, node, imported_at" },
};

static int check_schema(struct store *s, int version)
{
        for (size_t i = 0; i < ELEMENTSOF(schema_columns); i++) {
                _cleanup_free_ char *sql = xasprintf("SELECT %s FROM %s LIMIT 0", schema_columns[i][1],
                                                     schema_columns[i][0]);
                sqlite3_stmt *st = NULL;
                int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
                sqlite3_finalize(st);
                if (rc == SQLITE_OK)
                        continue;
                if ((rc & 0xff) != SQLITE_ERROR)
                        return store_fail(s, rc);
                _cleanup_free_ char *msg = xasprintf(
                        "schema version %d, but table %s does not match it (%s): the database is "
                        "inconsistent; restore it from a backup or move it away",
                        version, schema_columns[i][0], sqlite3_errmsg(s->db));
                return store_fail_msg(s, -EPROTO, msg);
        }
        return 0;
}

/* Refuse a user_version this hutch cannot take forward. */
static int check_version(struct store *s, int version)
{
        int current = store_current_schema_version();
        char msg[256];

        if (version > current) {
                snprintf(msg, sizeof(msg),
                         "schema version %d is newer than this hutch understands (%d); "
                         "upgrade hutch, or use the hutch that wrote it", version, current);
                return store_fail_msg(s, -EPROTONOSUPPORT, msg);
        }
        if (version < 0) {
                snprintf(msg, sizeof(msg),
                         "schema version %d was never written by hutch (PRAGMA user_version was "
                         "changed by something else); restore the database from a backup or move it away",
                         version);
                return store_fail_msg(s, -EPROTO, msg);
        }
        return 0;
}

/* Whether table has column (both are hutch's own names). */
static int has_column(struct store *s, const char *table, const char *column)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, table);
        store_bind_text(st, 2, column);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        return rc == SQLITE_DONE ? 0 : store_fail(s, rc);
}

/* Run one migration statement by statement, so that it is idempotent:
 * CREATEs say IF NOT EXISTS, and an ADD COLUMN of a column that is
 * already there (a user_version set back by hand, an interrupted
 * migration of an older hutch) is skipped. sqlite3_complete() finds the
 * statements' ends, triggers' inner semicolons included. */
static int run_migration(struct store *s, const char *sql)
{
        _cleanup_free_ char *stmt = NULL;
        const char *p = sql;

        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl + 1 - p) : strlen(p);
                char *next = xasprintf("%s%.*s", stmt ? stmt : "", (int)n, p);
                free(stmt);
                stmt = next;
                p += n;
                if (!sqlite3_complete(stmt))
                        continue;
                char table[64], column[64];
                bool skip = false;
                if (sscanf(stmt, " ALTER TABLE %63s ADD COLUMN %63s", table, column) == 2) {
                        int r = has_column(s, table, column);
                        if (r < 0)
                                return r;
                        skip = r > 0;
                }
                if (!skip) {
                        int r = store_exec(s, stmt);
                        if (r < 0)
                                return r;
                }
                free(stmt);
                stmt = NULL;
        }
        return 0;
}

static int migrate(struct store *s)
{
        int current = store_current_schema_version();
        int version, cookie, stamp, r;

        r = store_read_header(s, &version, &cookie, &stamp);
        if (r < 0)
                return r;
        r = check_version(s, version);
        if (r < 0)
                return r;
        if (version == current) {
                if (store_stamp_matches(cookie, stamp))
                        return 0;       /* checked, and unchanged since (store-stamp.c) */
                r = check_schema(s, version);
                if (r == 0)
                        store_stamp_schema(s, false, STORE_BUSY_TIMEOUT_MS);
                return r;
        }

        r = store_begin_write(s);
        if (r < 0)
                return r;
        /* another hutch may have migrated while we waited for the lock */
        r = read_user_version(s, &version);
        if (r == 0)
                r = check_version(s, version);
        for (int v = version; r == 0 && v < current; v++)
                r = run_migration(s, store_migration(v));
        if (r == 0 && version < current) {
                char sql[64];
                snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", current);
                r = store_exec(s, sql);
        }
        if (r == 0)
                r = check_schema(s, version);
        if (r < 0) {
                store_rollback(s);
                return r;
        }
        store_stamp_schema(s, true, STORE_BUSY_TIMEOUT_MS);
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

        store_set_busy_timeout(s, STORE_BUSY_TIMEOUT_MS);
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
        /* No PRAGMA foreign_keys: the schema declares no foreign key (a
         * run's rows in the other tables are deleted with it by
         * store_delete_older_than()), so the pragma changed nothing but
         * cost a statement on every open. */
        return 0;
}

int store_quick_check(struct store *s, char **ret_problem)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *problem = NULL;
        int r, rc;

        r = store_prepare(s, "PRAGMA quick_check(3)", &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *line = (const char *)sqlite3_column_text(st, 0);
                if (!line || streq(line, "ok"))
                        continue;
                char *next = xasprintf("%s%s%s", problem ? problem : "", problem ? "; " : "", line);
                free(problem);
                problem = next;
        }
        /* sqlite's findings span lines; the message is one */
        for (char *p = problem; p && *p; p++)
                if (*p == '\n' || *p == '\t')
                        *p = ' ';
        if (rc != SQLITE_DONE)
                return store_fail(s, rc);
        if (!problem)
                return 0;
        if (ret_problem)
                *ret_problem = TAKE_PTR(problem);
        return -EBADMSG;
}

/* The state dir holds every run's argv, environment, output and the
 * workspace blobs, and what apply installs comes from it: it must be
 * the caller's own and writable by nobody else. A directory another
 * user made (a HUTCH_STATE_DIR under /tmp they created first, say) could
 * be read by them, or filled with a history of their choosing. So the
 * directory path is in (following a symlink: the place it names is
 * what counts) must be owned by the effective uid and not group- or
 * world-writable, and a database file there must be ours too. Returns
 * 0 or -EPERM / -errno with s->error saying what and how to fix it. */
static int check_state_dir(struct store *s, const char *path)
{
        _cleanup_free_ char *copy = xstrdup(path);
        const char *dir = dirname(copy);
        uid_t me = geteuid();
        struct stat st;

        if (stat(dir, &st) < 0)
                return store_fail_msg(s, -errno, strerror(errno));
        if (st.st_uid != me) {
                _cleanup_free_ char *msg = xasprintf(
                        "state dir %s is owned by uid %u, not you (%u): use a directory of your own "
                        "(HUTCH_STATE_DIR)", dir, (unsigned)st.st_uid, (unsigned)me);
                return store_fail_msg(s, -EPERM, msg);
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                _cleanup_free_ char *msg = xasprintf(
                        "state dir %s is writable by others (mode %04o): chmod go-w %s, or use a "
                        "directory of your own (HUTCH_STATE_DIR)", dir, (unsigned)(st.st_mode & 07777), dir);
                return store_fail_msg(s, -EPERM, msg);
        }
        if (lstat(path, &st) == 0 && st.st_uid != me) {
                _cleanup_free_ char *msg = xasprintf(
                        "%s is owned by uid %u, not you (%u): move it away, or use a directory of your "
                        "own (HUTCH_STATE_DIR)", path, (unsigned)st.st_uid, (unsigned)me);
                return store_fail_msg(s, -EPERM, msg);
        }
        return 0;
}

/* Make the database and its -wal, -shm, -open and -reserve files 0600:
 * SQLite creates the -wal and -shm with the database's mode, so the
 * database is created here first, 0600; files an older hutch made 0644
 * are narrowed. Best effort, after check_state_dir(): the directory is
 * ours and nobody else's to write in, so the names cannot change under
 * us. */
static void private_files(const char *path)
{
        static const char *const suffixes[] = { "", "-wal", "-shm", "-open", "-reserve" };
        /* made 0600 here, only if it is not there: closing a descriptor
         * of the database would drop every POSIX lock this process holds
         * on it, another connection's (SQLite's own) among them */
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

        if (fd >= 0)
                close(fd);
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *f = xasprintf("%s%s", path, suffixes[i]);
                struct stat st;
                if (lstat(f, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                    (st.st_mode & 077))
                        (void)chmod(f, st.st_mode & 0600);
        }
}

/* SQLite's process-wide settings, made before its first use (after
 * that, sqlite3_config() refuses with SQLITE_MISUSE and changes
 * nothing, so calling this before every open is harmless).
 * Memory statistics off: SQLite then keeps no global tally, which it
 * updates under a global mutex on every allocation and free (an eighth
 * of the instructions of opening the store and reading its schema), and
 * hutch reads none of it (no sqlite3_memory_used(), no soft heap limit).
 * Single-thread mode: every mutex is compiled out at run time. Only a
 * process that uses the store from one thread may have it; one that
 * starts threads with connections of their own (hutch mcp's kernel
 * calls) calls store_library_threads() first, which initialises SQLite
 * multi-threaded, so this is then refused. */
static void configure_library(void)
{
        (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        (void)sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
}

int store_library_threads(void)
{
        (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        /* connections are never shared between threads (NOMUTEX), but
         * SQLite's own process-wide state is: the list of open files and
         * their POSIX locks, which two threads opening or closing a
         * connection at once would corrupt without its mutexes */
        if (sqlite3_config(SQLITE_CONFIG_MULTITHREAD) != SQLITE_OK || sqlite3_initialize() != SQLITE_OK)
                return -EBUSY;
        return 0;
}

static int open_connection(struct store *s, const char *name, int flags)
{
        configure_library();
        int rc = sqlite3_open_v2(name, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK)
                return s->db ? store_fail(s, rc) : store_fail_msg(s, -ENOMEM, "out of memory");
        sqlite3_extended_result_codes(s->db, 0);
        store_set_busy_timeout(s, STORE_BUSY_TIMEOUT_MS);
        return 0;
}

int store_open(const char *path, struct store **ret, char **ret_error)
{
        struct store *s;
        _cleanup_free_ char *copy = xstrdup(path);
        const char *dir = dirname(copy);
        bool unclean = false;
        int r;

        /* The directory is there but for the first run: one mkdir says
         * so, where mkdir_p() tries every parent. */
        r = mkdir(dir, 0700) == 0 || errno == EEXIST ? 0 : mkdir_p(dir, 0700);
        if (r < 0) {
                if (ret_error)
                        *ret_error = xasprintf("%s: cannot create directory %s: %s",
                                               path, dir, strerror(-r));
                return r;
        }

        s = xcalloc(1, sizeof(*s));
        s->open_fd = -1;
        s->path = xstrdup(path);
        r = check_state_dir(s, path);
        if (r < 0)
                goto fail;
        r = store_check_not_lost(s);
        if (r < 0)
                goto fail;
        private_files(path);
        s->wal_created = !store_wal_exists(path);     /* by this connection, then */
        store_mark_open(s, &unclean);
        r = open_connection(s, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        if (r < 0)
                goto fail;
        /* Every hutch run opens and closes the store, and is usually its last
         * connection: by default SQLite would then checkpoint and delete
         * the WAL on close and create it again on the next open, three
         * disk syncs per run. Keep the WAL and leave checkpoints to the
         * automatic ones (see configure()), which amortise the syncs over
         * many runs. Committed rows are in the WAL either way; with
         * synchronous=NORMAL they survive any crash of hutch, and only an OS
         * crash or power loss can lose the last few; the commits that must
         * survive that too (a run's final update, its files) are synced
         * (store_durable_begin()). */
        int on = 1;
        (void)sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);

        r = configure(s);
        if (r < 0)
                goto fail;
        if (unclean) {
                _cleanup_free_ char *problem = NULL;
                r = store_quick_check(s, &problem);
                if (r == -EBADMSG) {
                        _cleanup_free_ char *msg = xasprintf(
                                "the database is damaged (quick_check: %s); hutch will not write into it: "
                                "save what can be read (sqlite3 %s .recover) and move it away",
                                problem, path);
                        r = store_fail_msg(s, -EBADMSG, msg);
                }
                if (r < 0)
                        goto fail;
        }
        r = migrate(s);
        if (r < 0)
                goto fail;
        store_ensure_reserve(path);

        *ret = s;
        return 0;
fail:
        if (ret_error)
                *ret_error = xstrdup(s->error ? s->error : path);
        /* a store we refused is no cleaner than we found it */
        if (s->open_fd >= 0)
                close(s->open_fd);
        s->open_fd = -1;
        store_close(s);
        return r;
}

/* "file:" URI of path with immutable=1: the characters a URI gives a
 * meaning to are escaped. */
static char *immutable_uri(const char *path)
{
        size_t cap = strlen(path) * 3 + 32, n = 0;
        char *uri = xmalloc(cap);

        n += (size_t)snprintf(uri, cap, "file:");
        for (const char *p = path; *p; p++) {
                unsigned char c = (unsigned char)*p;
                if (c == '%' || c == '?' || c == '#' || c < 0x21 || c >= 0x7f)
                        n += (size_t)snprintf(uri + n, cap - n, "%%%02X", c);
                else
                        uri[n++] = (char)c;
        }
        snprintf(uri + n, cap - n, "?immutable=1");
        return uri;
}

int store_open_readonly(const char *path, struct store **ret, char **ret_error)
{
        struct store *s = xcalloc(1, sizeof(*s));
        int version, r;

        s->open_fd = -1;
        s->readonly = true;
        s->path = xstrdup(path);
        if (access(path, F_OK) < 0) {
                r = store_fail_msg(s, -errno, strerror(errno));
                goto fail;
        }
        /* a reader trusts what it reads (apply installs it): the same check */
        r = check_state_dir(s, path);
        if (r < 0)
                goto fail;
        r = store_check_not_lost(s);
        if (r < 0)
                goto fail;
        r = open_connection(s, path, SQLITE_OPEN_READONLY);
        if (r == 0)
                r = read_user_version(s, &version);
        if (r == -EACCES || r == -EROFS) {
                /* A WAL database needs its -shm (and a -wal) to be read,
                 * and a reader cannot make them in a directory it may not
                 * write. Nobody else can write there either, so the file
                 * cannot change under us: read it as immutable. */
                _cleanup_free_ char *uri = immutable_uri(path);
                sqlite3_close_v2(s->db);
                s->db = NULL;
                r = open_connection(s, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
                if (r == 0)
                        r = read_user_version(s, &version);
        }
        if (r == 0)
                r = check_version(s, version);
        if (r == 0 && version < store_current_schema_version()) {
                /* an older schema is upgraded by the first writer; a
                 * reader that comes first does it, if it may write */
                _cleanup_free_ char *error = NULL;
                r = store_open(path, ret, &error);
                if (r < 0) {
                        _cleanup_free_ char *msg = xasprintf(
                                "schema version %d is older than this hutch's (%d) and cannot be upgraded: %s",
                                version, store_current_schema_version(), error ? error : strerror(-r));
                        r = store_fail_msg(s, r, msg);
                        goto fail;
                }
                store_close(s);
                return 0;
        }
        if (r == 0) {
                /* a reader cannot stamp; a matching stamp spares it the check */
                int v, cookie, stamp;
                r = store_read_header(s, &v, &cookie, &stamp);
                if (r == 0 && !store_stamp_matches(cookie, stamp))
                        r = check_schema(s, version);
        }
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
        store_set_busy_timeout(s, 0);
        store_sync_marker(s);         /* the checkpoint syncs the database */
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
        store_set_busy_timeout(s, STORE_BUSY_TIMEOUT_MS);
}

struct store *store_close(struct store *s)
{
        if (!s)
                return NULL;
        sqlite3_finalize(s->finish_st);
        sqlite3_close_v2(s->db);
        store_mark_closed(s);
        free(s->path);
        free(s->error);
        free(s);
        return NULL;
}
