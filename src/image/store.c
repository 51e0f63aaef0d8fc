/* store.c - the image store (layout in image.h): opening and locking it,
 * the refs file, import (source.c brings the blobs, unpack.c the layers),
 * resolving an image for a run, and removing what no ref names.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image-internal.h"
#include "lib/fsutil.h"
#include "lib/util.h"

#define REFS "refs.json"

char *image_store_dir(const char *db_path)
{
        const char *slash = strrchr(db_path, '/');
        return slash ? xasprintf("%.*s/images", (int)(slash - db_path), db_path) : xstrdup("images");
}

struct image_store *image_store_free(struct image_store *st)
{
        if (!st)
                return NULL;
        int fds[] = { st->dirfd, st->lockfd, st->blobsfd, st->layersfd, st->tmpfd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(st->dir);
        free(st);
        return NULL;
}

static int open_sub(int dirfd, const char *name, bool create)
{
        if (create && mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int image_store_open(const char *dir, bool create, bool exclusive, struct image_store **ret)
{
        struct image_store *st = xcalloc(1, sizeof(*st));
        _cleanup_close_ int blobs = -1;
        int r;

        st->dirfd = st->lockfd = st->blobsfd = st->layersfd = st->tmpfd = -1;
        st->dir = xstrdup(dir);
        if (create && (r = mkdir_p(dir, 0700)) < 0)
                goto fail;
        st->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (st->dirfd < 0) {
                r = -errno;
                goto fail;
        }
        st->lockfd = openat(st->dirfd, "lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
        if (st->lockfd < 0) {
                r = -errno;
                goto fail;
        }
        while (flock(st->lockfd, exclusive ? LOCK_EX : LOCK_SH) < 0)
                if (errno != EINTR) {
                        r = -errno;
                        goto fail;
                }
        blobs = open_sub(st->dirfd, "blobs", create);
        if (blobs < 0) {
                r = blobs;
                goto fail;
        }
        if ((st->blobsfd = open_sub(blobs, "sha256", create)) < 0 ||
            (st->layersfd = open_sub(st->dirfd, "layers", create)) < 0 ||
            (st->tmpfd = open_sub(st->dirfd, "tmp", create)) < 0) {
                r = st->blobsfd < 0 ? st->blobsfd : st->layersfd < 0 ? st->layersfd : st->tmpfd;
                goto fail;
        }
        *ret = st;
        return 0;
fail:
        image_store_free(st);
        return r;
}

/* ---- refs.json -------------------------------------------------------------- */

int refs_load(struct image_store *st, json_t **ret)
{
        _cleanup_close_ int fd = openat(st->dirfd, REFS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno != ENOENT)
                        return -errno;
                *ret = json_object();
                return 0;
        }
        json_t *j = json_loadfd(fd, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(j)) {
                json_decref(j);
                return -EBADMSG;
        }
        *ret = j;
        return 0;
}

int refs_save(struct image_store *st, json_t *refs)
{
        char tmp[64];
        int r = fs_random_name("refs-", tmp, sizeof(tmp));
        if (r < 0)
                return r;
        _cleanup_free_ char *text = json_dumps(refs, JSON_INDENT(2) | JSON_SORT_KEYS);
        _cleanup_close_ int fd = openat(st->tmpfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, text, strlen(text));
        if (r == 0 && (write_all(fd, "\n", 1) < 0 || fsync(fd) < 0))
                r = -errno;
        if (r == 0 && renameat(st->tmpfd, tmp, st->dirfd, REFS) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(st->tmpfd, tmp, 0);
        return r;
}

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
        r = source_fetch(st, src, lim, manifest, &carried, ret_error);
        if (r < 0)
                return r;
        if (!name && !(name = image_ref_normalize(carried))) {
                *ret_error = xasprintf("the image carries no usable name ('%s'): give one, hutch image import REF NAME[:TAG]",
                                       carried ? carried : "");
                return -EINVAL;
        }
        r = blob_read_json(st, manifest, &j);
        if (r >= 0)
                r = oci_parse_manifest(j, &m, ret_error);
        json_decref(j);
        j = NULL;
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
                *ret_error = xasprintf("%s/%s: %s", st->dir, REFS, strerror(-r));
        if (r >= 0) {
                snprintf(res->name, sizeof(res->name), "%s", name);
                memcpy(res->manifest, manifest, DIGEST_HEX_SIZE);
        }
out:
        json_decref(j);
        json_decref(refs);
        oci_manifest_done(&m);
        return r;
}
