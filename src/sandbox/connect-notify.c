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
 * Waiting for the proxy: init never does. (Two waits are the job's to
 * make, and stay: ADDFD replaces the job's fd N in the job's task, which
 * flushes whatever file another of its threads dup2'd onto N meanwhile,
 * an NFS file with dirty data, say, while init's ioctl waits; and
 * process_vm_readv() waits for a page of the sockaddr to fault in, which
 * a userfaultfd only a custom policy allows could hold. Both hold up
 * init, never the supervisor, and only for as long as the job's own
 * file or fault takes.) Its connect is non-blocking,
 * and one the proxy has not taken at once (its listen backlog is full: a
 * flood of the job's own connects, or a helper that fell behind) is kept
 * pending (struct connect_notify) and finished from init's loop, which
 * meanwhile goes on answering the job's other connects, reaping, and (a
 * live sandbox) serving the supervisor and the other execs. Everything a
 * pending entry holds was read and judged before it was kept: the
 * address named the proxy, and the socket is init's own, connecting to
 * the fixed proxy address. The job's task waits in connect(2) meanwhile,
 * as it did while init waited. When the connect ends:
 *  - SECCOMP_IOCTL_NOTIF_ID_VALID again, just before ADDFD: the
 *    notification still waits. A signal to the task or its death ends
 *    it (a restarted connect(2) is a new notification with a new id,
 *    judged afresh), and ids are not reused, so ADDFD goes into the fd
 *    table of the very task that asked. ADDFD itself refuses a
 *    notification that no longer waits; checking first means a gone one
 *    is never acted on at all: its socket is closed, and no one is
 *    answered.
 *  - the job's fd number and flags were read when it asked: the wait
 *    makes the window in which it may change them longer, and what it
 *    changes is still only its own fd table (above).
 *  - every pending connect is answered within PROXY_CONNECT_MS of its
 *    arrival: ECONNREFUSED at the deadline, as when init waited.
 *  - at most CONNECT_NOTIFY_PENDING_MAX wait, each holding one fd of
 *    init's; one more is refused at once, with ECONNREFUSED. A full
 *    table first drops the entries whose notification has gone, so dead
 *    ones (tasks killed or signalled in connect(2)) do not keep it full.
 *    Why ECONNREFUSED, not EAGAIN: for a TCP connect(2), EAGAIN is no
 *    "try again" clients know (connect(2) gives it to unix sockets and
 *    to a full routing cache), and code that takes it for EINPROGRESS
 *    on a non-blocking socket would poll an unconnected socket, find it
 *    writable and fail later with a puzzling ENOTCONN or EPIPE.
 *    ECONNREFUSED is what the job gets for every connect the proxy does
 *    not take (a timeout too): clients report it as a failed connect,
 *    and may retry. With that many waiting the proxy takes nothing
 *    anyway (it takes a connect in microseconds when it can), so a slot
 *    would only give the same answer PROXY_CONNECT_MS later.
 *
 * What it does not keep: options the job set on its socket before
 * connect(2) (TCP_NODELAY, SO_KEEPALIVE, buffer sizes) are not carried
 * over, and a non-blocking connect returns 0 once the proxy took it:
 * at once (the proxy is local), or, its backlog full, after a wait in
 * connect(2) of up to PROXY_CONNECT_MS even on an O_NONBLOCK socket.
 * Every client handles both.
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

/* How long a connect of the job's waits for the proxy to take it: it is
 * local, so only a full backlog (a flood of the job's own) makes it
 * wait. init itself never does (the top of this file). */
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

/* A socket of init's, connecting to the proxy: 127.0.0.1:port, through
 * an IPv6 socket as ::ffff:127.0.0.1 when the job's was one. Never waits:
 * the connect is in progress or done when it returns. */
static int proxy_connect_start(bool v6, uint16_t port)
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
        if (connect(s, (struct sockaddr *)&sa, len) < 0 && errno != EINPROGRESS) {
                int r = -errno;
                close(s);
                return r;
        }
        return s;
}

/* How the connect of init's socket s stands: 0 connected, 1 still in
 * progress, or -errno. A look, never a wait. */
static int proxy_connect_result(int s)
{
        struct pollfd p = { .fd = s, .events = POLLOUT };
        int k = poll(&p, 1, 0);
        if (k < 0)
                return -errno;
        if (k == 0)
                return 1;
        int err = 0;
        socklen_t l = sizeof(err);
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                return -errno;
        return err ? -err : (p.revents & POLLHUP) ? -ECONNRESET : 0;
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

/* Judge one connect(2): 0 when it asks for the proxy (then the job's fd
 * and its flags in *pc, and the spelling in *ret_v6), or the positive
 * errno to refuse it with. */
static int judge(int listener, const struct seccomp_notif *req, uint16_t port, struct connect_pending *pc,
                 bool *ret_v6)
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
        if (!names_proxy(buf, want, port, ret_v6))
                return EACCES;

        int flags = 0;
        int r = job_fd_flags(req->pid, fd, &flags);
        if (r < 0)
                return -r;
        *pc = (struct connect_pending) { .listener = listener, .id = req->id, .sock = -1, .fd = fd,
                                         .flags = flags };
        return 0;
}

/* 0, or -errno when the listener itself failed */
static int respond(int listener, uint64_t id, int error)
{
        struct seccomp_notif_resp resp = { .id = id, .val = 0, .error = error ? -error : 0, .flags = 0 };
        /* ENOENT: the task was signalled or died meanwhile */
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT && errno != EINTR)
                return -errno;
        return 0;
}

static bool still_waits(int listener, uint64_t id)
{
        return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/* A connect of init's has ended with result (0 or -errno): the job's
 * notification answered, init's socket closed. */
static void finish(const struct connect_pending *pc, int result)
{
        int error = result < 0 ? ECONNREFUSED : 0;
        if (!error && !(pc->flags & O_NONBLOCK) && fcntl(pc->sock, F_SETFL, 0) < 0)
                error = ECONNREFUSED;
        /* the notification still waits (the top of this file): else
         * there is no one to answer, nor an fd table to touch */
        if (!still_waits(pc->listener, pc->id)) {
                close(pc->sock);
                return;
        }
        if (!error) {
                struct seccomp_notif_addfd add = {
                        .id = pc->id, .flags = SECCOMP_ADDFD_FLAG_SETFD, .srcfd = (uint32_t)pc->sock,
                        .newfd = (uint32_t)pc->fd, .newfd_flags = (uint32_t)(pc->flags & O_CLOEXEC),
                };
                error = ioctl(pc->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0 ? errno : 0;
        }
        close(pc->sock);
        /* a listener that failed shows on its own poll */
        (void)respond(pc->listener, pc->id, error);
}

static void drop(struct connect_notify *cn, size_t i)
{
        cn->pending[i] = cn->pending[--cn->n];
}

/* Room for one more pending connect: true when there is, after the
 * entries whose notification has gone were dropped. */
static bool make_room(struct connect_notify *cn)
{
        if (cn->n < CONNECT_NOTIFY_PENDING_MAX)
                return true;
        for (size_t i = cn->n; i-- > 0;)
                if (!still_waits(cn->pending[i].listener, cn->pending[i].id)) {
                        close(cn->pending[i].sock);
                        drop(cn, i);
                }
        return cn->n < CONNECT_NOTIFY_PENDING_MAX;
}

void connect_notify_init(struct connect_notify *cn, uint16_t proxy_port)
{
        cn->port = proxy_port;
        cn->n = 0;
}

int connect_notify_handle(struct connect_notify *cn, int listener)
{
        struct seccomp_notif req;
        memset(&req, 0, sizeof(req));
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
                /* EINTR; ENOENT: the task died before we took it */
                if (errno == EINTR || errno == ENOENT)
                        return 0;
                return -errno;
        }
        struct connect_pending pc;
        bool v6 = false;
        int error = judge(listener, &req, cn->port, &pc, &v6);
        if (!error && !make_room(cn))
                error = ECONNREFUSED;   /* the top of this file says why */
        if (!error) {
                pc.sock = proxy_connect_start(v6, cn->port);
                if (pc.sock < 0)
                        error = ECONNREFUSED;
        }
        if (error)
                return respond(listener, req.id, error);
        /* loopback: the handshake is mostly over by now */
        int r = proxy_connect_result(pc.sock);
        if (r <= 0) {
                finish(&pc, r);
                return 0;
        }
        pc.deadline_ms = now_monotonic_ms() + PROXY_CONNECT_MS;
        cn->pending[cn->n++] = pc;
        return 0;
}

size_t connect_notify_pollfds(const struct connect_notify *cn, struct pollfd *p)
{
        for (size_t i = 0; i < cn->n; i++)
                p[i] = (struct pollfd) { .fd = cn->pending[i].sock, .events = POLLOUT };
        return cn->n;
}

int connect_notify_timeout(const struct connect_notify *cn)
{
        if (cn->n == 0)
                return -1;
        uint64_t now = now_monotonic_ms(), next = UINT64_MAX;
        for (size_t i = 0; i < cn->n; i++)
                next = MIN(next, cn->pending[i].deadline_ms);
        return next <= now ? 0 : (int)MIN(next - now, (uint64_t)PROXY_CONNECT_MS);
}

/* Every pending socket is looked at, not only those poll() named: a
 * look costs one poll(2) of one fd, and there are few. */
void connect_notify_step(struct connect_notify *cn)
{
        uint64_t now = now_monotonic_ms();
        for (size_t i = cn->n; i-- > 0;) {
                struct connect_pending *pc = &cn->pending[i];
                int r = proxy_connect_result(pc->sock);
                if (r == 1 && now < pc->deadline_ms)
                        continue;
                finish(pc, r == 1 ? -ETIMEDOUT : r);
                drop(cn, i);
        }
}

void connect_notify_forget(struct connect_notify *cn, int listener)
{
        for (size_t i = cn->n; i-- > 0;)
                if (cn->pending[i].listener == listener) {
                        close(cn->pending[i].sock);
                        drop(cn, i);
                }
}
