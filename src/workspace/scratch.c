/* scratch.c - the landlock tier's scratch and its change set's upper dir
 * (see scratch.h).
 *
 * Safety: the supervisor walks trees the job wrote, after every process
 * of it is gone (sandbox_end_orphans()), and never follows a symlink:
 * every directory is opened O_NOFOLLOW | O_DIRECTORY relative to its
 * parent's fd, every entry is looked at with AT_SYMLINK_NOFOLLOW, and
 * hard links are made without AT_SYMLINK_FOLLOW. Depth is bounded.
 */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lib/fsutil.h"
#include "lib/util.h"
#include "workspace/changeset.h"
#include "workspace/scratch.h"
#include "workspace/snapshot.h"

static void coarse_now(struct timespec *ts)
{
        (void)clock_gettime(CLOCK_REALTIME_COARSE, ts);
}

static bool after(const struct timespec *a, const struct timespec *b)
{
        return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* A ctime as the filesystems hand them out, now, in *ret. With
 * multigrain timestamps (Linux 6.13) a ctime may be finer than the
 * coarse clock, so no clock read bounds them: a stamp of a file of our
 * own is one of them. */
static int stamp(const struct scratch *s, struct timespec *ret)
{
        _cleanup_free_ char *path = xasprintf("%s/stamp", s->dir);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        struct stat st;
        if (fd < 0 || futimens(fd, NULL) < 0 || fstat(fd, &st) < 0)
                return -errno;
        *ret = st.st_ctim;
        return 0;
}

int scratch_create(const char *base, uid_t uid, gid_t gid, struct scratch *ret)
{
        _cleanup_free_ char *dir = xasprintf("%s/hutch-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(dir))
                return -errno;
        static const char *const subs[] = { "workspace", "home", "tmp" };
        int r = 0;
        for (size_t i = 0; r == 0 && i < ELEMENTSOF(subs); i++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, subs[i]);
                if (mkdir(p, 0700) < 0 || chown(p, uid, gid) < 0)
                        r = -errno;
        }
        if (r == 0 && chown(dir, uid, gid) < 0)
                r = -errno;
        if (r < 0) {
                (void)fs_remove_tree_at(AT_FDCWD, dir);
                return r;
        }
        *ret = (struct scratch){
                .workspace = xasprintf("%s/workspace", dir), .home = xasprintf("%s/home", dir),
                .tmp = xasprintf("%s/tmp", dir), .uid = uid, .gid = gid,
        };
        ret->dir = TAKE_PTR(dir);
        return 0;
}

/* Give every entry below dirfd to uid/gid (the copy was made by us). */
static int chown_tree(int dirfd, uid_t uid, gid_t gid, unsigned depth)
{
        if (depth > CHANGESET_MAX_DEPTH)
                return -ELOOP;
        _cleanup_strv_ char **names = NULL;
        int r = fs_list_dir(dirfd, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                struct stat st;
                if (fstatat(dirfd, *n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (fchownat(dirfd, *n, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                /* chown clears set-id bits; the copy has none (snapshot.h) */
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = openat(dirfd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return -errno;
                        r = chown_tree(sub, uid, gid, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int scratch_fill(struct scratch *s, int lower_fd, const struct snapshot_limits *lim,
                 struct snapshot_stats *ret_stats, char **ret_path)
{
        _cleanup_close_ int ws = open(s->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws < 0)
                return -errno;
        if (lower_fd < 0) {
                /* nothing to compare, so no times kept; the stamp still
                 * marks the scratch as hutch's (hutch gc looks for it) */
                struct timespec unused;
                return stamp(s, &unused);
        }
        /* an original entry changed after this stamp is the host's
         * change, not one the job can have made */
        int r = stamp(s, &s->copy_began);
        if (r < 0)
                return r;
        r = snapshot_copy(lower_fd, ws, lim, ret_stats, ret_path);
        if (r < 0)
                return r;
        if (s->uid != geteuid() || s->gid != getegid()) {
                if (fchown(ws, s->uid, s->gid) < 0)
                        return -errno;
                r = chown_tree(ws, s->uid, s->gid, 0);
                if (r < 0)
                        return r;
        }
        /* whatever we copied has a ctime at or before this one */
        return stamp(s, &s->copy_ended);
}

void scratch_settle(const struct scratch *s)
{
        /* The coarse clock past copy_ended puts every later ctime past
         * it. It has usually moved on by the time the run is recorded;
         * otherwise this waits at most one tick. */
        struct timespec now;
        if (!s->copy_ended.tv_sec)
                return;
        for (coarse_now(&now); !after(&now, &s->copy_ended); coarse_now(&now))
                sched_yield();
}

static int whiteout_at(int dirfd, const char *name)
{
        /* a 0:0 character device is overlayfs's whiteout, and the one
         * device node the kernel lets anyone make; where that is refused,
         * the userxattr form (changeset.h reads both) */
        if (mknodat(dirfd, name, S_IFCHR | 0000, makedev(0, 0)) == 0)
                return 0;
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0000);
        if (fd < 0)
                return -errno;
        if (fsetxattr(fd, "user.overlay.whiteout", "y", 1, 0) < 0)
                return -errno;
        return 0;
}

static int build_level(const struct scratch *s, int copy_fd, int lower_fd, int upper_fd, unsigned depth)
{
        if (depth > CHANGESET_MAX_DEPTH)
                return -ELOOP;
        _cleanup_strv_ char **names = NULL;
        int r = fs_list_dir(copy_fd, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                struct stat st, lst;
                if (fstatat(copy_fd, *n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                bool in_lower = lower_fd >= 0 && fstatat(lower_fd, *n, &lst, AT_SYMLINK_NOFOLLOW) == 0;
                bool same_type = in_lower && (st.st_mode & S_IFMT) == (lst.st_mode & S_IFMT);
                if (!S_ISDIR(st.st_mode)) {
                        if (same_type && !after(&st.st_ctim, &s->copy_ended))
                                continue;       /* untouched by the job */
                        if (linkat(copy_fd, *n, upper_fd, *n, 0) < 0)
                                return -errno;
                        continue;
                }
                if (mkdirat(upper_fd, *n, 0700) < 0)
                        return -errno;
                _cleanup_close_ int up = openat(upper_fd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (up < 0)
                        return -errno;
                _cleanup_close_ int cp = openat(copy_fd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cp < 0 && errno != EACCES)
                        return -errno;
                _cleanup_close_ int lo = cp >= 0 && same_type
                        ? openat(lower_fd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
                r = cp >= 0 ? build_level(s, cp, lo, up, depth + 1) : -EACCES;
                mode_t mode = st.st_mode & 07777;
                if (r == -EACCES)
                        /* The job left this dir so that we (its uid, as an
                         * unprivileged caller) cannot read or search it.
                         * An upper dir nobody but root can open is what
                         * the namespace tier's overlay has then: the change
                         * set records it skipped "unreadable", and apply
                         * refuses the partial change set. What it holds
                         * is not looked at, so not claimed either way. */
                        mode = 0;
                else if (r < 0)
                        return r;
                /* the dir's own bits last: a read-only dir of the job's
                 * must still take our links above */
                if (fchmod(up, mode) < 0)
                        return -errno;
        }
        if (lower_fd < 0)
                return 0;
        _cleanup_strv_ char **lower_names = NULL;
        r = fs_list_dir(lower_fd, &lower_names);
        if (r < 0)
                return r;
        for (char **n = lower_names; *n; n++) {
                struct stat st, lst;
                if (fstatat(copy_fd, *n, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
                        continue;
                /* new on the host since the copy began: not the job's */
                if (fstatat(lower_fd, *n, &lst, AT_SYMLINK_NOFOLLOW) < 0 ||
                    after(&lst.st_ctim, &s->copy_began))
                        continue;
                r = whiteout_at(upper_fd, *n);
                if (r < 0)
                        return r;
        }
        return 0;
}

int scratch_build_upper(const struct scratch *s, int lower_fd, int *ret_upper_fd)
{
        _cleanup_free_ char *upper = xasprintf("%s/upper", s->dir);
        if (mkdir(upper, 0700) < 0)
                return -errno;
        _cleanup_close_ int up = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int cp = open(s->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (up < 0 || cp < 0)
                return -errno;
        int r = build_level(s, cp, lower_fd, up, 0);
        if (r < 0)
                return r;
        *ret_upper_fd = TAKE_FD(up);
        return 0;
}

int scratch_remove(struct scratch *s)
{
        if (!s || !s->dir)
                return 0;
        int r = fs_remove_tree_at(AT_FDCWD, s->dir);
        free(s->dir);
        free(s->workspace);
        free(s->home);
        free(s->tmp);
        *s = (struct scratch){ 0 };
        return r;
}
