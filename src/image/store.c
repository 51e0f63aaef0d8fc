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
        strv_free(st->new_blobs);
        strv_free(st->new_layers);
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

int image_store_use(const char *dir)
{
        _cleanup_free_ char *path = xasprintf("%s/use", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        while (flock(fd, LOCK_SH) < 0)
                if (errno != EINTR) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
        return fd;
}

/* gc's side of "use": exclusive, without waiting. An fd, or -EBUSY while
 * a run holds it. */
int store_use_exclusive(struct image_store *st)
{
        int fd = openat(st->dirfd, "use", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int e = errno == EWOULDBLOCK ? -EBUSY : -errno;
                close(fd);
                return e;
        }
        return fd;
}
