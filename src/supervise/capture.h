/* capture.h - per-stream output capture in constant memory.
 *
 * A job may write gigabytes; hutch keeps the first `limit` bytes (head) and
 * the last `limit` bytes (tail) of each stream, and counts every byte and
 * every newline so the record can say exactly what was left out. Memory is
 * 2*limit plus a few counters, allocated once in capture_new().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct capture;

/* A new, empty capture keeping `limit` bytes of head and of tail
 * (limit may be 0: only counts are kept). Never returns NULL (aborts with
 * exit 125 on allocation failure, like xmalloc). */
struct capture *capture_new(size_t limit);

/* Free c; NULL is fine. Returns NULL. */
struct capture *capture_free(struct capture *c);
static inline void capture_freep(struct capture **c) { capture_free(*c); }
#define _cleanup_capture_ __attribute__((cleanup(capture_freep)))

/* Redact secrets ("NAME=VALUE", redact.h; not copied, must outlive c;
 * NULL or empty: none) from what is kept, before it is cut into head
 * and tail, so a value across the cut is replaced whole. Call before
 * the first capture_append(). The totals still count the job's bytes;
 * the omitted-bytes line counts the redacted stream. Appending then
 * allocates. */
void capture_set_secrets(struct capture *c, char *const *secrets);

/* Account for n more bytes of the stream. Cheap and allocation-free: it is
 * called for every read() of a job's stdout/stderr. buf may be NULL when
 * n == 0. */
void capture_append(struct capture *c, const void *buf, size_t n);

/* Bytes appended so far. */
uint64_t capture_total_bytes(const struct capture *c);
/* Lines so far: the number of '\n', plus one if the stream is non-empty
 * and does not end with '\n'. */
uint64_t capture_total_lines(const struct capture *c);
/* Whether capture_render() would leave bytes out (total > 2*limit). */
bool capture_truncated(const struct capture *c);
/* The limit c was created with. */
size_t capture_limit(const struct capture *c);

/* Render what is kept into a new buffer (*ret, NUL-terminated for
 * convenience, *ret_len bytes without the NUL; the caller frees it).
 * If the stream fit (total <= 2*limit) the buffer holds exactly the bytes
 * appended. Otherwise it holds the head, a line of its own
 *     [… N bytes, M lines omitted …]
 * (a '\n' is inserted before it when the head does not end with one), and
 * the tail; N is the number of bytes left out and M the number of '\n'
 * among them, both exact. ret_truncated (may be NULL) says which case it
 * was. Returns 0; it cannot fail. */
int capture_render(const struct capture *c, char **ret, size_t *ret_len, bool *ret_truncated);

/* Count '\n' in buf[0..n). Exposed for the tests and for callers that
 * need to count lines of a stored buffer. */
uint64_t count_newlines(const void *buf, size_t n);

/* Fill the record's o from a finished capture c (rendered bytes and
 * counts); frees whatever o held. Returns 0. The capture is the
 * supervisor's and the run_output the record's (record/store.h): the
 * conversion lives on this side, so the record never includes the
 * supervisor. */
struct run_output;
int run_output_from_capture(struct run_output *o, const struct capture *c);
