/* run/live-publish.c - published ports of a live sandbox (see
 * run/live-publish.h): the host listeners, and the relay the
 * supervisor runs for every connection to them.
 *
 * A connection's way: accept on 127.0.0.1:HOST_PORT (host) -> ask init
 * for a socket (SANDBOX_MSG_SOCKET) -> init makes an unconnected TCP
 * socket in the sandbox's network namespace and sends it back with
 * SCM_RIGHTS (SYNC_SOCKET) -> check it -> connect it, non-blocking, to
 * 127.0.0.1:PORT -> relay both ways (net/relay.c: splice through two
 * pipes) -> record it when it ends (the supervisor commits it in its
 * next batch, live-conns.c; one still open at the stop, at the stop).
 *
 * Security: what a published port opens, and to whom.
 *  - The host side listens on 127.0.0.1 only: the address is the
 *    constant INADDR_LOOPBACK, never taken from the user (a spec naming
 *    another address is refused), so nothing off the host can connect.
 *    Any local user of the host can, as to any loopback port; a port is
 *    published only on the caller's request, and documented so.
 *  - No setns, and no process of the host's enters the sandbox. A
 *    socket's network namespace is fixed when it is made, so the socket
 *    for the sandbox side is made by the sandbox's own init, which is in
 *    that namespace already; the supervisor only connects it. The
 *    request carries no data, and init runs no job code (jobs are forked
 *    and exec'd; init.c). Even so, the fd that comes back is not
 *    trusted: it must be a TCP/IPv4 stream socket, not connected, whose
 *    network namespace (SIOCGSKNS) is init's and is not the
 *    supervisor's own. Then connect(127.0.0.1:PORT) can reach only a
 *    listener in the sandbox's namespace, which has no device but lo:
 *    what the relay reaches is what the sandbox could reach itself.
 *    Options set on it before it came cannot stall us: it is made
 *    non-blocking and its SO_LINGER switched off (close() lingers even
 *    on a non-blocking socket).
 *  - The other way is closed: nothing in the sandbox can reach the
 *    host listener (another namespace's loopback), and the relay only
 *    ever connects into the sandbox, never out of it. No fd of this
 *    module crosses into the sandbox: the listeners are made before the
 *    clone and the sandbox child closes every fd it does not need
 *    (sandbox.c); the sockets init made go out of init and are closed
 *    there.
 *  - The bytes are the sandbox's and the client's: relayed, never
 *    parsed. Everything is non-blocking, memory is bounded
 *    (LIVE_PUBLISH_CONNS connections, each two pipes; a connection
 *    beyond the limit is reset at once and recorded), a connect that
 *    does not complete in CONNECT_MS is given up, and a peer that never
 *    reads only stops its own connection's direction: no connection can
 *    stall the supervisor's loop, its execs or another connection.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"
#include "net/relay.h"
#include "record/store.h"
#include "run/live-publish.h"
#include "sandbox/sync.h"

#define CONNECT_MS 5000
/* Connections kept in the record; the rest are counted in a summary. */
#define MAX_RECORDS 10000

enum conn_state { C_FREE, C_WANT_SOCKET, C_CONNECTING, C_RELAY };

/* Direction 0: host client -> sandbox (bytes_in); 1: sandbox -> client (bytes_out). */
struct conn {
        enum conn_state state;
        size_t port;            /* index in ports */
        int cfd, sfd;           /* host client; the sandbox side */
        uint64_t seq;           /* order of its socket request */
        uint64_t start_ms, wall_ms, deadline_ms;
        int pipe[2][2];
        size_t inpipe[2], len[2], cap;
        uint8_t *buf[2];        /* only without pipes */
        bool eof[2], shut[2];
        uint64_t bytes[2];
        uint64_t moved_ms;      /* when bytes last went either way */
};

struct live_publish {
        struct live_port *ports;
        size_t n_ports;
        int sync_fd;
        pid_t init_pid;
        struct stat netns;      /* init's network namespace (st_ino 0: not known yet) */
        struct stat own_netns;
        struct conn conns[LIVE_PUBLISH_CONNS];
        size_t n_open;
        uint64_t seq, total;
        json_t *records;        /* ended, not yet taken (live_publish_take()) */
        uint64_t kept, dropped;
};

int live_publish_parse(const char *spec, struct live_port *ret, const char **ret_why)
{
        unsigned long v[3];
        size_t n = 0;
        const char *s = spec;

        if (startswith(s, "127.0.0.1:"))
                s += strlen("127.0.0.1:");
        else if (strchr(s, '.') || strchr(s, '[') || strchr(s, ']')) {
                *ret_why = "only 127.0.0.1 is published on the host";
                return -EINVAL;
        }
        for (;;) {
                char *end;
                if (n == 2 || !(*s >= '0' && *s <= '9')) {
                        *ret_why = "expected [HOST_PORT:]PORT";
                        return -EINVAL;
                }
                errno = 0;
                v[n++] = strtoul(s, &end, 10);
                if (errno || v[n - 1] > 65535 || (*end && *end != ':')) {
                        *ret_why = errno || v[n - 1] > 65535 ? "a port is 1-65535" : "expected [HOST_PORT:]PORT";
                        return -EINVAL;
                }
                if (!*end)
                        break;
                s = end + 1;
        }
        if (v[n - 1] == 0) {
                *ret_why = "the port inside is 1-65535";
                return -EINVAL;
        }
        *ret = (struct live_port) { .host_port = n == 2 ? (uint16_t)v[0] : 0, .port = (uint16_t)v[n - 1], .fd = -1 };
        return 0;
}

int live_publish_bind(struct live_port *p)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(p->host_port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r = 0;

        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return r;
        }
        p->host_port = ntohs(sa.sin_port);
        p->fd = fd;
        return 0;
}

unsigned live_publish_unprivileged_start(void)
{
        _cleanup_free_ char *text = NULL;
        if (read_file("/proc/sys/net/ipv4/ip_unprivileged_port_start", &text, NULL) < 0)
                return 1024;
        return (unsigned)strtoul(text, NULL, 10);
}

static void netns_of_pid(pid_t pid, struct stat *st)
{
        char p[64];
        snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)pid);
        if (stat(p, st) < 0)
                st->st_ino = 0;
}

struct live_publish *live_publish_new(struct live_port *ports, size_t n, int sync_fd, pid_t init_pid)
{
        if (n == 0)
                return NULL;
        struct live_publish *p = xmalloc(sizeof(*p));
        *p = (struct live_publish) { .ports = ports, .n_ports = n, .sync_fd = sync_fd, .init_pid = init_pid,
                                     .records = json_array() };
        netns_of_pid(getpid(), &p->own_netns);
        for (size_t i = 0; i < ELEMENTSOF(p->conns); i++)
                p->conns[i] = (struct conn) { .cfd = -1, .sfd = -1, .pipe = { { -1, -1 }, { -1, -1 } } };
        return p;
}

void live_publish_ready(struct live_publish *p)
{
        /* Not at live_publish_new(): init may still be in the supervisor's
         * namespace then, joining the one built beside it (ns_netns_join())
         * only near the end of its setup; every socket it handed over would
         * then be refused as not its own. Once it says it is ready, its
         * namespace is final: init never joins another. */
        if (p)
                netns_of_pid(p->init_pid, &p->netns);
}

/* ---- the record -------------------------------------------------------- */

static void record(struct live_publish *p, const struct conn *c, const char *end)
{
        const struct live_port *port = &p->ports[c->port];
        if (p->kept >= MAX_RECORDS) {
                p->dropped++;
                return;
        }
        char dest[32], rule[48];
        snprintf(dest, sizeof(dest), "127.0.0.1:%u", port->port);
        snprintf(rule, sizeof(rule), "publish 127.0.0.1:%u:%u", port->host_port, port->port);
        json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "proto", "tcp", "time_ms",
                              (json_int_t)c->wall_ms, "dest", dest, "decision", "published", "rule", rule,
                              "reason", "published port", "bytes_in", (json_int_t)c->bytes[0], "bytes_out",
                              (json_int_t)c->bytes[1], "duration_ms",
                              (json_int_t)(now_monotonic_ms() - c->start_ms));
        if (o && end)
                json_object_set_new(o, "end", json_string(end));
        if (o && json_array_append_new(p->records, o) == 0)
                p->kept++;
}

void live_publish_take(struct live_publish *p, json_t *into)
{
        if (!p)
                return;
        json_array_extend(into, p->records);
        json_array_clear(p->records);
}

/* ---- connections --------------------------------------------------------- */

/* End c: reset the client when it never got through (refused, limit),
 * so it fails at once rather than seeing an empty answer. */
static void conn_end(struct live_publish *p, struct conn *c, const char *end, bool reset)
{
        record(p, c, end);
        if (reset && c->cfd >= 0)
                (void)setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &(struct linger) { 1, 0 }, sizeof(struct linger));
        int fds[] = { c->cfd, c->sfd, c->pipe[0][0], c->pipe[0][1], c->pipe[1][0], c->pipe[1][1] };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(c->buf[0]);
        free(c->buf[1]);
        *c = (struct conn) { .cfd = -1, .sfd = -1, .pipe = { { -1, -1 }, { -1, -1 } } };
        p->n_open--;
}

static struct relay_flow flow(struct conn *c, int d)
{
        return (struct relay_flow) {
                .src = d == 0 ? c->cfd : c->sfd, .dst = d == 0 ? c->sfd : c->cfd,
                .buf = c->buf[d], .len = &c->len[d], .pipe = c->pipe[d], .inpipe = &c->inpipe[d],
                .cap = c->cap, .eof = &c->eof[d], .shut = &c->shut[d], .count = &c->bytes[d],
        };
}

static bool pending(const struct conn *c, int d)
{
        return c->len[d] > 0 || c->inpipe[d] > 0;
}

static void start_relay(struct conn *c)
{
        c->state = C_RELAY;
        c->moved_ms = now_monotonic_ms();
        c->cap = relay_open_pipes(c->pipe[0], c->pipe[1]);
        if (c->cap == 0) {
                /* no pipes: bounded buffers carry it all */
                c->buf[0] = xmalloc(RELAY_BUF_SIZE);
                c->buf[1] = xmalloc(RELAY_BUF_SIZE);
        }
}

/* A new client on ports[i]: take it, and ask init for its socket. */
static void conn_accept(struct live_publish *p, size_t i)
{
        /* a few per wake-up, so a flood on one port cannot starve the rest */
        for (int k = 0; k < 8; k++) {
                int fd = accept4(p->ports[i].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                struct conn *c = NULL;
                for (size_t j = 0; j < ELEMENTSOF(p->conns) && !c; j++)
                        if (p->conns[j].state == C_FREE)
                                c = &p->conns[j];
                struct conn over = { .cfd = fd, .sfd = -1, .pipe = { { -1, -1 }, { -1, -1 } } };
                bool full = !c;
                if (full)
                        c = &over;
                *c = (struct conn) { .state = C_WANT_SOCKET, .port = i, .cfd = fd, .sfd = -1,
                                     .pipe = { { -1, -1 }, { -1, -1 } }, .start_ms = now_monotonic_ms(),
                                     .wall_ms = now_realtime_ms() };
                p->n_open++;
                if (full) {
                        conn_end(p, c, "connection limit", true);
                        continue;
                }
                char op = SANDBOX_MSG_SOCKET;
                if (send(p->sync_fd, &op, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                        conn_end(p, c, "no socket from the sandbox", true);
                        continue;
                }
                c->seq = ++p->seq;
        }
}

/* The fd init sent is what it must be: a TCP/IPv4 stream socket, not
 * connected, in init's network namespace and not in ours. */
static bool socket_ok(const struct live_publish *p, int fd)
{
        int v;
        socklen_t len = sizeof(v);
        struct stat st;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);

        if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
                return false;
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != AF_INET)
                return false;
        len = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_STREAM)
                return false;
        len = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &len) < 0 || v != IPPROTO_TCP)
                return false;
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 || errno != ENOTCONN)
                return false;
        /* needs CAP_NET_ADMIN over the namespace's user namespace: ours
         * (root), or one our uid made (the sandbox's) */
        int ns = ioctl(fd, SIOCGSKNS);
        if (ns < 0)
                return false;
        bool same = fstat(ns, &st) == 0 && p->netns.st_ino != 0 && st.st_ino == p->netns.st_ino &&
                    st.st_dev == p->netns.st_dev &&
                    !(st.st_ino == p->own_netns.st_ino && st.st_dev == p->own_netns.st_dev);
        close(ns);
        return same;
}

void live_publish_socket(struct live_publish *p, int fd, int error)
{
        struct conn *c = NULL;
        if (!p) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(p->conns); i++)
                if (p->conns[i].state == C_WANT_SOCKET && p->conns[i].seq &&
                    (!c || p->conns[i].seq < c->seq))
                        c = &p->conns[i];
        if (!c) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        if (fd < 0 || error || !socket_ok(p, fd)) {
                if (fd >= 0)
                        close(fd);
                conn_end(p, c, "no socket from the sandbox", true);
                return;
        }
        c->sfd = fd;
        /* whatever init set on it: close() must not linger (it would,
         * even non-blocking), and no call on it may block */
        (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger) { 0, 0 }, sizeof(struct linger));
        (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(p->ports[c->port].port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
                start_relay(c);
        } else if (errno == EINPROGRESS) {
                c->state = C_CONNECTING;
                c->deadline_ms = now_monotonic_ms() + CONNECT_MS;
        } else {
                conn_end(p, c, errno == ECONNREFUSED ? "refused" : "connect failed", true);
        }
}

void live_publish_poll(const struct live_publish *p, struct pollfd *pfd, bool accept)
{
        for (size_t i = 0; i < LIVE_PUBLISH_POLL; i++)
                pfd[i] = (struct pollfd) { .fd = -1 };
        if (!p)
                return;
        for (size_t i = 0; i < p->n_ports; i++)
                if (accept)
                        pfd[i] = (struct pollfd) { .fd = p->ports[i].fd, .events = POLLIN };
        for (size_t i = 0; i < ELEMENTSOF(p->conns); i++) {
                const struct conn *c = &p->conns[i];
                struct pollfd *cp = &pfd[LIVE_PUBLISH_MAX + 2 * i], *sp = cp + 1;
                short ce = 0, se = 0;
                if (c->state == C_CONNECTING)
                        se = POLLOUT;
                if (c->state == C_RELAY) {
                        struct relay_flow up = flow((struct conn *)c, 0), down = flow((struct conn *)c, 1);
                        if (!c->eof[0] && relay_room(&up))
                                ce |= POLLIN;
                        if (pending(c, 1))
                                ce |= POLLOUT;
                        if (!c->eof[1] && relay_room(&down))
                                se |= POLLIN;
                        if (pending(c, 0))
                                se |= POLLOUT;
                }
                /* an fd with nothing to wait for is not polled: its
                 * hang-up would wake us for nothing */
                if (ce)
                        *cp = (struct pollfd) { .fd = c->cfd, .events = ce };
                if (se)
                        *sp = (struct pollfd) { .fd = c->sfd, .events = se };
        }
}

static void relay_step(struct live_publish *p, struct conn *c, short crev, short srev)
{
        uint64_t before = c->bytes[0] + c->bytes[1];
        for (int d = 0; d < 2; d++) {
                struct relay_flow f = flow(c, d);
                int r = relay_pump(&f, &p->total, 0);
                if (r < 0) {
                        conn_end(p, c, "reset", false);
                        return;
                }
        }
        if (c->bytes[0] + c->bytes[1] != before)
                c->moved_ms = now_monotonic_ms();
        if (c->shut[0] && c->shut[1]) {
                conn_end(p, c, NULL, false);
                return;
        }
        /* an error on a socket we wait on that no read or write saw */
        if ((crev | srev) & POLLERR)
                conn_end(p, c, "reset", false);
}

void live_publish_run(struct live_publish *p, const struct pollfd *pfd)
{
        if (!p)
                return;
        uint64_t now = now_monotonic_ms();
        for (size_t i = 0; i < ELEMENTSOF(p->conns); i++) {
                struct conn *c = &p->conns[i];
                const struct pollfd *cp = &pfd[LIVE_PUBLISH_MAX + 2 * i], *sp = cp + 1;
                short crev = cp->fd >= 0 ? cp->revents : 0, srev = sp->fd >= 0 ? sp->revents : 0;
                if (c->state == C_CONNECTING && srev) {
                        int err = 0;
                        socklen_t len = sizeof(err);
                        if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                                err = errno;
                        if (err)
                                conn_end(p, c, err == ECONNREFUSED ? "refused" : "connect failed", true);
                        else
                                start_relay(c);
                } else if (c->state == C_CONNECTING && now >= c->deadline_ms) {
                        conn_end(p, c, "connect timeout", true);
                } else if (c->state == C_RELAY && (crev || srev)) {
                        relay_step(p, c, crev, srev);
                }
        }
        for (size_t i = 0; i < p->n_ports; i++)
                if (pfd[i].fd >= 0 && (pfd[i].revents & POLLIN))
                        conn_accept(p, i);
}

int live_publish_timeout(const struct live_publish *p)
{
        uint64_t until = 0, now = now_monotonic_ms();
        if (!p)
                return -1;
        for (size_t i = 0; i < ELEMENTSOF(p->conns); i++)
                if (p->conns[i].state == C_CONNECTING && (!until || p->conns[i].deadline_ms < until))
                        until = p->conns[i].deadline_ms;
        if (!until)
                return -1;
        return until <= now ? 0 : (int)MIN(until - now, (uint64_t)INT32_MAX);
}

/* How long after its last byte a half-closed connection still counts
 * as use. */
#define HALF_OPEN_USE_MS 1000

bool live_publish_busy(const struct live_publish *p)
{
        if (!p || p->n_open == 0)
                return false;
        uint64_t now = now_monotonic_ms();
        for (size_t i = 0; i < ELEMENTSOF(p->conns); i++) {
                const struct conn *c = &p->conns[i];
                if (c->state == C_FREE)
                        continue;
                /* being set up, or open both ways: in use */
                if (c->state != C_RELAY || (!c->eof[0] && !c->eof[1]))
                        return true;
                /* One side has closed (a client that went away looks so
                 * until a write to it fails, and a server that never
                 * writes again never tries): in use only while bytes
                 * still move, or it would keep the sandbox up for good. */
                if (now - c->moved_ms < HALF_OPEN_USE_MS)
                        return true;
        }
        return false;
}

char *live_publish_state_json(const struct live_port *ports, size_t n)
{
        if (n == 0)
                return xstrdup("");
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, json_pack("{s:s, s:i, s:i}", "host", "127.0.0.1", "host_port",
                                                   (int)ports[i].host_port, "port", (int)ports[i].port));
        char *j = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        char *s = xasprintf(",\"ports\":%s", j ? j : "[]");
        free(j);
        return s;
}

int live_publish_finish(struct live_publish *p, const char *run_id)
{
        _cleanup_free_ char *path = NULL, *err = NULL;
        struct store *s = NULL;
        int r = 0;

        if (!p)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(p->conns); i++)
                if (p->conns[i].state != C_FREE)
                        conn_end(p, &p->conns[i], "sandbox stopped", false);
        for (size_t i = 0; i < p->n_ports; i++)
                if (p->ports[i].fd >= 0)
                        close(TAKE_FD(p->ports[i].fd));
        if (p->dropped) {
                json_t *o = json_pack("{s:s, s:I, s:I, s:s}", "proto", "summary", "time_ms",
                                      (json_int_t)now_realtime_ms(), "dropped", (json_int_t)p->dropped,
                                      "reason", "published port connections not kept");
                if (o)
                        json_array_append_new(p->records, o);
        }
        if (json_array_size(p->records) > 0) {
                r = store_default_path(&path);
                if (r >= 0)
                        r = store_open(path, &s, &err);
                if (r >= 0)
                        r = store_connections_add(s, run_id, p->records);
                store_close(s);
        }
        json_decref(p->records);
        free(p);
        return r;
}
