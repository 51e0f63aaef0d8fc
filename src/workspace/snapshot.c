/* snapshot.c - copy a --workdir into a private tree before the job starts
 * (snapshot.h has what is copied and why).
 *
 * Why the host's tree cannot trick the copy: every entry is looked at
 * with fstatat(AT_SYMLINK_NOFOLLOW) and opened with O_NOFOLLOW (files
 * also O_NONBLOCK, so a FIFO swapped in cannot block us), and the opened
 * object is checked to be the one looked at (same device and inode, same
 * type); directories are descended through the fd just opened, never by
 * path, so a directory renamed or replaced by a symlink mid-copy cannot
 * lead outside the tree. The copy is made with O_EXCL / mkdirat /
 * symlinkat / mkfifoat into directories we created ourselves, never
 * through a name the host controls. A symlink is copied as its target
 * string and never followed.
 *
 * Why the copy is one version per file: the source's ctime and size are
 * compared before and after its data is copied; a write in between
 * changes the ctime, and the file is copied again (SNAPSHOT_RETRIES
 * times, then -EAGAIN).
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workspace/snapshot.h"
#include "lib/fsutil.h"
#include "lib/util.h"

#define SNAPSHOT_RETRIES 3
#define SNAPSHOT_DEPTH 128

struct walk {
        const struct snapshot_limits *lim;
        struct snapshot_stats *st;
        unsigned max_depth;
        char *fail_path;        /* where it failed (new string) */
        uint64_t mnt_id;        /* skip_mounts: the source root's mount */
};

static bool same_object(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
               (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT);
}

static bool same_version(const struct stat *a, const struct stat *b)
{
        return a->st_size == b->st_size && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
               a->st_ctim.tv_nsec == b->st_ctim.tv_nsec && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
               a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static int past_deadline(const struct walk *w)
{
        struct timespec now;

        if (!w->lim->deadline.tv_sec && !w->lim->deadline.tv_nsec)
                return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > w->lim->deadline.tv_sec ||
            (now.tv_sec == w->lim->deadline.tv_sec && now.tv_nsec >= w->lim->deadline.tv_nsec))
                return -ETIME;
        return 0;
}

static int count_bytes(struct walk *w, int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        w->st->bytes += (uint64_t)st.st_blocks * 512;
        if (w->lim->max_bytes && w->st->bytes > w->lim->max_bytes)
                return -ENOSPC;
        return 0;
}

/* Owner (as root), permission bits without set-id, and times of src on
 * the copy (fd, or name in dfd for a symlink). */
static int set_meta(const struct walk *w, int fd, int dfd, const char *name, const struct stat *src)
{
        struct timespec times[2] = { src->st_atim, src->st_mtim };

        if (fd >= 0) {
                if (w->lim->keep_owners && fchown(fd, src->st_uid, src->st_gid) < 0)
                        return -errno;
                /* after chown, which would clear them anyway: the copy
                 * never carries set-id bits (the mount is nosuid too) */
                if (fchmod(fd, src->st_mode & 01777) < 0)
                        return -errno;
                if (futimens(fd, times) < 0)
                        return -errno;
                return 0;
        }
        if (w->lim->keep_owners && fchownat(dfd, name, src->st_uid, src->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (utimensat(dfd, name, times, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return 0;
}

static int copy_file(struct walk *w, int sfd, int dfd, const char *name, const struct stat *st)
{
        _cleanup_close_ int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        _cleanup_close_ int out = -1;
        struct stat a, b;
        int r;

        if (in < 0 && errno == EACCES) {
                /* the job, the caller's uid, could not read it either */
                w->st->unreadable++;
                out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0)
                        return -errno;
                return set_meta(w, out, dfd, name, st);
        }
        if (in < 0)
                return -errno;
        if (fstat(in, &a) < 0)
                return -errno;
        if (!same_object(&a, st))
                return -EAGAIN;         /* swapped between lstat and open */
        out = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        for (int attempt = 0;; attempt++) {
                /* a file that cannot fit is refused before it is read */
                if (w->lim->max_bytes && w->st->bytes + (uint64_t)a.st_blocks * 512 > w->lim->max_bytes)
                        return -ENOSPC;
                int64_t n = fs_copy_digest(in, out, NULL, 0);
                if (n < 0)
                        return (int)n;
                if (fstat(in, &b) < 0)
                        return -errno;
                if (same_version(&a, &b))
                        break;
                /* written to while we copied: take it again, whole */
                if (attempt + 1 >= SNAPSHOT_RETRIES)
                        return -EAGAIN;
                a = b;
                if (lseek(in, 0, SEEK_SET) < 0 || lseek(out, 0, SEEK_SET) < 0 || ftruncate(out, 0) < 0)
                        return -errno;
        }
        r = count_bytes(w, out);
        if (r < 0)
                return r;
        return set_meta(w, out, dfd, name, &a);
}

static int copy_dir(struct walk *w, int sfd, int dfd, const char *path, unsigned depth);

static int copy_entry(struct walk *w, int sfd, int dfd, const char *name, const char *path, unsigned depth)
{
        struct stat st;
        int r;

        if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;    /* removed meanwhile: not there at the start */
        if (S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
                w->st->left_out++;
                return 0;
        }
        if (w->lim->skip_mounts) {
                /* a mount point's name resolves to the mounted root, on
                 * another mount: its files are not the tree's own */
                struct statx sx;
                if (statx(sfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_MNT_ID, &sx) < 0)
                        return errno == ENOENT ? 0 : -errno;
                if (!(sx.stx_mask & STATX_MNT_ID))
                        return -EOPNOTSUPP;
                if (sx.stx_mnt_id != w->mnt_id) {
                        w->st->mounts++;
                        return 0;
                }
        }
        if (w->lim->max_entries && ++w->st->entries > w->lim->max_entries)
                return -EMLINK;
        if (!w->lim->max_entries)
                w->st->entries++;
        r = past_deadline(w);
        if (r < 0)
                return r;
        if (S_ISREG(st.st_mode))
                return copy_file(w, sfd, dfd, name, &st);
        if (S_ISLNK(st.st_mode)) {
                _cleanup_free_ char *target = NULL;
                r = fs_readlink_at(sfd, name, &target);
                if (r < 0)
                        return r;
                if (symlinkat(target, dfd, name) < 0)
                        return -errno;
                return set_meta(w, -1, dfd, name, &st);
        }
        if (S_ISFIFO(st.st_mode)) {
                /* a new FIFO: the job must never reach a host reader */
                if (mkfifoat(dfd, name, 0600) < 0)
                        return -errno;
                /* by name: the directory is ours, the name just made */
                if (w->lim->keep_owners && fchownat(dfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (fchmodat(dfd, name, st.st_mode & 01777, 0) < 0)
                        return -errno;
                struct timespec times[2] = { st.st_atim, st.st_mtim };
                return utimensat(dfd, name, times, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
        }
        if (!S_ISDIR(st.st_mode))
                return 0;

        if (depth + 1 > w->max_depth)
                return -ELOOP;
        if (mkdirat(dfd, name, 0700) < 0)
                return -errno;
        _cleanup_close_ int sub_dst = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub_dst < 0)
                return -errno;
        _cleanup_close_ int sub_src = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub_src < 0 && errno == EACCES) {
                w->st->unreadable++;
                return set_meta(w, sub_dst, dfd, name, &st);
        }
        if (sub_src < 0)
                return -errno;
        struct stat ost;
        if (fstat(sub_src, &ost) < 0)
                return -errno;
        if (!same_object(&ost, &st))
                return -EAGAIN;
        r = copy_dir(w, sub_src, sub_dst, path, depth + 1);
        if (r < 0)
                return r;
        return set_meta(w, sub_dst, dfd, name, &st);
}

static int copy_dir(struct walk *w, int sfd, int dfd, const char *path, unsigned depth)
{
        _cleanup_strv_ char **names = NULL;
        int r = fs_list_dir(sfd, &names);

        if (r < 0) {
                if (!w->fail_path)
                        w->fail_path = xstrdup(*path ? path : ".");
                return r;
        }
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *sub = *path ? xasprintf("%s/%s", path, *n) : xstrdup(*n);
                r = copy_entry(w, sfd, dfd, *n, sub, depth);
                if (r < 0) {
                        if (!w->fail_path)
                                w->fail_path = TAKE_PTR(sub);
                        return r;
                }
        }
        return 0;
}

int snapshot_copy(int src_fd, int dst_fd, const struct snapshot_limits *lim, struct snapshot_stats *ret_stats,
                  char **ret_path)
{
        struct walk w = { .lim = lim, .st = ret_stats, .max_depth = lim->max_depth ? lim->max_depth : SNAPSHOT_DEPTH };
        struct stat st;
        int r;

        *ret_stats = (struct snapshot_stats){ 0 };
        if (ret_path)
                *ret_path = NULL;
        if (fstat(src_fd, &st) < 0)
                return -errno;
        if (lim->skip_mounts) {
                struct statx sx;
                if (statx(src_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0)
                        return -errno;
                if (!(sx.stx_mask & STATX_MNT_ID))
                        return -EOPNOTSUPP;
                w.mnt_id = sx.stx_mnt_id;
        }
        r = copy_dir(&w, src_fd, dst_fd, "", 0);
        if (r >= 0)
                r = set_meta(&w, dst_fd, -1, NULL, &st);
        if (r < 0 && ret_path)
                *ret_path = TAKE_PTR(w.fail_path);
        free(w.fail_path);
        return r;
}
