/* egress.h - the egress helper of a `network = allow` run: a process of
 * the supervisor's own (forked, never exec'd) that takes the capture
 * sockets the sandbox opened (netns.h), answers the job's DNS queries,
 * decides every TCP connection (resolve.h), relays the allowed ones to
 * what hutch itself resolved, and reports every decision back for the
 * run's record.
 *
 * Why a process and not the supervisor's loop: the relay's work (name
 * resolution, thousands of connections, a slow upstream) must never
 * delay the supervisor's deadline, and a bug in it must not take the
 * record down. It dies with the supervisor (PR_SET_PDEATHSIG), holds
 * no fd of the supervisor's but its own two, and reads nothing of the
 * job's before it is confined (confine.h: no capabilities,
 * no_new_privs, a seccomp allow-list).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/rules.h"

/* Decisions the helper keeps per run (max_records): that many let
 * through and that many refused; the rest are counted in a summary row. */
#define EGRESS_MAX_RECORDS 10000

struct egress_params {
        const struct egress_rules *rules;
        uint64_t max_connections;       /* open at once; 0: no limit */
        uint64_t max_bytes;             /* relayed both ways over the run; 0: no limit */
        uint64_t max_records;           /* decisions kept for the record, that many of the
                                         * connections let through and as many of the
                                         * rest (DNS, denied); the rest are counted */
        pid_t init_pid;                 /* the sandbox's init, for the job pid of each connection */
        bool job_only;                  /* refuse a connection no process of the sandbox holds
                                         * the other end of (the landlock tier's proxy, on the
                                         * host's loopback) */
        uid_t job_uid;                  /* the job's host ids, for the confinement (confine.h); */
        gid_t job_gid;                  /* (uid_t)-1: init's, as the namespace tier has them */
};

struct egress {
        pid_t pid;
        int ctl_fd;                     /* our end of the report socket */
        char *buf;                      /* the report read so far, not yet parsed */
        size_t len, cap;
        bool eof;                       /* the report socket hit its end or an error */
};

/* Fork the helper. capture_sock is the socket the sandbox sends its
 * capture fds on (the helper takes it over; the caller closes its
 * copy). 0 or -errno. */
int egress_start(const struct egress_params *p, int capture_sock, struct egress *ret);

/* After the sandbox is gone: tell the helper to close every connection,
 * read its decisions not yet taken by egress_report_read() (a JSON array of connection objects, see
 * hutch-run(1)) into *ret, and reap it; waits at most timeout_ms, then
 * kills it. 0 or -errno (then *ret holds what arrived, maybe []). */
int egress_finish(struct egress *e, uint64_t timeout_ms, json_t **ret);

/* While the run goes on (a live sandbox): the fd to poll for the
 * decisions the helper reports as they are made, or -1 (no helper, or
 * its socket ended). */
int egress_report_fd(const struct egress *e);

/* Read, without blocking, at most max bytes of the report and append
 * the decisions complete in it to arr, in the order they came (the
 * order of their ends); the rest waits for the next call or
 * egress_finish(). The number appended, or -errno. */
int egress_report_read(struct egress *e, size_t max, json_t *arr);

/* Kill and reap the helper without its report (setup failed). */
void egress_abort(struct egress *e);
