/* changeset.h - what a job changed in an overlay workspace.
 *
 * The workspace is overlay(lower = the user's directory, upper = scratch).
 * After the job, the upper directory alone says what changed, in
 * overlayfs's own terms (userxattr mode, as mounted in a user namespace):
 *
 *   - a character device 0:0, or a zero-size file carrying the xattr
 *     user.overlay.whiteout, is a whiteout: the lower path was deleted;
 *   - a directory with user.overlay.opaque = "y" (or trusted.overlay.opaque,
 *     for an overlay mounted with real privilege) hides everything below
 *     its lower version: lower entries it does not contain were deleted
 *     (this is what `rm -rf d; mkdir d` or a rename without redirect_dir
 *     leaves);
 *   - any other entry is the new version of its path.
 *
 * changeset_compute() turns that into a list of entries, one per path,
 * sorted with fs_path_compare() (parents before children):
 *
 *   added      path not in lower; directories are entries too, so apply
 *              can create empty ones
 *   modified   path in both and different: content (sha256), permission
 *              bits, symlink target, or file type (a "type change", e.g.
 *              a directory replaced by a file: then old_mode and mode
 *              differ in S_IFMT and the old directory's children appear as
 *              deleted entries)
 *   deleted    path in lower, gone now; a deleted directory is listed with
 *              every path below it
 *
 * Not reported, by decision: a copy-up whose content (sha256) and
 * permission bits equal the lower file's (touch, chmod and back, open for
 * writing without writing, rewrite with the same bytes), a directory whose
 * permission bits did not change, and owner, timestamp and xattr changes:
 * hutch does not carry them, so they are not changes it could apply.
 *
 * An entry with skip != CHANGE_SKIP_NONE was seen but is not carried: no
 * content was hashed or stored, and apply ignores it (reason in skip).
 * Symlinks are never followed: they are recorded as symlinks, sha256
 * being the hash of the target string.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "lib/digest.h"

struct blobstore;

enum change_kind {
        CHANGE_ADDED,
        CHANGE_MODIFIED,
        CHANGE_DELETED,
        _CHANGE_KIND_MAX,
        _CHANGE_KIND_INVALID = -22,
};

enum change_skip {
        CHANGE_SKIP_NONE,       /* carried */
        CHANGE_SKIP_SPECIAL,    /* device, fifo or socket: hutch carries none */
        CHANGE_SKIP_MAX_FILES,  /* over changeset_limits.max_files */
        CHANGE_SKIP_MAX_BYTES,  /* would push the total over max_bytes */
        CHANGE_SKIP_UNREADABLE, /* could not be read; change.error says why */
        CHANGE_SKIP_TOO_DEEP,   /* more than CHANGESET_MAX_DEPTH levels down */
        CHANGE_SKIP_PATH_TOO_LONG, /* path longer than max_path: never listed, only counted */
        CHANGE_SKIP_TIME,       /* collection ran past changeset_limits.deadline */
        CHANGE_SKIP_SECRET,     /* its path or link target held a secret's
                                 * value: recorded redacted (scrub.h) */
        _CHANGE_SKIP_MAX,
        _CHANGE_SKIP_INVALID = -22,
};

#define CHANGESET_MAX_DEPTH 256
#define CHANGESET_MAX_SKIPPED_LISTED 1000

struct change {
        char *path;             /* relative to the workspace, no leading '/' */
        enum change_kind kind;
        enum change_skip skip;
        int error;              /* -errno behind CHANGE_SKIP_UNREADABLE, else 0 */
        mode_t mode;            /* new st_mode (type | permission bits); 0 if deleted */
        uint64_t size;          /* new size: file bytes, symlink target length, 0 */
        char sha256[DIGEST_HEX_SIZE];     /* new content, "" for dirs, deleted, skipped */
        char *link_target;      /* new symlink's target, else NULL */
        mode_t old_mode;        /* lower's st_mode if modified/deleted, else 0 */
        uint64_t old_size;
        char old_sha256[DIGEST_HEX_SIZE]; /* lower's content if modified/deleted
                                           * file or symlink, else "" */
        bool lower_changed;     /* the lower (host) version changed after the
                                 * job started (see changeset_limits.since):
                                 * old_* describe the host's version at
                                 * collection, not what the job started from,
                                 * and apply treats the entry as a conflict */
};

struct changeset {
        struct change *entries; /* sorted by fs_path_compare(path) */
        size_t n;
        size_t n_carried;       /* entries with skip == CHANGE_SKIP_NONE */
        uint64_t bytes;         /* new content bytes of carried regular files */
        size_t n_unlisted;      /* skipped changes beyond the listing cap, only counted */
};

struct changeset_limits {
        size_t max_files;       /* carried entries; 0 = no limit */
        uint64_t max_bytes;     /* sum of carried new file lengths, holes
                                 * included (see below); 0 = no limit */
        size_t max_path;        /* longest path recorded, bytes; 0 = no limit */
        /* A moment before the job could see the lower dir (CLOCK_REALTIME,
         * taken before the sandbox existed, and passed by the coarse clock
         * before it was built: see changeset.c), or 0: a lower
         * entry whose ctime is at or after it changed during the run and
         * its change is marked lower_changed. */
        struct timespec since;
        /* Collection's own deadline (CLOCK_MONOTONIC), or 0: past it
         * every further change is recorded with CHANGE_SKIP_TIME. */
        struct timespec deadline;
};

/* Compute the change set of overlay upper directory upper_fd against its
 * lower directory lower_fd (both O_DIRECTORY fds; neither is consumed or
 * changed). lim may be NULL (no limits). When bs is not NULL the new
 * content of every carried added/modified regular file is also stored in
 * it, so the change set can be applied after the upper dir is gone.
 *
 * Limits: once max_files entries are carried, every further change is
 * recorded with CHANGE_SKIP_MAX_FILES; a file whose length would take the
 * total over max_bytes is recorded with CHANGE_SKIP_MAX_BYTES and the walk
 * goes on. Lengths count holes: a sparse file of 3 GB under a 16 MB
 * budget is skipped, never expanded; one that fits is stored sparse (see
 * fs_copy_digest), so the blob store pays what the scratch paid. A path
 * longer than max_path (and everything below such a directory) is only
 * counted, as one entry: listing it would make the record as big as the
 * names. Skipped changes are listed up to max_files of them (or 100000
 * without a limit), at most CHANGESET_MAX_SKIPPED_LISTED, and only
 * counted (n_unlisted) beyond that. Every
 * hash and copy is bounded by max_bytes, so with limits set the walk's
 * time is bounded by them too; past lim->deadline every further change
 * is skipped CHANGE_SKIP_TIME (a directory stands for what it holds), so
 * the walk overruns it by at most one file's hash and copy. With
 * lim->since set, entries whose lower version changed at or after it
 * are marked lower_changed (changeset.c says why ctime is sound).
 *
 * The upper dir must be quiescent: every process that could write through
 * the overlay gone. Returns 0 and fills *ret (free with changeset_done), or
 * -errno: -EOPNOTSUPP for an upper dir using redirect_dir (not something
 * hutch mounts); I/O errors on the upper or lower directories themselves.
 */
int changeset_compute(int upper_fd, int lower_fd, const struct changeset_limits *lim,
                      struct blobstore *bs, struct changeset *ret);

/* Free what changeset_compute() (or a caller filling one by hand with
 * malloc'ed strings) put in cs, and zero it. NULL-safe. */
void changeset_done(struct changeset *cs);

/* Sort entries by path (after filling a change set by hand, e.g. from the
 * store). */
void changeset_sort(struct changeset *cs);

/* The entry for path, or NULL. cs must be sorted. */
const struct change *changeset_find(const struct changeset *cs, const char *path);

/* "added", "modified", "deleted" and back (-EINVAL for unknown). */
const char *change_kind_to_string(enum change_kind k);
enum change_kind change_kind_from_string(const char *s);
/* "special", "max_files", "max_bytes", "unreadable", "too_deep",
 * "path_too_long", "time", NULL for none. */
const char *change_skip_to_string(enum change_skip s);
