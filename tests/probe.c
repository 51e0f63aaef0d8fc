/* probe.c - a static helper that runs inside sandboxes for the tests.
 *
 * It links only against libc (the Makefile builds it with -static), so
 * it runs in any root the sandbox builds. Each verb does one small,
 * observable thing and prints what happened on stdout:
 *
 *   probe syscall NAME      try one syscall with harmless arguments; print
 *                           OK, EPERM, ENOSYS or another errno name; exit 0
 *   probe syscall list      print the NAMEs syscall knows, one a line
 *   probe memhog SIZE [SECS] allocate and touch SIZE bytes (K/M/G suffixes),
 *                           then hold them SECS seconds (default 0)
 *   probe forkbomb N        fork N sleeping children; print how many forked
 *   probe spew BYTES [LEN]  write BYTES bytes of LEN-byte lines (default 100,
 *                           at most 64K) to stdout, fast
 *   probe zombies N [SECS]  leave N unreaped children, wait SECS, exit 0
 *   probe daemon SECS       double fork + setsid; print the grandchild pid;
 *                           the grandchild sleeps SECS holding stdio open
 *   probe fds               list open fds and what they point at
 *   probe caps              print the uid, gid, capability and no_new_privs lines
 *   probe isatty            say which of fds 0, 1, 2 are terminals
 *
 * Hostile verbs (tests/security): each makes one real attempt at an
 * escape and prints OK if it worked, else the errno name; exit 0. They
 * are meant for a sandbox, but stay bounded when run unconfined (which
 * the self-test of the security suites does on purpose):
 *
 *   probe inject TEXT       TIOCSTI each byte of TEXT into the terminal
 *   probe kill SIG PID [LAST]  send SIG to PID (..LAST); print how many
 *                           deliveries succeeded ("killed N")
 *   probe ptrace PID        PTRACE_ATTACH to PID, then detach
 *   probe handle PATH       name_to_handle_at(PATH) + open_by_handle_at
 *   probe socket KIND       socket(): packet, raw, raw6, netlink-route
 *   probe connect PORT      TCP connect to 127.0.0.1:PORT
 *   probe abstract NAME     connect to the abstract unix socket @NAME
 *   probe route             add a route (10.254.254.0/24 via lo) over
 *                           rtnetlink; print the kernel's answer
 *   probe memfd SIZE SECS   fill an unmapped memfd with SIZE bytes,
 *                           hold it SECS seconds
 *   probe sysvshm SIZE SECS fill a SysV shm segment, detach, hold SECS
 *   probe keyring NAME      join a new session keyring called NAME
 *   probe paste             TIOCLINUX paste-selection on the terminal
 *   probe pdeathsig SECS    fork a child that clears its parent-death
 *                           signal, becomes a subreaper and setsids,
 *                           then sleeps SECS; the parent exits at once
 *   probe ignoring CMD...   exec CMD with every signal that can be
 *                           ignored ignored, libc's own 32 and 33 too
 *                           (a caller that hands hutch the worst case)
 *
 * "Harmless arguments" matters: the probe may run unconfined as real
 * root (a developer's shell, CI), so every syscall is made so that even
 * when it is allowed and privileged it fails or does nothing lasting
 * (nonexistent paths, bad fds, NULL buffers, invalid magic numbers,
 * read-only queries). Each case says how. Exit codes: 0 done (or, for
 * forkbomb, all N forked), 1 the action failed, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_ether.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Syscalls from 424 on share one number on every architecture; define
 * the ones an older libc may not know. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

#define NOPATH "/nonexistent-hutch-probe"

struct errno_name {
        int value;
        const char *name;
};

static const struct errno_name errno_names[] = {
        { EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" }, { EINTR, "EINTR" },
        { EIO, "EIO" }, { ENXIO, "ENXIO" }, { E2BIG, "E2BIG" }, { ENOEXEC, "ENOEXEC" },
        { EBADF, "EBADF" }, { ECHILD, "ECHILD" }, { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" },
        { EACCES, "EACCES" }, { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
        { EXDEV, "EXDEV" }, { ENODEV, "ENODEV" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
        { EINVAL, "EINVAL" }, { ENFILE, "ENFILE" }, { EMFILE, "EMFILE" }, { ENOTTY, "ENOTTY" },
        { EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" }, { ESPIPE, "ESPIPE" }, { EROFS, "EROFS" },
        { EPIPE, "EPIPE" }, { ERANGE, "ERANGE" }, { ENOSYS, "ENOSYS" }, { ELOOP, "ELOOP" },
        { ENAMETOOLONG, "ENAMETOOLONG" }, { ENOTSUP, "EOPNOTSUPP" }, { ENOKEY, "ENOKEY" },
        { EUSERS, "EUSERS" }, { ENOTSOCK, "ENOTSOCK" }, { EAFNOSUPPORT, "EAFNOSUPPORT" },
        { EPROTONOSUPPORT, "EPROTONOSUPPORT" }, { ETIMEDOUT, "ETIMEDOUT" },
        { ENOTCONN, "ENOTCONN" }, { EKEYREVOKED, "EKEYREVOKED" }, { ENOMEDIUM, "ENOMEDIUM" },
        { ENOBUFS, "ENOBUFS" }, { EDQUOT, "EDQUOT" }, { ESTALE, "ESTALE" },
};

static void print_errno(int e)
{
        for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
                if (errno_names[i].value == e) {
                        printf("%s\n", errno_names[i].name);
                        return;
                }
        printf("E%d\n", e);
}

/* Wait for a child made by a raw clone; its status does not matter. */
static long reap(long pid)
{
        if (pid > 0)
                waitpid((pid_t)pid, NULL, __WALL);
        return pid;
}

/* A pipe's read end: ioctls on it fail with ENOTTY when allowed, so
 * EPERM can only come from the filter. */
static int pipe_fd(void)
{
        int p[2];
        if (pipe(p) < 0)
                return -1;
        close(p[1]);
        return p[0];
}

/* The terminal a TIOCSTI would target: stdin if it is one, else
 * /dev/tty, else stdin anyway (ENOTTY when allowed). */
static int tty_fd(void)
{
        int fd;
        if (isatty(0))
                return 0;
        fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
        return fd >= 0 ? fd : 0;
}

/* ---- the syscalls; each returns the raw result with errno set ---- */

/* ENOENT when allowed: the target does not exist. */
static long p_mount(void) { return syscall(SYS_mount, "none", NOPATH, "tmpfs", 0UL, NULL); }
static long p_umount2(void) { return syscall(SYS_umount2, NOPATH, 0); }
static long p_pivot_root(void) { return syscall(SYS_pivot_root, NOPATH, NOPATH); }
static long p_chroot(void) { return syscall(SYS_chroot, NOPATH); }
/* Bad fds and empty paths: nothing to move, open or pick. */
static long p_move_mount(void) { return syscall(SYS_move_mount, -1, "", -1, "", 0); }
static long p_open_tree(void) { return syscall(SYS_open_tree, -1, NOPATH, 0); }
/* A filesystem type that does not exist: ENODEV when allowed. */
static long p_fsopen(void) { return syscall(SYS_fsopen, "hutch-probe-nofs", 0); }
static long p_fsconfig(void) { return syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0); }
static long p_fsmount(void) { return syscall(SYS_fsmount, -1, 0, 0); }
static long p_fspick(void) { return syscall(SYS_fspick, -1, NOPATH, 0); }
/* Attribute size 0 is EINVAL when allowed. */
static long p_mount_setattr(void) { return syscall(SYS_mount_setattr, -1, NOPATH, 0, NULL, 0); }
/* New namespaces for this short-lived process only. */
static long p_unshare_user(void) { return syscall(SYS_unshare, CLONE_NEWUSER); }
static long p_unshare_net(void) { return syscall(SYS_unshare, CLONE_NEWNET); }
static long p_unshare_mount(void) { return syscall(SYS_unshare, CLONE_NEWNS); }
/* No namespace flag: must stay allowed. */
static long p_unshare_files(void) { return syscall(SYS_unshare, CLONE_FILES); }

/* A raw clone with a NULL stack behaves like fork; the child exits at once. */
static long raw_clone(unsigned long flags)
{
        long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0UL);
        if (r == 0)
                syscall(SYS_exit, 0);
        return reap(r);
}
static long p_clone(void) { return raw_clone(0); }
static long p_clone_newuser(void) { return raw_clone(CLONE_NEWUSER); }
static long p_clone_newns(void) { return raw_clone(CLONE_NEWNS); }

static long p_clone3(void)
{
        /* struct clone_args, first version (64 bytes): a plain fork. */
        uint64_t args[8] = { 0 };
        long r;

        args[4] = SIGCHLD;      /* exit_signal */
        r = syscall(SYS_clone3, args, sizeof(args));
        if (r == 0)
                syscall(SYS_exit, 0);
        return reap(r);
}

static long p_setns(void) { return syscall(SYS_setns, -1, 0); }
/* Read-only: the id of the session keyring, without creating one. */
static long p_keyctl(void) { return syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* SESSION */, 0); }
/* NULL type and description: EFAULT when allowed. */
static long p_add_key(void) { return syscall(SYS_add_key, NULL, NULL, NULL, 0, -2); }
static long p_request_key(void) { return syscall(SYS_request_key, NULL, NULL, NULL, 0); }
/* BPF_MAP_CREATE with an empty attribute: map type 0 is EINVAL. */
static long p_bpf(void) { return syscall(SYS_bpf, 0, NULL, 0); }
static long p_perf_event_open(void) { return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0); }

static long p_userfaultfd(void)
{
        long r = syscall(SYS_userfaultfd, O_CLOEXEC);
        if (r >= 0)
                close((int)r);
        return r;
}

/* Zero entries and a NULL params pointer: EINVAL or EFAULT when allowed. */
static long p_io_uring_setup(void) { return syscall(SYS_io_uring_setup, 0, NULL); }
static long p_open_by_handle_at(void) { return syscall(SYS_open_by_handle_at, -1, NULL, 0); }
static long p_name_to_handle_at(void) { return syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0); }
/* Too many segments and an undefined flag: EINVAL when allowed. (With
 * zero segments and valid flags kexec_load would unload a loaded image.) */
static long p_kexec_load(void) { return syscall(SYS_kexec_load, 0UL, 0xffffUL, NULL, 0x8000UL); }
static long p_kexec_file_load(void) { return syscall(SYS_kexec_file_load, -1, -1, 0UL, NULL, 0x80000000UL); }
static long p_init_module(void) { return syscall(SYS_init_module, NULL, 0UL, ""); }
static long p_finit_module(void) { return syscall(SYS_finit_module, -1, "", 0); }
static long p_delete_module(void) { return syscall(SYS_delete_module, "hutch_probe_no_such_module", O_NONBLOCK); }
/* Wrong magic numbers: EINVAL when allowed, never a reboot. */
static long p_reboot(void) { return syscall(SYS_reboot, 0, 0, 0, NULL); }
static long p_swapon(void) { return syscall(SYS_swapon, NOPATH, 0); }
static long p_swapoff(void) { return syscall(SYS_swapoff, NOPATH); }
/* Both NULL: a no-op even for root. */
static long p_settimeofday(void) { return syscall(SYS_settimeofday, NULL, NULL); }

static long p_clock_settime(void)
{
        /* CLOCK_MONOTONIC cannot be set: EINVAL when allowed. */
        struct timespec ts = { 0 };
        return syscall(SYS_clock_settime, CLOCK_MONOTONIC, &ts);
}

static long p_clock_adjtime(void)
{
        /* modes = 0 is a read-only query. */
        struct timex tx = { 0 };
        return syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx);
}

static long p_acct(void) { return syscall(SYS_acct, NOPATH "/x"); }
static long p_quotactl(void) { return syscall(SYS_quotactl, 0, NULL, 0, NULL); }
/* SYSLOG_ACTION_SIZE_BUFFER: read-only. */
static long p_syslog(void) { return syscall(SYS_syslog, 10, NULL, 0); }
/* PTRACE_TRACEME: only this short-lived process is affected. */
static long p_ptrace(void) { return syscall(SYS_ptrace, 0 /* TRACEME */, 0, NULL, NULL); }

static long p_process_vm_readv(void)
{
        /* Read our own memory. */
        char src[8] = "probe", dst[8];
        struct iovec l = { dst, sizeof(dst) }, r = { src, sizeof(src) };
        return syscall(SYS_process_vm_readv, getpid(), &l, 1UL, &r, 1UL, 0UL);
}

/* NULL character pointer: nothing can be injected even when allowed. */
static long p_tiocsti(void) { return syscall(SYS_ioctl, tty_fd(), (unsigned long)TIOCSTI, NULL); }
static long p_tiocsti_pipe(void) { return syscall(SYS_ioctl, pipe_fd(), (unsigned long)TIOCSTI, NULL); }
/* TIOCSTI with garbage in the upper 32 bits: the kernel ignores them. */
static long p_tiocsti_high(void)
{
        return syscall(SYS_ioctl, pipe_fd(), 0xdead00000000UL | TIOCSTI, NULL);
}
static long p_tioclinux(void) { return syscall(SYS_ioctl, pipe_fd(), (unsigned long)TIOCLINUX, NULL); }

static long p_fionread(void)
{
        /* An ordinary ioctl that must stay allowed. */
        int n;
        return syscall(SYS_ioctl, pipe_fd(), (unsigned long)FIONREAD, &n);
}

static long p_personality(void)
{
        long r = syscall(SYS_personality, (unsigned long)PER_LINUX32);
        if (r >= 0)
                syscall(SYS_personality, (unsigned long)r);
        return r;
}

static long p_personality_noaslr(void)
{
        long r = syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE);
        if (r >= 0)
                syscall(SYS_personality, (unsigned long)r);
        return r;
}

static long p_personality_query(void) { return syscall(SYS_personality, 0xffffffffUL); }
static long p_personality_default(void) { return syscall(SYS_personality, (unsigned long)PER_LINUX); }
static long p_getpid(void) { return syscall(SYS_getpid); }

/* Ids: in a user namespace with one mapped id, another id is EINVAL
 * unless hutch's id shim makes it the EPERM a host gives. Harmless as
 * root: setuid(0) leaves root root; fchown(-1, ...) is EBADF. */
static long p_setuid_root(void) { return syscall(SYS_setuid, 0); }
static long p_setuid_self(void) { return syscall(SYS_setuid, getuid()); }
static long p_setresuid_keep(void) { return syscall(SYS_setresuid, -1, getuid(), -1); }
static long p_setgid_root(void) { return syscall(SYS_setgid, 0); }
static long p_fchown_root(void) { return syscall(SYS_fchown, -1, 0, -1); }
static long p_fchown_self(void) { return syscall(SYS_fchown, -1, getuid(), getgid()); }
static long p_fchownat_gid_root(void) { return syscall(SYS_fchownat, -1, "", -1, 0, AT_EMPTY_PATH); }

/* A number far past any current syscall: ENOSYS from kernel or filter. */
static long p_future(void) { return syscall(500); }

#if defined(__x86_64__)
/* Read the LDT (func 0): harmless. */
static long p_modify_ldt(void)
{
        char buf[16];
        return syscall(SYS_modify_ldt, 0, buf, sizeof(buf));
}

/* Lowering the I/O privilege level to 0 needs no capability. */
static long p_iopl(void) { return syscall(SYS_iopl, 0); }
/* Turning port access off needs no capability either. */
static long p_ioperm(void) { return syscall(SYS_ioperm, 0x80UL, 1UL, 0); }

/* getpid through the i386 entry point: arch AUDIT_ARCH_I386, nr 20. */
static long p_i386_getpid(void)
{
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
        if (r < 0 && r > -4096) {
                errno = (int)-r;
                return -1;
        }
        return r;
}

/* getpid through the x32 ABI: nr 39 with __X32_SYSCALL_BIT. */
static long p_x32_getpid(void) { return syscall(0x40000000L | SYS_getpid); }
#endif

struct probe_syscall {
        const char *name;
        long (*fn)(void);
};

static const struct probe_syscall syscalls[] = {
        { "mount", p_mount },
        { "umount2", p_umount2 },
        { "pivot_root", p_pivot_root },
        { "chroot", p_chroot },
        { "move_mount", p_move_mount },
        { "open_tree", p_open_tree },
        { "fsopen", p_fsopen },
        { "fsconfig", p_fsconfig },
        { "fsmount", p_fsmount },
        { "fspick", p_fspick },
        { "mount_setattr", p_mount_setattr },
        { "unshare-user", p_unshare_user },
        { "unshare-net", p_unshare_net },
        { "unshare-mount", p_unshare_mount },
        { "unshare-files", p_unshare_files },
        { "clone", p_clone },
        { "clone-newuser", p_clone_newuser },
        { "clone-newns", p_clone_newns },
        { "clone3", p_clone3 },
        { "setns", p_setns },
        { "keyctl", p_keyctl },
        { "add_key", p_add_key },
        { "request_key", p_request_key },
        { "bpf", p_bpf },
        { "perf_event_open", p_perf_event_open },
        { "userfaultfd", p_userfaultfd },
        { "io_uring_setup", p_io_uring_setup },
        { "open_by_handle_at", p_open_by_handle_at },
        { "name_to_handle_at", p_name_to_handle_at },
        { "kexec_load", p_kexec_load },
        { "kexec_file_load", p_kexec_file_load },
        { "init_module", p_init_module },
        { "finit_module", p_finit_module },
        { "delete_module", p_delete_module },
        { "reboot", p_reboot },
        { "swapon", p_swapon },
        { "swapoff", p_swapoff },
        { "settimeofday", p_settimeofday },
        { "clock_settime", p_clock_settime },
        { "clock_adjtime", p_clock_adjtime },
        { "acct", p_acct },
        { "quotactl", p_quotactl },
        { "syslog", p_syslog },
        { "ptrace", p_ptrace },
        { "process_vm_readv", p_process_vm_readv },
        { "tiocsti", p_tiocsti },
        { "tiocsti-pipe", p_tiocsti_pipe },
        { "tiocsti-high", p_tiocsti_high },
        { "tioclinux", p_tioclinux },
        { "fionread", p_fionread },
        { "personality", p_personality },
        { "personality-noaslr", p_personality_noaslr },
        { "personality-query", p_personality_query },
        { "personality-default", p_personality_default },
        { "getpid", p_getpid },
        { "setuid-root", p_setuid_root },
        { "setuid-self", p_setuid_self },
        { "setresuid-keep", p_setresuid_keep },
        { "setgid-root", p_setgid_root },
        { "fchown-root", p_fchown_root },
        { "fchown-self", p_fchown_self },
        { "fchownat-gid-root", p_fchownat_gid_root },
        { "future", p_future },
#if defined(__x86_64__)
        { "modify_ldt", p_modify_ldt },
        { "iopl", p_iopl },
        { "ioperm", p_ioperm },
        { "i386", p_i386_getpid },
        { "x32", p_x32_getpid },
#endif
};

static int usage(void)
{
        fprintf(stderr,
                "usage: probe syscall NAME|list | memhog SIZE [SECS] | forkbomb N | spew BYTES [LEN]\n"
                "       probe zombies N [SECS] | daemon SECS | fds | caps | isatty\n"
                "       probe inject TEXT | kill SIG PID [LAST] | ptrace PID | handle PATH\n"
                "       probe socket packet|raw|raw6|netlink-route | connect PORT | abstract NAME\n"
                "       probe route | memfd SIZE SECS | sysvshm SIZE SECS | pdeathsig SECS\n"
                "       probe keyring NAME | paste | ignoring CMD...\n");
        return 2;
}

static int verb_syscall(const char *name)
{
        size_t n = sizeof(syscalls) / sizeof(syscalls[0]);

        if (strcmp(name, "list") == 0) {
                for (size_t i = 0; i < n; i++)
                        printf("%s\n", syscalls[i].name);
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                if (strcmp(syscalls[i].name, name) == 0) {
                        long r;
                        errno = 0;
                        r = syscalls[i].fn();
                        if (r < 0)
                                print_errno(errno);
                        else
                                printf("OK\n");
                        return 0;
                }
        }
        if (strcmp(name, "i386") == 0 || strcmp(name, "x32") == 0 ||
            strcmp(name, "modify_ldt") == 0 || strcmp(name, "iopl") == 0 ||
            strcmp(name, "ioperm") == 0) {
                printf("UNSUPPORTED\n");        /* not an x86_64 build */
                return 0;
        }
        fprintf(stderr, "probe: unknown syscall probe \"%s\" (try: probe syscall list)\n", name);
        return 2;
}

/* "512", "64K", "512M", "1G": bytes, binary multiples. */
static bool parse_size(const char *s, unsigned long long *ret)
{
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || s[0] == '-')
                return false;
        switch (*end) {
        case '\0': break;
        case 'K': case 'k': v <<= 10; end++; break;
        case 'M': case 'm': v <<= 20; end++; break;
        case 'G': case 'g': v <<= 30; end++; break;
        default: return false;
        }
        if (*end)
                return false;
        *ret = v;
        return true;
}

static bool parse_count(const char *s, unsigned long *ret)
{
        char *end;
        errno = 0;
        *ret = strtoul(s, &end, 10);
        return !errno && end != s && *end == '\0' && s[0] != '-';
}

static int verb_memhog(const char *arg, const char *arg_secs)
{
        unsigned long secs = 0;
        const size_t chunk = 1 << 20;
        long page = sysconf(_SC_PAGESIZE);
        unsigned long long want, got = 0;

        if (!parse_size(arg, &want) || (arg_secs && !parse_count(arg_secs, &secs)))
                return usage();
        while (got < want) {
                size_t n = want - got < chunk ? (size_t)(want - got) : chunk;
                char *p = malloc(n);
                if (!p) {
                        printf("malloc failed after %llu bytes\n", got);
                        return 1;
                }
                for (size_t i = 0; i < n; i += (size_t)page)
                        p[i] = 1;       /* touch every page: make it resident */
                got += n;               /* never freed: that is the point */
        }
        printf("allocated %llu bytes\n", got);
        fflush(stdout);
        if (secs)
                sleep((unsigned)secs);
        return 0;
}

static int verb_forkbomb(const char *arg)
{
        unsigned long n, forked = 0;
        pid_t *pids;
        int err = 0;

        if (!parse_count(arg, &n) || n == 0 || n > 1000000)
                return usage();
        pids = calloc(n, sizeof(pid_t));
        if (!pids)
                return 1;
        for (; forked < n; forked++) {
                pid_t pid = fork();
                if (pid < 0) {
                        err = errno;
                        break;
                }
                if (pid == 0) {
                        pause();
                        _exit(0);
                }
                pids[forked] = pid;
        }
        printf("forked %lu of %lu\n", forked, n);
        if (err) {
                printf("fork: ");
                print_errno(err);
        }
        fflush(stdout);
        for (unsigned long i = 0; i < forked; i++)
                kill(pids[i], SIGKILL);
        for (unsigned long i = 0; i < forked; i++)
                waitpid(pids[i], NULL, 0);
        free(pids);
        return forked == n ? 0 : 1;
}

static int verb_spew(const char *arg_bytes, const char *arg_len)
{
        static char buf[1 << 16];
        unsigned long long total, done = 0;
        unsigned long len = 100;
        size_t fill;

        if (!parse_size(arg_bytes, &total) ||
            (arg_len && (!parse_count(arg_len, &len) || len == 0 || len > sizeof(buf))))
                return usage();
        /* A whole number of lines per buffer, so every write keeps the
         * line structure: LEN-1 letters and a newline. */
        fill = sizeof(buf) - sizeof(buf) % len;
        for (size_t i = 0; i < fill; i++)
                buf[i] = (i + 1) % len == 0 ? '\n' : (char)('a' + (i % len) % 26);
        while (done < total) {
                size_t n = total - done < fill ? (size_t)(total - done) : fill;
                ssize_t w = write(1, buf, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return 1;
                }
                done += (unsigned long long)w;
        }
        return 0;
}

static int verb_zombies(const char *arg_n, const char *arg_secs)
{
        unsigned long n, secs = 0, made = 0;

        if (!parse_count(arg_n, &n) || (arg_secs && !parse_count(arg_secs, &secs)))
                return usage();
        for (; made < n; made++) {
                pid_t pid = fork();
                if (pid < 0)
                        break;
                if (pid == 0)
                        _exit(0);
        }
        printf("zombies %lu\n", made);
        fflush(stdout);
        if (secs)
                sleep((unsigned)secs);
        return made == n ? 0 : 1;       /* exit without reaping: init must */
}

static int verb_daemon(const char *arg)
{
        unsigned long secs;
        int p[2];
        pid_t pid, grandchild = 0;

        if (!parse_count(arg, &secs))
                return usage();
        if (pipe(p) < 0)
                return 1;
        pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                close(p[0]);
                setsid();
                pid = fork();
                if (pid < 0)
                        _exit(1);
                if (pid == 0) {
                        pid_t self = getpid();
                        (void)!write(p[1], &self, sizeof(self));
                        close(p[1]);
                        /* Keep stdio open, as a careless daemon would. */
                        sleep((unsigned)secs);
                        _exit(0);
                }
                _exit(0);
        }
        close(p[1]);
        waitpid(pid, NULL, 0);
        if (read(p[0], &grandchild, sizeof(grandchild)) != sizeof(grandchild))
                return 1;
        printf("%d\n", (int)grandchild);
        return 0;
}

static int verb_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;

        if (!d) {
                perror("probe: /proc/self/fd");
                return 1;
        }
        while ((de = readdir(d))) {
                char path[PATH_MAX], target[PATH_MAX];
                ssize_t n;
                if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
                        continue;
                snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
                n = readlink(path, target, sizeof(target) - 1);
                target[n < 0 ? 0 : n] = '\0';
                printf("%s %s\n", de->d_name, target);
        }
        closedir(d);
        return 0;
}

static int verb_caps(void)
{
        static const char *const keys[] = {
                "Uid:", "Gid:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:",
                "NoNewPrivs:", "Seccomp:",
        };
        char line[256];
        FILE *f = fopen("/proc/self/status", "re");

        if (!f) {
                perror("probe: /proc/self/status");
                return 1;
        }
        while (fgets(line, sizeof(line), f))
                for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                        if (strncmp(line, keys[i], strlen(keys[i])) == 0)
                                fputs(line, stdout);
        fclose(f);
        return 0;
}

static int verb_isatty(void)
{
        for (int fd = 0; fd <= 2; fd++)
                printf("%d: %s\n", fd, isatty(fd) ? "tty" : "not a tty");
        return 0;
}


/* ---- hostile verbs ---- */

static int report(long r)
{
        if (r < 0)
                print_errno(errno);
        else
                printf("OK\n");
        return 0;
}

static int verb_inject(const char *text)
{
        int fd = tty_fd();
        for (const char *c = text; *c; c++)
                if (ioctl(fd, TIOCSTI, c) < 0)
                        return report(-1);
        return report(0);
}

static int verb_kill(const char *sig_arg, const char *first_arg, const char *last_arg)
{
        unsigned long sig, first, last;
        unsigned long killed = 0;

        if (!parse_count(sig_arg, &sig) || !parse_count(first_arg, &first) ||
            (last_arg && !parse_count(last_arg, &last)))
                return usage();
        if (!last_arg)
                last = first;
        for (unsigned long pid = first; pid <= last && pid <= 4194304; pid++) {
                if ((pid_t)pid == getpid())
                        continue;
                if (kill((pid_t)pid, (int)sig) == 0)
                        killed++;
        }
        printf("killed %lu\n", killed);
        return 0;
}

static int verb_ptrace(const char *arg)
{
        unsigned long pid;
        if (!parse_count(arg, &pid))
                return usage();
        if (ptrace(PTRACE_ATTACH, (pid_t)pid, NULL, NULL) < 0)
                return report(-1);
        waitpid((pid_t)pid, NULL, __WALL);
        ptrace(PTRACE_DETACH, (pid_t)pid, NULL, NULL);
        return report(0);
}

static int verb_handle(const char *path)
{
        struct {
                struct file_handle fh;
                unsigned char bytes[MAX_HANDLE_SZ];
        } h;
        int mount_id, mfd, fd;

        h.fh.handle_bytes = MAX_HANDLE_SZ;
        if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) < 0)
                return report(-1);
        mfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                close(fd);
        return report(fd);
}

static int verb_socket(const char *kind)
{
        int fd;
        if (strcmp(kind, "packet") == 0)
                fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
        else if (strcmp(kind, "raw") == 0)
                fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
        else if (strcmp(kind, "raw6") == 0)
                fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6);
        else if (strcmp(kind, "netlink-route") == 0)
                fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        else
                return usage();
        if (fd >= 0)
                close(fd);
        return report(fd);
}

static int verb_connect(const char *arg)
{
        unsigned long port;
        struct sockaddr_in sa = { .sin_family = AF_INET };
        if (!parse_count(arg, &port) || port == 0 || port > 65535)
                return usage();
        sa.sin_port = htons((uint16_t)port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return report(-1);
        return report(connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
}

static int verb_abstract(const char *name)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(name);
        if (n + 1 > sizeof(sa.sun_path))
                return usage();
        memcpy(sa.sun_path + 1, name, n);       /* sun_path[0] = 0: abstract */
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return report(-1);
        return report(connect(fd, (struct sockaddr *)&sa,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
}

/* RTM_NEWROUTE 10.254.254.0/24 dev lo; the kernel's ack carries the
 * error (0 = the route was added). */
static int verb_route(void)
{
        struct {
                struct nlmsghdr nh;
                struct rtmsg rt;
                char attrs[64];
        } req = { 0 };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        char ans[4096];
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        uint32_t dst = htonl(0x0afefe00), ifindex = 1;  /* lo is 1 in a fresh netns */
        struct rtattr *a;

        if (fd < 0)
                return report(-1);
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
        req.nh.nlmsg_type = RTM_NEWROUTE;
        req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        req.rt.rtm_family = AF_INET;
        req.rt.rtm_dst_len = 24;
        req.rt.rtm_table = RT_TABLE_MAIN;
        req.rt.rtm_protocol = RTPROT_BOOT;
        req.rt.rtm_scope = RT_SCOPE_LINK;
        req.rt.rtm_type = RTN_UNICAST;
        a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
        a->rta_type = RTA_DST;
        a->rta_len = RTA_LENGTH(4);
        memcpy(RTA_DATA(a), &dst, 4);
        req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
        a = (struct rtattr *)((char *)&req + req.nh.nlmsg_len);
        a->rta_type = RTA_OIF;
        a->rta_len = RTA_LENGTH(4);
        memcpy(RTA_DATA(a), &ifindex, 4);
        req.nh.nlmsg_len += RTA_ALIGN(a->rta_len);
        if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
                return report(-1);
        ssize_t n = recv(fd, ans, sizeof(ans), 0);
        if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                return report(-1);
        struct nlmsghdr *h = (struct nlmsghdr *)ans;
        if (h->nlmsg_type != NLMSG_ERROR)
                return report(0);
        int e = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
        errno = -e;
        return report(e ? -1 : 0);
}

static int verb_memfd(const char *arg, const char *arg_secs)
{
        static char buf[1 << 16];
        unsigned long long want, got = 0;
        unsigned long secs;

        if (!parse_size(arg, &want) || !parse_count(arg_secs, &secs))
                return usage();
        int fd = (int)syscall(SYS_memfd_create, "probe-hog", 0U);
        if (fd < 0)
                return report(-1);
        memset(buf, 1, sizeof(buf));
        while (got < want) {
                ssize_t w = write(fd, buf, sizeof(buf));
                if (w <= 0) {
                        printf("write failed after %llu bytes\n", got);
                        return 1;
                }
                got += (unsigned long long)w;
        }
        printf("held %llu bytes\n", got);
        fflush(stdout);
        sleep((unsigned)secs);
        return 0;
}

static int verb_sysvshm(const char *arg, const char *arg_secs)
{
        unsigned long long want;
        unsigned long secs;

        if (!parse_size(arg, &want) || !parse_count(arg_secs, &secs))
                return usage();
        int id = shmget(IPC_PRIVATE, (size_t)want, IPC_CREAT | 0600);
        if (id < 0)
                return report(-1);
        char *p = shmat(id, NULL, 0);
        if (p == (void *)-1) {
                shmctl(id, IPC_RMID, NULL);
                return report(-1);
        }
        memset(p, 1, (size_t)want);
        shmdt(p);
        printf("held %llu bytes\n", want);
        fflush(stdout);
        sleep((unsigned)secs);
        shmctl(id, IPC_RMID, NULL);     /* unconfined runs clean up after themselves */
        return 0;
}

static int verb_keyring(const char *name)
{
        /* KEYCTL_JOIN_SESSION_KEYRING = 1 */
        return report(syscall(SYS_keyctl, 1, name));
}

static int verb_paste(void)
{
        char sub = 3;   /* TIOCL_PASTESEL: type the console selection as input */
        return report(ioctl(tty_fd(), TIOCLINUX, &sub));
}

static int verb_pdeathsig(const char *arg)
{
        unsigned long secs;
        if (!parse_count(arg, &secs))
                return usage();
        pid_t pid = fork();
        if (pid < 0)
                return report(-1);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, 0);
                prctl(PR_SET_CHILD_SUBREAPER, 1);
                setsid();
                signal(SIGTERM, SIG_IGN);
                signal(SIGHUP, SIG_IGN);
                signal(SIGINT, SIG_IGN);
                sleep((unsigned)secs);
                _exit(0);
        }
        printf("%d\n", (int)pid);
        return 0;
}

/* The raw call: glibc refuses 32 and 33 (its own) to sigaction(). The
 * kernel's struct starts with the handler; the rest zero is no flags
 * and an empty mask on every layout. */
static int verb_ignoring(char **cmd)
{
        for (int s = 1; s < 65; s++) {
                if (s == SIGKILL || s == SIGSTOP)
                        continue;
                uint64_t act[8] = { (uint64_t)(uintptr_t)SIG_IGN };
                if (syscall(SYS_rt_sigaction, s, act, NULL, (size_t)8) < 0) {
                        fprintf(stderr, "probe ignoring: signal %d: %s\n", s, strerror(errno));
                        return 1;
                }
        }
        execvp(cmd[0], cmd);
        fprintf(stderr, "probe ignoring: %s: %s\n", cmd[0], strerror(errno));
        return 127;
}

int main(int argc, char **argv)
{
        const char *verb = argc > 1 ? argv[1] : "";
        int r;

        if (strcmp(verb, "syscall") == 0 && argc == 3)
                r = verb_syscall(argv[2]);
        else if (strcmp(verb, "memhog") == 0 && (argc == 3 || argc == 4))
                r = verb_memhog(argv[2], argc == 4 ? argv[3] : NULL);
        else if (strcmp(verb, "forkbomb") == 0 && argc == 3)
                r = verb_forkbomb(argv[2]);
        else if (strcmp(verb, "spew") == 0 && (argc == 3 || argc == 4))
                r = verb_spew(argv[2], argc == 4 ? argv[3] : NULL);
        else if (strcmp(verb, "zombies") == 0 && (argc == 3 || argc == 4))
                r = verb_zombies(argv[2], argc == 4 ? argv[3] : NULL);
        else if (strcmp(verb, "daemon") == 0 && argc == 3)
                r = verb_daemon(argv[2]);
        else if (strcmp(verb, "fds") == 0 && argc == 2)
                r = verb_fds();
        else if (strcmp(verb, "caps") == 0 && argc == 2)
                r = verb_caps();
        else if (strcmp(verb, "isatty") == 0 && argc == 2)
                r = verb_isatty();
        else if (strcmp(verb, "inject") == 0 && argc == 3)
                r = verb_inject(argv[2]);
        else if (strcmp(verb, "kill") == 0 && (argc == 4 || argc == 5))
                r = verb_kill(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
        else if (strcmp(verb, "ptrace") == 0 && argc == 3)
                r = verb_ptrace(argv[2]);
        else if (strcmp(verb, "handle") == 0 && argc == 3)
                r = verb_handle(argv[2]);
        else if (strcmp(verb, "socket") == 0 && argc == 3)
                r = verb_socket(argv[2]);
        else if (strcmp(verb, "connect") == 0 && argc == 3)
                r = verb_connect(argv[2]);
        else if (strcmp(verb, "abstract") == 0 && argc == 3)
                r = verb_abstract(argv[2]);
        else if (strcmp(verb, "route") == 0 && argc == 2)
                r = verb_route();
        else if (strcmp(verb, "memfd") == 0 && argc == 4)
                r = verb_memfd(argv[2], argv[3]);
        else if (strcmp(verb, "sysvshm") == 0 && argc == 4)
                r = verb_sysvshm(argv[2], argv[3]);
        else if (strcmp(verb, "keyring") == 0 && argc == 3)
                r = verb_keyring(argv[2]);
        else if (strcmp(verb, "paste") == 0 && argc == 2)
                r = verb_paste();
        else if (strcmp(verb, "pdeathsig") == 0 && argc == 3)
                r = verb_pdeathsig(argv[2]);
        else if (strcmp(verb, "ignoring") == 0 && argc >= 3)
                r = verb_ignoring(argv + 2);
        else
                r = usage();
        if (fflush(stdout) != 0 && r == 0)
                r = 1;
        return r;
}
