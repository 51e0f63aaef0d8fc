/* relay.c - moving one direction of an allowed connection (see relay.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/util.h"
#include "net/relay.h"

#define PIPE_SIZE (256 * 1024)

bool relay_room(const struct relay_flow *f)
{
        return f->pipe[0] >= 0 ? *f->inpipe < f->cap : *f->len < RELAY_BUF_SIZE;
}

int relay_pump(const struct relay_flow *f, uint64_t *total, uint64_t max_bytes)
{
        bool spliced = f->pipe[0] >= 0;
        ssize_t n;

        if (!*f->eof && relay_room(f)) {
                if (spliced)
                        n = splice(f->src, NULL, f->pipe[1], NULL, f->cap - *f->inpipe,
                                   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
                else
                        n = recv(f->src, f->buf + *f->len, RELAY_BUF_SIZE - *f->len, MSG_DONTWAIT);
                if (n > 0)
                        *(spliced ? f->inpipe : f->len) += (size_t)n;
                else if (n == 0)
                        *f->eof = true;
                else if (errno != EAGAIN && errno != EINTR)
                        return -errno;
        }
        size_t budget = SIZE_MAX;
        if (max_bytes)
                budget = max_bytes > *total ? max_bytes - *total : 0;
        n = 0;
        if (*f->len > 0 && budget > 0) {
                n = send(f->dst, f->buf, MIN(*f->len, budget), MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0) {
                        memmove(f->buf, f->buf + n, *f->len - (size_t)n);
                        *f->len -= (size_t)n;
                }
        } else if (spliced && *f->inpipe > 0 && budget > 0) {
                n = splice(f->pipe[0], NULL, f->dst, NULL, MIN(*f->inpipe, budget),
                           SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
                if (n > 0)
                        *f->inpipe -= (size_t)n;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
                return -errno;
        if (n > 0) {
                *f->count += (uint64_t)n;
                *total += (uint64_t)n;
        }
        if (max_bytes && *total >= max_bytes)
                return -EDQUOT;
        if (*f->eof && *f->len == 0 && *f->inpipe == 0 && !*f->shut) {
                (void)shutdown(f->dst, SHUT_WR);
                *f->shut = true;
        }
        return 0;
}

size_t relay_open_pipes(int up[2], int down[2])
{
        if (pipe2(up, O_NONBLOCK | O_CLOEXEC) < 0) {
                up[0] = up[1] = -1;
                return 0;
        }
        if (pipe2(down, O_NONBLOCK | O_CLOEXEC) < 0) {
                close(up[0]);
                close(up[1]);
                up[0] = up[1] = down[0] = down[1] = -1;
                return 0;
        }
        /* a larger pipe means fewer wakeups; the default (64K) is fine too */
        (void)fcntl(up[1], F_SETPIPE_SZ, PIPE_SIZE);
        (void)fcntl(down[1], F_SETPIPE_SZ, PIPE_SIZE);
        int a = fcntl(up[1], F_GETPIPE_SZ), b = fcntl(down[1], F_GETPIPE_SZ);
        return (size_t)MAX(MIN(a, b), 4096);
}
