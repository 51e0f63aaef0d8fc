/* cpu-steer.h - start the sandbox's setup on another CPU than the
 * supervisor's, and give it back every CPU before the job runs.
 *
 * The supervisor writes the run's record while the new sandbox builds
 * its root; the two are meant to run side by side. The scheduler,
 * though, usually queues a freshly cloned child, and a task woken by its
 * parent, on the parent's own CPU, where it waits for the parent to block
 * (measured on 2 CPUs: in 3 starts of 4 the child waited 0.9 ms for the
 * store to be written first). Narrowing the child's affinity to the
 * other CPUs for its setup keeps the two in parallel.
 *
 * It is a hint and never a limit: the child puts back the mask it was
 * born with before it becomes init, so the job inherits exactly the
 * CPUs hutch itself was given (a Slurm step's, a cpuset's, taskset's).
 * Where there is one CPU, the mask or /proc/loadavg cannot be read, or
 * the host already has a runnable task per CPU (other runs at once, where
 * the hint measured slower), nothing happens.
 */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

struct cpu_steer {
        cpu_set_t born;         /* the mask hutch was started with */
        bool active;            /* born has more than one CPU */
};

/* Before clone: read our mask (the child inherits it). */
void cpu_steer_prepare(struct cpu_steer *cs);
/* In the supervisor, right after clone: move child off our CPU. */
void cpu_steer_child(const struct cpu_steer *cs, pid_t child);
/* In the child, before the job: take the original mask back.
 * Returns 0 or a negative errno. */
int cpu_steer_restore(const struct cpu_steer *cs);
