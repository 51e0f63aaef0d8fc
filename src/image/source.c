/* source.c - where an import reads an image from, and how its blobs get
 * into the store:
 *
 *  oci:DIR[:TAG]           an OCI image layout directory (what `skopeo
 *                          copy docker://... oci:DIR:TAG` writes): its
 *                          index.json picks the manifest, each blob is
 *                          copied from DIR/blobs/sha256/<hex> and checked
 *  oci-archive:FILE[:TAG]  the same layout as a tar archive
 *  docker-archive:FILE[:REF]  `docker save` / `podman save`: manifest.json
 *                          names a config and layer tars by file name;
 *                          their digests are computed, and hutch writes
 *                          the OCI manifest for them (its digest is then
 *                          the image's manifest digest)
 *
 * Archives are read with libarchive, a few times over: the first pass
 * keeps the JSON members (index.json, manifest.json) in memory and notes
 * every other member's name, writing nothing; each later pass stores
 * only the members the image was found to name (the index's manifest,
 * then the manifest's config and layers), so a member no image uses is
 * never written, however large it unpacks (a sparse member of a few
 * bytes in the archive can be gigabytes as a blob). A blobs/sha256/<hex>
 * member must hash to <hex>, or the import fails. Every byte written is
 * charged to the import's max_image_size budget as it is written
 * (blobs.c). The archive must be a regular file, to be read again.
 * Nothing from the source is ever used before it was verified: a layer
 * is unpacked only from the store's verified blob.
 */
#include "config.h"

#include <archive.h>
#include <archive_entry.h>
#include "image/archive-dl.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image-internal.h"
#include "lib/util.h"

struct member {
        char *name;     /* member name, canonical */
        char *hex;      /* its blob once stored, or NULL; for a link NULL ... */
        char *link;     /* ... and it names this member */
        size_t ordinal; /* its header's place in the archive */
        bool wanted;    /* the next pass stores it */
};

struct source {
        struct image_store *st;
        const struct image_limits *lim;
        int dirfd;                      /* oci: the layout's directory */
        int archivefd;                  /* archives: the file, read once per pass */
        const char *path;
        struct member *members;         /* archives: every member, in order */
        size_t n_members;
        json_t *index, *docker_manifest;
        uint64_t total;
        char **error;
};

static int err(struct source *s, int r, char *msg)
{
        if (s->error && !*s->error)
                *s->error = msg;
        else
                free(msg);
        return r;
}

/* "KIND:PATH[:TAG]": the longest PATH that exists, the rest the tag */
static int split_ref(const char *rest, char **ret_path, char **ret_tag)
{
        struct stat st;

        if (stat(rest, &st) == 0) {
                *ret_path = xstrdup(rest);
                *ret_tag = NULL;
                return 0;
        }
        for (const char *c = strrchr(rest, ':'); c; c = c > rest ? memrchr(rest, ':', (size_t)(c - rest)) : NULL) {
                _cleanup_free_ char *p = strndup(rest, (size_t)(c - rest));
                if (*p && stat(p, &st) == 0 && c[1]) {
                        *ret_path = TAKE_PTR(p);
                        *ret_tag = xstrdup(c + 1);
                        return 0;
                }
        }
        return -ENOENT;
}

/* ---- oci: a layout directory --------------------------------------------- */

/* A file of the layout, which must be a regular file: a FIFO would
 * block the open (and the read) for good while the store's lock is
 * held, a device would be read without end. O_NONBLOCK for the open
 * only: it changes nothing for a regular file. -EINVAL when it is not
 * one. */
static int open_layout_file(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        return fd;
}

static int read_json_at(int dirfd, const char *name, json_t **ret)
{
        _cleanup_close_ int fd = open_layout_file(dirfd, name);
        if (fd < 0)
                return fd;
        _cleanup_free_ char *text = xmalloc(IMAGE_JSON_MAX + 1);
        ssize_t n = read_full(fd, text, IMAGE_JSON_MAX + 1);
        if (n < 0)
                return (int)n;
        if ((size_t)n > IMAGE_JSON_MAX)
                return -EFBIG;
        *ret = json_loadb(text, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
        return *ret ? 0 : -EBADMSG;
}

/* The one line for a blob refused for its size: -EFBIG past
 * max_layer_size, -EDQUOT past what the import may write in all. */
static char *too_large(struct source *s, int r, const char *what, const char *name)
{
        char b[32];
        if (r == -EFBIG)
                return xasprintf("%s%s: larger than max_layer_size (%s)", what, name,
                                 format_size(s->lim->max_layer_bytes, b, sizeof(b)));
        return xasprintf("%s%s: the import writes more than max_image_size (%s) into the store", what, name,
                         format_size(s->lim->max_image_bytes, b, sizeof(b)));
}

/* copy DIR/blobs/sha256/<hex> into the store, verified */
static int fetch_from_dir(void *ctx, const char *hex)
{
        struct source *s = ctx;
        if (blob_has(s->st, hex))
                return 0;
        _cleanup_close_ int b = openat(s->dirfd, "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int d = b < 0 ? -1 : openat(b, "sha256", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int fd = d < 0 ? -1 : open_layout_file(d, hex);
        if (fd == -EINVAL)
                return err(s, -EINVAL, xasprintf("blob sha256:%s of the layout is not a regular file", hex));
        if (fd < 0)
                return err(s, -ENOENT, xasprintf("the image names blob sha256:%s, which the layout does not have", hex));
        int r = blob_put_fd(s->st, fd, hex, s->lim->max_layer_bytes, NULL);
        if (r == -EBADMSG)
                return err(s, r, xasprintf("blob sha256:%s does not match its digest", hex));
        if (r == -EFBIG || r == -EDQUOT)
                return err(s, -EFBIG, too_large(s, r, "blob sha256:", hex));
        if (r < 0)
                return err(s, r, xasprintf("blob sha256:%s: %s", hex, strerror(-r)));
        return 0;
}

static int no_fetch(void *ctx, const char *hex)
{
        struct source *s = ctx;
        if (blob_has(s->st, hex))
                return 0;
        return err(s, -ENOENT, xasprintf("the image names blob sha256:%s, which the archive does not have", hex));
}

/* The manifest's config and layers, fetched (or found present). */
static int fetch_parts(struct source *s, const char *manifest_hex, blob_fetch_fn fetch)
{
        json_t *j = NULL;
        struct oci_manifest m;
        int r = blob_read_json(s->st, manifest_hex, &j);
        if (r < 0)
                return err(s, r, xasprintf("manifest sha256:%s is not JSON", manifest_hex));
        r = oci_parse_manifest(j, &m, s->error);
        json_decref(j);
        if (r < 0)
                return r;
        r = fetch(s, m.config);
        for (size_t i = 0; r >= 0 && i < m.n_layers; i++)
                r = fetch(s, m.layers[i]);
        oci_manifest_done(&m);
        return r;
}

static int from_layout(struct source *s, const char *path, const char *tag, char ret_hex[DIGEST_HEX_SIZE])
{
        s->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->dirfd < 0)
                return err(s, -errno, xasprintf("%s: %s", path, strerror(errno)));
        int r = read_json_at(s->dirfd, "index.json", &s->index);
        if (r < 0)
                return err(s, r, xasprintf("%s/index.json: %s", path,
                                   r == -EBADMSG  ? "not JSON"
                                   : r == -EINVAL ? "not a regular file"
                                                  : strerror(-r)));
        r = oci_pick_manifest(s->st, s->index, tag, fetch_from_dir, s, ret_hex, s->error);
        if (r < 0)
                return r;
        return fetch_parts(s, ret_hex, fetch_from_dir);
}

/* ---- archives -------------------------------------------------------------- */

/* canonical member name: "./" and empty components gone; NULL for
 * anything with ".." or absolute */
static char *member_name(const char *in)
{
        if (!in || in[0] == '/' || strstr(in, ".."))
                return NULL;
        while (startswith(in, "./"))
                in += 2;
        return *in ? xstrdup(in) : NULL;
}

static void add_member(struct source *s, char *name, char *link, size_t ordinal)
{
        s->members = xrealloc(s->members, (s->n_members + 1) * sizeof(*s->members));
        s->members[s->n_members++] = (struct member){ .name = name, .link = link, .ordinal = ordinal };
}

/* The regular member name stands for, links followed (a few steps; the
 * last member of a name wins, as in extraction); NULL when none. */
static struct member *member_file(struct source *s, const char *name)
{
        for (int hops = 0; name && hops < 8; hops++) {
                struct member *m = NULL;
                for (size_t i = s->n_members; i-- > 0;)
                        if (streq(s->members[i].name, name)) {
                                m = &s->members[i];
                                break;
                        }
                if (!m || !m->link)
                        return m;
                name = m->link;
        }
        return NULL;
}

/* The blob of member name, links followed, once stored. */
static const char *member_hex(struct source *s, const char *name)
{
        struct member *m = member_file(s, name);
        return m ? m->hex : NULL;
}

static int keep_json(struct source *s, struct archive *a, const char *name, json_t **slot)
{
        _cleanup_free_ char *text = xmalloc(IMAGE_JSON_MAX + 1);
        ssize_t n = 0, got;
        while ((got = archive_read_data(a, text + n, IMAGE_JSON_MAX + 1 - (size_t)n)) > 0)
                n += got;
        if (got < 0)
                return err(s, -EBADMSG, xasprintf("%s: %s", name, archive_error_string(a)));
        if ((size_t)n > IMAGE_JSON_MAX)
                return err(s, -EFBIG, xasprintf("%s is too large", name));
        json_decref(*slot);
        *slot = json_loadb(text, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
        return *slot ? 0 : err(s, -EBADMSG, xasprintf("%s is not JSON", name));
}

static int store_member(struct source *s, struct archive *a, struct archive_entry *entry, struct member *m)
{
        const char *expect = NULL, *name = m->name;
        char hex[DIGEST_HEX_SIZE];
        struct blob_writer w;
        const void *buf;
        size_t len;
        la_int64_t off;
        int r;

        if (startswith(name, "blobs/sha256/")) {
                expect = name + strlen("blobs/sha256/");
                if (!digest_hex_valid(expect))
                        return err(s, -EBADMSG, xasprintf("archive member %s is not named by a sha256 digest", name));
        }
        r = blob_begin(s->st, &w, s->lim->max_layer_bytes);
        if (r < 0)
                return err(s, r, xasprintf("image store: %s", strerror(-r)));
        for (bool tail = false; !tail;) {
                r = archive_read_data_block(a, &buf, &len, &off);
                if (r == ARCHIVE_EOF) {
                        /* a sparse member may end in a hole: the blob is
                         * its whole size */
                        tail = true;
                        off = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : (la_int64_t)w.size;
                        len = 0;
                } else if (r != ARCHIVE_OK)
                        break;
                /* a blob is a plain byte stream: a sparse member's holes
                 * are written as zeros, and charged like any byte */
                static const char zeros[4096];
                int e = off < 0 || (uint64_t)off < w.size ? -EBADMSG : 0;
                while (e == 0 && w.size < (uint64_t)off) {
                        uint64_t gap = (uint64_t)off - w.size;
                        e = blob_write(&w, zeros, gap < sizeof(zeros) ? (size_t)gap : sizeof(zeros));
                }
                if (e == 0 && len)
                        e = blob_write(&w, buf, len);
                if (e < 0) {
                        blob_abort(s->st, &w);
                        return err(s, e == -EDQUOT ? -EFBIG : e,
                                   e == -EFBIG || e == -EDQUOT ? too_large(s, e, "archive member ", name)
                                   : e == -EBADMSG         ? xasprintf("archive member %s: data out of order", name)
                                                           : xasprintf("image store: %s", strerror(-e)));
                }
        }
        if (r != ARCHIVE_EOF) {
                blob_abort(s->st, &w);
                return err(s, -EBADMSG, xasprintf("archive member %s: %s", name, archive_error_string(a)));
        }
        r = blob_commit(s->st, &w, expect, hex, NULL);
        if (r == -EBADMSG)
                return err(s, r, xasprintf("blob sha256:%s does not match its digest", expect));
        if (r < 0)
                return err(s, r, xasprintf("image store: %s", strerror(-r)));
        m->hex = xstrdup(hex);
        m->wanted = false;
        return 0;
}

/* a symlink member's target as a member name, resolved from its dir */
static char *link_target(const char *name, const char *target)
{
        const char *slash = strrchr(name, '/');
        _cleanup_free_ char *joined = slash ? xasprintf("%.*s/%s", (int)(slash - name), name, target) : xstrdup(target);
        char *out = xcalloc(1, strlen(joined) + 1);
        size_t o = 0;
        for (char *p = joined; *p;) {
                size_t n = strcspn(p, "/");
                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        while (o > 0 && out[o - 1] != '/')
                                o--;
                        if (o > 0)
                                o--;
                } else if (n > 0 && !(n == 1 && p[0] == '.')) {
                        if (o)
                                out[o++] = '/';
                        memcpy(out + o, p, n);
                        o += n;
                }
                out[o] = '\0';
                p += n;
                p += strspn(p, "/");
        }
        return out;
}

/* One pass over the archive. The first (scan) keeps the JSON members and
 * notes every other one, reading no data; a later one stores the
 * members marked wanted, and only them. */
static int read_archive(struct source *s, bool scan)
{
        struct archive *a = NULL;
        struct archive_entry *e;
        size_t ordinal = 0, next = 0;
        int r = unpack_archive_new(&a), h;

        if (r < 0)
                return err(s, r, xasprintf("%s: %s", s->path, strerror(-r)));
        if (lseek(s->archivefd, 0, SEEK_SET) < 0 || archive_read_open_fd(a, s->archivefd, 1 << 16) != ARCHIVE_OK) {
                r = err(s, -EBADMSG, xasprintf("%s: %s", s->path, archive_error_string(a)));
                goto out;
        }
        while ((h = archive_read_next_header(a, &e)) == ARCHIVE_OK || h == ARCHIVE_WARN) {
                size_t at = ordinal++;
                if (!scan) {
                        while (next < s->n_members && s->members[next].ordinal < at)
                                next++;
                        if (next < s->n_members && s->members[next].ordinal == at && s->members[next].wanted &&
                            (r = store_member(s, a, e, &s->members[next])) < 0)
                                goto out;
                        continue;
                }
                char *name = member_name(archive_entry_pathname(e));
                if (!name)
                        continue;
                if (archive_entry_hardlink(e) || archive_entry_filetype(e) == AE_IFLNK) {
                        const char *t = archive_entry_hardlink(e);
                        char *target = t ? member_name(t) : link_target(name, archive_entry_symlink(e));
                        add_member(s, name, target, at);
                } else if (archive_entry_filetype(e) != AE_IFREG)
                        free(name);
                else if (streq(name, "index.json")) {
                        r = keep_json(s, a, name, &s->index);
                        free(name);
                } else if (streq(name, "manifest.json")) {
                        r = keep_json(s, a, name, &s->docker_manifest);
                        free(name);
                } else
                        add_member(s, name, NULL, at);
                if (r < 0)
                        goto out;
        }
        if (h != ARCHIVE_EOF)
                r = err(s, -EBADMSG, xasprintf("%s: %s", s->path, archive_error_string(a)));
out:
        archive_read_free(a);
        return r;
}

/* The archive as a regular file, opened without waiting (a FIFO would
 * block the open while the store's lock is held), and scanned. */
static int open_archive(struct source *s, const char *path)
{
        struct stat st;
        s->path = path;
        s->archivefd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (s->archivefd < 0)
                return err(s, -errno, xasprintf("%s: %s", path, strerror(errno)));
        if (fstat(s->archivefd, &st) < 0 || !S_ISREG(st.st_mode))
                return err(s, -EINVAL, xasprintf("%s: not a regular file", path));
        return read_archive(s, true);
}

/* Mark the member blob hex is in the archive for the next pass (none
 * when the store has it). */
static int want_blob(void *ctx, const char *hex)
{
        struct source *s = ctx;
        if (blob_has(s->st, hex))
                return 0;
        _cleanup_free_ char *name = xasprintf("blobs/sha256/%s", hex);
        struct member *m = member_file(s, name);
        if (!m)
                return err(s, -ENOENT, xasprintf("the image names blob sha256:%s, which the archive does not have", hex));
        m->wanted = !m->hex;
        return 0;
}

/* Bring blob hex from the archive: a pass for it alone (an index's
 * manifest, a nested index). */
static int fetch_from_archive(void *ctx, const char *hex)
{
        struct source *s = ctx;
        int r = want_blob(s, hex);
        return r < 0 ? r : read_archive(s, false);
}

static bool tag_matches(const char *repo_tag, const char *want)
{
        size_t a = strlen(repo_tag), b = strlen(want);
        return streq(repo_tag, want) || (a > b && repo_tag[a - b - 1] == '/' && streq(repo_tag + a - b, want));
}

/* docker save's manifest.json -> an OCI manifest, stored; its digest */
static int from_docker(struct source *s, const char *want, char ret_hex[DIGEST_HEX_SIZE], char **ret_name)
{
        json_t *list = s->docker_manifest, *pick = NULL, *d, *t;
        size_t i, k;

        if (!json_is_array(list))
                return err(s, -EBADMSG, xstrdup("not a docker-archive: no manifest.json list"));
        json_array_foreach(list, i, d) {
                json_array_foreach(json_object_get(d, "RepoTags"), k, t)
                        if (!pick && want && json_is_string(t) && tag_matches(json_string_value(t), want))
                                pick = d;
        }
        if (!pick && !want && json_array_size(list) == 1)
                pick = json_array_get(list, 0);
        if (!pick)
                return err(s, -ENOENT, want ? xasprintf("no image %s in the archive", want)
                                            : xstrdup("the archive holds several images: name one (docker-archive:FILE:NAME:TAG)"));
        const char *cfg_name = json_string_value(json_object_get(pick, "Config"));
        /* one pass stores the config and the layers, nothing else */
        struct member *part = cfg_name ? member_file(s, cfg_name) : NULL;
        if (part)
                part->wanted = !part->hex;
        json_array_foreach(json_object_get(pick, "Layers"), i, t)
                if ((part = json_string_value(t) ? member_file(s, json_string_value(t)) : NULL))
                        part->wanted = !part->hex;
        int r = read_archive(s, false);
        if (r < 0)
                return r;
        const char *cfg = cfg_name ? member_hex(s, cfg_name) : NULL;
        if (!cfg)
                return err(s, -ENOENT, xasprintf("manifest.json names config %s, which the archive does not have",
                                                 cfg_name ? cfg_name : "(none)"));
        json_t *layers = json_array();
        json_array_foreach(json_object_get(pick, "Layers"), i, t) {
                const char *ln = json_string_value(t), *hex = ln ? member_hex(s, ln) : NULL;
                struct stat sb;
                _cleanup_close_ int fd = hex ? blob_open(s->st, hex) : -1;
                if (fd < 0 || fstat(fd, &sb) < 0) {
                        json_decref(layers);
                        return err(s, -ENOENT, xasprintf("manifest.json names layer %s, which the archive does not have",
                                                         ln ? ln : "(none)"));
                }
                json_array_append_new(layers, json_pack("{s:s, s:s+, s:I}", "mediaType",
                                                        "application/vnd.oci.image.layer.v1.tar", "digest", "sha256:",
                                                        hex, "size", (json_int_t)sb.st_size));
        }
        struct stat cs;
        _cleanup_close_ int cfd = blob_open(s->st, cfg);
        if (cfd < 0 || fstat(cfd, &cs) < 0) {
                json_decref(layers);
                return err(s, -ENOENT, xstrdup("the config blob went missing"));
        }
        json_t *m = json_pack("{s:i, s:s, s:{s:s, s:s+, s:I}, s:o}", "schemaVersion", 2, "mediaType",
                              "application/vnd.oci.image.manifest.v1+json", "config", "mediaType",
                              "application/vnd.oci.image.config.v1+json", "digest", "sha256:", cfg, "size",
                              (json_int_t)cs.st_size, "layers", layers);
        _cleanup_free_ char *text = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        r = blob_put_buffer(s->st, text, strlen(text), ret_hex);
        if (r == -EDQUOT)
                return err(s, -EFBIG, too_large(s, r, "the image's manifest", ""));
        if (r < 0)
                return err(s, r, xasprintf("image store: %s", strerror(-r)));
        t = json_array_get(json_object_get(pick, "RepoTags"), 0);
        if (json_is_string(t))
                *ret_name = xstrdup(json_string_value(t));
        return 0;
}

static char *base_name(const char *path)
{
        _cleanup_free_ char *p = xstrdup(path);
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/')
                p[--n] = '\0';
        const char *b = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
        char *out = xstrdup(b);
        char *dot = strchr(out, '.');
        if (dot && dot != out)
                *dot = '\0';
        return out;
}

int source_fetch(struct image_store *st, const char *src, const struct image_limits *lim,
                 char ret_hex[DIGEST_HEX_SIZE], char **ret_name, char **ret_error)
{
        struct source s = { .st = st, .lim = lim, .dirfd = -1, .archivefd = -1, .error = ret_error };
        _cleanup_free_ char *path = NULL, *tag = NULL;
        const char *rest;
        int r;

        *ret_name = NULL;
        if ((rest = startswith(src, "oci:") ? src + 4 : NULL) ||
            (rest = startswith(src, "oci-archive:") ? src + 12 : NULL) ||
            (rest = startswith(src, "docker-archive:") ? src + 15 : NULL)) {
                if (split_ref(rest, &path, &tag) < 0)
                        return err(&s, -ENOENT, xasprintf("%s: no such file or directory", rest));
        } else
                return err(&s, -EINVAL, xasprintf("'%s': expected oci:DIR[:TAG], oci-archive:FILE[:TAG] or "
                                                  "docker-archive:FILE[:NAME:TAG] (hutch pulls nothing: "
                                                  "skopeo copy docker://REF oci:DIR:TAG, then import oci:DIR:TAG)", src));
        if (startswith(src, "oci:"))
                r = from_layout(&s, path, tag, ret_hex);
        else {
                r = open_archive(&s, path);
                if (r >= 0 && startswith(src, "docker-archive:"))
                        r = from_docker(&s, tag, ret_hex, ret_name);
                else if (r >= 0 && !s.index)
                        r = err(&s, -EBADMSG, xasprintf("%s: not an OCI archive (no index.json)", path));
                else if (r >= 0) {
                        r = oci_pick_manifest(st, s.index, tag, fetch_from_archive, &s, ret_hex, ret_error);
                        /* the config and every layer in one pass, then
                         * each checked present */
                        if (r >= 0)
                                r = fetch_parts(&s, ret_hex, want_blob);
                        if (r >= 0)
                                r = read_archive(&s, false);
                        if (r >= 0)
                                r = fetch_parts(&s, ret_hex, no_fetch);
                }
        }
        if (r >= 0 && !*ret_name) {
                _cleanup_free_ char *base = base_name(path);
                *ret_name = xasprintf("%s:%s", base, tag ? tag : IMAGE_DEFAULT_TAG);
        }
        if (s.dirfd >= 0)
                close(s.dirfd);
        if (s.archivefd >= 0)
                close(s.archivefd);
        json_decref(s.index);
        json_decref(s.docker_manifest);
        for (size_t i = 0; i < s.n_members; i++) {
                free(s.members[i].name);
                free(s.members[i].hex);
                free(s.members[i].link);
        }
        free(s.members);
        return r;
}
