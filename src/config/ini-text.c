/* ini-text.c - line-numbered inih parsing of a string (see ini-text.h).
 *
 * inih pulls lines through a reader function shaped like fgets(). Ours
 * walks the string, counts lines, and remembers whether the current line
 * starts with blank space and whether a [section] header was seen since the
 * last key: exactly the conditions under which inih treats a line as the
 * continuation of the previous key. The handler shim turns that into the
 * `continuation` flag and the line number.
 */
#include "config.h"

#include <ini.h>
#include <string.h>

#include "config/ini-text.h"
#include "lib/util.h"

struct reader {
        const char *next;         /* start of the next line to hand out */
        unsigned line;            /* number of the line last handed out */
        bool indented;            /* that line starts with a space or tab */
        bool header_since_key;    /* a [section] line since the last key */
        bool have_key;            /* any key seen yet */
        ini_text_handler handler;
        void *userdata;
        int error;                /* first failure, negative errno */
        unsigned error_line;
};

static char *reader_next(char *buf, int size, void *stream)
{
        struct reader *r = stream;
        const char *p = r->next, *nl;
        size_t len;

        if (r->error || !p || *p == '\0')
                return NULL;
        nl = strchr(p, '\n');
        len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        r->line++;
        if (len > (size_t)size - 1) {
                r->error = -E2BIG;
                r->error_line = r->line;
                return NULL;
        }
        memcpy(buf, p, len);
        buf[len] = '\0';
        r->next = p + len;
        r->indented = (*p == ' ' || *p == '\t');

        const char *s = p;
        while (*s == ' ' || *s == '\t')
                s++;
        /* an indented line right after a key continues that key, even if
         * it starts with '[' (that is how inih reads it) */
        if (*s == '[' && !(r->indented && r->have_key && !r->header_since_key)) {
                const char *end = memchr(s, ']', len - (size_t)(s - p));
                r->header_since_key = true;
                if (end) {
                        /* tell the handler about the section even if no key
                         * follows, so an empty misspelt one is still caught */
                        char name[INI_TEXT_MAX_NAME + 1];
                        size_t n = (size_t)(end - s - 1);
                        int k;

                        if (n >= INI_TEXT_MAX_NAME)
                                k = -ENAMETOOLONG;
                        else {
                                memcpy(name, s + 1, n);
                                name[n] = '\0';
                                k = r->handler(r->userdata, name, NULL, NULL, r->line, false);
                        }
                        if (k < 0) {
                                r->error = k;
                                r->error_line = r->line;
                                return NULL;
                        }
                }
        }
        return buf;
}

static int handler_shim(void *user, const char *section, const char *name, const char *value)
{
        struct reader *r = user;
        bool continuation = r->indented && r->have_key && !r->header_since_key;
        int k;

        r->have_key = true;
        r->header_since_key = false;
        /* inih cuts section and key names to 49 bytes without telling;
         * a name that long may have been cut, so refuse it */
        if (strlen(section) >= INI_TEXT_MAX_NAME || strlen(name) >= INI_TEXT_MAX_NAME)
                k = -ENAMETOOLONG;
        else
                k = r->handler(r->userdata, section, name, value, r->line, continuation);
        if (k < 0) {
                if (!r->error) {
                        r->error = k;
                        r->error_line = r->line;
                }
                return 0;
        }
        return 1;
}

int ini_text_parse(const char *text, ini_text_handler handler, void *userdata,
                   unsigned *ret_line, bool *ret_syntax)
{
        struct reader r = {
                .next = text,
                .handler = handler,
                .userdata = userdata,
        };
        int k;

        k = ini_parse_stream(reader_next, &r, handler_shim, &r);
        if (k > 0 && (!r.error || (unsigned)k < r.error_line)) {
                /* inih found a line it could not read before any of ours */
                *ret_line = (unsigned)k;
                if (ret_syntax)
                        *ret_syntax = true;
                return -EINVAL;
        }
        if (k < 0)
                return -ENOMEM;
        if (r.error) {
                *ret_line = r.error_line;
                if (ret_syntax)
                        *ret_syntax = false;
                return r.error;
        }
        return 0;
}
