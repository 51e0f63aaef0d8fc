/* main.c - hutch's entry point: global options, the verb table, and the
 * final check that everything printed on stdout really got out (a full
 * disk or a closed pipe must not turn into a silent success). */
#include "config.h"

#include <getopt.h>
#include <malloc.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"

static const struct verb verbs[] = {
        { "run",     verb_run,     "run a command in a fresh sandbox" },
        { "ls",      verb_ls,      "list recorded runs, newest first" },
        { "rerun",   verb_rerun,   "run a recorded run again, same command and profile" },
        { "show",    verb_show,    "show one run: outcome, metrics, output" },
        { "logs",    verb_logs,    "print a run's stored output" },
        { "diff",    verb_diff,    "show what a run changed in its workspace" },
        { "apply",   verb_apply,   "apply a run's workspace changes to a directory" },
        { "cp",      verb_cp,      "copy a recorded file or artifact out of a run" },
        { "session", verb_session, "list or remove persistent session workspaces" },
        { "ps",      verb_ps,      "list the runs running now" },
        { "kill",    verb_kill,    "cancel a running run" },
        { "wait",    verb_wait,    "wait for a run to end, exit with its code" },
        { "stats",   verb_stats,   "summarise the history: statuses, percentiles, top commands" },
        { "gc",      verb_gc,      "mark orphaned runs, delete old ones" },
        { "profile", verb_profile, "list profiles, show one fully resolved" },
        { "doctor",  verb_doctor,  "check what this host supports" },
};

int cli_bad_value(const char *verb, const char *opt, const char *value, const char *what)
{
        log_error("%s: --%s: %s, got \"%s\"", verb, opt, what, value);
        return EXIT_USAGE;
}

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: hutch [--version] [--help] VERB [ARGS...]\n"
                "\n"
                "Run untrusted jobs in a rootless throwaway sandbox.\n"
                "\n"
                "Verbs:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
        fprintf(f,
                "\n"
                "`hutch VERB --help` describes each verb; man hutch(1) has the exit codes.\n");
}

static int flush_stdout(int code)
{
        /* like git: a verb that "succeeded" but whose output was lost did not */
        if (fflush(stdout) != 0 || ferror(stdout)) {
                log_error("write error on standard output: %s", strerror(errno));
                return code == EXIT_OK ? EXIT_FAILURE_GENERIC : code;
        }
        return code;
}

int main(int argc, char **argv)
{
        /* A fixed threshold keeps every large buffer (the supervisor's
         * 768 KiB loop, the pass-through buffers) in its own mmap: calloc
         * then needs no memset and realloc no copy, so pages are touched
         * only when output fills them. glibc's default threshold rises
         * after the first large free (the profile reader's), after which
         * those buffers came from the heap and were written in full on
         * every run: 285 of 678 page faults of `hutch run -- true`. */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE;
        }
        if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
                usage(stdout);
                return flush_stdout(EXIT_OK);
        }
        if (streq(argv[1], "--version") || streq(argv[1], "version")) {
                printf("hutch %s\n", PACKAGE_VERSION);
                return flush_stdout(EXIT_OK);
        }
        /* each verb words its own usage errors (cli_usage_error()) */
        opterr = 0;
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[1], verbs[i].name))
                        return flush_stdout(verbs[i].run(argc - 1, argv + 1));

        log_error("unknown verb '%s' (see hutch --help)", argv[1]);
        return EXIT_USAGE;
}
