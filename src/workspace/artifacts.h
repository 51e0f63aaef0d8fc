/* artifacts.h - collect the files a job left in its output directory.
 *
 * After the run, every regular file under the output dir (profile
 * `[artifacts] dir`, default /workspace/output) is copied into the blob
 * store and listed as
 *
 *      path (relative to the output dir), size, sha256, mime, mode
 *
 * in path order (fs_path_compare: a directory's files together). What is
 * not collected is listed too, with a reason: symlinks (never followed,
 * wherever they point; the target string is recorded), devices, fifos and
 * sockets, files over the count or byte caps, unreadable files, trees
 * nested deeper than ARTIFACTS_MAX_DEPTH. Skipped entries are listed up
 * to max_skipped_listed and only counted beyond.
 *
 * MIME types are guessed without libmagic: first by signature (PNG, JPEG,
 * GIF, WebP, PDF, ZIP, gzip, tar, ELF), then JSON and text heuristics on
 * the first 4 KiB, then by file name extension; application/octet-stream
 * otherwise.
 */
#pragma once

#include <time.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/digest.h"

struct blobstore;

#define ARTIFACTS_DEFAULT_MAX_FILES 1000
#define ARTIFACTS_DEFAULT_MAX_BYTES (1ULL << 30)
#define ARTIFACTS_DEFAULT_MAX_SKIPPED_LISTED 10000
#define ARTIFACTS_MAX_DEPTH 64

enum artifact_skip {
        ARTIFACT_SKIP_NONE,        /* collected */
        ARTIFACT_SKIP_SYMLINK,     /* a symlink: not followed */
        ARTIFACT_SKIP_SPECIAL,     /* device, fifo or socket */
        ARTIFACT_SKIP_MAX_FILES,   /* over max_files */
        ARTIFACT_SKIP_MAX_BYTES,   /* would take the total over max_bytes */
        ARTIFACT_SKIP_UNREADABLE,  /* could not be read (error says why) */
        ARTIFACT_SKIP_TOO_DEEP,    /* directory deeper than ARTIFACTS_MAX_DEPTH */
        ARTIFACT_SKIP_TIME,        /* collection ran past artifacts_limits.deadline */
        ARTIFACT_SKIP_SECRET,      /* its path or link target held a secret's
                                    * value: recorded redacted (scrub.h) */
        _ARTIFACT_SKIP_MAX,
        _ARTIFACT_SKIP_INVALID = -22,
};

struct artifact {
        char *path;
        enum artifact_skip skip;
        int error;              /* -errno for ARTIFACT_SKIP_UNREADABLE */
        mode_t mode;            /* st_mode */
        uint64_t size;          /* bytes (as stored, or as seen if skipped) */
        char sha256[DIGEST_HEX_SIZE];   /* "" unless collected */
        const char *mime;       /* static string; NULL unless collected */
        char *link_target;      /* for a skipped symlink, what it points to */
};

struct artifact_list {
        struct artifact *items; /* sorted by fs_path_compare(path) */
        size_t n;
        size_t n_collected;
        uint64_t bytes;         /* total size collected */
        size_t n_unlisted;      /* skipped beyond max_skipped_listed */
};

/* 0 in a field means its default. */
struct artifacts_limits {
        size_t max_files;       /* files collected (default 1000) */
        uint64_t max_bytes;     /* bytes collected in total (default 1 GiB) */
        size_t max_skipped_listed;      /* default 10000 */
        struct timespec deadline;       /* CLOCK_MONOTONIC; 0: none. Entries
                                         * reached after it are skipped "time" */
};

/* Walk the directory out_fd (not consumed) and store every regular file
 * in bs, within the limits (lim may be NULL: defaults). Files are taken in
 * path order, so which ones fit the caps is deterministic. The directory
 * must be quiescent (the job's processes all gone). Returns 0 and fills
 * *ret (free with artifact_list_done), or -errno if out_fd cannot be
 * read or the blob store fails; problems with single entries are recorded
 * as skips instead. */
int artifacts_collect(int out_fd, struct blobstore *bs, const struct artifacts_limits *lim,
                      struct artifact_list *ret);

/* Free a list's contents and zero it. NULL-safe. */
void artifact_list_done(struct artifact_list *l);

/* Guess a MIME type from the first n bytes of a file (complete: those are
 * all its bytes) and its name (may be NULL). Never NULL. */
const char *artifacts_guess_mime(const void *head, size_t n, bool complete, const char *name);

/* "symlink", "special", "max_files", "max_bytes", "unreadable", "too_deep";
 * NULL for none. */
const char *artifact_skip_to_string(enum artifact_skip s);
