/* run/live-control.c - the requests on a live sandbox's control socket
 * (see live-serve.h): who may connect (live_peer_check(), argued in
 * live.c's header), how a request is read without ever blocking the
 * supervisor's loop, and which part of the supervisor serves each. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "run/live-internal.h"
#include "run/live-serve.h"

/* The request of a connection that has sent it (SOCK_SEQPACKET: it
 * comes whole, in one recv). */
static void request(struct live *l, int fd, pid_t client, const char *buf, size_t n)
{
        if (l->fork.fd >= 0 && (buf[0] == LIVE_OP_EXEC || buf[0] == LIVE_OP_KERNEL)) {
                /* a fork is copying the workspace: nothing new starts */
                struct live_reply busy = { .op = LIVE_OP_BUSY, .version = LIVE_WIRE_VERSION };
                (void)send(fd, &busy, sizeof(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
                close(fd);
                return;
        }
        switch (buf[0]) {
        case LIVE_OP_FORK:
                live_fork_request(&l->fork, l->cfg, l->opts, l->run_id, l->sb->workspace_fd, l->sb->cgroup, fd);
                return;
        case LIVE_OP_EXEC:
                live_exec_start(l, fd, client, buf, n);
                return;
        case LIVE_OP_KERNEL:
                live_kernels_request(l->kernels, l, fd, client, buf, (size_t)n);
                return;
        case LIVE_OP_STOP:
                l->why = "stopped (hutch sandbox stop)";
                if (l->stopper < 0)
                        l->stopper = fd;        /* closes when we exit */
                else
                        close(fd);
                return;
        case LIVE_OP_PING: {
                struct live_reply p = { .op = LIVE_OP_PONG, .version = LIVE_WIRE_VERSION };
                (void)send(fd, &p, sizeof(p), MSG_NOSIGNAL | MSG_DONTWAIT);
                break;
        }
        }
        close(fd);
}

/* A pending connection is readable: its request, or its end. */
static void pending_read(struct live *l, struct pending *pe)
{
        static char buf[sizeof(struct live_req) + PATH_MAX + LIVE_ARGV_MAX + 1];
        ssize_t n = recv(pe->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        int fd = TAKE_FD(pe->fd);
        if (n <= 0) {
                close(fd);
                return;
        }
        request(l, fd, pe->pid, buf, (size_t)n);
}

/* A new connection on the control socket: checked, then it waits
 * among the pending ones for its request. */
void live_control(struct live *l, int lfd)
{
        struct pending *slot = NULL;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
                return;
        if (live_peer_check(fd) < 0) {
                log_warning("sandbox %s: refused a connection from outside this user's namespace",
                            l->opts->name);
                close(fd);
                return;
        }
        /* a free entry, or the one that has waited longest */
        for (size_t i = 0; i < ELEMENTSOF(l->pend); i++) {
                struct pending *pe = &l->pend[i];
                if (pe->fd < 0) {
                        slot = pe;
                        break;
                }
                if (!slot || pe->since_ms < slot->since_ms)
                        slot = pe;
        }
        if (slot->fd >= 0)
                close(slot->fd);
        struct ucred uc = { 0 };
        socklen_t len = sizeof(uc);
        (void)getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len);
        *slot = (struct pending) { .fd = fd, .pid = uc.pid, .since_ms = now_monotonic_ms() };
        /* a client sends its request right after connecting: it is
         * usually there already */
        pending_read(l, slot);
}

/* Pending connections: a request that came is served, one that did
 * not come in time is given up (p: their poll entries). */
void live_check_pending(struct live *l, const struct pollfd *p)
{
        uint64_t now = now_monotonic_ms();
        for (size_t i = 0; i < ELEMENTSOF(l->pend); i++) {
                struct pending *pe = &l->pend[i];
                if (pe->fd >= 0 && p[i].fd == pe->fd && p[i].revents)
                        pending_read(l, pe);
                if (pe->fd >= 0 && now >= pe->since_ms + LIVE_REQUEST_MS)
                        close(TAKE_FD(pe->fd));
        }
}

