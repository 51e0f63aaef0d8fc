/* test-cpu-ledger.c - the cpu of processes that left the tree unwaited-for
 * is carried; that of waited-for ones is not counted twice. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <cmocka.h>

#include "limits/cpu-ledger.h"

/* init (1) with a shell (2) under it, in every round */
static void base(struct cpu_ledger *l, uint64_t shell_kids)
{
        cpu_ledger_note(l, 1, 100, 0, 5, 0);
        cpu_ledger_note(l, 2, 110, 1, 10, shell_kids);
}

static void an_unwaited_child_is_carried(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 400, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        /* 3 is gone and the shell's children's time did not grow: the
         * kernel reaped it (SIGCHLD ignored) */
        base(l, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 400);
        /* carried for good */
        base(l, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 400);
        cpu_ledger_free(l);
}

static void a_waited_child_is_in_its_parent(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 400, 30);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        /* waited for: its 430 and what it used since are the shell's cutime */
        base(l, 470);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        cpu_ledger_free(l);
}

static void a_chain_that_left_settles_at_the_live_ancestor(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 100, 0);
        cpu_ledger_note(l, 4, 130, 3, 200, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        /* 3 waited for nobody (4 was reaped by the kernel), the shell
         * waited for 3: it gained 3's 100 (and a little more), not 4's */
        base(l, 110);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 190);
        cpu_ledger_free(l);
}

static void a_reused_pid_is_another_process(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 300, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        /* pid 3 again, started later: the first 3 is gone, unwaited-for */
        base(l, 0);
        cpu_ledger_note(l, 3, 999, 2, 1, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 300);
        cpu_ledger_free(l);
}

static void orphans_init_waits_for_are_not_carried(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 5, 140, 1, 250, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        cpu_ledger_note(l, 1, 100, 0, 5, 260);
        cpu_ledger_note(l, 2, 110, 1, 10, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        cpu_ledger_free(l);
}

/* What /proc says now, for the ledger's second look. */
struct proc_now {
        pid_t pid;
        uint64_t start, kids_ms;
} procs_now[8];

static int read_now(pid_t pid, uint64_t *ret_start, uint64_t *ret_kids_ms, void *userdata)
{
        (void)userdata;
        for (size_t i = 0; i < sizeof(procs_now) / sizeof(procs_now[0]); i++)
                if (procs_now[i].pid == pid) {
                        *ret_start = procs_now[i].start;
                        *ret_kids_ms = procs_now[i].kids_ms;
                        return 0;
                }
        return -2;
}

static void a_child_waited_for_after_the_walk_passed_its_parent_is_not_carried(void **state)
{
        (void)state;
        memset(procs_now, 0, sizeof(procs_now));
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 400, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, read_now, NULL), 0);
        /* the walk read the shell (0) before it reaped 3 (now 430) */
        procs_now[0] = (struct proc_now) { 1, 100, 0 };
        procs_now[1] = (struct proc_now) { 2, 110, 430 };
        base(l, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, read_now, NULL), 0);
        /* and next round its time is where the live sum sees it */
        base(l, 430);
        assert_int_equal(cpu_ledger_round_end(l, 1, read_now, NULL), 0);
        cpu_ledger_free(l);
}

static void a_live_process_the_walk_missed_is_not_carried(void **state)
{
        (void)state;
        memset(procs_now, 0, sizeof(procs_now));
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 400, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, read_now, NULL), 0);
        procs_now[0] = (struct proc_now) { 3, 120, 0 };       /* alive */
        base(l, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, read_now, NULL), 0);
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 500, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, read_now, NULL), 0);
        /* and once it is really gone, unwaited-for, it is carried */
        procs_now[0] = (struct proc_now) { 0 };
        base(l, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, read_now, NULL), 500);
        cpu_ledger_free(l);
}

static void an_orphan_init_reaped_is_not_carried(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 50, 0);
        cpu_ledger_note(l, 4, 130, 3, 300, 0);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        /* 3 left (the shell waited), 4 was orphaned and init reaped it */
        cpu_ledger_note(l, 1, 100, 0, 5, 310);
        cpu_ledger_note(l, 2, 110, 1, 10, 55);
        assert_int_equal(cpu_ledger_round_end(l, 1, NULL, NULL), 0);
        cpu_ledger_free(l);
}

int main(void)
{
        cmocka_set_message_output(CM_OUTPUT_TAP);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(an_unwaited_child_is_carried),
                cmocka_unit_test(a_waited_child_is_in_its_parent),
                cmocka_unit_test(a_chain_that_left_settles_at_the_live_ancestor),
                cmocka_unit_test(a_reused_pid_is_another_process),
                cmocka_unit_test(orphans_init_waits_for_are_not_carried),
                cmocka_unit_test(a_child_waited_for_after_the_walk_passed_its_parent_is_not_carried),
                cmocka_unit_test(a_live_process_the_walk_missed_is_not_carried),
                cmocka_unit_test(an_orphan_init_reaped_is_not_carried),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
