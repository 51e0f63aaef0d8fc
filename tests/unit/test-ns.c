/* test-ns.c - unit tests for the network namespace the sandbox has a
 * helper build beside its root (ns_netns_begin(), ns_netns_join()).
 *
 * Each check runs in a forked child that first enters a user namespace
 * of its own, as the sandbox is when it builds: the helper's namespace
 * must be a new one, owned by that user namespace (so the sandbox, not
 * the host, administers it), with lo up, and the caller must be in it
 * once join returned. Skipped where unprivileged user namespaces are off.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/nsfs.h>
#include <cmocka.h>

#include "sandbox/ns.h"
#include "lib/util.h"
#include "tap-skip.h"

/* exit codes of the child: which check failed */
enum { OK, NO_USERNS = 40, BEGIN_FAILED, JOIN_FAILED, SAME_NETNS, NOT_OURS, LO_DOWN, STILL_THERE };

static ino_t ino_of(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 ? st.st_ino : 0;
}

static int build_and_join(void)
{
        if (unshare(CLONE_NEWUSER) < 0)
                return NO_USERNS;
        ino_t before = ino_of("/proc/self/ns/net");
        struct netns_build b;
        if (ns_netns_begin(&b) < 0)
                return BEGIN_FAILED;
        pid_t helper = b.pid;
        if (ns_netns_join(&b) < 0)
                return JOIN_FAILED;
        if (ino_of("/proc/self/ns/net") == before)
                return SAME_NETNS;
        /* owned by our user namespace: its owner is the namespace we are in */
        int net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        int owner = net < 0 ? -1 : ioctl(net, NS_GET_USERNS);
        struct stat a, u;
        if (owner < 0 || fstat(owner, &a) < 0 || stat("/proc/self/ns/user", &u) < 0 || a.st_ino != u.st_ino)
                return NOT_OURS;
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr = { 0 };
        strcpy(ifr.ifr_name, "lo");
        if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 || !(ifr.ifr_flags & IFF_UP))
                return LO_DOWN;
        /* the helper was reaped: nothing of it is left */
        if (kill(helper, 0) == 0 || errno != ESRCH)
                return STILL_THERE;
        return OK;
}

static void netns_built_beside(void **state)
{
        (void)state;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(build_and_join());
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == NO_USERNS)
                tap_skip("unprivileged user namespaces are off here");
        assert_int_equal(WEXITSTATUS(status), OK);
}

/* Without the privilege to make one (no user namespace of our own, and
 * not root: root's child becomes nobody first), the helper's failure
 * comes back from join, with what failed. */
static void netns_failure_is_reported(void **state)
{
        (void)state;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
                        _exit(BEGIN_FAILED);
                struct netns_build b;
                if (ns_netns_begin(&b) < 0)
                        _exit(BEGIN_FAILED);
                int r = ns_netns_join(&b);
                _exit(r == -EPERM && streq(b.step, "network namespace") ? OK : JOIN_FAILED);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), OK);
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(netns_built_beside),
                cmocka_unit_test(netns_failure_is_reported),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
