/* run/live-exec.c - the clients of a live sandbox's control socket:
 * `hutch exec`, `hutch sandbox ls`, `hutch sandbox stop` (run/live.h).
 *
 * An exec is recorded like any run: its row (labelled sandbox=NAME)
 * before the job starts, its output captured here as it is read, its
 * end in one final update, durable before we return. The supervisor
 * writes the row (live-record.c) and, from what we send it after the
 * job's END (FINISH: the outcome and the captured output), the final
 * update, synced before its DONE; so a plain exec never opens the
 * store. We write the final update ourselves (run_finish_record()) with
 * --json or --events, when the exec outlives a heartbeat, when the
 * output does not fit a FINISH, or when the supervisor could not write
 * it. The job's output arrives on the read ends of pipes the supervisor
 * made for this exec alone (live.c); nothing of ours goes into the
 * sandbox. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/live-internal.h"
#include "run/live-limits.h"
#include "run/run-internal.h"
#include "run/run.h"
#include "sandbox/sync.h"
#include "supervise/capture.h"
#include "supervise/events.h"
#include "supervise/hostio.h"
#include "supervise/supervise.h"

static int connect_named(const char *verb, const char *name, int *ret_dirfd)
{
        if (!live_name_valid(name)) {
                log_error("%s: \"%s\": not a sandbox name (1-64 of A-Z a-z 0-9 . _ -)", verb, name);
                return -EINVAL;
        }
        int dirfd = live_dir_open();
        if (dirfd < 0)
                return dirfd;
        int fd = live_connect(dirfd, name);
        if (ret_dirfd)
                *ret_dirfd = dirfd;
        else
                close(dirfd);
        if (fd == -ENOENT || fd == -ECONNREFUSED) {
                log_error("%s: no running sandbox %s (hutch sandbox ls)", verb, name);
                return fd;
        }
        if (fd < 0)
                return log_error_errno(fd, "%s: sandbox %s: %m", verb, name);
        return fd;
}

/* as `hutch run`'s */
#define EXEC_HEARTBEAT_MS 5000

/* One exec's plumbing on our side: the control connection, the job's
 * output pipes (read ends), its stdin pipe (write end, --stdin and
 * --stdin-file) and what feeds it. */
struct exec_io {
        int sock;
        int sigfd;              /* SIGTERM, SIGINT, SIGHUP: cancel the exec */
        int out[2];             /* stdout, stderr; -1 at EOF */
        int job_in;             /* -1: none, or done */
        int src;                /* our stdin or the file; -1 at its end */
        bool own_src;           /* src is the file, ours to close */
        size_t in_off, in_len;
        bool gone[2];           /* our stdout / stderr's reader went away */
        struct run_ctx *ctx;    /* captures, --events, the store */
        struct run_record *rec; /* the exec's row, read back once the store is open */
        char run_id[sizeof(((struct live_reply *)0)->run_id) + 1]; /* its id, once the supervisor wrote it */
        bool json, events;
        bool fast;              /* the supervisor writes the end (FINISH): no store here
                                 * unless the exec outlives a heartbeat or FINISH fails */
        bool handed;            /* the job was asked of init (FDS came) */
        char inbuf[65536];
};

static void io_close(int *fd)
{
        if (*fd >= 0)
                close(TAKE_FD(*fd));
}

/* With --events, how much of the job's output the stream has room for
 * now (each byte may take up to 6 in JSON, and the line's framing):
 * as `hutch run --events`, nothing is read that could not be queued. */
static size_t events_room(const struct exec_io *x)
{
        struct hostio *h = x->ctx->ev ? events_hostio(x->ctx->ev) : NULL;
        return h && !hostio_gone(h) ? hostio_room(h) / 8 : SIZE_MAX;
}

/* Read what is there from stream i into its capture and pass it on (or
 * make events of it); closes it at EOF. A reader of ours that went
 * away (EPIPE) gets no more; the capture, and so the record, still
 * gets everything. */
static void pump(struct exec_io *x, int i)
{
        char buf[65536];
        size_t want = MIN(sizeof(buf), events_room(x));
        if (want < 64)
                return;
        ssize_t n = read(x->out[i], buf, want);
        if (n > 0) {
                run_on_output(x->ctx, i ? STREAM_STDERR : STREAM_STDOUT, buf, (size_t)n);
                int to = i ? STDERR_FILENO : STDOUT_FILENO;
                if (!x->json && !x->ctx->ev && !x->gone[i] && write_all(to, buf, (size_t)n) < 0)
                        x->gone[i] = true;
                return;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
                io_close(&x->out[i]);
}

/* Feed the job's stdin: read from src when the buffer is empty, write
 * what the pipe takes when it is not. At src's end the pipe is closed
 * (the job reads EOF); a job that closed its stdin (EPIPE) gets no
 * more. */
static void feed(struct exec_io *x, bool readable, bool writable)
{
        if (readable && x->in_len == 0 && x->src >= 0) {
                ssize_t n = read(x->src, x->inbuf, sizeof(x->inbuf));
                if (n > 0) {
                        x->in_off = 0;
                        x->in_len = (size_t)n;
                } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                        if (x->own_src)
                                close(x->src);
                        x->src = -1;
                }
        }
        if (writable && x->in_len > 0 && x->job_in >= 0) {
                ssize_t n = write(x->job_in, x->inbuf + x->in_off, x->in_len);
                if (n > 0) {
                        x->in_off += (size_t)n;
                        x->in_len -= (size_t)n;
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        x->in_len = 0;
                        io_close(&x->job_in);
                }
        }
        if (x->job_in >= 0 && x->src < 0 && x->in_len == 0)
                io_close(&x->job_in);
}

void live_outcome(const struct live_reply *e, struct run_outcome *o)
{
        o->wall_ms = e->wall_ms;
        o->cpu_user_ms = (uint64_t)MAX(e->utime_us, 0) / 1000;
        o->cpu_sys_ms = (uint64_t)MAX(e->stime_us, 0) / 1000;
        o->job_exit_code = -1;
        /* the job's own exit code, whatever the status says ended it: a
         * job that exited by itself before its cancel or deadline took
         * (the status stays why it was stopped, exit_code what hutch
         * exits with) */
        if (!e->error && e->status != LIVE_STATUS_UNKNOWN && WIFEXITED(e->status))
                o->job_exit_code = WEXITSTATUS(e->status);
        if (e->cancelled) {
                o->status = RUN_CANCELLED;
                o->exit_code = e->cancelled == SIGINT ? EXIT_CANCELLED_INT : EXIT_CANCELLED_TERM;
                snprintf(o->message, sizeof(o->message), "cancelled (%s): the job's process group was killed; "
                         "the sandbox runs on", strsignal(e->cancelled));
        } else if (e->stopped) {
                o->status = RUN_CANCELLED;
                o->exit_code = EXIT_CANCELLED_TERM;
                snprintf(o->message, sizeof(o->message), "the sandbox stopped while the job ran");
        } else if (e->timed_out) {
                o->status = RUN_TIMEOUT;
                o->exit_code = EXIT_TIMEOUT;
                snprintf(o->message, sizeof(o->message), "timed out: its process group was killed; the sandbox runs on");
        } else if (e->exec_failed) {
                bool nf = e->error == ENOENT || e->error == ENOTDIR;
                o->status = nf ? RUN_NOT_FOUND : RUN_NOT_EXECUTABLE;
                o->exit_code = nf ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE;
                o->error = e->error;
                snprintf(o->message, sizeof(o->message), "exec: %s", strerror(e->error));
        } else if (e->error == EBUSY && streq(e->step, "record the exec")) {
                /* another hutch held the store's write lock past the
                 * supervisor's wait: nothing ran, nothing is recorded */
                log_set_error_code("store_busy");
                o->status = RUN_SETUP_ERROR;
                o->exit_code = EXIT_BUSY;
                o->error = e->error;
                snprintf(o->message, sizeof(o->message), "the run store is busy (another hutch is writing "
                         "to it); try again");
        } else if (e->error) {
                o->status = RUN_SETUP_ERROR;
                o->exit_code = EXIT_SETUP;
                o->error = e->error;
                snprintf(o->message, sizeof(o->message), "setup: %s: %s", e->step, strerror(e->error));
        } else if (WIFEXITED(e->status)) {
                o->job_exit_code = WEXITSTATUS(e->status);
                o->exit_code = o->job_exit_code;
                o->status = o->exit_code ? RUN_FAILED : RUN_SUCCESS;
        } else {
                o->signal = WIFSIGNALED(e->status) ? WTERMSIG(e->status) : SIGKILL;
                o->status = RUN_SIGNALED;
                o->exit_code = EXIT_SIGNAL_BASE + o->signal;
                snprintf(o->message, sizeof(o->message), "killed by signal %d", o->signal);
        }
        live_limits_exec_outcome(e, o);
}

/* The FDS or END message on the connection: *m, the fds it carried
 * taken (FDS: stdout, stderr and the stdin write end). -EPIPE when the
 * supervisor is gone. */
static int receive(struct exec_io *x, struct live_reply *m)
{
        char cbuf[CMSG_SPACE(3 * sizeof(int))];
        struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        *m = (struct live_reply) { 0 };
        ssize_t n = recvmsg(x->sock, &mh, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return -EPIPE;
        if (n != (ssize_t)sizeof(*m) || m->version != LIVE_WIRE_VERSION)
                m->op = 0;      /* taken apart below, fds closed */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                int f;
                                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (m->op == LIVE_OP_FDS && i < 2 && x->out[i] < 0)
                                        x->out[i] = f;
                                else if (m->op == LIVE_OP_FDS && i == 2 && x->job_in < 0 && x->src >= 0) {
                                        x->job_in = f;
                                        (void)fcntl(f, F_SETFL, O_NONBLOCK);
                                } else
                                        close(f);
                        }
        return m->op ? 0 : -EPROTO;
}

/* The job has ended: what it wrote is in the pipes (a background
 * process it left may hold them open, so read only what is there). */
static void drain(struct exec_io *x)
{
        for (int i = 0; i < 2; i++) {
                if (x->out[i] < 0)
                        continue;
                (void)fcntl(x->out[i], F_SETFL, O_NONBLOCK);
                while (x->out[i] >= 0) {
                        uint64_t before = capture_total_bytes(i ? x->ctx->err : x->ctx->out);
                        if (x->ctx->ev && events_room(x) < 64)
                                hostio_grow(events_hostio(x->ctx->ev), 1u << 20);
                        pump(x, i);
                        if (x->out[i] >= 0 && capture_total_bytes(i ? x->ctx->err : x->ctx->out) == before)
                                break;
                }
                io_close(&x->out[i]);
        }
}

/* We got SIGTERM (`hutch kill` of the exec's run), SIGINT or SIGHUP:
 * ask the supervisor to kill the job's group. Its END follows, and the
 * run is recorded cancelled with what the job wrote until then. */
static void cancel(struct exec_io *x)
{
        struct signalfd_siginfo si;
        if (read(x->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
                return;
        struct live_req req = { .op = LIVE_OP_CANCEL, .version = LIVE_WIRE_VERSION, .flags = si.ssi_signo };
        (void)send(x->sock, &req, sizeof(req), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The request: live_req, our cwd (the exec's record says where it was
 * asked for), argv. 0 or -errno. */
static int send_request(struct exec_io *x, const struct live_req *req, const char *cwd, char **argv)
{
        size_t len = sizeof(*req) + strlen(cwd) + 1, args = 0;
        for (char **a = argv; *a; a++)
                args += strlen(*a) + 1;
        if (args > LIVE_ARGV_MAX)
                return -E2BIG;
        len += args;
        _cleanup_free_ char *buf = xmalloc(len);
        memcpy(buf, req, sizeof(*req));
        size_t at = sizeof(*req);
        memcpy(buf + at, cwd, strlen(cwd) + 1);
        at += strlen(cwd) + 1;
        for (char **a = argv; *a; a++) {
                memcpy(buf + at, *a, strlen(*a) + 1);
                at += strlen(*a) + 1;
        }
        return send(x->sock, buf, len, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* The supervisor wrote the exec's row (its id came with FDS, or with an
 * END that came instead): read it back for the final update, and start
 * the events. -errno when it cannot be read: the supervisor then
 * completes it (we go away). */
static int attach_run(struct exec_io *x, const char *id)
{
        struct run_ctx *ctx = x->ctx;
        if (ctx->rec || !id[0])
                return 0;
        if (!x->run_id[0]) {
                snprintf(x->run_id, sizeof(x->run_id), "%.*s", (int)sizeof(x->run_id) - 1, id);
                log_info("run %s", x->run_id);
        }
        if (!ctx->store)
                return 0;       /* fast: read back only if the store is opened */
        int r = store_run_get(ctx->store, x->run_id, &x->rec, NULL);
        if (r < 0)
                return r;
        ctx->rec = x->rec;
        if (x->events) {
                ctx->ev = events_new(STDOUT_FILENO, NULL);
                json_t *limits = x->rec->limits_json ? json_loads(x->rec->limits_json, 0, NULL) : NULL,
                       *labels = store_labels_json(ctx->store, x->rec->id);
                events_started(ctx->ev, x->rec->id, getpid(), limits, labels);
                json_decref(limits);
                json_decref(labels);
        }
        /* while the job runs: compile the final update, sync the store's
         * marker, do a due checkpoint (as `hutch run` does) */
        run_on_job_started(ctx);
        return 0;
}

/* Open the store (ctx->store, with checkpoints deferred: a due one runs
 * while the job does) and read back the exec's row if the supervisor
 * wrote it already. 0, or -errno after saying why. */
static int open_store(struct exec_io *x)
{
        _cleanup_free_ char *db = NULL, *error = NULL;
        struct store *s = NULL;
        if (store_default_path(&db) < 0 || store_open(db, &s, &error) < 0) {
                log_error("exec: run store: %s", error ? error : "set HUTCH_STATE_DIR or HOME");
                return -EIO;
        }
        store_defer_checkpoints(s);
        x->ctx->store = s;
        return attach_run(x, x->run_id);
}

/* Relay the job's stdio until its end: the reply. */
static int exchange(struct exec_io *x, struct live_reply *end)
{
        uint64_t beat = now_monotonic_ms() + EXEC_HEARTBEAT_MS;
        for (;;) {
                struct hostio *evo = x->ctx->ev ? events_hostio(x->ctx->ev) : NULL;
                bool evwait = evo && hostio_pending(evo) > 0;
                struct pollfd p[7] = {
                        { .fd = x->sock, .events = POLLIN },
                        { .fd = x->out[0], .events = POLLIN },
                        { .fd = x->out[1], .events = POLLIN },
                        { .fd = x->job_in >= 0 && x->in_len == 0 ? x->src : -1, .events = POLLIN },
                        { .fd = x->in_len > 0 ? x->job_in : -1, .events = POLLOUT },
                        { .fd = evwait ? hostio_fd(evo) : -1, .events = POLLOUT },
                        { .fd = x->sigfd, .events = POLLIN },
                };
                /* no room for more events: wait for our reader first */
                if (evo && events_room(x) < 64)
                        p[1].fd = p[2].fd = -1;
                uint64_t now = now_monotonic_ms();
                if (now >= beat) {
                        /* the row's heartbeat, and --events' (once
                         * there is a row); a fast exec opens the
                         * store for it only now */
                        if (!x->ctx->store && x->run_id[0] && open_store(x) < 0)
                                return -EIO;
                        if (x->ctx->rec)
                                run_on_heartbeat(x->ctx);
                        beat = now + EXEC_HEARTBEAT_MS;
                }
                if (poll(p, ELEMENTSOF(p), (int)(beat - now)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[5].revents)
                        (void)hostio_flush(evo); /* a reader gone: the record still gets all */
                if (p[6].revents)
                        cancel(x);
                if (p[1].revents)
                        pump(x, 0);
                if (p[2].revents)
                        pump(x, 1);
                if (p[3].revents || p[4].revents)
                        feed(x, p[3].revents != 0, p[4].revents != 0);
                if (!p[0].revents)
                        continue;
                struct live_reply m;
                int k = receive(x, &m);
                if (k == 0 && m.op != LIVE_OP_BUSY)
                        k = attach_run(x, m.run_id);
                /* the supervisor went away under a started job: what the
                 * job wrote before the sandbox ended is still to be read */
                if (k == -EPIPE && x->handed) {
                        io_close(&x->job_in);
                        drain(x);
                }
                if (k < 0)
                        return k;
                if (m.op == LIVE_OP_BUSY)
                        return -EBUSY;
                if (m.op == LIVE_OP_FDS)
                        x->handed = true;
                if (m.op == LIVE_OP_FDS && x->job_in >= 0)
                        feed(x, false, false);
                if (m.op != LIVE_OP_END)
                        continue;
                io_close(&x->job_in);
                drain(x);
                *end = m;
                return 0;
        }
}

/* The exec runs under its sandbox's profile, limits and enforcement:
 * its record says so, from the sandbox's own run (NAME.json names it). */
void live_inherit_sandbox(struct store *s, int dirfd, const char *name, struct run_record *rec)
{
        _cleanup_free_ char *file = live_path(dirfd, name, "json"), *text = NULL;
        _cleanup_run_record_ struct run_record *sb = NULL;
        json_t *o = read_file(file, &text, NULL) >= 0 ? json_loads(text, 0, NULL) : NULL;
        const char *id = json_string_value(json_object_get(o, "id"));
        if (id && store_run_get(s, id, &sb, NULL) == 0) {
                free(rec->profile);
                rec->profile = TAKE_PTR(sb->profile);
                rec->profile_text = TAKE_PTR(sb->profile_text);
                rec->profile_sha256 = TAKE_PTR(sb->profile_sha256);
                rec->limits_json = TAKE_PTR(sb->limits_json);
                rec->enforcement_json = TAKE_PTR(sb->enforcement_json);
        }
        json_decref(o);
}

/* --stdin-file or --stdin: what feeds the job's stdin (x->src), or
 * nothing. EXIT_OK, or EXIT_SETUP after saying why. */
static int open_stdin(const struct live_exec_opts *eo, struct exec_io *x)
{
        if (eo->stdin_file) {
                x->src = open(eo->stdin_file, O_RDONLY | O_CLOEXEC);
                if (x->src < 0)
                        return log_error_errno(-errno, "exec: --stdin-file %s: %m", eo->stdin_file), EXIT_SETUP;
                x->own_src = true;
                /* a directory opens, and then reads as an error the job
                 * would take for an empty stdin */
                struct stat st;
                if (fstat(x->src, &st) == 0 && S_ISDIR(st.st_mode)) {
                        io_close(&x->src);
                        x->own_src = false;
                        return log_error_errno(-EISDIR, "exec: --stdin-file %s: %m", eo->stdin_file), EXIT_SETUP;
                }
        } else if (eo->stdin_relay) {
                x->src = STDIN_FILENO;
        }
        return EXIT_OK;
}

void live_say_outcome(const struct run_outcome *o)
{
        switch (o->status) {
        case RUN_SUCCESS:
        case RUN_FAILED:
        case RUN_SIGNALED:
                if (o->message[0])
                        log_info("%s", o->message);
                break;
        default:
                log_error("%s", o->message);
                break;
        }
}

int live_finish(int fd, const struct run_outcome *o, const struct capture *out, const struct capture *err)
{
        struct run_output so = { 0 }, se = { 0 };
        struct live_fin f = { .op = LIVE_OP_FINISH, .version = LIVE_WIRE_VERSION };
        struct live_reply done = { 0 };
        int r = -E2BIG;

        (void)run_output_from_capture(&so, out);
        (void)run_output_from_capture(&se, err);
        if (so.len + se.len > LIVE_FIN_DATA_MAX)
                goto out;
        f.status = o->status;
        f.exit_code = o->exit_code;
        f.job_exit_code = o->job_exit_code;
        f.signal = o->signal;
        f.wall_ms = o->wall_ms;
        f.cpu_user_ms = o->cpu_user_ms;
        f.cpu_sys_ms = o->cpu_sys_ms;
        f.peak_memory_bytes = o->cgroup_memory_peak_bytes ? o->cgroup_memory_peak_bytes
                                                          : MAX(o->peak_rss_bytes, o->peak_tree_memory_bytes);
        f.out_total = so.total_bytes;
        f.out_lines = so.lines;
        f.out_len = (uint32_t)so.len;
        f.out_truncated = so.truncated;
        f.err_total = se.total_bytes;
        f.err_lines = se.lines;
        f.err_len = (uint32_t)se.len;
        f.err_truncated = se.truncated;
        snprintf(f.message, sizeof(f.message), "%s", o->message);
        struct iovec iov[3] = { { &f, sizeof(f) }, { so.data, so.len }, { se.data, se.len } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
        if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
                r = -errno;
                goto out;
        }
        /* the record is durable when DONE comes: the supervisor synced it */
        ssize_t n;
        while ((n = recv(fd, &done, sizeof(done), 0)) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t)sizeof(done) || done.op != LIVE_OP_DONE || done.version != LIVE_WIRE_VERSION)
                r = -EPIPE;
        else
                r = done.error ? -done.error : 0;
out:
        free(so.data);
        free(se.data);
        return r;
}

int live_exec(const char *name, char **argv, const struct live_exec_opts *eo, const struct run_ui *ui)
{
        int dirfd = -1;
        struct exec_io x = { .sock = -1, .sigfd = -1, .out = { -1, -1 }, .job_in = -1, .src = -1,
                             .json = eo->json, .fast = !eo->json && !eo->events };
        int code = open_stdin(eo, &x);
        if (code != EXIT_OK)
                return code;
        /* from here on these signals cancel the exec, and the run is
         * recorded cancelled, instead of ending us with our row running */
        sigset_t cancel_set;
        sigemptyset(&cancel_set);
        sigaddset(&cancel_set, SIGTERM);
        sigaddset(&cancel_set, SIGINT);
        sigaddset(&cancel_set, SIGHUP);
        sigprocmask(SIG_BLOCK, &cancel_set, NULL);
        x.sigfd = signalfd(-1, &cancel_set, SFD_CLOEXEC | SFD_NONBLOCK);
        x.sock = connect_named("exec", name, &dirfd);
        _cleanup_close_ int dirfd_owned = dirfd;
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        _cleanup_capture_ struct capture *co = NULL, *ce = NULL;
        struct run_config cfg;
        struct run_outcome o = { 0 };
        struct live_reply end = { 0 };
        struct run_ctx ctx = { 0 };
        struct live_req req = { .op = LIVE_OP_EXEC, .version = LIVE_WIRE_VERSION, .timeout_ms = eo->timeout_ms,
                                .flags = (x.src >= 0 ? LIVE_EXEC_STDIN : 0) | (x.fast ? LIVE_EXEC_FINISH : 0) };
        int k;

        run_config_init(&cfg);
        if (x.sock < 0) {
                code = x.sock == -EINVAL ? EXIT_USAGE : EXIT_SETUP;
                goto out;
        }
        /* a closed stdout must not kill us before the record is complete */
        signal(SIGPIPE, SIG_IGN);
        co = capture_new(cfg.capture_bytes);
        ce = capture_new(cfg.capture_bytes);
        ctx = (struct run_ctx) { .out = co, .err = ce, .started_ms = now_monotonic_ms() };
        x.ctx = &ctx;
        x.events = eo->events;
        /* The request first: the supervisor writes the exec's row and
         * asks for the job, while we open the store for its end (not
         * at all when the supervisor writes that end: fast). */
        k = send_request(&x, &req, cwd ? cwd : "", argv);
        if (k == 0) {
                if (!x.fast && open_store(&x) < 0) {
                        /* we go away: the supervisor kills the job and
                         * records its run cancelled */
                        code = EXIT_SETUP;
                        goto out;
                }
                k = exchange(&x, &end);
        }
        if (k == -EBUSY) {
                /* refused before anything ran: retryable (a JSON
                 * caller's error says so) */
                log_set_error_code("sandbox_busy");
                o.status = RUN_SETUP_ERROR;
                o.exit_code = EXIT_BUSY;
                snprintf(o.message, sizeof(o.message),
                         "sandbox %s: every job slot of the sandbox is taken (%d execs and kernels run); try again",
                         name, SANDBOX_LIVE_JOBS_MAX);
        } else if (k == -EPIPE && x.handed) {
                /* the job was started: the sandbox ended under it (its
                 * init dies with the supervisor), as at a stop */
                o.status = RUN_CANCELLED;
                o.exit_code = EXIT_CANCELLED_TERM;
                o.job_exit_code = -1;
                o.wall_ms = now_monotonic_ms() - ctx.started_ms;
                snprintf(o.message, sizeof(o.message),
                         "sandbox %s ended while the exec ran: its supervisor went away", name);
        } else if (k < 0) {
                o.status = RUN_SETUP_ERROR;
                o.exit_code = EXIT_SETUP;
                o.wall_ms = now_monotonic_ms() - ctx.started_ms;
                snprintf(o.message, sizeof(o.message), "sandbox %s: %s", name,
                         k == -EPIPE  ? "its supervisor went away"
                         : k == -EPROTO ? "it runs another version of hutch (stop it and start it again)"
                                        : strerror(-k));
        } else {
                live_outcome(&end, &o);
        }
        if (!x.run_id[0]) {
                /* no row: refused before the supervisor wrote one */
                log_error("exec: %s", o.message[0] ? o.message : "the exec could not be recorded");
                code = o.exit_code ? o.exit_code : EXIT_SETUP;
                goto out;
        }
        if (x.fast && !ctx.store) {
                if (k == 0)
                        k = live_finish(x.sock, &o, co, ce);
                if (k == 0) {
                        live_say_outcome(&o);
                        code = o.exit_code;
                        goto out;
                }
                log_debug("exec: the supervisor did not record the end of run %s (%s): recording it here",
                          x.run_id, strerror(-k));
                if (open_store(&x) < 0) {
                        code = EXIT_SETUP;
                        goto out;
                }
        }
        if (!x.rec) {
                log_error("exec: cannot read back run %s: %s", x.run_id, store_error(ctx.store));
                code = EXIT_SETUP;
                goto out;
        }
        run_finish_record(ui, ctx.store, x.rec, &cfg, &o, co, ce, NULL, NULL, ctx.ev, eo->json);
        code = o.exit_code;
out:
        events_free(ctx.ev);
        run_record_free(x.rec);
        store_close(ctx.store);
        run_config_done(&cfg);
        io_close(&x.sigfd);
        io_close(&x.sock);
        io_close(&x.job_in);
        io_close(&x.out[0]);
        io_close(&x.out[1]);
        if (x.own_src)
                io_close(&x.src);
        return code;
}

int live_stop(const char *name)
{
        struct live_req req = { .op = LIVE_OP_STOP };
        _cleanup_close_ int fd = connect_named("sandbox stop", name, NULL);
        char c;
        if (fd < 0)
                return fd == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_GENERIC;
        if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) < 0)
                return log_error_errno(-errno, "sandbox stop: %s: %m", name), EXIT_FAILURE_GENERIC;
        /* EOF once the supervisor is gone, and with it the sandbox */
        while (recv(fd, &c, 1, 0) > 0 || errno == EINTR)
                ;
        return EXIT_OK;
}

/* Whether name's supervisor answers. One whose socket has no listener
 * (it was killed) leaves its files behind: they are removed here. */
static bool alive(int dirfd, const char *name)
{
        struct live_req req = { .op = LIVE_OP_PING };
        struct live_reply rep;
        _cleanup_close_ int fd = live_connect(dirfd, name);
        if (fd == -ECONNREFUSED) {
                _cleanup_free_ char *sock = xasprintf("%s.sock", name), *json = xasprintf("%s.json", name);
                (void)unlinkat(dirfd, sock, 0);
                (void)unlinkat(dirfd, json, 0);
        }
        return fd >= 0 && send(fd, &req, sizeof(req), MSG_NOSIGNAL) >= 0 &&
               recv(fd, &rep, sizeof(rep), 0) > 0 && rep.op == LIVE_OP_PONG;
}

/* A state file's published ports as "HOST_PORT->PORT,...", or "-". */
static const char *ports_text(json_t *ports, char *buf, size_t size)
{
        size_t i, at = 0;
        json_t *p;
        snprintf(buf, size, "-");
        json_array_foreach(ports, i, p) {
                int n = snprintf(buf + at, size - at, "%s%lld->%lld", i ? "," : "",
                                 (long long)json_integer_value(json_object_get(p, "host_port")),
                                 (long long)json_integer_value(json_object_get(p, "port")));
                if (n < 0 || (size_t)n >= size - at)
                        break;
                at += (size_t)n;
        }
        return buf;
}

int live_list(bool json)
{
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0)
                return EXIT_SETUP;
        _cleanup_free_ char *path = xasprintf("/proc/self/fd/%d", dirfd);
        DIR *d = opendir(path);
        if (!d)
                return log_error_errno(-errno, "sandbox ls: %m"), EXIT_SETUP;
        if (!json)
                printf("%-24s %-26s %-12s %s\n", "NAME", "ID", "IDLE TIMEOUT", "PORTS");
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                if (n < 6 || !streq(de->d_name + n - 5, ".sock"))
                        continue;
                _cleanup_free_ char *name = xstrdup(de->d_name);
                name[n - 5] = '\0';
                if (!live_name_valid(name) || !alive(dirfd, name))
                        continue;
                _cleanup_free_ char *file = live_path(dirfd, name, "json"), *text = NULL;
                json_t *o = read_file(file, &text, NULL) >= 0 ? json_loads(text, 0, NULL) : NULL;
                if (!o)
                        o = json_pack("{s:s}", "name", name);
                if (json) {
                        _cleanup_free_ char *j = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
                        printf("%s\n", j);
                } else {
                        json_t *id = json_object_get(o, "id"), *idle = json_object_get(o, "idle_timeout_ms");
                        char dur[32] = "starting", ports[256];
                        if (idle)
                                (void)format_duration_ms((uint64_t)json_integer_value(idle), dur, sizeof(dur));
                        printf("%-24s %-26s %-12s %s\n", name, id ? json_string_value(id) : "-", dur,
                               ports_text(json_object_get(o, "ports"), ports, sizeof(ports)));
                }
                json_decref(o);
        }
        closedir(d);
        return EXIT_OK;
}
