/* main.c - hutch's entry point: global options, the verb table, and the
 * final check that everything printed on stdout really got out (a full
 * disk or a closed pipe must not turn into a silent success). */
#include "config.h"

#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "supervise/hostio.h"

static const struct verb verbs[] = {
        { "run",     verb_run,     "run a command in a fresh sandbox" },
        { "ls",      verb_ls,      "list recorded runs, newest first" },
        { "rerun",   verb_rerun,   "run a recorded run again, same command and profile" },
        { "show",    verb_show,    "show one run: outcome, metrics, output" },
        { "logs",    verb_logs,    "print a run's stored output" },
        { "diff",    verb_diff,    "show what a run changed in its workspace" },
        { "apply",   verb_apply,   "apply a run's workspace changes to a directory" },
        { "cp",      verb_cp,      "copy a recorded file or artifact out of a run" },
        { "sandbox", verb_sandbox, "start, list, stop or fork live sandboxes (hutch exec runs in them)" },
        { "exec",    verb_exec,    "run a command in a live sandbox, as a recorded run" },
        { "session", verb_session, "list or remove persistent session workspaces" },
        { "ps",      verb_ps,      "list the runs running now" },
        { "kill",    verb_kill,    "cancel a running run" },
        { "wait",    verb_wait,    "wait for a run to end, exit with its code" },
        { "stats",   verb_stats,   "summarise the history: statuses, percentiles, top commands" },
        { "gc",      verb_gc,      "mark orphaned runs, delete old ones" },
        { "export",  verb_export,  "write recorded runs as JSON lines, for import elsewhere" },
        { "import",  verb_import,  "merge exported runs (other nodes' stores) into this store" },
#ifndef HUTCH_STATIC_BUILD
        /* not in hutch-static: Debian's libarchive has no complete
         * static build; hutch-static runs the images hutch imports */
        { "image",   verb_image,   "import OCI images (oci:, docker-archive:) for run --image; ls, inspect, rm" },
#endif
        { "profile", verb_profile, "list profiles, show one fully resolved" },
        { "doctor",  verb_doctor,  "check what this host supports" },
        { "mcp",     verb_mcp,     "serve the Model Context Protocol on stdio: runs as tools" },
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

/* A verb run for a machine: it asked for one JSON answer on stdout
 * (--json, --request). --events answers with its own exit event. Only the
 * verb's own options count, not the job's argv after "--". */
static bool wants_json_answer(int argc, char **argv)
{
        bool json = false;

        for (int i = 2; i < argc; i++) {
                if (streq(argv[i], "--"))
                        break;
                if (streq(argv[i], "--events"))
                        return false;
                if (streq(argv[i], "--json") || streq(argv[i], "--request") ||
                    startswith(argv[i], "--request="))
                        json = true;
        }
        return json;
}

/* stdout for a --json caller: the same fd, counting what got through, so
 * main can tell "the verb answered" from "it failed before it could". */
static ssize_t counted_write(void *cookie, const char *buf, size_t n)
{
        size_t *count = cookie;
        ssize_t w;

        do
                w = write(STDOUT_FILENO, buf, n);
        while (w < 0 && errno == EINTR);
        if (w > 0)
                *count += (size_t)w;
        return w < 0 ? -1 : w;
}

static const char *error_kind(int code)
{
        switch (code) {
        case EXIT_USAGE: return "usage";
        case EXIT_DAMAGED: return "damaged";
        case EXIT_BUSY: return "busy";
        case EXIT_TIMEOUT: return "timeout";
        case EXIT_SETUP: return "setup";
        default: return "error";
        }
}

/* Every outcome of a --json call is exactly one JSON object on stdout: a
 * verb that failed before it printed its answer (a usage error, a store
 * that cannot be opened, an unknown run) gets a hutch.error/1 object
 * carrying the first error it logged. */
static int answer_json(const char *verb, int code, size_t printed)
{
        if (code == EXIT_OK || printed > 0)
                return code;
        _cleanup_free_ char *fallback = xasprintf("%s failed with exit code %d", verb, code);
        const char *message = log_first_error() ? log_first_error() : fallback;
        cli_print_error_json(error_kind(code), message, NULL, code);
        return flush_stdout(code);
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
        /* hutch's own messages, like the job's output, never block on a
         * stderr nobody reads: the closing "timed out" line held hutch
         * after its run until someone read the terminal */
        log_set_writer(hostio_write_bounded);
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
        static size_t printed;  /* outlives main: exit() may still flush stdout */
        bool json = wants_json_answer(argc, argv);
        if (json) {
                static const cookie_io_functions_t counted = { .write = counted_write };
                FILE *f = fopencookie(&printed, "w", counted);
                if (f) {
                        stdout = f;
                        log_keep_first_error();
                } else
                        json = false;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[1], verbs[i].name)) {
                        int code = flush_stdout(verbs[i].run(argc - 1, argv + 1));
                        return json ? answer_json(verbs[i].name, code, printed) : code;
                }

        log_error("unknown verb '%s' (see hutch --help)", argv[1]);
        return json ? answer_json(argv[1], EXIT_USAGE, printed) : EXIT_USAGE;
}
