/* run/live-publish.h - published ports of a live sandbox
 * (`hutch sandbox start --publish [HOST_PORT:]PORT`): 127.0.0.1:HOST_PORT
 * on the host relayed to 127.0.0.1:PORT in the sandbox's network
 * namespace. The security argument is in live-publish.c's header.
 *
 * Two halves. `sandbox start` parses the options and binds the host
 * listeners before the supervisor forks (so a port in use or refused
 * is the caller's error, and an auto-picked port is known at once); the
 * supervisor's loop (live.c) then serves them: it polls the fds this
 * module asks for, hands it init's answers (a socket made in the
 * sandbox's netns), takes each connection's record when it ends
 * (live-conns.c commits it with the sandbox's run), and at the end
 * records the connections still open. Every call takes a NULL struct live_publish (no port
 * published) and then does nothing.
 */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* Ports published at most, per sandbox. */
#define LIVE_PUBLISH_MAX 16
/* Connections relayed at once, over all ports; one more is reset. */
#define LIVE_PUBLISH_CONNS 64
/* The pollfd entries live_publish_poll() fills. */
#define LIVE_PUBLISH_POLL (LIVE_PUBLISH_MAX + 2 * LIVE_PUBLISH_CONNS)

struct live_port {
        uint16_t host_port;     /* 0: any (the kernel's pick); the bound one after live_publish_bind() */
        uint16_t port;          /* inside the sandbox, 1-65535 */
        int fd;                 /* the host listener, or -1 */
};

/* Parse "[127.0.0.1:][HOST_PORT:]PORT" into *ret (fd -1). 0, or -EINVAL
 * with *ret_why saying what is wrong. */
int live_publish_parse(const char *spec, struct live_port *ret, const char **ret_why);

/* Bind and listen on 127.0.0.1:p->host_port (non-blocking, close-on-exec)
 * and fill in the port the kernel picked. 0 or -errno (-EACCES: a
 * privileged port without the privilege; -EADDRINUSE). */
int live_publish_bind(struct live_port *p);

/* The lowest port an unprivileged process may bind
 * (net.ipv4.ip_unprivileged_port_start; 1024 when unreadable). */
unsigned live_publish_unprivileged_start(void);

struct live_publish;

/* The supervisor's side, once the sandbox is up. Takes over the
 * listeners' fds (sets ports[i].fd to -1 when it closes them). sync_fd:
 * the channel to init (SANDBOX_MSG_SOCKET goes there); init_pid: init's
 * pid on the host, whose network namespace every socket init hands back
 * must be in. NULL when n is 0. */
struct live_publish *live_publish_new(struct live_port *ports, size_t n, int sync_fd, pid_t init_pid);

/* The sandbox said it is ready (its setup done): from now on a socket
 * init hands back must be in the network namespace init is in now. */
void live_publish_ready(struct live_publish *p);

/* Fill pfd[0..LIVE_PUBLISH_POLL) with what to wait for (unused: fd -1).
 * Listeners are polled only when accept is true. */
void live_publish_poll(const struct live_publish *p, struct pollfd *pfd, bool accept);
/* Act on what poll() said of those entries, and on connect deadlines. */
void live_publish_run(struct live_publish *p, const struct pollfd *pfd);
/* Milliseconds until the next connect deadline, or -1 for none. */
int live_publish_timeout(const struct live_publish *p);
/* Connections in use now (the idle timeout waits for them): open both
 * ways, or half-closed with bytes moving in the last second. */
bool live_publish_busy(const struct live_publish *p);

/* init's answer to a SANDBOX_MSG_SOCKET (SYNC_SOCKET): fd (ours from
 * here on) or -1 with error, for the oldest connection waiting for one. */
void live_publish_socket(struct live_publish *p, int fd, int error);

/* Move the records of the connections that ended since the last call
 * (objects of hutch-run(1)'s connections) to the end of into. */
void live_publish_take(struct live_publish *p, json_t *into);

/* ,"ports":[{"host":"127.0.0.1","host_port":H,"port":P},...] for the
 * sandbox's state file, or "" without ports. A new string. */
char *live_publish_state_json(const struct live_port *ports, size_t n);

/* The sandbox is gone: close every connection and listener, store what
 * was relayed and not yet taken as rows of the sandbox's run's connections (see
 * hutch-sandbox(1)), free p. 0 or -errno (the store failed). */
int live_publish_finish(struct live_publish *p, const char *run_id);
