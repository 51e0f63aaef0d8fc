/* du.c - a directory tree's disk usage, in slices (see du.h).
 *
 * One round is a depth-first walk with a stack of open directories
 * (at most DU_MAX_DEPTH + 1 fds at once); the stack survives between
 * calls, so a round spreads over as many slices as it needs. Files with
 * more than one link are remembered by (dev, ino) in a hash set for the
 * round, so that a job cannot make its usage look larger (or a build's
 * hard-linked tree count many times).
 *
 * A directory the walker may not open (its owner made it mode 000, and
 * we are that owner without CAP_DAC_OVERRIDE) is counted itself, and
 * its contents are not: the walk goes on past it. It once ended the
 * round with EACCES, which threw the round's sums away, so one such
 * directory blinded the whole watch. Its contents are what a job can
 * still hide; hutch-run(1) says so, next to deleted open files.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "limits/du.h"
#include "lib/util.h"

/* a linked inode: its (dev, ino + 1) */
struct seen {
        uint64_t dev, ino;
};

struct du {
        int root_fd;
        dev_t dev;
        DIR *stack[DU_MAX_DEPTH + 1];
        unsigned depth;                 /* dirs open on the stack; 0: between rounds */
        struct du_sample sum;
        struct seen *seen;              /* hash set of linked inodes; ino 0 = free */
        size_t seen_cap, seen_n;
};

static uint64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static size_t seen_hash(const struct seen *k, size_t cap)
{
        return (size_t)((k->ino * 0x9E3779B97F4A7C15ULL) ^ k->dev) % cap;
}

/* True when the inode was seen already this round. By (dev, ino): a
 * btrfs subvolume has a device number, and inode numbers, of its own. */
static bool seen_before(struct du *d, const struct stat *st)
{
        if (d->seen_n * 2 >= d->seen_cap) {
                size_t cap = d->seen_cap ? d->seen_cap * 2 : 256;
                struct seen *n = xcalloc(cap, sizeof(*n));
                for (size_t i = 0; i < d->seen_cap; i++)
                        if (d->seen[i].ino)
                                for (size_t j = seen_hash(&d->seen[i], cap);; j = (j + 1) % cap)
                                        if (!n[j].ino) {
                                                n[j] = d->seen[i];
                                                break;
                                        }
                free(d->seen);
                d->seen = n;
                d->seen_cap = cap;
        }
        struct seen key = { (uint64_t)st->st_dev, (uint64_t)st->st_ino + 1 };
        for (size_t j = seen_hash(&key, d->seen_cap);; j = (j + 1) % d->seen_cap) {
                if (d->seen[j].ino == key.ino && d->seen[j].dev == key.dev)
                        return true;
                if (!d->seen[j].ino) {
                        d->seen[j] = key;
                        d->seen_n++;
                        return false;
                }
        }
}

/* Whether name (in dirfd) is the root of a mount: not the scratch's to
 * count. A different st_dev alone does not say so: a btrfs subvolume,
 * which any user may create with an ioctl, has its own, and skipping it
 * hid all it held from the walk. Without STATX_ATTR_MOUNT_ROOT (Linux
 * < 5.8), the device number decides, as it did. */
static bool mount_root(int dirfd, const char *name, const struct stat *st, dev_t root_dev)
{
        struct statx sx;
        if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, 0, &sx) == 0 &&
            (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
        return st->st_dev != root_dev;
}

static void round_reset(struct du *d)
{
        while (d->depth)
                closedir(d->stack[--d->depth]);
        d->sum = (struct du_sample){ 0 };
        if (d->seen)
                memset(d->seen, 0, d->seen_cap * sizeof(*d->seen));
        d->seen_n = 0;
}

int du_new(const char *root, struct du **ret)
{
        struct stat st;
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        struct du *d = xcalloc(1, sizeof(*d));
        d->root_fd = fd;
        d->dev = st.st_dev;
        *ret = d;
        return 0;
}

struct du *du_free(struct du *d)
{
        if (!d)
                return NULL;
        round_reset(d);
        close(d->root_fd);
        free(d->seen);
        free(d);
        return NULL;
}

/* Push dir `name` of the top dir (or the root when the stack is empty). */
static int push(struct du *d, int parent, const char *name)
{
        if (d->depth > DU_MAX_DEPTH)
                return -ELOOP;
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        /* gone or replaced since readdir; or a dir we may not read (a job
         * can chmod 000 its own): its contents go uncounted, never the
         * rest of the round, whose sums an error would throw away */
        if (fd < 0 && (errno == EACCES || errno == EPERM)) {
                d->sum.unreadable++;
                return 0;
        }
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        DIR *dir = fdopendir(fd);
        if (!dir) {
                int r = -errno;
                close(fd);
                return r;
        }
        d->stack[d->depth++] = dir;
        d->sum.depth = MAX(d->sum.depth, d->depth - 1);
        return 0;
}

int du_step(struct du *d, uint64_t budget_ns, struct du_sample *ret)
{
        uint64_t deadline = budget_ns == UINT64_MAX ? UINT64_MAX : now_ns() + budget_ns;
        unsigned n = 0;
        int r;

        if (d->depth == 0) {
                round_reset(d);
                struct stat st;
                if (fstat(d->root_fd, &st) < 0)
                        return -errno;
                d->sum.bytes += (uint64_t)st.st_blocks * 512;
                r = push(d, d->root_fd, ".");
                if (r < 0)
                        return r;
        }
        while (d->depth) {
                if (++n % 64 == 0 && now_ns() >= deadline) {
                        *ret = d->sum;
                        return 0;
                }
                DIR *top = d->stack[d->depth - 1];
                errno = 0;
                struct dirent *de = readdir(top);
                if (!de) {
                        if (errno) {
                                r = -errno;
                                round_reset(d);
                                return r;
                        }
                        closedir(top);
                        d->depth--;
                        continue;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                struct stat st;
                if (fstatat(dirfd(top), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;       /* gone since readdir */
                d->sum.entries++;
                if (st.st_dev != d->dev && mount_root(dirfd(top), de->d_name, &st, d->dev))
                        continue;       /* a mount point: not ours to count */
                if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && seen_before(d, &st))
                        continue;
                d->sum.bytes += (uint64_t)st.st_blocks * 512;
                if (S_ISDIR(st.st_mode)) {
                        r = push(d, dirfd(top), de->d_name);
                        if (r < 0) {
                                *ret = d->sum;
                                round_reset(d);
                                return r;
                        }
                }
        }
        *ret = d->sum;
        return 1;
}
