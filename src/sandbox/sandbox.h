/* sandbox.h - creating the sandbox: clone into fresh namespaces, map the
 * sandbox user, and hand the child to init (init.c). The supervisor
 * (supervise.c) then owns the returned handles. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/run-config.h"

struct cgroup_run;

#define SANDBOX_KEEP_MAX 16

struct sandbox {
        pid_t pid;              /* init's pid on the host */
        int pidfd;              /* pidfd of init */
        int sync_fd;            /* supervisor's end of the sync channel */
        int stdin_fd;           /* write end of the job's stdin pipe (O_NONBLOCK), */
        int stdout_fd;          /* read ends of the job's stdout/stderr; all */
        int stderr_fd;          /* -1 in tty mode (the pty carries them) */
        const char *failed_step;/* set when sandbox_spawn() fails: what failed */
        char failed_path[416];  /* ... and on which path ("" for none) */
        struct cgroup_run *cgroup; /* the run's cgroup (not owned), or NULL */
        int workspace_fd;       /* the job's workspace dir, sent before the job
                                 * started (SYNC_WORKSPACE), else -1 */
        int upper_fd;           /* its overlay upper dir with a lower dir, else -1 */
        bool filter_sent;       /* sandbox_send_filter() was called */
        /* The landlock tier (no pid namespace): the supervisor is a child
         * subreaper, and once init is gone it ends every process that
         * re-parented to it (reaper.h), all but these, its children from
         * before the sandbox (the egress helper) */
        bool subreaper;
        pid_t keep[SANDBOX_KEEP_MAX];
        size_t n_keep;
};

/* The signals hutch handles itself (through a signalfd) and forwards;
 * they must be blocked before sandbox_spawn() so the child inherits the
 * mask and its init can read them from a signalfd too. */
void sandbox_signal_set(sigset_t *set);

/* What a run brings into the sandbox besides its configuration. */
struct cgroup_run;
struct gvisor_info;
struct sandbox_inputs {
        int code_fd;            /* --lang code, or -1 */
        const char *code_name;  /* its file name in LANG_CODE_DIR (main.py) */
        char **compile_argv;    /* run before the job; failing = compile_error */
        char **argv;            /* the job's command */
        /* The syscall filter (seccomp_policy_export()) arrives in a
         * message of its own before "start": the supervisor builds it
         * while the sandbox builds its root, and the job is set up with
         * it while the supervisor records the run. Set inside the
         * sandbox only. */
        const void *seccomp_blob;
        size_t seccomp_blob_len;
        bool seccomp_required;  /* no filter in the filter message: refuse to run */
        struct cgroup_run *cgroup; /* clone init straight into this run cgroup
                                    * (CLONE_INTO_CGROUP); NULL = no cgroup.
                                    * Not owned. */
        bool pids_in_cgroup;    /* pids.max holds cfg->pids: no RLIMIT_NPROC */
        const char *workspace_lower; /* host dir under an overlay workspace, or NULL */
        char **inputs;          /* "HOST:NAME" read-only at <workspace>/input/NAME */
        /* network = allow only (read for no other mode): the socket the
         * capture fds go out on (net/netns.h), and the ports to catch */
        int egress_fd;
        const uint16_t *egress_ports;
        size_t n_egress_ports;
        const struct gvisor_info *gvisor; /* runtime gvisor: the job runs under this
                                           * runsc (gvisor.h); NULL = native */
        const struct landlock_job *landlock; /* the landlock tier: no namespaces,
                                              * the job held by these (below);
                                              * NULL = the namespace tier */
        bool live;              /* a live sandbox: no job of its own; after
                                 * "start" init forks one job per
                                 * SANDBOX_MSG_EXEC (init.c, run/live.c) */
};

/* What the landlock tier's job needs besides the run's config. The
 * scratch and its dirs exist and belong to uid/gid (the supervisor made
 * them); nothing here is owned by the sandbox. */
struct landlock_plan;
struct landlock_job {
        const char *workspace;  /* the job's working dir: a private copy, in the scratch */
        const char *home;       /* $HOME, in the scratch */
        const char *tmpdir;     /* $TMPDIR, in the scratch */
        uid_t uid;              /* the job's ids: the caller's, or 65534 when */
        gid_t gid;              /* hutch runs as root (never host root) */
        int sockets;            /* enum seccomp_sockets for the run's network mode */
        uint16_t proxy_port;    /* network allow: the egress proxy's port on
                                 * 127.0.0.1, which init connects for the job
                                 * (connect-notify.h); 0 otherwise */
        const struct landlock_plan *plan; /* landlock.h, built by the supervisor */
};

/* Clone the sandbox, write its uid/gid maps and let it build itself.
 * Setup errors arrive later on sync_fd. `winsize` may be NULL (no tty).
 * With in->landlock, no namespace is made: the child is a plain fork
 * that sets the job up under Landlock (sandbox-landlock.c), and the
 * handles and the messages on sync_fd are the same. 0 or -errno (then
 * nothing was started). */
struct winsize;
int sandbox_spawn(const struct run_config *cfg, const struct sandbox_inputs *in,
                  const struct winsize *winsize, struct sandbox *ret);

/* Hand the sandbox the job's syscall filter (NULL: none, for gVisor and
 * doctor's probe), so that it can set the job up to its last step
 * before the exec while the supervisor records the run. 0 or -errno. */
int sandbox_send_filter(struct sandbox *sb, const void *seccomp_blob, size_t len);

/* Let the sandbox start the job (after sandbox_send_filter(), which this
 * calls first if it was not). Until then it builds itself and the job
 * process but runs nothing of the job's, so the supervisor can record
 * the run in parallel with the setup and still before the job runs.
 * 0 or -errno. */
int sandbox_start(struct sandbox *sb, const void *seccomp_blob, size_t len);

/* Kill a sandbox that will not be started, and reap it. */
void sandbox_abort(struct sandbox *sb);

/* The landlock tier, once init is reaped: SIGKILL and reap every process
 * of the job's tree that re-parented to the supervisor (init was killed
 * before it could end them), and repeat until none is left. Nothing in
 * the namespace tier (killing init ended its pid namespace). */
void sandbox_end_orphans(struct sandbox *sb);

/* Wait for an init that is exiting on its own (it reported the job's
 * end with nothing left beside it), after sandbox_close() too: only its
 * pid is needed. */
void sandbox_reap(pid_t init_pid);

/* Close the handles, the workspace fds included (does not kill
 * anything). */
void sandbox_close(struct sandbox *sb);
