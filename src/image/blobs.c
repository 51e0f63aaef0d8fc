/* blobs.c - the image store's blobs: blobs/sha256/<hex>, each written
 * into tmp/ while it is hashed, fsync'ed, and given its name only when
 * the hash is the digest the image named it by. A name in blobs/ is
 * therefore always a verified blob; nothing reads a blob's bytes before
 * that (layers are unpacked from the named blob, configs parsed from it).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image-internal.h"
#include "lib/fsutil.h"
#include "lib/util.h"

const char *digest_ref_hex(const char *s)
{
        if (!s || !startswith(s, "sha256:") || !digest_hex_valid(s + 7))
                return NULL;
        return s + 7;
}

int blob_begin(struct image_store *st, struct blob_writer *w, uint64_t max)
{
        memset(w, 0, sizeof(*w));
        w->st = st;
        w->fd = -1;
        w->max = max;
        int r = fs_random_name("blob-", w->tmpname, sizeof(w->tmpname));
        if (r < 0)
                return r;
        w->fd = openat(st->tmpfd, w->tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (w->fd < 0)
                return -errno;
        digest_init(&w->digest);
        return 0;
}

int blob_write(struct blob_writer *w, const void *buf, size_t n)
{
        if (w->max && w->size + n > w->max)
                return -EFBIG;
        /* charged before the write: the store never holds more than the
         * budget, whatever the bytes are (a sparse member's zeros too) */
        if (w->st->budget && w->st->charged + n > w->st->budget)
                return -EDQUOT;
        w->st->charged += n;
        int r = write_all(w->fd, buf, n);
        if (r < 0)
                return r;
        digest_update(&w->digest, buf, n);
        w->size += n;
        return 0;
}

void blob_import_begin(struct image_store *st, uint64_t budget)
{
        st->charged = 0;
        st->budget = budget;
        strv_free(st->new_blobs);
        strv_free(st->new_layers);
        st->new_blobs = st->new_layers = NULL;
        st->n_new_blobs = st->n_new_layers = 0;
}

void blob_note_new_layer(struct image_store *st, const char *hex)
{
        st->new_layers = strv_push(st->new_layers, &st->n_new_layers, hex);
}

void blob_import_end(struct image_store *st, bool refused)
{
        for (size_t i = 0; refused && i < st->n_new_layers; i++)
                (void)fs_remove_tree_at(st->layersfd, st->new_layers[i]);
        for (size_t i = 0; refused && i < st->n_new_blobs; i++)
                (void)unlinkat(st->blobsfd, st->new_blobs[i], 0);
        blob_import_begin(st, 0);
}

void blob_abort(struct image_store *st, struct blob_writer *w)
{
        if (w->fd >= 0) {
                close(w->fd);
                w->fd = -1;
                (void)unlinkat(st->tmpfd, w->tmpname, 0);
        }
}

int blob_commit(struct image_store *st, struct blob_writer *w, const char *expect_hex,
                char ret_hex[DIGEST_HEX_SIZE], bool *ret_new)
{
        char hex[DIGEST_HEX_SIZE];

        digest_final_hex(&w->digest, hex);
        if (expect_hex && !streq(hex, expect_hex)) {
                blob_abort(st, w);
                return -EBADMSG;
        }
        if (fsync(w->fd) < 0) {
                int e = -errno;
                blob_abort(st, w);
                return e;
        }
        close(w->fd);
        w->fd = -1;
        bool fresh = true;
        if (renameat2(st->tmpfd, w->tmpname, st->blobsfd, hex, RENAME_NOREPLACE) < 0) {
                int e = errno;
                (void)unlinkat(st->tmpfd, w->tmpname, 0);
                if (e != EEXIST)
                        return -e;
                fresh = false;
        }
        if (fresh)
                st->new_blobs = strv_push(st->new_blobs, &st->n_new_blobs, hex);
        if (ret_hex)
                memcpy(ret_hex, hex, DIGEST_HEX_SIZE);
        if (ret_new)
                *ret_new = fresh;
        return 0;
}

int blob_put_fd(struct image_store *st, int fd, const char *expect_hex, uint64_t max, bool *ret_new)
{
        struct blob_writer w;
        char buf[1 << 16];
        ssize_t n;

        if (ret_new)
                *ret_new = false;
        if (blob_has(st, expect_hex))
                return 0;
        int r = blob_begin(st, &w, max);
        if (r < 0)
                return r;
        while ((n = read(fd, buf, sizeof(buf))) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        blob_abort(st, &w);
                        return r;
                }
                r = blob_write(&w, buf, (size_t)n);
                if (r < 0) {
                        blob_abort(st, &w);
                        return r;
                }
        }
        return blob_commit(st, &w, expect_hex, NULL, ret_new);
}

int blob_put_buffer(struct image_store *st, const void *buf, size_t n, char ret_hex[DIGEST_HEX_SIZE])
{
        struct blob_writer w;
        int r = blob_begin(st, &w, 0);
        if (r < 0)
                return r;
        r = blob_write(&w, buf, n);
        if (r < 0) {
                blob_abort(st, &w);
                return r;
        }
        return blob_commit(st, &w, NULL, ret_hex, NULL);
}

bool blob_has(struct image_store *st, const char *hex)
{
        struct stat s;
        return digest_hex_valid(hex) && fstatat(st->blobsfd, hex, &s, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISREG(s.st_mode);
}

int blob_open(struct image_store *st, const char *hex)
{
        if (!digest_hex_valid(hex))
                return -EINVAL;
        int fd = openat(st->blobsfd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int blob_read_json(struct image_store *st, const char *hex, json_t **ret)
{
        _cleanup_close_ int fd = blob_open(st, hex);
        if (fd < 0)
                return fd;
        struct stat s;
        if (fstat(fd, &s) < 0)
                return -errno;
        if ((uint64_t)s.st_size > IMAGE_JSON_MAX)
                return -EFBIG;
        _cleanup_free_ char *text = xmalloc((size_t)s.st_size + 1);
        ssize_t n = read_full(fd, text, (size_t)s.st_size);
        if (n < 0)
                return (int)n;
        json_t *j = json_loadb(text, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
        if (!j)
                return -EBADMSG;
        *ret = j;
        return 0;
}
