/* cpu-steer.c - the sandbox's setup on another CPU (see cpu-steer.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/cpu-steer.h"

/* Tasks runnable on the whole host right now, us included (the
 * "running" half of /proc/loadavg's fourth field), or -1. */
static long runnable_now(void)
{
        char buf[128];
        int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        /* "0.20 0.18 0.12 1/80 11206" */
        const char *p = buf;
        for (int field = 0; field < 3 && p; field++) {
                p = strchr(p, ' ');
                if (p)
                        p++;
        }
        if (!p)
                return -1;
        char *end;
        long r = strtol(p, &end, 10);
        return end != p && *end == '/' ? r : -1;
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
