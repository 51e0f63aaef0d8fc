/* store-connections.c - the queries on the `connections` table (see
 * store.h): the egress decisions of a run (and a live sandbox's
 * published ports' connections), written at its end (a live sandbox's
 * in batches as they end, run/live-conns.c, each added after the rows
 * before it) and read back by `show` and `--json`. Their rows go with their run
 * (store_delete_older_than(), store-runs.c).
 *
 * The values come from the egress helper, which took them from the job
 * (names it sent, SNI, Host): they are stored as text, bound as
 * parameters, and shown through the sanitiser like captured output.
 */
#include "config.h"

#include <sqlite3.h>
#include <string.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

/* column, JSON field, integer? */
static const struct {
        const char *column, *field;
        bool integer;
} cols[] = {
        { "time", "time_ms", true },     { "proto", "proto", false },
        { "pid", "pid", true },          { "dest", "dest", false },
        { "sni", "sni", false },         { "host", "host", false },
        { "name", "name", false },       { "resolved", "resolved", false },
        { "decision", "decision", false },{ "rule", "rule", false },
        { "reason", "reason", false },   { "bytes_out", "bytes_out", true },
        { "bytes_in", "bytes_in", true },{ "duration_ms", "duration_ms", true },
        { "end_reason", "end", false },  { "dropped", "dropped", true },
};

int store_connections_add(struct store *s, const char *run_id, json_t *connections)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *names = NULL, *params = NULL, *sql = NULL;
        size_t i;
        json_t *o;
        int r, rc;

        if (json_array_size(connections) == 0)
                return 0;
        names = xstrdup("run_id, seq");
        params = xstrdup("?1, ?2");
        for (size_t c = 0; c < ELEMENTSOF(cols); c++) {
                char *n = xasprintf("%s, %s", names, cols[c].column);
                char *p = xasprintf("%s, ?%zu", params, c + 3);
                free(names);
                free(params);
                names = n;
                params = p;
        }
        sql = xasprintf("INSERT OR REPLACE INTO connections (%s) VALUES (%s)", names, params);
        r = store_begin_write(s);
        if (r < 0)
                return r;
        /* after the rows the run has already: a live sandbox adds its
         * published ports' connections and its egress ones apart */
        sqlite3_int64 base = 0;
        r = store_prepare(s, "SELECT COALESCE(MAX(seq) + 1, 0) FROM connections WHERE run_id = ?1", &st);
        if (r < 0)
                goto out;
        store_bind_text(st, 1, run_id);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                r = store_fail(s, rc);
                goto out;
        }
        base = sqlite3_column_int64(st, 0);
        sqlite3_finalize(TAKE_PTR(st));
        r = store_prepare(s, sql, &st);
        if (r < 0)
                goto out;
        json_array_foreach(connections, i, o) {
                sqlite3_reset(st);
                store_bind_text(st, 1, run_id);
                sqlite3_bind_int64(st, 2, base + (sqlite3_int64)i);
                for (size_t c = 0; c < ELEMENTSOF(cols); c++) {
                        json_t *v = json_object_get(o, cols[c].field);
                        if (cols[c].integer && json_is_integer(v))
                                sqlite3_bind_int64(st, (int)c + 3, (sqlite3_int64)json_integer_value(v));
                        else if (!cols[c].integer && json_is_string(v))
                                store_bind_text(st, (int)c + 3, json_string_value(v));
                        else
                                sqlite3_bind_null(st, (int)c + 3);
                }
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

json_t *store_connections_json(struct store *s, const char *run_id)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *names = xstrdup("seq");
        json_t *arr = json_array();

        for (size_t c = 0; c < ELEMENTSOF(cols); c++) {
                char *n = xasprintf("%s, %s", names, cols[c].column);
                free(names);
                names = n;
        }
        _cleanup_free_ char *sql = xasprintf("SELECT %s FROM connections WHERE run_id = ?1 ORDER BY seq", names);
        if (store_prepare(s, sql, &st) < 0)
                return arr;
        store_bind_text(st, 1, run_id);
        while (sqlite3_step(st) == SQLITE_ROW) {
                json_t *o = json_object();
                for (size_t c = 0; c < ELEMENTSOF(cols); c++) {
                        int col = (int)c + 1;
                        json_t *v;
                        if (sqlite3_column_type(st, col) == SQLITE_NULL)
                                v = json_null();
                        else if (cols[c].integer)
                                v = json_integer((json_int_t)sqlite3_column_int64(st, col));
                        else
                                v = json_string((const char *)sqlite3_column_text(st, col));
                        /* a job's bytes that are no valid UTF-8 make no
                         * JSON string: show them as null, never break the object */
                        json_object_set_new(o, cols[c].field, v ? v : json_null());
                }
                json_array_append_new(arr, o);
        }
        return arr;
}
