/* cgtest.c - drives the cgroup module (src/limits/cgroup-*.c) against a real
 * kernel, inside the test VM, as an unprivileged user with a delegated
 * cgroup v2 subtree. It does what `hutch run` does around the sandbox:
 * prepare the base, create a run cgroup with limits, clone3() a child
 * straight into it with CLONE_INTO_CGROUP, let the child misbehave,
 * then read the counters, kill and remove. Prints TAP on stdout.
 *
 *   cgtest limits   memory/oom, pids, cpu, kill+remove (needs HUTCH_CGROUP
 *                   or an own cgroup that is a usable base)
 *   cgtest own      hutch's own cgroup as the base: must move itself into
 *                   the hutch-supervisor leaf, then a run must work
 *   cgtest busy     own cgroup shared with another process: prepare must
 *                   refuse and say why
 *   cgtest denied   base not writable: prepare and probe must say so
 *   cgtest outside  HUTCH_CGROUP outside hutch's reach: prepare must refuse,
 *                   and the kernel must refuse the clone3 there
 *   cgtest probe    print what cgroup_probe() finds (for any host)
 *
 * Exit status: 0 when every test passed, 1 otherwise.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "limits/cgroup.h"
#include "lib/util.h"

#define MiB (1024ULL * 1024ULL)

static int n_test, n_failed;

static _printf_(2, 3) void check(bool ok, const char *fmt, ...)
{
        va_list ap;
        printf("%sok %d - ", ok ? "" : "not ", ++n_test);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
        if (!ok)
                n_failed++;
}

static _printf_(1, 2) void diag(const char *fmt, ...)
{
        va_list ap;
        fputs("# ", stdout);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

/* fork() into the run's cgroup: clone3 with CLONE_INTO_CGROUP, no stack
 * (so it returns twice, like fork). */
static pid_t fork_into_ns(int cgroup_fd, uint64_t ns_flags)
{
        struct clone_args args;
        memset(&args, 0, sizeof(args));
        args.flags = CLONE_INTO_CGROUP | ns_flags;
        args.exit_signal = SIGCHLD;
        args.cgroup = (uint64_t)cgroup_fd;
        return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

static pid_t fork_into(int cgroup_fd)
{
        return fork_into_ns(cgroup_fd, 0);
}

static int wait_child(pid_t pid)
{
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -1;
        return status;
}

/* The child checks it was born in the run cgroup (exit 3 if not; no
 * check when want_path is NULL), then touches `bytes` of anonymous
 * memory page by page. */
static _noreturn_ void memhog(const char *want_path, uint64_t bytes)
{
        _cleanup_free_ char *text = NULL, *cg = NULL;
        if (want_path && (read_file("/proc/self/cgroup", &text, NULL) < 0 ||
                          cgroup_parse_proc_cgroup(text, &cg) < 0 || !strstr(want_path, cg) || strlen(cg) < 2))
                _exit(3);
        char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                _exit(4);
        for (uint64_t i = 0; i < bytes; i += 4096)
                p[i] = 1;
        _exit(0);
}

static _noreturn_ void forkloop(int max)
{
        int made = 0;
        for (int i = 0; i < max; i++) {
                pid_t pid = fork();
                if (pid == 0) {
                        pause();
                        _exit(0);
                }
                if (pid < 0)
                        break;
                made++;
        }
        _exit(made > 250 ? 250 : made);
}

static _noreturn_ void busy(unsigned ms)
{
        uint64_t end = now_monotonic_ms() + ms;
        volatile uint64_t x = 0;
        while (now_monotonic_ms() < end)
                for (int i = 0; i < 100000; i++)
                        x += (uint64_t)i;
        _exit(0);
}

static bool dir_exists(const char *p)
{
        return access(p, F_OK) == 0;
}

/* With default_high, memory.high is left to its default (80 % of max):
 * the hog is then throttled for many seconds under TCG before it reaches
 * the max. Without, high = max, which leaves memory.high unset. */
static void test_memory(const char *base, unsigned usable, const char *tag, bool default_high)
{
        struct cgroup_limits lim = {
                .memory_max = 32 * MiB,
                .memory_high = default_high ? 0 : 32 * MiB,
                .oom_group = true,
        };
        unsigned want_enforced = CGROUP_LIMIT_MEMORY | CGROUP_LIMIT_OOM_GROUP |
                                 (default_high ? CGROUP_LIMIT_MEMORY_HIGH : 0);
        _cleanup_cgroup_run_ struct cgroup_run *cg = NULL;
        struct cgroup_stats st;
        _cleanup_free_ char *name = xasprintf("mem-%s-%ld", tag, (long)getpid());
        int r;

        r = cgroup_run_new(base, name, usable, &lim, &cg);
        check(r == 0, "%s: run cgroup with memory.max=32M created (%s)", tag, r ? strerror(-r) : "ok");
        if (r < 0)
                return;
        unsigned enf = cgroup_run_enforced(cg);
        check((enf & ~CGROUP_LIMIT_SWAP) == want_enforced,
              "%s: enforced mask 0x%x (want 0x%x: memory.max, oom.group%s)", tag, enf, want_enforced,
              default_high ? ", memory.high" : "");
        if (default_high) {
                _cleanup_free_ char *p = xasprintf("%s/memory.high", cgroup_run_path(cg)), *t = NULL;
                uint64_t high = 0;
                if (read_file(p, &t, NULL) == 0)
                        high = strtoull(t, NULL, 10);
                check(high >= 32 * MiB * 79 / 100 && high <= 32 * MiB * 80 / 100,
                      "%s: memory.high defaults to 80%% of memory.max (%llu)", tag, (unsigned long long)high);
        }

        uint64_t t0 = now_monotonic_ms();
        pid_t pid = fork_into(cgroup_run_fd(cg));
        if (pid == 0)
                memhog(cgroup_run_path(cg), 128 * MiB);
        check(pid > 0, "%s: clone3(CLONE_INTO_CGROUP) as uid %u", tag, (unsigned)getuid());
        if (pid < 0) {
                diag("clone3: %s", strerror(errno));
                return;
        }
        int status = wait_child(pid);
        diag("memhog ended after %llu ms, status 0x%x", (unsigned long long)(now_monotonic_ms() - t0), status);
        check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
              "%s: 128M hog under memory.max=32M is SIGKILLed (exit %d, signal %d)", tag,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        r = cgroup_run_stats(cg, &st);
        check(r == 0 && (st.have & CGROUP_HAVE_MEMORY_EVENTS) && st.memory_events.oom_kill >= 1,
              "%s: memory.events oom_kill = %llu (status would be oom)", tag,
              (unsigned long long)st.memory_events.oom_kill);
        check((st.have & CGROUP_HAVE_MEMORY_PEAK) && st.memory_peak >= 30 * MiB && st.memory_peak <= 32 * MiB,
              "%s: memory.peak %llu reaches the 32M limit, not beyond", tag, (unsigned long long)st.memory_peak);
        if (default_high)
                check(st.memory_events.high > 0, "%s: memory.high was hit before the max (%llu events)", tag,
                      (unsigned long long)st.memory_events.high);
        r = cgroup_run_remove(cg, 2000);
        check(r == 0 && !dir_exists(cgroup_run_path(cg)), "%s: run cgroup removed", tag);
}

/* What `hutch run` does: one clone3 makes the sandbox's namespaces and
 * puts it in the run cgroup, so it is limited from its first
 * instruction and its cgroup namespace is rooted at the run cgroup. */
static void test_sandbox_clone(const char *base, unsigned usable)
{
        struct cgroup_limits lim = { .memory_max = 16 * MiB, .memory_high = 16 * MiB, .pids_max = 8,
                                     .oom_group = true };
        _cleanup_cgroup_run_ struct cgroup_run *cg = NULL;
        struct cgroup_stats st;
        _cleanup_free_ char *name = xasprintf("sandbox-%ld", (long)getpid());
        int r = cgroup_run_new(base, name, usable, &lim, &cg);

        check(r == 0, "sandbox: run cgroup created");
        if (r < 0)
                return;
        pid_t pid = fork_into_ns(cgroup_run_fd(cg), CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS |
                                 CLONE_NEWCGROUP | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET);
        if (pid == 0) {
                _cleanup_free_ char *text = NULL, *cgpath = NULL;
                if (getpid() != 1)
                        _exit(5);
                if (read_file("/proc/self/cgroup", &text, NULL) < 0 ||
                    cgroup_parse_proc_cgroup(text, &cgpath) < 0 || !streq(cgpath, "/"))
                        _exit(6);
                memhog(NULL, 64 * MiB);
        }
        int e = errno;
        check(pid > 0, "sandbox: clone3(CLONE_INTO_CGROUP|CLONE_NEWUSER|NEWPID|NEWNS|NEWCGROUP|NEWIPC|NEWUTS|NEWNET) "
              "as uid %u (%s)", (unsigned)getuid(), pid > 0 ? "ok" : strerror(e));
        if (pid < 0)
                return;
        int status = wait_child(pid);
        check(!(WIFEXITED(status) && (WEXITSTATUS(status) == 5 || WEXITSTATUS(status) == 6)),
              "sandbox: child is pid 1 and sees its run cgroup as / (exit %d)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        r = cgroup_run_stats(cg, &st);
        check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && st.memory_events.oom_kill >= 1,
              "sandbox: its 64M hog is OOM-killed under memory.max=16M (oom_kill %llu)",
              (unsigned long long)st.memory_events.oom_kill);
}

static void test_pids(const char *base, unsigned usable)
{
        struct cgroup_limits lim = { .pids_max = 16 };
        _cleanup_cgroup_run_ struct cgroup_run *cg = NULL;
        struct cgroup_stats st;
        _cleanup_free_ char *name = xasprintf("pids-%ld", (long)getpid());
        int r = cgroup_run_new(base, name, usable, &lim, &cg);

        check(r == 0 && (cgroup_run_enforced(cg) & CGROUP_LIMIT_PIDS), "pids: run cgroup with pids.max=16");
        if (r < 0)
                return;
        pid_t pid = fork_into(cgroup_run_fd(cg));
        if (pid == 0)
                forkloop(200);
        int status = wait_child(pid);
        int made = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        check(made >= 10 && made <= 15, "pids: a fork loop makes %d processes, not 200 (limit 16 with itself)", made);
        r = cgroup_run_stats(cg, &st);
        check(r == 0 && st.pids_max_events >= 1, "pids: pids.events max = %llu",
              (unsigned long long)st.pids_max_events);
        check(st.pids_peak >= 10 && st.pids_peak <= 16, "pids: peak %llu (sampled or pids.peak)",
              (unsigned long long)st.pids_peak);
        /* the fork loop's children are still there, paused: kill must end them */
        r = cgroup_run_kill(cg);
        check(r == 0, "pids: cgroup.kill (%s)", r ? strerror(-r) : "ok");
        r = cgroup_run_remove(cg, 3000);
        check(r == 0 && !dir_exists(cgroup_run_path(cg)), "pids: leftovers killed, cgroup removed (%s)",
              r ? strerror(-r) : "ok");
}

static void test_cpu(const char *base, unsigned usable)
{
        struct cgroup_limits lim = { .cpus = 0.5 };
        _cleanup_cgroup_run_ struct cgroup_run *cg = NULL;
        struct cgroup_stats st;
        _cleanup_free_ char *name = xasprintf("cpu-%ld", (long)getpid());
        int r = cgroup_run_new(base, name, usable, &lim, &cg);

        check(r == 0 && (cgroup_run_enforced(cg) & CGROUP_LIMIT_CPUS), "cpu: run cgroup with cpu.max for 0.5 cpus");
        if (r < 0)
                return;
        uint64_t t0 = now_monotonic_ms();
        pid_t pid = fork_into(cgroup_run_fd(cg));
        if (pid == 0)
                busy(2000);
        uint64_t mid = 0;
        struct timespec ts = { 1, 0 };
        nanosleep(&ts, NULL);
        r = cgroup_run_sample(cg, &mid);
        wait_child(pid);
        uint64_t wall = now_monotonic_ms() - t0;
        r = cgroup_run_stats(cg, &st);
        double share = (double)st.cpu.usage_usec / 1000.0 / (double)wall;
        check(r == 0 && share > 0.35 && share < 0.65,
              "cpu: busy loop gets %.0f%% of %llu ms wall under cpu.max 50000 100000", share * 100,
              (unsigned long long)wall);
        check(st.cpu.has_throttle && st.cpu.nr_throttled > 0, "cpu: nr_throttled = %llu, throttled_usec = %llu",
              (unsigned long long)st.cpu.nr_throttled, (unsigned long long)st.cpu.throttled_usec);
        check(mid > 0 && mid <= st.cpu.usage_usec, "cpu: sampling mid-run saw %llu of %llu usec",
              (unsigned long long)mid, (unsigned long long)st.cpu.usage_usec);
        check(st.cpu.user_usec + st.cpu.system_usec <= st.cpu.usage_usec + 1000 &&
                      st.cpu.user_usec > st.cpu.system_usec,
              "cpu: user %llu + system %llu usec add up", (unsigned long long)st.cpu.user_usec,
              (unsigned long long)st.cpu.system_usec);
}

static void test_kill_nested(const char *base, unsigned usable)
{
        struct cgroup_limits lim = { .pids_max = 64 };
        _cleanup_cgroup_run_ struct cgroup_run *cg = NULL;
        _cleanup_free_ char *name = xasprintf("kill-%ld", (long)getpid());
        int r = cgroup_run_new(base, name, usable, &lim, &cg);

        check(r == 0, "kill: run cgroup created");
        if (r < 0)
                return;
        /* the job makes a cgroup of its own below the run one and moves a
         * grandchild into it: kill and remove must cover that too */
        _cleanup_free_ char *sub = xasprintf("%s/inner", cgroup_run_path(cg));
        pid_t pid = fork_into(cgroup_run_fd(cg));
        if (pid == 0) {
                if (mkdir(sub, 0755) < 0)
                        _exit(2);
                pid_t gc = fork();
                if (gc == 0) {
                        _cleanup_free_ char *procs = xasprintf("%s/cgroup.procs", sub);
                        (void)write_file(procs, "0", 0644);
                        pause();
                        _exit(0);
                }
                pause();
                _exit(0);
        }
        struct timespec ts = { 0, 300 * 1000000L };
        nanosleep(&ts, NULL);
        check(dir_exists(sub), "kill: the job made a nested cgroup");
        r = cgroup_run_kill(cg);
        int status = wait_child(pid);
        check(r == 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "kill: cgroup.kill ended the job");
        r = cgroup_run_remove(cg, 3000);
        check(r == 0 && !dir_exists(cgroup_run_path(cg)), "kill: nested cgroup and run cgroup removed (%s)",
              r ? strerror(-r) : "ok");
}

static int mode_limits(void)
{
        _cleanup_free_ char *base = NULL, *reason = NULL;
        unsigned usable = 0;
        struct cgroup_probe probe;

        cgroup_probe(&probe);
        check(probe.usable == CGROUP_ALL, "probe: all controllers usable in %s%s%s", probe.base ? probe.base : "-",
              probe.reason ? ": " : "", probe.reason ? probe.reason : "");
        cgroup_probe_done(&probe);

        int r = cgroup_base_prepare(CGROUP_ALL, &base, &usable, &reason);
        check(r == 0 && usable == CGROUP_ALL, "prepare: base %s, usable 0x%x%s%s", base ? base : "-", usable,
              reason ? ": " : "", reason ? reason : "");
        if (r < 0)
                return 1;
        test_memory(base, usable, "memory", true);
        test_sandbox_clone(base, usable);
        test_pids(base, usable);
        test_cpu(base, usable);
        test_kill_nested(base, usable);
        return 0;
}

static int mode_own(void)
{
        _cleanup_free_ char *base = NULL, *reason = NULL, *text = NULL, *self = NULL;
        unsigned usable = 0;
        int r = cgroup_base_prepare(CGROUP_ALL, &base, &usable, &reason);

        check(r == 0 && usable == CGROUP_ALL, "own: prepare uses hutch's own cgroup %s (usable 0x%x)%s%s",
              base ? base : "-", usable, reason ? ": " : "", reason ? reason : "");
        if (r < 0)
                return 1;
        if (read_file("/proc/self/cgroup", &text, NULL) == 0)
                (void)cgroup_parse_proc_cgroup(text, &self);
        check(self && strstr(self, "/hutch-supervisor"), "own: hutch moved itself into the leaf (%s)",
              self ? self : "?");
        test_memory(base, usable, "own", false);
        /* a second prepare from inside the leaf finds the same base */
        _cleanup_free_ char *again = NULL;
        unsigned usable2 = 0;
        r = cgroup_base_prepare(CGROUP_ALL, &again, &usable2, NULL);
        check(r == 0 && streq(again, base) && usable2 == CGROUP_ALL, "own: prepare again from the leaf: %s",
              again ? again : "-");
        return 0;
}

static int mode_expect_failure(const char *what, const char *needle)
{
        _cleanup_free_ char *base = NULL, *reason = NULL;
        unsigned usable = 0;
        struct cgroup_probe probe;
        int r = cgroup_base_prepare(CGROUP_ALL, &base, &usable, &reason);

        check(r < 0 && reason && strstr(reason, needle), "%s: prepare refuses: %s", what,
              reason ? reason : "(no reason)");
        cgroup_probe(&probe);
        check(probe.usable == 0 && probe.reason && strstr(probe.reason, needle), "%s: probe says: %s", what,
              probe.reason ? probe.reason : "(no reason)");
        cgroup_probe_done(&probe);
        return 0;
}

/* HUTCH_CGROUP names a delegated cgroup that does not contain hutch's own,
 * and their common ancestor is not ours: prepare must refuse, and the
 * kernel indeed refuses to clone a child into a cgroup there. */
static int mode_outside(void)
{
        const char *base = getenv("HUTCH_CGROUP");
        struct cgroup_limits lim = { 0 };
        _cleanup_cgroup_run_ struct cgroup_run *cg = NULL;

        mode_expect_failure("outside", "outside");
        if (!base)
                return 0;
        _cleanup_free_ char *name = xasprintf("outside-%ld", (long)getpid());
        int r = cgroup_run_new(base, name, 0, &lim, &cg);
        check(r == 0, "outside: a cgroup can still be made there (%s)", r ? strerror(-r) : "ok");
        if (r < 0)
                return 0;
        pid_t pid = fork_into(cgroup_run_fd(cg));
        if (pid == 0)
                _exit(0);
        int e = errno;
        if (pid > 0)
                wait_child(pid);
        check(pid < 0 && e == EACCES, "outside: but clone3 into it fails with EACCES (%s)",
              pid < 0 ? strerror(e) : "it worked");
        return 0;
}

/* What `hutch doctor` would be told, as diagnostics; never fails. */
static int mode_probe(void)
{
        struct cgroup_probe p;

        cgroup_probe(&p);
        diag("cgroup2 mount: %s", p.mount ? p.mount : "(none)");
        diag("base: %s", p.base ? p.base : "(none)");
        diag("usable controllers: 0x%x", p.usable);
        if (p.reason)
                diag("reason: %s", p.reason);
        for (unsigned i = 0; i < CGROUP_N_CONTROLLERS; i++)
                if (p.why_not[i])
                        diag("%s: %s", cgroup_controller_name(1U << i), p.why_not[i]);
        cgroup_probe_done(&p);
        return 0;
}

int main(int argc, char **argv)
{
        const char *mode = argc > 1 ? argv[1] : "limits";

        /* orphans of the tests' children come to us and get reaped */
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
        if (streq(mode, "limits"))
                mode_limits();
        else if (streq(mode, "own"))
                mode_own();
        else if (streq(mode, "busy"))
                mode_expect_failure("busy", "also holds process");
        else if (streq(mode, "outside"))
                mode_outside();
        else if (streq(mode, "probe"))
                mode_probe();
        else if (streq(mode, "denied"))
                mode_expect_failure("denied", "not writable");
        else {
                fprintf(stderr, "usage: cgtest limits|own|busy|denied|outside|probe\n");
                return 2;
        }
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        printf("1..%d\n", n_test);
        return n_failed ? 1 : 0;
}
