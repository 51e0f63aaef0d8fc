/* test-slurm.c - unit tests for the Slurm step detection and capping
 * (limits/slurm.h) against a fake environment, /proc/self/cgroup and
 * cgroup tree: outside Slurm nothing changes; the environment and the
 * cgroup's memory limits only ever lower a limit; malformed values are
 * ignored; labels name the job, array task and node. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "lib/util.h"
#include "limits/slurm.h"

static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
        size_t n = strlen(name);
        for (const char *const *e = fake_env; e && *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return *e + n + 1;
        return NULL;
}

struct fixture {
        char dir[64];
        char *proc, *root;
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-slurm-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        f->proc = xasprintf("%s/cgroup", f->dir);
        f->root = xasprintf("%s/sys", f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
                return -1;
        free(f->proc);
        free(f->root);
        free(f);
        return 0;
}

static void put(const char *path, const char *text)
{
        _cleanup_free_ char *copy = xstrdup(path);
        *strrchr(copy, '/') = '\0';
        _cleanup_free_ char *cmd = xasprintf("mkdir -p '%s'", copy);
        assert_int_equal(system(cmd), 0);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

static void detect(struct fixture *f, const char *const *env, int affinity, struct slurm_step *ret)
{
        struct slurm_sources src = { .getenv = fake_getenv, .proc_self_cgroup = f->proc,
                                     .cgroup_root = f->root, .affinity_cpus = affinity };
        fake_env = env;
        assert_int_equal(slurm_detect_at(&src, ret), 0);
}

static void outside(void **state)
{
        struct fixture *f = *state;
        const char *const env[] = { "SLURM_MEM_PER_NODE=10", NULL };
        struct slurm_step st;
        uint64_t mem = 1 << 30;
        double cpus = 2;

        put(f->proc, "0::/user.slice/user-1000.slice/session-1.scope\n");
        detect(f, env, 1, &st);
        assert_false(st.found);
        assert_int_equal(slurm_cap(&st, &mem, &cpus), 0);
        assert_int_equal(mem, 1 << 30);
        assert_null(slurm_labels(&st));
        slurm_step_done(&st);
}

static void env_only_lowers(void **state)
{
        struct fixture *f = *state;
        const char *const env[] = { "SLURM_JOB_ID=42", "SLURM_ARRAY_JOB_ID=40", "SLURM_ARRAY_TASK_ID=2",
                                    "SLURMD_NODENAME=node2", "SLURM_MEM_PER_NODE=100",
                                    "SLURM_CPUS_ON_NODE=4", NULL };
        struct slurm_step st;
        uint64_t mem = 1 << 30;
        double cpus = 2;

        put(f->proc, "0::/\n");
        detect(f, env, 8, &st);
        assert_true(st.found);
        assert_string_equal(st.job_id, "42");
        assert_int_equal(st.memory_bytes, 100 << 20);
        assert_string_equal(st.memory_from, "SLURM_MEM_PER_NODE");
        /* memory lowered; 4 allocated cpus do not raise the profile's 2 */
        assert_int_equal(slurm_cap(&st, &mem, &cpus), SLURM_CAPPED_MEMORY);
        assert_int_equal(mem, 100 << 20);
        assert_true(cpus == 2);
        /* a profile without a memory limit takes the allocation's */
        mem = 0;
        assert_int_equal(slurm_cap(&st, &mem, &cpus), SLURM_CAPPED_MEMORY);
        assert_int_equal(mem, 100 << 20);
        /* a smaller profile value stays */
        mem = 10 << 20;
        cpus = 0.5;
        assert_int_equal(slurm_cap(&st, &mem, &cpus), 0);
        assert_int_equal(mem, 10 << 20);

        _cleanup_strv_ char **labels = slurm_labels(&st);
        assert_int_equal(strv_length(labels), 4);
        assert_true(strv_contains(labels, "slurm.job_id=42"));
        assert_true(strv_contains(labels, "slurm.array_task_id=2"));
        assert_true(strv_contains(labels, "slurm.node=node2"));
        json_t *r = slurm_report(&st, SLURM_CAPPED_MEMORY, false);
        assert_string_equal(json_string_value(json_array_get(json_object_get(r, "capped"), 0)), "memory");
        json_decref(r);
        slurm_step_done(&st);
}

static void malformed_ignored(void **state)
{
        struct fixture *f = *state;
        const char *const env[] = { "SLURM_JOB_ID=7", "SLURMD_NODENAME=a b", "SLURM_ARRAY_TASK_ID=-1",
                                    "SLURM_MEM_PER_NODE=100M", "SLURM_CPUS_ON_NODE=0x10",
                                    "SLURM_MEM_PER_CPU=99999999999999999", NULL };
        struct slurm_step st;

        put(f->proc, "0::/\n");
        detect(f, env, 0, &st);
        assert_true(st.found);
        assert_null(st.node);
        assert_null(st.array_task_id);
        assert_int_equal(st.memory_bytes, 0);
        assert_true(st.cpus == 0);
        slurm_step_done(&st);
}

static void cgroup_v2_limit(void **state)
{
        struct fixture *f = *state;
        const char *const env[] = { "SLURM_MEM_PER_NODE=1000", NULL };
        const char *job = "/system.slice/slurmstepd.scope/job_9/step_0/user/task_0";
        struct slurm_step st;

        /* no SLURM_JOB_ID: the cgroup alone says Slurm, and its ancestors'
         * memory.max is the kernel's figure, below the environment's */
        _cleanup_free_ char *line = xasprintf("0::%s\n", job);
        put(f->proc, line);
        _cleanup_free_ char *leaf = xasprintf("%s%s/memory.max", f->root, job);
        _cleanup_free_ char *jobdir = xasprintf("%s/system.slice/slurmstepd.scope/job_9/memory.max", f->root);
        put(leaf, "max\n");
        put(jobdir, "52428800\n");
        detect(f, env, 1, &st);
        assert_true(st.found);
        assert_null(st.job_id);
        assert_string_equal(st.cgroup, job);
        assert_int_equal(st.memory_bytes, 52428800);
        assert_non_null(strstr(st.memory_from, "memory.max"));
        assert_true(st.cpus == 1);
        assert_string_equal(st.cpus_from, "the cpu affinity mask");
        slurm_step_done(&st);
}

static void cgroup_v1_limit(void **state)
{
        struct fixture *f = *state;
        const char *const env[] = { "SLURM_JOB_ID=3", NULL };
        const char *job = "/slurm/uid_1000/job_3/step_batch/task_0";
        struct slurm_step st;

        _cleanup_free_ char *lines = xasprintf("4:memory:%s\n2:cpu,cpuacct:%s\n0::/\n", job, job);
        put(f->proc, lines);
        _cleanup_free_ char *file = xasprintf("%s/memory/slurm/uid_1000/job_3/memory.limit_in_bytes", f->root);
        _cleanup_free_ char *leaf = xasprintf("%s/memory%s/memory.limit_in_bytes", f->root, job);
        put(file, "209715200\n");
        put(leaf, "9223372036854771712\n");
        detect(f, env, 0, &st);
        assert_string_equal(st.cgroup, job);
        assert_int_equal(st.memory_bytes, 209715200);
        slurm_step_done(&st);
}

/* The text a caller already read (hutch run reads /proc/self/cgroup once
 * for this and its cgroup) is what counts, not the file. */
static void cgroup_text_given(void **state)
{
        struct fixture *f = *state;
        const char *const env[] = { NULL };
        const char *job = "/system.slice/slurmstepd.scope/job_5/step_0/user/task_0";
        struct slurm_step st;

        put(f->proc, "0::/user.slice\n");
        _cleanup_free_ char *jobmax = xasprintf("%s/system.slice/slurmstepd.scope/job_5/memory.max", f->root);
        put(jobmax, "104857600\n");
        _cleanup_free_ char *text = xasprintf("0::%s\n", job);
        struct slurm_sources src = { .getenv = fake_getenv, .proc_self_cgroup = f->proc,
                                     .self_cgroup_text = text, .cgroup_root = f->root };
        fake_env = env;
        assert_int_equal(slurm_detect_at(&src, &st), 0);
        assert_true(st.found);
        assert_string_equal(st.cgroup, job);
        assert_int_equal(st.memory_bytes, 104857600);
        slurm_step_done(&st);

        /* and the file when there is none */
        src.self_cgroup_text = NULL;
        assert_int_equal(slurm_detect_at(&src, &st), 0);
        assert_false(st.found);
        slurm_step_done(&st);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(outside, setup, teardown),
                cmocka_unit_test_setup_teardown(env_only_lowers, setup, teardown),
                cmocka_unit_test_setup_teardown(malformed_ignored, setup, teardown),
                cmocka_unit_test_setup_teardown(cgroup_v2_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(cgroup_v1_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(cgroup_text_given, setup, teardown),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
