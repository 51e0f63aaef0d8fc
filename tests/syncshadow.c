/* syncshadow.c - an LD_PRELOAD library that keeps, for every regular file
 * under one directory, its content as of its last fsync(2) or
 * fdatasync(2) (or sync_file_range(2) and a later flush, below): what
 * a power loss would have left of it.
 *
 * SYNCSHADOW_WATCH=DIR  the directory watched (an absolute, resolved path)
 * SYNCSHADOW_DIR=DIR    where the copies go: the file DIR/a/b is kept as
 *                       a%b (so the tree is flat); .lock is the shim's own
 *
 * On every fsync or fdatasync of a regular file below the watched
 * directory, the file's whole content is copied (through
 * /proc/self/fd/N, so write-only descriptors work too) to the shadow
 * directory, before the real call: nothing else in the process writes in
 * between, so the copy is exactly what the sync makes durable. A file
 * never synced has no copy: it would be gone. Copies are made under an
 * flock on SYNCSHADOW_DIR/.lock and renamed into place, so concurrent
 * processes never leave a torn copy.
 *
 * sync_file_range(2) with SYNC_FILE_RANGE_WRITE and _WAIT_AFTER over the
 * whole file (offset 0, nbytes 0) leaves the content on the device but
 * in its volatile cache, not yet durable: it is copied to
 * SYNCSHADOW_DIR/.pending. The next fsync or fdatasync of a regular file
 * on the same filesystem (the watched directory's st_dev) flushes the
 * device, as ext4 and XFS do for every fsync of a regular file: every
 * pending copy then becomes the file's durable copy. A directory's fsync
 * does not (on ext4 it commits the journal only when there is something
 * to commit), nor does a sync_file_range() of a part, or without waiting.
 * A file's own later fsync supersedes its pending copy.
 *
 * unlink(2) and unlinkat(2) of a watched file drop its copy (on ext4, as
 * here, the next sync of anything commits the journal that holds the
 * unlink; a rollback journal that SQLite deleted must not come back).
 *
 * What it does not model, on purpose: other directory changes (a file is
 * taken to exist once synced, as if its directory had been synced too;
 * renames are not followed) and
 * the page-cache writeback the kernel may do on its own (it can only make
 * more survive, never less). So a test that finds a run missing from the
 * shadow found a real window; it is exact for one writer at a time.
 *
 * Used by tests/integration/durability.bats with tests/hutch-dynamic
 * (a hutch-static build would ignore LD_PRELOAD).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether fd is a regular file below the watched directory; its
 * flattened name (a/b as a%b) in flat. */
static int watched(int fd, const char *watch, char *flat, size_t size)
{
        char link[64], path[PATH_MAX];
        struct stat st;
        size_t wl;
        ssize_t n;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof(path) - 1);
        if (n < 0)
                return 0;
        path[n] = '\0';
        wl = strlen(watch);
        if (strncmp(path, watch, wl) != 0 || path[wl] != '/' || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        snprintf(flat, size, "%s", path + wl + 1);
        for (char *c = flat; *c; c++)
                if (*c == '/')
                        *c = '%';
        return 1;
}

/* Copy fd's content to dst (through a temporary in dir, renamed). */
static void copy_file(int fd, const char *dir, const char *dst)
{
        char link[64], tmp[PATH_MAX];

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        snprintf(tmp, sizeof(tmp), "%s/.tmp-%d", dir, (int)getpid());
        int in = open(link, O_RDONLY | O_CLOEXEC);
        int outfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (in >= 0 && outfd >= 0) {
                char buf[65536];
                ssize_t r;
                int ok = 1;
                while ((r = read(in, buf, sizeof(buf))) > 0)
                        if (write(outfd, buf, (size_t)r) != r) {
                                ok = 0;
                                break;
                        }
                if (r < 0)
                        ok = 0;
                if (close(outfd) < 0)
                        ok = 0;
                outfd = -1;
                if (ok)
                        (void)rename(tmp, dst);
                else
                        (void)unlink(tmp);
        }
        if (in >= 0)
                close(in);
        if (outfd >= 0)
                close(outfd);
}

static int lock_shadow(const char *dir)
{
        char lockp[PATH_MAX];

        snprintf(lockp, sizeof(lockp), "%s/.lock", dir);
        int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lk >= 0 && flock(lk, LOCK_EX) < 0) {
                close(lk);
                return -1;
        }
        return lk;
}

/* The device's flush: every pending copy becomes durable (called with
 * the lock held). */
static void flush_pending(const char *dir)
{
        char pending[PATH_MAX], from[PATH_MAX], to[PATH_MAX];

        snprintf(pending, sizeof(pending), "%s/.pending", dir);
        DIR *d = opendir(pending);
        if (!d)
                return;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                snprintf(from, sizeof(from), "%s/%s", pending, de->d_name);
                snprintf(to, sizeof(to), "%s/%s", dir, de->d_name);
                (void)rename(from, to);
        }
        closedir(d);
}

/* fsync/fdatasync of fd: its content is durable, and a regular file's
 * sync on the watched filesystem flushes the device. */
static void copy_to_shadow(int fd)
{
        const char *watch = getenv("SYNCSHADOW_WATCH"), *dir = getenv("SYNCSHADOW_DIR");
        char flat[PATH_MAX], dst[PATH_MAX];
        struct stat st, wst;
        int saved = errno;

        if (!watch || !dir)
                return;
        int own = watched(fd, watch, flat, sizeof(flat));
        int flush = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && stat(watch, &wst) == 0 &&
                    st.st_dev == wst.st_dev;
        if (!own && !flush)
                goto out;
        int lk = lock_shadow(dir);
        if (lk < 0)
                goto out;
        if (own) {
                snprintf(dst, sizeof(dst), "%s/.pending/%s", dir, flat);
                (void)unlink(dst);      /* superseded by this sync */
        }
        if (flush)
                flush_pending(dir);
        if (own) {
                snprintf(dst, sizeof(dst), "%s/%s", dir, flat);
                copy_file(fd, dir, dst);
        }
        close(lk);
out:
        errno = saved;
}

/* sync_file_range(2) of a whole watched file, waited for: on the device,
 * not yet durable. */
static void copy_to_pending(int fd, off64_t offset, off64_t nbytes, unsigned int flags)
{
        const char *watch = getenv("SYNCSHADOW_WATCH"), *dir = getenv("SYNCSHADOW_DIR");
        char flat[PATH_MAX], pending[PATH_MAX], dst[PATH_MAX];
        int saved = errno;

        if (!watch || !dir || offset != 0 || nbytes != 0 ||
            (flags & (SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)) !=
                    (SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) ||
            !watched(fd, watch, flat, sizeof(flat)))
                goto out;
        int lk = lock_shadow(dir);
        if (lk < 0)
                goto out;
        snprintf(pending, sizeof(pending), "%s/.pending", dir);
        (void)mkdir(pending, 0700);
        snprintf(dst, sizeof(dst), "%s/%s", pending, flat);
        copy_file(fd, dir, dst);
        close(lk);
out:
        errno = saved;
}

/* Drop the copy of path (relative to dirfd) if it is a watched file. */
static void forget(int dirfd, const char *path)
{
        const char *watch = getenv("SYNCSHADOW_WATCH"), *dir = getenv("SYNCSHADOW_DIR");
        char full[PATH_MAX], flat[PATH_MAX], dst[PATH_MAX], link[64];
        size_t wl;
        int saved = errno;

        if (!watch || !dir || !path)
                return;
        if (path[0] == '/')
                snprintf(full, sizeof(full), "%s", path);
        else {
                char base[PATH_MAX];
                ssize_t n;
                if (dirfd == AT_FDCWD)
                        snprintf(link, sizeof(link), "/proc/self/cwd");
                else
                        snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
                n = readlink(link, base, sizeof(base) - 1);
                if (n < 0)
                        goto out;
                base[n] = '\0';
                snprintf(full, sizeof(full), "%s/%s", base, path);
        }
        wl = strlen(watch);
        if (strncmp(full, watch, wl) != 0 || full[wl] != '/')
                goto out;
        snprintf(flat, sizeof(flat), "%s", full + wl + 1);
        for (char *c = flat; *c; c++)
                if (*c == '/')
                        *c = '%';
        snprintf(dst, sizeof(dst), "%s/%s", dir, flat);
        (void)unlink(dst);
        snprintf(dst, sizeof(dst), "%s/.pending/%s", dir, flat);
        (void)unlink(dst);
out:
        errno = saved;
}

int unlink(const char *path)
{
        static int (*real)(const char *);
        if (!real)
                real = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
        int r = real(path);
        if (r == 0)
                forget(AT_FDCWD, path);
        return r;
}

int unlinkat(int dirfd, const char *path, int flags)
{
        static int (*real)(int, const char *, int);
        if (!real)
                real = (int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
        int r = real(dirfd, path, flags);
        if (r == 0 && !(flags & AT_REMOVEDIR))
                forget(dirfd, path);
        return r;
}

int fsync(int fd)
{
        static int (*real)(int);
        if (!real)
                real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
        copy_to_shadow(fd);
        return real(fd);
}

int fdatasync(int fd)
{
        static int (*real)(int);
        if (!real)
                real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
        copy_to_shadow(fd);
        return real(fd);
}

int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags)
{
        static int (*real)(int, off64_t, off64_t, unsigned int);
        if (!real)
                real = (int (*)(int, off64_t, off64_t, unsigned int))dlsym(RTLD_NEXT, "sync_file_range");
        int r = real(fd, offset, nbytes, flags);
        if (r == 0)
                copy_to_pending(fd, offset, nbytes, flags);
        return r;
}
