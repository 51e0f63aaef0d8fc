/* ini-text.h - inih over an in-memory text, with line numbers.
 *
 * inih hands its callback a section, key and value but not the line they
 * came from (the packaged library is built without INI_HANDLER_LINENO), and
 * it folds indented continuation lines into repeated callbacks for the same
 * key. This wrapper feeds inih one line at a time from a string, so it
 * knows the line of every callback and whether it was a continuation. It
 * also refuses lines inih would silently split (longer than its buffer).
 * Profiles (profile-load.c) and the language table (lang.c) both read through it.
 */
#pragma once

#include <stdbool.h>

/* Longest line inih can hold, newline included (its INI_MAX_LINE, less
 * the NUL), and the longest section or key name it keeps whole. */
#define INI_TEXT_MAX_LINE 199
#define INI_TEXT_MAX_NAME 49

/* Called once per "[section]" line with name and value NULL, once per
 * "key = value" line and once per continuation line.
 * section is "" before the first [section]. For a continuation,
 * continuation is true and name is the key being continued. Return 0 to
 * go on, or a negative errno to stop (the caller keeps its own message). */
typedef int (*ini_text_handler)(void *userdata, const char *section, const char *name,
                                const char *value, unsigned line, bool continuation);

/* Parse text (NUL-terminated). Returns 0 on success; on failure returns a
 * negative errno and sets *ret_line to the line at fault:
 *   -EINVAL  a line inih could not read (no '=', no ']') - *ret_syntax set
 *   -E2BIG   a line longer than INI_TEXT_MAX_LINE
 *   -ENAMETOOLONG  a section or key name of INI_TEXT_MAX_NAME bytes or more
 *   other    whatever the handler returned (first failure wins)
 * ret_syntax may be NULL. Nothing is allocated. */
int ini_text_parse(const char *text, ini_text_handler handler, void *userdata,
                   unsigned *ret_line, bool *ret_syntax);
