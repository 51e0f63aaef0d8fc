/* store-labels.c - the queries on the `run_labels` table (see store.h):
 * the KEY=VALUE labels a run was started with (`--label`), written once
 * right after its row and read back by show, ls, ps and stats. Rows go
 * with their run (store_delete_older_than(), store-runs.c).
 *
 * Shape: a handful of short labels per run at most; the (key, value)
 * index serves `ls --label K=V` and `stats --label K=V`.
 */
#include "config.h"

#include <sqlite3.h>
#include <string.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

int store_labels_set(struct store *s, const char *run_id, char *const *labels)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        if (!labels || !labels[0])
                return 0;
        r = store_begin_write(s);
        if (r < 0)
                return r;
        r = store_prepare(s, "INSERT OR REPLACE INTO run_labels (run_id, key, value) VALUES (?1, ?2, ?3)", &st);
        if (r < 0)
                goto out;
        for (char *const *l = labels; *l; l++) {
                const char *eq = strchr(*l, '=');
                _cleanup_free_ char *key = eq ? xasprintf("%.*s", (int)(eq - *l), *l) : xstrdup(*l);
                sqlite3_reset(st);
                store_bind_text(st, 1, run_id);
                store_bind_text(st, 2, key);
                store_bind_text(st, 3, eq ? eq + 1 : "");
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE) {
                        r = store_fail(s, rc);
                        goto out;
                }
        }
        sqlite3_finalize(TAKE_PTR(st));
        return store_commit(s);
out:
        store_rollback(s);
        return r;
}

int store_labels_get(struct store *s, const char *run_id, char ***ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_ char **v = NULL;
        int r, rc;

        r = store_prepare(s, "SELECT key, value FROM run_labels WHERE run_id = ?1 ORDER BY key", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, run_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                _cleanup_free_ char *kv = xasprintf("%s=%s", (const char *)sqlite3_column_text(st, 0),
                                                    (const char *)sqlite3_column_text(st, 1));
                v = strv_append(v, kv);
        }
        if (rc != SQLITE_DONE)
                return store_fail(s, rc);
        *ret = TAKE_PTR(v);
        return 0;
}

json_t *store_labels_json(struct store *s, const char *run_id)
{
        _cleanup_strv_ char **v = NULL;
        json_t *o = json_object();

        if (store_labels_get(s, run_id, &v) < 0)
                return o;
        for (char **l = v; l && *l; l++) {
                char *eq = strchr(*l, '=');
                *eq = '\0';
                json_t *val = json_string(eq + 1);
                if (val)
                        json_object_set_new(o, *l, val);
        }
        return o;
}
