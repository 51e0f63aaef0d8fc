/* test-pace.c - unit tests for the output relay's batching (pace.c):
 * a trial of relaying at once against pacing, on synthetic clocks, keeps
 * the faster way (a tie goes to pacing), does not decide on epochs with
 * too little output, tries again after its hold, and never pauses a pty
 * or a small round. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "supervise/pace.h"

#define MIB (1u << 20)
#define MS 1000000ull
#define PIPE (1u << 20)

/* Rounds of `bytes` every `step` ns until `until`; returns the pauses
 * asked for (their sum), *now advanced. */
static uint64_t stream(struct pace *p, uint64_t *now, uint64_t until, size_t bytes, uint64_t step)
{
        uint64_t paused = 0;
        while (*now < until) {
                *now += step;
                paused += pace_pause_ns(p, *now, bytes, PIPE);
        }
        return paused;
}

/* at once faster, paced slower: at once is kept */
static void keeps_at_once_when_faster(void **state)
{
        (void)state;
        struct pace p;
        uint64_t now = 0;
        pace_init(&p, now);
        /* the trial's first epoch relays at once: no pause; the round
         * that ends it is the paced epoch's first */
        assert_int_equal(stream(&p, &now, 99 * MS, MIB, MS), 0);
        assert_false(p.paced);
        (void)stream(&p, &now, 100 * MS, MIB, MS);
        assert_true(p.paced);
        /* its second paces, and streams at half the rate */
        assert_true(stream(&p, &now, 200 * MS, MIB, 2 * MS) > 0);
        assert_false(p.paced);
        assert_int_equal(stream(&p, &now, 400 * MS, MIB, MS), 0);
}

static void keeps_pacing_when_faster_or_even(void **state)
{
        (void)state;
        for (int even = 0; even < 2; even++) {
                struct pace p;
                uint64_t now = 0;
                pace_init(&p, now);
                (void)stream(&p, &now, 100 * MS, MIB, 2 * MS);
                /* paced: as fast (within 5%), or twice as fast */
                (void)stream(&p, &now, 200 * MS, MIB, even ? 2 * MS : MS);
                assert_true(p.paced);
                assert_true(stream(&p, &now, 300 * MS, MIB, MS) > 0);
        }
}

/* an epoch with less than PACE_EPOCH_MIN_BYTES decides nothing */
static void quiet_epochs_do_not_count(void **state)
{
        (void)state;
        struct pace p;
        uint64_t now = 0;
        pace_init(&p, now);
        (void)stream(&p, &now, 500 * MS, 128u << 10, 10 * MS);  /* 1.25 MiB per epoch */
        assert_int_equal(p.epoch, 0);
        assert_false(p.paced);
}

/* after PACE_HOLD_EPOCHS of the winner, the trial starts over at once */
static void tries_again_after_the_hold(void **state)
{
        (void)state;
        struct pace p;
        uint64_t now = 0;
        pace_init(&p, now);
        (void)stream(&p, &now, 100 * MS, MIB, 2 * MS);
        (void)stream(&p, &now, 200 * MS, MIB, MS);
        assert_true(p.paced);
        (void)stream(&p, &now, 200 * MS + PACE_HOLD_EPOCHS * 100 * MS, MIB, MS);
        assert_int_equal(p.epoch, 0);
        assert_false(p.paced);
}

static void never_a_pty_or_a_small_round(void **state)
{
        (void)state;
        struct pace p;
        uint64_t now = 0;
        pace_init(&p, now);
        p.paced = true;
        p.epoch = 2;
        assert_int_equal(pace_pause_ns(&p, now += MS, MIB, 0), 0);
        assert_int_equal(pace_pause_ns(&p, now += MS, PACE_MIN_BYTES - 1, PIPE), 0);
        /* half the pipe at the rate seen, at most PACE_MAX_NS */
        assert_int_equal(pace_pause_ns(&p, now += MS, PIPE / 4, PIPE), 2 * MS > PACE_MAX_NS ? PACE_MAX_NS : 2 * MS);
        assert_int_equal(pace_pause_ns(&p, now += 100 * MS, PACE_MIN_BYTES, PIPE), PACE_MAX_NS);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(keeps_at_once_when_faster),
                cmocka_unit_test(keeps_pacing_when_faster_or_even),
                cmocka_unit_test(quiet_epochs_do_not_count),
                cmocka_unit_test(tries_again_after_the_hold),
                cmocka_unit_test(never_a_pty_or_a_small_round),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
