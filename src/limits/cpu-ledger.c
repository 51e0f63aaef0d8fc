/* cpu-ledger.c - the cpu time of processes that left a sandbox's tree
 * unwaited-for (cpu-ledger.h).
 *
 * Each round's processes are kept, sorted by pid. At a round's end, every
 * process of the last round that is not in this one is gone; it hung
 * under a live process (its parent when last seen, or that parent's
 * parent if the parent is gone too, and so on: the "anchor"). A parent
 * that waited for what it reaped gained at least what those processes
 * had used when last seen in its children's time; what the anchor did
 * not gain is time no live counter holds any more, and is carried.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>

#include "lib/util.h"
#include "limits/cpu-ledger.h"

struct entry {
        pid_t pid, ppid;
        uint64_t start, own_ms, kids_ms;
};

struct round {
        struct entry *v;
        size_t n, cap;
};

struct cpu_ledger {
        struct round last, now;
        uint64_t carried_ms;
};

/* how far up a chain of gone parents the anchor is looked for: deeper
 * chains of processes that all left within one round are carried whole */
#define ANCHOR_DEPTH 64

struct cpu_ledger *cpu_ledger_new(void)
{
        return xcalloc(1, sizeof(struct cpu_ledger));
}

struct cpu_ledger *cpu_ledger_free(struct cpu_ledger *l)
{
        if (l) {
                free(l->last.v);
                free(l->now.v);
                free(l);
        }
        return NULL;
}

void cpu_ledger_note(struct cpu_ledger *l, pid_t pid, uint64_t start, pid_t ppid, uint64_t own_ms,
                     uint64_t kids_ms)
{
        struct round *r = &l->now;
        if (r->n == r->cap) {
                r->cap = r->cap ? r->cap * 2 : 64;
                r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
        }
        r->v[r->n++] = (struct entry) { .pid = pid, .ppid = ppid, .start = start, .own_ms = own_ms,
                                        .kids_ms = kids_ms };
}

static int by_pid(const void *a, const void *b)
{
        const struct entry *x = a, *y = b;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const struct entry *find(const struct round *r, pid_t pid)
{
        struct entry key = { .pid = pid };
        return r->n ? bsearch(&key, r->v, r->n, sizeof(*r->v), by_pid) : NULL;
}

/* The same process (not a reused pid) in both rounds. */
static bool lives_on(const struct cpu_ledger *l, const struct entry *before)
{
        const struct entry *e = find(&l->now, before->pid);
        return e && e->start == before->start;
}

/* The index in the last round of the live process gone's time would have
 * moved to, or -1 when there is none in the tree. */
static ssize_t anchor_of(const struct cpu_ledger *l, const struct entry *gone)
{
        pid_t up = gone->ppid;
        for (int depth = 0; depth < ANCHOR_DEPTH; depth++) {
                const struct entry *p = find(&l->last, up);
                if (!p)
                        return -1;
                if (lives_on(l, p))
                        return p - l->last.v;
                up = p->ppid;
        }
        return -1;
}

uint64_t cpu_ledger_round_end(struct cpu_ledger *l)
{
        struct round *now = &l->now, *last = &l->last;

        qsort(now->v, now->n, sizeof(*now->v), by_pid);
        _cleanup_free_ uint64_t *expected = last->n ? xcalloc(last->n, sizeof(uint64_t)) : NULL;
        for (size_t i = 0; i < last->n; i++) {
                const struct entry *e = &last->v[i];
                if (lives_on(l, e))
                        continue;
                ssize_t a = anchor_of(l, e);
                if (a < 0)
                        l->carried_ms += e->own_ms + e->kids_ms;
                else
                        expected[a] += e->own_ms + e->kids_ms;
        }
        for (size_t i = 0; i < last->n; i++) {
                if (!expected || !expected[i])
                        continue;
                const struct entry *before = &last->v[i], *after = find(now, before->pid);
                uint64_t gained = after->kids_ms > before->kids_ms ? after->kids_ms - before->kids_ms : 0;
                if (expected[i] > gained)
                        l->carried_ms += expected[i] - gained;
        }
        struct round t = *last;
        *last = *now;
        *now = (struct round) { .v = t.v, .cap = t.cap };
        return l->carried_ms;
}

uint64_t cpu_ledger_carried(const struct cpu_ledger *l)
{
        return l ? l->carried_ms : 0;
}
