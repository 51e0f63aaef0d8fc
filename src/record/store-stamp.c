/* store-stamp.c - the schema check's stamp (see store-internal.h).
 *
 * check_schema() (store.c) prepares a statement per table (about
 * 600,000 instructions, a sixth of a run's supervisor), so it is not
 * repeated while nothing has changed the schema since it last passed: after a pass, application_id is set to schema_stamp() of the
 * database's schema cookie (PRAGMA schema_version), and an open that
 * finds the current user_version and a matching stamp skips it.
 * Why that is as strong as checking every time: the check exists for a
 * schema changed behind hutch's back (a column dropped or a table made
 * again by hand, an older tool, a restored copy). Every schema change
 * SQLite makes (CREATE, DROP, ALTER, VACUUM) increments the cookie, and
 * the cookie and the stamp live in the same database header, so any such
 * change, a damaged header or another file copied in place shows a
 * stamp that does not match and gets the full check again. Writing
 * user_version or application_id leaves the cookie as it is. Only a
 * deliberate forgery (PRAGMA writable_schema edits, or setting
 * schema_version by hand, which SQLite documents as corrupting) could
 * keep a stale stamp, and a job never reaches the store: it is the
 * user's own file in the user's state dir. The magic keeps a stamp
 * apart from application ids other programs use. */
#include "config.h"

#include <sqlite3.h>
#include <stdio.h>

#include "record/store-internal.h"
#include "lib/util.h"

#define SCHEMA_STAMP_MAGIC 0x68757463u  /* "hutc" */

static int schema_stamp(int cookie)
{
        return (int)(SCHEMA_STAMP_MAGIC ^ (unsigned)cookie);
}

bool store_stamp_matches(int cookie, int stamp)
{
        return stamp == schema_stamp(cookie);
}

/* One integer PRAGMA (three of these cost a tenth of one join of their
 * table-valued forms: 24,000 instructions against 228,000). */
static int read_pragma_int(struct store *s, const char *sql, int *ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return store_fail(s, rc);
        *ret = sqlite3_column_int(st, 0);
        return 0;
}

int store_read_header(struct store *s, int *ret_version, int *ret_cookie, int *ret_stamp)
{
        int r = read_pragma_int(s, "PRAGMA user_version", ret_version);
        if (r == 0)
                r = read_pragma_int(s, "PRAGMA schema_version", ret_cookie);
        if (r == 0)
                r = read_pragma_int(s, "PRAGMA application_id", ret_stamp);
        return r;
}

void store_stamp_schema(struct store *s, bool in_transaction, int busy_timeout_ms)
{
        int version, cookie, stamp;
        if (store_read_header(s, &version, &cookie, &stamp) < 0 || stamp == schema_stamp(cookie))
                return;
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA application_id = %d", schema_stamp(cookie));
        if (in_transaction) {
                (void)store_exec(s, sql);
                return;
        }
        /* never wait for the write lock here: a run is starting */
        store_set_busy_timeout(s, 0);
        (void)store_exec(s, sql);
        store_set_busy_timeout(s, busy_timeout_ms);
}
