/* apply-check.c - phase 1 of apply (apply.h): every entry of the
 * change set against the target, without changing anything. Each entry
 * gets its step (what to install, what to rename aside) or its
 * conflicts, all of them, so the caller sees every reason at once. The
 * same no-follow rules as apply.c: the parent by fs_open_parent(), the
 * final component by lstat and O_NOFOLLOW only. */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "workspace/apply-internal.h"
#include "lib/fsutil.h"
#include "lib/util.h"

static void conflict(struct ctx *x, const char *path, enum apply_conflict_reason reason, int error)
{
        struct apply_result *r = x->res;

        if (r->n_conflicts == x->conflicts_cap) {
                x->conflicts_cap = x->conflicts_cap ? x->conflicts_cap * 2 : 16;
                r->conflicts = xrealloc(r->conflicts, x->conflicts_cap * sizeof(*r->conflicts));
        }
        r->conflicts[r->n_conflicts++] = (struct apply_conflict){
                .path = xstrdup(path),
                .reason = reason,
                .error = error,
        };
}
/* Does the target entry (pfd/name, lstat st) hold this content? */
static int matches(int pfd, const char *name, const struct stat *st, mode_t mode, const char *sha)
{
        char hex[DIGEST_HEX_SIZE];
        int r;

        if ((st->st_mode & S_IFMT) != (mode & S_IFMT))
                return 0;
        if (!S_ISREG(mode) && !S_ISLNK(mode))
                return 1;       /* directories and special files: type is all we compare */
        r = fs_hash_at(pfd, name, st, hex, NULL);
        if (r < 0)
                return r;
        return streq(hex, sha);
}

/* A directory about to be removed must hold only what the change set
 * deletes; anything else the user put there since is a conflict. */
static void check_dir_deleted(struct ctx *x, int pfd, const char *name, const char *path)
{
        _cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_strv_ char **names = NULL;
        int r;

        if (fd < 0) {
                conflict(x, path, APPLY_CONFLICT_ERROR, -errno);
                return;
        }
        r = fs_list_dir(fd, &names);
        if (r < 0) {
                conflict(x, path, APPLY_CONFLICT_ERROR, r);
                return;
        }
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *child = join(path, *n);
                const struct change *e = changeset_find(x->cs, child);

                if (!e || e->kind != CHANGE_DELETED || e->skip != CHANGE_SKIP_NONE)
                        conflict(x, child, APPLY_CONFLICT_NOT_EMPTY, 0);
        }
}

/* The host changed this path while the job ran (changeset.h,
 * lower_changed): the job's change may rest on a version the host has
 * since replaced, and installing it would silently drop the host's edit.
 * That is a conflict unless the caller asked to overwrite. Checked only
 * once the target is known not to hold the new version already, so
 * applying twice stays harmless. */
static bool based_on_unknown(struct ctx *x, const struct change *c)
{
        if (!c->lower_changed || x->overwrite)
                return false;
        conflict(x, c->path, APPLY_CONFLICT_DURING_RUN, 0);
        return true;
}

/* The parent of c's path could not be opened (pfd, -errno): a deletion
 * of what has no parent is done already; anything else conflicts. */
static void refuse_parent(struct ctx *x, const struct change *c, struct step *s, int pfd)
{
        if ((pfd == -ENOENT || pfd == -ENOTDIR) && c->kind == CHANGE_DELETED)
                s->already = true;      /* no parent dir, so no entry either */
        /* -ELOOP: a symlink where a directory was; even a deletion
         * is refused, since the path now names something else */
        else if (pfd == -ENOENT)
                conflict(x, c->path, APPLY_CONFLICT_MISSING, 0);
        else if (pfd == -ELOOP || pfd == -ENOTDIR || pfd == -EXDEV)
                conflict(x, c->path, APPLY_CONFLICT_UNSAFE, pfd);
        else
                conflict(x, c->path, APPLY_CONFLICT_ERROR, pfd);
}

/* A deletion: done already when absent, refused when the host's entry
 * is not the one the run saw; a directory's contents are checked too. */
static void check_deleted(struct ctx *x, const struct change *c, struct step *s, int pfd,
                          const char *name, struct stat *st, bool absent)
{
        int m_old;

        if (absent) {
                s->already = true;
                return;
        }
        if (based_on_unknown(x, c))
                return;
        m_old = matches(pfd, name, st, c->old_mode, c->old_sha256);
        if (m_old < 0) {
                conflict(x, c->path, APPLY_CONFLICT_ERROR, m_old);
                return;
        }
        if (!m_old) {
                bool same_type = (st->st_mode & S_IFMT) == (c->old_mode & S_IFMT);
                conflict(x, c->path, same_type ? APPLY_CONFLICT_CHANGED : APPLY_CONFLICT_TYPE, 0);
                return;
        }
        if (S_ISDIR(c->old_mode))
                check_dir_deleted(x, pfd, name, c->path);
        s->trash = !s->under_trash;
}

/* An addition or modification where the host has an entry (st): left
 * alone when it is the new version already, installed over it when it
 * is the old one, else a conflict. */
static void check_over_existing(struct ctx *x, const struct change *c, struct step *s, int pfd,
                                const char *name, struct stat *st)
{
        bool perms_differ;
        int m_old, m_new;

        /* Already the new version? Then leave it (fixing permission bits
         * if only those differ): applying twice changes nothing. */
        m_new = matches(pfd, name, st, c->mode, c->sha256);
        if (m_new < 0) {
                conflict(x, c->path, APPLY_CONFLICT_ERROR, m_new);
                return;
        }
        perms_differ = !S_ISLNK(c->mode) && (st->st_mode & 07777) != perms_of(x, c->mode);
        if (m_new && !perms_differ) {
                s->already = true;
                return;
        }
        if (based_on_unknown(x, c))
                return;
        if (c->kind == CHANGE_MODIFIED) {
                m_old = matches(pfd, name, st, c->old_mode, c->old_sha256);
                if (m_old < 0) {
                        conflict(x, c->path, APPLY_CONFLICT_ERROR, m_old);
                        return;
                }
                if (m_old) {
                        if (S_ISDIR(c->old_mode) && S_ISDIR(c->mode))
                                s->install = INST_CHMOD;
                        else if (S_ISDIR(c->old_mode)) {
                                check_dir_deleted(x, pfd, name, c->path);
                                s->trash = true;
                                s->install = INST_CREATE;
                        } else if (S_ISDIR(c->mode)) {
                                s->trash = true;
                                s->install = INST_MKDIR;
                        } else
                                s->install = INST_REPLACE;
                        return;
                }
        }
        if (m_new) {
                s->already = true;
                s->install = INST_CHMOD;
                return;
        }
        if (c->kind == CHANGE_ADDED)
                conflict(x, c->path, APPLY_CONFLICT_EXISTS, 0);
        else if ((st->st_mode & S_IFMT) != (c->old_mode & S_IFMT))
                conflict(x, c->path, APPLY_CONFLICT_TYPE, 0);
        else
                conflict(x, c->path, APPLY_CONFLICT_CHANGED, 0);
}

void apply_check_entry(struct ctx *x, size_t i)
{
        const struct change *c = &x->cs->entries[i];
        struct step *s = &x->steps[i];
        struct step *ps;
        _cleanup_close_ int pfd = -1;
        const char *name;
        struct stat st;
        bool absent;

        if (c->skip != CHANGE_SKIP_NONE) {
                x->res->n_skipped++;
                return;
        }
        if (!fs_path_valid(c->path)) {
                conflict(x, c->path, APPLY_CONFLICT_UNSAFE, -EINVAL);
                return;
        }
        ps = parent_step(x, c->path);
        if (ps && (ps->install == INST_MKDIR || ps->install == INST_INSIDE)) {
                /* inside a directory that does not exist yet */
                if (c->kind != CHANGE_DELETED)
                        s->install = INST_INSIDE;
                return;
        }
        s->under_trash = ps && (ps->trash || ps->under_trash);

        pfd = fs_open_parent(x->root, c->path, &name);
        if (pfd < 0) {
                refuse_parent(x, c, s, pfd);
                return;
        }
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                absent = false;
        else if (errno == ENOENT)
                absent = true;
        else {
                conflict(x, c->path, APPLY_CONFLICT_ERROR, -errno);
                return;
        }
        s->cur_mode = absent ? 0 : st.st_mode;

        if (c->kind == CHANGE_DELETED) {
                check_deleted(x, c, s, pfd, name, &st, absent);
                return;
        }
        if (c->kind != CHANGE_ADDED && c->kind != CHANGE_MODIFIED) {
                conflict(x, c->path, APPLY_CONFLICT_UNSAFE, -EINVAL);
                return;
        }
        if (absent) {
                if (based_on_unknown(x, c))
                        return;
                if (c->kind == CHANGE_MODIFIED)
                        conflict(x, c->path, APPLY_CONFLICT_MISSING, 0);
                else
                        s->install = S_ISDIR(c->mode) ? INST_MKDIR : INST_CREATE;
                return;
        }

        check_over_existing(x, c, s, pfd, name, &st);
}
