/* test-seccomp.h - what the seccomp unit tests share: checks made in a
 * forked child, which report the first failure on stderr and exit 1,
 * and an interpreter to run the filters' classic BPF without attaching
 * them.
 */
#pragma once

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>

#define CHECK(cond)                                                                      \
        do {                                                                             \
                if (!(cond)) {                                                           \
                        fprintf(stderr, "# child check failed, line %d: %s (errno %d %s)\n", \
                                __LINE__, #cond, errno, strerror(errno));                \
                        _exit(1);                                                        \
                }                                                                        \
        } while (0)
#define CHECK_ERRNO(expr, e) \
        do { errno = 0; long _r = (expr); CHECK(_r == -1 && errno == (e)); } while (0)
#define CHECK_OK(expr) \
        do { errno = 0; long _r = (expr); CHECK(_r >= 0); } while (0)

static inline void assert_exited_ok(int status)
{
        if (WIFSIGNALED(status))
                fail_msg("child killed by signal %d", WTERMSIG(status));
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* A classic BPF interpreter for what libseccomp and the shim emit, to
 * compare programs on the same input without attaching them. */
static inline uint32_t bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
        uint32_t a = 0;
        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *i = &f[pc];
                switch (i->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        assert_true(i->k + 4 <= sizeof(*d) && i->k % 4 == 0);
                        memcpy(&a, (const char *)d + i->k, 4);
                        break;
                case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
                case BPF_JMP | BPF_JA: pc += i->k; break;
                case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
                case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
                case BPF_RET | BPF_K: return i->k;
                default: fail_msg("opcode 0x%x at %zu not interpreted", i->code, pc);
                }
        }
        fail_msg("ran off the end");
        return 0;
}
