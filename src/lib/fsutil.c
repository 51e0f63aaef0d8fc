/* fsutil.c - symlink-proof, beneath-a-root file operations (fsutil.h).
 *
 * Why these cannot be tricked: every lookup starts from a directory fd
 * the caller trusts and either asks the kernel to refuse symlinks and
 * escapes for the whole walk (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), or walks one component at
 * a time with O_NOFOLLOW | O_DIRECTORY, so a component that is (or is
 * swapped for) a symlink fails with ELOOP/ENOTDIR instead of being
 * followed. ".." never appears (fs_path_valid rejects it). What is then
 * done to a final component uses *at() calls that act on the link itself.
 * A concurrent writer can still swap a file for another between two
 * calls; callers that care check the fd they got (fstat), not the name.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "lib/digest.h"
#include "lib/fsutil.h"
#include "lib/util.h"

bool fs_path_valid(const char *path)
{
        const char *p = path;

        if (!path || !*path || *path == '/' || strlen(path) >= PATH_MAX)
                return false;
        while (*p) {
                const char *slash = strchr(p, '/');
                size_t len = slash ? (size_t)(slash - p) : strlen(p);

                if (len == 0 || len > NAME_MAX)
                        return false;
                if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!slash)
                        break;
                p = slash + 1;
                if (!*p)
                        return false;   /* trailing slash */
        }
        return true;
}

int fs_path_compare(const char *a, const char *b)
{
        const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

        while (*x && *x == *y) {
                x++;
                y++;
        }
        if (*x == *y)
                return 0;
        /* map '/' below every byte but NUL so a/b sorts right after a */
        unsigned cx = *x == '/' ? 1 : *x ? (unsigned)*x + 1 : 0;
        unsigned cy = *y == '/' ? 1 : *y ? (unsigned)*y + 1 : 0;
        return cx < cy ? -1 : 1;
}

/* errno of a failed open of dirfd/name, with ENOTDIR turned into ELOOP
 * when name is a symlink (O_DIRECTORY | O_NOFOLLOW on a symlink says
 * ENOTDIR): callers tell "a symlink was in the way" from "a file was". */
static int symlink_errno(int dirfd, const char *name)
{
        int e = errno;
        struct stat st;

        if (e == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode))
                return -ELOOP;
        return -e;
}

static int open_walk(int rootfd, const char *path, int flags, mode_t mode)
{
        _cleanup_free_ char *copy = xstrdup(path);
        _cleanup_close_ int cur = -1;
        char *p = copy;

        for (;;) {
                char *slash = strchr(p, '/');
                int dirfd = cur >= 0 ? cur : rootfd;
                int fd;

                if (!slash) {
                        fd = openat(dirfd, p, flags | O_NOFOLLOW | O_CLOEXEC, mode);
                        return fd < 0 ? symlink_errno(dirfd, p) : fd;
                }
                *slash = '\0';
                fd = openat(dirfd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return symlink_errno(dirfd, p);
                closep(&cur);
                cur = fd;
                p = slash + 1;
        }
}

int fs_open_beneath(int rootfd, const char *path, int flags, mode_t mode)
{
        struct open_how how = {
                .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
                .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        int fd;

        if (path && !*path) {
                fd = openat(rootfd, ".", (flags & ~O_NOFOLLOW) | O_CLOEXEC, mode);
                return fd < 0 ? -errno : fd;
        }
        if (!fs_path_valid(path))
                return -EINVAL;
        fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
        if (fd >= 0)
                return fd;
        /* ENOSYS: kernel < 5.6; EPERM: a seccomp filter that does not know
         * openat2. Either way the per-component walk gives the same
         * guarantees, one openat() per level. ENOTDIR: let the walk find
         * out whether a symlink (ELOOP) or a file was in the way. */
        if (errno != ENOSYS && errno != EPERM && errno != ENOTDIR)
                return -errno;
        return open_walk(rootfd, path, flags, mode);
}

int fs_open_parent(int rootfd, const char *path, const char **ret_name)
{
        const char *slash;
        int fd;

        if (!fs_path_valid(path))
                return -EINVAL;
        slash = strrchr(path, '/');
        if (!slash) {
                fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                *ret_name = path;
                return fd;
        }
        _cleanup_free_ char *dir = strndup(path, (size_t)(slash - path));
        if (!dir)
                return -ENOMEM;
        fd = fs_open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        *ret_name = slash + 1;
        return fd;
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int fs_list_dir(int dirfd, char ***ret_names)
{
        DIR *d;
        struct dirent *de;
        char **names = NULL;
        size_t n = 0, cap = 0;
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                int e = -errno;
                close(fd);
                return e;
        }
        errno = 0;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n + 2 > cap) {
                        cap = cap ? cap * 2 : 16;
                        names = xrealloc(names, cap * sizeof(char *));
                }
                names[n++] = xstrdup(de->d_name);
                errno = 0;
        }
        if (errno != 0) {
                int e = -errno;
                closedir(d);
                if (names) {
                        names[n] = NULL;
                        strv_free(names);
                }
                return e;
        }
        closedir(d);
        if (!names)
                names = xcalloc(1, sizeof(char *));
        names[n] = NULL;
        qsort(names, n, sizeof(char *), cmp_names);
        *ret_names = names;
        return (int)n;
}

int fs_readlink_at(int dirfd, const char *name, char **ret_target)
{
        size_t cap = 256;

        for (;;) {
                _cleanup_free_ char *buf = xmalloc(cap);
                ssize_t r = readlinkat(dirfd, name, buf, cap);
                if (r < 0)
                        return -errno;
                if ((size_t)r < cap) {
                        buf[r] = '\0';
                        *ret_target = TAKE_PTR(buf);
                        return 0;
                }
                if (cap >= PATH_MAX * 2)
                        return -ENAMETOOLONG;
                cap *= 2;
        }
}

int fs_remove_tree_at(int dirfd, const char *name)
{
        _cleanup_strv_ char **names = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (unlinkat(dirfd, name, 0) == 0)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        /* O_NOFOLLOW | O_DIRECTORY: if name was swapped for a symlink since
         * unlinkat, this fails instead of descending into its target. */
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == EACCES) {
                /* a job may leave a directory without read permission (mode
                 * 000), which not even opening it passes: chmod it through
                 * an O_PATH fd (which pins the directory itself, never a
                 * symlink swapped in) and try again */
                _cleanup_close_ int pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                char proc[64];
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
                if (pfd >= 0 && fstat(pfd, &st) == 0 && chmod(proc, (st.st_mode & 07777) | 0700) == 0)
                        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                else
                        errno = EACCES;
        }
        if (fd < 0)
                return -errno;
        /* a job may leave a directory without write or search permission;
         * it is ours and going away, so let us empty it */
        if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
                (void)fchmod(fd, (st.st_mode & 07777) | 0700);
        r = fs_list_dir(fd, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                r = fs_remove_tree_at(fd, *n);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
                return -errno;
        return 0;
}

static uint64_t random_u64(void)
{
        uint64_t v;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v))
                return v;
        return now_monotonic_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&v;
}

int fs_random_name(const char *prefix, char *buf, size_t len)
{
        int r = snprintf(buf, len, "%s%016llx", prefix, (unsigned long long)random_u64());
        return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

int fs_create_unique(int dirfd, const char *prefix, char kind, mode_t mode,
                     const char *target, char *name_buf, size_t name_len)
{
        for (int attempt = 0; attempt < 100; attempt++) {
                int r = fs_random_name(prefix, name_buf, name_len);
                if (r < 0)
                        return r;
                switch (kind) {
                case 'f':
                        r = openat(dirfd, name_buf,
                                   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                        if (r >= 0)
                                return r;
                        break;
                case 'd':
                        if (mkdirat(dirfd, name_buf, mode) == 0)
                                return 0;
                        break;
                case 's':
                        if (symlinkat(target, dirfd, name_buf) == 0)
                                return 0;
                        break;
                default:
                        return -EINVAL;
                }
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

/* The dense copy: for pipes, and for files that cannot say where their
 * holes are. */
static int64_t copy_dense(int in_fd, int out_fd, struct digest *d, uint64_t max_bytes)
{
        const size_t bufsize = 128 * 1024;
        _cleanup_free_ char *buf = xmalloc(bufsize);
        int64_t total = 0;

        for (;;) {
                ssize_t n = read(in_fd, buf, bufsize);
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return total;
                total += n;
                if (max_bytes && (uint64_t)total > max_bytes)
                        return -EFBIG;
                if (d)
                        digest_update(d, buf, (size_t)n);
                if (out_fd >= 0) {
                        r = write_all(out_fd, buf, (size_t)n);
                        if (r < 0)
                                return r;
                }
        }
}

/* Feed n zero bytes (a hole) to d. */
static void digest_zeros(struct digest *d, uint64_t n)
{
        static const char zeros[64 * 1024];
        while (d && n) {
                size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
                digest_update(d, zeros, k);
                n -= k;
        }
}

/* The sparse copy: only the data extents are read and written; a hole
 * in in_fd stays a hole in out_fd (an lseek past it, then ftruncate to
 * the full length), so a file that claims 3 GB but holds 4 KB costs
 * 4 KB wherever it is copied. The hash still covers the zeros, so a
 * blob's name does not depend on how it was stored. The budget
 * (max_bytes) counts the file's length, holes included, and is checked
 * before any hole is hashed: hashing 8 EB of zeros would never end. */
static int64_t copy_sparse(int in_fd, int out_fd, struct digest *d, uint64_t max_bytes,
                           off_t pos, off_t end)
{
        const size_t bufsize = 128 * 1024;
        _cleanup_free_ char *buf = xmalloc(bufsize);
        off_t start = pos;

        if (max_bytes && (uint64_t)(end - pos) > max_bytes)
                return -EFBIG;
        while (pos < end) {
                off_t data = lseek(in_fd, pos, SEEK_DATA);
                if (data < 0) {
                        if (errno != ENXIO)
                                return -errno;
                        data = end;     /* a hole up to the end */
                }
                if (data > end)
                        data = end;
                digest_zeros(d, (uint64_t)(data - pos));
                if (out_fd >= 0 && data > pos && lseek(out_fd, data - pos, SEEK_CUR) < 0)
                        return -errno;
                pos = data;
                if (pos >= end)
                        break;
                off_t hole = lseek(in_fd, pos, SEEK_HOLE);
                if (hole < 0)
                        return -errno;
                if (hole > end)
                        hole = end;
                while (pos < hole) {
                        size_t want = (uint64_t)(hole - pos) < bufsize ? (size_t)(hole - pos) : bufsize;
                        ssize_t n = pread(in_fd, buf, want, pos);
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        if (n == 0) {
                                end = pos;      /* shrank under us: stop at its new end */
                                break;
                        }
                        if (d)
                                digest_update(d, buf, (size_t)n);
                        if (out_fd >= 0) {
                                int r = write_all(out_fd, buf, (size_t)n);
                                if (r < 0)
                                        return r;
                        }
                        pos += n;
                }
        }
        if (lseek(in_fd, end, SEEK_SET) < 0)
                return -errno;
        if (out_fd >= 0) {
                off_t out_end = lseek(out_fd, 0, SEEK_CUR);
                if (out_end < 0 || ftruncate(out_fd, out_end) < 0)
                        return -errno;
        }
        return (int64_t)(end - start);
}

int64_t fs_copy_digest(int in_fd, int out_fd, struct digest *d, uint64_t max_bytes)
{
        struct stat ist, ost;
        off_t pos;

        /* sparse only between regular files (or into nothing): a pipe
         * reader must get the zeros */
        if (fstat(in_fd, &ist) < 0 || !S_ISREG(ist.st_mode) ||
            (out_fd >= 0 && (fstat(out_fd, &ost) < 0 || !S_ISREG(ost.st_mode))) ||
            (pos = lseek(in_fd, 0, SEEK_CUR)) < 0 || pos > ist.st_size)
                return copy_dense(in_fd, out_fd, d, max_bytes);
        if (lseek(in_fd, pos, SEEK_DATA) < 0 && errno == EINVAL)
                return copy_dense(in_fd, out_fd, d, max_bytes);   /* no SEEK_DATA here */
        return copy_sparse(in_fd, out_fd, d, max_bytes, pos, ist.st_size);
}

int fs_hash_at(int dirfd, const char *name, const struct stat *st,
               char hex[DIGEST_HEX_SIZE], char **ret_target)
{
        if (S_ISLNK(st->st_mode)) {
                _cleanup_free_ char *target = NULL;
                int r = fs_readlink_at(dirfd, name, &target);
                if (r < 0)
                        return r;
                digest_buffer(target, strlen(target), hex);
                if (ret_target)
                        *ret_target = TAKE_PTR(target);
                return 0;
        }
        if (S_ISREG(st->st_mode)) {
                _cleanup_close_ int fd =
                        openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                struct stat fst;

                if (fd < 0)
                        return -errno;
                if (fstat(fd, &fst) < 0)
                        return -errno;
                if (!S_ISREG(fst.st_mode))
                        return -EAGAIN;   /* swapped under us */
                return digest_fd(fd, hex);
        }
        hex[0] = '\0';
        return 0;
}

bool fs_mode_supported(mode_t mode)
{
        return S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode);
}
