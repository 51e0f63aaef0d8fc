/* job.c - turn the forked child of init into the job (see job.h).
 *
 * Every step here narrows what the job can do, and none can be undone by
 * it afterwards: a new session (no controlling terminal it could inject
 * keystrokes into with TIOCSTI, and its own process group for signal
 * delivery), only fds 0-2 kept across exec, a fixed environment, no
 * capabilities in any set, locked securebits, no_new_privs.
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "sandbox/caps.h"
#include "lib/exit-codes.h"
#include "sandbox/gvisor.h"
#include "sandbox/job.h"
#include "sandbox/connect-notify.h"
#include "sandbox/landlock.h"
#include "sandbox/reaper.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"
#include "sandbox/sync.h"
#include "lib/util.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* the soft RLIMIT_NOFILE a job starts with (FD_SETSIZE) */
#define NOFILE_SOFT_START 1024

static _Noreturn void fail(int sync_fd, int kind, int error, const char *step, const char *path)
{
        init_report(sync_fd, kind, error, 0, getpid(), step, path);
        if (kind == SYNC_EXEC_ERROR)
                _exit(error == ENOENT || error == ENOTDIR ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE);
        _exit(EXIT_SETUP);
}

/* Append each "NAME=VALUE" of list to env (*n entries), emptying an
 * earlier entry of the same name (dropped by the caller). */
static char **override_env(char **env, size_t *n, char *const *list)
{
        for (char *const *e = list; e && *e; e++) {
                size_t klen = strcspn(*e, "=");
                for (size_t k = 0; k < *n; k++)
                        if (strncmp(env[k], *e, klen + 1) == 0) {
                                free(env[k]);
                                env[k] = xstrdup("");
                        }
                env = strv_push(env, n, *e);
        }
        return env;
}

static char **build_env(const struct run_config *cfg, const struct sandbox_inputs *in)
{
        char **env = NULL;
        const char *term = getenv("TERM");
        bool has_path = false;

        for (char **e = cfg->env; e && *e; e++)
                if (startswith(*e, "PATH="))
                        has_path = true;
        if (!has_path)
                env = strv_append(env, "PATH=" DEFAULT_PATH);
        /* the landlock tier has no mount of its own: HOME and TMPDIR are
         * the run's scratch dirs, where its rules let it write */
        env = strv_append(env, xasprintf("HOME=%s", in->landlock ? in->landlock->home : cfg->home));
        if (in->landlock)
                env = strv_append(env, xasprintf("TMPDIR=%s", in->landlock->tmpdir));
        env = strv_append(env, "LANG=C.UTF-8");
        env = strv_append(env, "TZ=UTC");
        if (cfg->tty)
                env = strv_append(env, xasprintf("TERM=%s", term && *term ? term : "xterm"));
        /* -e and [env] come last so they override the fixed set. cfg->env
         * is unique by name (profile_set_env()), so only the fixed
         * entries can be overridden: compare with those, not with every
         * earlier entry (linear in the number of -e options). */
        size_t n_fixed = strv_length(env), n = n_fixed;
        for (char **e = cfg->env; e && *e; e++) {
                size_t klen = strcspn(*e, "=");
                for (size_t k = 0; k < n_fixed; k++)
                        if (strncmp(env[k], *e, klen + 1) == 0) {
                                free(env[k]);
                                env[k] = xstrdup("");
                        }
                env = strv_push(env, &n, *e);
        }
        /* a request's private_env, then --secret last: a secret is what
         * the caller passed */
        env = override_env(env, &n, cfg->private_env);
        env = override_env(env, &n, cfg->secret_env);
        /* drop the overridden (emptied) slots */
        size_t w = 0;
        for (size_t i = 0; env[i]; i++) {
                if (env[i][0])
                        env[w++] = env[i];
                else
                        free(env[i]);
        }
        env[w] = NULL;
        return env;
}

static const char *env_get(char **env, const char *key)
{
        size_t len = strlen(key);
        for (char **e = env; *e; e++)
                if (strncmp(*e, key, len) == 0 && (*e)[len] == '=')
                        return *e + len + 1;
        return NULL;
}

/* execve with a PATH search in the *job's* environment, keeping the
 * most telling error: EACCES anywhere beats ENOENT (like execvp). */
static int exec_search(char **argv, char **env)
{
        const char *cmd = argv[0];
        if (strchr(cmd, '/')) {
                execve(cmd, argv, env);
                return -errno;
        }
        const char *path = env_get(env, "PATH");
        if (!path)
                path = DEFAULT_PATH;
        int best = -ENOENT;
        _cleanup_free_ char *copy = xstrdup(path);
        char *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                char full[PATH_MAX];
                snprintf(full, sizeof(full), "%s/%s", *dir ? dir : ".", cmd);
                execve(full, argv, env);
                if (errno == EACCES || errno == EPERM)
                        best = -errno;
                else if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
        }
        return best;
}

/* The landlock tier's narrowing, in this order: no_new_privs (Landlock
 * needs it without CAP_SYS_ADMIN); the Landlock domain, while we still
 * have the caller's access to open its rules' paths (a root-owned 0700
 * dir above an --ro path); then the unprivileged uid and no capability
 * (caps.h), which Landlock does not hinder. The working dir was set by
 * the sandbox (the workspace copy). */
static void landlock_job_setup(const struct landlock_job *lj, int sync_fd)
{
        const char *path = NULL;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, errno, "no_new_privs", "");
        int r = landlock_plan_apply(lj->plan, &path);
        if (r < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, -r, "landlock", path ? path : "");
        r = caps_become_unprivileged(lj->uid, lj->gid);
        if (r < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, -r, "drop privileges", "");
}

/* Shared by init and the job it vforks (one address space): whichever
 * waits first takes it, so it is waited for once. */
static int detach_fd = -1;

void job_set_detach_fd(int fd)
{
        detach_fd = fd;
}

/* The old root is gone (mount-detach.c), or the setup fails: an errno
 * from the umount, or EOF if the thread died before it said. */
static void wait_detached(int sync_fd)
{
        int fd = detach_fd, err = 0;
        ssize_t n;

        if (fd < 0)
                return;
        detach_fd = -1;
        do
                n = read(fd, &err, sizeof(err));
        while (n < 0 && errno == EINTR);
        if (n < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, errno, "detach old root", "/");
        if (n != (ssize_t)sizeof(err))
                fail(sync_fd, SYNC_SETUP_ERROR, EIO, "detach old root", "/");
        if (err != 0)
                fail(sync_fd, SYNC_SETUP_ERROR, err, "detach old root", "/");
}

void job_wait_start(int sync_fd)
{
        char mark = 0;
        ssize_t n;

        wait_detached(sync_fd);
        do
                n = read(sync_fd, &mark, 1);
        while (n < 0 && errno == EINTR);
        if (n == 0)
                _exit(EXIT_SETUP);
        if (n < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, errno, "wait for start", "");
        if (mark != SANDBOX_MSG_START)
                fail(sync_fd, SYNC_SETUP_ERROR, EPROTO, "wait for start", "not a start message");
}

/* The job's stdio: the pty (as its controlling terminal) or hutch's
 * pipes, in a session of its own; every other fd closes at exec. */
static void job_stdio(int sync_fd, const struct init_stdio *stdio)
{
        if (setsid() < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, errno, "setsid", "");
        if (stdio->tty_slave >= 0) {
                if (ioctl(stdio->tty_slave, TIOCSCTTY, 0) < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, errno, "controlling tty", "");
                for (int fd = 0; fd < 3; fd++)
                        if (dup2(stdio->tty_slave, fd) < 0)
                                fail(sync_fd, SYNC_SETUP_ERROR, errno, "dup2", "tty");
        } else {
                /* hutch's own pipes, never a caller's fd: nothing the
                 * job holds leads out of the sandbox (/proc/self/fd/0
                 * reopened is a pipe only the supervisor writes to) */
                if (dup2(stdio->stdin_fd, STDIN_FILENO) < 0 ||
                    dup2(stdio->stdout_fd, STDOUT_FILENO) < 0 ||
                    dup2(stdio->stderr_fd, STDERR_FILENO) < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, errno, "dup2", "stdio");
        }
        /* Everything but 0-2 closes at exec; the sync socket stays open
         * until then so an exec failure can still be reported. */
        if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, errno, "close_range", "");

}

/* runsc in the job's place, which applies the job's limits itself. runsc
 * needs no capability of ours: it makes its own user namespace. */
static _Noreturn void exec_under_gvisor(const struct run_config *cfg, char **argv,
                                        const struct sandbox_inputs *in, int sync_fd, bool wait_start)
{
        int r;
        const char *step = "drop capabilities";
        r = caps_drop_all();
        if (r >= 0 && wait_start)
                job_wait_start(sync_fd);
        if (r >= 0)
                r = gvisor_exec(cfg, in->gvisor, argv, build_env(cfg, in), argv == in->compile_argv, &step);
        if (streq(step, "exec"))
                fail(sync_fd, SYNC_EXEC_ERROR, -r, "exec", argv[0]);
        fail(sync_fd, SYNC_SETUP_ERROR, -r, step, streq(step, "exec runsc") ? in->gvisor->path : "");
}

/* The job's rlimits: nofile, and what stands in for the cgroup limits
 * without one. */
static void job_limits(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd)
{
        /* nofile is the hard limit, the job's real cap (never above what
         * we hold). The soft limit starts at 1024 as on most hosts: a
         * program that select()s must not see fds past FD_SETSIZE, and
         * one that wants more raises it itself (Go and Node do so at
         * start) up to the cap. */
        struct rlimit nofile;
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
                rlim_t cap = cfg->nofile ? cfg->nofile : nofile.rlim_max;
                if (nofile.rlim_max != RLIM_INFINITY && cap > nofile.rlim_max)
                        cap = nofile.rlim_max;
                nofile.rlim_max = cap;
                nofile.rlim_cur = MIN(cap, (rlim_t)NOFILE_SOFT_START);
                if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, errno, "setrlimit", "RLIMIT_NOFILE");
        }

        /* Limits without cgroups (DESIGN §3). RLIMIT_NPROC counts the
         * processes of our uid in *this* user namespace (ucounts, Linux
         * >= 5.14), so it bounds the sandbox alone, whatever the same host
         * uid runs elsewhere; init counts as one of them. RLIMIT_CPU is
         * per process and only a backstop: the supervisor's watchdog sums
         * cpu time over the whole tree. With a run cgroup, pids.max holds
         * the pids limit alone: RLIMIT_NPROC is checked first in fork, so
         * it would hide every refusal from pids.events. */
        /* In the landlock tier there is no user namespace: RLIMIT_NPROC
         * counts every task of the job's uid on the host, the caller's
         * other processes (or other runs' jobs as 65534) included. It is
         * set to those there now plus pids, a bound that moves with that
         * uid's other processes (the report calls it partial). */
        if (cfg->pids && !in->pids_in_cgroup) {
                rlim_t n = cfg->pids;
                if (in->landlock) {
                        /* As in the namespace tier, init and the job
                         * count against pids. With the caller's uid the
                         * count has both already; root's job takes uid
                         * 65534 only later (init stays root): neither. */
                        long others = reaper_count_tasks(in->landlock->uid);
                        if (others < 0)
                                fail(sync_fd, SYNC_SETUP_ERROR, (int)-others, "count tasks", "/proc");
                        long own = in->landlock->uid == getuid() ? 2 : 1;
                        n = (rlim_t)MAX(others + (long)MIN(cfg->pids, (uint64_t)LONG_MAX / 2) - own, 1L);
                }
                struct rlimit rl = { n, n };
                if (setrlimit(RLIMIT_NPROC, &rl) < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, errno, "setrlimit", "RLIMIT_NPROC");
        }
        if (cfg->cpu_time_ms) {
                rlim_t secs = (cfg->cpu_time_ms + 999) / 1000;
                struct rlimit rl = { secs, secs + 1 };
                if (setrlimit(RLIMIT_CPU, &rl) < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, errno, "setrlimit", "RLIMIT_CPU");
        }
        /* The landlock tier has no scratch tmpfs: --disk bounds each file
         * the job writes (RLIMIT_FSIZE), not their sum (the report says so) */
        uint64_t fsize = cfg->max_file_size;
        if (in->landlock && cfg->disk_bytes && (!fsize || cfg->disk_bytes < fsize))
                fsize = cfg->disk_bytes;
        if (fsize) {
                struct rlimit rl = { fsize, fsize };
                if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, errno, "setrlimit", "RLIMIT_FSIZE");
        }
}

/* Every signal to SIG_DFL: execve keeps an ignored one, and the job must
 * not start with what hutch's caller ignored. glibc refuses its own two
 * (SIGCANCEL, SIGSETXID: 32 and 33 on Linux) to signal() and
 * sigaction(), so those go through the kernel's call; its struct all zero
 * is SIG_DFL with no flags and an empty mask on every layout. */
static void job_signals_default(void)
{
        for (int s = 1; s < NSIG; s++) {
                if (s < 32 || s >= SIGRTMIN) {
                        signal(s, SIG_DFL);
                        continue;
                }
                uint64_t zero[8] = { 0 };
                (void)syscall(SYS_rt_sigaction, s, zero, NULL, (size_t)(NSIG - 1) / 8);
        }
}

_Noreturn void job_exec(const struct run_config *cfg, char **argv, const struct sandbox_inputs *in,
                        int sync_fd, const struct init_stdio *stdio, bool wait_start)
{
        sigset_t none;
        int r;

        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        job_signals_default();

        job_stdio(sync_fd, stdio);

        /* No core dumps, and the hard limit too, so the job cannot raise
         * it: core_pattern is not namespaced, and where it pipes cores to
         * a host program (systemd-coredump, apport) the kernel starts
         * that program outside the sandbox, as root, fed by the job. */
        struct rlimit core = { 0, 0 };
        if (setrlimit(RLIMIT_CORE, &core) < 0)
                fail(sync_fd, SYNC_SETUP_ERROR, errno, "setrlimit", "RLIMIT_CORE");

        /* Under gVisor the job's own limits go into its OCI spec and
         * runsc's host processes get theirs there (gvisor-spec.c): the
         * rlimits below would bind the sentry, not the job. */
        if (in->gvisor)
                exec_under_gvisor(cfg, argv, in, sync_fd, wait_start);
        job_limits(cfg, in, sync_fd);

        char **env = build_env(cfg, in);

        if (in->landlock) {
                landlock_job_setup(in->landlock, sync_fd);
        } else {
                r = caps_drop_all();
                if (r < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, -r, "drop capabilities", "");
                /* A live sandbox's execs all run as its one uid in one
                 * pid namespace: each job gets a Landlock domain of its
                 * own, so that no exec (nor what it leaves running) can
                 * open another's stdio pipes through /proc/PID/fd
                 * (landlock.h). Without Landlock, `sandbox start` says
                 * so. The landlock tier's jobs have theirs already. */
                if (in->live) {
                        r = landlock_own_domain();
                        if (r < 0 && r != -EOPNOTSUPP)
                                fail(sync_fd, SYNC_SETUP_ERROR, -r, "landlock", "the exec's own domain");
                }
        }

        /* The syscall filter goes on last: everything above may need calls
         * it denies, and after it only exec (and, if that fails, one
         * message and _exit) remain. A policy that fails to load must
         * not leave a half-filtered job running. */
        /* the landlock tier's socket families first: under an allow-list
         * policy seccomp(2) itself may be denied once the policy is on */
        if (in->landlock) {
                int listener = -1;
                r = seccomp_sockets_load((enum seccomp_sockets)in->landlock->sockets, &listener);
                if (r < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, -r, "seccomp", "socket families");
                /* network allow: init answers our connect(2) from now on;
                 * the listener never reaches the exec */
                if (listener >= 0) {
                        r = stdio->notify_fd >= 0 ? connect_notify_send(stdio->notify_fd, listener) : -EBADF;
                        if (r < 0)
                                fail(sync_fd, SYNC_SETUP_ERROR, -r, "connect notify", "send the listener to init");
                }
        }
        if (in->seccomp_blob) {
                r = seccomp_job_load(in->seccomp_blob, in->seccomp_blob_len, (uint32_t)getuid(),
                                     (uint32_t)getgid());
                if (r < 0)
                        fail(sync_fd, SYNC_SETUP_ERROR, -r, "seccomp", "");
        }

        /* Everything above is hutch's own setup, done while the supervisor
         * writes the record; the job's first instruction comes with the
         * exec below, after "start". The waits (for the old root's
         * detach, then for "start") are the calls made under the job's
         * filter before the exec: reads, which no program can start
         * without either. */
        if (wait_start)
                job_wait_start(sync_fd);
        r = exec_search(argv, env);
        fail(sync_fd, SYNC_EXEC_ERROR, -r, "exec", argv[0]);
}
