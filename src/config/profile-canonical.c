/* profile-canonical.c - the resolved profile as canonical INI text, and
 * its digest.
 *
 * The text is stored with each run and parsed back by `hutch rerun`, so
 * equal settings must give equal bytes (the digest compares runs) and the
 * text must read back to the same settings.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/profile-internal.h"
#include "config/profile.h"
#include "lib/digest.h"
#include "lib/util.h"

#define CANONICAL_WIDTH 78              /* fold lists longer than this */

/* The text being built: appends are amortised O(1), so a profile with
 * thousands of env entries or list items costs linear time. */
struct text {
        char *s;
        size_t len, cap;
};

/* Plain copies, no printf: this runs for every key of every run, on the
 * supervisor's way to the start message (two vsnprintf passes per piece
 * were a third of the text's cost). */
static void text_append(struct text *t, const char *s, size_t n)
{
        if (t->len + n + 1 > t->cap) {
                t->cap = MAX(t->cap * 2, t->len + n + 1);
                t->s = xrealloc(t->s, t->cap);
        }
        memcpy(t->s + t->len, s, n);
        t->len += n;
        t->s[t->len] = '\0';
}

static void text_puts(struct text *t, const char *s)
{
        text_append(t, s, strlen(s));
}

/* Append "key = value" to out, folding lists and text at blanks so no
 * line gets much longer than CANONICAL_WIDTH; continuation lines are
 * indented, which is how inih reads them back. A fold never comes before
 * a word starting with ';' or '#' (inih would read a comment). */
static void append_entry(struct text *out, const char *name, const char *value, bool fold)
{
        size_t col;
        text_puts(out, name);
        text_puts(out, value[0] ? " = " : " =");
        col = strlen(name) + 3;

        if (!fold) {
                text_puts(out, value);
                text_append(out, "\n", 1);
                return;
        }

        const char *p = value;
        bool first = true;
        while (*p) {
                /* next word, keeping "quoted items" whole */
                const char *end = p;
                if (*end == '"') {
                        const char *q = strchr(end + 1, '"');
                        end = q ? q + 1 : end + strlen(end);
                }
                while (*end && *end != ' ')
                        end++;
                size_t n = (size_t)(end - p);
                bool fold_here = !first && col + 1 + n > CANONICAL_WIDTH && *p != ';' && *p != '#';
                if (fold_here) {
                        text_puts(out, "\n        ");
                        col = 8 + n;
                } else {
                        if (!first)
                                text_append(out, " ", 1);
                        col += (first ? 0 : 1) + n;
                }
                text_append(out, p, n);
                first = false;
                p = end;
                while (*p == ' ')
                        p++;
        }
        text_append(out, "\n", 1);
}

int profile_cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

char *profile_canonical_text(const struct run_config *cfg)
{
        struct text out = { 0 };
        const char *section = "";

        text_append(&out, "", 0);
        /* the table is sorted by section then name, and [env] sorts
         * between [artifacts] and [filesystem] */
        for (size_t i = 0; i <= profile_n_keys; i++) {
                const struct profile_key *k = i < profile_n_keys ? &profile_keys[i] : NULL;
                const char *next = k ? k->section : "\x7f";

                if (!streq(next, section)) {
                        if (strcmp(section, "env") < 0 && strcmp(next, "env") > 0 && cfg->env) {
                                size_t n = strv_length(cfg->env);
                                char **sorted = xmalloc((n + 1) * sizeof(char *));
                                text_puts(&out, "\n[env]\n");
                                memcpy(sorted, cfg->env, (n + 1) * sizeof(char *));
                                qsort(sorted, n, sizeof(char *), profile_cmp_str);
                                for (size_t j = 0; j < n; j++) {
                                        const char *eq = strchr(sorted[j], '=');
                                        _cleanup_free_ char *name = strndup(sorted[j], (size_t)(eq - sorted[j]));
                                        append_entry(&out, name, eq + 1, false);
                                }
                                free(sorted);
                        }
                        if (!k)
                                break;
                        section = next;
                        text_puts(&out, "\n[");
                        text_puts(&out, section);
                        text_puts(&out, "]\n");
                }
                _cleanup_free_ char *value = profile_format_value(cfg, k);
                append_entry(&out, k->name, value, k->type == PROFILE_LIST || k->type == PROFILE_TEXT);
        }
        return out.s;
}

char *profile_sha256_hex(const char *text, char ret[DIGEST_HEX_SIZE])
{
        digest_buffer(text, strlen(text), ret);
        return ret;
}
