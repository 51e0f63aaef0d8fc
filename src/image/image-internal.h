/* image-internal.h - shared by the image module's files (store.c, blobs.c,
 * source.c, oci.c, unpack.c); not an API: image.h is.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "image/image.h"
#include "lib/digest.h"

/* JSON documents (index, manifest, config, docker's manifest.json) are
 * read whole; none of a sane image comes near this. */
#define IMAGE_JSON_MAX (4u << 20)

struct image_store {
        char *dir;
        int dirfd;              /* <dir> */
        int lockfd;             /* <dir>/lock, flock()ed */
        int blobsfd;            /* <dir>/blobs/sha256 */
        int layersfd;           /* <dir>/layers */
        int tmpfd;              /* <dir>/tmp */
        /* the import under way (image_import()): every byte it writes
         * into a blob is charged to charged and may not pass budget
         * (max_image_size; 0: none); what it made new is listed, to be
         * removed again when it is refused */
        uint64_t charged, budget;
        char **new_blobs, **new_layers;
        size_t n_new_blobs, n_new_layers;
};

/* ---- store.c: refs.json (the caller holds the lock) -------------------- */

/* The refs as a JSON object (empty when there is no file yet). */
int refs_load(struct image_store *st, json_t **ret);
/* Replace refs.json with refs, atomically (rename). */
int refs_save(struct image_store *st, json_t *refs);

/* The "use" lock taken exclusively, without waiting (image_store_use()
 * holds it shared): an fd, or -EBUSY while a run uses the store. */
int store_use_exclusive(struct image_store *st);

/* ---- blobs.c: the verified blob store ---------------------------------- */

/* A blob being written: hashed as it is written into tmp/. */
struct blob_writer {
        struct image_store *st;
        int fd;
        char tmpname[64];
        struct digest digest;
        uint64_t size, max;
};

/* Start a blob; max bounds its size (0: none). 0 or -errno. */
int blob_begin(struct image_store *st, struct blob_writer *w, uint64_t max);
/* Append n bytes, charged to the store's import budget as they are
 * written: 0, -EFBIG past max, -EDQUOT past the budget, or -errno. */
int blob_write(struct blob_writer *w, const void *buf, size_t n);
/* Finish: when expect_hex is not NULL the content must hash to it
 * (-EBADMSG otherwise, and nothing is stored); the blob is then named
 * blobs/sha256/<hex> (kept as it was when already there). *ret_new tells
 * whether it was not there before. ret_hex gets the hash. The writer is
 * spent either way. */
int blob_commit(struct image_store *st, struct blob_writer *w, const char *expect_hex,
                char ret_hex[DIGEST_HEX_SIZE], bool *ret_new);
/* Drop a blob being written. NULL-safe on a spent writer. */
void blob_abort(struct image_store *st, struct blob_writer *w);

/* An import begins: nothing charged, budget bytes (0: none) may be
 * written into blobs, nothing new yet. */
void blob_import_begin(struct image_store *st, uint64_t budget);
/* A layer dir layers/<hex> the import made. */
void blob_note_new_layer(struct image_store *st, const char *hex);
/* The import is over: when refused, the blobs and layers it made (which
 * no ref names: they were not there before it, and it holds the store's
 * lock) are removed, so a refused import leaves nothing for gc. */
void blob_import_end(struct image_store *st, bool refused);

/* Copy fd (from its offset to EOF) into the store as blob expect_hex
 * (verified), at most max bytes. 0, -EBADMSG (mismatch), -EFBIG,
 * -EDQUOT (the import's budget), -errno. */
int blob_put_fd(struct image_store *st, int fd, const char *expect_hex, uint64_t max, bool *ret_new);
/* Store a buffer, returning its hash. */
int blob_put_buffer(struct image_store *st, const void *buf, size_t n, char ret_hex[DIGEST_HEX_SIZE]);
bool blob_has(struct image_store *st, const char *hex);
int blob_open(struct image_store *st, const char *hex);
/* Read blob hex whole (at most IMAGE_JSON_MAX) and parse it as JSON. */
int blob_read_json(struct image_store *st, const char *hex, json_t **ret);

/* "sha256:<hex>" -> hex (pointer into s); NULL when s is not that. */
const char *digest_ref_hex(const char *s);

/* ---- oci.c: index, manifest and config documents ----------------------- */

/* The manifest named by the index document `index` (an OCI index or a
 * Docker manifest list, already in hand) for this host's platform, or
 * with tag (org.opencontainers.image.ref.name) when tag is not NULL.
 * Nested indexes are followed. fetch (may be NULL) is called first for
 * each blob the index names, to bring it into the store (verified). Writes
 * the manifest's hex digest; 0 or -errno with *ret_error. */
typedef int (*blob_fetch_fn)(void *ctx, const char *hex);
int oci_pick_manifest(struct image_store *st, json_t *index, const char *tag, blob_fetch_fn fetch, void *ctx,
                      char ret_hex[DIGEST_HEX_SIZE], char **ret_error);

/* A parsed manifest: config digest and layer digests, bottom layer
 * first. */
struct oci_manifest {
        char config[DIGEST_HEX_SIZE];
        char **layers;          /* hex digests, bottom first */
        size_t n_layers;
};
void oci_manifest_done(struct oci_manifest *m);
/* Parse manifest document j (checking its media types and digests). */
int oci_parse_manifest(json_t *j, struct oci_manifest *m, char **ret_error);
/* Fill info's config fields from config document j (checks os, and
 * each Env entry with env_entry_check(): a run could not take a bad
 * one, so neither import nor run accepts the image). */
int oci_parse_config(json_t *j, struct image_info *info, char **ret_error);
/* This host's architecture in OCI's words ("amd64", "arm64", ...). */
const char *oci_host_arch(void);

/* ---- source.c: reading oci:, oci-archive:, docker-archive: ------------ */

/* Bring src's blobs into the store (verified) and pick its manifest:
 * ret_hex gets the manifest digest, *ret_name the name the source
 * carries for it (NULL when none). */
int source_fetch(struct image_store *st, const char *src, const struct image_limits *lim,
                 char ret_hex[DIGEST_HEX_SIZE], char **ret_name, char **ret_error);

/* ---- unpack.c: a layer, unpacked as hostile input ---------------------- */

struct unpack_stats {
        uint64_t bytes;         /* data bytes written plus 512 per entry */
        uint64_t entries;
        uint64_t specials;      /* device nodes, FIFOs, sockets skipped */
        uint64_t setid;         /* set-user/group-id bits dropped */
        uint64_t xattrs;        /* xattrs dropped */
        uint64_t whiteouts, opaque;
};

/* A libarchive reader for tar streams, with the filters libarchive
 * implements itself (gzip, zstd, xz, bzip2; never an external program). */
struct archive;
int unpack_archive_new(struct archive **ret);

/* Unpack the tar stream in fd (plain, gzip, zstd, xz or bzip2) into the
 * empty directory rootfd, applying the layer's whiteouts as overlayfs
 * user.overlay.* whiteouts, under the rules of unpack.c's header. More
 * than lim->max_layer_bytes (0: none) is -EFBIG; files are given to
 * lim->owner_uid/gid unless that is -1. On failure *ret_error names the
 * entry and the directory is left partly written (the caller removes
 * it). */
int unpack_layer(int fd, int rootfd, const struct image_limits *lim, struct unpack_stats *stats, char **ret_error);
