/* watchdog.h - measuring a sandbox's process tree from the host, for
 * limits that have no cgroup to hold them (DESIGN §3, "without cgroups").
 *
 * The tree is found through /proc/PID/task/TID/children starting at the
 * sandbox's init, so only the sandbox's own processes are ever counted,
 * whatever else runs on the host.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct tree_sample {
        unsigned processes;     /* live processes, init included */
        uint64_t memory_bytes;  /* proportional anonymous + shmem memory */
        uint64_t cpu_ms;        /* user+system of live processes and of
                                 * every process already reaped in the tree */
};

/* Sample the tree rooted at host pid `root` in one go, however long it
 * takes. Processes that exit while we look are skipped. 0 or -errno
 * (-ENOENT when root itself is gone). */
int watchdog_sample(pid_t root, struct tree_sample *ret);

/* The same walk in slices, so that no sample can hold up a deadline: a
 * job with 240k memfds open makes one round take about a second.
 *
 * watchdog_step() works on the current round for about budget_ns
 * (UINT64_MAX: no limit; the clock is looked at every 64 fds) and
 * returns 1 with *ret set when the round is complete (the next call
 * starts a new one), or 0 when the budget ran out first: *ret then holds
 * the round's sums so far, a lower bound of the round's figures, and the
 * next call goes on where this one stopped. A round's cost is linear in
 * processes plus open fds. -errno (-ENOENT: root is gone). */
struct watchdog;
int watchdog_new(pid_t root, struct watchdog **ret);
int watchdog_step(struct watchdog *w, uint64_t budget_ns, struct tree_sample *ret);
/* NULL-safe; returns NULL. */
struct watchdog *watchdog_free(struct watchdog *w);

/* Memory of one process as the watchdog counts it (Pss_Anon + Pss_Shmem
 * from smaps_rollup, or RssAnon + RssShmem on kernels without them). */
int watchdog_process_memory(pid_t pid, uint64_t *ret_bytes);
