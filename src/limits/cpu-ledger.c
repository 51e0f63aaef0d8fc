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
 * moved to, or -1 when there is none in the tree; *ret_direct: it is
 * gone's own parent (else a parent of it left too, and gone, orphaned,
 * may have been reaped by init instead). */
static ssize_t anchor_of(const struct cpu_ledger *l, const struct entry *gone, bool *ret_direct)
{
        pid_t up = gone->ppid;
        *ret_direct = true;
        for (int depth = 0; depth < ANCHOR_DEPTH; depth++) {
                const struct entry *p = find(&l->last, up);
                if (!p)
                        return -1;
                if (lives_on(l, p))
                        return p - l->last.v;
                up = p->ppid;
                *ret_direct = false;
        }
        return -1;
}

/* A process the walk did not find, alive all the same (a children list
 * read in parts while others exited, or a parent that left mid-walk):
 * kept, with its last figures, for the next round. */
static bool missed(const struct entry *e, cpu_ledger_read read, void *userdata)
{
        uint64_t start, kids;
        return read && read(e->pid, &start, &kids, userdata) == 0 && start == e->start;
}

/* What the live process at last->v[i] gained in its children's time since
 * the last round, as it is now (its figure in this round was read before
 * the walk went on: a child it reaped after that is in it only now). */
static uint64_t gained(const struct cpu_ledger *l, size_t i, cpu_ledger_read read, void *userdata)
{
        const struct entry *before = &l->last.v[i], *after = find(&l->now, before->pid);
        uint64_t kids = after->kids_ms, start, fresh;
        if (read && read(before->pid, &start, &fresh, userdata) == 0 && start == before->start && fresh > kids)
                kids = fresh;
        return kids > before->kids_ms ? kids - before->kids_ms : 0;
}

uint64_t cpu_ledger_round_end(struct cpu_ledger *l, pid_t root, cpu_ledger_read read, void *userdata)
{
        struct round *last = &l->last;
        _cleanup_free_ bool *kept = last->n ? xcalloc(last->n, sizeof(bool)) : NULL;

        /* direct[i]: what processes whose parent was last->v[i] had used;
         * chained[i]: the same for those whose parent left too */
        _cleanup_free_ uint64_t *direct = last->n ? xcalloc(last->n, sizeof(uint64_t)) : NULL;
        _cleanup_free_ uint64_t *chained = last->n ? xcalloc(last->n, sizeof(uint64_t)) : NULL;
        uint64_t unanchored = 0;

        qsort(l->now.v, l->now.n, sizeof(*l->now.v), by_pid);
        for (size_t i = 0; i < last->n; i++) {
                const struct entry *e = &last->v[i];
                if (lives_on(l, e))
                        continue;
                if (missed(e, read, userdata)) {
                        kept[i] = true;
                        continue;
                }
                bool direct_parent;
                ssize_t a = anchor_of(l, e, &direct_parent);
                if (a < 0)
                        unanchored += e->own_ms + e->kids_ms;
                else
                        (direct_parent ? direct : chained)[a] += e->own_ms + e->kids_ms;
        }

        /* An orphan is reaped by init, not by the anchor: what the
         * anchors did not gain of the chained, init's spare gain covers. */
        uint64_t orphans = unanchored, root_spare = 0;
        for (size_t i = 0; i < last->n; i++) {
                uint64_t need = (direct ? direct[i] : 0) + (chained ? chained[i] : 0);
                bool is_root = last->v[i].pid == root && lives_on(l, &last->v[i]);
                if (!need && !is_root)
                        continue;
                uint64_t got = gained(l, i, read, userdata);
                uint64_t shortfall = need > got ? need - got : 0;
                uint64_t chain_short = MIN(shortfall, chained[i]);
                orphans += chain_short;
                l->carried_ms += shortfall - chain_short;
                if (is_root)
                        root_spare = got > need ? got - need : 0;
        }
        l->carried_ms += orphans > root_spare ? orphans - root_spare : 0;

        /* the missed ones go on with their last figures, for next time */
        bool any = false;
        for (size_t i = 0; i < last->n; i++)
                if (kept[i]) {
                        const struct entry *e = &last->v[i];
                        cpu_ledger_note(l, e->pid, e->start, e->ppid, e->own_ms, e->kids_ms);
                        any = true;
                }
        if (any)
                qsort(l->now.v, l->now.n, sizeof(*l->now.v), by_pid);

        struct round t = *last;
        *last = l->now;
        l->now = (struct round) { .v = t.v, .cap = t.cap };
        return l->carried_ms;
}

uint64_t cpu_ledger_carried(const struct cpu_ledger *l)
{
        return l ? l->carried_ms : 0;
}
