/* cli/diff.c - `hutch diff ID`: what a run changed in its workspace, as a
 * unified diff of text files against the lower versions kept in the blob
 * store, a --stat summary, or --json.
 *
 * The line diff is Myers' O(ND) algorithm: the trace of furthest-reaching
 * paths is kept per edit distance d (2d+1 entries each), so memory is
 * O(D^2). Edits beyond MAX_EDITS lines fall back to "all old lines out,
 * all new lines in", still a correct diff, just not a minimal one. Files
 * over MAX_TEXT bytes or with a NUL byte are shown as binary.
 */
#include "config.h"

#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "record/blobstore.h"
#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "run/runfiles.h"
#include "lib/sanitize.h"
#include "record/store.h"
#include "workspace/protected.h"

#define MAX_TEXT (8u << 20)
#define MAX_EDITS 3000
#define CONTEXT 3

static void help(void)
{
        printf("Usage: hutch diff [--stat] [--json] ID\n"
               "\n"
               "Show what run ID changed in its workspace (--workdir or session):\n"
               "a unified diff for text files, one line for the rest.\n"
               "\n"
               "  --stat      one line per changed path and a summary\n"
               "  --json      one JSON object (schema hutch.diff/1)\n"
               "  -h, --help  this text\n"
               "\n"
               "Changes to protected paths (.git/, .envrc, .vscode/, ...: files your\n"
               "tools run as you; see hutch-apply(1)) are listed first, marked\n"
               "PROTECTED, and hutch apply refuses them by default.\n");
}

struct text {
        char *data;
        size_t len;
        const char **line;      /* line starts */
        size_t *line_len;       /* lengths, newline included */
        size_t n;
        bool no_eol;            /* last line lacks a newline */
};

static void text_done(struct text *t)
{
        free(t->data);
        free(t->line);
        free(t->line_len);
}

/* Load blob hex (NULL or "": empty) as text. 1 text, 0 binary or too
 * big, -errno (-ENOENT: blob not kept). */
static int load_text(struct blobstore *bs, const char *hex, struct text *t)
{
        *t = (struct text) { 0 };
        if (!hex || !hex[0])
                return 1;
        _cleanup_close_ int fd = blobstore_open_blob(bs, hex);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t)st.st_size > MAX_TEXT)
                return 0;
        t->data = xmalloc((size_t)st.st_size + 1);
        ssize_t n = read_full(fd, t->data, (size_t)st.st_size);
        if (n < 0)
                return (int)n;
        t->len = (size_t)n;
        if (memchr(t->data, '\0', t->len))
                return 0;
        for (size_t i = 0; i < t->len;) {
                const char *nl = memchr(t->data + i, '\n', t->len - i);
                size_t l = nl ? (size_t)(nl - (t->data + i)) + 1 : t->len - i;
                t->line = xrealloc(t->line, (t->n + 1) * sizeof(*t->line));
                t->line_len = xrealloc(t->line_len, (t->n + 1) * sizeof(*t->line_len));
                t->line[t->n] = t->data + i;
                t->line_len[t->n++] = l;
                t->no_eol = !nl;
                i += l;
        }
        return 1;
}

static bool line_eq(const struct text *a, size_t i, const struct text *b, size_t j)
{
        return a->line_len[i] == b->line_len[j] && memcmp(a->line[i], b->line[j], a->line_len[i]) == 0;
}

/* Mark deleted lines of a and inserted lines of b (Myers). */
static void myers(const struct text *a, const struct text *b, bool *del, bool *ins)
{
        size_t n = a->n, m = b->n;
        long **trace = xcalloc(MAX_EDITS + 1, sizeof(long *));
        long d, found = -1;

        for (d = 0; d <= MAX_EDITS && d <= (long)(n + m); d++) {
                long *v = xcalloc((size_t)(2 * d + 1), sizeof(long));
                long *pv = d ? trace[d - 1] : NULL;
                trace[d] = v;
                for (long k = -d; k <= d; k += 2) {
                        long x;
                        if (d == 0)
                                x = 0;
                        else if (k == -d || (k != d && pv[k - 1 + (d - 1)] < pv[k + 1 + (d - 1)]))
                                x = pv[k + 1 + (d - 1)];
                        else
                                x = pv[k - 1 + (d - 1)] + 1;
                        long y = x - k;
                        while (x < (long)n && y < (long)m && line_eq(a, (size_t)x, b, (size_t)y))
                                x++, y++;
                        v[k + d] = x;
                        if (x >= (long)n && y >= (long)m) {
                                found = d;
                                break;
                        }
                }
                if (found >= 0)
                        break;
        }
        if (found < 0) {
                for (size_t i = 0; i < n; i++)
                        del[i] = true;
                for (size_t j = 0; j < m; j++)
                        ins[j] = true;
        } else {
                long x = (long)n, y = (long)m;
                for (d = found; d > 0; d--) {
                        long *pv = trace[d - 1], k = x - y, pk;
                        if (k == -d || (k != d && pv[k - 1 + (d - 1)] < pv[k + 1 + (d - 1)]))
                                pk = k + 1;
                        else
                                pk = k - 1;
                        long px = pv[pk + (d - 1)], py = px - pk;
                        if (pk == k + 1)
                                ins[py] = true;         /* down: b[py] inserted */
                        else
                                del[px] = true;         /* right: a[px] deleted */
                        x = px;
                        y = py;
                }
        }
        for (d = 0; d <= MAX_EDITS; d++)
                free(trace[d]);
        free(trace);
}

struct op {
        char type;              /* ' ', '-', '+' */
        size_t ai, bj;          /* line indexes before this op */
};

static void print_line(char type, const struct text *t, size_t i)
{
        putchar(type);
        fwrite(t->line[i], 1, t->line_len[i], stdout);
        if (i == t->n - 1 && t->no_eol)
                printf("\n\\ No newline at end of file\n");
}

static void unified(const struct text *a, const struct text *b)
{
        _cleanup_free_ bool *del = xcalloc(a->n + 1, sizeof(bool));
        _cleanup_free_ bool *ins = xcalloc(b->n + 1, sizeof(bool));
        _cleanup_free_ struct op *ops = xcalloc(a->n + b->n + 1, sizeof(struct op));
        size_t nops = 0, i = 0, j = 0;

        myers(a, b, del, ins);
        while (i < a->n || j < b->n) {
                struct op o = { .ai = i, .bj = j };
                if (i < a->n && del[i]) {
                        o.type = '-';
                        i++;
                } else if (j < b->n && ins[j]) {
                        o.type = '+';
                        j++;
                } else {
                        o.type = ' ';
                        i++;
                        j++;
                }
                ops[nops++] = o;
        }
        for (size_t s = 0; s < nops;) {
                if (ops[s].type == ' ') {
                        s++;
                        continue;
                }
                /* a hunk: from CONTEXT lines before this change to CONTEXT
                 * after the last change that is at most 2*CONTEXT apart */
                size_t start = s >= CONTEXT ? s - CONTEXT : 0, end = s, gap = 0;
                for (size_t k = s; k < nops; k++) {
                        if (ops[k].type != ' ') {
                                end = k;
                                gap = 0;
                        } else if (++gap > 2 * CONTEXT)
                                break;
                }
                size_t stop = MIN(nops, end + 1 + CONTEXT), al = 0, bl = 0;
                for (size_t k = start; k < stop; k++) {
                        al += ops[k].type != '+';
                        bl += ops[k].type != '-';
                }
                printf("@@ -%zu,%zu +%zu,%zu @@\n", ops[start].ai + (al ? 1 : 0), al,
                       ops[start].bj + (bl ? 1 : 0), bl);
                for (size_t k = start; k < stop; k++) {
                        if (ops[k].type == '+')
                                print_line('+', b, ops[k].bj);
                        else
                                print_line(ops[k].type, a, ops[k].ai);
                }
                s = stop;
        }
}

/* prefix, the job's name and suffix as one word of a text view, quoted
 * as git quotes when the name needs it (sanitize_quote_name()): a name
 * with a newline would otherwise print lines of its own choosing, such
 * as a fake hunk, into the diff a reviewer reads. */
static char *quoted(const char *prefix, const char *name, const char *suffix)
{
        _cleanup_free_ char *word = xasprintf("%s%s%s", prefix, name, suffix);
        return sanitize_quote_name(word);
}

static void show_change(struct blobstore *bs, const struct change *c, const char *protected_why)
{
        _cleanup_free_ char *old_name = quoted("a/", c->path, ""), *new_name = quoted("b/", c->path, "");
        struct text a = { 0 }, b = { 0 };

        printf("diff --hutch %s %s\n", old_name, new_name);
        if (protected_why)
                printf("PROTECTED: %s (hutch apply refuses it)\n", protected_why);
        if (c->skip != CHANGE_SKIP_NONE) {
                printf("not recorded: %s\n", change_skip_to_string(c->skip));
                return;
        }
        /* The "a/" side is the host's version at the end of the run;
         * for a path the host changed while the job ran, that is not
         * what the job started from (which was not kept), so say so
         * rather than present the host's edit as the job's undoing. */
        if (c->lower_changed)
                printf("host changed this path during the run: the job started from an earlier "
                       "version, not kept; shown against the host's version (hutch apply refuses it)\n");
        if (c->kind == CHANGE_ADDED)
                printf("new %s mode %06o\n", S_ISDIR(c->mode) ? "directory" : "file", (unsigned)c->mode);
        else if (c->kind == CHANGE_DELETED)
                printf("deleted %s mode %06o\n", S_ISDIR(c->old_mode) ? "directory" : "file",
                       (unsigned)c->old_mode);
        else if (c->mode != c->old_mode)
                printf("old mode %06o\nnew mode %06o\n", (unsigned)c->old_mode, (unsigned)c->mode);
        if (S_ISLNK(c->mode) || S_ISLNK(c->old_mode)) {
                if (S_ISLNK(c->mode)) {
                        _cleanup_free_ char *t = quoted("", c->link_target ? c->link_target : "", "");
                        printf("symlink -> %s\n", t);
                }
                if (!S_ISREG(c->mode) && !S_ISREG(c->old_mode))
                        return;
        }
        bool old_file = c->kind != CHANGE_ADDED && S_ISREG(c->old_mode);
        bool new_file = c->kind != CHANGE_DELETED && S_ISREG(c->mode);
        if (!old_file && !new_file)
                return;
        if (old_file && new_file && streq(c->sha256, c->old_sha256))
                return;
        int ra = old_file ? load_text(bs, c->old_sha256, &a) : 1;
        int rb = new_file ? load_text(bs, c->sha256, &b) : 1;
        if (ra == -ENOENT || rb == -ENOENT)
                printf("content not kept (it held a secret's value, or the directory changed during the run)\n");
        else if (ra <= 0 || rb <= 0)
                printf("Binary files %s and %s differ\n", old_file ? old_name : "/dev/null",
                       new_file ? new_name : "/dev/null");
        else {
                printf("--- %s\n+++ %s\n", old_file ? old_name : "/dev/null", new_file ? new_name : "/dev/null");
                unified(&a, &b);
        }
        text_done(&a);
        text_done(&b);
}

static json_t *change_json(const struct change *c, const char *protected_why)
{
        json_t *o = json_object();
        runfiles_json_set_path(o, "path", c->path);
        json_object_set_new(o, "kind", json_string(change_kind_to_string(c->kind)));
        json_object_set_new(o, "size", json_integer((json_int_t)c->size));
        json_object_set_new(o, "mode", json_integer((json_int_t)c->mode));
        json_object_set_new(o, "sha256", c->sha256[0] ? json_string(c->sha256) : json_null());
        json_object_set_new(o, "old_mode", json_integer((json_int_t)c->old_mode));
        json_object_set_new(o, "old_sha256", c->old_sha256[0] ? json_string(c->old_sha256) : json_null());
        if (c->link_target)
                runfiles_json_set_path(o, "link_target", c->link_target);
        if (c->skip != CHANGE_SKIP_NONE)
                json_object_set_new(o, "skip", json_string(change_skip_to_string(c->skip)));
        json_object_set_new(o, "lower_changed", json_boolean(c->lower_changed));
        json_object_set_new(o, "protected", protected_why ? json_string(protected_why) : json_null());
        return o;
}

int verb_diff(int argc, char **argv)
{
        cli_guard_terminal();
        static const struct option options[] = {
                { "stat", no_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        struct changeset cs = { 0 };
        _cleanup_strv_ char **protect = NULL;
        _cleanup_free_ const char **why = NULL;
        size_t n_protected = 0;
        bool stat = false, json = false;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        stat = true;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("diff", argv, options);
                }
        r = cli_open_run("diff", argc, argv, optind, &s, &rec);
        if (r != EXIT_OK)
                return r;
        r = runfiles_load_changeset(s, rec->id, &cs);
        if (r < 0) {
                log_error("diff: run store %s: %s", store_path(s), store_error(s));
                return EXIT_SETUP;
        }
        r = runfiles_open_blobs(s, &bs);
        if (r < 0) {
                changeset_done(&cs);
                log_error_errno(r, "diff: blob store: %m");
                return EXIT_SETUP;
        }

        /* protected paths (workspace/protected.h) come first, loudly: they
         * are what a reviewer must not miss in a long diff */
        protect = cli_run_protect_patterns(rec);
        why = xcalloc(cs.n ? cs.n : 1, sizeof(*why));
        for (size_t i = 0; i < cs.n; i++)
                if (cs.entries[i].skip == CHANGE_SKIP_NONE &&
                    (why[i] = protected_changeset_reason(&cs, &cs.entries[i], -1, protect)))
                        n_protected++;
        if (n_protected && !json) {
                printf("PROTECTED: this run changes %zu path%s that your tools would run as you; "
                       "hutch apply refuses %s by default:\n", n_protected, n_protected == 1 ? "" : "s",
                       n_protected == 1 ? "it" : "them");
                for (size_t i = 0; i < cs.n; i++)
                        if (why[i]) {
                                _cleanup_free_ char *p = quoted("", cs.entries[i].path, "");
                                printf("  PROTECTED  %s: %s\n", p, why[i]);
                        }
                printf("\n");
        }

        if (json) {
                json_t *o = json_object(), *a = json_array();
                json_object_set_new(o, "schema", json_string("hutch.diff/1"));
                json_object_set_new(o, "id", json_string(rec->id));
                json_object_set_new(o, "protected", json_integer((json_int_t)n_protected));
                for (size_t i = 0; i < cs.n; i++)
                        json_array_append_new(a, change_json(&cs.entries[i], why[i]));
                json_object_set_new(o, "changes", a);
                _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT);
                json_decref(o);
                puts(text ? text : "{}");
        } else if (stat) {
                size_t count[_CHANGE_KIND_MAX] = { 0 };
                for (size_t i = 0; i < cs.n; i++) {
                        const struct change *ch = &cs.entries[i];
                        bool dir = S_ISDIR(ch->mode) || (ch->kind == CHANGE_DELETED && S_ISDIR(ch->old_mode));
                        _cleanup_free_ char *p = quoted("", ch->path, dir ? "/" : "");
                        char size[32] = "";
                        if (ch->kind != CHANGE_DELETED && S_ISREG(ch->mode))
                                format_size(ch->size, size, sizeof(size));
                        char note[48];
                        cli_mode_note(ch->kind == CHANGE_ADDED, ch->kind == CHANGE_DELETED, ch->old_mode,
                                      ch->mode, note, sizeof(note));
                        printf("%-8s %8s  %s%s%s%s%s\n", change_kind_to_string(ch->kind), size, p, note,
                               ch->skip != CHANGE_SKIP_NONE ? "  (not recorded)" : "",
                               ch->lower_changed ? "  (host changed it during the run)" : "",
                               why[i] ? "  PROTECTED" : "");
                        count[ch->kind]++;
                }
                printf("%zu added, %zu modified, %zu deleted\n", count[CHANGE_ADDED],
                       count[CHANGE_MODIFIED], count[CHANGE_DELETED]);
        } else
                for (size_t i = 0; i < cs.n; i++)
                        show_change(bs, &cs.entries[i], why[i]);
        changeset_done(&cs);
        return EXIT_OK;
}
