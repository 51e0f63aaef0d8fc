/* oci.c - the JSON documents of an image: the index (or Docker manifest
 * list) that names manifests, the manifest that names a config and
 * layers, and the config a run honours (Env, Entrypoint, Cmd,
 * WorkingDir, User). Only what hutch uses is read; every digest is
 * checked for its shape ("sha256:" and 64 hex digits) so that it can
 * name a file, and every media type against the ones hutch can unpack.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/utsname.h>

#include "image/image-internal.h"
#include "lib/util.h"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define REF_NAME "org.opencontainers.image.ref.name"

const char *oci_host_arch(void)
{
        static const struct { const char *uname, *oci; } map[] = {
                { "x86_64", "amd64" }, { "aarch64", "arm64" }, { "i686", "386" },
                { "armv7l", "arm" }, { "ppc64le", "ppc64le" }, { "s390x", "s390x" },
                { "riscv64", "riscv64" },
        };
        static char arch[65];
        struct utsname u;

        if (arch[0])
                return arch;
        if (uname(&u) < 0)
                return "unknown";
        snprintf(arch, sizeof(arch), "%s", u.machine);
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (streq(u.machine, map[i].uname))
                        snprintf(arch, sizeof(arch), "%s", map[i].oci);
        return arch;
}

static int bad(char **ret_error, int r, const char *fmt, const char *arg)
{
        if (ret_error && !*ret_error)
                *ret_error = xasprintf(fmt, arg ? arg : "");
        return r;
}

static bool is_index_type(const char *mt)
{
        return mt && (streq(mt, MT_OCI_INDEX) || streq(mt, MT_DOCKER_LIST));
}

/* Is descriptor d for this host (no platform: yes)? */
static bool for_host(json_t *d)
{
        json_t *p = json_object_get(d, "platform");
        if (!p)
                return true;
        const char *os = json_string_value(json_object_get(p, "os"));
        const char *arch = json_string_value(json_object_get(p, "architecture"));
        return (!os || streq(os, "linux")) && (!arch || streq(arch, oci_host_arch()));
}

int oci_pick_manifest(struct image_store *st, json_t *index, const char *tag, blob_fetch_fn fetch, void *ctx,
                      char ret_hex[DIGEST_HEX_SIZE], char **ret_error)
{
        _cleanup_(json_decrefp) json_t *owned = NULL;
        json_t *found = NULL, *d;
        size_t i, n_manifests = 0;

        for (int depth = 0; depth < 4; depth++) {
                json_t *list = json_object_get(index, "manifests");
                if (!json_is_array(list))
                        return bad(ret_error, -EBADMSG, "the index has no \"manifests\" list%s", NULL);
                found = NULL;
                n_manifests = json_array_size(list);
                json_array_foreach(list, i, d) {
                        const char *name = json_string_value(json_object_get(json_object_get(d, "annotations"), REF_NAME));
                        if (tag && depth == 0 ? name && streq(name, tag) : for_host(d)) {
                                found = d;
                                break;
                        }
                }
                if (!found && depth == 0 && !tag && n_manifests == 1)
                        found = json_array_get(list, 0);
                if (!found) {
                        if (tag && depth == 0)
                                return bad(ret_error, -ENOENT, "no image tagged '%s' in the layout", tag);
                        if (depth == 0 && n_manifests > 1)
                                return bad(ret_error, -ENOENT,
                                           "the layout holds several images: name one with :TAG%s", NULL);
                        return bad(ret_error, -ENOENT, "no image for linux/%s in the index", oci_host_arch());
                }
                const char *hex = digest_ref_hex(json_string_value(json_object_get(found, "digest")));
                if (!hex)
                        return bad(ret_error, -EBADMSG, "a manifest descriptor without a valid sha256 digest%s", NULL);
                int r = fetch ? fetch(ctx, hex) : 0;
                if (r < 0 && r != -ENOENT)
                        return r;
                if (!blob_has(st, hex))
                        return bad(ret_error, -ENOENT, "the index names blob sha256:%s, which the image does not have", hex);
                if (!is_index_type(json_string_value(json_object_get(found, "mediaType")))) {
                        memcpy(ret_hex, hex, DIGEST_HEX_SIZE);
                        return 0;
                }
                /* a nested index (a multi-platform image): pick this host's */
                json_t *next = NULL;
                r = blob_read_json(st, hex, &next);
                if (r < 0)
                        return bad(ret_error, r, "index blob sha256:%s is not JSON", hex);
                json_decref(owned);
                index = owned = next;
                tag = NULL;
        }
        return bad(ret_error, -ELOOP, "indexes nested too deep%s", NULL);
}

void oci_manifest_done(struct oci_manifest *m)
{
        strv_free(m->layers);
        memset(m, 0, sizeof(*m));
}

static bool layer_type_ok(const char *mt)
{
        static const char *const ok[] = {
                "application/vnd.oci.image.layer.v1.tar",
                "application/vnd.oci.image.layer.v1.tar+gzip",
                "application/vnd.oci.image.layer.v1.tar+zstd",
                "application/vnd.oci.image.layer.nondistributable.v1.tar",
                "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
                "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
                "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "application/vnd.docker.image.rootfs.diff.tar",
        };
        if (!mt)
                return true;    /* older writers leave it out */
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (streq(mt, ok[i]))
                        return true;
        return false;
}

int oci_parse_manifest(json_t *j, struct oci_manifest *m, char **ret_error)
{
        const char *mt = json_string_value(json_object_get(j, "mediaType"));
        json_t *layers = json_object_get(j, "layers"), *d;
        size_t i, n = 0;

        memset(m, 0, sizeof(*m));
        if (mt && !streq(mt, MT_OCI_MANIFEST) && !streq(mt, MT_DOCKER_MANIFEST))
                return bad(ret_error, -EBADMSG, "not an image manifest (media type %s)", mt);
        if (json_integer_value(json_object_get(j, "schemaVersion")) != 2)
                return bad(ret_error, -EBADMSG, "manifest schemaVersion is not 2%s", NULL);
        const char *config = digest_ref_hex(json_string_value(json_object_get(json_object_get(j, "config"), "digest")));
        if (!config)
                return bad(ret_error, -EBADMSG, "the manifest's config has no valid sha256 digest%s", NULL);
        if (!json_is_array(layers))
                return bad(ret_error, -EBADMSG, "the manifest has no \"layers\" list%s", NULL);
        json_array_foreach(layers, i, d) {
                const char *hex = digest_ref_hex(json_string_value(json_object_get(d, "digest")));
                const char *lmt = json_string_value(json_object_get(d, "mediaType"));
                if (!hex) {
                        oci_manifest_done(m);
                        return bad(ret_error, -EBADMSG, "a layer without a valid sha256 digest%s", NULL);
                }
                if (!layer_type_ok(lmt)) {
                        oci_manifest_done(m);
                        return bad(ret_error, -EOPNOTSUPP, "a layer of media type %s, not a tar layer", lmt);
                }
                m->layers = strv_push(m->layers, &n, hex);
        }
        m->n_layers = n;
        memcpy(m->config, config, DIGEST_HEX_SIZE);
        return 0;
}

/* a JSON array of strings as a vector; NULL for null/absent */
static int string_array(json_t *a, char ***ret)
{
        size_t i, n = 0;
        json_t *v;
        char **out = NULL;

        *ret = NULL;
        if (!a || json_is_null(a))
                return 0;
        if (!json_is_array(a))
                return -EBADMSG;
        json_array_foreach(a, i, v) {
                if (!json_is_string(v)) {
                        strv_free(out);
                        return -EBADMSG;
                }
                out = strv_push(out, &n, json_string_value(v));
        }
        if (!out)
                out = xcalloc(1, sizeof(char *));
        *ret = out;
        return 0;
}

static char *opt_string(json_t *o, const char *key)
{
        const char *s = json_string_value(json_object_get(o, key));
        return s && *s ? xstrdup(s) : NULL;
}

int oci_parse_config(json_t *j, struct image_info *info, char **ret_error)
{
        json_t *c = json_object_get(j, "config");

        info->os = opt_string(j, "os");
        info->architecture = opt_string(j, "architecture");
        info->created = opt_string(j, "created");
        if (info->os && !streq(info->os, "linux"))
                return bad(ret_error, -EOPNOTSUPP, "the image is for %s, not linux", info->os);
        if (string_array(json_object_get(c, "Env"), &info->env) < 0 ||
            string_array(json_object_get(c, "Entrypoint"), &info->entrypoint) < 0 ||
            string_array(json_object_get(c, "Cmd"), &info->cmd) < 0)
                return bad(ret_error, -EBADMSG, "the config's Env, Entrypoint or Cmd is not a list of strings%s", NULL);
        /* a run sets each entry by the rule a profile's env is held to:
         * one it would refuse makes the image unrunnable */
        for (size_t i = 0; info->env && info->env[i]; i++) {
                const char *why = env_entry_problem(info->env[i]);
                if (why) {
                        if (ret_error && !*ret_error)
                                *ret_error = xasprintf("the config's Env[%zu]: %s", i, why);
                        return -EBADMSG;
                }
        }
        info->working_dir = opt_string(c, "WorkingDir");
        info->user = opt_string(c, "User");
        return 0;
}
