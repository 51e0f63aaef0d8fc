/* store-sql.c - the SQLite plumbing the store's files share (declared
 * in store-internal.h): sqlite result codes as -errno with a message for
 * store_error(), write transactions, binding and reading columns.
 *
 * Many hutch processes write at once, so every write takes the write lock
 * up front with BEGIN IMMEDIATE: in WAL mode a deferred transaction that
 * later wants to write can fail at once with SQLITE_BUSY, without waiting.
 *
 * A batch (store_batch_begin()) makes the writes that follow one
 * transaction: the write functions' own BEGIN and COMMIT become no-ops,
 * and a failed write marks the batch instead of rolling back, so that
 * the batch's end rolls all of it back. `hutch run` records a run's row,
 * labels and workspace this way: one lock, one commit, one set of WAL
 * frames while its sandbox is being built, and never a row without its
 * labels.
 */
#include "config.h"

#include <sqlite3.h>
#include <time.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

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

/* SQLite's own busy handler sleeps 1 ms first, then 2, 5, 10 and more.
 * A hutch run holds the write lock for about 0.1 ms, and two runs
 * started together want it at the same moment: the loser slept ten
 * times as long as it waited for, on every such start. Wait the way the
 * lock is used instead: 50 us, doubling to at most 2 ms, so a short
 * holder is followed closely and a long one (a checkpoint's syncs, a
 * `hutch gc`) is polled at about SQLite's own rate. Each try is one
 * fcntl() lock on the -shm file. */
#define BUSY_FIRST_US 50u
#define BUSY_MAX_US 2000u

static int wait_for_lock(void *userdata, int tries)
{
        struct store *s = userdata;
        uint64_t now = now_monotonic_ms();

        if (tries == 0)
                s->busy_since_ms = now;
        if (now - s->busy_since_ms >= (uint64_t)s->busy_timeout_ms)
                return 0;
        unsigned us = tries < 6 ? BUSY_FIRST_US << tries : BUSY_MAX_US;
        struct timespec ts = { 0, (long)MIN(us, BUSY_MAX_US) * 1000L };
        (void)nanosleep(&ts, NULL);
        return 1;
}

void store_set_busy_timeout(struct store *s, int ms)
{
        s->busy_timeout_ms = ms;
        sqlite3_busy_handler(s->db, ms > 0 ? wait_for_lock : NULL, s);
}

/* Remember sqlite's message for rc and return rc as -errno. */
int store_fail(struct store *s, int rc)
{
        free(s->error);
        s->error = xasprintf("%s: %s", s->path, sqlite3_errmsg(s->db));
        return errno_from_sqlite(rc) ?: -EIO;
}

int store_fail_msg(struct store *s, int error, const char *msg)
{
        free(s->error);
        s->error = xasprintf("%s: %s", s->path, msg);
        return error;
}

int store_exec(struct store *s, const char *sql)
{
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : store_fail(s, rc);
}

int store_prepare(struct store *s, const char *sql, sqlite3_stmt **ret)
{
        int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
        return rc == SQLITE_OK ? 0 : store_fail(s, rc);
}

void store_finalizep(sqlite3_stmt **st)
{
        sqlite3_finalize(*st);
}

/* Whatever a write inside a failed batch would do is rolled back with
 * it: refuse it at once, keeping the first failure's message. */
static int batch_refused(struct store *s)
{
        if (!s->error)
                store_fail_msg(s, -ECANCELED, "an earlier write of the same transaction failed");
        return -ECANCELED;
}

int store_begin_write(struct store *s)
{
        if (s->batch)
                return s->batch_failed ? batch_refused(s) : 0;
        return store_exec(s, "BEGIN IMMEDIATE");
}

int store_commit(struct store *s)
{
        if (s->batch)
                return s->batch_failed ? batch_refused(s) : 0;
        int r = store_exec(s, "COMMIT");
        if (r < 0)
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

void store_rollback(struct store *s)
{
        if (s->batch) {
                s->batch_failed = true;
                return;
        }
        if (!sqlite3_get_autocommit(s->db))
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_batch_begin(struct store *s)
{
        if (s->batch)
                return -EBUSY;
        int r = store_begin_write(s);
        if (r < 0)
                return r;
        s->batch = true;
        s->batch_failed = false;
        return 0;
}

int store_batch_end(struct store *s, bool commit)
{
        if (!s->batch)
                return 0;
        bool failed = s->batch_failed;
        s->batch = false;
        s->batch_failed = false;
        if (commit && !failed)
                return store_commit(s);
        store_rollback(s);
        return commit ? batch_refused(s) : 0;
}

int store_select_one(struct store *s, const char *sql, const char *key, sqlite3_stmt **ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, key);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return store_fail(s, rc);
        *ret = TAKE_PTR(st);
        return 0;
}

void store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
        if (v)
                sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, i);
}

void store_bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
        if (v == RUN_UNSET)
                sqlite3_bind_null(st, i);
        else
                sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

char *store_column_text(sqlite3_stmt *st, int i)
{
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? xstrdup((const char *)t) : NULL;
}

uint64_t store_column_u64(sqlite3_stmt *st, int i)
{
        if (sqlite3_column_type(st, i) == SQLITE_NULL)
                return RUN_UNSET;
        return (uint64_t)sqlite3_column_int64(st, i);
}

/* Begin a write transaction with its one statement prepared; on failure
 * nothing is left open. Pair with store_finish_update(). */
int store_begin_statement(struct store *s, const char *sql, sqlite3_stmt **ret)
{
        int r = store_begin_write(s);
        if (r < 0)
                return r;
        r = store_prepare(s, sql, ret);
        if (r < 0)
                store_rollback(s);
        return r;
}

/* Run the one write statement of a transaction begun with
 * store_begin_statement() and commit, or roll back on failure. must_change:
 * the statement must touch a row (an UPDATE of a run that does not exist is -ENOENT).
 * Takes ownership of st. */
int store_finish_update(struct store *s, sqlite3_stmt *st, bool must_change)
{
        int rc = sqlite3_step(st), r = 0;

        if (rc != SQLITE_DONE)
                r = store_fail(s, rc);
        else if (must_change && sqlite3_changes(s->db) == 0)
                r = store_fail_msg(s, -ENOENT, "no such run");
        sqlite3_finalize(st);
        if (r < 0) {
                store_rollback(s);
                return r;
        }
        return store_commit(s);
}
