/* test-live-limits.c - unit tests for a live sandbox's limits
 * (run/live-limits.c): how a limit the sandbox reached becomes an
 * exec's status and message, what NAME.json and the enforcement report
 * say, and that a job SIGXCPU killed is the cpu_time limit. */
#include "config.h"

#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/util.h"
#include "run/live-internal.h"
#include "run/live-limits.h"
#include "sandbox/sandbox.h"
#include "supervise/supervise.h"

static struct run_outcome signalled(int sig)
{
        return (struct run_outcome) { .status = RUN_SIGNALED, .exit_code = 128 + sig, .signal = sig,
                                      .job_exit_code = -1 };
}

static void killed_by_a_stop_limit(void **state)
{
        struct live_reply e = { .limits_hit = LIVE_LIMIT_MEMORY, .stopped = 1 };
        struct run_outcome o = { .status = RUN_CANCELLED, .exit_code = EXIT_CANCELLED_TERM };
        (void)state;
        snprintf(e.limit_message, sizeof(e.limit_message), "memory limit 64M exceeded: x");
        live_limits_exec_outcome(&e, &o);
        assert_int_equal(o.status, RUN_OOM);
        assert_int_equal(o.exit_code, EXIT_OOM);
        assert_string_equal(o.message, "the sandbox stopped: memory limit 64M exceeded: x");

        e = (struct live_reply) { .limits_hit = LIVE_LIMIT_CPU_TIME, .status = SIGXCPU };
        snprintf(e.limit_message, sizeof(e.limit_message), "cpu time limit 1s exceeded");
        o = signalled(SIGXCPU);
        live_limits_exec_outcome(&e, &o);
        assert_int_equal(o.status, RUN_CPU_TIMEOUT);
        assert_int_equal(o.exit_code, EXIT_TIMEOUT);
}

static void a_job_that_ended_by_itself_keeps_its_status(void **state)
{
        /* the OOM killer took another process; this job exited 0 */
        struct live_reply e = { .limits_hit = LIVE_LIMIT_MEMORY | LIVE_LIMIT_PIDS };
        struct run_outcome o = { .status = RUN_SUCCESS };
        (void)state;
        snprintf(e.limit_message, sizeof(e.limit_message), "A; B");
        live_limits_exec_outcome(&e, &o);
        assert_int_equal(o.status, RUN_SUCCESS);
        assert_int_equal(o.exit_code, 0);
        assert_string_equal(o.message, "the sandbox: A; B");
        /* a note goes after what the message said */
        o = (struct run_outcome) { .status = RUN_TIMEOUT, .exit_code = EXIT_TIMEOUT };
        snprintf(o.message, sizeof(o.message), "timed out");
        e.limits_hit = LIVE_LIMIT_DISK;
        live_limits_exec_outcome(&e, &o);
        assert_int_equal(o.status, RUN_TIMEOUT);
        assert_string_equal(o.message, "timed out (the sandbox: A; B)");
        /* nothing reached: nothing changes */
        e.limits_hit = 0;
        o = (struct run_outcome) { .status = RUN_FAILED, .exit_code = 3 };
        live_limits_exec_outcome(&e, &o);
        assert_int_equal(o.status, RUN_FAILED);
        assert_string_equal(o.message, "");
}

static void sigxcpu_is_the_cpu_time_limit(void **state)
{
        struct run_config cfg;
        struct sandbox sb = { .pid = getpid(), .pidfd = -1, .sync_fd = -1, .workspace_fd = -1, .upper_fd = -1 };
        (void)state;
        run_config_init(&cfg);
        cfg.cpu_time_ms = 2000;
        cfg.pids = 0;
        struct live_limits *ll = live_limits_new(&cfg, &sb);
        struct live_reply e = { .status = SIGXCPU };    /* a raw wait status: killed by it */
        live_limits_exec_end(ll, &e);
        assert_int_equal(e.limits_hit, LIVE_LIMIT_CPU_TIME);
        assert_string_equal(e.limit_message, "cpu time limit 2s exceeded by one process (RLIMIT_CPU: SIGXCPU)");
        /* a job killed at its deadline is not */
        e = (struct live_reply) { .status = SIGXCPU, .timed_out = 1 };
        live_limits_exec_end(ll, &e);
        assert_int_equal(e.limits_hit, 0);
        assert_null(live_limits_stopped(ll));
        live_limits_free(ll);
        run_config_done(&cfg);
}

static void state_and_report(void **state)
{
        struct run_config cfg;
        struct sandbox sb = { .pid = getpid(), .pidfd = -1, .sync_fd = -1, .workspace_fd = -1, .upper_fd = -1 };
        (void)state;
        run_config_init(&cfg);
        cfg.memory_bytes = 64 << 20;
        cfg.cpu_time_ms = 0;
        cfg.pids = 32;
        struct live_limits *ll = live_limits_new(&cfg, &sb);
        _cleanup_free_ char *j = live_limits_state_json(ll);
        assert_string_equal(j, ",\"limits\":{\"memory\":\"watchdog\",\"cpu_time\":\"none\",\"pids\":\"rlimit\","
                               "\"disk\":\"tmpfs size\"},\"limits_hit\":[]");
        live_limits_free(ll);
        run_config_done(&cfg);

        json_t *r = json_pack("{s:{s:{s:s},s:{s:s},s:{s:s},s:{s:s}}}", "limits", "memory", "value", "64M",
                              "timeout", "value", "30s", "nofile", "value", "4096", "pids", "value", "32");
        live_limits_enforcement(r);
        json_t *l = json_object_get(r, "limits");
        assert_string_equal(json_string_value(json_object_get(json_object_get(l, "memory"), "scope")), "sandbox");
        assert_string_equal(json_string_value(json_object_get(json_object_get(l, "pids"), "scope")), "sandbox");
        assert_string_equal(json_string_value(json_object_get(json_object_get(l, "timeout"), "scope")), "exec");
        assert_string_equal(json_string_value(json_object_get(json_object_get(l, "nofile"), "scope")), "process");
        json_decref(r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(killed_by_a_stop_limit),
                cmocka_unit_test(a_job_that_ended_by_itself_keeps_its_status),
                cmocka_unit_test(sigxcpu_is_the_cpu_time_limit),
                cmocka_unit_test(state_and_report),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
