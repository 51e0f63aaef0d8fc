/* profile-value.c - a key's value, from its text to its field in struct
 * run_config and back: parsing and bounds, the setters, the checks across
 * keys, and the canonical form of one value.
 *
 * Every value, from a file, the command line or the built-in defaults,
 * goes through the same setter (profile_set_value), so a value means the
 * same wherever it is written, and the setter records where it came from
 * for the error messages of later checks. It also refuses trusted-only
 * keys from untrusted files (see profile-search.c for what is trusted).
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "config/profile-internal.h"
#include "config/profile.h"
#include "lib/util.h"

/* ---- values: text -> field ---------------------------------------------- */

static void *field(struct run_config *cfg, const struct profile_key *k)
{
        return (char *)cfg + k->offset;
}

static const void *cfield(const struct run_config *cfg, const struct profile_key *k)
{
        return (const char *)cfg + k->offset;
}

static bool parse_bool(const char *s, bool *ret)
{
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return true;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return true;
                }
        }
        return false;
}

/* Whole number, digits only. */
static int parse_count(const char *s, uint64_t *ret)
{
        uint64_t v = 0;
        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        for (; *s; s++) {
                if (!isdigit((unsigned char)*s))
                        return -EINVAL;
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(*s - '0');
        }
        *ret = v;
        return 0;
}

/* Decimal with at most 3 places, in thousandths. */
static int parse_milli(const char *s, uint64_t *ret)
{
        uint64_t whole = 0, frac = 0;
        unsigned places = 0;
        const char *p = s;

        if (!isdigit((unsigned char)*p))
                return -EINVAL;
        for (; isdigit((unsigned char)*p); p++) {
                if (whole > 1000000000ULL)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t)(*p - '0');
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p))
                        return -EINVAL;
                for (; isdigit((unsigned char)*p); p++) {
                        if (++places > 3)
                                return -EINVAL;
                        frac = frac * 10 + (uint64_t)(*p - '0');
                }
        }
        if (*p)
                return -EINVAL;
        while (places++ < 3)
                frac *= 10;
        *ret = whole * 1000 + frac;
        return 0;
}

static const char *type_expect(const struct profile_key *k)
{
        switch (k->type) {
        case PROFILE_SIZE:     return "a size like 512M";
        case PROFILE_DURATION: return "a duration like 30s";
        case PROFILE_COUNT:    return "a whole number";
        case PROFILE_NUMBER:   return "a number like 1.5 (at most 3 decimals)";
        case PROFILE_BOOL:     return "yes or no";
        default:               return "a value";
        }
}

static const char *type_noun(const struct profile_key *k)
{
        switch (k->type) {
        case PROFILE_SIZE:     return "a size";
        case PROFILE_DURATION: return "a duration";
        case PROFILE_COUNT:    return "a whole number";
        default:               return "a number";
        }
}

static char *format_plain(const struct profile_key *k, uint64_t v);

/* Format a number of the key's type in canonical form; 0 is the key's
 * zero word if it has one. */
static char *format_number(const struct profile_key *k, uint64_t v)
{
        if (v == 0 && k->zero)
                return xstrdup(k->zero);
        return format_plain(k, v);
}

/* Same, but 0 is written as a number. */
static char *format_plain(const struct profile_key *k, uint64_t v)
{
        char buf[64];

        switch (k->type) {
        case PROFILE_SIZE:
                return xstrdup(format_size(v, buf, sizeof(buf)));
        case PROFILE_DURATION:
                if (v == 0)
                        return xstrdup("0s");
                if (v % 86400000 == 0)
                        return xasprintf("%llud", (unsigned long long)(v / 86400000));
                if (v % 3600000 == 0)
                        return xasprintf("%lluh", (unsigned long long)(v / 3600000));
                if (v % 60000 == 0)
                        return xasprintf("%llum", (unsigned long long)(v / 60000));
                if (v % 1000 == 0)
                        return xasprintf("%llus", (unsigned long long)(v / 1000));
                return xasprintf("%llums", (unsigned long long)v);
        case PROFILE_NUMBER:
                if (v % 1000 == 0)
                        return xasprintf("%llu", (unsigned long long)(v / 1000));
                snprintf(buf, sizeof(buf), "%llu.%03llu", (unsigned long long)(v / 1000),
                         (unsigned long long)(v % 1000));
                for (size_t n = strlen(buf); buf[n - 1] == '0'; n--)
                        buf[n - 1] = '\0';
                return xstrdup(buf);
        default:
                return xasprintf("%llu", (unsigned long long)v);
        }
}

/* Split a list value into items: blank-separated, "double quotes" keep
 * blanks inside one item. On error returns -EINVAL with *ret_expect. */
static int split_list(const char *value, char ***ret, const char **ret_expect)
{
        _cleanup_strv_ char **items = NULL;
        const char *p = value;

        for (;;) {
                const char *start, *end;

                while (*p && isspace((unsigned char)*p))
                        p++;
                if (!*p)
                        break;
                if (*p == '"') {
                        start = ++p;
                        end = strchr(p, '"');
                        if (!end || (end[1] && !isspace((unsigned char)end[1]))) {
                                *ret_expect = "items separated by blanks, with balanced \"quotes\"";
                                return -EINVAL;
                        }
                        p = end + 1;
                } else {
                        start = p;
                        while (*p && !isspace((unsigned char)*p) && *p != '"')
                                p++;
                        if (*p == '"') {
                                *ret_expect = "items separated by blanks, with balanced \"quotes\"";
                                return -EINVAL;
                        }
                        end = p;
                }
                _cleanup_free_ char *item = strndup(start, (size_t)(end - start));
                if (!item)
                        return -ENOMEM;
                items = strv_append(items, item);
        }
        *ret = TAKE_PTR(items);
        return 0;
}

bool profile_strv_contains(char *const *v, const char *s)
{
        for (; v && *v; v++)
                if (streq(*v, s))
                        return true;
        return false;
}

/* Collapse runs of blanks (including newlines of continued lines). */
static char *collapse_blanks(const char *s)
{
        char *out = xmalloc(strlen(s) + 1), *o = out;
        bool blank = false;

        while (*s && isspace((unsigned char)*s))
                s++;
        for (; *s; s++) {
                if (isspace((unsigned char)*s)) {
                        blank = true;
                        continue;
                }
                if (blank)
                        *o++ = ' ';
                blank = false;
                *o++ = *s;
        }
        *o = '\0';
        return out;
}

/* " ;" starts an inline comment for inih, and so does a leading ';' once
 * the value is written after "key = ": such a value could never be read
 * back from the canonical text. */
static bool has_comment_start(const char *s)
{
        for (const char *p = strchr(s, ';'); p; p = strchr(p + 1, ';'))
                if (p == s || isspace((unsigned char)p[-1]))
                        return true;
        return false;
}

/* Where a value came from, as the start of an error message. */
static char *where(const struct profile_key *k, const char *name, enum origin origin,
                   const char *file, unsigned line)
{
        if (origin == ORIGIN_CLI)
                return xasprintf("--%s", k ? k->flag : name);
        if (file)
                return xasprintf("profile %s:%u: %s", file, line, k ? k->name : name);
        return xasprintf("default %s", k ? k->name : name);
}

int profile_fail(char **ret_error, int r, char *w, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (ret_error) {
                free(*ret_error);
                *ret_error = w ? xasprintf("%s: %s", w, msg ? msg : "error") : xstrdup(msg ? msg : "error");
        }
        free(w);
        return r;
}

/* The name of env entry pos ("NAME=VALUE"), for the env index. */
static const char *env_name(void *userdata, size_t pos, size_t *ret_len)
{
        const struct run_config *cfg = userdata;
        *ret_len = strcspn(cfg->env[pos], "=");
        return cfg->env[pos];
}

int profile_set_env(struct run_config *cfg, const char *name, const char *value,
                    enum origin origin, const char *file, unsigned line, char **ret_error)
{
        _cleanup_free_ char *entry = NULL, *id = NULL;
        size_t n = strlen(name);

        if (!profile_valid_env_name(name))
                return profile_fail(ret_error, -EINVAL, where(NULL, "env", origin, file, line),
                                    "expected a variable name (letters, digits, '_'), got \"%s\"", name);
        if (!env_var_value_valid(value))    /* an image's Env is held to the same (oci.c) */
                return profile_fail(ret_error, -EINVAL, where(NULL, name, origin, file, line),
                                    "value may not contain control characters or \" ;\"");
        entry = xasprintf("%s=%s", name, value);
        /* by name through the index: thousands of -e stay linear */
        size_t i = strindex_find(&cfg->env_index, name, n, env_name, cfg);
        if (i != STRINDEX_NONE) {
                free(cfg->env[i]);
                cfg->env[i] = TAKE_PTR(entry);
        } else {
                cfg->env = strv_push(cfg->env, &cfg->n_env, entry);
                strindex_add(&cfg->env_index, cfg->n_env - 1, env_name, cfg);
        }
        id = xasprintf("env.%s", name);
        run_config_set_origin(cfg, id, origin, file, line);
        return 0;
}

/* Parse value for k and store it; append adds list items instead of
 * replacing the list. */
/* ---- what a profile from an untrusted place may not do ----------------- */

/* A profile named by a path outside the trusted dirs may be anyone's
 * (a repository's, a download's): it may narrow the sandbox, never widen
 * it. Widening is: host paths (rw, ro, root layers, system_dirs), taking
 * masks or apply protections away, any network (mode host or allow, allow rules, add_host),
 * syscall allowances (allow, ptrace, io_uring, an action that lets
 * denied calls through). The same values
 * from the command line or a trusted file are the operator's choice.
 * Returns what was refused, or NULL. */
static const char *untrusted_list_refusal(const struct profile_key *k, char **cur, char **items, bool append)
{
        size_t off = k->offset;

        if (off == offsetof(struct run_config, rw_paths) && items)
                return "writable binds";
        if (off == offsetof(struct run_config, ro_paths) && items)
                return "host paths";
        if (off == offsetof(struct run_config, seccomp_allow) && items)
                return "syscall allowances";
        /* an allow rule turns the network on; add_host may name loopback
         * and private addresses (deny only narrows) */
        if ((off == offsetof(struct run_config, net_allow) || off == offsetof(struct run_config, net_hosts)) &&
            items)
                return "network access";
        if (off == offsetof(struct run_config, ro_binds)) {
                /* fewer system dirs narrows; another one is a host path */
                for (char **i = items; i && *i; i++)
                        if (!profile_strv_contains(cur, *i))
                                return "system_dirs additions";
                return NULL;
        }
        if (off == offsetof(struct run_config, masks) && !append) {
                for (char **m = cur; m && *m; m++)
                        if (!profile_strv_contains(items, *m))
                                return "removing masks";
        }
        if (off == offsetof(struct run_config, apply_protect) && !append) {
                for (char **m = cur; m && *m; m++)
                        if (!profile_strv_contains(items, *m))
                                return "removing apply protections";
        }
        return NULL;
}

static const char *untrusted_scalar_refusal(const struct run_config *cfg, const struct profile_key *k)
{
        size_t off = k->offset;

        if (off == offsetof(struct run_config, net) && cfg->net != NET_NONE)
                return "network access";
        if (off == offsetof(struct run_config, seccomp_allow_ptrace) && cfg->seccomp_allow_ptrace)
                return "ptrace";
        if (off == offsetof(struct run_config, seccomp_allow_io_uring) && cfg->seccomp_allow_io_uring)
                return "io_uring";
        if (off == offsetof(struct run_config, seccomp_default_action) &&
            streq(cfg->seccomp_default_action, "log"))
                return "letting denied syscalls through";
        /* an image of hutch image is the caller's own store, no host path */
        if (off == offsetof(struct run_config, root) && !streq(cfg->root, "host") &&
            !profile_root_is_image(cfg->root))
                return "image layers (host paths)";
        return NULL;
}

static int refuse_untrusted(char **ret_error, const struct profile_key *k, const char *file, unsigned line,
                            const char *what)
{
        _cleanup_strv_ char **dirs = profile_search_dirs();
        _cleanup_free_ char *list_text = profile_dirs_text(dirs);
        return profile_fail(ret_error, -EPERM, where(k, NULL, ORIGIN_FILE_UNTRUSTED, file, line),
                            "%s: refused from a profile outside the trusted directories (%s); "
                            "put it there, pass --trust-profile, or give the value on the command line",
                            what, list_text);
}

/* Where a value came from, for its error message (where()). */
struct loc {
        enum origin origin;
        const char *file;
        unsigned line;
};
#define WHERE(k, at) where((k), NULL, (at)->origin, (at)->file, (at)->line)

/* A size, duration, count or number, within the key's bounds. */
static int set_number(const struct profile_key *k, void *f, const char *value, const struct loc *at,
                      char **ret_error)
{
        uint64_t v = 0;
        int r;

        if (!(k->zero && streq(value, k->zero))) {
                if (k->type == PROFILE_SIZE)
                        r = parse_size(value, &v);
                else if (k->type == PROFILE_DURATION)
                        r = parse_duration_ms(value, &v);
                else if (k->type == PROFILE_COUNT)
                        r = parse_count(value, &v);
                else
                        r = parse_milli(value, &v);
                /* parse_size() and parse_duration_ms() allow blanks
                 * around the number; the canonical form has none */
                if (r == 0 && (isspace((unsigned char)value[0]) ||
                               isspace((unsigned char)value[strlen(value) - 1])))
                        r = -EINVAL;
                if (r == -EINVAL)
                        return profile_fail(ret_error, -EINVAL, WHERE(k, at),
                                            "expected %s%s%s, got \"%s\"", type_expect(k),
                                            k->zero ? " or " : "", k->zero ? k->zero : "", value);
                if (r < 0 || v > k->max || v < k->min) {
                        _cleanup_free_ char *lo = format_plain(k, k->min);
                        _cleanup_free_ char *hi = format_plain(k, k->max);
                        return profile_fail(ret_error, -EINVAL, WHERE(k, at),
                                            "expected %s from %s to %s%s%s, got \"%s\"",
                                            type_noun(k), lo, hi, k->zero ? ", or " : "",
                                            k->zero ? k->zero : "", value);
                }
        }
        if (k->type == PROFILE_NUMBER)
                *(double *)f = (double)v / 1000.0;
        else if (k->width == sizeof(uint32_t))
                *(uint32_t *)f = (uint32_t)v;
        else
                *(uint64_t *)f = v;
        return 0;
}

/* One of the key's words, stored as its index. */
static int set_enum(const struct profile_key *k, void *f, const char *value, const struct loc *at,
                    char **ret_error)
{
        size_t i;
        for (i = 0; k->words[i]; i++)
                if (streq(k->words[i], value))
                        break;
        if (!k->words[i]) {
                _cleanup_free_ char *all = NULL;
                for (size_t j = 0; k->words[j]; j++) {
                        char *t = xasprintf("%s%s%s", all ? all : "", all ? ", " : "", k->words[j]);
                        free(all);
                        all = t;
                }
                return profile_fail(ret_error, -EINVAL, WHERE(k, at),
                                    "expected one of %s, got \"%s\"", all, value);
        }
        *(int *)f = (int)i;
        return 0;
}

/* A string, or text with its blanks collapsed, passing the key's check. */
static int set_string(const struct profile_key *k, void *f, const char *value, const struct loc *at,
                      char **ret_error)
{
        _cleanup_free_ char *s = k->type == PROFILE_TEXT ? collapse_blanks(value) : xstrdup(value);
        const char *expect = k->check ? k->check(s) : NULL;
        if (k->type == PROFILE_TEXT && profile_has_control(s))
                expect = "text without control characters";
        if (expect)
                return profile_fail(ret_error, -EINVAL, WHERE(k, at),
                                    "expected %s, got \"%s\"", expect, value);
        free(*(char **)f);
        *(char **)f = TAKE_PTR(s);
        return 0;
}

/* A list: its items checked, then set, appended (without duplicates) or,
 * for an empty value, cleared. An untrusted file may only narrow it. */
static int set_list(const struct profile_key *k, void *f, const char *value, bool append,
                    const struct loc *at, char **ret_error)
{
        _cleanup_strv_ char **items = NULL;
        const char *expect = NULL;
        char ***list = f;
        int r = 0;

        /* on the command line the shell already split words: one value
         * is one item */
        if (at->origin == ORIGIN_CLI) {
                if (value[0])
                        items = strv_append(NULL, value);
        } else
                r = split_list(value, &items, &expect);
        if (r < 0)
                return profile_fail(ret_error, r, WHERE(k, at), "expected %s, got \"%s\"", expect, value);
        for (char **i = items; i && *i; i++) {
                expect = k->check ? k->check(*i) : NULL;
                if (!expect && profile_has_control(*i))
                        expect = "items without control characters";
                if (expect)
                        return profile_fail(ret_error, -EINVAL, WHERE(k, at),
                                            "expected %s, got \"%s\"", expect, *i);
        }
        if (at->origin == ORIGIN_FILE_UNTRUSTED) {
                const char *why = untrusted_list_refusal(k, *list, items, append);
                if (why)
                        return refuse_untrusted(ret_error, k, at->file, at->line, why);
        }
        if (!items || !items[0] || !append) {
                /* an empty value clears the list, also when appending */
                strv_free(*list);
                *list = NULL;
        }
        for (char **i = items; i && *i; i++)
                if (!profile_strv_contains(*list, *i))
                        *list = strv_append(*list, *i);
        return 0;
}

/* Note where key k's value came from. On a stack buffer, not
 * profile_key_id(), and copied, not printed: this runs for every key of
 * every run, defaults included; section and name are short literals of
 * the table. */
static void set_origin(struct run_config *cfg, const struct profile_key *k, const struct loc *at)
{
        char id[128];
        size_t ls = strlen(k->section), ln = strlen(k->name), pos = 0;
        if (ls + ln + 2 > sizeof(id))
                abort();        /* a table entry too long: a programming error */
        if (ls) {
                memcpy(id, k->section, ls);
                id[ls] = '.';
                pos = ls + 1;
        }
        memcpy(id + pos, k->name, ln + 1);
        run_config_set_origin(cfg, id, at->origin, at->file, at->line);
}

int profile_set_value(struct run_config *cfg, const struct profile_key *k, const char *value,
                      bool append, enum origin origin, const char *file, unsigned line,
                      char **ret_error)
{
        const struct loc at = { origin, file, line };
        void *f = field(cfg, k);
        int r;

        if (has_comment_start(value) || (k->type != PROFILE_TEXT && k->type != PROFILE_LIST &&
                                         profile_has_control(value)))
                return profile_fail(ret_error, -EINVAL, WHERE(k, &at),
                                    "value may not contain control characters or \" ;\"");

        switch (k->type) {
        case PROFILE_SIZE:
        case PROFILE_DURATION:
        case PROFILE_COUNT:
        case PROFILE_NUMBER:
                r = set_number(k, f, value, &at, ret_error);
                break;
        case PROFILE_BOOL: {
                bool b;
                if (!parse_bool(value, &b))
                        return profile_fail(ret_error, -EINVAL, WHERE(k, &at),
                                            "expected yes or no, got \"%s\"", value);
                *(bool *)f = b;
                r = 0;
                break;
        }
        case PROFILE_ENUM:
                r = set_enum(k, f, value, &at, ret_error);
                break;
        case PROFILE_STRING:
        case PROFILE_TEXT:
                r = set_string(k, f, value, &at, ret_error);
                break;
        case PROFILE_LIST:
                r = set_list(k, f, value, append, &at, ret_error);
                break;
        default:
                return profile_fail(ret_error, -EINVAL, NULL, "internal error: bad key type");
        }
        if (r < 0)
                return r;

        if (origin == ORIGIN_FILE_UNTRUSTED) {
                const char *why = untrusted_scalar_refusal(cfg, k);
                if (why)
                        return refuse_untrusted(ret_error, k, file, line, why);
        }
        if (k->after)
                k->after(cfg);
        set_origin(cfg, k, &at);
        return 0;
}

void profile_apply_defaults(struct run_config *cfg)
{
        for (size_t i = 0; i < profile_n_keys; i++) {
                _cleanup_free_ char *err = NULL;
                if (profile_set_value(cfg, &profile_keys[i], profile_keys[i].def, false, ORIGIN_DEFAULT,
                                      NULL, 0, &err) < 0) {
                        fprintf(stderr, "hutch: BUG: bad built-in default: %s\n", err);
                        abort();
                }
        }
}

int profile_set_key(struct run_config *cfg, const char *key, const char *value,
                    enum origin origin, const char *file, unsigned line, char **ret_error)
{
        const struct profile_key *k;

        if (!key || !value)
                return profile_fail(ret_error, -EINVAL, NULL, "missing key or value");
        if (streq(key, "env")) {
                const char *eq = strchr(value, '=');
                _cleanup_free_ char *name = NULL;
                if (!eq)
                        return profile_fail(ret_error, -EINVAL, where(NULL, "env", origin, file, line),
                                            "expected NAME=VALUE, got \"%s\"", value);
                name = strndup(value, (size_t)(eq - value));
                if (!name)
                        return -ENOMEM;
                return profile_set_env(cfg, name, eq + 1, origin, file, line, ret_error);
        }
        if (startswith(key, "env."))
                return profile_set_env(cfg, key + 4, value, origin, file, line, ret_error);

        k = profile_key_find(key);
        if (!k)
                return profile_fail(ret_error, -ENOENT, where(NULL, key, origin, file, line), "unknown key");
        return profile_set_value(cfg, k, value, k->type == PROFILE_LIST && origin == ORIGIN_CLI,
                                 origin, file, line, ret_error);
}

/* The start of an error message about key, from where its value came. */
static char *where_set(const struct run_config *cfg, const struct profile_key *k)
{
        _cleanup_free_ char *id = profile_key_id(k);
        const struct key_origin *o = run_config_origin(cfg, id);

        if (!o)
                return where(k, NULL, ORIGIN_DEFAULT, NULL, 0);
        return where(k, NULL, o->origin, o->file, o->line);
}

int profile_validate(const struct run_config *cfg, char **ret_error)
{
        const struct profile_key *high = profile_key_find("memory_high");
        const struct profile_key *req = profile_key_find("require");

        if (cfg->memory_high_bytes > 0 && cfg->memory_bytes > 0 &&
            cfg->memory_high_bytes > cfg->memory_bytes) {
                char a[32], b[32];
                return profile_fail(ret_error, -EINVAL, where_set(cfg, high), "%s is above memory (%s)",
                                    format_size(cfg->memory_high_bytes, a, sizeof(a)),
                                    format_size(cfg->memory_bytes, b, sizeof(b)));
        }
        /* The workspace is bound at workdir after the system dirs: at or
         * above one it would hide it, and the job would find no /usr.
         * (Inside one is fine where the host has that directory.) Only
         * for the host's dirs: an image root has none. */
        for (char **d = cfg->ro_binds; cfg->workdir_inside && !cfg->root_layers && d && *d; d++)
                if (profile_path_within(*d, cfg->workdir_inside))
                        return profile_fail(ret_error, -EINVAL, where_set(cfg, profile_key_find("workdir")),
                                            "%s would hide the system dir %s", cfg->workdir_inside, *d);
        for (char **r = cfg->require; r && *r; r++) {
                const struct profile_key *k = profile_key_find(*r);
                _cleanup_free_ char *v = NULL;
                if (!k || !k->zero)
                        continue;
                v = profile_format_value(cfg, k);
                if (streq(v, "none"))
                        return profile_fail(ret_error, -EINVAL, where_set(cfg, req),
                                            "%s must be enforced but is set to none", *r);
        }
        return 0;
}

int profile_apply_cli(struct run_config *cfg, char *const *pairs, char **ret_error)
{
        for (; pairs && pairs[0] && pairs[1]; pairs += 2) {
                /* --image NAME is root = image:NAME */
                _cleanup_free_ char *image = streq(pairs[0], "image")
                                                     ? xasprintf("%s%s", PROFILE_IMAGE_PREFIX, pairs[1]) : NULL;
                int r = profile_set_key(cfg, image ? "root" : pairs[0], image ? image : pairs[1], ORIGIN_CLI,
                                        NULL, 0, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- values: field -> text ---------------------------------------------- */

static bool item_needs_quotes(const char *s)
{
        if (!*s)
                return true;
        for (; *s; s++)
                if (isspace((unsigned char)*s))
                        return true;
        return false;
}

static char *join_list(char *const *v)
{
        char *out = xstrdup("");
        for (; v && *v; v++) {
                bool q = item_needs_quotes(*v);
                char *t = xasprintf("%s%s%s%s%s", out, out[0] ? " " : "", q ? "\"" : "", *v, q ? "\"" : "");
                free(out);
                out = t;
        }
        return out;
}

char *profile_format_value(const struct run_config *cfg, const struct profile_key *k)
{
        const void *f = cfield(cfg, k);

        switch (k->type) {
        case PROFILE_SIZE:
        case PROFILE_DURATION:
        case PROFILE_COUNT:
                return format_number(k, k->width == sizeof(uint32_t) ? *(const uint32_t *)f
                                                                     : *(const uint64_t *)f);
        case PROFILE_NUMBER: {
                double d = *(const double *)f;
                return format_number(k, d <= 0 ? 0 : (uint64_t)(d * 1000.0 + 0.5));
        }
        case PROFILE_BOOL:
                return xstrdup(*(const bool *)f ? "yes" : "no");
        case PROFILE_ENUM: {
                int i = *(const int *)f;
                return xstrdup(i >= 0 && k->words[i] ? k->words[i] : "?");
        }
        case PROFILE_STRING:
        case PROFILE_TEXT: {
                const char *s = *(char *const *)f;
                return xstrdup(s ? s : "");
        }
        case PROFILE_LIST:
                return join_list(*(char **const *)f);
        default:
                return xstrdup("");
        }
}
