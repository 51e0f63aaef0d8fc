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
#include "run/enforce.h"
#include "limits/ipcns.h"
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

/* The IPC namespace's limits (as real root): shm in all is --memory,
 * message queues and semaphores about a quarter each, never the kernel's
 * larger defaults; the report names them and stays partial (fds in
 * flight, kernel memory), and still refuses require = memory. */
static void ipc_limits(void **state)
{
        struct run_config cfg;
        struct enforce_cgroup cg = { .reason = "cgroup v2 not mounted" };
        struct ipcns_limits l;
        char *err = NULL;

        ipcns_limits_for(64ULL << 20, 4096, &l);
        assert_int_equal(l.shmmax, 64ULL << 20);
        assert_int_equal(l.shmall, 16384);
        assert_int_equal(l.shmmni, 4096);
        assert_int_equal(l.msgmnb, 16384);
        assert_int_equal(l.msgmni, 1024);       /* 16M of queues at most */
        assert_int_equal(l.semmns, 262144);     /* 16M of semaphores at most */
        assert_true(l.semmsl <= l.semmns && l.semmni <= 32000);
        /* a tiny limit still allows one of each, never zero */
        ipcns_limits_for(1000, 4096, &l);
        assert_int_equal(l.shmall, 1);
        assert_int_equal(l.shmmni, 1);
        assert_int_equal(l.msgmni, 1);
        assert_true(l.semmns >= 1);
        /* a huge one stays within the kernel's own caps */
        ipcns_limits_for(1ULL << 50, 4096, &l);
        assert_int_equal(l.msgmni, 32000);
        assert_int_equal(l.semmns, 1024000000);
        assert_int_equal(l.shmmni, 4096);

        setup_cfg(&cfg);
        ipcns_limits_for(cfg.memory_bytes, 4096, &l);
        json_t *r = enforcement_build(&cfg, NULL, &cg, 65534, 65534);
        enforcement_note_ipc(r, &cfg, &cg, &l, NULL);
        json_t *m = json_object_get(json_object_get(r, "limits"), "memory");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "ipc"), "shmall")), 16384);
        assert_true(json_is_true(json_object_get(m, "partial")));
        assert_non_null(strstr(reason(r, "memory"), "SysV shm is held apart"));
        assert_null(strstr(reason(r, "memory"), "not counted: SysV shm"));
        cfg.require = strv_append(cfg.require, "memory");
        assert_int_equal(enforcement_check_required(&cfg, r, &err), -EOPNOTSUPP);
        free(err);
        json_decref(r);

        /* not set: the hole is named with the reason */
        r = enforcement_build(&cfg, NULL, &cg, 65534, 65534);
        enforcement_note_ipc(r, &cfg, &cg, NULL, "setting them failed: kernel/shmall: Permission denied");
        assert_null(json_object_get(json_object_get(json_object_get(r, "limits"), "memory"), "ipc"));
        assert_non_null(strstr(reason(r, "memory"), "not counted: SysV shm segments no process has attached "
                                                    "(setting them failed: kernel/shmall"));
        json_decref(r);
        run_config_done(&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(without_cgroup),
                cmocka_unit_test(with_cgroup),
                cmocka_unit_test(ipc_limits),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
