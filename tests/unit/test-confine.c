/* test-confine.c - unit tests for the egress helper's confinement
 * (net/confine.c): the allow-list names what the helper uses and none
 * of what it must not do, and a process confined by egress_confine()
 * still relays (sockets, pipes, reading /proc) but is refused execve,
 * unix and packet sockets, writing files, ptrace, signals to others,
 * new namespaces, uid changes and executable memory. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/util.h"
#include "net/confine.h"

static void allow_list(void **state)
{
        static const char *const needed[] = { "poll", "accept4", "connect", "socket", "splice", "read",
                                              "write", "sendmsg", "recvmsg", "close", "getsockopt",
                                              "setsockopt", "openat", "readlink", "pipe2" };
        static const char *const never[] = { "execve", "execveat", "ptrace", "kill", "unshare", "setns",
                                             "mount", "setuid", "setresuid", "setfsuid", "prctl",
                                             "seccomp", "bpf", "io_uring_setup", "process_vm_readv",
                                             "memfd_create", "unlink", "unlinkat", "rename", "chmod",
                                             "fork", "clone", "clone3", "vfork", "init_module" };
        for (size_t i = 0; i < ELEMENTSOF(needed); i++)
                if (!egress_confine_allows(needed[i]))
                        fail_msg("the helper needs %s", needed[i]);
        for (size_t i = 0; i < ELEMENTSOF(never); i++)
                if (egress_confine_allows(never[i]))
                        fail_msg("%s is on the allow-list", never[i]);
}

static int failures;

static void expect(bool ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "# confined: %s (errno %d)\n", what, errno);
                failures++;
        }
}

static bool refused(long r)
{
        return r < 0 && errno == EPERM;
}

/* In the confined child: what the helper does works, the rest is refused. */
static void confined_checks(void)
{
        int sv[2], p[2];
        char buf[4096];

        /* still works */
        int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        expect(s >= 0, "an AF_INET socket is allowed");
        if (s >= 0)
                close(s);
        expect(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0, "pipe2 is allowed");
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        expect(fd >= 0, "reading /proc/self/status is allowed");
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        buf[n > 0 ? n : 0] = '\0';
        expect(strstr(buf, "\nNoNewPrivs:\t1\n") != NULL, "NoNewPrivs is 1");
        expect(strstr(buf, "\nSeccomp:\t2\n") != NULL, "Seccomp is 2 (filter)");
        expect(strstr(buf, "\nCapEff:\t0000000000000000\n") != NULL, "no effective capability");
        expect(strstr(buf, "\nCapPrm:\t0000000000000000\n") != NULL, "no permitted capability");
        if (getuid() == 0)
                expect(strstr(buf, "\nCapBnd:\t0000000000000000\n") != NULL, "an empty bounding set");

        /* refused */
        expect(refused(socket(AF_UNIX, SOCK_STREAM, 0)), "an AF_UNIX socket");
        expect(refused(socketpair(AF_UNIX, SOCK_STREAM, 0, sv)), "socketpair");
        expect(refused(socket(AF_PACKET, SOCK_RAW, 0)), "an AF_PACKET socket");
        expect(refused(socket(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */)), "an audit netlink socket");
        expect(refused(open("/tmp/hutch-confine-test", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), "creating a file");
        expect(refused(open("/proc/self/status", O_RDWR | O_CLOEXEC)), "opening for writing");
        expect(refused(syscall(SYS_execve, "/bin/true", (char *[]){ "true", NULL }, (char *[]){ NULL })), "execve");
        expect(refused(ptrace(PTRACE_TRACEME, 0, NULL, NULL)), "ptrace");
        expect(refused(kill(getppid(), 0)), "a signal to another process");
        expect(refused(unshare(CLONE_NEWUSER)), "unshare");
        expect(refused(syscall(SYS_setresuid, 0, 0, 0)), "setresuid");
        expect(refused(syscall(SYS_setfsuid, 0)), "setfsuid");
        expect(refused(syscall(SYS_fork)), "fork");
        expect(mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED &&
               errno == EPERM, "executable memory");
        expect(refused(fcntl(p[0], F_SETOWN, getppid())), "F_SETOWN");
        expect(refused(ioctl(p[0], TIOCSTI, "x")), "TIOCSTI");
        int avail = -1;
        expect(ioctl(p[0], FIONREAD, &avail) == 0 && avail == 0, "FIONREAD is allowed");
}

static void filter_in_a_child(void **state)
{
        pid_t fake_init = -1;
        if (getuid() == 0) {
                /* as root the helper takes the sandbox's ids from its init */
                fake_init = fork();
                assert_true(fake_init >= 0);
                if (fake_init == 0) {
                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                                _exit(1);
                        pause();
                        _exit(0);
                }
                /* wait until it is uid 65534 */
                for (int i = 0; i < 500; i++) {
                        char path[64];
                        _cleanup_free_ char *text = NULL;
                        snprintf(path, sizeof(path), "/proc/%d/status", (int)fake_init);
                        if (read_file(path, &text, NULL) == 0 && strstr(text, "\nUid:\t65534\t"))
                                break;
                        usleep(10000);
                }
        }
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int r = egress_confine(fake_init > 0 ? fake_init : getpid());
                if (r < 0) {
                        fprintf(stderr, "# egress_confine: %s\n", strerror(-r));
                        _exit(100);
                }
                confined_checks();
                _exit(failures);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (fake_init > 0) {
                kill(fake_init, SIGKILL);
                waitpid(fake_init, NULL, 0);
        }
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(allow_list),
                cmocka_unit_test(filter_in_a_child),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
