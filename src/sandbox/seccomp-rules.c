/* seccomp-rules.c - the rules of the job's two filters (see seccomp.h):
 * a new filter for the native architecture, the name filter's rules (one
 * per syscall in the set seccomp.c built, plus clone3 and the syscalls
 * newer than libseccomp) and the argument filter's rules.
 *
 * Safety arguments. Every deny rule that comes from a name is argued in
 * seccomp.ini next to the name. The rules that cannot be written as names
 * are here, each with its argument next to the code that adds it:
 * CLONE_NEW* flags, clone3, TIOCSTI/TIOCLINUX/TIOCSETD/TIOCCONS, personality, syscalls
 * newer than libseccomp, and foreign architectures.
 */
#include "config.h"

#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/personality.h>

#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* How many syscall numbers past the last one libseccomp can name get
 * ENOSYS. The kernel adds 10-15 a year; 64 covers several years of
 * kernels newer than the libseccomp hutch was built with. */
#define FUTURE_SYSCALLS 64

/* New syscalls share one numbering on all current architectures from
 * 424 (pidfd_send_signal) on; the future range is searched from there. */
#define UNIFIED_SYSCALL_BASE 424

/* A filter for the native architecture only. Every syscall made under
 * another architecture's convention takes `deny`: on x86_64 that is an
 * i386 `int 0x80` (audit arch I386, checked by the arch test at the top
 * of the filter) and an x32 call (arch X86_64 with nr >= 0x40000000,
 * which libseccomp sends to the bad-arch action when, as here, x32 is
 * not among the filter's architectures). Without this an i386 or x32
 * call would reach syscalls by numbers the native rules never mention.
 * The arch list is the native one only: we never seccomp_arch_add(). */
scmp_filter_ctx seccomp_filter_new(uint32_t default_action, uint32_t deny)
{
        scmp_filter_ctx ctx = seccomp_init(default_action);
        if (!ctx)
                return NULL;
        if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny) < 0 ||
            seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) < 0) {
                seccomp_release(ctx);
                return NULL;
        }
        /* Optional niceties: a binary tree of syscall numbers (faster
         * for long lists) and real kernel errnos from seccomp_load().
         * Older kernels or libseccomps without them are fine. */
        (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        (void)seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
        return ctx;
}

/* Add one rule; a rule whose action equals the filter's default is
 * redundant (libseccomp refuses it with EACCES) and is skipped. */
static int rule(struct builder *b, uint32_t action, int nr, unsigned n_args,
                const struct scmp_arg_cmp *args)
{
        int r;

        if (action == b->default_action)
                return 0;
        r = seccomp_rule_add_array(b->ctx, action, nr, n_args, args);
        if (r < 0)
                return r;
        b->rules++;
        return 0;
}

/* The CLONE_NEW* flags that clone() can carry. CLONE_NEWTIME (0x80)
 * sits in clone()'s exit-signal byte and is only meaningful to unshare()
 * and clone3(); it is listed separately for unshare. */
static const uint64_t clone_new_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/* The argument filter: default allow, and deny only on arguments. */
int seccomp_build_args_filter(struct builder *b, const struct seccomp_settings *s, uint32_t deny,
                              struct personality_rule *ret_personality)
{
        *ret_personality = (struct personality_rule) { .on = false };
        struct scmp_arg_cmp cmp;
        int r;

        if (!s->allow_namespaces) {
                /* Nested namespaces. A new user namespace hands its
                 * creator a full capability set over fresh namespaces,
                 * which re-opens every kernel path (mount, netfilter,
                 * overlayfs...) that capabilities were dropped to close;
                 * the other CLONE_NEW* need a user namespace anyway but
                 * are denied the same way for one clear rule. A job that
                 * only uses clone() for threads and fork never sets
                 * these bits. One rule per bit: libseccomp ORs rules and
                 * allows only one comparison per argument in a rule.
                 * clone's flags are a full unsigned long, compared as
                 * 64-bit masks: no upper-bit trick can hide a set bit. */
                for (size_t i = 0; i < ELEMENTSOF(clone_new_flags); i++) {
                        cmp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, clone_new_flags[i], clone_new_flags[i]);
                        r = rule(b, deny, SCMP_SYS(clone), 1, &cmp);
                        if (r < 0)
                                return r;
                }
                /* unshare: same flags plus CLONE_NEWTIME. unshare without
                 * them (CLONE_FILES, CLONE_FS, CLONE_SYSVSEM) only
                 * unshares the caller's own state and stays allowed. */
                for (size_t i = 0; i <= ELEMENTSOF(clone_new_flags); i++) {
                        uint64_t flag = i < ELEMENTSOF(clone_new_flags) ? clone_new_flags[i] : CLONE_NEWTIME;
                        cmp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag);
                        r = rule(b, deny, SCMP_SYS(unshare), 1, &cmp);
                        if (r < 0)
                                return r;
                }
        }

        /* Terminal injection. TIOCSTI pushes bytes into a terminal's
         * input queue: a job sharing the user's tty (hutch run -t, or an
         * inherited one) could type commands into the shell that runs
         * after it exits. TIOCLINUX can do the same on a virtual console
         * (selection paste) and read its screen. The kernel takes the
         * request as unsigned int, so only the low 32 bits are compared:
         * a request of 0x100005412 is TIOCSTI to the kernel and must be
         * denied too (a plain 64-bit == would let it through). */
        cmp = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI);
        r = rule(b, deny, SCMP_SYS(ioctl), 1, &cmp);
        if (r < 0)
                return r;
        cmp = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX);
        r = rule(b, deny, SCMP_SYS(ioctl), 1, &cmp);
        if (r < 0)
                return r;
        /* Line disciplines. TIOCSETD swaps the code that interprets a
         * terminal's bytes: N_NULL on a terminal the job shares leaves
         * the shell deaf after the run, and asking for a discipline that
         * is not loaded makes the kernel autoload its module (tty-ldisc-N,
         * where dev.tty.ldisc_autoload allows), kernel code chosen by the
         * job. A job's own pty needs only N_TTY, which it has from the
         * start. TIOCCONS redirects the console's output to the job's
         * terminal; the kernel asks CAP_SYS_ADMIN of the host for it, and
         * nothing in a job needs it: denied here too, so the filter does
         * not depend on that check. Both compared on the low 32 bits as
         * above. */
        static const unsigned long tty_requests[] = { TIOCSETD, TIOCCONS };
        for (size_t i = 0; i < ELEMENTSOF(tty_requests); i++) {
                cmp = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, tty_requests[i]);
                r = rule(b, deny, SCMP_SYS(ioctl), 1, &cmp);
                if (r < 0)
                        return r;
        }

        /* Personality. Only the default persona (PER_LINUX, 0) and the
         * query (0xffffffff) are allowed. Other personas and flags turn
         * off ASLR (ADDR_NO_RANDOMIZE), make readable memory executable
         * (READ_IMPLIES_EXEC), map page zero (MMAP_PAGE_ZERO: NULL-
         * dereference exploits) or switch to emulated ABIs. The kernel
         * takes an unsigned int, so only the low 32 bits count.
         * "Neither all zeros nor all ones" is not one libseccomp rule (one
         * comparison per argument): said bit by bit it took 62 masked
         * comparisons, over 200 instructions, most of the filter, and
         * the kernel's cost of attaching a filter grows with its length
         * (0.1 ms per run). So it is a test of three comparisons in
         * front of the filter, seccomp_personality_prefix(), which
         * answers exactly those calls; the report counts the 62 rules it
         * stands for.
         *
         * allow_ptrace also lets ADDR_NO_RANDOMIZE alone (0x0040000)
         * through: debuggers (gdb, setarch -R) turn ASLR off for the
         * program they start, and a user who allowed tracing asked for
         * them. It weakens only the job's own processes, which can gain
         * no privilege by exec (no_new_privs; the kernel also clears the
         * flag on a set-id exec). Any other bit beside it is still
         * denied. */
        if (deny != b->default_action) {
                *ret_personality = (struct personality_rule) {
                        .on = true, .aslr_off_ok = s->allow_ptrace, .action = deny,
                };
                b->rules += s->allow_ptrace ? 61 : 62;
        }
        return 0;
}

/* First native syscall number past everything libseccomp can name, or
 * -1 when the architecture does not use the unified numbering. */
static int first_future_syscall(void)
{
        uint32_t arch = seccomp_arch_native();
        int nr = UNIFIED_SYSCALL_BASE;
        char *name;

        name = seccomp_syscall_resolve_num_arch(arch, nr);
        if (!name)
                return -1;
        do {
                free(name);
                name = seccomp_syscall_resolve_num_arch(arch, ++nr);
        } while (name);
        return nr;
}

/* The future range as a test in front of the name filter: 64 numbers as
 * libseccomp rules were 140 of the filter's 170 instructions, and the
 * kernel's cost of attaching a filter grows with its length. The test
 * answers exactly the calls those rules did (native arch, number in
 * the range) and lets every other call through to the filter untouched:
 * it loads the arch and number itself and jumps only forward, to the
 * filter's first instruction, which starts from scratch. */
void seccomp_future_prefix(const struct future_range *f, struct sock_filter *insns, size_t *ret_n)
{
        if (f->n <= 0) {
                *ret_n = 0;
                return;
        }
        size_t n = 0;
        insns[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        insns[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, 4);
        insns[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        insns[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)f->first, 0, 2);
        insns[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)(f->first + f->n), 1, 0);
        insns[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, f->action);
        *ret_n = n;
}

/* The personality rule as a test in front of the argument filter. Like
 * the future range's test it loads what it compares itself, answers
 * only the native arch's personality() with a denied persona, and jumps
 * only forward, to the filter's first instruction, for everything else.
 * The persona is compared on the low 32 bits of the argument, as the
 * kernel reads it. */
void seccomp_personality_prefix(const struct personality_rule *p, struct sock_filter *insns, size_t *ret_n)
{
        if (!p->on) {
                *ret_n = 0;
                return;
        }
        uint32_t low = seccomp_arg_low_offset(0);
        /* the allowed personas, then the deny; each jump lands past it */
        uint32_t ok[3] = { 0, UINT32_MAX, ADDR_NO_RANDOMIZE };
        size_t n_ok = p->aslr_off_ok ? 3 : 2;
        size_t n = 0, total = 4 + n_ok + 2;
#define TO_END(at) ((unsigned char)(total - (at) - 1))
        insns[n] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        n++;
        insns[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, TO_END(n));
        n++;
        insns[n] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        n++;
        insns[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)SCMP_SYS(personality), 0,
                                                TO_END(n));
        n++;
        insns[n] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, low);
        n++;
        for (size_t i = 0; i < n_ok; i++, n++)
                insns[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ok[i], TO_END(n), 0);
        insns[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, p->action);
#undef TO_END
        *ret_n = n;
}

int seccomp_build_names_filter(struct builder *b, const struct seccomp_settings *s,
                               const struct sysset *base, uint32_t deny, uint32_t enosys,
                               struct future_range *ret_future)
{
        int clone3_nr = SCMP_SYS(clone3);
        int future;
        int r;

        for (size_t i = 0; i < base->n; i++) {
                for (int bit = 0; bit < 64; bit++) {
                        int nr = (int)(i * 64 + bit);
                        if (!seccomp_sysset_has(base, nr))
                                continue;
                        if (s->allow_list_mode && nr == clone3_nr && !s->allow_namespaces)
                                continue;       /* answered below */
                        /* Deny-list: `deny` for each listed syscall, the
                         * reason is in seccomp.ini. Allow-list: the
                         * listed syscall is allowed, reason likewise. */
                        r = rule(b, s->allow_list_mode ? SCMP_ACT_ALLOW : deny, nr, 0, NULL);
                        if (r < 0)
                                return r;
                }
        }

        /* clone3 passes its flags in a struct in memory, which seccomp
         * cannot read, so CLONE_NEW* cannot be filtered there. ENOSYS
         * (not EPERM) is what makes glibc and musl fall back to clone(),
         * where the argument filter sees the flags. This holds under the
         * kill action too: killing every thread start would be absurd.
         * Skipped when the user denied clone3 by name (deny-list) or when
         * namespaces are allowed. */
        if (!s->allow_namespaces && !(!s->allow_list_mode && seccomp_sysset_has(base, clone3_nr))) {
                r = rule(b, enosys, clone3_nr, 0, NULL);
                if (r < 0)
                        return r;
        }

        /* Syscalls newer than this libseccomp. A deny-list can only name
         * what it knows; a new kernel's new syscalls (another mount API
         * call, say) would otherwise be allowed by default. ENOSYS is
         * what the job would see on an older kernel, so libc falls back
         * to the old calls. */
        future = first_future_syscall();
        *ret_future = (struct future_range) { .first = future, .n = 0, .action = enosys };
        bool listed = false;
        for (int nr = future; future >= 0 && nr < future + FUTURE_SYSCALLS; nr++)
                listed = listed || seccomp_sysset_has(base, nr);
        if (future >= 0 && !listed && enosys != b->default_action) {
                /* one range test (seccomp_future_prefix()); the report
                 * counts the rules it stands for, as before */
                ret_future->n = FUTURE_SYSCALLS;
                b->rules += FUTURE_SYSCALLS;
                return 0;
        }
        /* a listed number in the range (never by name: libseccomp does
         * not know them) keeps the rules one by one */
        for (int nr = future; future >= 0 && nr < future + FUTURE_SYSCALLS; nr++) {
                if (seccomp_sysset_has(base, nr))
                        continue;
                r = rule(b, enosys, nr, 0, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}
