/* gvisor.h - the gvisor runtime (DESIGN §8): the job runs under gVisor's
 * runsc, in rootless mode, *inside* the sandbox hutch built as usual.
 *
 * hutch still clones its namespaces, builds the root (mount.c), runs its
 * init and supervises as for the native runtime; only the job's last
 * step differs: instead of exec'ing the job, the forked job process
 * writes an OCI bundle whose root is the sandbox's own root and execs
 * `runsc run`. The job's system calls are then served by gVisor's
 * user-space kernel (the sentry) and its files by runsc's gofer, which
 * sees nothing but hutch's sandbox. Workspaces, sessions and artifacts
 * collect as natively because the files still land on the run's
 * scratch.
 *
 * Host side: gvisor_probe() finds runsc and its version before a run;
 * gvisor_check_config() refuses what this runtime cannot do;
 * gvisor_enforcement() rewrites the report for it. Sandbox side:
 * gvisor_exec() in the job process, gvisor_forward_signal() and
 * gvisor_job_status() in init. */
#pragma once

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/run-config.h"

/* Where the bundle and runsc's state live inside the sandbox: on the
 * scratch, hidden from the job behind a tmpfs of gVisor's own. */
#define GVISOR_DIR "/tmp/.hutch-runsc"

/* runsc's own failures (bad spec, sandbox would not start) exit with this
 * code; a job's own `exit 128` is told apart by runsc's log (see
 * gvisor_job_status()). */
#define GVISOR_RUNSC_FAILED 128

struct gvisor_info {
        char path[PATH_MAX];    /* the runsc binary, absolute */
        char version[64];       /* as `runsc --version` says it: "0.0~20221219.0" */
        const char *platform;   /* how the sentry traps the job's syscalls: "ptrace" */
};

/* Find runsc ($HUTCH_RUNSC, else PATH, /usr/sbin, /usr/bin) and read its
 * version by running `runsc --version`. 0, or -errno with one line in
 * *ret_error that says what is missing and how to install it. */
int gvisor_probe(struct gvisor_info *ret, char **ret_error);

/* What the gvisor runtime cannot do with cfg (-t, network host,
 * root = image): 0, or -EOPNOTSUPP with one line in *ret_error. */
int gvisor_check_config(const struct run_config *cfg, const struct gvisor_info *gv, char **ret_error);

/* How many host tasks runsc may have for a job of `pids` processes: its
 * own (~70 idle) plus, on the ptrace platform, a stub process of ~8
 * threads per job process. This is the backstop on runsc's tree (cgroup
 * pids.max or RLIMIT_NPROC); the job's own limit is RLIMIT_NPROC inside
 * gVisor's kernel, where a fork past it fails with EAGAIN as natively.
 * A limit of exactly `pids` on the host would make runsc's Go runtime
 * die for want of a thread long before the job reached it. */
#define GVISOR_HOST_TASKS(pids) (128 + 8 * (uint64_t)(pids))

/* Rewrite an enforcement report (run/enforce.h) for a run under gv: add
 * "runtime" (name, runsc version, platform, the job's uid), replace
 * seccomp by what filters the job's syscalls now, and say for each limit
 * which mechanism holds it around runsc. native: gv NULL adds
 * {"name": "native"} only. */
void gvisor_enforcement(json_t *report, const struct run_config *cfg, const struct gvisor_info *gv);

/* In the forked job process, after RLIMIT_CORE and before any other
 * limit: write the OCI bundle for argv under GVISOR_DIR and exec runsc.
 * `compile` names the --lang compile step (its own container). Returns
 * only on failure: -errno, with *ret_step "exec" when argv[0] cannot be
 * run (ENOENT: not found, else not executable), else the setup step. */
int gvisor_exec(const struct run_config *cfg, const struct gvisor_info *gv, char **argv, char **env,
                bool compile, const char **ret_step);

/* In init: deliver sig to every process of the job's container (`runsc
 * kill --all`); runsc run itself does not forward signals. */
void gvisor_forward_signal(const struct gvisor_info *gv, int sig);

/* Where `runsc run` writes its log (--debug-log, the run command only):
 * in the bundle, under GVISOR_DIR, out of the job's reach. */
void gvisor_log_path(char *buf, size_t len, bool compile);

/* In init, once `runsc run` (wait status runsc_status) is reaped: the job's own wait status, as gVisor's kernel gave it to runsc
 * and runsc logged it, so a job killed by signal N is told apart from
 * one that exited 128+N (gvisor-status.c argues why the job cannot forge
 * it). Without a log line that agrees with runsc's exit code, the exit
 * code stands. 0 with *ret_status, or -EIO when runsc itself failed
 * (exit 128 and no status logged). */
int gvisor_job_status(int runsc_status, bool compile, int *ret_status);

/* The same from the log's text (its tail), for tests. */
int gvisor_status_from_log(const char *log, size_t len, int runsc_status, int *ret_status);
