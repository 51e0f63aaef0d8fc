/* profile-internal.h - internal to the profile layer: what its files
 * share. Not an API; everything else includes config/profile.h.
 *
 * Shape of the work: a profile is a few dozen lines; a run reads one to
 * three of them (the profile and what it extends). Everything here is
 * small and linear; clarity and exact error messages matter more than
 * speed.
 *
 * The layer is split by concern:
 *   profile-keys.c       the key table, checks of string values, key lookup
 *   profile-value.c      values: text <-> field, the setters, cross-key checks
 *   profile-canonical.c  the resolved profile as canonical text
 *   profile-search.c     the search path, trust, listing
 *   profile-load.c       reading a file and following `extends`
 */
#pragma once

#include <stdbool.h>

#include "config/profile.h"
#include "config/run-config.h"
#include "lib/util.h"

/* ---- profile-keys.c ------------------------------------------------------ */

/* Whether s holds a control character (below 0x20, or DEL). */
bool profile_has_control(const char *s);

/* Whether path is the directory top or below it (both absolute). */
bool profile_path_within(const char *path, const char *top);

/* Whether s can name an environment variable: [A-Za-z_][A-Za-z0-9_]*. */
bool profile_valid_env_name(const char *s);

/* Whether a profile may have the section s ("env" included). */
bool profile_section_known(const char *s);

/* The key named name in section ("" for the top level), or NULL. */
const struct profile_key *profile_key_in_section(const char *section, const char *name);

/* The key's id for run_config origins: "limits.memory", or "description"
 * for top-level keys. Newly allocated. */
char *profile_key_id(const struct profile_key *k);

/* ---- profile-value.c ----------------------------------------------------- */

/* Whether the NULL-terminated vector v (may be NULL) holds s. */
bool profile_strv_contains(char *const *v, const char *s);

/* Set *ret_error (if not NULL) to "w: message", or to the message alone
 * if w is NULL; frees w. Returns r. */
int profile_fail(char **ret_error, int r, char *w, const char *fmt, ...) _printf_(4, 5);

/* Set [env] name to value; origin, file and line as for profile_set_key(). */
int profile_set_env(struct run_config *cfg, const char *name, const char *value,
                    enum origin origin, const char *file, unsigned line, char **ret_error);

/* Parse value for k and store it; append adds list items instead of
 * replacing the list. Returns as profile_set_key(). */
int profile_set_value(struct run_config *cfg, const struct profile_key *k, const char *value,
                      bool append, enum origin origin, const char *file, unsigned line,
                      char **ret_error);

/* ---- profile-canonical.c ------------------------------------------------- */

/* qsort() comparison of two char *. */
int profile_cmp_str(const void *a, const void *b);

/* ---- profile-search.c ---------------------------------------------------- */

/* Whether s is a valid profile name (letters, digits, '-', '_', '.', not
 * starting with '.', at most 64). */
bool profile_valid_name(const char *s);

/* Whether s names a file rather than a profile: has a '/' or ends in ".ini". */
bool profile_is_path(const char *s);

/* dirs joined with ", " for messages ("nowhere" if none). Newly allocated. */
char *profile_dirs_text(char *const *dirs);

/* Find NAME.ini in the search path, skipping the file skip (a realpath, or
 * NULL). Returns 0 with *ret_path, or -ENOENT. */
int profile_find(const char *name, const char *skip, char **ret_path);

/* The last component of p. Newly allocated. */
char *profile_basename(const char *p);

/* "python" from ".../python.ini". Newly allocated. */
char *profile_name_of(const char *path);
