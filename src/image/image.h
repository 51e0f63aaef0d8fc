/* image.h - OCI images as roots: the image store, import, and what a run
 * needs of an image.
 *
 * The store lives beside the run store (<state>/images) and holds:
 *
 *      lock                    flock(2): writers (import, rm, gc) hold it
 *                              exclusively, readers (ls, inspect, a run
 *                              resolving an image) shared
 *      blobs/sha256/<hex>      every blob an image names (index, manifest,
 *                              config, layer), mode 0444, named only after
 *                              its content was hashed and found equal to
 *                              <hex>
 *      layers/<hex>/rootfs     the layer blob <hex> unpacked (unpack.c),
 *                              once, shared by every image that names it;
 *      layers/<hex>/layer.json what unpacking dropped (devices, set-id
 *                              bits, xattrs) and the bytes it wrote
 *      refs.json               NAME:TAG -> manifest digest, rewritten
 *                              whole (rename) under the lock
 *      tmp/                    blobs and layers being written; a killed
 *                              import's leftovers are removed by gc
 *
 * Refs live in a file of the image store, not in the run store's SQLite
 * database: the image store then stands alone (it can be copied, moved
 * or removed with its directory), an import works when the run store is
 * read-only or damaged, and gc's roots are one small file read under the
 * same lock that guards the blobs. A run records the manifest digest it
 * ran, which is all the history needs to name the image.
 *
 * Nothing here logs: errors are -errno plus, where a caller needs to tell
 * the user more than strerror(), a one-line message in *ret_error naming
 * the blob, layer or entry at fault.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/digest.h"

#define IMAGE_DEFAULT_TAG "latest"
/* defaults of the profile keys [image] max_layer_size and max_image_size */
#define IMAGE_DEFAULT_MAX_LAYER "4G"
#define IMAGE_DEFAULT_MAX_IMAGE "16G"
/* The most layers an image may have: a run stacks them as overlay lower
 * dirs in one mount(2) option string, which the kernel takes as one page
 * (4 KiB); past ~240 layers the string no longer fits and no run could
 * mount the image. Import refuses more, and so does a run (an image
 * imported before this bound). 128 layers' dirs fit with room to spare
 * (sandbox/mount-layers.c checks it at build time). */
#define IMAGE_MAX_LAYERS 128

struct image_store;

struct image_limits {
        uint64_t max_layer_bytes;       /* one layer unpacked (0: no limit) */
        uint64_t max_image_bytes;       /* all of an image's layers (0: none) */
        /* who owns the unpacked files: the host ids of the sandbox user
         * (ns_host_uid()), which for real root are not root's own; -1:
         * the caller, nothing is chowned */
        uid_t owner_uid;
        gid_t owner_gid;
};

/* What an import did, for the verb to print. */
struct image_import_result {
        char name[400];                 /* NAME:TAG the ref was written as (<= 200 + 1 + 128) */
        char manifest[DIGEST_HEX_SIZE]; /* manifest digest, hex */
        unsigned layers;                /* layers the image has */
        unsigned layers_unpacked;       /* of them, unpacked now (others were shared) */
        uint64_t bytes;                 /* the image's unpacked size */
        uint64_t skipped_specials;      /* device nodes, FIFOs, sockets left out */
        uint64_t setid_dropped;         /* set-user/group-id bits cleared */
        uint64_t xattrs_dropped;        /* extended attributes not kept */
};

/* An image as a run uses it (image_resolve()). */
struct image_info {
        char *ref;                      /* NAME:TAG */
        char manifest[DIGEST_HEX_SIZE]; /* manifest digest, hex */
        char config[DIGEST_HEX_SIZE];   /* config digest, hex */
        char **layer_dirs;              /* rootfs dirs, top layer first */
        char **layer_digests;           /* the same layers' blob digests, top first */
        char **env;                     /* config Env (KEY=VALUE), may be NULL */
        char **entrypoint;              /* config Entrypoint, may be NULL */
        char **cmd;                     /* config Cmd, may be NULL */
        char *working_dir;              /* config WorkingDir, NULL if unset */
        char *user;                     /* config User, NULL if unset */
        char *architecture, *os;
        char *created;                  /* config created, NULL if unset */
        uint64_t bytes;                 /* unpacked size */
};

/* The image store's directory beside the run store whose database is
 * db_path (store_default_path()): <state>/images. New string. */
char *image_store_dir(const char *db_path);

/* Open the store in dir. With create, the directory and its parts are
 * made (0700) when missing; without it a missing store is -ENOENT.
 * exclusive: take the lock for writing (import, rm, gc), else shared.
 * Blocks until the lock is granted. */
int image_store_open(const char *dir, bool create, bool exclusive, struct image_store **ret);
struct image_store *image_store_free(struct image_store *st);
static inline void image_store_freep(struct image_store **st) { image_store_free(*st); }
#define _cleanup_image_store_ _cleanup_(image_store_freep)

/* Hold the store in dir for a run: a shared lock on <dir>/use, kept as
 * long as the returned fd is open. While any run holds it, image_gc()
 * and image_remove() leave layers and blobs alone (-EBUSY / 1), so no
 * layer goes away under a job. fd or -errno. Takes no other lock. */
int image_store_use(const char *dir);

/* Parse "NAME[:TAG]" into a canonical "NAME:TAG" (tag "latest" when
 * none). NAME is [A-Za-z0-9._/-], starting with a letter or digit, no
 * "..", at most 200 bytes; TAG [A-Za-z0-9._-], at most 128. New string,
 * or NULL when s is not such a name. */
char *image_ref_normalize(const char *s);

/* Import the image named by src into the store (exclusive) as ref (NULL:
 * the name the source carries: the oci: tag, docker's RepoTags; failing
 * that an error). src is "oci:DIR[:TAG]", "oci-archive:FILE[:TAG]" or
 * "docker-archive:FILE[:NAME:TAG]". Every blob is checked against its
 * digest, every new layer unpacked (unpack.c's rules) within lim, and
 * every byte written into blobs charged against lim->max_image_bytes as
 * it is written; more than IMAGE_MAX_LAYERS layers, or a config Env
 * entry env_entry_problem() refuses, refuse the image. On failure the
 * blobs and layers this import made are removed again (only a killed
 * import leaves tmp/ to gc), and *ret_error says what failed where. */
int image_import(struct image_store *st, const char *src, const char *ref, const struct image_limits *lim,
                 struct image_import_result *ret, char **ret_error);

/* The image ref (any "NAME[:TAG]" image_ref_normalize() takes, or
 * "sha256:<hex>" / "NAME@sha256:<hex>" naming a manifest) as a run uses
 * it. A manifest digest resolves only when a ref names that manifest: a
 * blob in the store is no image (a refused import may leave one until
 * it is cleaned). -ENOENT when there is no such image, -EBADMSG when its
 * blobs or layers are damaged or missing, -E2BIG with more than
 * IMAGE_MAX_LAYERS layers (*ret_error says which). */
int image_resolve(struct image_store *st, const char *ref, struct image_info **ret, char **ret_error);
struct image_info *image_info_free(struct image_info *info);
static inline void image_info_freep(struct image_info **i) { image_info_free(*i); }
#define _cleanup_image_info_ _cleanup_(image_info_freep)

/* The refs, sorted, as a NULL-terminated vector of "NAME:TAG"; count or
 * -errno. */
int image_list(struct image_store *st, char ***ret_refs);

/* Remove ref (exclusive); -ENOENT when it does not exist. Blobs and
 * layers it alone used are removed with it (image_gc()): 0; or, while a
 * run uses the store, left for a later gc: 1. */
int image_remove(struct image_store *st, const char *ref);

/* Remove (exclusive) every blob and layer no ref names, and leftovers in
 * tmp/. dry_run counts only. -EBUSY, and nothing removed, while a run
 * holds image_store_use(). Returns the number of layers and blobs
 * removed (or that would be) in *ret_layers, *ret_blobs and the bytes
 * they took in *ret_bytes; 0 or -errno. */
int image_gc(struct image_store *st, bool dry_run, unsigned *ret_layers, unsigned *ret_blobs,
             uint64_t *ret_bytes);

/* Bytes the store at dir takes on disk (blocks allocated, every file and
 * directory counted once) and the number of refs; -ENOENT when there is
 * no store. Takes no lock: a figure for doctor. */
int image_store_usage(const char *dir, uint64_t *ret_bytes, unsigned *ret_images);
