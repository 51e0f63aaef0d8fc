/* resolve.h - deciding one captured connection on the host side: which
 * name it is for (the stub DNS address it dialled, its SNI, Host or
 * CONNECT target), whether the rules allow it, and which addresses
 * hutch itself resolves that name to and may dial after the fail-closed
 * recheck (rules.h). The job's own view of names (/etc/hosts, its own
 * DNS answers, the IP it dialled) never picks the address.
 *
 * Resolution goes through an injected function so the unit tests can
 * answer with private and metadata addresses without any lookup;
 * egress_resolve_system() is the real one (getaddrinfo on the host).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/peek.h"
#include "net/rules.h"

#define EGRESS_MAX_ADDRS 8

/* Resolve name into up to max addresses; returns how many, or -errno
 * (-ENOENT: no such name). */
typedef int (*egress_resolver)(const char *name, struct egress_addr *out, size_t max, void *userdata);

/* getaddrinfo(name) on the host, TCP, both families. Blocking. */
int egress_resolve_system(const char *name, struct egress_addr *out, size_t max, void *userdata);

struct egress_request {
        struct egress_addr dest;        /* what the job dialled (getsockname of the accepted socket) */
        uint16_t dest_port;
        const char *stub_name;          /* the name behind dest if dest is a stub address, else NULL */
        bool stub_unknown;              /* dest is in the stub range but names nothing */
        bool via_proxy;                 /* accepted on the proxy port: the target is in the request */
        const struct peek_result *peek; /* what the first bytes said */
};

struct egress_decision {
        bool allowed;
        const char *reason;             /* static: "allow rule", "no rule", "SNI mismatch", ... */
        const struct egress_rule *rule; /* the rule that decided, or NULL */
        char name[PEEK_NAME_MAX];       /* the name judged, "" if none */
        uint16_t port;                  /* the port to dial */
        struct egress_addr addrs[EGRESS_MAX_ADDRS];  /* allowed: where to dial, in order */
        size_t n_addrs;
        struct egress_addr refused;     /* denied by the recheck: the address refused */
        bool has_refused;
};

/* Decide req under rules; own[] are the host's own addresses. Never
 * dials. The resolver is called only for a name a name rule allowed
 * that has no --add-host entry. */
void egress_decide(const struct egress_rules *rules, const struct egress_request *req,
                   const struct egress_addr *own, size_t n_own, egress_resolver resolve, void *userdata,
                   struct egress_decision *ret);
