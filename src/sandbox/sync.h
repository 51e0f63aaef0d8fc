/* sync.h - the messages the sandbox sends its supervisor.
 *
 * One SOCK_SEQPACKET socketpair links them, so every message arrives
 * whole and in order, and file descriptors (the pty master, the
 * workspace dirs) can ride along. The supervisor sends three messages:
 * "go" once the uid/gid maps are written; the job's syscall filter
 * (SANDBOX_MSG_FILTER, then the blob) as soon as it is built; and
 * "start" (SANDBOX_MSG_START alone) once the run is recorded.
 */
#pragma once

#include <stdint.h>

/* The first byte of the supervisor's messages; "go" is that byte alone. */
#define SANDBOX_MSG_GO 3
#define SANDBOX_MSG_FILTER 2
#define SANDBOX_MSG_START 1
/* A live sandbox's init (sandbox_inputs.live), after "start": fork a
 * job. The job's argv follows the byte, each string NUL-terminated; the
 * job's stdin, stdout and stderr ride along (SCM_RIGHTS), pipes the
 * supervisor made. init answers, in the order of the requests, with
 * SYNC_READY and the job's pid (after the job's own SYNC_EXEC_ERROR or
 * SYNC_SETUP_ERROR, if any), or with a SYNC_SETUP_ERROR of pid 0 when
 * it forked nothing; later SYNC_JOB_EXIT with the pid, its status and
 * what it cost. At most SANDBOX_LIVE_JOBS_MAX jobs at a time. */
#define SANDBOX_MSG_EXEC 4
/* A live sandbox's init: SIGKILL the process group of the job whose pid
 * (int32_t, init's view) follows the byte. */
#define SANDBOX_MSG_KILL 5
/* A live sandbox's init: make an unconnected TCP/IPv4 socket in the
 * sandbox's network namespace and send it back (SYNC_SOCKET, the fd
 * attached; error set and no fd when it could not). The byte alone; for
 * a published port (run/live-publish.c). */
#define SANDBOX_MSG_SOCKET 6
/* A live sandbox's init: SIGINT the job (alone) whose pid follows the
 * byte: a kernel call's deadline (run/live-kernel.c). */
#define SANDBOX_MSG_INTERRUPT 7
#define SANDBOX_LIVE_JOBS_MAX 16

enum sync_kind {
        SYNC_SETUP_ERROR = 1, /* building the sandbox failed: error, step, path */
        SYNC_READY,           /* job forked; a pty master fd may be attached */
        SYNC_EXEC_ERROR,      /* execve of the job failed: error, path */
        SYNC_JOB_EXIT,        /* job ended: status is its raw wait status, error
                               * SYNC_EXIT_ALONE or 0, reaped what it cost; sent
                               * again with SYNC_EXIT_ALONE once what the job
                               * left is killed and reaped: the last one counts */
        SYNC_COMPILE_FAILED,  /* the --lang compile step failed: status, path = compiler */
        SYNC_WORKSPACE,       /* root built, before the job: O_DIRECTORY fds of the
                               * workspace and (status = 2) the overlay upper dir */
        SYNC_SOCKET,          /* answer to SANDBOX_MSG_SOCKET: the socket attached, or error */
};

/* SYNC_JOB_EXIT's error field: init killed and reaped every process the
 * job left, so nothing runs in the sandbox any more and init only exits
 * from here on. */
#define SYNC_EXIT_ALONE 1

/* What processes cost, from getrusage(). */
struct sync_usage {
        int64_t utime_us, stime_us;
        int64_t maxrss_kb;
};

struct sync_msg {
        uint32_t kind;
        int32_t error;        /* positive errno */
        int32_t status;
        int32_t pid;          /* job's pid inside the sandbox */
        char step[96];        /* fits the longest step text (mount.c) */
        char path[416];
        /* SYNC_JOB_EXIT: what every process init reaped cost (the job's
         * tree, with SYNC_EXIT_ALONE all of it) */
        struct sync_usage reaped;
};
