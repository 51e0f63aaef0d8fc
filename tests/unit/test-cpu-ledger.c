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

/* What /proc says at a round's end, for the ledger's second look; a
 * pid not listed is gone. */
static struct proc_now {
        pid_t pid;
        uint64_t start, kids_ms;
} procs_now[4];

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

static int setup(void **state)
{
        memset(procs_now, 0, sizeof(procs_now));
        *state = cpu_ledger_new();
        return 0;
}

static int teardown(void **state)
{
        cpu_ledger_free(*state);
        return 0;
}

/* A round of init (1, which has reaped init_kids ms) and a shell (2,
 * shell_kids) under it, and, if pid, a child of the shell that used own
 * ms; returns the carried total after it. */
static uint64_t round_of(struct cpu_ledger *l, uint64_t init_kids, uint64_t shell_kids, pid_t pid, uint64_t own)
{
        cpu_ledger_note(l, 1, 100, 0, 5, init_kids);
        cpu_ledger_note(l, 2, 110, 1, 10, shell_kids);
        if (pid)
                cpu_ledger_note(l, pid, 100 + (uint64_t)pid, 2, own, 0);
        return cpu_ledger_round_end(l, 1, read_now, NULL);
}

static void an_unwaited_child_is_carried(void **state)
{
        struct cpu_ledger *l = *state;
        assert_int_equal(round_of(l, 0, 0, 3, 400), 0);
        /* 3 is gone and the shell's children's time did not grow: the
         * kernel reaped it (SIGCHLD ignored); carried for good */
        assert_int_equal(round_of(l, 0, 0, 0, 0), 400);
        assert_int_equal(round_of(l, 0, 0, 0, 0), 400);
}

static void a_waited_child_is_in_its_parent(void **state)
{
        struct cpu_ledger *l = *state;
        assert_int_equal(round_of(l, 0, 0, 3, 400), 0);
        /* waited for: its 400 and what it used since are the shell's cutime */
        assert_int_equal(round_of(l, 0, 440, 0, 0), 0);
}

static void a_chain_that_left_settles_at_the_live_ancestor(void **state)
{
        struct cpu_ledger *l = *state;
        cpu_ledger_note(l, 4, 130, 3, 200, 0);
        assert_int_equal(round_of(l, 0, 0, 3, 100), 0);
        /* 3 waited for nobody (4 was reaped by the kernel), the shell
         * waited for 3: it gained 3's 100 (and a little more), not 4's */
        assert_int_equal(round_of(l, 0, 110, 0, 0), 190);
}

static void a_reused_pid_is_another_process(void **state)
{
        struct cpu_ledger *l = *state;
        assert_int_equal(round_of(l, 0, 0, 3, 300), 0);
        /* pid 3 again, started later: the first 3 is gone, unwaited-for */
        cpu_ledger_note(l, 3, 999, 2, 1, 0);
        assert_int_equal(round_of(l, 0, 0, 0, 0), 300);
}

static void orphans_init_waits_for_are_not_carried(void **state)
{
        struct cpu_ledger *l = *state;
        cpu_ledger_note(l, 5, 140, 1, 250, 0);
        assert_int_equal(round_of(l, 0, 0, 0, 0), 0);
        assert_int_equal(round_of(l, 260, 0, 0, 0), 0);
}

static void a_child_waited_for_after_the_walk_passed_its_parent_is_not_carried(void **state)
{
        struct cpu_ledger *l = *state;
        assert_int_equal(round_of(l, 0, 0, 3, 400), 0);
        /* the walk read the shell (0) before it reaped 3 (430 now) */
        procs_now[0] = (struct proc_now) { 2, 110, 430 };
        assert_int_equal(round_of(l, 0, 0, 0, 0), 0);
        /* and next round its time is where the live sum sees it */
        assert_int_equal(round_of(l, 0, 430, 0, 0), 0);
}

static void a_live_process_the_walk_missed_is_not_carried(void **state)
{
        struct cpu_ledger *l = *state;
        assert_int_equal(round_of(l, 0, 0, 3, 400), 0);
        procs_now[0] = (struct proc_now) { 3, 103, 0 };       /* alive, unlisted */
        assert_int_equal(round_of(l, 0, 0, 0, 0), 0);
        assert_int_equal(round_of(l, 0, 0, 3, 500), 0);
        /* once it is really gone, unwaited-for, it is carried */
        procs_now[0] = (struct proc_now) { 0 };
        assert_int_equal(round_of(l, 0, 0, 0, 0), 500);
}

static void an_orphan_init_reaped_is_not_carried(void **state)
{
        struct cpu_ledger *l = *state;
        cpu_ledger_note(l, 4, 130, 3, 300, 0);
        assert_int_equal(round_of(l, 0, 0, 3, 50), 0);
        /* 3 left (the shell waited), 4 was orphaned and init reaped it */
        assert_int_equal(round_of(l, 310, 55, 0, 0), 0);
}

int main(void)
{
        cmocka_set_message_output(CM_OUTPUT_TAP);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(an_unwaited_child_is_carried, setup, teardown),
                cmocka_unit_test_setup_teardown(a_waited_child_is_in_its_parent, setup, teardown),
                cmocka_unit_test_setup_teardown(a_chain_that_left_settles_at_the_live_ancestor, setup, teardown),
                cmocka_unit_test_setup_teardown(a_reused_pid_is_another_process, setup, teardown),
                cmocka_unit_test_setup_teardown(orphans_init_waits_for_are_not_carried, setup, teardown),
                cmocka_unit_test_setup_teardown(a_child_waited_for_after_the_walk_passed_its_parent_is_not_carried,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(a_live_process_the_walk_missed_is_not_carried, setup, teardown),
                cmocka_unit_test_setup_teardown(an_orphan_init_reaped_is_not_carried, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
