/* userns-limit-zero.c - run a command where user.max_user_namespaces is
 * 0, as on a hardened kernel, without touching the host's limit (other
 * tests run beside this one). For the tests; run as root.
 *
 *   userns-limit-zero CMD [ARG...]
 *
 * The limits under /proc/sys/user are per user namespace: a child enters
 * a new user namespace where ids 0-65535 are the host's own (as a
 * container runtime maps them, so uid 65534 exists there too), sets that
 * namespace's max_user_namespaces to 0, and execs CMD as its uid 0. CMD
 * then meets ENOSPC when it creates a user namespace, as on the host
 * with the sysctl at 0. Exit 77 with the reason when this cannot be set
 * up (not root, no user namespaces at all). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_SKIP 77

static int write_to(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = write(fd, text, strlen(text)) < 0 ? -errno : 0;
        close(fd);
        return r;
}

int main(int argc, char **argv)
{
        int ready[2], go[2];
        char c, path[64];
        if (argc < 2) {
                fprintf(stderr, "usage: userns-limit-zero CMD [ARG...]\n");
                return 2;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "userns-limit-zero: needs root (it maps 65536 host ids)\n");
                return EXIT_SKIP;
        }
        if (pipe(ready) < 0 || pipe(go) < 0)
                return 1;
        pid_t pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
                if (write(ready[1], &c, 1) != 1 || c != 'y')
                        _exit(EXIT_SKIP);
                if (read(go[0], &c, 1) != 1 || c != 'y')
                        _exit(EXIT_SKIP);
                int r = write_to("/proc/sys/user/max_user_namespaces", "0");
                if (r < 0) {
                        fprintf(stderr, "userns-limit-zero: max_user_namespaces: %s\n", strerror(-r));
                        _exit(EXIT_SKIP);
                }
                execvp(argv[1], argv + 1);
                fprintf(stderr, "userns-limit-zero: %s: %s\n", argv[1], strerror(errno));
                _exit(127);
        }
        if (read(ready[0], &c, 1) != 1 || c != 'y') {
                fprintf(stderr, "userns-limit-zero: cannot make a user namespace here\n");
                waitpid(pid, NULL, 0);
                return EXIT_SKIP;
        }
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        int r = write_to(path, "0 0 65536\n");
        snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
        if (r == 0)
                r = write_to(path, "0 0 65536\n");
        c = r == 0 ? 'y' : 'n';
        if (r < 0)
                fprintf(stderr, "userns-limit-zero: id maps: %s\n", strerror(-r));
        (void)!write(go[1], &c, 1);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return 1;
        return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
