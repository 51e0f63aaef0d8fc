/* changeset.c - compute an overlay upper dir's change set (changeset.h).
 *
 * Data shape: the upper dir of one run, typically tens to thousands of
 * entries, walked once in parallel with the matching lower directories.
 * Regular files are hashed (and stored, if asked) in one streaming pass;
 * a file whose size equals its lower version's is hashed first and only
 * stored when it turns out to differ, so copy-ups do not fill the store.
 *
 * Why this cannot be tricked by what the job left behind: both trees are
 * walked from directory fds with one openat(O_NOFOLLOW | O_DIRECTORY) per
 * level, entries are classified with fstatat(AT_SYMLINK_NOFOLLOW), files
 * are opened O_NOFOLLOW | O_NONBLOCK (a fifo swapped in cannot block us)
 * and the type is checked again with fstat() on the fd that is read.
 * A symlink is only ever read with readlinkat(). Names come from readdir,
 * so they contain no '/'; "." and ".." are dropped. The job is gone when
 * this runs (see changeset_compute's contract), so no one races us.
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "record/blobstore.h"
#include "workspace/changeset.h"
#include "lib/fsutil.h"
#include "lib/util.h"

struct walker {
        const struct changeset_limits *lim;
        struct blobstore *bs;
        struct change *v;
        size_t n, cap;
        size_t n_carried, n_skipped_listed, n_unlisted;
        uint64_t bytes;
};

static char *join(const char *prefix, const char *name)
{
        return *prefix ? xasprintf("%s/%s", prefix, name) : xstrdup(name);
}

static int xattr_value(int fd, const char *name, char *buf, size_t len)
{
        ssize_t r = fgetxattr(fd, name, buf, len - 1);
        if (r < 0)
                return -errno;
        buf[r] = '\0';
        return (int)r;
}

/* 'y' opaque, 'x' holds xattr whiteouts, 0 neither */
static char opaque_mark(int dirfd)
{
        static const char *const names[] = { "user.overlay.opaque", "trusted.overlay.opaque" };
        char buf[8];

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (xattr_value(dirfd, names[i], buf, sizeof(buf)) >= 1 &&
                    (buf[0] == 'y' || buf[0] == 'x'))
                        return buf[0];
        return 0;
}

static bool has_redirect(int dirfd)
{
        char buf[8];
        int r = xattr_value(dirfd, "user.overlay.redirect", buf, sizeof(buf));
        if (r >= 0 || r == -ERANGE)
                return true;
        r = xattr_value(dirfd, "trusted.overlay.redirect", buf, sizeof(buf));
        return r >= 0 || r == -ERANGE;
}

static bool is_xattr_whiteout(int dirfd, const char *name)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        char buf[8];

        if (fd < 0)
                return false;
        return xattr_value(fd, "user.overlay.whiteout", buf, sizeof(buf)) >= 0 ||
               xattr_value(fd, "trusted.overlay.whiteout", buf, sizeof(buf)) >= 0;
}

static struct change *add_entry(struct walker *w, char *path, enum change_kind kind)
{
        struct change *c;

        if (w->n == w->cap) {
                w->cap = w->cap ? w->cap * 2 : 64;
                w->v = xrealloc(w->v, w->cap * sizeof(*w->v));
        }
        c = &w->v[w->n++];
        memset(c, 0, sizeof(*c));
        c->path = path;
        c->kind = kind;
        return c;
}

/* Skipped changes get a row each only up to here: past the caps a row
 * per file would let the job size the record (20000 files of 200-byte
 * names were 13 MB of WAL with max_files of them listed). */
static size_t skip_listing_cap(const struct walker *w)
{
        size_t cap = w->lim && w->lim->max_files ? w->lim->max_files : 100000;
        return MIN(cap, (size_t)CHANGESET_MAX_SKIPPED_LISTED);
}

/* Record a change that is not carried; takes path. */
static void add_skipped(struct walker *w, char *path, enum change_kind kind,
                        enum change_skip why, int error, const struct stat *st)
{
        struct change *c;

        if (w->n_skipped_listed >= skip_listing_cap(w)) {
                w->n_unlisted++;
                free(path);
                return;
        }
        w->n_skipped_listed++;
        c = add_entry(w, path, kind);
        c->skip = why;
        c->error = error;
        if (st) {
                c->mode = st->st_mode;
                c->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
        }
}

/* A path over max_path is counted, never listed (nor walked below). */
static bool path_too_long(struct walker *w, const char *path)
{
        if (!w->lim || !w->lim->max_path || strlen(path) <= w->lim->max_path)
                return false;
        w->n_unlisted++;
        return true;
}

static uint64_t bytes_left(const struct walker *w)
{
        if (!w->lim || !w->lim->max_bytes)
                return 0;
        return w->lim->max_bytes > w->bytes ? w->lim->max_bytes - w->bytes : 1;
}

static bool files_full(const struct walker *w)
{
        return w->lim && w->lim->max_files && w->n_carried >= w->lim->max_files;
}

static bool bytes_full(const struct walker *w, uint64_t more)
{
        return w->lim && w->lim->max_bytes && w->bytes + more > w->lim->max_bytes;
}

/* Did the lower entry st change after the job could first see it?
 *
 * Why ctime answers that soundly: the lower dir is the host's own
 * directory, read live through the overlay (nothing is snapshotted at
 * start). A host edit during the run may or may not have reached the job:
 * a file the job copied up (opened for writing) before the edit kept the
 * old content, one it read before and rewrote after the edit is a lost
 * update either way. So whatever the job's change is based on, it is not
 * known to be the version the lower holds now, and apply must not take
 * the lower's present content as the job's starting point. Every content,
 * mode, owner, link-count or name change of an inode sets its ctime to
 * the current time, and ctime cannot be set back without privilege over
 * the clock (utimensat sets only atime and mtime). The timestamp lies
 * between the coarse and the fine clock at the change (multigrain
 * timestamps), so the caller takes since from the fine clock before the
 * sandbox exists and lets the coarse clock pass it before going on: an
 * edit after that, and so any the job could have raced with, has
 * ctime >= since. What this cannot see: a wall
 * clock stepped back during the run, and filesystems whose ctime comes
 * from another machine's clock (NFS); hutch-apply(1) says so. */
static bool lower_changed(const struct walker *w, const struct stat *st)
{
        const struct timespec *t;

        if (!w->lim || (!w->lim->since.tv_sec && !w->lim->since.tv_nsec))
                return false;
        t = &w->lim->since;
        return st->st_ctim.tv_sec > t->tv_sec ||
               (st->st_ctim.tv_sec == t->tv_sec && st->st_ctim.tv_nsec >= t->tv_nsec);
}

/* An upper entry overlayfs copied up from the lower carries an origin
 * xattr (set by the kernel at copy-up; the job cannot set overlay
 * xattrs through the overlay, and never sees the upper dir itself). */
static bool copied_up(int dirfd, const char *name)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *proc = NULL;
        char buf[8];

        if (fd < 0)
                return false;
        proc = xasprintf("/proc/self/fd/%d", fd);
        /* getxattr through the magic link reaches the O_PATH fd's own
         * inode (never what a symlink points to) */
        return getxattr(proc, "user.overlay.origin", buf, sizeof(buf)) >= 0 || errno == ERANGE ||
               getxattr(proc, "trusted.overlay.origin", buf, sizeof(buf)) >= 0 || errno == ERANGE;
}

/* Past collection's own deadline? Checked once per entry: the work per
 * entry is bounded by the byte budget, so overrunning it costs at most
 * one file's hash and copy. */
static bool out_of_time(const struct walker *w)
{
        struct timespec now;

        if (!w->lim || (!w->lim->deadline.tv_sec && !w->lim->deadline.tv_nsec))
                return false;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return now.tv_sec > w->lim->deadline.tv_sec ||
               (now.tv_sec == w->lim->deadline.tv_sec && now.tv_nsec >= w->lim->deadline.tv_nsec);
}

/* Record lower entry dirfd/name (stat st) and, for a directory, everything
 * below it, as deleted. */
static int emit_deleted_tree(struct walker *w, int dirfd, const char *name,
                             const char *path, const struct stat *st, int depth)
{
        struct change *c;
        int r;

        if (path_too_long(w, path))
                return 0;
        if (out_of_time(w)) {
                add_skipped(w, xstrdup(path), CHANGE_DELETED, CHANGE_SKIP_TIME, 0, NULL);
                return 0;
        }
        if (S_ISDIR(st->st_mode)) {
                _cleanup_strv_ char **names = NULL;
                _cleanup_close_ int fd = -1;

                if (depth >= CHANGESET_MAX_DEPTH) {
                        add_skipped(w, xstrdup(path), CHANGE_DELETED, CHANGE_SKIP_TOO_DEEP, 0, NULL);
                        return 0;
                }
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0)
                        r = fs_list_dir(fd, &names);
                else
                        r = -errno;
                if (r < 0) {
                        add_skipped(w, xstrdup(path), CHANGE_DELETED, CHANGE_SKIP_UNREADABLE, r, NULL);
                        return 0;
                }
                for (char **n = names; *n; n++) {
                        _cleanup_free_ char *child = join(path, *n);
                        struct stat cst;

                        if (fstatat(fd, *n, &cst, AT_SYMLINK_NOFOLLOW) < 0)
                                return -errno;
                        r = emit_deleted_tree(w, fd, *n, child, &cst, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        if (files_full(w)) {
                add_skipped(w, xstrdup(path), CHANGE_DELETED, CHANGE_SKIP_MAX_FILES, 0, NULL);
                return 0;
        }
        {
                char hex[DIGEST_HEX_SIZE];
                r = fs_hash_at(dirfd, name, st, hex, NULL);
                if (r < 0) {
                        add_skipped(w, xstrdup(path), CHANGE_DELETED, CHANGE_SKIP_UNREADABLE, r, NULL);
                        return 0;
                }
                c = add_entry(w, xstrdup(path), CHANGE_DELETED);
                memcpy(c->old_sha256, hex, sizeof(hex));
        }
        c->lower_changed = lower_changed(w, st);
        c->old_mode = st->st_mode;
        c->old_size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
        w->n_carried++;
        return 0;
}

/* Delete-record every entry of lower dir lfd/name's children (used when a
 * lower directory was replaced by a non-directory). */
static int emit_deleted_children(struct walker *w, int lfd, const char *name,
                                 const char *path, int depth)
{
        _cleanup_strv_ char **names = NULL;
        _cleanup_close_ int fd = openat(lfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r;

        if (fd < 0)
                return -errno;
        r = fs_list_dir(fd, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *child = join(path, *n);
                struct stat st;

                if (fstatat(fd, *n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                r = emit_deleted_tree(w, fd, *n, child, &st, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A regular file or symlink in upper: added, modified or unchanged. */
/* Read a regular file of the upper's content: into the blob store when
 * there is one, else only hashed; new_hex and *size get what was read.
 * 0; 1 when it was skipped instead (recorded as such, path taken); or
 * -errno (our store failing, or -EAGAIN: it changed between two reads). */
static int read_content(struct walker *w, int ufd, const char *name, char *path, enum change_kind kind,
                        const struct stat *ust, char new_hex[DIGEST_HEX_SIZE], uint64_t *size)
{
        _cleanup_close_ int fd = -1;
        struct stat fst;
        int r;

        fd = openat(ufd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode)) {
                add_skipped(w, path, kind, CHANGE_SKIP_UNREADABLE,
                            fd < 0 ? -errno : -EAGAIN, ust);
                return 1;
        }
        if (w->bs) {
                char stored_hex[DIGEST_HEX_SIZE];
                uint64_t stored_size;

                r = blobstore_put_fd(w->bs, fd, bytes_left(w), stored_hex, &stored_size);
                if (r == -EFBIG) {      /* grew past the budget since its stat */
                        add_skipped(w, path, kind, CHANGE_SKIP_MAX_BYTES, 0, ust);
                        return 1;
                }
                if (r < 0)
                        return r;       /* our store failing is our error */
                if (new_hex[0] && !streq(new_hex, stored_hex))
                        return -EAGAIN; /* changed between two reads */
                memcpy(new_hex, stored_hex, DIGEST_HEX_SIZE);
                *size = stored_size;
        } else {
                struct digest d;
                int64_t n;

                digest_init(&d);
                n = fs_copy_digest(fd, -1, &d, bytes_left(w));
                if (n == -EFBIG) {
                        add_skipped(w, path, kind, CHANGE_SKIP_MAX_BYTES, 0, ust);
                        return 1;
                }
                if (n >= 0)
                        digest_final_hex(&d, new_hex);
                if (n < 0) {
                        add_skipped(w, path, kind, CHANGE_SKIP_UNREADABLE, (int)n, ust);
                        return 1;
                }
                *size = (uint64_t)n;
        }
        return 0;
}

/* Record the carried change at path (taken), with what the upper
 * (ust, new_hex, size, target: taken) and the lower (lst, old_hex; NULL
 * when there is none) hold. */
static void add_change(struct walker *w, int ufd, int lfd, const char *name, char *path,
                       enum change_kind kind, const struct stat *ust, const struct stat *lst,
                       const char *new_hex, const char *old_hex, uint64_t size, char *target)
{
        struct change *c = add_entry(w, path, kind);
        c->mode = ust->st_mode;
        c->size = S_ISLNK(ust->st_mode) ? strlen(target) : size;
        memcpy(c->sha256, new_hex, DIGEST_HEX_SIZE);
        c->link_target = target;
        if (lst) {
                c->old_mode = lst->st_mode;
                c->old_size = S_ISREG(lst->st_mode) ? (uint64_t)lst->st_size : 0;
                memcpy(c->old_sha256, old_hex, DIGEST_HEX_SIZE);
                c->lower_changed = lower_changed(w, lst);
        } else {
                /* Copied up, yet no lower now: the job renamed a lower
                 * file here, or the host removed it during the run. The
                 * lower directory's ctime tells the second apart (the
                 * job's rename never touches the lower); a host change
                 * to another entry of the same directory is flagged
                 * too, the safe side. */
                struct stat dst;
                c->lower_changed = lfd >= 0 && fstat(lfd, &dst) == 0 && lower_changed(w, &dst) &&
                                   copied_up(ufd, name);
        }
        w->n_carried++;
        if (S_ISREG(ust->st_mode))
                w->bytes += size;
}

static int visit_leaf(struct walker *w, int ufd, int lfd, const char *name, char *path,
                      const struct stat *ust, const struct stat *lst)
{
        enum change_kind kind = lst ? CHANGE_MODIFIED : CHANGE_ADDED;
        char new_hex[DIGEST_HEX_SIZE] = "", old_hex[DIGEST_HEX_SIZE] = "";
        _cleanup_free_ char *target = NULL;
        bool same_type = lst && (lst->st_mode & S_IFMT) == (ust->st_mode & S_IFMT);
        uint64_t size = S_ISREG(ust->st_mode) ? (uint64_t)ust->st_size : 0;
        int r;

        /* Content can only be equal when type and size are: only then does
         * the upper file have to be hashed before we know it changed. */
        if (same_type && (!S_ISREG(ust->st_mode) || lst->st_size == ust->st_size)) {
                r = fs_hash_at(ufd, name, ust, new_hex, &target);
                if (r < 0) {
                        add_skipped(w, path, kind, CHANGE_SKIP_UNREADABLE, r, ust);
                        return 0;
                }
                r = fs_hash_at(lfd, name, lst, old_hex, NULL);
                if (r < 0) {
                        add_skipped(w, path, kind, CHANGE_SKIP_UNREADABLE, r, ust);
                        return 0;
                }
                if (streq(new_hex, old_hex) && (ust->st_mode & 07777) == (lst->st_mode & 07777)) {
                        free(path);     /* a copy-up that changed nothing we carry */
                        return 0;
                }
        }

        if (files_full(w)) {
                add_skipped(w, path, kind, CHANGE_SKIP_MAX_FILES, 0, ust);
                return 0;
        }
        if (S_ISREG(ust->st_mode) && bytes_full(w, size)) {
                add_skipped(w, path, kind, CHANGE_SKIP_MAX_BYTES, 0, ust);
                return 0;
        }

        if (lst && !old_hex[0] && !S_ISDIR(lst->st_mode)) {
                r = fs_hash_at(lfd, name, lst, old_hex, NULL);
                if (r < 0) {
                        add_skipped(w, path, kind, CHANGE_SKIP_UNREADABLE, r, ust);
                        return 0;
                }
        }

        if (S_ISLNK(ust->st_mode) && !target) {
                r = fs_hash_at(ufd, name, ust, new_hex, &target);
                if (r < 0) {
                        add_skipped(w, path, kind, CHANGE_SKIP_UNREADABLE, r, ust);
                        return 0;
                }
        }
        if (S_ISREG(ust->st_mode) && (w->bs || !new_hex[0])) {
                r = read_content(w, ufd, name, path, kind, ust, new_hex, &size);
                if (r != 0)
                        return r < 0 ? r : 0;
        }

        add_change(w, ufd, lfd, name, path, kind, ust, lst, new_hex, old_hex, size, TAKE_PTR(target));
        return 0;
}

static bool name_in(char **sorted, const char *name)
{
        size_t lo = 0, hi = strv_length(sorted);
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(sorted[mid], name);
                if (c == 0)
                        return true;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

static bool is_whiteout(const struct stat *st)
{
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

/* Walk upper dir ufd (path prefix) against lower dir lfd (-1: none).
 * hidden: the lower dir's entries are not part of the merged view (an
 * opaque dir or one below it), so those absent from upper were deleted. */
/* A directory's own entry, when it is new or its mode changed (a copy
 * of path is taken; lst NULL: no lower). A file or symlink it replaced is
 * recorded as what it was, for apply's check. */
static void add_dir_entry(struct walker *w, int lfd, const char *name, const char *path,
                          const struct stat *ust, const struct stat *lst)
{
        enum change_kind kind = lst ? CHANGE_MODIFIED : CHANGE_ADDED;
        char old_hex[DIGEST_HEX_SIZE] = "";
        int hr = 0;

        if (lst && !S_ISDIR(lst->st_mode))
                hr = fs_hash_at(lfd, name, lst, old_hex, NULL);
        if (hr < 0)
                add_skipped(w, xstrdup(path), kind, CHANGE_SKIP_UNREADABLE, hr, ust);
        else if (files_full(w))
                add_skipped(w, xstrdup(path), kind, CHANGE_SKIP_MAX_FILES, 0, ust);
        else {
                struct change *c = add_entry(w, xstrdup(path), kind);
                c->mode = ust->st_mode;
                if (lst) {
                        c->lower_changed = lower_changed(w, lst);
                        c->old_mode = lst->st_mode;
                        c->old_size = S_ISREG(lst->st_mode) ? (uint64_t)lst->st_size : 0;
                        memcpy(c->old_sha256, old_hex, sizeof(old_hex));
                }
                w->n_carried++;
        }
}

/* Under an opaque directory: the lower entries the upper does not have
 * (unames) are gone from the merged view. */
static int emit_hidden_lower(struct walker *w, int lfd, char **unames, const char *prefix, int depth)
{
        _cleanup_strv_ char **lnames = NULL;
        int r = fs_list_dir(lfd, &lnames);
        if (r < 0)
                return r;
        for (char **n = lnames; *n; n++) {
                _cleanup_free_ char *path = NULL;
                struct stat lst;

                if (name_in(unames, *n))
                        continue;       /* handled above (whiteout or new version) */
                if (fstatat(lfd, *n, &lst, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                path = join(prefix, *n);
                r = emit_deleted_tree(w, lfd, *n, path, &lst, depth);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int walk(struct walker *w, int ufd, int lfd, bool hidden, char mark,
                const char *prefix, int depth)
{
        _cleanup_strv_ char **unames = NULL;
        int r;

        if (has_redirect(ufd))
                return -EOPNOTSUPP;
        r = fs_list_dir(ufd, &unames);
        if (r < 0)
                return r;

        for (char **n = unames; *n; n++) {
                char *path = join(prefix, *n);
                struct stat ust, lst;
                bool have_lower = lfd >= 0 && fstatat(lfd, *n, &lst, AT_SYMLINK_NOFOLLOW) == 0;

                if (fstatat(ufd, *n, &ust, AT_SYMLINK_NOFOLLOW) < 0) {
                        free(path);
                        return -errno;
                }
                if (path_too_long(w, path)) {
                        free(path);
                        continue;
                }
                if (out_of_time(w)) {
                        /* listed (up to the cap), not looked into: a
                         * directory stands for all it holds */
                        add_skipped(w, path, is_whiteout(&ust) ? CHANGE_DELETED
                                    : have_lower ? CHANGE_MODIFIED : CHANGE_ADDED,
                                    CHANGE_SKIP_TIME, 0, &ust);
                        continue;
                }

                if (is_whiteout(&ust) ||
                    (mark == 'x' && S_ISREG(ust.st_mode) && ust.st_size == 0 &&
                     is_xattr_whiteout(ufd, *n))) {
                        if (have_lower)
                                r = emit_deleted_tree(w, lfd, *n, path, &lst, depth);
                        else
                                r = 0;
                        free(path);
                        if (r < 0)
                                return r;
                        continue;
                }

                if (S_ISDIR(ust.st_mode)) {
                        _cleanup_close_ int cu = -1, cl = -1;
                        bool lower_dir = have_lower && S_ISDIR(lst.st_mode);
                        char child_mark;

                        if (depth + 1 >= CHANGESET_MAX_DEPTH) {
                                add_skipped(w, path, have_lower ? CHANGE_MODIFIED : CHANGE_ADDED,
                                            CHANGE_SKIP_TOO_DEEP, 0, &ust);
                                continue;
                        }
                        cu = openat(ufd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cu < 0) {
                                add_skipped(w, path, have_lower ? CHANGE_MODIFIED : CHANGE_ADDED,
                                            CHANGE_SKIP_UNREADABLE, -errno, &ust);
                                continue;
                        }
                        child_mark = opaque_mark(cu);

                        if (!lower_dir || (lst.st_mode & 07777) != (ust.st_mode & 07777))
                                add_dir_entry(w, lfd, *n, path, &ust, have_lower ? &lst : NULL);
                        if (lower_dir) {
                                cl = openat(lfd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                if (cl < 0) {
                                        r = -errno;
                                        free(path);
                                        return r;
                                }
                        }
                        r = walk(w, cu, cl, hidden || child_mark == 'y' || !lower_dir,
                                 child_mark, path, depth + 1);
                        free(path);
                        if (r < 0)
                                return r;
                        continue;
                }

                /* a lower directory replaced by a non-directory: its
                 * contents are gone from the merged view */
                if (have_lower && S_ISDIR(lst.st_mode)) {
                        r = emit_deleted_children(w, lfd, *n, path, depth);
                        if (r < 0) {
                                free(path);
                                return r;
                        }
                }

                if (!fs_mode_supported(ust.st_mode)) {
                        add_skipped(w, path, have_lower ? CHANGE_MODIFIED : CHANGE_ADDED,
                                    CHANGE_SKIP_SPECIAL, 0, &ust);
                        continue;
                }
                r = visit_leaf(w, ufd, lfd, *n, path, &ust, have_lower ? &lst : NULL);
                if (r < 0)
                        return r;
        }

        if (lfd < 0 || !hidden)
                return 0;
        return emit_hidden_lower(w, lfd, unames, prefix, depth);
}

static int cmp_change(const void *a, const void *b)
{
        return fs_path_compare(((const struct change *)a)->path, ((const struct change *)b)->path);
}

void changeset_sort(struct changeset *cs)
{
        if (cs->n > 1)
                qsort(cs->entries, cs->n, sizeof(*cs->entries), cmp_change);
}

int changeset_compute(int upper_fd, int lower_fd, const struct changeset_limits *lim,
                      struct blobstore *bs, struct changeset *ret)
{
        struct walker w = { .lim = lim, .bs = bs };
        char mark = opaque_mark(upper_fd);
        int r;

        r = walk(&w, upper_fd, lower_fd, mark == 'y', mark, "", 0);
        if (r < 0) {
                struct changeset tmp = { .entries = w.v, .n = w.n };
                changeset_done(&tmp);
                return r;
        }
        *ret = (struct changeset){
                .entries = w.v,
                .n = w.n,
                .n_carried = w.n_carried,
                .bytes = w.bytes,
                .n_unlisted = w.n_unlisted,
        };
        changeset_sort(ret);
        return 0;
}

void changeset_done(struct changeset *cs)
{
        if (!cs)
                return;
        for (size_t i = 0; i < cs->n; i++) {
                free(cs->entries[i].path);
                free(cs->entries[i].link_target);
        }
        free(cs->entries);
        memset(cs, 0, sizeof(*cs));
}

const struct change *changeset_find(const struct changeset *cs, const char *path)
{
        struct change key = { .path = (char *)path };
        return bsearch(&key, cs->entries, cs->n, sizeof(*cs->entries), cmp_change);
}

static const char *const kind_names[_CHANGE_KIND_MAX] = {
        [CHANGE_ADDED] = "added",
        [CHANGE_MODIFIED] = "modified",
        [CHANGE_DELETED] = "deleted",
};

const char *change_kind_to_string(enum change_kind k)
{
        return k >= 0 && k < _CHANGE_KIND_MAX ? kind_names[k] : NULL;
}

enum change_kind change_kind_from_string(const char *s)
{
        for (int i = 0; i < _CHANGE_KIND_MAX; i++)
                if (streq(s, kind_names[i]))
                        return (enum change_kind)i;
        return _CHANGE_KIND_INVALID;
}

const char *change_skip_to_string(enum change_skip s)
{
        static const char *const names[_CHANGE_SKIP_MAX] = {
                [CHANGE_SKIP_NONE] = NULL,
                [CHANGE_SKIP_SPECIAL] = "special",
                [CHANGE_SKIP_MAX_FILES] = "max_files",
                [CHANGE_SKIP_MAX_BYTES] = "max_bytes",
                [CHANGE_SKIP_UNREADABLE] = "unreadable",
                [CHANGE_SKIP_TOO_DEEP] = "too_deep",
                [CHANGE_SKIP_PATH_TOO_LONG] = "path_too_long",
                [CHANGE_SKIP_TIME] = "time",
                [CHANGE_SKIP_SECRET] = "secret",
        };
        return s >= 0 && s < _CHANGE_SKIP_MAX ? names[s] : NULL;
}
