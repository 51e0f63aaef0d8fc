/* cgroup.c - cgroup v2 limits and metering for one run (see cgroup.h
 * for the lifecycle and the "no internal processes" policy).
 *
 * Shape of the work: a handful of small text files per run. Limits are
 * written once before the sandbox exists; counters are read once at the
 * end, plus memory.current/pids.current/cpu.stat on each supervisor
 * heartbeat. Nothing here is hot, so clarity beats cleverness: every
 * file is read whole and parsed from text.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

#include "limits/cgroup.h"
#include "lib/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define CPU_PERIOD_USEC 100000ULL
#define SUPERVISOR_LEAF "hutch-supervisor"

struct cgroup_run {
        char *path;
        int fd;
        unsigned usable;        /* controllers enabled for it */
        unsigned enforced;      /* CGROUP_LIMIT_* */
        uint64_t sampled_memory;
        uint64_t sampled_pids;
        char *io_max_error;     /* why io.max was not written, or NULL */
        bool removed;
};

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

static int parse_u64(const char *s, size_t len, uint64_t *ret)
{
        uint64_t v = 0;

        if (len == 3 && strncmp(s, "max", 3) == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (len == 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        *ret = v;
        return 0;
}

int cgroup_parse_keyed(const char *text, const char *key, uint64_t *ret)
{
        size_t klen = strlen(key);

        if (!text)
                return -ENOENT;
        for (const char *line = text; *line; ) {
                const char *end = strchrnul(line, '\n');
                if ((size_t)(end - line) > klen && strncmp(line, key, klen) == 0 && line[klen] == ' ') {
                        const char *v = line + klen + 1;
                        size_t vlen = (size_t)(end - v);
                        while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\r'))
                                vlen--;
                        return parse_u64(v, vlen, ret);
                }
                line = *end ? end + 1 : end;
        }
        return -ENOENT;
}

int cgroup_parse_cpu_stat(const char *text, struct cgroup_cpu_stat *ret)
{
        struct cgroup_cpu_stat s = { 0 };
        int r;

        r = cgroup_parse_keyed(text, "usage_usec", &s.usage_usec);
        if (r < 0)
                return r == -ENOENT ? -EINVAL : r;
        (void)cgroup_parse_keyed(text, "user_usec", &s.user_usec);
        (void)cgroup_parse_keyed(text, "system_usec", &s.system_usec);
        if (cgroup_parse_keyed(text, "nr_throttled", &s.nr_throttled) == 0) {
                s.has_throttle = true;
                (void)cgroup_parse_keyed(text, "nr_periods", &s.nr_periods);
                (void)cgroup_parse_keyed(text, "throttled_usec", &s.throttled_usec);
        }
        *ret = s;
        return 0;
}

int cgroup_parse_memory_events(const char *text, struct cgroup_memory_events *ret)
{
        struct cgroup_memory_events e = { 0 };
        int found = 0;

        found += cgroup_parse_keyed(text, "low", &e.low) == 0;
        found += cgroup_parse_keyed(text, "high", &e.high) == 0;
        found += cgroup_parse_keyed(text, "max", &e.max) == 0;
        found += cgroup_parse_keyed(text, "oom", &e.oom) == 0;
        found += cgroup_parse_keyed(text, "oom_kill", &e.oom_kill) == 0;
        found += cgroup_parse_keyed(text, "oom_group_kill", &e.oom_group_kill) == 0;
        if (found == 0)
                return -EINVAL;
        *ret = e;
        return 0;
}

int cgroup_parse_pids_events(const char *text, uint64_t *ret_max)
{
        uint64_t v;
        int r = cgroup_parse_keyed(text, "max", &v);
        if (r < 0)
                return r == -ENOENT ? -EINVAL : r;
        *ret_max = v;
        return 0;
}

int cgroup_parse_io_stat(const char *text, struct cgroup_io_stat *ret)
{
        static const struct { const char *key; size_t off; } keys[] = {
                { "rbytes", offsetof(struct cgroup_io_stat, rbytes) },
                { "wbytes", offsetof(struct cgroup_io_stat, wbytes) },
                { "rios", offsetof(struct cgroup_io_stat, rios) },
                { "wios", offsetof(struct cgroup_io_stat, wios) },
                { "dbytes", offsetof(struct cgroup_io_stat, dbytes) },
                { "dios", offsetof(struct cgroup_io_stat, dios) },
        };
        struct cgroup_io_stat s = { 0 };

        /* "MAJ:MIN rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n" per device */
        for (const char *p = text ? text : ""; *p; ) {
                const char *end = strchrnul(p, '\n');
                const char *tok = memchr(p, ' ', (size_t)(end - p));
                while (tok && tok < end) {
                        const char *t = tok + 1, *eq, *tend;
                        tend = memchr(t, ' ', (size_t)(end - t));
                        if (!tend)
                                tend = end;
                        eq = memchr(t, '=', (size_t)(tend - t));
                        if (eq) {
                                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                                        uint64_t v;
                                        if ((size_t)(eq - t) != strlen(keys[i].key) ||
                                            strncmp(t, keys[i].key, (size_t)(eq - t)) != 0)
                                                continue;
                                        if (parse_u64(eq + 1, (size_t)(tend - eq - 1), &v) < 0)
                                                return -EINVAL;
                                        *(uint64_t *)((char *)&s + keys[i].off) += v;
                                }
                        }
                        tok = tend < end ? tend : NULL;
                }
                p = *end ? end + 1 : end;
        }
        *ret = s;
        return 0;
}

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

int cgroup_cpus_to_max(double cpus, char *buf, size_t len)
{
        if (isnan(cpus) || cpus > 4096.0)
                return -ERANGE;
        if (cpus <= 0.0) {
                snprintf(buf, len, "max %llu", CPU_PERIOD_USEC);
                return 0;
        }
        uint64_t quota = (uint64_t)(cpus * (double)CPU_PERIOD_USEC + 0.5);
        if (quota < 1000)
                quota = 1000;
        snprintf(buf, len, "%llu %llu", (unsigned long long)quota, CPU_PERIOD_USEC);
        return 0;
}

/* ---- small file helpers -------------------------------------------------- */

static int read_at(int dirfd, const char *name, char **ret)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        size_t cap = 1024, len = 0;
        char *buf;

        if (fd < 0)
                return -errno;
        buf = xmalloc(cap);
        for (;;) {
                ssize_t n;
                if (len + 1 >= cap)
                        buf = xrealloc(buf, cap *= 2);
                n = read(fd, buf + len, cap - len - 1);
                if (n < 0) {
                        int e = -errno;
                        if (e == -EINTR)
                                continue;
                        free(buf);
                        return e;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

/* cgroup files take one value per write(2): write it whole, once. */
static int write_at(int dirfd, const char *name, const char *text)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
        size_t n = strlen(text);
        ssize_t w;

        if (fd < 0)
                return -errno;
        do
                w = write(fd, text, n);
        while (w < 0 && errno == EINTR);
        if (w < 0)
                return -errno;
        return (size_t)w == n ? 0 : -EIO;
}

static int read_u64_at(int dirfd, const char *name, uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = read_at(dirfd, name, &text);
        if (r < 0)
                return r;
        size_t len = strcspn(text, "\n");
        return parse_u64(text, len, ret);
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
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
 * Sets l->mount, l->base, l->need_leaf and *ret_own (our own cgroup's
 * directory, NULL if unknown). */
static int resolve_base(struct locate *l, char **ret_own)
{
        _cleanup_free_ char *selftext = NULL, *cgpath = NULL, *mroot = NULL, *own = NULL;
        const char *env = getenv("HUTCH_CGROUP");
        int r;

        r = read_file("/proc/self/cgroup", &selftext, NULL);
        if (r >= 0)
                (void)cgroup_parse_proc_cgroup(selftext, &cgpath);
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
                l->need_leaf = own && streq(own, l->base) && !is_root_cgroup(l->base);
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
                        l->need_leaf = false;
                } else {
                        l->base = xstrdup(own);
                        l->need_leaf = !is_root_cgroup(l->base);
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
                if (!writable(anc, "cgroup.procs")) {
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

        if (is_root_cgroup(l->base) || !(want & ~l->enabled & l->available))
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
        bool root = is_root_cgroup(l->base);

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
static int locate(unsigned want, bool act, struct locate *l)
{
        _cleanup_free_ char *own = NULL;
        bool can_enable;
        int r;

        r = resolve_base(l, &own);
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
        struct locate l = { 0 };
        int r = locate(want, true, &l);
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
        (void)locate(CGROUP_ALL, false, &l);
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

/* ---- one run ------------------------------------------------------------- */

static int apply_limits(struct cgroup_run *cg, const struct cgroup_limits *lim)
{
        char buf[64];
        int r;

        if ((cg->usable & CGROUP_MEMORY) && lim->memory_max > 0) {
                uint64_t high = lim->memory_high ? lim->memory_high : lim->memory_max / 10 * 8;
                /* high first: a lower max than an old high is fine either way,
                 * but this keeps memory.high <= memory.max at every step */
                if (high < lim->memory_max) {
                        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)high);
                        r = write_at(cg->fd, "memory.high", buf);
                        if (r < 0)
                                return r;
                        cg->enforced |= CGROUP_LIMIT_MEMORY_HIGH;
                }
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->memory_max);
                r = write_at(cg->fd, "memory.max", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_MEMORY;
                /* absent when the kernel has no swap accounting: then
                 * there is no swap to escape to through this cgroup
                 * either way, but we do not claim it */
                r = write_at(cg->fd, "memory.swap.max", "0");
                if (r == 0)
                        cg->enforced |= CGROUP_LIMIT_SWAP;
                else if (r != -ENOENT)
                        return r;
        } else if ((cg->usable & CGROUP_MEMORY) && lim->memory_high > 0) {
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->memory_high);
                r = write_at(cg->fd, "memory.high", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_MEMORY_HIGH;
        }
        if ((cg->usable & CGROUP_MEMORY) && lim->oom_group) {
                r = write_at(cg->fd, "memory.oom.group", "1");
                if (r == 0)
                        cg->enforced |= CGROUP_LIMIT_OOM_GROUP;
                else if (r != -ENOENT)
                        return r;
        }
        if ((cg->usable & CGROUP_CPU) && lim->cpus > 0) {
                r = cgroup_cpus_to_max(lim->cpus, buf, sizeof(buf));
                if (r < 0)
                        return r;
                r = write_at(cg->fd, "cpu.max", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_CPUS;
        }
        if ((cg->usable & CGROUP_PIDS) && lim->pids_max > 0) {
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
                r = write_at(cg->fd, "pids.max", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_PIDS;
        }
        if ((cg->usable & CGROUP_IO) && lim->io_max && *lim->io_max) {
                /* A line the kernel refuses (a partition, a device
                 * without a queue) must not cost the run its other
                 * limits: io is left out of the enforced mask and the
                 * reason kept for the report. */
                _cleanup_free_ char *copy = xstrdup(lim->io_max);
                char *save = NULL;
                r = 0;
                for (char *line = strtok_r(copy, "\n", &save); line && r == 0;
                     line = strtok_r(NULL, "\n", &save)) {
                        r = write_at(cg->fd, "io.max", line);
                        if (r < 0)
                                cg->io_max_error = xasprintf("io.max refused \"%s\": %s", line, strerror(-r));
                }
                if (r == 0)
                        cg->enforced |= CGROUP_LIMIT_IO;
        }
        return 0;
}

int cgroup_run_new(const char *base, const char *name, unsigned usable,
                   const struct cgroup_limits *lim, struct cgroup_run **ret)
{
        struct cgroup_run *cg;
        int r;

        if (!name || !*name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        cg = xcalloc(1, sizeof(*cg));
        cg->fd = -1;
        cg->usable = usable;
        cg->path = xasprintf("%s/%s", base, name);
        if (mkdir(cg->path, 0755) < 0) {
                r = -errno;
                cg->removed = true;
                cgroup_run_free(cg);
                return r;
        }
        cg->fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cg->fd < 0) {
                r = -errno;
                goto fail;
        }
        r = apply_limits(cg, lim);
        if (r < 0)
                goto fail;
        *ret = cg;
        return 0;
fail:
        cgroup_run_free(cg);
        return r;
}

int cgroup_run_open(const char *path, struct cgroup_run **ret)
{
        const char *base = strrchr(path, '/');
        struct statfs sfs;
        struct cgroup_run *cg;

        /* Safety: the path comes from the run store, which its owner can
         * edit; only ever touch a cgroup v2 directory hutch named itself */
        if (!base || !startswith(base + 1, "run-") || strstr(path, "/../"))
                return -EINVAL;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstatfs(fd, &sfs) < 0 || (uint64_t)sfs.f_type != CGROUP2_SUPER_MAGIC) {
                close(fd);
                return -EINVAL;
        }
        cg = xcalloc(1, sizeof(*cg));
        cg->fd = fd;
        cg->path = xstrdup(path);
        *ret = cg;
        return 0;
}

int cgroup_run_fd(const struct cgroup_run *cg)
{
        return cg->fd;
}

const char *cgroup_run_path(const struct cgroup_run *cg)
{
        return cg->path;
}

unsigned cgroup_run_enforced(const struct cgroup_run *cg)
{
        return cg->enforced;
}

int cgroup_run_sample(struct cgroup_run *cg, uint64_t *ret_cpu_usec)
{
        _cleanup_free_ char *text = NULL;
        struct cgroup_cpu_stat cpu;
        uint64_t v;
        int r;

        if (read_u64_at(cg->fd, "memory.current", &v) == 0 && v > cg->sampled_memory)
                cg->sampled_memory = v;
        if (read_u64_at(cg->fd, "pids.current", &v) == 0 && v > cg->sampled_pids)
                cg->sampled_pids = v;
        r = read_at(cg->fd, "cpu.stat", &text);
        if (r < 0)
                return r;
        r = cgroup_parse_cpu_stat(text, &cpu);
        if (r < 0)
                return r;
        if (ret_cpu_usec)
                *ret_cpu_usec = cpu.usage_usec;
        return 0;
}

int cgroup_run_stats(struct cgroup_run *cg, struct cgroup_stats *ret)
{
        struct cgroup_stats s = { 0 };
        char *text = NULL;
        uint64_t v;
        int r;

        if (cg->fd < 0)
                return -EBADF;
        r = read_at(cg->fd, "cpu.stat", &text);
        if (r < 0)
                return r;
        if (cgroup_parse_cpu_stat(text, &s.cpu) == 0) {
                s.have |= CGROUP_HAVE_CPU_STAT;
                if (s.cpu.has_throttle)
                        s.have |= CGROUP_HAVE_CPU_THROTTLE;
        }
        free(text);

        if (read_u64_at(cg->fd, "memory.current", &v) == 0) {
                s.memory_current = v;
                if (v > cg->sampled_memory)
                        cg->sampled_memory = v;
        }
        if (read_u64_at(cg->fd, "memory.peak", &v) == 0) {
                s.memory_peak = v;
                s.have |= CGROUP_HAVE_MEMORY_PEAK;
        } else if (cg->usable & CGROUP_MEMORY) {
                /* before 5.19: the best we have is what we sampled */
                s.memory_peak = cg->sampled_memory;
                s.have |= CGROUP_HAVE_MEMORY_SAMPLED;
        }
        if (read_at(cg->fd, "memory.events", &text) == 0) {
                if (cgroup_parse_memory_events(text, &s.memory_events) == 0)
                        s.have |= CGROUP_HAVE_MEMORY_EVENTS;
                free(text);
        }
        if (read_at(cg->fd, "pids.events", &text) == 0) {
                if (cgroup_parse_pids_events(text, &s.pids_max_events) == 0)
                        s.have |= CGROUP_HAVE_PIDS_EVENTS;
                free(text);
        }
        if (read_u64_at(cg->fd, "pids.peak", &v) == 0) {
                s.pids_peak = v;
                s.have |= CGROUP_HAVE_PIDS_PEAK;
        } else {
                if (read_u64_at(cg->fd, "pids.current", &v) == 0 && v > cg->sampled_pids)
                        cg->sampled_pids = v;
                s.pids_peak = cg->sampled_pids;
        }
        if (read_at(cg->fd, "io.stat", &text) == 0) {
                if (cgroup_parse_io_stat(text, &s.io) == 0)
                        s.have |= CGROUP_HAVE_IO_STAT;
                free(text);
        }
        *ret = s;
        return 0;
}

/* SIGKILL each pid in dir/cgroup.procs and in every cgroup below dir.
 * Returns how many were signalled, or -errno. */
static int kill_procs_recursive(int dirfd)
{
        _cleanup_free_ char *text = NULL;
        int n = 0, r;

        r = read_at(dirfd, "cgroup.procs", &text);
        if (r < 0)
                return r;
        for (char *s = text; *s; ) {
                char *end;
                long pid = strtol(s, &end, 10);
                if (end == s)
                        break;
                if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                        n++;
                s = end + strspn(end, "\n");
        }

        int dupfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dupfd < 0)
                return -errno;
        DIR *d = fdopendir(dupfd);
        if (!d) {
                close(dupfd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d)); ) {
                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0)
                        continue;
                r = kill_procs_recursive(sub);
                if (r > 0)
                        n += r;
        }
        closedir(d);
        return n;
}

int cgroup_run_kill(struct cgroup_run *cg)
{
        int r;

        if (cg->fd < 0)
                return -EBADF;
        r = write_at(cg->fd, "cgroup.kill", "1");
        if (r != -ENOENT)
                return r;
        /* Before 5.14: signal pid by pid. A fork racing with us lands in
         * the cgroup after we read cgroup.procs, so go round until a pass
         * finds nobody (bounded: a fork bomb under pids.max cannot
         * outrun SIGKILL for long). */
        for (int round = 0; round < 100; round++) {
                r = kill_procs_recursive(cg->fd);
                if (r <= 0)
                        return r < 0 ? r : 0;
                sleep_ms(10);
        }
        return -EBUSY;
}

/* rmdir every cgroup below dir (depth first), then dir itself. */
static int rmdir_tree(const char *path)
{
        DIR *d = opendir(path);
        if (d) {
                for (struct dirent *de; (de = readdir(d)); ) {
                        if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        _cleanup_free_ char *sub = xasprintf("%s/%s", path, de->d_name);
                        (void)rmdir_tree(sub);
                }
                closedir(d);
        }
        if (rmdir(path) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 0;
}

int cgroup_run_remove(struct cgroup_run *cg, unsigned timeout_ms)
{
        uint64_t deadline = now_monotonic_ms() + timeout_ms;
        int r;

        if (cg->removed)
                return 0;
        for (;;) {
                (void)cgroup_run_kill(cg);
                r = rmdir_tree(cg->path);
                if (r == 0) {
                        cg->removed = true;
                        return 0;
                }
                if (r != -EBUSY)
                        return r;
                if (now_monotonic_ms() >= deadline)
                        return -EBUSY;
                sleep_ms(10);
        }
}

struct cgroup_run *cgroup_run_free(struct cgroup_run *cg)
{
        if (!cg)
                return NULL;
        if (!cg->removed)
                (void)cgroup_run_remove(cg, 1000);
        if (cg->fd >= 0)
                close(cg->fd);
        free(cg->path);
        free(cg->io_max_error);
        free(cg);
        return NULL;
}

const char *cgroup_run_io_max_error(const struct cgroup_run *cg)
{
        return cg->io_max_error;
}
