/* fstest.h - helpers for the filesystem unit tests: temporary trees,
 * copying and comparing trees, and a real overlay mount made in a child
 * that enters a new user + mount namespace (root or not).
 *
 * Helpers return 0 or -errno (never assert), so they can also run in the
 * forked child, where a cmocka assertion would be meaningless. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "lib/digest.h"

/* A new empty directory under $TMPDIR (default /tmp); caller frees. */
char *fst_mkdtemp(const char *tag);
/* dir + "/" + rel, newly allocated. */
char *fst_path(const char *dir, const char *rel);
/* Create or truncate dir/rel with content and mode (mode applied with chmod). */
int fst_write(const char *dir, const char *rel, const char *content, mode_t mode);
/* Content of dir/rel into a new string, or NULL. */
char *fst_read(const char *dir, const char *rel);
int fst_mkdir(const char *dir, const char *rel, mode_t mode);
int fst_symlink(const char *target, const char *dir, const char *rel);
/* Remove a tree (no symlink followed). ENOENT is fine. */
int fst_rm_rf(const char *path);
/* Copy src to dst (which must not exist): dirs, files, symlinks with
 * their permission bits; devices, fifos and sockets are left out. */
int fst_copy_tree(const char *src, const char *dst);
/* 0 if the trees hold the same names, types, permission bits, file
 * contents and symlink targets; 1 if not (*why says where, caller frees);
 * -errno on error. */
int fst_compare_trees(const char *a, const char *b, char **why);
/* sha256 of a buffer as hex (convenience). */
const char *fst_sha(const char *s, char hex[DIGEST_HEX_SIZE]);
/* Does any entry below dir have a name starting with prefix? */
bool fst_tree_has_prefix(const char *dir, const char *prefix);

/* A scratch overlay: base/{lower,upper,work,merged,expected}. */
struct fst_overlay {
        char *base, *lower, *upper, *work, *merged, *expected;
};

int fst_overlay_init(struct fst_overlay *o);
void fst_overlay_done(struct fst_overlay *o);

/* Fork a child that unshares CLONE_NEWUSER | CLONE_NEWNS, maps the
 * caller's uid and gid to 0 (setgroups deny: works for root and for an
 * unprivileged user alike), mounts overlay(lower, upper, work, userxattr)
 * on merged, runs edit(merged), copies the merged view to expected,
 * unmounts and exits. Returns 0 on success, 77 if user namespaces or an
 * overlay in one are unavailable (skip), another positive code or -errno
 * on failure (the child says why on stderr). */
int fst_overlay_run(struct fst_overlay *o, int (*edit)(const char *merged));

/* The shared scenario: what lower holds before, and the job's edits. */
int fst_scenario_lower(const char *lower);
int fst_scenario_edit(const char *merged);

struct fst_expect {
        const char *path;
        const char *kind;       /* "added" "modified" "deleted" */
        const char *skip;       /* NULL, or change_skip_to_string() */
};
/* Exactly the changes fst_scenario_edit makes, in any order. */
extern const struct fst_expect fst_scenario_changes[];
extern const unsigned fst_scenario_n_changes;
