/* errcode.h - the stable error codes of hutch.error/1 and of a failed
 * hutch.result/1 (hutch-json(7) lists them), and which are retryable:
 * the same request, sent again unchanged later, may succeed. Codes are
 * only ever added, never change meaning. */
#pragma once

#include <stdbool.h>

/* Whether code is retryable: store_busy, admission_full,
 * idempotency_in_flight, sandbox_busy, wait_timeout. False for every other code,
 * known or not. */
bool errcode_retryable(const char *code);
