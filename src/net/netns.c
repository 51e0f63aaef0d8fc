/* netns.c - routes and capture sockets inside the sandbox's network
 * namespace (see netns.h).
 *
 * Why a "local" route and per-port listeners, and not nftables or an
 * external user-mode stack:
 *  - `local 0.0.0.0/0 dev lo` (and ::/0) in the namespace's local table
 *    makes the kernel treat every address as the namespace's own, so a
 *    connect() to any IP completes on a socket we listen with on that
 *    port, and getsockname() of the accepted socket is the address the
 *    job dialled. It takes one rtnetlink message and CAP_NET_ADMIN over
 *    the namespace, which the sandbox's user namespace gives; no
 *    netfilter module, no conntrack, nothing the host must allow.
 *  - nftables REDIRECT would catch every port but needs nf_tables, NAT
 *    and conntrack modules the host may not load for a user namespace,
 *    and a netlink dialect of its own; pasta/slirp4netns are external
 *    programs, and the supervisor execs nothing but the job.
 * The price: a port no rule allows has no listener, so such a
 * connection is refused by the kernel inside the namespace (fail
 * closed: it reaches nothing) and is not in the run's log.
 *
 * Safety: the namespace has no device but lo, so nothing the job sends
 * (TCP, UDP, ICMP, raw packets, were it able to make them) can leave it;
 * the only way out is a socket below, which the job never holds.
 */
#include "config.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/util.h"
#include "net/netns.h"

/* One RTM_NEWROUTE: local FAMILY/0 dev lo, table local. */
static int add_local_route(int family)
{
        struct {
                struct nlmsghdr nh;
                struct rtmsg rt;
                char attrs[32];
        } req = { 0 };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        char reply[512];
        unsigned lo = if_nametoindex("lo");

        if (lo == 0)
                return -errno;
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
                return -errno;
        req.nh.nlmsg_type = RTM_NEWROUTE;
        req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        req.nh.nlmsg_seq = 1;
        req.rt.rtm_family = (unsigned char)family;
        req.rt.rtm_dst_len = 0;
        req.rt.rtm_table = RT_TABLE_LOCAL;
        req.rt.rtm_protocol = RTPROT_BOOT;
        req.rt.rtm_scope = RT_SCOPE_HOST;
        req.rt.rtm_type = RTN_LOCAL;
        struct rtattr *a = (struct rtattr *)req.attrs;
        a->rta_type = RTA_OIF;
        a->rta_len = RTA_LENGTH(sizeof(int));
        memcpy(RTA_DATA(a), &(int){ (int)lo }, sizeof(int));
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_ALIGN(a->rta_len);

        if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
                return -errno;
        ssize_t n = recv(fd, reply, sizeof(reply), 0);
        if (n < 0)
                return -errno;
        struct nlmsghdr *h = (struct nlmsghdr *)reply;
        if (!NLMSG_OK(h, (unsigned)n) || h->nlmsg_type != NLMSG_ERROR)
                return -EPROTO;
        const struct nlmsgerr *e = NLMSG_DATA(h);
        return e->error;        /* 0 or -errno */
}

/* A listener on port, every address: dual-stack IPv6 when the namespace
 * has IPv6, else IPv4. */
static int tcp_listener(uint16_t port, bool v6)
{
        int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        int r;
        if (v6) {
                struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
                                           .sin6_addr = IN6ADDR_ANY_INIT };
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &(int){ 0 }, sizeof(int));
                r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        } else {
                struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                                          .sin_addr.s_addr = htonl(INADDR_ANY) };
                r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        }
        if (r < 0 || listen(fd, 128) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* UDP port 53 on every address of one family, telling us on each
 * datagram which address it was sent to, so the answer can come from
 * that very address (a resolver drops answers from any other). */
static int dns_socket(int family)
{
        int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        int r;
        if (family == AF_INET6) {
                struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(53),
                                           .sin6_addr = IN6ADDR_ANY_INIT };
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &(int){ 1 }, sizeof(int));
                r = setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &(int){ 1 }, sizeof(int));
                if (r == 0)
                        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        } else {
                struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53),
                                          .sin_addr.s_addr = htonl(INADDR_ANY) };
                r = setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &(int){ 1 }, sizeof(int));
                if (r == 0)
                        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        }
        if (r < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int netns_capture_send(int sock, const int *fds, const struct netns_fd_info *info, size_t n)
{
        char cbuf[CMSG_SPACE(NETNS_MAX_FDS * sizeof(int))] = { 0 };
        struct iovec iov = { .iov_base = (void *)info, .iov_len = n * sizeof(*info) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n * sizeof(int));
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

int netns_capture_setup(int sock, const uint16_t *ports, size_t n_ports, const char **ret_step)
{
        int fds[NETNS_MAX_FDS];
        struct netns_fd_info info[NETNS_MAX_FDS];
        size_t n = 0;
        bool proxy_taken = false;
        int r;

        if (n_ports + 3 > NETNS_MAX_FDS) {
                *ret_step = "egress listeners";
                return -E2BIG;
        }
        *ret_step = "egress route 0.0.0.0/0 to lo";
        r = add_local_route(AF_INET);
        if (r < 0)
                return r;
        /* IPv6 may be off in this kernel or namespace: then IPv6
         * destinations stay unreachable, which is closed too */
        bool v6 = add_local_route(AF_INET6) == 0;

        *ret_step = "egress listeners";
        for (size_t i = 0; i < n_ports; i++) {
                int fd = tcp_listener(ports[i], v6);
                if (fd < 0 && v6)
                        fd = tcp_listener(ports[i], false);
                if (fd < 0) {
                        r = fd;
                        goto out;
                }
                fds[n] = fd;
                info[n++] = (struct netns_fd_info) { NETNS_FD_TCP, ports[i] };
                proxy_taken = proxy_taken || ports[i] == NETNS_PROXY_PORT;
        }
        if (!proxy_taken) {
                int fd = tcp_listener(NETNS_PROXY_PORT, v6);
                if (fd < 0) {
                        r = fd;
                        goto out;
                }
                fds[n] = fd;
                info[n++] = (struct netns_fd_info) { NETNS_FD_PROXY, NETNS_PROXY_PORT };
        }
        *ret_step = "egress DNS stub";
        int fd = dns_socket(AF_INET);
        if (fd < 0) {
                r = fd;
                goto out;
        }
        fds[n] = fd;
        info[n++] = (struct netns_fd_info) { NETNS_FD_DNS4, 53 };
        if (v6 && (fd = dns_socket(AF_INET6)) >= 0) {
                fds[n] = fd;
                info[n++] = (struct netns_fd_info) { NETNS_FD_DNS6, 53 };
        }
        *ret_step = "egress hand-over";
        r = netns_capture_send(sock, fds, info, n);
out:
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        return r;
}

int netns_capture_receive(int sock, int *fds, struct netns_fd_info *info)
{
        char cbuf[CMSG_SPACE(NETNS_MAX_FDS * sizeof(int))];
        struct iovec iov = { .iov_base = info, .iov_len = NETNS_MAX_FDS * sizeof(*info) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = sizeof(cbuf) };
        ssize_t n;

        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ECONNRESET;     /* the sandbox failed before it got here */
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                return -EBADMSG;
        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(fds, CMSG_DATA(c), nfd * sizeof(int));
        if ((mh.msg_flags & MSG_CTRUNC) || nfd != (size_t)n / sizeof(*info)) {
                for (size_t i = 0; i < nfd; i++)
                        close(fds[i]);
                return -EBADMSG;
        }
        return (int)nfd;
}
