/* named.h - the host paths a run names (--ro, --rw, --input, the
 * workspace's lower dir, an image's root layers), opened with the
 * credentials of the user who started hutch, before the sandbox's uid
 * takes over (DESIGN §1: "What the user names is opened with the
 * caller's own credentials").
 *
 * Each path becomes a detached mount (open_tree clone) with its final
 * attributes already set; mount.c only attaches it in the new root. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config/run-config.h"
#include "sandbox/mount.h"

struct named_clones {
        int *ro;                /* one per cfg->ro_paths entry */
        int *rw;                /* one per cfg->rw_paths entry */
        int *inputs;            /* one per "HOST:NAME" of inputs */
        int *layers;            /* one per cfg->root_layers entry */
        int lower;              /* the workspace's lower dir, or -1 */
        size_t n_ro, n_rw, n_inputs, n_layers;
        bool opened;            /* named_open() succeeded */
};

/* Clone every named path: ro/rw binds and inputs recursively, read-only
 * (rw: writable) and nosuid,nodev; lower (may be NULL) and the layers
 * alone (overlay does not look into a layer's submounts), read-only,
 * nosuid, nodev. Path resolution and the permission checks on the way
 * are the calling process's: call it as the caller. Returns 0 and fills
 * *ret (owned by the caller: named_close()), or -errno with *fail
 * naming the step and the path. */
int named_open(const struct run_config *cfg, char **inputs, const char *lower,
               struct named_clones *ret, struct setup_failure *fail);

/* Close what is still open and free the arrays; idempotent. */
void named_close(struct named_clones *n);

/* Append the open fds of n to keep[*n_keep...] (for the child's fd
 * sweep); keep has room for max entries. Returns -ENOBUFS if it has not. */
int named_fds(const struct named_clones *n, int *keep, size_t *n_keep, size_t max);
