/* sanitize.h - turn a job's raw output bytes into text that is safe to
 * put in JSON or on a terminal.
 *
 * Stored output is raw bytes (`hutch logs` gives them back exactly); the
 * JSON view and `hutch show` use this instead: ANSI/VT escape sequences are
 * removed and every invalid UTF-8 sequence becomes U+FFFD.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Return a new NUL-terminated, valid UTF-8 copy of buf[0..n) with escape
 * sequences (CSI "ESC [ … final", OSC "ESC ] … BEL|ESC \", DCS/PM/APC/SOS
 * strings, two-byte "ESC x"), the 8-bit CSI (U+009B) with its parameters
 * and every other C1 control (U+0080-U+009F) removed, and each
 * maximal invalid UTF-8 subsequence replaced by U+FFFD. Other control
 * characters (tab, newline, CR, NUL, ...) are kept; JSON escapes them.
 * *ret_len (may be NULL) gets the length without the NUL. Never fails. */
char *sanitize_text(const char *buf, size_t n, size_t *ret_len);

/* Lines of the JSON view longer than this many bytes are folded. */
#define SANITIZE_FOLD_WIDTH 4096
/* The marker a folded line is broken with: U+21A9 (leftwards arrow with
 * hook), then a newline. */
#define SANITIZE_FOLD_MARK "\xe2\x86\xa9\n"

/* Return a new copy of text[0..n) (valid UTF-8, as sanitize_text() makes
 * it) in which every line longer than width bytes is broken, at a
 * character boundary, after at most width bytes, by SANITIZE_FOLD_MARK:
 * one minified megabyte is a few hundred lines for a reader, not one.
 * Text without such a line is copied as it is. *ret_len (may be NULL)
 * gets the length without the NUL. width 0 means no folding. */
char *sanitize_fold(const char *text, size_t n, size_t width, size_t *ret_len);

/* A stdio stream that writes to fd with everything a terminal would obey
 * neutralised into visible text: C0 controls but tab and newline (ESC
 * becomes "^[", CR "^M", BS "^H", BEL "^G"), DEL ("^?"), C1 controls in
 * their UTF-8 form ("\\u009d") and bytes that are not UTF-8 ("\\x9b").
 * For the history verbs when their output is a terminal; redirected
 * output is left exact. NULL if stdio cannot make one. */
FILE *sanitize_tty_stream(int fd);

/* Standard base64 (RFC 4648, with padding) of data[0..n), a new string. */
char *sanitize_base64(const void *data, size_t n);

/* Whether s[0..n) is valid UTF-8 without NUL bytes. */
bool sanitize_utf8_valid(const char *s, size_t n);

/* A job-made name (a path, a link target) for a line of a text view, as
 * git writes one: unchanged when it is plain, otherwise in double quotes
 * with \a \b \t \n \v \f \r \\ \" and \ooo (octal) for every other
 * byte that needs it. Plain means no C0 control, DEL, backslash, double
 * quote, invalid UTF-8, C1 control (U+0080-U+009F) or character that
 * breaks or reorders a line for a reader (U+061C, U+200E, U+200F,
 * U+2028-U+202E, U+2066-U+2069). So a name is always one line, cannot
 * pass for other lines of the view (a newline and "@@ ..." in it), and
 * reads back to its exact bytes (git apply and patch(1) take the quoted
 * form in a diff header). Caller frees; never NULL. */
char *sanitize_quote_name(const char *s);

/* argv as one line for people: words joined by spaces, quoted (shell
 * style) when they need it, control characters shown as '?', cut to
 * max_width columns with "…" (0: no limit). Caller frees; never NULL. */
char *sanitize_argv_line(char *const *argv, size_t max_width);

/* What a --lang run ran, for a listing: "LANG: " and the first
 * non-blank line of code[0..len), sanitised (sanitize_text()), cut to
 * max bytes with "..." (never inside a character). A --lang run's argv
 * is its interpreter's bootstrap, which says nothing. Caller frees;
 * never NULL. */
char *sanitize_code_line(const char *lang, const char *code, size_t len, size_t max);
