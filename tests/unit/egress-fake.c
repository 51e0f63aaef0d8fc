/* egress-fake.c - see egress-fake.h. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "egress-fake.h"

void egress_fake(struct egress *e, int *w)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(0);
        *e = (struct egress) { .pid = pid, .ctl_fd = sv[0] };
        *w = sv[1];
}
