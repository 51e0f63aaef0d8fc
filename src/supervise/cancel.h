/* cancel.h - `hutch kill` from another process, as one queued signal.
 *
 * The canceller sends SIGTERM to the run's supervisor with sigqueue's
 * value carrying what to do (the signal for the job, the grace before
 * SIGKILL). A plain SIGTERM still means "cancel with the profile's
 * grace", so a supervisor that does not understand the value (or a
 * `kill PID` by hand) still cancels. The value is only a request: the
 * supervisor checks it and always ends with SIGKILL to init, so the
 * whole tree dies whatever the job does with the signal.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define CANCEL_MAGIC 0x4855ull          /* "HU" in the top 16 bits */
#define CANCEL_GRACE_GIVEN (1ull << 40) /* else: the profile's grace */

struct cancel_request {
        int signal;             /* sent to the job first (1..64) */
        bool grace_given;
        uint64_t grace_ms;      /* then SIGKILL after this (< 2^32) */
};

/* Pack r into a sigval pointer value. */
static inline uint64_t cancel_encode(const struct cancel_request *r)
{
        return CANCEL_MAGIC << 48 | (uint64_t)(r->signal & 0xff) << 32 |
               (r->grace_given ? CANCEL_GRACE_GIVEN : 0) | (r->grace_ms & 0xffffffffull);
}

/* Unpack a queued value; false if it is not one of ours. */
static inline bool cancel_decode(uint64_t v, struct cancel_request *ret)
{
        int sig = (int)(v >> 32 & 0xff);
        if (v >> 48 != CANCEL_MAGIC || sig < 1 || sig > 64)
                return false;
        ret->signal = sig;
        ret->grace_given = (v & CANCEL_GRACE_GIVEN) != 0;
        ret->grace_ms = v & 0xffffffffull;
        return true;
}
