/* netns.h - the sandbox's side of `network = allow`: run inside the new
 * network namespace, during setup, before the job exists. It makes
 * every destination local (so no packet can leave: there is no device
 * but lo) and opens the sockets that catch what the job sends there;
 * they go to the supervisor's egress helper and are closed here, so the
 * job never holds one.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

enum netns_fd_kind {
        NETNS_FD_TCP,           /* listener on one port, any address */
        NETNS_FD_PROXY,         /* listener of the HTTP proxy (HTTP_PROXY points here) */
        NETNS_FD_DNS4,          /* UDP port 53, IPv4, any address */
        NETNS_FD_DNS6,          /* UDP port 53, IPv6 only, any address */
        _NETNS_FD_KIND_MAX,
        _NETNS_FD_KIND_INVALID = -EINVAL,
};

/* At most this many fds travel in one message (SCM_MAX_FD is 253). */
#define NETNS_MAX_FDS 200
/* The proxy's port inside (HTTP_PROXY=http://127.0.0.1:3128). */
#define NETNS_PROXY_PORT 3128

struct netns_fd_info {
        uint16_t kind;          /* enum netns_fd_kind */
        uint16_t port;
};

/* In the new netns, with CAP_NET_ADMIN there: route every IPv4 and IPv6
 * destination to lo, open a listener per port (and the proxy's unless
 * ports holds it), and the DNS sockets; send them all over sock and
 * close them. Returns 0 or -errno; *ret_step names what failed. */
int netns_capture_setup(int sock, const uint16_t *ports, size_t n_ports, const char **ret_step);

/* Send n fds with their info over sock, as netns_capture_setup() does
 * (the landlock tier sends its proxy listener from the supervisor). 0
 * or -errno. */
int netns_capture_send(int sock, const int *fds, const struct netns_fd_info *info, size_t n);

/* The supervisor's side: receive what netns_capture_setup() sent. Fills
 * fds[] and info[] (room for NETNS_MAX_FDS); returns the count or
 * -errno. */
int netns_capture_receive(int sock, int *fds, struct netns_fd_info *info);
