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

/* Read pid's figures now: its start time and its waited-for children's
 * cpu (ms). 0, or <0 when there is no such process. */
typedef int (*cpu_ledger_read)(pid_t pid, uint64_t *ret_start, uint64_t *ret_kids_ms, void *userdata);

/* The round is complete: settle the processes of the last round that are
 * gone. A round is a walk, not a snapshot: read (may be NULL in tests
 * that give exact rounds) looks again, now, at a process the walk did
 * not find (it may live on, missed) and at the live processes it left
 * its time to (a parent that waited for it after the walk passed it),
 * so that nothing is carried that a live counter holds. root: the
 * tree's init, which waits for orphans. Returns the cpu carried so far,
 * in ms (never decreasing). */
uint64_t cpu_ledger_round_end(struct cpu_ledger *l, pid_t root, cpu_ledger_read read, void *userdata);

/* The cpu carried so far, in ms. */
uint64_t cpu_ledger_carried(const struct cpu_ledger *l);
