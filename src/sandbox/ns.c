/* ns.c - uid/gid maps, hostname and loopback for the sandbox (ns.h). */
#include "config.h"

#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sched.h>
#include <net/if.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "sandbox/ns.h"
#include "sandbox/userns-diag.h"
#include "lib/util.h"

#define OVERFLOW_ID 65534

/* Could this process be host root? uid 0 whose id, one level up, is
 * also 0. That holds for real root and for root of a user namespace that
 * real root created with itself mapped in (unshare -r): either way, the
 * sandbox must not be mapped to it. Root of a rootless container (uid 0
 * mapped to an ordinary uid) is an ordinary user and maps to itself. */
bool ns_real_root(void)
{
        static int cached = -1;
        if (cached < 0) {
                _cleanup_free_ char *map = NULL;
                cached = 0;
                if (geteuid() == 0 && read_file("/proc/self/uid_map", &map, NULL) == 0) {
                        char *save = NULL;
                        for (char *line = strtok_r(map, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                                unsigned long inside, outside, count;
                                if (sscanf(line, "%lu %lu %lu", &inside, &outside, &count) == 3 &&
                                    inside == 0 && outside == 0)
                                        cached = 1;
                        }
                }
        }
        return cached;
}

uid_t ns_host_uid(void)
{
        return ns_real_root() ? OVERFLOW_ID : geteuid();
}

gid_t ns_host_gid(void)
{
        return ns_real_root() ? OVERFLOW_ID : getegid();
}

static int write_proc(pid_t pid, const char *file, const char *text)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* the kernel takes a map in one write() or not at all */
        ssize_t n = write(fd, text, strlen(text));
        if (n < 0)
                return -errno;
        return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

int ns_write_id_maps(pid_t pid, uid_t inside_uid, gid_t inside_gid, uid_t host_uid, gid_t host_gid)
{
        char map[64];
        int r;

        r = write_proc(pid, "setgroups", "deny");
        if (r < 0 && r != -ENOENT)
                return r;
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)inside_uid, (unsigned)host_uid);
        r = write_proc(pid, "uid_map", map);
        if (r < 0)
                return r;
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)inside_gid, (unsigned)host_gid);
        return write_proc(pid, "gid_map", map);
}

int ns_idmap_userns(uid_t from_uid, gid_t from_gid, uid_t to_uid, gid_t to_gid)
{
        int ready[2], done[2];
        char path[64], c;
        int r = 0, fd = -1;

        /* A helper enters a new user namespace and says so; we write its
         * maps and keep only its /proc/PID/ns/user fd: a namespace
         * without processes is fine as an idmapping. */
        if (pipe2(ready, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(done, O_CLOEXEC) < 0) {
                r = -errno;
                close(ready[0]);
                close(ready[1]);
                return r;
        }
        pid_t pid = fork();
        if (pid == 0) {
                close(ready[0]);
                close(done[1]);
                c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
                (void)!write(ready[1], &c, 1);
                /* wait until the parent holds the namespace (or died) */
                (void)!read(done[0], &c, 1);
                _exit(0);
        }
        close(ready[1]);
        close(done[0]);
        if (pid < 0)
                r = -errno;
        else if (read(ready[0], &c, 1) != 1 || c != 'y')
                r = -EPERM;
        if (r == 0)
                r = ns_write_id_maps(pid, from_uid, from_gid, to_uid, to_gid);
        if (r == 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        r = -errno;
        }
        close(ready[0]);
        close(done[1]);
        if (pid > 0)
                (void)waitpid(pid, NULL, 0);
        return r < 0 ? r : fd;
}

int ns_set_hostname(const char *name)
{
        if (sethostname(name, strlen(name)) < 0)
                return -errno;
        return 0;
}

int ns_loopback_up(void)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr = { 0 };

        if (fd < 0)
                return -errno;
        strcpy(ifr.ifr_name, "lo");
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                return -errno;
        return 0;
}

/* The helper's stack: unshare, socket and ioctl need little of it. The
 * lowest page is a guard. */
#define NETNS_STACK_BYTES (64u << 10)

/* The helper shares the sandbox's memory and fd table (CLONE_VM |
 * CLONE_FILES), not its thread: it has its own stack, and it calls only
 * what takes no lock and allocates nothing (unshare, socket, ioctl,
 * close), so nothing of the sandbox's state it shares can be caught
 * half-changed. The one thing both write is errno: the helper's can
 * clobber the sandbox's only when one of its own calls failed, and then
 * the sandbox fails its setup at ns_netns_join() whatever it was doing.
 * It returns, and the kernel ends it (exit, not exit_group: the sandbox
 * runs on). */
static int netns_helper(void *arg)
{
        struct netns_build *b = arg;
        if (unshare(CLONE_NEWNET) < 0) {
                b->error = errno;
                b->step = "network namespace";
                return 1;
        }
        int r = ns_loopback_up();
        if (r < 0) {
                b->error = -r;
                b->step = "loopback up";
                return 1;
        }
        int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int fd = sock < 0 ? -1 : ioctl(sock, SIOCGSKNS);
        if (fd < 0) {
                b->error = errno;
                b->step = "network namespace";
        }
        if (sock >= 0)
                close(sock);
        b->netns_fd = fd;
        return fd < 0;
}

int ns_netns_begin(struct netns_build *b)
{
        *b = (struct netns_build) { .netns_fd = -1, .pid = -1, .step = "network namespace" };
        b->stack = task_stack_new(NETNS_STACK_BYTES);
        if (!b->stack)
                return -errno;
        b->pid = clone(netns_helper, (char *)b->stack + NETNS_STACK_BYTES, CLONE_VM | CLONE_FILES | SIGCHLD, b);
        if (b->pid < 0) {
                int e = errno;
                task_stack_free(b->stack, NETNS_STACK_BYTES);
                b->stack = NULL;
                return -e;
        }
        return 0;
}

int ns_netns_join(struct netns_build *b)
{
        int status, r = 0;

        while (waitpid(b->pid, &status, __WALL) < 0)
                if (errno != EINTR)
                        return -errno;
        /* the helper is gone: its stack and fields are ours again */
        task_stack_free(b->stack, NETNS_STACK_BYTES);
        b->stack = NULL;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || b->netns_fd < 0)
                r = -(b->error ? b->error : EIO);
        else if (setns(b->netns_fd, CLONE_NEWNET) < 0) {
                r = -errno;
                b->step = "join network namespace";
        }
        if (b->netns_fd >= 0)
                close(b->netns_fd);
        b->netns_fd = -1;
        return r;
}

const char *ns_limit_at_zero(bool net)
{
        /* each namespace the sandbox makes, the user namespace first: its
         * limit is the one distributions set to 0 */
        static const char *const kinds[] = { "user", "mnt", "pid", "ipc", "uts", "cgroup", "net" };
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                char path[64];
                _cleanup_free_ char *text = NULL;
                if (!net && streq(kinds[i], "net"))
                        continue;
                snprintf(path, sizeof(path), "/proc/sys/user/max_%s_namespaces", kinds[i]);
                if (read_file(path, &text, NULL) == 0 && strtol(text, NULL, 10) == 0)
                        return kinds[i];
        }
        return NULL;
}

const char *ns_explain_refusal(int r, const char *step, bool net, char *buf, size_t len)
{
        /* clone/unshare return ENOSPC when a namespace count limit is
         * reached; a limit of 0 is how distributions switch user
         * namespaces off. The network namespace made beside the root
         * fails on its own step, so it names its own limit; clone3's
         * refusal names the limit that is 0, else the user namespaces'. */
        if (!step)
                return NULL;
        if (r == -EPERM && streq(step, "drop supplementary groups")) {
                /* real root inside a user namespace it made with itself
                 * mapped (unshare -r), which denies setgroups: root's
                 * groups cannot be shed, and must not reach the sandbox */
                _cleanup_free_ char *text = NULL;
                if (read_file("/proc/self/setgroups", &text, NULL) < 0 || strncmp(text, "deny", 4) != 0)
                        return NULL;
                snprintf(buf, len, "this user namespace denies setgroups (/proc/self/setgroups), so root's "
                         "supplementary groups cannot be shed: run hutch outside it, or as an unprivileged user");
                return buf;
        }
        if (r == -EPERM || r == -EACCES || r == -ENOSYS)
                return userns_explain(-r, step, buf, len);
        if (r != -ENOSPC)
                return NULL;
        const char *kind = NULL;
        if (streq(step, "network namespace"))
                kind = "net";
        else if (streq(step, "clone namespaces"))
                kind = ns_limit_at_zero(net);
        else
                return NULL;
        if (!kind)
                kind = "user";
        snprintf(buf, len, "no %s namespace may be created: the limit user.max_%s_namespaces is 0 or used up "
                 "(raise it: sysctl -w user.max_%s_namespaces=15000)",
                 streq(kind, "net") ? "network" : kind, kind, kind);
        return buf;
}
