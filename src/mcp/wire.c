/* wire.c - line framing for `hutch mcp` (see wire.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lib/util.h"
#include "mcp/wire.h"

void wire_in_init(struct wire_in *w, int fd)
{
        *w = (struct wire_in) { .fd = fd };
}

void wire_in_done(struct wire_in *w)
{
        free(w->buf);
        *w = (struct wire_in) { .fd = -1 };
}

int wire_in_fill(struct wire_in *w)
{
        for (int rounds = 0; rounds < 16; rounds++) {
                if (w->cap - w->len < 65536) {
                        w->cap = w->cap ? w->cap * 2 : 131072;
                        w->buf = xrealloc(w->buf, w->cap);
                }
                ssize_t n = read(w->fd, w->buf + w->len, w->cap - w->len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN ? 0 : -errno;
                }
                if (n == 0) {
                        w->eof = true;
                        return 0;
                }
                w->len += (size_t)n;
                /* let the caller take lines before the buffer grows on */
                if (memchr(w->buf + w->len - (size_t)n, '\n', (size_t)n) || w->len > MCP_LINE_MAX)
                        return 0;
        }
        return 0;
}

enum wire_line wire_in_next(struct wire_in *w, char **ret_line)
{
        for (;;) {
                /* look only at bytes not searched before: a long line
                 * arriving in pieces costs its length once */
                char *nl = w->len > w->scanned ? memchr(w->buf + w->scanned, '\n', w->len - w->scanned) : NULL;
                if (!nl) {
                        w->scanned = w->len;
                        if (w->len > MCP_LINE_MAX) {
                                /* keep nothing of it; the rest is skipped up to its newline */
                                bool first = !w->skipping;
                                w->skipping = true;
                                w->len = w->scanned = 0;
                                if (first)
                                        return WIRE_TOO_LONG;
                        }
                        if (w->eof && w->len > 0 && !w->skipping) {
                                /* a last line without its newline still counts */
                                *ret_line = xmalloc(w->len + 1);
                                memcpy(*ret_line, w->buf, w->len);
                                (*ret_line)[w->len] = '\0';
                                w->len = w->scanned = 0;
                                return WIRE_LINE;
                        }
                        return WIRE_NONE;
                }
                size_t n = (size_t)(nl - w->buf);
                bool skipped = w->skipping;
                char *line = NULL;
                if (!skipped && n <= MCP_LINE_MAX) {
                        line = xmalloc(n + 1);
                        memcpy(line, w->buf, n);
                        line[n] = '\0';
                        if (n && line[n - 1] == '\r')
                                line[n - 1] = '\0';
                }
                memmove(w->buf, nl + 1, w->len - n - 1);
                w->len -= n + 1;
                w->scanned = 0;
                w->skipping = false;
                if (skipped)
                        continue;
                if (!line)
                        return WIRE_TOO_LONG;
                *ret_line = line;
                return WIRE_LINE;
        }
}

bool wire_in_has_line(const struct wire_in *w)
{
        return w->len > w->scanned && memchr(w->buf + w->scanned, '\n', w->len - w->scanned);
}

void wire_out_init(struct wire_out *w, int fd)
{
        *w = (struct wire_out) { .fd = fd };
}

void wire_out_done(struct wire_out *w)
{
        free(w->buf);
        *w = (struct wire_out) { .fd = -1 };
}

void wire_out_send(struct wire_out *w, const json_t *msg)
{
        if (w->broken)
                return;
        /* JSON_COMPACT never breaks lines, and jansson escapes control
         * characters in strings, so the message is one line */
        _cleanup_free_ char *text = json_dumps(msg, JSON_COMPACT);
        if (!text)
                return;
        size_t n = strlen(text);
        if (w->off > 0 && w->off == w->len)
                w->off = w->len = 0;
        if (w->cap - w->len < n + 1) {
                if (w->off > 0) {
                        memmove(w->buf, w->buf + w->off, w->len - w->off);
                        w->len -= w->off;
                        w->off = 0;
                }
                while (w->cap - w->len < n + 1)
                        w->cap = w->cap ? w->cap * 2 : 65536;
                w->buf = xrealloc(w->buf, w->cap);
        }
        memcpy(w->buf + w->len, text, n);
        w->buf[w->len + n] = '\n';
        w->len += n + 1;
}

int wire_out_flush(struct wire_out *w)
{
        while (!w->broken && w->off < w->len) {
                ssize_t n = write(w->fd, w->buf + w->off, w->len - w->off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        w->broken = true;
                        w->off = w->len = 0;
                        return -errno;
                }
                w->off += (size_t)n;
        }
        if (w->off == w->len)
                w->off = w->len = 0;
        return 0;
}
