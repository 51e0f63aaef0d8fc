/* job.h - the last steps before the job's execve, in the forked job
 * process: new session, stdio, working dir, rlimits, environment, no
 * capabilities, no_new_privs, then exec. */
#pragma once

#include <stdbool.h>

#include "sandbox/init.h"
#include "config/run-config.h"

/* Never returns: execs the job, or reports SYNC_EXEC_ERROR on sync_fd and
 * exits 127 (not found) / 126 (not executable). RLIMIT_NPROC is set
 * from cfg->pids unless in->pids_in_cgroup (pids.max holds it then).
 * With wait_start, everything up to the exec is done first and then the
 * supervisor's "start" is awaited on sync_fd (see job_wait_start()). */
struct sandbox_inputs;
_Noreturn void job_exec(const struct run_config *cfg, char **argv, const struct sandbox_inputs *in,
                        int sync_fd, const struct init_stdio *stdio, bool wait_start);

/* Block until the supervisor's "start" arrives on sync_fd. EOF (it gave
 * up, or died) exits quietly: nothing of the job runs. First, once per
 * sandbox, it waits for the old root's detach (job_set_detach_fd()) and
 * fails the setup unless it succeeded. */
void job_wait_start(int sync_fd);

/* The pipe mount_build_root() left in mount_workspace.ret_detach_fd (or
 * -1), for job_wait_start() to wait on: in the job before its exec, or in
 * init before a compile step or before a live sandbox says it is ready. */
void job_set_detach_fd(int fd);
