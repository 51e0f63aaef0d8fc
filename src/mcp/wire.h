/* wire.h - the stdio transport of `hutch mcp`: newline-delimited
 * JSON-RPC messages read from one fd and written to another, both
 * non-blocking, both bounded.
 *
 * The reader keeps at most MCP_LINE_MAX bytes of a line; a longer line
 * is dropped up to its newline and reported as too long, so a client
 * cannot make the server hold an unbounded message. The writer queues
 * whole lines; the server stops reading requests while the queue is
 * above MCP_OUT_HIGH, so a client that does not read its answers slows
 * itself down instead of growing our memory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#define MCP_LINE_MAX (80u << 20)  /* a request with inline files may be big */
#define MCP_OUT_HIGH (16u << 20)

struct wire_in {
        int fd;
        char *buf;
        size_t len, cap;
        size_t scanned;         /* buf[0..scanned) holds no newline */
        bool skipping;          /* inside a line longer than MCP_LINE_MAX */
        bool eof;
};

/* What wire_in_next() found. */
enum wire_line {
        WIRE_NONE,              /* no complete line buffered */
        WIRE_LINE,              /* *ret_line: one line, NUL-terminated, newline removed */
        WIRE_TOO_LONG,          /* a line was dropped for its length */
};

void wire_in_init(struct wire_in *w, int fd);
void wire_in_done(struct wire_in *w);
/* Read what is there (fd non-blocking). 0; w->eof on end of file;
 * -errno on a read error. */
int wire_in_fill(struct wire_in *w);
/* Take the next line out of the buffer. The line is a new string the
 * caller frees. */
enum wire_line wire_in_next(struct wire_in *w, char **ret_line);

struct wire_out {
        int fd;
        char *buf;
        size_t len, cap, off;
        bool broken;            /* the client closed its end: drop everything */
};

void wire_out_init(struct wire_out *w, int fd);
void wire_out_done(struct wire_out *w);
/* Queue msg as one line (compact JSON: no embedded newline). */
void wire_out_send(struct wire_out *w, const json_t *msg);
/* Write what the fd takes now. 0, or -errno (-EPIPE: client gone, and
 * w->broken is set). */
int wire_out_flush(struct wire_out *w);
/* Whether a whole line is buffered (the last wire_in_next() stopped early). */
bool wire_in_has_line(const struct wire_in *w);

static inline size_t wire_out_pending(const struct wire_out *w) { return w->len - w->off; }
