/* cli.h - the verb table's contract. Each verb lives in cli_<verb>.c,
 * parses its own options with getopt_long, and returns an exit code
 * (exit-codes.h). main.c owns dispatch and the final stdout check. */
#pragma once

#include <stdbool.h>

struct verb {
        const char *name;
        int (*run)(int argc, char **argv);  /* argv[0] is the verb name */
        const char *summary;                /* one line for `sbx --help` */
};

/* Verb entry points. */
int verb_run(int argc, char **argv);
int verb_doctor(int argc, char **argv);

/* Shared by verbs: an option that wants a value got a bad one. Prints
 * "sbx: <verb>: --<opt>: <what>" and returns EXIT_USAGE. */
int cli_bad_value(const char *verb, const char *opt, const char *value, const char *what);
