/* init.c - the sandbox's PID 1 (see init.h).
 *
 * Signals: the supervisor blocked the forwarded signals and SIGCHLD
 * before cloning us, and we keep them blocked and read them from a
 * signalfd. Blocking matters for a pid-namespace init: the kernel drops
 * signals to it that have no handler unless they are blocked, and a
 * blocked signal is queued, so nothing sent from the supervisor is lost.
 *
 * Reaping: on every SIGCHLD we waitpid(-1, WNOHANG) until 0 or ECHILD,
 * so orphans re-parented to us never pile up as zombies. When the job
 * itself is reaped, we kill and reap whatever else is left in the
 * namespace, tell the supervisor the job's raw status and what it all
 * cost (report_job_exit()), and exit.
 */
#include "config.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "lib/exit-codes.h"
#include "sandbox/connect-notify.h"
#include "sandbox/gvisor.h"
#include "sandbox/init.h"
#include "sandbox/job.h"
#include "sandbox/reaper.h"
#include "sandbox/sandbox.h"
#include "sandbox/sync.h"
#include "lib/util.h"

void init_report(int sync_fd, int kind, int error, int status, int pid,
                 const char *step, const char *path)
{
        struct sync_msg msg = { .kind = (uint32_t)kind, .error = error, .status = status, .pid = pid };
        snprintf(msg.step, sizeof(msg.step), "%s", step ? step : "");
        snprintf(msg.path, sizeof(msg.path), "%s", path ? path : "");
        (void)send(sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL);
}

static void usage_of(int who, struct sync_usage *u)
{
        struct rusage ru;
        if (getrusage(who, &ru) < 0)
                return;
        u->utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
        u->stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
        u->maxrss_kb = ru.ru_maxrss;
}

/* Reap what has exited. Returns 1 once init has no child left, 0 while
 * some still run. */
static int reap_exited(void)
{
        for (;;) {
                pid_t p = waitpid(-1, NULL, WNOHANG | __WALL);
                if (p > 0)
                        continue;
                return p < 0 && errno == ECHILD;
        }
}

/* What the job left running (a daemon, a loop in the background) ends
 * with it, and is killed and reaped here rather than left to the kernel
 * when init exits: that reaps without accounting (zap_pid_ns_processes()
 * ignores SIGCHLD), and the record would lose what those processes cost.
 * Every process of the pid namespace descends from init and re-parents
 * to it, and kill(-1) from a namespace's init reaches every process in
 * it but init; one forked while the signal goes round is a dying
 * process's child and is caught by the next round. Returns true once
 * init has no child left. */
static bool end_the_rest(bool no_pidns)
{
        /* Without a pid namespace (the landlock tier) kill(-1) would reach
         * every process of our uid on the host; what is ours is exactly
         * our descendants, which re-parent to us as a child subreaper
         * (reaper.h). */
        if (no_pidns)
                return reaper_end_children(NULL, 0) >= 0;
        for (;;) {
                (void)kill(-1, SIGKILL);
                if (waitpid(-1, NULL, __WALL) < 0)
                        return errno == ECHILD;
                if (reap_exited())
                        return true;
        }
}

/* Tell the supervisor the job ended with status, what every process
 * init reaped cost, and whether none is left (SYNC_EXIT_ALONE): then
 * nothing can write to the workspace or the job's pipes any more, and
 * the supervisor may record the run while init exits and the kernel
 * takes the namespaces down. With processes left, the job's status goes
 * out first, before they are killed: one stuck in the kernel (on a hung
 * network filesystem) may keep init waiting, and the record must still
 * say how the job itself ended. */
static void report_job_exit(int sync_fd, int status, pid_t job, bool no_pidns)
{
        struct sync_msg msg = { .kind = SYNC_JOB_EXIT, .status = status, .pid = job };
        bool alone = reap_exited();
        if (!alone) {
                usage_of(RUSAGE_CHILDREN, &msg.reaped);
                (void)send(sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL);
                alone = end_the_rest(no_pidns);
        }
        if (alone)
                msg.error = SYNC_EXIT_ALONE;
        usage_of(RUSAGE_CHILDREN, &msg.reaped);
        (void)send(sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL);
}

static int exit_code_for(int status)
{
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return EXIT_SIGNAL_BASE + WTERMSIG(status);
        return EXIT_SETUP;
}

/* Room for job_exec()'s frames until the exec (PATH_MAX buffers, libcap,
 * the environment): far more than they need, and pages never touched
 * cost nothing. The lowest page is a guard. */
#define JOB_STACK_BYTES (1u << 20)

struct job_start {
        const struct run_config *cfg;
        char **argv;
        const struct sandbox_inputs *in;
        int sync_fd;
        const struct init_stdio *stdio;
        int close_fd;           /* init's own fd the job must not keep, or -1 */
        bool wait_start;        /* set up, then wait for "start" before the exec */
};

static int job_trampoline(void *arg)
{
        const struct job_start *js = arg;
        if (js->close_fd >= 0)
                close(js->close_fd);
        job_exec(js->cfg, js->argv, js->in, js->sync_fd, js->stdio, js->wait_start);
}

/* Start the job the way posix_spawn() does: CLONE_VM | CLONE_VFORK, so
 * the kernel copies no page tables and the job takes no copy-on-write
 * faults on init's memory before its exec. Why sharing is safe here:
 *  - init is suspended until the child has exec'd or exited, so the one
 *    address space is never used by two tasks at once, and init is
 *    single-threaded, so no lock (malloc's) can be held by anyone else;
 *  - until execve the child runs only hutch's own job_exec(), never job
 *    code; execve gives it a fresh address space, so nothing the job
 *    runs can reach init's memory;
 *  - everything job_exec() changes is the child's alone without
 *    CLONE_FILES, CLONE_SIGHAND, CLONE_FS or CLONE_THREAD: its fd table,
 *    signal dispositions and mask, session, rlimits, credentials,
 *    capability sets, no_new_privs and seccomp filters;
 *  - what it leaves in the shared memory (the environment it built,
 *    errno) init never reads.
 * Returns the child's pid, or -1 with errno set. */
static pid_t spawn_job(struct job_start *js)
{
        char *stack = task_stack_new(JOB_STACK_BYTES);
        if (!stack)
                return -1;
        pid_t pid = clone(job_trampoline, stack + JOB_STACK_BYTES, CLONE_VM | CLONE_VFORK | SIGCHLD, js);
        int e = errno;
        /* the child has exec'd or exited: its stack is ours again */
        task_stack_free(stack, JOB_STACK_BYTES);
        errno = e;
        return pid;
}

/* Run the compile step to completion; its output is the job's stderr and
 * stdout. Returns its wait status, or -errno. */
static int run_compile(const struct run_config *cfg, const struct sandbox_inputs *in,
                       int sync_fd, const struct init_stdio *stdio)
{
        struct job_start js = { cfg, in->compile_argv, in, sync_fd, stdio, -1, false };
        pid_t pid = spawn_job(&js);
        if (pid < 0)
                return -errno;
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (in->gvisor) {
                int r = gvisor_job_status(status, true, &status);
                if (r < 0)
                        return r;
        }
        return status;
}

/* The longest argv a live job's request may carry (SANDBOX_MSG_EXEC). */
#define LIVE_ARGV_MAX (64u << 10)

/* The landlock tier's network allow (connect-notify.h): before the
 * job's spawn, a socketpair for it to send its connect listener on
 * (st->notify_fd); after it, the listener (-1: none, and then the job's
 * connect(2) answers ENOSYS: nothing is reached). */
static int notify_open(const struct sandbox_inputs *in, int sync_fd, struct init_stdio *st, int pair[2])
{
        pair[0] = pair[1] = st->notify_fd = -1;
        if (!in->landlock || !in->landlock->proxy_port)
                return 0;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
                init_report(sync_fd, SYNC_SETUP_ERROR, errno, 0, 0, "connect notify", "socketpair");
                return -1;
        }
        st->notify_fd = pair[1];
        return 0;
}

static int notify_take(int pair[2])
{
        if (pair[0] < 0)
                return -1;
        /* the job has exec'd or failed: its copy is closed, so this
         * ends with the listener or EOF */
        close(pair[1]);
        int fd = connect_notify_receive(pair[0]);
        return fd < 0 ? -1 : fd;
}

/* The jobs of a live sandbox that run now (their pids, 0: a free slot),
 * and the connect listeners of the ones before (notify_take()), kept
 * while a process under them lives. */
struct live_jobs {
        pid_t pid[SANDBOX_LIVE_JOBS_MAX];
        int *listeners;
        size_t n_listeners;
};

static pid_t *live_slot(struct live_jobs *j, pid_t pid)
{
        for (size_t i = 0; i < ELEMENTSOF(j->pid); i++)
                if (j->pid[i] == pid)
                        return &j->pid[i];
        return NULL;
}

/* Fork the job of one SANDBOX_MSG_EXEC: argv in buf[1..n), stdio fds. */
static void live_fork(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd, int sfd,
                      struct live_jobs *jobs, char *buf, ssize_t n, const int *fds, int nfds, bool truncated)
{
        pid_t *slot = live_slot(jobs, 0);
        char **argv = NULL;
        size_t na = 0;
        bool ok = nfds == 3 && slot && n > 1 && buf[n - 1] == '\0' && !truncated;
        for (ssize_t i = 1; ok && i < n; i += (ssize_t)strlen(buf + i) + 1)
                argv = strv_push(argv, &na, buf + i);
        if (!ok || !argv) {
                init_report(sync_fd, SYNC_SETUP_ERROR, slot ? EPROTO : EBUSY, 0, 0, "exec request",
                            slot ? "malformed" : "too many jobs");
        } else {
                struct init_stdio stdio = { fds[0], fds[1], fds[2], -1, -1 };
                struct job_start js = { cfg, argv, in, sync_fd, &stdio, sfd, false };
                int pair[2];
                pid_t pid = notify_open(in, sync_fd, &stdio, pair) < 0 ? 0 : spawn_job(&js);
                int listener = notify_take(pair);
                if (listener >= 0) {
                        jobs->listeners = xrealloc(jobs->listeners, (jobs->n_listeners + 1) * sizeof(int));
                        jobs->listeners[jobs->n_listeners++] = listener;
                }
                if (pid < 0)
                        init_report(sync_fd, SYNC_SETUP_ERROR, errno, 0, 0, "fork job", "");
                else if (pid > 0)
                        init_report(sync_fd, SYNC_READY, 0, 0, *slot = pid, "", "");
        }
        strv_free(argv);
}

/* SANDBOX_MSG_SOCKET: a fresh TCP socket in our network namespace, for
 * a published port's connection (run/live-publish.c says why this is
 * safe). It leaves us at once: the supervisor connects it. */
static void live_socket(int sync_fd)
{
        struct sync_msg msg = { .kind = SYNC_SOCKET };
        char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
        struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
        if (fd < 0) {
                msg.error = errno;
        } else {
                mh.msg_control = cbuf;
                mh.msg_controllen = sizeof(cbuf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        (void)sendmsg(sync_fd, &mh, MSG_NOSIGNAL);
        if (fd >= 0)
                close(fd);
}

/* One SANDBOX_MSG_EXEC, _KILL or _SOCKET from the supervisor, in a
 * live sandbox. The job's stdio are exactly the three fds that came with
 * the message (pipes the supervisor made for this exec alone), received
 * close-on-exec, dup'ed to 0-2 in job_exec() and closed here once the
 * job holds them: init keeps no exec's stdio. Returns false on EOF (the
 * supervisor is gone: so is the sandbox). */
static bool live_message(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd,
                         int sfd, struct live_jobs *jobs)
{
        static char buf[LIVE_ARGV_MAX + 2];
        char cbuf[CMSG_SPACE(3 * sizeof(int))];
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = sizeof(cbuf) };
        int fds[3] = { -1, -1, -1 }, nfds = 0;
        ssize_t n = recvmsg(sync_fd, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN;
        if (n == 0)
                return false;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (nfds < 3)
                                        fds[nfds++] = fd;
                                else
                                        close(fd);
                        }
        if (buf[0] == SANDBOX_MSG_KILL && n == 1 + (ssize_t)sizeof(int32_t)) {
                /* only a job of ours, never init itself or an orphan */
                int32_t pid;
                memcpy(&pid, buf + 1, sizeof(pid));
                if (pid > 0 && live_slot(jobs, pid) && kill(-pid, SIGKILL) < 0)
                        (void)kill(pid, SIGKILL);
        } else if (buf[0] == SANDBOX_MSG_INTERRUPT && n == 1 + (ssize_t)sizeof(int32_t)) {
                int32_t pid;
                memcpy(&pid, buf + 1, sizeof(pid));
                if (pid > 0 && live_slot(jobs, pid))
                        (void)kill(pid, SIGINT);
        } else if (buf[0] == SANDBOX_MSG_SOCKET && n == 1) {
                live_socket(sync_fd);
        } else if (buf[0] == SANDBOX_MSG_EXEC) {
                live_fork(cfg, in, sync_fd, sfd, jobs, buf, n, fds, nfds, (mh.msg_flags & MSG_TRUNC) != 0);
        }
        for (int i = 0; i < nfds; i++)
                close(fds[i]);
        return true;
}

/* A live sandbox's init: no job until the supervisor asks for one, up
 * to SANDBOX_LIVE_JOBS_MAX at a time, each reported as it ends with what
 * it cost (wait4(): the job and the children it waited for); what a job
 * leaves running keeps running (re-parented to us, reaped when it ends).
 * init itself never exits on its own: the sandbox ends when the
 * supervisor kills it (the kernel then kills every process of the pid
 * namespace) or goes away (EOF on sync_fd). */
static _Noreturn void init_live(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd,
                                int sfd)
{
        struct live_jobs jobs = { .listeners = NULL };
        struct pollfd *p = NULL;
        struct connect_notify cn;
        connect_notify_init(&cn, in->landlock ? in->landlock->proxy_port : 0);

        job_wait_start(sync_fd);
        init_report(sync_fd, SYNC_READY, 0, 0, 0, "", "");
        for (;;) {
                size_t n = 2 + jobs.n_listeners;
                p = xrealloc(p, (n + CONNECT_NOTIFY_PENDING_MAX) * sizeof(*p));
                p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
                p[1] = (struct pollfd){ .fd = sync_fd, .events = POLLIN };
                for (size_t i = 0; i < jobs.n_listeners; i++)
                        p[2 + i] = (struct pollfd){ .fd = jobs.listeners[i], .events = POLLIN };
                size_t np = connect_notify_pollfds(&cn, p + n);
                if (poll(p, n + np, connect_notify_timeout(&cn)) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(EXIT_SETUP);
                }
                /* the proxy's connects that ended, then the new connect(2)s:
                 * live_message() may add listeners */
                connect_notify_step(&cn);
                for (size_t i = jobs.n_listeners; i-- > 0;)
                        if ((p[2 + i].revents & POLLIN) ? connect_notify_handle(&cn, jobs.listeners[i]) < 0
                                                        : p[2 + i].revents != 0) {
                                connect_notify_forget(&cn, jobs.listeners[i]);
                                close(jobs.listeners[i]);
                                jobs.listeners[i] = jobs.listeners[--jobs.n_listeners];
                        }
                if (p[1].revents && !live_message(cfg, in, sync_fd, sfd, &jobs))
                        _exit(EXIT_OK);
                if (!p[0].revents)
                        continue;
                struct signalfd_siginfo si;
                if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si) || si.ssi_signo != SIGCHLD)
                        continue;
                for (;;) {
                        int status;
                        struct rusage ru;
                        pid_t w = wait4(-1, &status, WNOHANG | __WALL, &ru);
                        if (w <= 0)
                                break;
                        pid_t *slot = live_slot(&jobs, w);
                        if (!slot)
                                continue;
                        *slot = 0;
                        struct sync_msg msg = { .kind = SYNC_JOB_EXIT, .status = status, .pid = w };
                        msg.reaped.utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
                        msg.reaped.stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
                        msg.reaped.maxrss_kb = ru.ru_maxrss;
                        (void)send(sync_fd, &msg, sizeof(msg), MSG_NOSIGNAL);
                }
        }
}

/* The compile step, before the job. Returns only when the compiler
 * exited 0. */
static void compile_step(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd,
                         const struct init_stdio *stdio)
{
        /* the compiler is the job's code too: after "start" */
        job_wait_start(sync_fd);
        int status = run_compile(cfg, in, sync_fd, stdio);
        if (status < 0) {
                init_report(sync_fd, SYNC_SETUP_ERROR, -status, 0, 0, "compile", in->compile_argv[0]);
                _exit(EXIT_SETUP);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                /* an exec failure of the compiler was reported already */
                init_report(sync_fd, SYNC_COMPILE_FAILED, 0, status, 0, "compile", in->compile_argv[0]);
                _exit(exit_code_for(status));
        }
}

/* init's copies of the job's stdio, closed (see init_main()). */
static void close_stdio(const struct init_stdio *stdio)
{
        if (stdio->stdin_fd >= 0)
                close(stdio->stdin_fd);
        if (stdio->stdout_fd >= 0)
                close(stdio->stdout_fd);
        if (stdio->stderr_fd >= 0)
                close(stdio->stderr_fd);
        if (stdio->tty_slave >= 0)
                close(stdio->tty_slave);
}

/* A signal to init other than SIGCHLD, passed on to the job (SIGPIPE
 * dropped). */
static void forward_signal(const struct sandbox_inputs *in, pid_t job, int sig)
{
        if (sig == SIGPIPE)
                return;
        if (in->gvisor) {
                gvisor_forward_signal(in->gvisor, sig);
                return;
        }
        /* the job leads its own process group (setsid) */
        if (kill(-job, sig) < 0)
                (void)kill(job, sig);
}

/* Every child that ended, reaped; the job's end reported, and init
 * exits with it. Returns while the job runs. */
static void reap_children(const struct sandbox_inputs *in, int sync_fd, pid_t job)
{
        for (;;) {
                int status;
                pid_t p = waitpid(-1, &status, WNOHANG);
                if (p <= 0)
                        break;
                if (p == job && in->gvisor && gvisor_job_status(status, false, &status) < 0) {
                        init_report(sync_fd, SYNC_SETUP_ERROR, EIO, 0, 0, "runsc",
                                    "the gVisor sandbox failed (runsc's message is in the job's stderr)");
                        _exit(EXIT_SETUP);
                }
                if (p == job) {
                        report_job_exit(sync_fd, status, job, in->landlock != NULL);
                        _exit(exit_code_for(status));
                }
        }
}

_Noreturn void init_main(const struct run_config *cfg, const struct sandbox_inputs *in,
                         int sync_fd, const struct init_stdio *stdio)
{
        sigset_t set;
        /* the landlock tier's init outlives a supervisor killed with
         * SIGKILL only to end the job's tree (sandbox-landlock.c) */
        pid_t supervisor = getppid();
        sandbox_signal_set(&set);
        int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (sfd < 0) {
                init_report(sync_fd, SYNC_SETUP_ERROR, errno, 0, 0, "signalfd", "");
                _exit(EXIT_SETUP);
        }

        /* the --lang code is in place already (mount.c, LANG_CODE_DIR) */
        if (in->code_fd >= 0)
                close(in->code_fd);
        if (in->live) {
                /* a live sandbox's stdio pipes are the start's, unused */
                int unused[] = { stdio->stdin_fd, stdio->stdout_fd, stdio->stderr_fd, stdio->tty_slave };
                for (size_t i = 0; i < ELEMENTSOF(unused); i++)
                        if (unused[i] >= 0)
                                close(unused[i]);
                init_live(cfg, in, sync_fd, sfd);
        }
        if (in->compile_argv)
                compile_step(cfg, in, sync_fd, stdio);

        /* Without a compile step the job is set up now, in parallel with
         * the supervisor's record, and waits for "start" just before its
         * exec (job_wait_start()). init is suspended meanwhile (vfork), and
         * has nothing to do before the job runs. */
        struct init_stdio st = *stdio;
        struct connect_notify cn;
        connect_notify_init(&cn, in->landlock ? in->landlock->proxy_port : 0);
        int notify[2];
        if (notify_open(in, sync_fd, &st, notify) < 0)
                _exit(EXIT_SETUP);
        struct job_start js = { cfg, in->argv, in, sync_fd, &st, sfd, !in->compile_argv };
        pid_t job = spawn_job(&js);
        int listener = notify_take(notify);
        if (job < 0) {
                init_report(sync_fd, SYNC_SETUP_ERROR, errno, 0, 0, "fork job", "");
                _exit(EXIT_SETUP);
        }

        /* The job holds the only copies of its stdio now: EOF on the
         * supervisor's side must mean the job tree closed them. */
        close_stdio(stdio);
        if (!cfg->tty)
                init_report(sync_fd, SYNC_READY, 0, 0, job, "", "");

        for (;;) {
                if (listener >= 0) {
                        /* the job's connect(2)s, those waiting for the
                         * proxy, and signals, none waiting for another */
                        struct pollfd p[2 + CONNECT_NOTIFY_PENDING_MAX] = {
                                { .fd = sfd, .events = POLLIN }, { .fd = listener, .events = POLLIN } };
                        size_t np = connect_notify_pollfds(&cn, p + 2);
                        if (poll(p, 2 + np, connect_notify_timeout(&cn)) < 0)
                                continue;
                        connect_notify_step(&cn);
                        if ((p[1].revents & POLLIN) ? connect_notify_handle(&cn, listener) < 0
                                                    : p[1].revents != 0) {
                                /* every task under the filter is gone */
                                connect_notify_forget(&cn, listener);
                                close(listener);
                                listener = -1;
                        }
                        if (!p[0].revents)
                                continue;
                }
                struct signalfd_siginfo si;
                ssize_t n = read(sfd, &si, sizeof(si));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != (ssize_t)sizeof(si))
                        _exit(EXIT_SETUP);

                if (in->landlock && getppid() != supervisor) {
                        /* the supervisor died (its parent-death signal is
                         * what woke us): nothing may outlive it */
                        (void)reaper_end_children(NULL, 0);
                        _exit(EXIT_SETUP);
                }
                if (si.ssi_signo != SIGCHLD) {
                        forward_signal(in, job, (int)si.ssi_signo);
                        continue;
                }
                reap_children(in, sync_fd, job);
        }
}
