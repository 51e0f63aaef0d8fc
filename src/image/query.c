/* query.c - the image store seen from its refs: an image resolved for a
 * run, the list, removal, gc of what no ref names, and the disk usage
 * doctor reports.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image-internal.h"
#include "lib/fsutil.h"
#include "lib/util.h"

struct image_info *image_info_free(struct image_info *info)
{
        if (!info)
                return NULL;
        free(info->ref);
        strv_free(info->layer_dirs);
        strv_free(info->layer_digests);
        strv_free(info->env);
        strv_free(info->entrypoint);
        strv_free(info->cmd);
        free(info->working_dir);
        free(info->user);
        free(info->architecture);
        free(info->os);
        free(info->created);
        free(info);
        return NULL;
}

/* Does a ref of refs name manifest hex? */
static bool refs_name_manifest(json_t *refs, const char *hex)
{
        const char *key;
        json_t *v;
        json_object_foreach(refs, key, v) {
                const char *h = digest_ref_hex(json_string_value(json_object_get(v, "manifest")));
                if (h && streq(h, hex))
                        return true;
        }
        return false;
}

/* The manifest digest ref names: "sha256:<hex>" or "NAME@sha256:<hex>"
 * (the NAME is a reminder, not checked: a rerun names the image as it
 * was called then), when some ref of refs.json names that manifest, or
 * a ref of refs.json. Only refs name imported images: import writes the
 * ref last, after every layer was unpacked and every bound held, so a
 * manifest blob a refused import left is not one. */
static int ref_manifest(struct image_store *st, const char *ref, char hex[DIGEST_HEX_SIZE], char **ret_name)
{
        const char *at = strstr(ref, "@sha256:");
        const char *direct = startswith(ref, "sha256:") ? ref : at ? at + 1 : NULL;
        _cleanup_free_ char *name = NULL;
        const char *h = NULL;
        json_t *refs = NULL;

        if (direct && !digest_ref_hex(direct))
                return -EINVAL;
        if (!direct && !(name = image_ref_normalize(ref)))
                return -EINVAL;
        int r = refs_load(st, &refs);
        if (r < 0)
                return r;
        if (direct) {
                h = digest_ref_hex(direct);
                if (!refs_name_manifest(refs, h))
                        h = NULL;
        } else
                h = digest_ref_hex(json_string_value(json_object_get(json_object_get(refs, name), "manifest")));
        if (h)
                memcpy(hex, h, DIGEST_HEX_SIZE);
        json_decref(refs);
        if (!h)
                return -ENOENT;
        *ret_name = name ? TAKE_PTR(name) : xstrdup(ref);
        return 0;
}

int image_resolve(struct image_store *st, const char *ref, struct image_info **ret, char **ret_error)
{
        _cleanup_image_info_ struct image_info *info = xcalloc(1, sizeof(*info));
        struct oci_manifest m = { 0 };
        size_t n_dirs = 0, n_digests = 0;
        json_t *j = NULL;
        int r;

        r = ref_manifest(st, ref, info->manifest, &info->ref);
        if (r == -EINVAL) {
                *ret_error = xasprintf("'%s' is not an image name (NAME[:TAG] or NAME@sha256:DIGEST)", ref);
                return r;
        }
        if (r < 0) {
                *ret_error = r == -ENOENT ? xasprintf("no image %s in %s (hutch image ls)", ref, st->dir)
                                          : xasprintf("%s: %s", st->dir, strerror(-r));
                return r;
        }
        r = blob_read_json(st, info->manifest, &j);
        if (r >= 0)
                r = oci_parse_manifest(j, &m, ret_error);
        json_decref(j);
        if (r < 0) {
                if (!*ret_error)
                        *ret_error = xasprintf("manifest sha256:%s of %s is damaged", info->manifest, ref);
                return -EBADMSG;
        }
        if (m.n_layers > IMAGE_MAX_LAYERS) {
                *ret_error = xasprintf("image %s has %zu layers, more than the %d a run can stack", ref, m.n_layers,
                                       IMAGE_MAX_LAYERS);
                oci_manifest_done(&m);
                return -E2BIG;
        }
        memcpy(info->config, m.config, DIGEST_HEX_SIZE);
        r = blob_read_json(st, m.config, &j);
        if (r >= 0) {
                r = oci_parse_config(j, info, ret_error);
                json_decref(j);
                if (r < 0 && *ret_error) {
                        char *named = xasprintf("image %s: %s", ref, *ret_error);
                        free(*ret_error);
                        *ret_error = named;
                }
        } else
                *ret_error = xasprintf("config sha256:%s of %s is missing or damaged", m.config, ref);
        for (size_t i = m.n_layers; r >= 0 && i-- > 0;) {
                char path[128];
                struct stat sb;
                json_t *lj;
                snprintf(path, sizeof(path), "%s/rootfs", m.layers[i]);
                if (fstatat(st->layersfd, path, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode)) {
                        *ret_error = xasprintf("layer sha256:%s of %s is not unpacked: import the image again",
                                               m.layers[i], ref);
                        r = -EBADMSG;
                        break;
                }
                _cleanup_free_ char *dir = xasprintf("%s/layers/%s", st->dir, path);
                info->layer_dirs = strv_push(info->layer_dirs, &n_dirs, dir);
                info->layer_digests = strv_push(info->layer_digests, &n_digests, m.layers[i]);
                snprintf(path, sizeof(path), "%s/layer.json", m.layers[i]);
                _cleanup_close_ int fd = openat(st->layersfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && (lj = json_loadfd(fd, 0, NULL))) {
                        info->bytes += (uint64_t)json_integer_value(json_object_get(lj, "bytes"));
                        json_decref(lj);
                }
        }
        oci_manifest_done(&m);
        if (r < 0)
                return r < -1 ? r : -EBADMSG;
        *ret = TAKE_PTR(info);
        return 0;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int image_list(struct image_store *st, char ***ret_refs)
{
        json_t *refs = NULL, *v;
        const char *key;
        char **out = NULL;
        size_t n = 0;
        int r = refs_load(st, &refs);

        if (r < 0)
                return r;
        json_object_foreach(refs, key, v)
                out = strv_push(out, &n, key);
        json_decref(refs);
        if (n > 1)
                qsort(out, n, sizeof(*out), compare_strings);
        *ret_refs = out ? out : xcalloc(1, sizeof(char *));
        return (int)n;
}

int image_remove(struct image_store *st, const char *ref)
{
        _cleanup_free_ char *name = image_ref_normalize(ref);
        json_t *refs = NULL;
        if (!name)
                return -EINVAL;
        int r = refs_load(st, &refs);
        if (r < 0)
                return r;
        if (!json_object_get(refs, name))
                r = -ENOENT;
        else {
                json_object_del(refs, name);
                r = refs_save(st, refs);
        }
        json_decref(refs);
        if (r < 0)
                return r;
        r = image_gc(st, false, NULL, NULL, NULL);
        return r == -EBUSY ? 1 : r;
}

/* Disk usage of name in dirfd (blocks, each inode once: layers share
 * nothing by hardlink, but a layer's own hardlinks count once). */
struct du {
        uint64_t bytes;
        dev_t *devs;
        ino_t *inos;
        size_t n;
};

static void du_add(struct du *du, const struct stat *sb)
{
        if (sb->st_nlink > 1 && !S_ISDIR(sb->st_mode)) {
                for (size_t i = 0; i < du->n; i++)
                        if (du->inos[i] == sb->st_ino && du->devs[i] == sb->st_dev)
                                return;
                if (du->n < 65536) {
                        du->devs = xrealloc(du->devs, (du->n + 1) * sizeof(*du->devs));
                        du->inos = xrealloc(du->inos, (du->n + 1) * sizeof(*du->inos));
                        du->devs[du->n] = sb->st_dev;
                        du->inos[du->n++] = sb->st_ino;
                }
        }
        du->bytes += (uint64_t)sb->st_blocks * 512;
}

static void du_at(struct du *du, int parent, const char *name, int depth)
{
        struct stat sb;
        if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        du_add(du, &sb);
        if (!S_ISDIR(sb.st_mode) || depth > 256)
                return;
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        for (struct dirent *de; (de = readdir(d));)
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        du_at(du, dirfd(d), de->d_name, depth + 1);
        closedir(d);
}

static uint64_t du_of(int dirfd, const char *name)
{
        struct du du = { 0 };
        du_at(&du, dirfd, name, 0);
        free(du.devs);
        free(du.inos);
        return du.bytes;
}

/* the digests every ref needs: manifests, configs, layers */
static char **referenced(struct image_store *st)
{
        json_t *refs = NULL, *v;
        const char *key;
        char **keep = NULL;
        size_t n = 0;

        if (refs_load(st, &refs) < 0)
                return NULL;
        json_object_foreach(refs, key, v) {
                const char *hex = digest_ref_hex(json_string_value(json_object_get(v, "manifest")));
                json_t *j = NULL;
                struct oci_manifest m;
                if (!hex)
                        continue;
                keep = strv_push(keep, &n, hex);
                if (blob_read_json(st, hex, &j) < 0)
                        continue;
                if (oci_parse_manifest(j, &m, NULL) == 0) {
                        keep = strv_push(keep, &n, m.config);
                        for (size_t i = 0; i < m.n_layers; i++)
                                keep = strv_push(keep, &n, m.layers[i]);
                        oci_manifest_done(&m);
                }
                json_decref(j);
        }
        json_decref(refs);
        return keep ? keep : xcalloc(1, sizeof(char *));
}

/* Remove the entries of dirfd whose names keep does not hold (all, for
 * keep NULL); count them and their bytes. */
static int sweep(int dirfd, char **keep, bool dry_run, unsigned *count, uint64_t *bytes)
{
        _cleanup_strv_ char **names = NULL;
        int r = fs_list_dir(dirfd, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                if (keep && strv_contains(keep, *n))
                        continue;
                *bytes += du_of(dirfd, *n);
                (*count)++;
                if (!dry_run && (r = fs_remove_tree_at(dirfd, *n)) < 0 && r != -ENOENT)
                        return r;
        }
        return 0;
}

int image_gc(struct image_store *st, bool dry_run, unsigned *ret_layers, unsigned *ret_blobs, uint64_t *ret_bytes)
{
        _cleanup_strv_ char **keep = referenced(st);
        unsigned layers = 0, blobs = 0, tmps = 0;
        uint64_t bytes = 0;
        int r;

        if (!keep)
                return -EBADMSG;        /* refs.json unreadable: remove nothing */
        /* no layer goes away under a running job: skip while one runs */
        _cleanup_close_ int use = dry_run ? -1 : store_use_exclusive(st);
        if (use == -EBUSY)
                return use;
        r = sweep(st->layersfd, keep, dry_run, &layers, &bytes);
        if (r >= 0)
                r = sweep(st->blobsfd, keep, dry_run, &blobs, &bytes);
        /* under the exclusive lock no import is writing: tmp/ is leftovers */
        if (r >= 0)
                r = sweep(st->tmpfd, NULL, dry_run, &tmps, &bytes);
        if (r < 0)
                return r;
        if (ret_layers)
                *ret_layers = layers;
        if (ret_blobs)
                *ret_blobs = blobs;
        if (ret_bytes)
                *ret_bytes = bytes;
        return 0;
}

int image_store_usage(const char *dir, uint64_t *ret_bytes, unsigned *ret_images)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_bytes = du_of(fd, ".");
        *ret_images = 0;
        _cleanup_close_ int rf = openat(fd, "refs.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        json_t *refs = rf >= 0 ? json_loadfd(rf, 0, NULL) : NULL;
        if (json_is_object(refs))
                *ret_images = (unsigned)json_object_size(refs);
        json_decref(refs);
        return 0;
}
