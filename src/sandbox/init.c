/* init.c - the sandbox's PID 1 (see init.h).
 *
 * Signals: the supervisor blocked the forwarded signals and SIGCHLD
 * before cloning us, and we keep them blocked and read them from a
 * signalfd. Blocking matters for a pid-namespace init: the kernel drops
 * signals to it that have no handler unless they are blocked, and a
 * blocked signal is queued, so nothing sent from the supervisor is lost.
 *
 * Reaping: on every SIGCHLD we waitpid(-1, WNOHANG) until 0 or ECHILD,
 * so orphans re-parented to us never pile up as zombies. When the job
 * itself is reaped, its raw status goes to the supervisor and we exit;
 * the kernel then kills whatever else is left in the namespace.
 */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "lib/exit-codes.h"
#include "sandbox/gvisor.h"
#include "sandbox/init.h"
#include "sandbox/job.h"
#include "sandbox/sandbox.h"
#include "sandbox/sync.h"
#include "lib/util.h"

void init_report(int sync_fd, int kind, int error, int status, int pid,
                 const char *step, const char *path)
{
        struct sync_msg msg = { .kind = (uint32_t)kind, .error = error, .status = status, .pid = pid };
        snprintf(msg.step, sizeof(msg.step), "%s", step ? step : "");
        snprintf(msg.path, sizeof(msg.path), "%s", path ? path : "");
        (void)send(sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL);
}

static int exit_code_for(int status)
{
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return EXIT_SIGNAL_BASE + WTERMSIG(status);
        return EXIT_SETUP;
}

/* Run the compile step to completion; its output is the job's stderr and
 * stdout. Returns its wait status, or -errno. */
static int run_compile(const struct run_config *cfg, const struct sandbox_inputs *in,
                       int sync_fd, const struct init_stdio *stdio)
{
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                job_exec(cfg, in->compile_argv, in, sync_fd, stdio);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return status;
}

_Noreturn void init_main(const struct run_config *cfg, const struct sandbox_inputs *in,
                         int sync_fd, const struct init_stdio *stdio)
{
        sigset_t set;
        sandbox_signal_set(&set);
        int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (sfd < 0) {
                init_report(sync_fd, SYNC_SETUP_ERROR, errno, 0, 0, "signalfd", "");
                _exit(EXIT_SETUP);
        }

        /* the --lang code is in place already (mount.c, LANG_CODE_DIR) */
        if (in->code_fd >= 0)
                close(in->code_fd);
        if (in->compile_argv) {
                int status = run_compile(cfg, in, sync_fd, stdio);
                if (status < 0) {
                        init_report(sync_fd, SYNC_SETUP_ERROR, -status, 0, 0, "compile", in->compile_argv[0]);
                        _exit(EXIT_SETUP);
                }
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        /* an exec failure of the compiler was reported already */
                        init_report(sync_fd, SYNC_COMPILE_FAILED, 0, status, 0, "compile", in->compile_argv[0]);
                        _exit(exit_code_for(status));
                }
        }

        pid_t job = fork();
        if (job < 0) {
                init_report(sync_fd, SYNC_SETUP_ERROR, errno, 0, 0, "fork job", "");
                _exit(EXIT_SETUP);
        }
        if (job == 0) {
                close(sfd);
                job_exec(cfg, in->argv, in, sync_fd, stdio);
        }

        /* The job holds the only copies of its stdio now: EOF on the
         * supervisor's side must mean the job tree closed them. */
        if (stdio->stdin_fd >= 0)
                close(stdio->stdin_fd);
        if (stdio->stdout_fd >= 0)
                close(stdio->stdout_fd);
        if (stdio->stderr_fd >= 0)
                close(stdio->stderr_fd);
        if (stdio->tty_slave >= 0)
                close(stdio->tty_slave);
        if (!cfg->tty)
                init_report(sync_fd, SYNC_READY, 0, 0, job, "", "");

        for (;;) {
                struct signalfd_siginfo si;
                ssize_t n = read(sfd, &si, sizeof(si));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != (ssize_t)sizeof(si))
                        _exit(EXIT_SETUP);

                if (si.ssi_signo != SIGCHLD) {
                        if (si.ssi_signo == SIGPIPE)
                                continue;
                        if (in->gvisor) {
                                gvisor_forward_signal(in->gvisor, (int)si.ssi_signo);
                                continue;
                        }
                        /* the job leads its own process group (setsid) */
                        if (kill(-job, (int)si.ssi_signo) < 0)
                                (void)kill(job, (int)si.ssi_signo);
                        continue;
                }
                for (;;) {
                        int status;
                        pid_t p = waitpid(-1, &status, WNOHANG);
                        if (p <= 0)
                                break;
                        if (p == job && in->gvisor && gvisor_runsc_failed(status)) {
                                init_report(sync_fd, SYNC_SETUP_ERROR, EIO, 0, 0, "runsc",
                                            "the gVisor sandbox failed (runsc's message is in the job's stderr)");
                                _exit(EXIT_SETUP);
                        }
                        if (p == job) {
                                init_report(sync_fd, SYNC_JOB_EXIT, 0, status, job, "", "");
                                _exit(exit_code_for(status));
                        }
                }
        }
}
