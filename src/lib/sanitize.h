/* sanitize.h - turn a job's raw output bytes into text that is safe to
 * put in JSON or on a terminal.
 *
 * Stored output is raw bytes (`hutch logs` gives them back exactly); the
 * JSON view and `hutch show` use this instead: ANSI/VT escape sequences are
 * removed and every invalid UTF-8 sequence becomes U+FFFD.
 */
#pragma once

#include <stddef.h>

/* Return a new NUL-terminated, valid UTF-8 copy of buf[0..n) with escape
 * sequences (CSI "ESC [ … final", OSC "ESC ] … BEL|ESC \", DCS/PM/APC/SOS
 * strings, two-byte "ESC x") and the 8-bit CSI (U+009B) removed, and each
 * maximal invalid UTF-8 subsequence replaced by U+FFFD. Other control
 * characters (tab, newline, CR, NUL, ...) are kept; JSON escapes them.
 * *ret_len (may be NULL) gets the length without the NUL. Never fails. */
char *sanitize_text(const char *buf, size_t n, size_t *ret_len);
