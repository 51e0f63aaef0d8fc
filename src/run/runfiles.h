/* run/runfiles.h - what a run leaves behind, recorded: the change set of its
 * overlay workspace and the artifacts in its output dir, both stored in
 * the blob store next to the run database and listed in the `files`
 * table (store.h).
 *
 * `hutch run` calls runfiles_collect() once the sandbox is gone; `hutch diff`,
 * `hutch apply` and `hutch cp` read the records back with runfiles_load().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "workspace/changeset.h"
#include "record/store.h"

struct blobstore;

/* Open the blob store of the run database s: the directory "blobs" next
 * to it ($HUTCH_STATE_DIR/blobs). 0 or -errno. */
int runfiles_open_blobs(struct store *s, struct blobstore **ret);

/* Take the blob store's lock (the file ".lock" in it, an OFD lock, so
 * it dies with its holder): shared while a run stores and records its
 * files, exclusive for garbage collection, so gc never deletes a blob
 * that is stored but not yet recorded. Waits for it. Returns the lock
 * fd (close it to release) or -errno. */
int runfiles_lock_blobs(struct blobstore *bs, bool exclusive);

/* Delete every blob no files row refers to (bs locked exclusively
 * meanwhile). dry_run only counts. Returns how many, or -errno. */
int runfiles_gc_blobs(struct store *s, struct blobstore *bs, bool dry_run);

struct runfiles_params {
        int workspace_fd;       /* the job's workspace dir, or -1 */
        int upper_fd;           /* its overlay upper dir, or -1 (no change set) */
        int lower_fd;           /* the overlay's lower dir (with upper_fd) */
        const char *output_rel; /* the artifacts dir relative to the
                                 * workspace ("output"), or NULL: none */
        bool has_inputs;        /* "input/" holds --input mounts, not changes */
        uint64_t max_files;     /* artifact caps (0: artifacts.h defaults) */
        uint64_t max_bytes;
        struct changeset_limits changes; /* change set caps (bytes: the run's
                                 * disk; also bounds the lower versions kept) */
        char *const *secrets;   /* "NAME=VALUE", or NULL: scrubbed from paths,
                                 * link targets and old versions (scrub.h) */
};

struct runfiles_result {
        struct changeset cs;    /* the workspace change set (output/ and
                                 * input/ left out), empty without upper_fd */
        size_t n_outputs;       /* artifacts collected */
        size_t n_outputs_skipped;
        uint64_t output_bytes;
        size_t n_unlisted;      /* changes and artifacts skipped and only counted */
        int artifacts_error;    /* -errno: the artifacts could not be collected
                                 * (the change set still was), else 0 */
};

/* Compute, store and record what run run_id left behind. Precondition:
 * every process of the sandbox is gone (init reaped), so both dirs are
 * quiescent. New file contents and the lower versions of modified and
 * deleted files go to bs (so diff and apply work after the scratch is
 * gone). The change set stays in ret->cs for --apply (free with
 * runfiles_result_done, also on error). An artifacts dir the job made
 * unusable (a symlink, a file) costs only the artifacts: 0 with
 * ret->artifacts_error set. Otherwise 0 or -errno; *ret_step names what
 * failed ("change set", "artifacts", "record"). */
int runfiles_collect(struct store *s, const char *run_id, struct blobstore *bs,
                     const struct runfiles_params *p, struct runfiles_result *ret,
                     const char **ret_step);

void runfiles_result_done(struct runfiles_result *r);

/* Rebuild the workspace change set of run run_id from its records
 * (kinds added/modified/deleted), sorted, ready for apply_changeset().
 * 0 or -errno. */
int runfiles_load_changeset(struct store *s, const char *run_id, struct changeset *ret);

/* The files of run run_id as a JSON array of {path, kind, size, sha256,
 * mime} (plus skip, link_target and lower_changed when set, and path_b64 and
 * link_target_b64 for names that are not UTF-8): a new reference, never
 * NULL (an empty array when the store cannot tell). */
json_t *runfiles_json(struct store *s, const char *run_id);

/* Add to the run object o what runfiles_collect() could not record:
 * "files_error" (a message, or null when every file the caps allowed
 * was recorded) and "files_unlisted" (changes and artifacts skipped
 * without a row of their own). Runs from before hutch kept this get
 * neither key. */
void runfiles_summary_json(struct store *s, const char *run_id, json_t *o);

/* Set o[key] to path, a name the job chose: the text when it is UTF-8;
 * otherwise the text with each bad byte as U+FFFD and also key + "_b64"
 * holding the raw bytes in base64 (lossless). */
void runfiles_json_set_path(json_t *o, const char *key, const char *path);
