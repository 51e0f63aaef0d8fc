/* specials.c - hide host sockets and FIFOs under the user's binds
 * (specials.h).
 *
 * Why: a read-only bind stops writes, not connect(). A unix socket in an
 * `-i DIR` or `--ro DIR` tree (an ssh-agent, a database, a container
 * engine's control socket left in a project dir) could be connected to
 * from inside, and the job would talk to the host service behind it;
 * a FIFO lets it trade bytes with a host process. Neither nodev, noexec
 * nor an idmapped mount changes that (unix socket lookup only needs
 * search and write permission on the path, which the sandbox's uid may
 * have). The --workdir tree needs nothing: it is seen through overlayfs,
 * whose inodes are not the lower's, so a lower socket refuses connect()
 * (ECONNREFUSED) and a lower FIFO is one nobody on the host has open.
 *
 * How, and why it holds: before the job exists (init builds the root),
 * every socket and FIFO below each user bind gets an empty mode-0000
 * regular file mounted over it, read-only, nosuid, nodev, noexec, so the
 * path names that file: connect() gives ECONNREFUSED and open() EACCES.
 * The job cannot take the mount away (no mount syscalls under seccomp,
 * no capability to unmount, and a mountpoint cannot be renamed or
 * unlinked: EBUSY). Each target is opened O_PATH | O_NOFOLLOW from its
 * parent's fd and the mount goes onto that fd (move_mount with
 * MOVE_MOUNT_T_EMPTY_PATH): the walk never follows a symlink, and a path
 * swapped on the host meanwhile cannot redirect a mount. A socket or FIFO
 * created on the host after setup is not masked: say so in hutch-run(1).
 *
 * Cost: one readdir per directory (d_type saves a stat per entry); 10000
 * files took a few ms here (see hutch-run(1)). The walk is bounded by
 * SPECIALS_MAX_ENTRIES and SPECIALS_MAX_DEPTH; past them setup fails
 * rather than leave part of a tree unchecked.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "lib/util.h"
#include "sandbox/specials.h"

static int mask_at(int parent, const char *name, const char *empty_file)
{
        _cleanup_close_ int target = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int tree = -1;
        struct stat st;

        if (target < 0)
                return -errno;
        if (fstat(target, &st) < 0)
                return -errno;
        if (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode))
                return 0;       /* changed under us: not a special any more */
        tree = (int)syscall(SYS_open_tree, AT_FDCWD, empty_file, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (tree < 0)
                return -errno;
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        };
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                return -errno;
        if (syscall(SYS_move_mount, tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return -errno;
        return 1;
}

static int walk(int dfd, const char *prefix, int depth, const char *empty_file, size_t *budget,
                char **ret_path)
{
        _cleanup_close_ int own = dup(dfd);
        DIR *d;
        struct dirent *de;
        int r = 0, n = 0;

        if (own < 0)
                return -errno;
        d = fdopendir(own);
        if (!d)
                return -errno;
        own = -1;       /* d has it */
        while ((de = readdir(d))) {
                unsigned char type = de->d_type;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (*budget == 0) {
                        r = -E2BIG;
                        *ret_path = xasprintf("%s/%s", prefix, de->d_name);
                        break;
                }
                (*budget)--;
                if (type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;       /* gone */
                        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISSOCK(st.st_mode) ? DT_SOCK
                               : S_ISFIFO(st.st_mode) ? DT_FIFO : DT_REG;
                }
                if (type == DT_SOCK || type == DT_FIFO) {
                        r = mask_at(dirfd(d), de->d_name, empty_file);
                        if (r < 0) {
                                *ret_path = xasprintf("%s/%s", prefix, de->d_name);
                                break;
                        }
                        n += r;
                        r = 0;
                } else if (type == DT_DIR) {
                        _cleanup_close_ int sub = -1;
                        _cleanup_free_ char *path = xasprintf("%s/%s", prefix, de->d_name);

                        if (depth + 1 >= SPECIALS_MAX_DEPTH) {
                                r = -ELOOP;
                                *ret_path = TAKE_PTR(path);
                                break;
                        }
                        sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0) {
                                /* A directory we cannot list but may
                                 * search (x without r) still lets a known
                                 * name be reached: refuse it. One we
                                 * cannot search, the job cannot enter. */
                                if (errno == EACCES &&
                                    faccessat(dirfd(d), de->d_name, X_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0) {
                                        r = -EACCES;
                                        *ret_path = TAKE_PTR(path);
                                        break;
                                }
                                continue;
                        }
                        r = walk(sub, path, depth + 1, empty_file, budget, ret_path);
                        if (r < 0)
                                break;
                        n += r;
                        r = 0;
                }
        }
        closedir(d);
        return r < 0 ? r : n;
}

int specials_mask_tree(const char *path, const char *empty_file, size_t *budget, char **ret_path)
{
        _cleanup_close_ int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;

        *ret_path = NULL;
        if (fd < 0)
                return errno == ENOENT || errno == ELOOP ? 0 : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)) {
                _cleanup_free_ char *parent = xstrdup(path);
                char *slash = strrchr(parent, '/');
                if (!slash)
                        return -EINVAL;
                *slash = '\0';
                _cleanup_close_ int pfd = open(*parent ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (pfd < 0)
                        return -errno;
                return mask_at(pfd, slash + 1, empty_file);
        }
        if (!S_ISDIR(st.st_mode))
                return 0;
        _cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        return walk(dfd, "", 0, empty_file, budget, ret_path);
}
