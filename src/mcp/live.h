/* live.h - the live sandboxes of `hutch mcp`'s sessions: what the server
 * runs to start one (`hutch sandbox start`), to call into it (`hutch exec
 * NAME --json`), to list its processes, and the keeper that stops them
 * when the server is gone (even by SIGKILL).
 *
 * A session's first call starts its sandbox, built exactly as `hutch
 * sandbox start --session S` builds it with the server's profile, network
 * and limits; every call of the session is then an exec into it, so
 * files and processes stay between calls. The server stops it after its
 * idle timeout and when it exits: `hutch sandbox stop` commits the
 * session's files, `hutch kill` of the sandbox's run throws them away
 * (the sandbox runs with --commit success, and a killed run is
 * cancelled). Which of the two is the session's latest call's commit
 * policy (hutch-mcp(1), "Live sessions").
 *
 * The functions here build argv vectors and parse; the state machine is
 * the server's (live-sessions.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

struct lang_table;

/* A session's sandbox stops after this long without a call (--idle-timeout). */
#define MCP_LIVE_IDLE_DEFAULT_MS (10u * 60 * 1000)
/* The sandbox's own idle timeout is the server's plus this: it only
 * fires when the server could not stop it (a backstop). */
#define MCP_LIVE_BACKSTOP_MS 60000u
/* What an exec's argv may hold (the control socket's LIVE_ARGV_MAX, with
 * room for the loader): a call's code, or its command's argv. */
#define MCP_LIVE_ARGV_MAX (60u << 10)
/* What a call's script (its stdin, files and env, fed to the exec's
 * stdin) may hold. */
#define MCP_LIVE_INPUT_MAX (16u << 20)

/* `hutch sandbox start NAME --session SESSION --commit success
 * --idle-timeout IDLE+BACKSTOP RUN_ARGS... LIMITS... --publish ...
 * --label ...`: the limits are the server's own for run_command
 * (limits[""]), the ports publish's (may be NULL), the labels the
 * request's (req: the call's hutch.request/1). A new vector. */
char **mcp_live_start_argv(const char *name, const char *session, const json_t *req, const json_t *limits,
                           char *const *run_args, char *const *publish, uint64_t idle_ms);

/* The exec argv of a run_code or run_command call (req: its
 * hutch.request/1), the call's seq-th in the sandbox: `hutch exec NAME
 * --json --timeout T -- ...`, and what to write to the exec's stdin
 * (*ret_input, or NULL: nothing). run_command without stdin, files or
 * env runs its argv as is; otherwise the exec runs `--stdin -- sh -c
 * LOADER hutch-mcp SEQ ARGV...` and *ret_input is a short sh script
 * that writes the files (relative to /workspace), exports env, gives
 * stdin through a pipe and execs the command, every value single-quoted
 * into it: no stdin, env or file content is in the argv, which the
 * exec's record keeps. 0 and *ret, or -EINVAL / -E2BIG with *ret_error
 * (one line for the model). */
int mcp_live_exec_argv(const char *name, const json_t *req, const struct lang_table *langs, unsigned seq,
                       bool kernels, char ***ret, char **ret_input, char **ret_error);

/* The argv of a run_code call in the live sandbox: the one place that
 * decides how code runs in a live session. With kernels (hutch mcp
 * --kernels), python and node code without stdin, files or env runs in
 * the sandbox's persistent interpreter (`hutch exec --kernel LANG -c
 * CODE`: variables and imports persist, a final expression's value is
 * printed); otherwise as a program: the code the loader's argument, the
 * script on stdin handing it to the program through a pipe (its {file}
 * is /dev/fd/3), compiling it if the language says so (into
 * /tmp/.hutch-mcp-SEQ.RANDOM/, a directory made for the call), then
 * running it as languages.ini says. Same contract as
 * mcp_live_exec_argv(). */
int mcp_live_code_argv(const char *name, const json_t *req, const struct lang_table *langs, unsigned seq,
                       bool kernels, char ***ret, char **ret_input, char **ret_error);

/* The kernel language (enum live_kernel_lang) of a run_code call that
 * a kernel can take: python or node, code without NUL of at most
 * LIVE_KERNEL_CODE_MAX, no stdin, files or env; -EINVAL otherwise. */
int mcp_live_kernel_lang(const json_t *req);

/* `hutch exec NAME --json --timeout 10s -- sh -c LISTING`: one line per
 * process of the sandbox but its init and the listing's own:
 * "PID PPID STATE CMDLINE". */
char **mcp_live_ps_argv(const char *name);
/* The processes array of the listing's stdout (a new reference). */
json_t *mcp_live_ps_parse(const char *text);

/* The run id of live sandbox name (from `hutch sandbox ls --json`, run
 * to its end), or NULL when it is not running. */
char *mcp_live_run_id(int exe_fd, const char *name);
/* Its line of `hutch sandbox ls --json` (a new reference), or NULL. */
json_t *mcp_live_ls_entry(int exe_fd, const char *name);

/* The keeper: a process of its own session (a signal to the client's
 * process group does not reach it) that holds the read end of a pipe
 * whose write end is *ret_fd. The server tells it each sandbox it starts
 * and how it is to be stopped; when the pipe ends (the server exited, or
 * was killed) it stops every sandbox still named, and exits. 0 or -errno. */
int mcp_keeper_start(int exe_fd, int *ret_fd, pid_t *ret_pid);
/* Tell the keeper: sandbox name is up and its stop commits (what '+') or
 * throws away ('!'), or it is gone ('-'). Never blocks the server long
 * (a line of at most ~70 bytes into a pipe). */
void mcp_keeper_tell(int fd, char what, const char *name);
