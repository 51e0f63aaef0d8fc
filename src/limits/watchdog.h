/* watchdog.h - measuring a sandbox's process tree from the host, for
 * limits that have no cgroup to hold them (DESIGN §3, "without cgroups").
 *
 * The tree is found through /proc/PID/task/TID/children starting at the
 * sandbox's init, so only the sandbox's own processes are ever counted,
 * whatever else runs on the host.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct tree_sample {
        unsigned processes;     /* live processes, init included */
        uint64_t memory_bytes;  /* proportional anonymous + shmem memory */
        uint64_t cpu_ms;        /* user+system of live processes and of
                                 * every process already reaped in the tree */
};

/* Sample the tree rooted at host pid `root`. Processes that exit while
 * we look are skipped. 0 or -errno (-ESRCH when root itself is gone). */
int watchdog_sample(pid_t root, struct tree_sample *ret);

/* Memory of one process as the watchdog counts it (Pss_Anon + Pss_Shmem
 * from smaps_rollup, or RssAnon + RssShmem on kernels without them). */
int watchdog_process_memory(pid_t pid, uint64_t *ret_bytes);
