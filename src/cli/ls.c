/* cli/ls.c - `hutch ls`: list recorded runs, newest first, as a table for
 * people or as JSON lines (one hutch.result/1 object per run, without the
 * output text) for machines. A running row whose supervisor is gone is
 * shown as orphaned. --node picks the runs of one host, imported ones
 * too (exchange.h). */
#include "config.h"

#include <getopt.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/sanitize.h"
#include "record/exchange.h"
#include "record/store.h"

#define ID_WIDTH 12
#define COMMAND_WIDTH 60

static void help(void)
{
        printf("Usage: hutch ls [--status STATUS] [--since DURATION] [--label KEY=VALUE]\n"
               "                [--session NAME] [--sandbox NAME] [--node NODE] [--limit N] [--json]\n"
               "\n"
               "List recorded runs, newest first.\n"
               "\n"
               "  --status STATUS    only runs with this status (running, success, failed,\n"
               "                     signaled, timeout, cpu_timeout, oom, cancelled,\n"
               "                     setup_error, not_found, not_executable, compile_error,\n"
               "                     orphaned, disk_limit)\n"
               "  --since DURATION   only runs started within DURATION (30s, 2h, 7d, ...)\n"
               "  --label KEY=VALUE  only runs labelled so (run --label)\n"
               "  --session NAME     only runs of session NAME\n"
               "  --sandbox NAME     only the execs into live sandbox NAME (--label sandbox=NAME)\n"
               "  --node NODE        only runs that ran on host NODE (imported ones included;\n"
               "                     this host's own runs are those of its host name)\n"
               "  --limit N          at most N runs\n"
               "  --json             one JSON object per line (schema hutch.result/1,\n"
               "                     without stdout/stderr text)\n"
               "  -h, --help         this text\n");
}

/* A positive decimal number. 0 or -EINVAL/-ERANGE. */
static int parse_count(const char *s, uint64_t *ret)
{
        unsigned long long v;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE || v > SIZE_MAX)
                return -ERANGE;
        if (*end || v == 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Length of the common prefix of two ids. */
static size_t common_prefix(const char *a, const char *b)
{
        size_t n = 0;
        while (a[n] && a[n] == b[n])
                n++;
        return n;
}

static void print_table(struct run_record **recs, size_t n)
{
        printf("%-*s  %-19s  %8s  %-14s  %4s  %s\n",
               ID_WIDTH, "ID", "STARTED", "DURATION", "STATUS", "EXIT", "COMMAND");
        for (size_t i = 0; i < n; i++) {
                const struct run_record *rec = recs[i];
                /* a --lang run: its language and code, not the bootstrap */
                _cleanup_free_ char *cmd = rec->lang ? sanitize_code_line(rec->lang, rec->code, rec->code_len,
                                                                          COMMAND_WIDTH)
                                                     : sanitize_argv_line(rec->argv, COMMAND_WIDTH);
                char started[32] = "-", duration[32] = "-", exitbuf[16] = "-";
                const char *status = run_status_to_string(rec->status);
                size_t width = ID_WIDTH;

                /* show enough of the id to tell it from its neighbours */
                if (i > 0)
                        width = MAX(width, common_prefix(rec->id, recs[i - 1]->id) + 1);
                if (i + 1 < n)
                        width = MAX(width, common_prefix(rec->id, recs[i + 1]->id) + 1);
                width = MIN(width, (size_t)ULID_LEN);

                if (rec->started_at_ms != RUN_UNSET) {
                        time_t t = (time_t)(rec->started_at_ms / 1000);
                        struct tm tm;
                        localtime_r(&t, &tm);
                        strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S", &tm);
                }
                if (rec->duration_ms != RUN_UNSET)
                        format_duration_ms(rec->duration_ms, duration, sizeof(duration));
                if (rec->exit_code >= 0)
                        snprintf(exitbuf, sizeof(exitbuf), "%d", rec->exit_code);
                else if (rec->signal > 0)
                        snprintf(exitbuf, sizeof(exitbuf), "s%d", rec->signal);

                printf("%-*.*s  %-19s  %8s  %-14s  %4s  %s\n",
                       ID_WIDTH, (int)width, rec->id, started, duration,
                       status, exitbuf, cmd);
        }
}

/* --json: one line per run as it comes out of the store, so memory stays
 * flat however long the history is. */
static int print_json_line(struct run_record *rec, void *userdata)
{
        _cleanup_run_record_ struct run_record *owned = rec;
        _cleanup_free_ char *line = NULL;
        json_t *o;

        if (run_record_is_orphan(rec))
                rec->status = RUN_ORPHANED;
        o = run_record_to_json(rec, false);
        json_object_set_new(o, "labels", store_labels_json(userdata, rec->id));
        char node[EXCHANGE_MAX_NODE + 1];
        store_origin_json(userdata, rec->id, exchange_local_node(node, sizeof(node)), o);
        line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(o);
        if (!line)
                return -ENOMEM;
        puts(line);
        return ferror(stdout) ? -EIO : 0;
}

int verb_ls(int argc, char **argv)
{
        cli_guard_terminal();
        static const struct option options[] = {
                { "status", required_argument, NULL, 's' },
                { "since",  required_argument, NULL, 'S' },
                { "limit",  required_argument, NULL, 'n' },
                { "label",  required_argument, NULL, 'l' },
                { "session", required_argument, NULL, 'e' },
                { "sandbox", required_argument, NULL, 'B' },
                { "node",   required_argument, NULL, 'N' },
                { "json",   no_argument,       NULL, 'j' },
                { "help",   no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        struct store_filter f = STORE_FILTER_ALL;
        struct run_record **recs = NULL;
        _cleanup_free_ char *sandbox_label = NULL;
        bool json = false;
        char local_node[EXCHANGE_MAX_NODE + 1];
        size_t n = 0;
        uint64_t v;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        f.status = run_status_from_string(optarg);
                        if (f.status < 0)
                                return cli_bad_value("ls", "status", optarg,
                                                     "expected a run status (see hutch ls --help)");
                        break;
                case 'S':
                        if (parse_duration_ms(optarg, &v) < 0)
                                return cli_bad_value("ls", "since", optarg,
                                                     "expected a duration like 30s, 2h or 7d");
                        f.since_ms = v < now_realtime_ms() ? now_realtime_ms() - v : 1;
                        break;
                case 'n':
                        if (parse_count(optarg, &v) < 0)
                                return cli_bad_value("ls", "limit", optarg, "expected a positive number");
                        f.limit = (size_t)v;
                        break;
                case 'l':
                        if (!is_key_value(optarg))
                                return cli_bad_value("ls", "label", optarg, "expected KEY=VALUE");
                        f.label = optarg;
                        break;
                case 'e':
                        f.session = optarg;
                        break;
                case 'B':
                        free(sandbox_label);
                        f.label = sandbox_label = xasprintf("sandbox=%s", optarg);
                        break;
                case 'N':
                        if (!exchange_node_valid(optarg))
                                return cli_bad_value("ls", "node", optarg,
                                                     "expected a host name (letters, digits, '.', '-', '_')");
                        f.node = optarg;
                        f.local_node = exchange_local_node(local_node, sizeof(local_node));
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("ls", argv, options);
                }
        r = cli_no_operands("ls", argc, argv, optind);
        if (r != EXIT_OK)
                return r;

        r = cli_open_store_readonly("ls", &s);
        if (r != EXIT_OK)
                return r;
        if (json) {
                r = store_run_foreach(s, &f, print_json_line, s);
                if (r == -EIO)
                        return EXIT_FAILURE_GENERIC;    /* main reports the write error */
                if (r < 0) {
                        log_error("ls: run store: %s", store_error(s));
                        return EXIT_SETUP;
                }
                return EXIT_OK;
        }

        f.argv_max = 64;        /* the table shows the start of each command */
        r = store_run_list(s, &f, &recs, &n);
        if (r < 0) {
                log_error("ls: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        for (size_t i = 0; i < n; i++) {
                if (run_record_is_orphan(recs[i]))
                        recs[i]->status = RUN_ORPHANED;
                (void)store_run_code_get(s, recs[i]);
        }
        print_table(recs, n);
        run_record_free_many(recs, n);
        return EXIT_OK;
}
