/* calls.c - the children of `hutch mcp` (see calls.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "lib/util.h"
#include "mcp/calls.h"

struct mcp_call *call_new(json_t *id, json_t *progress_token, bool modern, char *request, uint64_t now_ms)
{
        struct mcp_call *c = xcalloc(1, sizeof(*c));
        c->id = json_incref(id);
        c->progress_token = json_incref(progress_token);
        c->modern = modern;
        c->request = request;
        c->request_len = strlen(request);
        c->in_fd = c->out_fd = c->cancel_fd = -1;
        c->received_ms = now_ms;
        return c;
}

struct mcp_call *call_new_helper(char **argv, uint64_t now_ms)
{
        struct mcp_call *c = call_new(NULL, NULL, false, xstrdup(""), now_ms);
        c->kind = CALL_HELPER;
        c->argv = argv;
        c->merge_stderr = true;
        return c;
}

void call_free(struct mcp_call *c)
{
        if (!c)
                return;
        strv_free(c->argv);
        free(c->live_fallback);
        free(c->sandbox);
        json_decref(c->id);
        json_decref(c->progress_token);
        free(c->request);
        free(c->input);
        free(c->session);
        free(c->session_wait);
        free(c->note);
        free(c->out);
        if (c->in_fd >= 0)
                close(c->in_fd);
        if (c->out_fd >= 0)
                close(c->out_fd);
        if (c->cancel_fd >= 0)
                close(c->cancel_fd);
        free(c);
}

/* The request a fresh run gets: the call's env as private_env, which
 * reaches the job's environment and nothing else. As env it would be
 * the resolved profile's [env], kept in the record, where hutch-mcp(1)
 * promises that a call's record, fresh or live, keeps no env. NULL when
 * the request has no env (it goes as it is). */
static char *fresh_request(const char *request)
{
        _cleanup_(json_decrefp) json_t *req = json_loads(request, JSON_ALLOW_NUL, NULL);
        json_t *env = req ? json_object_get(req, "env") : NULL;
        if (!env)
                return NULL;
        json_object_set(req, "private_env", env);
        json_object_del(req, "env");
        return json_dumps(req, JSON_COMPACT);
}

int call_spawn(struct mcp_call *c, int exe_fd, char *const *extra_args)
{
        int in[2] = { -1, -1 }, out[2] = { -1, -1 };
        pid_t parent = getpid();
        _cleanup_free_ char **argv = NULL;
        size_t n = 0, n_extra = 0;

        while (extra_args && extra_args[n_extra])
                n_extra++;
        argv = xcalloc(n_extra + 8, sizeof(char *));
        if (c->argv) {
                /* a live call or a helper: its own verb */
                while (c->argv[n])
                        n++;
                free(argv);
                argv = xcalloc(n + 1, sizeof(char *));
                memcpy(argv, c->argv, n * sizeof(char *));
                goto spawn;
        }
        char *fresh = fresh_request(c->request);
        if (fresh) {
                free(c->input);
                c->input = fresh;
                c->request_len = strlen(fresh);
                c->request_off = 0;
        }
        argv[n++] = (char *)"hutch";
        argv[n++] = (char *)"run";
        argv[n++] = (char *)"--request";
        argv[n++] = (char *)"-";
        argv[n++] = (char *)"--json";
        for (size_t i = 0; i < n_extra; i++)
                argv[n++] = extra_args[i];
        if (c->session_wait) {
                /* another process (another server of the scope, the
                 * operator) may hold the session: wait for it */
                argv[n++] = (char *)"--session-wait";
                argv[n++] = c->session_wait;
        }

spawn:
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
                goto fail;
        pid_t pid = fork();
        if (pid < 0)
                goto fail;
        if (pid == 0) {
                sigset_t none;
                /* die with the server: SIGTERM makes hutch run cancel and
                 * record the run; the check after closes the race with a
                 * parent that died before prctl */
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                        _exit(125);
                (void)setpgid(0, 0);
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                signal(SIGPIPE, SIG_DFL);
                if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
                    (c->merge_stderr && dup2(out[1], STDERR_FILENO) < 0))
                        _exit(125);
                /* every other fd of the server is O_CLOEXEC, exe_fd too:
                 * execveat closes it with the rest */
                execveat(exe_fd, "", argv, environ, AT_EMPTY_PATH);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        c->pid = pid;
        c->in_fd = in[1];
        c->out_fd = out[0];
        (void)fcntl(c->in_fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
        c->state = CALL_RUNNING;
        return 0;
fail:;
        int r = -errno;
        for (int i = 0; i < 2; i++) {
                if (in[i] >= 0)
                        close(in[i]);
                if (out[i] >= 0)
                        close(out[i]);
        }
        return r;
}

int call_start_thread(struct mcp_call *c, int *ret_wfd, int *ret_cancel_fd)
{
        int p[2], q[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(q, O_CLOEXEC) < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        (void)fcntl(p[0], F_SETFL, O_NONBLOCK);
        c->cancel_fd = q[1];
        *ret_cancel_fd = q[0];
        c->out_fd = p[0];
        c->in_fd = -1;
        c->pid = 0;
        c->threaded = true;
        c->state = CALL_RUNNING;
        *ret_wfd = p[1];
        return 0;
}

void call_write(struct mcp_call *c)
{
        const char *in = c->input ? c->input : c->request;
        while (c->in_fd >= 0 && c->request_off < c->request_len) {
                ssize_t n = write(c->in_fd, in + c->request_off, c->request_len - c->request_off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        break;          /* the child is gone; its exit says why */
                }
                c->request_off += (size_t)n;
        }
        if (c->in_fd >= 0) {
                close(c->in_fd);
                c->in_fd = -1;
        }
}

void call_read(struct mcp_call *c)
{
        char buf[65536];
        while (c->out_fd >= 0) {
                ssize_t n = read(c->out_fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        n = 0;
                }
                if (n == 0) {
                        close(c->out_fd);
                        c->out_fd = -1;
                        if (c->threaded && !c->exited) {
                                /* the thread wrote its whole answer (it is
                                 * detached: what it does after is its own) */
                                c->exited = true;
                                c->wstatus = 0;
                        }
                        return;
                }
                if (c->out_len + (size_t)n > CALL_RESULT_MAX) {
                        /* keep draining so the child can finish, keep nothing more */
                        c->out_overflow = true;
                        continue;
                }
                c->out = xrealloc(c->out, c->out_len + (size_t)n + 1);
                memcpy(c->out + c->out_len, buf, (size_t)n);
                c->out_len += (size_t)n;
                c->out[c->out_len] = '\0';
        }
}

void call_exited(struct mcp_call *c, int wstatus)
{
        c->exited = true;
        c->wstatus = wstatus;
        /* what hutch run wrote is in the pipe now; a process it left
         * holding the pipe open must not keep the call waiting */
        call_read(c);
        if (c->out_fd >= 0) {
                close(c->out_fd);
                c->out_fd = -1;
        }
        if (c->in_fd >= 0) {
                close(c->in_fd);
                c->in_fd = -1;
        }
}

void call_cancel(struct mcp_call *c, uint64_t now_ms, uint64_t grace_ms)
{
        c->cancelled = true;
        if (c->cancel_fd >= 0) {
                /* the thread sees its cancel pipe hang up */
                close(c->cancel_fd);
                c->cancel_fd = -1;
        }
        if (c->state == CALL_RUNNING && !c->exited && !c->threaded) {
                (void)kill(c->pid, SIGTERM);
                if (!c->kill_at_ms)
                        c->kill_at_ms = now_ms + grace_ms;
        }
}

bool call_finished(const struct mcp_call *c)
{
        return c->state == CALL_RUNNING && c->exited && c->out_fd < 0;
}

int call_run_sync(int exe_fd, char *const *argv, size_t max, char **ret_out, size_t *ret_len, bool *ret_cut,
                  int *ret_wstatus)
{
        int out[2];
        pid_t parent = getpid();

        if (pipe2(out, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(out[0]);
                close(out[1]);
                return r;
        }
        if (pid == 0) {
                sigset_t none;
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                        _exit(125);
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                signal(SIGPIPE, SIG_DFL);
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
                    dup2(out[1], STDERR_FILENO) < 0)
                        _exit(125);
                execveat(exe_fd, "", argv, environ, AT_EMPTY_PATH);
                _exit(127);
        }
        close(out[1]);
        char *buf = xmalloc(max + 1), chunk[65536];
        size_t len = 0;
        bool cut = false;
        for (;;) {
                ssize_t n = read(out[0], chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                size_t take = MIN((size_t)n, max - len);
                memcpy(buf + len, chunk, take);
                len += take;
                cut = cut || take < (size_t)n;
        }
        close(out[0]);
        buf[len] = '\0';
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR) {
                        free(buf);
                        return -errno;
                }
        *ret_out = buf;
        *ret_len = len;
        *ret_cut = cut;
        *ret_wstatus = st;
        return 0;
}
