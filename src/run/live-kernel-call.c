/* run/live-kernel-call.c - a kernel call, client side (run/live-kernel.h):
 * the request on the control socket, the call's output read from the
 * kernel's pipes the supervisor lends for it, the reply, and its outcome.
 * Its record (`hutch exec NAME --kernel LANG`, hutch mcp's calls) is
 * live-kernel-record.c's; the supervisor's side is live-kernel.c. */
#include "config.h"

#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "lib/exit-codes.h"
#include "lib/util.h"
#include "run/live-internal.h"
#include "run/run-internal.h"
#include "run/run.h"
#include "supervise/capture.h"

static const char *const lang_names[_LIVE_KERNEL_LANG_MAX] = {
        [LIVE_KERNEL_PYTHON] = "python",
        [LIVE_KERNEL_NODE] = "node",
};

int live_kernel_lang_from_string(const char *s)
{
        if (!s)
                return -EINVAL;
        if (streq(s, "python") || streq(s, "python3") || streq(s, "py"))
                return LIVE_KERNEL_PYTHON;
        if (streq(s, "node") || streq(s, "nodejs") || streq(s, "js") || streq(s, "javascript"))
                return LIVE_KERNEL_NODE;
        return -EINVAL;
}

const char *live_kernel_lang_to_string(int lang)
{
        return lang >= 0 && lang < _LIVE_KERNEL_LANG_MAX ? lang_names[lang] : NULL;
}

void live_kernel_result_done(struct live_kernel_result *r)
{
        if (r)
                r->value = (free(r->value), NULL);
}

/* Read what there is on *fd into cap (and out with tee); closes it at
 * EOF or error. Returns the bytes read. */
static ssize_t take_at_most(int *fd, struct capture *cap, int out, bool tee, size_t max)
{
        char buf[65536];
        ssize_t n = read(*fd, buf, MIN(max, sizeof(buf)));
        if (n > 0) {
                if (cap)
                        capture_append(cap, buf, (size_t)n);
                if (tee)
                        (void)write_all(out, buf, (size_t)n);
                return n;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(*fd);
                *fd = -1;
        }
        return 0;
}

static ssize_t take(int *fd, struct capture *cap, int out, bool tee)
{
        return take_at_most(fd, cap, out, tee, SIZE_MAX);
}

/* At the call's end: what the pipe holds now, and no more. The kernel
 * flushed its output before it replied, so that is all of the call's;
 * a thread the code left writing on keeps the pipe from ever being
 * empty, and reading until EAGAIN would then never end (nor heed a
 * cancel). What it writes after is output between calls (dropped at
 * the next call, live-kernel.c). */
static void take_pending(int *fd, struct capture *cap, int out, bool tee)
{
        int pending = 0;
        if (*fd < 0 || ioctl(*fd, FIONREAD, &pending) < 0)
                return;
        for (size_t left = (size_t)MAX(pending, 0); left > 0 && *fd >= 0;) {
                ssize_t n = take_at_most(fd, cap, out, tee, left);
                if (n <= 0)
                        break;
                left -= (size_t)n;
        }
}

/* take_pending() of the call's stdout and stderr pipes, io[0] and io[1]. */
static void take_both_pending(int io[2], struct capture *out, struct capture *err, bool tee)
{
        for (int i = 0; i < 2; i++)
                take_pending(&io[i], i ? err : out, i ? STDERR_FILENO : STDOUT_FILENO, tee);
}

/* The request; with cwd, a recorded one (LIVE_EXEC_FINISH: the
 * supervisor writes the call's row, and its end at our FINISH). */
static int request(int fd, enum live_kernel_lang lang, const char *code, size_t len, uint64_t timeout_ms,
                   const char *cwd)
{
        struct live_kreq req;
        memset(&req, 0, sizeof(req));   /* no stack bytes in the padding */
        req.op = LIVE_OP_KERNEL;
        req.version = LIVE_WIRE_VERSION;
        req.timeout_ms = timeout_ms;
        req.lang = lang;
        if (cwd) {
                req.flags = LIVE_EXEC_FINISH;
                req.cwd_len = (uint32_t)strlen(cwd);
        }
        struct iovec iov[3] = { { &req, sizeof(req) }, { (void *)code, len }, { (void *)cwd, cwd ? strlen(cwd) : 0 } };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
        return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static void result_of(const struct live_kend *e, const char *value, size_t n, struct live_kernel_result *r)
{
        *r = (struct live_kernel_result) {
                .status = e->status >= 0 && e->status < _LIVE_KERNEL_STATUS_MAX ? e->status : LIVE_KERNEL_DIED,
                .state_lost = e->state_lost != 0,
                .wall_ms = e->r.wall_ms,
                .wait_status = e->r.status,
                .timed_out = e->r.timed_out != 0,
                .stopped = e->r.stopped != 0,
                .cancelled = e->r.cancelled != 0,
                .discarded = e->discarded,
        };
        if (e->value_len != UINT32_MAX) {
                r->value = xmalloc(n + 1);
                memcpy(r->value, value, n);
                r->value[n] = '\0';
        }
        snprintf(r->ename, sizeof(r->ename), "%.*s", (int)sizeof(e->ename), e->ename);
        snprintf(r->message, sizeof(r->message), "%.*s", (int)sizeof(e->message), e->message);
}

int live_kernel_call_on(int fd, enum live_kernel_lang lang, const char *code, size_t len, uint64_t timeout_ms,
                        int cancel_fd, const char *cwd, struct capture *out, struct capture *err, bool tee,
                        char run_id[33], struct live_kernel_result *ret)
{
        const size_t msg_size = sizeof(struct live_kend) + LIVE_KERNEL_VALUE_MAX + 1;
        int io[2] = { -1, -1 };
        /* cancelled before it was sent (mcp: while its row was written):
         * nothing is sent, so nothing runs, and no interrupt reaches a
         * kernel that is not yet running the code (its driver ignores one
         * then, and the call would run on; or, starting, it would die) */
        if (cancel_fd >= 0) {
                struct pollfd c = { .fd = cancel_fd, .events = POLLIN };
                if (poll(&c, 1, 0) > 0)
                        return -ECANCELED;
        }
        uint64_t t0 = now_monotonic_ms();
        bool handed = false;    /* FDS came: the code went to the kernel */
        int r = request(fd, lang, code, len, timeout_ms, cwd);
        if (r < 0)
                return r;
        _cleanup_free_ char *msg = xmalloc(msg_size);
        for (;;) {
                char cbuf[CMSG_SPACE(2 * sizeof(int))];
                struct iovec iov = { msg, msg_size };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof(cbuf) };
                struct pollfd p[4] = { { .fd = fd, .events = POLLIN }, { .fd = io[0], .events = POLLIN },
                                       { .fd = io[1], .events = POLLIN }, { .fd = cancel_fd, .events = POLLIN } };
                if (poll(p, 4, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (p[1].revents)
                        (void)take(&io[0], out, STDOUT_FILENO, tee);
                if (p[2].revents)
                        (void)take(&io[1], err, STDERR_FILENO, tee);
                if (p[3].revents) {
                        /* once: cancel_fd is not polled after */
                        struct live_req c = { .op = LIVE_OP_CANCEL, .version = LIVE_WIRE_VERSION };
                        (void)send(fd, &c, sizeof(c), MSG_NOSIGNAL);
                        cancel_fd = -1;
                }
                if (!p[0].revents)
                        continue;
                ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
                if (n < (ssize_t)sizeof(struct live_reply) && handed) {
                        /* the supervisor went away while the code ran:
                         * the sandbox, its kernel with it, ended under
                         * the call, as at a stop */
                        take_both_pending(io, out, err, tee);
                        *ret = (struct live_kernel_result) { .status = LIVE_KERNEL_DIED, .stopped = true,
                                                             .wall_ms = now_monotonic_ms() - t0 };
                        snprintf(ret->message, sizeof(ret->message),
                                 "the sandbox ended while the call ran: its supervisor went away");
                        r = 0;
                        break;
                }
                if (n < (ssize_t)sizeof(struct live_reply)) {
                        r = -EPIPE;
                        break;
                }
                int nfds = 0;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                        int f;
                                        memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                        if (msg[0] == LIVE_OP_FDS && nfds < 2 && io[nfds] < 0)
                                                io[nfds++] = f;
                                        else
                                                close(f);
                                }
                if (msg[0] == LIVE_OP_BUSY) {
                        /* EUSERS: every job slot of the sandbox is
                         * taken; else the kernel (or the sandbox: a
                         * fork) is in use */
                        r = ((struct live_reply *)(void *)msg)->error == EUSERS ? -EUSERS : -EBUSY;
                        break;
                }
                if (msg[0] == LIVE_OP_FDS)
                        handed = true;
                if (msg[0] == LIVE_OP_FDS && run_id && (size_t)n >= sizeof(struct live_reply))
                        snprintf(run_id, 33, "%.*s", 32, ((struct live_reply *)(void *)msg)->run_id);
                if (msg[0] != LIVE_OP_END)
                        continue;
                struct live_kend e = { 0 };
                memcpy(&e, msg, MIN((size_t)n, sizeof(e)));
                size_t vlen = (size_t)n > sizeof(e) ? (size_t)n - sizeof(e) : 0;
                /* another hutch's supervisor (an upgrade meanwhile) */
                if (e.r.version != LIVE_WIRE_VERSION || (e.value_len != UINT32_MAX && e.value_len != vlen)) {
                        r = -EPROTO;
                        break;
                }
                /* what the call wrote before its reply is in the pipes */
                take_both_pending(io, out, err, tee);
                result_of(&e, msg + sizeof(e), vlen, ret);
                r = 0;
                break;
        }
        for (int i = 0; i < 2; i++)
                if (io[i] >= 0)
                        close(io[i]);
        return r;
}

int live_kernel_call(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                     uint64_t timeout_ms, int cancel_fd, struct capture *out, struct capture *err, bool tee,
                     struct live_kernel_result *ret)
{
        if (len > LIVE_KERNEL_CODE_MAX)
                return -E2BIG;
        if (lang < 0 || lang >= _LIVE_KERNEL_LANG_MAX || !live_name_valid(name))
                return -EINVAL;
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0)
                return dirfd;
        _cleanup_close_ int fd = live_connect(dirfd, name);
        if (fd < 0)
                return fd;
        return live_kernel_call_on(fd, lang, code, len, timeout_ms, cancel_fd, NULL, out, err, tee, NULL, ret);
}

/* A call's outcome by how the kernel answered (not cancelled). */
static void outcome_of_status(const struct live_kernel_result *k, struct run_outcome *o)
{
        switch (k->status) {
        case LIVE_KERNEL_OK:
                o->status = RUN_SUCCESS;
                o->exit_code = o->job_exit_code = EXIT_OK;
                if (k->state_lost)
                        snprintf(o->message, sizeof(o->message),
                                 "a fresh kernel ran this call: the state of earlier calls was lost");
                break;
        case LIVE_KERNEL_ERROR:
                o->status = RUN_FAILED;
                o->exit_code = o->job_exit_code = EXIT_FAILURE_GENERIC;
                snprintf(o->message, sizeof(o->message), "raised %s%s", k->ename[0] ? k->ename : "an error",
                         k->state_lost ? " (a fresh kernel: the state of earlier calls was lost)" : "");
                break;
        case LIVE_KERNEL_INTERRUPTED:
                o->status = RUN_TIMEOUT;
                o->exit_code = EXIT_TIMEOUT;
                snprintf(o->message, sizeof(o->message),
                         "interrupted at its deadline; the kernel and its state live on");
                break;
        case LIVE_KERNEL_DIED:
                if (k->stopped) {
                        o->status = RUN_CANCELLED;
                        o->exit_code = EXIT_CANCELLED_TERM;
                } else if (k->timed_out) {
                        o->status = RUN_TIMEOUT;
                        o->exit_code = EXIT_TIMEOUT;
                } else if (WIFSIGNALED(k->wait_status)) {
                        o->signal = WTERMSIG(k->wait_status);
                        o->status = RUN_SIGNALED;
                        o->exit_code = EXIT_SIGNAL_BASE + o->signal;
                } else {
                        o->status = RUN_FAILED;
                        int c = WIFEXITED(k->wait_status) ? WEXITSTATUS(k->wait_status) : 0;
                        o->exit_code = c ? c : EXIT_FAILURE_GENERIC;
                }
                snprintf(o->message, sizeof(o->message), "%s", k->message);
                break;
        default:
                o->status = RUN_SETUP_ERROR;
                o->exit_code = EXIT_SETUP;
                snprintf(o->message, sizeof(o->message), "%s", k->message);
                break;
        }
}

void live_kernel_outcome(const struct live_kernel_result *k, struct run_outcome *o)
{
        o->wall_ms = k->wall_ms;
        o->job_exit_code = -1;
        /* a call that ran to its end before the cancel took is what it was */
        if (k->cancelled && (k->status == LIVE_KERNEL_INTERRUPTED || k->status == LIVE_KERNEL_DIED)) {
                o->status = RUN_CANCELLED;
                o->exit_code = EXIT_CANCELLED_TERM;
                if (k->status == LIVE_KERNEL_INTERRUPTED)
                        snprintf(o->message, sizeof(o->message),
                                 "cancelled: interrupted; the kernel and its state live on");
                else
                        snprintf(o->message, sizeof(o->message), "cancelled: %s", k->message);
        } else {
                outcome_of_status(k, o);
        }
        if (k->discarded) {
                size_t at = strlen(o->message);
                snprintf(o->message + at, sizeof(o->message) - at,
                         "%s%llu bytes the kernel wrote between calls were dropped", at ? "; " : "",
                         (unsigned long long)k->discarded);
        }
}
