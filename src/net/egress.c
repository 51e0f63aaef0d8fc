/* egress.c - the egress helper process (see egress.h): its poll loop,
 * the stub DNS, the per-connection state machine (peek, decide,
 * connect, relay) and the report; and egress_start(), which forks it.
 * The supervisor's side after the run (reading the report, stopping
 * the helper) is in egress-report.c.
 *
 * Shape of the work: a job opens from a few to a few thousand
 * connections, at most max_connections at once; each has two bounded
 * buffers and two pipes (relay.c), so the helper's memory is bounded by
 * the limit, never by what the job sends. Everything is non-blocking except name
 * resolution (getaddrinfo, which stalls this process, never the
 * supervisor) and the end of the report.
 *
 * What the job controls and how it is held:
 *  - every byte it sends before a decision: at most PEEK_MAX bytes are
 *    read, for at most PEEK_MS, then the connection is judged on what
 *    arrived (no name: only address rules can allow it);
 *  - the DNS queries: parsed strictly (dns.c), answered from the rules
 *    only, with stand-in addresses from 198.18.0.0/15 that name the
 *    allowed host to this helper and to nobody else;
 *  - the number of connections and bytes: the limits close or refuse
 *    what goes beyond, and say so in the record.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/util.h"
#include "net/dns.h"
#include "net/confine.h"
#include "net/egress.h"
#include "net/netns.h"
#include "net/owner.h"
#include "net/peek.h"
#include "net/relay.h"
#include "net/resolve.h"

#define PEEK_MAX (16 * 1024)
#define PEEK_MS 1000
#define CONNECT_MS 10000
#define STUB_MAX 8192           /* names the stub DNS can stand in for */
#define STUB_TTL 5
#define OWN_MAX 64

enum conn_state { C_PEEK, C_CONNECTING, C_RELAY };

struct conn {
        int cfd, ufd;
        enum conn_state state;
        bool proxy;
        uint8_t *up, *down;     /* job -> upstream, upstream -> job */
        size_t up_len, down_len;
        int up_pipe[2], down_pipe[2];   /* relay pipes (splice), -1 if none */
        size_t up_inpipe, down_inpipe, pipe_cap;
        bool c_eof, u_eof, u_shut, c_shut;
        uint64_t start_ms, deadline_ms, start_wall_ms;
        uint64_t bytes_out, bytes_in;
        struct egress_addr dest;
        uint16_t dport;
        struct egress_addr peer;        /* the job's end */
        uint16_t pport;
        struct peek_result pk;
        struct egress_decision d;
        size_t addr_i;
        json_t *rec;
};

struct helper {
        const struct egress_params *p;
        int ctl;
        int fds[NETNS_MAX_FDS];
        struct netns_fd_info info[NETNS_MAX_FDS];
        size_t n_fds;
        struct conn **conns;
        size_t n_conns;
        char **stub_names;
        size_t n_stub;
        struct egress_addr own[OWN_MAX];
        size_t n_own;
        uint64_t bytes_total;
        uint64_t max_conns;     /* max_connections, or what the fd limit allows */
        char *out;              /* report lines not yet written to ctl */
        size_t out_len, out_off, out_cap;
        uint64_t kept[2];       /* records kept: [1] connections let through, [0] the rest */
        uint64_t dropped;
        bool bytes_exhausted;
};

/* ---- the record ------------------------------------------------------- */

/* The report is streamed: each decision goes to ctl as one JSON line
 * when it is made (a connection's when it ends), so a live sandbox's
 * supervisor records it while the sandbox runs (run/live-conns.c).
 * ctl is non-blocking while the loop runs: a supervisor that does not
 * read (a `hutch run` reads only at the end) leaves the lines here,
 * bounded by the caps in record(). */
static void report_line(struct helper *h, json_t *rec)
{
        _cleanup_free_ char *line = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(rec);
        if (!line)
                return;
        size_t n = strlen(line);
        if (h->out_off == h->out_len)
                h->out_off = h->out_len = 0;
        if (h->out_len + n + 1 > h->out_cap)
                h->out = xrealloc(h->out, h->out_cap = MAX(2 * h->out_cap, h->out_len + n + 1));
        memcpy(h->out + h->out_len, line, n);
        h->out[h->out_len + n] = '\n';
        h->out_len += n + 1;
}

/* Write what ctl takes now. false: the supervisor is gone. */
static bool report_flush(struct helper *h)
{
        while (h->out_off < h->out_len) {
                ssize_t w = write(h->ctl, h->out + h->out_off, h->out_len - h->out_off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return errno == EAGAIN;
                h->out_off += (size_t)w;
        }
        h->out_off = h->out_len = 0;
        return true;
}

/* Keep rec, or count it as dropped. Two caps of max_records each: the
 * connections that were let through, and the rest (DNS answers,
 * denied connections). A job makes the second kind cheaply (10,000 DNS
 * queries take half a second); with one cap, that noise made first
 * pushed out the record of what the job did reach later. */
static void record(struct helper *h, json_t *rec)
{
        const char *proto = json_string_value(json_object_get(rec, "proto"));
        const char *decision = json_string_value(json_object_get(rec, "decision"));
        bool reached = decision && streq(decision, "allowed") && !(proto && streq(proto, "dns"));

        if (h->p->max_records && h->kept[reached] >= h->p->max_records) {
                h->dropped++;
                json_decref(rec);
                return;
        }
        h->kept[reached]++;
        report_line(h, rec);
}

static json_t *new_record(const char *proto, uint64_t wall_ms)
{
        json_t *o = json_object();
        json_object_set_new(o, "proto", json_string(proto));
        json_object_set_new(o, "time_ms", json_integer((json_int_t)wall_ms));
        return o;
}

static void set_str(json_t *o, const char *key, const char *v)
{
        json_object_set_new(o, key, v && v[0] ? json_string(v) : json_null());
}

static char *addr_port_text(const struct egress_addr *a, uint16_t port)
{
        char b[INET6_ADDRSTRLEN];
        egress_addr_text(a, b, sizeof(b));
        return a->family == AF_INET6 ? xasprintf("[%s]:%u", b, port) : xasprintf("%s:%u", b, port);
}

/* ---- stub DNS --------------------------------------------------------- */

static void stub_addr(size_t i, struct egress_addr *a)
{
        uint32_t v = (198u << 24 | 18u << 16) + (uint32_t)i + 1;
        *a = (struct egress_addr) { .family = AF_INET };
        a->bytes[0] = (uint8_t)(v >> 24);
        a->bytes[1] = (uint8_t)(v >> 16);
        a->bytes[2] = (uint8_t)(v >> 8);
        a->bytes[3] = (uint8_t)v;
}

/* The name behind a stand-in address; NULL if a is none; *ret_unknown
 * when it is in the stub range but was never handed out. */
static const char *stub_lookup(const struct helper *h, const struct egress_addr *a, bool *ret_unknown)
{
        *ret_unknown = false;
        if (a->family != AF_INET || a->bytes[0] != 198 || (a->bytes[1] & 0xfe) != 18)
                return NULL;
        uint32_t v = (uint32_t)a->bytes[0] << 24 | (uint32_t)a->bytes[1] << 16 | (uint32_t)a->bytes[2] << 8 |
                     a->bytes[3];
        uint32_t i = v - (198u << 24 | 18u << 16);
        if (i == 0 || i > h->n_stub) {
                *ret_unknown = true;
                return NULL;
        }
        return h->stub_names[i - 1];
}

static int stub_for(struct helper *h, const char *name, struct egress_addr *ret)
{
        for (size_t i = 0; i < h->n_stub; i++)
                if (streq(h->stub_names[i], name)) {
                        stub_addr(i, ret);
                        return 0;
                }
        if (h->n_stub >= STUB_MAX)
                return -ENOSPC;
        h->stub_names = xrealloc(h->stub_names, (h->n_stub + 1) * sizeof(char *));
        h->stub_names[h->n_stub] = xstrdup(name);
        stub_addr(h->n_stub++, ret);
        return 0;
}

static void dns_serve(struct helper *h, int fd, bool v6)
{
        uint8_t buf[1500], out[1500];
        char cbuf[256];
        union {
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } peer;
        /* a burst is bounded: the loop comes back for the rest */
        for (int burst = 0; burst < 64; burst++) {
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
                struct msghdr mh = { .msg_name = &peer, .msg_namelen = sizeof(peer), .msg_iov = &iov,
                                     .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
                ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
                if (n < 0)
                        return;
                struct in_pktinfo pi4 = { 0 };
                struct in6_pktinfo pi6 = { 0 };
                bool have_pi = false;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                        if (!v6 && c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
                                memcpy(&pi4, CMSG_DATA(c), sizeof(pi4));
                                have_pi = true;
                        } else if (v6 && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
                                memcpy(&pi6, CMSG_DATA(c), sizeof(pi6));
                                have_pi = true;
                        }
                }
                struct dns_query q;
                int r = dns_parse_query(buf, (size_t)n, &q), len = -1;
                const char *decision = NULL;
                const struct egress_rule *rule = NULL;
                if (r == -EBADMSG && n >= 12) {
                        /* the header alone, flagged as an answer: format error */
                        memcpy(out, buf, 12);
                        out[2] = (uint8_t)(0x80 | (buf[2] & 0x79));
                        out[3] = 0x80 | DNS_RCODE_FORMERR;
                        memset(out + 4, 0, 8);
                        len = 12;
                } else if (r == 0) {
                        struct egress_addr a;
                        rule = q.qclass == 1 && q.name[0] && egress_name_valid(q.name)
                                       ? egress_rules_name_allowed(h->p->rules, q.name) : NULL;
                        bool allowed = rule != NULL;
                        if (!allowed) {
                                decision = "denied";
                                len = dns_build_answer(buf, &q, DNS_RCODE_NXDOMAIN, NULL, 0, out, sizeof(out));
                        } else if (q.qtype == DNS_TYPE_A) {
                                if (stub_for(h, q.name, &a) < 0) {
                                        decision = "denied";
                                        len = dns_build_answer(buf, &q, DNS_RCODE_SERVFAIL, NULL, 0, out,
                                                               sizeof(out));
                                } else {
                                        decision = "allowed";
                                        len = dns_build_answer(buf, &q, DNS_RCODE_OK, a.bytes, STUB_TTL, out,
                                                               sizeof(out));
                                }
                        } else {
                                /* AAAA and the rest: the name exists, without such records,
                                 * so the client uses the A answer */
                                len = dns_build_answer(buf, &q, DNS_RCODE_OK, NULL, 0, out, sizeof(out));
                        }
                }
                if (decision) {
                        json_t *rec = new_record("dns", now_realtime_ms());
                        set_str(rec, "dest", q.name);
                        json_object_set_new(rec, "decision", json_string(decision));
                        set_str(rec, "reason", streq(decision, "allowed") ? "allow rule" : "no rule");
                        set_str(rec, "rule", rule ? rule->text : NULL);
                        record(h, rec);
                }
                if (len < 0)
                        continue;
                /* answer from the address the query went to */
                char ocbuf[CMSG_SPACE(sizeof(struct in6_pktinfo))] = { 0 };
                struct iovec oiov = { .iov_base = out, .iov_len = (size_t)len };
                struct msghdr omh = { .msg_name = &peer, .msg_namelen = mh.msg_namelen, .msg_iov = &oiov,
                                      .msg_iovlen = 1 };
                if (have_pi) {
                        omh.msg_control = ocbuf;
                        struct cmsghdr *c = (struct cmsghdr *)ocbuf;
                        if (v6) {
                                struct in6_pktinfo o = { .ipi6_addr = pi6.ipi6_addr };
                                omh.msg_controllen = CMSG_SPACE(sizeof(o));
                                c->cmsg_level = IPPROTO_IPV6;
                                c->cmsg_type = IPV6_PKTINFO;
                                c->cmsg_len = CMSG_LEN(sizeof(o));
                                memcpy(CMSG_DATA(c), &o, sizeof(o));
                        } else {
                                struct in_pktinfo o = { .ipi_spec_dst = pi4.ipi_addr };
                                omh.msg_controllen = CMSG_SPACE(sizeof(o));
                                c->cmsg_level = IPPROTO_IP;
                                c->cmsg_type = IP_PKTINFO;
                                c->cmsg_len = CMSG_LEN(sizeof(o));
                                memcpy(CMSG_DATA(c), &o, sizeof(o));
                        }
                }
                (void)sendmsg(fd, &omh, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
}

/* ---- connections ------------------------------------------------------ */

static void conn_close(struct helper *h, size_t idx, const char *end_reason)
{
        struct conn *c = h->conns[idx];
        uint64_t now = now_monotonic_ms();

        if (c->rec) {
                json_object_set_new(c->rec, "bytes_out", json_integer((json_int_t)c->bytes_out));
                json_object_set_new(c->rec, "bytes_in", json_integer((json_int_t)c->bytes_in));
                json_object_set_new(c->rec, "duration_ms", json_integer((json_int_t)(now - c->start_ms)));
                if (end_reason)
                        set_str(c->rec, "end", end_reason);
                record(h, c->rec);
        }
        if (c->cfd >= 0)
                close(c->cfd);
        if (c->ufd >= 0)
                close(c->ufd);
        for (int i = 0; i < 2; i++) {
                if (c->up_pipe[i] >= 0)
                        close(c->up_pipe[i]);
                if (c->down_pipe[i] >= 0)
                        close(c->down_pipe[i]);
        }
        free(c->up);
        free(c->down);
        free(c);
        h->conns[idx] = h->conns[--h->n_conns];
}

/* The record of a decision, with what the job asked for. */
static json_t *decision_record(const struct helper *h, const struct conn *c, const char *stub_name)
{
        json_t *rec = new_record("tcp", c->start_wall_ms);
        _cleanup_free_ char *dest = stub_name ? xasprintf("%s:%u", stub_name, c->dport)
                                              : addr_port_text(&c->dest, c->dport);
        (void)h;
        set_str(rec, "dest", dest);
        json_object_set_new(rec, "pid", json_null());
        set_str(rec, "sni", c->pk.kind == PEEK_TLS ? c->pk.name : NULL);
        set_str(rec, "host", c->pk.kind == PEEK_HTTP || c->pk.kind == PEEK_CONNECT ? c->pk.name : NULL);
        set_str(rec, "name", c->d.name);
        json_object_set_new(rec, "decision", json_string(c->d.allowed ? "allowed" : "denied"));
        set_str(rec, "rule", c->d.rule ? c->d.rule->text : NULL);
        set_str(rec, "reason", c->d.reason);
        if (c->d.has_refused) {
                _cleanup_free_ char *t = addr_port_text(&c->d.refused, c->d.port);
                set_str(rec, "resolved", t);
        } else
                json_object_set_new(rec, "resolved", json_null());
        return rec;
}

static int dial_next(struct conn *c)
{
        while (c->addr_i < c->d.n_addrs) {
                const struct egress_addr *a = &c->d.addrs[c->addr_i++];
                union {
                        struct sockaddr_in in;
                        struct sockaddr_in6 in6;
                } sa = { 0 };
                socklen_t len;
                if (a->family == AF_INET) {
                        sa.in.sin_family = AF_INET;
                        sa.in.sin_port = htons(c->d.port);
                        memcpy(&sa.in.sin_addr, a->bytes, 4);
                        len = sizeof(sa.in);
                } else {
                        sa.in6.sin6_family = AF_INET6;
                        sa.in6.sin6_port = htons(c->d.port);
                        memcpy(&sa.in6.sin6_addr, a->bytes, 16);
                        len = sizeof(sa.in6);
                }
                if (c->ufd >= 0)
                        close(c->ufd);
                c->ufd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (c->ufd < 0)
                        continue;
                if (connect(c->ufd, (struct sockaddr *)&sa, len) == 0 || errno == EINPROGRESS) {
                        _cleanup_free_ char *t = addr_port_text(a, c->d.port);
                        set_str(c->rec, "resolved", t);
                        c->state = C_CONNECTING;
                        c->deadline_ms = now_monotonic_ms() + CONNECT_MS;
                        return 0;
                }
        }
        return -EHOSTUNREACH;
}

/* Enough bytes (or time) to judge: decide, and deny or dial. Returns
 * false when the connection is done with. */
static bool conn_decide(struct helper *h, struct conn *c)
{
        bool unknown;
        const char *stub = c->proxy ? NULL : stub_lookup(h, &c->dest, &unknown);
        if (c->proxy)
                unknown = false;
        struct egress_request req = {
                .dest = c->dest, .dest_port = c->dport, .stub_name = stub, .stub_unknown = unknown,
                .via_proxy = c->proxy, .peek = &c->pk,
        };
        egress_decide(h->p->rules, &req, h->own, h->n_own, egress_resolve_system, NULL, &c->d);
        c->rec = decision_record(h, c, stub);
        bool ok = c->d.allowed;
        /* The landlock tier's proxy listens on the host's loopback, where
         * any process may connect: only a connection whose other end a
         * process of the sandbox holds is the job's (init made it and
         * handed it over before the job could send a byte). Looked up
         * first there, and only for what the rules let through: the
         * lookup reads the host's whole TCP table, and a job that opens
         * thousands of connections would otherwise slow every decision
         * (a denied one's record has no pid then). Elsewhere it is for
         * the record only, and later. */
        pid_t pid = 0;
        if (h->p->job_only && ok) {
                pid = egress_socket_owner(h->p->init_pid, &c->peer, c->pport, &c->dest, c->dport);
                if (pid <= 0) {
                        json_object_set_new(c->rec, "decision", json_string("denied"));
                        c->d.reason = "not the job's connection";
                        set_str(c->rec, "reason", c->d.reason);
                        ok = false;
                }
        }
        if (ok && h->bytes_exhausted) {
                json_object_set_new(c->rec, "decision", json_string("denied"));
                c->d.reason = "byte limit";
                set_str(c->rec, "reason", c->d.reason);
                ok = false;
        }
        if (ok && dial_next(c) < 0) {
                set_str(c->rec, "end", "connect failed");
                ok = false;
        }
        /* while the upstream connect is on its way */
        if (!h->p->job_only && h->p->init_pid > 0)
                pid = egress_socket_owner(h->p->init_pid, &c->peer, c->pport, &c->dest, c->dport);
        json_object_set_new(c->rec, "pid", pid > 0 ? json_integer(pid) : json_null());
        if (!ok && (c->proxy || c->pk.kind == PEEK_HTTP || c->pk.kind == PEEK_CONNECT)) {
                /* an HTTP client gets told, in words of ours only */
                _cleanup_free_ char *body = xasprintf("hutch: egress denied: %s\n", c->d.reason);
                _cleanup_free_ char *resp = xasprintf("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                                                      "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                                                      strlen(body), body);
                (void)send(c->cfd, resp, strlen(resp), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        return ok;
}

static struct relay_flow flow_up(struct conn *c)
{
        return (struct relay_flow) { c->cfd, c->ufd, c->up, &c->up_len, c->up_pipe, &c->up_inpipe, c->pipe_cap,
                               &c->c_eof, &c->u_shut, &c->bytes_out };
}

static struct relay_flow flow_down(struct conn *c)
{
        return (struct relay_flow) { c->ufd, c->cfd, c->down, &c->down_len, c->down_pipe, &c->down_inpipe, c->pipe_cap,
                               &c->u_eof, &c->c_shut, &c->bytes_in };
}

/* Work one connection after poll; false when it is to be closed, with
 * *ret_end saying why (NULL: it ended normally). */
static bool conn_step(struct helper *h, struct conn *c, const char **ret_end)
{
        uint64_t now = now_monotonic_ms();
        int r;

        *ret_end = NULL;
        if (c->state == C_PEEK) {
                ssize_t n = recv(c->cfd, c->up + c->up_len, PEEK_MAX - c->up_len, MSG_DONTWAIT);
                if (n > 0)
                        c->up_len += (size_t)n;
                else if (n == 0)
                        c->c_eof = true;
                else if (errno != EAGAIN && errno != EINTR)
                        return false;
                enum peek_kind k = peek_parse(c->up, c->up_len, &c->pk);
                if (k == PEEK_MORE && !c->c_eof && c->up_len < PEEK_MAX && now < c->deadline_ms)
                        return true;
                if (k == PEEK_MORE)
                        c->pk.kind = PEEK_OTHER;
                return conn_decide(h, c);
        }
        if (c->state == C_CONNECTING) {
                int err = 0;
                socklen_t l = sizeof(err);
                struct pollfd pfd = { .fd = c->ufd, .events = POLLOUT };
                if (poll(&pfd, 1, 0) == 1 && getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &l) == 0) {
                        if (err) {
                                if (dial_next(c) < 0) {
                                        *ret_end = "connect failed";
                                        return false;
                                }
                                return true;
                        }
                        c->state = C_RELAY;
                        c->pipe_cap = relay_open_pipes(c->up_pipe, c->down_pipe);
                        if (c->pk.kind == PEEK_CONNECT && c->proxy) {
                                /* the tunnel is up: answer the proxy request, drop its head */
                                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                                memcpy(c->down, ok, sizeof(ok) - 1);
                                c->down_len = sizeof(ok) - 1;
                                memmove(c->up, c->up + c->pk.head_len, c->up_len - c->pk.head_len);
                                c->up_len -= c->pk.head_len;
                        } else if (c->pk.kind == PEEK_HTTP && c->proxy)
                                /* to an origin, origin form (peek.h) */
                                c->up_len = peek_origin_form(c->up, c->up_len);
                } else if (now >= c->deadline_ms) {
                        *ret_end = "connect timeout";
                        return false;
                } else
                        return true;
        }
        struct relay_flow up = flow_up(c), down = flow_down(c);
        r = relay_pump(&up, &h->bytes_total, h->p->max_bytes);
        if (r == 0)
                r = relay_pump(&down, &h->bytes_total, h->p->max_bytes);
        if (r == -EDQUOT) {
                h->bytes_exhausted = true;
                *ret_end = "byte limit";
                return false;
        }
        if (r < 0) {
                *ret_end = "reset";
                return false;
        }
        return !(c->c_eof && c->u_eof && c->up_len == 0 && c->down_len == 0 && c->up_inpipe == 0 &&
                 c->down_inpipe == 0);
}

static void conn_accept(struct helper *h, int lfd, bool proxy)
{
        for (int burst = 0; burst < 64; burst++) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                struct conn *c = xcalloc(1, sizeof(*c));
                union {
                        struct sockaddr_in in;
                        struct sockaddr_in6 in6;
                } sa;
                socklen_t sl = sizeof(sa);
                *c = (struct conn) { .cfd = fd, .ufd = -1, .state = C_PEEK, .proxy = proxy,
                             .up_pipe = { -1, -1 }, .down_pipe = { -1, -1 },
                                     .start_ms = now_monotonic_ms(), .start_wall_ms = now_realtime_ms() };
                c->deadline_ms = c->start_ms + PEEK_MS;
                socklen_t pl = sizeof(sa);
                if (getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 ||
                    egress_addr_from_sockaddr(&sa, &c->dest, &c->dport) < 0 ||
                    getpeername(fd, (struct sockaddr *)&sa, &pl) < 0 ||
                    egress_addr_from_sockaddr(&sa, &c->peer, &c->pport) < 0) {
                        close(fd);
                        free(c);
                        continue;
                }
                if (h->n_conns >= h->max_conns) {
                        /* refused at once: the job sees a reset, the record says why */
                        c->rec = decision_record(h, c, NULL);
                        json_object_set_new(c->rec, "decision", json_string("denied"));
                        set_str(c->rec, "reason", "connection limit");
                        json_object_set_new(c->rec, "bytes_out", json_integer(0));
                        json_object_set_new(c->rec, "bytes_in", json_integer(0));
                        json_object_set_new(c->rec, "duration_ms", json_integer(0));
                        record(h, c->rec);
                        (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){ 1, 0 },
                                         sizeof(struct linger));
                        close(fd);
                        free(c);
                        continue;
                }
                c->up = xmalloc(RELAY_BUF_SIZE);
                c->down = xmalloc(RELAY_BUF_SIZE);
                h->conns = xrealloc(h->conns, (h->n_conns + 1) * sizeof(*h->conns));
                h->conns[h->n_conns++] = c;
        }
}

/* ---- the loop --------------------------------------------------------- */

static void own_addresses(struct helper *h)
{
        struct ifaddrs *ifs = NULL;
        if (getifaddrs(&ifs) < 0)
                return;
        for (struct ifaddrs *i = ifs; i && h->n_own < OWN_MAX; i = i->ifa_next)
                if (i->ifa_addr && egress_addr_from_sockaddr(i->ifa_addr, &h->own[h->n_own], NULL) == 0)
                        h->n_own++;
        freeifaddrs(ifs);
}

static void helper_loop(struct helper *h)
{
        struct pollfd *pfd = NULL;
        size_t cap = 0;

        for (;;) {
                size_t need = 1 + h->n_fds + 2 * h->n_conns, n = 0;
                uint64_t now = now_monotonic_ms(), next = UINT64_MAX;
                if (need > cap)
                        pfd = xrealloc(pfd, (cap = need * 2) * sizeof(*pfd));
                pfd[n++] = (struct pollfd) { .fd = h->ctl,
                                             .events = (short)(POLLIN | (h->out_off < h->out_len ? POLLOUT : 0)) };
                for (size_t i = 0; i < h->n_fds; i++)
                        pfd[n++] = (struct pollfd) { .fd = h->fds[i], .events = POLLIN };
                for (size_t i = 0; i < h->n_conns; i++) {
                        struct conn *c = h->conns[i];
                        short ce = 0, ue = 0;
                        if (c->state == C_PEEK)
                                ce = POLLIN;
                        else if (c->state == C_CONNECTING)
                                ue = POLLOUT;
                        else {
                                struct relay_flow up = flow_up(c), down = flow_down(c);
                                ce = (short)((!c->c_eof && relay_room(&up) ? POLLIN : 0) |
                                             (c->down_len || c->down_inpipe ? POLLOUT : 0));
                                ue = (short)((!c->u_eof && relay_room(&down) ? POLLIN : 0) |
                                             (c->up_len || c->up_inpipe ? POLLOUT : 0));
                        }
                        pfd[n++] = (struct pollfd) { .fd = c->cfd, .events = ce };
                        pfd[n++] = (struct pollfd) { .fd = c->ufd, .events = ue };
                        if (c->state != C_RELAY)
                                next = MIN(next, c->deadline_ms);
                }
                int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)MIN(next - now, 60000);
                int r = poll(pfd, n, timeout);
                if (r < 0 && errno != EINTR)
                        break;
                if (pfd[0].revents & ~POLLOUT)
                        break;  /* the supervisor is done (EOF) or gone */
                if ((pfd[0].revents & POLLOUT) && !report_flush(h))
                        break;
                for (size_t i = 0; i < h->n_fds; i++) {
                        if (!pfd[1 + i].revents)
                                continue;
                        switch (h->info[i].kind) {
                        case NETNS_FD_DNS4:
                        case NETNS_FD_DNS6:
                                dns_serve(h, h->fds[i], h->info[i].kind == NETNS_FD_DNS6);
                                break;
                        default:
                                conn_accept(h, h->fds[i], h->info[i].kind == NETNS_FD_PROXY);
                                break;
                        }
                }
                /* connections accepted just now have no pollfd yet: they
                 * are stepped in the next round */
                size_t polled = (n - 1 - h->n_fds) / 2;
                now = now_monotonic_ms();
                for (size_t i = polled; i-- > 0;) {
                        struct conn *c = h->conns[i];
                        struct pollfd *cp = &pfd[1 + h->n_fds + 2 * i];
                        bool due = c->state != C_RELAY && now >= c->deadline_ms;
                        if (!cp[0].revents && !cp[1].revents && !due && !h->bytes_exhausted)
                                continue;
                        const char *end = NULL;
                        if (h->bytes_exhausted && c->state == C_RELAY) {
                                conn_close(h, i, "byte limit");
                                continue;
                        }
                        if (!conn_step(h, c, &end))
                                conn_close(h, i, end);
                }
                if (!report_flush(h))
                        break;
        }
        free(pfd);
        while (h->n_conns)
                conn_close(h, h->n_conns - 1, "run ended");
}

/* The end of the report, blocking: the supervisor reads it now. */
static void write_report(struct helper *h)
{
        if (h->dropped) {
                json_t *o = new_record("summary", now_realtime_ms());
                json_object_set_new(o, "dropped", json_integer((json_int_t)h->dropped));
                report_line(h, o);
        }
        (void)fcntl(h->ctl, F_SETFL, fcntl(h->ctl, F_GETFL) & ~O_NONBLOCK);
        (void)write_all(h->ctl, h->out + h->out_off, h->out_len - h->out_off);
}

static _Noreturn void helper_main(const struct egress_params *p, int capture_sock, int ctl, pid_t parent)
{
        struct helper h = { .p = p, .ctl = ctl };

        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(1);
        (void)prctl(PR_SET_NAME, "hutch-egress");
        /* nothing of the supervisor's but our two sockets (stderr stays
         * for debugging output) */
        int a = MIN(capture_sock, ctl), b = MAX(capture_sock, ctl);
        (void)close(STDIN_FILENO);
        (void)close(STDOUT_FILENO);
        if (a > 3)
                (void)syscall(SYS_close_range, 3, (unsigned)a - 1, 0);
        if (b > a + 1)
                (void)syscall(SYS_close_range, (unsigned)a + 1, (unsigned)b - 1, 0);
        (void)syscall(SYS_close_range, (unsigned)b + 1, ~0U, 0);
        struct rlimit rl = { 1024, 1024 };
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                rl.rlim_cur = rl.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
        /* a connection holds six fds (two sockets, two pipes); "none"
         * still stops short of running out of them, where accept() would
         * fail on a listener that stays readable */
        uint64_t fit = rl.rlim_cur > 64 + NETNS_MAX_FDS ? (rl.rlim_cur - 64 - NETNS_MAX_FDS) / 6 : 1;
        h.max_conns = p->max_connections ? MIN(p->max_connections, fit) : fit;

        int n = netns_capture_receive(capture_sock, h.fds, h.info);
        close(capture_sock);
        if (n < 0)
                _exit(0);       /* the sandbox failed its setup: it says why */
        h.n_fds = (size_t)n;
        for (size_t i = 0; i < h.n_fds; i++)
                (void)fcntl(h.fds[i], F_SETFL, O_NONBLOCK);
        (void)fcntl(ctl, F_SETFL, fcntl(ctl, F_GETFL) | O_NONBLOCK);
        own_addresses(&h);
        /* Before the allow-list (confine.c): what would need more later.
         * A lookup of "localhost" loads the resolver's configuration and
         * any NSS module the host's nsswitch.conf names (mapping code,
         * which the filter refuses after); jansson seeds its hash from
         * /dev/urandom at the first object. */
        struct egress_addr warm[2];
        (void)egress_resolve_system("localhost", warm, ELEMENTSOF(warm), NULL);
        json_object_seed(0);
        int r = egress_confine_as(p->init_pid, p->job_uid, p->job_gid);
        if (r < 0) {
                /* never parse the job's bytes unconfined: no decision is
                 * made, so every connection and query of the job fails */
                dprintf(STDERR_FILENO, "hutch: egress: cannot confine the helper: %s\n", strerror(-r));
                _exit(1);
        }
        helper_loop(&h);
        write_report(&h);
        _exit(0);
}

int egress_start(const struct egress_params *p, int capture_sock, struct egress *ret)
{
        int pair[2];
        pid_t parent = getpid();

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pair[0]);
                close(pair[1]);
                return r;
        }
        if (pid == 0) {
                close(pair[0]);
                helper_main(p, capture_sock, pair[1], parent);
        }
        close(pair[1]);
        *ret = (struct egress) { .pid = pid, .ctl_fd = pair[0] };
        return 0;
}
