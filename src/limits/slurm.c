/* slurm.c - the Slurm job step hutch runs in, and the run's limits kept
 * inside its allocation (see slurm.h).
 *
 * Why the environment only lowers: SLURM_* variables are whatever the
 * caller exported, so a figure from them that raised a limit would let
 * any caller lift a profile's memory or cpu limit by setting one.
 * Taking the smaller of the profile's and theirs can only make a run
 * stricter, which a caller could have asked for with --memory anyway.
 * Their values are taken only when they are plain decimal numbers (ids
 * and sizes) or host-name characters (the node), so a label never
 * carries what Slurm would not have written.
 *
 * Slurm's cgroup: with task/cgroup, slurmstepd puts every task into
 * .../job_N/step_M/... and writes the allocation into memory.max
 * (memory.limit_in_bytes on v1). Those files are the kernel's: the
 * smallest limit on hutch's cgroup and its ancestors is read as another
 * figure of the allocation, whoever set the environment.
 */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/util.h"
#include "limits/slurm.h"

#define MAX_ID 32
#define MAX_NODE 64
/* v1's "no limit" is a page-rounded LONG_MAX; anything this large is none */
#define CGROUP_V1_UNLIMITED (1ull << 62)

static bool all_digits(const char *s, size_t max)
{
        size_t n = s ? strlen(s) : 0;
        return n > 0 && n <= max && strspn(s, "0123456789") == n;
}

static char *env_id(const struct slurm_sources *src, const char *name)
{
        const char *v = src->getenv(name);
        return all_digits(v, MAX_ID) ? xstrdup(v) : NULL;
}

/* A positive decimal count from name, or 0. */
static uint64_t env_count(const struct slurm_sources *src, const char *name)
{
        const char *v = src->getenv(name);
        if (!all_digits(v, 12))
                return 0;
        return strtoull(v, NULL, 10);
}

/* Lower *best to v (0 means unknown, for both) and say where from. */
static void lower_u64(uint64_t *best, char **from, uint64_t v, const char *what)
{
        if (v == 0 || (*best && *best <= v))
                return;
        *best = v;
        free(*from);
        *from = xstrdup(what);
}

static void lower_cpus(double *best, char **from, double v, const char *what)
{
        if (v <= 0 || (*best > 0 && *best <= v))
                return;
        *best = v;
        free(*from);
        *from = xstrdup(what);
}

/* Does a cgroup path name a Slurm job (v1 "/slurm/uid_U/job_N/...", v2
 * ".../slurmstepd.scope/job_N/...")? */
static bool slurm_path(const char *path)
{
        return strstr(path, "slurm") && strstr(path, "/job_");
}

/* The path of hutch's cgroup in /proc/self/cgroup text: the v2 line's
 * ("0::PATH") or, on v1, the memory controller's; *ret_v1 says which. */
static char *own_cgroup(const char *text, bool *ret_v1)
{
        char *v2 = NULL, *v1 = NULL;

        for (const char *line = text; line && *line;) {
                const char *nl = strchr(line, '\n');
                size_t n = nl ? (size_t)(nl - line) : strlen(line);
                _cleanup_free_ char *l = xasprintf("%.*s", (int)n, line);
                char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (c2) {
                        *c2 = '\0';
                        if (streq(c1 + 1, "") && !v2)
                                v2 = xstrdup(c2 + 1);
                        else if (!v1) {
                                for (char *save = NULL, *tok = strtok_r(c1 + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                                        if (streq(tok, "memory"))
                                                v1 = xstrdup(c2 + 1);
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        /* a v2 path of "/" on a hybrid host says nothing: v1 holds memory */
        if (v2 && (!v1 || slurm_path(v2))) {
                free(v1);
                *ret_v1 = false;
                return v2;
        }
        free(v2);
        *ret_v1 = v1 != NULL;
        return v1;
}

/* The smallest memory limit on path and its ancestors under dir, or 0. */
static uint64_t cgroup_memory_limit(const char *dir, const char *path, bool v1)
{
        _cleanup_free_ char *p = xstrdup(path);
        uint64_t best = 0;

        for (;;) {
                _cleanup_free_ char *file = xasprintf("%s%s%s/%s", dir, v1 ? "/memory" : "",
                                                      streq(p, "/") ? "" : p,
                                                      v1 ? "memory.limit_in_bytes" : "memory.max");
                _cleanup_free_ char *text = NULL;
                if (read_file(file, &text, NULL) == 0 && all_digits(strtok_r(text, "\n", &(char *){ NULL }), 20)) {
                        uint64_t v = strtoull(text, NULL, 10);
                        if (v > 0 && v < CGROUP_V1_UNLIMITED && (!best || v < best))
                                best = v;
                }
                char *slash = strrchr(p, '/');
                if (!slash || slash == p)
                        break;
                *slash = '\0';
        }
        return best;
}

int slurm_detect_at(const struct slurm_sources *src, struct slurm_step *ret)
{
        _cleanup_free_ char *text = NULL;
        bool v1 = false;

        memset(ret, 0, sizeof(*ret));
        ret->job_id = env_id(src, "SLURM_JOB_ID");
        ret->array_job_id = env_id(src, "SLURM_ARRAY_JOB_ID");
        ret->array_task_id = env_id(src, "SLURM_ARRAY_TASK_ID");
        ret->step_id = env_id(src, "SLURM_STEP_ID");
        const char *node = src->getenv("SLURMD_NODENAME");
        size_t nlen = node ? strlen(node) : 0;
        if (nlen > 0 && nlen <= MAX_NODE &&
            strspn(node, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == nlen)
                ret->node = xstrdup(node);

        const char *self = src->self_cgroup_text;
        if (!self && read_file(src->proc_self_cgroup, &text, NULL) == 0)
                self = text;
        if (self) {
                _cleanup_free_ char *path = own_cgroup(self, &v1);
                if (path && slurm_path(path))
                        ret->cgroup = TAKE_PTR(path);
        }
        ret->found = ret->job_id || ret->cgroup;
        if (!ret->found)
                return 0;

        uint64_t cpus_on_node = env_count(src, "SLURM_CPUS_ON_NODE");
        uint64_t mb = env_count(src, "SLURM_MEM_PER_NODE");
        if (mb && mb < (UINT64_MAX >> 20))
                lower_u64(&ret->memory_bytes, &ret->memory_from, mb << 20, "SLURM_MEM_PER_NODE");
        mb = env_count(src, "SLURM_MEM_PER_CPU");
        uint64_t n = cpus_on_node ? cpus_on_node : 1;
        if (mb && mb < (UINT64_MAX >> 20) / n)
                lower_u64(&ret->memory_bytes, &ret->memory_from, (mb << 20) * n,
                          cpus_on_node ? "SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE" : "SLURM_MEM_PER_CPU");
        if (ret->cgroup) {
                uint64_t v = cgroup_memory_limit(src->cgroup_root, ret->cgroup, v1);
                _cleanup_free_ char *what = xasprintf("%s of %s", v1 ? "memory.limit_in_bytes" : "memory.max",
                                                      ret->cgroup);
                lower_u64(&ret->memory_bytes, &ret->memory_from, v, what);
        }

        lower_cpus(&ret->cpus, &ret->cpus_from, (double)cpus_on_node, "SLURM_CPUS_ON_NODE");
        lower_cpus(&ret->cpus, &ret->cpus_from, (double)env_count(src, "SLURM_CPUS_PER_TASK"),
                   "SLURM_CPUS_PER_TASK");
        lower_cpus(&ret->cpus, &ret->cpus_from, (double)src->affinity_cpus, "the cpu affinity mask");
        return 0;
}

static const char *real_getenv(const char *name)
{
        return getenv(name);
}

int slurm_detect(struct slurm_step *ret)
{
        return slurm_detect_from(NULL, ret);
}

int slurm_detect_from(const char *self_cgroup_text, struct slurm_step *ret)
{
        cpu_set_t set;
        struct slurm_sources src = {
                .getenv = real_getenv,
                .proc_self_cgroup = "/proc/self/cgroup",
                .self_cgroup_text = self_cgroup_text,
                .cgroup_root = "/sys/fs/cgroup",
        };
        if (sched_getaffinity(0, sizeof(set), &set) == 0)
                src.affinity_cpus = CPU_COUNT(&set);
        return slurm_detect_at(&src, ret);
}

void slurm_step_done(struct slurm_step *s)
{
        free(s->job_id);
        free(s->array_job_id);
        free(s->array_task_id);
        free(s->step_id);
        free(s->node);
        free(s->cgroup);
        free(s->memory_from);
        free(s->cpus_from);
        memset(s, 0, sizeof(*s));
}

unsigned slurm_cap(const struct slurm_step *step, uint64_t *memory_bytes, double *cpus)
{
        unsigned capped = 0;

        if (!step->found)
                return 0;
        if (step->memory_bytes && (!*memory_bytes || step->memory_bytes < *memory_bytes)) {
                *memory_bytes = step->memory_bytes;
                capped |= SLURM_CAPPED_MEMORY;
        }
        if (step->cpus > 0 && (*cpus <= 0 || step->cpus < *cpus)) {
                *cpus = step->cpus;
                capped |= SLURM_CAPPED_CPUS;
        }
        return capped;
}

char **slurm_labels(const struct slurm_step *step)
{
        const struct { const char *key, *value; } map[] = {
                { "slurm.job_id", step->job_id },
                { "slurm.array_job_id", step->array_job_id },
                { "slurm.array_task_id", step->array_task_id },
                { "slurm.step_id", step->step_id },
                { "slurm.node", step->node },
        };
        char **v = NULL;

        if (!step->found)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (map[i].value) {
                        _cleanup_free_ char *kv = xasprintf("%s=%s", map[i].key, map[i].value);
                        v = strv_append(v, kv);
                }
        return v;
}

json_t *slurm_report(const struct slurm_step *step, unsigned capped, bool have_cgroup)
{
        json_t *o = json_object(), *c = json_array();

        json_object_set_new(o, "job_id", json_text(step->job_id));
        json_object_set_new(o, "array_job_id", json_text(step->array_job_id));
        json_object_set_new(o, "array_task_id", json_text(step->array_task_id));
        json_object_set_new(o, "step_id", json_text(step->step_id));
        json_object_set_new(o, "node", json_text(step->node));
        json_object_set_new(o, "cgroup", json_text(step->cgroup));
        json_object_set_new(o, "memory_bytes", step->memory_bytes ? json_integer((json_int_t)step->memory_bytes)
                                                                  : json_null());
        json_object_set_new(o, "memory_from", json_text(step->memory_from));
        json_object_set_new(o, "cpus", step->cpus > 0 ? json_real(step->cpus) : json_null());
        json_object_set_new(o, "cpus_from", json_text(step->cpus_from));
        if (capped & SLURM_CAPPED_MEMORY)
                json_array_append_new(c, json_string("memory"));
        if (capped & SLURM_CAPPED_CPUS)
                json_array_append_new(c, json_string("cpus"));
        json_object_set_new(o, "capped", c);
        json_object_set_new(o, "held_by", json_string(
                have_cgroup ? "the run's own cgroup, inside the allocation"
                            : "hutch's fallbacks (each limit's mechanism says which): no cgroup is delegated to this "
                              "user here, so Slurm's own cgroup, if any, holds only the allocation as a whole"));
        return o;
}
