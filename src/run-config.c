/* run-config.c - built-in defaults for a run (DESIGN §3): conservative,
 * so that a job with no profile at all is still boxed tightly. */
#include "config.h"

#include <string.h>

#include "run-config.h"
#include "util.h"

/* Host directories that make up the system view. Each is bound read-only
 * when it exists; merged-/usr symlinks (/bin -> usr/bin) stay symlinks. */
static const char *const default_ro_binds[] = {
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
};

/* Secrets a job has no business reading, even where host permissions
 * would already refuse it: the mask holds for --uid 0 and for hosts with
 * lax modes. Globs are expanded at setup time. */
static const char *const default_masks[] = {
        "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
        "/etc/sudoers", "/etc/sudoers.d", "/etc/security/opasswd",
        "/etc/ssh/ssh_host_*key", "/etc/ssl/private", "/etc/credstore",
        "/etc/credstore.encrypted", "/etc/machine-id",
};

void run_config_init(struct run_config *cfg)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->profile_name = xstrdup("default");
        cfg->uid = 1000;
        cfg->gid = 1000;
        cfg->hostname = xstrdup("sandbox");
        cfg->home = xstrdup("/home/sandbox");
        cfg->workdir_inside = xstrdup("/workspace");
        cfg->net = NET_NONE;
        cfg->timeout_ms = 30 * 1000;
        cfg->grace_ms = 2 * 1000;
        cfg->disk_bytes = 1ULL << 30;
        cfg->capture_bytes = 64 << 10;
        cfg->nofile = 1024;
        cfg->memory_bytes = 512ULL << 20;
        cfg->pids = 256;
        cfg->cpus = 1.0;
        for (size_t i = 0; i < ELEMENTSOF(default_ro_binds); i++)
                cfg->ro_binds = strv_append(cfg->ro_binds, default_ro_binds[i]);
        for (size_t i = 0; i < ELEMENTSOF(default_masks); i++)
                cfg->masks = strv_append(cfg->masks, default_masks[i]);
}

void run_config_done(struct run_config *cfg)
{
        free(cfg->profile_name);
        strv_free(cfg->argv);
        strv_free(cfg->env);
        free(cfg->hostname);
        free(cfg->home);
        free(cfg->workdir_inside);
        strv_free(cfg->ro_binds);
        strv_free(cfg->ro_extra);
        strv_free(cfg->masks);
        memset(cfg, 0, sizeof(*cfg));
}
