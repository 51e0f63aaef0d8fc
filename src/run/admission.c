/* run/admission.c - admission control (see admission.h): the node's
 * allocatable resources, the caps a profile asks for with "auto"
 * resolved against them, and the count of running runs in the store.
 */
#include "config.h"

#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <jansson.h>

#include "config/run-config.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/admission.h"

/* The first number in a file, false when there is none ("max"). */
static bool read_u64(const char *path, uint64_t *ret)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned long long v;
        if (!f || fscanf(f, "%llu", &v) != 1)
                return false;
        *ret = v;
        return true;
}

/* The limits of hutch's own cgroup and its ancestors (cgroup v2): the
 * smallest memory.max and cpu.max, where set. */
static void cgroup_caps(uint64_t *memory, double *cpus, bool *mem_capped, bool *cpu_capped)
{
        _cleanup_free_ char *text = NULL;
        if (read_file("/proc/self/cgroup", &text, NULL) < 0)
                return;
        char *line = strstr(text, "0::/");
        if (!line)
                return;
        line += 3;
        line[strcspn(line, "\n")] = '\0';
        _cleanup_free_ char *dir = xasprintf("/sys/fs/cgroup%s", streq(line, "/") ? "" : line);
        for (;;) {
                uint64_t v;
                _cleanup_free_ char *m = xasprintf("%s/memory.max", dir), *c = xasprintf("%s/cpu.max", dir);
                if (read_u64(m, &v) && v < *memory) {
                        *memory = v;
                        *mem_capped = true;
                }
                _cleanup_fclose_ FILE *f = fopen(c, "re");
                unsigned long long quota, period;
                if (f && fscanf(f, "%llu %llu", &quota, &period) == 2 && period &&
                    (double)quota / (double)period < *cpus) {
                        *cpus = (double)quota / (double)period;
                        *cpu_capped = true;
                }
                char *slash = strrchr(dir, '/');
                if (!slash || streq(dir, "/sys/fs/cgroup"))
                        break;
                *slash = '\0';
        }
}

int node_resources_read(struct node_resources *ret)
{
        struct node_resources n = { 0 };
        _cleanup_fclose_ FILE *f = fopen("/proc/meminfo", "re");
        char line[256];
        cpu_set_t set;
        bool mem_capped = false, cpu_capped = false;

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                unsigned long long kb;
                if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
                        n.memory_bytes = kb * 1024;
        }
        if (!n.memory_bytes)
                return -EIO;
        if (sched_getaffinity(0, sizeof(set), &set) == 0)
                n.cpus = CPU_COUNT(&set);
        else
                n.cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
        if (n.cpus < 1)
                n.cpus = 1;
        cgroup_caps(&n.memory_bytes, &n.cpus, &mem_capped, &cpu_capped);
        snprintf(n.memory_from, sizeof(n.memory_from), "%s", mem_capped ? "cgroup memory.max" : "/proc/meminfo");
        snprintf(n.cpus_from, sizeof(n.cpus_from), "%s", cpu_capped ? "cgroup cpu.max" : "sched_getaffinity");
        *ret = n;
        return 0;
}

void admission_caps_resolve(const struct run_config *cfg, const struct node_resources *node,
                            struct admission_caps *ret)
{
        const char *mr = cfg->admission_max_running ? cfg->admission_max_running : "none";
        const char *mm = cfg->admission_max_memory ? cfg->admission_max_memory : "none";
        double red = cfg->admission_redundancy > 0 ? cfg->admission_redundancy : 0.8;
        struct admission_caps c = { 0 };
        _cleanup_free_ char *how_r = NULL, *how_m = NULL;
        char a[32], b[32];

        if (streq(mr, "auto")) {
                /* by cpus: the run's cpus (one when it has no cap); by
                 * memory: the run's memory limit, when it has one */
                double run_cpus = cfg->cpus > 0 ? cfg->cpus : 1;
                uint64_t by_cpu = (uint64_t)(node->cpus * red / run_cpus), by_mem = UINT64_MAX;
                _cleanup_free_ char *mem_part = NULL;
                if (cfg->memory_bytes > 0) {
                        by_mem = (uint64_t)((double)node->memory_bytes * red / (double)cfg->memory_bytes);
                        mem_part = xasprintf(", memory %s (%s) x %g / %s = %llu",
                                             format_size(node->memory_bytes, a, sizeof(a)), node->memory_from, red,
                                             format_size(cfg->memory_bytes, b, sizeof(b)),
                                             (unsigned long long)by_mem);
                }
                /* a node that fits no run still runs one */
                c.max_running = MAX(MIN(by_cpu, by_mem), 1);
                how_r = xasprintf("max_running auto = %llu: min(cpus %g (%s) x %g / %g = %llu%s)",
                                  (unsigned long long)c.max_running, node->cpus, node->cpus_from, red, run_cpus,
                                  (unsigned long long)by_cpu, mem_part ? mem_part : "");
        } else if (!streq(mr, "none")) {
                c.max_running = strtoull(mr, NULL, 10);
                how_r = xasprintf("max_running = %llu", (unsigned long long)c.max_running);
        }
        if (streq(mm, "auto")) {
                /* whole MiB, so that it reads as a size */
                c.max_memory = (uint64_t)((double)node->memory_bytes * red) & ~((UINT64_C(1) << 20) - 1);
                how_m = xasprintf("max_memory auto = %s: memory %s (%s) x %g", format_size(c.max_memory, a, sizeof(a)),
                                  format_size(node->memory_bytes, b, sizeof(b)), node->memory_from, red);
        } else if (!streq(mm, "none") && parse_size(mm, &c.max_memory) == 0)
                how_m = xasprintf("max_memory = %s", format_size(c.max_memory, a, sizeof(a)));
        if (how_r || how_m)
                c.how = xasprintf("%s%s%s", how_r ? how_r : "", how_r && how_m ? "; " : "", how_m ? how_m : "");
        *ret = c;
}

void admission_caps_done(struct admission_caps *c)
{
        free(c->how);
        c->how = NULL;
}

struct usage {
        uint64_t running, memory, max_memory;
};

static int count_one(struct run_record *rec, void *userdata)
{
        _cleanup_run_record_ struct run_record *owned = rec;
        struct usage *u = userdata;
        json_t *l = rec->limits_json ? json_loads(rec->limits_json, 0, NULL) : NULL;
        json_int_t m = json_integer_value(json_object_get(l, "memory_bytes"));

        json_decref(l);
        u->running++;
        u->memory += m > 0 ? (uint64_t)m : u->max_memory;
        return 0;
}

int admission_usage(struct store *s, uint64_t max_memory, uint64_t *ret_running, uint64_t *ret_memory)
{
        /* RUN_RUNNING leaves out rows whose supervisor is gone (store.h) */
        struct store_filter f = STORE_FILTER_ALL;
        struct usage u = { .max_memory = max_memory };

        f.status = RUN_RUNNING;
        f.argv_max = 1;
        int r = store_run_foreach(s, &f, count_one, &u);
        if (r < 0)
                return r;
        *ret_running = u.running;
        *ret_memory = u.memory;
        return 0;
}

bool admission_fits(const struct admission_caps *c, uint64_t running, uint64_t memory, uint64_t run_memory)
{
        if (c->max_running && running + 1 > c->max_running)
                return false;
        if (c->max_memory) {
                uint64_t need = run_memory ? run_memory : c->max_memory;
                /* the first run always fits: a cap below one run's limit
                 * must not stop every run */
                if (running > 0 && memory + need > c->max_memory)
                        return false;
        }
        return true;
}

int admission_lock(const char *db_path)
{
        _cleanup_free_ char *copy = xstrdup(db_path);
        _cleanup_free_ char *path = xasprintf("%s/admission.lock", dirname(copy));
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
        return fd;
}
