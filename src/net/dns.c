/* dns.c - reading a DNS query and writing the stub's answer (see dns.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "net/dns.h"

static uint16_t get16(const uint8_t *p)
{
        return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)(v >> 8);
        p[1] = (uint8_t)v;
}

int dns_parse_query(const uint8_t *buf, size_t n, struct dns_query *q)
{
        size_t off = 12, out = 0;

        if (n < 12)
                return -EINVAL;
        q->id = get16(buf);
        q->flags = get16(buf + 2);
        /* a query (QR=0), opcode QUERY, one question, nothing else but
         * an EDNS OPT record, which we ignore (answering without one is
         * what RFC 6891 asks of a server that does not do EDNS) */
        if ((q->flags & 0x8000) || ((q->flags >> 11) & 0xf) != 0 || get16(buf + 4) != 1 ||
            get16(buf + 6) != 0 || get16(buf + 8) != 0 || get16(buf + 10) > 1)
                return -EBADMSG;
        for (;;) {
                if (off >= n)
                        return -EBADMSG;
                uint8_t len = buf[off++];
                if (len == 0)
                        break;
                /* 0xc0: a compression pointer, never in a question we accept */
                if (len > 63 || off + len > n || out + len + 1 >= sizeof(q->name))
                        return -EBADMSG;
                if (out)
                        q->name[out++] = '.';
                for (size_t i = 0; i < len; i++) {
                        unsigned char c = buf[off + i];
                        /* a name with bytes no host name has cannot match a rule */
                        if (c == '.' || c < 0x21 || c > 0x7e)
                                return -EBADMSG;
                        q->name[out++] = (char)tolower(c);
                }
                off += len;
        }
        q->name[out] = '\0';
        if (off + 4 > n)
                return -EBADMSG;
        q->qtype = get16(buf + off);
        q->qclass = get16(buf + off + 2);
        q->question_end = off + 4;
        return 0;
}

int dns_build_answer(const uint8_t *req, const struct dns_query *q, int rcode, const uint8_t *a4,
                     uint32_t ttl, uint8_t *out, size_t cap)
{
        size_t len = q->question_end;

        if (len + 16 > cap)
                return -ENOBUFS;
        memcpy(out, req, len);
        /* QR, the opcode and RD as asked, RA: we recurse (on the host) */
        uint16_t flags = (uint16_t)(0x8000 | (q->flags & 0x7900) | 0x0080 | (rcode & 0xf));
        put16(out + 2, flags);
        put16(out + 4, 1);
        put16(out + 6, a4 ? 1 : 0);
        put16(out + 8, 0);
        put16(out + 10, 0);
        if (a4) {
                uint8_t *p = out + len;
                put16(p, 0xc00c);       /* the name: the question's, at offset 12 */
                put16(p + 2, DNS_TYPE_A);
                put16(p + 4, 1);        /* IN */
                put16(p + 6, (uint16_t)(ttl >> 16));
                put16(p + 8, (uint16_t)ttl);
                put16(p + 10, 4);
                memcpy(p + 12, a4, 4);
                len += 16;
        }
        return (int)len;
}
