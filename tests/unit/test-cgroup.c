/* test-cgroup.c - unit tests for the cgroup v2 file parsers and the
 * cpus -> cpu.max conversion, fed with fixture text as real kernels
 * print it. Whether limits are enforced is a question for a real
 * kernel: tests/vm/ answers it. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "limits/cgroup.h"
#include "config/iomax.h"
#include "lib/util.h"

static void keyed(void **state)
{
        const char *text = "low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\n";
        uint64_t v;

        assert_int_equal(cgroup_parse_keyed(text, "high", &v), 0);
        assert_int_equal(v, 12);
        /* "max" the key is not "max" the value, and "oom" is not "oom_kill" */
        assert_int_equal(cgroup_parse_keyed(text, "max", &v), 0);
        assert_int_equal(v, 3);
        assert_int_equal(cgroup_parse_keyed(text, "oom", &v), 0);
        assert_int_equal(v, 1);
        assert_int_equal(cgroup_parse_keyed(text, "oom_group_kill", &v), -ENOENT);
        assert_int_equal(cgroup_parse_keyed("limit max\n", "limit", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(cgroup_parse_keyed("a 12x\n", "a", &v), -EINVAL);
        assert_int_equal(cgroup_parse_keyed("a 1", "a", &v), 0);      /* no final newline */
        assert_int_equal(v, 1);
        assert_int_equal(cgroup_parse_keyed("", "a", &v), -ENOENT);
        assert_int_equal(cgroup_parse_keyed(NULL, "a", &v), -ENOENT);
}

static void cpu_stat(void **state)
{
        /* 6.1 with the cpu controller enabled */
        const char *full =
                "usage_usec 1523441\n"
                "user_usec 1023441\n"
                "system_usec 500000\n"
                "nr_periods 31\n"
                "nr_throttled 17\n"
                "throttled_usec 842211\n"
                "nr_bursts 0\n"
                "burst_usec 0\n";
        /* without it: only the core fields */
        const char *core = "usage_usec 42\nuser_usec 40\nsystem_usec 2\n";
        struct cgroup_cpu_stat s;

        assert_int_equal(cgroup_parse_cpu_stat(full, &s), 0);
        assert_int_equal(s.usage_usec, 1523441);
        assert_int_equal(s.user_usec, 1023441);
        assert_int_equal(s.system_usec, 500000);
        assert_int_equal(s.nr_periods, 31);
        assert_int_equal(s.nr_throttled, 17);
        assert_int_equal(s.throttled_usec, 842211);
        assert_true(s.has_throttle);

        assert_int_equal(cgroup_parse_cpu_stat(core, &s), 0);
        assert_int_equal(s.usage_usec, 42);
        assert_false(s.has_throttle);
        assert_int_equal(s.nr_throttled, 0);

        assert_int_equal(cgroup_parse_cpu_stat("user_usec 1\n", &s), -EINVAL);
        assert_int_equal(cgroup_parse_cpu_stat("", &s), -EINVAL);
}

static void memory_events(void **state)
{
        struct cgroup_memory_events e;

        assert_int_equal(cgroup_parse_memory_events(
                "low 0\nhigh 1804\nmax 212\noom 2\noom_kill 1\noom_group_kill 0\n", &e), 0);
        assert_int_equal(e.high, 1804);
        assert_int_equal(e.max, 212);
        assert_int_equal(e.oom, 2);
        assert_int_equal(e.oom_kill, 1);
        assert_int_equal(e.oom_group_kill, 0);

        /* older kernels lack oom_group_kill */
        assert_int_equal(cgroup_parse_memory_events("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", &e), 0);
        assert_int_equal(e.oom_kill, 0);
        assert_int_equal(cgroup_parse_memory_events("nonsense 1\n", &e), -EINVAL);
}

static void pids_events(void **state)
{
        uint64_t v = 99;
        assert_int_equal(cgroup_parse_pids_events("max 0\n", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(cgroup_parse_pids_events("max 4711\n", &v), 0);
        assert_int_equal(v, 4711);
        assert_int_equal(cgroup_parse_pids_events("", &v), -EINVAL);
}

static void io_stat(void **state)
{
        struct cgroup_io_stat s;
        assert_int_equal(cgroup_parse_io_stat(
                "254:0 rbytes=1048576 wbytes=4096 rios=12 wios=1 dbytes=0 dios=0\n"
                "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6\n", &s), 0);
        assert_int_equal(s.rbytes, 1048577);
        assert_int_equal(s.wbytes, 4098);
        assert_int_equal(s.rios, 15);
        assert_int_equal(s.wios, 5);
        assert_int_equal(s.dbytes, 5);
        assert_int_equal(s.dios, 6);
        assert_int_equal(cgroup_parse_io_stat("", &s), 0);
        assert_int_equal(s.rbytes, 0);
        assert_int_equal(cgroup_parse_io_stat("8:0 rbytes=x\n", &s), -EINVAL);
        /* unknown keys (cost.* with iocost) are skipped */
        assert_int_equal(cgroup_parse_io_stat("8:0 rbytes=7 cost.usage=3\n", &s), 0);
        assert_int_equal(s.rbytes, 7);
}

static void controllers(void **state)
{
        assert_int_equal(cgroup_parse_controllers("cpuset cpu io memory hugetlb pids rdma misc\n"),
                         CGROUP_ALL);
        assert_int_equal(cgroup_parse_controllers("memory pids\n"), CGROUP_MEMORY | CGROUP_PIDS);
        assert_int_equal(cgroup_parse_controllers("cpuset\n"), 0);
        assert_int_equal(cgroup_parse_controllers(""), 0);
        assert_int_equal(cgroup_parse_controllers(NULL), 0);
        assert_string_equal(cgroup_controller_name(CGROUP_IO), "io");
        assert_null(cgroup_controller_name(CGROUP_CPU | CGROUP_IO));
}

static void proc_cgroup(void **state)
{
        char *p = NULL;

        /* pure v2 */
        assert_int_equal(cgroup_parse_proc_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n", &p), 0);
        assert_string_equal(p, "/user.slice/user-1000.slice/session-2.scope");
        free(p);
        /* hybrid: v1 lines first */
        assert_int_equal(cgroup_parse_proc_cgroup(
                "12:pids:/user.slice\n4:memory:/x\n1:name=systemd:/user.slice\n0::/user.slice/a b\n", &p), 0);
        assert_string_equal(p, "/user.slice/a b");
        free(p);
        assert_int_equal(cgroup_parse_proc_cgroup("0::/\n", &p), 0);
        assert_string_equal(p, "/");
        free(p);
        assert_int_equal(cgroup_parse_proc_cgroup("0::/gone (deleted)\n", &p), 0);
        assert_string_equal(p, "/gone");
        free(p);
        /* pure v1 */
        p = NULL;
        assert_int_equal(cgroup_parse_proc_cgroup("4:memory:/x\n1:cpu:/\n", &p), -ENOENT);
        assert_null(p);
        assert_int_equal(cgroup_parse_proc_cgroup("", &p), -ENOENT);
}

static void io_max_items(void **state)
{
        _cleanup_free_ char *lines = NULL, *err = NULL;

        assert_null(iomax_check("8:0 wbps=10M"));
        assert_null(iomax_check("259:3 rbps=max riops=1000 wiops=50"));
        assert_null(iomax_check("/dev/vda wbps=1M"));
        assert_non_null(iomax_check("8:0"));            /* no key */
        assert_non_null(iomax_check("8 wbps=1M"));      /* not MAJ:MIN */
        assert_non_null(iomax_check("8:0 wbps=1Q"));    /* bad size */
        assert_non_null(iomax_check("8:0 riops=1M"));   /* iops take no units */
        assert_non_null(iomax_check("8:0 wbps=0"));     /* 0 would stop all I/O */
        assert_non_null(iomax_check("8:0 bogus=1"));
        assert_non_null(iomax_check("vda wbps=1M"));    /* paths are absolute */

        char *items[] = { "8:0 wbps=1M riops=max", "8:16 rbps=2K", NULL };
        assert_int_equal(iomax_lines(items, &lines, &err), 0);
        assert_string_equal(lines, "8:0 wbps=1048576 riops=max\n8:16 rbps=2048");
        free(TAKE_PTR(lines));

        char *none[] = { NULL };
        assert_int_equal(iomax_lines(none, &lines, &err), 0);
        assert_null(lines);

        /* /dev/null is a character device, not a disk */
        char *chr[] = { "/dev/null wbps=1M", NULL };
        assert_int_equal(iomax_lines(chr, &lines, &err), -ENOTBLK);
        assert_non_null(strstr(err, "/dev/null"));
        free(TAKE_PTR(err));
        char *missing[] = { "/dev/no-such-disk wbps=1M", NULL };
        assert_int_equal(iomax_lines(missing, &lines, &err), -ENOENT);
        assert_non_null(strstr(err, "no-such-disk"));
}

static void cpus_to_max(void **state)
{
        char buf[64];

        assert_int_equal(cgroup_cpus_to_max(0.5, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "50000 100000");
        assert_int_equal(cgroup_cpus_to_max(1.0, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "100000 100000");
        assert_int_equal(cgroup_cpus_to_max(2.25, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "225000 100000");
        assert_int_equal(cgroup_cpus_to_max(0.333333, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "33333 100000");
        /* below the kernel's 1 ms minimum quota */
        assert_int_equal(cgroup_cpus_to_max(0.001, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "1000 100000");
        assert_int_equal(cgroup_cpus_to_max(0.0, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "max 100000");
        assert_int_equal(cgroup_cpus_to_max(-1.0, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "max 100000");
        assert_int_equal(cgroup_cpus_to_max(1e9, buf, sizeof(buf)), -ERANGE);
        assert_int_equal(cgroup_cpus_to_max(__builtin_nan(""), buf, sizeof(buf)), -ERANGE);
}

static void run_name_checked(void **state)
{
        struct cgroup_run *cg = NULL;
        struct cgroup_limits lim = { 0 };
        /* no filesystem is touched for a bad name */
        assert_int_equal(cgroup_run_new("/nonexistent", "a/b", 0, &lim, &cg), -EINVAL);
        assert_int_equal(cgroup_run_new("/nonexistent", "..", 0, &lim, &cg), -EINVAL);
        assert_int_equal(cgroup_run_new("/nonexistent", "", 0, &lim, &cg), -EINVAL);
        assert_null(cg);
        assert_null(cgroup_run_free(NULL));
}

static void run_open_checked(void **state)
{
        struct cgroup_run *cg = NULL;
        char dir[] = "/tmp/hutch-test-cgroup-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *run = xasprintf("%s/run-01ABC", dir);
        _cleanup_free_ char *other = xasprintf("%s/home", dir);

        /* gc only ever touches cgroup v2 directories named run-* */
        assert_int_equal(mkdir(other, 0700), 0);
        assert_int_equal(cgroup_run_open(other, &cg), -EINVAL);
        assert_int_equal(cgroup_run_open(run, &cg), -ENOENT);
        assert_int_equal(mkdir(run, 0700), 0);
        assert_int_equal(cgroup_run_open(run, &cg), -EINVAL);     /* not cgroup2 */
        assert_int_equal(cgroup_run_open("/sys/fs/cgroup/../../tmp/run-1", &cg), -EINVAL);
        assert_null(cg);
        rmdir(run);
        rmdir(other);
        rmdir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(keyed),
                cmocka_unit_test(cpu_stat),
                cmocka_unit_test(memory_events),
                cmocka_unit_test(pids_events),
                cmocka_unit_test(io_stat),
                cmocka_unit_test(controllers),
                cmocka_unit_test(proc_cgroup),
                cmocka_unit_test(cpus_to_max),
                cmocka_unit_test(io_max_items),
                cmocka_unit_test(run_name_checked),
                cmocka_unit_test(run_open_checked),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
