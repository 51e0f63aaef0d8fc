/* lang.c - the language table (share/languages.ini) and template expansion
 * (see lang.h).
 *
 * The file is tiny (a handful of sections of three or four keys) and is
 * read once per `hutch run --lang`; it is kept as an array in file order.
 * Templates are checked when the file is read, so a bad placeholder is
 * reported as file:line, not in the middle of a run.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "config/ini-text.h"
#include "config/lang.h"
#include "lib/util.h"

struct lang_table {
        struct lang *langs;
        size_t n;
};

struct lang_parse {
        const char *display;
        struct lang_table *t;
        struct lang *cur;       /* language of the current section */
        char *error;
};

static int lang_error(struct lang_parse *p, unsigned line, const char *fmt, ...) _printf_(3, 4);
static int lang_error(struct lang_parse *p, unsigned line, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!p->error)
                p->error = xasprintf("%s:%u: %s", p->display, line, msg ? msg : "error");
        return -EINVAL;
}

static bool valid_lang_name(const char *s)
{
        if (!*s || strlen(s) > 32)
                return false;
        for (; *s; s++)
                if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_' &&
                    *s != '-' && *s != '+')
                        return false;
        return true;
}

/* NULL if every {...} in t is {file} or {out}; else the bad placeholder's
 * start. Sets *has_out. */
static const char *bad_placeholder(const char *t, bool *has_out, bool *has_file)
{
        *has_out = *has_file = false;
        for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
                if (startswith(p, "{file}"))
                        *has_file = true;
                else if (startswith(p, "{out}"))
                        *has_out = true;
                else
                        return p;
        }
        if (strchr(t, '}') && !strstr(t, "{file}") && !strstr(t, "{out}"))
                return strchr(t, '}');
        return NULL;
}

static int on_lang_line(void *userdata, const char *section, const char *name, const char *value,
                        unsigned line, bool continuation)
{
        struct lang_parse *p = userdata;
        struct lang *l;
        char **slot;

        if (!name) {
                if (!valid_lang_name(section))
                        return lang_error(p, line, "[%s]: expected a language name (a-z, 0-9, _ - +)", section);
                for (size_t i = 0; i < p->t->n; i++)
                        if (streq(p->t->langs[i].name, section))
                                return lang_error(p, line, "[%s]: duplicate language (first on line %u)",
                                                  section, p->t->langs[i].line);
                p->t->langs = xrealloc(p->t->langs, (p->t->n + 1) * sizeof(struct lang));
                p->cur = &p->t->langs[p->t->n++];
                *p->cur = (struct lang) { .name = xstrdup(section), .line = line };
                return 0;
        }
        if (continuation)
                return lang_error(p, line, "%s: unexpected indented line", name);
        if (!p->cur || section[0] == '\0')
                return lang_error(p, line, "%s: key outside a [language] section", name);
        l = p->cur;

        if (streq(name, "command"))
                slot = &l->command;
        else if (streq(name, "compile"))
                slot = &l->compile;
        else if (streq(name, "extension"))
                slot = &l->extension;
        else if (streq(name, "profile"))
                slot = &l->profile;
        else
                return lang_error(p, line, "%s: unknown key (command, compile, extension, profile)", name);
        if (*slot)
                return lang_error(p, line, "%s: duplicate key in [%s]", name, l->name);

        if (slot == &l->command || slot == &l->compile) {
                bool has_out, has_file;
                const char *bad = bad_placeholder(value, &has_out, &has_file);
                if (bad)
                        return lang_error(p, line, "%s: unknown placeholder near \"%.10s\" (use {file} or {out})",
                                          name, bad);
                if (!value[0])
                        return lang_error(p, line, "%s: empty", name);
        } else if (slot == &l->extension) {
                if (value[0] != '.' || strlen(value) < 2 || strlen(value) > 16 || strchr(value, '/') ||
                    strchr(value, ' '))
                        return lang_error(p, line, "extension: expected a file extension like .py, got \"%s\"", value);
        } else if (!value[0] || strchr(value, '/') || strchr(value, ' '))
                return lang_error(p, line, "profile: expected a profile name, got \"%s\"", value);

        *slot = xstrdup(value);
        return 0;
}

static void lang_clear(struct lang *l)
{
        free(l->name);
        free(l->command);
        free(l->compile);
        free(l->extension);
        free(l->profile);
}

struct lang_table *lang_table_free(struct lang_table *t)
{
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n; i++)
                lang_clear(&t->langs[i]);
        free(t->langs);
        free(t);
        return NULL;
}

int lang_table_parse(const char *text, const char *display, struct lang_table **ret,
                     char **ret_error)
{
        struct lang_parse p = { .display = display };
        unsigned line = 0;
        bool syntax = false;
        int r;

        p.t = xcalloc(1, sizeof(*p.t));
        r = ini_text_parse(text, on_lang_line, &p, &line, &syntax);
        if (r == -EINVAL && syntax)
                lang_error(&p, line, "expected \"key = value\", \"[language]\" or a comment");
        else if (r == -E2BIG)
                lang_error(&p, line, "line too long");
        else if (r == -ENAMETOOLONG)
                lang_error(&p, line, "name too long");
        else if (r < 0)
                lang_error(&p, line, "%s", strerror(-r));

        for (size_t i = 0; r >= 0 && i < p.t->n; i++) {
                struct lang *l = &p.t->langs[i];
                bool has_out, has_file;
                if (!l->command)
                        r = lang_error(&p, l->line, "[%s]: missing command", l->name);
                else if (!l->extension)
                        r = lang_error(&p, l->line, "[%s]: missing extension", l->name);
                else {
                        bad_placeholder(l->command, &has_out, &has_file);
                        if (has_out && !l->compile)
                                r = lang_error(&p, l->line, "[%s]: command uses {out} but there is no compile step",
                                               l->name);
                }
                if (r >= 0 && !l->profile)
                        l->profile = xstrdup("default");
        }

        if (r < 0) {
                if (ret_error) {
                        free(*ret_error);
                        *ret_error = TAKE_PTR(p.error);
                }
                free(p.error);
                lang_table_free(p.t);
                return -EINVAL;
        }
        *ret = p.t;
        return 0;
}

char *lang_table_default_path(void)
{
        const char *d = getenv("HUTCH_DATADIR");
        if (d && d[0])
                return xasprintf("%s/languages.ini", d);
        return xstrdup(HUTCH_DATADIR "/languages.ini");
}

int lang_table_load(const char *path, struct lang_table **ret, char **ret_error)
{
        _cleanup_free_ char *def = NULL, *text = NULL;
        size_t len = 0;
        int r;

        if (!path)
                path = def = lang_table_default_path();
        r = read_file(path, &text, &len);
        if (r < 0) {
                if (ret_error) {
                        free(*ret_error);
                        *ret_error = xasprintf("languages %s: cannot read: %s", path, strerror(-r));
                }
                return r;
        }
        if (strlen(text) != len) {
                if (ret_error) {
                        free(*ret_error);
                        *ret_error = xasprintf("languages %s: contains a NUL byte", path);
                }
                return -EINVAL;
        }
        return lang_table_parse(text, path, ret, ret_error);
}

size_t lang_table_count(const struct lang_table *t)
{
        return t ? t->n : 0;
}

const struct lang *lang_table_get(const struct lang_table *t, size_t i)
{
        return t && i < t->n ? &t->langs[i] : NULL;
}

int lang_lookup(const struct lang_table *t, const char *name, const struct lang **ret,
                char **ret_error)
{
        _cleanup_free_ char *known = NULL;

        for (size_t i = 0; t && i < t->n; i++)
                if (streq(t->langs[i].name, name)) {
                        *ret = &t->langs[i];
                        return 0;
                }
        for (size_t i = 0; t && i < t->n; i++) {
                char *k = xasprintf("%s%s%s", known ? known : "", known ? ", " : "", t->langs[i].name);
                free(known);
                known = k;
        }
        if (ret_error) {
                free(*ret_error);
                *ret_error = xasprintf("unknown language \"%s\" (known: %s)", name ? name : "",
                                       known ? known : "none");
        }
        return -ENOENT;
}

/* Replace every {file} and {out} in word. */
static char *expand_word(const char *word, const char *file, const char *out)
{
        char *res = xstrdup("");
        const char *p = word;

        while (*p) {
                const char *brace = strchr(p, '{');
                const char *with = NULL;
                size_t skip = 0;
                char *t;

                if (!brace) {
                        t = xasprintf("%s%s", res, p);
                        free(res);
                        return t;
                }
                if (startswith(brace, "{file}")) {
                        with = file;
                        skip = 6;
                } else if (startswith(brace, "{out}")) {
                        with = out;
                        skip = 5;
                }
                if (!with) {
                        free(res);
                        return NULL;
                }
                t = xasprintf("%s%.*s%s", res, (int)(brace - p), p, with);
                free(res);
                res = t;
                p = brace + skip;
        }
        return res;
}

int lang_expand(const char *template, const char *file, const char *out, char ***ret_argv,
                char **ret_error)
{
        _cleanup_strv_ char **argv = NULL;
        _cleanup_free_ char *copy = xstrdup(template ? template : "");
        char *save = NULL;

        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                _cleanup_free_ char *x = expand_word(w, file ? file : "", out);
                if (!x || (strstr(w, "{file}") && !file)) {
                        if (ret_error) {
                                free(*ret_error);
                                *ret_error = xasprintf("template \"%s\": cannot expand \"%s\" "
                                                       "(only {file} and {out}, when given)", template, w);
                        }
                        return -EINVAL;
                }
                argv = strv_append(argv, x);
        }
        if (!argv) {
                if (ret_error) {
                        free(*ret_error);
                        *ret_error = xstrdup("empty command template");
                }
                return -EINVAL;
        }
        *ret_argv = TAKE_PTR(argv);
        return 0;
}

int lang_find_program(const char *program, const char *path_env, char **ret_path)
{
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;
        struct stat st;

        if (!program || !*program)
                return -ENOENT;
        if (strchr(program, '/')) {
                if (stat(program, &st) < 0 || !S_ISREG(st.st_mode) || access(program, X_OK) < 0)
                        return -ENOENT;
                if (ret_path)
                        *ret_path = xstrdup(program);
                return 0;
        }
        copy = xstrdup(path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin");
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *p = xasprintf("%s/%s", d, program);
                if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
                        if (ret_path)
                                *ret_path = TAKE_PTR(p);
                        return 0;
                }
        }
        return -ENOENT;
}

/* First blank-separated word of a template. */
static char *first_word(const char *t)
{
        size_t n;
        while (*t == ' ' || *t == '\t')
                t++;
        n = strcspn(t, " \t");
        return xasprintf("%.*s", (int)n, t);
}

static int check_word(const struct lang *l, const char *template, const char *role,
                      const char *path_env, char **ret_error)
{
        _cleanup_free_ char *w = first_word(template);

        if (strchr(w, '{'))
                return 0;       /* the program being built or run, not a host tool */
        if (lang_find_program(w, path_env, NULL) == 0)
                return 0;
        if (ret_error) {
                free(*ret_error);
                *ret_error = xasprintf("language %s: %s \"%s\" not found on PATH (%s)", l->name, role, w,
                                       path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin");
        }
        return -ENOENT;
}

int lang_check_host(const struct lang *l, const char *path_env, char **ret_error)
{
        int r;

        if (l->compile) {
                r = check_word(l, l->compile, "compiler", path_env, ret_error);
                if (r < 0)
                        return r;
        }
        return check_word(l, l->command, "interpreter", path_env, ret_error);
}

int lang_plan_make(const struct lang *l, struct lang_plan *ret, char **ret_error)
{
        struct lang_plan plan = {};
        int r;

        plan.source_name = xasprintf("main%s", l->extension);
        plan.source = xasprintf(LANG_CODE_DIR "/%s", plan.source_name);
        plan.output = xstrdup(LANG_BUILD_DIR "/main");
        if (l->compile) {
                r = lang_expand(l->compile, plan.source, plan.output, &plan.compile_argv, ret_error);
                if (r < 0)
                        goto fail;
        }
        r = lang_expand(l->command, plan.source, plan.output, &plan.run_argv, ret_error);
        if (r < 0)
                goto fail;
        *ret = plan;
        return 0;
fail:
        lang_plan_done(&plan);
        return r;
}

void lang_plan_done(struct lang_plan *plan)
{
        free(plan->source);
        free(plan->source_name);
        free(plan->output);
        strv_free(plan->compile_argv);
        strv_free(plan->run_argv);
        memset(plan, 0, sizeof(*plan));
}
