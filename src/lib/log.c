/* log.c - hutch's stderr messages. The verbosity, and for a machine
 * caller (--json) the first error said, are the only statics besides the
 * resolved configuration; both are set once by main.
 *
 * A message is as long as it needs to be: cutting it at some size loses
 * its end, which is where the reason is ("PATH: why"), and paths can be
 * long. Messages carry what the job and the user control (command
 * names, paths, profile text, the job's own words), so every control
 * byte is written as an escape: nothing in a message can move the
 * cursor, clear or retitle the terminal, or start a line of its own that
 * looks like hutch's. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"

static enum log_level current_level = LOG_NORMAL;
/* the first error message of this process, kept when main asks for it:
 * it becomes the message of the hutch.error/1 object a --json caller
 * reads when no run happened */
static bool keep_first_error;
static char *first_error;
static char *tag;              /* log_set_tag() */
/* log_set_writer(): the writer, and whether stderr stalled once */
static int (*writer)(int fd, const void *buf, size_t n, uint64_t stall_ms);
static bool stalled;
/* log_set_filter(): what rewrites a message's text (a run's secrets
 * redacted from it) */
static char *(*filter)(const char *text, size_t len, char *const *ctx, size_t *ret_len);
static char *const *filter_ctx;

/* how long one message waits for a reader that takes nothing */
#define LOG_STALL_MS 500

void log_set_writer(int (*w)(int fd, const void *buf, size_t n, uint64_t stall_ms)) { writer = w; }

void log_set_filter(char *(*f)(const char *text, size_t len, char *const *ctx, size_t *ret_len),
                    char *const *ctx)
{
        filter = f;
        filter_ctx = ctx;
}

void log_set_level(enum log_level level) { current_level = level; }
enum log_level log_get_level(void) { return current_level; }

char *log_escape(const char *text, size_t len)
{
        static const char hex[] = "0123456789abcdef";
        char *out = xmalloc(len * 4 + 1), *o = out;

        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)text[i];
                /* C0 controls, DEL, and the C1 controls in their UTF-8
                 * form (U+0080..U+009F, which some terminals obey) */
                bool c1 = c == 0xc2 && i + 1 < len && (unsigned char)text[i + 1] >= 0x80 &&
                          (unsigned char)text[i + 1] <= 0x9f;
                if (c >= 0x20 && c != 0x7f && !c1) {
                        *o++ = (char)c;
                        continue;
                }
                const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
                if (named) {
                        memcpy(o, named, 2);
                        o += 2;
                        continue;
                }
                for (int k = 0; k < (c1 ? 2 : 1); k++) {
                        unsigned char b = (unsigned char)text[i + (size_t)k];
                        *o++ = '\\';
                        *o++ = 'x';
                        *o++ = hex[b >> 4];
                        *o++ = hex[b & 15];
                }
                i += c1;
        }
        *o = '\0';
        return out;
}

void log_msg(enum log_level level, int error, const char *fmt, ...)
{
        char *text = NULL;
        va_list ap;
        int saved = errno, n;

        if (level > current_level)
                return;
        /* %m means strerror of the error we were handed, not of errno */
        errno = error < 0 ? -error : error;
        va_start(ap, fmt);
        n = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (n < 0) {
                fputs("hutch: (a message was lost: out of memory)\n", stderr);
                errno = saved;
                return;
        }
        size_t filtered_len = 0;
        char *filtered = filter ? filter(text, (size_t)n, filter_ctx, &filtered_len) : NULL;
        char *clean = filtered ? log_escape(filtered, filtered_len) : log_escape(text, (size_t)n);
        if (filtered) {
                explicit_bzero(filtered, filtered_len);
                free(filtered);
        }
        if (keep_first_error && level == LOG_QUIET && !__atomic_load_n(&first_error, __ATOMIC_ACQUIRE)) {
                /* hutch mcp's kernel calls log from threads: one wins */
                char *mine = xstrdup(clean), *none = NULL;
                if (!__atomic_compare_exchange_n(&first_error, &none, mine, false, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
                        free(mine);
        }
        char *line = tag ? xasprintf("hutch: [%s] %s\n", tag, clean) : xasprintf("hutch: %s\n", clean);
        /* one write: lines of concurrent hutch processes do not interleave */
        if (!writer)
                fputs(line, stderr);
        else if (writer(STDERR_FILENO, line, strlen(line),
                        __atomic_load_n(&stalled, __ATOMIC_RELAXED) ? 0 : LOG_STALL_MS) == -EAGAIN)
                __atomic_store_n(&stalled, true, __ATOMIC_RELAXED);
        free(line);
        free(clean);
        free(text);
        errno = saved;
}

void log_set_tag(const char *t)
{
        free(tag);
        tag = t ? log_escape(t, strlen(t)) : NULL;
}

void log_keep_first_error(void) { keep_first_error = true; }
const char *log_first_error(void) { return first_error; }

static const char *error_code;
void log_set_error_code(const char *code) { error_code = code; }
const char *log_error_code(void) { return error_code; }
