/* cli/run-agent.c - what the agent interface adds to `hutch run`
 * (hutch-json(7)): a --request document turned into the run's
 * arguments, secrets resolved into the job's environment, and the
 * idempotency key answered from the store before anything runs.
 */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/cli.h"
#include "cli/run-internal.h"
#include "config/request.h"
#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/fsutil.h"
#include "lib/redact.h"
#include "sandbox/ns.h"
#include "record/blobstore.h"
#include "run/runfiles.h"
#include "record/store.h"
#include "supervise/events.h"
#include "workspace/session.h"

/* Write one request file under dirfd at relative path rel (checked by
 * the reader: no "..", no leading '/'), making its parent dirs. */
static int stage_one(int dirfd, const struct request_file *f, uid_t uid, gid_t gid)
{
        _cleanup_free_ char *copy = xstrdup(f->path);
        _cleanup_close_ int dir = dup(dirfd);
        char *name = copy, *slash;
        int r;

        if (dir < 0)
                return -errno;
        while ((slash = strchr(name, '/'))) {
                *slash = '\0';
                if (mkdirat(dir, name, 0755) < 0 && errno != EEXIST)
                        return -errno;
                int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                if (uid != (uid_t)-1)
                        (void)fchown(next, uid, gid);
                close(dir);
                dir = next;
                name = slash + 1;
        }
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (f->host_path) {
                /* the caller's own file, read with the caller's rights */
                _cleanup_close_ int in = open(f->host_path, O_RDONLY | O_CLOEXEC);
                if (in < 0)
                        return -errno;
                int64_t n = fs_copy_digest(in, fd, NULL, 0);
                if (n < 0)
                        return (int)n;
        } else {
                r = write_all(fd, f->data, f->len);
                if (r < 0)
                        return r;
        }
        if (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0)
                return -errno;
        return 0;
}

/* A request's files: written into a new private directory that becomes
 * the workspace's lower dir, as --workdir would be, so the job sees
 * them at /workspace and they are never counted as its changes. Owned
 * by the id the sandbox user maps to, as a user's own tree would be. */
static int stage_files(struct run_args *a, const struct request *req, char **ret_pointer, char **ret_error)
{
        const char *tmp = getenv("TMPDIR");
        _cleanup_free_ char *dir = xasprintf("%s/hutch-request-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        uid_t uid = ns_real_root() ? ns_host_uid() : (uid_t)-1;
        gid_t gid = ns_real_root() ? ns_host_gid() : (gid_t)-1;
        int r;

        if (!mkdtemp(dir)) {
                *ret_pointer = xstrdup("/files");
                *ret_error = xasprintf("request: /files: cannot make a directory for them: %s: %s",
                                       dir, strerror(errno));
                return -errno;
        }
        a->stage_dir = xstrdup(dir);
        a->stage_pid = getpid();
        _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0 || fchmod(dirfd, 0755) < 0 || (uid != (uid_t)-1 && fchown(dirfd, uid, gid) < 0)) {
                *ret_pointer = xstrdup("/files");
                *ret_error = xasprintf("request: /files: %s: %s", dir, strerror(errno));
                return -errno;
        }
        for (size_t i = 0; i < req->n_files; i++) {
                r = stage_one(dirfd, &req->files[i], uid, gid);
                if (r < 0) {
                        *ret_pointer = xasprintf("/files/%s", req->files[i].path);
                        *ret_error = xasprintf("request: /files/%s: %s%s%s", req->files[i].path,
                                               req->files[i].host_path ? req->files[i].host_path : "",
                                               req->files[i].host_path ? ": " : "", strerror(-r));
                        return r;
                }
        }
        a->workdir = a->stage_dir;
        return 0;
}

void run_request_cleanup(struct run_args *a)
{
        /* a detached run's files are its supervisor's to remove */
        if (!a->stage_dir || (a->detach && getpid() == a->stage_pid))
                return;
        _cleanup_free_ char *parent = xstrdup(a->stage_dir);
        char *slash = strrchr(parent, '/');
        *slash = '\0';
        _cleanup_close_ int fd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                (void)fs_remove_tree_at(fd, slash + 1);
        free(a->stage_dir);
        a->stage_dir = NULL;
}

int run_apply_request(struct run_args *a, struct run_config *cfg, struct request *req)
{
        _cleanup_free_ char *pointer = NULL, *err = NULL;
        char **overrides = NULL;
        int r;

        r = request_read(a->request, req, &pointer, &err);
        if (r == 0 && req->session && !session_name_valid(req->session)) {
                pointer = xstrdup("/session");
                err = xstrdup("request: /session: expected 1-64 letters, digits, '.', '_' or '-', "
                              "not starting with '.'");
                r = -EINVAL;
        }
        if (r == 0 && req->n_files && (a->workdir || a->session || req->workdir || req->session)) {
                pointer = xstrdup("/files");
                err = xstrdup("request: /files: cannot be combined with a workdir or a session "
                              "(their files are the workspace)");
                r = -EINVAL;
        }
        if (r == 0 && req->n_files)
                r = stage_files(a, req, &pointer, &err);
        if (r < 0) {
                log_error("run: %s", err);
                cli_print_error_json("request", err, pointer ? pointer : "", EXIT_USAGE);
                return EXIT_USAGE;
        }

        /* the request first, the command line after it: an option given
         * on both wins from the command line, as it does over a profile */
        if (req->language) {
                a->lang = req->language;
                a->code = req->code;
        }
        for (char **p = req->argv; p && *p; p++)
                cfg->argv = strv_append(cfg->argv, *p);
        if (!a->profile)
                a->profile = req->profile;
        if (!a->session)
                a->session = req->session;
        if (!a->workdir)
                a->workdir = req->workdir;
        if (!a->id_key)
                a->id_key = req->idempotency_key;
        for (char **p = req->overrides; p && *p; p++)
                overrides = strv_append(overrides, *p);
        for (char **p = a->overrides; p && *p; p++)
                overrides = strv_append(overrides, *p);
        strv_free(a->overrides);
        a->overrides = overrides;
        for (char **p = req->labels; p && *p; p++)
                a->labels = strv_append(a->labels, *p);
        for (char **p = req->secret_specs; p && *p; p++)
                a->secrets = strv_append(a->secrets, *p);
        for (char **p = req->secret_values; p && *p; p++)
                cfg->secret_env = strv_append(cfg->secret_env, *p);
        if (req->stdin_data) {
                a->stdin_data = req->stdin_data;
                a->stdin_len = req->stdin_len;
        }
        /* the answer is the result object, unless events were asked for */
        if (!a->events)
                a->json = true;
        return EXIT_OK;
}

int run_resolve_secrets(const struct run_args *a, struct run_config *cfg)
{
        for (char **s = a->secrets; s && *s; s++) {
                _cleanup_free_ char *kv = NULL, *err = NULL;
                int r = secret_resolve(*s, &kv, &err);
                if (r < 0) {
                        log_error("run: %s", err);
                        if (a->json || a->request)
                                cli_print_error_json("usage", err, NULL, EXIT_USAGE);
                        return EXIT_USAGE;
                }
                cfg->secret_env = strv_append(cfg->secret_env, kv);
                explicit_bzero(kv, strlen(kv));
        }
        return EXIT_OK;
}

int run_answer_key(const struct run_args *a, bool wait_running)
{
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL, *done = NULL;
        int r, code;

        if (!a->id_key)
                return -1;
        code = cli_open_store("run", &s);
        if (code != EXIT_OK)
                return code;
        r = store_run_get_by_key(s, a->id_key, &rec);
        if (r == -ENOENT)
                return -1;
        if (r < 0) {
                log_error("run: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        if (rec->status == RUN_RUNNING && !run_record_is_orphan(rec)) {
                if (!wait_running) {
                        _cleanup_free_ char *msg = xasprintf("--id %s: run %s with this key is still running "
                                                             "(--id-wait waits for it)", a->id_key, rec->id);
                        log_error("run: %s", msg);
                        if (a->json || a->events)
                                cli_print_error_json("busy", msg, NULL, EXIT_BUSY);
                        return EXIT_BUSY;
                }
                log_info("run %s with key %s is running: waiting for it", rec->id, a->id_key);
                r = cli_wait_run(s, rec->id, 0, &done);
                if (r < 0) {
                        log_error("run: run store: %s", store_error(s));
                        return EXIT_SETUP;
                }
                rec = run_record_free(rec);
                rec = TAKE_PTR(done);
        } else if (rec->status == RUN_RUNNING)
                rec->status = RUN_ORPHANED;
        log_info("run %s has key %s: answering from the store", rec->id, a->id_key);
        if (rec->status == RUN_ORPHANED)
                log_error("run: run %s with key %s was orphaned: its supervisor died", rec->id, a->id_key);
        return cli_answer_run(s, rec, a->json, a->events);
}
