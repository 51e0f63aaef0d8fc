/* profile-canonical.c - the resolved profile as canonical INI text, and
 * its digest.
 *
 * The text is stored with each run and parsed back by `hutch rerun`, so
 * equal settings must give equal bytes (the digest compares runs) and the
 * text must read back to the same settings.
 */
#include "config.h"

#include <stdarg.h>
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

static void text_printf(struct text *t, const char *fmt, ...) _printf_(2, 3);
static void text_printf(struct text *t, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                abort();        /* only for a bad format: a programming error */
        if (t->len + (size_t)n + 1 > t->cap) {
                t->cap = MAX(t->cap * 2, t->len + (size_t)n + 1);
                t->s = xrealloc(t->s, t->cap);
        }
        va_start(ap, fmt);
        vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        t->len += (size_t)n;
}

/* Append "key = value" to out, folding lists and text at blanks so no
 * line gets much longer than CANONICAL_WIDTH; continuation lines are
 * indented, which is how inih reads them back. A fold never comes before
 * a word starting with ';' or '#' (inih would read a comment). */
static void append_entry(struct text *out, const char *name, const char *value, bool fold)
{
        size_t col;
        text_printf(out, "%s =%s", name, value[0] ? " " : "");
        col = strlen(name) + 3;

        if (!fold) {
                text_printf(out, "%s\n", value);
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
                        text_printf(out, "\n        %.*s", (int)n, p);
                        col = 8 + n;
                } else {
                        text_printf(out, "%s%.*s", first ? "" : " ", (int)n, p);
                        col += (first ? 0 : 1) + n;
                }
                first = false;
                p = end;
                while (*p == ' ')
                        p++;
        }
        text_printf(out, "\n");
}

int profile_cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

char *profile_canonical_text(const struct run_config *cfg)
{
        struct text out = { 0 };
        const char *section = "";

        text_printf(&out, "%s", "");
        /* the table is sorted by section then name, and [env] sorts
         * between [artifacts] and [filesystem] */
        for (size_t i = 0; i <= profile_n_keys; i++) {
                const struct profile_key *k = i < profile_n_keys ? &profile_keys[i] : NULL;
                const char *next = k ? k->section : "\x7f";

                if (!streq(next, section)) {
                        if (strcmp(section, "env") < 0 && strcmp(next, "env") > 0 && cfg->env) {
                                size_t n = strv_length(cfg->env);
                                char **sorted = xmalloc((n + 1) * sizeof(char *));
                                text_printf(&out, "\n[env]\n");
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
                        text_printf(&out, "\n[%s]\n", section);
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
