/* status.h - the one status every run ends with (DESIGN §3): a value of
 * the record, as stored and shown; the supervisor (supervise/) decides
 * which one a run gets. */
#pragma once

enum run_status {
        RUN_RUNNING,
        RUN_SUCCESS,            /* job exited 0 */
        RUN_FAILED,             /* job exited non-zero */
        RUN_SIGNALED,           /* job killed by a signal */
        RUN_TIMEOUT,            /* wall deadline hit */
        RUN_CPU_TIMEOUT,        /* cpu-time limit hit */
        RUN_OOM,                /* memory limit hit */
        RUN_CANCELLED,          /* Ctrl-C twice, SIGTERM to hutch, hutch kill */
        RUN_SETUP_ERROR,        /* sandbox could not be built */
        RUN_NOT_FOUND,          /* command not found */
        RUN_NOT_EXECUTABLE,     /* command could not be executed */
        RUN_COMPILE_ERROR,      /* a language's compile step failed */
        RUN_ORPHANED,           /* supervisor died; found later */
        RUN_DISK_LIMIT,         /* the landlock tier's scratch over the disk limit */
        _RUN_STATUS_MAX,
        _RUN_STATUS_INVALID = -22,
};

const char *run_status_to_string(enum run_status s);
enum run_status run_status_from_string(const char *s);
