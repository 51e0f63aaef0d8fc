/* connect-notify.h - network allow in the landlock tier: the job's
 * connect(2) answered by its init, which connects hutch's egress proxy
 * for it (the security argument is at the top of connect-notify.c).
 *
 * The job's socket filter (seccomp.h, SECCOMP_SOCKETS_TCP) sends every
 * connect(2) to a user-notification listener; the job hands the
 * listener to init before its exec (connect_notify_send) and init
 * answers each notification (connect_notify_handle) from its loop.
 */
#pragma once

#include <stdint.h>

/* The job's side, before its exec: send listener over sock (init's
 * socketpair) and close both. 0 or -errno. */
int connect_notify_send(int sock, int listener);

/* init's side, after the job exec'd: take the listener from sock (and
 * close sock). The listener fd, or -errno (-ECONNRESET: the job sent
 * none, having failed before). */
int connect_notify_receive(int sock);

/* Answer one notification waiting on listener: when the job asked to
 * connect to 127.0.0.1:proxy_port (or ::ffff:127.0.0.1 on an IPv6
 * socket), a socket connected to it by init takes the place of the
 * job's, and connect returns 0; anything else is refused with EACCES.
 * 0 when a notification was answered or had gone (its task died), or
 * -errno when the listener itself failed (the job is gone: -ENOENT or
 * -EBADF; init stops polling it). */
int connect_notify_handle(int listener, uint16_t proxy_port);
