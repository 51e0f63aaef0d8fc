/* seccomp.c - builds the job's syscall policy (see seccomp.h) from a
 * seccomp_settings and the groups in $HUTCH_DATADIR/seccomp.ini: reads
 * the groups file, expands the settings' names and @groups into a set of
 * native syscall numbers, and hands that set to seccomp-rules.c, which
 * adds the rules of the two filters. Also here: the built-in profiles'
 * settings, loading and dumping a built policy, and the groups check.
 *
 * Shape of the work: this runs once per `hutch run`, in the supervisor.
 * The groups file is ~450 short lines; parsing it, expanding the lists
 * into a bitmap of native syscall numbers (a few hundred bits) and adding
 * one libseccomp rule per set bit costs well under a millisecond; loading
 * (BPF generation plus two prctl calls) about as much again. Building
 * keeps nothing between runs: the file is the single source of truth
 * (seccomp-cache.c remembers only the compiled result, keyed by the
 * file's identity among the other inputs).
 *
 * The safety arguments of the rules that cannot be written as names are
 * in seccomp-rules.c; those of the names are in seccomp.ini.
 */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"

/* Groups may include groups; deeper than this is a cycle or a mistake. */
#define GROUP_DEPTH_MAX 8

struct group {
        char *name;             /* "@mount" */
        char *description;
        char **members;         /* syscall names, "?name" or "@group" */
};

struct group_table {
        struct group *groups;
        size_t n;
        char *path;
        char *current;          /* section of the previous key, to spot reopened sections */
        char *error;            /* first parse error (without location) */
};

static void sysset_done(struct sysset *s)
{
        free(s->words);
        s->words = NULL;
        s->n = 0;
}

static void sysset_add(struct sysset *s, int nr)
{
        size_t w = (size_t)nr / 64;
        if (w >= s->n) {
                size_t n = MAX(w + 1, 8);
                s->words = xrealloc(s->words, n * sizeof(uint64_t));
                memset(s->words + s->n, 0, (n - s->n) * sizeof(uint64_t));
                s->n = n;
        }
        s->words[w] |= UINT64_C(1) << (nr % 64);
}

bool seccomp_sysset_has(const struct sysset *s, int nr)
{
        size_t w = (size_t)nr / 64;
        return nr >= 0 && w < s->n && (s->words[w] & (UINT64_C(1) << (nr % 64)));
}

static void sysset_del(struct sysset *s, int nr)
{
        size_t w = (size_t)nr / 64;
        if (nr >= 0 && w < s->n)
                s->words[w] &= ~(UINT64_C(1) << (nr % 64));
}

static void sysset_subtract(struct sysset *s, const struct sysset *t)
{
        for (size_t i = 0; i < MIN(s->n, t->n); i++)
                s->words[i] &= ~t->words[i];
}

static void sysset_union(struct sysset *s, const struct sysset *t)
{
        for (size_t i = 0; i < t->n; i++)
                for (int b = 0; b < 64; b++)
                        if (t->words[i] & (UINT64_C(1) << b))
                                sysset_add(s, (int)(i * 64 + b));
}

static unsigned sysset_count(const struct sysset *s)
{
        unsigned c = 0;
        for (size_t i = 0; i < s->n; i++)
                c += (unsigned)__builtin_popcountll(s->words[i]);
        return c;
}

/* Set *ret_error (if wanted) to "seccomp: " + message, return error. */
int seccomp_fail(char **ret_error, int error, const char *fmt, ...)
{
        va_list ap;
        char *msg;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(&msg, fmt, ap) < 0)
                        msg = NULL;
                va_end(ap);
                *ret_error = xasprintf("seccomp: %s", msg ? msg : "out of memory");
                free(msg);
        }
        return error;
}

static void group_table_done(struct group_table *t)
{
        for (size_t i = 0; i < t->n; i++) {
                free(t->groups[i].name);
                free(t->groups[i].description);
                strv_free(t->groups[i].members);
        }
        free(t->groups);
        free(t->path);
        free(t->current);
        free(t->error);
        memset(t, 0, sizeof(*t));
}

static struct group *group_find(const struct group_table *t, const char *name)
{
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->groups[i].name, name))
                        return &t->groups[i];
        return NULL;
}

/* inih callback: one `member = reason` or `description = text` line.
 * Returns 0 (inih's "error on this line") with t->error set. */
static int groups_handler(void *user, const char *section, const char *name, const char *value)
{
        struct group_table *t = user;
        struct group *g;

        if (t->error)
                return 1;       /* report only the first error */
        if (section[0] != '@' || section[1] == '\0') {
                t->error = xasprintf("group names start with @, not \"%s\"", section);
                return 0;
        }
        g = group_find(t, section);
        if (!t->current || !streq(t->current, section)) {
                if (g) {
                        t->error = xasprintf("group %s is defined twice", section);
                        return 0;
                }
                free(t->current);
                t->current = xstrdup(section);
        }
        if (!g) {
                t->groups = xrealloc(t->groups, (t->n + 1) * sizeof(*t->groups));
                g = &t->groups[t->n++];
                *g = (struct group) { .name = xstrdup(section) };
        }
        if (streq(name, "description")) {
                free(g->description);
                g->description = xstrdup(value);
                return 1;
        }
        if (name[0] == '\0' || strpbrk(name, " \t")) {
                t->error = xasprintf("bad member \"%s\" in %s", name, section);
                return 0;
        }
        g->members = strv_append(g->members, name);
        return 1;
}

char *seccomp_groups_path(void)
{
        const char *dir = getenv("HUTCH_DATADIR");
        if (!dir || !*dir)
                dir = HUTCH_DATADIR;
        return xasprintf("%s/seccomp.ini", dir);
}

static int group_table_load(struct group_table *t, char **ret_error)
{
        _cleanup_fclose_ FILE *f = NULL;
        int line;

        memset(t, 0, sizeof(*t));
        t->path = seccomp_groups_path();
        f = fopen(t->path, "re");
        if (!f) {
                int r = seccomp_fail(ret_error, -errno, "%s: %s", t->path, strerror(errno));
                group_table_done(t);
                return r;
        }
        line = ini_parse_file(f, groups_handler, t);
        if (line != 0) {
                int r;
                if (line > 0)
                        r = seccomp_fail(ret_error, -EINVAL, "%s:%d: %s", t->path, line,
                                         t->error ? t->error : "syntax error");
                else
                        r = seccomp_fail(ret_error, -ENOMEM, "%s: cannot parse", t->path);
                group_table_done(t);
                return r;
        }
        return 0;
}

/* Resolve one token (syscall name, "?name" or "@group") into set.
 * `where` names the group the token came from, for messages. */
static int expand(const struct group_table *t, const char *token, struct sysset *set,
                  const char *where, int depth, char **ret_error)
{
        bool optional = false;
        int nr;

        if (token[0] == '@') {
                const struct group *g = group_find(t, token);
                if (!g) {
                        if (where)
                                return seccomp_fail(ret_error, -EINVAL, "%s: %s: unknown group \"%s\"",
                                                    t->path, where, token);
                        return seccomp_fail(ret_error, -EINVAL, "unknown syscall or group \"%s\"", token);
                }
                if (depth >= GROUP_DEPTH_MAX)
                        return seccomp_fail(ret_error, -ELOOP, "%s: group %s nests too deep (a cycle?)",
                                            t->path, token);
                for (char **m = g->members; m && *m; m++) {
                        int r = expand(t, *m, set, g->name, depth + 1, ret_error);
                        if (r < 0)
                                return r;
                }
                return 0;
        }

        /* "?" is for the groups file only: a user's own list names
         * what this hutch knows, and a typo there must be an error. */
        if (token[0] == '?' && where) {
                optional = true;
                token++;
        }
        nr = seccomp_syscall_resolve_name(token);
        if (nr == __NR_SCMP_ERROR) {
                if (optional)
                        return 0;       /* newer than this libseccomp: the future rule covers it */
                if (where)
                        return seccomp_fail(ret_error, -EINVAL, "%s: %s: unknown syscall \"%s\"",
                                            t->path, where, token);
                return seccomp_fail(ret_error, -EINVAL, "unknown syscall or group \"%s\"", token);
        }
        if (nr < 0)
                return 0;               /* exists on other architectures only */
        sysset_add(set, nr);
        return 0;
}

static int expand_list(const struct group_table *t, char *const *list, struct sysset *set,
                       char **ret_error)
{
        for (char *const *p = list; p && *p; p++) {
                int r = expand(t, *p, set, NULL, 0, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

int seccomp_parse_action(const char *s, uint32_t *ret, const char **ret_name)
{
        if (!s || streq(s, "errno")) {
                *ret = SCMP_ACT_ERRNO(EPERM);
                *ret_name = "errno";
        } else if (streq(s, "kill")) {
                /* The whole process, not one thread: a half-killed
                 * multithreaded job would be a confusing failure. */
                *ret = SCMP_ACT_KILL_PROCESS;
                *ret_name = "kill";
        } else if (streq(s, "log")) {
                *ret = SCMP_ACT_LOG;
                *ret_name = "log";
        } else {
                return -EINVAL;
        }
        return 0;
}

struct seccomp_policy *seccomp_policy_free(struct seccomp_policy *p)
{
        if (!p)
                return NULL;
        if (p->names)
                seccomp_release(p->names);
        if (p->args)
                seccomp_release(p->args);
        free(p);
        return NULL;
}

int seccomp_policy_build(const struct seccomp_settings *s, struct seccomp_policy **ret,
                         struct seccomp_report *ret_report, char **ret_error)
{
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        struct group_table t = {};
        struct sysset deny = {}, allow = {}, extra = {};
        struct builder names = {}, args = {};
        const char *action_name;
        const char *arch_name;
        uint32_t action, enosys;
        int r;

        if (seccomp_parse_action(s->default_action, &action, &action_name) < 0)
                return seccomp_fail(ret_error, -EINVAL, "unknown action \"%s\" (use errno, kill or log)",
                                    s->default_action);
        /* In log mode nothing is enforced, ENOSYS answers included. */
        enosys = action == SCMP_ACT_LOG ? SCMP_ACT_LOG : SCMP_ACT_ERRNO(ENOSYS);

        r = group_table_load(&t, ret_error);
        if (r < 0)
                return r;
        r = expand_list(&t, s->deny, &deny, ret_error);
        if (r < 0)
                goto out;
        r = expand_list(&t, s->allow, &allow, ret_error);
        if (r < 0)
                goto out;
        /* The switches lift whole groups, in either mode. */
        if (s->allow_ptrace && (r = expand(&t, "@ptrace", &extra, NULL, 0, ret_error)) < 0)
                goto out;
        if (s->allow_io_uring && (r = expand(&t, "@io_uring", &extra, NULL, 0, ret_error)) < 0)
                goto out;
        if (s->allow_namespaces && (r = expand(&t, "@namespaces", &extra, NULL, 0, ret_error)) < 0)
                goto out;

        /* The mode's own list is the base; the other list carves
         * exceptions out of it; the switches act last. */
        if (s->allow_list_mode) {
                sysset_subtract(&allow, &deny);
                sysset_union(&allow, &extra);
                if (s->allow_namespaces)
                        sysset_add(&allow, SCMP_SYS(clone3));
        } else {
                sysset_subtract(&deny, &allow);
                sysset_subtract(&deny, &extra);
                if (s->allow_namespaces)
                        sysset_del(&deny, SCMP_SYS(clone3));
        }

        p = xcalloc(1, sizeof(*p));
        names.default_action = s->allow_list_mode ? action : SCMP_ACT_ALLOW;
        names.ctx = p->names = seccomp_filter_new(names.default_action, action);
        args.default_action = SCMP_ACT_ALLOW;
        args.ctx = p->args = seccomp_filter_new(args.default_action, action);
        if (!p->names || !p->args) {
                r = seccomp_fail(ret_error, -ENOMEM, "cannot create a filter");
                goto out;
        }
        r = seccomp_build_names_filter(&names, s, s->allow_list_mode ? &allow : &deny, action, enosys,
                                       &p->future);
        if (r >= 0)
                r = seccomp_build_args_filter(&args, s, action, &p->personality);
        if (r < 0) {
                r = seccomp_fail(ret_error, r, "cannot add a rule: %s", strerror(-r));
                goto out;
        }

        if (ret_report) {
                memset(ret_report, 0, sizeof(*ret_report));
                snprintf(ret_report->policy, sizeof(ret_report->policy), "%s",
                         s->name ? s->name : "custom");
                ret_report->action = action_name;
                ret_report->mode = s->allow_list_mode ? "allow-list" : "deny-list";
                arch_name = "native";
                switch (seccomp_arch_native()) {
                case SCMP_ARCH_X86_64: arch_name = "x86_64"; break;
                case SCMP_ARCH_AARCH64: arch_name = "aarch64"; break;
                case SCMP_ARCH_X86: arch_name = "x86"; break;
                case SCMP_ARCH_ARM: arch_name = "arm"; break;
                case SCMP_ARCH_PPC64LE: arch_name = "ppc64le"; break;
                case SCMP_ARCH_S390X: arch_name = "s390x"; break;
                case SCMP_ARCH_RISCV64: arch_name = "riscv64"; break;
                }
                ret_report->arch = arch_name;
                ret_report->syscalls = sysset_count(s->allow_list_mode ? &allow : &deny);
                ret_report->rules = names.rules + args.rules;
        }
        *ret = TAKE_PTR(p);
        r = 0;
out:
        sysset_done(&deny);
        sysset_done(&allow);
        sysset_done(&extra);
        group_table_done(&t);
        return r;
}

int seccomp_policy_dump(const struct seccomp_policy *p, int fd)
{
        static const char names_hdr[] = "# filter 1 of 2: by syscall name\n";
        static const char args_hdr[] = "# filter 2 of 2: by argument\n";
        int r;

        if (!p)
                return -EINVAL;
        r = write_all(fd, names_hdr, sizeof(names_hdr) - 1);
        if (r < 0)
                return r;
        if (p->future.n > 0) {
                /* a test in front of the filter below (seccomp_future_prefix()) */
                char line[160];
                snprintf(line, sizeof(line),
                         "# first, for the native arch: if ($syscall >= %d && $syscall < %d) action 0x%08x"
                         " (newer than libseccomp)\n",
                         p->future.first, p->future.first + p->future.n, p->future.action);
                r = write_all(fd, line, strlen(line));
                if (r < 0)
                        return r;
        }
        r = seccomp_export_pfc(p->names, fd);
        if (r < 0)
                return r;
        r = write_all(fd, args_hdr, sizeof(args_hdr) - 1);
        if (r < 0)
                return r;
        if (p->personality.on) {
                /* a test in front of the filter below (seccomp_personality_prefix()) */
                char line[200];
                snprintf(line, sizeof(line),
                         "# first, for the native arch: if ($syscall == \"personality\" && (uint32)$a0 != 0 && "
                         "(uint32)$a0 != 0xffffffff%s) action 0x%08x\n",
                         p->personality.aslr_off_ok ? " && (uint32)$a0 != 0x0040000" : "", p->personality.action);
                r = write_all(fd, line, strlen(line));
                if (r < 0)
                        return r;
        }
        return seccomp_export_pfc(p->args, fd);
}

int seccomp_groups_check(char **ret_error)
{
        struct group_table t = {};
        struct sysset set = {};
        int r;

        r = group_table_load(&t, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < t.n; i++) {
                if (!t.groups[i].description || !*t.groups[i].description) {
                        r = seccomp_fail(ret_error, -EINVAL, "%s: group %s has no description",
                                         t.path, t.groups[i].name);
                        goto out;
                }
                r = expand(&t, t.groups[i].name, &set, NULL, 0, ret_error);
                if (r < 0)
                        goto out;
        }
        r = (int)t.n;
out:
        sysset_done(&set);
        group_table_done(&t);
        return r;
}

int seccomp_settings_default(struct seccomp_settings *s)
{
        *s = (struct seccomp_settings) {
                .name = xstrdup("default"),
                .default_action = xstrdup("errno"),
                .deny = strv_append(NULL, "@hutch-deny"),
        };
        return 0;
}

int seccomp_settings_strict(struct seccomp_settings *s)
{
        *s = (struct seccomp_settings) {
                .name = xstrdup("strict"),
                .default_action = xstrdup("errno"),
                .allow = strv_append(NULL, "@hutch-strict"),
                .deny = strv_append(NULL, "@hutch-deny"),
                .allow_list_mode = true,
        };
        return 0;
}

void seccomp_settings_done(struct seccomp_settings *s)
{
        free(s->name);
        free(s->default_action);
        strv_free(s->deny);
        strv_free(s->allow);
        memset(s, 0, sizeof(*s));
}
