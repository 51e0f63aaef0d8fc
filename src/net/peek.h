/* peek.h - the name a connection's first bytes carry, read without
 * decrypting or consuming them: the SNI of a TLS ClientHello, the Host
 * header of a plain HTTP request, the target of an HTTP CONNECT.
 *
 * Every parser takes the bytes received so far and says whether they are
 * enough: the relay keeps reading (up to a bound) while they are not.
 * All input is the job's, so hostile: lengths are checked before every
 * read and nothing is trusted to be NUL-terminated.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/rules.h"

enum peek_kind {
        PEEK_MORE,              /* could be TLS or HTTP: need more bytes */
        PEEK_TLS,               /* a whole ClientHello; name = its SNI ("" if none) */
        PEEK_HTTP,              /* a whole request head; name = its Host ("" if none) */
        PEEK_CONNECT,           /* "CONNECT host:port": name and port; head_len = bytes of the head */
        PEEK_OTHER,             /* neither: only address rules apply */
        _PEEK_KIND_MAX,
        _PEEK_KIND_INVALID = -EINVAL,
};

#define PEEK_NAME_MAX 254

struct peek_result {
        enum peek_kind kind;
        char name[PEEK_NAME_MAX]; /* lower case, no trailing dot, no port */
        uint16_t port;          /* CONNECT: the target's; HTTP: the Host header's, 0 if none */
        size_t head_len;        /* CONNECT: bytes up to and including the blank line */
        bool has_addr;          /* CONNECT/HTTP: the target is an IP literal, in addr */
        struct egress_addr addr; /* (then name is "": only address rules judge it) */
};

/* Look at the first n bytes of a connection. A name that is not a valid
 * host name (egress_name_valid()) makes the result PEEK_OTHER with an
 * empty name, never a partial one. Returns r->kind. */
enum peek_kind peek_parse(const uint8_t *buf, size_t n, struct peek_result *r);

/* A request sent to a proxy names its target in absolute form ("GET
 * http://api.test:8080/x HTTP/1.1"); an origin server expects origin
 * form ("GET /x HTTP/1.1", RFC 9112 section 3.2), and many answer 404 to
 * the other. If buf[0..n) starts with a request line whose target is an
 * absolute http:// URI, rewrite it in place to origin form ("/" when the
 * URI has no path) and return the new length; else return n. Headers,
 * Host among them, are left as they are. */
size_t peek_origin_form(uint8_t *buf, size_t n);
