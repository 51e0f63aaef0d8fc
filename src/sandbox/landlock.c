/* landlock.c - the landlock tier's ruleset: ABI detection, the plan
 * built from the run's settings, and its application (see landlock.h).
 *
 * Raw syscalls: glibc has no wrappers, and the installed uapi header may
 * be older than the kernel (it may lack the network and scope fields), so
 * the structures the kernel reads are declared here, laid out as in the
 * kernel's uapi, and only the size the plan's ABI knows is passed.
 *
 * Safety argument:
 *  - every right the ABI knows is handled, so whatever the plan does not
 *    allow is denied; a right a newer kernel adds is not handled (the
 *    plan is clamped to LANDLOCK_ABI_KNOWN) and so not restricted by
 *    Landlock: that is the kernel's documented compatibility rule and
 *    the reason the clamp is recorded in the report;
 *  - read dirs are resolved to their real paths before masks are
 *    compared: Landlock rules attach to the inode a path reaches, so a
 *    symlink to /etc granted whole would uncover /etc/shadow;
 *  - a masked dir's children are granted one by one, symlinks among
 *    them never (a rule on a symlink's target could reach outside the
 *    granted trees);
 *  - the ruleset fd is closed in every path out of apply, and
 *    landlock_restrict_self() is the last call: before it nothing is in
 *    force, after it everything is.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/landlock.h"
#include "lib/util.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* uapi values, stable since each ABI introduced them */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2

#define LL_FS_EXECUTE           (1ULL << 0)
#define LL_FS_WRITE_FILE        (1ULL << 1)
#define LL_FS_READ_FILE         (1ULL << 2)
#define LL_FS_READ_DIR          (1ULL << 3)
#define LL_FS_MAKE_BLOCK        (1ULL << 11)
#define LL_FS_REFER             (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE          (1ULL << 14)    /* ABI 3 */
#define LL_FS_IOCTL_DEV         (1ULL << 15)    /* ABI 5 */
#define LL_FS_ABI1              ((1ULL << 13) - 1) /* EXECUTE .. MAKE_SYM */

#define LL_NET_BIND_TCP         (1ULL << 0)     /* ABI 4 */
#define LL_NET_CONNECT_TCP      (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX  (1ULL << 0)     /* ABI 6 */
#define LL_SCOPE_SIGNAL         (1ULL << 1)

struct ll_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;    /* ABI 4 */
        uint64_t scoped;                /* ABI 6 */
};

struct ll_path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
        uint64_t allowed_access;
        uint64_t port;
};

#define MASK_EXPAND_DEPTH 16

int landlock_abi(void)
{
        long r = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
        if (r >= 0)
                return (int)r;
        if (errno == ENOSYS || errno == EOPNOTSUPP)
                return 0;
        return -errno;
}

uint64_t landlock_fs_rights(int abi)
{
        if (abi < 1)
                return 0;
        uint64_t r = LL_FS_ABI1;
        if (abi >= 2)
                r |= LL_FS_REFER;
        if (abi >= 3)
                r |= LL_FS_TRUNCATE;
        if (abi >= 5)
                r |= LL_FS_IOCTL_DEV;
        return r;
}

uint64_t landlock_file_rights(int abi)
{
        return landlock_fs_rights(abi) &
               (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV);
}

char **landlock_missing(int abi, enum landlock_net net, char **v)
{
        if (abi < 2)
                v = strv_append(v, "renaming or linking a file into another directory fails with EXDEV, "
                                   "even inside the scratch (Landlock ABI 1 cannot allow it)");
        if (abi < 3)
                v = strv_append(v, "truncation is not restricted: a file the job may read but not write, "
                                   "and whose owner its uid is, can still be emptied (Landlock ABI < 3)");
        if (abi < 4 && net != LANDLOCK_NET_HOST)
                v = strv_append(v, "TCP bind and connect are not restricted by Landlock (ABI < 4): only the "
                                   "seccomp filter's socket families hold the network");
        if (abi < 5)
                v = strv_append(v, "ioctl on device files is not restricted by Landlock (ABI < 5)");
        if (abi < 6) {
                v = strv_append(v, "abstract unix sockets are not scoped (Landlock ABI < 6): the job can "
                                   "connect to any on the host (X11, D-Bus)");
                v = strv_append(v, "signals are not scoped (Landlock ABI < 6): the job can signal every "
                                   "process of its uid on the host");
        }
        return v;
}

struct builder {
        struct landlock_plan *plan;
        char **masked;          /* real paths of mask matches */
        uint64_t file_rights;
};

static void add_rule(struct builder *b, const char *path, uint64_t access)
{
        struct landlock_plan *p = b->plan;
        p->rules = xrealloc(p->rules, (p->n_rules + 1) * sizeof(*p->rules));
        p->rules[p->n_rules++] = (struct landlock_rule){ .path = xstrdup(path), .access = access };
}

static bool is_masked(const struct builder *b, const char *path)
{
        return strv_contains(b->masked, path);
}

/* Whether a masked path lies strictly below dir. */
static bool masked_below(const struct builder *b, const char *dir)
{
        size_t len = strlen(dir);
        if (len == 1 && dir[0] == '/')
                len = 0;
        for (char **m = b->masked; m && *m; m++)
                if (strncmp(*m, dir, len) == 0 && (*m)[len] == '/')
                        return true;
        return false;
}

/* Grant access beneath path (a real path) except the masked paths. */
static int grant(struct builder *b, const char *path, uint64_t access, bool is_dir, unsigned depth)
{
        if (is_masked(b, path))
                return 0;
        if (!is_dir) {
                add_rule(b, path, access & b->file_rights);
                return 0;
        }
        if (!masked_below(b, path)) {
                add_rule(b, path, access);
                return 0;
        }
        if (depth >= MASK_EXPAND_DEPTH)
                return -ELOOP;
        DIR *d = opendir(path);
        if (!d)
                return -errno;
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *child = xasprintf("%s/%s", streq(path, "/") ? "" : path, de->d_name);
                struct stat st;
                if (lstat(child, &st) < 0)
                        continue;       /* gone meanwhile */
                if (S_ISLNK(st.st_mode))
                        continue;
                r = grant(b, child, access, S_ISDIR(st.st_mode), depth + 1);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

static char **expand_masks(char *const *masks)
{
        char **out = NULL;
        for (char *const *m = masks; m && *m; m++) {
                glob_t g;
                if (glob(*m, GLOB_NOSORT, NULL, &g) != 0)
                        continue;
                for (size_t i = 0; i < g.gl_pathc; i++) {
                        char real[PATH_MAX];
                        /* a dangling symlink masks its own name */
                        const char *p = realpath(g.gl_pathv[i], real) ? real : g.gl_pathv[i];
                        if (!strv_contains(out, p))
                                out = strv_append(out, p);
                }
                globfree(&g);
        }
        return out;
}

/* Resolve path and grant it; missing is skipped when optional. */
static int grant_top(struct builder *b, const char *path, uint64_t access, bool optional, const char **ret_path)
{
        char real[PATH_MAX];
        struct stat st;
        if (!realpath(path, real) || stat(real, &st) < 0) {
                if (optional && (errno == ENOENT || errno == ENOTDIR))
                        return 0;
                *ret_path = path;
                return -errno;
        }
        int r = grant(b, real, access, S_ISDIR(st.st_mode), 0);
        if (r < 0)
                *ret_path = path;
        return r;
}

int landlock_plan_build(const struct landlock_request *req, int abi, struct landlock_plan *ret,
                        const char **ret_path)
{
        static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/full" };
        static const char *const random_devices[] = { "/dev/random", "/dev/urandom" };
        if (abi < 1 || req->net < 0 || req->net >= _LANDLOCK_NET_MAX)
                return -EINVAL;
        if (abi > LANDLOCK_ABI_KNOWN)
                abi = LANDLOCK_ABI_KNOWN;

        struct landlock_plan plan = { .abi = abi, .fs_handled = landlock_fs_rights(abi) };
        struct builder b = { .plan = &plan, .file_rights = landlock_file_rights(abi) };
        const char *failed = NULL;
        int r = 0;
        uint64_t all = plan.fs_handled;
        uint64_t read = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
        uint64_t rw_dev = (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE) & all;

        b.masked = expand_masks(req->masks);
        for (char *const *p = req->read_dirs; r >= 0 && p && *p; p++)
                r = grant_top(&b, *p, read, true, &failed);
        for (char *const *p = req->read_paths; r >= 0 && p && *p; p++)
                r = grant_top(&b, *p, read, false, &failed);
        /* the scratch and --rw: no mask applies (they are the run's own,
         * or the caller's explicit choice), hence no expansion */
        strv_free(b.masked);
        b.masked = NULL;
        for (char *const *p = req->write_paths; r >= 0 && p && *p; p++)
                r = grant_top(&b, *p, all, false, &failed);
        /* /proc read-only: programs read /proc/self; what it shows of
         * the host is listed among the tier's limits */
        if (r >= 0)
                r = grant_top(&b, "/proc", LL_FS_READ_FILE | LL_FS_READ_DIR, true, &failed);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(devices); i++)
                r = grant_top(&b, devices[i], rw_dev, true, &failed);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(random_devices); i++)
                r = grant_top(&b, random_devices[i], LL_FS_READ_FILE, true, &failed);
        if (r >= 0 && req->tty)
                r = grant_top(&b, "/dev/tty", rw_dev | (LL_FS_IOCTL_DEV & all), true, &failed);
        if (r < 0) {
                landlock_plan_done(&plan);
                if (ret_path)
                        *ret_path = failed;
                return r;
        }

        if (abi >= 4 && req->net != LANDLOCK_NET_HOST) {
                plan.net_handled = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
                if (req->net == LANDLOCK_NET_PROXY)
                        plan.connect_port = req->proxy_port;
        }
        if (abi >= 6)
                plan.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
        plan.missing = landlock_missing(abi, req->net, NULL);
        *ret = plan;
        return 0;
}

void landlock_plan_done(struct landlock_plan *p)
{
        if (!p)
                return;
        for (size_t i = 0; i < p->n_rules; i++)
                free(p->rules[i].path);
        free(p->rules);
        strv_free(p->missing);
        *p = (struct landlock_plan){ 0 };
}

static size_t attr_size(int abi)
{
        if (abi >= 6)
                return sizeof(struct ll_ruleset_attr);
        if (abi >= 4)
                return offsetof(struct ll_ruleset_attr, scoped);
        return offsetof(struct ll_ruleset_attr, handled_access_net);
}

int landlock_plan_apply(const struct landlock_plan *p, const char **ret_path)
{
        struct ll_ruleset_attr attr = {
                .handled_access_fs = p->fs_handled,
                .handled_access_net = p->net_handled,
                .scoped = p->scoped,
        };
        _cleanup_close_ int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size(p->abi), 0);
        if (ruleset < 0)
                return -errno;
        for (size_t i = 0; i < p->n_rules; i++) {
                _cleanup_close_ int fd = open(p->rules[i].path, O_PATH | O_CLOEXEC);
                if (fd < 0) {
                        if (ret_path)
                                *ret_path = p->rules[i].path;
                        return -errno;
                }
                struct ll_path_beneath_attr pb = { .allowed_access = p->rules[i].access, .parent_fd = fd };
                if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0) {
                        if (ret_path)
                                *ret_path = p->rules[i].path;
                        return -errno;
                }
        }
        if (p->connect_port) {
                struct ll_net_port_attr np = { .allowed_access = LL_NET_CONNECT_TCP, .port = p->connect_port };
                if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &np, 0) < 0)
                        return -errno;
        }
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
                return -errno;
        return 0;
}

int landlock_own_domain(void)
{
        int abi = landlock_abi();
        if (abi < 1)
                return abi == 0 ? -EOPNOTSUPP : abi;
        /* Handling the making of block devices, which a job can never do
         * (it takes CAP_MKNOD in the host's user namespace). And REFER:
         * unlike every other right, any domain denies linking or renaming
         * a file into another directory (EXDEV) unless a rule grants it,
         * which would break git, pip, a compiler's temp files and os.rename
         * in every exec; granted beneath the job's whole root, it gives
         * nothing more than no domain would (no right differs from one
         * directory to another, so a move can gain none). ABI 1 cannot
         * grant it: there, such moves stay EXDEV (hutch-exec(1)). */
        struct ll_ruleset_attr attr = { .handled_access_fs = LL_FS_MAKE_BLOCK | (abi >= 2 ? LL_FS_REFER : 0) };
        _cleanup_close_ int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size(1), 0);
        if (ruleset < 0)
                return errno == ENOSYS || errno == EOPNOTSUPP ? -EOPNOTSUPP : -errno;
        if (abi >= 2) {
                _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (root < 0)
                        return -errno;
                struct ll_path_beneath_attr pb = { .allowed_access = LL_FS_REFER, .parent_fd = root };
                if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
                        return -errno;
        }
        return syscall(SYS_landlock_restrict_self, ruleset, 0) < 0 ? -errno : 0;
}
