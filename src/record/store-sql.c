/* store-sql.c - the SQLite plumbing the store's files share (declared
 * in store-internal.h): sqlite result codes as -errno with a message for
 * store_error(), write transactions, binding and reading columns.
 *
 * Many hutch processes write at once, so every write takes the write lock
 * up front with BEGIN IMMEDIATE: in WAL mode a deferred transaction that
 * later wants to write can fail at once with SQLITE_BUSY, without waiting.
 */
#include "config.h"

#include <sqlite3.h>

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

int store_begin_write(struct store *s)
{
        return store_exec(s, "BEGIN IMMEDIATE");
}

int store_commit(struct store *s)
{
        int r = store_exec(s, "COMMIT");
        if (r < 0)
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

void store_rollback(struct store *s)
{
        if (!sqlite3_get_autocommit(s->db))
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
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
