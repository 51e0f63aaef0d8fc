/* snapshot.h - a frozen copy of a --workdir taken before the job starts
 * (`--snapshot yes`, profile key sandbox.snapshot).
 *
 * Without it the workspace overlay's lower dir is the host's live tree:
 * overlayfs copies a file up at the job's first write, so a host edit
 * made before that write becomes what the job starts from, one made
 * after it is not seen, and nothing keeps the version the job really
 * started from. With the copy as the lower dir, every version the job
 * reads is the one of the start: the change set's old versions are what
 * the job changed from, `hutch diff` shows the job's own change, and
 * `hutch apply` checks the target against that version (apply.h), so a
 * path the host changed since the start is a conflict and the rest
 * applies.
 *
 * The copy: regular files (sparse, holes kept), directories, symlinks
 * (never followed), FIFOs (new ones, never the host's); sockets and
 * device nodes are left out (counted). Permission bits are kept except
 * set-uid and set-gid; times are kept; owners only as real root
 * (rootless every entry is the caller's); hard links become separate
 * files; extended attributes are not copied. A file the caller cannot
 * read becomes an empty file of the same mode (counted). A file that
 * changes while it is copied is copied again (a few times), so the copy
 * is never a mix of two versions.
 *
 * Bounded: allocated bytes by max_bytes, entries by max_entries, depth
 * by max_depth, time by the deadline; past a bound the snapshot fails
 * (the run does not start), it is never silently partial.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct snapshot_limits {
        uint64_t max_bytes;             /* allocated bytes of the copy (0: none) */
        uint64_t max_entries;           /* entries of the copy (0: none) */
        unsigned max_depth;             /* directory levels (0: 128) */
        struct timespec deadline;       /* CLOCK_MONOTONIC; {0, 0}: none */
        bool keep_owners;               /* real root: each entry's uid and gid as the source's */
        bool skip_mounts;               /* leave out what another mount covers (a bind
                                         * into the tree): one mount's files only */
};

struct snapshot_stats {
        uint64_t entries;               /* copied, directories included */
        uint64_t bytes;                 /* allocated bytes of the copy */
        uint64_t left_out;              /* sockets, device nodes */
        uint64_t unreadable;            /* made empty: the caller could not read them */
        uint64_t mounts;                /* skip_mounts: mount points left out */
};

/* Copy the tree under src_fd (an O_DIRECTORY fd) into dst_fd, an empty
 * directory the caller made. The directory dst_fd itself gets the mode
 * and times of src_fd's. Returns 0, or -errno with *ret_path (a new
 * string, may be NULL) naming the relative path it failed at:
 * -ENOSPC past max_bytes, -EMLINK past max_entries, -ELOOP past
 * max_depth, -ETIME past the deadline, -EAGAIN for a file that kept
 * changing while it was copied. On failure the partial copy is left for
 * the caller to remove. */
int snapshot_copy(int src_fd, int dst_fd, const struct snapshot_limits *lim, struct snapshot_stats *ret_stats,
                  char **ret_path);
