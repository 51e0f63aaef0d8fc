/* store-files.c - the queries on the `files` and `run_workspace` tables
 * (see store.h): what a run changed and left behind, and where its
 * workspace came from. Their rows go with their run
 * (store_delete_older_than(), store-runs.c).
 */
#include "config.h"

#include <sqlite3.h>

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

void file_records_free(struct file_record *f, size_t n)
{
        if (!f)
                return;
        for (size_t i = 0; i < n; i++) {
                free(f[i].path);
                free(f[i].link_target);
                free(f[i].skip);
                free(f[i].mime);
        }
        free(f);
}

static void bind_hex(sqlite3_stmt *st, int i, const char *hex)
{
        store_bind_text(st, i, hex && hex[0] ? hex : NULL);
}

int store_files_add(struct store *s, const char *run_id, const struct file_record *f, size_t n)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r, rc;

        r = store_begin_write(s);
        if (r < 0)
                return r;
        r = store_prepare(s, "INSERT OR REPLACE INTO files (run_id, path, kind, size, mode, sha256, old_mode, "
                       "old_sha256, link_target, skip, mime, lower_changed) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    &st);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < n; i++) {
                sqlite3_reset(st);
                store_bind_text(st, 1, run_id);
                store_bind_text(st, 2, f[i].path);
                store_bind_text(st, 3, f[i].kind);
                store_bind_u64(st, 4, f[i].size);
                sqlite3_bind_int64(st, 5, f[i].mode);
                bind_hex(st, 6, f[i].sha256);
                sqlite3_bind_int64(st, 7, f[i].old_mode);
                bind_hex(st, 8, f[i].old_sha256);
                store_bind_text(st, 9, f[i].link_target);
                store_bind_text(st, 10, f[i].skip);
                store_bind_text(st, 11, f[i].mime);
                sqlite3_bind_int(st, 12, f[i].lower_changed);
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE) {
                        r = store_fail(s, rc);
                        goto out;
                }
        }
        sqlite3_finalize(TAKE_PTR(st));
        /* durable: --apply installs these changes (fsynced) next, and a
         * directory must not keep a job's changes after a power loss
         * while the record of them is gone */
        store_durable_begin(s);
        return store_durable_end(s, store_commit(s));
out:
        store_rollback(s);
        return r;
}

static void column_hex(sqlite3_stmt *st, int i, char hex[DIGEST_HEX_SIZE])
{
        const unsigned char *t = sqlite3_column_text(st, i);
        snprintf(hex, DIGEST_HEX_SIZE, "%s", t ? (const char *)t : "");
}

int store_files_list(struct store *s, const char *run_id, const char *kind,
                     struct file_record **ret, size_t *ret_n)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        struct file_record *v = NULL;
        size_t n = 0;
        int r, rc;

        r = store_prepare(s, "SELECT path, kind, size, mode, sha256, old_mode, old_sha256, link_target, skip, mime, "
                       "lower_changed "
                       "FROM files WHERE run_id = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY kind = 'output', path",
                    &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, run_id);
        store_bind_text(st, 2, kind);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                v = xrealloc(v, (n + 1) * sizeof(*v));
                struct file_record *f = &v[n++];
                *f = (struct file_record) { 0 };
                f->path = store_column_text(st, 0);
                f->kind = NULL;
                const unsigned char *k = sqlite3_column_text(st, 1);
                static const char *const kinds[] = { "output", "added", "modified", "deleted" };
                f->kind = "unknown";
                for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                        if (k && streq((const char *)k, kinds[i]))
                                f->kind = kinds[i];
                f->size = store_column_u64(st, 2);
                f->mode = (mode_t)sqlite3_column_int64(st, 3);
                column_hex(st, 4, f->sha256);
                f->old_mode = (mode_t)sqlite3_column_int64(st, 5);
                column_hex(st, 6, f->old_sha256);
                f->link_target = store_column_text(st, 7);
                f->skip = store_column_text(st, 8);
                f->mime = store_column_text(st, 9);
                f->lower_changed = sqlite3_column_int(st, 10) != 0;
        }
        if (rc != SQLITE_DONE) {
                file_records_free(v, n);
                return store_fail(s, rc);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int store_files_all_blobs(struct store *s, char ***ret)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        char **v = NULL;
        int r, rc;

        r = store_prepare(s, "SELECT sha256 FROM files WHERE sha256 IS NOT NULL "
                       "UNION SELECT old_sha256 FROM files WHERE old_sha256 IS NOT NULL", &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                v = strv_append(v, (const char *)sqlite3_column_text(st, 0));
        if (rc != SQLITE_DONE) {
                strv_free(v);
                return store_fail(s, rc);
        }
        *ret = v;
        return 0;
}

int store_files_summary_write(struct store *s, const char *run_id, const char *error, uint64_t unlisted,
                              int committed)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "INSERT OR REPLACE INTO run_files_summary (run_id, error, unlisted, committed) "
                              "VALUES (?1, ?2, ?3, ?4)", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, run_id);
        store_bind_text(st, 2, error);
        store_bind_u64(st, 3, unlisted);
        if (committed >= 0)
                sqlite3_bind_int(st, 4, committed > 0);
        else
                sqlite3_bind_null(st, 4);
        int rc = sqlite3_step(st);
        return rc == SQLITE_DONE ? 0 : store_fail(s, rc);
}

int store_files_summary_get(struct store *s, const char *run_id, char **ret_error, uint64_t *ret_unlisted,
                            int *ret_committed)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_select_one(s, "SELECT error, unlisted, committed FROM run_files_summary WHERE run_id = ?1",
                                 run_id, &st);
        if (r < 0)
                return r;
        if (ret_committed)
                *ret_committed = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 2) != 0;
        if (ret_error)
                *ret_error = store_column_text(st, 0);
        if (ret_unlisted)
                *ret_unlisted = (uint64_t)sqlite3_column_int64(st, 1);
        return 0;
}

int store_workspace_set(struct store *s, const char *run_id, const char *workdir, const char *session)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r;

        r = store_begin_statement(s, "INSERT OR REPLACE INTO run_workspace (run_id, workdir, session) VALUES (?1, ?2, ?3)", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, run_id);
        store_bind_text(st, 2, workdir);
        store_bind_text(st, 3, session);
        return store_finish_update(s, TAKE_PTR(st), false);
}

int store_workspace_get(struct store *s, const char *run_id, char **ret_workdir, char **ret_session)
{
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_select_one(s, "SELECT workdir, session FROM run_workspace WHERE run_id = ?1", run_id, &st);
        if (r < 0)
                return r;
        if (ret_workdir)
                *ret_workdir = store_column_text(st, 0);
        if (ret_session)
                *ret_session = store_column_text(st, 1);
        return 0;
}
