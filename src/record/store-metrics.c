/* store-metrics.c - what `hutch stats --openmetrics` needs beyond the
 * listed rows: egress decisions by verdict, the values of one label over
 * the runs, and the bytes the store takes on disk. See store.h.
 */
#include "config.h"

#include <ftw.h>
#include <libgen.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

int store_decision_counts(struct store *s, const struct store_filter *f, char ***ret)
{
        _cleanup_free_ char *sql = NULL;

        sql = xasprintf("SELECT coalesce(c.decision, 'unknown'), count(*) FROM connections c "
                        "JOIN runs ON runs.id = c.run_id WHERE 1%s%s "
                        "GROUP BY 1 ORDER BY 1",
                        f->since_ms > 0 ? " AND runs.started_at >= ?" : "",
                        f->label ? " AND runs.id IN (SELECT run_id FROM run_labels WHERE key = ? AND value = ?)"
                                 : "");
        return store_count_rows(s, sql, f, ret);
}

int store_label_values(struct store *s, const char *key, json_t **ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        json_t *o;
        int r, rc;

        r = store_prepare(s, "SELECT run_id, value FROM run_labels WHERE key = ?", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, key);
        o = json_object();
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                json_t *v = json_string((const char *)sqlite3_column_text(st, 1));
                if (v)          /* only values that are valid UTF-8 */
                        json_object_set_new(o, (const char *)sqlite3_column_text(st, 0), v);
        }
        if (rc != SQLITE_DONE) {
                json_decref(o);
                return store_fail(s, rc);
        }
        *ret = o;
        return 0;
}

static uint64_t tree_bytes;

static int add_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        (void)path;
        (void)ftw;
        if (type == FTW_F && S_ISREG(st->st_mode))
                tree_bytes += (uint64_t)st->st_size;
        return 0;
}

int store_disk_bytes(struct store *s, uint64_t *ret)
{
        static const char *const suffixes[] = { "", "-wal", "-shm" };
        _cleanup_free_ char *copy = xstrdup(store_path(s));
        _cleanup_free_ char *blobs = xasprintf("%s/blobs", dirname(copy));
        uint64_t total = 0;
        struct stat st;

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *p = xasprintf("%s%s", store_path(s), suffixes[i]);
                if (stat(p, &st) == 0)
                        total += (uint64_t)st.st_size;
                else if (i == 0)
                        return -errno;
        }
        /* nftw() has no user data: one walk at a time in this process */
        tree_bytes = 0;
        if (nftw(blobs, add_file, 16, FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
                return -errno;
        *ret = total + tree_bytes;
        return 0;
}
