/* supervise.c - the supervisor's event loop (see supervise.h).
 *
 * One poll() over: the job's stdin, stdout and stderr pipes (or the pty
 * master), the caller's stdin, stdout and stderr (hostio.h), the sync
 * channel from the sandbox, a signalfd for the signals we handle, a
 * timerfd for the deadline and grace steps, and init's pidfd.
 *
 * Nothing here blocks (DESIGN §1): every fd is non-blocking or asked only
 * what cannot block, and each direction has one bounded buffer. Output
 * flows job pipe -> buffer -> caller; while the caller's side takes
 * nothing (a stopped terminal, a paused pager) the buffer stays full,
 * the job's pipe is not read, and the job's own writes block, as in a
 * plain pipe; the timers and signals are served all the while. When the
 * caller's reader is gone (POLLERR on its pipe, EPIPE), we close our
 * read end of the job's pipe, so the job's next write gets EPIPE or
 * SIGPIPE, as `job | head` would. Input flows the other way the same
 * way, and the caller's EOF becomes EOF on the job's stdin.
 *
 * Termination is a state table (supervise-table.c): the handlers below
 * turn what they see (the timer, the watchdog, a signal to hutch, init's
 * exit) into an event for loop_event(), which alone, while the loop
 * runs, sends init a stopping signal and changes the state. Outside the
 * loop, a failed setup (loop_open()) and the final reaping
 * (loop_finish()) SIGKILL init directly: nothing is left to decide.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "limits/cgroup.h"
#include "lib/exit-codes.h"
#include "supervise/hostio.h"
#include "supervise/cancel.h"
#include "supervise/supervise-internal.h"
#include "sandbox/sandbox.h"
#include "sandbox/sync.h"
#include "lib/util.h"
#include "limits/watchdog.h"

/* While hutch is in the background of the terminal it reads stdin from,
 * how often it looks whether it was brought to the foreground. */
#define FOREGROUND_CHECK_MS 200

/* How often the watchdog samples the tree when no cgroup holds memory or
 * cpu time: often enough that a hog cannot outrun it by much, rarely
 * enough to cost nothing noticeable (one /proc walk per tick). */
#define WATCHDOG_INTERVAL_MS 50
#define WATCHDOG_SLICE_MS 10
/* ... and of the scratch's walk (the landlock tier's disk limit) */
#define DISK_SLICE_MS 5

static void on_timer(struct loop *l)
{
        uint64_t ticks;
        (void)!read(l->timer_fd, &ticks, sizeof(ticks));
        loop_event(l, EV_TIMER, NULL);
}

/* The 50 ms tick: cpu time from the run cgroup's cpu.stat when there
 * is one (it counts every process the run ever had, exited ones too),
 * and the /proc tree walk only for what no cgroup holds. */
/* The landlock tier's disk limit: a slice of the scratch's walk. A
 * slice's sums are a lower bound of the round's, so they may end the run
 * at once. True when they did. */
static bool check_disk(struct loop *l)
{
        const struct supervise_hooks *h = l->hooks;
        struct du_sample s = { 0 };
        if (!l->du && du_new(h->disk_dir, &l->du) < 0)
                return false;
        int r = du_step(l->du, DISK_SLICE_MS * 1000000ULL, &s);
        if (r == -ELOOP || (r >= 0 && (s.bytes > h->disk_max_bytes || s.entries > h->disk_max_entries))) {
                l->disk_worst = s;
                l->disk_too_deep = r == -ELOOP;
                loop_event(l, EV_DISK_LIMIT, NULL);
                return true;
        }
        return false;
}

static void on_watchdog(struct loop *l)
{
        uint64_t ticks, usec;
        struct tree_sample s;

        (void)!read(l->watchdog_fd, &ticks, sizeof(ticks));
        if (l->phase == PHASE_KILLED)
                return;
        if (l->hooks && l->hooks->disk_dir && check_disk(l))
                return;
        /* a cgroup whose cpu.stat cannot be read leaves cpu time to the
         * tree walk: the limit must hold either way */
        bool cg_cpu = l->cg && cgroup_run_sample(l->cg, &usec) == 0;
        if (cg_cpu && l->cfg->cpu_time_ms && usec / 1000 >= l->cfg->cpu_time_ms) {
                l->cg_cpu_ms = usec / 1000;
                loop_event(l, EV_CPU_LIMIT, NULL);
                return;
        }
        bool tree_memory = l->cfg->memory_bytes && !l->cg_memory;
        bool tree_cpu = l->cfg->cpu_time_ms && !cg_cpu;
        if (!tree_memory && !tree_cpu)
                return;
        if (!l->wd && watchdog_new(l->sb->pid, &l->wd) < 0)
                return;
        /* a slice of the tick, never all of it: a tree the job made slow
         * to walk (many fds) is finished over the next ticks, while the
         * deadline and the pipes stay served. A part of a round is a
         * lower bound of it, so it may stop the job, never clear it. */
        int done = watchdog_step(l->wd, WATCHDOG_SLICE_MS * 1000000ULL, &s);
        if (done < 0)
                return;
        l->peak_memory = MAX(l->peak_memory, s.memory_bytes);
        l->tree_cpu_ms = MAX(l->tree_cpu_ms, s.cpu_ms);
        if (tree_memory && s.memory_bytes > l->cfg->memory_bytes) {
                l->worst = s;
                loop_event(l, EV_MEMORY_LIMIT, NULL);
        } else if (tree_cpu && s.cpu_ms >= l->cfg->cpu_time_ms) {
                l->worst = s;
                loop_event(l, EV_CPU_LIMIT, NULL);
        }
}

static void on_signal(struct loop *l)
{
        struct signalfd_siginfo si;
        struct cancel_request req;
        while (read(l->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                int sig = (int)si.ssi_signo;
                switch (sig) {
                case SIGCHLD:
                case SIGPIPE:
                        break;
                case SIGINT:
                        loop_event(l, ++l->sigints >= 2 ? EV_SIGINT_AGAIN : EV_SIGINT, NULL);
                        break;
                case SIGTERM:
                        /* hutch kill queues its request with the signal */
                        if (si.ssi_code == SI_QUEUE && cancel_decode(si.ssi_ptr, &req))
                                loop_event(l, req.signal == SIGKILL ? EV_KILL_REQUEST_SIGKILL
                                                                    : EV_KILL_REQUEST, &req);
                        else
                                loop_event(l, EV_SIGTERM, NULL);
                        break;
                case SIGWINCH:
                        if (l->tty_master >= 0) {
                                struct winsize ws;
                                if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
                                        (void)ioctl(l->tty_master, TIOCSWINSZ, &ws);
                                break;
                        }
                        (void)send_init(l, sig);
                        break;
                default:
                        (void)send_init(l, sig);
                        break;
                }
        }
}

/* Returns false once the channel is closed. */
static bool on_sync(struct loop *l)
{
        struct sync_msg msg;
        char cbuf[CMSG_SPACE(2 * sizeof(int))];
        struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };

        ssize_t n = recvmsg(l->sb->sync_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        /* An init that failed its setup and exited before reading our
         * start message leaves ECONNRESET pending here. The kernel
         * reports (and clears) that error before the messages still
         * queued, among them init's report of what failed: read again. */
        if (n < 0 && (errno == EAGAIN || errno == EINTR || errno == ECONNRESET))
                return true;
        if (n <= 0)
                return false;
        if (n != (ssize_t)sizeof(msg))
                return true;    /* not ours; ignore */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < nfd; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (l->tty_master < 0 && msg.kind == SYNC_READY) {
                                        /* ours alone (init closed its copy),
                                         * so O_NONBLOCK changes nobody else's */
                                        (void)fcntl(fd, F_SETFL, O_NONBLOCK);
                                        l->tty_master = fd;
                                }
                                else if (msg.kind == SYNC_WORKSPACE && i == 0 && l->sb->workspace_fd < 0)
                                        l->sb->workspace_fd = fd;
                                else if (msg.kind == SYNC_WORKSPACE && i == 1 && l->sb->upper_fd < 0)
                                        l->sb->upper_fd = fd;
                                else
                                        close(fd);
                        }
                }
        msg.step[sizeof(msg.step) - 1] = msg.path[sizeof(msg.path) - 1] = '\0';
        switch (msg.kind) {
        case SYNC_READY:
                if (l->hooks && l->hooks->on_job_started)
                        l->hooks->on_job_started(l->hooks->userdata);
                break;
        case SYNC_SETUP_ERROR:
                l->setup_error = msg;
                l->have_setup_error = true;
                break;
        case SYNC_EXEC_ERROR:
                l->exec_error = msg;
                l->have_exec_error = true;
                break;
        case SYNC_JOB_EXIT:
                l->job_exit = msg;
                l->have_job_exit = true;
                break;
        case SYNC_COMPILE_FAILED:
                l->compile_failed = msg;
                l->have_compile_failed = true;
                break;
        default:
                break;
        }
        return true;
}

static void on_init_exit(struct loop *l)
{
        int status;
        pid_t p = wait4(l->sb->pid, &status, WNOHANG, &l->rusage);
        if (p == l->sb->pid) {
                l->init_exited = true;
                l->init_status = status;
                /* the landlock tier: what init could not end (it was
                 * killed) re-parented to us; end it before anything
                 * reads the pipes' last bytes or the workspace */
                sandbox_end_orphans(l->sb);
                /* Every writer is gone with the pid namespace: what is
                 * left in the job's pipes is all there is, at most their
                 * size. Take it in whole, so the record is complete when
                 * the loop ends, even while the caller's reader is slow or
                 * stopped; run.c writes it out after the record. */
                if (l->host_out)
                        hostio_grow(l->host_out, l->cfg->tty ? (1u << 20) : l->stdout_capacity);
                if (l->host_err)
                        hostio_grow(l->host_err, l->stderr_capacity);
                loop_event(l, EV_INIT_EXITED, NULL);
        }
}

/* Whether this run may ever be recorded before init is reaped: the
 * caller allows it, and no run cgroup holds it, whose counters are final
 * only once init is gone. */
static bool may_record_before_reap(const struct loop *l)
{
        return l->hooks && l->hooks->record_while_exiting && !l->cg;
}

/* Whether it can be now: init said the job ended and it reaped
 * everything else (SYNC_EXIT_ALONE), so no one can write to the job's
 * pipes or its workspace, and init's exit adds nothing the record holds. */
static bool recordable_before_reap(const struct loop *l)
{
        return may_record_before_reap(l) && !l->init_exited && l->have_job_exit &&
               l->job_exit.error == SYNC_EXIT_ALONE;
}

/* The job's output reached EOF: the job has most likely exited, and
 * init's report follows within tens of microseconds. Waited for in
 * poll(), that report's wakeup (a unix socket's is a "sync" one, made
 * for a sender that sleeps next) queues us on init's CPU behind init's
 * exit, so the record would be written after the sandbox's teardown
 * instead of beside it. So wait for it awake, once per run, for at most
 * REPORT_SPIN_NS, giving the CPU to anyone else who wants it. Only
 * where the run can be recorded before init is reaped. */
#define REPORT_SPIN_NS 200000ull
static void await_job_report(struct loop *l)
{
        l->awaited_report = true;
        if (!may_record_before_reap(l) || l->cfg->tty || l->have_job_exit || l->init_exited ||
            l->phase != PHASE_RUNNING)
                return;
        uint64_t until = now_monotonic_ns() + REPORT_SPIN_NS;
        struct pollfd q = { .fd = l->sb->sync_fd, .events = POLLIN };
        while (poll(&q, 1, 0) == 0 && now_monotonic_ns() < until)
                sched_yield();
}

static uint64_t usec_to_ms(int64_t us)
{
        return us > 0 ? (uint64_t)us / 1000 : 0;
}

/* cpu time and peak RSS of the job's processes. Init reaps them all,
 * what the job left running too, and reports what they cost; otherwise
 * (init did not get that far, or was killed) what wait4() gave for init
 * holds whatever init reaped, and init itself. */
static void meter_job(const struct loop *l, struct run_outcome *out)
{
        const struct rusage *ru = &l->rusage;
        int64_t user = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec;
        int64_t sys = (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
        int64_t maxrss_kb = ru->ru_maxrss;

        if (l->have_job_exit && l->job_exit.error == SYNC_EXIT_ALONE) {
                user = l->job_exit.reaped.utime_us;
                sys = l->job_exit.reaped.stime_us;
                maxrss_kb = l->job_exit.reaped.maxrss_kb;
        }
        out->cpu_user_ms = usec_to_ms(user);
        out->cpu_sys_ms = usec_to_ms(sys);
        out->peak_rss_bytes = maxrss_kb > 0 ? (uint64_t)maxrss_kb * 1024 : 0;
        /* Processes killed with init are reaped by no one who reports
         * their time (the landlock tier's job, init killed by
         * --cpu-time): the watchdog saw what the tree had used. It
         * keeps no user/system split, so what it saw beyond the
         * rusage counts as user time, which a job that ran into its
         * cpu limit mostly spent. */
        uint64_t metered = out->cpu_user_ms + out->cpu_sys_ms;
        if (l->tree_cpu_ms > metered)
                out->cpu_user_ms += l->tree_cpu_ms - metered;
}

/* The reader of our stdout or stderr is gone. As in a plain pipe, the
 * job's next write to that stream must fail with EPIPE (or SIGPIPE):
 * we hold the only read end of its pipe, and closing it does that.
 * What the job wrote so far is captured already. A pty cannot be closed
 * for one direction: its output goes on being drained and captured. */
static void reader_gone(struct loop *l, enum output_stream stream)
{
        int *fd = stream == STREAM_STDERR ? &l->sb->stderr_fd : &l->sb->stdout_fd;
        if (*fd >= 0) {
                close(*fd);
                *fd = -1;
        }
}

static struct hostio *host_for(const struct loop *l, enum output_stream stream)
{
        if (l->hooks && l->hooks->events)
                return l->host_out;     /* both streams become events there */
        return stream == STREAM_STDERR ? l->host_err : l->host_out;
}

/* Whether a job stream may be read now: yes when nothing is passed on,
 * or the caller's side has room; and once init is gone, always (what
 * is left in the pipe is bounded, see on_init_exit()). */
static bool can_take(const struct loop *l, enum output_stream stream)
{
        struct hostio *dst = host_for(l, stream);
        return !dst || hostio_gone(dst) || hostio_room(dst) > 0 || l->init_exited;
}

/* Reads what one stream has ready, up to RELAY_ROUND_MAX so the other
 * events keep their turn and never more than the caller's side has room
 * for, and passes it on.  Returns false at EOF (or when the other end is
 * gone); *moved gets the bytes relayed. */
#define RELAY_ROUND_MAX (4u << 20)
static bool relay(struct loop *l, int fd, enum output_stream stream, size_t *moved)
{
        struct hostio *dst = host_for(l, stream);

        *moved = 0;
        while (*moved < RELAY_ROUND_MAX) {
                bool pass = dst && !hostio_gone(dst);
                bool events = l->hooks && l->hooks->events;
                size_t want = sizeof(l->buf);
                if (pass) {
                        /* an event takes up to 6 bytes per byte of output
                         * (JSON escapes) plus its envelope */
                        size_t room = events ? hostio_room(dst) / 8 : hostio_room(dst);
                        if (events && room < 64)
                                room = 0;
                        if (room == 0 && !l->init_exited)
                                return true;    /* the job waits for the reader */
                        if (room == 0)
                                pass = false;   /* a writer outside the sandbox */
                        else
                                want = MIN(want, room);
                }
                ssize_t n = read(fd, l->buf, want);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return true;
                if (n <= 0) {
                        /* EOF, or EIO from a pty whose slave closed: a
                         * tail held back as a possible secret's start
                         * is all there is of it (hostio_set_secrets()) */
                        if (dst)
                                (void)hostio_release(dst);
                        return false;
                }
                *moved += (size_t)n;
                if (l->hooks && l->hooks->on_output)
                        l->hooks->on_output(l->hooks->userdata, stream, l->buf, (size_t)n);
                if (pass) {
                        /* with events, the hook has queued them already */
                        int sent = events ? hostio_flush(dst) : hostio_send(dst, l->buf, (size_t)n);
                        if (sent < 0 && fd != l->tty_master) {
                                reader_gone(l, stream);
                                return true;
                        }
                }
                if ((size_t)n < want || fd == l->tty_master)
                        return true;    /* drained; a pipe gives all it has */
        }
        return true;
}

/* Batch a streaming job's output when that pays (pace.h). */
static void pace_output(struct loop *l, size_t out_moved, size_t err_moved)
{
        size_t moved = MAX(out_moved, err_moved);
        size_t capacity = out_moved >= err_moved ? l->stdout_capacity : l->stderr_capacity;
        uint64_t pause = pace_pause_ns(&l->pace, now_monotonic_ns(), moved, capacity);

        if (pause == 0 || l->phase != PHASE_RUNNING || l->init_exited)
                return;
        struct timespec ts = { 0, (long)pause };
        (void)nanosleep(&ts, NULL);
        pace_resumed(&l->pace, now_monotonic_ns());
}

/* A new loop for one run; its fds are opened by loop_open(). */
static struct loop *loop_new(const struct run_config *cfg, struct sandbox *sb,
                             const struct supervise_hooks *hooks)
{
        struct loop *l = xcalloc(1, sizeof(*l));

        /* Field by field, not `*l = (struct loop){ ... }`: a compound
         * literal would zero all of l again, its buffers included, and
         * touch every page of them on each run; xcalloc's pages are zero
         * already and stay untouched until output arrives. */
        l->cfg = cfg;
        l->sb = sb;
        l->hooks = hooks;
        l->tty_master = l->watchdog_fd = l->heartbeat_fd = l->signal_fd = l->timer_fd = -1;
        l->started_ms = now_monotonic_ms();
        l->master_open = cfg->tty;
        l->sync_open = true;
        l->host_in = hooks ? hooks->host_in : NULL;
        l->host_out = hooks ? hooks->host_out : NULL;
        l->host_err = hooks ? hooks->host_err : NULL;
        l->stdin_open = hooks && hooks->host_in;
        l->cg = sb->cgroup;
        l->cg_memory = sb->cgroup && (cgroup_run_enforced(sb->cgroup) & CGROUP_LIMIT_MEMORY);
        if (sb->stdout_fd >= 0) {
                int c1 = fcntl(sb->stdout_fd, F_GETPIPE_SZ), c2 = fcntl(sb->stderr_fd, F_GETPIPE_SZ);
                l->stdout_capacity = c1 > 0 ? (size_t)c1 : 65536;
                l->stderr_capacity = c2 > 0 ? (size_t)c2 : 65536;
        }
        pace_init(&l->pace, now_monotonic_ns());
        return l;
}

/* A periodic timerfd, or -1 (the tick it serves is then skipped). */
static int interval_timer(uint64_t ms)
{
        struct itimerspec its = {
                .it_value = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L },
                .it_interval = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L },
        };
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (fd >= 0)
                (void)timerfd_settime(fd, 0, &its, NULL);
        return fd;
}

/* The signalfd and the deadline's timer, which the loop cannot do
 * without, then the heartbeat and the watchdog's tick, which it can.
 * 0, or -errno with init killed and reaped. */
static int loop_open(struct loop *l)
{
        sigset_t set;

        sandbox_signal_set(&set);
        l->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (l->signal_fd < 0 || l->timer_fd < 0) {
                int r = -errno;
                (void)send_init(l, SIGKILL);
                (void)waitpid(l->sb->pid, NULL, 0);
                return r;
        }
        if (l->cfg->timeout_ms)
                arm_timer(l, l->cfg->timeout_ms);
        if (l->hooks && l->hooks->on_heartbeat && l->hooks->heartbeat_ms)
                l->heartbeat_fd = interval_timer(l->hooks->heartbeat_ms);
        if (l->cfg->memory_bytes || l->cfg->cpu_time_ms || (l->hooks && l->hooks->disk_dir))
                l->watchdog_fd = interval_timer(WATCHDOG_INTERVAL_MS);
        return 0;
}

/* The fds of one poll() round: slot -> index in p, or -1 when the slot
 * is not watched this round. */
enum { SLOT_SYNC, SLOT_OUT, SLOT_ERR, SLOT_MASTER, SLOT_STDIN, SLOT_JOBIN, SLOT_HOUT, SLOT_HERR,
       SLOT_SIG, SLOT_TIMER, SLOT_WATCHDOG, SLOT_HEARTBEAT, SLOT_PIDFD, SLOT_MAX };
struct watch {
        struct pollfd p[SLOT_MAX];
        int idx[SLOT_MAX], n;
        bool want_stdin, stdin_now;     /* the caller's stdin is wanted; and readable */
        bool output_pending;            /* a job pipe or the pty is still open */
};

static void watch(struct watch *w, int slot, int fd, bool cond, short events)
{
        if (!cond)
                return;
        w->idx[slot] = w->n;
        w->p[w->n++] = (struct pollfd){ .fd = fd, .events = events };
}

/* The caller's side of a stream for poll(): its fd (-1 without one), and
 * whether it has output waiting for room. */
static int host_fd(const struct hostio *h)
{
        return h ? hostio_fd(h) : -1;
}

static short host_wants_out(const struct hostio *h)
{
        return h && hostio_pending(h) ? POLLOUT : 0;
}

static void watch_fds(struct loop *l, struct watch *w)
{
        struct sandbox *sb = l->sb;
        bool have_master = l->master_open && l->tty_master >= 0;

        w->n = 0;
        for (int i = 0; i < SLOT_MAX; i++)
                w->idx[i] = -1;
        watch(w, SLOT_SYNC, sb->sync_fd, l->sync_open, POLLIN);
        watch(w, SLOT_OUT, sb->stdout_fd, sb->stdout_fd >= 0 && can_take(l, STREAM_STDOUT), POLLIN);
        watch(w, SLOT_ERR, sb->stderr_fd, sb->stderr_fd >= 0 && can_take(l, STREAM_STDERR), POLLIN);
        watch(w, SLOT_MASTER, l->tty_master, have_master,
              (can_take(l, STREAM_STDOUT) ? POLLIN : 0) | (l->in_len ? POLLOUT : 0));
        /* input: the caller's stdin is read only when what was
         * read before has been taken, so one buffer bounds it */
        w->want_stdin = l->stdin_open && l->in_len == 0 && !l->init_exited && input_target(l) >= 0;
        w->stdin_now = w->want_stdin && stdin_readable_now(l);
        watch(w, SLOT_STDIN, host_fd(l->host_in), w->stdin_now, POLLIN);
        /* events 0 still reports POLLERR: the job closed its stdin */
        watch(w, SLOT_JOBIN, sb->stdin_fd, sb->stdin_fd >= 0, l->in_len ? POLLOUT : 0);
        watch(w, SLOT_HOUT, host_fd(l->host_out), l->host_out && !hostio_gone(l->host_out),
              host_wants_out(l->host_out));
        watch(w, SLOT_HERR, host_fd(l->host_err), l->host_err && !hostio_gone(l->host_err),
              host_wants_out(l->host_err));
        watch(w, SLOT_SIG, l->signal_fd, true, POLLIN);
        watch(w, SLOT_TIMER, l->timer_fd, !l->init_exited, POLLIN);
        watch(w, SLOT_WATCHDOG, l->watchdog_fd, !l->init_exited && l->watchdog_fd >= 0, POLLIN);
        watch(w, SLOT_HEARTBEAT, l->heartbeat_fd, !l->init_exited && l->heartbeat_fd >= 0, POLLIN);
        watch(w, SLOT_PIDFD, sb->pidfd, !l->init_exited, POLLIN);
        w->output_pending = sb->stdout_fd >= 0 || sb->stderr_fd >= 0 || have_master;
}

static short revents(const struct watch *w, int slot)
{
        return w->idx[slot] >= 0 ? w->p[w->idx[slot]].revents : 0;
}

static bool ready(const struct watch *w, int slot)
{
        return revents(w, slot) & (POLLIN | POLLHUP | POLLERR);
}

/* The caller's readers first: what they took makes room. */
static void serve_caller_output(struct loop *l, const struct watch *w)
{
        for (int slot = SLOT_HOUT; slot <= SLOT_HERR; slot++) {
                enum output_stream stream = slot == SLOT_HOUT ? STREAM_STDOUT : STREAM_STDERR;
                struct hostio *h = host_for(l, stream);
                short ev = revents(w, slot);
                if (ev & (POLLERR | POLLHUP | POLLNVAL))
                        hostio_set_gone(h);
                else if (ev & POLLOUT)
                        (void)hostio_flush(h);
                if (ev && hostio_gone(h) && !l->cfg->tty)
                        reader_gone(l, stream);
        }
}

/* Serve every fd poll() found ready, in a fixed order. */
static void serve(struct loop *l, const struct watch *w)
{
        struct sandbox *sb = l->sb;

        if (ready(w, SLOT_SYNC))
                l->sync_open = on_sync(l);
        serve_caller_output(l, w);
        /* a pty replaces both pipes: its output counts as stdout */
        size_t out_moved = 0, err_moved = 0;
        if (ready(w, SLOT_OUT) && !relay(l, sb->stdout_fd, STREAM_STDOUT, &out_moved))
                reader_gone(l, STREAM_STDOUT);  /* EOF: close our end */
        if (ready(w, SLOT_ERR) && !relay(l, sb->stderr_fd, STREAM_STDERR, &err_moved))
                reader_gone(l, STREAM_STDERR);
        if ((revents(w, SLOT_MASTER) & POLLIN) ||
            ((revents(w, SLOT_MASTER) & (POLLHUP | POLLERR)) && can_take(l, STREAM_STDOUT)))
                l->master_open = relay(l, l->tty_master, STREAM_STDOUT, &out_moved);
        if (ready(w, SLOT_STDIN))
                read_stdin(l);
        if (revents(w, SLOT_JOBIN) & (POLLERR | POLLHUP)) {
                /* the job closed its stdin: read no more of the caller's */
                l->stdin_open = false;
                l->in_len = 0;
                close_job_stdin(l);
        }
        if ((revents(w, SLOT_JOBIN) & POLLOUT) || (revents(w, SLOT_MASTER) & POLLOUT))
                flush_input(l);
        if (ready(w, SLOT_SIG))
                on_signal(l);
        if (ready(w, SLOT_TIMER))
                on_timer(l);
        if (ready(w, SLOT_WATCHDOG))
                on_watchdog(l);
        if (ready(w, SLOT_HEARTBEAT)) {
                uint64_t ticks;
                (void)!read(l->heartbeat_fd, &ticks, sizeof(ticks));
                l->hooks->on_heartbeat(l->hooks->userdata);
        }
        if (ready(w, SLOT_PIDFD))
                on_init_exit(l);
        if (l->cfg->tty && l->tty_master < 0 && !l->sync_open)
                l->master_open = false;
        pace_output(l, out_moved, err_moved);
}

/* Drain whatever init sent before it died. */
static void drain_sync(struct loop *l)
{
        while (on_sync(l) && l->sync_open) {
                struct pollfd q = { .fd = l->sb->sync_fd, .events = POLLIN };
                if (poll(&q, 1, 0) <= 0)
                        break;
        }
        l->sync_open = false;
}

/* poll()'s timeout for this round, -1 for none; 0 when the drain after
 * init's exit is over and the loop should end. */
static int round_timeout(struct loop *l, const struct watch *w)
{
        int timeout = -1;
        if (w->want_stdin && !w->stdin_now)
                timeout = FOREGROUND_CHECK_MS;  /* see stdin_readable_now() */
        if (l->init_exited) {
                /* Every writer died with the pid namespace, so EOF is
                 * due; a fd smuggled out of the sandbox must not keep
                 * us here forever. */
                uint64_t now = now_monotonic_ms();
                if (!l->drain_deadline)
                        l->drain_deadline = now + 2000;
                if (now >= l->drain_deadline)
                        return 0;
                timeout = (int)(l->drain_deadline - now);
        }
        return timeout;
}

/* The loop: until init is reaped and its pipes are drained, or the run
 * can be recorded while init exits (out->init_exiting). 0 or -errno. */
static int loop_run(struct loop *l, struct run_outcome *out)
{
        struct watch w;

        /* no input at all: the job reads EOF at once */
        flush_input(l);
        for (;;) {
                watch_fds(l, &w);
                if (l->init_exited && !l->sync_open && !w.output_pending)
                        return 0;
                if (!w.output_pending && recordable_before_reap(l)) {
                        out->init_exiting = true;
                        return 0;
                }
                if (l->init_exited && !w.output_pending && l->sync_open) {
                        drain_sync(l);
                        continue;
                }
                int timeout = round_timeout(l, &w);
                if (timeout == 0 && l->init_exited)
                        return 0;
                if (!w.output_pending && !l->awaited_report)
                        await_job_report(l);
                if (poll(w.p, (nfds_t)w.n, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        loop_event(l, EV_FAILURE, NULL);
                        return r;
                }
                serve(l, &w);
        }
}

/* After the loop: init reaped (killed first unless it is exiting on its
 * own), the job metered, and out filled. */
static void loop_finish(struct loop *l, struct run_outcome *out)
{
        if (!l->init_exited && !out->init_exiting) {
                (void)send_init(l, SIGKILL);
                int status;
                if (wait4(l->sb->pid, &status, 0, &l->rusage) == l->sb->pid) {
                        l->init_exited = true;
                        l->init_status = status;
                }
                sandbox_end_orphans(l->sb);
        }
        out->wall_ms = now_monotonic_ms() - l->started_ms;
        meter_job(l, out);
        out->peak_tree_memory_bytes = l->peak_memory;
        /* init is reaped: what the cgroup counted is final now */
        if (l->cg && cgroup_run_stats(l->cg, &l->cg_stats) == 0) {
                l->have_cg_stats = true;
                out->cgroup_metered = true;
                if (l->cg_stats.have & CGROUP_HAVE_CPU_STAT) {
                        out->cpu_user_ms = l->cg_stats.cpu.user_usec / 1000;
                        out->cpu_sys_ms = l->cg_stats.cpu.system_usec / 1000;
                }
                if (l->cg_stats.have & (CGROUP_HAVE_MEMORY_PEAK | CGROUP_HAVE_MEMORY_SAMPLED))
                        out->cgroup_memory_peak_bytes = l->cg_stats.memory_peak;
                out->cgroup_oom_kills = l->cg_stats.memory_events.oom_kill;
                out->pids_max_events = l->cg_stats.pids_max_events;
        }
        decide(l, out);
        if (out->pids_max_events && l->cfg->pids) {
                size_t len = strlen(out->message);
                snprintf(out->message + len, sizeof(out->message) - len,
                         "%spids limit %llu reached: pids.max refused %llu fork%s%s",
                         len ? " (" : "", (unsigned long long)l->cfg->pids,
                         (unsigned long long)out->pids_max_events,
                         out->pids_max_events == 1 ? "" : "s", len ? ")" : "");
        }
}

static void loop_free(struct loop *l)
{
        int fds[] = { l->tty_master, l->signal_fd, l->timer_fd, l->watchdog_fd, l->heartbeat_fd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        l->wd = watchdog_free(l->wd);
        l->du = du_free(l->du);
        free(l);
}

int supervise(const struct run_config *cfg, struct sandbox *sb,
              const struct supervise_hooks *hooks, struct run_outcome *out)
{
        struct loop *l = loop_new(cfg, sb, hooks);
        int r = loop_open(l);
        if (r == 0)
                r = loop_run(l, out);
        loop_finish(l, out);
        loop_free(l);
        return r;
}
