/* errcode.c - which error codes are retryable (see errcode.h). */
#include "config.h"

#include "lib/errcode.h"
#include "lib/util.h"

bool errcode_retryable(const char *code)
{
        /* the rest (usage, bad_request, setup_refused, store_unusable,
         * damaged, not_found, failed, and a failed run's status) will
         * fail again the same way */
        static const char *const retryable[] = {
                "store_busy",            /* the store stayed locked past the busy timeout */
                "admission_full",        /* the node's run cap is reached */
                "sandbox_busy",          /* exec: the live sandbox's job slots, or its kernel, are in use */
                "idempotency_in_flight", /* run --id KEY: that run is still running */
                "wait_timeout",          /* wait: the run is still running */
        };
        for (size_t i = 0; code && i < ELEMENTSOF(retryable); i++)
                if (streq(retryable[i], code))
                        return true;
        return false;
}
