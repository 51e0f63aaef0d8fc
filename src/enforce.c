/* enforce.c - builds the enforcement report (enforce.h).
 *
 * The mechanisms named here must match what the code really does:
 * supervise.c (timer, watchdog), job.c (rlimits), mount.c (tmpfs size),
 * seccomp.c and caps.c. Without a delegated cgroup v2, cpus and
 * memory_high have no mechanism at all, and the report says so.
 */
#include "config.h"

#include <string.h>

#include "enforce.h"
#include "seccomp.h"
#include "util.h"

static json_t *limit(const char *value, const char *mechanism, const char *reason)
{
        json_t *o = json_object();
        json_object_set_new(o, "value", json_string(value));
        json_object_set_new(o, "mechanism", json_string(mechanism));
        if (reason)
                json_object_set_new(o, "reason", json_string(reason));
        return o;
}

static void add_size(json_t *limits, const char *name, uint64_t v, const char *mech)
{
        char buf[32];
        if (!v)
                json_object_set_new(limits, name, limit("none", "none", NULL));
        else
                json_object_set_new(limits, name, limit(format_size(v, buf, sizeof(buf)), mech, NULL));
}

static void add_duration(json_t *limits, const char *name, uint64_t v, const char *mech)
{
        char buf[32];
        if (!v)
                json_object_set_new(limits, name, limit("none", "none", NULL));
        else
                json_object_set_new(limits, name, limit(format_duration_ms(v, buf, sizeof(buf)), mech, NULL));
}

json_t *enforcement_build(const struct run_config *cfg, const struct seccomp_report *seccomp,
                          uid_t host_uid, gid_t host_gid)
{
        json_t *r = json_object();
        json_t *ns = json_array();
        char buf[64];

        for (const char *const *n = (const char *const[]){ "user", "mount", "pid", "ipc", "uts", "cgroup", NULL }; *n; n++)
                json_array_append_new(ns, json_string(*n));
        if (cfg->net == NET_NONE)
                json_array_append_new(ns, json_string("net"));
        json_object_set_new(r, "namespaces", ns);
        json_object_set_new(r, "network", json_string(cfg->net == NET_NONE ? "none (loopback only)" : "host"));
        snprintf(buf, sizeof(buf), "%u %u 1", (unsigned)cfg->uid, (unsigned)host_uid);
        json_object_set_new(r, "uid_map", json_string(buf));
        snprintf(buf, sizeof(buf), "%u %u 1", (unsigned)cfg->gid, (unsigned)host_gid);
        json_object_set_new(r, "gid_map", json_string(buf));
        json_object_set_new(r, "capabilities", json_string("none"));
        json_object_set_new(r, "no_new_privs", json_true());

        if (seccomp) {
                json_t *s = json_object();
                json_object_set_new(s, "policy", json_string(seccomp->policy));
                json_object_set_new(s, "mode", json_string(seccomp->mode));
                json_object_set_new(s, "action", json_string(seccomp->action));
                json_object_set_new(s, "arch", json_string(seccomp->arch));
                json_object_set_new(s, "syscalls", json_integer(seccomp->syscalls));
                json_object_set_new(s, "rules", json_integer(seccomp->rules));
                json_object_set_new(r, "seccomp", s);
        } else
                json_object_set_new(r, "seccomp", json_null());

        json_t *limits = json_object();
        add_duration(limits, "timeout", cfg->timeout_ms, "timer");
        add_duration(limits, "cpu_time", cfg->cpu_time_ms, "watchdog");
        add_size(limits, "memory", cfg->memory_bytes, "watchdog");
        if (cfg->memory_bytes || cfg->memory_high_bytes)
                json_object_set_new(limits, "memory_high",
                                    limit(cfg->memory_high_bytes ? format_size(cfg->memory_high_bytes, buf, sizeof(buf)) : "auto",
                                          "not enforced", "needs a delegated cgroup v2 (memory.high)"));
        else
                json_object_set_new(limits, "memory_high", limit("none", "none", NULL));
        if (cfg->cpus > 0) {
                snprintf(buf, sizeof(buf), "%g", cfg->cpus);
                json_object_set_new(limits, "cpus", limit(buf, "not enforced",
                                                          "needs a delegated cgroup v2 (cpu.max)"));
        } else
                json_object_set_new(limits, "cpus", limit("none", "none", NULL));
        if (cfg->pids) {
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cfg->pids);
                json_object_set_new(limits, "pids", limit(buf, "rlimit", NULL));
        } else
                json_object_set_new(limits, "pids", limit("none", "none", NULL));
        add_size(limits, "disk", cfg->disk_bytes, "tmpfs size");
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cfg->nofile);
        json_object_set_new(limits, "nofile", limit(buf, "rlimit", NULL));
        add_size(limits, "max_file_size", cfg->max_file_size, "rlimit");
        json_object_set_new(r, "limits", limits);
        return r;
}

json_t *limits_build(const struct run_config *cfg)
{
        json_t *o = json_object();
        json_object_set_new(o, "timeout_ms", json_integer((json_int_t)cfg->timeout_ms));
        json_object_set_new(o, "grace_ms", json_integer((json_int_t)cfg->grace_ms));
        json_object_set_new(o, "cpu_time_ms", json_integer((json_int_t)cfg->cpu_time_ms));
        json_object_set_new(o, "memory_bytes", json_integer((json_int_t)cfg->memory_bytes));
        json_object_set_new(o, "memory_high_bytes", json_integer((json_int_t)cfg->memory_high_bytes));
        json_object_set_new(o, "cpus", json_real(cfg->cpus));
        json_object_set_new(o, "pids", json_integer((json_int_t)cfg->pids));
        json_object_set_new(o, "disk_bytes", json_integer((json_int_t)cfg->disk_bytes));
        json_object_set_new(o, "nofile", json_integer((json_int_t)cfg->nofile));
        json_object_set_new(o, "max_file_size", json_integer((json_int_t)cfg->max_file_size));
        json_object_set_new(o, "capture_bytes", json_integer((json_int_t)cfg->capture_bytes));
        return o;
}

int enforcement_check_required(const struct run_config *cfg, json_t *report, char **ret_error)
{
        json_t *limits = json_object_get(report, "limits");
        for (char **name = cfg->require; name && *name; name++) {
                json_t *l = json_object_get(limits, *name);
                const char *mech = json_string_value(json_object_get(l, "mechanism"));
                if (!mech || streq(mech, "not enforced") || streq(mech, "none")) {
                        const char *why = json_string_value(json_object_get(l, "reason"));
                        *ret_error = xasprintf("required limit %s cannot be enforced on this host%s%s",
                                               *name, why ? ": " : (mech && streq(mech, "none") ? ": it is set to none" : ""),
                                               why ? why : "");
                        return -EOPNOTSUPP;
                }
        }
        return 0;
}
