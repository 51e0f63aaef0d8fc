/* cli/stats.c - `hutch stats`: what the history says in aggregate: runs
 * by status, the failure rate, duration, cpu and peak memory
 * percentiles, the commands and languages run most, cpu by session.
 * One pass over the matching rows (without their output), in memory
 * proportional to their number.
 */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/openmetrics.h"
#include "lib/sanitize.h"
#include "record/store.h"

#define TOP_N 5

struct tally {
        size_t total;
        size_t by_status[_RUN_STATUS_MAX];
        uint64_t *duration, *cpu, *memory;
        size_t n_duration, n_cpu, n_memory;
        json_t *commands;       /* name -> count */
        json_t *session_cpu;    /* session -> cpu ms */
};

static void push(uint64_t **a, size_t *n, uint64_t v)
{
        if ((*n & (*n - 1)) == 0)       /* 0, 1, 2, 4, ...: grow to the next power of two */
                *a = xrealloc(*a, (*n ? *n * 2 : 1) * sizeof(**a));
        (*a)[(*n)++] = v;
}

static int count_one(struct run_record *rec, void *userdata)
{
        _cleanup_run_record_ struct run_record *owned = rec;
        struct tally *t = userdata;

        if (run_record_is_orphan(rec))
                rec->status = RUN_ORPHANED;
        t->total++;
        if (rec->status >= 0 && rec->status < _RUN_STATUS_MAX)
                t->by_status[rec->status]++;
        if (rec->duration_ms != RUN_UNSET)
                push(&t->duration, &t->n_duration, rec->duration_ms);
        uint64_t cpu = RUN_UNSET;
        if (rec->cpu_user_ms != RUN_UNSET || rec->cpu_sys_ms != RUN_UNSET) {
                cpu = (rec->cpu_user_ms == RUN_UNSET ? 0 : rec->cpu_user_ms) +
                      (rec->cpu_sys_ms == RUN_UNSET ? 0 : rec->cpu_sys_ms);
                push(&t->cpu, &t->n_cpu, cpu);
        }
        if (rec->peak_memory_bytes != RUN_UNSET)
                push(&t->memory, &t->n_memory, rec->peak_memory_bytes);
        if (rec->argv && rec->argv[0]) {
                const char *base = strrchr(rec->argv[0], '/');
                base = base ? base + 1 : rec->argv[0];
                json_t *c = json_object_get(t->commands, base);
                if (json_string(base))  /* only names that are valid UTF-8 */
                        json_object_set_new(t->commands, base,
                                            json_integer(c ? json_integer_value(c) + 1 : 1));
        }
        if (rec->session && cpu != RUN_UNSET) {
                json_t *c = json_object_get(t->session_cpu, rec->session);
                json_object_set_new(t->session_cpu, rec->session,
                                    json_integer((c ? json_integer_value(c) : 0) + (json_int_t)cpu));
        }
        return 0;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted a[0..n). */
static uint64_t percentile(const uint64_t *a, size_t n, unsigned p)
{
        size_t rank = (n * p + 99) / 100;
        return a[rank ? rank - 1 : 0];
}

static json_t *distribution(uint64_t *a, size_t n, double scale)
{
        json_t *o = json_object();
        if (n == 0) {
                json_object_set_new(o, "p50", json_null());
                json_object_set_new(o, "p95", json_null());
                json_object_set_new(o, "p99", json_null());
                json_object_set_new(o, "max", json_null());
                return o;
        }
        qsort(a, n, sizeof(*a), cmp_u64);
        static const unsigned ps[] = { 50, 95, 99 };
        for (size_t i = 0; i < ELEMENTSOF(ps); i++) {
                char key[8];
                snprintf(key, sizeof(key), "p%u", ps[i]);
                uint64_t v = percentile(a, n, ps[i]);
                json_object_set_new(o, key, scale == 1 ? json_integer((json_int_t)v)
                                                       : json_real((double)(uint64_t)(v / scale * 10 + 0.5) / 10.0));
        }
        json_object_set_new(o, "max", scale == 1 ? json_integer((json_int_t)a[n - 1])
                                                 : json_real((double)(uint64_t)(a[n - 1] / scale * 10 + 0.5) / 10.0));
        return o;
}

/* The TOP_N biggest entries of a name -> count object, as [[name, n], ...]. */
static json_t *top(json_t *counts)
{
        json_t *out = json_array();
        json_t *left = json_deep_copy(counts);
        for (int i = 0; i < TOP_N && json_object_size(left); i++) {
                const char *k, *best = NULL;
                json_t *v;
                json_int_t most = -1;
                json_object_foreach(left, k, v)
                        if (json_integer_value(v) > most || (json_integer_value(v) == most && strcmp(k, best) < 0)) {
                                most = json_integer_value(v);
                                best = k;
                        }
                json_t *pair = json_array();
                json_array_append_new(pair, json_string(best));
                json_array_append_new(pair, json_integer(most));
                json_array_append_new(out, pair);
                json_object_del(left, best);
        }
        json_decref(left);
        return out;
}

static void print_text(json_t *o)
{
        json_t *by = json_object_get(o, "by_status"), *v;
        const char *k;
        size_t i;

        printf("runs: %lld", (long long)json_integer_value(json_object_get(o, "runs")));
        json_t *rate = json_object_get(o, "failure_rate");
        if (json_is_number(rate))
                printf(", failure rate %.1f%%", json_number_value(rate) * 100);
        printf("\n");
        json_object_foreach(by, k, v)
                printf("  %-14s %lld\n", k, (long long)json_integer_value(v));
        static const char *const dists[][2] = {
                { "duration_ms", "duration ms" }, { "cpu_ms", "cpu ms" }, { "peak_memory_mb", "peak memory MiB" },
        };
        for (i = 0; i < ELEMENTSOF(dists); i++) {
                json_t *d = json_object_get(o, dists[i][0]);
                printf("%-16s", dists[i][1]);
                const char *ks[] = { "p50", "p95", "p99", "max" };
                for (size_t j = 0; j < ELEMENTSOF(ks); j++) {
                        json_t *x = json_object_get(d, ks[j]);
                        if (json_is_integer(x))
                                printf("  %s %lld", ks[j], (long long)json_integer_value(x));
                        else if (json_is_real(x))
                                printf("  %s %.1f", ks[j], json_real_value(x));
                        else
                                printf("  %s -", ks[j]);
                }
                printf("\n");
        }
        static const char *const tops[][2] = { { "top_commands", "commands" }, { "top_languages", "languages" } };
        for (size_t t = 0; t < ELEMENTSOF(tops); t++) {
                json_t *a = json_object_get(o, tops[t][0]);
                printf("%-16s", tops[t][1]);
                json_array_foreach(a, i, v) {
                        /* names are what jobs were called: no control characters on a terminal */
                        char *one[] = { (char *)json_string_value(json_array_get(v, 0)), NULL };
                        _cleanup_free_ char *shown = sanitize_argv_line(one, 30);
                        printf("  %s (%lld)", shown, (long long)json_integer_value(json_array_get(v, 1)));
                }
                printf("%s\n", json_array_size(a) ? "" : "  -");
        }
}

static void help(void)
{
        printf("Usage: hutch stats [--since DURATION] [--label KEY=VALUE] [--json]\n"
               "       hutch stats --openmetrics [--output FILE] [--label-key KEY]...\n"
               "\n"
               "Summarise the recorded runs: how many ended how, the failure rate\n"
               "(runs that ended other than success, among those that ended),\n"
               "p50/p95/p99 of duration, cpu time and peak memory, the commands and\n"
               "languages run most, and cpu time by session.\n"
               "\n"
               "  --since DURATION   only runs started within DURATION (1h, 7d, ...)\n"
               "  --label KEY=VALUE  only runs with this label\n"
               "  --json             one JSON object (schema hutch.stats/1)\n"
               "  --openmetrics      metrics in the text format Prometheus scrapes\n"
               "                     (see hutch-stats(1) for the names and buckets)\n"
               "  --output FILE      with --openmetrics: replace FILE atomically (for\n"
               "                     node_exporter's textfile collector)\n"
               "  --label-key KEY    with --openmetrics: export run label KEY as the\n"
               "                     label label_KEY of hutch_runs_total (at most 4 keys;\n"
               "                     20 values each, the rest \"other\")\n"
               "  -h, --help         this text\n");
}

/* The summary (hutch.stats/1) of the tally t and the language counts
 * langs ("LANG=N"; cut at the '=' here). */
static json_t *stats_object(const struct tally *t, char **langs)
{
        json_t *o = json_object(), *by = json_object(), *lang_counts = json_object();
        json_object_set_new(o, "schema", json_string("hutch.stats/1"));
        json_object_set_new(o, "runs", json_integer((json_int_t)t->total));
        size_t ended = t->total - t->by_status[RUN_RUNNING], ok = t->by_status[RUN_SUCCESS];
        for (int st = 0; st < _RUN_STATUS_MAX; st++)
                if (t->by_status[st])
                        json_object_set_new(by, run_status_to_string(st), json_integer((json_int_t)t->by_status[st]));
        json_object_set_new(o, "by_status", by);
        json_object_set_new(o, "failure_rate", ended ? json_real((double)(ended - ok) / (double)ended) : json_null());
        json_object_set_new(o, "duration_ms", distribution(t->duration, t->n_duration, 1));
        json_object_set_new(o, "cpu_ms", distribution(t->cpu, t->n_cpu, 1));
        json_object_set_new(o, "peak_memory_mb", distribution(t->memory, t->n_memory, 1048576.0));
        json_object_set_new(o, "top_commands", top(t->commands));
        for (char **l = langs; l && *l; l++) {
                char *eq = strrchr(*l, '=');
                *eq = '\0';
                json_object_set_new(lang_counts, *l, json_integer(strtoll(eq + 1, NULL, 10)));
        }
        json_object_set_new(o, "top_languages", top(lang_counts));
        json_decref(lang_counts);
        json_object_set_new(o, "cpu_ms_by_session", json_incref(t->session_cpu));
        return o;
}

int verb_stats(int argc, char **argv)
{
        static const struct option options[] = {
                { "since", required_argument, NULL, 'S' },
                { "label", required_argument, NULL, 'l' },
                { "json",  no_argument,       NULL, 'j' },
                { "openmetrics", no_argument, NULL, 'm' },
                { "output", required_argument, NULL, 'o' },
                { "label-key", required_argument, NULL, 'k' },
                { "help",  no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_strv_ char **langs = NULL, **label_keys = NULL;
        const char *output = NULL;
        bool openmetrics = false;
        struct store_filter f = STORE_FILTER_ALL;
        struct tally t = { .commands = json_object(), .session_cpu = json_object() };
        bool json = false;
        uint64_t v;
        int c, r, code = EXIT_OK;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'S':
                        if (parse_duration_ms(optarg, &v) < 0)
                                return cli_bad_value("stats", "since", optarg, "expected a duration like 2h or 7d");
                        f.since_ms = v < now_realtime_ms() ? now_realtime_ms() - v : 1;
                        break;
                case 'l':
                        if (!is_key_value(optarg))
                                return cli_bad_value("stats", "label", optarg, "expected KEY=VALUE");
                        f.label = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'm':
                        openmetrics = true;
                        break;
                case 'o':
                        if (!*optarg)
                                return cli_bad_value("stats", "output", optarg, "expected a file name");
                        output = optarg;
                        break;
                case 'k':
                        if (!om_label_name_valid(optarg))
                                return cli_bad_value("stats", "label-key", optarg,
                                                     "expected a label name ([A-Za-z_][A-Za-z0-9_]*)");
                        if (strv_length(label_keys) >= METRICS_LABEL_KEYS_MAX)
                                return cli_bad_value("stats", "label-key", optarg,
                                                     "at most 4 label keys (each multiplies the series)");
                        if (!strv_contains(label_keys, optarg))
                                label_keys = strv_append(label_keys, optarg);
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("stats", argv, options);
                }
        r = cli_no_operands("stats", argc, argv, optind);
        if (r != EXIT_OK)
                return r;
        if (openmetrics && json) {
                log_error("stats: --json and --openmetrics are two formats; choose one");
                return EXIT_USAGE;
        }
        if (!openmetrics && (output || label_keys)) {
                log_error("stats: --%s goes with --openmetrics", output ? "output" : "label-key");
                return EXIT_USAGE;
        }
        r = cli_open_store_readonly("stats", &s);
        if (r != EXIT_OK)
                return r;
        if (openmetrics) {
                code = cli_stats_openmetrics(s, &f, label_keys, output);
                goto out;
        }
        r = store_run_foreach(s, &f, count_one, &t);
        if (r >= 0)
                r = store_lang_counts(s, &f, &langs);
        if (r < 0) {
                log_error("stats: run store: %s", store_error(s));
                code = EXIT_SETUP;
                goto out;
        }

        json_t *o = stats_object(&t, langs);
        if (json) {
                _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
                if (text)
                        puts(text);
        } else
                print_text(o);
        json_decref(o);
out:
        free(t.duration);
        free(t.cpu);
        free(t.memory);
        json_decref(t.commands);
        json_decref(t.session_cpu);
        return code;
}
