/* hostio.h - the caller's stdin, stdout and stderr as the supervisor
 * uses them: never blocking, and never changing what the caller shares.
 *
 * The supervisor must not block on its own stdio (DESIGN §1): a stopped
 * terminal, a paused pager or a reader that went away must not hold up
 * the deadline, the watchdog or cancellation. But the caller's fds are
 * open file descriptions shared with the caller's shell and everything
 * else on that terminal or pipe, so setting O_NONBLOCK on them would
 * change them for all of those (the next `cat` in the shell fails with
 * EAGAIN). A hostio gets a private description instead where it can,
 * and otherwise only ever asks of the fd what cannot block. An output
 * hostio also holds a bounded buffer of what is still to be written.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hostio;

/* Wrap the caller's fd (0, 1 or 2) for reading (output false) or for
 * writing with a buffer of `capacity` bytes. The caller's fd itself is
 * neither closed nor changed. Never returns NULL. */
struct hostio *hostio_new(int fd, bool output, size_t capacity);

/* Free h (NULL is fine; pending output is dropped). Returns NULL. */
struct hostio *hostio_free(struct hostio *h);
static inline void hostio_freep(struct hostio **h) { hostio_free(*h); }
#define _cleanup_hostio_ __attribute__((cleanup(hostio_freep)))

/* The fd to poll() for h's events. */
int hostio_fd(const struct hostio *h);
/* Whether the fd is a terminal. */
bool hostio_is_tty(const struct hostio *h);

/* Read what is there, at most n bytes, without blocking: >0 bytes
 * read, 0 at end of input, -EAGAIN when nothing can be read now (a
 * terminal that is not ours to read at the moment included), or
 * -errno. */
ssize_t hostio_read(struct hostio *h, void *buf, size_t n);

/* Free room in the output buffer (0 once the reader is gone). */
size_t hostio_room(const struct hostio *h);
/* Bytes waiting to be written. */
size_t hostio_pending(const struct hostio *h);
/* Let the buffer hold `extra` bytes more. For the end of a run, when
 * what is left in the job's pipes is all there will be, and bounded by
 * their size. */
void hostio_grow(struct hostio *h, size_t extra);
/* Queue n <= hostio_room() bytes. */
void hostio_push(struct hostio *h, const void *buf, size_t n);
/* Write what the fd takes now, without blocking. Returns 0 (all
 * written, or the rest must wait), or -EPIPE once the reader is gone
 * (EPIPE, EIO from a hung-up terminal, a closed fd...): the pending
 * bytes are then dropped and every later call says -EPIPE again. */
int hostio_flush(struct hostio *h);
/* Pass n <= hostio_room() bytes on: what the fd takes now is written
 * straight from buf when nothing is pending, the rest is queued behind
 * what is. Returns as hostio_flush(). */
int hostio_send(struct hostio *h, const void *buf, size_t n);
/* From now on redact secrets ("NAME=VALUE", redact.h; not copied, must
 * outlive h) from what is sent: each value becomes "[secret NAME]". A
 * send passes on at once all but a tail that could start a value (at
 * most the longest value minus one byte), which waits for the next send,
 * hostio_release() or hostio_drain(). A redaction can grow what had room
 * past the capacity: it is queued all the same (room is then 0). */
void hostio_set_secrets(struct hostio *h, char *const *secrets);
/* Pass on, redacted, what a send held back: the stream ended. Returns as
 * hostio_flush(). */
int hostio_release(struct hostio *h);
/* Mark the reader gone (a poll() said POLLERR or POLLHUP). */
void hostio_set_gone(struct hostio *h);
bool hostio_gone(const struct hostio *h);

/* After the run: release what is held (hostio_release()), write out
 * what is pending, waiting for the reader, but giving up when it takes
 * nothing for stall_ms. Returns the bytes
 * dropped (0: everything was written). */
size_t hostio_drain(struct hostio *h, uint64_t stall_ms);

/* Write buf[0..n) to the caller's fd the same way, in one go: what the
 * fd takes without blocking, then waiting for the reader while it takes
 * something at least every stall_ms. 0 when all was written; -EAGAIN
 * when the rest was dropped (a reader that takes nothing); -EPIPE when
 * the reader is gone. For hutch's own messages (log_set_writer()). */
int hostio_write_bounded(int fd, const void *buf, size_t n, uint64_t stall_ms);
