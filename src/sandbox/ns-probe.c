/* ns-probe.c - the namespace tier's requirements, tried in a throwaway
 * child (see ns-probe.h).
 *
 * The child is cloned straight into its namespaces (clone3, as the
 * sandbox is), blocks until we have written its maps, then reports its
 * tmpfs mount's errno as its exit code. It holds nothing: it runs no
 * code of anyone's but ours and dies before we return; PDEATHSIG ends it
 * should we die first. The tmpfs lives in its own mount namespace and
 * vanishes with it.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/ns.h"
#include "sandbox/ns-probe.h"
#include "lib/util.h"

static _Noreturn void child(int go_fd)
{
        char c;
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (read(go_fd, &c, 1) != 1)
                _exit(0x7f);
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0 ||
            mount("hutch-probe", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k") < 0)
                _exit(errno & 0x7f);
        _exit(0);
}

int ns_probe_userns(bool net_host, const char **ret_step)
{
        int go[2];
        if (pipe2(go, O_CLOEXEC) < 0) {
                *ret_step = "pipe";
                return -errno;
        }
        struct clone_args args = {
                .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                         CLONE_NEWCGROUP | (net_host ? 0 : CLONE_NEWNET),
                .exit_signal = SIGCHLD,
        };
        pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
        /* a container's seccomp profile answers ENOSYS to clone3 so that
         * libc falls back to clone, whose flags it can judge: so do we,
         * and meet its real answer */
        if (pid < 0 && errno == ENOSYS)
                pid = (pid_t)syscall(SYS_clone, (unsigned long)args.flags | SIGCHLD, 0UL, NULL, NULL, 0UL);
        if (pid == 0) {
                close(go[1]);
                child(go[0]);
        }
        close(go[0]);
        if (pid < 0) {
                int e = -errno;
                close(go[1]);
                *ret_step = "clone namespaces";
                return e;
        }
        int r = ns_write_id_maps(pid, 0, 0, ns_host_uid(), ns_host_gid());
        if (r < 0) {
                *ret_step = "write uid/gid map";
                (void)kill(pid, SIGKILL);
        } else
                (void)!write(go[1], "g", 1);
        close(go[1]);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        *ret_step = "wait";
                        return -errno;
                }
        if (r < 0)
                return r;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                *ret_step = "mount in the user namespace";
                return WIFEXITED(status) && WEXITSTATUS(status) != 0x7f ? -WEXITSTATUS(status) : -EIO;
        }
        return 0;
}
