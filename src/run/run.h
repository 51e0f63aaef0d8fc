/* run/run.h - one run (`hutch run`, `hutch rerun`): from a resolved,
 * frozen run_config to the record and hutch's exit code, as a short
 * sequence of stages (run/run.c). The verbs in cli/ parse and resolve,
 * then call run_execute(); the words the run says (its result as JSON,
 * the apply of a change set, the answer of an --id key) are theirs,
 * handed in as struct run_ui, so run/ never includes cli/. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "config/lang.h"
#include "workspace/apply.h"
#include "workspace/session.h"

struct blobstore;
struct changeset;
struct run_args;
struct run_config;
struct run_live;
struct run_record;
struct store;

/* What the verb gives the run to speak with. */
struct run_ui {
        /* The run as a hutch.result/1 object (s may be NULL). New reference. */
        json_t *(*result_object)(struct store *s, const struct run_record *rec);
        /* Apply change set cs to host dir target, blobs from bs, as `hutch
         * apply` does (no force, no modes, no overwrite), protected paths
         * (workspace/protected.h) by policy, the built-in list plus protect
         * (NULL-terminated, may be NULL); an exit code, after printing
         * what went wrong. */
        int (*apply_changeset)(const struct changeset *cs, const char *target, struct blobstore *bs,
                               enum apply_protected_policy policy, char *const *protect);
        /* --id: the answer of the run that took a's key; -1 when there
         * is none, else the exit code after printing it. */
        int (*answer_key)(const struct run_args *a, char *const *argv, bool wait_running);
};

/* Labels a run of a request gets when the request gave it stdin or
 * files, which are not stored: hutch rerun refuses such a run rather
 * than run it without them. */
#define RUN_LABEL_REQUEST_STDIN "hutch.request.stdin"
#define RUN_LABEL_REQUEST_FILES "hutch.request.files"

/* The run's options that are not its profile's. */
struct run_args {
        const char *profile;
        char **overrides;       /* key, value, key, value, ... */
        size_t n_overrides;     /* strings in overrides (for strv_push()) */
        bool json;
        const char *lang;
        const char *code;
        const char *code_file;
        bool code_stdin;
        int verbosity;
        const char *workdir;    /* --workdir: host dir under the workspace */
        bool apply;
        /* --skip-protected / --allow-protected; REFUSE by default (zero) */
        enum apply_protected_policy apply_protected;
        char **inputs;          /* --input, as given */
        const char *session;    /* --session NAME */
        uint64_t session_wait_ms;
        uint64_t queue_wait_ms; /* --queue-wait: how long to wait for admission */
        bool trust_profile;     /* --trust-profile */
        const char *request;    /* --request FILE|- */
        char **labels;          /* --label KEY=VALUE, as given */
        const char *id_key;     /* --id KEY: idempotency key */
        bool id_wait;           /* --id-wait: wait for a running run with the key */
        char **secrets;         /* --secret NAME|NAME=@FILE, as given */
        char *const *redact;    /* the values the record keeps redacted
                                 * (run_config.redact_env), for comparing a
                                 * request with a recorded one */
        bool events;            /* --events: JSON lines as things happen */
        bool detach;            /* --detach: print the id, go on in the background */
        bool log_id;            /* --log-id: messages carry the run id (log_set_tag()) */
        const char *stdin_data; /* a request's stdin, instead of ours */
        size_t stdin_len;
        char *stage_dir;        /* a request's files, staged as the workspace's lower dir (owned) */
        const struct request_file *session_files; /* or, with a session, put into its tree */
        size_t n_session_files;
        pid_t stage_pid;        /* who staged them */
        const struct run_ui *ui; /* the verb's words (required) */
        const struct run_live *live; /* `hutch sandbox start` (run/live.h), with detach */
};

/* --lang: where the code comes from, what runs it (cli/run.c). */
struct lang_job {
        struct lang_plan plan;
        int code_fd;            /* the code, as an anonymous file; -1 without --lang */
        const char *profile;    /* the language's profile, unless -p */
        struct lang_table *table;
};

/* The seccomp cache dir (NULL without a state dir), and the entry
 * run_build_seccomp() uses for cfg in it (NULL: none); new strings
 * (run/limits.c; `hutch gc` prunes the cache). */
char *run_seccomp_cache_dir(void);
char *run_seccomp_cache_entry(const struct run_config *cfg);

/* Where a detached run's events are spooled:
 * <state dir>/spool/<id>.events. NULL without a state dir. */
char *run_spool_path(const char *run_id);

/* One run of cfg, resolved and frozen (profile_resolve(), or a rerun's
 * stored text): workspace, record, sandbox, supervision, collection,
 * record, answer. lj is the --lang job (code_fd -1 without), a the
 * options that are not the profile's, lang the language's name for the
 * record, json the --json answer, rerun_of the run rerun or NULL.
 * Returns hutch's exit code, after logging what went wrong. A run
 * recorded while its init was still exiting on its own sets
 * *ret_exiting_init: the caller reaps it last (sandbox_reap()), once
 * everything else of hutch is put away, which then overlaps with init's
 * exit, the sandbox's mount teardown. Otherwise *ret_exiting_init is
 * left alone. */
int run_execute(const struct run_config *cfg, const struct lang_job *lj, const struct run_args *a,
                const char *lang, bool json, const char *rerun_of, pid_t *ret_exiting_init);

