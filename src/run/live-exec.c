/* run/live-exec.c - the clients of a live sandbox's control socket:
 * `hutch exec`, `hutch sandbox ls`, `hutch sandbox stop` (run/live.h).
 *
 * An exec is recorded here, by the process that asked for it, like any
 * run: its row (labelled sandbox=NAME) before the job starts, its
 * output captured as it is read, its end in one final update. The job's
 * output arrives on the read ends of pipes the supervisor made for this
 * exec alone (live.c); nothing of ours goes into the sandbox. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
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
#include "supervise/capture.h"
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

/* Read what is there from *fd into cap (and our fd out unless json);
 * closes it at EOF. A reader of ours that went away (EPIPE) gets no
 * more; the capture, and so the record, still gets everything. */
static void pump(int *fd, struct capture *cap, int out, bool json)
{
        static bool gone[3];
        char buf[65536];
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n > 0) {
                capture_append(cap, buf, (size_t)n);
                if (!json && !gone[out] && write_all(out, buf, (size_t)n) < 0)
                        gone[out] = true;
                return;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(*fd);
                *fd = -1;
        }
}

static void outcome_of(const struct live_reply *e, struct run_outcome *o)
{
        o->wall_ms = e->wall_ms;
        o->cpu_user_ms = (uint64_t)MAX(e->utime_us, 0) / 1000;
        o->cpu_sys_ms = (uint64_t)MAX(e->stime_us, 0) / 1000;
        o->job_exit_code = -1;
        if (e->stopped) {
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

/* Send the request, relay the job's output until its end: the reply. */
static int exchange(int fd, char **argv, uint64_t timeout_ms, bool json, struct capture *co, struct capture *ce,
                    struct live_reply *end)
{
        size_t len = sizeof(struct live_req);
        for (char **a = argv; *a; a++)
                len += strlen(*a) + 1;
        if (len - sizeof(struct live_req) > LIVE_ARGV_MAX)
                return -E2BIG;
        _cleanup_free_ char *buf = xmalloc(len);
        struct live_req req = { .op = LIVE_OP_EXEC, .timeout_ms = timeout_ms };
        memcpy(buf, &req, sizeof(req));
        size_t at = sizeof(req);
        for (char **a = argv; *a; a++) {
                memcpy(buf + at, *a, strlen(*a) + 1);
                at += strlen(*a) + 1;
        }
        if (send(fd, buf, len, MSG_NOSIGNAL) < 0)
                return -errno;

        int io[2] = { -1, -1 };
        for (;;) {
                char cbuf[CMSG_SPACE(2 * sizeof(int))];
                struct live_reply m = { 0 };
                struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof(cbuf) };
                struct pollfd p[3] = { { .fd = fd, .events = POLLIN }, { .fd = io[0], .events = POLLIN },
                                       { .fd = io[1], .events = POLLIN } };
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[1].revents)
                        pump(&io[0], co, STDOUT_FILENO, json);
                if (p[2].revents)
                        pump(&io[1], ce, STDERR_FILENO, json);
                if (!p[0].revents)
                        continue;
                ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
                if (n <= 0)
                        return -EPIPE;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                        int f;
                                        memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                        if (m.op == LIVE_OP_FDS && i < 2 && io[i] < 0)
                                                io[i] = f;
                                        else
                                                close(f);
                                }
                if (m.op == LIVE_OP_BUSY)
                        return -EBUSY;
                if (m.op != LIVE_OP_END)
                        continue;
                /* the job has ended: what it wrote is in the pipes (a
                 * background process it left may hold them open) */
                for (int i = 0; i < 2; i++) {
                        if (io[i] < 0)
                                continue;
                        (void)fcntl(io[i], F_SETFL, O_NONBLOCK);
                        while (io[i] >= 0) {
                                uint64_t before = capture_total_bytes(i ? ce : co);
                                pump(&io[i], i ? ce : co, i ? STDERR_FILENO : STDOUT_FILENO, json);
                                if (io[i] >= 0 && capture_total_bytes(i ? ce : co) == before)
                                        break;
                        }
                        if (io[i] >= 0)
                                close(io[i]);
                }
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

int live_exec(const char *name, char **argv, uint64_t timeout_ms, bool json, const struct run_ui *ui)
{
        int dirfd = -1;
        _cleanup_close_ int fd = connect_named("exec", name, &dirfd);
        _cleanup_close_ int dirfd_owned = dirfd;
        _cleanup_free_ char *cwd = getcwd(NULL, 0), *label = NULL, *db = NULL, *error = NULL;
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        _cleanup_capture_ struct capture *co = NULL, *ce = NULL;
        struct run_config cfg;
        struct run_outcome o = { 0 };
        struct live_reply end = { 0 };
        int k;

        if (fd < 0)
                return fd == -EINVAL ? EXIT_USAGE : EXIT_SETUP;
        if (store_default_path(&db) < 0 || (k = store_open(db, &s, &error)) < 0) {
                log_error("exec: run store: %s", error ? error : "set HUTCH_STATE_DIR or HOME");
                return EXIT_SETUP;
        }
        label = xasprintf("sandbox=%s", name);
        char *labels[] = { label, NULL };
        _cleanup_free_ char *profile = xasprintf("sandbox:%s", name);
        if (run_record_begin(rec, argv, cwd ? cwd : "", profile) < 0)
                return EXIT_SETUP;
        live_inherit_sandbox(s, dirfd, name, rec);
        if (store_run_insert(s, rec) < 0 ||
            store_labels_set(s, rec->id, labels) < 0) {
                log_error("exec: run store %s: %s", db, store_error(s));
                return EXIT_SETUP;
        }
        log_info("run %s", rec->id);
        /* a closed stdout must not kill us before the record is complete */
        signal(SIGPIPE, SIG_IGN);
        run_config_init(&cfg);
        co = capture_new(cfg.capture_bytes);
        ce = capture_new(cfg.capture_bytes);
        k = exchange(fd, argv, timeout_ms, json, co, ce, &end);
        if (k == -EBUSY) {
                o.status = RUN_SETUP_ERROR;
                o.exit_code = EXIT_BUSY;
                snprintf(o.message, sizeof(o.message), "sandbox %s is running another exec; try again", name);
        } else if (k < 0) {
                o.status = RUN_SETUP_ERROR;
                o.exit_code = EXIT_SETUP;
                snprintf(o.message, sizeof(o.message), "sandbox %s: %s", name,
                         k == -EPIPE ? "its supervisor went away" : strerror(-k));
        } else {
                outcome_of(&end, &o);
        }
        run_finish_record(ui, s, rec, &cfg, &o, co, ce, NULL, NULL, NULL, json);
        run_config_done(&cfg);
        return o.exit_code;
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
