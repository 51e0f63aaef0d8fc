/* cpu-ledger.h - the cpu time of processes that left a sandbox's tree
 * where no live process's counters keep it (watchdog.c's helper).
 *
 * Without a cgroup, the watchdog sums utime+stime+cutime+cstime over the
 * tree's live processes: a child's time moves into its parent's cutime
 * when the parent waits for it. A parent that ignores SIGCHLD (or sets
 * SA_NOCLDWAIT) never waits: its children are reaped by the kernel and
 * their time lands in no one's counters, so a job could spend any cpu
 * budget in children of such a parent. The ledger remembers what each
 * process had used when last seen; when it is gone, and the live process
 * it hung under did not gain as much in its children's time, the
 * difference is carried for good. What a process uses after its last
 * sample, and a process that lives between two samples entirely, is
 * still missed when nobody waits for it (hutch-run(1) says so).
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct cpu_ledger;

struct cpu_ledger *cpu_ledger_new(void);
/* NULL-safe; returns NULL. */
struct cpu_ledger *cpu_ledger_free(struct cpu_ledger *l);

/* One process of the round being taken: pid and its start time (so a
 * reused pid is another process), its parent, its own cpu (utime+stime)
 * and its waited-for children's (cutime+cstime), in ms. */
void cpu_ledger_note(struct cpu_ledger *l, pid_t pid, uint64_t start, pid_t ppid, uint64_t own_ms,
                     uint64_t kids_ms);

/* The round is complete: settle the processes of the last round that are
 * gone. Returns the cpu carried so far, in ms (never decreasing). */
uint64_t cpu_ledger_round_end(struct cpu_ledger *l);

/* The cpu carried so far, in ms. */
uint64_t cpu_ledger_carried(const struct cpu_ledger *l);
