/* server.c - the loop of `hutch mcp` (see server.h).
 *
 * Every step is non-blocking: requests are read and answered as they
 * come, a run's request goes into its child's stdin and its result out
 * of the child's stdout as the pipes allow, SIGCHLD reaps, and the poll
 * timeout is the next progress notification or forced kill. Input is
 * only paused while the client leaves more than MCP_OUT_HIGH of our
 * answers unread.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/lang.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/format.h"
#include "mcp/live.h"
#include "mcp/server-internal.h"
#include "record/store.h"

/* the most a server waits for its output to drain at exit */
#define MCP_EXIT_FLUSH_MS 5000u

static size_t running(const struct mcp_server *s)
{
        size_t n = 0;
        for (const struct mcp_call *c = s->calls; c; c = c->next)
                n += c->state == CALL_RUNNING;
        return n;
}

/* Whether an earlier call (queued or running) holds c's session: calls
 * of one session run one at a time, in the order they came, instead of
 * the later ones failing with "session in use". */
static bool session_busy(const struct mcp_server *s, const struct mcp_call *c)
{
        if (!c->session)
                return false;
        for (const struct mcp_call *o = s->calls; o && o != c; o = o->next)
                if (o->session && streq(o->session, c->session))
                        return true;
        return false;
}

static void start_queued(struct mcp_server *s, uint64_t now)
{
        size_t n = running(s);
        for (struct mcp_call **p = &s->calls; *p && n < s->cfg->max_concurrent;) {
                struct mcp_call *c = *p;
                if (c->state != CALL_QUEUED || session_busy(s, c)) {
                        p = &c->next;
                        continue;
                }
                if (c->session && s->cfg->live && c->kind == CALL_RUN && !c->live_fallback) {
                        /* into the session's live sandbox, once it is up */
                        int k = live_dispatch(s, c, now);
                        if (k < 0) {
                                *p = c->next;
                                call_free(c);
                                continue;
                        }
                        n += k;
                        c->live_waiting = k == 0;
                        p = &c->next;
                        continue;
                }
                int r = call_spawn(c, s->exe_fd, s->cfg->run_args);
                if (r < 0) {
                        log_error("mcp: cannot start hutch run: %s", strerror(-r));
                        mcp_send_call_result(s, c, mcp_result_error("the server could not start hutch run: %s",
                                                                    strerror(-r)));
                        *p = c->next;
                        call_free(c);
                        continue;
                }
                call_write(c);
                n++;
                p = &c->next;
        }
}

static void reap(struct mcp_server *s, uint64_t now)
{
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
                if (live_reaped(s, pid, st, now))
                        continue;
                for (struct mcp_call *c = s->calls; c; c = c->next)
                        if (c->state == CALL_RUNNING && c->pid == pid) {
                                call_exited(c, st);
                                break;
                        }
        }
}

/* Answer and drop the calls whose child is done. */
static void finish_calls(struct mcp_server *s, uint64_t now)
{
        for (struct mcp_call **p = &s->calls; *p;) {
                struct mcp_call *c = *p;
                if (!call_finished(c)) {
                        p = &c->next;
                        continue;
                }
                /* named as it is: a kernel call is a thread, no child */
                const char *what = c->threaded ? "the session's kernel call"
                                 : c->kind == CALL_RUN ? "hutch run" : "hutch exec";
                json_t *r = mcp_result_from_child(what, c->out, c->out_len, c->out_overflow, c->wstatus);
                if (c->kind != CALL_RUN)
                        /* a cancelled live call still labels its run and
                         * sets its sandbox's idle time */
                        r = live_call_finished(s, c, r, now);
                else if (c->live_fallback) {
                        char *note = c->note ? xasprintf("%s; %s", c->live_fallback, c->note) : xstrdup(c->live_fallback);
                        free(c->note);
                        c->note = note;
                }
                /* a cancelled call gets nothing more (the spec's MUST NOT) */
                if (!c->cancelled) {
                        if (c->kind != CALL_PS)
                                mcp_result_note(r, c->note);
                        mcp_send_call_result(s, c, r);
                } else
                        json_decref(r);
                *p = c->next;
                call_free(c);
        }
}

static void close_input(struct mcp_server *s, uint64_t now)
{
        if (s->closing)
                return;
        s->closing = true;
        for (struct mcp_call **p = &s->calls; *p;) {
                struct mcp_call *c = *p;
                if (c->state == CALL_QUEUED) {
                        *p = c->next;
                        call_free(c);
                        continue;
                }
                call_cancel(c, now, MCP_CANCEL_KILL_MS);
                p = &c->next;
        }
}

/* Send the progress notifications that are due and kill the children
 * whose grace ran out; returns the poll timeout to the next of these.
 * Progress is due every MCP_PROGRESS_MS from the call's arrival (the
 * first at 5 s, not 10). */
static int timers(struct mcp_server *s, uint64_t now)
{
        uint64_t next = UINT64_MAX;
        size_t ahead = running(s);
        for (struct mcp_call *c = s->calls; c; c = c->next) {
                if (c->kill_at_ms && !c->exited && c->pid > 0) {
                        if (now >= c->kill_at_ms) {
                                /* hutch run did not finish recording in time: the
                                 * run's row becomes an orphan; say so */
                                log_error("mcp: hutch run %d did not end after cancel; killing it", (int)c->pid);
                                (void)kill(c->pid, SIGKILL);
                                c->kill_at_ms = UINT64_MAX;
                        }
                        next = MIN(next, c->kill_at_ms);
                }
                if (c->progress_token && !c->cancelled && c->next_progress_ms != UINT64_MAX) {
                        if (now >= c->next_progress_ms) {
                                mcp_send_progress(s, c, now, c->state == CALL_QUEUED ? ahead : 0,
                                                  c->state == CALL_QUEUED && session_busy(s, c));
                                /* on the call's own 5 s grid, whatever the loop's lateness */
                                while (c->next_progress_ms <= now)
                                        c->next_progress_ms += MCP_PROGRESS_MS;
                        }
                        next = MIN(next, c->next_progress_ms);
                }
                if (c->state == CALL_QUEUED)
                        ahead++;
        }
        int t = next == UINT64_MAX ? -1 : (int)MIN(next - now, 60000u), lt = live_timers(s, now);
        return t < 0 ? lt : lt < 0 ? t : MIN(t, lt);
}

static int setup_fds(sigset_t *mask, int *ret_sigfd, int flags[2])
{
        sigemptyset(mask);
        sigaddset(mask, SIGCHLD);
        sigaddset(mask, SIGTERM);
        sigaddset(mask, SIGINT);
        sigaddset(mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, mask, NULL) < 0)
                return -errno;
        int fd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (fd < 0)
                return -errno;
        signal(SIGPIPE, SIG_IGN);
        for (int i = 0; i < 2; i++) {
                flags[i] = fcntl(i, F_GETFL);
                if (flags[i] < 0 || fcntl(i, F_SETFL, flags[i] | O_NONBLOCK) < 0) {
                        close(fd);
                        return -errno;
                }
        }
        *ret_sigfd = fd;
        return 0;
}

/* The fds of one round: the signalfd, stdin (when wanted), stdout (when
 * output waits), then each call's output and input pipes. Caller frees. */
static struct pollfd *poll_set(struct mcp_server *s, int sigfd, bool want_in, size_t *ret_n)
{
        size_t n_calls = 0, n = 0;
        for (struct mcp_call *c = s->calls; c; c = c->next)
                n_calls++;
        struct pollfd *pf = xcalloc(3 + 2 * n_calls, sizeof(*pf));
        pf[n++] = (struct pollfd) { .fd = sigfd, .events = POLLIN };
        pf[n++] = (struct pollfd) { .fd = want_in ? STDIN_FILENO : -1, .events = POLLIN };
        pf[n++] = (struct pollfd) { .fd = wire_out_pending(&s->out) ? STDOUT_FILENO : -1, .events = POLLOUT };
        for (struct mcp_call *c = s->calls; c; c = c->next) {
                pf[n++] = (struct pollfd) { .fd = c->out_fd, .events = POLLIN };
                pf[n++] = (struct pollfd) { .fd = c->in_fd, .events = POLLOUT };
        }
        *ret_n = n;
        return pf;
}

/* A signal but SIGCHLD closes the input (the runs in flight are
 * cancelled); every one reaps what ended. */
static void serve_signals(struct mcp_server *s, int sigfd, uint64_t now)
{
        struct signalfd_siginfo si;
        while (read(sigfd, &si, sizeof(si)) == sizeof(si))
                if (si.ssi_signo != SIGCHLD) {
                        log_info("mcp: %s: cancelling the runs in flight", strsignal((int)si.ssi_signo));
                        close_input(s, now);
                }
        reap(s, now);
}

/* The requests waiting on stdin, until the output is too far behind;
 * at the end of input, close it. */
static void read_requests(struct mcp_server *s, uint64_t now)
{
        int r = wire_in_fill(&s->in);
        if (r < 0)
                log_error("mcp: reading stdin: %s", strerror(-r));
        char *line;
        enum wire_line w;
        while (!s->closing && (w = wire_in_next(&s->in, &line)) != WIRE_NONE) {
                if (w == WIRE_TOO_LONG)
                        mcp_handle_too_long(s);
                else {
                        mcp_handle_line(s, line, now);
                        free(line);
                }
                if (wire_out_pending(&s->out) >= MCP_OUT_HIGH)
                        break;
        }
        if ((s->in.eof || r < 0) && !s->closing && (s->in.len == 0 || s->in.skipping)) {
                log_debug("mcp: end of input");
                close_input(s, now);
        }
}

/* Whether the server is done: input closed, no call left, and the
 * output written (or broken, or past its flush deadline). */
static bool finished(struct mcp_server *s, uint64_t now, uint64_t *flush_until)
{
        if (!s->closing || s->calls || s->lives)
                return false;
        if (!wire_out_pending(&s->out) || s->out.broken)
                return true;
        if (!*flush_until)
                *flush_until = now + MCP_EXIT_FLUSH_MS;
        return now >= *flush_until;
}

/* The loop, until finished() or poll() fails: 0 or -errno. */
static int serve_loop(struct mcp_server *s, int sigfd)
{
        uint64_t flush_until = 0;

        for (;;) {
                uint64_t now = now_monotonic_ms();
                /* answer the finished calls first: their slots (and
                 * sessions) are free for the queued ones at once */
                finish_calls(s, now);
                if (!s->closing)
                        start_queued(s, now);
                /* progress due now goes out in this round's flush, not
                 * the next wake's */
                int timeout = timers(s, now);
                (void)wire_out_flush(&s->out);
                if (s->out.broken)
                        close_input(s, now);
                if (finished(s, now, &flush_until))
                        return 0;

                bool want_in = !s->closing && wire_out_pending(&s->out) < MCP_OUT_HIGH;
                size_t n;
                struct pollfd *pf = poll_set(s, sigfd, want_in, &n);
                if (want_in && wire_in_has_line(&s->in))
                        timeout = 0;    /* lines left from the last round */
                if (flush_until)
                        timeout = (int)MIN((uint64_t)(timeout < 0 ? INT32_MAX : timeout), flush_until - now);
                if (poll(pf, n, timeout) < 0 && errno != EINTR) {
                        int r = -errno;
                        free(pf);
                        return r;
                }
                now = now_monotonic_ms();

                if (pf[0].revents)
                        serve_signals(s, sigfd, now);
                size_t k = 3;
                for (struct mcp_call *c = s->calls; c; c = c->next, k += 2) {
                        if (pf[k].revents)
                                call_read(c);
                        if (pf[k + 1].revents)
                                call_write(c);
                }
                free(pf);
                if (want_in)
                        read_requests(s, now);
        }
}

int mcp_serve(const struct mcp_config *cfg)
{
        struct mcp_server s = { .cfg = cfg, .keeper_fd = -1 };
        sigset_t mask;
        int flags[2], r;
        _cleanup_close_ int sigfd = -1;

        /* in-process kernel calls run in threads, each with a store
         * connection of its own */
        r = store_library_threads();
        if (r < 0)
                return log_error_errno(r, "mcp: the run store was opened before its threads could be allowed");
        r = ulid_new(s.session);
        if (r < 0)
                return r;
        /* the binary this server is, whatever its path holds later */
        _cleanup_close_ int exe_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
        if (exe_fd < 0)
                return -errno;
        s.exe_fd = exe_fd;
        if (cfg->live) {
                /* run_code in a live session runs its language's command
                 * itself; without the table it says so in each call */
                if (lang_table_load(NULL, &s.langs, NULL) < 0)
                        s.langs = NULL;
                /* before anything else is open: it holds none of it */
                pid_t keeper;
                r = mcp_keeper_start(exe_fd, &s.keeper_fd, &keeper);
                if (r < 0)
                        return r;
        }
        r = setup_fds(&mask, &sigfd, flags);
        if (r < 0)
                return r;
        wire_in_init(&s.in, STDIN_FILENO);
        wire_out_init(&s.out, STDOUT_FILENO);
        log_info("mcp: session %s: serving on stdin/stdout", s.session);

        r = serve_loop(&s, sigfd);

        /* leave the client's descriptors as they were */
        for (int i = 0; i < 2; i++)
                (void)fcntl(i, F_SETFL, flags[i]);
        sigprocmask(SIG_UNBLOCK, &mask, NULL);
        while (s.calls) {
                struct mcp_call *c = s.calls;
                s.calls = c->next;
                call_free(c);
        }
        live_free_all(&s);
        if (s.keeper_fd >= 0)
                close(s.keeper_fd);     /* the keeper stops what is left, and exits */
        lang_table_free(s.langs);
        free(s.legacy_version);
        free(s.legacy_client);
        wire_in_done(&s.in);
        wire_out_done(&s.out);
        return r;
}
