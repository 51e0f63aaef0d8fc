/* profile-load.c - reading profile files and following `extends`.
 *
 * Reading one file happens in two steps. First inih (through ini-text.c,
 * which adds line numbers) collects its entries, rejecting unknown
 * sections and keys, duplicates and syntax errors as it goes. Then the
 * file's `extends` target is loaded into the config, and the entries are
 * applied on top, each through the same setter the command line uses
 * (profile_set_value), which records where the value came from.
 */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "config/ini-text.h"
#include "config/profile-internal.h"
#include "config/profile.h"
#include "lib/util.h"

#define PROFILE_MAX_DEPTH 16            /* profiles in one extends chain */
#define PROFILE_MAX_SIZE (1024 * 1024)  /* bytes in one profile file */

/* ---- reading one file ----------------------------------------------------- */

struct entry {
        const struct profile_key *key;  /* NULL for [env] and extends */
        char *section;
        char *name;
        char *value;
        unsigned line;
        bool append;            /* written "name += value" */
};

struct parse {
        const char *display;    /* file as shown in messages */
        struct entry *entries;
        size_t n_entries;
        char *error;
};

static void parse_done(struct parse *p)
{
        for (size_t i = 0; i < p->n_entries; i++) {
                free(p->entries[i].section);
                free(p->entries[i].name);
                free(p->entries[i].value);
        }
        free(p->entries);
        free(p->error);
}

static const char *section_hint(const char *name)
{
        for (size_t i = 0; i < profile_n_keys; i++)
                if (streq(profile_keys[i].name, name))
                        return profile_keys[i].section;
        if (streq(name, "extends"))
                return "";
        return NULL;
}

static int parse_error(struct parse *p, unsigned line, int r, const char *fmt, ...) _printf_(4, 5);
static int parse_error(struct parse *p, unsigned line, int r, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!p->error)
                p->error = xasprintf("profile %s:%u: %s", p->display, line, msg ? msg : "error");
        return r;
}

static int on_ini_line(void *userdata, const char *section, const char *name, const char *value,
                       unsigned line, bool continuation)
{
        struct parse *p = userdata;
        const struct profile_key *k = NULL;
        _cleanup_free_ char *key = NULL;
        bool append = false;

        if (!name) {
                if (!profile_section_known(section))
                        return parse_error(p, line, -EINVAL,
                                           "unknown section [%s] (known: apply, artifacts, env, filesystem, "
                                           "limits, network, sandbox, seccomp)", section);
                return 0;
        }

        if (continuation) {
                struct entry *last = &p->entries[p->n_entries - 1];
                const struct profile_key *lk = last->key;
                if (!lk || (lk->type != PROFILE_LIST && lk->type != PROFILE_TEXT))
                        return parse_error(p, line, -EINVAL,
                                           "%s: unexpected indented line (only lists and "
                                           "description continue on indented lines)", last->name);
                char *t = xasprintf("%s\n%s", last->value, value);
                free(last->value);
                last->value = t;
                return 0;
        }

        key = xstrdup(name);
        size_t n = strlen(key);
        if (n > 0 && key[n - 1] == '+') {
                append = true;
                key[--n] = '\0';
                while (n > 0 && isspace((unsigned char)key[n - 1]))
                        key[--n] = '\0';
        }

        if (streq(section, "env")) {
                if (!profile_valid_env_name(key))
                        return parse_error(p, line, -EINVAL,
                                           "expected a variable name (letters, digits, '_'), got \"%s\"", key);
                if (append)
                        return parse_error(p, line, -EINVAL, "%s: += only works on lists", key);
        } else if (section[0] == '\0' && streq(key, "extends")) {
                if (append)
                        return parse_error(p, line, -EINVAL, "extends: += only works on lists");
        } else {
                k = profile_key_in_section(section, key);
                if (!k) {
                        const char *hint = section_hint(key);
                        if (hint && hint[0] && section[0])
                                return parse_error(p, line, -EINVAL, "%s: unknown key in [%s] (it belongs in [%s])",
                                                   key, section, hint);
                        if (hint && hint[0])
                                return parse_error(p, line, -EINVAL, "%s: unknown key at the top level (it belongs in [%s])",
                                                   key, hint);
                        if (hint)
                                return parse_error(p, line, -EINVAL, "%s: unknown key in [%s] (it belongs at the top, before any section)",
                                                   key, section);
                        if (section[0] == '\0')
                                return parse_error(p, line, -EINVAL, "%s: unknown key at the top level (only extends and description go there)", key);
                        return parse_error(p, line, -EINVAL, "%s: unknown key in [%s]", key, section);
                }
                if (append && k->type != PROFILE_LIST)
                        return parse_error(p, line, -EINVAL, "%s: += only works on lists", key);
        }

        /* a table key is one entry of the table, so the same key is the
         * same pointer; [env] names and extends compare by text */
        for (size_t i = 0; i < p->n_entries; i++)
                if (k ? p->entries[i].key == k
                      : !p->entries[i].key && streq(p->entries[i].name, key) && streq(p->entries[i].section, section))
                        return parse_error(p, line, -EINVAL, "%s: duplicate key (first set on line %u)",
                                           key, p->entries[i].line);

        p->entries = xrealloc(p->entries, (p->n_entries + 1) * sizeof(*p->entries));
        p->entries[p->n_entries++] = (struct entry) {
                .key = k,
                .section = xstrdup(section),
                .name = TAKE_PTR(key),
                .value = xstrdup(value),
                .line = line,
                .append = append,
        };
        return 0;
}

static int parse_text(struct parse *p, const char *text, size_t len)
{
        unsigned line = 0;
        bool syntax = false;
        int r;

        if (len > PROFILE_MAX_SIZE) {
                p->error = xasprintf("profile %s: larger than 1M", p->display);
                return -EFBIG;
        }
        if (strlen(text) != len) {
                p->error = xasprintf("profile %s: contains a NUL byte", p->display);
                return -EINVAL;
        }
        r = ini_text_parse(text, on_ini_line, p, &line, &syntax);
        if (r == -EINVAL && syntax)
                return parse_error(p, line, -EINVAL, "expected \"key = value\", \"[section]\" or a comment");
        if (r == -E2BIG)
                return parse_error(p, line, -EINVAL, "line longer than %d characters", INI_TEXT_MAX_LINE - 1);
        if (r == -ENAMETOOLONG)
                return parse_error(p, line, -EINVAL, "name longer than %d characters", INI_TEXT_MAX_NAME - 1);
        if (r < 0)
                return parse_error(p, line, r, "%s", strerror(-r));
        return 0;
}

/* ---- loading with extends ------------------------------------------------ */

/* The files being loaded, innermost last: each links to the profile that
 * extends it. Lives on the stack of load_file(). */
struct chain {
        const char *real;       /* realpath of the file, NULL for text */
        const char *name;       /* profile name, for cycle messages */
        const char *display;
        const struct chain *child;  /* the profile that extends this one */
        unsigned depth;         /* files in the chain so far, this one included */
};

static int load_text(struct run_config *cfg, const char *text, size_t len, const char *display,
                     bool trusted, const char *base_dir, const struct chain *chain, char **ret_error);

/* Read a profile: a regular file of at most PROFILE_MAX_SIZE bytes (never
 * a device or a FIFO, which could block or never end). -EBADFD if not
 * regular, -EFBIG if too big. */
static int read_profile_file(const char *path, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (st.st_size > PROFILE_MAX_SIZE)
                return -EFBIG;
        /* sized by fstat, one byte more to see a file that grew since
         * (or one that tells no size, as /proc's do): then up to the limit */
        size_t want = (size_t)st.st_size + 1;
        buf = xmalloc(want + 1);
        n = read_full(fd, buf, want);
        if (n == (ssize_t)want && want <= PROFILE_MAX_SIZE) {
                buf = xrealloc(buf, PROFILE_MAX_SIZE + 2);
                ssize_t more = read_full(fd, buf + n, PROFILE_MAX_SIZE + 1 - (size_t)n);
                n = more < 0 ? more : n + more;
        }
        if (n < 0)
                return (int)n;
        if (n > PROFILE_MAX_SIZE)
                return -EFBIG;
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = (size_t)n;
        return 0;
}

/* known_real: the realpath of path if the caller has it (NULL: worked
 * out here).
 * *ret_real, if given, gets the realpath on success (NULL if there is
 * none). */
static int load_file(struct run_config *cfg, const char *path, const char *display, bool trusted,
                     const struct chain *child, const char *known_real, char **ret_real, char **ret_error)
{
        _cleanup_free_ char *text = NULL, *real = NULL, *name = NULL, *dir = NULL;
        char *slash;
        size_t len = 0;
        int r;

        r = read_profile_file(path, &text, &len);
        if (r == -EFBIG)
                return profile_fail(ret_error, r, NULL, "profile %s: larger than 1M", display);
        if (r == -EBADFD)
                return profile_fail(ret_error, -EINVAL, NULL, "profile %s: not a regular file", display);
        if (r < 0)
                return profile_fail(ret_error, r, NULL, "profile %s: cannot read: %s", display, strerror(-r));
        real = known_real ? xstrdup(known_real) : realpath(path, NULL);
        name = profile_name_of(path);
        cfg->profile_files = strv_append(cfg->profile_files, real ? real : path);

        dir = xstrdup(path);
        slash = strrchr(dir, '/');
        if (slash)
                slash[slash == dir ? 1 : 0] = '\0';
        else {
                free(dir);
                dir = xstrdup(".");
        }
        struct chain here = {
                .real = real, .name = name, .display = display, .child = child,
                .depth = child ? child->depth + 1 : 1,
        };
        r = load_text(cfg, text, len, display, trusted, dir, &here, ret_error);
        if (r >= 0 && ret_real)
                *ret_real = TAKE_PTR(real);
        return r;
}

/* Resolve `extends = target`, written at display:line of the file `chain`
 * describes (NULL for text), and load it. */
static int load_parent(struct run_config *cfg, const char *target, const char *display,
                       unsigned line, const char *base_dir, const struct chain *chain,
                       char **ret_error)
{
        _cleanup_free_ char *path = NULL, *shown = NULL, *real = NULL;
        bool trusted;
        int r;

        if (chain && chain->depth >= PROFILE_MAX_DEPTH)
                return profile_fail(ret_error, -ELOOP, NULL,
                                    "profile %s:%u: extends: more than %d profiles in the chain",
                                    display, line, PROFILE_MAX_DEPTH);
        if (profile_is_path(target)) {
                path = target[0] == '/' || !base_dir ? xstrdup(target)
                                                      : xasprintf("%s/%s", base_dir, target);
                if (access(path, R_OK) < 0)
                        return profile_fail(ret_error, -ENOENT, NULL, "profile %s:%u: extends: cannot read %s: %s",
                                            display, line, path, strerror(errno));
                trusted = profile_path_is_trusted(path);
                shown = xstrdup(path);
        } else {
                if (!profile_valid_name(target))
                        return profile_fail(ret_error, -EINVAL, NULL,
                                            "profile %s:%u: extends: expected a profile name or path, got \"%s\"",
                                            display, line, target);
                r = profile_find(target, chain ? chain->real : NULL, &path);
                if (r < 0) {
                        _cleanup_strv_ char **dirs = profile_search_dirs();
                        _cleanup_free_ char *where_text = profile_dirs_text(dirs);
                        return profile_fail(ret_error, -ENOENT, NULL,
                                            "profile %s:%u: extends: no profile named \"%s\" (looked in %s)",
                                            display, line, target, where_text);
                }
                trusted = true;
                shown = profile_basename(path);
                /* two files of one name in a chain: show full paths */
                for (const struct chain *c = chain; c; c = c->child)
                        if (streq(c->display, shown)) {
                                free(shown);
                                shown = xstrdup(path);
                                break;
                        }
        }

        /* a cycle is reported on the extends line that closes it */
        real = realpath(path, NULL);
        for (const struct chain *c = chain; c && real; c = c->child)
                if (c->real && streq(c->real, real)) {
                        _cleanup_free_ char *cycle = profile_name_of(path);
                        for (const struct chain *d = chain; d; d = d->child) {
                                char *t = xasprintf("%s -> %s", d->name, cycle);
                                free(cycle);
                                cycle = t;
                                if (d == c)
                                        break;
                        }
                        return profile_fail(ret_error, -ELOOP, NULL, "profile %s:%u: extends: cycle: %s",
                                            display, line, cycle);
                }

        return load_file(cfg, path, shown, trusted, chain, real, NULL, ret_error);
}

static int load_text(struct run_config *cfg, const char *text, size_t len, const char *display,
                     bool trusted, const char *base_dir, const struct chain *chain, char **ret_error)
{
        struct parse p = { .display = display };
        enum origin origin = trusted ? ORIGIN_FILE : ORIGIN_FILE_UNTRUSTED;
        int r;

        r = parse_text(&p, text, len);
        if (r < 0)
                goto out;

        for (size_t i = 0; i < p.n_entries; i++) {
                struct entry *e = &p.entries[i];
                if (e->section[0] || !streq(e->name, "extends"))
                        continue;
                r = load_parent(cfg, e->value, display, e->line, base_dir, chain, ret_error);
                if (r < 0)
                        goto out_keep;
        }

        for (size_t i = 0; i < p.n_entries; i++) {
                struct entry *e = &p.entries[i];
                if (!e->section[0] && streq(e->name, "extends"))
                        continue;
                if (streq(e->section, "env"))
                        r = profile_set_env(cfg, e->name, e->value, origin, display, e->line, ret_error);
                else
                        r = profile_set_value(cfg, e->key, e->value, e->append,
                                              origin, display, e->line, ret_error);
                if (r < 0)
                        goto out_keep;
        }
        r = 0;
out:
        if (r < 0 && ret_error) {
                free(*ret_error);
                *ret_error = TAKE_PTR(p.error);
        }
out_keep:
        parse_done(&p);
        return r;
}

int profile_load_text(struct run_config *cfg, const char *text, const char *display_name,
                      bool trusted, char **ret_error)
{
        return load_text(cfg, text, strlen(text), display_name, trusted, NULL, NULL, ret_error);
}

int profile_load(struct run_config *cfg, const char *name_or_path, char **ret_error)
{
        return profile_load_trusting(cfg, name_or_path, false, ret_error);
}

int profile_load_trusting(struct run_config *cfg, const char *name_or_path, bool trust, char **ret_error)
{
        _cleanup_free_ char *path = NULL, *display = NULL, *real = NULL;
        bool trusted;
        int r;

        if (!name_or_path)
                name_or_path = "default";

        if (profile_is_path(name_or_path)) {
                path = xstrdup(name_or_path);
                display = xstrdup(name_or_path);
                /* --trust-profile: the operator vouches for this file (not
                 * for what it extends by path: each is judged by itself) */
                trusted = trust || profile_path_is_trusted(path);
        } else {
                if (!profile_valid_name(name_or_path))
                        return profile_fail(ret_error, -EINVAL, NULL,
                                            "profile \"%s\": expected a name (letters, digits, '-', '_', '.') or a path",
                                            name_or_path);
                r = profile_find(name_or_path, NULL, &path);
                if (r < 0) {
                        _cleanup_strv_ char **dirs = NULL;
                        _cleanup_free_ char *where_text = NULL;
                        if (streq(name_or_path, "default"))
                                return 0;       /* the built-in defaults are the default profile */
                        dirs = profile_search_dirs();
                        where_text = profile_dirs_text(dirs);
                        return profile_fail(ret_error, -ENOENT, NULL, "profile \"%s\" not found (looked in %s)",
                                            name_or_path, where_text);
                }
                display = profile_basename(path);
                trusted = true;
        }

        r = load_file(cfg, path, display, trusted, NULL, NULL, &real, ret_error);
        if (r < 0)
                return r;
        free(cfg->profile_name);
        cfg->profile_name = profile_name_of(path);
        free(cfg->profile_path);
        cfg->profile_path = real ? TAKE_PTR(real) : xstrdup(path);
        return 0;
}
