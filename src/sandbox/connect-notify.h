/* connect-notify.h - network allow in the landlock tier: the job's
 * connect(2) answered by its init, which connects hutch's egress proxy
 * for it (the security argument is at the top of connect-notify.c).
 *
 * The job's socket filter (seccomp.h, SECCOMP_SOCKETS_TCP) sends every
 * connect(2) to a user-notification listener; the job hands the
 * listener to init before its exec (connect_notify_send) and init
 * answers each notification (connect_notify_handle) from its loop.
 *
 * init never waits for the proxy: a connect the proxy has not taken yet
 * (its listen backlog is full) waits in struct connect_notify, and
 * init's loop polls it (connect_notify_pollfds, _timeout) and finishes
 * it (connect_notify_step) when it completes, fails or times out.
 */
#pragma once

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/* The job's side, before its exec: send listener over sock (init's
 * socketpair) and close both. 0 or -errno. */
int connect_notify_send(int sock, int listener);

/* init's side, after the job exec'd: take the listener from sock (and
 * close sock). The listener fd, or -errno (-ECONNRESET: the job sent
 * none, having failed before). */
int connect_notify_receive(int sock);

/* How many of the job's connects may wait for the proxy at once, over
 * all the listeners of one init; one more is refused at once. */
#define CONNECT_NOTIFY_PENDING_MAX 64

/* One connect(2) of the job's that init is connecting to the proxy. */
struct connect_pending {
        int listener;           /* the notification's listener */
        uint64_t id;            /* the notification */
        int sock;               /* init's socket, connecting */
        int fd;                 /* the job's fd number it will replace */
        int flags;              /* that fd's O_NONBLOCK and O_CLOEXEC */
        uint64_t deadline_ms;   /* CLOCK_MONOTONIC: refused after it */
};

struct connect_notify {
        uint16_t port;          /* the proxy's, on 127.0.0.1 */
        size_t n;
        struct connect_pending pending[CONNECT_NOTIFY_PENDING_MAX];
};

void connect_notify_init(struct connect_notify *cn, uint16_t proxy_port);

/* Take one notification waiting on listener: when the job asked to
 * connect to 127.0.0.1:proxy_port (or ::ffff:127.0.0.1 on an IPv6
 * socket), a socket connected to it by init takes the place of the
 * job's, and connect returns 0, now or (the proxy slow to take it) from
 * connect_notify_step(); anything else is refused with EACCES at once.
 * 0 when a notification was taken or had gone (its task died), or
 * -errno when the listener itself failed (the job is gone: -ENOENT or
 * -EBADF; init stops polling it, after connect_notify_forget()). */
int connect_notify_handle(struct connect_notify *cn, int listener);

/* What init's poll() waits for besides its own fds: the pending
 * connects' sockets, written to p (room for CONNECT_NOTIFY_PENDING_MAX);
 * returns how many. And the poll's timeout: milliseconds to the nearest
 * deadline, or -1 with none pending. */
size_t connect_notify_pollfds(const struct connect_notify *cn, struct pollfd *p);
int connect_notify_timeout(const struct connect_notify *cn);

/* After init's poll(): answer every pending connect that completed,
 * failed or ran out of time. */
void connect_notify_step(struct connect_notify *cn);

/* listener is going away (every task under it is gone): drop its
 * pending connects, before its fd is closed and its number reused. */
void connect_notify_forget(struct connect_notify *cn, int listener);
