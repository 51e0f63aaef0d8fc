/* peek.c - the SNI, Host or CONNECT target in a connection's first bytes
 * (see peek.h).
 *
 * TLS: one record of type handshake holding a ClientHello; we read the
 * server_name extension and nothing else. A ClientHello split over
 * records is rare (post-quantum key shares make it bigger, still one
 * record up to 16K) and is judged without a name: fail-closed, since a
 * name rule then cannot allow it.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "net/peek.h"
#include "net/rules.h"

static size_t get16(const uint8_t *p)
{
        return (size_t)p[0] << 8 | p[1];
}

/* Copy n bytes of a name into r->name, lower case, without a trailing
 * dot; false if it is no valid host name. */
static bool set_name(struct peek_result *r, const uint8_t *s, size_t n)
{
        if (n && s[n - 1] == '.')
                n--;
        if (n == 0 || n >= sizeof(r->name))
                return false;
        for (size_t i = 0; i < n; i++)
                r->name[i] = (char)tolower(s[i]);
        r->name[n] = '\0';
        /* an address is no name: only address rules may judge it */
        struct egress_addr a;
        if (!egress_name_valid(r->name) || egress_addr_parse(r->name, &a) == 0) {
                r->name[0] = '\0';
                return false;
        }
        return true;
}

static enum peek_kind parse_tls(const uint8_t *b, size_t n, struct peek_result *r)
{
        if (n < 5)
                return PEEK_MORE;
        size_t rec = get16(b + 3);
        if (b[1] != 3 || rec < 4 || rec > 16384 + 2048)
                return PEEK_OTHER;
        if (n < 5 + rec)
                return PEEK_MORE;
        const uint8_t *p = b + 5, *end = b + 5 + rec;
        if (p[0] != 1)                  /* ClientHello */
                return PEEK_OTHER;
        size_t hs = (size_t)p[1] << 16 | get16(p + 2);
        p += 4;
        if (hs > (size_t)(end - p))
                /* spans records: no name */
                return (r->kind = PEEK_TLS);
        end = p + hs;
        /* version, random */
        if (end - p < 34)
                return PEEK_OTHER;
        p += 34;
        if (end - p < 1 || end - p < 1 + p[0])
                return PEEK_OTHER;
        p += 1 + p[0];                  /* session id */
        if (end - p < 2 || (size_t)(end - p) < 2 + get16(p))
                return PEEK_OTHER;
        p += 2 + get16(p);              /* cipher suites */
        if (end - p < 1 || end - p < 1 + p[0])
                return PEEK_OTHER;
        p += 1 + p[0];                  /* compression methods */
        r->kind = PEEK_TLS;
        if (end - p < 2)
                return PEEK_TLS;        /* no extensions, no SNI */
        size_t ext_len = get16(p);
        p += 2;
        if (ext_len > (size_t)(end - p))
                return PEEK_OTHER;
        end = p + ext_len;
        while (end - p >= 4) {
                size_t type = get16(p), len = get16(p + 2);
                p += 4;
                if (len > (size_t)(end - p))
                        return PEEK_OTHER;
                if (type == 0) {        /* server_name */
                        const uint8_t *q = p, *qend = p + len;
                        if (qend - q < 2)
                                return PEEK_OTHER;
                        q += 2;
                        while (qend - q >= 3) {
                                size_t nl = get16(q + 1);
                                if (nl > (size_t)(qend - q - 3))
                                        return PEEK_OTHER;
                                if (q[0] == 0) {        /* host_name */
                                        if (!set_name(r, q + 3, nl))
                                                return (r->kind = PEEK_OTHER);
                                        return PEEK_TLS;
                                }
                                q += 3 + nl;
                        }
                        return PEEK_TLS;
                }
                p += len;
        }
        return PEEK_TLS;
}

/* The value of header name (with its ':'), from the head's second line on. */
static const uint8_t *find_header(const uint8_t *b, size_t n, const char *name, size_t *ret_len)
{
        size_t nl = strlen(name);
        for (size_t i = 0; i + 2 + nl <= n; i++) {
                if (b[i] != '\r' || b[i + 1] != '\n' || strncasecmp((const char *)b + i + 2, name, nl) != 0)
                        continue;
                const uint8_t *v = b + i + 2 + nl, *e = v;
                while (e < b + n && *e != '\r')
                        e++;
                while (v < e && (*v == ' ' || *v == '\t'))
                        v++;
                while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                        e--;
                *ret_len = (size_t)(e - v);
                return v;
        }
        return NULL;
}

/* "name", "name:port", "[v6]:port" -> host part, port (0 if none). The
 * host part of "[v6]:port" is what is between the brackets. */
static void split_authority(const uint8_t *v, size_t len, const uint8_t **ret_host, size_t *ret_host_len,
                            uint16_t *ret_port, bool *ret_bracketed)
{
        size_t colon = len, start = 0, end;
        *ret_port = 0;
        *ret_bracketed = len && v[0] == '[';
        if (len && v[0] == '[') {
                const uint8_t *close = memchr(v, ']', len);
                if (!close || (close + 1 < v + len && close[1] != ':')) {
                        *ret_host = v;
                        *ret_host_len = 0;
                        return;
                }
                start = 1;
                end = (size_t)(close - v);
                colon = close + 1 < v + len ? end + 1 : len;
        } else {
                for (size_t i = 0; i < len; i++)
                        if (v[i] == ':')
                                colon = i;
                end = colon;
        }
        if (colon < len) {
                unsigned p = 0;
                size_t i;
                for (i = colon + 1; i < len && isdigit(v[i]) && p <= 65535; i++)
                        p = p * 10 + (unsigned)(v[i] - '0');
                if (i == len && p >= 1 && p <= 65535)
                        *ret_port = (uint16_t)p;
        }
        *ret_host = v + start;
        *ret_host_len = end - start;
}

/* A request's target host: a name (r->name), or an IP literal (r->addr,
 * judged by address rules alone); false if it is neither. Brackets hold
 * an IPv6 literal and nothing else. */
static bool set_target(struct peek_result *r, const uint8_t *s, size_t n, bool bracketed)
{
        char lit[64];
        if (!bracketed && set_name(r, s, n))
                return true;
        r->name[0] = '\0';
        if (n == 0 || n >= sizeof(lit))
                return false;
        memcpy(lit, s, n);
        lit[n] = '\0';
        r->has_addr = egress_addr_parse(lit, &r->addr) == 0 && (!bracketed || r->addr.family == AF_INET6);
        return r->has_addr;
}

static enum peek_kind parse_http(const uint8_t *b, size_t n, struct peek_result *r)
{
        const uint8_t *end = NULL;
        for (size_t i = 0; i + 4 <= n; i++)
                if (memcmp(b + i, "\r\n\r\n", 4) == 0) {
                        end = b + i + 4;
                        break;
                }
        if (!end)
                return PEEK_MORE;
        size_t head = (size_t)(end - b), nlen;
        const uint8_t *host;
        bool bracketed;
        if (head > 8 && memcmp(b, "CONNECT ", 8) == 0) {
                const uint8_t *t = b + 8, *sp = t;
                while (sp < end && *sp != ' ' && *sp != '\r')
                        sp++;
                r->kind = PEEK_CONNECT;
                r->head_len = head;
                split_authority(t, (size_t)(sp - t), &host, &nlen, &r->port, &bracketed);
                if (!r->port || !set_target(r, host, nlen, bracketed)) {
                        r->name[0] = '\0';
                        r->has_addr = false;
                }
                return PEEK_CONNECT;
        }
        r->kind = PEEK_HTTP;
        size_t vlen;
        const uint8_t *v = find_header(b, head, "host:", &vlen);
        if (v) {
                split_authority(v, vlen, &host, &nlen, &r->port, &bracketed);
                if (!set_target(r, host, nlen, bracketed))
                        r->name[0] = '\0';
        }
        return PEEK_HTTP;
}

enum peek_kind peek_parse(const uint8_t *buf, size_t n, struct peek_result *r)
{
        memset(r, 0, sizeof(*r));
        r->kind = PEEK_MORE;
        if (n == 0)
                return PEEK_MORE;
        if (buf[0] == 0x16)
                return (r->kind = parse_tls(buf, n, r));
        /* an HTTP method: upper-case letters, then a space */
        size_t i = 0;
        while (i < n && i < 16 && buf[i] >= 'A' && buf[i] <= 'Z')
                i++;
        if (i == n && i < 16)
                return PEEK_MORE;
        if (i == 0 || i == 16 || buf[i] != ' ')
                return (r->kind = PEEK_OTHER);
        return (r->kind = parse_http(buf, n, r));
}

size_t peek_origin_form(uint8_t *buf, size_t n)
{
        static const char scheme[] = "http://";
        size_t sp = 0, line = 0;

        /* the request line: METHOD SP target SP version CRLF */
        while (line < n && buf[line] != '\r' && buf[line] != '\n')
                line++;
        if (line == n)
                return n;
        while (sp < line && buf[sp] != ' ')
                sp++;
        size_t t = sp + 1;
        if (sp == 0 || t + sizeof(scheme) - 1 > line ||
            strncasecmp((const char *)buf + t, scheme, sizeof(scheme) - 1) != 0)
                return n;
        size_t a = t + sizeof(scheme) - 1, e = a;
        while (e < line && buf[e] != '/' && buf[e] != ' ' && buf[e] != '?')
                e++;
        if (e == line)
                return n;       /* no version after the target: not a request line */
        if (buf[e] == '/') {
                /* drop "http://authority", keep "/path..." */
                memmove(buf + t, buf + e, n - e);
                return n - (e - t);
        }
        /* "http://authority" or "http://authority?q": the path is "/" */
        buf[t] = '/';
        memmove(buf + t + 1, buf + e, n - e);
        return n - (e - t) + 1;
}
