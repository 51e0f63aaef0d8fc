/* confine.c - the egress helper's confinement (see confine.h).
 *
 * Why: the egress helper is a fork of the supervisor that runs on the
 * host, as the user who ran hutch (root included), and parses bytes the
 * job chooses: DNS queries (dns.c), the first bytes of every connection
 * (peek.c), the sandbox's /proc files (owner.c). A memory bug in any of
 * them would otherwise hand the job everything the user may do on the
 * host. After egress_confine() the helper can do what relaying needs and
 * nothing else: no execve, no new files written, no ptrace, no signals
 * to others, no namespaces, mounts, keys, BPF or io_uring.
 *
 * Order (each step needs what the next one removes):
 *  1. drop the bounding set (needs CAP_SETPCAP, so only as root; an
 *     unprivileged helper has an empty permitted set and its bounding
 *     set gives nothing without execve, which the filter refuses) and
 *     clear the ambient set;
 *  2. as root, touch files as the sandbox's own host uid and gid
 *     (65534, as init's /proc status shows them), with no supplementary
 *     groups: the file-system ids, which every permission check on a
 *     file uses. A root helper without capabilities would otherwise
 *     still own root's files. The effective uid stays 0, without any
 *     capability in the host's namespace: the sandbox's user namespace
 *     was made by root, and its owner is what lets the helper read the
 *     sandbox's /proc/PID/fd links (owner.c), which the kernel shows to
 *     the same file-system uid only with that. setfsuid(), setuid() and
 *     kin are not on the allow-list, so the ids stay; the bounding set
 *     is empty and SECBIT_NOROOT locked, so no execve could give a
 *     capability back. Unprivileged, the helper has the sandbox's host
 *     uid already. Then every capability set is emptied. The
 *     parent-death signal, which a credential change clears, is armed
 *     again (and the change made the helper non-dumpable);
 *  3. no_new_privs: nothing it could exec would gain privileges (and
 *     unprivileged seccomp requires it);
 *  4. the allow-list.
 *
 * The allow-list, by what needs it (strace -f of tests/integration/
 * egress.bats, and glibc's resolver read for what the tests do not
 * reach, since they never resolve through the host's resolver):
 *  - the loop: poll, ppoll; the control socket and the report: read,
 *    write, shutdown;
 *  - connections: accept4, accept; socket for AF_INET and AF_INET6
 *    (the upstream dial, the resolver's queries) and AF_NETLINK with
 *    NETLINK_ROUTE only (getaddrinfo's AI_ADDRCONFIG asks the kernel
 *    for the host's addresses) - never AF_UNIX (no way to the host's
 *    D-Bus, X11 or container sockets; glibc's nscd probe just fails),
 *    AF_PACKET or anything else; connect, bind (netlink), getsockname,
 *    getpeername, getsockopt (SO_ERROR), setsockopt (SO_LINGER; the
 *    options that matter need capabilities it no longer has);
 *  - the stub DNS: recvmsg, sendmsg; the resolver: sendto, recvfrom,
 *    sendmmsg, recvmmsg, and ioctl with FIONREAD only (the size of a
 *    waiting answer; every other ioctl, TIOCSTI included, is refused);
 *  - the relay: pipe2, splice, fcntl (F_GETFL/F_SETFL for O_NONBLOCK,
 *    F_GETFD/F_SETFD, F_SETPIPE_SZ/F_GETPIPE_SZ only), close;
 *  - the owner lookup in /proc and the resolver's files (/etc/hosts,
 *    /etc/resolv.conf, nsswitch.conf, gai.conf): openat and open
 *    read-only (no O_WRONLY, O_RDWR, O_CREAT or O_TRUNC: the helper
 *    writes no file), fstat, newfstatat, statx, lseek, getdents64,
 *    readlink, readlinkat;
 *  - memory and the C library: brk, mmap and mprotect without
 *    PROT_EXEC (no new code: NSS modules glibc may dlopen are loaded
 *    by a lookup before the filter), munmap, mremap, madvise, futex,
 *    rt_sigprocmask, rt_sigreturn, restart_syscall, clock_gettime,
 *    clock_nanosleep, nanosleep, gettimeofday, getrandom, getpid,
 *    gettid, exit, exit_group; tgkill of its own process only (abort()
 *    raising SIGABRT).
 *
 * Everything else fails with EPERM, not a kill. The confinement is the
 * same either way - a refused call does nothing - but an unforeseen
 * call on a rare path (a newer glibc, an NSS module of a host's
 * nsswitch.conf) then fails like any error the helper already handles:
 * one lookup or one connection fails and is recorded, where a kill
 * would lose every decision of the run and cut the job's network
 * mid-run. A hostile job gains nothing from the difference: it can make
 * no call the list does not allow, however often it tries. Calls under
 * another architecture's convention (i386 int 0x80, x32) kill the
 * helper: nothing in it makes them, and libseccomp sends them to the
 * bad-arch action, the filter naming the native architecture only.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <linux/securebits.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/util.h"
#include "net/confine.h"

/* Allowed whatever their arguments. */
static const char *const plain[] = {
        "poll", "ppoll", "read", "readv", "write", "writev", "shutdown", "close",
        "accept4", "accept", "connect", "bind", "getsockname", "getpeername",
        "getsockopt", "setsockopt", "recvmsg", "sendmsg", "sendto", "recvfrom",
        "sendmmsg", "recvmmsg", "pipe2", "splice",
        "fstat", "newfstatat", "statx", "lseek", "getdents64", "readlink", "readlinkat",
        "brk", "munmap", "mremap", "madvise", "futex", "rt_sigprocmask", "rt_sigreturn",
        "restart_syscall", "clock_gettime", "clock_nanosleep", "nanosleep", "gettimeofday",
        "getrandom", "getpid", "gettid", "exit", "exit_group",
};

/* Allowed only with the arguments egress_confine_filter() gives. */
static const char *const with_args[] = {
        "socket", "fcntl", "ioctl", "openat", "open", "mmap", "mprotect", "tgkill",
};

static const char *const *all_names(void)
{
        static const char *names[ELEMENTSOF(plain) + ELEMENTSOF(with_args) + 1];
        if (!names[0]) {
                size_t n = 0;
                for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                        names[n++] = plain[i];
                for (size_t i = 0; i < ELEMENTSOF(with_args); i++)
                        names[n++] = with_args[i];
                names[n] = NULL;
        }
        return names;
}

const char *const *egress_confine_allowed(void)
{
        return all_names();
}

bool egress_confine_allows(const char *name)
{
        for (const char *const *n = all_names(); *n; n++)
                if (streq(*n, name))
                        return true;
        return false;
}

static int allow(scmp_filter_ctx ctx, const char *name, unsigned n_args, const struct scmp_arg_cmp *args)
{
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
                return 0;       /* not a syscall on this architecture (open on arm64) */
        return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n_args, args);
}

#define ALLOW(ctx, name, ...)                                                                 \
        allow(ctx, name, ELEMENTSOF(((struct scmp_arg_cmp[]) { __VA_ARGS__ })),              \
              (struct scmp_arg_cmp[]) { __VA_ARGS__ })

static int add_rules(scmp_filter_ctx ctx)
{
        /* a file opened for writing, created or truncated: refused */
        const scmp_datum_t no_write = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC;
        static const int fcntl_cmds[] = { F_GETFL, F_SETFL, F_GETFD, F_SETFD, F_SETPIPE_SZ, F_GETPIPE_SZ };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if ((r = allow(ctx, plain[i], 0, NULL)) < 0)
                        return r;
        if ((r = ALLOW(ctx, "socket", SCMP_A0(SCMP_CMP_EQ, AF_INET))) < 0 ||
            (r = ALLOW(ctx, "socket", SCMP_A0(SCMP_CMP_EQ, AF_INET6))) < 0 ||
            (r = ALLOW(ctx, "socket", SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_EQ, NETLINK_ROUTE))) < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(fcntl_cmds); i++)
                if ((r = ALLOW(ctx, "fcntl", SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)fcntl_cmds[i]))) < 0)
                        return r;
        if ((r = ALLOW(ctx, "ioctl", SCMP_A1(SCMP_CMP_EQ, FIONREAD))) < 0)
                return r;
        if ((r = ALLOW(ctx, "openat", SCMP_A2(SCMP_CMP_MASKED_EQ, no_write, 0))) < 0 ||
            (r = ALLOW(ctx, "open", SCMP_A1(SCMP_CMP_MASKED_EQ, no_write, 0))) < 0 ||
            (r = ALLOW(ctx, "mmap", SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0))) < 0 ||
            (r = ALLOW(ctx, "mprotect", SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0))) < 0 ||
            (r = ALLOW(ctx, "tgkill", SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()))) < 0)
                return r;
        return 0;
}

/* The host ids of the sandbox's processes, from init's status as the
 * host sees it ("Uid:\treal\teffective\t..."). */
static int sandbox_ids(pid_t init_pid, uid_t *ret_uid, gid_t *ret_gid)
{
        char path[64];
        _cleanup_free_ char *text = NULL;
        unsigned long u, g;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)init_pid);
        int r = read_file(path, &text, NULL);
        if (r < 0)
                return r;
        const char *us = strstr(text, "\nUid:"), *gs = strstr(text, "\nGid:");
        if (!us || !gs || sscanf(us + 5, "%lu", &u) != 1 || sscanf(gs + 5, "%lu", &g) != 1)
                return -EBADMSG;
        *ret_uid = (uid_t)u;
        *ret_gid = (gid_t)g;
        return 0;
}

/* Steps 1 and 2 of the header: no capability in any set, and as root
 * the sandbox's host uid. */
static int drop_privileges(pid_t init_pid, uid_t job_uid, gid_t job_gid)
{
        cap_t cur = cap_get_proc();
        cap_flag_value_t setpcap = CAP_CLEAR;
        if (!cur)
                return -errno;
        (void)cap_get_flag(cur, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
        cap_free(cur);
        if (setpcap == CAP_SET)
                for (int c = 0; c < (int)cap_max_bits(); c++)
                        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                                return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        if (geteuid() == 0) {
                uid_t uid = job_uid;
                gid_t gid = job_gid;
                /* the landlock tier's init keeps the caller's uid: the
                 * job's ids come from the run then */
                int r = job_uid != (uid_t)-1 ? 0 : sandbox_ids(init_pid, &uid, &gid);
                if (r < 0)
                        return r;
                if (uid == 0)
                        return -EPERM;  /* files as root: never, see the header */
                /* a uid 0 without capabilities regains none at execve */
                if (setpcap == CAP_SET &&
                    prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0) < 0)
                        return -errno;
                if (setgroups(0, NULL) < 0)
                        return -errno;
                (void)setfsgid(gid);
                (void)setfsuid(uid);
                if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid)
                        return -EPERM;
                /* a credential change clears the parent-death signal */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                        return -errno;
        }
        cap_t none = cap_init();
        if (!none)
                return -ENOMEM;
        int r = cap_set_proc(none) < 0 ? -errno : 0;
        cap_free(none);
        return r;
}

int egress_confine(pid_t init_pid)
{
        return egress_confine_as(init_pid, (uid_t)-1, (gid_t)-1);
}

int egress_confine_as(pid_t init_pid, uid_t job_uid, gid_t job_gid)
{
        int r = drop_privileges(init_pid, job_uid, job_gid);
        if (r < 0)
                return r;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;

        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return -ENOMEM;
        /* another architecture's calls (i386, x32): kill, see the header */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r == 0)
                r = add_rules(ctx);
        if (r == 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r < 0 ? r : 0;
}
