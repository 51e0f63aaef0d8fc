/* session.c - persistent session workspaces (see session.h).
 *
 * Data: a handful to hundreds of sessions per user, each a directory
 * tree of a workspace's size. Locking is an OFD lock on a per-session
 * file: it dies with its holder (a supervisor killed with SIGKILL frees the
 * session at once), and only ever excludes other hutch processes.
 *
 * Host writes: everything here happens beneath the user's own state dir,
 * through *at() calls on directory fds; removal and chown never follow a
 * symlink (fs_remove_tree_at, fchownat(AT_SYMLINK_NOFOLLOW)), so a
 * symlink a job committed into a tree cannot redirect them.
 */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/fsutil.h"
#include "config/request.h"
#include "workspace/session.h"
#include "lib/util.h"

int session_commit_from_string(const char *s)
{
        if (s && streq(s, "success"))
                return SESSION_COMMIT_SUCCESS;
        if (s && streq(s, "always"))
                return SESSION_COMMIT_ALWAYS;
        if (s && streq(s, "never"))
                return SESSION_COMMIT_NEVER;
        return -EINVAL;
}

const char *session_commit_to_string(enum session_commit c)
{
        switch (c) {
        case SESSION_COMMIT_ALWAYS:
                return "always";
        case SESSION_COMMIT_NEVER:
                return "never";
        case SESSION_COMMIT_SUCCESS:
        default:
                return "success";
        }
}

bool session_commit_wanted(enum session_commit c, bool succeeded)
{
        return c == SESSION_COMMIT_ALWAYS || (c != SESSION_COMMIT_NEVER && succeeded);
}

bool session_name_valid(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > 64 || name[0] == '.')
                return false;
        for (const char *c = name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '.' || *c == '_' || *c == '-'))
                        return false;
        return true;
}

char *session_root(const char *db_path)
{
        _cleanup_free_ char *d = xstrdup(db_path);
        return xasprintf("%s/sessions", dirname(d));
}

/* An open-file-description lock on the whole file: like flock() it
 * belongs to the open file (inherited copies share it, it goes when the
 * last one closes), and unlike flock() it can be queried without taking
 * it (F_OFD_GETLK), so `hutch session ls` never makes a run fail. */
static int lock_try(int fd)
{
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
        if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
                return 0;
        return errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
}

static bool lock_held(int fd)
{
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
        return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

static int lock_wait(int fd, uint64_t wait_ms)
{
        uint64_t deadline = now_monotonic_ms() + wait_ms;
        for (;;) {
                int r = lock_try(fd);
                if (r != -EBUSY)
                        return r;
                if (now_monotonic_ms() >= deadline)
                        return -EBUSY;
                struct timespec ts = { 0, 20 * 1000000L };
                nanosleep(&ts, NULL);
        }
}

int session_acquire(const char *root, const char *name, uint64_t wait_ms, struct session *ret)
{
        int r;

        if (!session_name_valid(name))
                return -EINVAL;
        r = mkdir_p(root, 0700);
        if (r < 0)
                return r;
        _cleanup_free_ char *dir = xasprintf("%s/%s", root, name);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_free_ char *lock = xasprintf("%s/lock", dir);
        _cleanup_close_ int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = lock_wait(fd, wait_ms);
        if (r < 0)
                return r;
        _cleanup_free_ char *tree = xasprintf("%s/tree", dir);
        if (mkdir(tree, 0755) < 0 && errno != EEXIST)
                return -errno;
        *ret = (struct session) {
                .name = xstrdup(name), .dir = TAKE_PTR(dir), .tree = TAKE_PTR(tree),
                .lock_fd = TAKE_FD(fd),
        };
        return 0;
}

void session_touch(struct session *s)
{
        (void)futimens(s->lock_fd, NULL);
}

int session_set_ttl(struct session *s, uint64_t ttl_ms)
{
        _cleanup_close_ int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char text[32];
        int r = 0;

        if (dfd < 0)
                return -errno;
        int n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)ttl_ms);
        /* one writer: the holder of the session's lock */
        int fd = openat(dfd, "ttl.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (write_all(fd, text, (size_t)n) < 0)
                r = -errno;
        close(fd);
        if (r == 0 && renameat(dfd, "ttl.tmp", dfd, "ttl") < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dfd, "ttl.tmp", 0);
        return r;
}

/* The ttl file of the session at dfd, UINT64_MAX when there is none. */
static uint64_t read_ttl(int dfd)
{
        _cleanup_close_ int fd = openat(dfd, "ttl", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char buf[32];
        ssize_t n;
        char *end;

        if (fd < 0 || (n = read_full(fd, buf, sizeof(buf) - 1)) <= 0)
                return UINT64_MAX;
        buf[n] = '\0';
        unsigned long long v = strtoull(buf, &end, 10);
        return end != buf && (*end == '\n' || *end == '\0') ? (uint64_t)v : UINT64_MAX;
}

static int chown_below(int dirfd, uid_t uid, gid_t gid, int depth)
{
        _cleanup_strv_ char **names = NULL;
        int r = fs_list_dir(dirfd, &names);
        if (r < 0)
                return r;
        if (depth > 256)
                return -ELOOP;
        for (char **n = names; *n; n++) {
                struct stat st;
                if (fstatat(dirfd, *n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if ((st.st_uid != uid || st.st_gid != gid) &&
                    fchownat(dirfd, *n, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = openat(dirfd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return -errno;
                        r = chown_below(sub, uid, gid, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int session_chown_tree(struct session *s, uid_t uid, gid_t gid)
{
        _cleanup_close_ int fd = open(s->tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fchown(fd, uid, gid) < 0)
                return -errno;
        return chown_below(fd, uid, gid, 0);
}

void session_release(struct session *s)
{
        if (s->lock_fd >= 0)
                close(s->lock_fd);
        s->lock_fd = -1;
        free(s->name);
        free(s->dir);
        free(s->tree);
        s->name = s->dir = s->tree = NULL;
}

static void measure(int dirfd, struct session_info *si, int depth)
{
        _cleanup_strv_ char **names = NULL;
        if (depth > 256 || fs_list_dir(dirfd, &names) < 0)
                return;
        for (char **n = names; *n; n++) {
                struct stat st;
                if (fstatat(dirfd, *n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                si->files++;
                if (S_ISREG(st.st_mode))
                        si->bytes += (uint64_t)st.st_size;
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = openat(dirfd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                measure(sub, si, depth + 1);
                }
        }
}

int session_list(const char *root, struct session_info **ret, size_t *ret_n)
{
        _cleanup_strv_ char **names = NULL;
        struct session_info *v = NULL;
        size_t n = 0;

        _cleanup_close_ int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0) {
                if (errno != ENOENT)
                        return -errno;
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        int r = fs_list_dir(rootfd, &names);
        if (r < 0)
                return r;
        for (char **p = names; *p; p++) {
                if (!session_name_valid(*p))
                        continue;
                _cleanup_close_ int dfd = openat(rootfd, *p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dfd < 0)
                        continue;
                struct session_info si = { .name = xstrdup(*p), .ttl_ms = read_ttl(dfd) };
                struct statx sx;
                if (statx(dfd, "", AT_EMPTY_PATH, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME))
                        si.created_ms = (uint64_t)sx.stx_btime.tv_sec * 1000 + sx.stx_btime.tv_nsec / 1000000;
                _cleanup_close_ int lfd = openat(dfd, "lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (lfd >= 0 && fstat(lfd, &st) == 0) {
                        si.last_used_ms = (uint64_t)st.st_mtim.tv_sec * 1000 +
                                          (uint64_t)st.st_mtim.tv_nsec / 1000000;
                        si.in_use = lock_held(lfd);
                }
                _cleanup_close_ int tfd = openat(dfd, "tree", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (tfd >= 0)
                        measure(tfd, &si, 0);
                v = xrealloc(v, (n + 1) * sizeof(*v));
                v[n++] = si;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

void session_info_free(struct session_info *v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                free(v[i].name);
        free(v);
}

int session_remove(const char *root, const char *name)
{
        int r;

        if (!session_name_valid(name))
                return -EINVAL;
        _cleanup_close_ int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return -errno;
        _cleanup_close_ int dfd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        _cleanup_close_ int lfd = openat(dfd, "lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (lfd >= 0) {
                r = lock_try(lfd);
                if (r < 0)
                        return r;
        }
        /* holding the lock, the tree goes first, then the lock: a run
         * that opens the lock file after this sees a fresh session */
        r = fs_remove_tree_at(dfd, "tree");
        if (r < 0 && r != -ENOENT)
                return r;
        (void)unlinkat(dfd, "lock", 0);
        return fs_remove_tree_at(rootfd, name);
}

/* One file under the tree at f->path (checked by the request's reader:
 * relative, no ".."). */
static int put_one(int treefd, const struct request_file *f, uid_t uid, gid_t gid)
{
        _cleanup_free_ char *copy = xstrdup(f->path);
        _cleanup_close_ int dir = dup(treefd);
        char *name = copy, *slash;
        struct stat st;

        if (dir < 0)
                return -errno;
        while ((slash = strchr(name, '/'))) {
                *slash = '\0';
                bool made = mkdirat(dir, name, 0755) == 0;
                /* O_NOFOLLOW: a job's symlink never leads the upload out */
                int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                if (made && uid != (uid_t)-1 && fchown(next, uid, gid) < 0) {
                        int e = -errno;
                        close(next);
                        return e;
                }
                close(dir);
                dir = next;
                name = slash + 1;
        }
        /* O_NONBLOCK: a FIFO left in its place must not hang us; it is
         * refused below with everything that is not a regular file */
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        if (fd < 0)
                return errno == ENXIO ? -EEXIST : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EEXIST;
        if (ftruncate(fd, 0) < 0)
                return -errno;
        if (f->host_path) {
                /* the caller's own file, read with the caller's rights */
                _cleanup_close_ int in = open(f->host_path, O_RDONLY | O_CLOEXEC);
                if (in < 0)
                        return -errno;
                int64_t n = fs_copy_digest(in, fd, NULL, 0);
                if (n < 0)
                        return (int)n;
        } else {
                int r = write_all(fd, f->data, f->len);
                if (r < 0)
                        return r;
        }
        if (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0)
                return -errno;
        return 0;
}

int session_put_files(struct session *s, const struct request_file *files, size_t n, uid_t uid, gid_t gid,
                      size_t *ret_index)
{
        _cleanup_close_ int treefd = open(s->tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (treefd < 0)
                return -errno;
        /* The tree itself too, as a commit leaves it: a new session's
         * tree is still its maker's, and the sandbox takes a tree its
         * caller owns for the caller's own files (sandbox.c's idmapped
         * lower), where files of uid would be nobody's, unwritable. */
        if (uid != (uid_t)-1 && fchown(treefd, uid, gid) < 0)
                return -errno;
        for (size_t i = 0; i < n; i++) {
                int r = put_one(treefd, &files[i], uid, gid);
                if (r < 0) {
                        *ret_index = i;
                        return r;
                }
        }
        return 0;
}
