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
#include <cmocka.h>

#include "limits/enforce.h"
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(report_native),
                cmocka_unit_test(report_gvisor),
                cmocka_unit_test(refuses),
                cmocka_unit_test(probe_refuses_what_is_not_runsc),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
