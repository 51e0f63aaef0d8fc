/* blobstore.c - content-addressed blobs under one directory (blobstore.h).
 *
 * Data shape: a few hundred to a few hundred thousand blobs, written once
 * after each run (artifacts, changed files), read by `hutch cp`/`apply`,
 * removed only by gc. Writes dominate; a put is one streaming pass
 * (read, hash, write) so pipes work too.
 *
 * Why the host filesystem cannot be tricked here: the store directory is
 * opened once (O_DIRECTORY) and everything else is an *at() call on a
 * name we built from hex digits: two hex digits, then 62; no '/', no '..'.
 * Temporaries are created with O_EXCL | O_NOFOLLOW, so a pre-planted name
 * or symlink is never written through; blobs are opened O_NOFOLLOW, and
 * fan-out directories with O_NOFOLLOW | O_DIRECTORY. The store directory
 * is the user's own ($STATE is 0700), so nobody else races us in it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "record/blobstore.h"
#include "record/store.h"
#include "lib/fsutil.h"
#include "lib/util.h"

#define TMP_PREFIX ".tmp-"

/* A blob written in batch mode: its data is in the temporary, not yet
 * known to be on disk, and it has no name yet. */
struct staged {
        char tmp[64];
        char hex[DIGEST_HEX_SIZE];
};

struct blobstore {
        int dirfd;
        char tmp_prefix[48];    /* TMP_PREFIX "PID-START-": whose temporaries */
        bool batch;
        struct staged *staged;
        size_t n_staged, cap_staged;
};

/* Temporaries are named for their writer, ".tmp-PID-START-RANDOM" (START:
 * the process's start time in ticks since boot, 0 if /proc cannot tell),
 * so that gc can tell one a live writer owns from one a killed run left. */
static void set_tmp_prefix(struct blobstore *bs)
{
        uint64_t start = 0;
        pid_t pid = getpid();

        if (proc_start_time(pid, &start) < 0)
                start = 0;
        snprintf(bs->tmp_prefix, sizeof(bs->tmp_prefix), TMP_PREFIX "%d-%llu-", (int)pid,
                 (unsigned long long)start);
}

/* Whose is temporary name? 1: a process that still runs (or one we
 * cannot check), 0: its writer is gone (the pid is free, or now another
 * process: the start time differs), -1: not named so (an older hutch's). */
static int tmp_owner_alive(const char *name)
{
        const char *p = name + strlen(TMP_PREFIX);
        unsigned long long pid, start;
        uint64_t now_start;
        char *end;

        errno = 0;
        pid = strtoull(p, &end, 10);
        if (errno || end == p || *end != '-' || pid == 0 || pid > INT_MAX)
                return -1;
        p = end + 1;
        start = strtoull(p, &end, 10);
        if (errno || end == p || *end != '-')
                return -1;
        int r = proc_start_time((pid_t)pid, &now_start);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return 1;
        return start && now_start != start ? 0 : 1;
}

int blobstore_open_fd(int dirfd, struct blobstore **ret)
{
        struct blobstore *bs;
        int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);

        if (fd < 0)
                return -errno;
        bs = xcalloc(1, sizeof(*bs));
        bs->dirfd = fd;
        set_tmp_prefix(bs);
        *ret = bs;
        return 0;
}

int blobstore_open(const char *dir, struct blobstore **ret)
{
        _cleanup_close_ int fd = -1;
        int r;

        r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return blobstore_open_fd(fd, ret);
}

static void drop_staged(struct blobstore *bs)
{
        for (size_t i = 0; i < bs->n_staged; i++)
                (void)unlinkat(bs->dirfd, bs->staged[i].tmp, 0);
        bs->n_staged = 0;
}

struct blobstore *blobstore_free(struct blobstore *bs)
{
        if (bs) {
                drop_staged(bs);        /* never committed: never named */
                free(bs->staged);
                closep(&bs->dirfd);
                free(bs);
        }
        return NULL;
}

static const struct staged *find_staged(const struct blobstore *bs, const char *hex)
{
        for (size_t i = 0; i < bs->n_staged; i++)
                if (streq(bs->staged[i].hex, hex))
                        return &bs->staged[i];
        return NULL;
}

int blobstore_dirfd(const struct blobstore *bs)
{
        return bs->dirfd;
}

char *blobstore_relpath(const char *hex)
{
        if (!digest_hex_valid(hex))
                return NULL;
        return xasprintf("%.2s/%s", hex, hex + 2);
}

/* Give temporary tmp its hash name in fan-out dir fanfd, never replacing
 * a blob already there. 1 when named, 0 when the blob existed (tmp is
 * dropped), -errno otherwise (tmp left for the caller). */
static int name_blob(struct blobstore *bs, int fanfd, const char *tmp, const char *hex)
{
        int r = renameat2(bs->dirfd, tmp, fanfd, hex + 2, RENAME_NOREPLACE);
        if (r < 0 && errno == EINVAL) {
                /* no RENAME_NOREPLACE (NFS, old kernels): a hard link
                 * never replaces either; then drop the tmp */
                r = linkat(bs->dirfd, tmp, fanfd, hex + 2, 0);
                if (r == 0)
                        (void)unlinkat(bs->dirfd, tmp, 0);
        }
        if (r == 0)
                return 1;
        if (errno == EEXIST) {
                (void)unlinkat(bs->dirfd, tmp, 0);      /* dedup: keep the old one */
                return 0;
        }
        return -errno;
}

/* Open (making it if needed) the fan-out dir of hex; *ret_new says it
 * was made, so its name still needs a sync of the store dir. */
static int open_fan(struct blobstore *bs, const char *hex, bool *ret_new)
{
        char fan[3] = { hex[0], hex[1], '\0' };
        *ret_new = mkdirat(bs->dirfd, fan, 0700) == 0;
        if (!*ret_new && errno != EEXIST)
                return -errno;
        int fd = openat(bs->dirfd, fan, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Batch mode: remember tmp under hex (or drop it, already stored). */
static int stage(struct blobstore *bs, const char *tmp, const char *hex)
{
        if (blobstore_has(bs, hex)) {
                (void)unlinkat(bs->dirfd, tmp, 0);
                return 0;
        }
        if (bs->n_staged == bs->cap_staged) {
                bs->cap_staged = bs->cap_staged ? 2 * bs->cap_staged : 64;
                bs->staged = xrealloc(bs->staged, bs->cap_staged * sizeof(*bs->staged));
        }
        struct staged *st = &bs->staged[bs->n_staged++];
        snprintf(st->tmp, sizeof(st->tmp), "%s", tmp);
        memcpy(st->hex, hex, DIGEST_HEX_SIZE);
        return 1;
}

int blobstore_put_fd(struct blobstore *bs, int fd, uint64_t max_bytes,
                     char ret_hex[DIGEST_HEX_SIZE], uint64_t *ret_size)
{
        char tmp[64], hex[DIGEST_HEX_SIZE];
        _cleanup_close_ int out = -1, fanfd = -1;
        struct digest d;
        bool new_fan;
        int64_t n;
        int r;

        out = fs_create_unique(bs->dirfd, bs->tmp_prefix, 'f', 0600, NULL, tmp, sizeof(tmp));
        if (out < 0)
                return out;

        digest_init(&d);
        n = fs_copy_digest(fd, out, &d, max_bytes);
        if (n < 0) {
                r = (int)n;
                goto fail;
        }
        digest_final_hex(&d, hex);

        /* data on disk before the name points at it: here, or for a batch
         * with one syncfs at commit */
        if (fchmod(out, 0400) < 0 || (!bs->batch && fsync(out) < 0)) {
                r = -errno;
                goto fail;
        }
        if (bs->batch)
                r = stage(bs, tmp, hex);
        else {
                r = fanfd = open_fan(bs, hex, &new_fan);
                if (r < 0)
                        goto fail;
                if (new_fan)
                        (void)fsync(bs->dirfd);         /* the new fan-out dir's name */
                r = name_blob(bs, fanfd, tmp, hex);
                if (r < 0)
                        goto fail;
                if (r == 1)
                        (void)fsync(fanfd);
        }
        memcpy(ret_hex, hex, DIGEST_HEX_SIZE);
        if (ret_size)
                *ret_size = (uint64_t)n;
        return r;

fail:
        (void)unlinkat(bs->dirfd, tmp, 0);
        return r;
}

int blobstore_open_blob(struct blobstore *bs, const char *hex)
{
        _cleanup_free_ char *rel = blobstore_relpath(hex);
        int fd;

        if (!rel)
                return -EINVAL;
        const struct staged *st = find_staged(bs, hex);
        if (st) {
                fd = openat(bs->dirfd, st->tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                return fd < 0 ? -errno : fd;
        }
        fd = fs_open_beneath(bs->dirfd, rel, O_RDONLY, 0);
        if (fd < 0)
                return fd;
        return fd;
}

int blobstore_open_verified(struct blobstore *bs, const char *hex)
{
        char got[DIGEST_HEX_SIZE];
        int fd = blobstore_open_blob(bs, hex);
        if (fd < 0)
                return fd;
        /* the name is the content's hash: anything else is damage (or
         * someone else's write into the store), never a blob to hand on */
        int r = digest_fd(fd, got);
        if (r == 0 && !streq(got, hex))
                r = -EBADMSG;
        if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

bool blobstore_has(struct blobstore *bs, const char *hex)
{
        if (find_staged(bs, hex))
                return true;
        _cleanup_close_ int fd = blobstore_open_blob(bs, hex);
        return fd >= 0;
}

void blobstore_batch_begin(struct blobstore *bs)
{
        bs->batch = true;
}

static int cmp_staged(const void *a, const void *b)
{
        return strcmp(((const struct staged *)a)->hex, ((const struct staged *)b)->hex);
}

int blobstore_batch_commit(struct blobstore *bs)
{
        int r = 0;

        bs->batch = false;
        if (bs->n_staged == 0)
                return 0;
        /* One flush for every staged blob's data: the same guarantee as
         * an fsync per blob (no name before its data is on disk), at the
         * cost of one call instead of thousands. */
        if (syncfs(bs->dirfd) < 0) {
                r = -errno;
                drop_staged(bs);
                return r;
        }
        /* by hash, so each fan-out directory is opened and synced once */
        qsort(bs->staged, bs->n_staged, sizeof(*bs->staged), cmp_staged);
        bool any_new_fan = false;
        size_t i = 0, done = 0;
        while (i < bs->n_staged && r == 0) {
                const char *first = bs->staged[i].hex;
                bool new_fan;
                _cleanup_close_ int fanfd = open_fan(bs, first, &new_fan);
                if (fanfd < 0) {
                        r = fanfd;
                        break;
                }
                any_new_fan |= new_fan;
                for (; i < bs->n_staged && memcmp(bs->staged[i].hex, first, 2) == 0; i++) {
                        r = name_blob(bs, fanfd, bs->staged[i].tmp, bs->staged[i].hex);
                        if (r < 0)
                                break;
                        r = 0;
                        done = i + 1;
                }
                (void)fsync(fanfd);
        }
        if (any_new_fan)
                (void)fsync(bs->dirfd);
        /* what could not be named is dropped, never left half-made */
        memmove(bs->staged, bs->staged + done, (bs->n_staged - done) * sizeof(*bs->staged));
        bs->n_staged -= done;
        drop_staged(bs);
        return r;
}

static bool is_hex(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s[n] == '\0';
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int blobstore_gc(struct blobstore *bs, const char *const *keep, size_t n_keep)
{
        _cleanup_free_ const char **sorted = NULL;
        _cleanup_strv_ char **fans = NULL;
        int removed = 0, r;
        time_t now = time(NULL);

        sorted = xcalloc(n_keep ? n_keep : 1, sizeof(char *));
        if (n_keep > 0) {
                memcpy(sorted, keep, n_keep * sizeof(char *));
                qsort(sorted, n_keep, sizeof(char *), cmp_str);
        }

        r = fs_list_dir(bs->dirfd, &fans);
        if (r < 0)
                return r;
        for (char **f = fans; *f; f++) {
                _cleanup_strv_ char **blobs = NULL;
                _cleanup_close_ int fanfd = -1;
                struct stat st;

                if (startswith(*f, TMP_PREFIX)) {
                        /* a killed run's (its writer is gone) at once; one
                         * of an older hutch's naming after an hour */
                        int alive = tmp_owner_alive(*f);
                        if (fstatat(bs->dirfd, *f, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                            (alive == 0 || (alive < 0 && st.st_mtime + 3600 < now)))
                                (void)unlinkat(bs->dirfd, *f, 0);
                        continue;
                }
                if (!is_hex(*f, 2))
                        continue;
                fanfd = openat(bs->dirfd, *f, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fanfd < 0)
                        continue;
                r = fs_list_dir(fanfd, &blobs);
                if (r < 0)
                        return r;
                for (char **b = blobs; *b; b++) {
                        char hex[DIGEST_HEX_SIZE];
                        const char *key = hex;

                        if (!is_hex(*b, 62))
                                continue;
                        snprintf(hex, sizeof(hex), "%s%s", *f, *b);
                        if (bsearch(&key, sorted, n_keep, sizeof(char *), cmp_str))
                                continue;
                        if (unlinkat(fanfd, *b, 0) < 0) {
                                if (errno == ENOENT)
                                        continue;
                                return -errno;
                        }
                        removed++;
                }
                (void)unlinkat(bs->dirfd, *f, AT_REMOVEDIR);   /* only if empty */
        }
        return removed;
}
