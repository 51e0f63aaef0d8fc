/* dbus.c - a D-Bus connection over a unix socket (see dbus.h).
 *
 * The session: connect; a NUL byte, "AUTH EXTERNAL <our uid in hex>",
 * "OK <server id>" back, "BEGIN"; on a bus, Hello() for a name of our
 * own; then messages, each a fixed header that says how long it is.
 * Replies find their call by its serial; signals that arrive first go
 * to the caller's callback as they come, so nothing is queued without
 * bound whatever the peer sends.
 *
 * Why this is safe: hutch connects only to sockets of the user's own
 * manager or bus (cgroup-systemd.c chooses them), authenticates with
 * its real credentials (the server checks them with SO_PEERCRED, so
 * claiming another uid only gets REJECTED), and reads what comes back
 * through dbus-wire.c, which bounds every message at DBUS_MESSAGE_MAX
 * and checks every length before it is used. Every wait is bounded by
 * the caller's deadline, so a peer that stops answering costs a timeout.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "limits/dbus.h"
#include "lib/util.h"

/* An authentication line longer than this is not one we wait for. */
#define AUTH_LINE_MAX 512
/* How much of a peer's error text a reason quotes. */
#define REMOTE_TEXT_MAX 300

struct dbus_conn {
        int fd;
        uint32_t serial;
        uint8_t *in;            /* bytes read, not yet a whole message */
        size_t in_len, in_cap;
        struct dbus_writer out;
};

struct dbus_conn *dbus_conn_free(struct dbus_conn *c)
{
        if (!c)
                return NULL;
        if (c->fd >= 0)
                close(c->fd);
        free(c->in);
        dbus_writer_done(&c->out);
        free(c);
        return NULL;
}

/* Wait until fd is ready for events, or the deadline. */
static int wait_ready(int fd, short events, uint64_t deadline_ms)
{
        for (;;) {
                uint64_t now = now_monotonic_ms();
                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = events };
                int n = poll(&p, 1, (int)MIN(deadline_ms - now, (uint64_t)INT_MAX));
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

static int send_all(struct dbus_conn *c, const void *buf, size_t len, uint64_t deadline_ms)
{
        const uint8_t *p = buf;
        while (len > 0) {
                ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        int r = wait_ready(c->fd, POLLOUT, deadline_ms);
                        if (r < 0)
                                return r;
                        continue;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Read what the peer has sent, waiting for at least one byte. */
static int fill(struct dbus_conn *c, uint64_t deadline_ms)
{
        if (c->in_cap - c->in_len < 4096) {
                if (c->in_cap >= DBUS_MESSAGE_MAX + 4096)
                        return -EMSGSIZE;
                c->in_cap = MAX(c->in_cap * 2, 8192u);
                c->in = xrealloc(c->in, c->in_cap);
        }
        for (;;) {
                ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
                if (n > 0) {
                        c->in_len += (size_t)n;
                        return 0;
                }
                if (n == 0)
                        return -ECONNRESET;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return -errno;
                int r = wait_ready(c->fd, POLLIN, deadline_ms);
                if (r < 0)
                        return r;
        }
}

/* The next whole message from the peer. */
static int next_message(struct dbus_conn *c, uint64_t deadline_ms, struct dbus_message *ret)
{
        for (;;) {
                if (c->in_len >= DBUS_FIXED_HEADER) {
                        ssize_t size = dbus_message_size(c->in, c->in_len);
                        if (size < 0)
                                return (int)size;
                        if (c->in_len >= (size_t)size) {
                                uint8_t *raw = xmalloc((size_t)size);
                                memcpy(raw, c->in, (size_t)size);
                                c->in_len -= (size_t)size;
                                memmove(c->in, c->in + size, c->in_len);
                                return dbus_message_parse(raw, (size_t)size, ret);
                        }
                }
                int r = fill(c, deadline_ms);
                if (r < 0)
                        return r;
        }
}

/* The peer's text, for a reason: bounded, on one line. */
static char *remote_text(const char *s)
{
        size_t n = strnlen(s, REMOTE_TEXT_MAX);
        char *t = xmalloc(n + 1);
        for (size_t i = 0; i < n; i++)
                t[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
        t[n] = '\0';
        return t;
}

/* SASL EXTERNAL: we claim the uid the kernel tells the server anyway.
 *
 * BEGIN goes out with AUTH, before OK comes back, as sd-bus's own
 * clients send it. Sent after OK, it can reach systemd's sd-bus server
 * in one read with our first call; the server then handles BEGIN and
 * leaves the call in its buffer, unparsed, until more bytes arrive,
 * which they never do: the call times out. Pipelined, BEGIN is read
 * before the server writes OK, and nothing of ours follows it until we
 * have read that OK. A server that rejects us answers BEGIN with ERROR,
 * after the REJECTED line we stop at. */
static int authenticate(struct dbus_conn *c, uint64_t deadline_ms, char **ret_reason)
{
        char uid[16], line[64 + 2 * sizeof(uid)];
        int n = snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
        char *o = line;
        *o++ = '\0';
        o += sprintf(o, "AUTH EXTERNAL ");
        for (int i = 0; i < n; i++)
                o += sprintf(o, "%02x", (unsigned char)uid[i]);
        o += sprintf(o, "\r\nBEGIN\r\n");
        int r = send_all(c, line, (size_t)(o - line), deadline_ms);
        if (r < 0)
                goto fail;
        for (;;) {
                uint8_t *end = c->in_len >= 2 ? memmem(c->in, c->in_len, "\r\n", 2) : NULL;
                if (end) {
                        size_t len = (size_t)(end - c->in);
                        bool ok = len >= 3 && memcmp(c->in, "OK ", 3) == 0;
                        if (!ok) {
                                c->in[len] = '\0';
                                _cleanup_free_ char *said = remote_text((const char *)c->in);
                                *ret_reason = xasprintf("it did not accept us as uid %s (it said \"%s\")",
                                                        uid, said);
                                return -EACCES;
                        }
                        /* the server says nothing more after OK */
                        c->in_len -= len + 2;
                        memmove(c->in, end + 2, c->in_len);
                        return 0;
                }
                if (c->in_len > AUTH_LINE_MAX) {
                        *ret_reason = xstrdup("its answer to AUTH is no line of the protocol");
                        return -EBADMSG;
                }
                r = fill(c, deadline_ms);
                if (r < 0)
                        goto fail;
        }
fail:
        *ret_reason = xasprintf("authentication: %s", strerror(-r));
        return r;
}

static int connect_to(const struct sockaddr_un *sa, socklen_t sa_len, bool bus, uint64_t deadline_ms,
                      struct dbus_conn **ret, char **ret_reason)
{
        struct dbus_conn *c = xcalloc(1, sizeof(*c));
        int r;

        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0 || connect(c->fd, (const struct sockaddr *)sa, sa_len) < 0) {
                r = -errno;
                *ret_reason = xasprintf("cannot connect: %s", strerror(-r));
                dbus_conn_free(c);
                return r;
        }
        r = authenticate(c, deadline_ms, ret_reason);
        if (r >= 0 && bus) {
                struct dbus_message hello;
                r = dbus_conn_call(c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                   "Hello", NULL, NULL, deadline_ms, NULL, NULL, &hello, ret_reason);
                if (r >= 0)
                        dbus_message_done(&hello);
        }
        if (r < 0) {
                dbus_conn_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int dbus_conn_open_path(const char *path, bool bus, uint64_t deadline_ms, struct dbus_conn **ret,
                        char **ret_reason)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(path);
        if (n == 0 || n >= sizeof(sa.sun_path)) {
                *ret_reason = xstrdup("the socket's path is empty or too long");
                return -ENAMETOOLONG;
        }
        memcpy(sa.sun_path, path, n);
        return connect_to(&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1), bus, deadline_ms, ret,
                          ret_reason);
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The value of key in one "unix:k=v,k=v" address, %XX decoded, into
 * buf; its length, or -1 when absent or malformed. */
static ssize_t address_value(const char *addr, size_t len, const char *key, char *buf, size_t size)
{
        size_t klen = strlen(key);
        const char *p = addr + strlen("unix:"), *end = addr + len;
        while (p < end) {
                const char *comma = memchr(p, ',', (size_t)(end - p));
                const char *stop = comma ? comma : end;
                if ((size_t)(stop - p) > klen && memcmp(p, key, klen) == 0 && p[klen] == '=') {
                        size_t o = 0;
                        for (const char *q = p + klen + 1; q < stop; q++) {
                                if (o + 1 >= size)
                                        return -1;
                                if (*q == '%') {
                                        int hi = q + 2 < stop ? hex_value(q[1]) : -1;
                                        int lo = hi >= 0 ? hex_value(q[2]) : -1;
                                        if (lo < 0)
                                                return -1;
                                        buf[o++] = (char)(hi * 16 + lo);
                                        q += 2;
                                } else
                                        buf[o++] = *q;
                        }
                        buf[o] = '\0';
                        return (ssize_t)o;
                }
                p = stop + 1;
        }
        return -1;
}

int dbus_conn_open_address(const char *address, bool bus, uint64_t deadline_ms, struct dbus_conn **ret,
                           char **ret_reason)
{
        _cleanup_free_ char *last = NULL;
        const char *p = address;
        int r = -EADDRNOTAVAIL;

        while (*p) {
                size_t len = strcspn(p, ";");
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                char value[sizeof(sa.sun_path)];
                ssize_t n = -1;
                bool abstract = false;

                if (len > strlen("unix:") && strncmp(p, "unix:", 5) == 0) {
                        n = address_value(p, len, "path", value, sizeof(value));
                        if (n < 0) {
                                n = address_value(p, len, "abstract", value, sizeof(value) - 1);
                                abstract = n >= 0;
                        }
                }
                if (n > 0) {
                        /* an abstract name is the path with a NUL in front */
                        memcpy(sa.sun_path + abstract, value, (size_t)n);
                        socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + (size_t)n +
                                                   !abstract);
                        free(last);
                        last = NULL;
                        r = connect_to(&sa, sl, bus, deadline_ms, ret, &last);
                        if (r >= 0)
                                return 0;
                }
                p += len;
                if (*p == ';')
                        p++;
        }
        *ret_reason = last ? TAKE_PTR(last) : xstrdup("no unix:path= or unix:abstract= address in it");
        return r;
}

char *dbus_unix_address(const char *path)
{
        size_t len = strlen(path);
        char *ret = xmalloc(strlen("unix:path=") + 3 * len + 1), *o = ret;
        o += sprintf(o, "unix:path=");
        for (const char *p = path; *p; p++) {
                unsigned char c = (unsigned char)*p;
                if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    strchr("-_/.\\*", c))
                        *o++ = (char)c;
                else
                        o += sprintf(o, "%%%02x", c);
        }
        *o = '\0';
        return ret;
}

int dbus_conn_call(struct dbus_conn *c, const char *dest, const char *path, const char *interface,
                   const char *member, const char *sig, const struct dbus_writer *body, uint64_t deadline_ms,
                   dbus_signal_fn on_signal, void *userdata, struct dbus_message *ret_reply,
                   char **ret_reason)
{
        uint32_t serial = ++c->serial;
        int r;

        dbus_method_call(&c->out, serial, dest, path, interface, member, sig, body);
        r = send_all(c, c->out.buf, c->out.len, deadline_ms);
        if (r < 0) {
                *ret_reason = xasprintf("%s: %s", member, strerror(-r));
                return r;
        }
        for (;;) {
                struct dbus_message m;
                r = next_message(c, deadline_ms, &m);
                if (r < 0) {
                        *ret_reason = xasprintf("%s: %s", member,
                                                r == -ETIMEDOUT ? "no answer in time" : strerror(-r));
                        return r;
                }
                if (m.type == DBUS_SIGNAL && on_signal)
                        (void)on_signal(&m, userdata);
                bool ours = (m.type == DBUS_METHOD_RETURN || m.type == DBUS_ERROR) && m.reply_serial == serial;
                if (!ours) {
                        dbus_message_done(&m);
                        continue;
                }
                if (m.type == DBUS_METHOD_RETURN) {
                        *ret_reply = m;
                        return 0;
                }
                struct dbus_reader rd;
                const char *text = NULL;
                if (dbus_body_reader(&m, "s", &rd) < 0 || dbus_get_string(&rd, &text) < 0)
                        text = NULL;
                _cleanup_free_ char *name = remote_text(m.error_name);
                _cleanup_free_ char *said = text ? remote_text(text) : NULL;
                *ret_reason = xasprintf("%s%s%s", name, said ? ": " : "", said ? said : "");
                dbus_message_done(&m);
                return -EREMOTEIO;
        }
}

int dbus_conn_wait(struct dbus_conn *c, uint64_t deadline_ms, dbus_signal_fn on_signal, void *userdata,
                   char **ret_reason)
{
        for (;;) {
                struct dbus_message m;
                int r = next_message(c, deadline_ms, &m);
                if (r < 0) {
                        *ret_reason = xstrdup(r == -ETIMEDOUT ? "no answer in time" : strerror(-r));
                        return r;
                }
                int done = m.type == DBUS_SIGNAL ? on_signal(&m, userdata) : 0;
                dbus_message_done(&m);
                if (done > 0)
                        return 0;
        }
}
