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
 *    relays them, and with --stdin the write end of the job's stdin,
 *    into which it copies the caller's input (else it is closed here:
 *    the job reads EOF). So no exec's stdio leads out of the sandbox,
 *    and a job holds only its own exec's pipes. Nor can another exec
 *    open them: processes of one sandbox all run as its one uid in one
 *    pid namespace, so /proc/PID/fd of another exec's job would be
 *    theirs to open (the pipes belong to the sandbox's uid when hutch is
 *    not root), but each live job gets a Landlock domain of its own
 *    (job.c, landlock_own_domain()), and Landlock refuses any ptrace
 *    access, /proc/PID/fd, mem and environ included, to a process
 *    outside the caller's domain. Listing and signalling remain, as in
 *    one container.
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
 *  - No client holds up the loop: a connection's request is read only
 *    once poll() says it is there (MSG_DONTWAIT), a silent one is
 *    dropped after LIVE_REQUEST_MS, and replies are sent MSG_DONTWAIT
 *    (a client's queue never holds more than two of them). So one
 *    same-user caller cannot delay another exec's deadline. What the
 *    loop does wait for is the store: an exec's row, and its end that
 *    the client sends (FINISH) after the job's END, each under a 1 s
 *    bound on another writer's lock, the end's disk sync included (it
 *    must be durable before the client hears DONE). A client that does
 *    not send its FINISH holds only its own slot, LIVE_FINISH_MS at
 *    most.
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
 * A loop that cannot go on (signalfd() or poll() failing: a low
 * RLIMIT_NOFILE, for one) ends the sandbox the same way, its execs and
 * connections recorded, and the run is recorded as one whose supervisor
 * failed. Nothing of the sandbox survives its stop, its idle timeout, or
 * the supervisor (init's sync channel hits EOF and init exits; the
 * sandbox child is PDEATHSIG'd). */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/live-conns.h"
#include "run/live-internal.h"
#include "run/live-serve.h"
#include "run/live-limits.h"
#include "run/live-publish.h"
#include "run/run-internal.h"
#include "sandbox/sandbox.h"
#include "sandbox/sync.h"
#include "supervise/supervise.h"


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

static void exec_free(struct live *l, struct exec_slot *x, bool unheard);
static void write_state(const struct live *l, const char *run_id, bool remove);

/* The exec ended (or was given up): tell its client, if still there;
 * if not, record its end in its stead. A client that asked to send its
 * FINISH keeps the slot until it did (client_says()). */
static void exec_done(struct live *l, struct exec_slot *x)
{
        if (x->kernel) {
                struct live_kernel *k = x->kernel;
                int status = x->end.status, error = x->end.stopped ? ESHUTDOWN : x->end.error;
                *x = (struct exec_slot) { .client = -1 };
                live_kernel_job_ended(k, l, status, error);
                return;
        }
        bool unheard = x->client_lost;
        x->end.op = LIVE_OP_END;
        x->end.version = LIVE_WIRE_VERSION;
        memcpy(x->end.run_id, x->run_id, sizeof(x->end.run_id));
        x->end.wall_ms = now_monotonic_ms() - x->started_ms;
        live_limits_exec_end(l->limits, &x->end);
        /* a limit the job's end found (the scratch full at its last
         * write, between two ticks) is listed at once, as a tick's is */
        if (l->ready && (x->end.limits_hit & ~l->limits_written)) {
                l->limits_written |= x->end.limits_hit;
                write_state(l, l->run_id, false);
        }
        if (x->client >= 0) {
                /* its queue holds at most FDS before this: never full */
                if (send(x->client, &x->end, sizeof(x->end), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                        unheard = true;
                else if (x->finish && x->run_id[0] && l->store && !x->end.stopped) {
                        /* its FINISH comes next (client_says()) */
                        x->finishing = true;
                        x->pid = 0;
                        x->deadline_ms = now_monotonic_ms() + LIVE_FINISH_MS;
                        return;
                }
                close(x->client);
        }
        exec_free(l, x, unheard);
}

/* The exec's slot is free again; unheard: its client never heard of
 * the end, which is recorded here in its stead. */
static void exec_free(struct live *l, struct exec_slot *x, bool unheard)
{
        if (unheard && l->store && x->run_id[0] &&
            live_record_lost(l->store, x->run_id, &x->end, x->client_lost) < 0)
                log_warning("sandbox %s: cannot record the end of exec %s: %s", l->opts->name, x->run_id,
                            store_error(l->store));
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

/* FDS: the exec's run id, the job's stdout and stderr read ends, and
 * with --stdin the write end of its stdin (in < 0: none). */
static void send_fds(int fd, const char *run_id, int out, int err, int in)
{
        struct live_reply f = { .op = LIVE_OP_FDS, .version = LIVE_WIRE_VERSION };
        snprintf(f.run_id, sizeof(f.run_id), "%s", run_id);
        int nfds = in >= 0 ? 3 : 2;
        char cbuf[CMSG_SPACE(3 * sizeof(int))] = { 0 };
        struct iovec iov = { .iov_base = &f, .iov_len = sizeof(f) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), (int[]) { out, err, in }, nfds * sizeof(int));
        (void)sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The sandbox's own run, read once: what an exec's row inherits. */
static const struct run_record *template(struct live *l)
{
        if (!l->tmpl_read) {
                l->tmpl_read = true;
                if (store_run_get(l->store, l->run_id, &l->tmpl, NULL) < 0)
                        l->tmpl = NULL;
        }
        return l->tmpl;
}

int live_record_call(struct live *l, const char *lang, const char *code, size_t len, const char *cwd, pid_t client,
                     char ret_id[32])
{
        if (!l->store)
                return -ENOTCONN;
        int r = live_record_kernel(l->store, l->opts->name, template(l), lang, code, len, cwd, client, ret_id);
        if (r < 0)
                log_warning("sandbox %s: cannot record a kernel call: %s", l->opts->name, store_error(l->store));
        return r;
}

int live_finish_call(struct live *l, const char *run_id, const char *buf, size_t n)
{
        if (!l->store)
                return -ENOTCONN;
        return live_record_finish(l->store, run_id, buf, n);
}

void live_lost_call(struct live *l, const char *run_id, uint64_t wall_ms, const char *how)
{
        if (l->store && live_record_call_lost(l->store, run_id, wall_ms, how) < 0)
                log_warning("sandbox %s: cannot record the end of kernel call %s: %s", l->opts->name, run_id,
                            store_error(l->store));
}

void live_record_settle(struct live *l)
{
        if (l->store)
                store_checkpoint_if_due(l->store);
}

/* The exec's row, before the job is asked for: without it, no job. */
static int record(struct live *l, struct exec_slot *x, const char *cwd, const char *args, size_t len, pid_t client)
{
        char **argv = NULL;
        size_t na = 0;
        for (size_t i = 0; i < len; i += strlen(args + i) + 1)
                argv = strv_push(argv, &na, args + i);
        template(l);
        int r = argv ? live_record_exec(l->store, l->opts->name, l->tmpl, argv, cwd, client, x->run_id) : -EINVAL;
        if (r < 0)
                log_warning("sandbox %s: cannot record an exec: %s", l->opts->name, store_error(l->store));
        strv_free(argv);
        return r;
}

/* An exec request on connection fd (ours from here on) from client. */
void live_exec_start(struct live *l, int fd, pid_t client, const char *buf, size_t n)
{
        struct live_req req;
        struct live_reply busy = { .op = LIVE_OP_BUSY, .version = LIVE_WIRE_VERSION };
        struct exec_slot *x = NULL;
        int job_in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };

        for (size_t i = 0; i < ELEMENTSOF(l->exec) && !x; i++)
                if (!l->exec[i].active)
                        x = &l->exec[i];
        memcpy(&req, buf, MIN(n, sizeof(req)));
        /* live_req, the cwd, at least one argument (maybe "") */
        size_t cwd_len = n > sizeof(req) ? strnlen(buf + sizeof(req), n - sizeof(req)) : 0;
        if (n <= sizeof(req) || req.version != LIVE_WIRE_VERSION || buf[n - 1] != '\0' ||
            sizeof(req) + cwd_len + 1 >= n) {
                close(fd);      /* another hutch's client: it hears EOF */
                return;
        }
        const char *cwd = buf + sizeof(req), *args = cwd + cwd_len + 1;
        size_t args_len = n - (size_t)(args - buf);
        if (!x) {
                (void)send(fd, &busy, sizeof(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
                close(fd);
                return;
        }
        *x = (struct exec_slot) { .active = true, .client = fd, .started_ms = now_monotonic_ms(),
                                  .finish = (req.flags & LIVE_EXEC_FINISH) != 0 };
        l->n_active++;
        l->idle_ms_at = 0;
        uint64_t t = req.timeout_ms ? req.timeout_ms : l->cfg->timeout_ms;
        x->deadline_ms = t ? x->started_ms + t : 0;
        /* fresh pipes for this exec alone; the job's stdin is at EOF
         * unless the client feeds it (--stdin), through the write end
         * only it then holds */
        int k = record(l, x, cwd, args, args_len, client);
        if (k < 0) {
                x->end.error = -k;
                snprintf(x->end.step, sizeof(x->end.step), "record the exec");
        } else if (pipe2(job_in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                x->end.error = errno;
                snprintf(x->end.step, sizeof(x->end.step), "pipe");
        } else {
                if (!(req.flags & LIVE_EXEC_STDIN))
                        close(TAKE_FD(job_in[1]));
                int job_fds[3] = { job_in[0], out[1], err[1] };
                k = send_to_init(l, SANDBOX_MSG_EXEC, args, args_len, job_fds, 3);
                if (k < 0) {
                        x->end.error = -k;
                        snprintf(x->end.step, sizeof(x->end.step), "hand the job to init");
                } else {
                        x->seq = ++l->seq;
                        send_fds(fd, x->run_id, out[0], err[0], job_in[1]);
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
                if (msg.kind == SYNC_READY) {
                        l->ready = true;
                        live_publish_ready(l->pub);
                }
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
                        else if (x->client < 0 || x->end.cancelled || (x->end.timed_out && x->deadline_ms))
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
        int dirfd = l->dirfd;
        if (dirfd < 0)
                return;
        _cleanup_free_ char *file = xasprintf("%s.json", l->opts->name), *tmp = xasprintf(".%s.json.tmp", l->opts->name);
        if (remove) {
                /* while our socket still listens (the caller closes it
                 * after): a start of the same name meanwhile is refused
                 * as running already, so what is removed here is ours;
                 * the socket only if it is the inode we bound */
                (void)unlinkat(dirfd, file, 0);
                live_unlisten_at(dirfd, l->opts->name, l->opts->listen_ino);
                return;
        }
        _cleanup_free_ char *ports = live_publish_state_json(l->opts->ports, l->opts->n_ports);
        _cleanup_free_ char *args = live_fork_args_json(l->opts->args);
        _cleanup_free_ char *limits = live_limits_state_json(l->limits);
        _cleanup_free_ char *j = xasprintf("{\"name\":\"%s\",\"id\":\"%s\",\"supervisor_pid\":%d,\"init_pid\":%d,"
                                           "\"started_at_ms\":%llu,\"idle_timeout_ms\":%llu%s%s%s}\n",
                                           l->opts->name, run_id, (int)getpid(), (int)l->sb->pid,
                                           (unsigned long long)l->started_at_ms,
                                           (unsigned long long)l->opts->idle_ms, ports, args, limits);
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
                if (x->active && x->deadline_ms && (!x->end.timed_out || x->finishing) &&
                    (!until || x->deadline_ms < until))
                        until = x->deadline_ms;
        }
        for (size_t i = 0; i < ELEMENTSOF(l->pend); i++) {
                uint64_t t = l->pend[i].since_ms + LIVE_REQUEST_MS;
                if (l->pend[i].fd >= 0 && (!until || t < until))
                        until = t;
        }
        uint64_t k = live_kernels_deadline(l->kernels);
        if (k && (!until || k < until))
                until = k;
        k = live_fork_deadline(&l->fork);
        if (k && (!until || k < until))
                until = k;
        if (!until)
                return -1;
        return until <= now ? 0 : (int)MIN(until - now, (uint64_t)INT32_MAX);
}

/* The run's end from its client (FINISH), after its END: written and
 * synced, then DONE. The slot is free afterwards. A client that hangs
 * up, or sends what is not a FINISH, has the END recorded in its stead
 * (without the output, which it had). */
static void finish(struct live *l, struct exec_slot *x)
{
        static char buf[sizeof(struct live_fin) + LIVE_FIN_DATA_MAX + 1];
        ssize_t n = recv(x->client, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        bool unheard = true;
        if (n > 0 && buf[0] == LIVE_OP_FINISH) {
                struct live_reply done = { .op = LIVE_OP_DONE, .version = LIVE_WIRE_VERSION };
                int r = live_record_finish(l->store, x->run_id, buf, (size_t)n);
                if (r < 0) {
                        log_debug("sandbox %s: cannot record the end of exec %s: %s", l->opts->name, x->run_id,
                                  r == -EBADMSG ? "malformed" : store_error(l->store));
                        done.error = -r;
                }
                /* on an error the client writes the end itself: its
                 * connection stays open until it did, so our own
                 * record of it (on its hang-up) finds the row done */
                if (send(x->client, &done, sizeof(done), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(done) &&
                    r < 0) {
                        x->deadline_ms = now_monotonic_ms() + STORE_BUSY_TIMEOUT_MS + LIVE_FINISH_MS;
                        return;
                }
                unheard = r < 0;
        }
        close(TAKE_FD(x->client));
        exec_free(l, x, unheard);
        /* the checkpoint the finished runs made due, the client told */
        if (!unheard)
                store_checkpoint_if_due(l->store);
}

/* An exec's client, after its request: a cancel (hutch exec got
 * SIGTERM, SIGINT or SIGHUP: `hutch kill` of its run), or its end
 * (killed). Either way the job's group is killed; a client that is
 * gone has its run recorded here (exec_done()). */
static void client_says(struct live *l, struct exec_slot *x)
{
        struct live_req req;
        if (x->finishing) {
                finish(l, x);
                return;
        }
        ssize_t n = recv(x->client, &req, sizeof(req), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n == (ssize_t)sizeof(req) && req.op == LIVE_OP_CANCEL) {
                if (!x->end.cancelled && !x->end.timed_out)
                        x->end.cancelled = req.flags > 0 && req.flags < 65 ? (int32_t)req.flags : SIGTERM;
        } else {
                close(TAKE_FD(x->client));
                x->client_lost = true;
        }
        kill_job(l, x);
}

/* Deadlines, and clients gone: their jobs end. */
static void check_execs(struct live *l, const struct pollfd *p)
{
        uint64_t now = now_monotonic_ms();
        for (size_t i = 0; i < ELEMENTSOF(l->exec); i++) {
                struct exec_slot *x = &l->exec[i];
                if (!x->active)
                        continue;
                if (p[i].revents && x->client >= 0)
                        client_says(l, x);
                if (x->active && x->finishing && now >= x->deadline_ms) {
                        /* recorded without its output; the client,
                         * hearing no DONE, writes the end itself */
                        close(TAKE_FD(x->client));
                        exec_free(l, x, true);
                }
                if (!x->active || x->finishing)
                        continue;
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

/* live_serve()'s poll set: the execs' clients, init's pidfd and
 * channel, the signalfd, the control socket, the published ports, the
 * kernels, the pending requests, a fork, the limits. */
enum { N_EXEC = SANDBOX_LIVE_JOBS_MAX, N_PEND = LIVE_PENDING_MAX,
       AT_PEND = N_EXEC + 4 + LIVE_PUBLISH_POLL + LIVE_KERNELS_POLLFDS,
       AT_FORK = AT_PEND + N_PEND, P_LIMITS = AT_FORK + 1, P_CONNS = P_LIMITS + LIVE_LIMITS_POLL };
/* the poll set, and room beside it (live_nofile_raise()) */
_Static_assert(P_CONNS + LIVE_CONNS_POLL + 256 <= LIVE_NOFILE_MIN, "LIVE_NOFILE_MIN is too small");

static void fill_poll(struct live *l, int sfd, struct pollfd *p)
{
        for (size_t i = 0; i < N_EXEC; i++)
                p[i] = (struct pollfd) { .fd = l->exec[i].active ? l->exec[i].client : -1, .events = POLLIN };
        for (size_t i = 0; i < N_PEND; i++)
                p[AT_PEND + i] = (struct pollfd) { .fd = l->pend[i].fd, .events = POLLIN };
        p[N_EXEC] = (struct pollfd) { .fd = l->sb->pidfd, .events = POLLIN };
        p[N_EXEC + 1] = (struct pollfd) { .fd = l->sb->sync_fd, .events = POLLIN };
        p[N_EXEC + 2] = (struct pollfd) { .fd = sfd, .events = POLLIN };
        /* requests only once the sandbox is up */
        p[N_EXEC + 3] = (struct pollfd) { .fd = l->ready ? l->opts->listen_fd : -1, .events = POLLIN };
        live_publish_poll(l->pub, p + N_EXEC + 4, l->ready);
        live_kernels_poll(l->kernels, p + N_EXEC + 4 + LIVE_PUBLISH_POLL);
        p[AT_FORK] = (struct pollfd) { .fd = live_fork_pollfd(&l->fork), .events = POLLIN };
        live_limits_poll(l->limits, p + P_LIMITS);
        live_conns_poll(l->conns, p + P_CONNS);
}

/* Everything inside ends with init: SIGKILL to a pid namespace's
 * init kills every process in it. Reaped before the record. */
static void end_sandbox(struct live *l)
{
        live_fork_end(&l->fork);
        (void)syscall(SYS_pidfd_send_signal, l->sb->pidfd, SIGKILL, NULL, 0);
        while (waitpid(l->sb->pid, NULL, __WALL) < 0 && errno == EINTR)
                ;
        /* not stopped by us: init's channel closed, or its pidfd said so */
        live_limits_reaped(l->limits, !l->why || streq(l->why, "its init ended"));
}

/* The execs still open once init is gone are recorded, the pending
 * requests closed. */
static void settle_execs(struct live *l)
{
        for (size_t i = 0; i < ELEMENTSOF(l->exec); i++) {
                struct exec_slot *x = &l->exec[i];
                if (x->active && x->finishing)
                        finish(l, x);   /* a FINISH already sent is recorded */
                if (x->active && x->finishing) {
                        /* not yet: recorded without its output; the
                         * client, hearing no DONE, writes the end itself */
                        close(TAKE_FD(x->client));
                        exec_free(l, x, true);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(l->exec); i++)
                if (l->exec[i].active) {
                        l->exec[i].end.stopped = 1;
                        /* its end never came: how the job ended is not
                         * known (a kernel's slot says so by ESHUTDOWN) */
                        if (!l->exec[i].kernel)
                                l->exec[i].end.status = LIVE_STATUS_UNKNOWN;
                        exec_done(l, &l->exec[i]);
                }
        for (size_t i = 0; i < ELEMENTSOF(l->pend); i++)
                if (l->pend[i].fd >= 0)
                        close(l->pend[i].fd);
}

/* stop and the idle timeout are how a live sandbox ends; a signal
 * (hutch kill) cancels it */
static void say_ended(const struct live *l, struct run_outcome *out)
{
        bool signalled = l->why && strstr(l->why, "signal");
        out->status = signalled ? RUN_CANCELLED : RUN_SUCCESS;
        out->exit_code = signalled ? EXIT_CANCELLED_TERM : EXIT_OK;
        out->job_exit_code = signalled ? -1 : 0;
        snprintf(out->message, sizeof(out->message), "sandbox %s %s", l->opts->name, l->why ? l->why : "ended");
}

/* The loop cannot go on (signalfd() or poll() failed, error): the
 * sandbox ends as at a stop, every exec and connection recorded, and
 * live_serve() returns -error, which the caller records as supervise()'s
 * (run.c: "supervisor failed: ..."). */
static void supervisor_failed(struct live *l, const char *call, int error, int *ret_error)
{
        log_debug("sandbox %s: %s: %s; stopping it", l->opts->name, call, strerror(error));
        *ret_error = -error;
        l->why = "stopped: its supervisor failed";
}

int live_serve(const struct run_config *cfg, const struct run_live *opts, struct store *store, const char *run_id,
               struct sandbox *sb, struct run_outcome *out, int *notify, struct egress *egress)
{
        struct live l = { .cfg = cfg, .opts = opts, .store = store, .run_id = run_id, .sb = sb, .stopper = -1,
                          .kernels = live_kernels_new(), .fork = { .fd = -1, .freeze_fd = -1 },
                          .limits = live_limits_new(cfg, sb), .started_at_ms = now_realtime_ms(),
                          .dirfd = live_dir_open() };
        uint64_t t0 = now_monotonic_ms();
        sigset_t set;
        bool written = false;
        int failed = 0;         /* -errno: the loop could not go on */

        for (size_t i = 0; i < ELEMENTSOF(l.exec); i++)
                l.exec[i].client = -1;
        for (size_t i = 0; i < ELEMENTSOF(l.pend); i++)
                l.pend[i].fd = -1;
        touch_idle(&l);
        l.pub = live_publish_new(opts->ports, opts->n_ports, sb->sync_fd, sb->pid);
        l.conns = live_conns_new(egress);
        sandbox_signal_set(&set);
        /* every way out of the loop below, a failure too, goes through
         * the teardown after it: init reaped before the workspace is
         * taken, every exec and connection recorded, NAME.json gone */
        _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (sfd < 0)
                supervisor_failed(&l, "signalfd", errno, &failed);
        while (!l.why) {
                struct pollfd p[P_CONNS + LIVE_CONNS_POLL];
                fill_poll(&l, sfd, p);
                if (l.ready && !written) {
                        write_state(&l, run_id, false);
                        written = true;
                        run_detach_started(notify);
                }
                int t = timeout_for(&l), tp = live_publish_timeout(l.pub), tc = live_conns_timeout(l.conns);
                if (tc >= 0 && (tp < 0 || tc < tp))
                        tp = tc;
                int n = poll(p, ELEMENTSOF(p), t < 0 || (tp >= 0 && tp < t) ? tp : t);
                if (n < 0 && errno != EINTR) {
                        supervisor_failed(&l, "poll", errno, &failed);
                        break;
                }
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
                /* a fork's hang-up before requests it held off */
                live_fork_events(&l.fork, p[AT_FORK].revents);
                live_check_pending(&l, p + AT_PEND);
                if (p[N_EXEC + 3].revents)
                        live_control(&l, opts->listen_fd);
                check_execs(&l, p);
                limits_tick(&l, run_id, p + P_LIMITS);
                live_publish_run(l.pub, p + N_EXEC + 4);
                live_conns_run(l.conns, p + P_CONNS, l.pub, store, run_id);
                /* an open connection to a published port counts as use */
                if (live_publish_busy(l.pub))
                        touch_idle(&l);
                if (!l.n_active && l.idle_ms_at && now_monotonic_ms() >= l.idle_ms_at)
                        l.why = "stopped after its idle timeout";
        }
        end_sandbox(&l);
        settle_execs(&l);
        run_record_free(l.tmpl);
        l.kernels = live_kernels_free(l.kernels);
        /* gone from the dir first, then no new connection: a start of
         * the same name in between is told this one runs, never given
         * a socket this teardown then removes */
        write_state(&l, run_id, true);
        close(opts->listen_fd);
        if (l.dirfd >= 0)
                close(l.dirfd);
        l.conns = live_conns_free(l.conns, l.pub, store, run_id);
        int k = live_publish_finish(TAKE_PTR(l.pub), run_id);
        if (k < 0)
                log_warning("sandbox %s: the record of its published ports' connections is incomplete: %s",
                            opts->name, strerror(-k));
        out->wall_ms = now_monotonic_ms() - t0;
        if (failed)
                out->status = RUN_SETUP_ERROR;  /* the caller says why */
        else if (out->status != RUN_SETUP_ERROR)
                say_ended(&l, out);
        live_limits_outcome(l.limits, opts->name, out);
        l.limits = live_limits_free(l.limits);
        /* l.stopper stays open: `sandbox stop` returns when we are gone */
        return failed;
}
