/* test-gvisor.c - unit tests for the gvisor runtime's host side: the
 * enforcement report rewritten for it (runtime, version, platform, what
 * each limit covers, pids inside gVisor's kernel), what the runtime
 * refuses, and finding runsc through HUTCH_RUNSC. No runsc is run: a
 * missing or broken one must be refused, never trusted. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "run/enforce.h"
#include "sandbox/gvisor.h"
#include "lib/util.h"

static const char *field(json_t *report, const char *limit, const char *key)
{
        json_t *l = json_object_get(json_object_get(report, "limits"), limit);
        return json_string_value(json_object_get(l, key));
}

static struct gvisor_info fake_runsc(void)
{
        struct gvisor_info gv = { .platform = "ptrace" };
        snprintf(gv.path, sizeof(gv.path), "/usr/bin/runsc");
        snprintf(gv.version, sizeof(gv.version), "0.0~20221219.0");
        return gv;
}

static void report_native(void **state)
{
        (void)state;
        struct run_config cfg;
        run_config_init(&cfg);
        json_t *r = enforcement_build(&cfg, NULL, NULL, 1000, 1000);
        gvisor_enforcement(r, &cfg, NULL);
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "runtime"), "name")), "native");
        /* nothing else changes natively */
        assert_null(field(r, "pids", "covers"));
        assert_string_equal(field(r, "pids", "mechanism"), "rlimit");
        json_decref(r);
        run_config_done(&cfg);
}

static void report_gvisor(void **state)
{
        (void)state;
        struct run_config cfg;
        struct gvisor_info gv = fake_runsc();
        run_config_init(&cfg);
        cfg.pids = 32;
        json_t *r = enforcement_build(&cfg, NULL, NULL, 1000, 1000);
        gvisor_enforcement(r, &cfg, &gv);

        json_t *rt = json_object_get(r, "runtime");
        assert_string_equal(json_string_value(json_object_get(rt, "name")), "gvisor");
        assert_string_equal(json_string_value(json_object_get(rt, "version")), "0.0~20221219.0");
        assert_string_equal(json_string_value(json_object_get(rt, "platform")), "ptrace");
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "seccomp"), "policy")), "gvisor");
        /* the uid the job has inside, whatever the profile asked */
        assert_int_equal(json_integer_value(json_object_get(rt, "job_uid")), 0);
        assert_int_equal(json_integer_value(json_object_get(rt, "profile_uid")), 1000);
        assert_non_null(strstr(json_string_value(json_object_get(rt, "job_uid_why")), "maps one id"));

        /* pids: RLIMIT_NPROC in gVisor's kernel, backstop 128 + 8 * 32 */
        assert_string_equal(field(r, "pids", "mechanism"), "rlimit");
        assert_non_null(strstr(field(r, "pids", "covers"), "gVisor's kernel"));
        assert_non_null(strstr(field(r, "pids", "covers"), "384"));
        assert_int_equal(GVISOR_HOST_TASKS(32), 384);
        /* tree-wide limits say they include gVisor's overhead */
        assert_non_null(strstr(field(r, "memory", "covers"), "runsc"));
        assert_non_null(strstr(field(r, "timeout", "covers"), "runsc"));
        assert_non_null(strstr(field(r, "disk", "covers"), "scratch"));
        /* what holds nothing stays unclaimed: cpus without a cgroup */
        assert_string_equal(field(r, "cpus", "mechanism"), "not enforced");
        assert_null(field(r, "cpus", "covers"));
        json_decref(r);
        run_config_done(&cfg);
}

static void refuses(void **state)
{
        (void)state;
        struct run_config cfg;
        struct gvisor_info gv = fake_runsc();
        run_config_init(&cfg);
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL;

        assert_int_equal(gvisor_check_config(&cfg, &gv, &e1), 0);
        cfg.tty = true;
        assert_int_equal(gvisor_check_config(&cfg, &gv, &e1), -EOPNOTSUPP);
        assert_non_null(strstr(e1, "--tty"));
        cfg.tty = false;
        cfg.net = NET_HOST;
        assert_int_equal(gvisor_check_config(&cfg, &gv, &e2), -EOPNOTSUPP);
        assert_non_null(strstr(e2, "network none"));
        cfg.net = NET_NONE;
        /* runsc outside every system dir cannot run in the sandbox */
        snprintf(gv.path, sizeof(gv.path), "/home/me/bin/runsc");
        assert_int_equal(gvisor_check_config(&cfg, &gv, &e3), -EOPNOTSUPP);
        assert_non_null(strstr(e3, "system_dirs"));
        /* /usrx/runsc is not under /usr */
        snprintf(gv.path, sizeof(gv.path), "/usrx/runsc");
        assert_int_equal(gvisor_check_config(&cfg, &gv, &e4), -EOPNOTSUPP);
        run_config_done(&cfg);
}

static void probe_refuses_what_is_not_runsc(void **state)
{
        (void)state;
        struct gvisor_info gv;
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL;

        setenv("HUTCH_RUNSC", "relative/runsc", 1);
        assert_int_equal(gvisor_probe(&gv, &e1), -EINVAL);
        assert_non_null(strstr(e1, "absolute"));
        setenv("HUTCH_RUNSC", "/nonexistent/runsc", 1);
        assert_int_equal(gvisor_probe(&gv, &e2), -ENOENT);
        assert_non_null(strstr(e2, "/nonexistent/runsc"));
        /* runs, but says no version: not runsc */
        setenv("HUTCH_RUNSC", "/bin/true", 1);
        assert_true(gvisor_probe(&gv, &e3) < 0);
        assert_non_null(strstr(e3, "does not work"));
        unsetenv("HUTCH_RUNSC");
}

/* What runsc 20221219 writes last, rootless (the re-executed child's pid). */
#define HEAD "I1201 12:26:08.941550   14408 main.go:217] Args: [runsc --rootless run]\n" \
             "I1201 12:26:08.944415   14412 container.go:1078] Gofer started, PID: 14420\n"
#define STATUS(n) "I1201 12:28:41.494911   14412 main.go:266] Exiting with status: " #n "\n"
#define PARENT_WARNING "W1201 12:28:41.495649   14408 namespace.go:297] Error forwarding signal " \
                       "child exited to child (PID 14412)\n"

static int from_log(const char *log, int runsc_status, int *ret)
{
        *ret = -1;
        return gvisor_status_from_log(log, strlen(log), runsc_status, ret);
}

static void status_signal_told_from_exit_code(void **state)
{
        (void)state;
        int s;
        /* killed by SIGKILL: runsc exits 137, the sentry said signal 9 */
        assert_int_equal(from_log(HEAD STATUS(9), W_EXITCODE(137, 0), &s), 0);
        assert_true(WIFSIGNALED(s));
        assert_int_equal(WTERMSIG(s), SIGKILL);
        /* the job's own `exit 137`: the same runsc exit code, exited */
        assert_int_equal(from_log(HEAD STATUS(35072), W_EXITCODE(137, 0), &s), 0);
        assert_true(WIFEXITED(s));
        assert_int_equal(WEXITSTATUS(s), 137);
        /* SIGSEGV with the core bit still reads as SIGSEGV */
        assert_int_equal(from_log(HEAD STATUS(139), W_EXITCODE(139, 0), &s), 0);
        assert_true(WIFSIGNALED(s));
        assert_int_equal(WTERMSIG(s), SIGSEGV);
        /* the parent's warning after the child's status line */
        assert_int_equal(from_log(HEAD STATUS(15) PARENT_WARNING, W_EXITCODE(143, 0), &s), 0);
        assert_true(WIFSIGNALED(s));
        assert_int_equal(WTERMSIG(s), SIGTERM);
}

static void status_runsc_failure_or_job_128(void **state)
{
        (void)state;
        int s;
        /* runsc's own failure logs no status */
        assert_int_equal(from_log(HEAD "W1201 12:00:00.000000 1 main.go:270] Failure to execute command, err: 1\n",
                                  W_EXITCODE(128, 0), &s), -EIO);
        assert_int_equal(from_log("", W_EXITCODE(128, 0), &s), -EIO);
        /* a job's own exit 128 is the job's */
        assert_int_equal(from_log(HEAD STATUS(32768), W_EXITCODE(128, 0), &s), 0);
        assert_true(WIFEXITED(s));
        assert_int_equal(WEXITSTATUS(s), 128);
}

static void status_untrusted_lines_leave_exit_code(void **state)
{
        (void)state;
        int s;
        /* a status that disagrees with runsc's exit code is ignored */
        assert_int_equal(from_log(HEAD STATUS(9), W_EXITCODE(1, 0), &s), 0);
        assert_int_equal(s, W_EXITCODE(1, 0));
        /* a status line that is not the last (an info line follows) */
        assert_int_equal(from_log(STATUS(9) HEAD, W_EXITCODE(137, 0), &s), 0);
        assert_int_equal(s, W_EXITCODE(137, 0));
        /* not exactly the line runsc writes */
        const char *bad[] = {
                "I1201 12:28:41.494911   14412 main.go:266] Exiting with status: 9 \n",
                "I1201 12:28:41.494911   14412 main.go:266]  Exiting with status: 9\n",
                "E1201 12:28:41.494911   14412 main.go:266] Exiting with status: 9\n",
                "I1201 12:28:41.494911   14412 main.go:266] Exiting with status: 99999999\n",
                "I1201 12:28:41.494911 main.go:266] Exiting with status: 9\n",
                "x I1201 12:28:41.494911   14412 main.go:266] Exiting with status: 9\n",
                "I1201 12:28:41.494911   14412 main.go:266] Exiting with status: \n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(from_log(bad[i], W_EXITCODE(137, 0), &s), 0);
                assert_int_equal(s, W_EXITCODE(137, 0));
        }
        /* no newline at the end is still the line */
        assert_int_equal(from_log("I1201 12:28:41.494911   14412 cli.go:317] Exiting with status: 9",
                                  W_EXITCODE(137, 0), &s), 0);
        assert_true(WIFSIGNALED(s));
        /* runsc run itself killed: its own status stands */
        assert_int_equal(from_log(HEAD STATUS(35072), W_EXITCODE(0, SIGKILL), &s), 0);
        assert_true(WIFSIGNALED(s));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(report_native),
                cmocka_unit_test(report_gvisor),
                cmocka_unit_test(refuses),
                cmocka_unit_test(probe_refuses_what_is_not_runsc),
                cmocka_unit_test(status_signal_told_from_exit_code),
                cmocka_unit_test(status_runsc_failure_or_job_128),
                cmocka_unit_test(status_untrusted_lines_leave_exit_code),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
