/* session.h - persistent workspaces (`hutch run --session NAME`).
 *
 * Layout under the state dir (next to hutch.db):
 *
 *      sessions/               mode 0700
 *      sessions/NAME/          mode 0700
 *      sessions/NAME/lock      locked (OFD write lock) by the one run (or
 *                              `hutch session rm`) using the session; its
 *                              mtime is the session's last use
 *      sessions/NAME/tree/     the workspace itself
 *      sessions/NAME/ttl       the session_ttl (ms, decimal) of the run that
 *                              used it last: how long it may stay unused
 *
 * A run mounts overlay(lower = tree, upper = scratch) and, only when it
 * succeeds, applies its change set to tree (apply.h) while still holding
 * the lock. So a run that fails, times out or is killed leaves tree as it
 * was, and two runs of one session never overlap.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/run-config.h"

/* enum session_commit (config/run-config.h, the profile key commit):
 * "success", "always", "never" -> the policy; -EINVAL otherwise. */
int session_commit_from_string(const char *s);
const char *session_commit_to_string(enum session_commit c);
/* Whether a run with this outcome commits under policy c. */
bool session_commit_wanted(enum session_commit c, bool succeeded);

/* Is name a session name: 1-64 of [A-Za-z0-9._-], not starting with '.'. */
bool session_name_valid(const char *name);

/* The sessions directory for the run database at db_path (a new string). */
char *session_root(const char *db_path);

struct session {
        char *name;
        char *dir;              /* sessions/NAME */
        char *tree;             /* sessions/NAME/tree */
        int lock_fd;            /* holds the lock */
};

/* Open session name under root, creating it if needed, and lock it.
 * wait_ms: how long to wait for another holder (0: not at all, then
 * -EBUSY). Returns 0 and fills *ret (release with session_release), or
 * -errno (-EINVAL: bad name). */
int session_acquire(const char *root, const char *name, uint64_t wait_ms, struct session *ret);

struct request_file;

/* Put files into the locked session's tree before a run (a request's
 * or an MCP call's "files" with a session): an upload, kept whatever
 * the run then does, never part of its change set. Parent dirs are
 * made (0755); every component is opened without following symlinks,
 * and a path whose last component is not a regular file (a symlink, a
 * FIFO, a dir) is refused: the tree is what earlier jobs left. Files
 * are 0644, given to uid:gid unless uid is (uid_t)-1. 0, or -errno and
 * *ret_index the file at fault. */
int session_put_files(struct session *s, const struct request_file *files, size_t n, uid_t uid, gid_t gid,
                      size_t *ret_index);

/* Record now as the session's last use. */
void session_touch(struct session *s);

/* Record ttl_ms (0: never expires) as how long the session may stay
 * unused before `hutch gc` removes it: the profile of the run that used
 * it last decides. Replaces the ttl file atomically. 0 or -errno. */
int session_set_ttl(struct session *s, uint64_t ttl_ms);

/* Give every entry of the tree to uid:gid (no symlink followed): after
 * root applied a change set, the files belong to the id root's sandbox
 * runs as, like everything else in the session. 0 or -errno. */
int session_chown_tree(struct session *s, uid_t uid, gid_t gid);

/* Unlock and free (NULL-safe fields). */
void session_release(struct session *s);

struct session_info {
        char *name;
        uint64_t last_used_ms;  /* lock file mtime */
        uint64_t created_ms;    /* the session dir's birth time; 0: unknown */
        uint64_t ttl_ms;        /* its ttl file; UINT64_MAX: none recorded
                                 * (a session from before, gc uses the default) */
        uint64_t bytes;         /* sum of file sizes in tree */
        uint64_t files;         /* entries in tree */
        bool in_use;            /* a run holds it now */
};

/* The sessions under root, by name. *ret (free with session_info_free). */
int session_list(const char *root, struct session_info **ret, size_t *ret_n);
void session_info_free(struct session_info *v, size_t n);

/* Remove session name unless a run holds it (-EBUSY). -ENOENT if absent. */
int session_remove(const char *root, const char *name);
