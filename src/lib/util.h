/* util.h - small toolkit every module uses: scope-bound cleanup, checked
 * allocation, whole-buffer I/O, and the human units (sizes, durations)
 * that profiles and the command line share.
 */
#pragma once

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand ownership of a cleanup-managed pointer or fd to someone else. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
void strv_free(char **v);
static inline void strv_freep(char ***v) { strv_free(*v); }

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_ _cleanup_(strv_freep)

/* Allocation failure is not something a sandbox can recover from
 * usefully; these print one line and exit 125 (setup error). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);

/* NULL-terminated string vectors. */
size_t strv_length(char *const *v);
/* Append a copy of s. Measures v first: O(length) per call, so for
 * lists that grow long (argv, env, -e options) use strv_push(). */
char **strv_append(char **v, const char *s);
/* Append a copy of s to v, which holds *n strings (the caller keeps the
 * count, starting from 0 with v NULL, or strv_length() of a vector it
 * was given), and count it. Amortised O(1): the array grows to powers
 * of two, and a realloc to the size a block already has moves nothing.
 * Returns the (possibly moved) vector. */
char **strv_push(char **v, size_t *n, const char *s);
/* Append copies of every string of src (NULL: none) to v, in one pass:
 * O(length of both), where a strv_append() per item is quadratic. */
char **strv_extend(char **v, char *const *src);
/* Whether v holds a string equal to s. */
bool strv_contains(char *const *v, const char *s);

/* Write all of buf, retrying on EINTR and short writes. 0 or -errno. */
int write_all(int fd, const void *buf, size_t n);
/* Read until EOF or n bytes; returns bytes read or -errno. */
ssize_t read_full(int fd, void *buf, size_t n);
/* Read a whole (small) file into a NUL-terminated buffer. */
int read_file(const char *path, char **ret, size_t *ret_len);
/* Write a whole file; creates or truncates with mode. */
int write_file(const char *path, const char *text, mode_t mode);

/* Human units. Both return 0, or -EINVAL for a malformed value and
 * -ERANGE for one that overflows.
 *   sizes:     "512", "64K", "512M", "1.5G", "2T" (binary multiples; a
 *              bare number is bytes)
 *   durations: "250ms", "30s", "2m", "1h", "1.5s", "1d"; a bare number is
 *              seconds. Result in milliseconds. */
int parse_size(const char *s, uint64_t *ret_bytes);
int parse_duration_ms(const char *s, uint64_t *ret_ms);
/* Format back for messages: "512M", "30s", "1.5s". buf >= 32 bytes. */
const char *format_size(uint64_t bytes, char *buf, size_t len);
const char *format_duration_ms(uint64_t ms, char *buf, size_t len);

/* Milliseconds since an arbitrary fixed point / since the epoch. */
uint64_t now_monotonic_ms(void);
uint64_t now_monotonic_ns(void);
uint64_t now_realtime_ms(void);

/* A stack for a task started with clone(2): bytes of anonymous memory
 * whose lowest page is a guard, so an overflow faults instead of
 * writing below. NULL with errno set on failure; free with
 * task_stack_free(), once the task no longer runs on it. */
void *task_stack_new(size_t bytes);
void task_stack_free(void *stack, size_t bytes);

/* Create dir and parents with mode; existing dirs are fine. 0 or -errno. */
int mkdir_p(const char *path, mode_t mode);

bool streq(const char *a, const char *b);
bool startswith(const char *s, const char *prefix);
/* Whether s is KEY=VALUE with a non-empty KEY (VALUE may be empty): the
 * shape of -e, --label and the label filters. */
bool is_key_value(const char *s);

/* Environment variables as a run sets them. One rule for every place a
 * variable comes from (a profile's [env], -e, an image's config Env),
 * so that what one accepts a run never refuses:
 *  - a name is a letter or '_', then letters, digits, '_';
 *  - a value has no control characters (a newline or NUL would split or
 *    cut it in every environment block and record that holds it) and no
 *    ';' at its start or after a blank (a profile's comment: the value
 *    could not be written back into one). */
bool env_var_name_valid(const char *s);
bool env_var_value_valid(const char *s);
/* "NAME=VALUE" under that rule: NULL, or what is wrong with it. */
const char *env_entry_problem(const char *entry);
