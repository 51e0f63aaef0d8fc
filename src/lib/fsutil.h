/* fsutil.h - walking and changing a directory tree that someone else
 * (the sandboxed job, or the user while a run was going on) may have
 * filled with hostile names: symlinks pointing out of the tree, "..",
 * fifos that block a reader, devices.
 *
 * Every path here is relative to a directory fd ("root") and is made of
 * '/'-separated components, none empty, "." or ".."; no leading '/'.
 * Nothing in this module ever follows a symlink: intermediate components
 * are resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) or,
 * on kernels before 5.6, one O_NOFOLLOW | O_DIRECTORY openat() per
 * component; final components are acted on with *at() calls that do not
 * follow (AT_SYMLINK_NOFOLLOW, O_NOFOLLOW, unlinkat, renameat2).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* true if path is a valid relative path as described above (and shorter
 * than PATH_MAX). */
bool fs_path_valid(const char *path);

/* Order paths as a tree: compare component by component, so "a" < "a/b"
 * < "a.b" ('/' sorts before every other byte). A parent always sorts
 * before its descendants, and a directory's subtree is contiguous. */
int fs_path_compare(const char *a, const char *b);

/* Open path beneath rootfd with open(2) flags and mode, without following
 * a symlink in any component (the last included: O_NOFOLLOW is added;
 * a symlink there gives -ELOOP, as does one on the way). path "" opens
 * rootfd itself again. O_CLOEXEC is always added. Returns fd or -errno
 * (-EINVAL for an invalid path; -ELOOP when a symlink is met, on the way
 * or at the end; -ENOTDIR when a non-directory is on the way; -EXDEV when
 * resolution would leave the tree). */
int fs_open_beneath(int rootfd, const char *path, int flags, mode_t mode);

/* Open the directory that contains path (beneath rootfd, as above) and
 * point *ret_name at path's last component (inside path, not copied).
 * Returns the directory fd or -errno. */
int fs_open_parent(int rootfd, const char *path, const char **ret_name);

/* Names in the directory dirfd, without "." and "..", sorted bytewise,
 * as a NULL-terminated vector the caller frees with strv_free().
 * dirfd is not consumed (it is duplicated). Returns count or -errno. */
int fs_list_dir(int dirfd, char ***ret_names);

/* Read the target of the symlink name in dirfd into a new string.
 * Returns 0 or -errno (-EINVAL if it is not a symlink). */
int fs_readlink_at(int dirfd, const char *name, char **ret_target);

/* Remove name in dirfd and, if it is a directory, everything below it.
 * Never follows a symlink (a symlink is removed, not its target) and never
 * crosses into another directory than the one it opened (O_NOFOLLOW |
 * O_DIRECTORY per level). -ENOENT if name does not exist. */
int fs_remove_tree_at(int dirfd, const char *name);

/* Create a uniquely named entry in dirfd with the given prefix: a regular
 * file opened O_RDWR (kind 'f', returns the fd), a directory (kind 'd',
 * returns 0) or, for kind 's', a symlink to target (returns 0). The name
 * is written to name_buf (>= 64 bytes). Uses O_EXCL/mkdirat/symlinkat,
 * so an existing entry (or planted symlink) is never reused. */
int fs_create_unique(int dirfd, const char *prefix, char kind, mode_t mode,
                     const char *target, char *name_buf, size_t name_len);

/* Write prefix + 16 random hex digits to buf (>= strlen(prefix) + 17
 * bytes). 0 or -ENAMETOOLONG. */
int fs_random_name(const char *prefix, char *buf, size_t len);

/* Copy from in_fd (from its offset, to EOF) to out_fd (or nowhere, -1),
 * feeding every byte to the digest d when it is not NULL. Between
 * regular files holes stay holes: only data extents are read and
 * written, and out_fd is extended to the full length with ftruncate.
 * max_bytes (0 = no limit) bounds the length, holes included: a longer
 * file gives -EFBIG (for a regular file before anything is read).
 * Returns the length copied or -errno. */
struct digest;
int64_t fs_copy_digest(int in_fd, int out_fd, struct digest *d, uint64_t max_bytes);

/* The hash hutch records for the entry name in dirfd, whose lstat is st:
 * the content of a regular file (opened O_NOFOLLOW | O_NONBLOCK, and
 * -EAGAIN if what was opened is no longer a regular file), the target
 * string of a symlink (also returned in *ret_target when that is not
 * NULL), "" for anything else. 0 or -errno. */
struct stat;
int fs_hash_at(int dirfd, const char *name, const struct stat *st,
               char hex[65], char **ret_target);

/* Is st a file type hutch carries (regular, directory, symlink)? */
bool fs_mode_supported(mode_t mode);
