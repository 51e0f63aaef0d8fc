/* run/live-socket.c - a live sandbox's control socket and its files
 * (<state dir>/sandboxes/NAME.sock, NAME.json): the names, the private
 * dir, connecting, the peer check, listening (run/live.h,
 * live-internal.h). The argument for the peer check is in live.c's
 * header. */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/live-internal.h"

bool live_name_valid(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
                return false;
        return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

int live_dir_open(void)
{
        _cleanup_free_ char *db = NULL;
        struct stat st;
        if (store_default_path(&db) < 0) {
                log_error("sandbox: no state dir (set HUTCH_STATE_DIR or HOME)");
                return -ENOENT;
        }
        *strrchr(db, '/') = '\0';
        _cleanup_free_ char *dir = xasprintf("%s/sandboxes", db);
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return log_error_errno(r, "sandbox: %s: %m", dir);
        int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(-errno, "sandbox: %s: %m", dir);
        /* ours and ours only: the control sockets live here */
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
                close(fd);
                log_error("sandbox: %s: not a directory of this user's with mode 0700", dir);
                return -EPERM;
        }
        return fd;
}

char *live_path(int dirfd, const char *name, const char *ext)
{
        return xasprintf("/proc/self/fd/%d/%s.%s", dirfd, name, ext);
}

static int sockaddr_for(int dirfd, const char *name, struct sockaddr_un *sa)
{
        _cleanup_free_ char *p = live_path(dirfd, name, "sock");
        *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        if (strlen(p) >= sizeof(sa->sun_path))
                return -ENAMETOOLONG;
        memcpy(sa->sun_path, p, strlen(p) + 1);
        return 0;
}

int live_connect(int dirfd, const char *name)
{
        struct sockaddr_un sa;
        int r = sockaddr_for(dirfd, name, &sa);
        if (r < 0)
                return r;
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* The peer's pidfd (Linux >= 6.5): the pid SO_PEERCRED names is read
 * through /proc, and a process that exits meanwhile could hand its pid
 * to another; the pidfd tells whether the process read is still the
 * one that connected. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int live_peer_check(int fd)
{
        struct ucred uc;
        socklen_t len = sizeof(uc);
        struct stat ours, theirs;
        char p[64];
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.uid != geteuid())
                return -EPERM;
        /* a pid from SO_PEERCRED is in our pid namespace: 0 means the
         * peer is outside it (not ours to talk to) */
        if (uc.pid <= 0)
                return -EPERM;
        int pidfd = -1;
        len = sizeof(pidfd);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
                pidfd = -1;
                if (errno != ENOPROTOOPT)
                        return -EPERM;  /* the peer is gone already */
        }
        snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)uc.pid);
        bool same = stat("/proc/self/ns/user", &ours) == 0 && stat(p, &theirs) == 0 &&
                    ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev;
        if (pidfd >= 0) {
                /* what /proc showed was the peer's only if it still lives */
                same = same && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
                close(pidfd);
        }
        return same ? 0 : -EPERM;
}

int live_listen(const char *name, int *ret_fd, ino_t *ret_ino)
{
        struct sockaddr_un sa;
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd < 0)
                return dirfd;
        int r = sockaddr_for(dirfd, name, &sa);
        if (r < 0)
                return log_error_errno(r, "sandbox: %s: %m", name);
        int c = live_connect(dirfd, name);
        if (c >= 0) {
                close(c);
                log_error("sandbox: %s is running already (hutch sandbox stop %s)", name, name);
                return -EEXIST;
        }
        /* what a supervisor that is gone left behind */
        _cleanup_free_ char *sock = xasprintf("%s.sock", name);
        (void)unlinkat(dirfd, sock, 0);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(-errno, "sandbox: socket: %m");
        mode_t old = umask(0077);
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
        umask(old);
        /* 0600: connecting needs write permission */
        if (r == 0 && fchmodat(dirfd, sock, 0600, 0) < 0)
                r = -errno;
        if (r == 0 && listen(fd, 16) < 0)
                r = -errno;
        struct stat st;
        if (r == 0 && fstatat(dirfd, sock, &st, AT_SYMLINK_NOFOLLOW) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return log_error_errno(r, "sandbox: %s: control socket: %m", name);
        }
        *ret_fd = fd;
        *ret_ino = st.st_ino;
        return 0;
}

void live_unlisten_at(int dirfd, const char *name, ino_t ino)
{
        _cleanup_free_ char *sock = xasprintf("%s.sock", name);
        struct stat st;
        if (fstatat(dirfd, sock, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino)
                (void)unlinkat(dirfd, sock, 0);
}

void live_unlisten(const char *name, ino_t ino)
{
        _cleanup_close_ int dirfd = live_dir_open();
        if (dirfd >= 0)
                live_unlisten_at(dirfd, name, ino);
}

int live_nofile_raise(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return log_error_errno(-errno, "sandbox start: getrlimit(RLIMIT_NOFILE): %m");
        if (rl.rlim_max < LIVE_NOFILE_MIN) {
                log_error("sandbox start: a live sandbox's supervisor needs %d open files, and the hard "
                          "RLIMIT_NOFILE is %llu (raise it: ulimit -Hn %d)",
                          LIVE_NOFILE_MIN, (unsigned long long)rl.rlim_max, LIVE_NOFILE_MIN);
                return -EMFILE;
        }
        if (rl.rlim_cur >= rl.rlim_max)
                return 0;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return log_error_errno(-errno, "sandbox start: setrlimit(RLIMIT_NOFILE, %llu): %m",
                                       (unsigned long long)rl.rlim_max);
        return 0;
}
