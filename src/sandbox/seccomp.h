/* seccomp.h - the job's syscall policy: settings in, libseccomp filter out.
 *
 * A policy is a list of syscall names and @groups (groups are defined
 * once, in $HUTCH_DATADIR/seccomp.ini) plus a few switches. In deny-list
 * mode (the default profile) the listed calls are denied and the rest is
 * allowed; in allow-list mode (the strict profile) only the listed calls
 * are allowed. Either way the filter also carries the rules that cannot
 * be written as names (src/sandbox/seccomp-rules.c argues each one):
 *   - clone/unshare with any CLONE_NEW* flag are denied, clone3 answers
 *     ENOSYS (it cannot be argument-filtered; libc falls back to clone),
 *     unless allow_namespaces;
 *   - ioctl TIOCSTI and TIOCLINUX (low 32 bits of the request) are denied;
 *   - personality() other than the default persona or the query is denied;
 *   - syscalls newer than this libseccomp can name answer ENOSYS;
 *   - every syscall of a foreign architecture (i386 int 0x80, x32 on
 *     x86_64) takes the deny action.
 *
 * A built policy is two libseccomp filters, loaded together: one decides
 * by syscall name (deny-list or allow-list), the other holds only the
 * argument rules above and allows everything else. The kernel applies
 * the most restrictive answer of all loaded filters, so the argument
 * rules hold in both modes; splitting them out is what lets us say "allow
 * ioctl except TIOCSTI" under an allow-list, which libseccomp cannot
 * express in a filter whose default action is the deny action.
 *
 * Where to call it (the contract with sandbox.c):
 *   1. In the supervisor, before cloning the sandbox: seccomp_policy_build().
 *      It reads seccomp.ini from the host filesystem (not reachable after
 *      pivot_root), needs no privileges, and its errors are user errors
 *      to report before anything is set up. The filter is plain heap
 *      memory; the forked job inherits it.
 *   2. In the job process, as the last step before execve(): after the
 *      mounts, after dropping capabilities, after PR_SET_NO_NEW_PRIVS
 *      (libseccomp also sets it), after stdio and fd cleanup:
 *      seccomp_policy_load(). Nothing but write/exit (the setup-error
 *      report over the sync pipe) and execve may follow, since the policy
 *      is in force from then on. No fd or file needs to be open.
 */
#pragma once

#include <stdbool.h>

#include "lib/util.h"

struct seccomp_settings {
        char *name;             /* policy name for the report ("default", "strict", a profile) */
        char *default_action;   /* for denied calls: "errno" (EPERM), "kill" (SIGSYS, whole
                                 * process) or "log" (allowed and logged: enforces nothing) */
        char **deny;            /* syscall names and @groups, NULL-terminated (may be NULL) */
        char **allow;           /* same */
        bool allow_list_mode;   /* false: deny `deny` minus `allow`, allow the rest;
                                 * true:  allow `allow` minus `deny`, deny the rest */
        bool allow_ptrace;      /* permit @ptrace (debuggers, strace) despite the lists */
        bool allow_io_uring;    /* permit @io_uring despite the lists */
        bool allow_namespaces;  /* permit @namespaces, clone3 and CLONE_NEW* (nested sandboxes) */
};

/* What the run's enforcement report says about seccomp. */
struct seccomp_report {
        char policy[64];        /* settings->name, truncated */
        const char *action;     /* "errno", "kill" or "log" (static string) */
        const char *mode;       /* "deny-list" or "allow-list" (static string) */
        const char *arch;       /* native architecture, e.g. "x86_64" (static string) */
        unsigned syscalls;      /* syscalls denied (deny-list) or allowed (allow-list) by name */
        unsigned rules;         /* libseccomp rules in both filters, argument rules included */
        bool cached;            /* the filter came from the cache (verified), not a compile */
};

/* Fill s with the default profile's policy: deny-list mode, action
 * "errno", deny = { "@hutch-deny" }. Any previous contents are ignored
 * (not freed). Always returns 0; allocation failure exits (xmalloc). */
int seccomp_settings_default(struct seccomp_settings *s);

/* Fill s with the strict profile's policy: allow-list mode, action
 * "errno", allow = { "@hutch-strict" }, deny = { "@hutch-deny" } (so strict
 * never allows what the default denies). Returns 0. */
int seccomp_settings_strict(struct seccomp_settings *s);

/* Free what s owns and zero it. NULL-tolerant for every field. */
void seccomp_settings_done(struct seccomp_settings *s);

/* A built policy (two filters); opaque. */
struct seccomp_policy;

/* Build the policy s describes for the native architecture.
 *
 * Groups come from $HUTCH_DATADIR/seccomp.ini when that variable is set and
 * non-empty, else from the compiled-in HUTCH_DATADIR. On success returns 0,
 * stores a new policy in *ret (free with seccomp_policy_free()) and, when
 * ret_report is not NULL, fills it. On failure returns -errno, leaves
 * *ret and *ret_report alone and, when ret_error is not NULL, stores a
 * malloc'ed message for the user (never NULL on failure), e.g.
 *   -EINVAL  seccomp: unknown syscall or group "@nope"
 *   -EINVAL  seccomp: unknown action "deny" (use errno, kill or log)
 *   -EINVAL  seccomp: /usr/share/hutch/seccomp.ini:12: group names start with @
 *   -ENOENT  seccomp: /usr/share/hutch/seccomp.ini: No such file or directory
 * Needs no privileges and does not touch the calling process's filters.
 * Costs about a millisecond (measured numbers in the unit test's output). */
int seccomp_policy_build(const struct seccomp_settings *s, struct seccomp_policy **ret,
                         struct seccomp_report *ret_report, char **ret_error);

/* Install the policy on the calling thread (see "Where to call it"
 * above). Sets PR_SET_NO_NEW_PRIVS if it is not set yet. Returns 0 or
 * -errno (-EINVAL for NULL). The policy is not consumed; on failure part
 * of it may be in force (the argument filter is loaded first), so the
 * caller must not exec the job. */
int seccomp_policy_load(const struct seccomp_policy *p);

/* The policy as a self-contained blob of classic BPF (both filters), so
 * the sandbox can install it with two seccomp(2) calls and no libseccomp
 * work on its critical path. *ret is malloc'd. 0 or -errno. */
int seccomp_policy_export(const struct seccomp_policy *p, void **ret, size_t *ret_len);

/* seccomp_policy_build() + seccomp_policy_export(), remembered in
 * cache_dir (created 0700; NULL: no cache). The key covers everything
 * that decides the filter: the settings, the groups file (path, inode,
 * size, mtime), the libseccomp version, the architecture and hutch's
 * version, so a changed input is never served a stale filter. Building
 * costs about a millisecond of libseccomp work per run; a cache hit is one
 * small file read. A cache that cannot be read or written is ignored. */
int seccomp_policy_compile(const struct seccomp_settings *s, const char *cache_dir,
                           void **ret_blob, size_t *ret_len, struct seccomp_report *ret_report,
                           char **ret_error);

/* Install a blob from seccomp_policy_export() in the calling thread.
 * no_new_privs must already be set (caps_drop_all() does). Like
 * seccomp_policy_load(): the last step before execve. 0 or -errno
 * (-EINVAL for a malformed blob). */
int seccomp_blob_load(const void *blob, size_t len);

/* The job's filters: the blob's, with the id shim for uid/gid (below)
 * run at the head of its argument filter, so that the job pays for
 * attaching two programs, not three. Otherwise as seccomp_blob_load(). */
int seccomp_job_load(const void *blob, size_t len, uint32_t uid, uint32_t gid);

/* The cache entry seccomp_policy_compile() uses for s in cache_dir, as
 * a new string; NULL when s cannot be cached (or cache_dir is NULL).
 * For gc (which keeps the entries current profiles use) and for a run
 * whose cached filter the kernel refused (which removes it, so the next
 * run compiles it afresh). */
char *seccomp_cache_path(const struct seccomp_settings *s, const char *cache_dir);

/* CRC-64/XZ of a followed by b: the check a cache entry carries. */
uint64_t seccomp_cache_crc64(const void *a, size_t a_len, const void *b, size_t b_len);

/* The id shim: a small extra filter that answers set*id and chown calls
 * naming an id other than uid/gid (or -1) with EPERM, as a process
 * without privileges sees on a host, instead of the EINVAL a user
 * namespace with one mapped id gives. See seccomp-idshim.c for why it is safe.
 * _build writes the program to insns (at most max instructions); with
 * chain, what it allows goes on to the instruction after its last, for a
 * program placed in front of another (seccomp_job_load()). _load
 * installs it alone on the calling thread (no_new_privs must be set),
 * for the unit tests. 0 or -errno. */
#define ID_SHIM_MAX_INSNS 128
struct sock_filter;
int seccomp_id_shim_build(uint32_t uid, uint32_t gid, bool chain, struct sock_filter *insns, size_t max,
                          size_t *ret_n);
int seccomp_id_shim_load(uint32_t uid, uint32_t gid);

/* Free a policy; NULL-tolerant; returns NULL. */
struct seccomp_policy *seccomp_policy_free(struct seccomp_policy *p);
static inline void seccomp_policy_freep(struct seccomp_policy **p) { seccomp_policy_free(*p); }
#define _cleanup_seccomp_policy_ _cleanup_(seccomp_policy_freep)

/* Write both filters as libseccomp pseudo-code to fd, for `hutch profile
 * show --seccomp` and for reviewing the policy. Returns 0 or -errno. */
int seccomp_policy_dump(const struct seccomp_policy *p, int fd);

/* Check every group in the groups file: each member resolves (or is an
 * other-architecture or `?` name), each @reference exists, no cycles, and
 * each group has a description. Returns the number of groups, or -errno
 * with *ret_error as for seccomp_policy_build(). For tests and `hutch doctor`. */
int seccomp_groups_check(char **ret_error);

/* The landlock tier's socket families (seccomp-sockets.c argues them):
 * a small extra filter on socket(2) by family and type, loaded after the
 * policy. _build writes it to insns (at most max); _load installs it on
 * the calling thread (no_new_privs must be set). 0 or -errno. */
enum seccomp_sockets {
        SECCOMP_SOCKETS_NONE,           /* no socket(2) at all, an AF_UNIX stream or seqpacket socketpair(2) only (network none) */
        SECCOMP_SOCKETS_TCP,            /* AF_INET/AF_INET6 SOCK_STREAM (network allow) */
        SECCOMP_SOCKETS_ALL_INET,       /* any AF_INET/AF_INET6, AF_NETLINK (network host) */
        _SECCOMP_SOCKETS_MAX,
        _SECCOMP_SOCKETS_INVALID = -EINVAL,
};
#define SECCOMP_SOCKETS_MAX_INSNS 64
int seccomp_sockets_build(enum seccomp_sockets mode, struct sock_filter *insns, size_t max, size_t *ret_n);
/* Load the filter on the calling thread (no_new_privs must be set). For
 * SECCOMP_SOCKETS_TCP its connect(2) goes to a user-notification
 * listener, returned in *ret_listener (close-on-exec; the caller hands
 * it to the job's init, connect-notify.h); otherwise *ret_listener (may
 * be NULL) is -1. 0 or -errno. */
int seccomp_sockets_load(enum seccomp_sockets mode, int *ret_listener);
