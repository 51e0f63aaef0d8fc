/* run/live-serve.h - the live supervisor's own state, shared by live.c
 * (its loop) and live-control.c (the control socket's requests). Private
 * to those two files: the rest of run/ sees struct live only through
 * live-internal.h's functions. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <sys/types.h>

#include "run/live-internal.h"
#include "run/live-limits.h"
#include "run/live-publish.h"
#include "sandbox/sandbox.h"
#include "sandbox/sync.h"

/* One exec, from its request to its end. */
struct exec_slot {
        bool active;
        int client;             /* its connection, or -1 once the client is gone */
        bool client_lost;       /* the client went away before the job's end */
        uint64_t seq;           /* order of the request; 0 once init answered it */
        pid_t pid;              /* the job's pid inside, 0 until init says */
        uint64_t started_ms, deadline_ms; /* deadline 0: none */
        char run_id[sizeof(((struct live_reply *)0)->run_id)]; /* its row, once written */
        struct live_reply end;  /* what the client will be told */
        struct live_kernel *kernel; /* a kernel's job (live-kernel.c): no client, no deadline */
        bool finish;            /* the client asked to send FINISH after END */
        bool finishing;         /* END sent; the job is gone, its client's FINISH awaited */
};

/* A connection accepted and checked whose request has not come yet.
 * Requests are read only when they are there (poll, MSG_DONTWAIT), so a
 * client that connects and says nothing holds up nobody; it is dropped
 * after LIVE_REQUEST_MS, or when LIVE_PENDING_MAX newer ones wait. */
#define LIVE_PENDING_MAX 16
#define LIVE_REQUEST_MS 2000
/* How long a FINISH may take after its END (the client drains the
 * job's pipes first, into a stdout that may be slow); past it the end
 * is recorded here without the output, and the client, hearing no
 * DONE, writes its complete end itself. */
#define LIVE_FINISH_MS 5000
struct pending {
        int fd;                 /* -1: a free entry */
        pid_t pid;              /* the client, as SO_PEERCRED says */
        uint64_t since_ms;
};

/* The supervisor's state while it serves. */
struct live {
        const struct run_config *cfg;
        const struct run_live *opts;
        struct sandbox *sb;
        struct store *store;    /* the sandbox's run's: the execs' rows go there */
        const char *run_id;     /* the sandbox's run */
        struct run_record *tmpl; /* its row: what an exec's row inherits */
        bool tmpl_read;
        struct exec_slot exec[SANDBOX_LIVE_JOBS_MAX];
        struct pending pend[LIVE_PENDING_MAX];
        size_t n_active;
        uint64_t seq;
        uint64_t idle_ms_at;    /* the idle deadline, 0: none */
        int stopper;            /* `sandbox stop`'s connection, held open to the end */
        const char *why;        /* why the sandbox ended */
        bool ready;
        struct live_publish *pub; /* --publish's relay (live-publish.c), or NULL */
        struct live_conns *conns; /* connections recorded as they end (live-conns.c) */
        struct live_kernels *kernels;
        struct live_fork fork;  /* a fork being copied (live-fork.c) */
        struct live_limits *limits; /* the sandbox's limits (live-limits.c) */
        unsigned limits_written;    /* LIVE_LIMIT_* bits NAME.json lists */
        uint64_t started_at_ms;
        int dirfd;              /* the sandboxes dir, held from the start:
                                 * the teardown needs no new fd */
};

/* live.c: an exec's request (LIVE_OP_EXEC) on connection fd. */
void live_exec_start(struct live *l, int fd, pid_t client, const char *buf, size_t n);

/* live-control.c: a new connection on the control socket lfd, checked
 * and kept pending until its request comes; the pending ones' poll
 * entries p (LIVE_PENDING_MAX of them) served or given up. */
void live_control(struct live *l, int lfd);
void live_check_pending(struct live *l, const struct pollfd *p);
