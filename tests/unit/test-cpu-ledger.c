/* test-cpu-ledger.c - the cpu of processes that left the tree unwaited-for
 * is carried; that of waited-for ones is not counted twice. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
        assert_int_equal(cpu_ledger_round_end(l), 0);
        /* 3 is gone and the shell's children's time did not grow: the
         * kernel reaped it (SIGCHLD ignored) */
        base(l, 0);
        assert_int_equal(cpu_ledger_round_end(l), 400);
        /* carried for good */
        base(l, 0);
        assert_int_equal(cpu_ledger_round_end(l), 400);
        cpu_ledger_free(l);
}

static void a_waited_child_is_in_its_parent(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 400, 30);
        assert_int_equal(cpu_ledger_round_end(l), 0);
        /* waited for: its 430 and what it used since are the shell's cutime */
        base(l, 470);
        assert_int_equal(cpu_ledger_round_end(l), 0);
        cpu_ledger_free(l);
}

static void a_chain_that_left_settles_at_the_live_ancestor(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 100, 0);
        cpu_ledger_note(l, 4, 130, 3, 200, 0);
        assert_int_equal(cpu_ledger_round_end(l), 0);
        /* 3 waited for nobody (4 was reaped by the kernel), the shell
         * waited for 3: it gained 3's 100 (and a little more), not 4's */
        base(l, 110);
        assert_int_equal(cpu_ledger_round_end(l), 190);
        cpu_ledger_free(l);
}

static void a_reused_pid_is_another_process(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 3, 120, 2, 300, 0);
        assert_int_equal(cpu_ledger_round_end(l), 0);
        /* pid 3 again, started later: the first 3 is gone, unwaited-for */
        base(l, 0);
        cpu_ledger_note(l, 3, 999, 2, 1, 0);
        assert_int_equal(cpu_ledger_round_end(l), 300);
        cpu_ledger_free(l);
}

static void orphans_init_waits_for_are_not_carried(void **state)
{
        (void)state;
        struct cpu_ledger *l = cpu_ledger_new();
        base(l, 0);
        cpu_ledger_note(l, 5, 140, 1, 250, 0);
        assert_int_equal(cpu_ledger_round_end(l), 0);
        cpu_ledger_note(l, 1, 100, 0, 5, 260);
        cpu_ledger_note(l, 2, 110, 1, 10, 0);
        assert_int_equal(cpu_ledger_round_end(l), 0);
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
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
