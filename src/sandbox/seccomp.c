/* seccomp.c - builds the job's syscall policy (see seccomp.h) from a
 * seccomp_settings and the groups in $HUTCH_DATADIR/seccomp.ini.
 *
 * Shape of the work: this runs once per `hutch run`, in the supervisor.
 * The groups file is ~450 short lines; parsing it, expanding the lists
 * into a bitmap of native syscall numbers (a few hundred bits) and adding
 * one libseccomp rule per set bit costs well under a millisecond; loading
 * (BPF generation plus two prctl calls) about as much again. Nothing is
 * cached between runs: the file is the single source of truth.
 *
 * Safety arguments. Every deny rule that comes from a name is argued in
 * seccomp.ini next to the name. The rules that cannot be written as names
 * are here, each with its argument next to the code that adds it:
 * CLONE_NEW* flags, clone3, TIOCSTI/TIOCLINUX, personality, syscalls
 * newer than libseccomp, and foreign architectures.
 */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "lib/digest.h"
#include "sandbox/seccomp.h"
#include "lib/util.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Groups may include groups; deeper than this is a cycle or a mistake. */
#define GROUP_DEPTH_MAX 8

/* How many syscall numbers past the last one libseccomp can name get
 * ENOSYS. The kernel adds 10-15 a year; 64 covers several years of
 * kernels newer than the libseccomp hutch was built with. */
#define FUTURE_SYSCALLS 64

/* New syscalls share one numbering on all current architectures from
 * 424 (pidfd_send_signal) on; the future range is searched from there. */
#define UNIFIED_SYSCALL_BASE 424

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

struct seccomp_policy {
        scmp_filter_ctx names;  /* deny-list or allow-list by syscall number */
        scmp_filter_ctx args;   /* argument rules only; default allow */
};

/* A set of native syscall numbers. Native numbers are small and dense
 * (x86_64: < 512); a bitmap grows to the largest member. */
struct sysset {
        uint64_t *words;
        size_t n;
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

static bool sysset_has(const struct sysset *s, int nr)
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
static int fail(char **ret_error, int error, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int error, const char *fmt, ...)
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

static char *groups_path(void)
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
        t->path = groups_path();
        f = fopen(t->path, "re");
        if (!f) {
                int r = fail(ret_error, -errno, "%s: %s", t->path, strerror(errno));
                group_table_done(t);
                return r;
        }
        line = ini_parse_file(f, groups_handler, t);
        if (line != 0) {
                int r;
                if (line > 0)
                        r = fail(ret_error, -EINVAL, "%s:%d: %s", t->path, line,
                                 t->error ? t->error : "syntax error");
                else
                        r = fail(ret_error, -ENOMEM, "%s: cannot parse", t->path);
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
                                return fail(ret_error, -EINVAL, "%s: %s: unknown group \"%s\"",
                                            t->path, where, token);
                        return fail(ret_error, -EINVAL, "unknown syscall or group \"%s\"", token);
                }
                if (depth >= GROUP_DEPTH_MAX)
                        return fail(ret_error, -ELOOP, "%s: group %s nests too deep (a cycle?)",
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
                        return fail(ret_error, -EINVAL, "%s: %s: unknown syscall \"%s\"",
                                    t->path, where, token);
                return fail(ret_error, -EINVAL, "unknown syscall or group \"%s\"", token);
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

static int parse_action(const char *s, uint32_t *ret, const char **ret_name)
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

/* A filter for the native architecture only. Every syscall made under
 * another architecture's convention takes `deny`: on x86_64 that is an
 * i386 `int 0x80` (audit arch I386, checked by the arch test at the top
 * of the filter) and an x32 call (arch X86_64 with nr >= 0x40000000,
 * which libseccomp sends to the bad-arch action when, as here, x32 is
 * not among the filter's architectures). Without this an i386 or x32
 * call would reach syscalls by numbers the native rules never mention.
 * The arch list is the native one only: we never seccomp_arch_add(). */
static scmp_filter_ctx filter_new(uint32_t default_action, uint32_t deny)
{
        scmp_filter_ctx ctx = seccomp_init(default_action);
        if (!ctx)
                return NULL;
        if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny) < 0 ||
            seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) < 0) {
                seccomp_release(ctx);
                return NULL;
        }
        /* Optional niceties: a binary tree of syscall numbers (faster
         * for long lists) and real kernel errnos from seccomp_load().
         * Older kernels or libseccomps without them are fine. */
        (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        (void)seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
        return ctx;
}

struct builder {
        scmp_filter_ctx ctx;
        uint32_t default_action;
        unsigned rules;
};

/* Add one rule; a rule whose action equals the filter's default is
 * redundant (libseccomp refuses it with EACCES) and is skipped. */
static int rule(struct builder *b, uint32_t action, int nr, unsigned n_args,
                const struct scmp_arg_cmp *args)
{
        int r;

        if (action == b->default_action)
                return 0;
        r = seccomp_rule_add_array(b->ctx, action, nr, n_args, args);
        if (r < 0)
                return r;
        b->rules++;
        return 0;
}

/* The CLONE_NEW* flags that clone() can carry. CLONE_NEWTIME (0x80)
 * sits in clone()'s exit-signal byte and is only meaningful to unshare()
 * and clone3(); it is listed separately for unshare. */
static const uint64_t clone_new_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/* The argument filter: default allow, and deny only on arguments. */
static int build_args_filter(struct builder *b, const struct seccomp_settings *s, uint32_t deny)
{
        struct scmp_arg_cmp cmp;
        int r;

        if (!s->allow_namespaces) {
                /* Nested namespaces. A new user namespace hands its
                 * creator a full capability set over fresh namespaces,
                 * which re-opens every kernel path (mount, netfilter,
                 * overlayfs...) that capabilities were dropped to close;
                 * the other CLONE_NEW* need a user namespace anyway but
                 * are denied the same way for one clear rule. A job that
                 * only uses clone() for threads and fork never sets
                 * these bits. One rule per bit: libseccomp ORs rules and
                 * allows only one comparison per argument in a rule.
                 * clone's flags are a full unsigned long, compared as
                 * 64-bit masks: no upper-bit trick can hide a set bit. */
                for (size_t i = 0; i < ELEMENTSOF(clone_new_flags); i++) {
                        cmp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, clone_new_flags[i], clone_new_flags[i]);
                        r = rule(b, deny, SCMP_SYS(clone), 1, &cmp);
                        if (r < 0)
                                return r;
                }
                /* unshare: same flags plus CLONE_NEWTIME. unshare without
                 * them (CLONE_FILES, CLONE_FS, CLONE_SYSVSEM) only
                 * unshares the caller's own state and stays allowed. */
                for (size_t i = 0; i <= ELEMENTSOF(clone_new_flags); i++) {
                        uint64_t flag = i < ELEMENTSOF(clone_new_flags) ? clone_new_flags[i] : CLONE_NEWTIME;
                        cmp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag);
                        r = rule(b, deny, SCMP_SYS(unshare), 1, &cmp);
                        if (r < 0)
                                return r;
                }
        }

        /* Terminal injection. TIOCSTI pushes bytes into a terminal's
         * input queue: a job sharing the user's tty (hutch run -t, or an
         * inherited one) could type commands into the shell that runs
         * after it exits. TIOCLINUX can do the same on a virtual console
         * (selection paste) and read its screen. The kernel takes the
         * request as unsigned int, so only the low 32 bits are compared:
         * a request of 0x100005412 is TIOCSTI to the kernel and must be
         * denied too (a plain 64-bit == would let it through). */
        cmp = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI);
        r = rule(b, deny, SCMP_SYS(ioctl), 1, &cmp);
        if (r < 0)
                return r;
        cmp = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX);
        r = rule(b, deny, SCMP_SYS(ioctl), 1, &cmp);
        if (r < 0)
                return r;

        /* Personality. Only the default persona (PER_LINUX, 0) and the
         * query (0xffffffff) are allowed. Other personas and flags turn
         * off ASLR (ADDR_NO_RANDOMIZE), make readable memory executable
         * (READ_IMPLIES_EXEC), map page zero (MMAP_PAGE_ZERO: NULL-
         * dereference exploits) or switch to emulated ABIs. The kernel
         * takes an unsigned int, so only the low 32 bits count. "Neither
         * all zeros nor all ones" cannot be one libseccomp rule (one
         * comparison per argument), so it is said bit by bit: x is
         * neither iff some bit i (1..31) differs from bit 0, i.e. the
         * pair (bit i, bit 0) reads 10 or 01. 62 masked comparisons, all
         * under the personality branch: no cost for other syscalls.
         *
         * allow_ptrace also lets ADDR_NO_RANDOMIZE alone (0x0040000)
         * through: debuggers (gdb, setarch -R) turn ASLR off for the
         * program they start, and a user who allowed tracing asked for
         * them. It weakens only the job's own processes, which can gain
         * no privilege by exec (no_new_privs; the kernel also clears the
         * flag on a set-id exec). Its rule keeps only "01", so bit 18
         * may be set while bit 0 is clear; any other bit set beside it
         * still reads "10" at that bit. */
        for (int i = 1; i < 32; i++) {
                uint64_t mask = (UINT64_C(1) << i) | 1;
                bool aslr_off_ok = s->allow_ptrace && (UINT64_C(1) << i) == ADDR_NO_RANDOMIZE;
                cmp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, mask, UINT64_C(1) << i);
                r = aslr_off_ok ? 0 : rule(b, deny, SCMP_SYS(personality), 1, &cmp);
                if (r < 0)
                        return r;
                cmp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, mask, 1);
                r = rule(b, deny, SCMP_SYS(personality), 1, &cmp);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* First native syscall number past everything libseccomp can name, or
 * -1 when the architecture does not use the unified numbering. */
static int first_future_syscall(void)
{
        uint32_t arch = seccomp_arch_native();
        int nr = UNIFIED_SYSCALL_BASE;
        char *name;

        name = seccomp_syscall_resolve_num_arch(arch, nr);
        if (!name)
                return -1;
        do {
                free(name);
                name = seccomp_syscall_resolve_num_arch(arch, ++nr);
        } while (name);
        return nr;
}

static int build_names_filter(struct builder *b, const struct seccomp_settings *s,
                              const struct sysset *base, uint32_t deny, uint32_t enosys)
{
        int clone3_nr = SCMP_SYS(clone3);
        int future;
        int r;

        for (size_t i = 0; i < base->n; i++) {
                for (int bit = 0; bit < 64; bit++) {
                        int nr = (int)(i * 64 + bit);
                        if (!sysset_has(base, nr))
                                continue;
                        if (s->allow_list_mode && nr == clone3_nr && !s->allow_namespaces)
                                continue;       /* answered below */
                        /* Deny-list: `deny` for each listed syscall, the
                         * reason is in seccomp.ini. Allow-list: the
                         * listed syscall is allowed, reason likewise. */
                        r = rule(b, s->allow_list_mode ? SCMP_ACT_ALLOW : deny, nr, 0, NULL);
                        if (r < 0)
                                return r;
                }
        }

        /* clone3 passes its flags in a struct in memory, which seccomp
         * cannot read, so CLONE_NEW* cannot be filtered there. ENOSYS
         * (not EPERM) is what makes glibc and musl fall back to clone(),
         * where the argument filter sees the flags. This holds under the
         * kill action too: killing every thread start would be absurd.
         * Skipped when the user denied clone3 by name (deny-list) or when
         * namespaces are allowed. */
        if (!s->allow_namespaces && !(!s->allow_list_mode && sysset_has(base, clone3_nr))) {
                r = rule(b, enosys, clone3_nr, 0, NULL);
                if (r < 0)
                        return r;
        }

        /* Syscalls newer than this libseccomp. A deny-list can only name
         * what it knows; a new kernel's new syscalls (another mount API
         * call, say) would otherwise be allowed by default. ENOSYS is
         * what the job would see on an older kernel, so libc falls back
         * to the old calls. */
        future = first_future_syscall();
        for (int nr = future; future >= 0 && nr < future + FUTURE_SYSCALLS; nr++) {
                if (sysset_has(base, nr))
                        continue;
                r = rule(b, enosys, nr, 0, NULL);
                if (r < 0)
                        return r;
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

        if (parse_action(s->default_action, &action, &action_name) < 0)
                return fail(ret_error, -EINVAL, "unknown action \"%s\" (use errno, kill or log)",
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
        names.ctx = p->names = filter_new(names.default_action, action);
        args.default_action = SCMP_ACT_ALLOW;
        args.ctx = p->args = filter_new(args.default_action, action);
        if (!p->names || !p->args) {
                r = fail(ret_error, -ENOMEM, "cannot create a filter");
                goto out;
        }
        r = build_names_filter(&names, s, s->allow_list_mode ? &allow : &deny, action, enosys);
        if (r >= 0)
                r = build_args_filter(&args, s, action);
        if (r < 0) {
                r = fail(ret_error, r, "cannot add a rule: %s", strerror(-r));
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

int seccomp_policy_load(const struct seccomp_policy *p)
{
        int r;

        if (!p || !p->names || !p->args)
                return -EINVAL;
        /* Argument filter first: if the second load fails the job is
         * not exec'ed anyway, and the first one only ever denies. */
        r = seccomp_load(p->args);
        if (r < 0)
                return r;
        return seccomp_load(p->names);
}

/* Blob layout: magic, instruction counts of the argument filter and the
 * name filter, then both programs back to back (argument filter first,
 * the order seccomp_policy_load() installs them in). */
#define BLOB_MAGIC 0x68757463u  /* "hutc" */
struct blob_header {
        uint32_t magic;
        uint32_t n_args;
        uint32_t n_names;
};

static int export_one(scmp_filter_ctx ctx, int memfd, size_t *ret_insns)
{
        off_t start = lseek(memfd, 0, SEEK_END);
        if (start < 0)
                return -errno;
        int r = seccomp_export_bpf(ctx, memfd);
        if (r < 0)
                return r;
        off_t end = lseek(memfd, 0, SEEK_END);
        if (end < 0)
                return -errno;
        if ((end - start) % (off_t)sizeof(struct sock_filter))
                return -EIO;
        *ret_insns = (size_t)(end - start) / sizeof(struct sock_filter);
        return 0;
}

int seccomp_policy_export(const struct seccomp_policy *p, void **ret, size_t *ret_len)
{
        size_t n_args, n_names;
        int r;

        if (!p || !p->names || !p->args)
                return -EINVAL;
        _cleanup_close_ int fd = memfd_create("hutch-bpf", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct blob_header h = { .magic = BLOB_MAGIC };
        r = write_all(fd, &h, sizeof(h));
        if (r < 0)
                return r;
        r = export_one(p->args, fd, &n_args);
        if (r < 0)
                return r;
        r = export_one(p->names, fd, &n_names);
        if (r < 0)
                return r;
        size_t len = sizeof(h) + (n_args + n_names) * sizeof(struct sock_filter);
        char *buf = xmalloc(len);
        if (pread(fd, buf, len, 0) != (ssize_t)len) {
                free(buf);
                return -EIO;
        }
        h.n_args = (uint32_t)n_args;
        h.n_names = (uint32_t)n_names;
        memcpy(buf, &h, sizeof(h));
        *ret = buf;
        *ret_len = len;
        return 0;
}

int seccomp_blob_load(const void *blob, size_t len)
{
        struct blob_header h;

        if (!blob || len < sizeof(h))
                return -EINVAL;
        memcpy(&h, blob, sizeof(h));
        /* BPF_MAXINSNS bounds each program; the kernel checks the rest */
        if (h.magic != BLOB_MAGIC || h.n_args == 0 || h.n_names == 0 ||
            h.n_args > BPF_MAXINSNS || h.n_names > BPF_MAXINSNS ||
            len != sizeof(h) + ((size_t)h.n_args + h.n_names) * sizeof(struct sock_filter))
                return -EINVAL;
        /* the programs start 12 bytes in: copy them to aligned memory */
        size_t n = (size_t)h.n_args + h.n_names;
        _cleanup_free_ struct sock_filter *insns = xmalloc(n * sizeof(*insns));
        memcpy(insns, (const char *)blob + sizeof(h), n * sizeof(*insns));
        struct sock_fprog args = { .len = (unsigned short)h.n_args, .filter = insns };
        struct sock_fprog names = { .len = (unsigned short)h.n_names, .filter = insns + h.n_args };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &args) < 0)
                return -errno;
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &names) < 0)
                return -errno;
        return 0;
}

/* ---- the id shim ----------------------------------------------------------
 *
 * Inside the sandbox exactly one uid and one gid are mapped. Asking the
 * kernel for any other id (setuid(0), chown(f, 0, -1)...) fails with
 * EINVAL there, "no such id in this namespace", where an ordinary
 * unprivileged process gets EPERM. Programs and their test suites
 * (CPython's test_os and test_subprocess among them) check for EPERM
 * and take EINVAL for a bug. This filter answers those calls with
 * EPERM before the kernel sees an unmapped id.
 *
 * Why it is safe: it only turns calls that would fail anyway into the
 * same failure with another errno; calls naming our own id or -1 ("leave
 * unchanged") pass to the kernel untouched. It adds no permission. Ids
 * are compared on their low 32 bits, as the kernel reads uid_t and
 * gid_t. Only the native architecture is looked at: the main filter
 * refuses every foreign one. Hand-written BPF because libseccomp allows
 * one comparison per argument in a rule, and "neither ours nor -1" is
 * two. */

enum id_kind { ID_UID, ID_GID };
struct id_arg { unsigned char arg; unsigned char kind; };
struct id_call { int nr; unsigned char n; struct id_arg args[3]; };

static const struct id_call id_calls[] = {
        { SYS_setuid, 1, { { 0, ID_UID } } },
        { SYS_setgid, 1, { { 0, ID_GID } } },
        { SYS_setreuid, 2, { { 0, ID_UID }, { 1, ID_UID } } },
        { SYS_setregid, 2, { { 0, ID_GID }, { 1, ID_GID } } },
        { SYS_setresuid, 3, { { 0, ID_UID }, { 1, ID_UID }, { 2, ID_UID } } },
        { SYS_setresgid, 3, { { 0, ID_GID }, { 1, ID_GID }, { 2, ID_GID } } },
#ifdef SYS_chown
        { SYS_chown, 2, { { 1, ID_UID }, { 2, ID_GID } } },
#endif
#ifdef SYS_lchown
        { SYS_lchown, 2, { { 1, ID_UID }, { 2, ID_GID } } },
#endif
        { SYS_fchown, 2, { { 1, ID_UID }, { 2, ID_GID } } },
        { SYS_fchownat, 2, { { 2, ID_UID }, { 3, ID_GID } } },
};

/* The low 32 bits of argument i in struct seccomp_data. */
static uint32_t arg_low_offset(unsigned i)
{
        uint32_t off = (uint32_t)offsetof(struct seccomp_data, args) + 8 * i;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        off += 4;
#endif
        return off;
}

int seccomp_id_shim_build(uint32_t uid, uint32_t gid, struct sock_filter *insns, size_t max, size_t *ret_n)
{
        size_t n = 0;
#define EMIT(...) do { if (n >= max) return -E2BIG; insns[n++] = (struct sock_filter)__VA_ARGS__; } while (0)
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
        for (size_t i = 0; i < ELEMENTSOF(id_calls); i++) {
                const struct id_call *c = &id_calls[i];
                /* per id: load it; ours or -1 goes on to the next; else EPERM */
                unsigned block = 4u * c->n + 1;
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)c->nr, 0, (unsigned char)block));
                for (unsigned a = 0; a < c->n; a++) {
                        uint32_t own = c->args[a].kind == ID_UID ? uid : gid;
                        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg_low_offset(c->args[a].arg)));
                        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, own, 2, 0));
                        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UINT32_MAX, 1, 0));
                        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
                }
                EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        }
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef EMIT
        *ret_n = n;
        return 0;
}

int seccomp_id_shim_load(uint32_t uid, uint32_t gid)
{
        struct sock_filter insns[ID_SHIM_MAX_INSNS];
        size_t n;
        int r = seccomp_id_shim_build(uid, gid, insns, ELEMENTSOF(insns), &n);
        if (r < 0)
                return r;
        struct sock_fprog prog = { .len = (unsigned short)n, .filter = insns };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return -errno;
        return 0;
}

static const char *native_arch_name(void)
{
        switch (seccomp_arch_native()) {
        case SCMP_ARCH_X86_64: return "x86_64";
        case SCMP_ARCH_AARCH64: return "aarch64";
        case SCMP_ARCH_X86: return "x86";
        case SCMP_ARCH_ARM: return "arm";
        case SCMP_ARCH_PPC64LE: return "ppc64le";
        case SCMP_ARCH_S390X: return "s390x";
        case SCMP_ARCH_RISCV64: return "riscv64";
        }
        return "native";
}

static void key_add(struct digest *d, const char *label, const char *value)
{
        digest_update(d, label, strlen(label) + 1);
        if (value)
                digest_update(d, value, strlen(value) + 1);
        else
                digest_update(d, "\x01null", 6);
}

static void key_add_list(struct digest *d, const char *label, char **list)
{
        key_add(d, label, NULL);
        for (char **p = list; p && *p; p++)
                key_add(d, "item", *p);
}

/* The cache key of s, or -errno when an input cannot be looked at (then
 * nothing is cached). */
static int cache_key(const struct seccomp_settings *s, char hex[DIGEST_HEX_SIZE])
{
        _cleanup_free_ char *path = groups_path();
        const struct scmp_version *v = seccomp_version();
        struct stat st;
        struct digest d;
        char buf[160];

        if (stat(path, &st) < 0)
                return -errno;
        digest_init(&d);
        /* bumped whenever the same settings build a different policy
         * (2: allow_ptrace lets ADDR_NO_RANDOMIZE through), so no run
         * picks up a blob an older build cached */
        key_add(&d, "format", "hutch-bpf-cache 2");
        key_add(&d, "hutch", PACKAGE_VERSION);
        snprintf(buf, sizeof(buf), "%u.%u.%u", v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0);
        key_add(&d, "libseccomp", buf);
        key_add(&d, "arch", native_arch_name());
        key_add(&d, "groups", path);
        snprintf(buf, sizeof(buf), "%llu:%llu:%llu:%lld.%09ld", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        key_add(&d, "groups-stat", buf);
        key_add(&d, "action", s->default_action);
        snprintf(buf, sizeof(buf), "%d%d%d%d", s->allow_list_mode, s->allow_ptrace, s->allow_io_uring,
                 s->allow_namespaces);
        key_add(&d, "switches", buf);
        key_add_list(&d, "deny", s->deny);
        key_add_list(&d, "allow", s->allow);
        digest_final_hex(&d, hex);
        return 0;
}

/* Cache file: "hutch-bpf <syscalls> <rules>\n" then the blob. */
static int cache_read(const char *path, void **ret_blob, size_t *ret_len, unsigned *ret_syscalls,
                      unsigned *ret_rules)
{
        _cleanup_free_ char *data = NULL;
        size_t len;
        unsigned syscalls, rules;
        int r = read_file(path, &data, &len);
        if (r < 0)
                return r;
        char *nl = memchr(data, '\n', len);
        if (!nl || sscanf(data, "hutch-bpf %u %u", &syscalls, &rules) != 2)
                return -EBADMSG;
        size_t off = (size_t)(nl + 1 - data);
        size_t blob_len = len - off;
        struct blob_header h;
        if (blob_len < sizeof(h))
                return -EBADMSG;
        memcpy(&h, data + off, sizeof(h));
        if (h.magic != BLOB_MAGIC ||
            blob_len != sizeof(h) + ((size_t)h.n_args + h.n_names) * sizeof(struct sock_filter))
                return -EBADMSG;
        void *blob = xmalloc(blob_len);
        memcpy(blob, data + off, blob_len);
        *ret_blob = blob;
        *ret_len = blob_len;
        *ret_syscalls = syscalls;
        *ret_rules = rules;
        return 0;
}

static void cache_write(const char *dir, const char *path, const void *blob, size_t len,
                        unsigned syscalls, unsigned rules)
{
        char head[64];
        _cleanup_free_ char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());

        if (mkdir_p(dir, 0700) < 0)
                return;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        snprintf(head, sizeof(head), "hutch-bpf %u %u\n", syscalls, rules);
        bool ok = write_all(fd, head, strlen(head)) == 0 && write_all(fd, blob, len) == 0;
        ok = close(fd) == 0 && ok;
        /* rename: readers see the old file or the whole new one */
        if (!ok || rename(tmp, path) < 0)
                (void)unlink(tmp);
}

int seccomp_policy_compile(const struct seccomp_settings *s, const char *cache_dir,
                           void **ret_blob, size_t *ret_len, struct seccomp_report *ret_report,
                           char **ret_error)
{
        char key[DIGEST_HEX_SIZE];
        _cleanup_free_ char *path = NULL;
        struct seccomp_report report = { 0 };
        uint32_t action;
        const char *action_name;
        int r;

        if (parse_action(s->default_action, &action, &action_name) < 0)
                return fail(ret_error, -EINVAL, "unknown action \"%s\" (use errno, kill or log)",
                            s->default_action);
        if (cache_dir && cache_key(s, key) == 0) {
                unsigned syscalls, rules;
                path = xasprintf("%s/seccomp-%s.bpf", cache_dir, key);
                if (cache_read(path, ret_blob, ret_len, &syscalls, &rules) == 0) {
                        if (ret_report) {
                                snprintf(report.policy, sizeof(report.policy), "%s", s->name ? s->name : "custom");
                                report.action = action_name;
                                report.mode = s->allow_list_mode ? "allow-list" : "deny-list";
                                report.arch = native_arch_name();
                                report.syscalls = syscalls;
                                report.rules = rules;
                                *ret_report = report;
                        }
                        return 0;
                }
        }

        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        r = seccomp_policy_build(s, &p, &report, ret_error);
        if (r < 0)
                return r;
        void *blob;
        size_t len;
        r = seccomp_policy_export(p, &blob, &len);
        if (r < 0)
                return fail(ret_error, r, "cannot export the filter: %s", strerror(-r));
        if (path)
                cache_write(cache_dir, path, blob, len, report.syscalls, report.rules);
        *ret_blob = blob;
        *ret_len = len;
        if (ret_report)
                *ret_report = report;
        return 0;
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
        r = seccomp_export_pfc(p->names, fd);
        if (r < 0)
                return r;
        r = write_all(fd, args_hdr, sizeof(args_hdr) - 1);
        if (r < 0)
                return r;
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
                        r = fail(ret_error, -EINVAL, "%s: group %s has no description",
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
