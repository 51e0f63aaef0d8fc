/* run-config.c - lifetime of struct run_config and its provenance records.
 *
 * The defaults themselves live in the profile key table (profile-keys.c), so
 * that the parser, `hutch profile show`, the man page and this file cannot
 * disagree about them: run_config_init() applies that table.
 */
#include "config.h"

#include <string.h>

#include "config/profile.h"
#include "config/run-config.h"
#include "lib/util.h"

void run_config_init(struct run_config *cfg)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->profile_name = xstrdup("default");
        cfg->home = xstrdup("/home/sandbox");
        profile_apply_defaults(cfg);
}

void run_config_done(struct run_config *cfg)
{
        free(cfg->profile_name);
        free(cfg->profile_path);
        strv_free(cfg->profile_files);
        free(cfg->description);
        strv_free(cfg->argv);
        strv_free(cfg->env);
        free(cfg->hostname);
        free(cfg->home);
        free(cfg->workdir_inside);
        strv_free(cfg->require);
        strv_free(cfg->io_max);
        strv_free(cfg->ro_binds);
        strv_free(cfg->ro_paths);
        strv_free(cfg->rw_paths);
        strv_free(cfg->tmpfs_paths);
        strv_free(cfg->masks);
        free(cfg->root);
        strv_free(cfg->root_layers);
        free(cfg->seccomp_default_action);
        strv_free(cfg->seccomp_deny);
        strv_free(cfg->seccomp_allow);
        free(cfg->artifacts_dir);
        for (size_t i = 0; i < cfg->n_origins; i++) {
                free(cfg->origins[i].key);
                free(cfg->origins[i].file);
        }
        free(cfg->origins);
        memset(cfg, 0, sizeof(*cfg));
}

void run_config_set_origin(struct run_config *cfg, const char *key, enum origin origin,
                           const char *file, unsigned line)
{
        struct key_origin *o = NULL;

        for (size_t i = 0; i < cfg->n_origins; i++)
                if (streq(cfg->origins[i].key, key)) {
                        o = &cfg->origins[i];
                        free(o->file);
                        break;
                }
        if (!o) {
                cfg->origins = xrealloc(cfg->origins, (cfg->n_origins + 1) * sizeof(*cfg->origins));
                o = &cfg->origins[cfg->n_origins++];
                o->key = xstrdup(key);
        }
        o->origin = origin;
        o->file = file ? xstrdup(file) : NULL;
        o->line = file ? line : 0;
}

const struct key_origin *run_config_origin(const struct run_config *cfg, const char *key)
{
        for (size_t i = 0; i < cfg->n_origins; i++)
                if (streq(cfg->origins[i].key, key))
                        return &cfg->origins[i];
        return NULL;
}

const char *origin_to_string(enum origin o)
{
        static const char *const names[_ORIGIN_MAX] = {
                [ORIGIN_DEFAULT] = "default",
                [ORIGIN_FILE] = "file",
                [ORIGIN_FILE_UNTRUSTED] = "untrusted file",
                [ORIGIN_CLI] = "cli",
        };
        return o >= 0 && o < _ORIGIN_MAX ? names[o] : NULL;
}
