/* cli.h - the verb table's contract. Each verb lives in cli_<verb>.c,
 * parses its own options with getopt_long, and returns an exit code
 * (exit-codes.h). main.c owns dispatch and the final stdout check. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>

#include "workspace/apply.h"

struct verb {
        const char *name;
        int (*run)(int argc, char **argv);  /* argv[0] is the verb name */
        const char *summary;                /* one line for `hutch --help` */
};

/* Verb entry points. */
int verb_run(int argc, char **argv);
int verb_rerun(int argc, char **argv);  /* cli/run.c */
int verb_doctor(int argc, char **argv);
int verb_profile(int argc, char **argv);   /* cli/profile.c */
int verb_ls(int argc, char **argv);
int verb_show(int argc, char **argv);
int verb_logs(int argc, char **argv);
int verb_gc(int argc, char **argv);
int verb_diff(int argc, char **argv);
int verb_apply(int argc, char **argv);
int verb_cp(int argc, char **argv);
int verb_session(int argc, char **argv);
int verb_ps(int argc, char **argv);
int verb_kill(int argc, char **argv);
int verb_wait(int argc, char **argv);
int verb_stats(int argc, char **argv);
int verb_mcp(int argc, char **argv);       /* cli/mcp.c, the server in mcp/ */
int verb_export(int argc, char **argv);
int verb_import(int argc, char **argv);
int verb_image(int argc, char **argv);     /* cli/image.c, the store in image/ */

/* hutch gc's part for the image store: layers and blobs no image uses
 * (cli/image.c). Prints one line; returns an exit code. */
int cli_image_gc(bool dry_run);
/* Open the image store (cli/image-store.c) for verb: create it when
 * missing with create, lock it exclusively with exclusive. EXIT_OK and
 * *ret; -ENOENT when there is none and !create; else an exit code after
 * logging. */
struct image_store;
int cli_image_open(const char *verb, bool create, bool exclusive, struct image_store **ret);
/* bytes for people: 512B, 1.5K, 117M, 4.2G. buf >= 16 bytes. */
const char *cli_human_size(uint64_t bytes, char *buf, size_t len);
/* The image store's directory (image_store_dir() of the run store's
 * default path), for profile_request.image_dir; NULL without a state
 * dir. Caller frees. */
char *cli_image_dir(void);
/* A run on an image (cfg->root = image:...) holds the image store
 * (image_store_use()) until *ret_fd is closed, so gc and image rm leave
 * its layers alone; the layers resolved are checked to be still there.
 * *ret_fd -1 when the root is no image. An exit code, after logging. */
struct run_config;
int cli_image_hold(const char *verb, const struct run_config *cfg, const char *image_dir, int *ret_fd);
/* doctor's line on the image store: where, how many images, bytes on
 * disk. Caller frees. */
char *cli_image_usage(void);
int verb_sandbox(int argc, char **argv);    /* cli/sandbox.c */
int verb_exec(int argc, char **argv);

/* Shared by the verbs that use the run history (cli/history.c). */
struct store;
struct run_record;
/* Open the user's store (store_default_path()). On failure prints
 * "hutch: <verb>: run store: <path>: <why>" and returns EXIT_SETUP;
 * otherwise EXIT_OK and *ret. */
int cli_open_store(const char *verb, struct store **ret);
/* The same for verbs that only read (ls, show, logs, diff, cp, gc
 * --dry-run): store_open_readonly(), so a read-only state dir works; a
 * state dir without a store yet gets one as with cli_open_store(). */
int cli_open_store_readonly(const char *verb, struct store **ret);
/* Find the run named by id (a full id or a unique prefix). On failure
 * prints one line ("hutch: <verb>: no run matches 'abcd'", "... is
 * ambiguous: ...") and returns EXIT_FAILURE_GENERIC, EXIT_DAMAGED when
 * its stored output does not match its checksum, or EXIT_SETUP when
 * the store failed; otherwise EXIT_OK and *ret. A running row whose
 * supervisor is gone comes back with status RUN_ORPHANED. */
int cli_find_run(const char *verb, struct store *s, const char *id, struct run_record **ret);
/* The common tail of the verbs that take one run id: check that exactly
 * one argument is left after the options (argv[optind]), open the store
 * read-only and find the run. Prints one line on failure and returns the
 * exit code (EXIT_USAGE, EXIT_FAILURE_GENERIC, EXIT_DAMAGED, EXIT_SETUP); EXIT_OK with both out
 * parameters set otherwise. */
int cli_open_run(const char *verb, int argc, char **argv, int optind_now,
                 struct store **ret_store, struct run_record **ret_rec);
/* A run as the hutch.result/1 JSON text, its recorded files included.
 * Caller frees. */
char *cli_run_json(struct store *s, const struct run_record *rec);
/* The same object (a new reference); s may be NULL for a run that was
 * never stored (no files, no labels). */
#include <jansson.h>
json_t *cli_run_json_object(struct store *s, const struct run_record *rec);

/* The [apply] protect patterns of the profile run rec ran with (its
 * stored resolution): a new vector, or NULL (none, or no profile kept).
 * A profile only adds to the built-in list (workspace/protected.h). */
char **cli_run_protect_patterns(const struct run_record *rec);

/* Add "protected": REASON to each change in files (the "files" array of
 * hutch.result/1) that is at a protected path for run rec (built-in list
 * and the run's profile). Nothing when the change set cannot be read. */
void cli_mark_protected_files(struct store *s, const struct run_record *rec, json_t *files);
/* Wait until run id ends (cli/wait.c): *ret gets its final record
 * (status RUN_ORPHANED when its supervisor died). timeout_ms 0 waits as
 * long as it takes. 0, -ETIMEDOUT, or -errno from the store. */
int cli_wait_run(struct store *s, const char *id, uint64_t timeout_ms, struct run_record **ret);
/* Print a finished run as `hutch run` would have: with events one exit
 * event (hutch.event/1) holding its result, with json its hutch.result/1
 * object, else its stored stdout and stderr bytes. Returns the exit
 * code run had (cli_run_exit_code()). */
int cli_answer_run(struct store *s, const struct run_record *rec, bool json, bool events);
/* logs --follow (cli/follow.c): stream run rec's output (its events with
 * events) from byte offset since of each stream until it ends; a run
 * that has ended is answered from its record. Returns the run's exit
 * code, or an exit code of its own after logging. */
int cli_follow(struct store *s, const struct run_record *rec, bool events, uint64_t since);
/* The exit code of a finished run: its recorded one, 125 when it has
 * none (orphaned). */
int cli_run_exit_code(const struct run_record *rec);

/* Shared by verbs: getopt_long() returned '?' or ':' (opterr is 0).
 * Prints one line, "hutch: VERB: unknown option '--x' (did you mean
 * --y? ...)" or "... needs a value", and returns EXIT_USAGE. */
struct option;
int cli_usage_error(const char *verb, char **argv, const struct option *opts);
/* For verbs that take no operands: EXIT_OK when getopt left none, else
 * one line, "hutch: VERB: unexpected argument 'x' (see hutch VERB
 * --help)", and EXIT_USAGE. */
int cli_no_operands(const char *verb, int argc, char **argv, int first);
/* The option of opts nearest to name (a typo's likely meaning), or NULL
 * when none is near. */
const char *cli_nearest_option(const struct option *opts, const char *name);

/* The hutch.error/1 object (cli/json-error.c) as one line of JSON text:
 * error is a short kind ("usage", "request", "setup", "busy", "store",
 * "not_found"), message the one line also logged, pointer the JSON
 * pointer of the bad request field (NULL: none), exit_code what hutch
 * exits with. The object also carries a stable "code" (the one chosen
 * with cli_error_code(), else the kind's: "request" -> "bad_request",
 * "busy" -> "idempotency_in_flight", "setup" -> "setup_refused", ...)
 * and "retryable" (hutch-json(7)). Caller frees; never NULL.
 * cli_print_error_json() prints it on stdout with a newline. */
char *cli_error_json(const char *error, const char *message, const char *pointer, int exit_code);
void cli_print_error_json(const char *error, const char *message, const char *pointer, int exit_code);
/* Choose the code of the hutch.error/1 object this process will answer
 * with (a static string from hutch-json(7)'s table, e.g. "store_busy"),
 * where the exit code alone does not tell it. */
void cli_error_code(const char *code);

/* Shared by verbs: an option that wants a value got a bad one. Prints
 * "hutch: <verb>: --<opt>: <what>" and returns EXIT_USAGE. */
int cli_bad_value(const char *verb, const char *opt, const char *value, const char *what);

/* is_key_value() (lib/util.h) under the name cli/run-options.c still
 * calls it by; the other verbs call is_key_value(). */
bool is_key_value(const char *s);

/* Apply change set cs to host directory target (cli/apply.c), blobs from
 * bs. Prints conflicts (all of them; then nothing was changed) or a
 * one-line summary. Refuses a partial change set (entries skipped) unless
 * force. Entries the host changed during the run are conflicts unless
 * overwrite. Returns EXIT_OK, or EXIT_FAILURE_GENERIC after printing why. */
struct changeset;
struct blobstore;
int cli_apply_changeset(const char *verb, const struct changeset *cs, const char *target,
                        struct blobstore *bs, bool force, bool keep_modes, bool overwrite);

/* The same with the policy for protected paths (workspace/protected.h):
 * cli_apply_changeset refuses them, with the built-in list only; protect: the profile's [apply] protect
 * (NULL-terminated, may be NULL). A protected path refused or left out
 * is named on stderr and makes it return EXIT_FAILURE_GENERIC. */
int cli_apply_changeset_protected(const char *verb, const struct changeset *cs, const char *target,
                                  struct blobstore *bs, bool force, enum apply_protected_policy policy,
                                  char *const *protect);

/* Remove sessions unused for longer than the default profile's
 * session_ttl (cli/session.c), printing one summary line; with dry_run
 * only count them. Returns an exit code. */
int cli_session_gc(struct store *s, bool dry_run);

/* `hutch stats --openmetrics` (cli/metrics.c): the runs matching filter
 * as metrics in the text format monitors scrape, with the run labels
 * of label_keys (NULL-terminated, may be NULL; each a valid label name,
 * at most METRICS_LABEL_KEYS_MAX) as labels of hutch_runs_total; on
 * stdout, or replacing the file output atomically. Returns an exit
 * code, having logged. */
#define METRICS_LABEL_KEYS_MAX 4
struct store_filter;
int cli_stats_openmetrics(struct store *s, const struct store_filter *filter, char **label_keys,
                          const char *output);

/* When stdout (stderr) is a terminal, route it through a filter that
 * neutralises escape sequences and control characters (see
 * sanitize_tty_stream): for the verbs that print what a job wrote or
 * named (diff, show, ls, logs). Redirected output stays exact. Call
 * before printing anything. */
void cli_guard_terminal(void);

/* A mode change worth a reader's eye, for diff --stat and show: "  (mode
 * 0644 -> 0777)" for a changed permission, "  (mode 0777)" for a new
 * entry with group or world write, set-id or sticky bits, else "". */
void cli_mode_note(bool added, bool deleted, mode_t old_mode, mode_t mode, char *buf, size_t len);
