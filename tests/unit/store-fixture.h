/* store-fixture.h - a store in a fresh temporary directory, for the
 * store's unit tests: the fixture, its setup and teardown, opening the
 * store, and SQL run behind hutch's back on a second connection.
 * Header-only, for the test programs alone. */
#pragma once

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "record/store.h"
#include "lib/util.h"

struct fixture {
        char dir[64];
        char *path;             /* dir/hutch.db, not there yet */
};

static inline int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-store-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        f->path = xasprintf("%s/hutch.db", f->dir);
        *state = f;
        return 0;
}

/* also where a test took write permission away */
static inline int teardown(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *cmd = xasprintf("chmod -R u+w '%s'; rm -rf '%s'", f->dir, f->dir);
        if (system(cmd) != 0)
                return -1;
        free(f->path);
        free(f);
        return 0;
}

static inline struct store *open_ok(const char *path)
{
        struct store *s = NULL;
        _cleanup_free_ char *error = NULL;
        if (store_open(path, &s, &error) < 0)
                fail_msg("store_open: %s", error);
        return s;
}

static inline void raw_sql(const char *path, const char *sql)
{
        sqlite3 *db;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
        sqlite3_close(db);
}
