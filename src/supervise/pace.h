/* pace.h - when the supervisor batches a streaming job's output.
 *
 * A job streaming output wakes the supervisor on every write into an
 * empty pipe: two context switches per few KiB (a 1 GiB stream took 50k
 * of them). Pausing after a big round, about as long as the pipe takes
 * to fill halfway at the rate just seen, lets the next round move
 * hundreds of KiB at once. Whether that pays depends on the host, not on
 * the job: with other work on every CPU the wakeups are what costs, and
 * pacing was 0.62-0.93 of relaying at once; on an idle host the pauses
 * are what costs, and relaying at once was 0.75 of pacing (1 GiB, 2
 * CPUs). So the relay tries both, in turns, while output streams, and
 * keeps the faster. Pure bookkeeping on the times it is given, so that
 * it can be tested without a clock.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pace {
        uint64_t last_round_ns;         /* when output was last relayed */
        uint64_t epoch_start_ns;        /* the measuring epoch's start */
        uint64_t epoch_bytes;           /* relayed in it */
        unsigned epoch;                 /* 0, 1: the trial (at once, paced);
                                         * then the winner's epochs */
        bool paced;                     /* the way in use */
        double rate[2];                 /* bytes per ns in the last trial:
                                         * [0] at once, [1] paced */
};

/* Rounds that move less than this are relayed at once and not paced. */
#define PACE_MIN_BYTES (64u << 10)
/* The longest pause. */
#define PACE_MAX_NS 2000000ull
/* One measurement: this long, and at least this much output, else it
 * goes on (a job that pauses is not measured on its pauses). */
#define PACE_EPOCH_NS 100000000ull
#define PACE_EPOCH_MIN_BYTES (16u << 20)
/* Epochs the winner keeps before the next trial. */
#define PACE_HOLD_EPOCHS 20u

void pace_init(struct pace *p, uint64_t now_ns);

/* After a round that relayed `moved` bytes at now_ns, from a pipe of
 * `capacity` bytes (0: a pty, never paced): how long to pause before
 * the next round, 0 for none. The caller sleeps, then calls
 * pace_resumed(). */
uint64_t pace_pause_ns(struct pace *p, uint64_t now_ns, size_t moved, size_t capacity);

/* The pause is over at now_ns. */
void pace_resumed(struct pace *p, uint64_t now_ns);
