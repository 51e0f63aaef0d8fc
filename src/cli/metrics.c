/* cli/metrics.c - `hutch stats --openmetrics`: the run history as the
 * metrics a monitor scrapes (openmetrics.h for the format). What is
 * written, with its fixed buckets, is listed in hutch-stats(1):
 *
 *   hutch_runs_total{status,profile[,label_K...]}   finished runs (counter)
 *   hutch_runs_running                              runs running now (gauge)
 *   hutch_run_{duration,cpu}_seconds, hutch_run_peak_memory_bytes (histograms)
 *   hutch_sandbox_memory_{bytes,limit_bytes}{run,profile}  running sandboxes' cgroups
 *   hutch_store_size_bytes, hutch_egress_decisions_total{decision}
 *
 * Cardinality is bounded: the MAX_PROFILES profiles with the most runs
 * keep their name and the others count as "other"; run labels are only
 * exported for the keys asked for (at most METRICS_LABEL_KEYS_MAX), each
 * with its MAX_LABEL_VALUES most frequent values, the rest "other". A
 * run without the label has it empty, which Prometheus reads as absent.
 *
 * With --output the text replaces FILE atomically (a temporary file in
 * the same directory, fsync, rename, fsync of the directory), so a
 * textfile collector reading the directory never sees half a file.
 */
#include "config.h"

#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/fsutil.h"
#include "lib/log.h"
#include "lib/openmetrics.h"
#include "record/store.h"

#define MAX_PROFILES 32
#define MAX_LABEL_VALUES 20

static const double duration_bounds[] = { 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600 };
static const double cpu_bounds[] = { 0.01, 0.1, 0.5, 1, 5, 10, 60, 300, 3600 };
static const double memory_bounds[] = { 1048576.0, 4194304.0, 16777216.0, 67108864.0, 268435456.0,
                                        1073741824.0, 4294967296.0, 17179869184.0 };

struct finished {
        enum run_status status;
        char *profile;
        char id[ULID_LEN + 1];
};

struct sandbox {
        char id[ULID_LEN + 1];
        char *profile;
        char *cgroup;           /* its cgroup directory, or NULL */
};

struct gather {
        struct finished *runs;
        size_t n_runs;
        struct sandbox *running;
        size_t n_running;
        json_t *profile_counts; /* profile -> runs */
        struct om_histogram duration, cpu, memory;
};

/* The profile name as a label value: valid UTF-8 or "other". */
static const char *profile_label(const char *p)
{
        if (!p)
                return "";
        json_t *j = json_string(p);
        json_decref(j);
        return j ? p : "other";
}

static char *cgroup_of(const char *enforcement_json)
{
        json_t *e = enforcement_json ? json_loads(enforcement_json, 0, NULL) : NULL;
        const char *p = json_string_value(json_object_get(json_object_get(e, "cgroup"), "path"));
        char *r = p && *p == '/' ? xstrdup(p) : NULL;
        json_decref(e);
        return r;
}

static int gather_one(struct run_record *rec, void *userdata)
{
        _cleanup_run_record_ struct run_record *owned = rec;
        struct gather *g = userdata;
        const char *profile = profile_label(rec->profile);

        if (run_record_is_orphan(rec))
                rec->status = RUN_ORPHANED;
        if (rec->status == RUN_RUNNING) {
                if ((g->n_running & (g->n_running + 1)) == 0 || g->n_running == 0)
                        g->running = xrealloc(g->running, (g->n_running * 2 + 2) * sizeof(*g->running));
                struct sandbox *sb = &g->running[g->n_running++];
                memcpy(sb->id, rec->id, sizeof(sb->id));
                sb->profile = xstrdup(profile);
                sb->cgroup = cgroup_of(rec->enforcement_json);
        } else {
                if ((g->n_runs & (g->n_runs + 1)) == 0 || g->n_runs == 0)
                        g->runs = xrealloc(g->runs, (g->n_runs * 2 + 2) * sizeof(*g->runs));
                struct finished *f = &g->runs[g->n_runs++];
                f->status = rec->status;
                f->profile = xstrdup(profile);
                memcpy(f->id, rec->id, sizeof(f->id));
                json_t *c = json_object_get(g->profile_counts, profile);
                json_object_set_new(g->profile_counts, profile, json_integer(c ? json_integer_value(c) + 1 : 1));
        }
        /* the same runs as the distributions of hutch stats --json */
        if (rec->duration_ms != RUN_UNSET)
                om_histogram_observe(&g->duration, rec->duration_ms);
        if (rec->cpu_user_ms != RUN_UNSET || rec->cpu_sys_ms != RUN_UNSET)
                om_histogram_observe(&g->cpu, (rec->cpu_user_ms == RUN_UNSET ? 0 : rec->cpu_user_ms) +
                                                      (rec->cpu_sys_ms == RUN_UNSET ? 0 : rec->cpu_sys_ms));
        if (rec->peak_memory_bytes != RUN_UNSET)
                om_histogram_observe(&g->memory, rec->peak_memory_bytes);
        return 0;
}

/* The names of counts (name -> n) that keep their own label value: the
 * max most frequent, ties by name (a new object name -> true). */
static json_t *keep_top(json_t *counts, size_t max)
{
        json_t *keep = json_object(), *left = json_deep_copy(counts), *v;
        const char *k;

        while (json_object_size(keep) < max && json_object_size(left)) {
                const char *best = NULL;
                json_int_t most = -1;
                json_object_foreach(left, k, v)
                        if (json_integer_value(v) > most || (json_integer_value(v) == most && strcmp(k, best) < 0)) {
                                most = json_integer_value(v);
                                best = k;
                        }
                json_object_set_new(keep, best, json_true());
                json_object_del(left, best);
        }
        json_decref(left);
        return keep;
}

/* For each asked label key, run id -> the value to export ("other"
 * past the cap): an array parallel to keys. */
static int label_maps(struct store *s, char **keys, json_t ***ret)
{
        size_t n = strv_length(keys);
        json_t **maps = xcalloc(n + 1, sizeof(*maps));

        for (size_t i = 0; i < n; i++) {
                json_t *values, *v, *counts = json_object();
                const char *id;
                int r = store_label_values(s, keys[i], &values);
                if (r < 0) {
                        for (size_t j = 0; j < i; j++)
                                json_decref(maps[j]);
                        free(maps);
                        json_decref(counts);
                        return r;
                }
                json_object_foreach(values, id, v) {
                        json_t *c = json_object_get(counts, json_string_value(v));
                        json_object_set_new(counts, json_string_value(v),
                                            json_integer(c ? json_integer_value(c) + 1 : 1));
                }
                json_t *keep = keep_top(counts, MAX_LABEL_VALUES);
                json_object_foreach(values, id, v)
                        if (!json_object_get(keep, json_string_value(v)))
                                json_object_set_new(values, id, json_string("other"));
                json_decref(keep);
                json_decref(counts);
                maps[i] = values;
        }
        *ret = maps;
        return 0;
}

static int cmp_strp(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void write_runs_total(FILE *f, const struct gather *g, char **keys, json_t **maps)
{
        json_t *series = json_object(), *keep = keep_top(g->profile_counts, MAX_PROFILES), *v;
        const char *k;

        for (size_t i = 0; i < g->n_runs; i++) {
                const struct finished *r = &g->runs[i];
                _cleanup_free_ char *labels = NULL;
                om_label_add(&labels, "status", run_status_to_string(r->status));
                om_label_add(&labels, "profile", json_object_get(keep, r->profile) ? r->profile : "other");
                for (size_t j = 0; keys && keys[j]; j++) {
                        _cleanup_free_ char *name = xasprintf("label_%s", keys[j]);
                        const char *value = json_string_value(json_object_get(maps[j], r->id));
                        om_label_add(&labels, name, value ? value : "");
                }
                json_t *c = json_object_get(series, labels);
                json_object_set_new(series, labels, json_integer(c ? json_integer_value(c) + 1 : 1));
        }
        om_family(f, "hutch_runs_total", "counter", NULL,
                  "Finished runs in the history, by status and profile (gc deleting runs reads as a reset).");
        /* sorted, so that two scrapes of one history are the same text */
        const char **names = xcalloc(json_object_size(series) + 1, sizeof(*names));
        size_t n = 0;
        json_object_foreach(series, k, v)
                names[n++] = k;
        qsort(names, n, sizeof(*names), cmp_strp);
        for (size_t i = 0; i < n; i++)
                om_sample_u64(f, "hutch_runs_total", names[i],
                              (uint64_t)json_integer_value(json_object_get(series, names[i])));
        free(names);
        json_decref(keep);
        json_decref(series);
}

/* A number from a cgroup file ("max" and missing files: false). */
static bool read_cgroup_u64(const char *dir, const char *file, uint64_t *ret)
{
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned long long v;
        if (!f || fscanf(f, "%llu", &v) != 1)
                return false;
        *ret = v;
        return true;
}

static void write_sandboxes(FILE *f, const struct gather *g)
{
        static const char *const names[][3] = {
                { "hutch_sandbox_memory_bytes", "memory.current",
                  "Memory a running sandbox's cgroup uses now." },
                { "hutch_sandbox_memory_limit_bytes", "memory.max",
                  "The memory limit of a running sandbox's cgroup (absent when unlimited)." },
        };
        for (size_t m = 0; m < ELEMENTSOF(names); m++) {
                om_family(f, names[m][0], "gauge", "bytes", names[m][2]);
                for (size_t i = 0; i < g->n_running; i++) {
                        uint64_t v;
                        if (!g->running[i].cgroup || !read_cgroup_u64(g->running[i].cgroup, names[m][1], &v))
                                continue;
                        _cleanup_free_ char *labels = NULL;
                        om_label_add(&labels, "run", g->running[i].id);
                        om_label_add(&labels, "profile", g->running[i].profile);
                        om_sample_u64(f, names[m][0], labels, v);
                }
        }
}

static int write_metrics(FILE *f, struct store *s, const struct store_filter *filter, struct gather *g,
                         char **keys)
{
        _cleanup_strv_ char **decisions = NULL;
        json_t **maps = NULL;
        uint64_t bytes = 0;
        int r;

        r = label_maps(s, keys, &maps);
        if (r < 0)
                return r;
        r = store_decision_counts(s, filter, &decisions);
        if (r >= 0)
                r = store_disk_bytes(s, &bytes);
        if (r < 0)
                goto out;

        write_runs_total(f, g, keys, maps);
        om_family(f, "hutch_runs_running", "gauge", NULL, "Runs running now (their supervisor is alive).");
        om_sample_u64(f, "hutch_runs_running", NULL, g->n_running);
        om_family(f, "hutch_run_duration_seconds", "histogram", "seconds", "Wall-clock duration of runs.");
        om_histogram_write(f, "hutch_run_duration_seconds", NULL, &g->duration);
        om_family(f, "hutch_run_cpu_seconds", "histogram", "seconds", "CPU time (user + system) of runs.");
        om_histogram_write(f, "hutch_run_cpu_seconds", NULL, &g->cpu);
        om_family(f, "hutch_run_peak_memory_bytes", "histogram", "bytes", "Peak memory of runs.");
        om_histogram_write(f, "hutch_run_peak_memory_bytes", NULL, &g->memory);
        write_sandboxes(f, g);
        om_family(f, "hutch_store_size_bytes", "gauge", "bytes",
                  "Bytes the run store takes on disk (database, WAL, blobs).");
        om_sample_u64(f, "hutch_store_size_bytes", NULL, bytes);
        om_family(f, "hutch_egress_decisions_total", "counter", NULL,
                  "Egress connections of network = allow runs, by decision.");
        for (char **d = decisions; d && *d; d++) {
                char *eq = strrchr(*d, '=');
                *eq = '\0';
                _cleanup_free_ char *labels = NULL;
                om_label_add(&labels, "decision", *d);
                om_sample_u64(f, "hutch_egress_decisions_total", labels, strtoull(eq + 1, NULL, 10));
        }
        om_eof(f);
out:
        for (size_t i = 0; keys && keys[i]; i++)
                json_decref(maps[i]);
        free(maps);
        return r;
}

/* Write the text to path through a temporary file beside it. */
static int write_atomically(const char *path, const char *text, size_t len)
{
        _cleanup_free_ char *copy = xstrdup(path), *copy2 = xstrdup(path);
        const char *dir = dirname(copy), *base = basename(copy2);
        /* a name the textfile collector (*.prom) does not read */
        _cleanup_free_ char *tmp = xasprintf("%s/.%s.XXXXXX", dir, base);
        _cleanup_close_ int dfd = -1;
        int fd, r = 0;

        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, 0644) < 0 || write_all(fd, text, len) < 0 || fsync(fd) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void)fsync(dfd);
        return 0;
}

int cli_stats_openmetrics(struct store *s, const struct store_filter *filter, char **label_keys,
                          const char *output)
{
        struct gather g = { .profile_counts = json_object() };
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r, code = EXIT_OK;

        om_histogram_init(&g.duration, duration_bounds, ELEMENTSOF(duration_bounds), 1000);
        om_histogram_init(&g.cpu, cpu_bounds, ELEMENTSOF(cpu_bounds), 1000);
        om_histogram_init(&g.memory, memory_bounds, ELEMENTSOF(memory_bounds), 1);
        r = store_run_foreach(s, filter, gather_one, &g);
        FILE *f = open_memstream(&text, &len);
        if (r >= 0)
                r = write_metrics(f, s, filter, &g, label_keys);
        fclose(f);
        if (r < 0) {
                log_error("stats: run store: %s", store_error(s));
                code = EXIT_SETUP;
        } else if (!output)
                fwrite(text, 1, len, stdout);
        else if ((r = write_atomically(output, text, len)) < 0) {
                log_error_errno(r, "stats: --output %s: %m", output);
                code = EXIT_FAILURE_GENERIC;
        }
        for (size_t i = 0; i < g.n_runs; i++)
                free(g.runs[i].profile);
        for (size_t i = 0; i < g.n_running; i++) {
                free(g.running[i].profile);
                free(g.running[i].cgroup);
        }
        free(g.runs);
        free(g.running);
        json_decref(g.profile_counts);
        om_histogram_done(&g.duration);
        om_histogram_done(&g.cpu);
        om_histogram_done(&g.memory);
        return code;
}
