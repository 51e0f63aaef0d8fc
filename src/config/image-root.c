/* config/image-root.c - root = image:REF, resolved: the image store
 * (image/) names the layers, and the image's config is folded into the
 * run's config here, as part of resolving it, so that `hutch profile
 * show --image X` and the profile a run stores say the same, and nothing
 * changes the config after.
 *
 * What the image gives:
 *  - root becomes image:NAME:TAG@sha256:<manifest>, pinned: the stored
 *    profile names the exact image, and a rerun finds that manifest or
 *    refuses;
 *  - root_layers: the unpacked layers in the store, top first, stacked as
 *    overlay lowers exactly like root = DIR:DIR (sandbox/mount-layers.c);
 *  - Env: each variable the profile and the command line did not set
 *    (theirs win), recorded with the image as its origin;
 *  - WorkingDir: the job's working directory (image_workdir) unless
 *    the profile or the command line set [sandbox] workdir; the
 *    workspace stays where the profile puts it;
 *  - Entrypoint + Cmd: the command, when none was given;
 *  - User: not used. The job runs as the sandbox's one user, which owns
 *    every file of the image (unpack.c), whatever user the image names.
 * The store is the caller's own, written only by `hutch image import`
 * after every blob was verified: an image root is no host path, so an
 * untrusted profile may name one (profile-value.c).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "config/profile-internal.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "image/image.h"
#include "lib/util.h"

static int fold_env(struct run_config *cfg, char **env, const char *origin_file, char **ret_error)
{
        for (char **e = env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq)
                        continue;
                _cleanup_free_ char *name = strndup(*e, (size_t)(eq - *e));
                _cleanup_free_ char *id = xasprintf("env.%s", name);
                if (!profile_valid_env_name(name) || run_config_origin(cfg, id))
                        continue;       /* the profile's or the command line's wins */
                int r = profile_set_env(cfg, name, eq + 1, ORIGIN_FILE, origin_file, 0, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

int profile_resolve_image(struct run_config *cfg, const char *image_dir, char **ret_error)
{
        _cleanup_image_store_ struct image_store *st = NULL;
        _cleanup_image_info_ struct image_info *info = NULL;
        _cleanup_free_ char *err = NULL;
        const char *ref;
        int r;

        if (!profile_root_is_image(cfg->root))
                return 0;
        ref = cfg->root + strlen(PROFILE_IMAGE_PREFIX);
        if (!image_dir) {
                *ret_error = xasprintf("root = %s: no state dir to keep images in", cfg->root);
                return -ENOENT;
        }
        r = image_store_open(image_dir, false, false, &st);
        if (r == -ENOENT) {
                *ret_error = xasprintf("no image %s: none imported yet (hutch image import)", ref);
                return r;
        }
        if (r >= 0)
                r = image_resolve(st, ref, &info, &err);
        if (r < 0) {
                *ret_error = err ? TAKE_PTR(err) : xasprintf("image store %s: %s", image_dir, strerror(-r));
                return r;
        }
        _cleanup_free_ char *pinned = strstr(info->ref, "@sha256:") || startswith(info->ref, "sha256:")
                                              ? xasprintf("%s%s", PROFILE_IMAGE_PREFIX, info->ref)
                                              : xasprintf("%s%s@sha256:%s", PROFILE_IMAGE_PREFIX, info->ref,
                                                          info->manifest);
        _cleanup_free_ char *origin = xasprintf("image %s", info->ref);
        r = fold_env(cfg, info->env, origin, ret_error);
        if (r < 0)
                return r;
        free(cfg->root);
        cfg->root = TAKE_PTR(pinned);
        strv_free(cfg->root_layers);
        cfg->root_layers = NULL;
        for (char **d = info->layer_dirs; d && *d; d++)
                cfg->root_layers = strv_append(cfg->root_layers, *d);
        /* a workdir the command line or a profile chose wins; the
         * default profile's, which names every key, is no choice */
        const struct key_origin *wd = run_config_origin(cfg, "sandbox.workdir");
        const char *wd_file = wd && wd->file ? strrchr(wd->file, '/') : NULL;
        bool wd_chosen = wd && wd->origin != ORIGIN_DEFAULT &&
                         !(wd->origin != ORIGIN_CLI && wd->file &&
                           streq(wd_file ? wd_file + 1 : wd->file, "default.ini"));
        free(cfg->image_workdir);
        cfg->image_workdir = info->working_dir && info->working_dir[0] == '/' && !strstr(info->working_dir, "..") &&
                                     !wd_chosen
                                     ? xstrdup(info->working_dir) : NULL;
        if (!cfg->argv || !cfg->argv[0]) {
                strv_free(cfg->argv);
                cfg->argv = NULL;
                for (char **a = info->entrypoint; a && *a; a++)
                        cfg->argv = strv_append(cfg->argv, *a);
                for (char **a = info->cmd; a && *a; a++)
                        cfg->argv = strv_append(cfg->argv, *a);
        }
        return 0;
}
