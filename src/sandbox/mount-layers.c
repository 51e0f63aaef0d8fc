/* mount-layers.c - the overlays of the sandbox's filesystem view (see
 * mount.h): the workspace over a host dir, an image root, and the --lang
 * code dir; and the read-only clones they are made of.
 *
 * Safety argument (the rest of the view's is in mount.c's header):
 *  - --workdir DIR: DIR is cloned (open_tree) and made read-only before
 *    the sandbox takes its uid (mount_clone_lower) and so before the
 *    scratch goes over /tmp, attached at /tmp/rw/lower and used only as an
 *    overlay lower layer; upper and work dirs live on the scratch, so the
 *    job's writes land there and the host DIR is never written (the clone
 *    is read-only: even a bug here could not write through it). The
 *    overlay is nosuid,nodev like every writable area, and mounted with
 *    userxattr (the only mode a user namespace may use);
 *  - root = DIR[:DIR...] (an image): each layer is cloned read-only like
 *    the workdir, attached on the scratch, and the new root is
 *    overlay(lowerdir = layers, upper and work on the scratch), nosuid,
 *    nodev: writable everywhere, discarded with the scratch, the layers
 *    themselves never written. No host system dir is bound then.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include "config/lang.h"
#include "sandbox/mount.h"
#include "sandbox/mount-internal.h"
#include "lib/util.h"

int mount_tmpfs_user_xattr(const char *path)
{
        char probe[PATH_MAX];
        snprintf(probe, sizeof(probe), "%s/.hutch-xattr-probe", path);
        _cleanup_close_ int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        int r = fsetxattr(fd, "user.hutch.probe", "y", 1, 0) < 0 ? -errno : 1;
        (void)unlink(probe);
        if (r == -EOPNOTSUPP || r == -EPERM)
                return 0;
        return r;
}

int mount_clone_lower(const char *path)
{
        /* not recursive: overlay does not look into submounts of a layer */
        int fd = sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
        if (sys_mount_setattr(fd, "", AT_EMPTY_PATH, &attr) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        return fd;
}

int mount_clone_lower_idmapped(const char *path, int userns_fd)
{
        int fd = sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_IDMAP,
                .userns_fd = (uint64_t)userns_fd,
        };
        if (sys_mount_setattr(fd, "", AT_EMPTY_PATH, &attr) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        return fd;
}

/* overlay(opts) on target, nosuid,nodev like every writable area.
 * xino=on gives every file the overlay's own st_dev, as one filesystem
 * would. Without it (layers on different filesystems: tmpfs upper,
 * the host's lower) directories report the overlay's device and files
 * a pseudo device per layer, and tools that take "same st_dev" for
 * "same filesystem" go wrong: tar --one-file-system leaves the files
 * out of the archive, ls asks for xattrs once per "device". The price:
 * inode numbers of lower files carry the layer in their top bits. A
 * kernel that refuses the option gets the plain overlay. */
static int mount_overlay(const char *source, const char *target, const char *opts)
{
        _cleanup_free_ char *with_xino = xasprintf("%s,xino=on", opts);
        if (mount(source, target, "overlay", MS_NOSUID | MS_NODEV, with_xino) == 0)
                return 0;
        if (errno != EINVAL)
                return -errno;
        return mount(source, target, "overlay", MS_NOSUID | MS_NODEV, opts) < 0 ? -errno : 0;
}

/* The overlay workspace: the lower clone attached on the scratch, then
 * overlay(lower, upper, work) mounted on RW/workspace, which the normal
 * path binds at the workspace. */
int setup_overlay_workspace(int lower_clone, struct setup_failure *fail)
{
        static const char *const dirs[] = { RW "/lower", RW "/upper", RW "/work" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (mkdir(dirs[i], 0755) < 0)
                        return fail_with(fail, -errno, "mkdir", dirs[i]);
        /* Without user xattrs on the upper (tmpfs before Linux 6.6) overlay
         * could not record an opaque directory, and "rm -r d; mkdir d"
         * would resurrect d's old files: refuse instead of being wrong. */
        int r = mount_tmpfs_user_xattr(RW "/upper");
        if (r == 0)
                r = -EOPNOTSUPP;
        if (r < 0)
                return fail_with(fail, r, "overlay upper needs user xattrs on tmpfs (Linux 6.6+; see hutch doctor)",
                                 RW "/upper");
        if (sys_move_mount(lower_clone, "", AT_FDCWD, RW "/lower", MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return fail_with(fail, -errno, "attach workdir", RW "/lower");
        /* safety: lower is a read-only clone; upper and work are on the
         * scratch; nosuid,nodev as for every writable area */
        r = mount_overlay("hutch-workspace", RW "/workspace",
                          "lowerdir=" RW "/lower,upperdir=" RW "/upper,workdir=" RW "/work,userxattr");
        if (r < 0)
                return fail_with(fail, r, "mount overlay", "/workspace");
        return 0;
}

/* --lang: the code in a dir of its own on the scratch, shown read-only
 * at LANG_CODE_DIR, and an empty writable LANG_BUILD_DIR for a compile
 * step's program. Outside the workspace, so the code is never part of
 * the change set, a session or an apply, and never meets a main.py of
 * the workspace's own.
 * Safety: both live on the scratch (the disk limit covers them) and are
 * nosuid,nodev like every writable area; the code dir is read-only, so
 * the job cannot change what the record says ran. */
int setup_code(int code_fd, const char *name, struct setup_failure *fail)
{
        char buf[65536], path[PATH_MAX], dst[PATH_MAX];
        ssize_t n;

        if (!name || !*name || strchr(name, '/'))
                return fail_with(fail, -EINVAL, "write code", name ? name : "");
        if (mkdir(RW "/code", 0755) < 0 || mkdir(RW "/build", 0755) < 0)
                return fail_with(fail, -errno, "mkdir", RW "/code");
        snprintf(path, sizeof(path), RW "/code/%s", name);
        _cleanup_close_ int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (out < 0)
                return fail_with(fail, -errno, "write code", LANG_CODE_DIR);
        /* pread: the fd's offset is shared with the supervisor, which
         * reads the same code into the record while we set up (a read()
         * racing its read() got part of the code, or none) */
        for (off_t at = 0; (n = pread(code_fd, buf, sizeof(buf), at)) != 0;) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return fail_with(fail, -errno, "write code", LANG_CODE_DIR);
                }
                int r = write_all(out, buf, (size_t)n);
                if (r < 0)
                        return fail_with(fail, r, "write code", LANG_CODE_DIR);
                at += n;
        }
        snprintf(dst, sizeof(dst), NEWROOT "%s", LANG_CODE_DIR);
        int r = mkdir_p(dst, 0755);
        if (r < 0)
                return fail_with(fail, r, "mkdir", LANG_CODE_DIR);
        r = bind_with_attrs(RW "/code", dst, false, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        if (r < 0)
                return fail_with(fail, r, "bind", LANG_CODE_DIR);
        return bind_rw(RW "/build", LANG_BUILD_DIR, fail);
}

/* An image's layers must fit one mount(2) option string, which the
 * kernel copies as one page: MOUNT_MAX_LAYERS (mount.h) of them do, and
 * image import refuses more (run.c checks that the two agree). */
_Static_assert(sizeof("lowerdir=") + MOUNT_MAX_LAYERS * sizeof(RW "/layer-999:") +
                       sizeof(",upperdir=" RW "/root-upper,workdir=" RW "/root-work,userxattr,xino=on") <= 4096,
               "MOUNT_MAX_LAYERS layers do not fit an overlay option string");

/* root = DIR[:DIR...]: overlay of the layer clones over NEWROOT. */
int setup_image_root(int *clones, size_t n, struct setup_failure *fail)
{
        _cleanup_free_ char *opts = xstrdup("lowerdir=");
        for (size_t i = 0; i < n; i++) {
                char dir[64];
                snprintf(dir, sizeof(dir), RW "/layer-%zu", i);
                if (mkdir(dir, 0755) < 0)
                        return fail_with(fail, -errno, "mkdir", dir);
                if (sys_move_mount(clones[i], "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return fail_with(fail, -errno, "attach root layer", dir);
                char *t = xasprintf("%s%s%s", opts, i ? ":" : "", dir);
                free(opts);
                opts = t;
        }
        if (mkdir(RW "/root-upper", 0755) < 0 || mkdir(RW "/root-work", 0755) < 0)
                return fail_with(fail, -errno, "mkdir", RW "/root-upper");
        int r = mount_tmpfs_user_xattr(RW "/root-upper");
        if (r == 0)
                r = -EOPNOTSUPP;
        if (r < 0)
                return fail_with(fail, r, "overlay upper needs user xattrs on tmpfs (Linux 6.6+; see hutch doctor)",
                                 RW "/root-upper");
        char *t = xasprintf("%s,upperdir=" RW "/root-upper,workdir=" RW "/root-work,userxattr", opts);
        free(opts);
        opts = t;
        /* safety: layers are read-only clones, upper and work on the
         * scratch; nosuid,nodev like every writable area */
        r = mount_overlay("hutch-root", NEWROOT, opts);
        if (r < 0)
                return fail_with(fail, r, "mount overlay", "/");
        return 0;
}
