/* live-sessions.c - the server's side of live sessions (mcp/live.h): a
 * session's sandbox from its first call to its stop.
 *
 * A sandbox is STARTING while `hutch sandbox start` runs (the session's
 * call waits, queued), UP while calls exec into it, STOPPING while
 * `hutch sandbox stop` (commit) or `hutch kill` (throw away) runs. The
 * server stops it when no call of the session has come for idle_ms, and
 * every one when it closes; the keeper stops what is left if the server
 * dies. A sandbox that cannot start (a profile a live sandbox refuses,
 * such as runtime gvisor) does not stop the call: it runs the way a
 * session call ran before, in a fresh sandbox, and its result says so.
 *
 * Commit: files and processes stay in the sandbox between calls,
 * whatever each call did. Nothing reaches the session's stored tree
 * before the sandbox stops, so every live call's result says
 * committed: false. Its stop commits or throws away by the commit
 * policy of the session's latest call: always (the default) commits,
 * never throws away, success commits only if that call succeeded.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/format.h"
#include "mcp/live.h"
#include "mcp/server-internal.h"
#include "mcp/tools.h"
#include "record/store.h"
#include "run/live-kernel.h"

static struct mcp_live *find(struct mcp_server *s, const char *session)
{
        for (struct mcp_live *l = s->lives; l; l = l->next)
                if (session && streq(l->session, session))
                        return l;
        return NULL;
}

static void drop(struct mcp_server *s, struct mcp_live *l)
{
        for (struct mcp_live **p = &s->lives; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
        call_free(l->helper);
        free(l->session);
        free(l->name);
        free(l);
}

/* Run helper argv for l (STARTING or STOPPING). 0 or -errno. */
static int spawn_helper(struct mcp_server *s, struct mcp_live *l, char **argv, uint64_t now)
{
        call_free(l->helper);
        l->helper = call_new_helper(argv, now);
        int r = call_spawn(l->helper, s->exe_fd, NULL);
        if (r < 0) {
                call_free(l->helper);
                l->helper = NULL;
                return r;
        }
        call_write(l->helper);
        return 0;
}

static void stop(struct mcp_server *s, struct mcp_live *l, const char *why, uint64_t now)
{
        char **argv = NULL;
        size_t n = 0;
        _cleanup_free_ char *id = l->commit ? NULL : mcp_live_run_id(s->exe_fd, l->name);

        log_info("mcp: session %s: its sandbox %s stops (%s) and %s", l->session, l->name, why,
                 l->commit ? "commits its files" : "throws its files away");
        argv = strv_push(argv, &n, "hutch");
        if (id) {
                /* a cancelled run of --commit success commits nothing */
                argv = strv_push(argv, &n, "kill");
                argv = strv_push(argv, &n, "--grace=0");
                argv = strv_push(argv, &n, id);
        } else {
                argv = strv_push(argv, &n, "sandbox");
                argv = strv_push(argv, &n, "stop");
                argv = strv_push(argv, &n, l->name);
        }
        l->state = LIVE_STOPPING;
        int r = spawn_helper(s, l, argv, now);
        if (r < 0) {
                /* the keeper still has its name: it stops it when we exit */
                log_error("mcp: session %s: cannot stop its sandbox %s: %s", l->session, l->name, strerror(-r));
                drop(s, l);
        }
}

static char **labels_of(const json_t *req, const char *sandbox);

/* An in-process kernel call, run by a thread of its own.
 *
 * Why a thread: live_kernel_call() blocks for the whole call (it waits
 * on the supervisor's socket and the output pipes it lends until the
 * reply), and the server's loop must go on reading requests, serving
 * other sessions and sending progress meanwhile. A non-blocking variant
 * would be a second implementation of the kernel's protocol inside mcp/;
 * a thread keeps live_kernel_call() as it is, and costs well under a
 * millisecond to start against the 10-20 ms of spawning `hutch exec`
 * (a process start and a store open). The thread shares nothing with
 * the loop: it owns copies of what it needs, opens its own store
 * connection (live_kernel_record(): the record is durable before it
 * answers), and hands its answer back on a pipe that the loop reads as
 * it reads a child's stdout (calls.c), whole at its end; the thread is
 * detached, and closes its store (a due checkpoint, sqlite's at the last
 * close) after answering. Signals stay blocked in it (inherited from the loop, which
 * takes them through its signalfd). Cancelling (notifications/cancelled,
 * the server's exit) hangs up the thread's cancel pipe: the call is
 * interrupted as at its deadline (the kernel and its state live on) and
 * recorded cancelled; the server answers nothing (server.c). */
struct kcall {
        char *name, *code;
        size_t len;
        enum live_kernel_lang lang;
        uint64_t timeout_ms;
        char **labels;
        const struct run_ui *ui;
        int wfd;
        int cancel_fd;          /* hangs up at the call's cancel */
};

static void *kcall_main(void *p)
{
        struct kcall *k = p;
        _cleanup_free_ char *error = NULL, *text = NULL, *db = NULL;
        struct store *st = NULL;
        json_t *o = NULL;

        /* a due checkpoint, and sqlite's at the close of the last
         * connection, wait for the disk: both after the answer */
        if (store_default_path(&db) >= 0 && store_open(db, &st, &error) >= 0)
                store_defer_checkpoints(st);
        int code = st ? live_kernel_record(k->name, k->lang, k->code, k->len, k->timeout_ms, k->cancel_fd, k->labels,
                                           k->ui, st, &o, &error)
                      : EXIT_SETUP;
        /* busy (75): refused before it ran and recorded nowhere, as the
         * hutch exec of a busy sandbox's command says, retryable */
        bool busy = !o && code == EXIT_BUSY;
        if (!o)
                o = json_pack("{s:s, s:s, s:s, s:s, s:b, s:i}", "schema", "hutch.error/1", "error",
                              busy ? "busy" : "error", "code", busy ? "sandbox_busy" : "failed", "message",
                              error ? error : "no record", "retryable", busy, "exit_code", code);
        text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
        json_decref(o);
        if (text)
                (void)write_all(k->wfd, text, strlen(text));
        close(k->wfd);
        close(k->cancel_fd);
        if (st) {
                store_checkpoint_if_due(st);
                store_close(st);
        }
        free(k->name);
        free(k->code);
        strv_free(k->labels);
        free(k);
        return NULL;
}

/* Start c, a kernel call (lang) into l's sandbox, in a thread. 1, or -1
 * when it could not start (answered). */
static int kcall_start(struct mcp_server *s, struct mcp_live *l, struct mcp_call *c, const json_t *req,
                       enum live_kernel_lang lang)
{
        json_t *code = json_object_get(req, "code");
        json_int_t t = json_integer_value(json_object_get(json_object_get(req, "limits"), "timeout_ms"));
        struct kcall *k = xcalloc(1, sizeof(*k));
        int wfd, cancel_fd, r;

        c->kind = CALL_LIVE;
        c->sandbox = xstrdup(l->name);
        k->name = xstrdup(l->name);
        k->len = json_string_length(code);
        k->code = xmalloc(k->len + 1);
        memcpy(k->code, json_string_value(code), k->len + 1);
        k->lang = lang;
        k->timeout_ms = t > 0 ? (uint64_t)t : 30000;
        k->labels = labels_of(req, l->name);
        k->ui = s->cfg->ui;
        r = call_start_thread(c, &wfd, &cancel_fd);
        if (r >= 0) {
                k->wfd = wfd;
                k->cancel_fd = cancel_fd;
                r = -pthread_create(&c->thread, NULL, kcall_main, k);
                if (r == 0)
                        /* nobody waits for it: the answer is its pipe's
                         * end, what it does after (the store's close)
                         * is its own business */
                        (void)pthread_detach(c->thread);
                else {
                        close(wfd);
                        close(cancel_fd);
                        close(c->out_fd);
                        c->out_fd = -1;
                }
        }
        if (r < 0) {
                free(k->name);
                free(k->code);
                strv_free(k->labels);
                free(k);
                log_error("mcp: cannot start a kernel call: %s", strerror(-r));
                mcp_send_call_result(s, c, mcp_result_error("the server could not start a kernel call: %s",
                                                            strerror(-r)));
                return -1;
        }
        ++l->seq;
        l->idle_at_ms = 0;
        return 1;
}

/* The session's name as the model gave it: the hutch session's without
 * the server's prefix (mcp_session_name()). */
static const char *model_name(const struct mcp_server *s, const char *full)
{
        bool dflt = !s->cfg->scope || streq(s->cfg->scope, MCP_SCOPE_DEFAULT);
        const char *prefix = dflt ? MCP_SESSION_PREFIX : MCP_SCOPED_SESSION_PREFIX;
        if (!startswith(full, prefix))
                return full;
        const char *p = full + strlen(prefix);
        size_t n = dflt ? 0 : strlen(s->cfg->scope);
        if (!dflt && strncmp(p, s->cfg->scope, n) == 0 && p[n] == '-')
                p += n + 1;
        return p;
}

json_t *live_cap_refusal(struct mcp_server *s, const char *session)
{
        unsigned n = 0;

        if (!s->cfg->live || !session || find(s, session))
                return NULL;
        /* a stopping sandbox still holds its processes until its stop
         * ends: it counts until then */
        for (struct mcp_live *l = s->lives; l; l = l->next)
                n++;
        if (n < s->cfg->max_sessions)
                return NULL;
        _cleanup_free_ char *names = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&names, &len);
        if (f) {
                for (struct mcp_live *l = s->lives; l; l = l->next)
                        fprintf(f, "%s\"%s\"", l == s->lives ? "" : ", ", model_name(s, l->session));
                fclose(f);
        }
        char idle[32] = "";
        (void)format_duration_ms(s->cfg->idle_ms, idle, sizeof(idle));
        log_info("mcp: session %s refused: %u live sessions, the --max-sessions cap", session, n);
        return mcp_result_error_code("admission_full", true,
                                     "session \"%s\": this server already has %u live sessions, its cap (hutch mcp "
                                     "--max-sessions %u), so no sandbox starts for a new session now and this call "
                                     "did not run. Use one of the live sessions (%s), or try again once one stops: a "
                                     "session's sandbox stops after %s without a call (--idle-timeout); no tool ends "
                                     "one sooner", model_name(s, session), n, s->cfg->max_sessions,
                                     names ? names : "?", idle);
}

int live_dispatch(struct mcp_server *s, struct mcp_call *c, uint64_t now)
{
        struct mcp_live *l = find(s, c->session);
        _cleanup_(json_decrefp) json_t *req = json_loads(c->request, JSON_ALLOW_NUL, NULL);
        _cleanup_free_ char *error = NULL;
        char **argv = NULL, *input = NULL;
        int r;

        if (!l) {
                json_t *refused = live_cap_refusal(s, c->session);
                if (refused) {
                        mcp_send_call_result(s, c, refused);
                        return -1;
                }
                l = xcalloc(1, sizeof(*l));
                l->session = xstrdup(c->session);
                l->name = xasprintf("mcp-%s-%u", s->session, ++s->live_count);
                l->commit = true;
                l->state = LIVE_STARTING;
                /* told before the start: a server killed during it leaves
                 * the keeper a name to stop */
                mcp_keeper_tell(s->keeper_fd, '+', l->name);
                r = spawn_helper(s, l, mcp_live_start_argv(l->name, c->session, req, s->cfg->limits,
                                                           s->cfg->run_args, s->cfg->publish, s->cfg->idle_ms),
                                   now);
                if (r < 0) {
                        c->live_fallback = xasprintf("the server could not run hutch sandbox start: %s",
                                                     strerror(-r));
                        mcp_keeper_tell(s->keeper_fd, '-', l->name);
                        free(l->session);
                        free(l->name);
                        free(l);
                        return 0;
                }
                l->next = s->lives;
                s->lives = l;
                return 0;
        }
        if (l->state != LIVE_UP)
                return 0;
        int k = s->cfg->ui && s->cfg->kernels ? mcp_live_kernel_lang(req) : -EINVAL;
        if (k >= 0)
                return kcall_start(s, l, c, req, (enum live_kernel_lang)k);
        r = mcp_live_exec_argv(l->name, req, s->langs, ++l->seq, s->cfg->kernels, &argv, &input, &error);
        if (r < 0) {
                mcp_send_call_result(s, c, mcp_result_error("%s", error));
                return -1;
        }
        c->argv = argv;
        c->kind = CALL_LIVE;
        c->sandbox = xstrdup(l->name);
        /* its stdin: the call's script, or nothing */
        c->input = input;
        c->request_len = input ? strlen(input) : 0;
        c->request_off = 0;
        r = call_spawn(c, s->exe_fd, NULL);
        if (r < 0) {
                log_error("mcp: cannot start hutch exec: %s", strerror(-r));
                mcp_send_call_result(s, c, mcp_result_error("the server could not start hutch exec: %s",
                                                            strerror(-r)));
                return -1;
        }
        call_write(c);
        l->idle_at_ms = 0;
        return 1;
}

/* A helper's message: its output on one line, without "hutch: ". */
static char *start_message(const struct mcp_call *h)
{
        char *m = xstrdup(h->out ? h->out : "");
        size_t w = 0;
        for (size_t i = 0; m[i]; i++) {
                if (startswith(m + i, "hutch: ") && (i == 0 || m[i - 1] == '\n'))
                        i += strlen("hutch: ");
                m[w++] = m[i] == '\n' ? ' ' : m[i];
                if (!m[i])
                        break;
        }
        m[w] = '\0';
        while (w && m[w - 1] == ' ')
                m[--w] = '\0';
        if (w > 400)
                m[400] = '\0';
        return m;
}

bool live_reaped(struct mcp_server *s, pid_t pid, int wstatus, uint64_t now)
{
        struct mcp_live *l = s->lives;
        while (l && !(l->helper && l->helper->state == CALL_RUNNING && l->helper->pid == pid))
                l = l->next;
        if (!l)
                return false;
        call_exited(l->helper, wstatus);
        if (l->state == LIVE_STOPPING) {
                if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
                        _cleanup_free_ char *why = start_message(l->helper);
                        /* its own idle timeout still ends it */
                        log_warning("mcp: session %s: stopping its sandbox %s failed: %s", l->session, l->name,
                                    *why ? why : "no message");
                }
                log_debug("mcp: sandbox %s stopped", l->name);
                mcp_keeper_tell(s->keeper_fd, '-', l->name);
                drop(s, l);
                return true;
        }
        if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
                l->state = LIVE_UP;
                l->idle_at_ms = now + s->cfg->idle_ms;
                log_info("mcp: session %s: live sandbox %s is up", l->session, l->name);
                call_free(TAKE_PTR(l->helper));
                return true;
        }
        _cleanup_free_ char *why = start_message(l->helper);
        log_warning("mcp: session %s: its live sandbox did not start: %s", l->session, why);
        /* the call that waited for it runs as a session call did before */
        for (struct mcp_call *c = s->calls; c; c = c->next)
                if (c->state == CALL_QUEUED && c->kind == CALL_RUN && c->session && streq(c->session, l->session) &&
                    !c->live_fallback) {
                        c->live_fallback = xasprintf("the session's live sandbox could not start (%s): this call ran "
                                                     "in a fresh sandbox of the session, whose files are kept "
                                                     "but whose processes end with the call",
                                                     *why ? why : "no message");
                        break;
                }
        mcp_keeper_tell(s->keeper_fd, '-', l->name);
        drop(s, l);
        return true;
}

int live_timers(struct mcp_server *s, uint64_t now)
{
        uint64_t next = UINT64_MAX;
        for (struct mcp_live *l = s->lives, *nx; l; l = nx) {
                nx = l->next;
                if (l->state != LIVE_UP)
                        continue;
                bool busy = false;
                for (struct mcp_call *c = s->calls; c && !busy; c = c->next)
                        /* a kernel call the server's exit cancelled is
                         * interrupted; the stop need not wait for it
                         * (it ends with the sandbox at the latest) */
                        busy = !(s->closing && c->threaded && c->cancelled) &&
                               ((c->session && streq(c->session, l->session)) ||
                                (c->sandbox && streq(c->sandbox, l->name)));
                if (busy)
                        continue;
                if (s->closing)
                        stop(s, l, "the server exits", now);
                else if (l->idle_at_ms && now >= l->idle_at_ms)
                        stop(s, l, "idle timeout", now);
                else if (l->idle_at_ms)
                        next = MIN(next, l->idle_at_ms);
        }
        return next == UINT64_MAX ? -1 : (int)MIN(next - now, 60000u);
}

/* "k=v" of every label of the call's request, and mcp.live=SANDBOX. */
static char **labels_of(const json_t *req, const char *sandbox)
{
        char **v = NULL;
        size_t n = 0;
        const char *k;
        json_t *x;
        json_object_foreach(json_object_get(req, "labels"), k, x) {
                _cleanup_free_ char *kv = xasprintf("%s=%s", k, json_string_value(x) ?: "");
                v = strv_push(v, &n, kv);
        }
        _cleanup_free_ char *live = xasprintf("mcp.live=%s", sandbox);
        return strv_push(v, &n, live);
}

/* The exec recorded its run labelled sandbox=NAME only: add the server's
 * labels (mcp.scope first: the history tools find it by them). */
static void label_run(json_t *sc, const json_t *req, const char *sandbox)
{
        const char *id = json_string_value(json_object_get(sc, "id"));
        _cleanup_free_ char *db = NULL, *err = NULL;
        _cleanup_store_ struct store *st = NULL;
        _cleanup_strv_ char **labels = labels_of(req, sandbox);
        if (!id || store_default_path(&db) < 0 || store_open(db, &st, &err) < 0 ||
            store_labels_set(st, id, labels) < 0) {
                log_error("mcp: run %s: cannot label it: %s", id ? id : "?", err ? err : st ? store_error(st) : "no store");
                return;
        }
        json_t *lo = json_object_get(sc, "labels");
        if (json_is_object(lo))
                for (size_t i = 0; labels[i]; i++) {
                        char *eq = strchr(labels[i], '=');
                        *eq = '\0';
                        json_object_set_new(lo, labels[i], json_string(eq + 1));
                }
}

static json_t *ps_result(struct mcp_call *c, json_t *r)
{
        json_t *sc = json_object_get(r, "structuredContent");
        const char *status = json_string_value(json_object_get(sc, "status"));
        if (!status || !streq(status, "success"))
                return r;       /* the exec's own error result says why */
        json_t *procs = mcp_live_ps_parse(json_string_value(json_object_get(sc, "stdout")));
        _cleanup_free_ char *text = NULL;
        size_t len = 0, i;
        json_t *p;
        FILE *f = open_memstream(&text, &len);
        if (!f) {
                json_decref(procs);
                return r;
        }
        fprintf(f, "%zu process%s in the live sandbox %s:\nPID PPID STATE COMMAND\n", json_array_size(procs),
                json_array_size(procs) == 1 ? "" : "es", c->sandbox);
        json_array_foreach(procs, i, p)
                fprintf(f, "%lld %lld %s %s\n", (long long)json_integer_value(json_object_get(p, "pid")),
                        (long long)json_integer_value(json_object_get(p, "ppid")),
                        json_string_value(json_object_get(p, "state")),
                        json_string_value(json_object_get(p, "command")));
        fclose(f);
        json_t *t = json_string(text);
        json_t *out = json_pack("{s:[{s:s, s:o}], s:{s:s, s:b, s:o, s:O}, s:b}", "content", "type", "text", "text",
                                t ? t : json_string("(not UTF-8)"), "structuredContent", "sandbox", c->sandbox,
                                "running", 1, "processes", procs, "run_id", json_object_get(sc, "id"), "isError", 0);
        json_decref(r);
        return out;
}

json_t *live_call_finished(struct mcp_server *s, struct mcp_call *c, json_t *r, uint64_t now)
{
        _cleanup_(json_decrefp) json_t *req = json_loads(c->request, JSON_ALLOW_NUL, NULL);
        json_t *sc = json_object_get(r, "structuredContent");

        if (sc && !c->threaded)
                /* (a thread's call was recorded with them) */
                label_run(sc, req, c->sandbox);
        if (c->kind == CALL_PS)
                return ps_result(c, r);
        struct mcp_live *l = find(s, c->session);
        const char *policy = json_string_value(json_object_get(req, "commit")) ?: "always";
        const char *status = json_string_value(json_object_get(sc, "status"));
        bool ok = status && streq(status, "success");
        if (sc) {
                /* nothing reached the session's tree yet: its sandbox's stop does it */
                json_object_set_new(sc, "committed", json_false());
                json_object_set_new(sc, "session", json_string(c->session));
        }
        if (l) {
                l->commit = streq(policy, "always") || (streq(policy, "success") && ok);
                l->idle_at_ms = now + s->cfg->idle_ms;
                mcp_keeper_tell(s->keeper_fd, l->commit ? '+' : '!', l->name);
        }
        const char *kernel = json_string_value(json_object_get(json_object_get(sc, "labels"), "kernel"));
        _cleanup_free_ char *in_kernel = kernel ? xasprintf("it ran in the session's %s kernel, whose variables and "
                                                            "imports stay for the next call (reload a module "
                                                            "you changed); ", kernel) : NULL;
        /* run_code the kernel could not take (stdin, files, env): said,
         * for the model would otherwise look for its variables there */
        const char *lang = json_string_value(json_object_get(req, "language"));
        int k = lang ? live_kernel_lang_from_string(lang) : -EINVAL;
        bool brought = json_object_get(req, "stdin") || json_object_get(req, "files") || json_object_get(req, "env");
        _cleanup_free_ char *no_kernel = !kernel && s->cfg->kernels && k >= 0 && c->kind == CALL_LIVE && brought &&
                                         json_object_get(req, "code")
                ? xasprintf("it brought stdin, files or env, which the session's %s kernel cannot take, so "
                            "it ran as a program (an exec instead), without the kernel's variables; ",
                            live_kernel_lang_to_string(k)) : NULL;
        char idle[32] = "";
        (void)format_duration_ms(s->cfg->idle_ms, idle, sizeof(idle));
        _cleanup_free_ char *live = xasprintf(
                "live session: %s%sfiles and processes stay in its sandbox for the next call; not committed yet: "
                "the session's files are %s when the sandbox stops (after %s without a call, or when the server "
                "exits)%s", in_kernel ? in_kernel : "", no_kernel ? no_kernel : "", l && !l->commit ? "thrown away" : "committed", idle,
                l && !l->commit ? " unless a later call's commit policy keeps them" : "");
        char *note = c->note ? xasprintf("%s; %s", c->note, live) : xstrdup(live);
        free(c->note);
        c->note = note;
        return r;
}

json_t *live_list_processes(struct mcp_server *s, json_t *id, bool modern, json_t *args, uint64_t now)
{
        _cleanup_free_ char *error = NULL;
        const char *name = json_string_value(json_object_get(args, "session"));
        _cleanup_free_ char *full = mcp_session_name(s->cfg->scope, name, &error);
        if (!full)
                return mcp_result_error("list_processes: %s", error);
        struct mcp_live *l = find(s, full);
        if (!l || l->state != LIVE_UP)
                return json_pack("{s:[{s:s, s:s}], s:{s:n, s:b, s:[]}, s:b}", "content", "type", "text", "text",
                                 "this session has no live sandbox now: the session's next run_code or "
                                 "run_command call starts one", "structuredContent", "sandbox", "running", 0,
                                 "processes", "isError", 0);
        struct mcp_call *c = call_new(id, NULL, modern, xstrdup(""), now), **tail = &s->calls;
        c->kind = CALL_PS;
        c->argv = mcp_live_ps_argv(l->name);
        c->sandbox = xstrdup(l->name);
        c->next_progress_ms = UINT64_MAX;
        while (*tail)
                tail = &(*tail)->next;
        *tail = c;
        return NULL;
}

json_t *live_list_ports(struct mcp_server *s, json_t *args)
{
        _cleanup_free_ char *error = NULL;
        const char *name = json_string_value(json_object_get(args, "session"));
        _cleanup_free_ char *full = mcp_session_name(s->cfg->scope, name, &error);
        if (!full)
                return mcp_result_error("list_ports: %s", error);
        struct mcp_live *l = find(s, full);
        json_t *o = l && l->state == LIVE_UP ? mcp_live_ls_entry(s->exe_fd, l->name) : NULL;
        /* what `hutch sandbox ls --json` says it publishes, under the name
         * it has (none until the sandbox publishes ports) */
        json_t *ports = json_object_get(o, "ports");
        if (!json_is_array(ports))
                ports = json_object_get(o, "published");
        if (!json_is_array(ports))
                ports = json_object_get(o, "publish");
        ports = json_is_array(ports) ? json_incref(ports) : json_array();
        _cleanup_free_ char *list = NULL;
        size_t len = 0, i;
        json_t *p;
        FILE *f = open_memstream(&list, &len);
        if (f) {
                json_array_foreach(ports, i, p)
                        fprintf(f, "\n%s:%lld -> port %lld inside", json_string_value(json_object_get(p, "host")) ?: "?",
                                (long long)json_integer_value(json_object_get(p, "host_port")),
                                (long long)json_integer_value(json_object_get(p, "port")));
                fclose(f);
        }
        _cleanup_free_ char *text = !o ? xstrdup("this session has no live sandbox now: nothing is published")
                : json_array_size(ports) ? xasprintf("ports the live sandbox %s publishes on the host:%s", l->name,
                                                     list ? list : "")
                : xasprintf("the live sandbox %s publishes no port", l->name);
        json_t *r = json_pack("{s:[{s:s, s:s}], s:{s:o, s:b, s:o}, s:b}", "content", "type", "text", "text", text,
                              "structuredContent", "sandbox", o ? json_string(l->name) : json_null(), "running",
                              o != NULL, "ports", ports, "isError", 0);
        json_decref(o);
        return r;
}

void live_free_all(struct mcp_server *s)
{
        while (s->lives)
                drop(s, s->lives);
}
