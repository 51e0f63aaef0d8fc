/* log.h - hutch's own messages, all on stderr and prefixed "hutch: ".
 *
 * Modules return negative errno values and do not log (except at debug
 * level); the verb that called them logs once, in words, and returns.
 * log_error_errno() returns its (negative) error so that pattern is one
 * line:  return log_error_errno(r, "overlay on '%s': %m", root);
 * "%m" in the format stands for strerror(-error).
 */
#pragma once

#include "lib/util.h"

enum log_level {
        LOG_QUIET = 0,   /* errors only */
        LOG_NORMAL = 1,  /* warnings and notices */
        LOG_VERBOSE = 2, /* -v: what hutch is doing */
        LOG_DEBUG = 3,   /* -vv: everything */
};

void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* Print one message, "hutch: " + text + newline, whole (no length
 * limit) and with control bytes escaped (see log_escape()). */
void log_msg(enum log_level level, int error, const char *fmt, ...) _printf_(3, 4);

/* text[0..len) with every control byte written as an escape: \n, \t,
 * \r, else \xHH (C0 controls, DEL, and U+0080..U+009F in UTF-8). Other
 * bytes, UTF-8 included, are kept. A new string, never NULL. */
char *log_escape(const char *text, size_t len);

/* From now on, remember the first error-level message (escaped, without
 * the "hutch: " prefix); log_first_error() gives it, or NULL when none was
 * logged. For main's hutch.error/1 answer to --json callers. */
void log_keep_first_error(void);

/* Write every message through w (fd, bytes, and how long it may wait
 * for a reader that takes nothing: returns 0, or -EAGAIN when it gave
 * up and dropped the rest) instead of a blocking write to stderr. A
 * stderr nobody reads (a full pipe, a stopped terminal) must not hold
 * hutch after its run; once a message was dropped, the later ones are
 * written only as far as the fd takes them at once. main sets it to
 * hostio_write_bounded(). */
void log_set_writer(int (*w)(int fd, const void *buf, size_t n, uint64_t stall_ms));
const char *log_first_error(void);
/* From now on, pass each message's text (before its control bytes are
 * escaped) through f with ctx: f returns a new string of *ret_len bytes
 * to say instead, or NULL to say it as it is. hutch run sets redact()
 * with its secrets (redact.h): its messages quote the job's argv and
 * output, which may hold a value. f NULL: none. */
void log_set_filter(char *(*f)(const char *text, size_t len, char *const *ctx, size_t *ret_len),
                    char *const *ctx);
/* The stable code (hutch-json(7), a static string: "store_busy",
 * "admission_full", ...) of the error hutch is about to end with, where
 * its exit code alone does not tell it; NULL when none was set. For the
 * same answer; set by whichever module knows (cli/, run/). */
void log_set_error_code(const char *code);
const char *log_error_code(void);

/* From now on, every message is "hutch: [tag] text" (tag copied; NULL:
 * none): `hutch run --log-id` tags its messages with the run's id once
 * it exists, so a server that collects many runs' stderr (hutch mcp)
 * can tell them apart. */
void log_set_tag(const char *tag);

#define log_error(...) log_msg(LOG_QUIET, 0, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_NORMAL, 0, __VA_ARGS__)
#define log_info(...) log_msg(LOG_VERBOSE, 0, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, 0, __VA_ARGS__)

#define log_error_errno(error, ...) \
        ({ int _e = (error); log_msg(LOG_QUIET, _e, __VA_ARGS__); _e < 0 ? _e : -_e; })
#define log_warning_errno(error, ...) \
        ({ int _e = (error); log_msg(LOG_NORMAL, _e, __VA_ARGS__); _e < 0 ? _e : -_e; })
#define log_debug_errno(error, ...) \
        ({ int _e = (error); log_msg(LOG_DEBUG, _e, __VA_ARGS__); _e < 0 ? _e : -_e; })
