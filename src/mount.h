/* mount.h - builds the sandbox's filesystem view (DESIGN §2): a fresh
 * tmpfs root with read-only binds of host system dirs, masks, /proc,
 * a minimal /dev, and writable /tmp, $HOME and /workspace, all backed by
 * one size-capped scratch tmpfs. Runs inside the new user+mount
 * namespaces, with the sandbox uid and full capabilities there. */
#pragma once

#include "run-config.h"

/* Where the failing step went wrong, for the supervisor's one-line
 * report: "sbx: setup: <step> <path>: <reason>". */
struct setup_failure {
        const char *step;
        char path[464];
};

/* Build the root and pivot into it; on return the process's / and cwd
 * are the sandbox root. 0 or -errno with *fail filled in. */
int mount_build_root(const struct run_config *cfg, struct setup_failure *fail);
