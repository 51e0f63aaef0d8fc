/* dns.h - the wire format of the stub DNS inside the sandbox: reading
 * one query, writing its answer. The stub answers A queries for allowed
 * names with an address of its own choosing (see egress.c), everything
 * else with NXDOMAIN or an empty answer. Queries are the job's, so
 * hostile: compression pointers, bad lengths and extra sections are
 * refused, never followed.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define DNS_TYPE_A 1
#define DNS_TYPE_AAAA 28
#define DNS_RCODE_OK 0
#define DNS_RCODE_FORMERR 1
#define DNS_RCODE_SERVFAIL 2
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_REFUSED 5

struct dns_query {
        uint16_t id;
        uint16_t flags;         /* as received */
        char name[254];         /* lower case, no trailing dot; "" for the root */
        uint16_t qtype, qclass;
        size_t question_end;    /* offset just past the question */
};

/* Parse a query of n bytes. 0, or -EINVAL when it is not one standard
 * query with one question (no answer should be sent then, except
 * FORMERR when at least the header was there: -EBADMSG). */
int dns_parse_query(const uint8_t *buf, size_t n, struct dns_query *q);

/* Write the answer to q into out (cap bytes, at least 512): rcode, and
 * when a4 is not NULL one A record of 4 bytes with ttl. The question is
 * copied from req. Returns the length, or -ENOBUFS. */
int dns_build_answer(const uint8_t *req, const struct dns_query *q, int rcode, const uint8_t *a4,
                     uint32_t ttl, uint8_t *out, size_t cap);
