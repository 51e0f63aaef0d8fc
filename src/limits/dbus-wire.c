/* dbus-wire.c - the D-Bus message format (see dbus-wire.h).
 *
 * A message: a 16-byte fixed header (byte order, type, flags, version,
 * body length, serial, the length of the header-field array), the
 * header fields as an array of (code, variant) structs, padding to 8,
 * the body. Values align to their own size (strings and arrays to 4,
 * structs to 8), counted from the message's first byte.
 *
 * What comes in is read as hostile: every length is checked against
 * the bytes there are before it is used, strings must end in their NUL
 * and be UTF-8 without NUL, and a value of a type hutch does not read
 * is skipped by its signature with nesting bounded, as the spec bounds
 * it (32 arrays, 32 structs), so no message can recurse us deep.
 */
#include "config.h"

#include <byteswap.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "limits/dbus-wire.h"
#include "lib/sanitize.h"
#include "lib/util.h"

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define HOST_ENDIAN 'l'
#else
#define HOST_ENDIAN 'B'
#endif

#define FIELD_PATH 1
#define FIELD_INTERFACE 2
#define FIELD_MEMBER 3
#define FIELD_ERROR_NAME 4
#define FIELD_REPLY_SERIAL 5
#define FIELD_DESTINATION 6
#define FIELD_SENDER 7
#define FIELD_SIGNATURE 8

/* the spec's bounds on nesting, each kind on its own */
#define NESTING_MAX 32

/* ---- writing ---- */

static void put_bytes(struct dbus_writer *w, const void *p, size_t n)
{
        if (w->len + n > w->cap) {
                w->cap = MAX(w->cap * 2, w->len + n + 64);
                w->buf = xrealloc(w->buf, w->cap);
        }
        memcpy(w->buf + w->len, p, n);
        w->len += n;
}

static void put_pad(struct dbus_writer *w, size_t align)
{
        static const uint8_t zeros[8];
        put_bytes(w, zeros, (align - w->len % align) % align);
}

void dbus_writer_done(struct dbus_writer *w)
{
        free(w->buf);
        *w = (struct dbus_writer){ 0 };
}

void dbus_put_byte(struct dbus_writer *w, uint8_t v)
{
        put_bytes(w, &v, 1);
}

void dbus_put_u32(struct dbus_writer *w, uint32_t v)
{
        put_pad(w, 4);
        put_bytes(w, &v, 4);
}

void dbus_put_bool(struct dbus_writer *w, bool v)
{
        dbus_put_u32(w, v ? 1 : 0);
}

void dbus_put_string(struct dbus_writer *w, const char *s)
{
        size_t n = strlen(s);
        dbus_put_u32(w, (uint32_t)n);
        put_bytes(w, s, n + 1);
}

void dbus_put_signature(struct dbus_writer *w, const char *sig)
{
        size_t n = strlen(sig);
        dbus_put_byte(w, (uint8_t)n);
        put_bytes(w, sig, n + 1);
}

void dbus_put_variant(struct dbus_writer *w, const char *sig)
{
        dbus_put_signature(w, sig);
}

void dbus_put_struct(struct dbus_writer *w)
{
        put_pad(w, 8);
}

struct dbus_array dbus_array_open(struct dbus_writer *w, size_t element_align)
{
        struct dbus_array a;
        dbus_put_u32(w, 0);
        a.length_at = w->len - 4;
        /* the padding to the first element is there even when there is
         * no element, and is not counted in the length */
        put_pad(w, element_align);
        a.first = w->len;
        return a;
}

void dbus_array_close(struct dbus_writer *w, struct dbus_array a)
{
        uint32_t n = (uint32_t)(w->len - a.first);
        memcpy(w->buf + a.length_at, &n, 4);
}

void dbus_put_header_field(struct dbus_writer *w, uint8_t code, const char *sig, const char *value)
{
        dbus_put_struct(w);
        dbus_put_byte(w, code);
        dbus_put_variant(w, sig);
        if (sig[0] == 'g')
                dbus_put_signature(w, value);
        else
                dbus_put_string(w, value);
}

void dbus_method_call(struct dbus_writer *out, uint32_t serial, const char *dest, const char *path,
                      const char *interface, const char *member, const char *sig,
                      const struct dbus_writer *body)
{
        size_t body_len = body ? body->len : 0;

        out->len = 0;
        dbus_put_byte(out, HOST_ENDIAN);
        dbus_put_byte(out, DBUS_METHOD_CALL);
        dbus_put_byte(out, 0);          /* flags: a reply is wanted */
        dbus_put_byte(out, 1);          /* protocol version */
        dbus_put_u32(out, (uint32_t)body_len);
        dbus_put_u32(out, serial);
        struct dbus_array fields = dbus_array_open(out, 8);
        dbus_put_header_field(out, FIELD_PATH, "o", path);
        if (interface)
                dbus_put_header_field(out, FIELD_INTERFACE, "s", interface);
        dbus_put_header_field(out, FIELD_MEMBER, "s", member);
        if (dest)
                dbus_put_header_field(out, FIELD_DESTINATION, "s", dest);
        if (sig && *sig)
                dbus_put_header_field(out, FIELD_SIGNATURE, "g", sig);
        dbus_array_close(out, fields);
        put_pad(out, 8);
        if (body_len)
                put_bytes(out, body->buf, body_len);
}

/* ---- reading ---- */

static uint32_t load_u32(const uint8_t *p, bool swap)
{
        uint32_t v;
        memcpy(&v, p, 4);
        return swap ? bswap_32(v) : v;
}

/* Skip to the next multiple of align, over zero bytes only (the spec
 * makes padding zero; anything else is a malformed message). */
static int align_to(struct dbus_reader *r, size_t align)
{
        size_t to = (r->pos + align - 1) / align * align;
        if (to > r->len)
                return -EBADMSG;
        for (; r->pos < to; r->pos++)
                if (r->p[r->pos] != 0)
                        return -EBADMSG;
        return 0;
}

static int need(const struct dbus_reader *r, size_t n)
{
        return n <= r->len - r->pos ? 0 : -EBADMSG;
}

int dbus_get_u32(struct dbus_reader *r, uint32_t *ret)
{
        int e = align_to(r, 4);
        if (e < 0 || (e = need(r, 4)) < 0)
                return e;
        *ret = load_u32(r->p + r->pos, r->swap);
        r->pos += 4;
        return 0;
}

static int get_byte(struct dbus_reader *r, uint8_t *ret)
{
        int e = need(r, 1);
        if (e < 0)
                return e;
        *ret = r->p[r->pos++];
        return 0;
}

/* n bytes at pos, then a NUL: a string of the message */
static int take_text(struct dbus_reader *r, size_t n, const char **ret)
{
        if (n >= r->len - r->pos || r->p[r->pos + n] != 0)
                return -EBADMSG;
        const char *s = (const char *)r->p + r->pos;
        if (!sanitize_utf8_valid(s, n))
                return -EBADMSG;
        *ret = s;
        r->pos += n + 1;
        return 0;
}

int dbus_get_string(struct dbus_reader *r, const char **ret)
{
        uint32_t n;
        int e = dbus_get_u32(r, &n);
        return e < 0 ? e : take_text(r, n, ret);
}

int dbus_get_signature(struct dbus_reader *r, const char **ret)
{
        uint8_t n;
        int e = get_byte(r, &n);
        return e < 0 ? e : take_text(r, n, ret);
}

int dbus_get_variant_string(struct dbus_reader *r, const char **ret)
{
        const char *sig;
        int e = dbus_get_signature(r, &sig);
        if (e < 0)
                return e;
        if (!streq(sig, "s") && !streq(sig, "o"))
                return -EBADMSG;
        return dbus_get_string(r, ret);
}

static size_t type_align(char t)
{
        switch (t) {
        case 'n': case 'q': return 2;
        case 'b': case 'i': case 'u': case 'h': case 's': case 'o': case 'a': return 4;
        case 'x': case 't': case 'd': case '(': case '{': return 8;
        default: return 1;      /* y g v */
        }
}

/* The end of the one complete type that starts at sig, or NULL when
 * sig does not start with one. */
static const char *type_end(const char *sig, unsigned arrays, unsigned structs)
{
        switch (*sig) {
        case 'y': case 'b': case 'n': case 'q': case 'i': case 'u': case 'x': case 't':
        case 'd': case 'h': case 's': case 'o': case 'g': case 'v':
                return sig + 1;
        case 'a':
                if (arrays >= NESTING_MAX)
                        return NULL;
                if (sig[1] == '{') {
                        /* a dict entry: a basic key, one value */
                        if (!strchr("ybnqiuxtdhsog", sig[2]) || !sig[2] || structs >= NESTING_MAX)
                                return NULL;
                        const char *v = type_end(sig + 3, arrays + 1, structs + 1);
                        return v && *v == '}' ? v + 1 : NULL;
                }
                return type_end(sig + 1, arrays + 1, structs);
        case '(': {
                if (structs >= NESTING_MAX || sig[1] == ')')
                        return NULL;
                const char *p = sig + 1;
                while (p && *p != ')')
                        p = *p ? type_end(p, arrays, structs + 1) : NULL;
                return p ? p + 1 : NULL;
        }
        default:
                return NULL;
        }
}

/* Skip one value of the complete type at *sig, moving *sig past it. */
static int skip_value(struct dbus_reader *r, const char **sig, unsigned depth)
{
        const char *t = *sig;
        const char *end = type_end(t, 0, 0);
        uint32_t n;
        const char *s;
        int e;

        if (!end || depth > 2 * NESTING_MAX)
                return -EBADMSG;
        *sig = end;
        if ((e = align_to(r, type_align(*t))) < 0)
                return e;
        switch (*t) {
        case 's': case 'o':
                return dbus_get_string(r, &s);
        case 'g':
                return dbus_get_signature(r, &s);
        case 'v': {
                if ((e = dbus_get_signature(r, &s)) < 0)
                        return e;
                const char *inner = s;
                if ((e = skip_value(r, &inner, depth + 1)) < 0)
                        return e;
                return *inner ? -EBADMSG : 0;   /* exactly one type */
        }
        case 'a':
                if ((e = dbus_get_u32(r, &n)) < 0 || (e = align_to(r, type_align(t[1]))) < 0)
                        return e;
                /* the elements are not looked at: their bytes are
                 * accounted for, which is all skipping needs */
                if ((e = need(r, n)) < 0)
                        return e;
                r->pos += n;
                return 0;
        case '(': case '{': {
                const char *p = t + 1;
                while (*p != ')' && *p != '}')
                        if ((e = skip_value(r, &p, depth + 1)) < 0)
                                return e;
                return 0;
        }
        default: {
                size_t size = type_align(*t);
                if ((e = need(r, size)) < 0)
                        return e;
                r->pos += size;
                return 0;
        }
        }
}

ssize_t dbus_message_size(const uint8_t *buf, size_t len)
{
        if (len < DBUS_FIXED_HEADER || (buf[0] != 'l' && buf[0] != 'B') || buf[3] != 1)
                return -EBADMSG;
        bool swap = buf[0] != HOST_ENDIAN;
        uint64_t body = load_u32(buf + 4, swap), fields = load_u32(buf + 12, swap);
        uint64_t size = (DBUS_FIXED_HEADER + fields + 7) / 8 * 8 + body;
        if (size > DBUS_MESSAGE_MAX)
                return -EMSGSIZE;
        return (ssize_t)size;
}

static int parse_fields(struct dbus_message *m, struct dbus_reader *r)
{
        while (r->pos < r->len) {
                uint8_t code;
                const char *sig, *s = NULL;
                uint32_t u;
                int e;

                if ((e = align_to(r, 8)) < 0 || (e = get_byte(r, &code)) < 0 ||
                    (e = dbus_get_signature(r, &sig)) < 0)
                        return e;
                const char *want = code == FIELD_PATH ? "o"
                                   : code == FIELD_REPLY_SERIAL ? "u"
                                   : code == FIELD_SIGNATURE ? "g"
                                   : code >= FIELD_INTERFACE && code <= FIELD_SENDER ? "s" : NULL;
                if (!want) {
                        /* a field of a later version of the spec */
                        const char *inner = sig;
                        if ((e = skip_value(r, &inner, 0)) < 0)
                                return e;
                        if (*inner)
                                return -EBADMSG;
                        continue;
                }
                if (!streq(sig, want))
                        return -EBADMSG;
                if (code == FIELD_REPLY_SERIAL)
                        e = dbus_get_u32(r, &u);
                else if (code == FIELD_SIGNATURE)
                        e = dbus_get_signature(r, &s);
                else
                        e = dbus_get_string(r, &s);
                if (e < 0)
                        return e;
                switch (code) {
                case FIELD_PATH: m->path = s; break;
                case FIELD_INTERFACE: m->interface = s; break;
                case FIELD_MEMBER: m->member = s; break;
                case FIELD_ERROR_NAME: m->error_name = s; break;
                case FIELD_REPLY_SERIAL: m->reply_serial = u; break;
                case FIELD_DESTINATION: m->destination = s; break;
                case FIELD_SENDER: m->sender = s; break;
                case FIELD_SIGNATURE: m->signature = s; break;
                }
        }
        return 0;
}

int dbus_message_parse(uint8_t *raw, size_t size, struct dbus_message *m)
{
        *m = (struct dbus_message){ .raw = raw, .size = size };
        ssize_t want = dbus_message_size(raw, size);
        if (want < 0 || (size_t)want != size)
                goto bad;
        m->swap = raw[0] != HOST_ENDIAN;
        m->type = (enum dbus_type)raw[1];
        m->serial = load_u32(raw + 8, m->swap);
        uint32_t fields = load_u32(raw + 12, m->swap);
        struct dbus_reader r = { .p = raw, .len = DBUS_FIXED_HEADER + (size_t)fields,
                                 .pos = DBUS_FIXED_HEADER, .swap = m->swap };
        if (m->serial == 0 || parse_fields(m, &r) < 0)
                goto bad;
        m->body_at = (r.len + 7) / 8 * 8;
        m->body_len = size - m->body_at;
        for (size_t i = r.len; i < m->body_at; i++)
                if (raw[i] != 0)
                        goto bad;
        /* the fields each type must have */
        switch (m->type) {
        case DBUS_METHOD_CALL: if (!m->path || !m->member) goto bad; break;
        case DBUS_METHOD_RETURN: if (!m->reply_serial) goto bad; break;
        case DBUS_ERROR: if (!m->reply_serial || !m->error_name) goto bad; break;
        case DBUS_SIGNAL: if (!m->path || !m->interface || !m->member) goto bad; break;
        default: break;         /* unknown types are ignored, not refused */
        }
        return 0;
bad:
        free(raw);
        *m = (struct dbus_message){ 0 };
        return -EBADMSG;
}

void dbus_message_done(struct dbus_message *m)
{
        free(m->raw);
        *m = (struct dbus_message){ 0 };
}

int dbus_body_reader(const struct dbus_message *m, const char *sig, struct dbus_reader *ret)
{
        if (!streq(m->signature ? m->signature : "", sig))
                return -EBADMSG;
        *ret = (struct dbus_reader){ .p = m->raw, .len = m->body_at + m->body_len, .pos = m->body_at,
                                     .swap = m->swap };
        return 0;
}
