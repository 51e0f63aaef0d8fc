/* scrub.h - secrets' values kept out of a run's recorded files.
 *
 * redact.h replaces a value wherever hutch records the job's output.
 * The job can also put a value into what is recorded of its files: a
 * file's path, a symlink's target, a file's content, and (a file of the
 * user's that it modifies or deletes) the old version kept for diff.
 * These functions run on a change set and an artifact list after their
 * blobs are stored and before their rows are written.
 */
#pragma once

#include <stddef.h>

#include "workspace/artifacts.h"
#include "workspace/changeset.h"

struct blobstore;

/* For each change of cs: a path or link target holding a value
 * (secrets: "NAME=VALUE", NULL or empty: none) gets each value replaced
 * by its marker; the change is then skipped CHANGE_SKIP_SECRET with no
 * content hash (apply cannot carry a path it no longer knows, and the
 * hash of a target is the hash of the value), and its new content's
 * blob goes if it holds a value. The old version kept in bs of a
 * modified or deleted file goes if it holds a value; the change keeps
 * old_sha256 (a hash of content, which apply needs to see whether the
 * host's version moved), and diff says the old version was not kept.
 * A change whose new content is such a dropped old version (a file the
 * job only renamed, linked or chmod'ed) is skipped CHANGE_SKIP_SECRET
 * too. Other new content that holds a value under a clean path is left
 * to the caller, which records why it was not kept. bs may be NULL (only names
 * are scrubbed). Returns the number of changes skipped. */
size_t scrub_changeset(struct changeset *cs, struct blobstore *bs, char *const *secrets);

/* The same for artifacts: a path or link target holding a value is
 * replaced, the artifact skipped ARTIFACT_SKIP_SECRET, its blob removed
 * if it holds a value, and al's counts adjusted. Returns the number of
 * artifacts skipped. */
size_t scrub_artifacts(struct artifact_list *al, struct blobstore *bs, char *const *secrets);
