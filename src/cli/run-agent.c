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
#include "workspace/stage.h"

/* A request's files: staged privately (workspace/stage.h) into the
 * directory that becomes the workspace's lower dir, as --workdir would
 * be. Owned by the id the sandbox user maps to, as a user's own tree
 * would be. */
static int stage_files(struct run_args *a, const struct request *req, char **ret_pointer, char **ret_error)
{
        uid_t uid = ns_real_root() ? ns_host_uid() : (uid_t)-1;
        gid_t gid = ns_real_root() ? ns_host_gid() : (gid_t)-1;

        a->stage_pid = getpid();
        int r = stage_request_files(req, uid, gid, &a->stage_dir, ret_pointer, ret_error);
        if (r == 0)
                a->workdir = a->stage_dir;
        return r;
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
        if (r == 0 && req->n_files && (a->workdir || req->workdir)) {
                pointer = xstrdup("/files");
                err = xstrdup("request: /files: cannot be combined with a workdir (its files are the workspace)");
                r = -EINVAL;
        }
        if (r == 0 && req->n_files && (a->session || req->session)) {
                /* put into the session's tree once it is locked */
                a->session_files = req->files;
                a->n_session_files = req->n_files;
        } else if (r == 0 && req->n_files)
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
        cfg->argv = strv_extend(cfg->argv, req->argv);
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
        for (char **p = req->private_env; p && *p; p++)
                cfg->private_env = strv_append(cfg->private_env, *p);
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
        /* under -t the job's output passes the pty's line discipline,
         * which writes a value's "\n" as "\r\n" */
        redact_forms_free(cfg->redact_env);
        cfg->redact_env = redact_forms(cfg->secret_env, cfg->tty);
        return EXIT_OK;
}

/* Whether rec (the run that has the key) ran the request a and argv
 * describe: the same language and inline code for a --lang run (code
 * from a file or stdin is not read again to compare), else the same
 * command. A key names one request: another one under it is a caller's
 * mistake, not a cache hit. */
static bool same_request(const struct run_args *a, char *const *argv, const struct run_record *rec)
{
        /* the record keeps a secret's value redacted (run_redact_start()):
         * compare what it would keep of this request */
        if (a->lang || rec->lang) {
                if (!a->lang || !rec->lang || !streq(a->lang, rec->lang))
                        return false;
                if (!a->code)
                        return true;
                size_t len = strlen(a->code);
                _cleanup_free_ char *clean = redact(a->code, len, a->redact, &len);
                const char *code = clean ? clean : a->code;
                return rec->code && len == rec->code_len && memcmp(code, rec->code, len) == 0;
        }
        size_t i = 0;
        for (; argv && argv[i] && rec->argv && rec->argv[i]; i++) {
                _cleanup_free_ char *mine = xstrdup(argv[i]);
                redact_str(&mine, a->redact);
                if (!streq(mine, rec->argv[i]))
                        return false;
        }
        return !(argv && argv[i]) && !(rec->argv && rec->argv[i]);
}

int run_answer_key(const struct run_args *a, char *const *argv, bool wait_running)
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
        if (!same_request(a, argv, rec)) {
                _cleanup_free_ char *msg = xasprintf("--id %s: run %s already has this key and ran another %s; "
                                                     "a key names one request (use a new key)", a->id_key, rec->id,
                                                     a->lang || rec->lang ? "language or code" : "command");
                log_error("run: %s", msg);
                if (a->json || a->events || a->request)
                        cli_print_error_json("conflict", msg, a->request ? "/idempotency_key" : NULL, EXIT_USAGE);
                return EXIT_USAGE;
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
