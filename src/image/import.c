/* import.c - image_import(): source.c brings an image's blobs into the
 * store (verified), then each layer not yet unpacked is unpacked
 * (unpack.c) into tmp/ and renamed into layers/, and the ref is written.
 * The only part of the image module that needs libarchive (with
 * source.c and unpack.c): a run resolving an image (store.c, query.c)
 * does not.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image-internal.h"
#include "lib/fsutil.h"
#include "lib/util.h"

/* ---- layers ----------------------------------------------------------------- */

static int layer_size(struct image_store *st, const char *hex, uint64_t *ret)
{
        char path[128];
        snprintf(path, sizeof(path), "%s/layer.json", hex);
        _cleanup_close_ int fd = openat(st->layersfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        json_t *j = json_loadfd(fd, 0, NULL);
        if (!j)
                return -EBADMSG;
        *ret = (uint64_t)json_integer_value(json_object_get(j, "bytes"));
        json_decref(j);
        return 0;
}

/* Unpack blob into the new directory tmp/<tmp>: rootfs/ and layer.json. */
static int unpack_into(struct image_store *st, const char *tmp, int blob, const char *hex,
                       const struct image_limits *lim, struct unpack_stats *stats, char **ret_error)
{
        _cleanup_close_ int top = openat(st->tmpfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (top < 0 || mkdirat(top, "rootfs", 0755) < 0)
                return -errno;
        _cleanup_close_ int rootfs = openat(top, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rootfs < 0)
                return -errno;
        _cleanup_free_ char *why = NULL;
        int r = unpack_layer(blob, rootfs, lim, stats, &why);
        if (r < 0) {
                *ret_error = xasprintf("layer sha256:%.12s refused: %s", hex, why ? why : strerror(-r));
                return r;
        }
        json_t *info = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "bytes", (json_int_t)stats->bytes, "entries",
                                 (json_int_t)stats->entries, "specials_skipped", (json_int_t)stats->specials,
                                 "setid_dropped", (json_int_t)stats->setid, "xattrs_dropped", (json_int_t)stats->xattrs,
                                 "whiteouts", (json_int_t)stats->whiteouts, "opaque_dirs", (json_int_t)stats->opaque);
        _cleanup_free_ char *text = json_dumps(info, JSON_INDENT(2));
        json_decref(info);
        _cleanup_close_ int fd = openat(top, "layer.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (fd < 0)
                return -errno;
        r = write_all(fd, text, strlen(text));
        if (r < 0)
                return r;
        return syncfs(top) < 0 ? -errno : 0;
}

/* Unpack blob hex into layers/<hex> unless it is there: into tmp/ first,
 * renamed into place once whole, so a layer dir is always complete and a
 * refused layer leaves nothing. */
static int ensure_layer(struct image_store *st, const char *hex, const struct image_limits *lim,
                        struct image_import_result *res, char **ret_error)
{
        struct unpack_stats stats;
        struct stat sb;
        char tmp[64];
        int r;

        if (fstatat(st->layersfd, hex, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode))
                return 0;
        _cleanup_close_ int blob = blob_open(st, hex);
        if (blob < 0) {
                *ret_error = xasprintf("layer blob sha256:%s is missing", hex);
                return blob;
        }
        if ((r = fs_random_name("layer-", tmp, sizeof(tmp))) < 0)
                return r;
        if (mkdirat(st->tmpfd, tmp, 0700) < 0)
                return -errno;
        r = unpack_into(st, tmp, blob, hex, lim, &stats, ret_error);
        if (r >= 0 && renameat2(st->tmpfd, tmp, st->layersfd, hex, RENAME_NOREPLACE) < 0)
                r = -errno;
        if (r < 0) {
                (void)fs_remove_tree_at(st->tmpfd, tmp);
                return r;
        }
        blob_note_new_layer(st, hex);
        res->layers_unpacked++;
        res->skipped_specials += stats.specials;
        res->setid_dropped += stats.setid;
        res->xattrs_dropped += stats.xattrs;
        return 0;
}

int image_import(struct image_store *st, const char *src, const char *ref, const struct image_limits *lim,
                 struct image_import_result *res, char **ret_error)
{
        _cleanup_free_ char *carried = NULL, *name = NULL;
        char manifest[DIGEST_HEX_SIZE];
        struct oci_manifest m = { 0 };
        json_t *j = NULL, *refs = NULL;
        int r;

        memset(res, 0, sizeof(*res));
        if (ref && !(name = image_ref_normalize(ref))) {
                *ret_error = xasprintf("'%s' is not an image name (NAME[:TAG]: letters, digits, . _ - /)", ref);
                return -EINVAL;
        }
        blob_import_begin(st, lim->max_image_bytes);
        r = source_fetch(st, src, lim, manifest, &carried, ret_error);
        if (r < 0)
                goto out;
        if (!name && !(name = image_ref_normalize(carried))) {
                *ret_error = xasprintf("the image carries no usable name ('%s'): give one, hutch image import REF NAME[:TAG]",
                                       carried ? carried : "");
                r = -EINVAL;
                goto out;
        }
        r = blob_read_json(st, manifest, &j);
        if (r >= 0)
                r = oci_parse_manifest(j, &m, ret_error);
        json_decref(j);
        j = NULL;
        if (r >= 0 && m.n_layers > IMAGE_MAX_LAYERS) {
                *ret_error = xasprintf("the image has %zu layers, more than the %d a run can stack", m.n_layers,
                                       IMAGE_MAX_LAYERS);
                r = -E2BIG;
        }
        if (r < 0)
                goto out;
        struct image_info *probe = xcalloc(1, sizeof(*probe));
        r = blob_read_json(st, m.config, &j);
        if (r < 0)
                *ret_error = xasprintf("config sha256:%s is not JSON", m.config);
        else
                r = oci_parse_config(j, probe, ret_error);
        if (r >= 0 && probe->architecture && !streq(probe->architecture, oci_host_arch())) {
                *ret_error = xasprintf("the image is for %s, this host is %s", probe->architecture, oci_host_arch());
                r = -EOPNOTSUPP;
        }
        image_info_free(probe);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < m.n_layers; i++) {
                uint64_t size = 0;
                r = ensure_layer(st, m.layers[i], lim, res, ret_error);
                if (r >= 0)
                        r = layer_size(st, m.layers[i], &size);
                if (r < 0)
                        goto out;
                res->bytes += size;
                if (lim->max_image_bytes && res->bytes > lim->max_image_bytes) {
                        char b[32];
                        *ret_error = xasprintf("the image unpacks to more than max_image_size (%s)",
                                               format_size(lim->max_image_bytes, b, sizeof(b)));
                        r = -EFBIG;
                        goto out;
                }
        }
        res->layers = (unsigned)m.n_layers;
        r = refs_load(st, &refs);
        if (r >= 0) {
                json_object_set_new(refs, name, json_pack("{s:s+, s:s, s:I}", "manifest", "sha256:", manifest,
                                                          "source", src, "imported_ms", (json_int_t)now_realtime_ms()));
                r = refs_save(st, refs);
        }
        if (r < 0 && !*ret_error)
                *ret_error = xasprintf("%s/refs.json: %s", st->dir, strerror(-r));
        if (r >= 0) {
                snprintf(res->name, sizeof(res->name), "%s", name);
                memcpy(res->manifest, manifest, DIGEST_HEX_SIZE);
        }
out:
        blob_import_end(st, r < 0);
        json_decref(j);
        json_decref(refs);
        oci_manifest_done(&m);
        return r;
}
