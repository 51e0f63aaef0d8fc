/* apply.c - check, stage, commit and finish a change set into a target
 * directory (apply.h has the phases and the guarantees). The check
 * phase is in apply-check.c; the types both share in apply-internal.h.
 *
 * Data shape: one step per change set entry, in the change set's order
 * (parents before children). Each step records what the check decided
 * (install kind, whether the old entry is renamed aside) and, as commit
 * proceeds, what was done, so rollback undoes exactly that in reverse.
 *
 * Why the target cannot trick us: every path is validated (fs_path_valid:
 * relative, no "." or ".."), its parent is opened with fs_open_parent()
 * (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or an O_NOFOLLOW walk), and the
 * final component is only touched with calls that do not follow it:
 * fstatat(AT_SYMLINK_NOFOLLOW), openat(O_NOFOLLOW), renameat2, unlinkat,
 * symlinkat, mkdirat. Temporaries are created O_EXCL / mkdirat /
 * symlinkat under random names, renames onto new paths use
 * RENAME_NOREPLACE, so nothing that appeared meanwhile is clobbered or
 * written through. A symlink planted in the target (e.g. `sub -> /etc`)
 * makes the paths below it conflicts, never writes into /etc.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "workspace/apply.h"
#include "workspace/apply-internal.h"
#include "workspace/protected.h"
#include "record/blobstore.h"
#include "lib/fsutil.h"
#include "lib/util.h"

#define TMP_PREFIX ".hutch-apply-"

mode_t apply_default_umask(void)
{
        /* umask(2) can only be read by setting it: put it straight back */
        mode_t m = umask(022);
        umask(m);
        return m;
}

/* Tell the caller about a temporary just made in the parent of path. */
static void note_temp(struct ctx *x, const char *path, const char *name)
{
        if (!x->opts || !x->opts->note_temp)
                return;
        _cleanup_free_ char *dir = parent_of(path);
        x->opts->note_temp(x->opts->note_userdata, dir, name);
}

/* Open the new content of c from the source; the caller verifies it. */
static int open_source(struct ctx *x, const struct change *c)
{
        struct stat st;
        int fd;

        if (x->src && x->src->blobs)
                fd = blobstore_open_blob(x->src->blobs, c->sha256);
        else if (x->src && x->src->upper_fd >= 0)
                fd = fs_open_beneath(x->src->upper_fd, c->path, O_RDONLY | O_NONBLOCK, 0);
        else
                return -EINVAL;
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        return fd;
}

/* Write the new version of c as name in dirfd (name is a temporary when
 * unique is set, else the final name inside a staged directory). */
static int stage_one(struct ctx *x, const struct change *c, int dirfd, bool unique, char *name_buf,
                     size_t name_len, bool *created)
{
        const char *final = base_of(c->path);
        int r;

        *created = false;
        if (S_ISDIR(c->mode)) {
                if (unique)
                        r = fs_create_unique(dirfd, TMP_PREFIX, 'd', 0700, NULL, name_buf, name_len);
                else
                        r = mkdirat(dirfd, final, 0700) < 0 ? -errno : 0;
                *created = r >= 0;
                return r;
        }
        if (S_ISLNK(c->mode)) {
                char hex[DIGEST_HEX_SIZE];

                if (!c->link_target)
                        return -EINVAL;
                digest_buffer(c->link_target, strlen(c->link_target), hex);
                if (!streq(hex, c->sha256))
                        return -EBADMSG;
                if (unique)
                        r = fs_create_unique(dirfd, TMP_PREFIX, 's', 0, c->link_target, name_buf,
                                             name_len);
                else
                        r = symlinkat(c->link_target, dirfd, final) < 0 ? -errno : 0;
                *created = r >= 0;
                return r;
        }
        if (!S_ISREG(c->mode))
                return -EINVAL;

        _cleanup_close_ int out = -1, in = -1;
        char hex[DIGEST_HEX_SIZE];
        struct digest d;
        int64_t n;

        in = open_source(x, c);
        if (in < 0)
                return in;
        if (unique)
                out = fs_create_unique(dirfd, TMP_PREFIX, 'f', 0600, NULL, name_buf, name_len);
        else {
                out = openat(dirfd, final, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0)
                        out = -errno;
        }
        if (out < 0)
                return out;
        *created = true;
        digest_init(&d);
        n = fs_copy_digest(in, out, &d, 0);
        if (n < 0)
                return (int)n;
        digest_final_hex(&d, hex);
        if (!streq(hex, c->sha256))
                return -EBADMSG;        /* the source is not what was recorded */
        if (fchmod(out, perms_of(x, c->mode)) < 0 || fsync(out) < 0)
                return -errno;
        return 0;
}

static int stage_all(struct ctx *x)
{
        const struct changeset *cs = x->cs;
        int r;

        for (size_t i = 0; i < cs->n; i++) {
                const struct change *c = &cs->entries[i];
                struct step *s = &x->steps[i];
                _cleanup_free_ char *dir = NULL;
                _cleanup_close_ int dfd = -1;
                bool created;

                switch (s->install) {
                case INST_MKDIR:
                case INST_CREATE:
                case INST_REPLACE:
                        dir = parent_of(c->path);
                        dfd = fs_open_beneath(x->root, dir, O_RDONLY | O_DIRECTORY, 0);
                        if (dfd < 0)
                                return dfd;
                        r = stage_one(x, c, dfd, true, s->tmp_name, sizeof(s->tmp_name), &created);
                        s->staged = created;    /* even on failure: cleanup removes it */
                        if (created)
                                note_temp(x, c->path, s->tmp_name);
                        if (r < 0)
                                return r;
                        s->stage_path = join(dir, s->tmp_name);
                        break;
                case INST_INSIDE: {
                        struct step *ps = parent_step(x, c->path);
                        if (!ps || !ps->stage_path)
                                return -EINVAL;
                        dfd = fs_open_beneath(x->root, ps->stage_path, O_RDONLY | O_DIRECTORY, 0);
                        if (dfd < 0)
                                return dfd;
                        r = stage_one(x, c, dfd, false, NULL, 0, &created);
                        if (r < 0)
                                return r;
                        s->stage_path = join(ps->stage_path, base_of(c->path));
                        break;
                }
                default:
                        break;
                }
        }
        /* directories get their final permission bits once filled */
        for (size_t i = cs->n; i-- > 0;) {
                const struct change *c = &cs->entries[i];
                struct step *s = &x->steps[i];
                _cleanup_close_ int fd = -1;

                if (!s->stage_path || !S_ISDIR(c->mode))
                        continue;
                fd = fs_open_beneath(x->root, s->stage_path, O_RDONLY | O_DIRECTORY, 0);
                if (fd < 0)
                        return fd;
                if (fchmod(fd, perms_of(x, c->mode)) < 0)
                        return -errno;
        }
        return 0;
}

/* Rename pfd/name to a fresh temporary name in the same directory. */
static int rename_aside(int pfd, const char *name, char *buf, size_t len)
{
        for (int attempt = 0; attempt < 100; attempt++) {
                int r = fs_random_name(TMP_PREFIX, buf, len);
                if (r < 0)
                        return r;
                if (renameat2(pfd, name, pfd, buf, RENAME_NOREPLACE) == 0)
                        return 0;
                if (errno == EINVAL) {
                        /* no RENAME_NOREPLACE on this filesystem: check, then
                         * rename (the random name makes a collision unlikely) */
                        struct stat st;
                        if (fstatat(pfd, buf, &st, AT_SYMLINK_NOFOLLOW) == 0)
                                continue;
                        if (renameat(pfd, name, pfd, buf) < 0)
                                return -errno;
                        return 0;
                }
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

static int set_mode_nofollow(int pfd, const char *name, mode_t mode)
{
        _cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;

        if (fd >= 0)
                return fchmod(fd, mode) < 0 ? -errno : 0;
        if (errno != EACCES)
                return -errno;
        /* unreadable file we own: chmod by name, after making sure it is
         * not a symlink (fchmodat would follow one) */
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        return fchmodat(pfd, name, mode, 0) < 0 ? -errno : 0;
}

static int install_one(struct ctx *x, size_t i)
{
        const struct change *c = &x->cs->entries[i];
        struct step *s = &x->steps[i];
        _cleanup_close_ int pfd = -1;
        const char *name;

        pfd = fs_open_parent(x->root, c->path, &name);
        if (pfd < 0)
                return pfd;
        switch (s->install) {
        case INST_MKDIR:
        case INST_CREATE:
                if (renameat2(pfd, s->tmp_name, pfd, name, RENAME_NOREPLACE) < 0) {
                        struct stat st;
                        if (errno != EINVAL)
                                return -errno;
                        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                                return -EEXIST;
                        if (renameat(pfd, s->tmp_name, pfd, name) < 0)
                                return -errno;
                }
                s->installed = true;
                return 0;
        case INST_REPLACE:
                if (renameat2(pfd, s->tmp_name, pfd, name, RENAME_EXCHANGE) == 0) {
                        s->installed = s->exchanged = true;
                        return 0;
                }
                if (errno != EINVAL)
                        return -errno;
                /* no RENAME_EXCHANGE: keep the old version as a hard link
                 * (linkat without AT_SYMLINK_FOLLOW links a symlink itself) */
                for (int attempt = 0;; attempt++) {
                        int r = fs_random_name(TMP_PREFIX, s->backup_name, sizeof(s->backup_name));
                        if (r < 0)
                                return r;
                        if (linkat(pfd, name, pfd, s->backup_name, 0) == 0)
                                break;
                        if (errno != EEXIST || attempt > 100)
                                return -errno;
                }
                s->backed_up = true;
                note_temp(x, c->path, s->backup_name);
                if (renameat(pfd, s->tmp_name, pfd, name) < 0)
                        return -errno;
                s->installed = true;
                return 0;
        case INST_CHMOD: {
                int r = set_mode_nofollow(pfd, name, perms_of(x, c->mode));
                if (r < 0)
                        return r;
                s->installed = true;
                return 0;
        }
        default:
                return 0;
        }
}

static int undo_install(struct ctx *x, size_t i)
{
        const struct change *c = &x->cs->entries[i];
        struct step *s = &x->steps[i];
        _cleanup_close_ int pfd = -1;
        const char *name;

        pfd = fs_open_parent(x->root, c->path, &name);
        if (pfd < 0)
                return pfd;
        switch (s->install) {
        case INST_MKDIR:
        case INST_CREATE:
                if (renameat2(pfd, name, pfd, s->tmp_name, RENAME_NOREPLACE) < 0 &&
                    (errno != EINVAL || renameat(pfd, name, pfd, s->tmp_name) < 0))
                        return -errno;
                break;
        case INST_REPLACE:
                if (s->exchanged) {
                        if (renameat2(pfd, s->tmp_name, pfd, name, RENAME_EXCHANGE) < 0)
                                return -errno;
                } else if (s->backed_up) {
                        if (renameat(pfd, s->backup_name, pfd, name) < 0)
                                return -errno;
                        s->backed_up = false;
                }
                break;
        case INST_CHMOD:
                return set_mode_nofollow(pfd, name, s->cur_mode & 07777);
        default:
                break;
        }
        s->installed = false;
        return 0;
}

static int undo_trash(struct ctx *x, size_t i)
{
        const struct change *c = &x->cs->entries[i];
        struct step *s = &x->steps[i];
        _cleanup_close_ int pfd = -1;
        const char *name;

        pfd = fs_open_parent(x->root, c->path, &name);
        if (pfd < 0)
                return pfd;
        if (renameat2(pfd, s->trash_name, pfd, name, RENAME_NOREPLACE) < 0 &&
            (errno != EINVAL || renameat(pfd, s->trash_name, pfd, name) < 0))
                return -errno;
        s->trashed = false;
        return 0;
}

static void rollback(struct ctx *x)
{
        while (x->n_journal > 0) {
                const struct done_op *op = &x->journal[--x->n_journal];
                int r = op->install ? undo_install(x, op->step) : undo_trash(x, op->step);
                if (r < 0)
                        x->res->n_rollback_failed++;
        }
}

/* Remove a name left in the parent of path; count it if that fails. */
static void remove_leftover(struct ctx *x, const char *path, const char *leftover)
{
        _cleanup_free_ char *dir = parent_of(path);
        _cleanup_close_ int dfd = fs_open_beneath(x->root, dir, O_RDONLY | O_DIRECTORY, 0);
        int r;

        if (dfd < 0) {
                x->res->n_leftover++;
                return;
        }
        r = fs_remove_tree_at(dfd, leftover);
        if (r < 0 && r != -ENOENT)
                x->res->n_leftover++;
        else
                (void)fsync(dfd);
}

static void cleanup_staged(struct ctx *x)
{
        for (size_t i = 0; i < x->cs->n; i++) {
                struct step *s = &x->steps[i];
                if (s->staged && !s->installed && s->tmp_name[0])
                        remove_leftover(x, x->cs->entries[i].path, s->tmp_name);
        }
}

static int cmp_conflict(const void *a, const void *b)
{
        return fs_path_compare(((const struct apply_conflict *)a)->path,
                               ((const struct apply_conflict *)b)->path);
}

static int fault(const struct apply_options *opts, unsigned *n)
{
        return opts && opts->fail_before_step && ++*n == opts->fail_before_step ? -EIO : 0;
}

/* Phase 0: list the carried entries at protected paths in ret. */
static void find_protected(const struct changeset *cs, int target_fd, const struct apply_options *opts,
                           struct apply_result *ret)
{
        for (size_t i = 0; i < cs->n; i++) {
                const struct change *c = &cs->entries[i];
                const char *why;

                if (c->skip != CHANGE_SKIP_NONE)
                        continue;
                why = protected_changeset_reason(cs, c, target_fd, opts ? opts->protect : NULL);
                if (!why)
                        continue;
                ret->protected = xrealloc(ret->protected, (ret->n_protected + 1) * sizeof(*ret->protected));
                ret->protected[ret->n_protected++] = (struct apply_protected){ .path = xstrdup(c->path),
                                                                               .reason = why };
        }
}

/* --skip-protected: apply cs without the entries ret lists as protected
 * (both in path order), the protected list kept in ret. */
static int apply_unprotected(const struct changeset *cs, int target_fd, const struct apply_source *src,
                             const struct apply_options *opts, struct apply_result *ret)
{
        struct apply_options inner = *opts;
        struct changeset rest = { .entries = xcalloc(cs->n ? cs->n : 1, sizeof(*cs->entries)) };
        struct apply_protected *prot = ret->protected;
        size_t n_prot = ret->n_protected, k = 0;
        int r;

        for (size_t i = 0; i < cs->n; i++) {
                const struct change *c = &cs->entries[i];
                if (k < n_prot && streq(c->path, prot[k].path) && c->skip == CHANGE_SKIP_NONE) {
                        k++;
                        continue;
                }
                rest.entries[rest.n++] = *c;
                rest.n_carried += c->skip == CHANGE_SKIP_NONE;
        }
        inner.protected_policy = APPLY_PROTECTED_ALLOW;
        r = apply_changeset(&rest, target_fd, src, &inner, ret);
        free(rest.entries);
        ret->protected = prot;
        ret->n_protected = n_prot;
        return r;
}

int apply_changeset(const struct changeset *cs, int target_fd, const struct apply_source *src,
                    const struct apply_options *opts, struct apply_result *ret)
{
        struct ctx x = { .cs = cs, .root = target_fd, .src = src, .res = ret, .opts = opts };
        x.overwrite = opts && opts->overwrite;
        x.perm_mask = opts && opts->keep_modes ? (mode_t)01777
                      : 0777 & ~(opts && opts->set_umask ? opts->umask : apply_default_umask());
        unsigned step_no = 0;
        int r = 0;

        memset(ret, 0, sizeof(*ret));
        /* parent lookups need tree order, and one entry per path */
        for (size_t i = 1; i < cs->n; i++)
                if (fs_path_compare(cs->entries[i - 1].path, cs->entries[i].path) >= 0)
                        return -EINVAL;

        /* 0. protected paths: the job must not choose what the user's own
         * tools run next (protected.h); only the caller's policy lets
         * such a change through */
        enum apply_protected_policy policy = opts ? opts->protected_policy : APPLY_PROTECTED_REFUSE;
        if (policy != APPLY_PROTECTED_ALLOW)
                find_protected(cs, target_fd, opts, ret);
        if (ret->n_protected && policy == APPLY_PROTECTED_SKIP)
                return apply_unprotected(cs, target_fd, src, opts, ret);
        if (ret->n_protected && policy != APPLY_PROTECTED_ALLOW)
                return -EPERM;
        x.steps = xcalloc(cs->n ? cs->n : 1, sizeof(*x.steps));
        x.journal = xcalloc(cs->n ? cs->n * 2 : 1, sizeof(*x.journal));

        /* 1. check */
        for (size_t i = 0; i < cs->n; i++)
                apply_check_entry(&x, i);
        if (ret->n_conflicts > 0) {
                qsort(ret->conflicts, ret->n_conflicts, sizeof(*ret->conflicts), cmp_conflict);
                r = -ESTALE;
                goto out;
        }

        /* 2. stage */
        r = stage_all(&x);
        if (r < 0) {
                cleanup_staged(&x);
                goto out;
        }

        /* 3. commit: aside deepest first, then install parents first */
        for (size_t i = cs->n; i-- > 0;) {
                struct step *s = &x.steps[i];
                _cleanup_close_ int pfd = -1;
                const char *name;

                if (!s->trash)
                        continue;
                r = fault(opts, &step_no);
                if (r < 0)
                        goto undo;
                pfd = fs_open_parent(target_fd, cs->entries[i].path, &name);
                if (pfd < 0) {
                        r = pfd;
                        goto undo;
                }
                r = rename_aside(pfd, name, s->trash_name, sizeof(s->trash_name));
                if (r < 0)
                        goto undo;
                s->trashed = true;
                note_temp(&x, cs->entries[i].path, s->trash_name);
                x.journal[x.n_journal++] = (struct done_op){ .step = i, .install = false };
        }
        /* Installs parents first; permission changes of existing
         * directories last, deepest first, so a directory made read-only
         * (0555) still lets the files meant for it in. */
        for (int pass = 0; pass < 2; pass++) {
                for (size_t k = 0; k < cs->n; k++) {
                        size_t i = pass == 0 ? k : cs->n - 1 - k;
                        struct step *s = &x.steps[i];
                        bool dir_chmod = s->install == INST_CHMOD && S_ISDIR(cs->entries[i].mode);

                        if (s->install == INST_NONE || s->install == INST_INSIDE ||
                            dir_chmod != (pass == 1))
                                continue;
                        r = fault(opts, &step_no);
                        if (r < 0)
                                goto undo;
                        r = install_one(&x, i);
                        if (r < 0)
                                goto undo;
                        x.journal[x.n_journal++] = (struct done_op){ .step = i, .install = true };
                }
        }

        /* 4. finish: drop the old versions */
        for (size_t i = 0; i < cs->n; i++) {
                const struct change *c = &cs->entries[i];
                struct step *s = &x.steps[i];

                if (c->skip != CHANGE_SKIP_NONE)
                        continue;
                if (s->trashed)
                        remove_leftover(&x, c->path, s->trash_name);
                if (s->exchanged)
                        remove_leftover(&x, c->path, s->tmp_name);
                if (s->backed_up)
                        remove_leftover(&x, c->path, s->backup_name);
                if (s->already)
                        ret->n_already++;
                else
                        ret->n_applied++;
        }
        r = 0;
        goto out;

undo:
        rollback(&x);
        cleanup_staged(&x);
out:
        for (size_t i = 0; i < cs->n; i++)
                free(x.steps[i].stage_path);
        free(x.steps);
        free(x.journal);
        return r;
}

void apply_result_done(struct apply_result *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n_conflicts; i++)
                free(r->conflicts[i].path);
        free(r->conflicts);
        for (size_t i = 0; i < r->n_protected; i++)
                free(r->protected[i].path);
        free(r->protected);
        memset(r, 0, sizeof(*r));
}

const char *apply_conflict_reason_to_string(enum apply_conflict_reason r)
{
        static const char *const names[_APPLY_CONFLICT_MAX] = {
                [APPLY_CONFLICT_CHANGED] = "changed",
                [APPLY_CONFLICT_EXISTS] = "exists",
                [APPLY_CONFLICT_MISSING] = "missing",
                [APPLY_CONFLICT_TYPE] = "type",
                [APPLY_CONFLICT_NOT_EMPTY] = "not_empty",
                [APPLY_CONFLICT_UNSAFE] = "unsafe",
                [APPLY_CONFLICT_ERROR] = "error",
                [APPLY_CONFLICT_DURING_RUN] = "during_run",
        };
        return r >= 0 && r < _APPLY_CONFLICT_MAX ? names[r] : NULL;
}
