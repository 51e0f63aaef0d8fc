/* refuse-userns.c - run a command the way a container's default seccomp
 * profile would: refuse to create namespaces, then exec argv.
 *
 * Usage: refuse-userns COMMAND [ARG...]
 *
 * What Docker's default profile (and containerd's and Podman's, which
 * follow it) does to a process without CAP_SYS_ADMIN:
 *   - clone3 answers ENOSYS: seccomp cannot read the flags clone3 takes
 *     in memory, so the profile makes libc fall back to clone;
 *   - clone answers EPERM when its flags hold any CLONE_NEW* bit
 *     (the profile allows it only when flags & 0x7E020000 == 0);
 *   - unshare and setns answer EPERM (they are not in its allow list).
 * Everything else is allowed, as it is in a container. The filter is
 * inherited across fork and exec, as the runtime's is. no_new_privs is
 * set, as the runtime does for its own filter.
 *
 * Exits 125 if the filter cannot be installed, 127 if exec fails. */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        static const unsigned long ns_flags[] = {
                CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
        };
        if (argc < 2) {
                fprintf(stderr, "usage: refuse-userns COMMAND [ARG...]\n");
                return 125;
        }
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r = ctx ? 0 : -ENOMEM;
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        for (size_t i = 0; r == 0 && i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0);
        if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                r = -errno;
        if (r == 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        if (r < 0) {
                fprintf(stderr, "refuse-userns: installing the filter: %s\n", strerror(-r));
                return 125;
        }
        execvp(argv[1], argv + 1);
        fprintf(stderr, "refuse-userns: %s: %s\n", argv[1], strerror(errno));
        return 127;
}
