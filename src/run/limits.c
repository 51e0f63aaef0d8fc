/* run/limits.c - what holds a run's limits, prepared before the job
 * starts: the profile's syscall policy compiled to a seccomp filter, the
 * run's own cgroup (delegated, or from a systemd scope) with the
 * profile's limits written into it, as real root the SysV IPC limits of
 * the job's IPC namespace, and inside a Slurm job those limits lowered
 * to the allocation.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "run/run-internal.h"
#include "config/run-config.h"
#include "lib/log.h"
#include "limits/cgroup.h"
#include "limits/cgroup-systemd.h"
#include "run/enforce.h"
#include "limits/ipcns.h"
#include "limits/slurm.h"
#include "record/store.h"
#include "sandbox/ns.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"
#include "supervise/supervise.h"

/* The seccomp cache dir: next to the run store (the same profile gives
 * the same filter). NULL when there is no state dir. */
char *run_seccomp_cache_dir(void)
{
        _cleanup_free_ char *db = NULL;
        if (store_default_path(&db) < 0)
                return NULL;
        char *slash = strrchr(db, '/');
        if (slash)
                *slash = '\0';
        return xasprintf("%s/cache", db);
}

/* The seccomp settings cfg asks for (free with seccomp_settings_done()). */
static int settings_of(const struct run_config *cfg, struct seccomp_settings *s)
{
        *s = (struct seccomp_settings) { 0 };
        int r = cfg->seccomp_mode == SECCOMP_MODE_ALLOW ? seccomp_settings_strict(s)
                                                        : seccomp_settings_default(s);
        if (r < 0)
                return r;
        free(s->name);
        s->name = xstrdup(cfg->profile_name ? cfg->profile_name : "default");
        if (cfg->seccomp_default_action) {
                free(s->default_action);
                s->default_action = xstrdup(streq(cfg->seccomp_default_action, "eperm")
                                            ? "errno" : cfg->seccomp_default_action);
        }
        for (char **p = cfg->seccomp_deny; p && *p; p++)
                s->deny = strv_append(s->deny, *p);
        for (char **p = cfg->seccomp_allow; p && *p; p++)
                s->allow = strv_append(s->allow, *p);
        s->allow_ptrace = cfg->seccomp_allow_ptrace;
        s->allow_io_uring = cfg->seccomp_allow_io_uring;
        return 0;
}

/* The syscall policy the profile asks for, compiled to BPF (cached). */
int run_build_seccomp(const struct run_config *cfg, void **ret_blob, size_t *ret_len,
                      struct seccomp_report *report, char **ret_error)
{
        _cleanup_free_ char *cache = run_seccomp_cache_dir();
        struct seccomp_settings s;
        int r = settings_of(cfg, &s);
        if (r < 0)
                return r;
        r = seccomp_policy_compile(&s, cache, ret_blob, ret_len, report, ret_error);
        seccomp_settings_done(&s);
        return r;
}

void run_forget_seccomp(const struct run_config *cfg, struct run_outcome *out)
{
        _cleanup_free_ char *entry = run_seccomp_cache_entry(cfg);
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ void *blob = NULL;
        struct seccomp_report report;
        size_t len;

        /* The entry verified, so these are the bytes a compile gave; a
         * kernel that refuses them now (a new kernel, a changed
         * libseccomp without a new version) must not make every later
         * run fail: drop the entry and compile it afresh. */
        if (!entry || unlink(entry) < 0)
                return;
        log_debug("seccomp cache %s: the kernel refused it; compiling the filter again", entry);
        if (run_build_seccomp(cfg, &blob, &len, &report, &err) < 0)
                return;
        size_t n = strlen(out->message);
        snprintf(out->message + n, sizeof(out->message) - n,
                 " (the cached filter %s was refused and is compiled again; run again)", entry);
}

char *run_seccomp_cache_entry(const struct run_config *cfg)
{
        _cleanup_free_ char *cache = run_seccomp_cache_dir();
        struct seccomp_settings s;
        if (!cache || settings_of(cfg, &s) < 0)
                return NULL;
        char *path = seccomp_cache_path(&s, cache);
        seccomp_settings_done(&s);
        return path;
}

/* The run's own cgroup, when a delegated cgroup v2 subtree is usable
 * (cgroup.h: $HUTCH_CGROUP, else hutch's own cgroup): made before the
 * sandbox exists, so init is cloned straight into it. Only limits the
 * profile sets are written. Without one, *ret stays NULL, *ret_reason
 * says why, and the fallbacks of DESIGN §3 (watchdog, rlimits) hold
 * the limits instead. HUTCH_CGROUP=none asks for the fallbacks. */
/* How long systemd may take to hand out a scope before the run goes on
 * without one: it answers in milliseconds unless it is wedged. */
#define SYSTEMD_SCOPE_TIMEOUT_MS 5000

void run_prepare_cgroup(const struct run_config *cfg, const char *self_cgroup, const char *run_id, const char *io_max,
                        struct cgroup_run **ret, char **ret_unit, char **ret_reason)
{
        _cleanup_free_ char *base = NULL, *name = NULL;
        const char *env = getenv("HUTCH_CGROUP");
        /* io only when asked: enabling it costs the kernel per-I/O accounting */
        const unsigned want = CGROUP_CPU | CGROUP_MEMORY | CGROUP_PIDS | (io_max ? CGROUP_IO : 0);
        unsigned usable = 0;
        int r;

        if (env && streq(env, "none")) {
                *ret_reason = xstrdup("cgroups turned off by HUTCH_CGROUP=none");
                return;
        }
        r = cgroup_base_prepare_from(self_cgroup, want, &base, &usable, ret_reason);
        if (r < 0 && !(env && *env) && cgroup_systemd_available()) {
                /* Nothing delegated to us where we run (an ssh session's
                 * scope, say): systemd can give us a scope of our own. */
                _cleanup_free_ char *why = NULL;
                r = cgroup_systemd_scope(run_id, SYSTEMD_SCOPE_TIMEOUT_MS, ret_unit, &why);
                if (r < 0) {
                        char *both = xasprintf("%s; %s", *ret_reason ? *ret_reason : "no delegated cgroup", why);
                        free(*ret_reason);
                        *ret_reason = both;
                        return;
                }
                free(*ret_reason);
                *ret_reason = NULL;
                r = cgroup_base_prepare(want, &base, &usable, ret_reason);
                if (r < 0 && *ret_reason) {
                        char *more = xasprintf("in systemd's scope %s: %s", *ret_unit, *ret_reason);
                        free(*ret_reason);
                        *ret_reason = more;
                }
        }
        if (r < 0) {
                if (!*ret_reason)
                        *ret_reason = xstrdup(strerror(-r));
                return;
        }
        struct cgroup_limits lim = {
                .memory_max = cfg->memory_bytes,
                /* memory.high only when the profile asks for it: the
                 * throttling it adds before memory.max can hold a hog
                 * for seconds before the OOM verdict (see hutch-run(1));
                 * high >= max means "not set" to cgroup_run_new() */
                .memory_high = cfg->memory_high_bytes ? cfg->memory_high_bytes : cfg->memory_bytes,
                .cpus = cfg->cpus,
                .pids_max = cfg->pids,
                .io_max = io_max,
                /* an OOM kill ends the whole run, never half of it */
                .oom_group = true,
        };
        name = xasprintf("run-%s", run_id);
        r = cgroup_run_new(base, name, usable, &lim, ret);
        if (r < 0)
                *ret_reason = xasprintf("cannot create the run cgroup %s/%s: %s", base, name, strerror(-r));
}

void run_limit_ipc(const struct run_config *cfg, const struct sandbox *sb, json_t *enforcement,
                   const struct enforce_cgroup *cg)
{
        struct ipcns_limits l;
        const char *what = NULL;
        int r;

        /* a memory cgroup charges shm pages to the run, and queue and
         * semaphore memory too (GFP_KERNEL_ACCOUNT, Linux 5.14 on):
         * memory.max holds them already */
        if (!cfg->memory_bytes || (cg && cg->path && (cg->enforced & CGROUP_LIMIT_MEMORY)))
                return;
        if (!ns_real_root()) {
                /* ipcns.c: only the namespace's uid 0, or global root when
                 * that is unmapped, may write them; the sandbox maps one uid */
                enforcement_note_ipc(enforcement, cfg, cg, NULL,
                                     "the sandbox cannot lower its IPC namespace's kernel.shm* limits "
                                     "without a uid 0 of its own");
                return;
        }
        ipcns_limits_for(cfg->memory_bytes, sysconf(_SC_PAGESIZE), &l);
        /* a job of uid 0 inside makes host uid 65534 the sysctls' owner */
        r = ipcns_apply(sb->pidfd, cfg->uid == 0 ? ns_host_uid() : 0, cfg->uid == 0 ? ns_host_gid() : 0,
                        &l, &what);
        if (r < 0) {
                _cleanup_free_ char *why = xasprintf("setting them failed: %s: %s", what, strerror(-r));
                log_warning("run: the job's SysV IPC limits are not set (%s: %s); the report says so",
                            what, strerror(-r));
                enforcement_note_ipc(enforcement, cfg, cg, NULL, why);
                return;
        }
        log_debug("IPC namespace: shmmax %llu, shmall %llu pages, shmmni %u, msgmni %u, semmns %u",
                  (unsigned long long)l.shmmax, (unsigned long long)l.shmall, l.shmmni, l.msgmni, l.semmns);
        enforcement_note_ipc(enforcement, cfg, cg, &l, NULL);
}

unsigned run_apply_slurm(struct run_config *cfg, const char *self_cgroup, struct slurm_step *step)
{
        const char *off = getenv("HUTCH_SLURM");

        if (off && streq(off, "off"))
                return 0;
        slurm_detect_from(self_cgroup, step);
        unsigned capped = slurm_cap(step, &cfg->memory_bytes, &cfg->cpus);
        if (capped)
                log_debug("slurm job %s: limits lowered to the allocation (memory %llu bytes from %s, "
                          "cpus %.3f from %s)", step->job_id ? step->job_id : "?",
                          (unsigned long long)step->memory_bytes, step->memory_from ? step->memory_from : "-",
                          step->cpus, step->cpus_from ? step->cpus_from : "-");
        return capped;
}

int run_label_slurm(struct store *s, const char *run_id, const struct slurm_step *step,
                    char *const *user_labels)
{
        _cleanup_strv_ char **mine = slurm_labels(step);
        _cleanup_strv_ char **keep = NULL;

        for (char **l = mine; l && *l; l++) {
                size_t klen = (size_t)(strchr(*l, '=') - *l) + 1;
                bool given = false;
                for (char *const *u = user_labels; u && *u && !given; u++)
                        given = strncmp(*u, *l, klen) == 0;
                if (!given)
                        keep = strv_append(keep, *l);
        }
        return store_labels_set(s, run_id, keep);
}

void run_report_slurm(json_t *enforcement, const struct slurm_step *step, unsigned capped, bool have_cgroup)
{
        if (enforcement && step->found)
                json_object_set_new(enforcement, "slurm", slurm_report(step, capped, have_cgroup));
}
