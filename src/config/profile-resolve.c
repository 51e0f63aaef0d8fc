/* config/profile-resolve.c - one resolution of a run's settings, shared
 * by `hutch run` and `hutch profile show` (profile.h): whatever a run
 * derives from its profile and command line is derived here, before the
 * settings are frozen, so the profile a run stores is the one `profile
 * show` prints for the same profile and flags.
 */
#include "config.h"

#include <string.h>

#include "config/profile.h"
#include "lib/util.h"

static const char *basename_of(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

int profile_resolve(struct run_config *cfg, const struct profile_request *req, bool *ret_cli_error,
                    char **ret_error)
{
        int r;

        *ret_cli_error = false;
        r = profile_load_trusting(cfg, req->profile, req->trust, ret_error);
        if (r < 0)
                return r;
        r = profile_apply_cli(cfg, req->overrides, ret_error);
        if (r < 0) {
                /* a bad value on the command line is a usage error, not a bad profile */
                *ret_cli_error = true;
                return r;
        }
        /* Any allow rule turns network none into allow, unless none was
         * asked for on the command line; host stays host (the caller
         * says the rules are unused: cfg->net_allow without NET_ALLOW). */
        const struct key_origin *mode = run_config_origin(cfg, "network.mode");
        if (cfg->net_allow && cfg->net == NET_NONE && (!mode || mode->origin != ORIGIN_CLI))
                cfg->net = NET_ALLOW;
        r = profile_validate(cfg, ret_error);
        if (r < 0)
                return r;
        r = profile_resolve_image(cfg, req->image_dir, ret_error);
        if (r < 0)
                return r;
        /* An interactive run lasts as long as the person at it: the
         * default 30 s (built in, or the default profile's, which names
         * every key) would end a shell mid-command. A timeout someone
         * chose (--timeout, a named profile's) still holds; a runaway
         * job is ended from the terminal with ~. (hutch-run(1)). */
        const struct key_origin *timeout = run_config_origin(cfg, "limits.timeout");
        if (req->tty && (!timeout || timeout->origin == ORIGIN_DEFAULT ||
                         (timeout->origin != ORIGIN_CLI && timeout->file &&
                          streq(basename_of(timeout->file), "default.ini"))))
                cfg->timeout_ms = 0;
        return 0;
}
