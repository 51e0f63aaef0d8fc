/* profile-canonical.c - the resolved profile as canonical INI text, and
 * its digest.
 *
 * The text is stored with each run and parsed back by `hutch rerun`, so
 * equal settings must give equal bytes (the digest compares runs) and the
 * text must read back to the same settings.
 */
#include "config.h"

#include <string.h>

#include "config/profile-internal.h"
#include "config/profile.h"
#include "lib/digest.h"
#include "lib/util.h"

#define CANONICAL_WIDTH 78              /* fold lists longer than this */

/* Append "key = value" to *out, folding lists and text at blanks so no
 * line gets much longer than CANONICAL_WIDTH; continuation lines are
 * indented, which is how inih reads them back. A fold never comes before
 * a word starting with ';' or '#' (inih would read a comment). */
static void append_entry(char **out, const char *name, const char *value, bool fold)
{
        size_t col;
        char *t = xasprintf("%s%s =%s", *out, name, value[0] ? " " : "");
        free(*out);
        *out = t;
        col = strlen(name) + 3;

        if (!fold) {
                t = xasprintf("%s%s\n", *out, value);
                free(*out);
                *out = t;
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
                        t = xasprintf("%s\n        %.*s", *out, (int)n, p);
                        col = 8 + n;
                } else {
                        t = xasprintf("%s%s%.*s", *out, first ? "" : " ", (int)n, p);
                        col += (first ? 0 : 1) + n;
                }
                free(*out);
                *out = t;
                first = false;
                p = end;
                while (*p == ' ')
                        p++;
        }
        t = xasprintf("%s\n", *out);
        free(*out);
        *out = t;
}

int profile_cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

char *profile_canonical_text(const struct run_config *cfg)
{
        char *out = xstrdup("");
        const char *section = "";

        /* the table is sorted by section then name, and [env] sorts
         * between [artifacts] and [filesystem] */
        for (size_t i = 0; i <= profile_n_keys; i++) {
                const struct profile_key *k = i < profile_n_keys ? &profile_keys[i] : NULL;
                const char *next = k ? k->section : "\x7f";

                if (!streq(next, section)) {
                        if (strcmp(section, "env") < 0 && strcmp(next, "env") > 0 && cfg->env) {
                                size_t n = strv_length(cfg->env);
                                char **sorted = xmalloc((n + 1) * sizeof(char *));
                                char *t = xasprintf("%s\n[env]\n", out);
                                free(out);
                                out = t;
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
                        char *t = xasprintf("%s\n[%s]\n", out, section);
                        free(out);
                        out = t;
                }
                _cleanup_free_ char *value = profile_format_value(cfg, k);
                append_entry(&out, k->name, value, k->type == PROFILE_LIST || k->type == PROFILE_TEXT);
        }
        return out;
}

char *profile_sha256_hex(const char *text, char ret[DIGEST_HEX_SIZE])
{
        digest_buffer(text, strlen(text), ret);
        return ret;
}
