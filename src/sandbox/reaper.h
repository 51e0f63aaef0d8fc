/* reaper.h - ending a process tree that has no pid namespace to hold it
 * (the landlock tier, DESIGN §10).
 *
 * Without a pid namespace there is no kill(-1) that reaches exactly the
 * job's processes, and a daemon that called setsid() leaves the job's
 * process group and session. What still holds them is parenthood: the
 * process that runs the job is a child subreaper (PR_SET_CHILD_SUBREAPER),
 * so every orphan of the tree, double-forked daemons included, is
 * re-parented to it and to no one outside. Ending the tree is then:
 * kill every child, reap, and go round again for the orphans the dying
 * ones leave, until no child is left.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Make the calling process a child subreaper. 0 or -errno. */
int reaper_become(void);

/* The calling process's live children (every thread's), read from
 * /proc/self/task/TID/children, into pids (at most max). Returns how many
 * were found (may exceed max: only max are stored), or -errno. */
int reaper_children(pid_t *pids, size_t max);

/* How many tasks (threads included, as RLIMIT_NPROC counts them) of uid
 * in the caller's user namespace run on the host now, as far as /proc
 * shows them (a process whose /proc entry is root's because it is not
 * dumpable is missed). For the landlock tier's pids limit without a
 * cgroup. -errno if /proc cannot be read. */
long reaper_count_tasks(uid_t uid);

/* SIGKILL every child of the calling process except the n_keep pids in
 * keep (NULL: none), reap them, and repeat for what re-parents to us,
 * until every child left is in keep. Blocks until then (a process stuck
 * in the kernel keeps it waiting, as it would a pid namespace's end).
 * Returns how many processes it reaped, or -errno. */
int reaper_end_children(const pid_t *keep, size_t n_keep);
