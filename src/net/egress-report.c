/* egress-report.c - the supervisor's side of the egress helper once the
 * run is over (see egress.h): read the decisions the helper reports on
 * its control socket, put them in the order the connections began, and
 * stop the helper. The helper itself (egress.c) writes one JSON object
 * per line; a line that is not one is skipped.
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
        json_t *arr = json_array();
        size_t len = 0, cap = 0;
        char *buf = NULL;
        int r = 0;

        if (e->pid <= 0) {
                *ret = arr;
                return 0;
        }
        (void)shutdown(e->ctl_fd, SHUT_WR);
        uint64_t deadline = now_monotonic_ms() + timeout_ms;
        for (;;) {
                uint64_t now = now_monotonic_ms();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                struct pollfd pfd = { .fd = e->ctl_fd, .events = POLLIN };
                if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
                        continue;
                if (len + 65536 > cap)
                        buf = xrealloc(buf, cap = (cap ? cap * 2 : 65536) + 65536);
                ssize_t n = read(e->ctl_fd, buf + len, cap - len - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        json_t **recs = NULL;
        size_t n_recs = 0;
        for (char *line = buf, *nl; buf && line < buf + len && (nl = memchr(line, '\n', (size_t)(buf + len - line)));
             line = nl + 1) {
                json_t *o = json_loadb(line, (size_t)(nl - line), 0, NULL);
                if (!json_is_object(o)) {
                        json_decref(o);
                        continue;
                }
                json_object_set_new(o, "seq", json_integer((json_int_t)n_recs));
                recs = xrealloc(recs, (n_recs + 1) * sizeof(*recs));
                recs[n_recs++] = o;
        }
        /* the helper reports each decision when its connection ends; the
         * record lists them by when they began */
        if (n_recs)
                qsort(recs, n_recs, sizeof(*recs), cmp_time);
        for (size_t i = 0; i < n_recs; i++) {
                json_object_del(recs[i], "seq");
                json_array_append_new(arr, recs[i]);
        }
        free(recs);
        free(buf);
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
}
