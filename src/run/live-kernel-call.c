/* run/live-kernel-call.c - a kernel call, client side (run/live-kernel.h):
 * the request on the control socket, the call's output read from the
 * kernel's pipes the supervisor lends for it, the reply, and the record
 * of `hutch exec NAME --kernel LANG`. The supervisor's side is
 * live-kernel.c. */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "record/store.h"
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
static ssize_t take(int *fd, struct capture *cap, int out, bool tee)
{
        char buf[65536];
        ssize_t n = read(*fd, buf, sizeof(buf));
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

/* The request; with cwd, a recorded one (LIVE_EXEC_FINISH: the
 * supervisor writes the call's row, and its end at our FINISH). */
static int request(int fd, enum live_kernel_lang lang, const char *code, size_t len, uint64_t timeout_ms,
                   const char *cwd)
{
        struct live_kreq req;
        memset(&req, 0, sizeof(req));   /* no stack bytes in the padding */
        req.op = LIVE_OP_KERNEL;
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

/* The call on connection fd (live_kernel_call()); with cwd recorded by
 * the supervisor, whose row's id goes to run_id ("" if it wrote none). */
static int call_on(int fd, enum live_kernel_lang lang, const char *code, size_t len, uint64_t timeout_ms,
                   const char *cwd, struct capture *out, struct capture *err, bool tee, char run_id[33],
                   struct live_kernel_result *ret)
{
        const size_t msg_size = sizeof(struct live_kend) + LIVE_KERNEL_VALUE_MAX + 1;
        int io[2] = { -1, -1 };
        int r = request(fd, lang, code, len, timeout_ms, cwd);
        if (r < 0)
                return r;
        _cleanup_free_ char *msg = xmalloc(msg_size);
        for (;;) {
                char cbuf[CMSG_SPACE(2 * sizeof(int))];
                struct iovec iov = { msg, msg_size };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof(cbuf) };
                struct pollfd p[3] = { { .fd = fd, .events = POLLIN }, { .fd = io[0], .events = POLLIN },
                                       { .fd = io[1], .events = POLLIN } };
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (p[1].revents)
                        (void)take(&io[0], out, STDOUT_FILENO, tee);
                if (p[2].revents)
                        (void)take(&io[1], err, STDERR_FILENO, tee);
                if (!p[0].revents)
                        continue;
                ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
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
                        r = -EBUSY;
                        break;
                }
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
                for (int i = 0; i < 2; i++)
                        while (io[i] >= 0 && take(&io[i], i ? err : out, i ? STDERR_FILENO : STDOUT_FILENO, tee) > 0)
                                ;
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
                     uint64_t timeout_ms, struct capture *out, struct capture *err, bool tee,
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
        return call_on(fd, lang, code, len, timeout_ms, NULL, out, err, tee, NULL, ret);
}

void live_kernel_outcome(const struct live_kernel_result *k, struct run_outcome *o)
{
        o->wall_ms = k->wall_ms;
        o->job_exit_code = -1;
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
        if (k->discarded) {
                size_t at = strlen(o->message);
                snprintf(o->message + at, sizeof(o->message) - at,
                         "%s%llu bytes the kernel wrote between calls were dropped", at ? "; " : "",
                         (unsigned long long)k->discarded);
        }
}

/* The call's outcome (o) from what live_kernel_call() returned (k, res),
 * the value appended to the captured stdout (and printed, unless json)
 * as a REPL shows it. */
static void outcome_of_call(const char *name, const char *ls, int k, const struct live_kernel_result *res,
                            struct capture *co, bool json, struct run_outcome *o)
{
        if (k < 0) {
                o->status = RUN_SETUP_ERROR;
                o->exit_code = k == -EBUSY ? EXIT_BUSY : EXIT_SETUP;
                snprintf(o->message, sizeof(o->message), "sandbox %s: %s", name,
                         k == -EBUSY   ? "its kernel is running another call, or restarting; try again"
                         : k == -EPIPE ? "its supervisor went away"
                                       : strerror(-k));
                return;
        }
        if (res->value) {
                capture_append(co, res->value, strlen(res->value));
                capture_append(co, "\n", 1);
                if (!json) {
                        (void)write_all(STDOUT_FILENO, res->value, strlen(res->value));
                        (void)write_all(STDOUT_FILENO, "\n", 1);
                }
        }
        live_kernel_outcome(res, o);
        /* (a stop or a deadline is the run's error, said at its end) */
        if (res->status == LIVE_KERNEL_DIED && !res->stopped && !res->timed_out && !json)
                log_warning("exec: %s", res->message);
        if (res->state_lost && res->status != LIVE_KERNEL_DIED && !json)
                log_warning("exec: a fresh %s kernel ran this call: the state of earlier calls was lost", ls);
        if (res->discarded && !json)
                log_warning("exec: %llu bytes the %s kernel wrote between calls were dropped (its output is "
                            "kept only while a call runs)", (unsigned long long)res->discarded, ls);
}

/* The call's row as its client writes it (--json, or when the
 * supervisor wrote none: a refused call): not yet inserted. */
static struct run_record *call_record(struct store *s, int dirfd, const char *name, const char *ls, const char *code,
                                      size_t len, const char *cwd)
{
        _cleanup_free_ char *profile = xasprintf("sandbox:%s", name);
        char *argv[] = { "--kernel", (char *)ls, NULL };
        struct run_record *rec = run_record_new();
        if (run_record_begin(rec, argv, cwd, profile) < 0)
                return run_record_free(rec), NULL;
        rec->lang = xstrdup(ls);
        rec->code = xmalloc(len + 1);
        memcpy(rec->code, code, len);
        rec->code[len] = '\0';
        rec->code_len = len;
        live_inherit_sandbox(s, dirfd, name, rec);
        return rec;
}

static int insert(struct store *s, struct run_record *rec, const char *name, const char *ls)
{
        _cleanup_free_ char *label = xasprintf("sandbox=%s", name), *klabel = xasprintf("kernel=%s", ls);
        char *labels[] = { label, klabel, NULL };
        if (store_run_insert(s, rec) < 0 || store_labels_set(s, rec->id, labels) < 0) {
                log_error("exec: run store %s: %s", store_path(s), store_error(s));
                return -EIO;
        }
        log_info("run %s", rec->id);
        return 0;
}

/* Recorded by the supervisor (not --json): the row before the call, the
 * end at our FINISH, synced before DONE, and no store opened here. We
 * record it ourselves only when it wrote no row (a refused call), or
 * could not write the end. */
int live_kernel_exec(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                     uint64_t timeout_ms, bool json, const struct run_ui *ui)
{
        _cleanup_free_ char *cwd = getcwd(NULL, 0), *db = NULL, *error = NULL;
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_capture_ struct capture *co = NULL, *ce = NULL;
        struct live_kernel_result res = { 0 };
        struct run_config cfg;
        struct run_outcome o = { 0 };
        const char *ls = live_kernel_lang_to_string(lang);
        char run_id[33] = "";

        if (!live_name_valid(name)) {
                log_error("exec: \"%s\": not a sandbox name (1-64 of A-Z a-z 0-9 . _ -)", name);
                return EXIT_USAGE;
        }
        if (len > LIVE_KERNEL_CODE_MAX) {
                log_error("exec: --kernel code of %zu bytes: at most %u", len, LIVE_KERNEL_CODE_MAX);
                return EXIT_USAGE;
        }
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0)
                return EXIT_SETUP;
        _cleanup_close_ int fd = live_connect(dirfd, name);
        if (fd < 0) {
                log_error("exec: no running sandbox %s (hutch sandbox ls)", name);
                return EXIT_SETUP;
        }
        if (json) {
                /* the client's own record, the row before the call */
                if (store_default_path(&db) < 0 || store_open(db, &s, &error) < 0) {
                        log_error("exec: run store: %s", error ? error : "set HUTCH_STATE_DIR or HOME");
                        return EXIT_SETUP;
                }
                rec = call_record(s, dirfd, name, ls, code, len, cwd ? cwd : "");
                if (!rec || insert(s, rec, name, ls) < 0)
                        return EXIT_SETUP;
        }
        signal(SIGPIPE, SIG_IGN);
        run_config_init(&cfg);
        co = capture_new(cfg.capture_bytes);
        ce = capture_new(cfg.capture_bytes);
        int k = call_on(fd, lang, code, len, timeout_ms, json ? NULL : cwd ? cwd : "", co, ce, !json, run_id, &res);
        if (run_id[0])
                log_info("run %s", run_id);
        outcome_of_call(name, ls, k, &res, co, json, &o);
        live_kernel_result_done(&res);
        if (!json && run_id[0] && k == 0 && live_finish(fd, &o, co, ce) == 0) {
                live_say_outcome(&o);
                run_config_done(&cfg);
                return o.exit_code;
        }
        if (!s && (store_default_path(&db) < 0 || store_open(db, &s, &error) < 0)) {
                log_error("exec: run store: %s", error ? error : "set HUTCH_STATE_DIR or HOME");
                run_config_done(&cfg);
                return EXIT_SETUP;
        }
        if (!rec && run_id[0] && store_run_get(s, run_id, &rec, NULL) < 0)
                rec = NULL;
        if (!rec) {
                rec = call_record(s, dirfd, name, ls, code, len, cwd ? cwd : "");
                if (!rec || insert(s, rec, name, ls) < 0) {
                        run_config_done(&cfg);
                        return EXIT_SETUP;
                }
        }
        run_finish_record(ui, s, rec, &cfg, &o, co, ce, NULL, NULL, NULL, json);
        run_config_done(&cfg);
        return o.exit_code;
}
