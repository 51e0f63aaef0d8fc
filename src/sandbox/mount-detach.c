/* mount-detach.c - the old root's detach, in the background, and the
 * walks that are safe while it is still stacked on the new root (see
 * mount-internal.h; mount.c's pivot() uses them, job_wait_start() waits).
 *
 * umount2(MNT_DETACH) of the host's tree returns only after an expedited
 * RCU grace period (namespace_unlock()): 0.7 ms on a quiet VM, 2-3 ms
 * (median) when every CPU is busy, in which init could do all it does
 * next but the job's exec. So a thread of init's detaches the old root
 * and writes the umount's errno (0: done) to a pipe while init and the
 * job set up; the job reads it just before its exec.
 *
 * Safety:
 *  - nothing of the job runs before job_wait_start() read 0 from the pipe:
 *    an errno, or EOF because the thread died, fails the setup instead;
 *  - until then only hutch's code runs, and it reaches nothing through
 *    the old root. pivot_root(".", ".") stacks it on the new root's root
 *    dentry: "/" itself resolves below it, but ".." from / crosses into
 *    it (the host's tree). So every path pivot() walks afterwards is
 *    opened beneath / (RESOLVE_BENEATH: no "..", absolute or magic
 *    symlink may climb above it), and a path that cannot be (a symlink
 *    the workspace brings, an image's WorkingDir) is walked only after
 *    mount_detach_wait(). What init and the job do next walks no path
 *    (hostname, the network, the pty from posix_openpt(), signals,
 *    rlimits, capabilities, the filter) until the exec, after the wait;
 *  - / is made read-only before pivot_root, on the mount that becomes /,
 *    so that remount cannot land on the old root;
 *  - the thread runs raw system calls on its own stack with every signal
 *    blocked (init's mask): it takes no lock and writes none of init's
 *    memory but errno, and that only when the umount fails (the run then
 *    fails anyway), so what init.c argues from init being single-threaded
 *    (its vfork of the job) still holds;
 *  - it has its own cwd (no CLONE_FS), so init's chdir()s do not move the
 *    "." it unmounts; it takes a pid of the sandbox's namespace (the
 *    job's is then 3, not 2), ends once it has written and, a thread,
 *    leaves no zombie for the job to see; init's exit_group() ends it
 *    with init on every path.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/mount-internal.h"
#include "lib/util.h"

#define DETACH_STACK_BYTES (64u << 10)

static int detach_old_root(void *arg)
{
        int err = 0;
        if (syscall(SYS_umount2, ".", MNT_DETACH) < 0)
                err = errno ? errno : EIO;
        (void)syscall(SYS_write, (int)(intptr_t)arg, &err, sizeof(err));
        return 0;
}

int mount_detach_in_background(int *ret_fd)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        /* never freed: the thread may still be on it when init goes on */
        char *stack = task_stack_new(DETACH_STACK_BYTES);
        pid_t tid = stack ? clone(detach_old_root, stack + DETACH_STACK_BYTES,
                                  CLONE_VM | CLONE_SIGHAND | CLONE_THREAD, (void *)(intptr_t)p[1]) : -1;
        int e = errno;
        close(p[1]);
        if (tid < 0) {
                close(p[0]);
                task_stack_free(stack, DETACH_STACK_BYTES);
                return -e;
        }
        *ret_fd = p[0];
        return 0;
}

int mount_detach_wait(int *fd)
{
        int err = 0, r;
        ssize_t n;

        if (*fd < 0)
                return 0;
        do
                n = read(*fd, &err, sizeof(err));
        while (n < 0 && errno == EINTR);
        r = n < 0 ? -errno : n != (ssize_t)sizeof(err) ? -EIO : -err;
        close(*fd);
        *fd = -1;
        return r;
}

int mount_open_beneath_root(const char *dir)
{
        struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
        const char *rel = dir + strspn(dir, "/");
        /* "/" resolves below whatever is stacked on it */
        int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        int fd = (int)syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof(how));
        int e = errno;
        close(root);
        return fd < 0 ? -e : fd;
}
