/* test-seccomp.c - unit tests for the syscall policy (src/sandbox/seccomp.c).
 *
 * Two kinds of test. Building: policies from settings and from broken
 * groups files, checking results, reports and error messages. Behaviour:
 * a forked child sets no_new_privs, loads a policy and makes real
 * syscalls; it reports the first failed check on stderr and exits 1, or
 * dies by the signal the policy chose. Arguments are picked so that the
 * unfiltered result differs from the filtered one (ENOENT, ENOTTY, OK vs
 * EPERM/ENOSYS) for root; run unprivileged, a few checks (bpf, mount of
 * an existing path) could pass for the kernel's own reasons, which is why
 * the unfiltered results are checked too (check_unfiltered).
 *
 * Needs HUTCH_DATADIR pointing at the source tree's share/ (make check sets it).
 */
#include "config.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"
#include "tap-skip.h"
#include "test-seccomp.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

#define NOPATH "/nonexistent-hutch-test"

/* ---- helpers -------------------------------------------------------- */

static void set_action(struct seccomp_settings *s, const char *action)
{
        free(s->default_action);
        s->default_action = xstrdup(action);
}

/* cmocka catches SIGSEGV and the like and longjmps back into its test
 * loop: in a forked child that would go on running the following tests
 * there, under the child's filter. A child's crash must be its death. */
static void child_default_crash_signals(void)
{
        static const int crash[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS };
        for (size_t i = 0; i < ELEMENTSOF(crash); i++)
                signal(crash[i], SIG_DFL);
}

/* Build s, fork, load it in the child and run fn there (s NULL: no
 * filter at all). Returns the child's wait status. */
static int run_child(const struct seccomp_settings *s, void (*fn)(void))
{
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        _cleanup_free_ char *err = NULL;
        int status;
        pid_t pid;

        _cleanup_free_ void *blob = NULL;
        size_t len = 0;

        if (s) {
                assert_int_equal(seccomp_policy_build(s, &p, NULL, &err), 0);
                /* the form hutch run installs: exported BPF, loaded with seccomp(2) */
                assert_int_equal(seccomp_policy_export(p, &blob, &len), 0);
        }
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                child_default_crash_signals();
                if (s && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        _exit(100);
                if (s && seccomp_blob_load(blob, len) < 0)
                        _exit(101);
                fn();
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return status;
}

static int pipe_read_end(void)
{
        int p[2];
        if (pipe(p) < 0)
                return -1;
        close(p[1]);
        return p[0];
}

static long raw_clone3_fork(void)
{
        uint64_t args[8] = { 0 };
        long r;

        args[4] = SIGCHLD;
        r = syscall(SYS_clone3, args, sizeof(args));
        if (r == 0)
                _exit(0);
        if (r > 0)
                waitpid((pid_t)r, NULL, 0);
        return r;
}

static long fork_and_reap(unsigned long flags)
{
        long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0UL);
        if (r == 0)
                _exit(7);
        if (r > 0) {
                int status;
                if (waitpid((pid_t)r, &status, 0) != r || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
                        return -1;
        }
        return r;
}

#if defined(__x86_64__)
static long i386_getpid(void)
{
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
        if (r < 0 && r > -4096) {
                errno = (int)-r;
                return -1;
        }
        return r;
}
#endif

static void *thread_main(void *arg)
{
        return arg;
}

/* ---- building ------------------------------------------------------- */

static void build_default(void **state)
{
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        struct seccomp_settings s;
        struct seccomp_report rep;
        char *err = NULL;

        seccomp_settings_default(&s);
        assert_int_equal(seccomp_policy_build(&s, &p, &rep, &err), 0);
        assert_null(err);
        assert_non_null(p);
        assert_string_equal(rep.policy, "default");
        assert_string_equal(rep.action, "errno");
        assert_string_equal(rep.mode, "deny-list");
        assert_true(rep.syscalls >= 50);        /* the groups in @hutch-deny */
        assert_true(rep.rules > rep.syscalls);  /* plus argument and future rules */
#if defined(__x86_64__)
        assert_string_equal(rep.arch, "x86_64");
#endif
        seccomp_settings_done(&s);
}

static void build_strict(void **state)
{
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        struct seccomp_settings s;
        struct seccomp_report rep;
        char *err = NULL;

        seccomp_settings_strict(&s);
        assert_int_equal(seccomp_policy_build(&s, &p, &rep, &err), 0);
        assert_string_equal(rep.policy, "strict");
        assert_string_equal(rep.mode, "allow-list");
        assert_true(rep.syscalls >= 200);
        seccomp_settings_done(&s);
}

static void build_custom(void **state)
{
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        struct seccomp_settings s = {};
        struct seccomp_report rep;
        char *err = NULL;

        /* Names and groups mixed; the allow list carves out of the deny list. */
        s.default_action = xstrdup("kill");
        s.deny = strv_append(s.deny, "mount");
        s.deny = strv_append(s.deny, "@keyring");
        s.deny = strv_append(s.deny, "@ptrace");
        s.allow = strv_append(s.allow, "kcmp");
        assert_int_equal(seccomp_policy_build(&s, &p, &rep, &err), 0);
        assert_string_equal(rep.policy, "custom");
        assert_string_equal(rep.action, "kill");
        /* mount + 3 keyring + 6 @ptrace - kcmp */
        assert_int_equal(rep.syscalls, 1 + 3 + 6 - 1);
        p = seccomp_policy_free(p);

        /* allow_ptrace lifts the whole @ptrace group. */
        s.allow_ptrace = true;
        assert_int_equal(seccomp_policy_build(&s, &p, &rep, &err), 0);
        assert_int_equal(rep.syscalls, 1 + 3);
        p = seccomp_policy_free(p);

        /* Names of other architectures' syscalls are valid and skipped. */
        strv_free(s.deny);
        s.deny = strv_append(NULL, "vm86");
        s.deny = strv_append(s.deny, "stime");
        assert_int_equal(seccomp_policy_build(&s, &p, &rep, &err), 0);
#if defined(__x86_64__)
        assert_int_equal(rep.syscalls, 0);
#endif
        seccomp_settings_done(&s);
}

static void build_errors(void **state)
{
        struct seccomp_policy *p = NULL;
        struct seccomp_report rep = { .rules = 4242 };
        struct seccomp_settings s;
        char *err = NULL;

        seccomp_settings_default(&s);
        s.deny = strv_append(s.deny, "@nope");
        assert_int_equal(seccomp_policy_build(&s, &p, &rep, &err), -EINVAL);
        assert_string_equal(err, "seccomp: unknown syscall or group \"@nope\"");
        assert_null(p);                         /* ret_ left alone on failure */
        assert_int_equal(rep.rules, 4242);
        free(err);
        err = NULL;
        seccomp_settings_done(&s);

        seccomp_settings_default(&s);
        s.allow = strv_append(s.allow, "mountt");
        assert_int_equal(seccomp_policy_build(&s, &p, NULL, &err), -EINVAL);
        assert_string_equal(err, "seccomp: unknown syscall or group \"mountt\"");
        free(err);
        err = NULL;

        /* "?" marks only group members, never a user's list entry. */
        strv_free(s.allow);
        s.allow = strv_append(NULL, "?mount");
        assert_int_equal(seccomp_policy_build(&s, &p, NULL, &err), -EINVAL);
        free(err);
        err = NULL;
        strv_free(s.allow);
        s.allow = NULL;

        set_action(&s, "deny");
        assert_int_equal(seccomp_policy_build(&s, &p, NULL, &err), -EINVAL);
        assert_string_equal(err, "seccomp: unknown action \"deny\" (use errno, kill or log)");
        free(err);
        err = NULL;

        /* No error string wanted: still fails cleanly. */
        assert_int_equal(seccomp_policy_build(&s, &p, NULL, NULL), -EINVAL);
        assert_null(p);
        assert_int_equal(seccomp_policy_load(NULL), -EINVAL);
        seccomp_settings_done(&s);
}

/* Run a build against a groups file with the given text. */
static int build_with_groups(const char *text, char **ret_error)
{
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        char dir[] = "/tmp/hutch-test-seccomp-XXXXXX";
        _cleanup_free_ char *path = NULL;
        _cleanup_free_ char *saved = NULL;
        struct seccomp_settings s = {};
        const char *old = getenv("HUTCH_DATADIR");
        int r;

        saved = old ? xstrdup(old) : NULL;
        assert_non_null(mkdtemp(dir));
        path = xasprintf("%s/seccomp.ini", dir);
        if (text)
                assert_int_equal(write_file(path, text, 0644), 0);
        setenv("HUTCH_DATADIR", dir, 1);
        s.deny = strv_append(NULL, "@a");
        r = seccomp_policy_build(&s, &p, NULL, ret_error);
        seccomp_settings_done(&s);
        unlink(path);
        rmdir(dir);
        if (saved)
                setenv("HUTCH_DATADIR", saved, 1);
        else
                unsetenv("HUTCH_DATADIR");
        return r;
}

static void groups_file_errors(void **state)
{
        char *err = NULL;

        assert_int_equal(build_with_groups("[@a]\ndescription = x\nmount = m\n", &err), 0);
        assert_null(err);

        assert_int_equal(build_with_groups(NULL, &err), -ENOENT);
        assert_non_null(strstr(err, "seccomp.ini: No such file or directory"));
        free(err);

        assert_int_equal(build_with_groups("[@a]\nmount = m\n[b]\nx = y\n", &err), -EINVAL);
        assert_non_null(strstr(err, "seccomp.ini:4: group names start with @, not \"b\""));
        free(err);

        assert_int_equal(build_with_groups("[@a]\nmount = m\n[@b]\nx = y\n[@a]\numount2 = u\n", &err), -EINVAL);
        assert_non_null(strstr(err, ":6: group @a is defined twice"));
        free(err);

        assert_int_equal(build_with_groups("[@a]\n@b = x\n[@b]\n@a = y\n", &err), -ELOOP);
        assert_non_null(strstr(err, "nests too deep"));
        free(err);

        assert_int_equal(build_with_groups("[@a]\nmoutn = typo\n", &err), -EINVAL);
        assert_non_null(strstr(err, "@a: unknown syscall \"moutn\""));
        free(err);

        assert_int_equal(build_with_groups("[@a]\n@c = nowhere\n", &err), -EINVAL);
        assert_non_null(strstr(err, "@a: unknown group \"@c\""));
        free(err);

        /* An optional member unknown to libseccomp is skipped. */
        assert_int_equal(build_with_groups("[@a]\n?hutch_no_such_call = future\nmount =\n", &err), 0);
}

static void groups_shipped_file(void **state)
{
        _cleanup_free_ char *path = NULL, *text = NULL;
        char *err = NULL;
        size_t len, line = 1, col = 0;
        int r = seccomp_groups_check(&err);

        if (r < 0)
                fail_msg("%s", err);
        assert_true(r >= 20);

        /* inih's line buffer is 200 bytes; a longer line would be split
         * and misread, so keep the shipped file well inside it. */
        path = xasprintf("%s/seccomp.ini", getenv("HUTCH_DATADIR"));
        assert_int_equal(read_file(path, &text, &len), 0);
        for (size_t i = 0; i < len; i++, col++) {
                if (text[i] == '\n') {
                        line++;
                        col = 0;
                        continue;
                }
                if (col >= 190)
                        fail_msg("%s:%zu: line longer than 190 bytes", path, line);
        }
}

static void dump_pseudo_code(void **state)
{
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        _cleanup_free_ char *text = NULL;
        struct seccomp_settings s;
        char path[] = "/tmp/hutch-test-dump-XXXXXX";
        size_t len;
        int fd;

        seccomp_settings_default(&s);
        assert_int_equal(seccomp_policy_build(&s, &p, NULL, NULL), 0);
        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(seccomp_policy_dump(p, fd), 0);
        close(fd);
        assert_int_equal(read_file(path, &text, &len), 0);
        unlink(path);
        assert_non_null(strstr(text, "# filter 1 of 2: by syscall name"));
        assert_non_null(strstr(text, "# filter 2 of 2: by argument"));
        assert_non_null(strstr(text, "\"mount\""));
        assert_non_null(strstr(text, "\"personality\""));
        assert_int_equal(seccomp_policy_dump(NULL, 1), -EINVAL);
        seccomp_settings_done(&s);
}

static uint64_t now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Not a pass/fail benchmark: prints what one `hutch run` pays, and fails
 * only on a gross regression (tens of milliseconds). */
static void build_and_load_time(void **state)
{
        struct seccomp_settings s[2];
        const int rounds = 20;

        seccomp_settings_default(&s[0]);
        seccomp_settings_strict(&s[1]);
        for (int i = 0; i < 2; i++) {
                uint64_t build_us = 0, load_us = 0;

                for (int k = 0; k < rounds; k++) {
                        struct seccomp_policy *p = NULL;
                        uint64_t t0 = now_us(), child_us = 0;
                        int fds[2], status;
                        pid_t pid;

                        assert_int_equal(seccomp_policy_build(&s[i], &p, NULL, NULL), 0);
                        build_us += now_us() - t0;
                        /* Load in a child: a filter cannot be unloaded. */
                        assert_int_equal(pipe(fds), 0);
                        pid = fork();
                        if (pid == 0) {
                                uint64_t t1 = now_us();
                                if (seccomp_policy_load(p) < 0)
                                        _exit(1);
                                t1 = now_us() - t1;
                                _exit(write(fds[1], &t1, sizeof(t1)) == sizeof(t1) ? 0 : 1);
                        }
                        close(fds[1]);
                        assert_int_equal(waitpid(pid, &status, 0), pid);
                        assert_exited_ok(status);
                        assert_int_equal(read(fds[0], &child_us, sizeof(child_us)), sizeof(child_us));
                        close(fds[0]);
                        load_us += child_us;
                        seccomp_policy_free(p);
                }
                printf("# %s policy: build %.3f ms, load %.3f ms (mean of %d)\n", s[i].name,
                       build_us / 1000.0 / rounds, load_us / 1000.0 / rounds, rounds);
                assert_true(build_us / rounds < 50000);
                assert_true(load_us / rounds < 50000);
                seccomp_settings_done(&s[i]);
        }
}

/* ---- behaviour ------------------------------------------------------ */

/* What the checks below see with no filter at all: each of them must
 * differ from the filtered answer, or the behaviour tests prove nothing. */
static void unfiltered_child(void)
{
        int fd = pipe_read_end();

        CHECK(fd >= 0);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, (unsigned long)TIOCSTI, NULL), ENOTTY);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, 0xdead00000000UL | TIOCSTI, NULL), ENOTTY);
        CHECK_OK(raw_clone3_fork());
        CHECK_OK(syscall(SYS_personality, 0xffffffffUL));
}

static void check_unfiltered(void **state)
{
        int status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                unfiltered_child();
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_exited_ok(status);
        if (geteuid() == 0) {
                /* As root these are not EPERM without the filter. */
                errno = 0;
                assert_int_equal(mount("none", NOPATH, "tmpfs", 0, NULL), -1);
                assert_int_equal(errno, ENOENT);
        }
}

static void default_child(void)
{
        int fd = pipe_read_end();
        int p[2];
        char c = 0;
        pthread_t t;

        CHECK(fd >= 0);
        /* Denied by name. */
        CHECK_ERRNO(mount("none", NOPATH, "tmpfs", 0, NULL), EPERM);
        CHECK_ERRNO(umount2(NOPATH, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_keyctl, 0, -3, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_userfaultfd, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_ptrace, 0, 0, NULL, NULL), EPERM);
        CHECK_ERRNO(syscall(SYS_setns, -1, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_open_by_handle_at, -1, NULL, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_io_uring_setup, 0, NULL), EPERM);
        CHECK_ERRNO(syscall(SYS_acct, NOPATH), EPERM);
        /* Namespaces: by argument. */
        CHECK_ERRNO(unshare(CLONE_NEWUSER), EPERM);
        CHECK_ERRNO(unshare(CLONE_NEWNET), EPERM);
        CHECK_ERRNO(fork_and_reap(CLONE_NEWUSER), EPERM);
        CHECK_ERRNO(fork_and_reap(CLONE_NEWNS | CLONE_NEWPID), EPERM);
        CHECK_ERRNO(raw_clone3_fork(), ENOSYS);
        /* Terminal injection: low 32 bits of the request. */
        CHECK_ERRNO(syscall(SYS_ioctl, fd, (unsigned long)TIOCSTI, NULL), EPERM);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, 0xdead00000000UL | TIOCSTI, NULL), EPERM);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, 0x541CUL /* TIOCLINUX */, NULL), EPERM);
        /* Personality: only the default and the query. */
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)PER_LINUX32), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)READ_IMPLIES_EXEC), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, 0x7fffffffUL), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, 0xfffffffeUL), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE), EPERM);
        CHECK_OK(syscall(SYS_personality, 0xffffffffUL));
        CHECK_OK(syscall(SYS_personality, (unsigned long)PER_LINUX));
        /* the kernel reads an unsigned int: the upper half neither
         * hides a persona nor makes the default one a denied one */
        CHECK_ERRNO(syscall(SYS_personality, (1UL << 32) | READ_IMPLIES_EXEC), EPERM);
        CHECK_OK(syscall(SYS_personality, (1UL << 32) | PER_LINUX));
#if defined(__x86_64__)
        /* Foreign architectures (i386 in i386_denied). */
        CHECK_ERRNO(syscall(0x40000000L | SYS_getpid), EPERM);
#endif
        /* Still allowed. */
        CHECK(syscall(SYS_getpid) == getpid());
        CHECK(pipe(p) == 0);
        CHECK(write(p[1], "x", 1) == 1);
        CHECK(read(p[0], &c, 1) == 1 && c == 'x');
        CHECK_OK(syscall(SYS_ioctl, p[0], (unsigned long)FIONREAD, &fd));
        CHECK_OK(fork_and_reap(0));
        CHECK_OK(unshare(CLONE_FILES));
        /* glibc tries clone3 for threads, gets ENOSYS, falls back to clone. */
        CHECK(pthread_create(&t, NULL, thread_main, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
}

static void default_behaviour(void **state)
{
        struct seccomp_settings s;

        seccomp_settings_default(&s);
        assert_exited_ok(run_child(&s, default_child));
        seccomp_settings_done(&s);
}

static void switches_child(void)
{
        /* allow_ptrace, allow_io_uring, allow_namespaces all on. */
        CHECK_OK(raw_clone3_fork());
        CHECK_OK(syscall(SYS_process_vm_readv, getpid(), NULL, 0UL, NULL, 0UL, 0UL));
        /* io_uring_setup(0, NULL) is EINVAL/EFAULT when allowed, unless
         * the host turned io_uring off (kernel.io_uring_disabled). */
        errno = 0;
        CHECK(syscall(SYS_io_uring_setup, 0, NULL) == -1 &&
              (errno != EPERM || access("/proc/sys/kernel/io_uring_disabled", F_OK) == 0));
        errno = 0;
        CHECK(syscall(SYS_setns, -1, 0) == -1 && errno == EBADF);
        /* allow_ptrace: ASLR off alone, for debuggers; nothing beside it */
        CHECK_OK(syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE));
        CHECK_OK(syscall(SYS_personality, (unsigned long)PER_LINUX));
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)(ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC)), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)(ADDR_NO_RANDOMIZE | PER_LINUX32)), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, 0xffffffffUL & ~(unsigned long)ADDR_NO_RANDOMIZE), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)PER_LINUX32), EPERM);
        /* Still denied: not part of any switch. */
        CHECK_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
}

static void switches_behaviour(void **state)
{
        struct seccomp_settings s;

        seccomp_settings_default(&s);
        s.allow_ptrace = s.allow_io_uring = s.allow_namespaces = true;
        assert_exited_ok(run_child(&s, switches_child));
        seccomp_settings_done(&s);
}

static void strict_child(void)
{
        int fd = pipe_read_end();
        unsigned long aio = 0;

        CHECK(fd >= 0);
        CHECK_ERRNO(mount("none", NOPATH, "tmpfs", 0, NULL), EPERM);
        CHECK_ERRNO(unshare(CLONE_NEWUSER), EPERM);
        CHECK_ERRNO(fork_and_reap(CLONE_NEWUSER), EPERM);
        CHECK_ERRNO(raw_clone3_fork(), ENOSYS);
        CHECK_ERRNO(syscall(SYS_keyctl, 0, -3, 0), EPERM);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, (unsigned long)TIOCSTI, NULL), EPERM);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, 0xdead00000000UL | TIOCSTI, NULL), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)PER_LINUX32), EPERM);
        /* Not in the allow-list although the default allows it. */
        CHECK_ERRNO(syscall(SYS_io_setup, 1, &aio), EPERM);
        CHECK_ERRNO(unshare(CLONE_FILES), EPERM);
        /* Allowed. */
        CHECK_OK(syscall(SYS_ioctl, fd, (unsigned long)FIONREAD, &aio));
        CHECK_OK(syscall(SYS_personality, 0xffffffffUL));
        CHECK_OK(fork_and_reap(0));
        execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
        CHECK(!"exec /bin/sh");
}

static void strict_behaviour(void **state)
{
        struct seccomp_settings s;

        seccomp_settings_strict(&s);
        assert_exited_ok(run_child(&s, strict_child));
        seccomp_settings_done(&s);
}

#if defined(__x86_64__)
static void i386_child(void)
{
        CHECK_ERRNO(i386_getpid(), EPERM);
}

static void i386_unfiltered_child(void)
{
        CHECK(i386_getpid() == getpid());
}
#endif

/* The i386 entry (int 0x80) under the default and the strict policy.
 * Some kernels have none (paravirtual guests, ia32_emulation=0): there
 * int 0x80 faults before any filter runs, unfiltered too, and the call
 * cannot be made at all; nothing is left to deny. */
static void i386_denied(void **state)
{
#if defined(__x86_64__)
        struct seccomp_settings s;
        int status = run_child(NULL, i386_unfiltered_child);

        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
                tap_skip("this kernel faults int 0x80 without any filter (no i386 syscall entry)");
        assert_exited_ok(status);

        seccomp_settings_default(&s);
        assert_exited_ok(run_child(&s, i386_child));
        seccomp_settings_done(&s);
        seccomp_settings_strict(&s);
        assert_exited_ok(run_child(&s, i386_child));
        seccomp_settings_done(&s);
#else
        tap_skip("i386 syscalls exist only beside x86_64");
#endif
}

static void kill_mount_child(void)
{
        /* clone3 must still answer ENOSYS under kill, or threads die. */
        CHECK_ERRNO(raw_clone3_fork(), ENOSYS);
        mount("none", NOPATH, "tmpfs", 0, NULL);
        _exit(3);       /* not reached when the policy kills */
}

static void kill_behaviour(void **state)
{
        struct seccomp_settings s;
        int status;

        seccomp_settings_default(&s);
        set_action(&s, "kill");
        status = run_child(&s, kill_mount_child);
        if (WIFEXITED(status))
                fail_msg("child exited %d instead of dying by SIGSYS", WEXITSTATUS(status));
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSYS);
        seccomp_settings_done(&s);
}

static void log_child(void)
{
        /* log enforces nothing: the kernel's own answer comes through. */
        CHECK_ERRNO(syscall(SYS_ioctl, pipe_read_end(), (unsigned long)TIOCSTI, NULL), ENOTTY);
        CHECK_OK(raw_clone3_fork());
}

static void log_behaviour(void **state)
{
        struct seccomp_settings s;

        seccomp_settings_default(&s);
        set_action(&s, "log");
        assert_exited_ok(run_child(&s, log_child));
        seccomp_settings_done(&s);
}

/* The name filter answers the syscalls newer than libseccomp with one
 * range test in front of libseccomp's program: ENOSYS for every number
 * of the range under the native arch, and for every other call exactly
 * what libseccomp's program alone answers (the test only falls through
 * to it); under the log action the range is logged, as its rules were.
 * Also: the range test is what makes the filter shorter. */
static void future_range_prefix(void **state)
{
        static const char *const actions[] = { "errno", "kill", "log" };
        (void)state;

        for (int strict = 0; strict < 2; strict++)
                for (size_t a = 0; a < ELEMENTSOF(actions); a++) {
                        struct seccomp_settings s = { 0 };
                        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
                        _cleanup_free_ char *err = NULL;
                        _cleanup_free_ void *blob = NULL;
                        size_t len;
                        assert_int_equal(strict ? seccomp_settings_strict(&s) : seccomp_settings_default(&s), 0);
                        set_action(&s, actions[a]);
                        assert_int_equal(seccomp_policy_build(&s, &p, NULL, &err), 0);
                        assert_int_equal(seccomp_policy_export(p, &blob, &len), 0);
                        _cleanup_free_ struct sock_filter *progs = NULL;
                        size_t n_args, n_fast, n_names;
                        assert_int_equal(seccomp_blob_programs(blob, len, NULL, 0, &progs, &n_args, &n_fast,
                                                               &n_names), 0);
                        const struct sock_filter *names = progs + n_args;
                        /* the prefix: LD arch, JEQ, LD nr, JGE first, JGE end, RET;
                         * none where the range's answer is the filter's
                         * default anyway (an allow-list under log) */
                        bool prefix = n_names > 6 && names[1].jf == 4 && names[3].code == (BPF_JMP | BPF_JGE | BPF_K) &&
                                      names[4].code == (BPF_JMP | BPF_JGE | BPF_K) &&
                                      names[5].code == (BPF_RET | BPF_K);
                        assert_true(prefix == !(strict && a == 2));
                        if (!prefix) {
                                seccomp_settings_done(&s);
                                continue;
                        }
                        uint32_t first = names[3].k, end = names[4].k;
                        assert_int_equal(end - first, 64);
                        if (!strict)    /* 64 rules took some 140 of its 171 instructions */
                                assert_true(n_names < 120);
                        size_t in_range = 0;
                        for (int arch = 0; arch < 2; arch++)
                                for (uint32_t nr = 0; nr < 1100; nr++)
                                        for (int x32 = 0; x32 < 2; x32++) {
                                                struct seccomp_data d = {
                                                        .nr = (int)(nr | (x32 ? 0x40000000u : 0)),
                                                        .arch = arch ? 0x40000003u : (uint32_t)seccomp_arch_native(),
                                                };
                                                uint32_t with = bpf_run(names, n_names, &d);
                                                uint32_t without = bpf_run(names + 6, n_names - 6, &d);
                                                if (!arch && !x32 && nr >= first && nr < end) {
                                                        /* ENOSYS; under log, log (as the rules said) */
                                                        assert_true(with == (a == 2 ? SECCOMP_RET_LOG
                                                                                    : SECCOMP_RET_ERRNO | ENOSYS));
                                                        in_range++;
                                                } else if (with != without)
                                                        fail_msg("nr %u arch %d x32 %d: %#x, libseccomp's %#x", nr,
                                                                 arch, x32, with, without);
                                        }
                        assert_int_equal(in_range, 64);
                        seccomp_settings_done(&s);
                }
}

/* A blob that is not what seccomp_policy_export() made is refused
 * before anything is installed. */
static void blob_malformed(void **state)
{
        struct seccomp_settings s = { 0 };
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ void *blob = NULL;
        size_t len;

        assert_int_equal(seccomp_settings_default(&s), 0);
        assert_int_equal(seccomp_policy_build(&s, &p, NULL, &err), 0);
        assert_int_equal(seccomp_policy_export(p, &blob, &len), 0);
        assert_true(len > 16 && (len - 16) % 8 == 0);
        assert_int_equal(seccomp_blob_load(NULL, 0), -EINVAL);
        assert_int_equal(seccomp_blob_load(blob, len - 8), -EINVAL);
        assert_int_equal(seccomp_blob_load(blob, 15), -EINVAL);
        /* a fast test that claims the whole argument filter */
        uint32_t n_args, n_fast;
        memcpy(&n_args, (char *)blob + 4, 4);
        memcpy(&n_fast, (char *)blob + 8, 4);
        memcpy((char *)blob + 8, &n_args, 4);
        assert_int_equal(seccomp_blob_load(blob, len), -EINVAL);
        memcpy((char *)blob + 8, &n_fast, 4);
        ((unsigned char *)blob)[0] ^= 0xff;
        assert_int_equal(seccomp_blob_load(blob, len), -EINVAL);
        /* nothing was installed in this process */
        assert_int_equal(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
        seccomp_settings_done(&s);
}

/* The compiled-filter cache gives back exactly what a fresh build gives,
 * keys on the settings, and ignores a damaged entry. */
static void compile_cache(void **state)
{
        char dir[] = "/tmp/hutch-test-bpf-cache.XXXXXX";
        struct seccomp_settings s = { 0 };
        struct seccomp_report r1, r2;
        _cleanup_free_ char *err = NULL;
        void *a = NULL, *b = NULL, *c = NULL;
        size_t la, lb, lc;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(seccomp_settings_default(&s), 0);
        assert_int_equal(seccomp_policy_compile(&s, dir, &a, &la, &r1, &err), 0);
        /* second time from the cache: same bytes, same report */
        assert_int_equal(seccomp_policy_compile(&s, dir, &b, &lb, &r2, &err), 0);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        assert_int_equal(r1.syscalls, r2.syscalls);
        assert_int_equal(r1.rules, r2.rules);
        assert_string_equal(r1.action, r2.action);
        assert_string_equal(r1.mode, r2.mode);
        /* without a cache the same filter comes out */
        assert_int_equal(seccomp_policy_compile(&s, NULL, &c, &lc, NULL, &err), 0);
        assert_int_equal(la, lc);
        assert_memory_equal(a, c, la);
        free(b);
        free(c);

        /* another setting, another filter (and another cache entry) */
        s.deny = strv_append(s.deny, "getcwd");
        assert_int_equal(seccomp_policy_compile(&s, dir, &b, &lb, &r2, &err), 0);
        assert_true(lb != la || memcmp(a, b, la) != 0);
        assert_int_equal(r2.syscalls, r1.syscalls + 1);
        free(b);

        /* damage every cache entry: it is rebuilt, not trusted */
        DIR *d = opendir(dir);
        struct dirent *de;
        int damaged = 0;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char path[512];
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                assert_int_equal(write_file(path, "hutch-bpf 1 1\ngarbage", 0600), 0);
                damaged++;
        }
        closedir(d);
        assert_int_equal(damaged, 2);
        strv_free(s.deny);
        s.deny = NULL;
        seccomp_settings_done(&s);
        assert_int_equal(seccomp_settings_default(&s), 0);
        assert_int_equal(seccomp_policy_compile(&s, dir, &b, &lb, &r2, &err), 0);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        free(a);
        free(b);
        seccomp_settings_done(&s);
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(build_default),
                cmocka_unit_test(blob_malformed),
                cmocka_unit_test(compile_cache),
                cmocka_unit_test(build_strict),
                cmocka_unit_test(build_custom),
                cmocka_unit_test(build_errors),
                cmocka_unit_test(groups_file_errors),
                cmocka_unit_test(groups_shipped_file),
                cmocka_unit_test(dump_pseudo_code),
                cmocka_unit_test(build_and_load_time),
                cmocka_unit_test(check_unfiltered),
                cmocka_unit_test(default_behaviour),
                cmocka_unit_test(switches_behaviour),
                cmocka_unit_test(strict_behaviour),
                cmocka_unit_test(i386_denied),
                cmocka_unit_test(kill_behaviour),
                cmocka_unit_test(log_behaviour),
                cmocka_unit_test(future_range_prefix),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
