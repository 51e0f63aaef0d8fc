/* cgroup-base.c - finding the cgroup v2 base for runs: $HUTCH_CGROUP or
 * the cgroup hutch runs in, moving hutch into the supervisor leaf and
 * enabling controllers (see cgroup.h for the "no internal processes"
 * policy). Also the parsers of what this reads: controller lists and
 * /proc/self/cgroup.
 */
#include "config.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "limits/cgroup.h"
#include "limits/cgroup-internal.h"
#include "lib/util.h"

#define SUPERVISOR_LEAF "hutch-supervisor"

static const char *const controller_names[CGROUP_N_CONTROLLERS] = {
        "cpu", "memory", "pids", "io",
};

const char *cgroup_controller_name(unsigned bit)
{
        for (unsigned i = 0; i < CGROUP_N_CONTROLLERS; i++)
                if (bit == 1U << i)
                        return controller_names[i];
        return NULL;
}

/* ---- parsers ------------------------------------------------------------ */

unsigned cgroup_parse_controllers(const char *text)
{
        unsigned mask = 0;

        for (const char *p = text ? text : ""; *p; ) {
                size_t n = strcspn(p, " \n\t");
                for (unsigned i = 0; i < CGROUP_N_CONTROLLERS; i++)
                        if (n == strlen(controller_names[i]) && strncmp(p, controller_names[i], n) == 0)
                                mask |= 1U << i;
                p += n;
                p += strspn(p, " \n\t");
        }
        return mask;
}

int cgroup_parse_proc_cgroup(const char *text, char **ret)
{
        for (const char *line = text ? text : ""; *line; ) {
                const char *end = strchrnul(line, '\n');
                if (startswith(line, "0::") && end - line > 3) {
                        const char *p = line + 3;
                        if (*p != '/')
                                return -EINVAL;
                        size_t len = (size_t)(end - p);
                        /* a cgroup removed under us reads "/path (deleted)" */
                        if (len > 10 && strncmp(end - 10, " (deleted)", 10) == 0)
                                len -= 10;
                        char *s = xmalloc(len + 1);
                        memcpy(s, p, len);
                        s[len] = '\0';
                        *ret = s;
                        return 0;
                }
                line = *end ? end + 1 : end;
        }
        return -ENOENT;
}

/* ---- finding the base ---------------------------------------------------- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
        char *w = s;
        for (char *r = s; *r; ) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 4;
                } else
                        *w++ = *r++;
        }
        *w = '\0';
}

/* The cgroup2 mount whose root is a prefix of cgpath: its mount point
 * and root (both allocated). -ENOENT when there is no cgroup2 mount. */
static int find_cgroup2_mount(const char *cgpath, char **ret_point, char **ret_root)
{
        _cleanup_free_ char *text = NULL;
        char *first_point = NULL, *first_root = NULL;
        int r = read_file("/proc/self/mountinfo", &text, NULL);
        if (r < 0)
                return r;

        for (char *line = text, *next; line && *line; line = next) {
                char *f[10] = { 0 }, *save = NULL, *dash;
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                dash = strstr(line, " - ");
                if (!dash)
                        continue;
                *dash = '\0';
                /* before " - ": id parent maj:min root point options [optional…] */
                f[0] = strtok_r(line, " ", &save);
                for (int i = 1; i < 5 && f[i - 1]; i++)
                        f[i] = strtok_r(NULL, " ", &save);
                char *fstype = strtok_r(dash + 3, " ", &save);
                if (!f[4] || !fstype || !streq(fstype, "cgroup2"))
                        continue;
                unescape_octal(f[3]);
                unescape_octal(f[4]);
                size_t rl = strlen(f[3]);
                if (cgpath && (streq(f[3], "/") ||
                               (startswith(cgpath, f[3]) && (cgpath[rl] == '/' || cgpath[rl] == '\0')))) {
                        free(first_point);
                        free(first_root);
                        *ret_point = xstrdup(f[4]);
                        *ret_root = xstrdup(f[3]);
                        return 0;
                }
                if (!first_point) {
                        first_point = xstrdup(f[4]);
                        first_root = xstrdup(f[3]);
                }
        }
        if (!first_point)
                return -ENOENT;
        *ret_point = first_point;
        *ret_root = first_root;
        return 0;
}

static bool is_cgroup2_dir(const char *path)
{
        struct statfs sfs;
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
               statfs(path, &sfs) == 0 && (uint64_t)sfs.f_type == CGROUP2_SUPER_MAGIC;
}

/* The root cgroup has no cgroup.type; every other cgroup has one. */
static bool is_root_cgroup(const char *dir)
{
        _cleanup_free_ char *p = xasprintf("%s/cgroup.type", dir);
        return access(p, F_OK) < 0 && errno == ENOENT;
}

static bool writable(const char *dir, const char *file)
{
        _cleanup_free_ char *p = file ? xasprintf("%s/%s", dir, file) : xstrdup(dir);
        return access(p, W_OK) == 0;
}

/* First pid in dir/cgroup.procs other than ourselves, 0 if none, or -errno. */
static long other_process(const char *dir)
{
        _cleanup_free_ char *p = xasprintf("%s/cgroup.procs", dir), *text = NULL;
        int r = read_file(p, &text, NULL);
        if (r < 0)
                return r;
        for (char *s = text; *s; ) {
                char *end;
                long pid = strtol(s, &end, 10);
                if (end == s)
                        break;
                if (pid != (long)getpid())
                        return pid;
                s = end + strspn(end, "\n");
        }
        return 0;
}

static char *dirname_of(const char *path)
{
        char *d = xstrdup(path), *slash = strrchr(d, '/');
        if (slash && slash != d)
                *slash = '\0';
        else if (slash)
                slash[1] = '\0';
        return d;
}

/* Longest common directory prefix of two absolute paths. */
static char *common_ancestor(const char *a, const char *b)
{
        size_t i = 0, last = 0;
        while (a[i] && a[i] == b[i]) {
                if (a[i] == '/')
                        last = i;
                i++;
        }
        if ((a[i] == '\0' && (b[i] == '/' || b[i] == '\0')) || (b[i] == '\0' && a[i] == '/'))
                last = i;
        char *s = xstrdup(a);
        s[last > 0 ? last : 1] = '\0';
        return s;
}

struct locate {
        char *mount;
        char *base;
        bool need_leaf;         /* base is our own non-root cgroup */
        bool root;              /* base is the hierarchy's root cgroup */
        unsigned available;     /* in base/cgroup.controllers */
        unsigned enabled;       /* in base/cgroup.subtree_control */
        unsigned usable;
        char *reason;
        char *why_not[CGROUP_N_CONTROLLERS];
};

static void locate_done(struct locate *l)
{
        free(l->mount);
        free(l->base);
        free(l->reason);
        for (unsigned i = 0; i < CGROUP_N_CONTROLLERS; i++)
                free(l->why_not[i]);
        memset(l, 0, sizeof(*l));
}

/* Which directory is the base: $HUTCH_CGROUP, or the cgroup we run in
 * (or, when that is an earlier hutch's supervisor leaf, its parent).
 * Sets l->mount, l->base, l->root, l->need_leaf and *ret_own (our own cgroup's
 * directory, NULL if unknown). */
static int resolve_base(struct locate *l, const char *self, char **ret_own)
{
        _cleanup_free_ char *selftext = NULL, *cgpath = NULL, *mroot = NULL, *own = NULL;
        const char *env = getenv("HUTCH_CGROUP");
        int r;

        if (!self && read_file("/proc/self/cgroup", &selftext, NULL) >= 0)
                self = selftext;
        if (self)
                (void)cgroup_parse_proc_cgroup(self, &cgpath);
        r = find_cgroup2_mount(cgpath, &l->mount, &mroot);
        if (r < 0) {
                l->reason = xstrdup("cgroup v2 not mounted");
                return -ENOENT;
        }
        if (cgpath) {
                /* /proc/self/cgroup is relative to our cgroup namespace,
                 * the mount shows the hierarchy from its root on */
                const char *rel = cgpath;
                if (!streq(mroot, "/") && startswith(cgpath, mroot))
                        rel = cgpath + strlen(mroot);
                own = streq(rel, "/") || !*rel ? xstrdup(l->mount) : xasprintf("%s%s", l->mount, rel);
        }

        if (env && *env) {
                if (is_cgroup2_dir(env))
                        l->base = xstrdup(env);
                else if (env[0] == '/') {
                        /* a cgroup path relative to the mount ("/user.slice/…") */
                        _cleanup_free_ char *p = xasprintf("%s%s", l->mount, env);
                        if (is_cgroup2_dir(p))
                                l->base = TAKE_PTR(p);
                }
                if (!l->base) {
                        l->reason = xasprintf("HUTCH_CGROUP=%s is not a cgroup v2 directory", env);
                        return -ENOTDIR;
                }
                l->root = is_root_cgroup(l->base);
                l->need_leaf = own && streq(own, l->base) && !l->root;
        } else {
                if (!own) {
                        l->reason = xasprintf("this process is in no cgroup v2 hierarchy "
                                              "(no 0:: line in /proc/self/cgroup)");
                        return -ENOENT;
                }
                const char *last = strrchr(own, '/');
                if (last && streq(last + 1, SUPERVISOR_LEAF)) {
                        /* started from a process already in the leaf (an
                         * earlier hutch's child): its parent is the base */
                        l->base = dirname_of(own);
                        l->root = is_root_cgroup(l->base);
                        l->need_leaf = false;
                } else {
                        l->base = xstrdup(own);
                        l->root = is_root_cgroup(l->base);
                        l->need_leaf = !l->root;
                }
        }
        *ret_own = TAKE_PTR(own);
        return 0;
}

/* May we make children in the base and move sandboxes into them? */
static int check_access(struct locate *l, const char *own)
{
        if (!writable(l->base, NULL) || !writable(l->base, "cgroup.subtree_control") ||
            !writable(l->base, "cgroup.procs")) {
                l->reason = xasprintf("no delegated cgroup v2 subtree writable by uid %u: %s is not "
                                      "writable (set HUTCH_CGROUP to one, or run hutch under "
                                      "systemd-run --user --scope -p Delegate=yes)",
                                      (unsigned)geteuid(), l->base);
                return -EACCES;
        }
        if (own && !l->need_leaf && !(startswith(own, l->base) && own[strlen(l->base)] == '/')) {
                /* the kernel lets us move a process (clone3 into
                 * base/run) only with write access to cgroup.procs of
                 * the common ancestor of its cgroup and the target */
                _cleanup_free_ char *anc = common_ancestor(own, l->base);
                /* the base's own cgroup.procs passed just above */
                if (!streq(anc, l->base) && !writable(anc, "cgroup.procs")) {
                        l->reason = xasprintf("hutch runs in %s, outside %s: moving a sandbox there needs "
                                              "write access to %s/cgroup.procs (run hutch inside the "
                                              "delegated subtree)", own, l->base, anc);
                        return -EACCES;
                }
        }
        return 0;
}

/* Set l->available and l->enabled from the base's files. */
static int read_controllers(struct locate *l)
{
        _cleanup_free_ char *p = xasprintf("%s/cgroup.controllers", l->base);
        _cleanup_free_ char *q = xasprintf("%s/cgroup.subtree_control", l->base);
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_file(p, &text, NULL);
        if (r < 0) {
                l->reason = xasprintf("cannot read %s: %s", p, strerror(-r));
                return r;
        }
        l->available = cgroup_parse_controllers(text);
        free(TAKE_PTR(text));
        if (read_file(q, &text, NULL) == 0)
                l->enabled = cgroup_parse_controllers(text);
        return 0;
}

/* "No internal processes": controllers for children can only be
 * enabled while the base holds no process. False (with l->reason) when
 * a process other than us is in the way. */
static bool may_enable(struct locate *l, unsigned want)
{
        long other;

        if (l->root || !(want & ~l->enabled & l->available))
                return true;
        other = other_process(l->base);
        if (other <= 0)
                return true;
        if (l->need_leaf)
                l->reason = xasprintf("%s also holds process %ld, not started by hutch; cgroup v2 enables "
                                      "controllers for children only in a cgroup without processes "
                                      "(run hutch in its own scope: systemd-run --user --scope -p "
                                      "Delegate=yes, or set HUTCH_CGROUP)", l->base, other);
        else
                l->reason = xasprintf("%s holds processes (pid %ld); cgroup v2 enables controllers for "
                                      "children only in a cgroup without processes", l->base, other);
        return false;
}

static int move_self_to_leaf(struct locate *l)
{
        _cleanup_free_ char *leaf = xasprintf("%s/" SUPERVISOR_LEAF, l->base);
        _cleanup_free_ char *procs = xasprintf("%s/cgroup.procs", leaf);
        char pid[32];
        int r;

        if (mkdir(leaf, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                l->reason = xasprintf("creating %s: %s", leaf, strerror(-r));
                return r;
        }
        snprintf(pid, sizeof(pid), "%ld", (long)getpid());
        r = write_file(procs, pid, 0644);
        if (r < 0) {
                l->reason = xasprintf("moving hutch into %s: %s", leaf, strerror(-r));
                return r;
        }
        return 0;
}

/* Decide (and with act, enable) each wanted controller; sets l->usable
 * and l->why_not[]. */
static void enable_controllers(struct locate *l, unsigned want, bool act, bool can_enable)
{
        _cleanup_free_ char *parent = dirname_of(l->base);
        _cleanup_free_ char *ctl = xasprintf("%s/cgroup.subtree_control", l->base);
        bool root = l->root;

        for (unsigned i = 0; i < CGROUP_N_CONTROLLERS; i++) {
                unsigned bit = 1U << i;
                if (!(want & bit))
                        continue;
                if (!(l->available & bit)) {
                        if (root)
                                l->why_not[i] = xasprintf("controller %s not available in the cgroup v2 "
                                                          "hierarchy at %s (bound to a cgroup v1 "
                                                          "hierarchy?)", controller_names[i], l->base);
                        else
                                l->why_not[i] = xasprintf("controller %s not enabled in "
                                                          "%s/cgroup.subtree_control",
                                                          controller_names[i], parent);
                        continue;
                }
                if (l->enabled & bit) {
                        l->usable |= bit;
                        continue;
                }
                if (!can_enable) {
                        l->why_not[i] = xasprintf("controller %s cannot be enabled in %s: %s",
                                                  controller_names[i], ctl, l->reason);
                        continue;
                }
                if (!act) {
                        l->usable |= bit;
                        continue;
                }
                _cleanup_free_ char *cmd = xasprintf("+%s", controller_names[i]);
                int r = write_file(ctl, cmd, 0644);
                if (r < 0)
                        l->why_not[i] = xasprintf("enabling %s in %s: %s", controller_names[i], ctl,
                                                  strerror(-r));
                else
                        l->usable |= bit;
        }
}

/* Find the base and what it offers. With act, also move ourselves into
 * the supervisor leaf and enable controllers. Returns 0 with l->base
 * set, or -errno with l->reason set. */
static int locate(const char *self, unsigned want, bool act, struct locate *l)
{
        _cleanup_free_ char *own = NULL;
        bool can_enable;
        int r;

        r = resolve_base(l, self, &own);
        if (r < 0)
                return r;
        r = check_access(l, own);
        if (r < 0)
                return r;
        r = read_controllers(l);
        if (r < 0)
                return r;
        can_enable = may_enable(l, want);
        if (act && can_enable && l->need_leaf && (want & l->available)) {
                r = move_self_to_leaf(l);
                if (r < 0)
                        return r;
        }
        enable_controllers(l, want, act, can_enable);
        if (l->usable == 0 && want) {
                if (!l->reason) {
                        const char *first = NULL;
                        for (unsigned i = 0; i < CGROUP_N_CONTROLLERS && !first; i++)
                                first = l->why_not[i];
                        l->reason = xasprintf("no controller usable in %s: %s", l->base,
                                              first ? first : "none available");
                }
                return -EOPNOTSUPP;
        }
        free(l->reason);
        l->reason = NULL;
        return 0;
}

int cgroup_base_prepare(unsigned want, char **ret_base, unsigned *ret_usable, char **ret_reason)
{
        return cgroup_base_prepare_from(NULL, want, ret_base, ret_usable, ret_reason);
}

int cgroup_base_prepare_from(const char *self_cgroup_text, unsigned want, char **ret_base,
                             unsigned *ret_usable, char **ret_reason)
{
        struct locate l = { 0 };
        int r = locate(self_cgroup_text, want, true, &l);
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = TAKE_PTR(l.reason);
                locate_done(&l);
                return r;
        }
        *ret_base = TAKE_PTR(l.base);
        *ret_usable = l.usable;
        locate_done(&l);
        return 0;
}

int cgroup_probe(struct cgroup_probe *ret)
{
        struct locate l = { 0 };

        memset(ret, 0, sizeof(*ret));
        (void)locate(NULL, CGROUP_ALL, false, &l);
        ret->mount = TAKE_PTR(l.mount);
        ret->base = TAKE_PTR(l.base);
        ret->usable = l.usable;
        if (l.usable == 0)
                ret->reason = l.reason ? TAKE_PTR(l.reason) : xstrdup("no controller usable");
        for (unsigned i = 0; i < CGROUP_N_CONTROLLERS; i++)
                ret->why_not[i] = TAKE_PTR(l.why_not[i]);
        locate_done(&l);
        return 0;
}

void cgroup_probe_done(struct cgroup_probe *p)
{
        if (!p)
                return;
        free(p->mount);
        free(p->base);
        free(p->reason);
        for (unsigned i = 0; i < CGROUP_N_CONTROLLERS; i++)
                free(p->why_not[i]);
        memset(p, 0, sizeof(*p));
}
