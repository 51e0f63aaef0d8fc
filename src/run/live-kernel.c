/* run/live-kernel.c - the kernels of a live sandbox, supervisor side
 * (run/live-kernel.h; the client side is live-kernel-call.c).
 *
 * A kernel is one job of the sandbox, started by live_job_spawn() the
 * way every exec's job is (init forks it with job_exec(): no
 * capabilities, no_new_privs, the sandbox's seccomp filter and rlimits,
 * in its namespaces), running the driver program of its language
 * (share/kernels/python.py, node.js, read here from the data dir and
 * passed as the interpreter's -c / -e argument: nothing else of the
 * host's goes in, and no mount is needed). Its stdio are made here:
 *  - fd 0, one end of a stream socketpair: requests go in, replies come
 *    out, each a 4-byte big-endian length and a JSON object;
 *  - fd 1 and 2, pipes whose read ends stay here and are lent (SCM_RIGHTS
 *    copies) to the client of the call that runs, which reads the call's
 *    output from them as an exec's client does. Between calls nobody
 *    reads them (see below).
 * One call runs at a time per kernel. It ends when the reply comes; the
 * call stays held until its client, having drained the pipes, hangs up.
 *
 * Security: everything the kernel writes is hostile. The code runs in
 * the driver's own process and can write anything to the socket, so:
 *  - a reply is read without blocking into a buffer of at most
 *    KERNEL_FRAME_MAX bytes; a larger length, bytes past the reply, bytes
 *    while no call runs, EOF, or anything but a JSON object with a known
 *    "status" string, an optional "value" string and "ename" string gets
 *    the kernel killed (SIGKILL to its process group, through init) and
 *    the call answered "died" with the reason, once init reports its end;
 *  - what reaches the client is bounded: the value cut to
 *    LIVE_KERNEL_VALUE_MAX, the exception name to 63 bytes; the output
 *    never passes through the supervisor during a call;
 *  - the output between calls costs the supervisor nothing: the pipes
 *    are not polled then, so a kernel that writes on (a thread a call
 *    left) fills them and blocks inside the sandbox, on the sandbox's
 *    own limits, rather than having the supervisor read and drop its
 *    writes at whatever rate it makes them. When the next call starts,
 *    what is pending then (FIONREAD) is read and dropped, and no more:
 *    at most a pipe's capacity, which the kernel cannot raise past
 *    /proc/sys/fs/pipe-max-size (that takes CAP_SYS_RESOURCE in the
 *    initial user namespace, and a job has no capability at all), so
 *    the work is bounded per call, and calls are the caller's to make.
 *    The call's output thus starts with nothing written before it began
 *    (but for a write the full pipe held blocked, which may land once
 *    room is made: that is the kernel's own output racing its call, as
 *    a thread's writes during the call are); the reply, on the socket,
 *    is never mixed with either. How much was dropped goes in the END
 *    (live_kend.discarded), so the caller is told;
 *  - a call's deadline sends SIGINT to the kernel alone (init checks the
 *    pid is one of its jobs); a kernel that has not replied
 *    KERNEL_GRACE_MS later is killed. Without a deadline, the client
 *    going away interrupts the call the same way, and so does its
 *    LIVE_OP_CANCEL (hutch mcp cancelling an in-process call), after
 *    which it still gets the END, marked cancelled. So no kernel can stall
 *    the supervisor's loop or its other execs, and the supervisor holds
 *    no buffer a kernel can grow beyond KERNEL_FRAME_MAX per language.
 * A forged reply can only lie about its own call, which is the code's
 * own. A call's record is written here when its client asks
 * (LIVE_EXEC_FINISH: `hutch exec --kernel` without --json): the row
 * before the request goes to the kernel, the end the client sends
 * (FINISH, with the output it read from the lent pipes) once it has the
 * reply, synced before DONE (live-record.c). live_kernel_call() asks for
 * none: its caller records the call, or not. */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <jansson.h>

#include "config/run-config.h"
#include "lib/util.h"
#include "run/live-internal.h"

#define KERNEL_FRAME_MAX (256u << 10)
#define KERNEL_GRACE_MS 2000
/* The interrupt again, this often, during the grace: one that came
 * while the driver was not yet running the code (reading the request)
 * is ignored, and the call would run on to its kill, the state lost. A
 * running call's driver takes each as KeyboardInterrupt (or the vm's
 * interrupt), caught where the first is (share/kernels). */
#define KERNEL_REINT_MS 100
#define KERNEL_EOF_GRACE_MS 500

enum kernel_job { JOB_DOWN, JOB_STARTING, JOB_UP };
enum kernel_call { CALL_NONE, CALL_RUNNING, CALL_HELD };

struct live_kernel {
        enum live_kernel_lang lang;
        enum kernel_job job;
        int32_t pid;            /* init's view, 0 until it says */
        int sock, out, err;     /* ours: the request socket, the output pipes' read ends */
        bool lost;              /* a kernel of this language died: the next reply says so */
        bool killing;           /* SIGKILL sent; why says why */
        bool stopping;          /* the sandbox stops */
        char why[160];
        enum kernel_call call;
        int client;             /* the call's connection, -1 once gone */
        uint64_t started_ms, deadline_ms, kill_at_ms;
        uint64_t reint_at_ms;   /* the next SIGINT of the grace (KERNEL_REINT_MS) */
        uint64_t eof_at_ms;     /* the socket hit EOF: killed unless it ends by then */
        uint64_t discarded;     /* the call's: bytes written before it, dropped at its start */
        char *rbuf;             /* the reply so far: rlen of 4 + KERNEL_FRAME_MAX */
        size_t rlen;
        bool finish;            /* the call is recorded here: its client sends FINISH */
        bool cancelled;         /* its client sent LIVE_OP_CANCEL: interrupted as at its deadline */
        char run_id[32];        /* its row */
};

struct live_kernels {
        struct live_kernel k[_LIVE_KERNEL_LANG_MAX];
};

static const char *const driver_file[_LIVE_KERNEL_LANG_MAX] = {
        [LIVE_KERNEL_PYTHON] = "python.py",
        [LIVE_KERNEL_NODE] = "node.js",
};

struct live_kernels *live_kernels_new(void)
{
        struct live_kernels *ks = xmalloc(sizeof(*ks));
        for (int i = 0; i < _LIVE_KERNEL_LANG_MAX; i++)
                ks->k[i] = (struct live_kernel) { .lang = i, .sock = -1, .out = -1, .err = -1, .client = -1 };
        return ks;
}

static void close_fd(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void send_end(int fd, const struct live_kernel *k, enum live_kernel_status st, int wait_status,
                     bool timed_out, bool lost, const char *value, size_t vlen, const char *ename, const char *message)
{
        if (fd < 0)
                return;
        struct live_kend e = { .r = { .op = LIVE_OP_END, .version = LIVE_WIRE_VERSION, .status = wait_status,
                                      .timed_out = timed_out, .stopped = k->stopping,
                                      .cancelled = k->cancelled ? SIGINT : 0 },
                               .status = st, .value_len = value ? (uint32_t)vlen : UINT32_MAX };
        e.r.wall_ms = k->started_ms ? now_monotonic_ms() - k->started_ms : 0;
        e.state_lost = lost;
        e.discarded = k->discarded;
        snprintf(e.ename, sizeof(e.ename), "%s", ename ? ename : "");
        snprintf(e.message, sizeof(e.message), "%s", message ? message : "");
        struct iovec iov[2] = { { &e, sizeof(e) }, { (void *)value, value ? vlen : 0 } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = value ? 2 : 1 };
        (void)sendmsg(fd, &mh, MSG_NOSIGNAL);
}

static void call_done(struct live_kernel *k, struct live *l)
{
        close_fd(&k->client);
        k->call = CALL_NONE;
        k->finish = false;
        k->cancelled = false;
        k->run_id[0] = '\0';
        k->started_ms = k->deadline_ms = k->kill_at_ms = k->reint_at_ms = 0;
        k->discarded = 0;
        live_busy(l, false);
}

/* A recorded call whose client hung up before its END (client_says())
 * has ended: its row, left running, is completed here. */
static void lost_call(struct live_kernel *k, struct live *l, const char *how)
{
        if (k->finish && k->run_id[0])
                live_lost_call(l, k->run_id, k->started_ms ? now_monotonic_ms() - k->started_ms : 0, how);
}

static void kill_kernel(struct live_kernel *k, struct live *l, const char *why)
{
        if (k->killing)
                return;
        k->killing = true;
        snprintf(k->why, sizeof(k->why), "%s", why);
        close_fd(&k->sock);
        live_job_signal(l, k->pid, true);       /* pid 0: at its start */
}

/* Read and drop what the kernel wrote to *fd (O_NONBLOCK) while no
 * call ran: the bytes pending now, no more (at most the pipe's
 * capacity, whatever the kernel writes meanwhile). Closes it at EOF or
 * an error. Returns how many bytes were dropped. */
static uint64_t discard_pending(int *fd)
{
        static char buf[65536];
        int pending = 0;
        uint64_t done = 0;

        if (*fd < 0 || ioctl(*fd, FIONREAD, &pending) < 0)
                return 0;
        while (done < (uint64_t)MAX(pending, 0)) {
                ssize_t n = read(*fd, buf, MIN(sizeof(buf), (uint64_t)pending - done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0 || (n < 0 && errno != EAGAIN))
                        close_fd(fd);
                if (n <= 0)
                        break;
                done += (uint64_t)n;
        }
        return done;
}

static int start(struct live_kernel *k, struct live *l, char *msg, size_t msg_size)
{
        const char *dir = getenv("HUTCH_DATADIR");
        _cleanup_free_ char *path = xasprintf("%s/kernels/%s", dir && *dir ? dir : HUTCH_DATADIR,
                                              driver_file[k->lang]);
        _cleanup_free_ char *text = NULL;
        int sv[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
        int r = read_file(path, &text, NULL);
        if (r < 0) {
                snprintf(msg, msg_size, "kernel driver %s: %s", path, strerror(-r));
                return r;
        }
        char *argv[] = { k->lang == LIVE_KERNEL_PYTHON ? "python3" : "node",
                         k->lang == LIVE_KERNEL_PYTHON ? "-c" : "-e", text, NULL };
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
            pipe2(err, O_CLOEXEC) < 0)
                r = -errno;
        else
                r = live_job_spawn(l, argv, (int[]) { sv[1], out[1], err[1] }, k);
        int ends[] = { sv[1], out[1], err[1] };
        for (size_t i = 0; i < ELEMENTSOF(ends); i++)
                if (ends[i] >= 0)
                        close(ends[i]);
        if (r < 0) {
                int ours[] = { sv[0], out[0], err[0] };
                for (size_t i = 0; i < ELEMENTSOF(ours); i++)
                        if (ours[i] >= 0)
                                close(ours[i]);
                snprintf(msg, msg_size, "start the kernel: %s", r == -EBUSY ? "every job slot of the sandbox is taken" : strerror(-r));
                return r;
        }
        k->sock = sv[0];
        k->out = out[0];
        k->err = err[0];
        for (int *fd = &k->sock; fd <= &k->err; fd++)
                (void)fcntl(*fd, F_SETFL, O_NONBLOCK);
        k->job = JOB_STARTING;
        k->killing = false;
        k->why[0] = '\0';
        k->rlen = 0;
        if (!k->rbuf)
                k->rbuf = xmalloc(4 + KERNEL_FRAME_MAX);
        return 0;
}

/* The request frame: {"code": ...} after its length. */
static char *request_frame(const char *code, size_t len, size_t *ret_len)
{
        json_t *o = json_object();
        json_t *c = json_stringn(code, len);
        if (!c) {
                json_decref(o);
                return NULL;
        }
        json_object_set_new(o, "code", c);
        _cleanup_free_ char *body = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!body)
                return NULL;
        size_t n = strlen(body);
        char *f = xmalloc(4 + n);
        uint32_t be = htobe32((uint32_t)n);
        memcpy(f, &be, 4);
        memcpy(f + 4, body, n);
        *ret_len = 4 + n;
        return f;
}

/* Answer a request we do not run: END with message, or BUSY with why
 * in its error (EBUSY: the kernel is in use; EUSERS: every job slot of
 * the sandbox is taken), which the client says. */
static void refuse(int fd, char op, int why, const char *message)
{
        struct live_kernel none = { .sock = -1 };
        if (op == LIVE_OP_BUSY) {
                struct live_reply b = { .op = LIVE_OP_BUSY, .version = LIVE_WIRE_VERSION, .error = why };
                (void)send(fd, &b, sizeof(b), MSG_NOSIGNAL);
        } else {
                send_end(fd, &none, LIVE_KERNEL_UNAVAILABLE, 0, false, false, NULL, 0, NULL, message);
        }
        close(fd);
}

void live_kernels_request(struct live_kernels *ks, struct live *l, int fd, pid_t client, const char *buf, size_t n)
{
        struct live_kreq req;
        char msg[160], cwd[PATH_MAX];
        if (n < sizeof(req)) {
                refuse(fd, LIVE_OP_END, 0, "malformed kernel request");
                return;
        }
        memcpy(&req, buf, sizeof(req));
        /* before anything of it is read as ours: no code of another
         * hutch's client runs, to be recorded as failed there */
        if (req.version != LIVE_WIRE_VERSION) {
                refuse(fd, LIVE_OP_END, 0, "the client is another version of hutch than this sandbox's supervisor");
                return;
        }
        /* a recorded call's cwd ends the request */
        if (!(req.flags & LIVE_EXEC_FINISH))
                req.cwd_len = 0;
        if (req.cwd_len >= sizeof(cwd) || req.cwd_len > n - sizeof(req)) {
                refuse(fd, LIVE_OP_END, 0, "malformed kernel request");
                return;
        }
        n -= req.cwd_len;
        memcpy(cwd, buf + n, req.cwd_len);
        cwd[req.cwd_len] = '\0';
        if (req.lang < 0 || req.lang >= _LIVE_KERNEL_LANG_MAX || n - sizeof(req) > LIVE_KERNEL_CODE_MAX ||
            strlen(cwd) != req.cwd_len) {
                refuse(fd, LIVE_OP_END, 0, "malformed kernel request");
                return;
        }
        struct live_kernel *k = &ks->k[req.lang];
        char c;
        /* the last call's client hung up already (sequential callers) */
        if (k->call == CALL_HELD && recv(k->client, &c, 1, MSG_DONTWAIT | MSG_PEEK) == 0)
                call_done(k, l);
        if (k->call != CALL_NONE || k->killing) {
                refuse(fd, LIVE_OP_BUSY, EBUSY, NULL);
                return;
        }
        size_t flen;
        _cleanup_free_ char *frame = request_frame(buf + sizeof(req), n - sizeof(req), &flen);
        if (!frame) {
                refuse(fd, LIVE_OP_END, 0, "the code is not UTF-8 text");
                return;
        }
        int r;
        if (k->job == JOB_DOWN && (r = start(k, l, msg, sizeof(msg))) < 0) {
                /* every job slot taken: busy, as an exec is then (75,
                 * retryable), not a failure of the call */
                if (r == -EBUSY)
                        refuse(fd, LIVE_OP_BUSY, EUSERS, NULL);
                else
                        refuse(fd, LIVE_OP_END, 0, msg);
                return;
        }
        /* the call's row, before the call: without it, no call (its
         * client records the refusal itself, as one it was refused) */
        if ((req.flags & LIVE_EXEC_FINISH) &&
            live_record_call(l, live_kernel_lang_to_string(req.lang), buf + sizeof(req), n - sizeof(req), cwd,
                             client, k->run_id) < 0) {
                refuse(fd, LIVE_OP_END, 0, "the run store is busy or failing: the call is not recorded");
                return;
        }
        k->finish = (req.flags & LIVE_EXEC_FINISH) != 0;
        /* before the request: nothing of it can have been written yet */
        k->discarded = discard_pending(&k->out) + discard_pending(&k->err);
        k->call = CALL_RUNNING;
        k->client = fd;
        k->started_ms = now_monotonic_ms();
        uint64_t t = req.timeout_ms ? req.timeout_ms : live_config(l)->timeout_ms;
        k->deadline_ms = t ? k->started_ms + t : 0;
        live_busy(l, true);
        /* the request first: the kernel runs it while its client wakes
         * up for the pipes (what the call writes meanwhile waits in
         * them); an idle kernel's socket buffer is empty: the frame fits */
        if (k->sock < 0 || send(k->sock, frame, flen, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)flen)
                kill_kernel(k, l, "the kernel did not take its request");
        /* the output pipes, lent: SCM_RIGHTS hands copies */
        struct live_reply f = { .op = LIVE_OP_FDS };
        memcpy(f.run_id, k->run_id, sizeof(f.run_id));
        int fds[2], nfds = 0;
        if (k->out >= 0)
                fds[nfds++] = k->out;
        if (k->err >= 0)
                fds[nfds++] = k->err;
        char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 };
        struct iovec iov = { &f, sizeof(f) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (nfds) {
                mh.msg_control = cbuf;
                mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
                memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
        }
        (void)sendmsg(fd, &mh, MSG_NOSIGNAL);
}

void live_kernel_job_started(struct live_kernel *k, struct live *l, int32_t pid)
{
        k->pid = pid;
        k->job = JOB_UP;
        if (k->killing)
                live_job_signal(l, pid, true);
}

void live_kernel_job_ended(struct live_kernel *k, struct live *l, int status, int error)
{
        char msg[200];
        k->stopping = error == ESHUTDOWN;
        bool never_ran = error != 0 && !k->stopping;
        enum live_kernel_status st = never_ran ? LIVE_KERNEL_UNAVAILABLE : LIVE_KERNEL_DIED;
        const char *limit = live_limit_stop(l);
        if (k->stopping && limit)
                snprintf(msg, sizeof(msg), "the sandbox %s", limit);
        else if (k->stopping)
                snprintf(msg, sizeof(msg), "the sandbox stopped while the call ran");
        else if (never_ran)
                snprintf(msg, sizeof(msg), "the %s kernel could not start: %s",
                         live_kernel_lang_to_string(k->lang), strerror(error));
        else if (k->why[0])
                snprintf(msg, sizeof(msg), "%s: it was killed and its state is lost", k->why);
        else if (WIFSIGNALED(status))
                snprintf(msg, sizeof(msg), "the kernel was killed by signal %d: its state is lost",
                         WTERMSIG(status));
        else
                snprintf(msg, sizeof(msg), "the kernel exited with status %d: its state is lost",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        if (k->call == CALL_RUNNING) {
                bool timed_out = k->kill_at_ms && now_monotonic_ms() >= k->kill_at_ms;
                send_end(k->client, k, st, status, timed_out, !never_ran || k->lost, NULL, 0, NULL, msg);
                if (k->client >= 0) {
                        k->call = CALL_HELD;    /* its client drains the pipes */
                } else {
                        char how[240];
                        snprintf(how, sizeof(how), "then ended: %s", msg);
                        lost_call(k, l, how);
                        call_done(k, l);
                }
        }
        /* a kernel that ran had state; one that never ran leaves the
         * loss of the one before it to be said */
        if (!never_ran)
                k->lost = true;
        close_fd(&k->sock);
        close_fd(&k->out);
        close_fd(&k->err);
        k->job = JOB_DOWN;
        k->pid = 0;
        k->killing = false;
        k->why[0] = '\0';
        k->rlen = 0;
        k->deadline_ms = k->kill_at_ms = k->reint_at_ms = k->eof_at_ms = 0;
}

/* A whole reply frame in k->rbuf: check it, answer the call. */
static void reply(struct live_kernel *k, struct live *l, size_t body)
{
        json_error_t jerr;
        json_t *o = json_loadb(k->rbuf + 4, body, JSON_REJECT_DUPLICATES, &jerr);
        json_t *jst = json_object_get(o, "status"), *jv = json_object_get(o, "value"),
               *je = json_object_get(o, "ename");
        const char *s = json_string_value(jst);
        enum live_kernel_status st = _LIVE_KERNEL_STATUS_INVALID;
        if (s && streq(s, "ok"))
                st = LIVE_KERNEL_OK;
        else if (s && streq(s, "error"))
                st = LIVE_KERNEL_ERROR;
        else if (s && streq(s, "interrupted"))
                st = LIVE_KERNEL_INTERRUPTED;
        if (!json_is_object(o) || st < 0 || (jv && !json_is_null(jv) && !json_is_string(jv)) ||
            (je && !json_is_string(je))) {
                json_decref(o);
                kill_kernel(k, l, "the kernel sent a malformed reply");
                return;
        }
        size_t vlen = json_is_string(jv) ? MIN(json_string_length(jv), (size_t)LIVE_KERNEL_VALUE_MAX) : 0;
        send_end(k->client, k, st, 0, st == LIVE_KERNEL_INTERRUPTED, k->lost,
                 json_is_string(jv) ? json_string_value(jv) : NULL, vlen, json_string_value(je), NULL);
        k->lost = false;        /* said once */
        json_decref(o);
        k->rlen = 0;
        if (k->client >= 0) {
                k->call = CALL_HELD;
                k->deadline_ms = k->kill_at_ms = k->reint_at_ms = 0;
        } else {
                lost_call(k, l, st == LIVE_KERNEL_INTERRUPTED ? "was interrupted; the kernel and its state live on"
                                                              : "ran to its end before the interrupt took");
                call_done(k, l);
        }
}

/* What the kernel wrote on its socket. */
static void from_kernel(struct live_kernel *k, struct live *l)
{
        for (;;) {
                size_t cap = 4 + KERNEL_FRAME_MAX;
                ssize_t n = read(k->sock, k->rbuf + k->rlen, cap - k->rlen);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0) {
                        /* mostly a kernel on its way out: let its own end
                         * be told, unless it lingers */
                        close_fd(&k->sock);
                        k->eof_at_ms = now_monotonic_ms() + KERNEL_EOF_GRACE_MS;
                        return;
                }
                if (k->call != CALL_RUNNING) {
                        kill_kernel(k, l, "the kernel wrote out of turn");
                        return;
                }
                k->rlen += (size_t)n;
                if (k->rlen < 4)
                        continue;
                uint32_t be;
                memcpy(&be, k->rbuf, 4);
                size_t body = be32toh(be);
                if (body > KERNEL_FRAME_MAX) {
                        kill_kernel(k, l, "the kernel sent an oversized reply");
                        return;
                }
                if (k->rlen > 4 + body) {
                        kill_kernel(k, l, "the kernel wrote past its reply");
                        return;
                }
                if (k->rlen == 4 + body) {
                        reply(k, l, body);
                        return;
                }
        }
}

/* A recorded call's client, after END: its FINISH (the outcome and the
 * output it drained from the pipes) is written and synced, then DONE,
 * and the call is over. On a failure DONE says so and the call stays
 * held until the client, which then records the end itself, hangs up;
 * a client that hangs up after END without FINISH leaves the row
 * running (gc marks it orphaned, as a killed client's). One that hangs
 * up before END has the end written here (lost_call()). */
static void finish(struct live_kernel *k, struct live *l)
{
        static char buf[sizeof(struct live_fin) + LIVE_FIN_DATA_MAX + 1];
        ssize_t n = recv(k->client, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0 || buf[0] != LIVE_OP_FINISH) {
                call_done(k, l);
                return;
        }
        struct live_reply done = { .op = LIVE_OP_DONE, .version = LIVE_WIRE_VERSION };
        int r = live_finish_call(l, k->run_id, buf, (size_t)n);
        done.error = r < 0 ? -r : 0;
        k->finish = false;      /* what comes next is its hang-up */
        if (send(k->client, &done, sizeof(done), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(done) || r == 0)
                call_done(k, l);
        if (r == 0)
                live_record_settle(l);
}

/* Per kernel, its socket and its call's client; never the output
 * pipes (the top of this file says why). */
void live_kernels_poll(const struct live_kernels *ks, struct pollfd *p)
{
        for (int i = 0; i < _LIVE_KERNEL_LANG_MAX; i++) {
                const struct live_kernel *k = &ks->k[i];
                p[2 * i + 0] = (struct pollfd) { .fd = k->sock, .events = POLLIN };
                p[2 * i + 1] = (struct pollfd) { .fd = k->call == CALL_NONE ? -1 : k->client, .events = POLLIN };
        }
}

uint64_t live_kernels_deadline(const struct live_kernels *ks)
{
        uint64_t until = 0;
        for (int i = 0; ks && i < _LIVE_KERNEL_LANG_MAX; i++) {
                const struct live_kernel *k = &ks->k[i];
                if (k->eof_at_ms && !k->killing && (!until || k->eof_at_ms < until))
                        until = k->eof_at_ms;
                if (k->call != CALL_RUNNING || k->pid <= 0 || k->killing)
                        continue;
                uint64_t t = k->kill_at_ms ? MIN(k->kill_at_ms, k->reint_at_ms ? k->reint_at_ms : UINT64_MAX)
                                           : k->deadline_ms;
                if (t && (!until || t < until))
                        until = t;
        }
        return until;
}

/* The running call's client, before the reply: a cancel (hutch mcp's
 * notifications/cancelled of an in-process call), which interrupts the
 * call as its deadline does, now or as soon as the kernel's pid is
 * known, and keeps the client for the END; or its hang-up (or anything
 * else, dropped with it): nobody waits for the call any more, and it is
 * interrupted at once. */
static void client_says(struct live_kernel *k, struct live *l, uint64_t now)
{
        struct live_req req;
        ssize_t n = recv(k->client, &req, sizeof(req), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n == (ssize_t)sizeof(req) && req.op == LIVE_OP_CANCEL) {
                k->cancelled = true;
                if (!k->kill_at_ms)
                        k->deadline_ms = now;   /* live_kernels_events() takes it from here */
                return;
        }
        close_fd(&k->client);
        if (!k->kill_at_ms && k->pid > 0) {
                live_job_signal(l, k->pid, false);
                k->kill_at_ms = now + KERNEL_GRACE_MS;
                k->reint_at_ms = now + KERNEL_REINT_MS;
        }
}

void live_kernels_events(struct live_kernels *ks, struct live *l, const struct pollfd *p)
{
        uint64_t now = now_monotonic_ms();
        for (int i = 0; i < _LIVE_KERNEL_LANG_MAX; i++) {
                struct live_kernel *k = &ks->k[i];
                if (p[2 * i].revents && k->sock >= 0)
                        from_kernel(k, l);
                if (p[2 * i + 1].revents && k->client >= 0) {
                        /* the client hung up: after its reply, the call is
                         * over; before it, nobody waits for it any more.
                         * After it, a recorded call's client sends FINISH */
                        if (k->call == CALL_HELD && k->finish) {
                                finish(k, l);
                        } else if (k->call == CALL_HELD) {
                                call_done(k, l);
                        } else {
                                client_says(k, l, now);
                        }
                }
                if (k->eof_at_ms && now >= k->eof_at_ms && !k->killing)
                        kill_kernel(k, l, "the kernel closed its request channel");
                if (k->call != CALL_RUNNING || k->pid <= 0 || k->killing)
                        continue;
                if (k->deadline_ms && now >= k->deadline_ms && !k->kill_at_ms) {
                        live_job_signal(l, k->pid, false);
                        k->kill_at_ms = now + KERNEL_GRACE_MS;
                        k->reint_at_ms = now + KERNEL_REINT_MS;
                } else if (k->kill_at_ms && now >= k->kill_at_ms) {
                        kill_kernel(k, l, "the kernel did not stop at its interrupt");
                } else if (k->reint_at_ms && now >= k->reint_at_ms) {
                        live_job_signal(l, k->pid, false);
                        k->reint_at_ms = now + KERNEL_REINT_MS;
                }
        }
}

struct live_kernels *live_kernels_free(struct live_kernels *ks)
{
        if (!ks)
                return NULL;
        for (int i = 0; i < _LIVE_KERNEL_LANG_MAX; i++) {
                struct live_kernel *k = &ks->k[i];
                if (k->call == CALL_RUNNING)
                        send_end(k->client, k, LIVE_KERNEL_DIED, 0, false, true, NULL, 0, NULL,
                                 "the sandbox stopped while the call ran");
                close_fd(&k->client);
                close_fd(&k->sock);
                close_fd(&k->out);
                close_fd(&k->err);
                free(k->rbuf);
        }
        free(ks);
        return NULL;
}
