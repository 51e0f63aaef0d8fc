/* cli/ps.c - `hutch ps`: the runs running now, with what they use.
 *
 * The rows come from the store (status running, supervisor alive); the
 * live figures from /proc, by the watchdog's walk from the sandbox's
 * init (the supervisor's child), so only the run's own processes count.
 */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/sanitize.h"
#include "limits/watchdog.h"
#include "record/store.h"

#define COMMAND_WIDTH 50

/* The sandbox's init: the supervisor's first child. 0 if none. */
static pid_t init_of(pid_t supervisor)
{
        char path[64];
        _cleanup_free_ char *text = NULL;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)supervisor, (int)supervisor);
        if (read_file(path, &text, NULL) < 0)
                return 0;
        return (pid_t)strtol(text, NULL, 10);
}

struct live {
        bool known;
        struct tree_sample s;
};

static struct live sample(const struct run_record *rec)
{
        struct live l = { 0 };
        pid_t init = init_of(rec->supervisor_pid);
        if (init > 0 && watchdog_sample(init, &l.s) == 0)
                l.known = true;
        return l;
}

static json_t *ps_json(struct store *s, const struct run_record *rec, const struct live *l, uint64_t now)
{
        json_t *o = run_record_to_json(rec, false);
        json_object_set_new(o, "pid", json_integer(rec->supervisor_pid));
        json_object_set_new(o, "age_ms", json_integer((json_int_t)(now > rec->started_at_ms ? now - rec->started_at_ms : 0)));
        json_object_set_new(o, "labels", store_labels_json(s, rec->id));
        if (l->known) {
                json_t *live = json_object();
                json_object_set_new(live, "processes", json_integer(l->s.processes));
                json_object_set_new(live, "cpu_ms", json_integer((json_int_t)l->s.cpu_ms));
                json_object_set_new(live, "memory_mb",
                                    json_real((double)((l->s.memory_bytes * 10 + 524288) / 1048576) / 10.0));
                json_object_set_new(o, "live", live);
        } else
                json_object_set_new(o, "live", json_null());
        return o;
}

static void help(void)
{
        printf("Usage: hutch ps [--label KEY=VALUE] [--json]\n"
               "\n"
               "List the runs that are running now: id, age, supervisor pid, cpu time\n"
               "and memory of the sandbox's processes so far, labels and command.\n"
               "\n"
               "  --label KEY=VALUE  only runs with this label\n"
               "  --json             one JSON object per line (hutch.result/1 without\n"
               "                     output, plus pid, age_ms, labels and live)\n"
               "  -h, --help         this text\n");
}

int verb_ps(int argc, char **argv)
{
        static const struct option options[] = {
                { "label", required_argument, NULL, 'l' },
                { "json",  no_argument,       NULL, 'j' },
                { "help",  no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        struct store_filter f = STORE_FILTER_ALL;
        struct run_record **recs = NULL;
        bool json = false;
        size_t n = 0;
        int c, r;

        f.status = RUN_RUNNING;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'l':
                        if (!is_key_value(optarg))
                                return cli_bad_value("ps", "label", optarg, "expected KEY=VALUE");
                        f.label = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("ps", argv, options);
                }
        r = cli_no_operands("ps", argc, argv, optind);
        if (r != EXIT_OK)
                return r;
        r = cli_open_store_readonly("ps", &s);
        if (r != EXIT_OK)
                return r;
        r = store_run_list(s, &f, &recs, &n);
        if (r < 0) {
                log_error("ps: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        uint64_t now = now_realtime_ms();
        if (!json)
                printf("%-26s  %8s  %7s  %8s  %8s  %-20s  %s\n",
                       "ID", "AGE", "PID", "CPU", "MEMORY", "LABELS", "COMMAND");
        for (size_t i = 0; i < n; i++) {
                const struct run_record *rec = recs[i];
                struct live l = sample(rec);
                if (json) {
                        json_t *o = ps_json(s, rec, &l, now);
                        _cleanup_free_ char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
                        json_decref(o);
                        if (line)
                                puts(line);
                        continue;
                }
                char age[32], cpu[32] = "-", mem[32] = "-";
                _cleanup_free_ char *cmd = sanitize_argv_line(rec->argv, COMMAND_WIDTH);
                _cleanup_strv_ char **labels = NULL;
                _cleanup_free_ char *joined = xstrdup("");
                format_duration_ms(now > rec->started_at_ms ? (now - rec->started_at_ms) / 1000 * 1000 : 0,
                                   age, sizeof(age));
                if (l.known) {
                        format_duration_ms(l.s.cpu_ms, cpu, sizeof(cpu));
                        format_size(l.s.memory_bytes, mem, sizeof(mem));
                }
                (void)store_labels_get(s, rec->id, &labels);
                for (char **p = labels; p && *p; p++) {
                        char *next = xasprintf("%s%s%s", joined, *joined ? "," : "", *p);
                        free(joined);
                        joined = next;
                }
                /* labels are the caller's text: no control characters on a terminal */
                _cleanup_free_ char *shown = NULL;
                {
                        char *one[] = { joined, NULL };
                        shown = sanitize_argv_line(one, 20);
                }
                printf("%-26s  %8s  %7d  %8s  %8s  %-20s  %s\n", rec->id, age, (int)rec->supervisor_pid,
                       cpu, mem, *joined ? shown : "-", cmd);
        }
        run_record_free_many(recs, n);
        return EXIT_OK;
}
