/* hostio.c - the caller's stdio, non-blocking without touching what the
 * caller shares (see hostio.h).
 *
 * What the caller's fd is decides how it is used:
 *   - a pipe, a FIFO or a terminal: reopened through /proc/self/fd/N as a
 *     private description with O_NONBLOCK. The caller's description (and
 *     so the terminal's and the shell's view of it) is never changed.
 *     Safety: the magic link leads only to the object the caller handed
 *     us as this very fd, opened with our own credentials; O_NOCTTY keeps
 *     a terminal from becoming our controlling one; a FIFO opened for
 *     reading with O_NONBLOCK does not wait for a writer, and one opened
 *     for writing fails (ENXIO) rather than wait for a reader.
 *   - where the reopen fails (a pipe another uid made, a terminal in
 *     exclusive mode): the caller's fd itself, asked only what cannot
 *     block: poll() with no timeout first, then at most what poll()
 *     promised (FIONREAD bytes in; for a pipe PIPE_BUF bytes out, which
 *     POLLOUT guarantees room for; for a terminal a small chunk).
 *   - a socket: recv()/send() with MSG_DONTWAIT, which is per call.
 *   - a regular file, a block device, /dev/null and other character
 *     devices: used as they are. Their reads and writes end by themselves
 *     (a disk is slow, not stalled), and reopening a file would lose the
 *     offset the caller shares (`{ echo a; hutch run ...; } > f`).
 *   - not open at all: no input, and output goes nowhere.
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "supervise/hostio.h"
#include "lib/redact.h"
#include "lib/util.h"

enum mode {
        MODE_PLAIN,             /* the caller's fd, whose calls end by themselves */
        MODE_PRIVATE,           /* our own O_NONBLOCK description of it */
        MODE_SOCKET,            /* MSG_DONTWAIT on the caller's fd */
        MODE_POLLED,            /* the caller's fd, only after poll() said so */
        MODE_CLOSED,            /* the caller gave us no such fd */
};

/* a terminal takes at least this much once it says POLLOUT (n_tty asks
 * for room and fewer than 256 chars queued before it does) */
#define TTY_POLLED_CHUNK 256

struct hostio {
        enum mode mode;
        int fd;                 /* what we read, write and poll */
        bool own_fd;            /* fd is our private description */
        bool tty, fifo, gone;
        char *data;             /* output buffer: pending bytes at data[off..off+len) */
        size_t cap, off, len;
        size_t alloc;           /* data's size: cap, or more after a redaction grew
                                 * what was sent past the room it had */
        /* hostio_set_secrets(): the values to redact; held_seen bytes
         * passed on already, kept to look back at (a value that overlaps
         * one replaced), then the latest bytes sent that could still
         * start one (not yet passed on) */
        char *const *secrets;
        char *held;
        size_t held_len, held_seen;
};

static bool ready(int fd, short events)
{
        struct pollfd p = { .fd = fd, .events = events };
        return poll(&p, 1, 0) == 1 && (p.revents & (events | POLLHUP | POLLERR));
}

struct hostio *hostio_new(int fd, bool output, size_t capacity)
{
        struct hostio *h = xcalloc(1, sizeof(*h));
        struct stat st;

        h->fd = fd;
        h->mode = MODE_PLAIN;
        if (output) {
                h->cap = h->alloc = capacity;
                h->data = xmalloc(MAX(capacity, (size_t)1));
        }
        if (fstat(fd, &st) < 0) {
                h->mode = MODE_CLOSED;
                h->gone = output;
                return h;
        }
        h->tty = isatty(fd);
        h->fifo = S_ISFIFO(st.st_mode);
        if (S_ISSOCK(st.st_mode)) {
                h->mode = MODE_SOCKET;
                return h;
        }
        if (!h->fifo && !h->tty)
                return h;
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK))
                return h;       /* the caller made it non-blocking already */
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        int priv = open(path, (output ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (priv >= 0) {
                struct stat pst;
                /* the same object, or nothing: never some other file */
                if (fstat(priv, &pst) == 0 && pst.st_dev == st.st_dev && pst.st_ino == st.st_ino) {
                        h->fd = priv;
                        h->own_fd = true;
                        h->mode = MODE_PRIVATE;
                        return h;
                }
                close(priv);
        }
        h->mode = MODE_POLLED;
        return h;
}

struct hostio *hostio_free(struct hostio *h)
{
        if (!h)
                return NULL;
        if (h->own_fd)
                close(h->fd);
        if (h->held)
                explicit_bzero(h->held, h->held_len);
        free(h->held);
        free(h->data);
        free(h);
        return NULL;
}

int hostio_fd(const struct hostio *h)
{
        return h->fd;
}

bool hostio_is_tty(const struct hostio *h)
{
        return h->tty;
}

ssize_t hostio_read(struct hostio *h, void *buf, size_t n)
{
        ssize_t r;

        switch (h->mode) {
        case MODE_CLOSED:
                return 0;
        case MODE_SOCKET:
                r = recv(h->fd, buf, n, MSG_DONTWAIT);
                break;
        case MODE_POLLED: {
                int avail = 0;
                if (!ready(h->fd, POLLIN))
                        return -EAGAIN;
                /* 0 available but readable: end of input, which a read
                 * of one byte reports without waiting */
                if (ioctl(h->fd, FIONREAD, &avail) < 0 || avail <= 0)
                        avail = 1;
                r = read(h->fd, buf, MIN(n, (size_t)avail));
                break;
        }
        default:
                r = read(h->fd, buf, n);
                break;
        }
        if (r >= 0)
                return r;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return -EAGAIN;
        /* A terminal refuses a read from a background process group with
         * EIO (we ignore SIGTTIN, so the kernel does not stop us): that
         * is "not now". From the foreground, EIO means the other side of
         * the terminal is gone. */
        if (errno == EIO && h->tty && tcgetpgrp(h->fd) != getpgrp())
                return -EAGAIN;
        return -errno;
}

size_t hostio_room(const struct hostio *h)
{
        return h->gone || h->len >= h->cap ? 0 : h->cap - h->len;
}

size_t hostio_pending(const struct hostio *h)
{
        return h->len;
}

void hostio_grow(struct hostio *h, size_t extra)
{
        if (!h->data || extra == 0)
                return;
        h->cap += extra;
        if (h->cap > h->alloc)
                h->data = xrealloc(h->data, h->alloc = h->cap);
}

void hostio_push(struct hostio *h, const void *buf, size_t n)
{
        if (h->gone || n == 0)
                return;
        n = MIN(n, h->cap > h->len ? h->cap - h->len : 0);
        if (h->off + h->len + n > h->alloc) {
                memmove(h->data, h->data + h->off, h->len);
                h->off = 0;
        }
        memcpy(h->data + h->off + h->len, buf, n);
        h->len += n;
}

/* Queue all n bytes, past the capacity if need be: what a redaction
 * made of bytes that had room. The excess is bounded by what one send
 * can grow to, and room stays 0 until the reader took it. */
static void push_over(struct hostio *h, const char *buf, size_t n)
{
        if (h->gone || n == 0)
                return;
        if (h->off + h->len + n > h->alloc) {
                memmove(h->data, h->data + h->off, h->len);
                h->off = 0;
        }
        if (h->len + n > h->alloc)
                h->data = xrealloc(h->data, h->alloc = h->len + n);
        memcpy(h->data + h->off + h->len, buf, n);
        h->len += n;
}

static void drop_held(struct hostio *h)
{
        if (h->held)
                explicit_bzero(h->held, h->held_len);
        free(h->held);
        h->held = NULL;
        h->held_len = h->held_seen = 0;
}

void hostio_set_gone(struct hostio *h)
{
        h->gone = true;
        h->off = h->len = 0;
        drop_held(h);
}

bool hostio_gone(const struct hostio *h)
{
        return h->gone;
}

/* One write of p[0..n) the way h's mode allows, never blocking. Returns
 * the bytes the fd took (0: none now), -ENOSPC when the disk is full, or
 * -EPIPE once the reader is gone (h is then marked gone). */
static ssize_t put(struct hostio *h, const char *p, size_t n)
{
        for (;;) {
                ssize_t w;

                switch (h->mode) {
                case MODE_CLOSED:
                        hostio_set_gone(h);
                        return -EPIPE;
                case MODE_SOCKET:
                        w = send(h->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
                        break;
                case MODE_POLLED:
                        if (!ready(h->fd, POLLOUT))
                                return 0;
                        w = write(h->fd, p, MIN(n, h->tty ? (size_t)TTY_POLLED_CHUNK : (size_t)PIPE_BUF));
                        break;
                default:
                        w = write(h->fd, p, n);
                        break;
                }
                if (w > 0)
                        return w;
                if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                if (w < 0 && errno == EINTR)
                        continue;
                /* a full disk is no reader that left */
                if (w < 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG))
                        return -ENOSPC;
                hostio_set_gone(h);
                return -EPIPE;
        }
}

/* Write from *p what the fd takes of its *n bytes now, advancing both.
 * A full disk drops the rest (*n becomes 0): what the job writes is
 * still recorded, only not passed on. Returns 0, or -EPIPE once the
 * reader is gone. */
static int put_all(struct hostio *h, const char **p, size_t *n)
{
        while (*n > 0) {
                ssize_t w = put(h, *p, *n);
                if (w == 0)
                        return 0;
                if (w == -ENOSPC) {
                        *n = 0;
                        return 0;
                }
                if (w < 0)
                        return -EPIPE;
                *p += w;
                *n -= (size_t)w;
        }
        return 0;
}

int hostio_flush(struct hostio *h)
{
        if (!h->gone && h->len > 0) {
                const char *p = h->data + h->off;
                (void)put_all(h, &p, &h->len);
                h->off = h->len > 0 ? (size_t)(p - h->data) : 0;
        }
        return h->gone ? -EPIPE : 0;
}

void hostio_set_secrets(struct hostio *h, char *const *secrets)
{
        h->secrets = secrets && secrets[0] ? secrets : NULL;
}

/* Pass on the redacted form of held + buf[0..n): all of it with end,
 * else what cannot start a value (redact_cut()); the rest stays held. */
static int send_redacted(struct hostio *h, const char *buf, size_t n, bool end)
{
        size_t len = h->held_len + n, skip = h->held_seen, cut, clean_len = 0, back;
        char *work = xmalloc(len + 1), *clean;

        if (h->held_len)
                memcpy(work, h->held, h->held_len);
        if (n)
                memcpy(work + h->held_len, buf, n);
        drop_held(h);
        cut = end ? len : MAX(redact_cut(work, len, h->secrets), skip);
        clean = redact_range(work, cut, skip, h->secrets, &clean_len);
        back = end ? 0 : MIN(cut, redact_lookbehind(h->secrets));
        if (len - cut + back) {
                h->held_len = len - cut + back;
                h->held_seen = back;
                h->held = xmalloc(h->held_len);
                memcpy(h->held, work + cut - back, h->held_len);
        }
        const char *p = clean ? clean : work + skip;
        size_t left = clean ? clean_len : cut - skip;
        /* straight to the fd while nothing older waits, as below */
        if (!h->gone && h->len == 0)
                (void)put_all(h, &p, &left);
        push_over(h, p, left);
        if (clean)
                explicit_bzero(clean, clean_len);
        free(clean);
        explicit_bzero(work, len);
        free(work);
        return hostio_flush(h);
}

int hostio_release(struct hostio *h)
{
        if (!h->secrets || h->held_len == h->held_seen)
                return h->gone ? -EPIPE : 0;
        return send_redacted(h, NULL, 0, true);
}

int hostio_send(struct hostio *h, const void *buf, size_t n)
{
        const char *p = buf;

        if (h->secrets)
                return h->gone ? -EPIPE : send_redacted(h, buf, n, false);

        /* Straight from buf while nothing older waits: a reader that keeps
         * up (a terminal, a pipe into the next program, /dev/null) costs
         * no copy. Behind pending bytes the new ones queue, in order. */
        if (!h->gone && h->len == 0 && put_all(h, &p, &n) < 0)
                return -EPIPE;
        hostio_push(h, p, n);
        return hostio_flush(h);
}

size_t hostio_drain(struct hostio *h, uint64_t stall_ms)
{
        (void)hostio_release(h);
        for (;;) {
                if (hostio_flush(h) < 0 || h->len == 0)
                        return h->len;
                struct pollfd p = { .fd = h->fd, .events = POLLOUT };
                int r = poll(&p, 1, (int)MIN(stall_ms, (uint64_t)INT_MAX));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
                        size_t dropped = h->len;
                        if (r > 0)
                                hostio_set_gone(h);
                        h->off = h->len = 0;
                        return dropped;
                }
        }
}

int hostio_write_bounded(int fd, const void *buf, size_t n, uint64_t stall_ms)
{
        _cleanup_(hostio_freep) struct hostio *h = hostio_new(fd, true, n);
        if (hostio_send(h, buf, n) < 0)
                return -EPIPE;
        if (hostio_drain(h, stall_ms) == 0)
                return 0;
        return hostio_gone(h) ? -EPIPE : -EAGAIN;
}
