/* test-watchdog.c - the watchdog finds a real process tree and measures
 * its memory and cpu time. */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <cmocka.h>

#include "lib/util.h"
#include "limits/watchdog.h"

/* A child that forks `n` grandchildren, each touching `mib` MiB, then
 * signals readiness on `ready_fd` and sleeps. */
static pid_t spawn_tree(int n, size_t mib, int ready_fd)
{
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        /* own process group, so the test can kill the whole tree */
        setpgid(0, 0);
        for (int i = 0; i < n; i++) {
                if (fork() == 0) {
                        /* volatile: the compiler must not drop an unused buffer */
                        volatile char *p = malloc(mib << 20);
                        for (size_t off = 0; off < (mib << 20); off += 4096)
                                p[off] = 1;
                        (void)!write(ready_fd, "x", 1);
                        pause();
                        _exit(0);
                }
        }
        pause();
        _exit(0);
}

static void counts_processes_and_memory(void **state)
{
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t root = spawn_tree(3, 40, fds[1]);
        char buf[3];
        ssize_t n = read_full(fds[0], buf, 3);

        struct tree_sample s = { 0 };
        int r = watchdog_sample(root, &s);
        /* kill the tree before any assertion can leave it behind */
        kill(-root, SIGKILL);
        kill(root, SIGKILL);
        waitpid(root, NULL, 0);
        close(fds[0]);
        close(fds[1]);

        assert_int_equal(n, 3);
        assert_int_equal(r, 0);
        assert_int_equal(s.processes, 4);
        /* 3 x 40 MiB of private anonymous memory, give or take the heap */
        assert_true(s.memory_bytes >= (uint64_t)115 << 20);
        assert_true(s.memory_bytes < (uint64_t)200 << 20);
}

static uint64_t own_cpu_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void counts_cpu_of_reaped_children(void **state)
{
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t root = fork();
        if (root == 0) {
                pid_t burner = fork();
                if (burner == 0) {
                        /* 300 ms of cpu, however busy the machine is */
                        while (own_cpu_ms() < 300)
                                ;
                        _exit(0);
                }
                waitpid(burner, NULL, 0);       /* its cpu moves to our cutime */
                (void)!write(fds[1], "x", 1);
                pause();
                _exit(0);
        }
        char c;
        ssize_t n = read_full(fds[0], &c, 1);
        struct tree_sample s = { 0 };
        int r = watchdog_sample(root, &s);
        kill(root, SIGKILL);
        waitpid(root, NULL, 0);
        close(fds[0]);
        close(fds[1]);

        assert_int_equal(n, 1);
        assert_int_equal(r, 0);
        assert_int_equal(s.processes, 1);
        assert_true(s.cpu_ms >= 250);
}

static void missing_root(void **state)
{
        struct tree_sample s;
        pid_t pid = fork();
        if (pid == 0)
                _exit(0);
        waitpid(pid, NULL, 0);
        assert_int_equal(watchdog_sample(pid, &s), -ENOENT);
}

/* A tree whose fds take long to walk is measured in slices: a tiny
 * budget returns before the round is done, the round goes on from there
 * on the next call, and the finished round equals a one-go sample
 * (each memfd counted once, whatever the slicing). */
static void resumes_in_slices(void **state)
{
        enum { N = 3000 };
        int fds[2];
        char c;

        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        if (pid == 0) {
                for (int i = 0; i < N; i++) {
                        int fd = (int)syscall(SYS_memfd_create, "wd-test", 0U);
                        if (fd < 0 || write(fd, "0123456789abcdef", 16) != 16)
                                _exit(1);
                }
                (void)!write(fds[1], "x", 1);
                pause();
                _exit(0);
        }
        assert_int_equal(read(fds[0], &c, 1), 1);

        struct tree_sample whole = { 0 }, part = { 0 };
        struct watchdog *w = NULL;
        int r0 = watchdog_sample(pid, &whole), r, partial = 0, calls = 0;
        assert_int_equal(watchdog_new(pid, &w), 0);
        while ((r = watchdog_step(w, 1, &part)) == 0 && calls < 100000) {
                partial++;
                calls++;
                assert_true(part.memory_bytes <= whole.memory_bytes + 4096);
        }
        w = watchdog_free(w);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(fds[0]);
        close(fds[1]);

        assert_int_equal(r0, 0);
        assert_int_equal(r, 1);
        assert_true(partial > 0);
        /* N memfds of one page each, beside the process's own memory */
        assert_true(whole.memory_bytes >= (uint64_t)N * 4096);
        assert_true(part.memory_bytes >= (uint64_t)N * 4096);
        assert_int_equal(part.processes, 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(counts_processes_and_memory),
                cmocka_unit_test(counts_cpu_of_reaped_children),
                cmocka_unit_test(missing_root),
                cmocka_unit_test(resumes_in_slices),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
