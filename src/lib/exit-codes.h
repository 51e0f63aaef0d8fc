/* exit-codes.h - every exit code hutch itself chooses, in one place.
 * The man pages (hutch.1, hutch-run.1) repeat this table; keep them in step.
 * `hutch run` otherwise passes the job's own exit code through.
 */
#pragma once

enum {
        EXIT_OK = 0,
        EXIT_FAILURE_GENERIC = 1, /* a history verb failed (no such run, …) */
        EXIT_USAGE = 2,           /* bad command line or --request document */
        EXIT_DAMAGED = 3,         /* logs/show/cp: stored output or a blob does not match
                                   * its checksum (the record is damaged) */
        EXIT_BUSY = 75,           /* a retryable refusal (EX_TEMPFAIL): run --id KEY while a
                                   * run with KEY is still running, a store locked past its
                                   * busy timeout, a full node (admission); the hutch.error/1
                                   * answer says retryable: true and which code */
        EXIT_TIMEOUT = 124,       /* wall-clock or cpu-time limit hit */
        EXIT_SETUP = 125,         /* sandbox could not be built, bad profile, store unusable */
        EXIT_NOT_EXECUTABLE = 126,/* command found but could not be executed */
        EXIT_NOT_FOUND = 127,     /* command not found */
        EXIT_SIGNAL_BASE = 128,   /* job killed by signal N exits 128+N */
        EXIT_OOM = 137,           /* memory limit hit (128+SIGKILL) */
        EXIT_DISK = 153,          /* the landlock tier's disk limit hit (128+SIGXFSZ, what
                                   * one file past RLIMIT_FSIZE gets too) */
        EXIT_CANCELLED_INT = 130, /* cancelled by Ctrl-C (128+SIGINT) */
        EXIT_CANCELLED_TERM = 143,/* cancelled by SIGTERM to hutch (128+SIGTERM) */
};
