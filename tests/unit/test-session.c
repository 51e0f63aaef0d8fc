/* test-session.c - unit tests for session workspaces: name rules, the
 * lock (exclusive between holders, visible to ls without being taken,
 * gone when its holder dies), waiting with a deadline, listing, removal
 * refused while in use. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "workspace/session.h"
#include "lib/util.h"

static char root[64];

static int setup(void **state)
{
        snprintf(root, sizeof(root), "/tmp/hutch-test-session-XXXXXX");
        return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

static void names(void **state)
{
        assert_true(session_name_valid("a"));
        assert_true(session_name_valid("agent-1.step_2"));
        assert_false(session_name_valid(""));
        assert_false(session_name_valid(".hidden"));
        assert_false(session_name_valid(".."));
        assert_false(session_name_valid("a/b"));
        assert_false(session_name_valid("a b"));
        char long_name[66];
        memset(long_name, 'x', 65);
        long_name[65] = '\0';
        assert_false(session_name_valid(long_name));
        long_name[64] = '\0';
        assert_true(session_name_valid(long_name));
}

static void lock_excludes_and_dies_with_holder(void **state)
{
        struct session a = { .lock_fd = -1 }, b = { .lock_fd = -1 };
        struct session_info *v = NULL;
        size_t n = 0;
        int p[2];

        assert_int_equal(session_acquire(root, "s", 0, &a), 0);
        assert_non_null(strstr(a.tree, "/s/tree"));
        /* another holder (a child process: locks belong to open files) */
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct session c = { .lock_fd = -1 };
                int r = session_acquire(root, "s", 0, &c);
                char ok = r == -EBUSY ? 'y' : 'n';
                (void)!write(p[1], &ok, 1);
                _exit(0);
        }
        char ok = 0;
        assert_int_equal(read(p[0], &ok, 1), 1);
        assert_int_equal(ok, 'y');
        waitpid(pid, NULL, 0);

        /* ls sees it in use, without taking it */
        assert_int_equal(session_list(root, &v, &n), 0);
        assert_int_equal(n, 1);
        assert_true(v[0].in_use);
        session_info_free(v, n);
        assert_int_equal(session_remove(root, "s"), -EBUSY);

        session_release(&a);
        assert_int_equal(session_acquire(root, "s", 0, &b), 0);

        /* a holder that dies without releasing frees the session */
        session_release(&b);
        pid = fork();
        if (pid == 0) {
                struct session c = { .lock_fd = -1 };
                if (session_acquire(root, "s", 0, &c) < 0)
                        _exit(1);
                kill(getpid(), SIGKILL);
        }
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(session_acquire(root, "s", 0, &b), 0);
        session_release(&b);
        close(p[0]);
        close(p[1]);
}

static void wait_times_out(void **state)
{
        struct session a = { .lock_fd = -1 };
        pid_t pid;
        int p[2];

        assert_int_equal(pipe(p), 0);
        pid = fork();
        if (pid == 0) {
                struct session c = { .lock_fd = -1 };
                char x = session_acquire(root, "w", 0, &c) == 0 ? 'y' : 'n';
                (void)!write(p[1], &x, 1);
                usleep(800 * 1000);
                _exit(0);       /* the lock goes with us */
        }
        char x = 0;
        assert_int_equal(read(p[0], &x, 1), 1);
        assert_int_equal(x, 'y');
        uint64_t t0 = now_monotonic_ms();
        assert_int_equal(session_acquire(root, "w", 300, &a), -EBUSY);
        assert_true(now_monotonic_ms() - t0 >= 300);
        /* a longer wait outlasts the holder */
        assert_int_equal(session_acquire(root, "w", 10000, &a), 0);
        session_release(&a);
        waitpid(pid, NULL, 0);
        close(p[0]);
        close(p[1]);
}

static void list_and_remove(void **state)
{
        struct session a = { .lock_fd = -1 };
        struct session_info *v = NULL;
        size_t n = 0;

        assert_int_equal(session_list(root, &v, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(session_acquire(root, "b", 0, &a), 0);
        _cleanup_free_ char *f = xasprintf("%s/file", a.tree);
        assert_int_equal(write_file(f, "12345", 0644), 0);
        /* a symlink in the tree must not lead removal astray */
        _cleanup_free_ char *l = xasprintf("%s/link", a.tree);
        _cleanup_free_ char *outside = xasprintf("%s/outside", root);
        assert_int_equal(write_file(outside, "keep", 0644), 0);
        assert_int_equal(symlink(outside, l), 0);
        session_release(&a);
        assert_int_equal(session_acquire(root, "a", 0, &a), 0);
        session_release(&a);

        assert_int_equal(session_list(root, &v, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(v[0].name, "a");
        assert_string_equal(v[1].name, "b");
        assert_int_equal(v[1].bytes, 5);
        assert_int_equal(v[1].files, 2);
        assert_false(v[1].in_use);
        assert_true(v[1].last_used_ms > 0);
        session_info_free(v, n);

        assert_int_equal(session_remove(root, "b"), 0);
        assert_int_equal(session_remove(root, "b"), -ENOENT);
        assert_int_equal(session_remove(root, "../x"), -EINVAL);
        assert_int_equal(access(outside, F_OK), 0);
        assert_int_equal(session_list(root, &v, &n), 0);
        assert_int_equal(n, 1);
        session_info_free(v, n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(names),
                cmocka_unit_test_setup_teardown(lock_excludes_and_dies_with_holder, setup, teardown),
                cmocka_unit_test_setup_teardown(wait_times_out, setup, teardown),
                cmocka_unit_test_setup_teardown(list_and_remove, setup, teardown),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
