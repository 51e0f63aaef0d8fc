/* run/enforce.c - builds the enforcement report (enforce.h).
 *
 * The mechanisms named here must match what the code really does:
 * supervise.c (timer, watchdog), job.c (rlimits), mount.c (tmpfs size),
 * seccomp.c and caps.c, and the run cgroup (cgroup-run.c) for the limits
 * whose bit cgroup_run_new() reported as written. Without a delegated
 * cgroup v2, cpus and memory_high have no mechanism at all, and the
 * report says so, with the reason the cgroup could not be had.
 */
#include "config.h"

#include <string.h>

#include "lib/jsonutil.h"
#include "limits/cgroup.h"
#include "run/enforce.h"
#include "limits/ipcns.h"
#include "sandbox/seccomp.h"
#include "lib/util.h"

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

/* "needs a delegated cgroup v2 (FILE)" plus why there is none. */
static char *no_cgroup_reason(const struct enforce_cgroup *cg, const char *file)
{
        if (cg && cg->path)
                return xasprintf("the %s controller is not usable in the run cgroup %s",
                                 startswith(file, "cpu") ? "cpu" : startswith(file, "io") ? "io" : "memory",
                                 cg->path);
        return xasprintf("needs a delegated cgroup v2 (%s)%s%s", file,
                         cg && cg->reason ? ": " : "", cg && cg->reason ? cg->reason : "");
}

/* The memory entry without a memory cgroup. The watchdog sums what the
 * job's processes map; memory no process maps is invisible to it, and a
 * claim of more would be a lie: say which part it holds, and what holds
 * SysV IPC (ipc: the namespace's limits as written, or NULL and
 * why_not). */
static void memory_partial(json_t *m, const struct enforce_cgroup *cg, const struct ipcns_limits *ipc,
                           const char *why_not)
{
        _cleanup_free_ char *why = no_cgroup_reason(cg, "memory.max");
        _cleanup_free_ char *shm = NULL, *text = NULL;
        char a[32];

        if (ipc)
                shm = xasprintf("SysV shm is held apart, by the IPC namespace's kernel.shmall and "
                                "shmmax (%s in all), message queues and semaphores by kernel.msgmni "
                                "and kernel.sem (about a quarter of that each); not counted: ",
                                format_size(ipc->shmmax, a, sizeof(a)));
        else
                shm = xasprintf("not counted: SysV shm segments no process has attached (%s), ",
                                why_not ? why_not : "the IPC namespace's limits are not set");
        text = xasprintf("the watchdog counts the memory the job's processes map and the memfds "
                         "they hold open; %smemfds held only in unix sockets in flight (at most "
                         "RLIMIT_NOFILE of them), and kernel memory (tmpfs inodes, up to "
                         "limits.inodes; slab); a full limit %s", shm, why);
        json_object_set_new(m, "partial", json_true());
        json_object_set_new(m, "reason", json_string(text));
}

json_t *enforcement_build(const struct run_config *cfg, const struct seccomp_report *seccomp,
                          const struct enforce_cgroup *cg, uid_t host_uid, gid_t host_gid)
{
        json_t *r = json_object();
        json_t *ns = json_array();
        unsigned held = cg && cg->path ? cg->enforced : 0;
        char buf[64];

        for (const char *const *n = (const char *const[]){ "user", "mount", "pid", "ipc", "uts", "cgroup", NULL }; *n; n++)
                json_array_append_new(ns, json_string(*n));
        if (cfg->net != NET_HOST)
                json_array_append_new(ns, json_string("net"));
        json_object_set_new(r, "namespaces", ns);
        json_object_set_new(r, "network", json_string(cfg->net == NET_NONE    ? "none (loopback only)"
                                                : cfg->net == NET_ALLOW ? "allow (egress rules, through hutch)"
                                                                        : "host"));
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

        json_t *cgo = json_object();
        if (cg && cg->path) {
                static const struct { unsigned bit; const char *file; } files[] = {
                        { CGROUP_LIMIT_MEMORY, "memory.max" }, { CGROUP_LIMIT_MEMORY_HIGH, "memory.high" },
                        { CGROUP_LIMIT_SWAP, "memory.swap.max" }, { CGROUP_LIMIT_OOM_GROUP, "memory.oom.group" },
                        { CGROUP_LIMIT_CPUS, "cpu.max" }, { CGROUP_LIMIT_PIDS, "pids.max" },
                        { CGROUP_LIMIT_IO, "io.max" },
                };
                json_t *written = json_array();
                for (size_t i = 0; i < ELEMENTSOF(files); i++)
                        if (held & files[i].bit)
                                json_array_append_new(written, json_string(files[i].file));
                json_object_set_new(cgo, "path", json_string(cg->path));
                json_object_set_new(cgo, "written", written);
                json_object_set_new(cgo, "systemd_unit", json_text(cg->systemd_unit));
        } else {
                json_object_set_new(cgo, "path", json_null());
                json_object_set_new(cgo, "reason", json_string(cg && cg->reason ? cg->reason : "not looked for"));
        }
        json_object_set_new(r, "cgroup", cgo);

        json_t *limits = json_object();
        add_duration(limits, "timeout", cfg->timeout_ms, "timer");
        /* cpu.stat counts every process the run cgroup ever held */
        add_duration(limits, "cpu_time", cfg->cpu_time_ms, cg && cg->path ? "cgroup" : "watchdog");
        add_size(limits, "memory", cfg->memory_bytes, held & CGROUP_LIMIT_MEMORY ? "cgroup" : "watchdog");
        if (cfg->memory_bytes && !(held & CGROUP_LIMIT_MEMORY))
                memory_partial(json_object_get(limits, "memory"), cg, NULL,
                               "the sandbox cannot lower its IPC namespace's kernel.shm* limits without "
                               "a uid 0 of its own");
        if (held & CGROUP_LIMIT_MEMORY_HIGH)
                json_object_set_new(limits, "memory_high",
                                    limit(format_size(cfg->memory_high_bytes, buf, sizeof(buf)), "cgroup", NULL));
        else if (cfg->memory_high_bytes) {
                _cleanup_free_ char *why = no_cgroup_reason(cg, "memory.high");
                json_object_set_new(limits, "memory_high",
                                    limit(format_size(cfg->memory_high_bytes, buf, sizeof(buf)),
                                          "not enforced", why));
        } else
                json_object_set_new(limits, "memory_high", limit("none", "none", NULL));
        if (cfg->cpus > 0) {
                snprintf(buf, sizeof(buf), "%g", cfg->cpus);
                if (held & CGROUP_LIMIT_CPUS)
                        json_object_set_new(limits, "cpus", limit(buf, "cgroup", NULL));
                else {
                        _cleanup_free_ char *why = no_cgroup_reason(cg, "cpu.max");
                        json_object_set_new(limits, "cpus", limit(buf, "not enforced", why));
                }
        } else
                json_object_set_new(limits, "cpus", limit("none", "none", NULL));
        if (cfg->pids) {
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cfg->pids);
                json_object_set_new(limits, "pids", limit(buf, held & CGROUP_LIMIT_PIDS ? "cgroup" : "rlimit", NULL));
        } else
                json_object_set_new(limits, "pids", limit("none", "none", NULL));
        if (cfg->io_max && cfg->io_max[0]) {
                _cleanup_free_ char *items = xstrdup(cfg->io_max[0]);
                for (char **i = cfg->io_max + 1; *i; i++) {
                        char *more = xasprintf("%s; %s", items, *i);
                        free(items);
                        items = more;
                }
                if (held & CGROUP_LIMIT_IO)
                        json_object_set_new(limits, "io_max", limit(items, "cgroup", NULL));
                else {
                        _cleanup_free_ char *why = cg && cg->io_max_error ? xstrdup(cg->io_max_error)
                                                                         : no_cgroup_reason(cg, "io.max");
                        json_object_set_new(limits, "io_max", limit(items, "not enforced", why));
                }
        } else
                json_object_set_new(limits, "io_max", limit("none", "none", NULL));
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
                if (startswith(*name, "isolation=")) {
                        /* isolation=landlock is what any tier gives */
                        const char *tier = json_string_value(
                                json_object_get(json_object_get(report, "isolation"), "tier"));
                        if (streq(*name, "isolation=namespaces") && tier && !streq(tier, "namespaces")) {
                                *ret_error = xasprintf("required isolation namespaces, but the %s tier would run "
                                                       "(--isolation %s)", tier,
                                                       cfg->isolation == ISOLATION_AUTO ? "auto" : tier);
                                return -EOPNOTSUPP;
                        }
                        continue;
                }
                json_t *l = json_object_get(limits, *name);
                const char *mech = json_string_value(json_object_get(l, "mechanism"));
                /* partial: a mechanism with known holes is not the limit asked for */
                if (!mech || streq(mech, "not enforced") || streq(mech, "none") ||
                    json_is_true(json_object_get(l, "partial"))) {
                        const char *why = json_string_value(json_object_get(l, "reason"));
                        *ret_error = xasprintf("required limit %s cannot be enforced on this host%s%s",
                                               *name, why ? ": " : (mech && streq(mech, "none") ? ": it is set to none" : ""),
                                               why ? why : "");
                        return -EOPNOTSUPP;
                }
        }
        return 0;
}

void enforcement_note_ipc(json_t *report, const struct run_config *cfg, const struct enforce_cgroup *cg,
                          const struct ipcns_limits *ipc, const char *why_not)
{
        json_t *m = json_object_get(json_object_get(report, "limits"), "memory");
        unsigned held = cg && cg->path ? cg->enforced : 0;

        if (!m || !cfg->memory_bytes)
                return;
        if (ipc) {
                json_t *o = json_object();
                json_object_set_new(o, "shmmax", json_integer((json_int_t)ipc->shmmax));
                json_object_set_new(o, "shmall", json_integer((json_int_t)ipc->shmall));
                json_object_set_new(o, "shmmni", json_integer(ipc->shmmni));
                json_object_set_new(o, "msgmnb", json_integer(ipc->msgmnb));
                json_object_set_new(o, "msgmax", json_integer(ipc->msgmax));
                json_object_set_new(o, "msgmni", json_integer(ipc->msgmni));
                json_object_set_new(o, "semmns", json_integer(ipc->semmns));
                json_object_set_new(m, "ipc", o);
        }
        if (!(held & CGROUP_LIMIT_MEMORY))
                memory_partial(m, cg, ipc, why_not);
}
