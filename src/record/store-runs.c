/* store-runs.c - the queries on the `runs` table (see store.h): a run's
 * insert, heartbeats and completion, lookups by id, id prefix and
 * idempotency key, listing, and what gc changes (orphans, old rows).
 *
 * Shape of the data: one row per run, written twice (inserted running
 * before the job starts, completed when it ends) with heartbeat updates in
 * between, read by the history verbs. Up to a few hundred thousand rows;
 * each carries at most 2 x 2 x capture-limit bytes of output.
 */
#include "config.h"

#include <ctype.h>
#include <sqlite3.h>
#include <string.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

#define MAX_CANDIDATES 10
#define MIN_PREFIX 4

static void bind_int_or_null(sqlite3_stmt *st, int i, int v, bool set)
{
        if (set)
                sqlite3_bind_int(st, i, v);
        else
                sqlite3_bind_null(st, i);
}

static void bind_blob(sqlite3_stmt *st, int i, const struct run_output *o)
{
        if (o->data)
                sqlite3_bind_blob64(st, i, o->data, o->len, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, i);
}

/* The columns every read selects, in this order. */
#define RUN_COLUMNS "id, argv, " RUN_COLUMNS_REST
#define RUN_COLUMNS_REST \
        "cwd, profile, status, exit_code, signal, message, "  \
        "started_at, finished_at, duration_ms, cpu_user_ms, cpu_sys_ms, " \
        "peak_memory_bytes, stdout_bytes, stderr_bytes, stdout_lines, " \
        "stderr_lines, stdout_truncated, stderr_truncated, limits, "    \
        "enforcement, supervisor_pid, supervisor_start, heartbeat_at, " \
        "session, idempotency_key, rerun_of, profile_sha256, job_exit_code"
/* ... and a full read adds these. */
#define DETAIL_COLUMNS ", stdout, stderr, profile_text, lang, code, output_lost, " \
        "stdout_sha256, stderr_sha256"

static void read_output(sqlite3_stmt *st, int i, struct run_output *o)
{
        const void *p = sqlite3_column_blob(st, i);
        size_t n = (size_t)sqlite3_column_bytes(st, i);

        free(o->data);
        o->data = xmalloc(n + 1);
        if (n)
                memcpy(o->data, p, n);
        o->data[n] = '\0';
        o->len = n;
}

/* The hex sha256 of o's stored bytes, or NULL (and hex untouched)
 * when none are stored. */
static const char *output_digest(const struct run_output *o, char hex[DIGEST_HEX_SIZE])
{
        if (!o->data)
                return NULL;
        digest_buffer(o->data, o->len, hex);
        return hex;
}

/* Do o's bytes match the checksum in column i (rows written before
 * schema 5 have none: nothing to compare)? */
static bool output_matches(sqlite3_stmt *st, int i, const struct run_output *o)
{
        const unsigned char *want = sqlite3_column_text(st, i);
        char hex[DIGEST_HEX_SIZE];

        if (!want)
                return true;
        digest_buffer(o->data ? o->data : "", o->len, hex);
        return streq(hex, (const char *)want);
}

static struct run_record *read_row(sqlite3_stmt *st, bool detail)
{
        struct run_record *rec = run_record_new();
        const unsigned char *id = sqlite3_column_text(st, 0);
        _cleanup_free_ char *status = NULL;
        int i = 0;

        snprintf(rec->id, sizeof(rec->id), "%s", id ? (const char *)id : "");
        i++;
        {
                _cleanup_free_ char *argv = store_column_text(st, i++);
                rec->argv = store_argv_from_text(argv);
        }
        rec->cwd = store_column_text(st, i++);
        rec->profile = store_column_text(st, i++);
        status = store_column_text(st, i++);
        rec->status = run_status_from_string(status);
        rec->exit_code = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int(st, i);
        i++;
        rec->signal = sqlite3_column_int(st, i++);
        rec->message = store_column_text(st, i++);
        rec->started_at_ms = store_column_u64(st, i++);
        rec->finished_at_ms = store_column_u64(st, i++);
        rec->duration_ms = store_column_u64(st, i++);
        rec->cpu_user_ms = store_column_u64(st, i++);
        rec->cpu_sys_ms = store_column_u64(st, i++);
        rec->peak_memory_bytes = store_column_u64(st, i++);
        rec->out.total_bytes = (uint64_t)sqlite3_column_int64(st, i++);
        rec->err.total_bytes = (uint64_t)sqlite3_column_int64(st, i++);
        rec->out.lines = (uint64_t)sqlite3_column_int64(st, i++);
        rec->err.lines = (uint64_t)sqlite3_column_int64(st, i++);
        rec->out.truncated = sqlite3_column_int(st, i++) != 0;
        rec->err.truncated = sqlite3_column_int(st, i++) != 0;
        rec->limits_json = store_column_text(st, i++);
        rec->enforcement_json = store_column_text(st, i++);
        rec->supervisor_pid = (pid_t)sqlite3_column_int(st, i++);
        rec->supervisor_start = store_column_u64(st, i++);
        rec->heartbeat_at_ms = store_column_u64(st, i++);
        rec->session = store_column_text(st, i++);
        rec->idempotency_key = store_column_text(st, i++);
        rec->rerun_of = store_column_text(st, i++);
        rec->profile_sha256 = store_column_text(st, i++);
        rec->job_exit_code = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int(st, i);
        i++;
        if (detail) {
                read_output(st, i++, &rec->out);
                read_output(st, i++, &rec->err);
                rec->profile_text = store_column_text(st, i++);
                rec->lang = store_column_text(st, i++);
                if (sqlite3_column_type(st, i) != SQLITE_NULL) {
                        struct run_output code = { 0 };
                        read_output(st, i, &code);
                        rec->code = code.data;
                        rec->code_len = code.len;
                }
                i++;
                rec->output_lost = store_column_text(st, i++);
                rec->out.damaged = !output_matches(st, i++, &rec->out);
                rec->err.damaged = !output_matches(st, i++, &rec->err);
        }
        return rec;
}

int store_run_insert(struct store *s, const struct run_record *rec)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *argv = store_argv_to_text(rec->argv);
        int r;

        r = store_begin_statement(s,
                    "INSERT INTO runs (" RUN_COLUMNS DETAIL_COLUMNS ") VALUES ("
                    "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
                    "?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, "
                    "?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38)", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, rec->id);
        store_bind_text(st, 2, argv);
        store_bind_text(st, 3, rec->cwd);
        store_bind_text(st, 4, rec->profile);
        store_bind_text(st, 5, run_status_to_string(rec->status));
        bind_int_or_null(st, 6, rec->exit_code, rec->exit_code >= 0);
        bind_int_or_null(st, 7, rec->signal, rec->signal > 0);
        store_bind_text(st, 8, rec->message);
        store_bind_u64(st, 9, rec->started_at_ms == RUN_UNSET ? now_realtime_ms() : rec->started_at_ms);
        store_bind_u64(st, 10, rec->finished_at_ms);
        store_bind_u64(st, 11, rec->duration_ms);
        store_bind_u64(st, 12, rec->cpu_user_ms);
        store_bind_u64(st, 13, rec->cpu_sys_ms);
        store_bind_u64(st, 14, rec->peak_memory_bytes);
        sqlite3_bind_int64(st, 15, (sqlite3_int64)rec->out.total_bytes);
        sqlite3_bind_int64(st, 16, (sqlite3_int64)rec->err.total_bytes);
        sqlite3_bind_int64(st, 17, (sqlite3_int64)rec->out.lines);
        sqlite3_bind_int64(st, 18, (sqlite3_int64)rec->err.lines);
        sqlite3_bind_int(st, 19, rec->out.truncated);
        sqlite3_bind_int(st, 20, rec->err.truncated);
        store_bind_text(st, 21, rec->limits_json);
        store_bind_text(st, 22, rec->enforcement_json);
        bind_int_or_null(st, 23, rec->supervisor_pid, rec->supervisor_pid > 0);
        store_bind_u64(st, 24, rec->supervisor_start);
        store_bind_u64(st, 25, rec->heartbeat_at_ms);
        store_bind_text(st, 26, rec->session);
        store_bind_text(st, 27, rec->idempotency_key);
        store_bind_text(st, 28, rec->rerun_of);
        store_bind_text(st, 29, rec->profile_sha256);
        bind_int_or_null(st, 30, rec->job_exit_code, rec->job_exit_code >= 0);
        bind_blob(st, 31, &rec->out);
        bind_blob(st, 32, &rec->err);
        store_bind_text(st, 33, rec->profile_text);
        store_bind_text(st, 34, rec->lang);
        if (rec->code)
                sqlite3_bind_blob64(st, 35, rec->code, rec->code_len, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, 35);
        char out_hex[DIGEST_HEX_SIZE], err_hex[DIGEST_HEX_SIZE];
        store_bind_text(st, 36, rec->output_lost);
        store_bind_text(st, 37, output_digest(&rec->out, out_hex));
        store_bind_text(st, 38, output_digest(&rec->err, err_hex));
        return store_finish_update(s, TAKE_PTR(st), false);
}

int store_run_heartbeat(struct store *s, const char *id, uint64_t now_ms)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r;

        r = store_begin_statement(s, "UPDATE runs SET heartbeat_at = ?1 WHERE id = ?2", &st);
        if (r < 0)
                return r;
        store_bind_u64(st, 1, now_ms);
        store_bind_text(st, 2, id);
        return store_finish_update(s, TAKE_PTR(st), true);
}

#define FINISH_SQL \
        "UPDATE runs SET status = ?2, exit_code = ?3, signal = ?4, message = ?5, " \
        "finished_at = ?6, duration_ms = ?7, cpu_user_ms = ?8, cpu_sys_ms = ?9, " \
        "peak_memory_bytes = ?10, stdout = ?11, stderr = ?12, stdout_bytes = ?13, " \
        "stderr_bytes = ?14, stdout_lines = ?15, stderr_lines = ?16, " \
        "stdout_truncated = ?17, stderr_truncated = ?18, limits = ?19, " \
        "enforcement = ?20, heartbeat_at = ?21, output_lost = ?22, " \
        "stdout_sha256 = ?23, stderr_sha256 = ?24, job_exit_code = ?25 WHERE id = ?1"

void store_run_prepare_finish(struct store *s)
{
        /* A prepared statement holds no lock, and one compiled against a
         * schema that changes before it runs (another hutch migrating the
         * store) is compiled again by its first step. */
        if (s && !s->finish_st && store_prepare(s, FINISH_SQL, &s->finish_st) < 0)
                s->finish_st = NULL;
        /* the final update is synced; the marker must be first, and
         * syncing it now overlaps with the job */
        if (s)
                store_sync_marker(s);
}

/* The final update; without the output when output_lost is set (then
 * the stored output becomes NULL and output_lost says why). */
static int finish(struct store *s, const struct run_record *rec, const char *output_lost)
{
        _cleanup_stmt_ sqlite3_stmt *st = TAKE_PTR(s->finish_st);
        char out_hex[DIGEST_HEX_SIZE], err_hex[DIGEST_HEX_SIZE];
        const struct run_output none = { 0 };
        const struct run_output *out = output_lost ? &none : &rec->out;
        const struct run_output *err = output_lost ? &none : &rec->err;
        int r;

        r = st ? store_begin_write(s) : store_begin_statement(s, FINISH_SQL, &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, rec->id);
        store_bind_text(st, 2, run_status_to_string(rec->status));
        bind_int_or_null(st, 3, rec->exit_code, rec->exit_code >= 0);
        bind_int_or_null(st, 4, rec->signal, rec->signal > 0);
        store_bind_text(st, 5, rec->message);
        store_bind_u64(st, 6, rec->finished_at_ms == RUN_UNSET ? now_realtime_ms() : rec->finished_at_ms);
        store_bind_u64(st, 7, rec->duration_ms);
        store_bind_u64(st, 8, rec->cpu_user_ms);
        store_bind_u64(st, 9, rec->cpu_sys_ms);
        store_bind_u64(st, 10, rec->peak_memory_bytes);
        bind_blob(st, 11, out);
        bind_blob(st, 12, err);
        /* the counts are the job's, whether or not its bytes were kept */
        sqlite3_bind_int64(st, 13, (sqlite3_int64)rec->out.total_bytes);
        sqlite3_bind_int64(st, 14, (sqlite3_int64)rec->err.total_bytes);
        sqlite3_bind_int64(st, 15, (sqlite3_int64)rec->out.lines);
        sqlite3_bind_int64(st, 16, (sqlite3_int64)rec->err.lines);
        sqlite3_bind_int(st, 17, rec->out.truncated);
        sqlite3_bind_int(st, 18, rec->err.truncated);
        store_bind_text(st, 19, rec->limits_json);
        store_bind_text(st, 20, rec->enforcement_json);
        store_bind_u64(st, 21, now_realtime_ms());
        store_bind_text(st, 22, output_lost ? output_lost : rec->output_lost);
        store_bind_text(st, 23, output_digest(out, out_hex));
        store_bind_text(st, 24, output_digest(err, err_hex));
        bind_int_or_null(st, 25, rec->job_exit_code, rec->job_exit_code >= 0);
        /* The files summary goes in the same transaction: one lock and
         * one commit where there were two, and the two land together. */
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                r = store_fail(s, rc);
        else if (sqlite3_changes(s->db) == 0)
                r = store_fail_msg(s, -ENOENT, "no such run");
        sqlite3_finalize(TAKE_PTR(st));
        if (r == 0 && rec->files_summary)
                r = store_files_summary_write(s, rec->id, rec->files_error, rec->files_unlisted,
                                              rec->committed);
        if (r < 0) {
                store_rollback(s);
                return r;
        }
        return store_commit(s);
}

/* The final update, or if that fails, the outcome without the output:
 * 0, 1 with *ret_why (why the output is lost), or -errno. */
static int finish_or_without_output(struct store *s, struct run_record *rec, char **ret_why)
{
        _cleanup_free_ char *why = NULL;
        int r;

        r = finish(s, rec, NULL);
        if (r >= 0 || r == -ENOENT)
                return r;
        /* The outcome must land even when the output does not: a row
         * left running would later be called orphaned, which is false.
         * Without the output the update rewrites a few small pages; if
         * even that does not fit, the reserve kept for this moment is
         * given back and the update tried once more. */
        why = xasprintf("the output could not be stored: %s%s%s", strerror(-r),
                        rec->output_lost ? "; " : "", rec->output_lost ? rec->output_lost : "");
        r = finish(s, rec, why);
        if (r == -ENOSPC && store_release_reserve(s) == 0)
                r = finish(s, rec, why);
        if (r < 0)
                return r;
        *ret_why = TAKE_PTR(why);
        return 1;
}

int store_run_finish(struct store *s, struct run_record *rec)
{
        _cleanup_free_ char *why = NULL;
        int r;

        /* The run's outcome must outlive a power loss once hutch has
         * reported it: the WAL is synced after this commit (after the
         * job; nothing before it waits for a disk). */
        store_durable_begin(s);
        r = store_durable_end(s, finish_or_without_output(s, rec, &why));
        if (r > 0) {
                free(rec->output_lost);
                rec->output_lost = TAKE_PTR(why);
        }
        return r;
}

/* Hand rec out only if its stored output matches its checksums. */
static int take_verified(struct store *s, struct run_record *rec, struct run_record **ret)
{
        if (rec->out.damaged || rec->err.damaged) {
                _cleanup_free_ char *msg = xasprintf(
                        "run %s: the stored %s does not match its checksum: the run store is damaged",
                        rec->id, rec->out.damaged ? "stdout" : "stderr");
                run_record_free(rec);
                return store_fail_msg(s, -EBADMSG, msg);
        }
        *ret = rec;
        return 0;
}

int store_run_code_get(struct store *s, struct run_record *rec)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_select_one(s, "SELECT lang, code FROM runs WHERE id = ?1", rec->id, &st);
        if (r < 0)
                return r;
        free(rec->lang);
        free(rec->code);
        rec->code = NULL;
        rec->code_len = 0;
        rec->lang = store_column_text(st, 0);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
                struct run_output code = { 0 };
                read_output(st, 1, &code);
                rec->code = code.data;
                rec->code_len = code.len;
        }
        return 0;
}

static int get_exact(struct store *s, const char *id, struct run_record **ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_select_one(s, "SELECT " RUN_COLUMNS DETAIL_COLUMNS " FROM runs WHERE id = ?1", id, &st);
        if (r < 0)
                return r;
        return take_verified(s, read_row(st, true), ret);
}

int store_run_get(struct store *s, const char *id_or_prefix, struct run_record **ret,
                  char ***ret_candidates)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *prefix = xstrdup(id_or_prefix);
        _cleanup_free_ char *upper = NULL;
        _cleanup_strv_ char **ids = NULL;
        size_t len = strlen(prefix);
        int r, rc;

        for (char *p = prefix; *p; p++) {
                if (!ulid_char_valid(*p))
                        return store_fail_msg(s, -EINVAL, "not a run id");
                *p = (char)toupper((unsigned char)*p);
        }
        if (len == ULID_LEN) {
                r = get_exact(s, prefix, ret);
                if (r != -ENOENT)
                        return r;
        }
        if (len < MIN_PREFIX)
                return store_fail_msg(s, -EINVAL, "run id prefix too short");
        if (len > ULID_LEN)
                return -ENOENT;

        /* every id starting with prefix sorts in [prefix, prefix "~"): ids
         * are made of [0-9A-Z] only, all below '~' */
        upper = xasprintf("%s~", prefix);
        r = store_prepare(s, "SELECT id FROM runs WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT ?3", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, prefix);
        store_bind_text(st, 2, upper);
        sqlite3_bind_int(st, 3, MAX_CANDIDATES + 1);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                ids = strv_append(ids, (const char *)sqlite3_column_text(st, 0));
        if (rc != SQLITE_DONE)
                return store_fail(s, rc);
        if (strv_length(ids) == 0)
                return -ENOENT;
        if (strv_length(ids) > 1) {
                if (ret_candidates) {
                        if (strv_length(ids) > MAX_CANDIDATES) {
                                free(ids[MAX_CANDIDATES]);
                                ids[MAX_CANDIDATES] = NULL;
                        }
                        *ret_candidates = TAKE_PTR(ids);
                }
                return -ENOTUNIQ;
        }
        return get_exact(s, ids[0], ret);
}

int store_run_get_by_key(struct store *s, const char *key, struct run_record **ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_select_one(s, "SELECT " RUN_COLUMNS DETAIL_COLUMNS " FROM runs WHERE idempotency_key = ?1",
                                 key, &st);
        if (r < 0)
                return r;
        return take_verified(s, read_row(st, true), ret);
}

static bool matches_status(const struct run_record *rec, int status)
{
        if (status == RUN_RUNNING)
                return rec->status == RUN_RUNNING && !run_record_is_orphan(rec);
        if (status == RUN_ORPHANED)
                return rec->status == RUN_ORPHANED || run_record_is_orphan(rec);
        return true;    /* the query already filtered */
}

int store_run_foreach(struct store *s, const struct store_filter *f,
                      int (*cb)(struct run_record *rec, void *userdata), void *userdata)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *sql = NULL;
        /* running/orphaned depend on a process check the query cannot do */
        bool post = f->status == RUN_RUNNING || f->status == RUN_ORPHANED;
        size_t n = 0;
        int r, rc;

        /* A listing shows the start of a command line: SQLite's JSON
         * functions cut a long argv down (with a last "…" item) before
         * it is copied and parsed, so one run with 100,000 arguments
         * does not slow every listing it is part of. */
        const char *argv_column = f->argv_max == 0 ? "argv" :
                "CASE WHEN json_valid(argv) AND json_array_length(argv) > ?4 THEN "
                "json_insert((SELECT json_group_array(value) FROM "
                "(SELECT value FROM json_each(runs.argv) LIMIT ?4)), '$[#]', '…') ELSE argv END";
        sql = xasprintf("SELECT id, %s, " RUN_COLUMNS_REST " FROM runs WHERE 1%s%s%s%s%s "
                        "ORDER BY started_at DESC, id DESC%s",
                        argv_column,
                        f->status < 0 ? "" :
                        post ? " AND status IN ('running', 'orphaned')" : " AND status = ?1",
                        f->since_ms > 0 ? " AND started_at >= ?2" : "",
                        f->session ? " AND session = ?5" : "",
                        f->label ? " AND id IN (SELECT run_id FROM run_labels WHERE key = ?6 AND value = ?7)" : "",
                        f->node ? " AND coalesce((SELECT node FROM run_origin WHERE run_id = runs.id), ?9) = ?8"
                                : "",
                        f->limit > 0 && !post ? " LIMIT ?3" : "");
        r = store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        if (f->status >= 0 && !post)
                store_bind_text(st, 1, run_status_to_string(f->status));
        if (f->since_ms > 0)
                store_bind_u64(st, 2, f->since_ms);
        if (f->limit > 0 && !post)
                sqlite3_bind_int64(st, 3, (sqlite3_int64)MIN(f->limit, (size_t)INT64_MAX));
        if (f->argv_max > 0)
                sqlite3_bind_int64(st, 4, (sqlite3_int64)MIN(f->argv_max, (size_t)INT32_MAX));
        if (f->session)
                store_bind_text(st, 5, f->session);
        if (f->label) {
                const char *eq = strchr(f->label, '=');
                _cleanup_free_ char *key = xasprintf("%.*s", eq ? (int)(eq - f->label) : (int)strlen(f->label),
                                                     f->label);
                store_bind_text(st, 6, key);
                store_bind_text(st, 7, eq ? eq + 1 : "");
        }

        if (f->node) {
                store_bind_text(st, 8, f->node);
                store_bind_text(st, 9, f->local_node ? f->local_node : "");
        }

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct run_record *rec = read_row(st, false);
                if (post && !matches_status(rec, f->status)) {
                        run_record_free(rec);
                        continue;
                }
                r = cb(rec, userdata);
                if (r < 0)
                        return r;
                if (f->limit > 0 && ++n >= f->limit)
                        return 0;
        }
        if (rc != SQLITE_DONE)
                return store_fail(s, rc);
        return 0;
}

struct collect {
        struct run_record **recs;
        size_t n, cap;
};

static int collect_one(struct run_record *rec, void *userdata)
{
        struct collect *c = userdata;
        if (c->n == c->cap)
                c->recs = xrealloc(c->recs, (c->cap = c->cap ? c->cap * 2 : 64) * sizeof(*c->recs));
        c->recs[c->n++] = rec;
        return 0;
}

int store_run_list(struct store *s, const struct store_filter *f,
                   struct run_record ***ret, size_t *ret_n)
{
        struct collect c = {};
        int r;

        r = store_run_foreach(s, f, collect_one, &c);
        if (r < 0) {
                run_record_free_many(c.recs, c.n);
                return r;
        }
        *ret = c.recs;
        *ret_n = c.n;
        return 0;
}

int store_mark_orphans(struct store *s, bool dry_run, char ***ret_ids)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_ char **ids = NULL;
        _cleanup_strv_ char **done = NULL;
        int r, rc, count = 0;

        /* find them first, outside the write lock: looking at /proc is slow
         * compared with a write transaction */
        /* an imported run's supervisor ran on another host: never judged here */
        r = store_prepare(s, "SELECT " RUN_COLUMNS " FROM runs WHERE status = 'running' "
                       "AND id NOT IN (SELECT run_id FROM run_origin)", &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                _cleanup_run_record_ struct run_record *rec = read_row(st, false);
                if (run_record_is_orphan(rec))
                        ids = strv_append(ids, rec->id);
        }
        if (rc != SQLITE_DONE)
                return store_fail(s, rc);
        sqlite3_finalize(TAKE_PTR(st));

        if (dry_run || !ids) {
                count = (int)strv_length(ids);
                if (ret_ids)
                        *ret_ids = TAKE_PTR(ids);
                return count;
        }

        r = store_begin_write(s);
        if (r < 0)
                return r;
        r = store_prepare(s, "UPDATE runs SET status = 'orphaned', finished_at = NULL, "
                       "message = 'supervisor (pid ' || ifnull(supervisor_pid, '?') || ') died' "
                       "WHERE id = ?1 AND status = 'running'", &st);
        if (r < 0)
                goto out;
        for (char **id = ids; *id; id++) {
                sqlite3_reset(st);
                store_bind_text(st, 1, *id);
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE) {
                        r = store_fail(s, rc);
                        goto out;
                }
                /* a supervisor that finished in between keeps its outcome */
                if (sqlite3_changes(s->db) > 0) {
                        done = strv_append(done, *id);
                        count++;
                }
        }
        sqlite3_finalize(TAKE_PTR(st));
        r = store_commit(s);
        if (r < 0)
                return r;
        if (ret_ids)
                *ret_ids = TAKE_PTR(done);
        return count;
out:
        store_rollback(s);
        return r;
}

/* Every table whose rows belong to a run (run_id), as the migrations
 * leave them: their rows are deleted with the run. A table added to the
 * schema with a run_id must be named here. */
static const char *const run_tables[] = {
        "files", "run_workspace", "run_files_summary", "connections", "run_labels", "run_origin",
};

/* Delete, in the open write transaction and after the runs it deletes,
 * every row of the tables in run_tables[] whose run is gone: those
 * runs', and those of runs deleted by hand. The schema has no cascade of
 * its own (migration 10 -> 11, store-migrations.c). */
static int delete_rows_without_run(struct store *s)
{
        for (size_t i = 0; i < ELEMENTSOF(run_tables); i++) {
                _cleanup_free_ char *sql = xasprintf("DELETE FROM %s WHERE run_id NOT IN (SELECT id FROM runs)",
                                                     run_tables[i]);
                int r = store_exec(s, sql);
                if (r < 0)
                        return r;
        }
        return 0;
}

int store_run_withdraw(struct store *s, const char *id)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_begin_write(s);
        if (r < 0)
                return r;
        /* only a row still running: an ended run is history, and no
         * caller may take it back */
        r = store_prepare(s, "DELETE FROM runs WHERE id = ?1 AND status = 'running'", &st);
        if (r < 0)
                goto out;
        store_bind_text(st, 1, id);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE) {
                r = store_fail(s, rc);
                goto out;
        }
        if (sqlite3_changes(s->db) != 1) {
                r = store_fail_msg(s, -ENOENT, "no running run of that id");
                goto out;
        }
        sqlite3_finalize(TAKE_PTR(st));
        for (size_t i = 0; i < ELEMENTSOF(run_tables); i++) {
                _cleanup_free_ char *sql = xasprintf("DELETE FROM %s WHERE run_id = ?1", run_tables[i]);
                r = store_prepare(s, sql, &st);
                if (r < 0)
                        goto out;
                store_bind_text(st, 1, id);
                rc = sqlite3_step(st);
                sqlite3_finalize(TAKE_PTR(st));
                if (rc != SQLITE_DONE) {
                        r = store_fail(s, rc);
                        goto out;
                }
        }
        return store_commit(s);
out:
        store_rollback(s);
        return r;
}

int store_delete_older_than(struct store *s, uint64_t before_ms, bool dry_run)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc, count;

        if (dry_run) {
                r = store_prepare(s, "SELECT count(*) FROM runs WHERE started_at < ?1 "
                               "AND status != 'running'", &st);
                if (r < 0)
                        return r;
                store_bind_u64(st, 1, before_ms);
                rc = sqlite3_step(st);
                if (rc != SQLITE_ROW)
                        return store_fail(s, rc);
                return sqlite3_column_int(st, 0);
        }

        r = store_begin_write(s);
        if (r < 0)
                return r;
        r = store_prepare(s, "DELETE FROM runs WHERE started_at < ?1 AND status != 'running'", &st);
        if (r < 0)
                goto out;
        store_bind_u64(st, 1, before_ms);
        rc = sqlite3_step(st);
        if (rc != SQLITE_DONE) {
                r = store_fail(s, rc);
                goto out;
        }
        count = sqlite3_changes(s->db);
        sqlite3_finalize(TAKE_PTR(st));
        r = delete_rows_without_run(s);
        if (r < 0)
                goto out;
        r = store_commit(s);
        return r < 0 ? r : count;
out:
        store_rollback(s);
        return r;
}
