/* test-enforce.c - unit tests for the enforcement report: which
 * mechanism it names for each limit with and without a run cgroup, and
 * `require` refusing what nothing holds. The report must never claim a
 * cgroup limit whose bit cgroup_run_new() did not report as written. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "limits/cgroup.h"
#include "limits/enforce.h"
#include "lib/util.h"

static const char *mechanism(json_t *report, const char *name)
{
        json_t *l = json_object_get(json_object_get(report, "limits"), name);
        return json_string_value(json_object_get(l, "mechanism"));
}

static const char *reason(json_t *report, const char *name)
{
        json_t *l = json_object_get(json_object_get(report, "limits"), name);
        return json_string_value(json_object_get(l, "reason"));
}

static void setup_cfg(struct run_config *cfg)
{
        run_config_init(cfg);
        cfg->memory_bytes = 64ULL << 20;
        cfg->cpus = 0.5;
        cfg->pids = 32;
        cfg->cpu_time_ms = 1000;
}

static void without_cgroup(void **state)
{
        struct run_config cfg;
        struct enforce_cgroup cg = { .reason = "cgroup v2 not mounted" };
        char *err = NULL;

        setup_cfg(&cfg);
        json_t *r = enforcement_build(&cfg, NULL, &cg, 1000, 1000);
        assert_string_equal(mechanism(r, "memory"), "watchdog");
        assert_string_equal(mechanism(r, "cpu_time"), "watchdog");
        assert_string_equal(mechanism(r, "pids"), "rlimit");
        assert_string_equal(mechanism(r, "cpus"), "not enforced");
        assert_non_null(strstr(reason(r, "cpus"), "cpu.max"));
        assert_non_null(strstr(reason(r, "cpus"), "cgroup v2 not mounted"));
        /* memory_high is only ever set when asked for */
        assert_string_equal(mechanism(r, "memory_high"), "none");
        assert_true(json_is_null(json_object_get(json_object_get(r, "cgroup"), "path")));

        /* the watchdog has holes (SysV shm, fds in flight, kernel
         * memory): it is partial, names them, and does not satisfy require */
        assert_true(json_is_true(json_object_get(json_object_get(json_object_get(r, "limits"), "memory"),
                                                 "partial")));
        assert_non_null(strstr(reason(r, "memory"), "SysV shm"));
        cfg.require = strv_append(cfg.require, "memory");
        assert_int_equal(enforcement_check_required(&cfg, r, &err), -EOPNOTSUPP);
        assert_non_null(strstr(err, "required limit memory cannot be enforced"));
        free(err);
        err = NULL;
        strv_free(cfg.require);
        cfg.require = strv_append(NULL, "pids");
        assert_int_equal(enforcement_check_required(&cfg, r, &err), 0);
        cfg.require = strv_append(cfg.require, "cpus");
        assert_int_equal(enforcement_check_required(&cfg, r, &err), -EOPNOTSUPP);
        assert_non_null(strstr(err, "required limit cpus cannot be enforced"));
        assert_null(strchr(err, '\n'));
        free(err);
        json_decref(r);
        run_config_done(&cfg);
}

static void with_cgroup(void **state)
{
        struct run_config cfg;
        struct enforce_cgroup cg = {
                .path = "/sys/fs/cgroup/u/run-X",
                .enforced = CGROUP_LIMIT_MEMORY | CGROUP_LIMIT_SWAP | CGROUP_LIMIT_PIDS,
        };
        char *err = NULL;

        setup_cfg(&cfg);
        cfg.memory_high_bytes = 48ULL << 20;
        json_t *r = enforcement_build(&cfg, NULL, &cg, 1000, 1000);
        assert_string_equal(mechanism(r, "memory"), "cgroup");
        assert_string_equal(mechanism(r, "cpu_time"), "cgroup");
        assert_string_equal(mechanism(r, "pids"), "cgroup");
        /* the cpu controller was not usable: cpus is not claimed */
        assert_string_equal(mechanism(r, "cpus"), "not enforced");
        assert_non_null(strstr(reason(r, "cpus"), "cpu controller"));
        /* nor memory.high, whose bit is missing too */
        assert_string_equal(mechanism(r, "memory_high"), "not enforced");
        json_t *written = json_object_get(json_object_get(r, "cgroup"), "written");
        assert_int_equal(json_array_size(written), 3);

        cfg.require = strv_append(cfg.require, "memory");
        cfg.require = strv_append(cfg.require, "pids");
        assert_int_equal(enforcement_check_required(&cfg, r, &err), 0);
        json_decref(r);

        cg.enforced |= CGROUP_LIMIT_CPUS | CGROUP_LIMIT_MEMORY_HIGH;
        r = enforcement_build(&cfg, NULL, &cg, 1000, 1000);
        assert_string_equal(mechanism(r, "cpus"), "cgroup");
        assert_string_equal(mechanism(r, "memory_high"), "cgroup");
        cfg.require = strv_append(cfg.require, "cpus");
        cfg.require = strv_append(cfg.require, "memory_high");
        assert_int_equal(enforcement_check_required(&cfg, r, &err), 0);
        json_decref(r);
        run_config_done(&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(without_cgroup),
                cmocka_unit_test(with_cgroup),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
