/* live-kernel-record.c - a kernel call and its record: `hutch exec NAME
 * --kernel LANG` (live_kernel_exec()) and hutch mcp's in-process calls
 * (live_kernel_record()), both one function, record_call(), that the
 * CLI asks to print as well.
 *
 * The record: a row labelled sandbox=NAME and kernel=LANG (and the
 * caller's labels), the language and the code the record's, the value
 * after the output in its stdout as a REPL shows it. Either we write it
 * (the row before the call, so a crash leaves it running for gc, and
 * store_run_finish()'s durable final update, so the caller answers only
 * what is on disk), or the supervisor does (`hutch exec` without
 * --json: the row before the call, the end at our FINISH, synced before
 * DONE, and no store opened here), and we write only what it could not:
 * a refused call's row, an end it did not take.
 *
 * What hutch mcp needs besides: nothing printed (its stdout is its
 * protocol), the answer as the result object, and a store connection of
 * its own (one per thread: sqlite connections are not shared between
 * threads), so that closing it (sqlite's checkpoint at the last close)
 * can wait until the answer is out. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/live-internal.h"
#include "run/run-internal.h"
#include "run/run.h"
#include "sandbox/sync.h"
#include "supervise/capture.h"

/* How record_call() runs and records a call. */
struct how {
        int fd;                 /* a connection to the sandbox (ours), or -1: connect */
        int cancel_fd;          /* readable or hung up: cancel the call (live_kernel_call()); or -1 */
        char *const *labels;    /* more labels, "k=v", NULL-terminated; or NULL */
        struct store *store;    /* the store to record in, or NULL: opened when needed */
        bool by_supervisor;     /* the supervisor writes the row and the end (needs fd) */
        bool print;             /* the CLI's: the output as it comes, the value after it
                                 * and the call's warnings (not with json), the run's id
                                 * (-v), the run as JSON at its end (json) */
        bool json;
};

/* The call's outcome (o) from what the call returned (k, res), the
 * value appended to the captured stdout and, with print, printed after
 * the output as a REPL shows it. */
static void outcome_of_call(const char *name, const char *ls, int k, const struct live_kernel_result *res,
                            struct capture *co, bool print, struct run_outcome *o)
{
        if (k == -ECANCELED) {
                o->status = RUN_CANCELLED;
                o->exit_code = EXIT_CANCELLED_TERM;
                snprintf(o->message, sizeof(o->message), "cancelled before it reached the kernel: nothing ran");
                return;
        }
        if (k == -EUSERS) {
                o->status = RUN_SETUP_ERROR;
                o->exit_code = EXIT_BUSY;
                snprintf(o->message, sizeof(o->message),
                         "sandbox %s: every job slot of the sandbox is taken (%d execs and kernels run); try again",
                         name, SANDBOX_LIVE_JOBS_MAX);
                return;
        }
        if (k < 0) {
                o->status = RUN_SETUP_ERROR;
                o->exit_code = k == -EBUSY ? EXIT_BUSY : EXIT_SETUP;
                if (k == -EBUSY)
                        snprintf(o->message, sizeof(o->message),
                                 "sandbox %s: its %s kernel is running another call (or restarting), or a fork "
                                 "is copying the sandbox; try again", name, ls);
                else
                        snprintf(o->message, sizeof(o->message), "sandbox %s: %s", name,
                                 k == -EPIPE ? "its supervisor went away" : strerror(-k));
                return;
        }
        if (res->value) {
                capture_append(co, res->value, strlen(res->value));
                capture_append(co, "\n", 1);
                if (print) {
                        (void)write_all(STDOUT_FILENO, res->value, strlen(res->value));
                        (void)write_all(STDOUT_FILENO, "\n", 1);
                }
        }
        live_kernel_outcome(res, o);
        if (!print)
                return;
        /* (a stop or a deadline is the run's error, said at its end) */
        if (res->status == LIVE_KERNEL_DIED && !res->stopped && !res->timed_out)
                log_warning("exec: %s", res->message);
        if (res->state_lost && res->status != LIVE_KERNEL_DIED)
                log_warning("exec: a fresh %s kernel ran this call: the state of earlier calls was lost", ls);
        if (res->discarded)
                log_warning("exec: %llu bytes the %s kernel wrote between calls were dropped (its output is "
                            "kept only while a call runs)", (unsigned long long)res->discarded, ls);
}

/* The call's row as we write it: not yet inserted. */
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

/* The row, begun (call_record()) and inserted with its labels; NULL
 * and *ret_error on failure. */
static struct run_record *insert(struct store *s, int dirfd, const char *name, const char *ls, const char *code,
                                 size_t len, const char *cwd, const struct how *how, char **ret_error)
{
        _cleanup_free_ char *label = xasprintf("sandbox=%s", name), *klabel = xasprintf("kernel=%s", ls);
        _cleanup_strv_ char **all = NULL;
        size_t n = 0;
        all = strv_push(all, &n, label);
        all = strv_push(all, &n, klabel);
        for (size_t i = 0; how->labels && how->labels[i]; i++)
                all = strv_push(all, &n, how->labels[i]);
        _cleanup_run_record_ struct run_record *rec = call_record(s, dirfd, name, ls, code, len, cwd);
        if (!rec) {
                *ret_error = xstrdup("cannot begin the record");
                return NULL;
        }
        if (store_run_insert(s, rec) < 0 || store_labels_set(s, rec->id, all) < 0) {
                *ret_error = xasprintf("run store %s: %s", store_path(s), store_error(s));
                return NULL;
        }
        if (how->print)
                log_info("run %s", rec->id);
        return TAKE_PTR(rec);
}

static struct store *open_store(struct store **own, char **ret_error)
{
        _cleanup_free_ char *db = NULL, *error = NULL;
        if (store_default_path(&db) < 0 || store_open(db, own, &error) < 0) {
                *ret_error = xasprintf("run store: %s", error ? error : "set HUTCH_STATE_DIR or HOME");
                return NULL;
        }
        return *own;
}

/* Run code in sandbox name's lang kernel and record it as how says.
 * Returns hutch's exit code; *ret (ret may be NULL) the run's result
 * object when we completed the record (NULL when the supervisor did);
 * *ret_error a new string saying why, when nothing could be recorded
 * (NULL otherwise). */
static int record_call(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                       uint64_t timeout_ms, const struct how *how, const struct run_ui *ui, json_t **ret,
                       char **ret_error)
{
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        _cleanup_store_ struct store *own = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_capture_ struct capture *co = NULL, *ce = NULL;
        struct store *s = how->store;
        struct live_kernel_result res = { 0 };
        struct run_config cfg;
        struct run_outcome o = { 0 };
        const char *ls = live_kernel_lang_to_string(lang);
        char run_id[33] = "";
        int exit_code = EXIT_SETUP;

        if (ret)
                *ret = NULL;
        *ret_error = NULL;
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0) {
                *ret_error = xstrdup("no directory of live sandboxes");
                return EXIT_SETUP;
        }
        if (!how->by_supervisor) {
                /* our own record: the row before the call */
                if (!s && !(s = open_store(&own, ret_error)))
                        return EXIT_SETUP;
                if (!(rec = insert(s, dirfd, name, ls, code, len, cwd ? cwd : "", how, ret_error)))
                        return EXIT_SETUP;
        }
        run_config_init(&cfg);
        co = capture_new(cfg.capture_bytes);
        ce = capture_new(cfg.capture_bytes);
        bool tee = how->print && !how->json;
        int k = how->fd < 0 ? live_kernel_call(name, lang, code, len, timeout_ms, how->cancel_fd, co, ce, tee,
                                               &res)
                            : live_kernel_call_on(how->fd, lang, code, len, timeout_ms, how->cancel_fd,
                                                  how->by_supervisor ? cwd ? cwd : "" : NULL, co, ce, tee,
                                                  run_id, &res);
        if (how->print && run_id[0])
                log_info("run %s", run_id);
        outcome_of_call(name, ls, k, &res, co, tee, &o);
        live_kernel_result_done(&res);
        if (k == -EBUSY || k == -EUSERS) {
                /* refused busy before anything ran: recorded nowhere, as
                 * an exec refused busy is; the row we wrote before asking
                 * is taken back (when that fails, it is completed as the
                 * refusal below: never left running) */
                int w = rec ? store_run_withdraw(s, rec->id) : 0;
                if (w == 0) {
                        *ret_error = xstrdup(o.message);
                        exit_code = EXIT_BUSY;
                        goto out;
                }
                log_debug("exec: cannot take back run %s of a busy call: %s", rec->id, strerror(-w));
        }
        if (how->by_supervisor && run_id[0] && k == 0 && live_finish(how->fd, &o, co, ce) == 0) {
                /* recorded, durably, by the supervisor */
                live_say_outcome(&o);
                exit_code = o.exit_code;
                goto out;
        }
        /* what the supervisor could not record: a refused call's row,
         * or the end it did not take */
        if (!s && !(s = open_store(&own, ret_error)))
                goto out;
        if (!rec && run_id[0] && store_run_get(s, run_id, &rec, NULL) < 0)
                rec = NULL;
        if (!rec && !(rec = insert(s, dirfd, name, ls, code, len, cwd ? cwd : "", how, ret_error)))
                goto out;
        run_finish_record(ui, s, rec, &cfg, &o, co, ce, NULL, NULL, NULL, how->print && how->json);
        if (ret)
                *ret = ui->result_object(s, rec);
        exit_code = o.exit_code;
out:
        run_config_done(&cfg);
        return exit_code;
}

int live_kernel_exec(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                     uint64_t timeout_ms, bool json, const struct run_ui *ui)
{
        _cleanup_free_ char *error = NULL;

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
        /* no sandbox, no record */
        _cleanup_close_ int fd = live_connect(dirfd, name);
        if (fd < 0) {
                log_error("exec: no running sandbox %s (hutch sandbox ls)", name);
                return EXIT_SETUP;
        }
        signal(SIGPIPE, SIG_IGN);
        /* recorded by the supervisor; with --json, here (the row
         * before the call, the end with the JSON printed) */
        struct how how = { .fd = fd, .cancel_fd = -1, .by_supervisor = !json, .print = true, .json = json };
        int r = record_call(name, lang, code, len, timeout_ms, &how, ui, NULL, &error);
        /* busy, not recorded: the JSON caller's error says retryable, as
         * an exec's does */
        if (error && r == EXIT_BUSY)
                log_set_error_code("sandbox_busy");
        if (error)
                log_error("exec: %s", error);
        return r;
}

int live_kernel_record(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                       uint64_t timeout_ms, int cancel_fd, char *const *labels, const struct run_ui *ui,
                       struct store *st, json_t **ret, char **ret_error)
{
        *ret = NULL;
        *ret_error = NULL;
        if (!live_name_valid(name) || len > LIVE_KERNEL_CODE_MAX) {
                *ret_error = xstrdup(len > LIVE_KERNEL_CODE_MAX ? "code too long for a kernel" : "not a sandbox name");
                return EXIT_USAGE;
        }
        struct how how = { .fd = -1, .cancel_fd = cancel_fd, .labels = labels, .store = st };
        return record_call(name, lang, code, len, timeout_ms, &how, ui, ret, ret_error);
}
