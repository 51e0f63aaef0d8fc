/* run/live-kernel.h - persistent interpreters in a live sandbox
 * (`hutch exec NAME --kernel python|node -c CODE`).
 *
 * A kernel is a long-lived interpreter (python3, node) that the live
 * sandbox's supervisor starts on the first call for its language, as the
 * sandbox's job like any other exec, and that runs every later call of
 * that language in the same namespace: variables, imports and open files
 * persist. One call runs at a time per kernel. A call's deadline
 * interrupts it (SIGINT: Python's KeyboardInterrupt, node's vm
 * interruption) and the kernel lives on; a kernel that does not stop, or
 * dies, or speaks out of turn is killed and started afresh by the next
 * call, whose result says the earlier state was lost. The supervisor's
 * side and its security argument are in run/live-kernel.c. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct capture;
struct run_ui;
struct store;

enum live_kernel_lang {
        LIVE_KERNEL_PYTHON,
        LIVE_KERNEL_NODE,
        _LIVE_KERNEL_LANG_MAX,
        _LIVE_KERNEL_LANG_INVALID = -EINVAL,
};

/* "python" / "node" (also "python3", "nodejs", "js"); -EINVAL otherwise. */
int live_kernel_lang_from_string(const char *s);
const char *live_kernel_lang_to_string(int lang);

/* How a call ended. */
enum live_kernel_status {
        LIVE_KERNEL_OK,                 /* ran to its end */
        LIVE_KERNEL_ERROR,              /* raised (the traceback is on stderr) */
        LIVE_KERNEL_INTERRUPTED,        /* its deadline interrupted it; the state lives on */
        LIVE_KERNEL_DIED,               /* the kernel died or was killed: its state is lost */
        LIVE_KERNEL_UNAVAILABLE,        /* no kernel could be started (no interpreter?) */
        _LIVE_KERNEL_STATUS_MAX,
        _LIVE_KERNEL_STATUS_INVALID = -EINVAL,
};

/* Code longer than this is refused (-E2BIG). */
#define LIVE_KERNEL_CODE_MAX (60u << 10)
/* A final expression's value is cut to this many bytes. */
#define LIVE_KERNEL_VALUE_MAX (64u << 10)

struct live_kernel_result {
        enum live_kernel_status status;
        bool state_lost;        /* a fresh kernel ran this call: what earlier calls left is gone */
        char *value;            /* the final expression's repr (node: util.inspect), or NULL */
        char ename[64];         /* LIVE_KERNEL_ERROR: the exception's name, if known */
        char message[160];      /* LIVE_KERNEL_DIED / _UNAVAILABLE: why, in words */
        int wait_status;        /* LIVE_KERNEL_DIED: the kernel's raw wait status */
        bool timed_out;         /* LIVE_KERNEL_DIED: killed for not stopping at its deadline */
        bool stopped;           /* LIVE_KERNEL_DIED: the sandbox stopped while the call ran */
        bool cancelled;         /* the caller cancelled it (cancel_fd) before it ended */
        uint64_t wall_ms;
        uint64_t discarded;     /* bytes the kernel wrote between calls, pending in its
                                 * output pipes when this call began: dropped unread */
};

void live_kernel_result_done(struct live_kernel_result *r);

/* Run code in sandbox name's lang kernel, starting it if need be, with a
 * deadline of timeout_ms (0: the sandbox profile's timeout). The call's
 * output goes into out and err (either may be NULL: dropped) and, with
 * tee, to our own stdout and stderr as it comes. cancel_fd (or -1): once
 * it is readable or hung up, the call is cancelled: the supervisor
 * interrupts it as its deadline would (the kernel and its state live
 * on) and its end says cancelled. Not recorded. Returns 0
 * with *ret filled, or -errno: -ENOENT/-ECONNREFUSED no such sandbox,
 * -EBUSY the kernel is running another call (or restarting, or a fork
 * is copying the sandbox), -EUSERS every job slot of the sandbox is
 * taken (both busy: the call did not run), -E2BIG code too long,
 * -EPIPE the supervisor went away. Logs nothing. */
int live_kernel_call(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                     uint64_t timeout_ms, int cancel_fd, struct capture *out, struct capture *err, bool tee,
                     struct live_kernel_result *ret);

/* `hutch exec NAME --kernel LANG -c CODE`: live_kernel_call(), recorded
 * as a run labelled sandbox=NAME and kernel=LANG (its lang and code are
 * the record's), the value printed after the output as a REPL does (or
 * the run printed as JSON with json). Returns hutch's exit code: 0, 1
 * for an error raised, 124 interrupted at the deadline, 125 the kernel
 * died or could not start, 75 busy. */
int live_kernel_exec(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                     uint64_t timeout_ms, bool json, const struct run_ui *ui);

/* live_kernel_call() (with its cancel_fd) recorded as live_kernel_exec() records it (labels
 * sandbox=NAME, kernel=LANG and the NULL-terminated labels, "k=v", may
 * be NULL), printing nothing: for a caller in another process than the
 * CLI (hutch mcp), which runs it in a thread of its own. The record is
 * complete and durable in the store (store_run_finish(), as a run's)
 * before it returns. st is the store connection to record in, used by
 * this call alone (sqlite connections are not shared between threads),
 * or NULL to open one (closed before returning). Returns the run's hutch.result/1 object
 * (ui->result_object) in *ret, NULL when nothing could be recorded, and
 * hutch's exit code as live_kernel_exec() does; *ret_error (a new
 * string) says why when *ret is NULL. */
int live_kernel_record(const char *name, enum live_kernel_lang lang, const char *code, size_t len,
                       uint64_t timeout_ms, int cancel_fd, char *const *labels, const struct run_ui *ui,
                       struct store *st, json_t **ret, char **ret_error);
