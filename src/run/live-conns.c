/* run/live-conns.c - a live sandbox's connections, recorded as they end
 * (see run/live-conns.h), so that they can be seen while it runs
 * (`hutch show`, `--json`) and survive a supervisor killed with
 * SIGKILL. The rows are `hutch run`'s: the same objects, added by the
 * same store_connections_add() after the run's rows so far.
 *
 * Bounds: a job that opens thousands of connections must neither make
 * the supervisor write without end nor hold up its loop (its execs'
 * deadlines, their records).
 *  - Reading: at most READ_MAX bytes of the egress helper's report per
 *    round of the loop, MSG_DONTWAIT. What is not read stays in the
 *    socket, then in the helper, whose record is capped.
 *  - Writing: at most one commit per COMMIT_MS, of everything waiting,
 *    and it waits at most BUSY_MS for another writer's lock; one that
 *    fails keeps its rows for the next try, COMMIT_MS later. So the
 *    loop spends at most BUSY_MS of every COMMIT_MS waiting for the
 *    store, plus the inserts.
 *  - Rows: capped at the source, over the sandbox's whole life:
 *    MAX_RECORDS of the published ports (live-publish.c), and
 *    EGRESS_MAX_RECORDS of connections let through plus as many of the
 *    rest (run/egress.c), the excess counted in one summary row each at
 *    the stop. So no more than about 30,000 rows wait at once or are
 *    written in all, a commit of them all a few tens of ms. The helper
 *    parses the job's bytes (DNS, TLS, HTTP): were it ever the job's,
 *    its caps would be too, so the rows taken from it are capped here
 *    as well (EGRESS_ROWS_MAX, the rest counted in a summary row).
 *  - Durability: no sync of our own (it would be a disk flush in the
 *    loop). A commit survives a crash of hutch (WAL, synchronous =
 *    NORMAL); the next durable commit (an exec's end) or checkpoint
 *    takes it to the disk. What was not yet committed when the
 *    supervisor was killed (COMMIT_MS worth, and what the helper still
 *    held) is lost with it.
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "lib/log.h"
#include "lib/util.h"
#include "net/egress.h"
#include "record/store.h"
#include "run/live-conns.h"
#include "run/live-publish.h"

#define READ_MAX (64u << 10)
#define COMMIT_MS 1000
#define BUSY_MS 100
/* what an honest helper sends at most: its two caps, a summary row each */
#define EGRESS_ROWS_MAX (2 * EGRESS_MAX_RECORDS + 2)

struct live_conns {
        struct egress *egress;
        json_t *rows;           /* ended, not yet committed */
        uint64_t next_ms;       /* no commit before (monotonic) */
        size_t egress_taken;    /* rows taken from the helper */
        uint64_t egress_dropped; /* and past EGRESS_ROWS_MAX */
        bool warned;
};

/* The helper's report so far, up to EGRESS_ROWS_MAX rows in all. */
static void take_egress(struct live_conns *c)
{
        if (!c->egress)
                return;
        json_t *fresh = json_array();
        (void)egress_report_read(c->egress, READ_MAX, fresh);
        size_t i;
        json_t *o;
        json_array_foreach(fresh, i, o) {
                if (c->egress_taken < EGRESS_ROWS_MAX) {
                        json_array_append(c->rows, o);
                        c->egress_taken++;
                } else
                        c->egress_dropped++;
        }
        json_decref(fresh);
}

struct live_conns *live_conns_new(struct egress *egress)
{
        struct live_conns *c = xmalloc(sizeof(*c));
        *c = (struct live_conns) { .egress = egress, .rows = json_array() };
        return c;
}

void live_conns_poll(const struct live_conns *c, struct pollfd *pfd)
{
        pfd[0] = (struct pollfd) { .fd = egress_report_fd(c->egress), .events = POLLIN };
}

int live_conns_timeout(const struct live_conns *c)
{
        uint64_t now = now_monotonic_ms();
        if (json_array_size(c->rows) == 0)
                return -1;
        return c->next_ms <= now ? 0 : (int)MIN(c->next_ms - now, (uint64_t)COMMIT_MS);
}

/* By time_ms (when the connection began, as run_egress_record()'s),
 * then as they came. */
struct row {
        json_t *o;
        size_t i;
};

static int cmp_row(const void *a, const void *b)
{
        const struct row *x = a, *y = b;
        json_int_t tx = json_integer_value(json_object_get(x->o, "time_ms"));
        json_int_t ty = json_integer_value(json_object_get(y->o, "time_ms"));
        if (tx != ty)
                return tx < ty ? -1 : 1;
        return x->i < y->i ? -1 : x->i > y->i;
}

/* Everything waiting, in one transaction; busy_ms: how long to wait
 * for another writer's lock (0: the store's default). */
static int commit(struct live_conns *c, struct store *s, const char *run_id, int busy_ms)
{
        size_t n = json_array_size(c->rows);
        if (n == 0)
                return 0;
        struct row *v = xmalloc(n * sizeof(*v));
        for (size_t i = 0; i < n; i++)
                v[i] = (struct row) { .o = json_array_get(c->rows, i), .i = i };
        qsort(v, n, sizeof(*v), cmp_row);
        json_t *sorted = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append(sorted, v[i].o);
        free(v);
        if (busy_ms)
                store_set_busy_timeout(s, busy_ms);
        int r = store_connections_add(s, run_id, sorted);
        if (busy_ms)
                store_set_busy_timeout(s, STORE_BUSY_TIMEOUT_MS);
        json_decref(sorted);
        if (r >= 0)
                json_array_clear(c->rows);
        return r;
}

void live_conns_run(struct live_conns *c, const struct pollfd *pfd, struct live_publish *pub, struct store *s,
                    const char *run_id)
{
        if (pfd[0].fd >= 0 && pfd[0].revents)
                take_egress(c);
        live_publish_take(pub, c->rows);
        uint64_t now = now_monotonic_ms();
        if (json_array_size(c->rows) == 0 || now < c->next_ms)
                return;
        /* set first: a due batch that cannot go makes no busy loop */
        c->next_ms = now + COMMIT_MS;
        if (!s)
                return;
        int r = commit(c, s, run_id, BUSY_MS);
        if (r < 0 && !c->warned) {
                /* the rows wait for the next try, and the stop */
                log_debug("cannot record connections of run %s yet: %s", run_id, store_error(s));
                c->warned = true;
        }
}

struct live_conns *live_conns_free(struct live_conns *c, struct live_publish *pub, struct store *s,
                                   const char *run_id)
{
        if (!c)
                return NULL;
        take_egress(c);
        if (c->egress_dropped) {
                json_t *o = json_pack("{s:s, s:I, s:I}", "proto", "summary", "time_ms",
                                      (json_int_t)now_realtime_ms(), "dropped", (json_int_t)c->egress_dropped);
                if (o)
                        json_array_append_new(c->rows, o);
        }
        live_publish_take(pub, c->rows);
        /* the loop is over: the store's own wait */
        int r = s ? commit(c, s, run_id, 0) : 0;
        if (r < 0 || (!s && json_array_size(c->rows)))
                log_warning("run %s: %zu connections are not recorded: %s", run_id, json_array_size(c->rows),
                            s ? store_error(s) : "no store");
        json_decref(c->rows);
        free(c);
        return NULL;
}
