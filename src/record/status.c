/* status.c - names of run statuses, as stored and printed. */
#include "config.h"

#include "record/status.h"
#include "lib/util.h"

static const char *const names[_RUN_STATUS_MAX] = {
        [RUN_RUNNING] = "running",
        [RUN_SUCCESS] = "success",
        [RUN_FAILED] = "failed",
        [RUN_SIGNALED] = "signaled",
        [RUN_TIMEOUT] = "timeout",
        [RUN_CPU_TIMEOUT] = "cpu_timeout",
        [RUN_OOM] = "oom",
        [RUN_CANCELLED] = "cancelled",
        [RUN_SETUP_ERROR] = "setup_error",
        [RUN_NOT_FOUND] = "not_found",
        [RUN_NOT_EXECUTABLE] = "not_executable",
        [RUN_COMPILE_ERROR] = "compile_error",
        [RUN_ORPHANED] = "orphaned",
        [RUN_DISK_LIMIT] = "disk_limit",
};

const char *run_status_to_string(enum run_status s)
{
        return s >= 0 && s < _RUN_STATUS_MAX ? names[s] : "unknown";
}

enum run_status run_status_from_string(const char *s)
{
        for (int i = 0; i < _RUN_STATUS_MAX; i++)
                if (streq(s, names[i]))
                        return (enum run_status)i;
        return _RUN_STATUS_INVALID;
}
