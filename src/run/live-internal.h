/* run/live-internal.h - the control socket's wire, shared by the live
 * sandbox's supervisor (live.c) and its clients (live-exec.c). One
 * SOCK_SEQPACKET connection per request: every message arrives whole. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "run/live-kernel.h"
#include "run/live.h"

struct run_config;
struct run_outcome;
struct sandbox;

enum {
        LIVE_OP_EXEC = 'X',     /* client: live_req, then argv (NUL-terminated strings) */
        LIVE_OP_STOP = 'S',     /* client: stop; the connection stays open until the end */
        LIVE_OP_PING = 'P',     /* client: are you there */
        LIVE_OP_FDS = 'F',      /* supervisor: the job's stdout, stderr read ends attached */
        LIVE_OP_END = 'E',      /* supervisor: how the job ended (live_reply) */
        LIVE_OP_BUSY = 'B',     /* supervisor: another exec is running */
        LIVE_OP_PONG = 'p',
        LIVE_OP_KERNEL = 'K',   /* client: live_kreq, then the code; supervisor: FDS
                                 * (the kernel's output pipes), then END as live_kend
                                 * and value_len bytes of the value */
};

#define LIVE_ARGV_MAX (64u << 10) /* init.c takes no more */

struct live_req {
        char op;
        uint64_t timeout_ms;    /* 0: the sandbox profile's */
};

struct live_reply {
        char op;
        int32_t error;          /* positive errno: the exec failed (error, exec_failed) or the setup */
        int32_t exec_failed;    /* execve failed (127/126) rather than the job's setup */
        int32_t status;         /* raw wait status */
        int32_t timed_out;      /* killed at its deadline */
        int32_t stopped;        /* killed because the sandbox stopped */
        uint64_t wall_ms;
        int64_t utime_us, stime_us, maxrss_kb;
        char step[96];          /* a setup error's step */
        uint32_t limits_hit;    /* LIVE_LIMIT_* the sandbox reached while the job ran (live-limits.h) */
        char limit_message[300];/* what they were */
};

struct live_kreq {
        char op;
        uint64_t timeout_ms;    /* 0: the sandbox profile's */
        int32_t lang;           /* enum live_kernel_lang */
};

struct live_kend {
        struct live_reply r;    /* op END; wall_ms */
        int32_t status;         /* enum live_kernel_status */
        int32_t state_lost;
        uint32_t value_len;     /* UINT32_MAX: no value */
        char ename[64];
        char message[160];
};

/* The sandboxes dir (<state dir>/sandboxes, made 0700 and checked to be
 * ours), as an O_PATH fd; -errno, logged. */
int live_dir_open(void);
/* "/proc/self/fd/DIRFD/NAME.EXT" (sun_path is too short for a state dir
 * anywhere) */
char *live_path(int dirfd, const char *name, const char *ext);
/* Connect to name's control socket: fd or -errno (-ENOENT / -ECONNREFUSED:
 * no such live sandbox). */
int live_connect(int dirfd, const char *name);
/* The peer of fd is us: same uid, same user namespace (not a sandbox's
 * job, which is in one of its own). 0 or -EPERM. */
int live_peer_check(int fd);

/* The live supervisor's loop (live.c): serve the control socket from
 * when the sandbox's init says it is up (then the caller of `sandbox
 * start` is told, run_detach_started(notify)) until stop, idle timeout
 * or a signal, then kill and reap init. A sandbox that never came up
 * leaves notify alone: the caller gets the run's exit code and its
 * message. Fills out as supervise() does for the sandbox's own run. */
int live_serve(const struct run_config *cfg, const struct run_live *live, const char *run_id,
               struct sandbox *sb, struct run_outcome *out, int *notify);

/* The exec record's profile, limits and enforcement are the sandbox's
 * own run's (NAME.json names it), for an exec or a kernel call. */
struct store;
struct run_record;
void live_inherit_sandbox(struct store *s, int dirfd, const char *name, struct run_record *rec);

/* What live.c lends the kernels' supervisor code (live-kernel.c). */
struct live;
struct live_kernel;
struct live_kernels;
struct pollfd;

/* Ask init for a job running argv with stdio fds (ours still: the
 * caller closes them), owned by kernel k: its start and end are told to
 * live_kernel_job_started() / _ended(). 0 or -errno (-EBUSY: every job
 * slot is taken). */
int live_job_spawn(struct live *l, char **argv, const int fds[3], struct live_kernel *k);
/* SIGKILL the job's process group (kill), or SIGINT the job alone. */
void live_job_signal(struct live *l, int32_t pid, bool kill);
/* A kernel call started (busy) or ended: the idle timeout waits. */
void live_busy(struct live *l, bool busy);
/* The sandbox's resolved config: its timeout is a call's default. */
const struct run_config *live_config(const struct live *l);
/* Why a limit stops the sandbox ("stopped: memory limit ..."), or NULL
 * (live-limits.h). */
const char *live_limit_stop(const struct live *l);

/* live-kernel.c: the kernels of one live sandbox. */
#define LIVE_KERNELS_POLLFDS (4 * _LIVE_KERNEL_LANG_MAX)
struct live_kernels *live_kernels_new(void);
/* After init is gone: tell a waiting client, close everything. NULL ok. */
struct live_kernels *live_kernels_free(struct live_kernels *ks);
/* A LIVE_OP_KERNEL request of n bytes on connection fd (ours from here on). */
void live_kernels_request(struct live_kernels *ks, struct live *l, int fd, const char *buf, size_t n);
/* init forked k's job (pid), or it ended (raw wait status, or error:
 * a positive errno when it never ran, ESHUTDOWN when the sandbox
 * stopped). */
void live_kernel_job_started(struct live_kernel *k, struct live *l, int32_t pid);
void live_kernel_job_ended(struct live_kernel *k, struct live *l, int status, int error);
/* The fds to poll (LIVE_KERNELS_POLLFDS of p), the earliest deadline
 * (0: none), and what came of the poll. */
void live_kernels_poll(const struct live_kernels *ks, struct pollfd *p);
uint64_t live_kernels_deadline(const struct live_kernels *ks);
void live_kernels_events(struct live_kernels *ks, struct live *l, const struct pollfd *p);
