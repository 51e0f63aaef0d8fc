/* landlock.h - the rules of the landlock isolation tier (DESIGN §10).
 *
 * On hosts that refuse user namespaces the job runs with no namespace
 * at all; what holds it to the run's files, ports and peers is a
 * Landlock domain, built here from the run's settings:
 *
 *   read + execute   the profile's system dirs (the namespace tier's
 *                    read-only binds) and --ro paths, minus the masked
 *                    paths (expanded: Landlock can only allow, so a dir
 *                    holding a masked path is granted child by child);
 *                    /proc read-only; a few harmless devices
 *   everything       the run's own scratch (its workspace copy, TMPDIR,
 *                    HOME) and --rw paths
 *   TCP              bind and connect denied (network none, and network
 *                    allow, where the job's init connects the proxy for
 *                    it: connect-notify.h), or not restricted (host) -
 *                    ABI 4
 *   scopes           abstract unix sockets and signals limited to the
 *                    job's own domain - ABI 6
 *
 * The kernel's ABI decides which of these it can enforce; what it cannot
 * is listed in words in the plan (landlock_plan.missing), never dropped
 * silently. The plan is built in the supervisor's child before anything
 * of the job exists (it opens nothing but directory listings) and
 * applied in the job process, after no_new_privs, before seccomp.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The newest ABI whose rights this file knows (Linux 6.15: 7). A newer
 * kernel is used at this level: its extra rights are not handled. */
#define LANDLOCK_ABI_KNOWN 7

/* The Landlock ABI the running kernel offers: >= 1, or 0 when Landlock
 * is not built in or not enabled (the caller says so: the tier cannot
 * run), or -errno for anything else. */
int landlock_abi(void);

enum landlock_net {
        LANDLOCK_NET_NONE,      /* no TCP bind or connect */
        LANDLOCK_NET_PROXY,     /* connect to proxy_port only, on any address:
                                 * not used by the run for that reason (a port
                                 * rule is no address rule; connect-notify.c) */
        LANDLOCK_NET_HOST,      /* TCP not restricted */
        _LANDLOCK_NET_MAX,
        _LANDLOCK_NET_INVALID = -22,
};

/* What the run asks for. Paths are absolute; none is copied. */
struct landlock_request {
        char *const *read_dirs;         /* read + execute when they exist (system_dirs) */
        char *const *read_paths;        /* read + execute; must exist (--ro) */
        char *const *write_paths;       /* every right; must exist (scratch, --rw) */
        char *const *masks;             /* globs hidden inside the read dirs */
        enum landlock_net net;
        uint16_t proxy_port;            /* LANDLOCK_NET_PROXY only */
        bool tty;                       /* /dev/tty readable and writable */
};

struct landlock_rule {
        char *path;
        uint64_t access;                /* LANDLOCK_ACCESS_FS_* allowed beneath path */
};

struct landlock_plan {
        int abi;                        /* the ABI the plan was built for (<= KNOWN) */
        uint64_t fs_handled;            /* access rights the domain restricts */
        uint64_t net_handled;
        uint64_t scoped;
        struct landlock_rule *rules;
        size_t n_rules;
        uint16_t connect_port;          /* 0: none allowed */
        char **missing;                 /* what this ABI cannot hold, one sentence each */
};

/* The filesystem rights an ABI handles (all of them are restricted by
 * the plan), and the subset that applies to a file rather than a dir.
 * Pure. abi < 1 gives 0. */
uint64_t landlock_fs_rights(int abi);
uint64_t landlock_file_rights(int abi);

/* The sentences for what abi (and the requested network mode) cannot
 * restrict, appended to *v (a NULL-terminated list). Pure. */
char **landlock_missing(int abi, enum landlock_net net, char **v);

/* Build the plan for req at abi (clamped to LANDLOCK_ABI_KNOWN; must be
 * >= 1). Looks at the filesystem: read_dirs that do not exist are
 * skipped, read_paths and write_paths must exist (-ENOENT, with
 * *ret_path naming it), masked paths are expanded (symlinks among a
 * masked dir's children are not granted: their targets are reached
 * through their own rules or not at all). 0 or -errno; on failure *ret
 * is left alone. */
int landlock_plan_build(const struct landlock_request *req, int abi, struct landlock_plan *ret,
                        const char **ret_path);

/* Free what p owns and zero it. NULL-tolerant. */
void landlock_plan_done(struct landlock_plan *p);

/* Restrict the calling thread (and what it execs) to p. no_new_privs
 * must be set (caps.h). A rule whose path vanished since the build is
 * -ENOENT with *ret_path naming it. 0 or -errno; on failure nothing is
 * in force. */
int landlock_plan_apply(const struct landlock_plan *p, const char **ret_path);

/* Put the calling thread (and what it execs) in a Landlock domain of
 * its own that restricts nothing a job could otherwise do: what it
 * brings is the boundary. A process in a domain can ptrace no process
 * outside it or its nested domains, in any mode, so it cannot open the
 * /proc/PID/fd, mem, environ, cwd or root of one: a live sandbox's
 * execs, all one uid in one pid namespace, cannot reach each other's
 * stdio pipes that way. Moving or linking a file into another directory
 * stays allowed (from ABI 2; ABI 1 denies it, EXDEV, in any domain).
 * no_new_privs must be set. 0, -EOPNOTSUPP when the kernel has no
 * Landlock, or -errno. */
int landlock_own_domain(void);
