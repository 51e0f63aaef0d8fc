/* log.c - hutch's stderr messages. The verbosity is the one static besides
 * the resolved configuration; it is set once from the command line. */
#include "config.h"

#include <stdarg.h>
#include <string.h>

#include "lib/log.h"

static enum log_level current_level = LOG_NORMAL;

void log_set_level(enum log_level level) { current_level = level; }
enum log_level log_get_level(void) { return current_level; }

void log_msg(enum log_level level, int error, const char *fmt, ...)
{
        char buf[2048];
        va_list ap;
        int saved = errno;

        if (level > current_level)
                return;
        /* %m means strerror of the error we were handed, not of errno */
        errno = error < 0 ? -error : error;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        fprintf(stderr, "hutch: %s\n", buf);
        errno = saved;
}
