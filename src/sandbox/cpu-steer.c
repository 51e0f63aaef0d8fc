/* cpu-steer.c - the sandbox's setup on another CPU (see cpu-steer.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "sandbox/cpu-steer.h"
#include "lib/util.h"

/* Tasks runnable on the whole host right now, us included (the
 * "running" half of /proc/loadavg's fourth field), or -1. */
static long runnable_now(void)
{
        _cleanup_free_ char *text = NULL;
        long running;
        /* "0.20 0.18 0.12 1/80 11206" */
        if (read_file("/proc/loadavg", &text, NULL) < 0 || sscanf(text, "%*s %*s %*s %ld/", &running) != 1)
                return -1;
        return running;
}

void cpu_steer_prepare(struct cpu_steer *cs)
{
        CPU_ZERO(&cs->born);
        /* More CPUs than a cpu_set_t holds (EINVAL): no hint, as on one CPU. */
        cs->active = sched_getaffinity(0, sizeof(cs->born), &cs->born) == 0 && CPU_COUNT(&cs->born) > 1;
        /* Only while the host is not busy: at most one runnable task per
         * CPU of ours, us included (right after a run the kernel is often
         * still tearing down its namespaces in a worker, the other one).
         * When more are (other runs at once), pinning the setup to the
         * other CPUs takes the scheduler's freedom to balance away: with
         * the hint always on, 2 runs at once on 2 CPUs were 1-9% slower;
         * with this test they are even, one at a time 16% faster. The
         * count is the host's and the mask may be narrower: a hint. */
        if (cs->active) {
                long busy = runnable_now();
                cs->active = busy >= 1 && busy <= CPU_COUNT(&cs->born);
        }
}

void cpu_steer_child(const struct cpu_steer *cs, pid_t child)
{
        if (!cs->active)
                return;
        int here = sched_getcpu();
        if (here < 0 || here >= CPU_SETSIZE)
                return;
        cpu_set_t others = cs->born;
        CPU_CLR(here, &others);
        if (CPU_COUNT(&others) == 0)
                return;
        /* We own the child's user namespace, so this is permitted; a
         * refusal (a cpuset that excludes the others) only loses the hint. */
        (void)sched_setaffinity(child, sizeof(others), &others);
}

int cpu_steer_restore(const struct cpu_steer *cs)
{
        if (!cs->active)
                return 0;
        /* Unconditionally: the supervisor may have narrowed us, and we
         * cannot tell whether it did without another syscall. */
        if (sched_setaffinity(0, sizeof(cs->born), &cs->born) < 0)
                return -errno;
        return 0;
}
