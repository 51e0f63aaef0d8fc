/* run/live.c - a live sandbox's supervisor (see run/live.h).
 *
 * `hutch sandbox start` is a run whose stages are `hutch run`'s up to
 * the built sandbox (run.c): the same profile, namespaces, root,
 * workspace, limits, cgroup and syscall filter. Its init (init.c,
 * init_live()) forks no job of its own: the supervisor here, detached as
 * --detach's is, asks it for one job per `hutch exec` (SANDBOX_MSG_EXEC
 * on the sync channel, up to SANDBOX_LIVE_JOBS_MAX side by side; init
 * answers requests in order, so the oldest unanswered one is the one an
 * answer is for) and kills it all when the sandbox stops.
 *
 * Security: entering a running sandbox.
 *  - No setns from the host. The job is forked by the sandbox's own
 *    init, already inside every namespace, and made the job by the same
 *    job_exec() as `hutch run`'s: its own session, only fds 0-2 across
 *    exec, no capabilities in any set, locked securebits, no_new_privs,
 *    the sandbox's rlimits, then the same seccomp filter (the blob init
 *    received before "start"). Nothing of the host's credentials or
 *    namespaces is ever handed in; the job gets exactly `hutch run`'s.
 *  - The job's stdio are three pipes made here, per exec, before the
 *    request; their sandbox ends travel to init with SCM_RIGHTS over the
 *    sync socketpair (made before the clone, so no other process holds
 *    it) and init keeps no copy. The caller's own fds never enter: the
 *    `hutch exec` client receives the read ends (the job's output) and
 *    relays them. So no exec's stdio leads out of the sandbox, and a job
 *    holds only its own exec's pipes. (Processes of one sandbox all run
 *    as its one uid in one pid namespace: a background process an
 *    earlier exec left can see a later exec's processes, as processes of
 *    one container can. The boundary is the sandbox, not the exec.)
 *  - The job cannot reach the supervisor: init's end of the sync channel
 *    is close-on-exec (job_stdio() closes every fd above 2 at exec), the
 *    supervisor is outside the job's pid namespace and user namespace
 *    (no signal, no ptrace, no /proc of it), and the control socket is a
 *    file under the host's state dir, which no profile mounts by default.
 *    Were it mounted, the socket's 0600 in a 0700 dir binds it to the
 *    host uid, and live_peer_check() refuses any peer outside the
 *    supervisor's own user namespace, which every job is (a sandbox's
 *    user namespace is a child of it), checked through the peer's pid
 *    and confirmed alive through its pidfd (SO_PEERPIDFD), so a job
 *    cannot connect, exit, and pass a recycled pid off as the peer. A job thus cannot exec into,
 *    stop, or read another sandbox.
 *  - Limits hold for the whole sandbox: init and every job are in the
 *    run's cgroup (CLONE_INTO_CGROUP); without one, the watchdog walks
 *    init's tree from this loop, RLIMIT_NPROC counts the sandbox's own
 *    user namespace, and every write lands on the one scratch tmpfs.
 *    What a hit does, and how the sandbox and its execs say which limit
 *    it was: run/live-limits.h.
 *
 * Stopping: SIGKILL to init through its pidfd; the kernel then kills
 * every process of the pid namespace, and the supervisor reaps init
 * before it records the sandbox's run, removes its cgroup and exits.
 * Nothing of the sandbox survives its stop, its idle timeout, or the
 * supervisor (init's sync channel hits EOF and init exits; the sandbox
 * child is PDEATHSIG'd). */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/live-internal.h"
#include "run/live-limits.h"
#include "run/live-publish.h"
#include "run/run-internal.h"
#include "sandbox/sandbox.h"
#include "sandbox/sync.h"
#include "supervise/supervise.h"

bool live_name_valid(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
                return false;
        return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

int live_dir_open(void)
{
        _cleanup_free_ char *db = NULL;
        struct stat st;
        if (store_default_path(&db) < 0) {
                log_error("sandbox: no state dir (set HUTCH_STATE_DIR or HOME)");
                return -ENOENT;
        }
        *strrchr(db, '/') = '\0';
        _cleanup_free_ char *dir = xasprintf("%s/sandboxes", db);
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return log_error_errno(r, "sandbox: %s: %m", dir);
        int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(-errno, "sandbox: %s: %m", dir);
        /* ours and ours only: the control sockets live here */
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
                close(fd);
                log_error("sandbox: %s: not a directory of this user's with mode 0700", dir);
                return -EPERM;
        }
        return fd;
}

char *live_path(int dirfd, const char *name, const char *ext)
{
        return xasprintf("/proc/self/fd/%d/%s.%s", dirfd, name, ext);
}

static int sockaddr_for(int dirfd, const char *name, struct sockaddr_un *sa)
{
        _cleanup_free_ char *p = live_path(dirfd, name, "sock");
        *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        if (strlen(p) >= sizeof(sa->sun_path))
                return -ENAMETOOLONG;
        memcpy(sa->sun_path, p, strlen(p) + 1);
        return 0;
}

int live_connect(int dirfd, const char *name)
{
        struct sockaddr_un sa;
        int r = sockaddr_for(dirfd, name, &sa);
        if (r < 0)
                return r;
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* The peer's pidfd (Linux >= 6.5): the pid SO_PEERCRED names is read
 * through /proc, and a process that exits meanwhile could hand its pid
 * to another; the pidfd tells whether the process read is still the
 * one that connected. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int live_peer_check(int fd)
{
        struct ucred uc;
        socklen_t len = sizeof(uc);
        struct stat ours, theirs;
        char p[64];
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.uid != geteuid())
                return -EPERM;
        /* a pid from SO_PEERCRED is in our pid namespace: 0 means the
         * peer is outside it (not ours to talk to) */
        if (uc.pid <= 0)
                return -EPERM;
        int pidfd = -1;
        len = sizeof(pidfd);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
                pidfd = -1;
                if (errno != ENOPROTOOPT)
                        return -EPERM;  /* the peer is gone already */
        }
        snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)uc.pid);
        bool same = stat("/proc/self/ns/user", &ours) == 0 && stat(p, &theirs) == 0 &&
                    ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev;
        if (pidfd >= 0) {
                /* what /proc showed was the peer's only if it still lives */
                same = same && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
                close(pidfd);
        }
        return same ? 0 : -EPERM;
}

int live_listen(const char *name, int *ret_fd)
{
        struct sockaddr_un sa;
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0)
                return dirfd;
        int r = sockaddr_for(dirfd, name, &sa);
        if (r < 0)
                return log_error_errno(r, "sandbox: %s: %m", name);
        int c = live_connect(dirfd, name);
        if (c >= 0) {
                close(c);
                log_error("sandbox: %s is running already (hutch sandbox stop %s)", name, name);
                return -EEXIST;
        }
        /* what a supervisor that is gone left behind */
        _cleanup_free_ char *sock = xasprintf("%s.sock", name);
        (void)unlinkat(dirfd, sock, 0);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(-errno, "sandbox: socket: %m");
        mode_t old = umask(0077);
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
        umask(old);
        /* 0600: connecting needs write permission */
        if (r == 0 && fchmodat(dirfd, sock, 0600, 0) < 0)
                r = -errno;
        if (r == 0 && listen(fd, 16) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return log_error_errno(r, "sandbox: %s: control socket: %m", name);
        }
        *ret_fd = fd;
        return 0;
}

/* One exec, from its request to its end. */
struct exec_slot {
        bool active;
        int client;             /* its connection, or -1 once the client is gone */
        uint64_t seq;           /* order of the request; 0 once init answered it */
        pid_t pid;              /* the job's pid inside, 0 until init says */
        uint64_t started_ms, deadline_ms; /* deadline 0: none */
        struct live_reply end;  /* what the client will be told */
        struct live_kernel *kernel; /* a kernel's job (live-kernel.c): no client, no deadline */
};

/* The supervisor's state while it serves. */
struct live {
        const struct run_config *cfg;
        const struct run_live *opts;
        struct sandbox *sb;
        struct exec_slot exec[SANDBOX_LIVE_JOBS_MAX];
        size_t n_active;
        uint64_t seq;
        uint64_t idle_ms_at;    /* the idle deadline, 0: none */
        int stopper;            /* `sandbox stop`'s connection, held open to the end */
        const char *why;        /* why the sandbox ended */
        bool ready;
        struct live_publish *pub; /* --publish's relay (live-publish.c), or NULL */
        struct live_kernels *kernels;
        struct live_limits *limits; /* the sandbox's limits (live-limits.c) */
        unsigned limits_written;    /* LIVE_LIMIT_* bits NAME.json lists */
        uint64_t started_at_ms;
};

static void touch_idle(struct live *l)
{
        l->idle_ms_at = l->opts->idle_ms ? now_monotonic_ms() + l->opts->idle_ms : 0;
}

static int send_to_init(struct live *l, char op, const void *args, size_t len, const int *fds, int nfds)
{
        char cbuf[CMSG_SPACE(3 * sizeof(int))] = { 0 };
        struct iovec iov[2] = { { .iov_base = &op, .iov_len = 1 }, { .iov_base = (void *)args, .iov_len = len } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
        if (nfds) {
                mh.msg_control = cbuf;
                mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
        }
        return sendmsg(l->sb->sync_fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static void kill_job(struct live *l, struct exec_slot *x)
{
        int32_t pid = x->pid;
        if (pid > 0)
                (void)send_to_init(l, SANDBOX_MSG_KILL, &pid, sizeof(pid), NULL, 0);
}

/* The exec ended (or was given up): tell its client, if still there. */
static void exec_done(struct live *l, struct exec_slot *x)
{
        if (x->kernel) {
                struct live_kernel *k = x->kernel;
                int status = x->end.status, error = x->end.stopped ? ESHUTDOWN : x->end.error;
                *x = (struct exec_slot) { .client = -1 };
                live_kernel_job_ended(k, l, status, error);
                return;
        }
        x->end.op = LIVE_OP_END;
        x->end.wall_ms = now_monotonic_ms() - x->started_ms;
        live_limits_exec_end(l->limits, &x->end);
        if (x->client >= 0) {
                (void)send(x->client, &x->end, sizeof(x->end), MSG_NOSIGNAL);
                close(x->client);
        }
        *x = (struct exec_slot) { .client = -1 };
        if (--l->n_active == 0)
                touch_idle(l);
}

/* The exec init answers next: requests are answered in order. */
static struct exec_slot *oldest_pending(struct live *l)
{
        struct exec_slot *best = NULL;
        for (size_t i = 0; i < ELEMENTSOF(l->exec); i++)
                if (l->exec[i].active && l->exec[i].seq && (!best || l->exec[i].seq < best->seq))
                        best = &l->exec[i];
        return best;
}

static struct exec_slot *slot_of(struct live *l, pid_t pid)
{
        for (size_t i = 0; i < ELEMENTSOF(l->exec); i++)
                if (l->exec[i].active && pid > 0 && l->exec[i].pid == pid)
                        return &l->exec[i];
        return NULL;
}

static void send_fds(int fd, int out, int err)
{
        struct live_reply f = { .op = LIVE_OP_FDS };
        char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 };
        struct iovec iov = { .iov_base = &f, .iov_len = sizeof(f) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(2 * sizeof(int));
        memcpy(CMSG_DATA(c), (int[]) { out, err }, 2 * sizeof(int));
        (void)sendmsg(fd, &mh, MSG_NOSIGNAL);
}

/* An exec request on connection fd (ours from here on). */
static void exec_start(struct live *l, int fd, const char *buf, size_t n)
{
        struct live_req req;
        struct live_reply busy = { .op = LIVE_OP_BUSY };
        struct exec_slot *x = NULL;
        int job_in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };

        for (size_t i = 0; i < ELEMENTSOF(l->exec) && !x; i++)
                if (!l->exec[i].active)
                        x = &l->exec[i];
        if (!x || n <= sizeof(req) || buf[n - 1] != '\0') {
                (void)send(fd, &busy, sizeof(busy), MSG_NOSIGNAL);
                close(fd);
                return;
        }
        memcpy(&req, buf, sizeof(req));
        *x = (struct exec_slot) { .active = true, .client = fd, .started_ms = now_monotonic_ms() };
        l->n_active++;
        l->idle_ms_at = 0;
        uint64_t t = req.timeout_ms ? req.timeout_ms : l->cfg->timeout_ms;
        x->deadline_ms = t ? x->started_ms + t : 0;
        /* fresh pipes for this exec alone; the job's stdin is at EOF */
        if (pipe2(job_in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                x->end.error = errno;
                snprintf(x->end.step, sizeof(x->end.step), "pipe");
        } else {
                close(TAKE_FD(job_in[1]));
                int job_fds[3] = { job_in[0], out[1], err[1] };
                int k = send_to_init(l, SANDBOX_MSG_EXEC, buf + sizeof(req), n - sizeof(req), job_fds, 3);
                if (k < 0) {
                        x->end.error = -k;
                        snprintf(x->end.step, sizeof(x->end.step), "hand the job to init");
                } else {
                        x->seq = ++l->seq;
                        send_fds(fd, out[0], err[0]);
                }
        }
        int all[] = { job_in[0], job_in[1], out[0], out[1], err[0], err[1] };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                if (all[i] >= 0)
                        close(all[i]);
        if (x->end.error)
                exec_done(l, x);
}

int live_job_spawn(struct live *l, char **argv, const int fds[3], struct live_kernel *k)
{
        struct exec_slot *x = NULL;
        size_t len = 0, at = 0;
        for (size_t i = 0; i < ELEMENTSOF(l->exec) && !x; i++)
                if (!l->exec[i].active)
                        x = &l->exec[i];
        if (!x)
                return -EBUSY;
        for (char **a = argv; *a; a++)
                len += strlen(*a) + 1;
        if (len > LIVE_ARGV_MAX)
                return -E2BIG;
        _cleanup_free_ char *buf = xmalloc(len);
        for (char **a = argv; *a; a++) {
                memcpy(buf + at, *a, strlen(*a) + 1);
                at += strlen(*a) + 1;
        }
        int r = send_to_init(l, SANDBOX_MSG_EXEC, buf, len, fds, 3);
        if (r < 0)
                return r;
        /* not counted in n_active: a kernel idles between its calls */
        *x = (struct exec_slot) { .active = true, .client = -1, .seq = ++l->seq, .kernel = k,
                                  .started_ms = now_monotonic_ms() };
        return 0;
}

void live_job_signal(struct live *l, int32_t pid, bool kill)
{
        if (pid > 0)
                (void)send_to_init(l, kill ? SANDBOX_MSG_KILL : SANDBOX_MSG_INTERRUPT, &pid, sizeof(pid), NULL, 0);
}

void live_busy(struct live *l, bool busy)
{
        if (busy) {
                l->n_active++;
                l->idle_ms_at = 0;
        } else if (--l->n_active == 0) {
                touch_idle(l);
        }
}

const struct run_config *live_config(const struct live *l)
{
        return l->cfg;
}

const char *live_limit_stop(const struct live *l)
{
        return live_limits_stopped(l->limits);
}

/* One connection on the control socket. */
static void control(struct live *l, int lfd)
{
        static char buf[sizeof(struct live_req) + LIVE_ARGV_MAX + 1];
        struct timeval tv = { .tv_sec = 2 };
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return;
        if (live_peer_check(fd) < 0) {
                log_warning("sandbox %s: refused a connection from outside this user's namespace",
                            l->opts->name);
                close(fd);
                return;
        }
        /* a client says what it wants at once */
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) {
                close(fd);
                return;
        }
        switch (buf[0]) {
        case LIVE_OP_EXEC:
                exec_start(l, fd, buf, (size_t)n);
                return;
        case LIVE_OP_KERNEL:
                live_kernels_request(l->kernels, l, fd, buf, (size_t)n);
                return;
        case LIVE_OP_STOP:
                l->why = "stopped (hutch sandbox stop)";
                if (l->stopper < 0)
                        l->stopper = fd;        /* closes when we exit */
                else
                        close(fd);
                return;
        case LIVE_OP_PING: {
                struct live_reply p = { .op = LIVE_OP_PONG };
                (void)send(fd, &p, sizeof(p), MSG_NOSIGNAL);
                break;
        }
        }
        close(fd);
}

/* One message from init; false when init's setup failed. */
static bool from_init(struct live *l, struct run_outcome *out)
{
        struct sync_msg msg;
        char cbuf[CMSG_SPACE(2 * sizeof(int))];
        struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct exec_slot *x;
        int sock = -1;          /* SYNC_SOCKET's */
        ssize_t n = recvmsg(l->sb->sync_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n <= 0)
                return n < 0 && (errno == EAGAIN || errno == EINTR);
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (msg.kind == SYNC_WORKSPACE && i == 0 && l->sb->workspace_fd < 0)
                                        l->sb->workspace_fd = fd;
                                else if (msg.kind == SYNC_WORKSPACE && i == 1 && l->sb->upper_fd < 0)
                                        l->sb->upper_fd = fd;
                                else if (msg.kind == SYNC_SOCKET && i == 0 && l->ready && (size_t)n >= sizeof(msg))
                                        sock = fd;
                                else
                                        close(fd);
                        }
        if (msg.kind == SYNC_SOCKET && l->ready && (size_t)n >= sizeof(msg)) {
                live_publish_socket(l->pub, sock, msg.error);
                return true;
        }
        if (sock >= 0)
                close(sock);
        if ((size_t)n < offsetof(struct sync_msg, reaped))
                return true;
        msg.step[sizeof(msg.step) - 1] = msg.path[sizeof(msg.path) - 1] = '\0';
        if (!l->ready) {
                if (msg.kind == SYNC_READY)
                        l->ready = true;
                if (msg.kind != SYNC_SETUP_ERROR)
                        return true;
                out->status = RUN_SETUP_ERROR;
                out->exit_code = EXIT_SETUP;
                out->error = msg.error;
                snprintf(out->message, sizeof(out->message), "setup: %s%s%s: %s", msg.step,
                         msg.path[0] ? " " : "", msg.path, strerror(msg.error));
                return false;
        }
        switch (msg.kind) {
        case SYNC_READY:
                /* init forked the job of its oldest unanswered request */
                if ((x = oldest_pending(l))) {
                        x->seq = 0;
                        x->pid = msg.pid;
                        if (x->kernel)
                                live_kernel_job_started(x->kernel, l, msg.pid);
                        else if (x->client < 0 || (x->end.timed_out && x->deadline_ms))
                                kill_job(l, x); /* given up before it had a pid */
                }
                break;
        case SYNC_SETUP_ERROR:
        case SYNC_EXEC_ERROR:
                /* from the job before its exec (then its READY follows),
                 * or from init, which forked nothing (pid 0) */
                if (!(x = oldest_pending(l)))
                        break;
                x->end.error = msg.error ? msg.error : EIO;
                x->end.exec_failed = msg.kind == SYNC_EXEC_ERROR;
                snprintf(x->end.step, sizeof(x->end.step), "%s", msg.step);
                if (msg.pid == 0)
                        exec_done(l, x);
                break;
        case SYNC_JOB_EXIT:
                if ((x = slot_of(l, msg.pid))) {
                        x->end.status = msg.status;
                        x->end.utime_us = msg.reaped.utime_us;
                        x->end.stime_us = msg.reaped.stime_us;
                        x->end.maxrss_kb = msg.reaped.maxrss_kb;
                        exec_done(l, x);
                }
                break;
        }
        return true;
}

/* NAME.json beside the socket: what `hutch sandbox ls` lists. */
static void write_state(const struct live *l, const char *run_id, bool remove)
{
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0)
                return;
        _cleanup_free_ char *file = xasprintf("%s.json", l->opts->name), *tmp = xasprintf(".%s.json.tmp", l->opts->name);
        if (remove) {
                (void)unlinkat(dirfd, file, 0);
                _cleanup_free_ char *sock = xasprintf("%s.sock", l->opts->name);
                (void)unlinkat(dirfd, sock, 0);
                return;
        }
        _cleanup_free_ char *ports = live_publish_state_json(l->opts->ports, l->opts->n_ports);
        _cleanup_free_ char *limits = live_limits_state_json(l->limits);
        _cleanup_free_ char *j = xasprintf("{\"name\":\"%s\",\"id\":\"%s\",\"supervisor_pid\":%d,\"init_pid\":%d,"
                                           "\"started_at_ms\":%llu,\"idle_timeout_ms\":%llu%s%s}\n",
                                           l->opts->name, run_id, (int)getpid(), (int)l->sb->pid,
                                           (unsigned long long)l->started_at_ms,
                                           (unsigned long long)l->opts->idle_ms, ports, limits);
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        bool ok = write_all(fd, j, strlen(j)) >= 0;
        close(fd);
        if (!ok || renameat(dirfd, tmp, dirfd, file) < 0)
                (void)unlinkat(dirfd, tmp, 0);
}

static int timeout_for(const struct live *l)
{
        uint64_t now = now_monotonic_ms(), until = l->n_active ? 0 : l->idle_ms_at;
        for (size_t i = 0; i < ELEMENTSOF(l->exec); i++) {
                const struct exec_slot *x = &l->exec[i];
                if (x->active && x->deadline_ms && !x->end.timed_out && (!until || x->deadline_ms < until))
                        until = x->deadline_ms;
        }
        uint64_t k = live_kernels_deadline(l->kernels);
        if (k && (!until || k < until))
                until = k;
        if (!until)
                return -1;
        return until <= now ? 0 : (int)MIN(until - now, (uint64_t)INT32_MAX);
}

/* Deadlines, and clients gone: their jobs end. */
static void check_execs(struct live *l, const struct pollfd *p)
{
        uint64_t now = now_monotonic_ms();
        for (size_t i = 0; i < ELEMENTSOF(l->exec); i++) {
                struct exec_slot *x = &l->exec[i];
                if (!x->active)
                        continue;
                if (p[i].revents && x->client >= 0) {
                        close(TAKE_FD(x->client));
                        kill_job(l, x);
                }
                if (x->deadline_ms && now >= x->deadline_ms && !x->end.timed_out) {
                        x->end.timed_out = 1;
                        kill_job(l, x);
                }
        }
}

/* The limits' tick: what the sandbox reached, every exec running now
 * carries; NAME.json lists it; a memory or cpu time limit stops it. */
static void limits_tick(struct live *l, const char *run_id, const struct pollfd *p)
{
        unsigned hit = live_limits_run(l->limits, p);
        for (size_t i = 0; hit && i < ELEMENTSOF(l->exec); i++)
                if (l->exec[i].active && !l->exec[i].kernel)
                        l->exec[i].end.limits_hit |= hit;
        if (l->ready && (hit & ~l->limits_written)) {
                l->limits_written |= hit;
                write_state(l, run_id, false);
        }
        if (live_limits_stopped(l->limits))
                l->why = live_limits_stopped(l->limits);
}

int live_serve(const struct run_config *cfg, const struct run_live *opts, const char *run_id,
               struct sandbox *sb, struct run_outcome *out, int *notify)
{
        struct live l = { .cfg = cfg, .opts = opts, .sb = sb, .stopper = -1, .kernels = live_kernels_new(),
                          .limits = live_limits_new(cfg, sb), .started_at_ms = now_realtime_ms() };
        uint64_t t0 = now_monotonic_ms();
        sigset_t set;
        sandbox_signal_set(&set);
        _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        bool written = false;

        if (sfd < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(l.exec); i++)
                l.exec[i].client = -1;
        touch_idle(&l);
        l.pub = live_publish_new(opts->ports, opts->n_ports, sb->sync_fd, sb->pid);
        while (!l.why) {
                enum { N_EXEC = SANDBOX_LIVE_JOBS_MAX };
                enum { P_LIMITS = N_EXEC + 4 + LIVE_PUBLISH_POLL + LIVE_KERNELS_POLLFDS };
                struct pollfd p[P_LIMITS + LIVE_LIMITS_POLL];
                for (size_t i = 0; i < N_EXEC; i++)
                        p[i] = (struct pollfd) { .fd = l.exec[i].active ? l.exec[i].client : -1, .events = POLLIN };
                p[N_EXEC] = (struct pollfd) { .fd = sb->pidfd, .events = POLLIN };
                p[N_EXEC + 1] = (struct pollfd) { .fd = sb->sync_fd, .events = POLLIN };
                p[N_EXEC + 2] = (struct pollfd) { .fd = sfd, .events = POLLIN };
                /* requests only once the sandbox is up */
                p[N_EXEC + 3] = (struct pollfd) { .fd = l.ready ? opts->listen_fd : -1, .events = POLLIN };
                live_publish_poll(l.pub, p + N_EXEC + 4, l.ready);
                live_kernels_poll(l.kernels, p + N_EXEC + 4 + LIVE_PUBLISH_POLL);
                live_limits_poll(l.limits, p + P_LIMITS);
                if (l.ready && !written) {
                        write_state(&l, run_id, false);
                        written = true;
                        run_detach_started(notify);
                }
                int t = timeout_for(&l), tp = live_publish_timeout(l.pub);
                int n = poll(p, ELEMENTSOF(p), t < 0 || (tp >= 0 && tp < t) ? tp : t);
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (p[N_EXEC + 1].revents & POLLIN) {
                        if (!from_init(&l, out))
                                break;
                        continue;       /* init's messages first: a job's end before its client's EOF */
                }
                if (p[N_EXEC].revents) {
                        l.why = "its init ended";
                        break;
                }
                if (p[N_EXEC + 2].revents) {
                        struct signalfd_siginfo si;
                        if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && si.ssi_signo != SIGCHLD &&
                            si.ssi_signo != SIGPIPE && si.ssi_signo != SIGWINCH)
                                l.why = "stopped by a signal";
                }
                /* before a request can reuse a closed client's fd number */
                live_kernels_events(l.kernels, &l, p + N_EXEC + 4 + LIVE_PUBLISH_POLL);
                if (p[N_EXEC + 3].revents)
                        control(&l, opts->listen_fd);
                check_execs(&l, p);
                limits_tick(&l, run_id, p + P_LIMITS);
                live_publish_run(l.pub, p + N_EXEC + 4);
                /* an open connection to a published port counts as use */
                if (live_publish_busy(l.pub))
                        touch_idle(&l);
                if (!l.n_active && l.idle_ms_at && now_monotonic_ms() >= l.idle_ms_at)
                        l.why = "stopped after its idle timeout";
        }
        /* Everything inside ends with init: SIGKILL to a pid namespace's
         * init kills every process in it. Reaped before the record. */
        (void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
        while (waitpid(sb->pid, NULL, __WALL) < 0 && errno == EINTR)
                ;
        /* not stopped by us: init's channel closed, or its pidfd said so */
        live_limits_reaped(l.limits, !l.why || streq(l.why, "its init ended"));
        for (size_t i = 0; i < ELEMENTSOF(l.exec); i++)
                if (l.exec[i].active) {
                        l.exec[i].end.stopped = 1;
                        exec_done(&l, &l.exec[i]);
                }
        l.kernels = live_kernels_free(l.kernels);
        write_state(&l, run_id, true);
        close(opts->listen_fd);
        int k = live_publish_finish(TAKE_PTR(l.pub), run_id);
        if (k < 0)
                log_warning("sandbox %s: the record of its published ports' connections is incomplete: %s",
                            opts->name, strerror(-k));
        out->wall_ms = now_monotonic_ms() - t0;
        if (out->status != RUN_SETUP_ERROR) {
                /* stop and the idle timeout are how a live sandbox ends;
                 * a signal (hutch kill) cancels it */
                bool signalled = l.why && strstr(l.why, "signal");
                out->status = signalled ? RUN_CANCELLED : RUN_SUCCESS;
                out->exit_code = signalled ? EXIT_CANCELLED_TERM : EXIT_OK;
                out->job_exit_code = signalled ? -1 : 0;
                snprintf(out->message, sizeof(out->message), "sandbox %s %s", opts->name, l.why ? l.why : "ended");
        }
        live_limits_outcome(l.limits, opts->name, out);
        l.limits = live_limits_free(l.limits);
        /* l.stopper stays open: `sandbox stop` returns when we are gone */
        return 0;
}
