/* cpu-steer.c - the sandbox's setup on another CPU (see cpu-steer.h). */
#include "config.h"

#include <errno.h>

#include "sandbox/cpu-steer.h"

void cpu_steer_prepare(struct cpu_steer *cs)
{
        CPU_ZERO(&cs->born);
        /* More CPUs than a cpu_set_t holds (EINVAL): no hint, as on one CPU. */
        cs->active = sched_getaffinity(0, sizeof(cs->born), &cs->born) == 0 && CPU_COUNT(&cs->born) > 1;
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
