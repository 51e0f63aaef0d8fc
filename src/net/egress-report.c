/* egress-report.c - the supervisor's side of the egress helper (see
 * egress.h): read the decisions the helper reports on its control
 * socket (while a live sandbox runs, and once the run is over), put
 * them in the order the connections began, and stop the helper. The
 * helper itself (egress.c) writes one JSON object per line; a line that
 * is not one is skipped. Its lines are short (a record of names and
 * numbers): buffered text with no newline in its first LINE_MAX_BYTES
 * is not one, and is dropped (what follows it up to the next newline
 * then starts inside it, and does not parse as an object either).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/util.h"
#include "net/egress.h"

#define LINE_MAX_BYTES (256u << 10)

/* Read what is there into e->buf, at most max bytes; false at the
 * socket's end or error (e->eof). */
static bool read_some(struct egress *e, size_t max, int flags)
{
        while (max > 0) {
                if (e->len + 65536 > e->cap)
                        e->buf = xrealloc(e->buf, e->cap = (e->cap ? e->cap * 2 : 65536) + 65536);
                size_t want = MIN(max, e->cap - e->len);
                ssize_t n = recv(e->ctl_fd, e->buf + e->len, want, flags);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0) {
                        e->eof = true;
                        return false;
                }
                e->len += (size_t)n;
                max -= (size_t)n;
        }
        return true;
}

/* The complete lines of e->buf as objects into arr (each stamped
 * "seq" from *seq, for a stable sort); the partial last one stays. */
static size_t take_lines(struct egress *e, json_t *arr, json_int_t *seq)
{
        size_t n = 0, used = 0;
        char *nl;
        while (used < e->len && (nl = memchr(e->buf + used, '\n', e->len - used))) {
                json_t *o = json_loadb(e->buf + used, (size_t)(nl - (e->buf + used)), 0, NULL);
                used = (size_t)(nl - e->buf) + 1;
                if (!json_is_object(o)) {
                        json_decref(o);
                        continue;
                }
                if (seq)
                        json_object_set_new(o, "seq", json_integer((*seq)++));
                json_array_append_new(arr, o);
                n++;
        }
        if (used == 0 && e->len > LINE_MAX_BYTES)
                used = e->len;  /* no line: garbage */
        if (used) {
                memmove(e->buf, e->buf + used, e->len - used);
                e->len -= used;
        }
        return n;
}

int egress_report_fd(const struct egress *e)
{
        return e && e->pid > 0 && !e->eof ? e->ctl_fd : -1;
}

int egress_report_read(struct egress *e, size_t max, json_t *arr)
{
        if (egress_report_fd(e) < 0)
                return 0;
        bool ok = read_some(e, max, MSG_DONTWAIT);
        size_t n = take_lines(e, arr, NULL);
        return ok || n ? (int)MIN(n, (size_t)INT32_MAX) : -EPIPE;
}

/* By time_ms, then by order of arrival ("seq", stamped on reading:
 * qsort is not stable). */
static int cmp_time(const void *a, const void *b)
{
        json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
        json_int_t tx = json_integer_value(json_object_get(x, "time_ms"));
        json_int_t ty = json_integer_value(json_object_get(y, "time_ms"));
        if (tx != ty)
                return tx < ty ? -1 : 1;
        json_int_t sx = json_integer_value(json_object_get(x, "seq"));
        json_int_t sy = json_integer_value(json_object_get(y, "seq"));
        return sx < sy ? -1 : sx > sy;
}

int egress_finish(struct egress *e, uint64_t timeout_ms, json_t **ret)
{
        json_t *arr = json_array(), *got = json_array(), *o;
        json_int_t seq = 0;
        size_t i;
        int r = 0;

        if (e->pid <= 0) {
                json_decref(got);
                *ret = arr;
                return 0;
        }
        (void)shutdown(e->ctl_fd, SHUT_WR);
        uint64_t deadline = now_monotonic_ms() + timeout_ms;
        while (!e->eof) {
                uint64_t now = now_monotonic_ms();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                struct pollfd pfd = { .fd = e->ctl_fd, .events = POLLIN };
                if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
                        continue;
                if (read_some(e, 1u << 20, MSG_DONTWAIT))
                        take_lines(e, got, &seq);
        }
        take_lines(e, got, &seq);
        json_t **recs = xmalloc((json_array_size(got) + 1) * sizeof(*recs));
        size_t n_recs = 0;
        json_array_foreach(got, i, o)
                recs[n_recs++] = json_incref(o);
        json_decref(got);
        /* the helper reports each decision when its connection ends; the
         * record lists them by when they began */
        if (n_recs)
                qsort(recs, n_recs, sizeof(*recs), cmp_time);
        for (size_t k = 0; k < n_recs; k++) {
                json_object_del(recs[k], "seq");
                json_array_append_new(arr, recs[k]);
        }
        free(recs);
        egress_abort(e);
        *ret = arr;
        return r;
}

void egress_abort(struct egress *e)
{
        if (e->pid > 0) {
                (void)kill(e->pid, SIGKILL);
                (void)waitpid(e->pid, NULL, 0);
                e->pid = 0;
        }
        if (e->ctl_fd >= 0) {
                close(e->ctl_fd);
                e->ctl_fd = -1;
        }
        free(e->buf);
        e->buf = NULL;
        e->len = e->cap = 0;
}
