/* build-kind.c - which of hutch's two builds is running (build-kind.h).
 * hutch-static links its own copy, compiled with HUTCH_STATIC_BUILD,
 * ahead of src/libhutch.a, whose copy is then never pulled in. */
#include "config.h"

#include "lib/build-kind.h"

bool build_is_static(void)
{
#ifdef HUTCH_STATIC_BUILD
        return true;
#else
        return false;
#endif
}
