/* stage.h - a request's files written where only the job can read them.
 *
 * A --request (or an MCP call) may carry files: they become the
 * workspace's lower dir, as --workdir would, so the job finds them at
 * /workspace and they are never counted as its changes. They can hold
 * anything the caller gave the job (code, data, keys), so they stay
 * private for the whole run: the directory and every directory under it
 * 0700, every file 0600, owned by the id the sandbox's user maps to.
 */
#pragma once

#include <sys/types.h>

#include "config/request.h"

/* Write req's files into a new directory and set *ret_dir to its path
 * as soon as it exists (also on failure: the caller removes it). uid
 * and gid: the owner to give everything, (uid_t)-1 to keep the caller's
 * (hutch not running as real root: the sandbox maps the caller). The
 * directory is made under $XDG_RUNTIME_DIR when that is the caller's own
 * private (0700) directory and uid is -1, else under $TMPDIR or /tmp
 * (still 0700: no other user can list or read it). 0, or -errno with
 * *ret_pointer (the JSON pointer of the file, or "/files") and
 * *ret_error (one line) set. */
int stage_request_files(const struct request *req, uid_t uid, gid_t gid, char **ret_dir,
                        char **ret_pointer, char **ret_error);
