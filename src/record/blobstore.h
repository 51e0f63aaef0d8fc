/* blobstore.h - content-addressed file store.
 *
 * Layout under the store's directory (normally $STATE/blobs):
 *
 *      ab/cdef0123…            a blob: the file whose SHA-256 is abcdef0123…,
 *                              first two hex digits as a fan-out directory,
 *                              the other 62 as the file name; mode 0400
 *      .tmp-PID-START-<random> a blob being written (same filesystem, so the
 *                              final rename is atomic) by process PID started
 *                              at START (ticks since boot); removed by gc once
 *                              that process is gone
 *
 * A blob is written once and never changed: a put of content already
 * stored leaves the existing file alone. Readers therefore never see a
 * partial blob: a blob name appears only after its data was fsync'ed.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/digest.h"

struct blobstore;

/* Open (creating it and its parents, mode 0700, if needed) the store in
 * directory dir. Returns 0 and a new handle in *ret, or -errno. */
int blobstore_open(const char *dir, struct blobstore **ret);

/* Same, on a directory fd the caller already holds (it is duplicated,
 * the caller keeps its own). */
int blobstore_open_fd(int dirfd, struct blobstore **ret);

/* Close the handle. NULL is fine. Returns NULL. */
struct blobstore *blobstore_free(struct blobstore *bs);
static inline void blobstore_freep(struct blobstore **bs) { blobstore_free(*bs); }
#define _cleanup_blobstore_ _cleanup_(blobstore_freep)

/* The store's directory fd (owned by the handle). */
int blobstore_dirfd(const struct blobstore *bs);

/* Store the content of fd, read from its current offset to EOF. Streams
 * into a temporary, hashing as it goes, fsyncs it, then renames it to
 * its hash name (RENAME_NOREPLACE: an existing blob is never rewritten;
 * the temporary is dropped instead). More than max_bytes (0 = no limit)
 * gives -EFBIG and stores nothing. On success writes the hash to ret_hex
 * and the length to *ret_size (if not NULL) and returns 1 if the blob is
 * new, 0 if it was already there; -errno otherwise. */
int blobstore_put_fd(struct blobstore *bs, int fd, uint64_t max_bytes,
                     char ret_hex[DIGEST_HEX_SIZE], uint64_t *ret_size);

/* Batch mode, for the many blobs of one run: after _begin, puts write
 * and hash as usual but neither fsync nor name their blobs; the blobs
 * count as present (has, open_blob, dedup) for this handle only.
 * _commit flushes them all with one syncfs(), names them, and syncs
 * each fan-out directory once, so the guarantee is the same as for
 * single puts: a name only ever points at data on disk. Commit before
 * recording any hash elsewhere. Returns 0 or -errno (blobs that could
 * not be named are dropped; the handle leaves batch mode either way).
 * Freeing a handle with staged blobs drops them. */
void blobstore_batch_begin(struct blobstore *bs);
int blobstore_batch_commit(struct blobstore *bs);

/* Open the blob named hex read-only. Returns fd or -errno (-ENOENT if
 * absent, -EINVAL if hex is not a valid digest). */
int blobstore_open_blob(struct blobstore *bs, const char *hex);

/* The same, after reading the whole blob and checking that its content
 * still hashes to hex: -EBADMSG when it does not (a damaged blob). The
 * fd is at offset 0. For readers that hand the bytes on (cp). */
int blobstore_open_verified(struct blobstore *bs, const char *hex);

/* Does the store hold blob hex? */
bool blobstore_has(struct blobstore *bs, const char *hex);

/* The blob's path relative to the store directory ("ab/cdef…"), as a new
 * string, for the store's `files.blob` column. NULL if hex is invalid. */
char *blobstore_relpath(const char *hex);

/* Delete every blob whose hash is not in keep[0..n_keep) (any order;
 * duplicates fine), every temporary whose writer is gone (its pid free
 * or now another process), one named otherwise (an older hutch) once
 * older than an hour, and fan-out
 * directories left empty. Entries that are not blob-shaped are left
 * alone. Returns the number of blobs removed, or -errno (blobs already
 * removed stay removed).
 * The caller must exclude puts whose blobs are not yet in keep (a run
 * collecting artifacts right now): gc would delete them, or remove the
 * fan-out directory a put is about to rename into. `hutch gc` should hold
 * the store's lock and build keep from every recorded blob. */
int blobstore_gc(struct blobstore *bs, const char *const *keep, size_t n_keep);
