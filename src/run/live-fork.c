/* run/live-fork.c - `hutch sandbox fork NAME NEW`: a copy of a live
 * sandbox's workspace as it is now, made a session NEW that `hutch
 * sandbox start NEW` resumes (run/live.h).
 *
 * What is copied: the workspace as a job of NAME sees it (the overlay's
 * merged view, or the plain workspace), through the workspace dir the
 * supervisor holds (sandbox.h, SYNC_WORKSPACE): lent to the client for
 * the copy, so the supervisor's loop never waits on a copy. Not
 * copied: processes, interpreters, memory, /tmp and $HOME outside the
 * workspace, and what another mount covers inside it (--input binds).
 * A sandbox whose workspace is a host --workdir is refused: its files
 * are the host's directory, changing under the host's hand, and
 * belong to the user there, not to the sandbox.
 *
 * Consistency. While the client copies, the supervisor answers every
 * new exec and kernel call busy (75), and, when the sandbox has a run
 * cgroup, freezes it (cgroup.freeze): no process of the sandbox runs
 * until the client hangs up (or its time is up), so the copy is the
 * workspace at one instant. Without a cgroup nothing can stop a
 * process already running (an exec still going, a background process,
 * a kernel's thread): each file is still copied whole as of one moment
 * (snapshot.c copies a file again when it changed meanwhile, and fails
 * -EAGAIN when it keeps changing), but two files may be from before and
 * after one of its writes, and a file it creates or removes during the
 * copy may or may not be in it. hutch-sandbox(1) says so.
 *
 * Safety of the copy (snapshot.h): nothing is followed out of the tree
 * (every entry opened O_NOFOLLOW beneath the directory fd, symlinks
 * copied as their text), set-uid/set-gid bits are dropped, device
 * nodes and sockets left out, FIFOs made new; names are used only as
 * *at() components, so no name can address anything outside. The copy
 * is bounded by the sandbox's --disk (allocated bytes) and
 * limits.inodes, and by its timeout (at least RUN_COLLECT_MIN_MS): past
 * one the fork fails and its half copy is removed. NEW is a session of
 * its own, locked while it is filled; the original keeps its own
 * (upper layer, session) untouched.
 */
#include "config.h"

#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "limits/cgroup.h"
#include "record/store.h"
#include "run/live-internal.h"
#include "run/run-internal.h"
#include "sandbox/ns.h"
#include "workspace/session.h"
#include "workspace/snapshot.h"

/* How long the freezer may take to stop every process of the sandbox. */
#define FREEZE_WAIT_MS 2000
/* The supervisor's margin over the client's own time limit. */
#define FORK_GRACE_MS 5000

/* ---- the supervisor's side ---- */

static bool frozen(int cgfd)
{
        _cleanup_close_ int fd = openat(cgfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
        char buf[512];
        uint64_t v = 0;
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (n <= 0)
                return false;
        buf[n] = '\0';
        return cgroup_parse_keyed(buf, "frozen", &v) >= 0 && v == 1;
}

/* Freeze the run cgroup and wait until it is: its cgroup.freeze fd
 * (to thaw with), or -errno (thawed again). */
static int freeze(struct cgroup_run *cg)
{
        int cgfd = cgroup_run_fd(cg);
        if (cgfd < 0)
                return cgfd;
        int fd = openat(cgfd, "cgroup.freeze", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, "1", 1) != 1) {
                int r = -errno;
                close(fd);
                return r;
        }
        uint64_t until = now_monotonic_ms() + FREEZE_WAIT_MS;
        while (!frozen(cgfd)) {
                if (now_monotonic_ms() >= until) {
                        (void)!pwrite(fd, "0", 1, 0);
                        close(fd);
                        return -ETIME;
                }
                struct timespec ts = { 0, 1000000L };
                nanosleep(&ts, NULL);
        }
        return fd;
}

void live_fork_request(struct live_fork *f, const struct run_config *cfg, const struct run_live *opts,
                       const char *run_id, int workspace_fd, struct cgroup_run *cg, int fd)
{
        struct live_fork_reply rep = { .op = LIVE_OP_FORK };
        if (f->fd >= 0) {
                rep.op = LIVE_OP_BUSY;
                rep.error = EBUSY;
                snprintf(rep.why, sizeof(rep.why), "another fork of it is being copied; try again");
        } else if (opts->workdir) {
                rep.error = EXDEV;
                snprintf(rep.why, sizeof(rep.why), "its workspace is a host --workdir, the host's files, not "
                         "the sandbox's own; fork a sandbox started with --session or without --workdir");
        } else if (workspace_fd < 0) {
                rep.error = ENOENT;
                snprintf(rep.why, sizeof(rep.why), "it has no workspace to copy");
        }
        if (rep.error) {
                (void)send(fd, &rep, sizeof(rep), MSG_NOSIGNAL);
                close(fd);
                return;
        }
        rep.disk_bytes = cfg->disk_bytes;
        rep.inodes = cfg->inodes;
        rep.timeout_ms = MAX(cfg->timeout_ms, (uint64_t)RUN_COLLECT_MIN_MS);
        snprintf(rep.run_id, sizeof(rep.run_id), "%s", run_id);
        int fz = cg ? freeze(cg) : -ENOENT;
        if (fz >= 0)
                rep.paused = 1;
        else if (cg)
                log_warning("sandbox %s: cannot freeze it for a fork (%s): its processes keep running",
                            opts->name, strerror(-fz));

        char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
        struct iovec iov = { .iov_base = &rep, .iov_len = sizeof(rep) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &workspace_fd, sizeof(int));
        *f = (struct live_fork) { .fd = fd, .freeze_fd = fz >= 0 ? fz : -1,
                                  .until_ms = now_monotonic_ms() + rep.timeout_ms + FORK_GRACE_MS };
        if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
                live_fork_end(f);
}

int live_fork_pollfd(const struct live_fork *f)
{
        return f->fd;
}

uint64_t live_fork_deadline(const struct live_fork *f)
{
        return f->fd >= 0 ? f->until_ms : 0;
}

void live_fork_events(struct live_fork *f, short revents)
{
        /* the client sends nothing more: any event is its hang-up */
        if (f->fd >= 0 && (revents || now_monotonic_ms() >= f->until_ms))
                live_fork_end(f);
}

void live_fork_end(struct live_fork *f)
{
        if (f->freeze_fd >= 0) {
                (void)!pwrite(f->freeze_fd, "0", 1, 0);
                close(f->freeze_fd);
        }
        if (f->fd >= 0)
                close(f->fd);
        f->fd = f->freeze_fd = -1;
        f->until_ms = 0;
}

char *live_fork_args_json(char **args)
{
        json_t *a = json_array();
        for (char **p = args; p && *p; p++)
                if (json_array_append_new(a, json_string(*p)) < 0) {
                        json_array_clear(a);
                        break;
                }
        char *text = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        /* a run option that is not UTF-8 cannot be carried: none then */
        char *r = xasprintf(",\"args\":%s", text ? text : "[]");
        free(text);
        return r;
}

/* ---- the client's side: `hutch sandbox fork` ---- */

/* NAME.fork: a stopped fork's state, or NULL (-ENOENT). One whose
 * session is gone (hutch session rm) is stale: removed. */
static json_t *fork_state(int dirfd, const char *sessions, const char *name)
{
        _cleanup_free_ char *file = live_path(dirfd, name, "fork"), *text = NULL;
        if (read_file(file, &text, NULL) < 0)
                return NULL;
        json_t *o = json_loads(text, 0, NULL);
        _cleanup_free_ char *tree = xasprintf("%s/%s/tree", sessions, name);
        struct stat st;
        if (!o || !json_is_array(json_object_get(o, "args")) || lstat(tree, &st) < 0 || !S_ISDIR(st.st_mode)) {
                json_decref(o);
                _cleanup_free_ char *base = xasprintf("%s.fork", name);
                (void)unlinkat(dirfd, base, 0);
                return NULL;
        }
        return o;
}

static char *sessions_dir(void)
{
        _cleanup_free_ char *db = NULL;
        return store_default_path(&db) < 0 ? NULL : session_root(db);
}

int live_fork_start_args(const char *name, char ***ret_args)
{
        _cleanup_close_ int dirfd = live_dir_open();
        _cleanup_free_ char *sessions = sessions_dir();
        if (dirfd < 0 || !sessions)
                return -ENOENT;
        json_t *o = fork_state(dirfd, sessions, name), *v;
        size_t i, n = 0;
        char **args = NULL;
        if (!o)
                return -ENOENT;
        json_array_foreach(json_object_get(o, "args"), i, v)
                if (json_is_string(v))
                        args = strv_push(args, &n, json_string_value(v));
        args = strv_push(args, &n, "--session");
        args = strv_push(args, &n, name);
        json_decref(o);
        *ret_args = args;
        return 0;
}

/* The source's run options without its workspace (--session S and
 * --session-wait D, each with its value): the fork has its own. */
static json_t *args_for_fork(json_t *src)
{
        json_t *out = json_array(), *v;
        size_t i;
        bool skip = false;
        json_array_foreach(src, i, v) {
                const char *s = json_string_value(v);
                if (!s || skip) {
                        skip = false;
                        continue;
                }
                if (streq(s, "--session") || streq(s, "--session-wait")) {
                        skip = true;
                        continue;
                }
                if (startswith(s, "--session=") || startswith(s, "--session-wait="))
                        continue;
                json_array_append_new(out, json_string(s));
        }
        return out;
}

/* Write NEW.fork (atomically). 0 or -errno. */
static int write_fork_state(int dirfd, const char *new_name, json_t *o)
{
        _cleanup_free_ char *tmp = xasprintf(".%s.fork.tmp", new_name), *file = xasprintf("%s.fork", new_name);
        _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0 ? -EIO : 0;
        close(fd);
        if (r == 0 && renameat(dirfd, tmp, dirfd, file) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

/* Ask NAME's supervisor for its workspace: the connection (held until
 * the copy is done), *ret_fd the workspace dir, *rep its bounds. -errno
 * (said) or -ENOENT (no such sandbox running, not said). */
static int ask_supervisor(int dirfd, const char *name, int *ret_fd, struct live_fork_reply *rep)
{
        struct live_req req = { .op = LIVE_OP_FORK };
        int conn = live_connect(dirfd, name);
        if (conn == -ENOENT || conn == -ECONNREFUSED)
                return -ENOENT;
        if (conn < 0)
                return log_error_errno(conn, "sandbox fork: sandbox %s: %m", name);
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { .iov_base = rep, .iov_len = sizeof(*rep) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        int wfd = -1;
        ssize_t n = -1;
        *rep = (struct live_fork_reply) { 0 };
        /* it answers at once, after at most FREEZE_WAIT_MS of freezing */
        struct timeval tv = { .tv_sec = FREEZE_WAIT_MS / 1000 + 10 };
        (void)setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (send(conn, &req, sizeof(req), MSG_NOSIGNAL) == (ssize_t)sizeof(req))
                while ((n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                        ;
        for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&wfd, CMSG_DATA(c), sizeof(int));
        rep->why[sizeof(rep->why) - 1] = rep->run_id[sizeof(rep->run_id) - 1] = '\0';
        if (n < (ssize_t)sizeof(*rep) || rep->op != LIVE_OP_FORK || rep->error || wfd < 0) {
                if (n >= (ssize_t)sizeof(*rep) && rep->error)
                        log_error("sandbox fork: %s: %s", name, rep->why);
                else
                        log_error("sandbox fork: %s: its supervisor did not lend its workspace%s", name,
                                  n > 0 && rep->op == LIVE_OP_BUSY ? " (busy)" : "");
                if (wfd >= 0)
                        close(wfd);
                close(conn);
                return rep->error == EBUSY ? -EBUSY : -EPROTO;
        }
        *ret_fd = wfd;
        return conn;
}

static const char *copy_error(int r)
{
        return r == -ENOSPC ? "more than the sandbox's --disk" : r == -EMLINK ? "more entries than limits.inodes"
             : r == -ELOOP ? "nested too deep" : r == -ETIME ? "took longer than the sandbox's timeout"
             : r == -EAGAIN ? "a file kept changing while it was copied (a process writing it?)" : strerror(-r);
}

struct fork_source {
        int conn;               /* the supervisor's connection while it copies, or -1 */
        int fd;                 /* the workspace dir */
        struct live_fork_reply rep;
        struct session held;    /* a stopped fork's session, locked */
        json_t *state;          /* a stopped fork's NAME.fork; NULL: a running sandbox */
};

/* Open NAME's workspace: a running sandbox's (paused), or a stopped
 * fork's session (locked). An exit code, said. */
static int open_source(int dirfd, const char *sessions, const char *name, struct fork_source *src)
{
        int conn = ask_supervisor(dirfd, name, &src->fd, &src->rep);
        if (conn >= 0) {
                src->conn = conn;
                return EXIT_OK;
        }
        if (conn != -ENOENT)
                return conn == -EBUSY ? EXIT_BUSY : EXIT_FAILURE_GENERIC;
        src->state = fork_state(dirfd, sessions, name);
        if (!src->state) {
                log_error("sandbox fork: no running sandbox or stopped fork named %s (hutch sandbox ls)", name);
                return EXIT_FAILURE_GENERIC;
        }
        int r = session_acquire(sessions, name, 0, &src->held);
        if (r < 0) {
                log_error("sandbox fork: %s: its session %s", name,
                          r == -EBUSY ? "is in use (the sandbox is starting, or a run holds it); try again" : strerror(-r));
                return r == -EBUSY ? EXIT_BUSY : EXIT_FAILURE_GENERIC;
        }
        src->fd = open(src->held.tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src->fd < 0)
                return log_error_errno(-errno, "sandbox fork: %s: %m", src->held.tree), EXIT_FAILURE_GENERIC;
        struct run_config cfg;
        run_config_init(&cfg);
        src->rep = (struct live_fork_reply) { .disk_bytes = cfg.disk_bytes, .inodes = cfg.inodes,
                                              .timeout_ms = MAX(cfg.timeout_ms, (uint64_t)RUN_COLLECT_MIN_MS) };
        run_config_done(&cfg);
        return EXIT_OK;
}

/* The fork's record: a finished run labelled sandbox=NEW and
 * forked_from=NAME, of session NEW. 0 or -errno (said). */
static int record_fork(int dirfd, const char *name, const char *new_name, const struct fork_source *src,
                       const struct snapshot_stats *st, uint64_t t0, uint64_t pause_ms, char *ret_id)
{
        _cleanup_free_ char *db = NULL, *error = NULL, *cwd = getcwd(NULL, 0);
        _cleanup_free_ char *l1 = xasprintf("sandbox=%s", new_name), *l2 = xasprintf("forked_from=%s", name);
        _cleanup_free_ char *profile = xasprintf("sandbox:%s", name);
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        char *argv[] = { "sandbox", "fork", (char *)name, (char *)new_name, NULL };
        char *labels[] = { l1, l2, NULL };
        int r;

        if (store_default_path(&db) < 0 || (r = store_open(db, &s, &error)) < 0) {
                log_error("sandbox fork: run store: %s", error ? error : "set HUTCH_STATE_DIR or HOME");
                return -EIO;
        }
        if (run_record_begin(rec, argv, cwd ? cwd : "", profile) < 0)
                return -EIO;
        if (!src->state)
                live_inherit_sandbox(s, dirfd, name, rec);
        rec->session = xstrdup(new_name);
        rec->status = RUN_SUCCESS;
        rec->exit_code = 0;
        rec->finished_at_ms = now_realtime_ms();
        rec->duration_ms = now_monotonic_ms() - t0;
        const char *from_id = !src->state ? src->rep.run_id : json_string_value(json_object_get(src->state, "fork_id"));
        char paused[64] = "";
        if (!src->state)
                snprintf(paused, sizeof(paused), src->rep.paused ? "; paused %llu ms" : "; not paused (no cgroup)",
                         (unsigned long long)pause_ms);
        rec->message = xasprintf("forked from %s sandbox %s (run %s) into session %s: %llu entries, %llu bytes%s",
                                 !src->state ? "running" : "stopped", name, from_id ? from_id : "-", new_name,
                                 (unsigned long long)st->entries, (unsigned long long)st->bytes, paused);
        if (store_run_insert(s, rec) < 0 || store_labels_set(s, rec->id, labels) < 0 ||
            store_workspace_set(s, rec->id, NULL, new_name) < 0) {
                log_error("sandbox fork: run store %s: %s", db, store_error(s));
                return -EIO;
        }
        snprintf(ret_id, 32, "%s", rec->id);
        return 0;
}

/* NAME and NEW: both sandbox and session names, not the same. An exit
 * code, said. */
static int check_names(const char *name, const char *new_name)
{
        for (const char *const *n = (const char *const[]) { name, new_name, NULL }; *n; n++)
                if (!live_name_valid(*n) || !session_name_valid(*n)) {
                        log_error("sandbox fork: \"%s\": not a sandbox name (1-64 of A-Z a-z 0-9 . _ -)", *n);
                        return EXIT_USAGE;
                }
        if (streq(name, new_name)) {
                log_error("sandbox fork: NEW (%s) must be a name other than NAME's", new_name);
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

/* NEW is new: no sandbox, stopped fork or session of that name; its
 * session directory is made here (the caller removes it on failure).
 * An exit code, said. */
static int make_new(int dirfd, const char *sessions, const char *new_name)
{
        int c = live_connect(dirfd, new_name);
        json_t *old = c >= 0 ? NULL : fork_state(dirfd, sessions, new_name);
        if (c >= 0 || old) {
                if (c >= 0)
                        close(c);
                json_decref(old);
                log_error("sandbox fork: a sandbox named %s exists already (%s)", new_name,
                          c >= 0 ? "running" : "a stopped fork; hutch session rm removes it");
                return EXIT_FAILURE_GENERIC;
        }
        int r = mkdir_p(sessions, 0700);
        _cleanup_free_ char *newdir = xasprintf("%s/%s", sessions, new_name);
        if (r == 0 && mkdir(newdir, 0700) < 0)
                r = -errno;
        if (r == -EEXIST) {
                log_error("sandbox fork: a session named %s exists already (hutch session rm %s)", new_name, new_name);
                return EXIT_FAILURE_GENERIC;
        }
        if (r < 0)
                return log_error_errno(r, "sandbox fork: %s: %m", newdir), EXIT_SETUP;
        return EXIT_OK;
}

/* Copy the source's workspace into treefd within its bounds, then let
 * a running source go on. *pause_ms: how long the copy took. An exit
 * code, said. */
static int copy_workspace(const char *name, struct fork_source *src, int treefd, struct snapshot_stats *st,
                          uint64_t *pause_ms)
{
        _cleanup_free_ char *fail = NULL;
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += (time_t)(src->rep.timeout_ms / 1000);
        struct snapshot_limits lim = { .max_bytes = src->rep.disk_bytes, .max_entries = src->rep.inodes,
                                       .deadline = deadline, .skip_mounts = true };
        uint64_t t_copy = now_monotonic_ms();
        int r = snapshot_copy(src->fd, treefd, &lim, st, &fail);
        /* the copy is done: the original runs on (the supervisor thaws
         * it when we hang up), before anything else of ours */
        if (src->conn >= 0)
                close(TAKE_FD(src->conn));
        *pause_ms = now_monotonic_ms() - t_copy;
        if (r < 0) {
                log_error("sandbox fork: cannot copy %s's workspace%s%s: %s", name, fail ? " at " : "",
                          fail ? fail : "", copy_error(r));
                return EXIT_FAILURE_GENERIC;
        }
        return EXIT_OK;
}

/* NEW.fork: the run options NEW starts with, NAME's own. An exit code,
 * said. */
static int save_fork_state(int dirfd, const char *name, const char *new_name, const struct fork_source *src,
                           const char *fork_id)
{
        json_t *args = NULL;
        if (src->state)
                args = args_for_fork(json_object_get(src->state, "args"));
        else {
                _cleanup_free_ char *file = live_path(dirfd, name, "json"), *text = NULL;
                json_t *o = read_file(file, &text, NULL) >= 0 ? json_loads(text, 0, NULL) : NULL;
                args = args_for_fork(json_object_get(o, "args"));
                json_decref(o);
        }
        json_t *state = json_pack("{s:s,s:s,s:s,s:s,s:o}", "name", new_name, "from", name, "fork_id", fork_id,
                                  "session", new_name, "args", args);
        int r = state ? write_fork_state(dirfd, new_name, state) : -ENOMEM;
        json_decref(state);
        if (r < 0) {
                log_error_errno(r, "sandbox fork: %s.fork: %m", new_name);
                return EXIT_SETUP;
        }
        return EXIT_OK;
}

/* What the fork left out, and what became of it. */
static void report_fork(const char *name, const char *new_name, const struct fork_source *src,
                        const struct snapshot_stats *st, const char *fork_id)
{
        if (st->left_out || st->mounts || st->unreadable)
                log_warning("sandbox fork: left out of %s: %llu socket(s) or device node(s), %llu mount point(s); "
                            "%llu unreadable entr%s copied empty", new_name, (unsigned long long)st->left_out,
                            (unsigned long long)st->mounts, (unsigned long long)st->unreadable,
                            st->unreadable == 1 ? "y" : "ies");
        if (!src->state && !src->rep.paused)
                log_info("sandbox fork: %s was not paused (no cgroup): a process writing meanwhile may have "
                         "left files from before and after its writes", name);
        log_info("run %s: sandbox %s forked into %s (%llu entries, %llu bytes); start it with hutch sandbox start %s",
                 fork_id, name, new_name, (unsigned long long)st->entries, (unsigned long long)st->bytes, new_name);
        printf("%s\n", new_name);
}

int live_fork(const char *name, const char *new_name)
{
        struct fork_source src = { .conn = -1, .fd = -1, .held.lock_fd = -1 };
        struct session dst = { .lock_fd = -1 };
        struct snapshot_stats st = { 0 };
        _cleanup_free_ char *sessions = sessions_dir();
        _cleanup_close_ int dirfd = -1, treefd = -1;
        bool made = false;
        char fork_id[32] = "";
        uint64_t pause_ms = 0;
        int code, r;

        code = check_names(name, new_name);
        if (code != EXIT_OK)
                return code;
        if (!sessions) {
                log_error("sandbox fork: no state dir (set HUTCH_STATE_DIR or HOME)");
                return EXIT_SETUP;
        }
        dirfd = live_dir_open();
        if (dirfd < 0)
                return EXIT_SETUP;
        code = make_new(dirfd, sessions, new_name);
        if (code != EXIT_OK)
                return code;
        made = true;
        r = session_acquire(sessions, new_name, 0, &dst);
        if (r < 0) {
                log_error_errno(r, "sandbox fork: session %s: %m", new_name);
                code = EXIT_SETUP;
                goto out;
        }
        treefd = open(dst.tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (treefd < 0) {
                log_error_errno(-errno, "sandbox fork: %s: %m", dst.tree);
                code = EXIT_SETUP;
                goto out;
        }

        uint64_t t0 = now_monotonic_ms();
        code = open_source(dirfd, sessions, name, &src);
        if (code != EXIT_OK)
                goto out;
        code = copy_workspace(name, &src, treefd, &st, &pause_ms);
        if (code != EXIT_OK)
                goto out;
        /* root's sandbox user is uid 65534: NEW's jobs must own their files */
        if (geteuid() == 0 && (r = session_chown_tree(&dst, ns_host_uid(), ns_host_gid())) < 0) {
                log_error_errno(r, "sandbox fork: session %s: chown: %m", new_name);
                code = EXIT_SETUP;
                goto out;
        }
        if (record_fork(dirfd, name, new_name, &src, &st, t0, pause_ms, fork_id) < 0) {
                code = EXIT_SETUP;
                goto out;
        }
        code = save_fork_state(dirfd, name, new_name, &src, fork_id);
        if (code != EXIT_OK)
                goto out;
        report_fork(name, new_name, &src, &st, fork_id);
        made = false;
        code = EXIT_OK;
out:
        if (src.conn >= 0)
                close(src.conn);
        if (src.fd >= 0)
                close(src.fd);
        session_release(&src.held);
        json_decref(src.state);
        session_release(&dst);
        if (made) {
                r = session_remove(sessions, new_name);
                if (r < 0 && r != -ENOENT)
                        log_warning("sandbox fork: cannot remove the half-made session %s: %s", new_name, strerror(-r));
        }
        return code;
}
