/* rules.c - egress rules: parsing HOST[:PORT] and NAME=IP items, the
 * matcher, and the fail-closed address classes (see rules.h).
 *
 * Why the classes are what they are: a job that may reach "any public
 * host" must still not reach what sits next to the machine it runs on:
 * the cloud metadata service (169.254.169.254, fd00:ec2::254), the
 * host's own services on loopback, the LAN (RFC 1918, ULA, CGNAT), or
 * anything that is not a unicast public address. Those are refused at
 * dial time, after hutch resolved the name itself, so a DNS answer that
 * points an allowed name at 10.0.0.1 (rebinding) opens nothing. Only an
 * address the user named (IP, a CIDR inside the class, --add-host)
 * opens one; "*" and "*.suffix" never do.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "lib/util.h"
#include "net/rules.h"

static const char rule_expect[] =
        "HOST[:PORT] with HOST a name, *.suffix, *, an IP, [IPv6] or a CIDR and PORT a number, "
        "a range N-M or *";
static const char host_expect[] = "NAME=IP with NAME a host name and IP an address";

/* ---- addresses -------------------------------------------------------- */

int egress_addr_parse(const char *s, struct egress_addr *ret)
{
        struct egress_addr a = { 0 };

        if (inet_pton(AF_INET, s, a.bytes) == 1) {
                a.family = AF_INET;
        } else if (inet_pton(AF_INET6, s, a.bytes) == 1) {
                static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
                a.family = AF_INET6;
                if (memcmp(a.bytes, mapped, 12) == 0) {
                        memmove(a.bytes, a.bytes + 12, 4);
                        memset(a.bytes + 4, 0, 12);
                        a.family = AF_INET;
                }
        } else
                return -EINVAL;
        *ret = a;
        return 0;
}

int egress_addr_from_sockaddr(const void *sa, struct egress_addr *ret, uint16_t *ret_port)
{
        const struct sockaddr *s = sa;
        char buf[INET6_ADDRSTRLEN];

        if (s->sa_family == AF_INET) {
                const struct sockaddr_in *in = sa;
                *ret = (struct egress_addr) { .family = AF_INET };
                memcpy(ret->bytes, &in->sin_addr, 4);
                if (ret_port)
                        *ret_port = ntohs(in->sin_port);
                return 0;
        }
        if (s->sa_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = sa;
                if (!inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf)) || egress_addr_parse(buf, ret) < 0)
                        return -EAFNOSUPPORT;
                if (ret_port)
                        *ret_port = ntohs(in6->sin6_port);
                return 0;
        }
        return -EAFNOSUPPORT;
}

const char *egress_addr_text(const struct egress_addr *a, char *buf, size_t len)
{
        if (!inet_ntop(a->family == AF_INET ? AF_INET : AF_INET6, a->bytes, buf, (socklen_t)len))
                snprintf(buf, len, "?");
        return buf;
}

bool egress_addr_equal(const struct egress_addr *a, const struct egress_addr *b)
{
        return a->family == b->family && memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

static unsigned addr_bits(const struct egress_addr *a)
{
        return a->family == AF_INET ? 32 : 128;
}

/* Whether a lies in net/prefix (same family). */
static bool in_prefix(const struct egress_addr *a, const struct egress_addr *net, unsigned prefix)
{
        if (a->family != net->family)
                return false;
        unsigned full = prefix / 8, rest = prefix % 8;
        if (memcmp(a->bytes, net->bytes, full) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t)(0xff << (8 - rest));
        return (a->bytes[full] & mask) == (net->bytes[full] & mask);
}

struct addr_class {
        const char *net;
        unsigned prefix;
        const char *name;
};

/* Not unicast-public, or next to the host: refused unless named. Each
 * line says why it is here. */
static const struct addr_class classes[] = {
        { "0.0.0.0", 8, "unspecified" },        /* "this network": reaches the host itself */
        { "127.0.0.0", 8, "loopback" },         /* the host's own services */
        { "10.0.0.0", 8, "private" },           /* RFC 1918: the LAN */
        { "172.16.0.0", 12, "private" },
        { "192.168.0.0", 16, "private" },
        { "100.64.0.0", 10, "private" },        /* RFC 6598 shared space: carrier and cloud internals */
        { "169.254.0.0", 16, "link-local" },    /* 169.254.169.254 is the cloud metadata service */
        { "192.0.0.0", 24, "reserved" },        /* IETF protocol assignments (some clouds' metadata) */
        { "198.18.0.0", 15, "reserved" },       /* benchmarking; hutch's own stub DNS addresses */
        { "224.0.0.0", 4, "multicast" },
        { "240.0.0.0", 4, "reserved" },         /* incl. 255.255.255.255 broadcast */
        { "::", 128, "unspecified" },
        { "::1", 128, "loopback" },
        { "::", 96, "reserved" },               /* IPv4-compatible (deprecated) */
        { "100::", 64, "reserved" },            /* discard prefix */
        { "fe80::", 10, "link-local" },
        { "fec0::", 10, "private" },            /* site-local (deprecated, still routed on some LANs) */
        { "fc00::", 7, "unique-local" },        /* fd00:ec2::254 is a metadata address */
        { "ff00::", 8, "multicast" },
};

/* NAT64 and 6to4 carry an IPv4 address inside: judge that one. */
static bool embedded_v4(const struct egress_addr *a, struct egress_addr *ret)
{
        static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
        if (a->family != AF_INET6)
                return false;
        *ret = (struct egress_addr) { .family = AF_INET };
        if (memcmp(a->bytes, nat64, 12) == 0) {
                memcpy(ret->bytes, a->bytes + 12, 4);
                return true;
        }
        if (a->bytes[0] == 0x20 && a->bytes[1] == 0x02) {
                memcpy(ret->bytes, a->bytes + 2, 4);
                return true;
        }
        return false;
}

static const struct addr_class *class_of(const struct egress_addr *a)
{
        for (size_t i = 0; i < ELEMENTSOF(classes); i++) {
                struct egress_addr net;
                if (egress_addr_parse(classes[i].net, &net) < 0)
                        continue;
                /* "::" parses as IPv6; keep families apart */
                if (in_prefix(a, &net, classes[i].prefix))
                        return &classes[i];
        }
        struct egress_addr v4;
        if (embedded_v4(a, &v4))
                return class_of(&v4);
        return NULL;
}

const char *egress_addr_class(const struct egress_addr *a)
{
        const struct addr_class *c = class_of(a);
        return c ? c->name : NULL;
}

/* ---- names ------------------------------------------------------------ */

bool egress_name_valid(const char *name)
{
        size_t n = strlen(name), label = 0;

        if (n == 0 || n > 253 || name[0] == '.' || name[n - 1] == '.')
                return false;
        for (const char *p = name; *p; p++) {
                if (*p == '.') {
                        if (label == 0 || p[-1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
                        return false;
                if (label == 0 && *p == '-')
                        return false;
                if (++label > 63)
                        return false;
        }
        return name[n - 1] != '-';
}

static char *lower_dup(const char *s, size_t n)
{
        char *d = xmalloc(n + 1);
        for (size_t i = 0; i < n; i++)
                d[i] = (char)tolower((unsigned char)s[i]);
        d[n] = '\0';
        return d;
}

/* ---- parsing ---------------------------------------------------------- */

static int parse_port_num(const char *s, size_t n, uint16_t *ret)
{
        unsigned v = 0;
        if (n == 0 || n > 5)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char)s[i]))
                        return -EINVAL;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        if (v == 0 || v > 65535)
                return -EINVAL;
        *ret = (uint16_t)v;
        return 0;
}

static int parse_ports(const char *s, struct egress_rule *rule)
{
        const char *dash = strchr(s, '-');
        struct egress_port_range pr;

        if (streq(s, "*")) {
                rule->ports[0] = (struct egress_port_range) { 1, 65535 };
                rule->n_ports = 1;
                return 0;
        }
        if (dash) {
                if (parse_port_num(s, (size_t)(dash - s), &pr.lo) < 0 ||
                    parse_port_num(dash + 1, strlen(dash + 1), &pr.hi) < 0 || pr.hi < pr.lo)
                        return -EINVAL;
        } else {
                if (parse_port_num(s, strlen(s), &pr.lo) < 0)
                        return -EINVAL;
                pr.hi = pr.lo;
        }
        rule->ports[0] = pr;
        rule->n_ports = 1;
        return 0;
}

static int parse_host(const char *h, struct egress_rule *rule)
{
        const char *slash = strchr(h, '/');

        if (slash) {
                _cleanup_free_ char *ip = strndup(h, (size_t)(slash - h));
                char *end = NULL;
                if (!ip || egress_addr_parse(ip, &rule->addr) < 0 || !isdigit((unsigned char)slash[1]))
                        return -EINVAL;
                errno = 0;
                unsigned long p = strtoul(slash + 1, &end, 10);
                if (errno || *end || p > addr_bits(&rule->addr))
                        return -EINVAL;
                /* a v4-mapped CIDR was written for v6: keep the v4 part */
                if (strchr(ip, ':') && rule->addr.family == AF_INET) {
                        if (p < 96)
                                return -EINVAL;
                        p -= 96;
                }
                rule->prefix = (unsigned)p;
                /* host bits are dropped: 10.1.2.3/8 is 10.0.0.0/8 */
                for (unsigned b = rule->prefix; b < addr_bits(&rule->addr); b++)
                        rule->addr.bytes[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
                rule->kind = RULE_ADDR;
                return 0;
        }
        if (egress_addr_parse(h, &rule->addr) == 0) {
                rule->kind = RULE_ADDR;
                rule->prefix = addr_bits(&rule->addr);
                return 0;
        }
        if (streq(h, "*")) {
                rule->kind = RULE_ANY;
                return 0;
        }
        if (startswith(h, "*.")) {
                if (!egress_name_valid(h + 2))
                        return -EINVAL;
                rule->kind = RULE_SUFFIX;
                rule->name = lower_dup(h + 2, strlen(h + 2));
                return 0;
        }
        if (!egress_name_valid(h))
                return -EINVAL;
        rule->kind = RULE_NAME;
        rule->name = lower_dup(h, strlen(h));
        return 0;
}

static void rule_done(struct egress_rule *rule)
{
        free(rule->text);
        free(rule->name);
}

static int parse_rule(const char *text, bool deny, struct egress_rule *ret)
{
        struct egress_rule rule = { .text = xstrdup(text) };
        _cleanup_free_ char *host = NULL;
        const char *port = NULL;
        int r;

        if (text[0] == '[') {
                const char *close = strchr(text, ']');
                if (!close || (close[1] && close[1] != ':') || (close[1] == ':' && !close[2]))
                        goto bad;
                host = strndup(text + 1, (size_t)(close - text - 1));
                if (!host || !strchr(host, ':'))
                        goto bad;
                port = close[1] ? close + 2 : NULL;
        } else {
                const char *colon = strchr(text, ':');
                if (colon && !strchr(colon + 1, ':')) {
                        host = strndup(text, (size_t)(colon - text));
                        port = colon + 1;
                } else
                        host = xstrdup(text);   /* no port, or a bare IPv6 (CIDR) */
        }
        if (!host || !host[0] || parse_host(host, &rule) < 0)
                goto bad;
        if (port) {
                r = parse_ports(port, &rule);
                if (r < 0)
                        goto bad;
        } else if (deny) {
                /* denying a host means all of it */
                rule.ports[0] = (struct egress_port_range) { 1, 65535 };
                rule.n_ports = 1;
        } else {
                rule.ports[0] = (struct egress_port_range) { 443, 443 };
                rule.ports[1] = (struct egress_port_range) { 80, 80 };
                rule.n_ports = 2;
        }
        *ret = rule;
        return 0;
bad:
        rule_done(&rule);
        return -EINVAL;
}

static int parse_host_item(const char *text, struct egress_host *ret)
{
        const char *eq = strchr(text, '=');
        struct egress_addr a;

        if (!eq || eq == text)
                return -EINVAL;
        _cleanup_free_ char *name = strndup(text, (size_t)(eq - text));
        if (!name || !egress_name_valid(name) || egress_addr_parse(eq + 1, &a) < 0)
                return -EINVAL;
        ret->name = lower_dup(name, strlen(name));
        ret->addr = a;
        return 0;
}

const char *egress_rule_check(const char *text)
{
        struct egress_rule rule;
        if (parse_rule(text, false, &rule) < 0)
                return rule_expect;
        rule_done(&rule);
        return NULL;
}

const char *egress_host_check(const char *text)
{
        struct egress_host h;
        if (parse_host_item(text, &h) < 0)
                return host_expect;
        free(h.name);
        return NULL;
}

int egress_rules_parse(char *const *allow, char *const *deny, char *const *hosts,
                       struct egress_rules *ret, const char **ret_bad)
{
        struct egress_rules r = { 0 };

        for (char *const *p = allow; p && *p; p++) {
                r.allow = xrealloc(r.allow, (r.n_allow + 1) * sizeof(*r.allow));
                if (parse_rule(*p, false, &r.allow[r.n_allow]) < 0)
                        goto bad;
                r.n_allow++;
                continue;
bad:
                *ret_bad = *p;
                egress_rules_done(&r);
                return -EINVAL;
        }
        for (char *const *p = deny; p && *p; p++) {
                r.deny = xrealloc(r.deny, (r.n_deny + 1) * sizeof(*r.deny));
                if (parse_rule(*p, true, &r.deny[r.n_deny]) < 0) {
                        *ret_bad = *p;
                        egress_rules_done(&r);
                        return -EINVAL;
                }
                r.n_deny++;
        }
        for (char *const *p = hosts; p && *p; p++) {
                r.hosts = xrealloc(r.hosts, (r.n_hosts + 1) * sizeof(*r.hosts));
                if (parse_host_item(*p, &r.hosts[r.n_hosts]) < 0) {
                        *ret_bad = *p;
                        egress_rules_done(&r);
                        return -EINVAL;
                }
                r.n_hosts++;
        }
        *ret = r;
        return 0;
}

void egress_rules_done(struct egress_rules *r)
{
        for (size_t i = 0; i < r->n_allow; i++)
                rule_done(&r->allow[i]);
        for (size_t i = 0; i < r->n_deny; i++)
                rule_done(&r->deny[i]);
        for (size_t i = 0; i < r->n_hosts; i++)
                free(r->hosts[i].name);
        free(r->allow);
        free(r->deny);
        free(r->hosts);
        *r = (struct egress_rules) { 0 };
}

/* ---- matching --------------------------------------------------------- */

static bool port_matches(const struct egress_rule *rule, uint16_t port)
{
        for (size_t i = 0; i < rule->n_ports; i++)
                if (port >= rule->ports[i].lo && port <= rule->ports[i].hi)
                        return true;
        return false;
}

/* name is already lower case without a trailing dot */
static bool name_matches(const struct egress_rule *rule, const char *name)
{
        size_t n, s;

        switch (rule->kind) {
        case RULE_NAME:
                return strcasecmp(rule->name, name) == 0;
        case RULE_SUFFIX:
                n = strlen(name);
                s = strlen(rule->name);
                return n > s + 1 && name[n - s - 1] == '.' && strcasecmp(name + n - s, rule->name) == 0;
        case RULE_ANY:
                return true;
        default:
                return false;
        }
}

static bool addr_matches(const struct egress_rule *rule, const struct egress_addr *a)
{
        if (rule->kind == RULE_ANY)
                return true;
        return rule->kind == RULE_ADDR && in_prefix(a, &rule->addr, rule->prefix);
}

static bool rule_matches(const struct egress_rule *rule, const char *name, const struct egress_addr *a,
                         uint16_t port)
{
        if (!port_matches(rule, port))
                return false;
        return (name && name_matches(rule, name)) || (a && addr_matches(rule, a));
}

struct egress_verdict egress_rules_decide(const struct egress_rules *r, const char *name,
                                          const struct egress_addr *addr, uint16_t port)
{
        for (size_t i = 0; i < r->n_deny; i++)
                if (rule_matches(&r->deny[i], name, addr, port))
                        return (struct egress_verdict) { false, &r->deny[i], "deny rule" };
        for (size_t i = 0; i < r->n_allow; i++)
                if (rule_matches(&r->allow[i], name, addr, port))
                        return (struct egress_verdict) { true, &r->allow[i], "allow rule" };
        return (struct egress_verdict) { false, NULL, "no rule" };
}

const struct egress_rule *egress_rules_name_allowed(const struct egress_rules *r, const char *name)
{
        for (size_t i = 0; i < r->n_deny; i++)
                if (r->deny[i].kind != RULE_ADDR && name_matches(&r->deny[i], name) &&
                    r->deny[i].ports[0].lo == 1 && r->deny[i].ports[0].hi == 65535)
                        return NULL;
        for (size_t i = 0; i < r->n_allow; i++)
                if (r->allow[i].kind != RULE_ADDR && name_matches(&r->allow[i], name))
                        return &r->allow[i];
        return NULL;
}

const struct egress_addr *egress_rules_host(const struct egress_rules *r, const char *name)
{
        for (size_t i = 0; i < r->n_hosts; i++)
                if (strcasecmp(r->hosts[i].name, name) == 0)
                        return &r->hosts[i].addr;
        return NULL;
}

const char *egress_may_dial(const struct egress_rules *r, const struct egress_addr *a, uint16_t port,
                            bool from_add_host, const struct egress_addr *own, size_t n_own)
{
        for (size_t i = 0; i < r->n_deny; i++)
                if (r->deny[i].kind == RULE_ADDR && port_matches(&r->deny[i], port) &&
                    in_prefix(a, &r->deny[i].addr, r->deny[i].prefix))
                        return "deny rule";
        if (from_add_host)
                return NULL;

        const struct addr_class *c = class_of(a);
        bool is_own = false;
        for (size_t i = 0; i < n_own; i++)
                if (egress_addr_equal(a, &own[i]))
                        is_own = true;
        if (!c && !is_own)
                return NULL;
        /* Named explicitly: an IP or CIDR allow rule inside the class
         * (10.1.0.0/16 opens 10.1.2.3; 0.0.0.0/0 opens nothing), and for
         * the host's own addresses the very address. */
        unsigned need = is_own ? addr_bits(a) : c->prefix;
        for (size_t i = 0; i < r->n_allow; i++) {
                const struct egress_rule *rule = &r->allow[i];
                if (rule->kind == RULE_ADDR && rule->prefix >= need && port_matches(rule, port) &&
                    in_prefix(a, &rule->addr, rule->prefix))
                        return NULL;
        }
        return is_own ? "host address" : c->name;
}

static int cmp_u16(const void *a, const void *b)
{
        return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

int egress_rules_ports(const struct egress_rules *r, size_t max, uint16_t **ret)
{
        uint16_t *ports = NULL;
        size_t n = 0;

        for (size_t i = 0; i < r->n_allow; i++)
                for (size_t j = 0; j < r->allow[i].n_ports; j++) {
                        const struct egress_port_range *pr = &r->allow[i].ports[j];
                        if ((size_t)(pr->hi - pr->lo) + 1 > max) {
                                free(ports);
                                return -E2BIG;
                        }
                        for (unsigned p = pr->lo; p <= pr->hi; p++) {
                                ports = xrealloc(ports, (n + 1) * sizeof(*ports));
                                ports[n++] = (uint16_t)p;
                        }
                }
        if (n)
                qsort(ports, n, sizeof(*ports), cmp_u16);
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
                if (u == 0 || ports[u - 1] != ports[i])
                        ports[u++] = ports[i];
        if (u > max) {
                free(ports);
                return -E2BIG;
        }
        *ret = ports;
        return (int)u;
}
