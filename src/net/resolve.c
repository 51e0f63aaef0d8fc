/* resolve.c - one captured connection decided on the host side (see
 * resolve.h).
 *
 * The order of the checks is the security argument:
 *  1. the job may name a host twice (the stub address it dialled, and
 *     the SNI/Host it sent): the two must agree, or a connection that
 *     DNS let through for an allowed name could carry another one;
 *  2. the rules judge the name (and, when the job dialled a real IP,
 *     that address); deny rules first;
 *  3. a name is resolved here, never taken from the job: a job that
 *     dialled 10.0.0.1 with "SNI: allowed.example" reaches
 *     allowed.example's own address, not 10.0.0.1 (domain fronting and
 *     /etc/hosts tricks end there);
 *  4. every address about to be dialled is checked against the
 *     fail-closed classes again, so an allowed name whose DNS answer is
 *     127.0.0.1 or 169.254.169.254 (rebinding) is refused.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/util.h"
#include "net/resolve.h"

int egress_resolve_system(const char *name, struct egress_addr *out, size_t max, void *userdata)
{
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        size_t n = 0;

        (void)userdata;
        int r = getaddrinfo(name, NULL, &hints, &res);
        if (r != 0)
                return r == EAI_NONAME || r == EAI_NODATA ? -ENOENT : r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
        for (struct addrinfo *ai = res; ai && n < max; ai = ai->ai_next) {
                struct egress_addr a;
                if (egress_addr_from_sockaddr(ai->ai_addr, &a, NULL) < 0)
                        continue;
                bool dup = false;
                for (size_t i = 0; i < n; i++)
                        dup = dup || egress_addr_equal(&out[i], &a);
                if (!dup)
                        out[n++] = a;
        }
        freeaddrinfo(res);
        return n ? (int)n : -ENOENT;
}

static void deny(struct egress_decision *d, const char *reason)
{
        d->allowed = false;
        d->reason = reason;
}

void egress_decide(const struct egress_rules *rules, const struct egress_request *req,
                   const struct egress_addr *own, size_t n_own, egress_resolver resolve, void *userdata,
                   struct egress_decision *d)
{
        const struct peek_result *pk = req->peek;
        const char *peek_name = pk && pk->name[0] ? pk->name : NULL;
        const char *name = NULL;
        const struct egress_addr *addr = NULL;

        memset(d, 0, sizeof(*d));
        d->port = req->dest_port;
        if (req->stub_unknown)
                { deny(d, "unknown stub address"); return; }
        if (req->via_proxy) {
                /* a client that chose the proxy names its target itself:
                 * a host name, judged by name rules, or an IP literal
                 * (curl http://10.0.0.5/ with the proxy variables set),
                 * judged by address rules as a direct connection to it is */
                if (!pk || (pk->kind != PEEK_CONNECT && pk->kind != PEEK_HTTP) || (!peek_name && !pk->has_addr))
                        { deny(d, "proxy request without a host name or address"); return; }
                if (pk->kind == PEEK_CONNECT)
                        d->port = pk->port;
                else
                        d->port = pk->port ? pk->port : 80;
                name = peek_name;
                if (!name)
                        addr = &pk->addr;
        } else {
                if (req->stub_name && peek_name && !streq(req->stub_name, peek_name))
                        { deny(d, pk->kind == PEEK_TLS ? "SNI mismatch" : "Host mismatch"); return; }
                name = req->stub_name ? req->stub_name : peek_name;
                /* the IP the job dialled is judged only when it is a real
                 * one, not one of the stub's stand-ins */
                if (!req->stub_name)
                        addr = &req->dest;
        }
        if (name)
                snprintf(d->name, sizeof(d->name), "%s", name);

        struct egress_verdict v = egress_rules_decide(rules, name, addr, d->port);
        d->rule = v.rule;
        if (!v.allowed)
                { deny(d, v.reason); return; }

        /* Allowed by an address rule (or "*" without a name): dial the
         * address the job dialled, after the recheck. */
        if (!name || (v.rule->kind == RULE_ADDR)) {
                const char *why = egress_may_dial(rules, addr, d->port, false, own, n_own);
                if (why) {
                        d->refused = *addr;
                        d->has_refused = true;
                        { deny(d, why); return; }
                }
                d->addrs[0] = *addr;
                d->n_addrs = 1;
                d->allowed = true;
                d->reason = v.reason;
                return;
        }

        /* Allowed by name: resolve it ourselves. */
        struct egress_addr found[EGRESS_MAX_ADDRS];
        const struct egress_addr *pinned = egress_rules_host(rules, name);
        int n;
        if (pinned) {
                found[0] = *pinned;
                n = 1;
        } else {
                n = resolve(name, found, EGRESS_MAX_ADDRS, userdata);
                if (n < 0)
                        { deny(d, n == -ENOENT ? "name does not resolve" : "name resolution failed"); return; }
        }
        const char *why = NULL;
        for (int i = 0; i < n; i++) {
                const char *w = egress_may_dial(rules, &found[i], d->port, pinned != NULL, own, n_own);
                if (w) {
                        if (!why) {
                                why = w;
                                d->refused = found[i];
                                d->has_refused = true;
                        }
                        continue;
                }
                d->addrs[d->n_addrs++] = found[i];
        }
        if (d->n_addrs == 0)
                { deny(d, why ? why : "name does not resolve"); return; }
        d->allowed = true;
        d->reason = v.reason;
}
