/* store-stats.c - the one aggregate `hutch stats` cannot get from the
 * listed rows: runs per language (the lang column is not part of a
 * listing, which leaves out the code it goes with). See store.h.
 */
#include "config.h"

#include <sqlite3.h>
#include <string.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

/* Run sql (a SELECT of a name and a count, with one "?" for f's
 * since_ms when the caller put " AND <started> >= ?" in it and two for
 * f's label key and value when it put the label's IN clause after that)
 * and give its rows as "NAME=COUNT" strings. */
int store_count_rows(struct store *s, const char *sql, const struct store_filter *f, char ***ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_ char **v = NULL;
        int r, rc, arg = 1;

        r = store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        if (f->since_ms > 0)
                store_bind_u64(st, arg++, f->since_ms);
        if (f->label) {
                const char *eq = strchr(f->label, '=');
                _cleanup_free_ char *key = xasprintf("%.*s", eq ? (int)(eq - f->label) : (int)strlen(f->label),
                                                     f->label);
                store_bind_text(st, arg++, key);
                store_bind_text(st, arg++, eq ? eq + 1 : "");
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                _cleanup_free_ char *kv = xasprintf("%s=%lld", (const char *)sqlite3_column_text(st, 0),
                                                    (long long)sqlite3_column_int64(st, 1));
                v = strv_append(v, kv);
        }
        if (rc != SQLITE_DONE)
                return store_fail(s, rc);
        *ret = TAKE_PTR(v);
        return 0;
}

int store_lang_counts(struct store *s, const struct store_filter *f, char ***ret)
{
        _cleanup_free_ char *sql = NULL;

        sql = xasprintf("SELECT lang, count(*) FROM runs WHERE lang IS NOT NULL%s%s "
                        "GROUP BY lang ORDER BY count(*) DESC, lang",
                        f->since_ms > 0 ? " AND started_at >= ?" : "",
                        f->label ? " AND id IN (SELECT run_id FROM run_labels WHERE key = ? AND value = ?)" : "");
        return store_count_rows(s, sql, f, ret);
}
