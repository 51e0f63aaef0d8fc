/* run/live-internal.h - the control socket's wire, shared by the live
 * sandbox's supervisor (live.c) and its clients (live-exec.c). One
 * SOCK_SEQPACKET connection per request: every message arrives whole. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "run/live-kernel.h"
#include "run/live.h"

struct egress;
struct run_config;
struct run_outcome;
struct sandbox;
struct store;

enum {
        LIVE_OP_EXEC = 'X',     /* client: live_req, its cwd, then argv (NUL-terminated strings) */
        LIVE_OP_STOP = 'S',     /* client: stop; the connection stays open until the end */
        LIVE_OP_PING = 'P',     /* client: are you there */
        LIVE_OP_CANCEL = 'C',   /* client, after EXEC: cancel it (live_req.flags: the
                                 * signal hutch exec got); the job's group is killed.
                                 * After KERNEL: the call is interrupted as at its
                                 * deadline; its END says cancelled */
        LIVE_OP_FDS = 'F',      /* supervisor: the run id; the job's stdout, stderr read ends
                                 * attached (and its stdin's write end with LIVE_EXEC_STDIN) */
        LIVE_OP_END = 'E',      /* supervisor: how the job ended (live_reply) */
        LIVE_OP_BUSY = 'B',     /* supervisor: another exec is running */
        LIVE_OP_PONG = 'p',
        LIVE_OP_FORK = 'C',     /* client: live_req (copy the workspace); supervisor:
                                 * live_fork_reply with the workspace dir attached;
                                 * the client hangs up when its copy is done */
        LIVE_OP_KERNEL = 'K',   /* client: live_kreq, then the code; supervisor: FDS
                                 * (the kernel's output pipes), then END as live_kend
                                 * and value_len bytes of the value */
        LIVE_OP_FINISH = 'R',   /* client, after END (LIVE_EXEC_FINISH): live_fin, then the
                                 * stored stdout and stderr; the supervisor completes
                                 * the run's record, synced, then answers DONE */
        LIVE_OP_DONE = 'D',     /* supervisor: live_reply; error 0: the record is complete
                                 * and durable; else the client records it itself */
};

#define LIVE_ARGV_MAX (64u << 10) /* init.c takes no more */

/* live_req.flags */
enum {
        LIVE_EXEC_STDIN = 1u << 0, /* the client feeds the job's stdin: FDS carries
                                    * the pipe's write end as a third fd */
        LIVE_EXEC_FINISH = 1u << 1, /* the client sends FINISH after END: the supervisor
                                     * writes the run's end (LIVE_OP_FINISH) */
};

/* Both ends are one hutch build; a sandbox started by another (an
 * upgrade meanwhile) is refused by either side, not misread. */
#define LIVE_WIRE_VERSION 6

/* live_reply.status of a job whose end was not heard: no wait status
 * (neither exited nor signalled) */
#define LIVE_STATUS_UNKNOWN (-1)

struct live_req {
        char op;
        uint16_t version;       /* LIVE_WIRE_VERSION */
        uint64_t timeout_ms;    /* 0: the sandbox profile's */
        uint32_t flags;         /* LIVE_EXEC_* */
};

struct live_reply {
        char op;
        uint16_t version;       /* LIVE_WIRE_VERSION */
        int32_t error;          /* positive errno: the exec failed (error, exec_failed) or the setup */
        int32_t exec_failed;    /* execve failed (127/126) rather than the job's setup */
        int32_t status;         /* raw wait status; LIVE_STATUS_UNKNOWN: the job's end
                                 * was not heard (the sandbox ended first) */
        int32_t timed_out;      /* killed at its deadline */
        int32_t stopped;        /* killed because the sandbox stopped */
        int32_t cancelled;      /* killed at the client's LIVE_OP_CANCEL: its signal */
        uint64_t wall_ms;
        int64_t utime_us, stime_us, maxrss_kb;
        char step[96];          /* a setup error's step */
        char run_id[32];        /* the exec's run, once the supervisor wrote its row
                                 * (FDS, and END after it); "" if it could not */
        uint32_t limits_hit;    /* LIVE_LIMIT_* the sandbox reached while the job ran (live-limits.h) */
        char limit_message[300];/* what they were */
};

struct live_kreq {
        char op;
        uint16_t version;       /* LIVE_WIRE_VERSION: another hutch's client is refused */
        uint64_t timeout_ms;    /* 0: the sandbox profile's */
        int32_t lang;           /* enum live_kernel_lang */
        uint32_t flags;         /* LIVE_EXEC_FINISH: record the call (its row before it,
                                 * its end at FINISH); then cwd_len bytes of the
                                 * client's cwd follow the code */
        uint32_t cwd_len;
};

/* FINISH: the end of a run as its client saw it (the outcome, and the
 * output it captured: out_len then err_len stored bytes follow). The
 * client is the one the row names (same uid, same user namespace, as
 * every client of the socket), the same that would write this end
 * itself without it. */
#define LIVE_FIN_DATA_MAX (60u << 10) /* more output: the client records it itself */
struct live_fin {
        char op;
        uint16_t version;
        int32_t status;         /* enum run_status */
        int32_t exit_code, signal;
        int32_t job_exit_code;  /* the job's own exit code, or -1 (struct run_record) */
        uint64_t wall_ms, cpu_user_ms, cpu_sys_ms, peak_memory_bytes;
        uint64_t out_total, out_lines, err_total, err_lines;
        uint32_t out_len, err_len;
        uint8_t out_truncated, err_truncated;
        char message[512];
};

struct live_kend {
        struct live_reply r;    /* op END; wall_ms */
        int32_t status;         /* enum live_kernel_status */
        int32_t state_lost;
        uint32_t value_len;     /* UINT32_MAX: no value */
        char ename[64];
        char message[160];
        uint64_t discarded;     /* bytes the kernel wrote between calls, pending when
                                 * this call began: dropped unread */
};

struct live_fork_reply {
        char op;                /* LIVE_OP_FORK, or LIVE_OP_BUSY */
        int32_t error;          /* positive errno: no fork (then no fd) */
        int32_t paused;         /* the sandbox's processes are frozen (cgroup) */
        uint64_t disk_bytes;    /* the copy's bounds: the sandbox's --disk, */
        uint64_t inodes;        /* limits.inodes, */
        uint64_t timeout_ms;    /* and how long it may take */
        char run_id[32];        /* the sandbox's own run */
        char why[160];          /* with error: in words */
};

/* A fork in progress on a live sandbox (live-fork.c): at most one; new
 * execs and kernel calls are answered busy until its client hangs up. */
struct live_fork {
        int fd;                 /* the fork's client, or -1 */
        int freeze_fd;          /* the run cgroup's cgroup.freeze while frozen, or -1 */
        uint64_t until_ms;      /* given up (thawed) at this time */
};
struct cgroup_run;
/* A LIVE_OP_FORK request on connection fd (ours from here on): refuse
 * it (workdir-backed, no workspace, a fork already running), or pause
 * the sandbox (freeze its cgroup when it has one) and lend the client
 * the workspace dir. */
void live_fork_request(struct live_fork *f, const struct run_config *cfg, const struct run_live *opts,
                       const char *run_id, int workspace_fd, struct cgroup_run *cg, int fd);
/* The fork's connection to poll (or -1), its deadline (0: none), and
 * what came of the poll: a hang-up (or the deadline, or end) thaws. */
int live_fork_pollfd(const struct live_fork *f);
uint64_t live_fork_deadline(const struct live_fork *f);
void live_fork_events(struct live_fork *f, short revents);
void live_fork_end(struct live_fork *f);
/* ",\"args\":[...]" for NAME.json: the run options start was given. */
char *live_fork_args_json(char **args);

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
 * message. Fills out as supervise() does for the sandbox's own run.
 * store is the sandbox's run's: each exec's row is written there
 * before its job starts, and the end of an exec whose client went away
 * is recorded there, and the sandbox's connections as they end: its
 * published ports' and what its egress helper (egress; pid 0: none)
 * reports (live-conns.h). */
int live_serve(const struct run_config *cfg, const struct run_live *live, struct store *store, const char *run_id,
               struct sandbox *sb, struct run_outcome *out, int *notify, struct egress *egress);

/* An exec's row, as the supervisor writes it before the job is asked
 * for (live-record.c): labelled sandbox=NAME, with the sandbox's
 * profile, limits and enforcement (sandbox_rec, may be NULL), argv and
 * the client's cwd; its supervisor is the client (pid, which `hutch
 * kill` signals and gc watches). One commit. 0 and the id in ret_id,
 * or -errno (store_error() says why). */
struct run_record;
int live_record_exec(struct store *s, const char *name, const struct run_record *sandbox_rec, char **argv,
                     const char *cwd, pid_t client, char ret_id[32]);
/* The same for a kernel call: argv "--kernel LANG", labelled
 * kernel=LANG too, its lang and code (len bytes) the record's. */
int live_record_kernel(struct store *s, const char *name, const struct run_record *sandbox_rec, const char *lang,
                       const char *code, size_t len, const char *cwd, pid_t client, char ret_id[32]);

/* A FINISH of n bytes for run run_id: its end, with the output, in one
 * final update, durable when it returns (store_run_finish()); the
 * supervisor waits for another writer's lock at most 1 s. 0, or
 * -errno (-EBADMSG: a malformed FINISH; the client then records the
 * end itself). A row no longer running is left alone (0). */
int live_record_finish(struct store *s, const char *run_id, const char *buf, size_t n);

/* The client of an exec went away before it heard of the job's end
 * (killed, or its store unusable): complete its run run_id here, from
 * the END it would have got, on the sandbox's store connection, rather
 * than leave it running until gc. killed: its job was killed for that
 * (recorded cancelled). The output went to the client and is not
 * recorded; the rest of the row stays. A row no longer running is left
 * alone. The final update's sync holds the supervisor's loop up once,
 * on this rare path only. 0 or -errno (live-record.c). */
int live_record_lost(struct store *s, const char *run_id, const struct live_reply *end, bool killed);

/* The same for a kernel call recorded here (its client asked with
 * LIVE_EXEC_FINISH: hutch exec --kernel without --json) whose client hung
 * up before its END: cancelled, with how the call then ended ("was
 * interrupted", ...) in its message. */
int live_record_call_lost(struct store *s, const char *run_id, uint64_t wall_ms, const char *how);

/* The outcome of an exec from its END reply (live-exec.c). */
void live_outcome(const struct live_reply *end, struct run_outcome *o);

/* Client side of FINISH (live-exec.c): send the run's end o and the
 * captured output on fd, wait for DONE. 0: the supervisor recorded it,
 * durably; -E2BIG: the output is too big to send, -errno otherwise:
 * the caller records it itself. */
struct capture;
int live_finish(int fd, const struct run_outcome *o, const struct capture *out, const struct capture *err);
/* What run_finish_record() says of an outcome, for an end the
 * supervisor wrote. */
void live_say_outcome(const struct run_outcome *o);

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
/* A recorded kernel call's row (live_record_kernel()) and its end
 * (live_record_finish()) on the sandbox's store. 0 or -errno. */
int live_record_call(struct live *l, const char *lang, const char *code, size_t len, const char *cwd, pid_t client,
                     char ret_id[32]);
int live_finish_call(struct live *l, const char *run_id, const char *buf, size_t n);
/* A recorded call whose client went away has ended: its row is
 * completed here (live_record_call_lost()). */
void live_lost_call(struct live *l, const char *run_id, uint64_t wall_ms, const char *how);
/* After the client heard DONE: the WAL checkpoint the records made due. */
void live_record_settle(struct live *l);
/* A kernel call started (busy) or ended: the idle timeout waits. */
void live_busy(struct live *l, bool busy);
/* The sandbox's resolved config: its timeout is a call's default. */
const struct run_config *live_config(const struct live *l);
/* Why a limit stops the sandbox ("stopped: memory limit ..."), or NULL
 * (live-limits.h). */
const char *live_limit_stop(const struct live *l);

/* live-kernel.c: the kernels of one live sandbox. */
#define LIVE_KERNELS_POLLFDS (2 * _LIVE_KERNEL_LANG_MAX)
struct live_kernels *live_kernels_new(void);
/* After init is gone: tell a waiting client, close everything. NULL ok. */
struct live_kernels *live_kernels_free(struct live_kernels *ks);
/* A LIVE_OP_KERNEL request of n bytes on connection fd (ours from here
 * on) from client. */
void live_kernels_request(struct live_kernels *ks, struct live *l, int fd, pid_t client, const char *buf, size_t n);
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

/* run/live-kernel-call.c: a kernel call's result as a run's outcome
 * (status, exit code, message). */
struct run_outcome;
void live_kernel_outcome(const struct live_kernel_result *k, struct run_outcome *o);
/* live_kernel_call() on connection fd (ours, left open); with cwd, a
 * call the supervisor records (LIVE_EXEC_FINISH: its row before the
 * call, its end at our live_finish()), whose row's id goes to run_id
 * ("" if it wrote none; run_id may be NULL without cwd). */
int live_kernel_call_on(int fd, enum live_kernel_lang lang, const char *code, size_t len, uint64_t timeout_ms,
                        int cancel_fd, const char *cwd, struct capture *out, struct capture *err, bool tee,
                        char run_id[33], struct live_kernel_result *ret);
