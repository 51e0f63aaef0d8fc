/* mount-kernel.c - the kernel's filesystems in the new root: /proc and
 * /dev (see mount-internal.h; mount.c builds the rest of the root).
 *
 * Safety argument:
 *  - /proc is a fresh instance for our pid namespace: it shows only the
 *    sandbox's processes; files that reveal or poke host kernel state are
 *    masked and /proc/sys & co. are read-only;
 *  - /dev holds only bind mounts of six harmless character devices, a
 *    private devpts instance, and symlinks; the tmpfs itself is made
 *    read-only so no device node can be added (mknod is denied in a user
 *    namespace anyway).
 * Both are built before pivot_root and before any job exists.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/mount-internal.h"
#include "lib/util.h"

static const struct { const char *path; bool dir; } proc_masked[] = {
        { "/proc/kcore", 0 }, { "/proc/keys", 0 }, { "/proc/key-users", 0 }, { "/proc/timer_list", 0 },
        { "/proc/timer_stats", 0 }, { "/proc/latency_stats", 0 }, { "/proc/sched_debug", 0 },
        { "/proc/sysrq-trigger", 0 }, { "/proc/kallsyms", 0 }, { "/proc/kpagecount", 0 },
        { "/proc/kpageflags", 0 }, { "/proc/kpagecgroup", 0 }, { "/proc/vmallocinfo", 0 },
        { "/proc/acpi", 1 }, { "/proc/scsi", 1 }, { "/proc/asound", 1 },
};

/* Mask an entry of the fresh /proc with one mount(2) bind of the sealed
 * empty object of its kind, not mask_one()'s open_tree+move_mount+close.
 * move_mount() is used elsewhere as it does not follow a symlink at the
 * destination; here none can be: every component is ours (the scratch,
 * the new root, a proc we just mounted, no job yet), proc's top-level
 * entries are the kernel's alone, and none of these is one of its links
 * (self, thread-self, mounts, net). The bind copies the sealed mount's
 * ro,nosuid,nodev,noexec as bind_sealed()'s does. ENOENT: this kernel
 * lacks it (the sources exist: setup_scratch() made them, and they are
 * sealed read-only). ENOTDIR: its kind is not the listed one (a file
 * does not mount on a dir, nor a dir on a file); mask_one() probes it. */
static int mask_proc_entry(const char *inside, bool dir, struct setup_failure *fail)
{
        char dst[PATH_MAX];

        snprintf(dst, sizeof(dst), NEWROOT "%s", inside);
        if (mount(dir ? EMPTY_DIR : EMPTY_FILE, dst, NULL, MS_BIND, NULL) == 0 || errno == ENOENT)
                return 0;
        if (errno == ENOTDIR)
                return mask_one(inside, fail);
        return fail_with(fail, -errno, "mask", inside);
}
static const char *const proc_readonly[] = {
        "/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs",
};

/* Under the gvisor runtime /proc stays whole: runsc's gofer mounts a
 * proc of its own, which the kernel allows only where one is fully
 * visible (no mask or read-only bind on it). That is safe because the
 * job never sees this /proc: gVisor gives it the sentry's (gvisor-spec.c);
 * only runsc's own processes do. */
int setup_proc(bool whole, struct setup_failure *fail)
{
        const char *dst = NEWROOT "/proc";
        if (mkdir(dst, 0555) < 0 && errno != EEXIST)
                return fail_with(fail, -errno, "mkdir", "/proc");
        if (mount("proc", dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return fail_with(fail, -errno, "mount proc", "/proc");
        if (whole)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(proc_readonly); i++) {
                char p[PATH_MAX];
                snprintf(p, sizeof(p), NEWROOT "%s", proc_readonly[i]);
                /* bound onto itself, then made read-only: the window
                 * shows nothing the proc mount itself does not, and no
                 * job exists yet */
                if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return fail_with(fail, -errno, "read-only", proc_readonly[i]);
                }
                struct mount_attr attr = {
                        .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC
                };
                if (sys_mount_setattr(AT_FDCWD, p, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr) < 0)
                        return fail_with(fail, -errno, "read-only", proc_readonly[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(proc_masked); i++) {
                int r = mask_proc_entry(proc_masked[i].path, proc_masked[i].dir, fail);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
static const struct { const char *name, *target; } dev_links[] = {
        { "fd", "/proc/self/fd" },
        { "stdin", "/proc/self/fd/0" },
        { "stdout", "/proc/self/fd/1" },
        { "stderr", "/proc/self/fd/2" },
        { "ptmx", "pts/ptmx" },
};

/* The device nodes: binds of the host's, through the old root (still
 * ours until pivot_root); a node this host lacks is left out. A bind
 * keeps the host /dev mount's flags; nosuid,noexec are set on all of
 * them at once, before devpts and /dev/shm join the tree and before
 * any job exists. */
static int bind_dev_nodes(const char *dev, struct setup_failure *fail)
{
        char host[64], p[PATH_MAX];

        for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
                snprintf(host, sizeof(host), "/dev/%s", dev_nodes[i]);
                snprintf(p, sizeof(p), "%s/%s", dev, dev_nodes[i]);
                int r = make_mountpoint(p, false);
                if (r < 0)
                        return fail_with(fail, r, "mkdir", p + strlen(NEWROOT));
                /* host /dev is host root's; dst is on our own tmpfs */
                if (mount(host, p, NULL, MS_BIND, NULL) < 0) {
                        if (errno != ENOENT)
                                return fail_with(fail, -errno, "bind", host);
                        (void)unlink(p);
                }
        }
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC };
        if (sys_mount_setattr(AT_FDCWD, dev, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr) < 0)
                return fail_with(fail, -errno, "nosuid,noexec", "/dev");
        return 0;
}

int setup_dev(struct setup_failure *fail)
{
        const char *dev = NEWROOT "/dev";
        char p[PATH_MAX];
        int r;

        if (mkdir(dev, 0755) < 0 && errno != EEXIST)
                return fail_with(fail, -errno, "mkdir", "/dev");
        if (mount("hutch-dev", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64") < 0)
                return fail_with(fail, -errno, "mount tmpfs", "/dev");
        r = bind_dev_nodes(dev, fail);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(dev_links); i++) {
                snprintf(p, sizeof(p), "%s/%s", dev, dev_links[i].name);
                if (symlink(dev_links[i].target, p) < 0)
                        return fail_with(fail, -errno, "symlink", p + strlen(NEWROOT));
        }
        snprintf(p, sizeof(p), "%s/pts", dev);
        if (mkdir(p, 0755) < 0)
                return fail_with(fail, -errno, "mkdir", "/dev/pts");
        /* newinstance: the job's ptys are its own; it cannot open the host's */
        if (mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=0620") < 0)
                return fail_with(fail, -errno, "mount devpts", "/dev/pts");
        r = bind_rw(RW "/shm", "/dev/shm", fail);
        if (r < 0)
                return r;
        if (mount(NULL, dev, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) < 0)
                return fail_with(fail, -errno, "read-only", "/dev");
        return 0;
}
