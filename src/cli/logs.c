/* cli/logs.c - `hutch logs ID`: the exact bytes stored for a run's output
 * (head, the omission marker if the stream was truncated, tail). By
 * default stdout goes to stdout and stderr to stderr, as the job wrote
 * them; --stdout or --stderr writes just that stream to stdout. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/store.h"

enum which {
        BOTH,
        ONLY_STDOUT,
        ONLY_STDERR,
};

static void help(void)
{
        printf("Usage: hutch logs [--stdout|--stderr] ID\n"
               "       hutch logs --follow [--events] [--since-offset N] ID\n"
               "\n"
               "Print the stored output of a run, byte for byte. ID is a run id or a\n"
               "unique prefix of at least 4 characters.\n"
               "\n"
               "  --stdout    only the job's stdout, on stdout\n"
               "  --stderr    only the job's stderr, on stdout\n"
               "  -f, --follow        stream a detached run's output as it happens (from\n"
               "                      the start), stop when it ends and exit with its code\n"
               "      --events        with --follow: its hutch.event/1 lines instead\n"
               "      --since-offset N  with --follow: from byte N of each stream\n"
               "  -h, --help  this text\n"
               "\n"
               "Without either option stdout is written to stdout and stderr to stderr.\n");
}

int verb_logs(int argc, char **argv)
{
        cli_guard_terminal();
        static const struct option options[] = {
                { "stdout", no_argument, NULL, 'o' },
                { "stderr", no_argument, NULL, 'e' },
                { "follow", no_argument, NULL, 'f' },
                { "events", no_argument, NULL, 'E' },
                { "since-offset", required_argument, NULL, 'S' },
                { "help",   no_argument, NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        enum which which = BOTH;
        bool follow = false, events = false;
        uint64_t since = 0;
        int c, r;

        while ((c = getopt_long(argc, argv, "hf", options, NULL)) >= 0)
                switch (c) {
                case 'f':
                        follow = true;
                        break;
                case 'E':
                        events = true;
                        break;
                case 'S': {
                        char *end;
                        errno = 0;
                        since = strtoull(optarg, &end, 10);
                        if (errno || *end || !*optarg || *optarg == '-')
                                return cli_bad_value("logs", "since-offset", optarg, "expected a byte offset");
                        break;
                }
                case 'o':
                case 'e':
                        if (which != BOTH) {
                                log_error("logs: --stdout and --stderr exclude each other");
                                return EXIT_USAGE;
                        }
                        which = c == 'o' ? ONLY_STDOUT : ONLY_STDERR;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("logs", argv, options);
                }
        if ((events || since) && !follow) {
                log_error("logs: --events and --since-offset go with --follow");
                return EXIT_USAGE;
        }
        if (follow && which != BOTH) {
                log_error("logs: --follow writes both streams; no --stdout or --stderr with it");
                return EXIT_USAGE;
        }
        r = cli_open_run("logs", argc, argv, optind, &s, &rec);
        if (r != EXIT_OK)
                return r;
        if (follow)
                return cli_follow(s, rec, events, since);
        if (rec->status == RUN_RUNNING)
                log_warning("logs: run %s is still running; its output is stored when it ends",
                            rec->id);

        switch (which) {
        case ONLY_STDOUT:
                fwrite(rec->out.data, 1, rec->out.len, stdout);
                break;
        case ONLY_STDERR:
                fwrite(rec->err.data, 1, rec->err.len, stdout);
                break;
        case BOTH:
                fwrite(rec->out.data, 1, rec->out.len, stdout);
                fflush(stdout);
                fwrite(rec->err.data, 1, rec->err.len, stderr);
                break;
        }
        return EXIT_OK;
}
