/* store-internal.h - internal to the store: only src/record/store*.c
 * include it. The store's code is split by concern (connection and
 * schema, plumbing, records, queries); this is what those files share:
 * the connection struct and the SQLite plumbing of store-sql.c.
 */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

struct store {
        sqlite3 *db;
        char *path;
        char *error;
        int wal_frames;         /* after our last commit, once checkpoints are deferred */
        int open_fd;            /* PATH-open, flock'ed while we use the store (see
                                 * store-durable.c); -1 for read-only connections */
        bool readonly;          /* opened with store_open_readonly() */
        bool batch;             /* in store_batch_begin() .. store_batch_end() */
        bool batch_failed;      /* a write of the batch failed: it is rolled back */
        int busy_timeout_ms;    /* how long a write waits for the lock; 0: not at all */
        uint64_t busy_since_ms; /* when the current wait for it began */
        sqlite3_stmt *finish_st;/* store_run_prepare_finish()'s, until used */
        bool marker_unsynced;   /* PATH-open says '1', maybe only in the page cache */
        bool marker_created;    /* ... and its directory entry is new */
        bool marker_unflushed;  /* '1' written to the device, durable at its next
                                 * flush (store-durable.c, flush_covers_marker()) */
        bool wal_created;       /* PATH-wal was missing at open: its entry is new */
};

/* ---- store-durable.c ---------------------------------------------------- */

/* Refuse (-ENODATA, with the message for store_error()) a missing or
 * empty database at s->path whose history (a WAL with content, blobs)
 * remains; 0 otherwise. */
int store_check_not_lost(struct store *s);
/* Take the clean-shutdown marker PATH-open (sets s->open_fd, -1 when it
 * cannot be opened) and say whether the last writer died with the store
 * open (*ret_unclean). Returns 0. */
int store_mark_open(struct store *s, bool *ret_unclean);
/* Write the marker's '0' when last out, unlock and close it. */
void store_mark_closed(struct store *s);
/* Does PATH-wal exist? */
bool store_wal_exists(const char *path);
/* Make PATH-reserve if it is missing (best effort). */
void store_ensure_reserve(const char *path);

/* Make a commit durable: call store_durable_begin() before it and
 * store_durable_end(s, r) with its result r after it; that returns r,
 * or -errno when the sync failed. The store runs synchronous = NORMAL:
 * a commit survives any crash of hutch, and only an OS crash or power
 * loss can take back what was not synced yet. begin syncs the
 * clean-shutdown marker's '1' (store_mark_open()), or on ext4 and XFS
 * writes it to the device for end's flush to make durable
 * (flush_covers_marker()), so a database that holds a synced change of
 * ours never sits beside a marker that says it was closed cleanly; end
 * syncs the WAL (with the directory when this connection created it),
 * which holds the commit and every one before it. */
void store_durable_begin(struct store *s);
int store_durable_end(struct store *s, int r);
/* What store_durable_begin() does, early: store_run_prepare_finish()
 * calls it while the job runs, so the sync overlaps with the job. */
void store_sync_marker(struct store *s);

/* ---- store-migrations.c ------------------------------------------------- */

/* The SQL that takes a database from schema version to version + 1, or
 * NULL when version is not below store_current_schema_version(). */
const char *store_migration(int version);

/* ---- store-sql.c -------------------------------------------------------- */

/* Remember sqlite's message for rc and return rc as -errno. */
int store_fail(struct store *s, int rc);
/* Remember msg as the message for store_error() and return error. */
int store_fail_msg(struct store *s, int error, const char *msg);
int store_exec(struct store *s, const char *sql);
/* How long a statement waits for a lock another connection holds
 * before it fails with SQLITE_BUSY; 0: it fails at once. */
void store_set_busy_timeout(struct store *s, int ms);
int store_prepare(struct store *s, const char *sql, sqlite3_stmt **ret);
void store_finalizep(sqlite3_stmt **st);
#define _cleanup_stmt_ _cleanup_(store_finalizep)

/* BEGIN IMMEDIATE: the write lock up front. Inside a batch
 * (store_batch_begin()) the batch's transaction is already open: nothing
 * to do, or the error that failed the batch. */
int store_begin_write(struct store *s);
/* Commit, or roll back if the commit fails; inside a batch, nothing
 * (store_batch_end() commits). */
int store_commit(struct store *s);
/* Roll back the open transaction, if any; inside a batch, mark the
 * batch failed instead (store_batch_end() rolls all of it back). */
void store_rollback(struct store *s);

/* Record how far recording run run_id's files got (error NULL: all that
 * the caps allowed; unlisted: changes and artifacts skipped without a
 * row of their own), replacing an earlier summary, inside a transaction
 * the caller holds (store-files.c): 0 or the store's error. */
int store_files_summary_write(struct store *s, const char *run_id, const char *error, uint64_t unlisted,
                              int committed);

/* The one row sql (a SELECT with ?1 = key) finds: 0 with *ret on it,
 * -ENOENT when there is none, else the store's error. */
int store_select_one(struct store *s, const char *sql, const char *key, sqlite3_stmt **ret);

/* NULL binds NULL. */
void store_bind_text(sqlite3_stmt *st, int i, const char *v);
/* RUN_UNSET binds NULL. */
void store_bind_u64(sqlite3_stmt *st, int i, uint64_t v);
/* A copy of column i (NULL for NULL). */
char *store_column_text(sqlite3_stmt *st, int i);
/* Column i, RUN_UNSET for NULL. */
uint64_t store_column_u64(sqlite3_stmt *st, int i);

/* One-statement write transactions: see store-sql.c. */
int store_begin_statement(struct store *s, const char *sql, sqlite3_stmt **ret);
int store_finish_update(struct store *s, sqlite3_stmt *st, bool must_change);

/* ---- store-stamp.c ------------------------------------------------------ */

/* user_version, the schema cookie (PRAGMA schema_version) and
 * application_id, where the stamp lives. */
int store_read_header(struct store *s, int *ret_version, int *ret_cookie, int *ret_stamp);
/* Whether stamp says the schema with this cookie passed check_schema(). */
bool store_stamp_matches(int cookie, int stamp);
/* Stamp the schema as it is now: inside the caller's write transaction,
 * or in one of its own without waiting for the lock (best effort: the
 * next open checks again); busy_timeout_ms is put back after. */
void store_stamp_schema(struct store *s, bool in_transaction, int busy_timeout_ms);

/* ---- store-record.c ----------------------------------------------------- */

/* argv as JSON array text for the argv column, and back (NULL for text
 * that is not an array). */
char *store_argv_to_text(char *const *argv);
char **store_argv_from_text(const char *text);

/* Rows of (name, count) as "NAME=COUNT" strings, f's since and label
 * bound in that order where sql has them (store-stats.c). */
struct store_filter;
int store_count_rows(struct store *s, const char *sql, const struct store_filter *f, char ***ret);
