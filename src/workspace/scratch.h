/* scratch.h - the landlock tier's scratch: the only place its job may
 * write (DESIGN §10).
 *
 * The namespace tier's scratch is a tmpfs in its own mount namespace and
 * its workspace an overlay; the landlock tier can mount nothing, so its
 * scratch is a private directory on the host:
 *
 *   <base>/hutch-XXXXXX/            mode 0700, owned by the job's uid
 *       workspace/                  a private copy of --workdir (snapshot.h)
 *                                   or empty; the job's working dir
 *       home/  tmp/                 $HOME and $TMPDIR
 *       stamp                       the supervisor's, made by scratch_fill():
 *                                   the copy's times, and the mark hutch gc
 *                                   looks for before it removes a scratch
 *                                   a killed supervisor left
 *       upper/                      made after the job: what it changed,
 *                                   in overlayfs's terms (changeset.h)
 *
 * After the job, scratch_build_upper() turns "the copy as the job left
 * it" into an overlay upper dir against the original, so the change
 * set, diff, apply and artifacts work exactly as over an overlay.
 * An entry of the copy is the job's change when it is new, of another
 * type, or was changed after the copy ended (its ctime, which no
 * unprivileged process can set back, is later than a stamp taken then,
 * and scratch_settle() makes sure every change of the job's is stamped
 * later); a name of the original missing from the copy is a whiteout
 * unless the original's entry itself changed after the copy began (the
 * host's change, not the job's deletion). A host change within the
 * copy's first tick may still read as the job's deletion: the change
 * set marks it lower_changed all the same (its ctime is past the run's
 * start), so apply takes it for a conflict and leaves it alone.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct snapshot_limits;
struct snapshot_stats;

struct scratch {
        char *dir;              /* the scratch, absolute */
        char *workspace;        /* dir/workspace */
        char *home;             /* dir/home */
        char *tmp;              /* dir/tmp */
        uid_t uid;              /* the job's ids, the owner of all of it */
        gid_t gid;
        struct timespec copy_began;  /* CLOCK_REALTIME_COARSE before the copy */
        struct timespec copy_ended;  /* ... and after it */
};

/* Make a new scratch under base (an existing dir; /tmp when NULL),
 * owned by uid/gid (chown needs root when they are not ours). 0 or
 * -errno; on failure nothing is left. */
int scratch_create(const char *base, uid_t uid, gid_t gid, struct scratch *ret);

/* Copy the tree under lower_fd into the workspace, bounded by lim
 * (snapshot_copy()), and give every entry to the scratch's owner. With
 * lower_fd < 0 the workspace stays empty. 0 or -errno with *ret_path as
 * snapshot_copy()'s. */
int scratch_fill(struct scratch *s, int lower_fd, const struct snapshot_limits *lim,
                 struct snapshot_stats *ret_stats, char **ret_path);

/* Before the job may start: wait until every change it makes will be
 * stamped after the copy (at most one tick of the coarse clock; usually
 * no wait at all). Nothing to do without a copy. */
void scratch_settle(const struct scratch *s);

/* After the job (every process of it gone): make dir/upper from the
 * workspace copy against lower_fd (the original) and return an
 * O_DIRECTORY fd of it. Never follows a symlink; entries are hard links
 * into the copy (same filesystem), so no content is copied. 0 or -errno. */
int scratch_build_upper(const struct scratch *s, int lower_fd, int *ret_upper_fd);

/* Remove the scratch from disk and free s. NULL-tolerant; errors are
 * returned (-errno) but s is freed anyway. */
int scratch_remove(struct scratch *s);
