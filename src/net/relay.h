/* relay.h - one direction of an allowed connection, from one socket to
 * the other, with bounded memory and without blocking: through a pipe
 * with splice(), so the kernel moves the pages and the helper copies
 * nothing; buf holds only what was read before the relay began (the
 * peeked bytes, the proxy's answer) and goes out first. Without a pipe
 * (pipe2 failed) buf carries everything.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELAY_BUF_SIZE (64 * 1024)

struct relay_flow {
        int src, dst;
        uint8_t *buf;           /* RELAY_BUF_SIZE bytes */
        size_t *len;
        int *pipe;              /* [2]; pipe[0] < 0: no pipe */
        size_t *inpipe;         /* bytes in the pipe */
        size_t cap;             /* the pipe's size */
        bool *eof, *shut;       /* src ended; dst shut for writing */
        uint64_t *count;        /* bytes delivered to dst */
};

/* Whether f can take more from src. */
bool relay_room(const struct relay_flow *f);

/* Read what src has (up to the room), write what dst takes; at src's
 * end with nothing pending, shut dst for writing. *total counts bytes
 * over every flow; once it reaches max_bytes (0: no limit) nothing more
 * is written and -EDQUOT returned. 0, or -errno when a socket failed. */
int relay_pump(const struct relay_flow *f, uint64_t *total, uint64_t max_bytes);

/* Open the two pipes of a connection (non-blocking), as large as the
 * system lets us up to 256K. Returns their capacity, or 0 with all four
 * fds -1 when there are none. */
size_t relay_open_pipes(int up[2], int down[2]);
