/* iomax.h - moved to config/iomax.h: parsing the io_max items is the
 * profile's business; writing io.max stays in limits/cgroup-run.c. This
 * forwarder only keeps cli/run.c's include working until the run's
 * split (src/run/) includes config/iomax.h itself; then delete it. */
#pragma once

#include "config/iomax.h"
