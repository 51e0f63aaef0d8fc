/* run/live-limits.h - a live sandbox's limits, held and reported for the
 * sandbox as a whole (all its execs, the background processes they left,
 * its kernels), by its supervisor (run/live.c).
 *
 * What holds, and what a hit does:
 *  - memory: with a run cgroup, memory.max (memory.oom.group: the OOM
 *    killer ends the whole sandbox); without one, the watchdog `hutch
 *    run` uses (limits/watchdog.h), walked over init's tree from the
 *    supervisor's loop in slices. Over the limit, the sandbox stops: its
 *    run ends as status oom (exit 137), and so does every exec that ran.
 *  - cpu_time: a budget for the sandbox's whole life, summed over every
 *    process it ever ran (cgroup cpu.stat, else the watchdog); used up,
 *    the sandbox stops as cpu_timeout (124), its running execs too.
 *    RLIMIT_CPU stays a per-process backstop (SIGXCPU: that exec's
 *    status is cpu_timeout).
 *  - pids: pids.max, or RLIMIT_NPROC, which counts the tasks of the
 *    sandbox's uid in its own user namespace: the whole sandbox either
 *    way. A fork past it fails (EAGAIN) and nothing stops; the execs that
 *    ran when it was reached say so (pids.events, or the watchdog's
 *    count of processes), and so does the sandbox's run at its end.
 *  - disk (and limits.inodes): the scratch tmpfs every write lands on;
 *    a write past it fails (ENOSPC). An exec during or after which the
 *    scratch was full says so, as does the sandbox's run.
 * The supervisor's loop is never held up: the watchdog works in slices
 * of a tick (as in supervise.c), and the rest are a few small reads.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct pollfd;
struct run_config;
struct run_outcome;
struct sandbox;
struct live_reply;

/* What a live sandbox reached (live_reply.limits_hit), as bits. */
enum {
        LIVE_LIMIT_MEMORY = 1 << 0,     /* over memory: it stopped, or the OOM killer killed in it */
        LIVE_LIMIT_CPU_TIME = 1 << 1,   /* its cpu time budget used up: it stopped (or SIGXCPU) */
        LIVE_LIMIT_PIDS = 1 << 2,       /* at its pids limit: forks failed */
        LIVE_LIMIT_DISK = 1 << 3,       /* its scratch was full (bytes or inodes): writes failed */
};

/* How many pollfds live_limits_poll() fills. */
#define LIVE_LIMITS_POLL 1

struct live_limits;

/* The watch over sandbox sb (its init, its cgroup if any, its scratch
 * once SYNC_WORKSPACE gave it) for cfg's limits. Never fails. */
struct live_limits *live_limits_new(const struct run_config *cfg, struct sandbox *sb);
/* NULL-safe; returns NULL. */
struct live_limits *live_limits_free(struct live_limits *ll);

/* Fill LIVE_LIMITS_POLL pollfds (fd -1: nothing to watch). */
void live_limits_poll(const struct live_limits *ll, struct pollfd *p);
/* After poll(): one tick of the watch, if due. Returns the LIVE_LIMIT_*
 * bits newly reached, which every exec running now is to carry. */
unsigned live_limits_run(struct live_limits *ll, const struct pollfd *p);
/* Non-NULL once a limit means the sandbox must stop: the reason
 * ("stopped: memory limit 64M exceeded: ..."). Owned by ll. */
const char *live_limits_stopped(const struct live_limits *ll);

/* An exec's job ended (or is given up): add what its end tells
 * (SIGXCPU, an OOM kill in the cgroup, a full scratch, a stop for a
 * limit) to end->limits_hit, and put the words for all its bits in
 * end->limit_message. */
void live_limits_exec_end(struct live_limits *ll, struct live_reply *end);

/* init is reaped: when it ended by itself (init_died; not stopped by
 * the supervisor), read the cgroup's counters a last time: an OOM kill of
 * the whole sandbox (memory.oom.group) shows there. Call it before the
 * running execs are ended. */
void live_limits_reaped(struct live_limits *ll, bool init_died);
/* The sandbox's own run: a limit that stopped it sets status, exit code
 * and message; limits reached on the way are added to the message. */
void live_limits_outcome(const struct live_limits *ll, const char *name, struct run_outcome *out);

/* `hutch exec`'s side: turn the reply's limits into the exec's outcome
 * (status oom / cpu_timeout for a job killed by one, else a note). */
void live_limits_exec_outcome(const struct live_reply *e, struct run_outcome *o);

/* NAME.json's part: ",\"limits\":{...},\"limits_hit\":[...]" (what
 * holds each limit for the whole sandbox, and what it reached so far).
 * Owned by the caller. */
char *live_limits_state_json(const struct live_limits *ll);

/* A live sandbox's enforcement report: each limit says its scope,
 * "sandbox" (memory, cpu_time, pids, disk, cpus, ...), "exec" (timeout)
 * or "process" (nofile, max_file_size). */
void live_limits_enforcement(json_t *enforcement);
