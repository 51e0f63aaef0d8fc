/* calls.h - one run_code or run_command call of `hutch mcp`: a child
 * `hutch run --request - --json` fed its request on a pipe and read
 * back on another, both non-blocking, so the server's loop never waits
 * on a run.
 *
 * A child is in its own process group (a Ctrl-C meant for the client
 * does not reach it) and gets SIGTERM if the server dies (so a run is
 * never left without its caller: hutch run records it cancelled).
 * Cancelling sends the child SIGTERM: its supervisor then stops the
 * job, kills the sandbox's init (the whole tree) after the grace, and
 * records the run as cancelled.
 */
#pragma once

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

/* the most of a child's answer kept (one hutch.result/1 object: two
 * captured streams of at most a few MiB, the file list) */
#define CALL_RESULT_MAX (32u << 20)

/* What a child is for. */
enum call_kind {
        CALL_RUN,               /* `hutch run --request -`: a fresh sandbox */
        CALL_LIVE,              /* `hutch exec NAME --json`: a call into its session's live sandbox */
        CALL_PS,                /* list_processes: an exec of a /proc listing, side by side */
        CALL_HELPER,            /* `hutch sandbox start|stop`, `hutch kill`: no client call */
};

enum call_state {
        CALL_QUEUED,            /* waiting for a free slot */
        CALL_RUNNING,           /* child started */
        CALL_DONE,              /* child reaped and its answer read */
};

struct mcp_call {
        struct mcp_call *next;
        json_t *id;             /* the JSON-RPC request id */
        json_t *progress_token; /* or NULL: no progress notifications */
        bool modern;            /* answered the 2026-07-28 way */
        enum call_kind kind;
        enum call_state state;
        bool cancelled;         /* notifications/cancelled or EOF: answer nothing */
        char *request;          /* the hutch.request/1 text */
        char *input;            /* what the child's stdin gets instead of
                                 * the request (a live call's script), or NULL */
        char *note;             /* said first in the result's text (a limit the
                                 * server lowered), or NULL */
        char *session_wait;     /* with a session: --session-wait for its child, or NULL */
        char *session;          /* the hutch session it runs in, or NULL: calls
                                 * of one session run one at a time, in order */
        char **argv;            /* the child's whole argv (CALL_LIVE, CALL_PS,
                                 * CALL_HELPER); NULL: hutch run --request - */
        bool merge_stderr;      /* the child's stderr into out too (its message) */
        char *sandbox;          /* CALL_LIVE, CALL_PS: the live sandbox it runs in */
        bool live_waiting;      /* queued until its session's live sandbox is up */
        char *live_fallback;    /* a session call that could not go live: why
                                 * (said in its result), or NULL */
        size_t request_len, request_off; /* of input, if set; else of request */
        pid_t pid;              /* 0: a thread's call (threaded) */
        bool threaded;          /* a (detached) thread of the server runs it
                                 * (an in-process kernel call) and writes its
                                 * answer into out_fd, as a child would */
        pthread_t thread;
        int cancel_fd;          /* threaded: the write end of the thread's cancel
                                 * pipe, closed to cancel (-1: none, or done) */
        int in_fd, out_fd;      /* -1 once closed */
        char *out;
        size_t out_len;
        bool out_overflow;      /* the answer passed CALL_RESULT_MAX */
        bool exited;
        int wstatus;
        uint64_t received_ms;   /* monotonic */
        uint64_t next_progress_ms;
        uint64_t kill_at_ms;    /* after a cancel: SIGKILL the child then (0: not set) */
};

/* A helper child's call (kind CALL_HELPER) owning argv: queued, no id. */
struct mcp_call *call_new_helper(char **argv, uint64_t now_ms);
/* A new queued call owning request (text) and taking references to id
 * and progress_token (may be NULL). */
struct mcp_call *call_new(json_t *id, json_t *progress_token, bool modern, char *request, uint64_t now_ms);
void call_free(struct mcp_call *c);

/* Start the child: the program open at exe_fd (the server's own
 * binary, opened once at start, so an upgrade meanwhile does not mix
 * versions) as c->argv, or `hutch run --request - --json EXTRA...`
 * without it. 0 or -errno. */
int call_spawn(struct mcp_call *c, int exe_fd, char *const *extra_args);

/* Make c a thread's call: the read end of a new pipe is its out_fd
 * (its answer, read as a child's is, whole at its end),
 * *ret_wfd the write end for the thread, which the caller starts and
 * stores in c->thread; *ret_cancel_fd the read end of another pipe,
 * the thread's too, which hangs up when the call is cancelled
 * (call_cancel()): the thread then ends its call early (a kernel call
 * is interrupted) and answers as usual; the server answers nothing.
 * 0 or -errno. */
int call_start_thread(struct mcp_call *c, int *ret_wfd, int *ret_cancel_fd);

/* Move the request into the child's stdin as far as it takes it. */
void call_write(struct mcp_call *c);
/* Read what the child answered so far; closes out_fd at its end. */
void call_read(struct mcp_call *c);
/* The child was reaped with wstatus. */
void call_exited(struct mcp_call *c, int wstatus);
/* Cancel: SIGTERM to the child, SIGKILL at now + grace if it lingers;
 * a thread's call: its cancel pipe hangs up. The call answers nothing
 * afterwards. */
void call_cancel(struct mcp_call *c, uint64_t now_ms, uint64_t grace_ms);
/* Whether everything of a running call is in: reaped and its answer
 * read to the end. */
bool call_finished(const struct mcp_call *c);

/* Run `hutch ARGV...` (the binary at exe_fd, ARGV[0] its name) to its
 * end, for the short verbs the repository tools use (diff, apply):
 * stdin /dev/null, stdout and stderr both into *ret_out (a new string
 * of at most max bytes; *ret_cut when more came and was dropped). The
 * server's loop waits: these read the store and a change set, nothing
 * that runs a job. 0 and *ret_wstatus, or -errno. */
int call_run_sync(int exe_fd, char *const *argv, size_t max, char **ret_out, size_t *ret_len, bool *ret_cut,
                  int *ret_wstatus);
