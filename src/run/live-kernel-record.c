/* live-kernel-record.c - a recorded kernel call that prints nothing, for
 * hutch mcp's in-process calls (see live_kernel_record() in
 * run/live-kernel.h).
 *
 * Same record as `hutch exec --kernel` (live_kernel_exec()): the row is
 * inserted before the call (a crash leaves it running, for gc), the
 * final update is store_run_finish()'s durable one, so the caller
 * answers only what is on disk. What differs: no output goes to our
 * stdout (the MCP server's stdout is its protocol), the answer is the
 * result object, and the store connection may be the caller's (one per
 * thread: sqlite connections are not shared between threads), so that
 * closing it (sqlite's checkpoint at the last close) can wait until the
 * answer is out. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/live-internal.h"
#include "run/run-internal.h"
#include "run/run.h"
#include "supervise/capture.h"

int live_kernel_record(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                       uint64_t timeout_ms, int cancel_fd, char *const *labels, const struct run_ui *ui,
                       struct store *st, json_t **ret, char **ret_error)
{
        _cleanup_free_ char *cwd = getcwd(NULL, 0), *db = NULL, *error = NULL, *profile = NULL;
        _cleanup_free_ char *label = NULL, *klabel = NULL;
        _cleanup_strv_ char **all = NULL;
        _cleanup_store_ struct store *own = NULL;
        struct store *s = st;
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        _cleanup_capture_ struct capture *co = NULL, *ce = NULL;
        struct live_kernel_result res = { 0 };
        struct run_config cfg;
        struct run_outcome o = { 0 };
        const char *ls = live_kernel_lang_to_string(lang);
        size_t n = 0;

        *ret = NULL;
        *ret_error = NULL;
        if (!live_name_valid(name) || len > LIVE_KERNEL_CODE_MAX) {
                *ret_error = xstrdup(len > LIVE_KERNEL_CODE_MAX ? "code too long for a kernel" : "not a sandbox name");
                return EXIT_USAGE;
        }
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0) {
                *ret_error = xstrdup("no directory of live sandboxes");
                return EXIT_SETUP;
        }
        if (!s && (store_default_path(&db) < 0 || store_open(db, &own, &error) < 0)) {
                *ret_error = xasprintf("run store: %s", error ? error : "set HUTCH_STATE_DIR or HOME");
                return EXIT_SETUP;
        }
        if (!s)
                s = own;
        label = xasprintf("sandbox=%s", name);
        klabel = xasprintf("kernel=%s", ls);
        all = strv_push(all, &n, label);
        all = strv_push(all, &n, klabel);
        for (size_t i = 0; labels && labels[i]; i++)
                all = strv_push(all, &n, labels[i]);
        char *argv[] = { "--kernel", (char *)ls, NULL };
        profile = xasprintf("sandbox:%s", name);
        if (run_record_begin(rec, argv, cwd ? cwd : "", profile) < 0) {
                *ret_error = xstrdup("cannot begin the record");
                return EXIT_SETUP;
        }
        rec->lang = xstrdup(ls);
        rec->code = xmalloc(len + 1);
        memcpy(rec->code, code, len);
        rec->code[len] = '\0';
        rec->code_len = len;
        live_inherit_sandbox(s, dirfd, name, rec);
        if (store_run_insert(s, rec) < 0 || store_labels_set(s, rec->id, all) < 0) {
                *ret_error = xasprintf("run store %s: %s", store_path(s), store_error(s));
                return EXIT_SETUP;
        }
        run_config_init(&cfg);
        co = capture_new(cfg.capture_bytes);
        ce = capture_new(cfg.capture_bytes);
        int k = live_kernel_call(name, lang, code, len, timeout_ms, cancel_fd, co, ce, false, &res);
        if (k < 0) {
                o.status = RUN_SETUP_ERROR;
                o.exit_code = k == -EBUSY ? EXIT_BUSY : EXIT_SETUP;
                snprintf(o.message, sizeof(o.message), "sandbox %s: %s", name,
                         k == -EBUSY   ? "its kernel is running another call, or restarting; try again"
                         : k == -EPIPE ? "its supervisor went away"
                                       : strerror(-k));
        } else {
                /* the value as a REPL shows it, after the output */
                if (res.value) {
                        capture_append(co, res.value, strlen(res.value));
                        capture_append(co, "\n", 1);
                }
                live_kernel_outcome(&res, &o);
        }
        live_kernel_result_done(&res);
        /* json false, no events: records (durably) and prints nothing */
        run_finish_record(ui, s, rec, &cfg, &o, co, ce, NULL, NULL, NULL, false);
        run_config_done(&cfg);
        *ret = ui->result_object(s, rec);
        return o.exit_code;
}
