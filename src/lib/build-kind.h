/* build-kind.h - which of hutch's two builds is running.
 *
 * configure builds hutch linked against the system's shared libraries
 * and, with --enable-static, also hutch-static: one static PIE with the
 * C library and the other libraries inside. build-kind.c is compiled
 * into each with its own answer (HUTCH_STATIC_BUILD for the static one),
 * so code shared by both, in src/libhutch.a, asks here.
 */
#pragma once

#include <stdbool.h>

/* true in hutch-static */
bool build_is_static(void);
