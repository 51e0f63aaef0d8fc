/* supervise.h - the supervisor's loop: relay the job's output, forward
 * signals, enforce the wall-clock deadline, and decide how the run ended. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/run-config.h"
#include "sandbox/sandbox.h"
#include "record/status.h"

enum output_stream { STREAM_STDOUT = 1, STREAM_STDERR = 2 };

struct hostio;

struct supervise_hooks {
        /* every chunk of job output, as it is read from the job */
        void (*on_output)(void *userdata, enum output_stream stream, const void *buf, size_t n);
        /* called about every heartbeat_ms while the job runs (0: never) */
        void (*on_heartbeat)(void *userdata);
        /* called once the sandbox has started the job: from here on the
         * supervisor's own work no longer delays it */
        void (*on_job_started)(void *userdata);
        uint64_t heartbeat_ms;
        void *userdata;
        /* The caller's stdio (hostio.h), owned by the caller, who writes
         * out what is still pending after the run (hostio_drain()). NULL:
         * the job's stdin gets EOF at once; its output is captured only
         * (--json). With host_in a terminal, "~." at the start of a line
         * ends the run (like ssh's escape), "~~" sends one "~". */
        struct hostio *host_in, *host_out, *host_err;
        /* --events: host_out carries what on_output makes of both
         * streams (hutch.event/1 lines), not their raw bytes; host_err
         * is unused. The job is read only while host_out has room. */
        bool events;
        /* The run may be recorded before init is reaped, once init has
         * said the job ended with nothing left beside it (see
         * run_outcome.init_exiting). false while something is to be read
         * only after the sandbox is gone (the egress log). Without a run
         * cgroup only: its counters are final only after init. */
        bool record_while_exiting;
        /* The landlock tier's disk limit, which has no tmpfs to hold it:
         * disk_dir (the run's scratch) is walked on the watchdog's tick
         * (limits/du.h), and the run ends with status disk_limit once it
         * holds more than disk_max_bytes or disk_max_entries, or nests
         * deeper than the walk goes. NULL: none. */
        const char *disk_dir;
        uint64_t disk_max_bytes, disk_max_entries;
};

struct run_outcome {
        enum run_status status;
        int exit_code;          /* what `hutch run` exits with */
        int job_exit_code;      /* -1 when the job did not exit normally */
        int signal;             /* signal that ended the job, or 0 */
        int error;              /* errno of a setup or exec failure */
        char message[600];      /* human explanation, "" on success */
        uint64_t wall_ms;
        uint64_t cpu_user_ms, cpu_sys_ms;
        uint64_t peak_rss_bytes;/* largest RSS of any process of the job */
        uint64_t peak_tree_memory_bytes; /* largest sum the watchdog saw, 0 if it never ran */
        /* from the run cgroup (sb->cgroup), read after init was reaped;
         * with one, cpu_user_ms/cpu_sys_ms come from its cpu.stat */
        bool cgroup_metered;    /* the fields below (and cpu) are the cgroup's */
        uint64_t cgroup_memory_peak_bytes; /* memory.peak (or sampled peak), 0 if unknown */
        uint64_t cgroup_oom_kills;  /* oom_kill in memory.events */
        uint64_t pids_max_events;   /* forks refused by pids.max */
        /* init reported the job's end with no other process left and is
         * exiting; it is not reaped yet. Nothing can write to the job's
         * pipes or workspace, and all its output is in. The caller
         * records the run, then reaps init (sandbox_reap()). */
        bool init_exiting;
};

/* Run the loop until the sandbox is gone and its output drained (or,
 * with hooks->record_while_exiting, until only init's exit is left). The
 * signals in sandbox_signal_set() must already be blocked. Fills *out.
 * With sb->cgroup, cpu_time is watched through the cgroup's cpu.stat,
 * memory is left to its memory.max when that was written (an OOM kill
 * there ends as status oom), and the metering comes from the cgroup;
 * the cgroup itself is left for the caller to remove.
 * Returns 0, or -errno if the supervisor itself failed (the sandbox is
 * killed in that case). */
int supervise(const struct run_config *cfg, struct sandbox *sb,
              const struct supervise_hooks *hooks, struct run_outcome *out);
