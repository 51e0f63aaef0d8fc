/* supervise-internal.h - internal to the supervisor: what its files
 * share. Not an API; everything else includes supervise/supervise.h.
 *
 * The supervisor is split by concern:
 *   supervise.c          the event loop: its fds, timers and signals,
 *                        turned into the events below
 *   supervise-table.c    the termination state table: state x event ->
 *                        action and next state
 *   supervise-input.c    the caller's stdin relayed to the job, and the
 *                        "~." escape of a raw terminal
 *   supervise-outcome.c  what ended the run: status, exit code, message
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "limits/cgroup.h"
#include "limits/du.h"
#include "limits/watchdog.h"
#include "sandbox/sync.h"
#include "supervise/cancel.h"
#include "supervise/hostio.h"
#include "supervise/pace.h"
#include "supervise/supervise.h"


/* The termination states (supervise-table.c). */
enum phase {
        PHASE_RUNNING,          /* the job runs; nothing asked it to stop */
        PHASE_TERMINATING,      /* it was asked to stop; SIGKILL after the grace */
        PHASE_KILLED,           /* SIGKILL was sent to init: everything dies */
        PHASE_DONE,             /* init was reaped: nothing is left to signal */
        _PHASE_MAX,
};
/* What may end a run, as the loop sees it. */
enum event {
        EV_TIMER,               /* the timerfd fired: the deadline while running,
                                 * the end of the grace while terminating */
        EV_CPU_LIMIT,           /* cpu time over the limit (cgroup or watchdog) */
        EV_MEMORY_LIMIT,        /* the watchdog saw the tree over the memory limit */
        EV_DISK_LIMIT,          /* the scratch's walk saw it over the disk limit */
        EV_SIGINT,              /* the first SIGINT to hutch (Ctrl-C) */
        EV_SIGINT_AGAIN,        /* a second (or later) SIGINT to hutch */
        EV_SIGTERM,             /* a plain SIGTERM to hutch */
        EV_KILL_REQUEST,        /* hutch kill (cancel.h) with a signal but SIGKILL */
        EV_KILL_REQUEST_SIGKILL,/* hutch kill --signal KILL */
        EV_ESCAPE,              /* "~." typed on a raw terminal */
        EV_FAILURE,             /* the loop itself failed (poll()) */
        EV_INIT_EXITED,         /* init was reaped */
        _EV_MAX,
};
/* What a cell of the table does. Every action but NONE and FORWARD
 * first gives the run its reason, the event's, if it has none yet. */
enum action {
        ACT_NONE,               /* nothing */
        ACT_NOTE,               /* only the reason */
        ACT_FORWARD,            /* SIGINT to init, which passes it to the job */
        ACT_TERM,               /* SIGTERM to init, arm the profile's grace */
        ACT_REQUEST,            /* hutch kill's signal to init, arm its grace */
        ACT_KILL,               /* SIGKILL to init */
        _ACT_MAX,
};
struct transition {
        enum action action;
        enum phase next;
};
enum stop_reason { STOP_NONE, STOP_TIMEOUT, STOP_CANCEL_INT, STOP_CANCEL_TERM, STOP_CANCEL_ESCAPE,
                   STOP_CANCEL_KILL, STOP_OOM, STOP_CPU, STOP_DISK };
/* where the "~." escape stands in what the terminal typed */
enum escape { ESC_LINE_START, ESC_NORMAL, ESC_TILDE };

struct loop {
        const struct run_config *cfg;
        struct sandbox *sb;
        const struct supervise_hooks *hooks;
        enum phase phase;
        enum stop_reason reason;
        int sigints;
        struct cancel_request cancel;   /* from hutch kill, when reason is STOP_CANCEL_KILL */
        int timer_fd, signal_fd, tty_master, watchdog_fd;
        struct tree_sample worst;       /* what the watchdog saw when it acted */
        uint64_t peak_memory;           /* largest tree memory the watchdog saw */
        uint64_t tree_cpu_ms;           /* largest tree cpu the watchdog saw */
        struct watchdog *wd;            /* the tree walk, resumed tick to tick */
        struct du *du;                  /* the scratch's walk (hooks->disk_dir), likewise */
        struct du_sample disk_worst;    /* what it saw when it acted */
        bool disk_too_deep;             /* ... or it found dirs nested past its reach */
        struct cgroup_run *cg;          /* the run cgroup, or NULL */
        bool cg_memory;                 /* memory.max holds cfg->memory_bytes */
        uint64_t cg_cpu_ms;             /* cgroup cpu usage when cpu_time was hit */
        struct cgroup_stats cg_stats;   /* read after init was reaped */
        bool have_cg_stats;
        bool init_exited, master_open;
        bool sync_open;                 /* the sync channel is still to be read */
        uint64_t drain_deadline;        /* after init's exit: stop waiting for EOF then */
        bool awaited_report;            /* await_job_report() was called */
        struct hostio *host_in, *host_out, *host_err;   /* the caller's, or NULL */
        bool stdin_open;                /* the caller's stdin is still to be read */
        enum escape esc;
        size_t in_off, in_len;          /* input read, not yet taken by the job */
        char inbuf[256 * 1024];
        int init_status;
        struct rusage rusage;
        struct sync_msg setup_error, exec_error, job_exit, compile_failed;
        bool have_setup_error, have_exec_error, have_job_exit, have_compile_failed;
        int heartbeat_fd;
        uint64_t started_ms;
        struct pace pace;               /* batching the output (pace.h) */
        size_t stdout_capacity, stderr_capacity;        /* of the job's pipes */
        char buf[512 * 1024];
};

/* ---- supervise-table.c -------------------------------------------------- */

/* Feed event ev to the table: do termination[l->phase][ev]'s action and
 * move to its next state. req is hutch kill's request for
 * EV_KILL_REQUEST and EV_KILL_REQUEST_SIGKILL (kept in l->cancel when it
 * gives the run its reason), NULL for the other events. */
void loop_event(struct loop *l, enum event ev, const struct cancel_request *req);
/* The cell for state and ev, for the tests. */
struct transition loop_transition(enum phase state, enum event ev);
/* sig to init through its pidfd; nothing once init was reaped. 0 or
 * -errno (ESRCH, init already gone, is 0). */
int send_init(struct loop *l, int sig);
/* Arm the loop's one-shot timer ms (0: 1) from now. */
void arm_timer(struct loop *l, uint64_t ms);

/* ---- supervise-input.c -------------------------------------------------- */

int input_target(const struct loop *l);
void close_job_stdin(struct loop *l);
void flush_input(struct loop *l);
bool stdin_readable_now(const struct loop *l);
void read_stdin(struct loop *l);

/* ---- supervise-outcome.c ------------------------------------------------ */

/* Fill out from what the loop saw, once init was reaped. */
void decide(struct loop *l, struct run_outcome *out);
