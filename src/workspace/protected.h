/* protected.h - workspace paths whose change hands the job code execution
 * outside the sandbox, so apply refuses them unless told otherwise.
 *
 * A job's changes are applied to the user's own directory, usually a
 * checkout. Some files there are not data but instructions that tools run
 * as the user later, without the user running anything of the job's:
 * git runs .git/hooks/ scripts and core.fsmonitor at the next `git status`,
 * direnv loads .envrc on `cd`, an editor runs .vscode/tasks.json on
 * folder open, an agent reads .mcp.json. Installing such a change is
 * handing the job the user's account. So every change at (or below) one
 * of these paths is "protected": apply refuses the whole change set by
 * default, names each path and its reason, and applies it only when the
 * caller says so (apply.h, apply_options.protected_policy).
 *
 * The built-in list (protected_builtin_list(), also in hutch-apply(1)):
 * names matched as any component of the path, at any depth, so a nested
 * repository or a subproject's .vscode/ count too, and a directory's
 * whole subtree is protected with it. Matching ignores ASCII case: on a
 * case-insensitive filesystem (vfat, casefolded ext4) ".GIT/hooks" is
 * ".git/hooks". A symlink is protected when its own path is, and also when
 * its target, read lexically (relative to the link's directory, ".."
 * resolved as text), names a protected path: a link does not write
 * anything, but it is how a later write by a tool reaches the file.
 *
 * A profile adds patterns ([apply] protect): fnmatch(3) globs, case
 * folded, matched against the whole relative path and every leading part
 * of it (so "secrets" or "secrets/" protects the directory and everything
 * below); a pattern without '/' is also matched against each component
 * (like a .gitignore pattern). A profile can add, never remove: only the
 * caller's explicit policy (--allow-protected, --skip-protected) lets a
 * protected change through.
 */
#pragma once

#include <stdbool.h>

#include "workspace/changeset.h"

/* One built-in rule: a path component, or a component followed by more
 * components ("a/b": component a immediately followed by b). */
struct protected_rule {
        const char *name;
        const char *reason;
};

/* The built-in rules, terminated by { NULL, NULL }. */
const struct protected_rule *protected_builtin_list(void);

/* Is a profile pattern acceptable: non-empty, relative (no leading '/'),
 * no control characters, shorter than PATH_MAX? NULL when it is, else
 * what was expected (for the profile key's check). */
const char *protected_pattern_check(const char *pattern);

/* Why the change c must not be applied without the caller's consent, or
 * NULL when it may. extra: the profile's patterns (NULL-terminated, may be
 * NULL). The returned string is static or points into extra's entries'
 * lifetime-free text ("matches [apply] protect"). */
const char *protected_change_reason(const struct change *c, char *const *extra);

/* The same for a bare path (no symlink target). */
const char *protected_path_reason(const char *path, char *const *extra);

/* A change below a directory that is a git repository by git's own test
 * (HEAD, objects/ and refs/ in it once cs is applied: in cs, or on the
 * host through host_fd, the target directory, or -1 for cs alone) but is
 * not named .git: a bare repository a job lays out, or one already
 * there, whose config and hooks git runs when the user works in it. Its
 * reason, or NULL. */
const char *protected_repo_reason(const struct changeset *cs, const struct change *c, int host_fd);

/* protected_change_reason(), then protected_repo_reason(): what apply,
 * diff and show check for each change of cs. */
const char *protected_changeset_reason(const struct changeset *cs, const struct change *c, int host_fd,
                                       char *const *extra);
