/* cli/history.c - what the history verbs (ls, show, logs, gc; later run)
 * share: opening the user's store with one clear error, resolving a run
 * id or prefix into a record. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/sanitize.h"
#include "record/exchange.h"
#include "run/runfiles.h"
#include "record/store.h"

/* A store that stayed locked past the busy timeout is worth trying
 * again (exit 75, retryable); any other failure is not. */
static int open_failed(const char *verb, int r, const char *what)
{
        log_error("%s: run store: %s", verb, what);
        if (r == -EBUSY) {
                cli_error_code("store_busy");
                return EXIT_BUSY;
        }
        cli_error_code("store_unusable");
        return EXIT_SETUP;
}

int cli_open_store(const char *verb, struct store **ret)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = store_default_path(&path);
        if (r < 0) {
                log_error("%s: run store: set HUTCH_STATE_DIR, XDG_STATE_HOME or HOME", verb);
                return EXIT_SETUP;
        }
        r = store_open(path, ret, &error);
        if (r < 0)
                return open_failed(verb, r, error ? error : path);
        return EXIT_OK;
}

int cli_open_store_readonly(const char *verb, struct store **ret)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = store_default_path(&path);
        if (r < 0) {
                log_error("%s: run store: set HUTCH_STATE_DIR, XDG_STATE_HOME or HOME", verb);
                return EXIT_SETUP;
        }
        r = store_open_readonly(path, ret, &error);
        /* no history yet: the first verb makes the (empty) store, as
         * before, or says why it cannot */
        if (r == -ENOENT)
                return cli_open_store(verb, ret);
        if (r < 0)
                return open_failed(verb, r, error ? error : path);
        return EXIT_OK;
}

int cli_find_run(const char *verb, struct store *s, const char *id, struct run_record **ret)
{
        _cleanup_strv_ char **candidates = NULL;
        struct run_record *rec = NULL;
        int r;

        r = store_run_get(s, id, &rec, &candidates);
        if (r == -ENOENT || r == -EINVAL) {
                log_error("%s: no run matches '%s'", verb, id);
                cli_error_code("not_found");
                return EXIT_FAILURE_GENERIC;
        }
        if (r == -ENOTUNIQ) {
                _cleanup_free_ char *list = NULL;
                for (char **c = candidates; c && *c; c++) {
                        char *next = xasprintf("%s%s%s", list ? list : "", list ? ", " : "", *c);
                        free(list);
                        list = next;
                }
                log_error("%s: '%s' is ambiguous, it matches %s%s", verb, id, list ? list : "",
                          strv_length(candidates) >= 10 ? ", ..." : "");
                return EXIT_FAILURE_GENERIC;
        }
        if (r == -EBADMSG) {
                log_error("%s: %s", verb, store_error(s));
                return EXIT_DAMAGED;
        }
        if (r < 0) {
                log_error("%s: run store: %s", verb, store_error(s));
                return EXIT_SETUP;
        }
        if (run_record_is_orphan(rec))
                rec->status = RUN_ORPHANED;
        *ret = rec;
        return EXIT_OK;
}

int cli_open_run(const char *verb, int argc, char **argv, int optind_now,
                 struct store **ret_store, struct run_record **ret_rec)
{
        struct store *s = NULL;
        int r;

        if (argc - optind_now != 1) {
                log_error("%s: expected one run id (see hutch %s --help)", verb, verb);
                return EXIT_USAGE;
        }
        r = cli_open_store_readonly(verb, &s);
        if (r != EXIT_OK)
                return r;
        r = cli_find_run(verb, s, argv[optind_now], ret_rec);
        if (r != EXIT_OK) {
                store_close(s);
                return r;
        }
        *ret_store = s;
        return EXIT_OK;
}

void cli_mode_note(bool added, bool deleted, mode_t old_mode, mode_t mode, char *buf, size_t len)
{
        buf[0] = '\0';
        if (deleted || S_ISLNK(mode))
                return;
        if (!added && (old_mode & S_IFMT) == (mode & S_IFMT) && (old_mode & 07777) != (mode & 07777))
                snprintf(buf, len, "  (mode %04o -> %04o)", (unsigned)(old_mode & 07777), (unsigned)(mode & 07777));
        else if (added && (mode & 07022))
                snprintf(buf, len, "  (mode %04o)", (unsigned)(mode & 07777));
}

void cli_guard_terminal(void)
{
        /* only a terminal obeys escapes: a file or pipe gets the exact
         * bytes, so `hutch diff ID > x.patch` still applies */
        if (isatty(STDOUT_FILENO)) {
                FILE *f = sanitize_tty_stream(STDOUT_FILENO);
                if (f) {
                        fflush(stdout);
                        stdout = f;
                }
        }
        if (isatty(STDERR_FILENO)) {
                FILE *f = sanitize_tty_stream(STDERR_FILENO);
                if (f) {
                        setvbuf(f, NULL, _IONBF, 0);
                        fflush(stderr);
                        stderr = f;
                }
        }
}

json_t *cli_run_json_object(struct store *s, const struct run_record *rec)
{
        json_t *o = run_record_to_json(rec, true);
        json_object_set_new(o, "files", s ? runfiles_json(s, rec->id) : json_array());
        if (s)
                cli_mark_protected_files(s, rec, json_object_get(o, "files"));
        if (s)
                runfiles_summary_json(s, rec->id, o);
        /* every result says whether its changes reached a session:
         * null for a run without one */
        if (!json_object_get(o, "committed"))
                json_object_set_new(o, "committed", json_null());
        json_object_set_new(o, "connections", s ? store_connections_json(s, rec->id) : json_array());
        json_object_set_new(o, "labels", s ? store_labels_json(s, rec->id) : json_object());
        char node[EXCHANGE_MAX_NODE + 1];
        store_origin_json(s, rec->id, exchange_local_node(node, sizeof(node)), o);
        return o;
}

char *cli_run_json(struct store *s, const struct run_record *rec)
{
        json_t *o = cli_run_json_object(s, rec);
        char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(o);
        return text;
}
