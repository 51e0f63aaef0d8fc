/* seccomp-sockets.c - the landlock tier's socket families (see seccomp.h).
 *
 * Without a network namespace the job shares the host's network, and
 * without a mount namespace the host's filesystem, where Landlock (up to
 * ABI 7) holds opening files but not connecting to a unix socket by its
 * path: /run/user/UID/bus (the caller's systemd, which starts whatever it
 * is asked to, outside any sandbox), /run/dbus/system_bus_socket, the
 * docker socket for a caller in the docker group. So socket(2) is held
 * here, by family and type:
 *
 *   AF_UNIX                     never: socketpair(2) still makes connected
 *                               pairs (it names no path and no peer), and
 *                               a program that binds or connects a unix
 *                               socket fails (the report says so)
 *   bind(2)                     EACCES with network none, whose only
 *                               sockets are socketpair ends: bound to an
 *                               abstract name, one holds that name in the
 *                               host's abstract namespace for the run (a
 *                               host service that binds it fails; Landlock
 *                               ABI 6 scopes connecting and sending to
 *                               abstract names, not binding them). Seccomp
 *                               cannot see bind's family (it is behind a
 *                               pointer), so with network host, whose inet
 *                               sockets need bind, the name stays the
 *                               job's to take, as in the namespace tier
 *                               with network host (abstract names belong
 *                               to the network namespace); with network
 *                               allow bind is refused below
 *   socketpair(2)               AF_UNIX SOCK_STREAM and SOCK_SEQPACKET
 *                               only, EPROTONOSUPPORT else: a SOCK_DGRAM
 *                               pair's socket sends to any path named in
 *                               sendto(2)/sendmsg(2), and connect(2)
 *                               repoints it at one, whatever it is
 *                               connected to (a host's /dev/log, the
 *                               journal's socket; Landlock scopes only
 *                               abstract names). A stream or seqpacket
 *                               one cannot: connect(2) is EISCONN, a
 *                               stream send with a name EISCONN, and a
 *                               seqpacket send drops the name.
 *   AF_INET, AF_INET6           SOCK_STREAM with protocol 0 or IPPROTO_TCP
 *                               only with network allow (not SCTP or MPTCP,
 *                               which Landlock's TCP rules do not name);
 *                               any type with network host; never with none
 *   AF_NETLINK                  network host only (ip, ss read the host's)
 *   every other family          EAFNOSUPPORT (packet, vsock, alg, ...)
 *
 * So UDP and ICMP (SOCK_DGRAM, SOCK_RAW) exist only with network host:
 * the report lists this as held by seccomp alone. io_uring's socket op
 * would pass by this filter: the tier refuses allow_io_uring. Foreign
 * architectures are refused by the main filter, so only the native one
 * is looked at. Type flags (SOCK_NONBLOCK, SOCK_CLOEXEC) are masked off
 * before the type is compared.
 *
 * With network allow (SECCOMP_SOCKETS_TCP) this filter also holds the
 * calls that make a TCP connection, so that the only one the job can
 * hold is one hutch made (connect-notify.h argues the whole of it):
 *
 *   connect(2)                  SECCOMP_RET_USER_NOTIF: the job's init
 *                               answers it, never with "continue"
 *   bind(2), listen(2)          EACCES: no port of the host's is the job's
 *                               (listen() would bind an ephemeral one)
 *   sendto, sendmsg, sendmmsg   EOPNOTSUPP with MSG_FASTOPEN, which connects
 *                               without connect(2), so without init's answer
 *                               (Landlock's TCP rule holds it too, where the
 *                               ABI has one: 4 and later)
 *
 * The filter is loaded with SECCOMP_FILTER_FLAG_NEW_LISTENER then, and
 * the listener goes to init before the exec (the job never holds it). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <unistd.h>
#include <stddef.h>
#include <seccomp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"

#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define DENY(e) RET(SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

int seccomp_sockets_build(enum seccomp_sockets mode, struct sock_filter *insns, size_t max, size_t *ret_n)
{
        size_t n = 0;
        if (mode < 0 || mode >= _SECCOMP_SOCKETS_MAX)
                return -EINVAL;
#define EMIT(...) do { if (n >= max) return -E2BIG; insns[n++] = (struct sock_filter)__VA_ARGS__; } while (0)
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 1, 0));
        EMIT(RET(SECCOMP_RET_ALLOW));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
        if (mode == SECCOMP_SOCKETS_NONE) {
                /* the only sockets are socketpair ends, and binding one
                 * to an abstract name holds that name in the host's
                 * abstract namespace (Landlock scopes connect and send,
                 * not bind) */
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bind, 0, 1));
                EMIT(DENY(EACCES));
        }
        if (mode == SECCOMP_SOCKETS_TCP) {
                /* the calls that connect or listen, before socket(2) */
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 0, 1));
                EMIT(RET(SECCOMP_RET_USER_NOTIF));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bind, 1, 0));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_listen, 0, 1));
                EMIT(DENY(EACCES));
                /* the flags: sendto's and sendmmsg's fourth argument, sendmsg's third */
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sendmsg, 0, 2));
                EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(2)));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JA, 3, 0, 0));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sendto, 1, 0));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sendmmsg, 0, 4));
                EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(3)));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, 0, 1));
                EMIT(DENY(EOPNOTSUPP));
                EMIT(RET(SECCOMP_RET_ALLOW));
                EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
        }
        /* socketpair(2): AF_UNIX stream and seqpacket only (A is nr) */
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socketpair, 0, 8));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(0)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 5));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(1)));
        EMIT(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~(uint32_t)(SOCK_NONBLOCK | SOCK_CLOEXEC)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 1, 0));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_SEQPACKET, 0, 1));
        EMIT(RET(SECCOMP_RET_ALLOW));
        EMIT(DENY(EPROTONOSUPPORT));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 1, 0));
        EMIT(RET(SECCOMP_RET_ALLOW));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(0)));
        switch (mode) {
        case SECCOMP_SOCKETS_NONE:
                break;
        case SECCOMP_SOCKETS_TCP:
                /* AF_INET or AF_INET6 -> check the type, else deny */
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 8));
                EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(1)));
                EMIT(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~(uint32_t)(SOCK_NONBLOCK | SOCK_CLOEXEC)));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 0, 4));
                /* and TCP: protocol 0 or IPPROTO_TCP */
                EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(2)));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 1));
                EMIT(RET(SECCOMP_RET_ALLOW));
                EMIT(DENY(EPROTONOSUPPORT));
                break;
        case SECCOMP_SOCKETS_ALL_INET:
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0));
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1));
                EMIT(RET(SECCOMP_RET_ALLOW));
                break;
        default:
                return -EINVAL;
        }
        EMIT(DENY(EAFNOSUPPORT));
#undef EMIT
        *ret_n = n;
        return 0;
}

int seccomp_sockets_load(enum seccomp_sockets mode, int *ret_listener)
{
        struct sock_filter insns[SECCOMP_SOCKETS_MAX_INSNS];
        size_t n;
        int r = seccomp_sockets_build(mode, insns, ELEMENTSOF(insns), &n);
        if (r < 0)
                return r;
        struct sock_fprog prog = { .len = (unsigned short)n, .filter = insns };
        bool notify = mode == SECCOMP_SOCKETS_TCP;
        if (notify && !ret_listener)
                return -EINVAL;
        /* the listener is close-on-exec: it goes to init before the exec,
         * and no copy of it may reach the job */
        long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0,
                          &prog);
        if (fd < 0)
                return -errno;
        if (notify) {
                if (fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
                        r = -errno;
                        close((int)fd);
                        return r;
                }
                *ret_listener = (int)fd;
        } else if (ret_listener)
                *ret_listener = -1;
        return 0;
}
