/* test-dbus.c - unit tests for hutch's D-Bus client (src/limits/dbus*.c)
 * and the transient-scope request built on it (cgroup-systemd.c).
 *
 * The message format is checked against bytes worked out by hand from
 * the D-Bus specification (the Hello call every client sends; the
 * StartTransientUnit body hutch sends systemd), and against replies
 * built by hand, in both byte orders, and broken in every way a peer
 * could break them. The conversation is checked against a fake peer
 * forked here on a unix socket in a temporary dir: authentication,
 * Hello, a reply that comes after signals, an error reply, silence
 * (a timeout), a rejected uid, a peer that hangs up. The real systemd
 * answers the same calls in tests/vm/systemd.t/20-hutch-scope.sh.
 */
#include "config.h"

#include <endian.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "limits/cgroup-systemd.h"
#include "limits/dbus.h"
#include "limits/dbus-wire.h"
#include "lib/util.h"

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define LE 1
#else
#define LE 0
#endif

/* ---- the format ---- */

/* The Hello call, serial 1, as the spec lays it out: fixed header, then
 * PATH, INTERFACE, MEMBER, DESTINATION, each a struct on an 8-byte
 * boundary holding its code, a one-letter signature and a string. */
static const uint8_t hello_le[] = {
        'l', 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 109, 0, 0, 0,
        /* 16: PATH, o, 21 bytes */
        1, 1, 'o', 0, 21, 0, 0, 0,
        '/', 'o', 'r', 'g', '/', 'f', 'r', 'e', 'e', 'd', 'e', 's', 'k', 't', 'o', 'p', '/', 'D', 'B', 'u', 's', 0,
        0, 0,
        /* 48: INTERFACE, s, 20 bytes */
        2, 1, 's', 0, 20, 0, 0, 0,
        'o', 'r', 'g', '.', 'f', 'r', 'e', 'e', 'd', 'e', 's', 'k', 't', 'o', 'p', '.', 'D', 'B', 'u', 's', 0,
        0, 0, 0,
        /* 80: MEMBER, s, 5 bytes */
        3, 1, 's', 0, 5, 0, 0, 0, 'H', 'e', 'l', 'l', 'o', 0, 0, 0,
        /* 96: DESTINATION, s, 20 bytes */
        6, 1, 's', 0, 20, 0, 0, 0,
        'o', 'r', 'g', '.', 'f', 'r', 'e', 'e', 'd', 'e', 's', 'k', 't', 'o', 'p', '.', 'D', 'B', 'u', 's', 0,
        /* 125: padding to 128, the end: no body */
        0, 0, 0,
};

static void hello_call(void **state)
{
        struct dbus_writer w = { 0 };

        dbus_method_call(&w, 1, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello",
                         NULL, NULL);
        if (!LE)
                skip();         /* the bytes above are little-endian */
        assert_int_equal(w.len, sizeof(hello_le));
        assert_memory_equal(w.buf, hello_le, sizeof(hello_le));
        assert_int_equal(dbus_message_size(w.buf, w.len), 128);
        dbus_writer_done(&w);
}

/* The body of StartTransientUnit("u.scope", "fail", [Description "d",
 * PIDs [7], Delegate true, CollectMode "inactive-or-failed"], []),
 * offsets counted from the body's start (a multiple of 8 in the
 * message). */
static const uint8_t scope_body_le[] = {
        7, 0, 0, 0, 'u', '.', 's', 'c', 'o', 'p', 'e', 0,                       /* 0: s */
        4, 0, 0, 0, 'f', 'a', 'i', 'l', 0, 0, 0, 0,                             /* 12: s, pad to 24 */
        123, 0, 0, 0, 0, 0, 0, 0,                                               /* 24: a(sv) length, pad to 32 */
        11, 0, 0, 0, 'D', 'e', 's', 'c', 'r', 'i', 'p', 't', 'i', 'o', 'n', 0,  /* 32 */
        1, 's', 0, 0, 1, 0, 0, 0, 'd', 0, 0, 0, 0, 0, 0, 0,                     /* 48: v s "d", pad to 64 */
        4, 0, 0, 0, 'P', 'I', 'D', 's', 0, 2, 'a', 'u', 0, 0, 0, 0,             /* 64: "PIDs", v au, pad */
        4, 0, 0, 0, 7, 0, 0, 0,                                                 /* 80: au: 4 bytes, 7 */
        8, 0, 0, 0, 'D', 'e', 'l', 'e', 'g', 'a', 't', 'e', 0, 1, 'b', 0,       /* 88 */
        1, 0, 0, 0, 0, 0, 0, 0,                                                 /* 104: true, pad to 112 */
        11, 0, 0, 0, 'C', 'o', 'l', 'l', 'e', 'c', 't', 'M', 'o', 'd', 'e', 0,  /* 112 */
        1, 's', 0, 0, 18, 0, 0, 0,                                              /* 128: v s, 18 bytes */
        'i', 'n', 'a', 'c', 't', 'i', 'v', 'e', '-', 'o', 'r', '-', 'f', 'a', 'i', 'l', 'e', 'd', 0,
        0,                                                                      /* 155: pad to 156 */
        0, 0, 0, 0,                                                             /* 156: a(sa(sv)), length 0 */
};

static void scope_body(void **state)
{
        struct dbus_writer w = { 0 };

        if (!LE)
                skip();
        cgroup_systemd_scope_args(&w, "u.scope", "d", 7);
        assert_int_equal(w.len, sizeof(scope_body_le));
        assert_memory_equal(w.buf, scope_body_le, sizeof(scope_body_le));
        dbus_writer_done(&w);
}

/* A reply or signal as a peer would send it (the client never builds
 * these): type, serial, header fields, body. */
struct msg_spec {
        uint8_t type;
        uint32_t serial, reply_serial;
        const char *path, *interface, *member, *error_name, *signature;
};

/* The 12 bytes before the header fields' array, in the host's order. */
static void put_fixed(struct dbus_writer *w, uint8_t type, uint8_t flags, uint32_t body_len, uint32_t serial)
{
        w->len = 0;
        dbus_put_byte(w, LE ? 'l' : 'B');
        dbus_put_byte(w, type);
        dbus_put_byte(w, flags);
        dbus_put_byte(w, 1);
        dbus_put_u32(w, body_len);
        dbus_put_u32(w, serial);
}

static void build_message(struct dbus_writer *out, const struct msg_spec *s, const struct dbus_writer *body)
{
        /* flags: no reply expected */
        put_fixed(out, s->type, 1, body ? (uint32_t)body->len : 0, s->serial);
        struct dbus_array f = dbus_array_open(out, 8);
        if (s->path)
                dbus_put_header_field(out, 1, "o", s->path);
        if (s->interface)
                dbus_put_header_field(out, 2, "s", s->interface);
        if (s->member)
                dbus_put_header_field(out, 3, "s", s->member);
        if (s->error_name)
                dbus_put_header_field(out, 4, "s", s->error_name);
        if (s->reply_serial) {
                dbus_put_struct(out);
                dbus_put_byte(out, 5);
                dbus_put_variant(out, "u");
                dbus_put_u32(out, s->reply_serial);
        }
        if (s->signature)
                dbus_put_header_field(out, 8, "g", s->signature);
        dbus_array_close(out, f);
        while (out->len % 8)
                dbus_put_byte(out, 0);
        for (size_t i = 0; body && i < body->len; i++)
                dbus_put_byte(out, body->buf[i]);
}

static int parse_copy(const uint8_t *buf, size_t len, struct dbus_message *m)
{
        uint8_t *raw = xmalloc(len);
        memcpy(raw, buf, len);
        return dbus_message_parse(raw, len, m);
}

/* A method return "o" for serial 2, by hand, big-endian. */
static const uint8_t job_reply_be[] = {
        'B', 2, 1, 1, 0, 0, 0, 18, 0, 0, 0, 9, 0, 0, 0, 15,
        5, 1, 'u', 0, 0, 0, 0, 2,                       /* 16: REPLY_SERIAL 2 */
        8, 1, 'g', 0, 1, 'o', 0,                        /* 24: SIGNATURE "o" */
        0,                                              /* 31: pad to the body at 32 */
        0, 0, 0, 12, '/', 'j', 'o', 'b', 's', '/', 'j', 'o', 'b', '/', '4', '2', 0,
        0,                                              /* pad the body is allowed to end on */
};

static void parse_reply(void **state)
{
        struct dbus_message m;
        struct dbus_reader r;
        const char *s;

        /* job_reply_be's body is 18 bytes, its last one padding (a
         * string ends where its NUL does; what follows is the body's) */
        assert_int_equal(dbus_message_size(job_reply_be, sizeof(job_reply_be)), (ssize_t)sizeof(job_reply_be));
        assert_int_equal(parse_copy(job_reply_be, sizeof(job_reply_be), &m), 0);
        assert_int_equal(m.type, DBUS_METHOD_RETURN);
        assert_int_equal(m.serial, 9);
        assert_int_equal(m.reply_serial, 2);
        assert_string_equal(m.signature, "o");
        assert_int_equal(dbus_body_reader(&m, "s", &r), -EBADMSG);     /* not what it holds */
        assert_int_equal(dbus_body_reader(&m, "o", &r), 0);
        assert_int_equal(dbus_get_string(&r, &s), 0);
        assert_string_equal(s, "/jobs/job/42");
        assert_int_equal(dbus_get_string(&r, &s), -EBADMSG);           /* nothing more */
        dbus_message_done(&m);
}

static void parse_signal_and_error(void **state)
{
        struct dbus_writer body = { 0 }, msg = { 0 };
        struct dbus_message m;
        struct dbus_reader r;
        const char *s;
        uint32_t u;

        dbus_put_u32(&body, 77);
        dbus_put_string(&body, "/org/freedesktop/systemd1/job/77");
        dbus_put_string(&body, "hutch-X.scope");
        dbus_put_string(&body, "done");
        struct msg_spec sig = { DBUS_SIGNAL, 5, 0, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                "JobRemoved", NULL, "uoss" };
        build_message(&msg, &sig, &body);
        assert_int_equal(parse_copy(msg.buf, msg.len, &m), 0);
        assert_int_equal(m.type, DBUS_SIGNAL);
        assert_string_equal(m.member, "JobRemoved");
        assert_int_equal(dbus_body_reader(&m, "uoss", &r), 0);
        assert_int_equal(dbus_get_u32(&r, &u), 0);
        assert_int_equal(u, 77);
        assert_int_equal(dbus_get_string(&r, &s), 0);
        assert_int_equal(dbus_get_string(&r, &s), 0);
        assert_string_equal(s, "hutch-X.scope");
        assert_int_equal(dbus_get_string(&r, &s), 0);
        assert_string_equal(s, "done");
        dbus_message_done(&m);

        /* a signal without its interface is no signal */
        sig.interface = NULL;
        build_message(&msg, &sig, &body);
        assert_int_equal(parse_copy(msg.buf, msg.len, &m), -EBADMSG);

        /* an error needs its name and the serial it answers */
        body.len = 0;
        dbus_put_string(&body, "Unit hutch-X.scope already exists.");
        struct msg_spec err = { DBUS_ERROR, 6, 3, NULL, NULL, NULL, "org.freedesktop.systemd1.UnitExists", "s" };
        build_message(&msg, &err, &body);
        assert_int_equal(parse_copy(msg.buf, msg.len, &m), 0);
        assert_string_equal(m.error_name, "org.freedesktop.systemd1.UnitExists");
        dbus_message_done(&m);
        err.reply_serial = 0;
        build_message(&msg, &err, &body);
        assert_int_equal(parse_copy(msg.buf, msg.len, &m), -EBADMSG);
        dbus_writer_done(&body);
        dbus_writer_done(&msg);
}

/* Header fields of later versions of the spec are skipped, whatever
 * their type; a variant of a variant of ... past the spec's nesting is
 * refused, not recursed into. */
static void unknown_fields(void **state)
{
        struct dbus_writer w = { 0 };
        struct dbus_message m;

        put_fixed(&w, DBUS_METHOD_RETURN, 0, 0, 4);
        struct dbus_array f = dbus_array_open(&w, 8);
        dbus_put_struct(&w);
        dbus_put_byte(&w, 200);
        dbus_put_variant(&w, "a{sv}");
        struct dbus_array dict = dbus_array_open(&w, 8);
        dbus_put_struct(&w);
        dbus_put_string(&w, "k");
        dbus_put_variant(&w, "(ut)");
        dbus_put_struct(&w);
        dbus_put_u32(&w, 1);
        dbus_put_u32(&w, 0);    /* padding: t starts on an 8-byte boundary */
        dbus_put_u32(&w, 5);    /* t, as two words */
        dbus_put_u32(&w, 0);
        dbus_array_close(&w, dict);
        dbus_put_struct(&w);
        dbus_put_byte(&w, 5);
        dbus_put_variant(&w, "u");
        dbus_put_u32(&w, 3);
        dbus_array_close(&w, f);
        while (w.len % 8)
                dbus_put_byte(&w, 0);
        assert_int_equal(parse_copy(w.buf, w.len, &m), 0);
        assert_int_equal(m.reply_serial, 3);
        dbus_message_done(&m);

        /* 70 variants deep */
        put_fixed(&w, DBUS_METHOD_RETURN, 0, 0, 4);
        f = dbus_array_open(&w, 8);
        dbus_put_struct(&w);
        dbus_put_byte(&w, 200);
        for (int i = 0; i < 70; i++)
                dbus_put_variant(&w, "v");
        dbus_put_variant(&w, "u");
        dbus_put_u32(&w, 1);
        dbus_array_close(&w, f);
        while (w.len % 8)
                dbus_put_byte(&w, 0);
        assert_int_equal(parse_copy(w.buf, w.len, &m), -EBADMSG);
        dbus_writer_done(&w);
}

/* Whatever a peer sends, parsing ends in a message or -EBADMSG: every
 * way of cutting job_reply_be short, every single byte of it changed. */
/* The one string of the body of a message "o": 0 or -EBADMSG. */
static int body_string(const uint8_t *buf, size_t len, const char **ret)
{
        struct dbus_message m;
        struct dbus_reader r;
        int e = parse_copy(buf, len, &m);
        if (e < 0)
                return e;
        e = dbus_body_reader(&m, "o", &r);
        if (e >= 0)
                e = dbus_get_string(&r, ret);
        dbus_message_done(&m);  /* *ret is not used after: only the verdict */
        return e;
}

static void broken_messages(void **state)
{
        uint8_t b[sizeof(job_reply_be)];
        struct dbus_message m;
        const char *s;

        for (size_t n = 0; n < sizeof(job_reply_be); n++)
                if (n >= DBUS_FIXED_HEADER)
                        assert_int_equal(parse_copy(job_reply_be, n, &m), -EBADMSG);
                else
                        assert_int_equal(dbus_message_size(job_reply_be, n), -EBADMSG);
        for (size_t i = 0; i < sizeof(b); i++)
                for (int v = 0; v < 256; v += 51) {
                        memcpy(b, job_reply_be, sizeof(b));
                        b[i] = (uint8_t)v;
                        ssize_t size = dbus_message_size(b, sizeof(b));
                        if (size != (ssize_t)sizeof(b))
                                continue;
                        int r = parse_copy(b, sizeof(b), &m);
                        assert_true(r == 0 || r == -EBADMSG);
                        if (r == 0)
                                dbus_message_done(&m);
                }
        /* specific ways to be wrong */
        memcpy(b, job_reply_be, sizeof(b));
        b[3] = 2;                                       /* protocol version */
        assert_int_equal(dbus_message_size(b, sizeof(b)), -EBADMSG);
        memcpy(b, job_reply_be, sizeof(b));
        b[31] = 1;                                      /* padding is zero */
        assert_int_equal(parse_copy(b, sizeof(b), &m), -EBADMSG);
        /* a body is checked as it is read */
        memcpy(b, job_reply_be, sizeof(b));
        b[48] = 'x';                                    /* the string's NUL */
        assert_int_equal(body_string(b, sizeof(b), &s), -EBADMSG);
        memcpy(b, job_reply_be, sizeof(b));
        b[36] = 0xff;                                   /* not UTF-8 */
        assert_int_equal(body_string(b, sizeof(b), &s), -EBADMSG);
        memcpy(b, job_reply_be, sizeof(b));
        b[35] = 200;                                    /* longer than the body */
        assert_int_equal(body_string(b, sizeof(b), &s), -EBADMSG);
        assert_int_equal(body_string(job_reply_be, sizeof(job_reply_be), &s), 0);
        memcpy(b, job_reply_be, sizeof(b));
        b[4] = 0x7f;                                    /* a body of 2 GiB */
        assert_int_equal(dbus_message_size(b, sizeof(b)), -EMSGSIZE);
}

/* ---- the conversation, with a fake peer ---- */

enum peer_mode {
        PEER_SCOPE_DONE,        /* Hello?, StartTransientUnit: JobRemoved first, then the reply */
        PEER_SCOPE_FAILED,      /* the job ends "failed", after the reply */
        PEER_REFUSE,            /* StartTransientUnit: an error reply */
        PEER_SILENT,            /* never answers a call */
        PEER_REJECT_AUTH,       /* REJECTED */
        PEER_HANG_UP,           /* closes after authentication */
        PEER_PROPERTIES,        /* Properties.Get: Version, ControlGroup */
};

struct peer {
        int fd;
        uint8_t buf[1 << 16];
        size_t len;
        uint32_t serial;
};

static void peer_send(struct peer *p, const struct msg_spec *s, const struct dbus_writer *body)
{
        struct dbus_writer w = { 0 };
        build_message(&w, s, body);
        if (write(p->fd, w.buf, w.len) != (ssize_t)w.len)
                _exit(90);
        dbus_writer_done(&w);
}

static int peer_read(struct peer *p, struct dbus_message *m)
{
        for (;;) {
                if (p->len >= DBUS_FIXED_HEADER) {
                        ssize_t size = dbus_message_size(p->buf, p->len);
                        if (size < 0)
                                _exit(91);
                        if ((size_t)size <= p->len) {
                                uint8_t *raw = xmalloc((size_t)size);
                                memcpy(raw, p->buf, (size_t)size);
                                p->len -= (size_t)size;
                                memmove(p->buf, p->buf + size, p->len);
                                if (dbus_message_parse(raw, (size_t)size, m) < 0)
                                        _exit(92);
                                return 0;
                        }
                }
                ssize_t n = read(p->fd, p->buf + p->len, sizeof(p->buf) - p->len);
                if (n <= 0)
                        return -1;
                p->len += (size_t)n;
        }
}

static void reply(struct peer *p, const struct dbus_message *call, const char *sig, const struct dbus_writer *body)
{
        struct msg_spec s = { DBUS_METHOD_RETURN, ++p->serial, call->serial, NULL, NULL, NULL, NULL, sig };
        peer_send(p, &s, body);
}

static void job_removed(struct peer *p, const char *job, const char *unit, const char *result)
{
        struct dbus_writer b = { 0 };
        dbus_put_u32(&b, 1);
        dbus_put_string(&b, job);
        dbus_put_string(&b, unit);
        dbus_put_string(&b, result);
        struct msg_spec s = { DBUS_SIGNAL, ++p->serial, 0, "/org/freedesktop/systemd1",
                              "org.freedesktop.systemd1.Manager", "JobRemoved", NULL, "uoss" };
        peer_send(p, &s, &b);
        dbus_writer_done(&b);
}

/* One client, as the mode says; exits 0 when the client did what was
 * expected of it. */
static _Noreturn void peer_serve(int listen_fd, enum peer_mode mode)
{
        struct peer *p = xcalloc(1, sizeof(*p));
        char expect[64] = "AUTH EXTERNAL ", uid[16];
        int n = snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
        for (int i = 0; i < n; i++)
                sprintf(expect + strlen(expect), "%02x", (unsigned char)uid[i]);

        p->fd = accept(listen_fd, NULL, NULL);
        if (p->fd < 0)
                _exit(80);
        /* NUL, AUTH line */
        char line[256];
        size_t len = 0;
        while (len < sizeof(line) - 1 && (len < 2 || memcmp(line + len - 2, "\r\n", 2) != 0))
                if (read(p->fd, line + len, 1) != 1)
                        _exit(81);
                else
                        len++;
        line[len - 2] = '\0';
        if (line[0] != '\0' || strcmp(line + 1, expect) != 0)
                _exit(82);
        if (mode == PEER_REJECT_AUTH) {
                (void)!write(p->fd, "REJECTED EXTERNAL\r\n", 19);
                _exit(0);
        }
        /* BEGIN is read before OK is written: the client must send it
         * with AUTH (systemd's server leaves a call that shares a read
         * with a late BEGIN unanswered), so a client that waits for OK
         * first never gets it, and fails here by its own deadline */
        len = 0;
        while (len < 7)
                if (read(p->fd, line + len, 1) != 1)
                        _exit(83);
                else
                        len++;
        if (memcmp(line, "BEGIN\r\n", 7) != 0)
                _exit(84);
        (void)!write(p->fd, "OK 0123456789abcdef0123456789abcdef\r\n", 37);
        if (mode == PEER_HANG_UP)
                _exit(0);

        struct dbus_message m;
        while (peer_read(p, &m) == 0) {
                struct dbus_writer b = { 0 };
                if (mode == PEER_SILENT) {
                        dbus_message_done(&m);
                        continue;
                }
                if (streq(m.member, "Hello")) {
                        dbus_put_string(&b, ":1.42");
                        reply(p, &m, "s", &b);
                } else if (streq(m.member, "AddMatch")) {
                        reply(p, &m, NULL, NULL);
                } else if (streq(m.member, "StartTransientUnit")) {
                        struct dbus_reader r;
                        const char *unit;
                        if (dbus_body_reader(&m, "ssa(sv)a(sa(sv))", &r) < 0 || dbus_get_string(&r, &unit) < 0)
                                _exit(85);
                        if (mode == PEER_REFUSE) {
                                dbus_put_string(&b, "Unit already exists.\nreally");
                                struct msg_spec e = { DBUS_ERROR, ++p->serial, m.serial, NULL, NULL, NULL,
                                                      "org.freedesktop.systemd1.UnitExists", "s" };
                                peer_send(p, &e, &b);
                        } else {
                                /* someone else's job first, then ours, both
                                 * before the reply names ours */
                                job_removed(p, "/org/freedesktop/systemd1/job/6", "other.service", "done");
                                if (mode == PEER_SCOPE_DONE)
                                        job_removed(p, "/org/freedesktop/systemd1/job/7", unit, "done");
                                dbus_put_string(&b, "/org/freedesktop/systemd1/job/7");
                                reply(p, &m, "o", &b);
                                if (mode == PEER_SCOPE_FAILED)
                                        job_removed(p, "/org/freedesktop/systemd1/job/7", unit, "failed");
                        }
                } else if (streq(m.member, "Get")) {
                        struct dbus_reader r;
                        const char *iface, *prop;
                        if (dbus_body_reader(&m, "ss", &r) < 0 || dbus_get_string(&r, &iface) < 0 ||
                            dbus_get_string(&r, &prop) < 0)
                                _exit(86);
                        dbus_put_variant(&b, "s");
                        dbus_put_string(&b, streq(prop, "Version") ? "252.99" : "/user.slice/user@1000.service");
                        reply(p, &m, "v", &b);
                }
                dbus_writer_done(&b);
                dbus_message_done(&m);
        }
        _exit(0);
}

struct fake {
        char dir[64];
        char sock[128];
        pid_t pid;
};

/* A fake peer at dir/sock (dir/systemd/private when private) */
static void fake_start(struct fake *f, enum peer_mode mode, bool private)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-dbus.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        if (private) {
                char d[160];
                snprintf(d, sizeof(d), "%s/systemd", f->dir);
                assert_int_equal(mkdir(d, 0700), 0);
                snprintf(f->sock, sizeof(f->sock), "%s/systemd/private", f->dir);
        } else
                snprintf(f->sock, sizeof(f->sock), "%s/bus", f->dir);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(fd, 4), 0);
        fflush(stdout);
        fflush(stderr);
        f->pid = fork();
        assert_true(f->pid >= 0);
        if (f->pid == 0) {
                signal(SIGSEGV, SIG_DFL);
                signal(SIGABRT, SIG_DFL);
                peer_serve(fd, mode);
        }
        close(fd);
}

/* The peer's verdict: 0 when it saw what it expected. */
static int fake_stop(struct fake *f)
{
        int status;
        char cmd[128];
        assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void kill_fake(struct fake *f)
{
        kill(f->pid, SIGKILL);
        (void)fake_stop(f);
}

static int count_signals(const struct dbus_message *m, void *userdata)
{
        ++*(int *)userdata;
        return 0;
}

static void conversation(void **state)
{
        struct fake f;
        struct dbus_conn *c = NULL;
        struct dbus_message reply;
        _cleanup_free_ char *why = NULL, *addr = NULL;
        struct dbus_writer body = { 0 };
        int signals = 0;

        /* a bus: Hello on connect; the address form, escaped */
        fake_start(&f, PEER_SCOPE_DONE, false);
        addr = dbus_unix_address(f.sock);
        assert_int_equal(dbus_conn_open_address(addr, true, now_monotonic_ms() + 5000, &c, &why), 0);
        cgroup_systemd_scope_args(&body, "u.scope", "d", (uint32_t)getpid());
        assert_int_equal(dbus_conn_call(c, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))",
                                        &body, now_monotonic_ms() + 5000, count_signals, &signals, &reply, &why),
                         0);
        /* the two signals came before the reply, and were handed over */
        assert_int_equal(signals, 2);
        assert_string_equal(reply.signature, "o");
        dbus_message_done(&reply);
        c = dbus_conn_free(c);
        assert_int_equal(fake_stop(&f), 0);

        /* an error reply: its name and its text, on one line */
        fake_start(&f, PEER_REFUSE, true);
        assert_int_equal(dbus_conn_open_path(f.sock, false, now_monotonic_ms() + 5000, &c, &why), 0);
        free(why);
        why = NULL;
        assert_int_equal(dbus_conn_call(c, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                        "org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))",
                                        &body, now_monotonic_ms() + 5000, NULL, NULL, &reply, &why),
                         -EREMOTEIO);
        assert_string_equal(why, "org.freedesktop.systemd1.UnitExists: Unit already exists. really");
        c = dbus_conn_free(c);
        assert_int_equal(fake_stop(&f), 0);

        /* silence: the deadline, not forever */
        fake_start(&f, PEER_SILENT, true);
        assert_int_equal(dbus_conn_open_path(f.sock, false, now_monotonic_ms() + 5000, &c, &why), 0);
        uint64_t t0 = now_monotonic_ms();
        free(why);
        why = NULL;
        assert_int_equal(dbus_conn_call(c, NULL, "/", NULL, "Ping", NULL, NULL, t0 + 200, NULL, NULL, &reply, &why),
                         -ETIMEDOUT);
        assert_true(now_monotonic_ms() - t0 < 2000);
        c = dbus_conn_free(c);
        assert_int_equal(fake_stop(&f), 0);

        /* a peer that does not take our uid */
        fake_start(&f, PEER_REJECT_AUTH, true);
        free(why);
        why = NULL;
        assert_int_equal(dbus_conn_open_path(f.sock, false, now_monotonic_ms() + 5000, &c, &why), -EACCES);
        assert_non_null(strstr(why, "REJECTED EXTERNAL"));
        assert_null(c);
        assert_int_equal(fake_stop(&f), 0);

        /* a peer that hangs up after BEGIN, on a bus: Hello fails,
         * sent into a closed socket or waiting for its answer */
        fake_start(&f, PEER_HANG_UP, true);
        free(why);
        why = NULL;
        int r = dbus_conn_open_path(f.sock, true, now_monotonic_ms() + 5000, &c, &why);
        assert_true(r == -ECONNRESET || r == -EPIPE);
        assert_non_null(strstr(why, "Hello: "));
        assert_int_equal(fake_stop(&f), 0);

        /* addresses with no socket hutch can use */
        free(why);
        why = NULL;
        assert_true(dbus_conn_open_address("tcp:host=127.0.0.1,port=1", true, now_monotonic_ms() + 100, &c, &why) < 0);
        assert_non_null(strstr(why, "unix:path="));
        free(why);
        why = NULL;
        assert_int_equal(dbus_conn_open_address("unix:path=/nonexistent/bus;unix:path=/nonexistent/2", true,
                                                now_monotonic_ms() + 100, &c, &why),
                         -ENOENT);
        dbus_writer_done(&body);
}

/* cgroup-systemd.c against fake managers on their private socket.
 * This process is in no scope it asked for, so a job that ends "done"
 * must still be refused by the cgroup check; the reasons must say what
 * happened. */
static void scope_request(void **state)
{
        struct fake f;
        _cleanup_free_ char *unit = NULL, *why = NULL, *detail = NULL;
        const char *nobus = "unix:path=/nonexistent/bus";
        unsigned controllers;

        fake_start(&f, PEER_SCOPE_DONE, true);
        assert_int_equal(cgroup_systemd_scope_at(f.sock, nobus, "TESTID", 5000, &unit, &why), -ESRCH);
        assert_non_null(strstr(why, "started hutch-TESTID.scope but hutch is not in its cgroup"));
        assert_null(unit);
        assert_int_equal(fake_stop(&f), 0);

        /* the same over a bus: AddMatch first, the reply after the
         * signals */
        fake_start(&f, PEER_SCOPE_DONE, false);
        _cleanup_free_ char *addr = dbus_unix_address(f.sock);
        free(why);
        why = NULL;
        assert_int_equal(cgroup_systemd_scope_at(NULL, addr, "TESTID", 5000, &unit, &why), -ESRCH);
        assert_non_null(strstr(why, "on the "));
        assert_non_null(strstr(why, " bus (unix:path=/tmp/hutch-test-dbus."));
        assert_int_equal(fake_stop(&f), 0);

        /* a job that fails, a refusal, silence: each said as it is */
        static const struct { enum peer_mode mode; unsigned timeout_ms; int r; const char *says; } cases[] = {
                { PEER_SCOPE_FAILED, 5000, -EIO, "could not start hutch-TESTID.scope: job failed" },
                { PEER_REFUSE, 5000, -EREMOTEIO, "refused hutch-TESTID.scope: org.freedesktop.systemd1.UnitExists" },
                { PEER_SILENT, 300, -ETIMEDOUT, "did not answer for hutch-TESTID.scope within 300 ms" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                fake_start(&f, cases[i].mode, true);
                free(why);
                why = NULL;
                assert_int_equal(cgroup_systemd_scope_at(f.sock, nobus, "TESTID", cases[i].timeout_ms, &unit, &why),
                                 cases[i].r);
                assert_non_null(strstr(why, cases[i].says));
                assert_null(unit);
                if (cases[i].mode == PEER_SILENT)
                        kill_fake(&f);
                else
                        assert_int_equal(fake_stop(&f), 0);
        }

        /* neither socket: both reasons */
        free(why);
        why = NULL;
        assert_int_equal(cgroup_systemd_scope_at("/nonexistent/private", nobus, "TESTID", 300, &unit, &why), -ENOENT);
        assert_non_null(strstr(why, "/nonexistent/private: no such socket"));
        assert_non_null(strstr(why, "(unix:path=/nonexistent/bus): cannot connect: No such file or directory"));

        /* doctor's question */
        fake_start(&f, PEER_PROPERTIES, true);
        free(why);
        why = NULL;
        assert_int_equal(cgroup_systemd_probe_at(f.sock, nobus, &detail, &controllers, &why), 0);
        assert_non_null(strstr(detail, "systemd 252.99 "));
        assert_non_null(strstr(detail, " manager on /tmp/hutch-test-dbus."));
        assert_non_null(strstr(detail, "(cgroup /user.slice/user@1000.service)"));
        kill_fake(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(hello_call),
                cmocka_unit_test(scope_body),
                cmocka_unit_test(parse_reply),
                cmocka_unit_test(parse_signal_and_error),
                cmocka_unit_test(unknown_fields),
                cmocka_unit_test(broken_messages),
                cmocka_unit_test(conversation),
                cmocka_unit_test(scope_request),
        };
        signal(SIGPIPE, SIG_IGN);
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
