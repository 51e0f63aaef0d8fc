/* cli/run-internal.h - internal to the run verb (`hutch run`, `hutch
 * rerun`): what cli/run.c shares with the files that parse its command
 * line (run-options.c) and its --request, secrets and --id key
 * (run-agent.c). The run itself is run/run.h. Not an API: nothing
 * outside cli/run*.c includes it. */
#pragma once

#include <stdbool.h>

#include "run/run.h"

struct run_config;

enum {
        OPT_JSON = 0x100, OPT_NET, OPT_LANG, OPT_FILE, OPT_APPLY, OPT_SKIP_PROTECTED, OPT_ALLOW_PROTECTED, OPT_WORKDIR_INSIDE,
        OPT_SESSION, OPT_SESSION_WAIT, OPT_QUEUE_WAIT, OPT_TRUST_PROFILE,
        OPT_REQUEST, OPT_LABEL, OPT_ID, OPT_ID_WAIT, OPT_SECRET, OPT_EVENTS, OPT_DETACH, OPT_LOG_ID,
        OPT_KEY_BASE = 0x200,
};

/* cli/run-options.c */

/* Parse `hutch run`'s command line into *cfg (the job's argv, -t) and *a
 * (everything else; profile keys as overrides) and set the log level.
 * Returns 0 to go on, -1 after --help (exit 0), or an exit code
 * (EXIT_USAGE) after saying what is wrong. */
int run_parse_args(int argc, char **argv, struct run_config *cfg, struct run_args *a);
/* Whether kv is a label: KEY=VALUE, KEY 1-256 bytes, VALUE at most 4096. */
bool run_label_valid(const char *kv);

/* The run's words, for the verbs that run (cli/run.c). */
const struct run_ui *cli_run_ui(void);

/* cli/run-agent.c */

struct request;
/* Read a->request into *req (which must outlive a: a's strings point
 * into it) and merge it under the command line's options. Returns
 * EXIT_OK, or EXIT_USAGE after logging and printing a hutch.error/1
 * object naming the bad field. */
int run_apply_request(struct run_args *a, struct run_config *cfg, struct request *req);
/* Remove the request's staged files (a->stage_dir), if any. */
void run_request_cleanup(struct run_args *a);
/* Resolve a->secrets into cfg->secret_env. EXIT_OK or EXIT_USAGE (logged). */
int run_resolve_secrets(const struct run_args *a, struct run_config *cfg);
/* --id: answer from the store when a run with a->id_key exists, waiting
 * for a running one when wait_running. Returns -1 when there is none
 * (go on and run), else the exit code after printing the answer
 * (EXIT_BUSY for a running one not waited for; EXIT_USAGE, with a
 * hutch.error/1 "conflict", when that run was another request: argv,
 * the command of this one, differs from its, or its language or inline
 * code). */
int run_answer_key(const struct run_args *a, char *const *argv, bool wait_running);

