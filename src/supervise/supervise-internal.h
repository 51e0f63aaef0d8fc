/* supervise-internal.h - internal to the supervisor: what its files
 * share. Not an API; everything else includes supervise/supervise.h.
 *
 * The supervisor is split by concern:
 *   supervise.c          the event loop, its timers, signals and the
 *                        termination state table
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
#include "limits/watchdog.h"
#include "sandbox/sync.h"
#include "supervise/cancel.h"
#include "supervise/hostio.h"
#include "supervise/pace.h"
#include "supervise/supervise.h"


enum phase { PHASE_RUNNING, PHASE_TERMINATING, PHASE_KILLED };
enum stop_reason { STOP_NONE, STOP_TIMEOUT, STOP_CANCEL_INT, STOP_CANCEL_TERM, STOP_CANCEL_ESCAPE,
                   STOP_CANCEL_KILL, STOP_OOM, STOP_CPU };
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
        struct watchdog *wd;            /* the tree walk, resumed tick to tick */
        struct cgroup_run *cg;          /* the run cgroup, or NULL */
        bool cg_memory;                 /* memory.max holds cfg->memory_bytes */
        uint64_t cg_cpu_ms;             /* cgroup cpu usage when cpu_time was hit */
        struct cgroup_stats cg_stats;   /* read after init was reaped */
        bool have_cg_stats;
        bool init_exited, master_open;
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

/* ---- supervise.c -------------------------------------------------------- */

/* End everything now: SIGKILL to init, for reason (the first reason wins). */
void kill_now(struct loop *l, enum stop_reason reason);

/* ---- supervise-input.c -------------------------------------------------- */

int input_target(const struct loop *l);
void close_job_stdin(struct loop *l);
void flush_input(struct loop *l);
bool stdin_readable_now(const struct loop *l);
void read_stdin(struct loop *l);

/* ---- supervise-outcome.c ------------------------------------------------ */

/* Fill out from what the loop saw, once init was reaped. */
void decide(struct loop *l, struct run_outcome *out);
