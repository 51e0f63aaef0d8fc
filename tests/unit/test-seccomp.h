/* test-seccomp.h - what the seccomp unit tests share: checks made in a
 * forked child, which report the first failure on stderr and exit 1.
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
