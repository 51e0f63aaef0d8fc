/* run/runfiles.c - record a run's workspace changes and artifacts (see
 * runfiles.h).
 *
 * Data: one change set (tens to thousands of entries) and one artifact
 * list (capped by the profile, 1000 files by default) per run, written in
 * one transaction each. Content goes to the blob store first and rows
 * second, so a row never names a blob that is not there.
 *
 * Nothing here writes outside the blob store: the workspace dirs are
 * only read, through the fd-based walkers of changeset.c and
 * artifacts.c, which never follow a symlink the job left.
 */
#include "config.h"

#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/jsonutil.h"
#include "workspace/artifacts.h"
#include "workspace/scrub.h"
#include "record/blobstore.h"
#include "lib/fsutil.h"
#include "run/runfiles.h"
#include "lib/sanitize.h"
#include "lib/util.h"

int runfiles_open_blobs(struct store *s, struct blobstore **ret)
{
        _cleanup_free_ char *db = xstrdup(store_path(s));
        _cleanup_free_ char *dir = xasprintf("%s/blobs", dirname(db));
        return blobstore_open(dir, ret);
}

int runfiles_lock_blobs(struct blobstore *bs, bool exclusive)
{
        int fd = openat(blobstore_dirfd(bs), ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        struct flock fl = { .l_type = exclusive ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET };
        while (fcntl(fd, F_OFD_SETLKW, &fl) < 0)
                if (errno != EINTR) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
        return fd;
}

int runfiles_gc_blobs(struct store *s, struct blobstore *bs, bool dry_run)
{
        _cleanup_strv_ char **keep = NULL;
        int r;

        /* a dry run deletes nothing, so it needs no lock (and works in a
         * read-only state dir, where none can be made) */
        if (dry_run)
                return 0;
        _cleanup_close_ int lock = runfiles_lock_blobs(bs, true);
        if (lock < 0)
                return lock;
        r = store_files_all_blobs(s, &keep);
        if (r < 0)
                return r;
        return blobstore_gc(bs, (const char *const *)keep, strv_length(keep));
}

/* Is path dir itself or below it? */
static bool under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Keep the lower version of a modified or deleted regular file, so diff
 * can show it after the run. The lower dir is the user's: it may have
 * changed since the job read it, so a version that no longer hashes to
 * what the job saw is not kept (diff then says so). */
static void keep_lower(struct blobstore *bs, int lower_fd, const struct change *c, uint64_t *budget)
{
        char hex[DIGEST_HEX_SIZE];
        uint64_t size;

        /* the job chooses which lower files it deletes: `rm -rf` of a big
         * tree must not copy the whole tree into the store, so the lower
         * versions share the run's byte budget too (0 = none) */
        if (!S_ISREG(c->old_mode) || !c->old_sha256[0] || blobstore_has(bs, c->old_sha256))
                return;
        if (*budget == 1)
                return;         /* spent */
        _cleanup_close_ int fd = fs_open_beneath(lower_fd, c->path, O_RDONLY | O_NONBLOCK, 0);
        if (fd < 0)
                return;
        if (blobstore_put_fd(bs, fd, *budget > 1 ? *budget - 1 : 0, hex, &size) >= 0 && *budget)
                *budget = size + 1 < *budget ? *budget - size : 1;
}

static void filter_changes(struct changeset *cs, const struct runfiles_params *p)
{
        size_t w = 0;
        for (size_t i = 0; i < cs->n; i++) {
                struct change *c = &cs->entries[i];
                if ((p->output_rel && under(c->path, p->output_rel)) ||
                    (p->has_inputs && under(c->path, "input"))) {
                        if (c->skip == CHANGE_SKIP_NONE)
                                cs->n_carried--;
                        free(c->path);
                        free(c->link_target);
                        continue;
                }
                cs->entries[w++] = *c;
        }
        cs->n = w;
}

static void record_change(struct file_record *f, const struct change *c)
{
        *f = (struct file_record) {
                .path = c->path, .kind = change_kind_to_string(c->kind), .size = c->size,
                .mode = c->mode, .old_mode = c->old_mode, .link_target = c->link_target,
                .skip = (char *)change_skip_to_string(c->skip),
                .lower_changed = c->lower_changed,
        };
        memcpy(f->sha256, c->sha256, sizeof(f->sha256));
        memcpy(f->old_sha256, c->old_sha256, sizeof(f->old_sha256));
}

static void record_artifact(struct file_record *f, const struct artifact *a)
{
        *f = (struct file_record) {
                .path = a->path, .kind = "output", .size = a->size, .mode = a->mode,
                .link_target = a->link_target, .skip = (char *)artifact_skip_to_string(a->skip),
                .mime = (char *)a->mime,
        };
        memcpy(f->sha256, a->sha256, sizeof(f->sha256));
}

int runfiles_collect(struct store *s, const char *run_id, struct blobstore *bs,
                     const struct runfiles_params *p, struct runfiles_result *ret,
                     const char **ret_step)
{
        struct artifact_list al = { 0 };
        _cleanup_free_ struct file_record *rows = NULL;
        size_t n = 0;
        int r;

        *ret = (struct runfiles_result) { 0 };
        /* from the first blob stored to the last row recorded: gc waits */
        _cleanup_close_ int lock = runfiles_lock_blobs(bs, false);
        if (lock < 0) {
                *ret_step = "blob store lock";
                return lock;
        }
        /* one syncfs for the run's blobs instead of an fsync each: a
         * change set of 2000 files took 1.6 s of fsyncs */
        blobstore_batch_begin(bs);
        if (p->upper_fd >= 0 && p->lower_fd >= 0) {
                *ret_step = "change set";
                r = changeset_compute(p->upper_fd, p->lower_fd, &p->changes, bs, &ret->cs);
                if (r < 0)
                        return r;
                filter_changes(&ret->cs, p);
                ret->n_unlisted = ret->cs.n_unlisted;
                /* budget + 1, so 1 means spent and 0 no limit */
                uint64_t lower_budget = p->changes.max_bytes ? p->changes.max_bytes + 1 : 0;
                for (size_t i = 0; i < ret->cs.n; i++)
                        keep_lower(bs, p->lower_fd, &ret->cs.entries[i], &lower_budget);
        }
        if (p->workspace_fd >= 0 && p->output_rel) {
                *ret_step = "artifacts";
                _cleanup_close_ int out = fs_open_beneath(p->workspace_fd, p->output_rel,
                                                         O_RDONLY | O_DIRECTORY, 0);
                /* the job owns the workspace: an output/ that is a symlink
                 * or a file is its doing, and loses only the artifacts */
                if (out < 0 && out != -ENOENT)
                        ret->artifacts_error = out;
                if (out >= 0) {
                        struct artifacts_limits lim = {
                                .max_files = (size_t)p->max_files, .max_bytes = p->max_bytes,
                                .deadline = p->changes.deadline,
                        };
                        r = artifacts_collect(out, bs, &lim, &al);
                        if (r < 0) {
                                ret->artifacts_error = r;
                                artifact_list_done(&al);
                                al = (struct artifact_list) { 0 };
                        }
                }
                if (out >= 0 && !ret->artifacts_error) {
                        ret->n_outputs = al.n_collected;
                        ret->n_outputs_skipped = al.n - al.n_collected + al.n_unlisted;
                        ret->n_unlisted += al.n_unlisted;
                        ret->output_bytes = al.bytes;
                }
        }

        /* every blob named and on disk before a row points at it */
        *ret_step = "blob store";
        r = blobstore_batch_commit(bs);
        if (r < 0) {
                artifact_list_done(&al);
                return r;
        }
        /* named blobs only can be read back and scanned */
        scrub_changeset(&ret->cs, bs, p->secrets);
        if (scrub_artifacts(&al, bs, p->secrets)) {
                ret->n_outputs = al.n_collected;
                ret->n_outputs_skipped = al.n - al.n_collected + al.n_unlisted;
                ret->output_bytes = al.bytes;
        }

        rows = xcalloc(ret->cs.n + al.n + 1, sizeof(*rows));
        for (size_t i = 0; i < ret->cs.n; i++)
                record_change(&rows[n++], &ret->cs.entries[i]);
        for (size_t i = 0; i < al.n; i++)
                record_artifact(&rows[n++], &al.items[i]);
        *ret_step = "record";
        r = n ? store_files_add(s, run_id, rows, n) : 0;
        artifact_list_done(&al);
        return r;
}

void runfiles_result_done(struct runfiles_result *r)
{
        if (r)
                changeset_done(&r->cs);
}

static enum change_skip skip_from_string(const char *s)
{
        if (!s)
                return CHANGE_SKIP_NONE;
        for (int i = 1; i < _CHANGE_SKIP_MAX; i++)
                if (streq(change_skip_to_string((enum change_skip)i), s))
                        return (enum change_skip)i;
        return CHANGE_SKIP_UNREADABLE;
}

int runfiles_load_changeset(struct store *s, const char *run_id, struct changeset *ret)
{
        struct file_record *f = NULL;
        size_t n = 0;
        int r;

        r = store_files_list(s, run_id, NULL, &f, &n);
        if (r < 0)
                return r;
        struct changeset cs = { .entries = xcalloc(n + 1, sizeof(struct change)) };
        for (size_t i = 0; i < n; i++) {
                enum change_kind k = change_kind_from_string(f[i].kind);
                if (k < 0)
                        continue;       /* outputs */
                struct change *c = &cs.entries[cs.n++];
                c->path = TAKE_PTR(f[i].path);
                c->kind = k;
                c->skip = skip_from_string(f[i].skip);
                c->mode = f[i].mode;
                c->size = f[i].size == RUN_UNSET ? 0 : f[i].size;
                memcpy(c->sha256, f[i].sha256, sizeof(c->sha256));
                c->link_target = TAKE_PTR(f[i].link_target);
                c->old_mode = f[i].old_mode;
                memcpy(c->old_sha256, f[i].old_sha256, sizeof(c->old_sha256));
                c->lower_changed = f[i].lower_changed;
                if (c->skip == CHANGE_SKIP_NONE) {
                        cs.n_carried++;
                        if (S_ISREG(c->mode))
                                cs.bytes += c->size;
                }
        }
        file_records_free(f, n);
        changeset_sort(&cs);
        *ret = cs;
        return 0;
}

/* A name the job chose, as JSON: the text, and when it is not UTF-8
 * (jansson would refuse it: the key went missing) the text with each
 * bad byte as U+FFFD plus key_b64, the raw bytes in base64, so nothing
 * is lost and nothing invalid is emitted. */
void runfiles_json_set_path(json_t *o, const char *key, const char *path)
{
        size_t n = strlen(path);

        if (sanitize_utf8_valid(path, n)) {
                json_object_set_new(o, key, json_stringn(path, n));
                return;
        }
        _cleanup_free_ char *text = sanitize_text(path, n, NULL);
        _cleanup_free_ char *b64 = sanitize_base64(path, n);
        _cleanup_free_ char *b64_key = xasprintf("%s_b64", key);
        json_object_set_new(o, key, json_string(text));
        json_object_set_new(o, b64_key, json_string(b64));
}

void runfiles_summary_json(struct store *s, const char *run_id, json_t *o)
{
        _cleanup_free_ char *error = NULL;
        uint64_t unlisted = 0;
        int committed = -1;

        if (store_files_summary_get(s, run_id, &error, &unlisted, &committed) < 0)
                return;
        if (committed >= 0)
                json_object_set_new(o, "committed", json_boolean(committed));
        json_object_set_new(o, "files_error", json_text(error));
        json_object_set_new(o, "files_unlisted", json_integer((json_int_t)unlisted));
}

json_t *runfiles_json(struct store *s, const char *run_id)
{
        json_t *a = json_array();
        struct file_record *f = NULL;
        size_t n = 0;

        if (store_files_list(s, run_id, NULL, &f, &n) < 0)
                return a;
        for (size_t i = 0; i < n; i++) {
                json_t *o = json_object();
                runfiles_json_set_path(o, "path", f[i].path);
                json_object_set_new(o, "kind", json_string(f[i].kind));
                json_object_set_new(o, "size", f[i].size == RUN_UNSET ? json_null()
                                                                       : json_integer((json_int_t)f[i].size));
                json_object_set_new(o, "sha256", f[i].sha256[0] ? json_string(f[i].sha256) : json_null());
                json_object_set_new(o, "mime", f[i].mime ? json_string(f[i].mime) : json_null());
                if (f[i].skip)
                        json_object_set_new(o, "skip", json_string(f[i].skip));
                if (f[i].link_target)
                        runfiles_json_set_path(o, "link_target", f[i].link_target);
                if (f[i].lower_changed)
                        json_object_set_new(o, "lower_changed", json_true());
                json_array_append_new(a, o);
        }
        file_records_free(f, n);
        return a;
}
