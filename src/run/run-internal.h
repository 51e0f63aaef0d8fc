/* run/run-internal.h - what the files of one run share (run/run.c, the
 * stages, with agent.c, egress.c, limits.c, record.c, record-start.c,
 * tty.c and workspace.c). Not an API: nothing outside run/ includes it. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>
#include <time.h>

#include <jansson.h>

#include "lib/digest.h"
#include "limits/slurm.h"
#include "net/egress.h"
#include "net/rules.h"
#include "run/landlock.h"
#include "run/run.h"
#include "sandbox/gvisor.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"
#include "supervise/supervise.h"
#include "workspace/session.h"

struct cgroup_run;
struct run_config;
struct run_outcome;
struct run_record;
struct seccomp_report;
struct store;

/* run/agent.c */

/* Replace every secret's value in rec's stored output and message by
 * "[secret NAME]" (secrets: "NAME=VALUE"; NULL is a no-op). */
void run_redact_record(struct run_record *rec, char *const *secrets);
/* What the caller gave may hold a value by mistake (double quotes in
 * sh -c "... $TOK ..."): the row keeps rec's argv, cwd, resolved profile
 * text and --lang code, and the labels, with each value replaced. */
void run_redact_start(struct run_record *rec, char **labels, char *const *secrets);

/* After the files of run run_id are recorded (and applied): drop every
 * blob of the run's new content that holds a secret's value, and mark
 * its row "not stored" with the reason (said as a warning event too
 * when ev is not NULL). */
struct events;
void run_scrub_secret_files(struct store *s, const char *run_id, char *const *secrets, struct events *ev);

/* --detach, before the sandbox exists: create the run's spool, fork.
 * The caller's process waits until the child has written the run's row
 * (run_detach_started()), prints say (NULL: the id) and returns EXIT_OK (or the
 * child's exit code if it failed first). The child, in a session of its
 * own with stdin on /dev/null and stdout on the spool, becomes the
 * supervisor: rec's supervisor pid is its own, *ret_notify is set, and
 * -1 is returned (go on). Other values are exit codes (logged). */
int run_detach(struct run_record *rec, const char *say, int *ret_notify);
/* The detached supervisor's row exists: tell the caller (closes
 * *notify) and stop writing to its stderr. No-op when *notify < 0. */
void run_detach_started(int *notify);

/* run/record.c */

/* What the supervisor's hooks (run_on_*) are given: the run being
 * recorded and where its output goes. */
struct run_ctx {
        struct store *store;
        struct run_record *rec;
        struct capture *out, *err;
        struct events *ev;      /* --events, or NULL */
        pid_t init_pid;
        uint64_t started_ms;
        bool truncated[2];      /* the truncated event was sent */
};
struct capture;
struct hostio;
void run_on_output(void *userdata, enum output_stream stream, const void *buf, size_t n);
void run_on_job_started(void *userdata);
void run_on_heartbeat(void *userdata);
/* The job is over and its files are collected: complete rec from out and
 * the captures in one final update (a failure is said, never fatal: the
 * job's exit code stands), pass on the rest of the output, say the
 * outcome, and answer with --json or the exit event. */
void run_finish_record(const struct run_ui *ui, struct store *store, struct run_record *rec,
                       const struct run_config *cfg,
                       const struct run_outcome *out, const struct capture *cap_out,
                       const struct capture *cap_err, struct hostio *host_out, struct hostio *host_err,
                       struct events *ev, bool json);

/* run/tty.c */

/* The user's terminal under -t, put in raw mode and restored on every
 * exit path that returns through here (the loop handles every signal
 * that would otherwise kill us). */
struct tty_state {
        bool saved;
        struct termios orig;
        bool have_ws;
        struct winsize ws;      /* TIOCGWINSZ before the run */
        int excl;               /* TIOCGEXCL before the run, or -1 */
        int ldisc;              /* TIOCGETD before the run, or -1 */
        int fl;                 /* F_GETFL of the description, or -1 */
};

/* -t: put the user's terminal in raw mode, if stdin is one and hutch is
 * in its foreground; save everything run_tty_restore() puts back. */
void run_tty_raw(struct tty_state *t);
/* Put back what run_tty_raw() saved: modes, flow control, window size,
 * exclusive mode, line discipline, file status flags; safe to repeat. */
void run_tty_restore(struct tty_state *t);

/* run/limits.c */

/* Compile the profile's syscall policy to BPF into *ret_blob and *ret_len,
 * and fill *report. Returns 0 or -errno (with *ret_error set when known). */
int run_build_seccomp(const struct run_config *cfg, void **ret_blob, size_t *ret_len,
                      struct seccomp_report *report, char **ret_error);
/* Before sandbox_start(): as real root without a memory cgroup, lower
 * the SysV IPC limits of the job's IPC namespace from cfg's memory
 * limit (limits/ipcns.h) and
 * note in the report what holds them; rootless, note why nothing does.
 * A failure is a warning and the report says so. */
struct enforce_cgroup;
struct sandbox;
void run_limit_ipc(const struct run_config *cfg, const struct sandbox *sb, json_t *enforcement,
                   const struct enforce_cgroup *cg);
/* The kernel refused the cached filter of cfg: remove the entry,
 * compile it again, and say so in out's message. */
void run_forget_seccomp(const struct run_config *cfg, struct run_outcome *out);
/* Make the run's cgroup into *ret (and *ret_unit, when systemd gave a
 * scope), or leave *ret NULL and say why in *ret_reason. */
/* self_cgroup: the text of /proc/self/cgroup, read once for this and
 * run_apply_slurm() (NULL: each reads it). */
void run_prepare_cgroup(const struct run_config *cfg, const char *self_cgroup, const char *run_id, const char *io_max,
                        struct cgroup_run **ret, char **ret_unit, char **ret_reason);
/* Inside a Slurm job (limits/slurm.h): find the step into *step and
 * lower cfg's memory and cpus to its allocation; the SLURM_CAPPED_*
 * bits of what was lowered. Nothing happens outside Slurm, or with
 * HUTCH_SLURM=off (for a caller that knows better than the step's
 * figures). */
struct slurm_step;
unsigned run_apply_slurm(struct run_config *cfg, const char *self_cgroup, struct slurm_step *step);
/* The step's labels for run run_id, except keys the run's own --label
 * set (those win); 0 or -errno from the store. */
int run_label_slurm(struct store *s, const char *run_id, const struct slurm_step *step,
                    char *const *user_labels);
/* Add the step's "slurm" object to the enforcement report, when found. */
void run_report_slurm(json_t *enforcement, const struct slurm_step *step, unsigned capped, bool have_cgroup);

/* run/workspace.c */

/* --workdir and --input, resolved on the host before the sandbox exists. */
struct workspace_plan {
        char *workdir;          /* canonical host path, or NULL */
        int lower_fd;           /* O_DIRECTORY fd of workdir, or -1 */
        char **inputs;          /* "CANONICAL_PATH:NAME" */
        struct session session; /* --session: locked while we run */
        struct timespec lower_since; /* CLOCK_REALTIME before lower_fd was opened
                                 * (--workdir only): host edits after it are
                                 * conflicts; 0 for a session or a snapshot */
        char *snapshot;         /* --snapshot: the copy that is the lower dir
                                 * (lower_fd is then its fd), removed at the end */
};

/* Collection's time cap is the job's timeout, but never less than this. */
#define RUN_COLLECT_MIN_MS 10000

/* --session: lock the session and open its tree as wp's lower dir.
 * Logs and returns an exit code (EXIT_OK to go on). */
int run_open_session(const struct run_args *a, const char *db_path, struct workspace_plan *wp);
/* Resolve --workdir and --input on the host into *wp. Returns 0, or
 * -errno with *ret_error set (a usage error). */
int run_prepare_workspace(const struct run_args *a, struct workspace_plan *wp, char **ret_error);
/* --snapshot (cfg->snapshot with --workdir): copy the workdir into
 * <state dir>/snapshots/RUN_ID and make the copy the lower dir (wp->lower_fd,
 * wp->snapshot; no lower_since). Before the sandbox exists. Returns
 * EXIT_OK, or EXIT_SETUP after logging why (nothing ran). */
int run_snapshot_workspace(const struct run_config *cfg, const char *run_id, struct workspace_plan *wp);
/* Remove wp->snapshot, if any (logged when it cannot be). */
void run_snapshot_remove(struct workspace_plan *wp);
/* After the sandbox is gone: record the changes and the artifacts, apply
 * them for --apply or --session. How far that got is rec's files summary,
 * which the final update writes (store_run_finish()); when they could
 * not be recorded, out->message says so too. Returns an exit
 * code to use instead of the job's (1 for a job that exited 0 but whose
 * files were not recorded, or could not be applied), or -1 to keep the
 * job's. upper_error: -errno when the landlock tier could not make the
 * change set's upper dir (then upper_fd is -1), else 0. */
int run_collect_files(struct store *store, struct run_record *rec, const struct run_config *cfg,
                      const struct run_args *a, struct workspace_plan *wp,
                      int workspace_fd, int upper_fd, int upper_error, struct run_outcome *out);

/* run/egress.c */

/* network = allow: the rules, the capture socket and the helper. */
struct run_egress {
        bool active;            /* network = allow */
        struct egress_rules rules;
        uint16_t *ports;        /* listened on inside */
        size_t n_ports;
        int sandbox_fd;         /* the sandbox's end of the capture socket */
        int helper_fd;          /* the helper's end */
        uint16_t proxy_port;    /* the landlock tier: the proxy on the host's 127.0.0.1 */
        uid_t job_uid;          /* the landlock tier: the job's ids, for the helper's */
        gid_t job_gid;          /* confinement; (uid_t)-1 otherwise */
        struct egress_params params;
        struct egress helper;
};

/* Parse the rules and open the capture socket (network = allow only;
 * otherwise *e is left inactive); add the proxy variables to cfg->env.
 * 0 or -errno with *ret_error set. */
int run_egress_prepare(struct run_config *cfg, bool landlock, struct run_egress *e, char **ret_error);
/* After sandbox_spawn(): start the helper (init_pid: the sandbox's
 * init, for the job pid of each connection). 0 or -errno. */
int run_egress_start(const struct run_config *cfg, pid_t init_pid, struct run_egress *e);
/* After the sandbox is gone: stop the helper and record its decisions
 * with run run_id (those a live sandbox's supervisor did not record
 * while it ran, live-conns.h), each secret's value in them replaced as
 * in output (secrets: "NAME=VALUE", NULL: none). 0 or -errno. */
int run_egress_record(struct store *store, const char *run_id, struct run_egress *e, char *const *secrets);
/* Kill the helper if still there and free everything; safe to repeat. */
void run_egress_done(struct run_egress *e);

/* run/run.c and run/record-start.c: the stages of one run */

/* a stage's answer: go on to the next one */
#define RUN_NEXT (-1)

/* What run_execute() keeps for one run, from the host's side: the state
 * every stage (run/run.c, run/record-start.c) reads and fills in. */
struct run {
        const struct run_config *cfg;   /* resolved and frozen: the stored profile */
        struct run_config view;         /* cfg as the sandbox, limits and report see it
                                         * (shallow; env and home its own) */
        const struct run_args *a;
        const struct lang_job *lj;
        const char *lang, *rerun_of;
        bool json;

        struct workspace_plan wp;
        int workspace_fd, upper_fd;     /* the sandbox's, once it is gone */
        struct run_egress egress;
        struct gvisor_info gv;
        bool gvisor;
        struct run_landlock ll;         /* the isolation tier (run/landlock.h) */
        char *self_cgroup;              /* /proc/self/cgroup, read once */
        struct slurm_step slurm;
        unsigned slurm_capped;

        struct run_record *rec;
        int admit_fd;                   /* the admission lock, held until the row is written */
        int detach_notify;
        bool detached_parent;           /* the caller's side of --detach: done */
        struct events *ev;              /* --events, or NULL */

        char *io_max, *cg_reason, *cg_unit;
        struct cgroup_run *cgroup;

        struct sandbox_inputs inputs;
        struct sandbox sb;
        bool spawned;                   /* sb exists and is not closed */
        int spawn_r;                    /* sandbox_spawn()'s answer */
        sigset_t set, old;
        bool masked;                    /* set is blocked; old is the mask to restore */
        struct winsize ws;
        bool have_ws;
        char *profile_text;
        char sha[DIGEST_HEX_SIZE];
        void *bpf;
        size_t bpf_len;
        struct seccomp_report sc_report;
        json_t *enforcement;

        struct store *store;
        bool key_taken;                 /* another hutch's run has the --id key */
        struct capture *cap_out, *cap_err;
        struct hostio *host_in, *host_out, *host_err;
        int stdin_fd;
        struct run_ctx ctx;
        struct supervise_hooks hooks;
        struct tty_state tty;
        struct run_outcome out;
        int files_code;                 /* run_collect_files()'s code, or -1 */
        int upper_error;                /* the landlock tier's change set could not be made: -errno */
        char *err;
};

/* The stages of run/record-start.c (see run/run.c for the order): each
 * returns RUN_NEXT to go on or hutch's exit code to stop there. */
int run_open_record(struct run *r);
int run_admit(struct run *r);
int run_record_start(struct run *r);
