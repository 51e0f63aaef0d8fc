/* pace.c - when the supervisor batches a streaming job's output (see
 * pace.h). */
#include "config.h"

#include "supervise/pace.h"
#include "lib/util.h"

void pace_init(struct pace *p, uint64_t now_ns)
{
        *p = (struct pace) { .last_round_ns = now_ns, .epoch_start_ns = now_ns };
}

/* An epoch is over: note its rate and move on to the next way. */
static void end_epoch(struct pace *p, uint64_t now_ns)
{
        double rate = (double)p->epoch_bytes / (double)(now_ns - p->epoch_start_ns);

        if (p->epoch == 0) {
                p->rate[0] = rate;
                p->paced = true;
        } else if (p->epoch == 1) {
                p->rate[1] = rate;
                /* a tie goes to pacing: as fast, with fewer wakeups */
                p->paced = p->rate[1] >= p->rate[0] * 0.95;
        }
        p->epoch = p->epoch >= PACE_HOLD_EPOCHS + 1 ? 0 : p->epoch + 1;
        if (p->epoch == 0)
                p->paced = false;       /* a new trial, at once first */
        p->epoch_start_ns = now_ns;
        p->epoch_bytes = 0;
}

uint64_t pace_pause_ns(struct pace *p, uint64_t now_ns, size_t moved, size_t capacity)
{
        uint64_t since = now_ns - p->last_round_ns;

        p->last_round_ns = now_ns;
        p->epoch_bytes += moved;
        if (now_ns - p->epoch_start_ns >= PACE_EPOCH_NS) {
                if (p->epoch_bytes >= PACE_EPOCH_MIN_BYTES)
                        end_epoch(p, now_ns);
                else {
                        /* too little to tell: measure this way again */
                        p->epoch_start_ns = now_ns;
                        p->epoch_bytes = 0;
                }
        }
        if (!p->paced || moved < PACE_MIN_BYTES || capacity == 0)
                return 0;
        /* the pipe never fills because of the pause, so the job is not
         * slowed, and a job that writes little is relayed at once */
        uint64_t pause = since * (capacity / 2) / moved;
        return MIN(pause, PACE_MAX_NS);
}

void pace_resumed(struct pace *p, uint64_t now_ns)
{
        p->last_round_ns = now_ns;
}
