/* sandbox-internal.h - the steps sandbox.c (the namespace tier) and
 * sandbox-landlock.c (the landlock tier) share. Not for use outside
 * src/sandbox/. */
#pragma once

#include <stddef.h>

#include "config/run-config.h"

struct sandbox_inputs;
struct winsize;
struct cpu_steer;

/* Report a setup failure on sync_fd and exit EXIT_SETUP (child only). */
_Noreturn void sandbox_setup_failed(int sync_fd, int r, const char *step, const char *path);

/* Hand the workspace dir (and the overlay upper, or -1) to the
 * supervisor, closing our copies. 0 or -errno. */
int sandbox_send_workspace(int sync_fd, int workspace_fd, int upper_fd);

/* Close every fd above 2 except the n in keep (-1 entries: none);
 * sorts keep. */
void sandbox_close_all_but(int *keep, size_t n);

/* Put /dev/null in place of fds 0-2 (the caller's stdio). 0 or -errno. */
int sandbox_drop_caller_stdio(void);

/* The job's stdio pipes; nothing in tty mode. 0 or -errno. */
int sandbox_open_pipes(const struct run_config *cfg, int in_pipe[2], int out[2], int err[2]);

/* The child's last steps: the pty (tty mode), the CPU mask back (steer
 * may be NULL), the filter from the supervisor, then init_main(). */
_Noreturn void sandbox_child_finish(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd,
                                    int stdin_r, int stdout_w, int stderr_w, const struct winsize *winsize,
                                    const struct cpu_steer *steer);

/* The landlock tier's sandbox_spawn() (sandbox-landlock.c). */
int sandbox_spawn_landlock(const struct run_config *cfg, const struct sandbox_inputs *in,
                           const struct winsize *winsize, struct sandbox *ret);
