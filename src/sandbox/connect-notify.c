/* connect-notify.c - the landlock tier's network allow (see
 * connect-notify.h): the job reaches hutch's egress proxy, and nothing
 * else, without a network namespace.
 *
 * The problem: the job shares the host's network. Landlock's TCP rules
 * (ABI 4) name a port, not an address, so "connect to the proxy's port"
 * would let the job reach any host on that port; and on ABI < 4 there
 * is no TCP rule at all.
 *
 * What holds instead, layer by layer:
 *  1. Landlock (ABI >= 4) denies every TCP bind and connect the job
 *     makes itself, whatever the port (the plan is built as for network
 *     none: no port rule at all).
 *  2. The socket filter (seccomp-sockets.c): socket(2) makes TCP only
 *     (AF_INET/AF_INET6, SOCK_STREAM, protocol 0 or IPPROTO_TCP: no UDP,
 *     no SCTP or MPTCP, no unix sockets but socketpair's); bind(2) and
 *     listen(2) are refused; sendto/sendmsg/sendmmsg with MSG_FASTOPEN
 *     (which connects without connect(2); Landlock holds that too, from
 *     ABI 4) are
 *     refused; io_uring is refused by the policy (the tier refuses
 *     allow_io_uring); and connect(2) goes to a user notification.
 *  3. Here, in the job's init: the answer to that notification is never
 *     SECCOMP_USER_NOTIF_FLAG_CONTINUE (the job could change the
 *     sockaddr in its memory after we read it: time of check is not time
 *     of use). We read the sockaddr only to decide; when it names the
 *     proxy (127.0.0.1:PORT, or ::ffff:127.0.0.1:PORT on an IPv6
 *     socket), init itself makes a new socket, connects it to the proxy
 *     address it was given (never to anything read from the job), and
 *     installs it in place of the job's fd (SECCOMP_IOCTL_NOTIF_ADDFD
 *     with SECCOMP_ADDFD_FLAG_SETFD: atomically, as dup2 would), then
 *     answers 0. Anything else is answered EACCES, and the job's socket
 *     stays unconnected. What the job controls afterwards (the bytes it
 *     sends) goes to the egress helper, which decides by the allow-list
 *     as for the namespace tier's proxy.
 *  4. init is not landlocked, so its connect passes Landlock; the job
 *     cannot make init connect anywhere else: the address is fixed, and
 *     the job cannot ptrace or (ABI 6) signal init (Landlock's domain is
 *     below init's), nor write its memory.
 * Reading the sockaddr: process_vm_readv(), which needs ptrace access
 * to the job: init is its parent (or, for orphans, its subreaper, so an
 * ancestor of every job process, which Yama's scope 1 asks), and runs
 * as the caller (root with CAP_SYS_PTRACE, or the job's own uid). The
 * task may die and its pid be reused between the notification and the
 * read: SECCOMP_IOCTL_NOTIF_ID_VALID after the read says whether what we
 * read was the notifying task's. The job's fd number and its flags
 * (O_NONBLOCK, O_CLOEXEC, from /proc/PID/fdinfo) may change after we
 * look: then the job's own fd table gets the proxy socket at that
 * number, which is no more than it asked for.
 *
 * What it does not keep: options the job set on its socket before
 * connect(2) (TCP_NODELAY, SO_KEEPALIVE, buffer sizes) are not carried
 * over, and a non-blocking connect returns 0 at once (the proxy is
 * local), which every client handles.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sandbox/connect-notify.h"
#include "lib/util.h"

/* How long init waits for the proxy to take a connection: it is local,
 * so only a full backlog (a flood of the job's own) makes it wait. */
#define PROXY_CONNECT_MS 2000

int connect_notify_send(int sock, int listener)
{
        char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
        char byte = 'L';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &listener, sizeof(int));
        int r = sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
        close(listener);
        close(sock);
        return r;
}

int connect_notify_receive(int sock)
{
        char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        ssize_t n;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        int r = n < 0 ? -errno : n == 0 ? -ECONNRESET : 0;
        close(sock);
        if (r < 0)
                return r;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
                return -EBADMSG;
        int fd;
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}

/* The job's fd: a socket, and its open flags (fdinfo's "flags:", octal). */
static int job_fd_flags(pid_t pid, int fd, int *ret_flags)
{
        char path[64], link[64];
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n < 0)
                return errno == ENOENT ? -EBADF : -errno;
        link[n] = '\0';
        if (strncmp(link, "socket:", 7) != 0)
                return -ENOTSOCK;
        snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -EBADF : -errno;
        char line[128];
        while (fgets(line, sizeof(line), f)) {
                unsigned long flags;
                if (sscanf(line, "flags: %lo", &flags) == 1) {
                        *ret_flags = (int)flags;
                        return 0;
                }
        }
        return -EBADMSG;
}

/* A socket of init's, connected to the proxy: 127.0.0.1:port, through an
 * IPv6 socket as ::ffff:127.0.0.1 when the job's was one. */
static int proxy_connect(bool v6, uint16_t port, bool nonblock)
{
        union {
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } sa = { 0 };
        socklen_t len;
        if (v6) {
                sa.in6.sin6_family = AF_INET6;
                sa.in6.sin6_port = htons(port);
                sa.in6.sin6_addr.s6_addr[10] = 0xff;
                sa.in6.sin6_addr.s6_addr[11] = 0xff;
                uint32_t lo = htonl(INADDR_LOOPBACK);
                memcpy(&sa.in6.sin6_addr.s6_addr[12], &lo, 4);
                len = sizeof(sa.in6);
        } else {
                sa.in.sin_family = AF_INET;
                sa.in.sin_port = htons(port);
                sa.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                len = sizeof(sa.in);
        }
        int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -errno;
        int r = 0;
        if (connect(s, (struct sockaddr *)&sa, len) < 0) {
                r = -errno;
                if (r == -EINPROGRESS) {
                        struct pollfd p = { .fd = s, .events = POLLOUT };
                        int err = 0;
                        socklen_t l = sizeof(err);
                        int k = poll(&p, 1, PROXY_CONNECT_MS);
                        r = k < 0 ? -errno : k == 0 ? -ETIMEDOUT
                          : getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &l) < 0 ? -errno : -err;
                }
        }
        if (r == 0 && !nonblock && fcntl(s, F_SETFL, 0) < 0)
                r = -errno;
        if (r < 0) {
                close(s);
                return r;
        }
        return s;
}

/* Whether buf (len bytes of the job's sockaddr) is the proxy's address,
 * with *ret_v6 for the IPv6 spelling. */
static bool names_proxy(const void *buf, size_t len, uint16_t port, bool *ret_v6)
{
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
        sa_family_t family;

        if (len < sizeof(family))
                return false;
        memcpy(&family, buf, sizeof(family));
        if (family == AF_INET && len >= sizeof(in)) {
                memcpy(&in, buf, sizeof(in));
                *ret_v6 = false;
                return in.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && ntohs(in.sin_port) == port;
        }
        if (family == AF_INET6 && len >= sizeof(in6)) {
                static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 };
                memcpy(&in6, buf, sizeof(in6));
                *ret_v6 = true;
                return memcmp(in6.sin6_addr.s6_addr, mapped, 16) == 0 && ntohs(in6.sin6_port) == port;
        }
        return false;
}

/* The answer to one connect(2): 0 (the proxy's socket is in place) or a
 * positive errno for the job. */
static int answer(int listener, const struct seccomp_notif *req, uint16_t port)
{
        if (req->data.nr != SYS_connect)
                return ENOSYS;
        if (req->data.args[0] > INT32_MAX)
                return EBADF;
        int fd = (int)req->data.args[0];
        uint64_t addr = req->data.args[1], addrlen = req->data.args[2];
        if (addrlen < sizeof(sa_family_t) || addrlen > 128)
                return EINVAL;

        uint8_t buf[sizeof(struct sockaddr_in6)] = { 0 };
        size_t want = MIN((size_t)addrlen, sizeof(buf));
        struct iovec local = { .iov_base = buf, .iov_len = want };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = want };
        ssize_t n = process_vm_readv(req->pid, &local, 1, &remote, 1, 0);
        if (n < 0 && errno == EFAULT)
                return EFAULT;
        if (n != (ssize_t)want)
                return EACCES;
        /* what we read was the notifying task's, not a successor's */
        uint64_t id = req->id;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
                return ENOENT;
        bool v6 = false;
        if (!names_proxy(buf, want, port, &v6))
                return EACCES;

        int flags = 0;
        int r = job_fd_flags(req->pid, fd, &flags);
        if (r < 0)
                return -r;
        int s = proxy_connect(v6, port, flags & O_NONBLOCK);
        if (s < 0)
                return ECONNREFUSED;
        struct seccomp_notif_addfd add = {
                .id = req->id, .flags = SECCOMP_ADDFD_FLAG_SETFD, .srcfd = (uint32_t)s, .newfd = (uint32_t)fd,
                .newfd_flags = (uint32_t)(flags & O_CLOEXEC),
        };
        r = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0 ? errno : 0;
        close(s);
        return r;
}

int connect_notify_handle(int listener, uint16_t proxy_port)
{
        struct seccomp_notif req;
        memset(&req, 0, sizeof(req));
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
                /* EINTR; ENOENT: the task died before we took it */
                if (errno == EINTR || errno == ENOENT)
                        return 0;
                return -errno;
        }
        int error = answer(listener, &req, proxy_port);
        struct seccomp_notif_resp resp = { .id = req.id, .val = 0, .error = error ? -error : 0, .flags = 0 };
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT && errno != EINTR)
                return -errno;
        return 0;
}
