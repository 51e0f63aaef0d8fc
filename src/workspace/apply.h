/* apply.h - carry a change set (changeset.h) into a target directory.
 *
 * `hutch apply ID` / `--apply`: the user's directory gets the job's changes,
 * unless it changed since the run in a way that collides with them.
 *
 * Phases, in order:
 *   1. check   every carried entry against the target, without changing
 *              anything. Conflicts (all of them, not just the first) are
 *              returned and nothing is done:
 *                modified/deleted: the target's path must still hold the
 *                  lower version (same file type; same sha256 for files and
 *                  symlinks); a directory to delete or replace must hold
 *                  nothing the change set does not delete;
 *                added: the target must not have a different entry there;
 *                every path: its parent must be a real directory beneath
 *                  the target (a symlink anywhere on the way is a conflict);
 *                  an entry marked lower_changed (the host changed the
 *                  path while the job ran) is a conflict of its own,
 *                  "during_run", unless apply_options.overwrite.
 *              A path that already holds the new version, or a deleted
 *              path already gone, is not a conflict: it is left as it is
 *              (so applying twice is harmless).
 *   2. stage   new files and symlinks are written to temporaries
 *              (".hutch-apply-<random>") in the directory they will live in;
 *              a new directory is built complete under a temporary name in
 *              its parent. File content comes from the blob store or the
 *              upper dir and must hash to the recorded sha256 (-EBADMSG
 *              otherwise). Files are fsync'ed.
 *   3. commit  paths to delete, and old entries a type change replaces, are
 *              renamed aside (deepest first); then, parents first, every
 *              temporary is renamed onto its path: RENAME_EXCHANGE over an
 *              existing file (the old one lands on the temporary name),
 *              RENAME_NOREPLACE onto a free name; last, deepest first,
 *              permission changes of directories that stay (so a
 *              directory the job made read-only still takes its files).
 *              Deletions come before installs, not after, because a type
 *              change needs its path free; since "deleting" is a rename
 *              aside until phase 4, the order costs no undoability.
 *   4. finish  the renamed-aside old versions are removed.
 *
 * How all-or-nothing it is: each path switches from old to new with one
 * rename, so a reader or a crash sees every path either old or new, never
 * a partial file. Until phase 4 every step is undoable (renames back,
 * chmod back), and on any error in phases 2-3 everything done so far is
 * undone in reverse order, best effort: the target is then as before,
 * apart from temporaries that could not be removed (counted). The set as
 * a whole is NOT atomic: a crash or SIGKILL in phase 3 leaves some paths
 * new and some old, with the old versions kept under ".hutch-apply-*" names
 * in their directories (apply_options.note_temp tells the caller each
 * such name, so that it can remove them later). Concurrent writers to
 * the target are not locked out: the check is against the target as it
 * was at phase 1.
 *
 * Permission bits are preserved except set-user-ID and set-group-ID,
 * which are dropped (a job must not leave a set-uid-to-you program in your
 * tree). Owners and timestamps are not carried. Entries with a skip reason
 * are ignored (counted in n_skipped); the caller decides whether a
 * partial change set may be applied.
 */
#pragma once

#include <stddef.h>

#include "workspace/changeset.h"

struct blobstore;

enum apply_conflict_reason {
        APPLY_CONFLICT_CHANGED,   /* content differs from the recorded lower version */
        APPLY_CONFLICT_EXISTS,    /* added path is taken by something else */
        APPLY_CONFLICT_MISSING,   /* modified path, or a needed parent, is gone */
        APPLY_CONFLICT_TYPE,      /* file type differs from the recorded one */
        APPLY_CONFLICT_NOT_EMPTY, /* directory to remove holds entries not deleted */
        APPLY_CONFLICT_UNSAFE,    /* symlink or non-directory on the way, bad path */
        APPLY_CONFLICT_ERROR,     /* could not be checked (error says why) */
        APPLY_CONFLICT_DURING_RUN,/* the host changed it while the job ran
                                   * (change.lower_changed): what the job
                                   * started from is not known */
        _APPLY_CONFLICT_MAX,
        _APPLY_CONFLICT_INVALID = -22,
};

struct apply_conflict {
        char *path;
        enum apply_conflict_reason reason;
        int error;                /* -errno for APPLY_CONFLICT_ERROR, else 0 */
};

/* A change at a protected path (protected.h) and why it is one. */
struct apply_protected {
        char *path;
        const char *reason;       /* static text */
};

/* What to do with changes at protected paths (protected.h). */
enum apply_protected_policy {
        APPLY_PROTECTED_REFUSE,   /* default: apply nothing, -EPERM */
        APPLY_PROTECTED_SKIP,     /* apply the rest, leave those out */
        APPLY_PROTECTED_ALLOW,    /* apply them like any other change */
        _APPLY_PROTECTED_MAX,
        _APPLY_PROTECTED_INVALID = -22,
};

struct apply_result {
        struct apply_conflict *conflicts; /* in path order */
        size_t n_conflicts;
        struct apply_protected *protected; /* in path order (policy allow: none listed) */
        size_t n_protected;
        size_t n_applied;         /* entries that changed the target */
        size_t n_already;         /* entries the target already matched */
        size_t n_skipped;         /* entries not carried (skip reason set) */
        size_t n_leftover;        /* temporaries that could not be removed */
        size_t n_rollback_failed; /* undo steps that failed after an error */
};

/* Where new content comes from: the blob store (preferred when not NULL)
 * or the overlay upper dir (upper_fd >= 0), opened by the entry's path. */
struct apply_source {
        int upper_fd;
        struct blobstore *blobs;
};

struct apply_options {
        /* Permission bits: by default the job's, less set-uid, set-gid,
         * sticky and what the umask clears (the caller's own umask, or
         * umask when set_umask); keep_modes installs the job's bits but
         * set-uid and set-gid as they are (sticky kept). */
        bool keep_modes;
        bool set_umask;
        mode_t umask;
        /* install entries marked lower_changed (the host changed them
         * during the run) instead of refusing them as conflicts; the
         * target must still hold the version seen at collection */
        bool overwrite;
        /* changes at protected paths: refused (the default, also when
         * opts is NULL), skipped or allowed; protect: the profile's
         * extra patterns ([apply] protect), NULL-terminated or NULL */
        enum apply_protected_policy protected_policy;
        char *const *protect;
        /* called with (dir, name) right after each temporary is made in
         * the target (dir relative to it, "" for its top; name starts
         * with ".hutch-apply-"): new versions being staged and old ones
         * renamed aside. A SIGKILL leaves such names behind (see above);
         * a caller that records them can remove them later, knowing they
         * are apply's own. May be NULL. */
        void (*note_temp)(void *userdata, const char *dir, const char *name);
        void *note_userdata;
        /* tests only: fail with -EIO before the n-th commit step (1-based;
         * 0 = never), to exercise rollback */
        unsigned fail_before_step;
};

/* Apply cs to the directory target_fd. cs must be sorted with one entry
 * per path, as changeset_compute() returns it (changeset_sort() after
 * building one by hand); -EINVAL otherwise. opts may be NULL. *ret is
 * always filled (free it with apply_result_done, also on error).
 * Phase 0, before the check: every carried entry at a protected path
 * (protected.h) is listed in ret->protected (unless the policy is
 * allow, which does not look). With the default policy
 * (refuse) any such entry makes it return -EPERM, having touched
 * nothing; with skip those entries are left out and the rest is applied
 * as below (ret->n_skipped does not count them; n_protected does).
 * Returns 0 when applied; -EPERM as just said; -ESTALE when there were conflicts (listed in
 * ret->conflicts; the target was not touched); -EBADMSG when new content
 * from src does not hash to the recorded sha256, -ENOENT when it is
 * missing, another -errno when staging or committing failed (in all
 * these cases the target was rolled back; see ret->n_rollback_failed and
 * ret->n_leftover for what could not be undone or removed).
 */
int apply_changeset(const struct changeset *cs, int target_fd, const struct apply_source *src,
                    const struct apply_options *opts, struct apply_result *ret);

/* The process's umask (read without changing it for good). */
mode_t apply_default_umask(void);

/* Free the conflicts list and zero r. NULL-safe. */
void apply_result_done(struct apply_result *r);

/* "changed", "exists", "missing", "type", "not_empty", "unsafe", "error",
 * "during_run". */
const char *apply_conflict_reason_to_string(enum apply_conflict_reason r);
