/* store-import.c - where runs came from, and merging other stores' runs
 * into this one (see exchange.h): the run_origin table, the export form
 * of a run, and the import transaction.
 *
 * Shape: run_origin has a row only for imported runs (a node name and
 * the time of the import); a run without one ran on this host. An
 * import writes each of its records as a runs row, its labels and its
 * origin, all in one write transaction, so that a file that fails half
 * way (a bad line, a conflict, a full disk) leaves no record of it
 * behind.
 *
 * Idempotency: a record whose id is stored already is compared field by
 * field with the export form of the stored run, both made by
 * exchange_json() from records, so the comparison does not depend on
 * how the line spelled its JSON. Equal: nothing to do. Different: a
 * conflict, refused with the first field that differs.
 */
#include "config.h"

#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#include "lib/digest.h"
#include "lib/util.h"
#include "record/exchange.h"
#include "record/store-internal.h"

const char *exchange_local_node(char *buf, size_t len)
{
        char name[EXCHANGE_MAX_NODE + 1] = "";

        if (gethostname(name, sizeof(name) - 1) < 0 || !exchange_node_valid(name))
                snprintf(name, sizeof(name), "localhost");
        snprintf(buf, len, "%s", name);
        return buf;
}

bool exchange_node_valid(const char *name)
{
        size_t n = strlen(name);
        return n > 0 && n <= EXCHANGE_MAX_NODE &&
               strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == n;
}

json_t *exchange_json(const struct run_record *rec, bool with_output, json_t *labels, const char *node,
                      bool imported)
{
        json_t *o = run_record_to_json(rec, with_output);
        json_object_set_new(o, "labels", labels ? json_deep_copy(labels) : json_object());
        json_object_set_new(o, "node", json_string(node));
        json_object_set_new(o, "imported", json_boolean(imported));
        return o;
}

int store_origin_get(struct store *s, const char *run_id, char **ret_node, uint64_t *ret_imported_at)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_select_one(s, "SELECT node, imported_at FROM run_origin WHERE run_id = ?1", run_id, &st);
        if (r < 0)
                return r;
        if (ret_node)
                *ret_node = store_column_text(st, 0);
        if (ret_imported_at)
                *ret_imported_at = store_column_u64(st, 1);
        return 0;
}

void store_origin_json(struct store *s, const char *run_id, const char *local_node, json_t *o)
{
        _cleanup_free_ char *node = NULL;
        bool imported = s && store_origin_get(s, run_id, &node, NULL) == 0;

        json_object_set_new(o, "node", json_string(imported && node ? node : local_node));
        json_object_set_new(o, "imported", json_boolean(imported));
}

json_t *exchange_store_json(struct store *s, const struct run_record *rec, bool with_output,
                            const char *local_node)
{
        _cleanup_strv_ char **labels = NULL;
        _cleanup_free_ char *node = NULL;

        if (store_labels_get(s, rec->id, &labels) < 0)
                return NULL;
        int r = store_origin_get(s, rec->id, &node, NULL);
        if (r < 0 && r != -ENOENT)
                return NULL;
        json_t *lab = json_object();
        for (char **l = labels; l && *l; l++) {
                char *eq = strchr(*l, '=');
                *eq = '\0';
                json_object_set_new(lab, *l, json_string(eq + 1));
        }
        json_t *o = exchange_json(rec, with_output, lab, r == 0 ? node : local_node, r == 0);
        json_decref(lab);
        return o;
}

int store_import_begin(struct store *s)
{
        return store_begin_write(s);
}

int store_import_commit(struct store *s)
{
        return store_commit(s);
}

void store_import_abort(struct store *s)
{
        store_rollback(s);
}

static json_t *labels_object(char *const *labels)
{
        json_t *o = json_object();
        for (char *const *l = labels; l && *l; l++) {
                const char *eq = strchr(*l, '=');
                _cleanup_free_ char *key = xasprintf("%.*s", (int)(eq - *l), *l);
                json_object_set_new(o, key, json_string(eq + 1));
        }
        return o;
}

/* The first field in which the incoming record and the stored run
 * differ, or NULL. Not compared: "imported" (this store's own mark) and
 * "idempotency_key" (not imported, see exchange-parse.c); the output
 * only when both sides have it; job_exit_code only when the incoming
 * record knows it. */
static char *first_difference(json_t *incoming, json_t *stored, bool stored_has_output)
{
        const char *k;
        json_t *v;

        json_object_foreach(incoming, k, v) {
                if (streq(k, "imported") || streq(k, "idempotency_key"))
                        continue;
                /* null: not known to the exporter (a hutch before the
                 * field), which does not contradict a code we have */
                if (streq(k, "job_exit_code") && json_is_null(v))
                        continue;
                if (!stored_has_output && (streq(k, "stdout") || streq(k, "stderr") || streq(k, "code")))
                        continue;
                if (!json_equal(v, json_object_get(stored, k)))
                        return xstrdup(k);
        }
        return NULL;
}

static int insert_run(struct store *s, const struct run_record *rec)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *argv = store_argv_to_text(rec->argv);
        char out_hex[DIGEST_HEX_SIZE], err_hex[DIGEST_HEX_SIZE];
        int r, rc, i = 1;

        r = store_prepare(s,
                "INSERT INTO runs (id, argv, cwd, profile, status, exit_code, signal, message, "
                "started_at, finished_at, duration_ms, cpu_user_ms, cpu_sys_ms, peak_memory_bytes, "
                "stdout_bytes, stderr_bytes, stdout_lines, stderr_lines, stdout_truncated, "
                "stderr_truncated, limits, enforcement, heartbeat_at, session, rerun_of, "
                "profile_sha256, stdout, stderr, lang, code, output_lost, stdout_sha256, stderr_sha256, "
                "job_exit_code) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
                "?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34)", &st);
        if (r < 0)
                return r;
        store_bind_text(st, i++, rec->id);
        store_bind_text(st, i++, argv);
        store_bind_text(st, i++, rec->cwd);
        store_bind_text(st, i++, rec->profile);
        store_bind_text(st, i++, run_status_to_string(rec->status));
        if (rec->exit_code >= 0)
                sqlite3_bind_int(st, i++, rec->exit_code);
        else
                sqlite3_bind_null(st, i++);
        if (rec->signal > 0)
                sqlite3_bind_int(st, i++, rec->signal);
        else
                sqlite3_bind_null(st, i++);
        store_bind_text(st, i++, rec->message);
        store_bind_u64(st, i++, rec->started_at_ms);
        store_bind_u64(st, i++, rec->finished_at_ms);
        store_bind_u64(st, i++, rec->duration_ms);
        store_bind_u64(st, i++, rec->cpu_user_ms);
        store_bind_u64(st, i++, rec->cpu_sys_ms);
        store_bind_u64(st, i++, rec->peak_memory_bytes);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)rec->out.total_bytes);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)rec->err.total_bytes);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)rec->out.lines);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)rec->err.lines);
        sqlite3_bind_int(st, i++, rec->out.truncated);
        sqlite3_bind_int(st, i++, rec->err.truncated);
        store_bind_text(st, i++, rec->limits_json);
        store_bind_text(st, i++, rec->enforcement_json);
        store_bind_u64(st, i++, rec->heartbeat_at_ms);
        store_bind_text(st, i++, rec->session);
        store_bind_text(st, i++, rec->rerun_of);
        store_bind_text(st, i++, rec->profile_sha256);
        for (const struct run_output *o = &rec->out;; o = &rec->err) {
                if (o->data)
                        sqlite3_bind_blob64(st, i++, o->data, o->len, SQLITE_TRANSIENT);
                else
                        sqlite3_bind_null(st, i++);
                if (o == &rec->err)
                        break;
        }
        store_bind_text(st, i++, rec->lang);
        if (rec->code)
                sqlite3_bind_blob64(st, i++, rec->code, rec->code_len, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, i++);
        store_bind_text(st, i++, rec->output_lost);
        if (rec->out.data)
                digest_buffer(rec->out.data, rec->out.len, out_hex);
        if (rec->err.data)
                digest_buffer(rec->err.data, rec->err.len, err_hex);
        store_bind_text(st, i++, rec->out.data ? out_hex : NULL);
        store_bind_text(st, i++, rec->err.data ? err_hex : NULL);
        if (rec->job_exit_code >= 0)
                sqlite3_bind_int(st, i++, rec->job_exit_code);
        else
                sqlite3_bind_null(st, i++);
        rc = sqlite3_step(st);
        return rc == SQLITE_DONE ? 0 : store_fail(s, rc);
}

static int insert_rest(struct store *s, const struct exchange_record *x, uint64_t now_ms)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = store_prepare(s, "INSERT INTO run_labels (run_id, key, value) VALUES (?1, ?2, ?3)", &st);
        if (r < 0)
                return r;
        for (char **l = x->labels; l && *l; l++) {
                const char *eq = strchr(*l, '=');
                sqlite3_reset(st);
                store_bind_text(st, 1, x->rec->id);
                sqlite3_bind_text(st, 2, *l, (int)(eq - *l), SQLITE_TRANSIENT);
                store_bind_text(st, 3, eq + 1);
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE)
                        return store_fail(s, rc);
        }
        sqlite3_finalize(TAKE_PTR(st));
        r = store_prepare(s, "INSERT INTO run_origin (run_id, node, imported_at) VALUES (?1, ?2, ?3)", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, x->rec->id);
        store_bind_text(st, 2, x->node);
        store_bind_u64(st, 3, now_ms);
        rc = sqlite3_step(st);
        return rc == SQLITE_DONE ? 0 : store_fail(s, rc);
}

int store_import_check(struct store *s, const struct exchange_record *x, const char *local_node,
                       char **ret_conflict)
{
        _cleanup_run_record_ struct run_record *stored = NULL;
        int r = store_run_get(s, x->rec->id, &stored, NULL);

        if (r == -ENOENT)
                return 1;
        if (r < 0)
                return r;
        json_t *mine = exchange_store_json(s, stored, x->with_output, local_node);
        if (!mine)
                return -EIO;
        json_t *labels = labels_object(x->labels);
        json_t *theirs = exchange_json(x->rec, x->with_output, labels, x->node, false);
        char *diff = first_difference(theirs, mine, stored->out.data || stored->err.data);
        json_decref(labels);
        json_decref(theirs);
        json_decref(mine);
        if (!diff)
                return 0;
        *ret_conflict = diff;
        return -EEXIST;
}

int store_import_add(struct store *s, const struct exchange_record *x, const char *local_node,
                     uint64_t now_ms, char **ret_conflict)
{
        int r = store_import_check(s, x, local_node, ret_conflict);

        if (r <= 0)
                return r;
        r = insert_run(s, x->rec);
        if (r == 0)
                r = insert_rest(s, x, now_ms);
        return r < 0 ? r : 1;
}
