/* init.h - PID 1 inside the sandbox: a built-in, tini-like init.
 *
 * It forks the job, reaps every process that ends up as its child,
 * forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH
 * to the job's process group, and exits when the job does, after
 * killing and reaping everything else the job started and reporting the
 * job's wait status and what its processes cost to the supervisor.
 */
#pragma once

#include "config/run-config.h"

struct init_stdio {
        int stdin_fd;           /* pipe read end, or -1 with a tty */
        int stdout_fd;          /* pipe write ends, or -1 with a tty */
        int stderr_fd;
        int tty_slave;          /* pty slave, or -1 */
        int notify_fd;          /* the landlock tier's network allow: where the
                                 * job sends its connect listener (connect-notify.h),
                                 * or -1; init sets it */
};

struct sandbox_inputs;

/* Never returns. sync_fd is the sandbox's end of the sync channel. */
_Noreturn void init_main(const struct run_config *cfg, const struct sandbox_inputs *in,
                         int sync_fd, const struct init_stdio *stdio);

/* Report a setup failure to the supervisor (also used before init runs). */
void init_report(int sync_fd, int kind, int error, int status, int pid,
                 const char *step, const char *path);
