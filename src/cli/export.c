/* cli/export.c - `hutch export`: the recorded runs as JSON lines of
 * hutch.result/1, each with its labels and the node it ran on, for
 * `hutch import` on another store (exchange.h). Rows come out of the
 * store one at a time, so memory stays flat however long the history.
 * A run still running has no outcome to export and is left out (and
 * counted on stderr): export it once it has ended.
 */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/exchange.h"
#include "record/store.h"

static void help(void)
{
        printf("Usage: hutch export [--since DURATION] [--label KEY=VALUE] [--node NODE]\n"
               "                    [--with-output]\n"
               "\n"
               "Write the recorded runs to stdout, newest first, one JSON object per line\n"
               "(schema hutch.result/1 with labels, node and imported), for hutch import.\n"
               "Runs still running are left out.\n"
               "\n"
               "  --since DURATION   only runs started within DURATION (30s, 2h, 7d, ...)\n"
               "  --label KEY=VALUE  only runs labelled so\n"
               "  --node NODE        only runs that ran on host NODE\n"
               "  --with-output      include each run's stored output (head and tail of\n"
               "                     stdout and stderr, sanitised) and a --lang run's code\n"
               "  -h, --help         this text\n");
}

struct export_ctx {
        struct store *s;
        bool with_output;
        const char *local_node;
        size_t running;
        char *damaged;          /* id of a run whose stored output is damaged */
};

static int export_one(struct run_record *rec, void *userdata)
{
        _cleanup_run_record_ struct run_record *owned = rec;
        _cleanup_run_record_ struct run_record *full = NULL;
        struct export_ctx *c = userdata;

        if (rec->status == RUN_RUNNING) {
                /* running, or an orphan gc has not marked yet */
                c->running++;
                return 0;
        }
        if (c->with_output) {
                int r = store_run_get(c->s, rec->id, &full, NULL);
                if (r == -EBADMSG)
                        c->damaged = xstrdup(rec->id);
                if (r < 0)
                        return r == -EIO ? -ECANCELED : r;
        }
        json_t *o = exchange_store_json(c->s, full ? full : rec, c->with_output, c->local_node);
        if (!o)
                return -ECANCELED;
        char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(o);
        if (!line)
                return -ENOMEM;
        puts(line);
        free(line);
        return ferror(stdout) ? -EIO : 0;
}

int verb_export(int argc, char **argv)
{
        static const struct option options[] = {
                { "since",       required_argument, NULL, 'S' },
                { "label",       required_argument, NULL, 'l' },
                { "node",        required_argument, NULL, 'N' },
                { "with-output", no_argument,       NULL, 'o' },
                { "help",        no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        struct store_filter f = STORE_FILTER_ALL;
        char local_node[EXCHANGE_MAX_NODE + 1];
        struct export_ctx ctx = { .local_node = exchange_local_node(local_node, sizeof(local_node)) };
        uint64_t v;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'S':
                        if (parse_duration_ms(optarg, &v) < 0)
                                return cli_bad_value("export", "since", optarg,
                                                     "expected a duration like 30s, 2h or 7d");
                        f.since_ms = v < now_realtime_ms() ? now_realtime_ms() - v : 1;
                        break;
                case 'l':
                        if (!is_key_value(optarg))
                                return cli_bad_value("export", "label", optarg, "expected KEY=VALUE");
                        f.label = optarg;
                        break;
                case 'N':
                        if (!exchange_node_valid(optarg))
                                return cli_bad_value("export", "node", optarg,
                                                     "expected a host name (letters, digits, '.', '-', '_')");
                        f.node = optarg;
                        f.local_node = ctx.local_node;
                        break;
                case 'o':
                        ctx.with_output = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("export", argv, options);
                }
        r = cli_no_operands("export", argc, argv, optind);
        if (r != EXIT_OK)
                return r;

        r = cli_open_store_readonly("export", &s);
        if (r != EXIT_OK)
                return r;
        ctx.s = s;
        r = store_run_foreach(s, &f, export_one, &ctx);
        _cleanup_free_ char *damaged = ctx.damaged;
        if (r == -EIO)
                return EXIT_FAILURE_GENERIC;    /* main reports the write error */
        if (r == -EBADMSG && damaged) {
                log_error("export: %s", store_error(s));
                return EXIT_DAMAGED;
        }
        if (r < 0) {
                log_error("export: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        if (ctx.running)
                log_warning("export: %zu run%s still running left out (export %s once %s ended)", ctx.running,
                            ctx.running == 1 ? "" : "s", ctx.running == 1 ? "it" : "them",
                            ctx.running == 1 ? "it has" : "they have");
        return EXIT_OK;
}
