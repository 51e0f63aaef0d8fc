/* seccomp-idshim.c - the id shim (see seccomp.h): a small hand-written
 * filter loaded beside the policy.
 *
 * Inside the sandbox exactly one uid and one gid are mapped. Asking the
 * kernel for any other id (setuid(0), chown(f, 0, -1)...) fails with
 * EINVAL there, "no such id in this namespace", where an ordinary
 * unprivileged process gets EPERM. Programs and their test suites
 * (CPython's test_os and test_subprocess among them) check for EPERM
 * and take EINVAL for a bug. This filter answers those calls with
 * EPERM before the kernel sees an unmapped id.
 *
 * Why it is safe: it only turns calls that would fail anyway into the
 * same failure with another errno; calls naming our own id or -1 ("leave
 * unchanged") pass to the kernel untouched. It adds no permission. Ids
 * are compared on their low 32 bits, as the kernel reads uid_t and
 * gid_t. Only the native architecture is looked at: the main filter
 * refuses every foreign one. Hand-written BPF because libseccomp allows
 * one comparison per argument in a rule, and "neither ours nor -1" is
 * two. */
#include "config.h"

#include <errno.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"

enum id_kind { ID_UID, ID_GID };
struct id_arg { unsigned char arg; unsigned char kind; };
struct id_call { int nr; unsigned char n; struct id_arg args[3]; };

static const struct id_call id_calls[] = {
        { SYS_setuid, 1, { { 0, ID_UID } } },
        { SYS_setgid, 1, { { 0, ID_GID } } },
        { SYS_setreuid, 2, { { 0, ID_UID }, { 1, ID_UID } } },
        { SYS_setregid, 2, { { 0, ID_GID }, { 1, ID_GID } } },
        { SYS_setresuid, 3, { { 0, ID_UID }, { 1, ID_UID }, { 2, ID_UID } } },
        { SYS_setresgid, 3, { { 0, ID_GID }, { 1, ID_GID }, { 2, ID_GID } } },
#ifdef SYS_chown
        { SYS_chown, 2, { { 1, ID_UID }, { 2, ID_GID } } },
#endif
#ifdef SYS_lchown
        { SYS_lchown, 2, { { 1, ID_UID }, { 2, ID_GID } } },
#endif
        { SYS_fchown, 2, { { 1, ID_UID }, { 2, ID_GID } } },
        { SYS_fchownat, 2, { { 2, ID_UID }, { 3, ID_GID } } },
};

size_t seccomp_id_shim_numbers(int *out, size_t max)
{
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(id_calls) && n < max; i++)
                out[n++] = id_calls[i].nr;
        return n;
}

int seccomp_id_shim_build(uint32_t uid, uint32_t gid, bool chain, struct sock_filter *insns, size_t max,
                          size_t *ret_n)
{
        size_t n = 0;
#define EMIT(...) do { if (n >= max) return -E2BIG; insns[n++] = (struct sock_filter)__VA_ARGS__; } while (0)
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
        for (size_t i = 0; i < ELEMENTSOF(id_calls); i++) {
                const struct id_call *c = &id_calls[i];
                /* per id: load it; ours or -1 goes on to the next; else EPERM */
                unsigned block = 4u * c->n + 1;
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)c->nr, 0, (unsigned char)block));
                for (unsigned a = 0; a < c->n; a++) {
                        uint32_t own = c->args[a].kind == ID_UID ? uid : gid;
                        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, seccomp_arg_low_offset(c->args[a].arg)));
                        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, own, 2, 0));
                        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UINT32_MAX, 1, 0));
                        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
                }
                EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        }
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef EMIT
        if (chain) {
                /* "allow" becomes "go on to the next program": drop the
                 * last allow (the jumps to it now land on the next
                 * program's first instruction) and turn every other one
                 * into a jump there. Jumps only go forward, as classic
                 * BPF requires, and the next program loads what it
                 * tests itself, so nothing of ours leaks into it. */
                n--;
                for (size_t i = 0; i < n; i++)
                        if (insns[i].code == (BPF_RET | BPF_K) && insns[i].k == SECCOMP_RET_ALLOW)
                                insns[i] = (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, (uint32_t)(n - i - 1));
        }
        *ret_n = n;
        return 0;
}

int seccomp_id_shim_load(uint32_t uid, uint32_t gid)
{
        struct sock_filter insns[ID_SHIM_MAX_INSNS];
        size_t n;
        int r = seccomp_id_shim_build(uid, gid, false, insns, ELEMENTSOF(insns), &n);
        if (r < 0)
                return r;
        struct sock_fprog prog = { .len = (unsigned short)n, .filter = insns };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return -errno;
        return 0;
}
