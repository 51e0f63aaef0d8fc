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
        for (char **e = cfg->secret_env; e && *e; e++)
                explicit_bzero(*e, strlen(*e));
        strv_free(cfg->secret_env);
        for (char **e = cfg->private_env; e && *e; e++)
                explicit_bzero(*e, strlen(*e));
        strv_free(cfg->private_env);
        for (char **e = cfg->redact_env; e && *e; e++)
                explicit_bzero(*e, strlen(*e));
        strv_free(cfg->redact_env);
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
        strv_free(cfg->apply_protect);
        strv_free(cfg->net_allow);
        strv_free(cfg->net_deny);
        strv_free(cfg->net_hosts);
        free(cfg->root);
        free(cfg->image_workdir);
        strv_free(cfg->root_layers);
        free(cfg->seccomp_default_action);
        free(cfg->admission_max_running);
        free(cfg->admission_max_memory);
        strv_free(cfg->seccomp_deny);
        strv_free(cfg->seccomp_allow);
        free(cfg->artifacts_dir);
        for (size_t i = 0; i < cfg->n_origins; i++) {
                free(cfg->origins[i].key);
                free(cfg->origins[i].file);
        }
        free(cfg->origins);
        strindex_done(&cfg->origin_index);
        strindex_done(&cfg->env_index);
        memset(cfg, 0, sizeof(*cfg));
}

static const char *origin_key(void *userdata, size_t pos, size_t *ret_len)
{
        const struct run_config *cfg = userdata;
        *ret_len = strlen(cfg->origins[pos].key);
        return cfg->origins[pos].key;
}

void run_config_set_origin(struct run_config *cfg, const char *key, enum origin origin,
                           const char *file, unsigned line)
{
        struct key_origin *o = NULL;
        size_t i = strindex_find(&cfg->origin_index, key, strlen(key), origin_key, cfg);

        if (i != STRINDEX_NONE) {
                o = &cfg->origins[i];
                free(o->file);
        } else {
                /* grown in powers of two: appends stay amortised O(1) */
                size_t cap = 16;
                while (cap < cfg->n_origins + 1)
                        cap *= 2;
                cfg->origins = xrealloc(cfg->origins, cap * sizeof(*cfg->origins));
                o = &cfg->origins[cfg->n_origins];
                o->key = xstrdup(key);
                strindex_add(&cfg->origin_index, cfg->n_origins++, origin_key, cfg);
        }
        o->origin = origin;
        o->file = file ? xstrdup(file) : NULL;
        o->line = file ? line : 0;
}

const struct key_origin *run_config_origin(const struct run_config *cfg, const char *key)
{
        size_t i = strindex_find(&cfg->origin_index, key, strlen(key), origin_key, (void *)cfg);
        if (i != STRINDEX_NONE)
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
