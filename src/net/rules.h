/* rules.h - egress rules (`network = allow`, DESIGN §7): parsing
 * `--allow`/`--deny` HOST[:PORT] and `--add-host NAME=IP`, matching a
 * connection's name, address and port against them, and the fail-closed
 * address classes a connection may never reach unless named by IP, CIDR
 * or --add-host.
 *
 * Shape: a run has a handful of rules, a connection is checked once;
 * everything is linear and allocation-free after parsing.
 */
#pragma once

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum egress_rule_kind {
        RULE_NAME,              /* exact host name */
        RULE_SUFFIX,            /* "*.example.com": names below example.com */
        RULE_ANY,               /* "*": any name or public address */
        RULE_ADDR,              /* an IP or a CIDR */
        _RULE_KIND_MAX,
        _RULE_KIND_INVALID = -EINVAL,
};

/* An address, IPv4 kept as such (family AF_INET, 4 bytes) so prefixes
 * compare in the family the user wrote. */
struct egress_addr {
        int family;             /* AF_INET or AF_INET6 */
        uint8_t bytes[16];
};

struct egress_port_range {
        uint16_t lo, hi;
};

struct egress_rule {
        enum egress_rule_kind kind;
        char *text;             /* as written, for the log ("*.pypi.org:443") */
        char *name;             /* NAME, SUFFIX (without "*."): lower case */
        struct egress_addr addr;/* ADDR */
        unsigned prefix;        /* ADDR: prefix length (32/128 for one IP) */
        struct egress_port_range ports[2];
        size_t n_ports;
};

struct egress_host {
        char *name;             /* lower case */
        struct egress_addr addr;
};

struct egress_rules {
        struct egress_rule *allow, *deny;
        size_t n_allow, n_deny;
        struct egress_host *hosts;
        size_t n_hosts;
};

/* The result of a check: the rule that decided (NULL: none matched, or a
 * fail-closed class) and its text for the log. */
struct egress_verdict {
        bool allowed;
        const struct egress_rule *rule;
        const char *reason;     /* static text: "allow rule", "no rule", ... */
};

/* Check one rule item as written, for the profile layer: NULL if it
 * parses, else what was expected. deny: PORT defaults to any. */
const char *egress_rule_check(const char *text);
/* The same for an --add-host item. */
const char *egress_host_check(const char *text);

/* Parse every item into *ret (zeroed first). On failure *ret_bad points
 * at the item that failed. 0 or -EINVAL. Free with egress_rules_done(). */
int egress_rules_parse(char *const *allow, char *const *deny, char *const *hosts,
                       struct egress_rules *ret, const char **ret_bad);
void egress_rules_done(struct egress_rules *r);

/* Parse an IP literal (no brackets) into *ret; IPv4-mapped IPv6 becomes
 * IPv4. 0 or -EINVAL. */
int egress_addr_parse(const char *s, struct egress_addr *ret);
/* From a sockaddr_in/in6 (mapped addresses become IPv4); port too if
 * ret_port is not NULL. 0 or -EAFNOSUPPORT. */
int egress_addr_from_sockaddr(const void *sa, struct egress_addr *ret, uint16_t *ret_port);
/* Text of a, into buf (at least INET6_ADDRSTRLEN). Returns buf. */
const char *egress_addr_text(const struct egress_addr *a, char *buf, size_t len);
bool egress_addr_equal(const struct egress_addr *a, const struct egress_addr *b);

/* Whether name is a host name hutch accepts (letters, digits, '-',
 * '_', dots; labels 1..63, at most 253; case-insensitive). */
bool egress_name_valid(const char *name);

/* The fail-closed class a belongs to ("loopback", "link-local",
 * "private", "unique-local", "unspecified", "multicast", "reserved"),
 * or NULL for a public address. The host's own addresses are the
 * caller's to add (egress_addr_is_own()). */
const char *egress_addr_class(const struct egress_addr *a);

/* Decide a connection: deny rules first, then allow rules. name may be
 * NULL (only address rules and "*" apply); addr may be NULL (only name
 * rules apply). Matching only: whether the address may be dialled is
 * egress_may_dial()'s question. */
struct egress_verdict egress_rules_decide(const struct egress_rules *r, const char *name,
                                          const struct egress_addr *addr, uint16_t port);

/* Whether the DNS stub may answer name: the allow name rule (of any
 * port) that matches it, unless a deny rule for every port does; else
 * NULL. */
const struct egress_rule *egress_rules_name_allowed(const struct egress_rules *r, const char *name);

/* The --add-host address of name, or NULL. */
const struct egress_addr *egress_rules_host(const struct egress_rules *r, const char *name);

/* Whether a resolved address may be dialled: a public address always;
 * an address of a fail-closed class, or one of own[] (the host's own),
 * only when named explicitly, i.e. it came from --add-host
 * (from_add_host), or an allow IP/CIDR rule at least as narrow as its
 * class covers it. A wildcard never opens one. NULL if it may, else the
 * class that forbids it ("deny rule" when a deny IP/CIDR rule covers
 * it: a name allowed by name may still resolve to a denied address). */
const char *egress_may_dial(const struct egress_rules *r, const struct egress_addr *a, uint16_t port,
                            bool from_add_host, const struct egress_addr *own, size_t n_own);

/* The ports the sandbox must listen on to capture every connection an
 * allow rule could let through: sorted, unique, into *ret (malloc'd).
 * Returns the count, or -E2BIG when the rules open more than max ports
 * ("*" or wide ranges: the capture listens per port). */
int egress_rules_ports(const struct egress_rules *r, size_t max, uint16_t **ret);
