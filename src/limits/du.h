/* du.h - what a directory tree holds on disk, measured from the host in
 * slices: the landlock tier's disk limit, which has no tmpfs of its own
 * to hold it (run/landlock.c says what this does not hold).
 *
 * Bytes are allocated blocks (st_blocks * 512), so a sparse file counts
 * what it really takes, and a file with several links in the tree counts
 * once; every entry (file, dir, link, node) counts toward the entries.
 * Symlinks are never followed, and the walk never enters a mount point
 * inside (counted as an entry only); what has a device number of its own
 * without being one (a btrfs subvolume the job made) is walked.
 */
#pragma once

#include <stdint.h>

struct du_sample {
        uint64_t bytes;
        uint64_t entries;
        unsigned depth;         /* the deepest dir seen, below the root */
        unsigned unreadable;    /* dirs we could not open: counted, their contents not */
};

/* Deeper dirs than this are not walked: du_step() says -ELOOP, and the
 * caller ends the run (no build nests this deep; a job that does it to
 * hide data from the walk gets nothing for it). */
#define DU_MAX_DEPTH 256

struct du;
/* Open root (a dir) for walking. 0 or -errno. */
int du_new(const char *root, struct du **ret);

/* Work on the current round for about budget_ns (UINT64_MAX: no limit;
 * the clock is looked at every 64 entries). Returns 1 with *ret set when
 * the round is complete (the next call starts a new one), or 0 when the
 * budget ran out first: *ret then holds the round's sums so far, a lower
 * bound of the round's figures, so a caller may stop on it but never
 * clear anything. Entries that vanish while we look are skipped, and so
 * are the contents of a dir we may not open (EACCES, EPERM): the round
 * goes on past it.
 * -ELOOP beyond DU_MAX_DEPTH; other -errno when the root is gone. */
int du_step(struct du *d, uint64_t budget_ns, struct du_sample *ret);

/* NULL-safe; returns NULL. */
struct du *du_free(struct du *d);
