/* seccomp-fast.c - the test at the head of the job's argument program
 * that allows, at once, the syscalls nothing behind it looks at (see
 * seccomp-internal.h).
 *
 * Why: attaching a program makes the kernel run it once for every
 * syscall number of the native and the compat arch, to cache the
 * numbers it always allows: about 1 us per instruction on an ordinary
 * number's path, summed over the attach (the rest is about 0.13 us per
 * instruction to convert and compile the program). Behind the id shim,
 * the personality test and libseccomp's argument rules, an ordinary call
 * walked about 28 instructions before it was allowed; through this test
 * it walks about 10, and the job's two programs attach in 98 us instead
 * of 112.
 *
 * Why it is safe: the test allows only native-arch numbers below
 * FAST_NR_LIMIT for which the program behind it, run on that number with
 * the arguments unknown, reaches "allow" without reading an argument
 * (found by running it, as the kernel finds its cache), and that are not
 * `special` (the id shim's calls: the shim is put in behind the test
 * when the job loads it). Every other call, every foreign arch and every
 * number at or above the limit fall through to the whole program,
 * unchanged. So every call gets the answer the program alone gives it,
 * and tests/unit/test-seccomp-shim.c checks that for every number. */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"

/* Above every native syscall number of the architectures hutch builds
 * for (x86_64 ends below 470); higher numbers take the whole program. */
#define FAST_NR_LIMIT 1024u
/* More runs of plain and looked-at numbers than this (a profile with
 * argument rules on many calls): no test, the program as it is. */
#define FAST_MAX_RUNS 64u

/* Does prog allow nr outright: reach "allow" without reading anything
 * but the number and the arch? Anything it cannot tell is "no". */
static bool allows_outright(const struct sock_filter *prog, size_t n, uint32_t arch, uint32_t nr)
{
        uint32_t a = 0;

        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *f = &prog[pc];
                switch (f->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        if (f->k == offsetof(struct seccomp_data, nr))
                                a = nr;
                        else if (f->k == offsetof(struct seccomp_data, arch))
                                a = arch;
                        else
                                return false;   /* an argument, or the instruction pointer */
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        a &= f->k;
                        break;
                case BPF_JMP | BPF_JA:
                        if (f->k >= n - pc)
                                return false;
                        pc += f->k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += a == f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += a > f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += a >= f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (a & f->k) ? f->jt : f->jf;
                        break;
                case BPF_RET | BPF_K:
                        return f->k == SECCOMP_RET_ALLOW;
                default:
                        return false;
                }
        }
        return false;
}

/* Runs of numbers alike, as a binary search on their first numbers:
 * each leaf allows (a plain run) or jumps past the test (end is the
 * index of the first instruction after it). */
static size_t tree_size(size_t lo, size_t hi)
{
        return 2 * (hi - lo + 1) - 1;
}

static void emit_tree(const uint32_t *first, const bool *plain, size_t lo, size_t hi, struct sock_filter *out,
                      size_t *pc, size_t end)
{
        if (lo == hi) {
                out[*pc] = plain[lo] ? (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
                                     : (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, (uint32_t)(end - *pc - 1));
                (*pc)++;
                return;
        }
        size_t mid = (lo + hi + 1) / 2;
        out[(*pc)++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, first[mid],
                                                    (unsigned char)tree_size(lo, mid - 1), 0);
        emit_tree(first, plain, lo, mid - 1, out, pc, end);
        emit_tree(first, plain, mid, hi, out, pc, end);
}

int seccomp_fast_prefix(const struct sock_filter *prog, size_t n, const int *special, size_t n_special,
                        struct sock_filter *out, size_t max, size_t *ret_n)
{
        uint32_t first[FAST_MAX_RUNS];
        bool plain[FAST_MAX_RUNS];
        size_t runs = 0;
        uint32_t arch = seccomp_arch_native();

        *ret_n = 0;
        for (uint32_t nr = 0; nr < FAST_NR_LIMIT; nr++) {
                bool p = allows_outright(prog, n, arch, nr);
                for (size_t i = 0; p && i < n_special; i++)
                        p = special[i] < 0 || (uint32_t)special[i] != nr;
                if (runs && plain[runs - 1] == p)
                        continue;
                if (runs == FAST_MAX_RUNS)
                        return 0;       /* too scattered to pay: no test */
                first[runs] = nr;
                plain[runs++] = p;
        }
        if (runs < 2 && !plain[0])
                return 0;               /* nothing to allow early */
        size_t total = 4 + tree_size(0, runs - 1);
        if (total > max)
                return -E2BIG;
        /* jumps of 8 bits: the test is short (tree_size() of 64 runs) */
        size_t pc = 0;
        out[pc++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        out[pc++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, (unsigned char)(total - 2));
        out[pc++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        out[pc++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, FAST_NR_LIMIT,
                                                 (unsigned char)(total - 4), 0);
        emit_tree(first, plain, 0, runs - 1, out, &pc, total);
        *ret_n = pc;
        return 0;
}
