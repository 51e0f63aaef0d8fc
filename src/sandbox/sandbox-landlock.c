/* sandbox-landlock.c - the landlock tier's sandbox_spawn() (see
 * sandbox.h, and landlock.h for the rules).
 *
 * For hosts that refuse user namespaces: no namespace is made. The
 * child is a plain fork that speaks the same protocol on the sync
 * socket as the namespace tier's (so the supervisor, the record and
 * the workspace steps do not tell the tiers apart), and the job is held
 * by what needs no namespace: Landlock, the seccomp policy plus the
 * socket families, no_new_privs, an unprivileged uid without
 * capabilities, rlimits, the watchdog, and parenthood.
 *
 * Order, and why:
 *  1. supervisor: remembers its own children (the egress helper), then
 *     becomes a child subreaper, so that whatever the job leaves when its
 *     init is killed re-parents to it and to no one outside, and clones
 *     the child with CLONE_PIDFD (and into the run cgroup, if any);
 *  2. child: drops every fd but its own, the caller's stdio too; waits
 *     for "go"; becomes a child subreaper itself (every orphan of the job
 *     comes to it while it lives, so its end_the_rest() can end them,
 *     setsid() daemons included: reaper.h); enters the workspace copy;
 *     sends the workspace dir; then the pty, the filter and init, as in
 *     the namespace tier;
 *  3. job (job.c): Landlock, the unprivileged uid, seccomp, exec.
 * init keeps the caller's uid: it holds nothing the job may not reach
 * but its sync socket, and the job cannot ptrace or (ABI 6) signal it,
 * Landlock's domain being below init's.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "limits/cgroup.h"
#include "lib/exit-codes.h"
#include "sandbox/reaper.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox-internal.h"
#include "sandbox/sync.h"
#include "lib/util.h"

static _Noreturn void child_main(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd,
                                 int stdin_r, int stdout_w, int stderr_w, const struct winsize *winsize,
                                 pid_t supervisor)
{
        const struct landlock_job *lj = in->landlock;
        char go;

        /* Not SIGKILL, as in the namespace tier, where init's death ends
         * the pid namespace: here it would leave the job's tree to the
         * host's init. SIGTERM stays blocked and reaches init's signalfd,
         * which then ends the tree itself (init.c). */
        (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != supervisor)
                _exit(EXIT_SETUP);
        int keep[] = { sync_fd, stdin_r, stdout_w, stderr_w, in->code_fd };
        sandbox_close_all_but(keep, ELEMENTSOF(keep));
        if (sandbox_drop_caller_stdio() < 0)
                _exit(EXIT_SETUP);
        if (recv(sync_fd, &go, sizeof(go), 0) != (ssize_t)sizeof(go))
                _exit(EXIT_SETUP);
        (void)prctl(PR_SET_NAME, "hutch-init");

        int r = reaper_become();
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, "child subreaper", "");
        if (chdir(lj->workspace) < 0)
                sandbox_setup_failed(sync_fd, -errno, "chdir", lj->workspace);
        int ws = open(lj->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (ws < 0)
                sandbox_setup_failed(sync_fd, -errno, "open", lj->workspace);
        r = sandbox_send_workspace(sync_fd, ws, -1);
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, "send workspace", "");
        sandbox_child_finish(cfg, in, sync_fd, stdin_r, stdout_w, stderr_w, winsize, NULL);
}

int sandbox_spawn_landlock(const struct run_config *cfg, const struct sandbox_inputs *in,
                           const struct winsize *winsize, struct sandbox *ret)
{
        int sync_pair[2] = { -1, -1 }, in_pipe[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
        int pidfd = -1, r;
        pid_t before[SANDBOX_KEEP_MAX];

        ret->failed_step = "sync socket";
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync_pair) < 0)
                return -errno;
        ret->failed_step = "pipes";
        r = sandbox_open_pipes(cfg, in_pipe, out, err);
        if (r < 0)
                goto fail;

        /* Safety: the supervisor's children from before the sandbox are
         * its own helpers; everything that becomes its child later is
         * the job's (init, or an orphan of its tree) and is ended with it.
         * More helpers than we can remember would be ended too: refuse. */
        ret->failed_step = "child subreaper";
        int n_before = reaper_children(before, ELEMENTSOF(before));
        if (n_before < 0) {
                r = n_before;
                goto fail;
        }
        if ((size_t)n_before > ELEMENTSOF(before)) {
                r = -EMFILE;
                goto fail;
        }
        r = reaper_become();
        if (r < 0)
                goto fail;

        struct clone_args args = {
                .flags = CLONE_PIDFD,
                .pidfd = (uint64_t)(uintptr_t)&pidfd,
                .exit_signal = SIGCHLD,
        };
        if (in->cgroup) {
                args.flags |= CLONE_INTO_CGROUP;
                args.cgroup = (uint64_t)cgroup_run_fd(in->cgroup);
        }
        ret->failed_step = "fork the sandbox";
        pid_t supervisor = getpid();
        pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
        bool moved = false;
        if (pid < 0 && errno == ENOSYS) {
                /* a container's seccomp profile (Docker's, Podman's)
                 * answers ENOSYS to clone3 so that libc falls back to
                 * clone: so do we. clone takes CLONE_PIDFD too, not
                 * CLONE_INTO_CGROUP: the child moves before "go" */
                pid = (pid_t)syscall(SYS_clone, (unsigned long)(CLONE_PIDFD | SIGCHLD), 0UL, &pidfd, 0UL, 0UL);
                moved = in->cgroup != NULL;
        }
        if (pid < 0) {
                r = -errno;
                goto fail;
        }
        if (pid == 0) {
                close(sync_pair[0]);
                if (!cfg->tty) {
                        close(in_pipe[1]);
                        close(out[0]);
                        close(err[0]);
                }
                child_main(cfg, in, sync_pair[1], in_pipe[0], out[1], err[1], winsize, supervisor);
        }
        close(sync_pair[1]);
        sync_pair[1] = -1;
        if (!cfg->tty) {
                close(in_pipe[0]);
                close(out[1]);
                close(err[1]);
                in_pipe[0] = out[1] = err[1] = -1;
        }
        /* Safety: nothing of the job runs before "go", so moving the
         * child into the run cgroup now leaves no instruction of it
         * outside its limits */
        if (moved) {
                ret->failed_step = "move into the run cgroup";
                char buf[24];
                int len = snprintf(buf, sizeof(buf), "%d", (int)pid);
                int fd = openat(cgroup_run_fd(in->cgroup), "cgroup.procs", O_WRONLY | O_CLOEXEC);
                r = fd < 0 ? -errno : write(fd, buf, (size_t)len) < 0 ? -errno : 0;
                if (fd >= 0)
                        close(fd);
                if (r < 0) {
                        (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        (void)waitpid(pid, NULL, 0);
                        goto fail;
                }
        }
        ret->failed_step = "start the sandbox";
        char go = SANDBOX_MSG_GO;
        if (send(sync_pair[0], &go, sizeof(go), MSG_NOSIGNAL) < 0) {
                r = -errno;
                (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                (void)waitpid(pid, NULL, 0);
                goto fail;
        }
        *ret = (struct sandbox) {
                .pid = pid, .pidfd = pidfd, .sync_fd = sync_pair[0],
                .stdin_fd = in_pipe[1], .stdout_fd = out[0], .stderr_fd = err[0], .cgroup = in->cgroup,
                .workspace_fd = -1, .upper_fd = -1, .subreaper = true, .n_keep = (size_t)n_before,
        };
        memcpy(ret->keep, before, (size_t)n_before * sizeof(pid_t));
        return 0;

fail:
        for (int *fd = (int[]){ sync_pair[0], sync_pair[1], in_pipe[0], in_pipe[1], out[0], out[1],
                                err[0], err[1], pidfd, -2 };
             *fd != -2; fd++)
                if (*fd >= 0)
                        close(*fd);
        return r;
}
