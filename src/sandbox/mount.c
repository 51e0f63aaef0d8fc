/* mount.c - the sandbox's filesystem view (see mount.h).
 *
 * Layout while building (inside our own mount namespace, so none of this
 * is visible on the host):
 *
 *   /tmp            the run's scratch tmpfs (size = disk limit); it hides
 *                   the host /tmp for this namespace only
 *   /tmp/root       the new root (bound onto itself so it can be pivoted to)
 *   /tmp/rw/{tmp,var-tmp,home,workspace,shm}
 *                   the writable areas, bound into the root; living on the
 *                   scratch is what makes the disk limit cover them all
 *   /tmp/rw/masks/{empty-file,empty-dir}
 *                   mode 0000 objects bound over masked paths, and the
 *                   identity files (passwd, group, hosts, hostname);
 *                   read-only, nosuid, nodev, noexec before the first bind
 *
 * After pivot_root the old root is detached, so the job can reach the
 * scratch only through those binds.
 *
 * Safety argument, mount by mount:
 *  - host system dirs are cloned recursively (open_tree) and made
 *    read-only, nosuid and nodev recursively (mount_setattr) *before*
 *    they are attached, so there is no moment where a writable or
 *    suid-honouring view exists, and submounts are covered too;
 *  - masks are read-only binds of empty mode-0000 objects: even a uid 0
 *    job has no capabilities (caps.c) and so cannot read them; they and
 *    the identity files are binds of the sealed masks dir, and a bind
 *    copies its source mount's flags, so each is read-only, nosuid,
 *    nodev and noexec from the moment it exists (bind_sealed());
 *  - /proc and /dev: see mount-kernel.c;
 *  - everything writable is nosuid,nodev and size-capped by the scratch:
 *    the writable areas are binds of the scratch mount, which is
 *    mounted nosuid,nodev, and so are born with both (bind_rw());
 *  - --input HOST[:NAME]: read-only, nosuid, nodev binds like --ro;
 *  - the workspace over a host dir (--workdir) and an image root: see
 *    mount-layers.c.
 */
#include "config.h"

#include <fcntl.h>
#include <glob.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include "config/lang.h"
#include "sandbox/mount.h"
#include "sandbox/mount-internal.h"
#include "sandbox/specials.h"
#include "lib/util.h"


int fail_with(struct setup_failure *fail, int r, const char *step, const char *path)
{
        fail->step = step;
        snprintf(fail->path, sizeof(fail->path), "%s", path ? path : "");
        return r;
}

int bind_with_attrs(const char *src, const char *dst, bool recursive, uint64_t attrs)
{
        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
        _cleanup_close_ int fd = sys_open_tree(AT_FDCWD, src, flags);
        if (fd < 0)
                return -errno;
        struct mount_attr attr = { .attr_set = attrs };
        if (attrs && sys_mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr) < 0)
                return -errno;
        if (sys_move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;
        return 0;
}

int ensure_dir(const char *path)
{
        /* the parent usually exists: one mkdir, not one per component */
        if (mkdir(path, 0755) == 0 || errno == EEXIST)
                return 0;
        if (errno != ENOENT)
                return -errno;
        /* walk up to the deepest parent that exists, then create down:
         * three mkdirs for /tmp/root/var/tmp, not one per component */
        char copy[PATH_MAX];
        if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy))
                return -ENAMETOOLONG;
        char *end = copy + strlen(copy);
        char *cut = end;
        for (;;) {
                char *slash = cut;
                while (slash > copy && *--slash != '/')
                        ;
                if (slash == copy)
                        return -ENOENT;         /* not even the first component */
                *slash = '\0';
                cut = slash;
                if (mkdir(copy, 0755) == 0 || errno == EEXIST)
                        break;
                if (errno != ENOENT)
                        return -errno;
        }
        while (cut < end) {
                *cut = '/';
                cut += strlen(cut);
                if (mkdir(copy, 0755) < 0 && errno != EEXIST)
                        return -errno;
        }
        return 0;
}

/* Attach a copy of src, a file or dir under the sealed MASKS, at dst.
 * A bind copies its source mount's flags (read-only, nosuid, nodev,
 * noexec here), so no mount_setattr is needed and the copy is never
 * visible without them. move_mount does not follow a symlink at dst, as
 * mount(2) would. */
static int bind_sealed(const char *src, const char *dst)
{
        _cleanup_close_ int fd = sys_open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
                return -errno;
        return sys_move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0 ? -errno : 0;
}

int make_mountpoint(const char *path, bool dir)
{
        if (dir) {
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -errno;
                return 0;
        }
        /* one syscall for a new file. An existing one is used as it is
         * (any non-directory: a bind goes over it), never opened: it may
         * sit in a read-only dir of the host's (--ro FILE:/etc/x), and
         * opening a FIFO or a device would block or act. A symlink or a
         * dir is refused. A filesystem without mknod (vfat) goes the
         * open() way. */
        if (mknod(path, S_IFREG | 0644, 0) == 0)
                return 0;
        if (errno == EEXIST) {
                struct stat st;
                if (lstat(path, &st) < 0)
                        return -errno;
                return S_ISDIR(st.st_mode) ? -EISDIR : S_ISLNK(st.st_mode) ? -ELOOP : 0;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return errno == EEXIST ? 0 : -errno;
        close(fd);
        return 0;
}

/* A host file or tree to appear in the new root. Host paths are resolved
 * and cloned *before* the scratch tmpfs goes over /tmp, so host paths
 * under /tmp stay reachable; the clone is detached and already read-only
 * until it is attached at `inside`. */
struct pending {
        char *inside;
        int fd;                 /* detached mount from open_tree, or -1 */
        char *link_target;      /* a symlink to recreate instead, or NULL */
        bool dir;
};

struct pending_list {
        struct pending *items;
        size_t n;
};

static void pending_list_free(struct pending_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].inside);
                free(l->items[i].link_target);
                if (l->items[i].fd >= 0)
                        close(l->items[i].fd);
        }
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

/* Clone host path `host` for later attachment at `inside`. A missing
 * system dir is skipped (not every host has /lib32); a path the user
 * asked for must exist. Symlinks among the system dirs (merged /usr) are
 * kept as symlinks so /bin -> usr/bin keeps meaning the same thing. */
static int clone_host(struct pending_list *l, const char *host, const char *inside,
                      bool required, bool recursive, uint64_t attrs, int *clone,
                      struct setup_failure *fail)
{
        struct stat st;
        struct pending p = { .fd = -1 };

        if (inside[0] != '/')
                return fail_with(fail, -EINVAL, "bind (destination must be absolute)", inside);
        if (clone && *clone >= 0) {
                /* named_open() cloned it as the caller, attributes set */
                if (fstat(*clone, &st) < 0)
                        return fail_with(fail, -errno, "bind", host);
                p.fd = *clone;
                *clone = -1;
                p.dir = S_ISDIR(st.st_mode);
                p.inside = xstrdup(inside);
                l->items = xrealloc(l->items, (l->n + 1) * sizeof(*l->items));
                l->items[l->n++] = p;
                return 0;
        }
        if ((required ? stat(host, &st) : lstat(host, &st)) < 0)
                return errno == ENOENT && !required ? 0 : fail_with(fail, -errno, "bind", host);
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlink(host, target, sizeof(target) - 1);
                if (n < 0)
                        return fail_with(fail, -errno, "readlink", host);
                target[n] = '\0';
                p.link_target = xstrdup(target);
        } else {
                unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
                p.fd = sys_open_tree(AT_FDCWD, host, flags);
                if (p.fd < 0)
                        return fail_with(fail, -errno, "bind", host);
                struct mount_attr attr = { .attr_set = attrs };
                if (sys_mount_setattr(p.fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr) < 0) {
                        int e = -errno;
                        close(p.fd);
                        return fail_with(fail, e, "bind", host);
                }
                p.dir = S_ISDIR(st.st_mode);
        }
        p.inside = xstrdup(inside);
        l->items = xrealloc(l->items, (l->n + 1) * sizeof(*l->items));
        l->items[l->n++] = p;
        return 0;
}

/* "SRC" or "SRC:DEST" from --ro/--rw and the profile's ro/rw lists. A
 * writable bind is still nosuid and nodev: the job may change the files,
 * never gain privilege through them. */
static int clone_user(struct pending_list *l, const char *spec, bool writable, int *clone,
                      struct setup_failure *fail)
{
        _cleanup_free_ char *src = xstrdup(spec);
        char *colon = strchr(src, ':');
        const char *dest = src;
        if (colon) {
                *colon = '\0';
                dest = colon + 1;
        }
        return clone_host(l, src, dest, true, true,
                          (writable ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, clone, fail);
}

/* Attach everything cloned by clone_host() under the new root. */
static int attach_pending(struct pending_list *l, struct setup_failure *fail)
{
        for (size_t i = 0; i < l->n; i++) {
                struct pending *p = &l->items[i];
                char dst[PATH_MAX];
                snprintf(dst, sizeof(dst), NEWROOT "%s", p->inside);
                _cleanup_free_ char *parent = xstrdup(dst);
                *strrchr(parent, '/') = '\0';
                /* the new root itself exists (setup_scratch()) */
                int r = streq(parent, NEWROOT) ? 0 : ensure_dir(parent);
                if (r < 0)
                        return fail_with(fail, r, "mkdir", p->inside);
                if (p->link_target) {
                        if (symlink(p->link_target, dst) < 0 && errno != EEXIST)
                                return fail_with(fail, -errno, "symlink", p->inside);
                        continue;
                }
                r = make_mountpoint(dst, p->dir);
                if (r < 0)
                        return fail_with(fail, r, "mkdir", p->inside);
                if (sys_move_mount(p->fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return fail_with(fail, -errno, "bind", p->inside);
        }
        return 0;
}

/* Hide `path` (inside the new root, without the NEWROOT prefix) behind an
 * empty mode-0000 object of the same kind. */
int mask_one(const char *inside, struct setup_failure *fail)
{
        char dst[PATH_MAX];
        struct stat st;

        snprintf(dst, sizeof(dst), NEWROOT "%s", inside);
        if (lstat(dst, &st) < 0 || S_ISLNK(st.st_mode))
                return 0;       /* absent, or a link whose target is masked on its own */
        const char *src = S_ISDIR(st.st_mode) ? EMPTY_DIR : EMPTY_FILE;
        int r = bind_sealed(src, dst);
        if (r < 0)
                return fail_with(fail, r, "mask", inside);
        return 0;
}

static int mask_pattern(const char *pattern, struct setup_failure *fail)
{
        if (!strpbrk(pattern, "*?["))
                return mask_one(pattern, fail);

        char full[PATH_MAX];
        glob_t g;
        snprintf(full, sizeof(full), NEWROOT "%s", pattern);
        int gr = glob(full, GLOB_NOSORT, NULL, &g);
        if (gr == GLOB_NOMATCH)
                return 0;
        if (gr != 0)
                return fail_with(fail, -EIO, "mask", pattern);
        int r = 0;
        for (size_t i = 0; i < g.gl_pathc && r == 0; i++)
                r = mask_one(g.gl_pathv[i] + strlen(NEWROOT), fail);
        globfree(&g);
        return r;
}

int bind_rw(const char *backing, const char *inside, struct setup_failure *fail)
{
        char dst[PATH_MAX];
        snprintf(dst, sizeof(dst), NEWROOT "%s", inside);
        int r = ensure_dir(dst);
        if (r < 0)
                return fail_with(fail, r, "mkdir", inside);
        /* One mount(2) bind: it copies the scratch mount's nosuid,nodev
         * (setup_scratch() mounts it so), so the bind is never without
         * them. dst was just made by us under the new root, whose
         * writable parts are this run's own scratch, and no job exists
         * yet: nothing can have put a symlink there for mount(2) to
         * follow. */
        if (mount(backing, dst, NULL, MS_BIND, NULL) < 0)
                return fail_with(fail, -errno, "bind", inside);
        return 0;
}

/* Sockets and FIFOs in the user's binds go behind empty files
 * (specials.c has the argument); the walk's bound is shared by all. */
#define STR_(x) #x
#define STR(x) STR_(x)
static int mask_bound_specials(const struct pending_list *binds, struct setup_failure *fail)
{
        size_t budget = SPECIALS_MAX_ENTRIES;

        for (size_t i = 0; i < binds->n; i++) {
                const struct pending *p = &binds->items[i];
                char dst[PATH_MAX];
                _cleanup_free_ char *where = NULL;

                if (p->link_target)
                        continue;
                snprintf(dst, sizeof(dst), NEWROOT "%s", p->inside);
                int r = specials_mask_tree(dst, EMPTY_FILE, &budget, &where);
                if (r == -E2BIG)
                        return fail_with(fail, r, "check for sockets and fifos (more than "
                                         STR(SPECIALS_MAX_ENTRIES) " entries in the binds)", p->inside);
                if (r == -ELOOP)
                        return fail_with(fail, r, "check for sockets and fifos (deeper than "
                                         STR(SPECIALS_MAX_DEPTH) " levels)", p->inside);
                if (r < 0) {
                        char at[PATH_MAX];
                        snprintf(at, sizeof(at), "%s%s", p->inside, where ? where : "");
                        return fail_with(fail, r, "mask socket or fifo", at);
                }
        }
        return 0;
}

/* /proc entries that expose host kernel state or let a process poke it.
 * A fresh proc instance still shows these system-wide files. Listed with
 * their kind (1: dir), so masking one needs no lstat() probe first. */
/* Make MASKS read-only, nosuid, nodev, noexec: bound onto itself with
 * those attributes set before the bind is attached. Every mask and
 * identity file is a bind of something in it (bind_sealed()) and so
 * inherits them. Done once, after the identity files are written. */
static int seal_masks(struct setup_failure *fail)
{
        int r = bind_with_attrs(MASKS, MASKS, false,
                                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        return r < 0 ? fail_with(fail, r, "seal", MASKS) : 0;
}

/* A passwd and group that name the sandbox user, so `id`, `whoami` and
 * shells behave, without showing the host's account list. */
static int setup_identity(const struct run_config *cfg, struct setup_failure *fail)
{
        char text[1024];
        int r;

        if (access(NEWROOT "/etc/passwd", F_OK) < 0)
                return seal_masks(fail);
        if (cfg->uid == 0)
                snprintf(text, sizeof(text),
                         "root:x:0:0:root:%s:/bin/sh\n"
                         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", cfg->home);
        else
                snprintf(text, sizeof(text),
                         "root:x:0:0:root:/root:/bin/sh\n"
                         "sandbox:x:%u:%u:sandbox:%s:/bin/sh\n"
                         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                         (unsigned)cfg->uid, (unsigned)cfg->gid, cfg->home);
        r = write_file(MASKS "/passwd", text, 0644);
        if (r < 0)
                return fail_with(fail, r, "write", "/etc/passwd");
        if (cfg->gid == 0)
                snprintf(text, sizeof(text), "root:x:0:\nnobody:x:65534:\n");
        else
                snprintf(text, sizeof(text), "root:x:0:\nsandbox:x:%u:\nnobody:x:65534:\n",
                         (unsigned)cfg->gid);
        r = write_file(MASKS "/group", text, 0644);
        if (r < 0)
                return fail_with(fail, r, "write", "/etc/group");
        snprintf(text, sizeof(text),
                 "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n",
                 cfg->hostname);
        r = write_file(MASKS "/hosts", text, 0644);
        if (r < 0)
                return fail_with(fail, r, "write", "/etc/hosts");
        snprintf(text, sizeof(text), "%s\n", cfg->hostname);
        r = write_file(MASKS "/hostname", text, 0644);
        if (r < 0)
                return fail_with(fail, r, "write", "/etc/hostname");

        r = seal_masks(fail);
        if (r < 0)
                return r;
        static const char *const files[] = { "passwd", "group", "hosts", "hostname" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char src[PATH_MAX], dst[PATH_MAX];
                snprintf(src, sizeof(src), MASKS "/%s", files[i]);
                snprintf(dst, sizeof(dst), NEWROOT "/etc/%s", files[i]);
                /* passwd was checked above */
                if (i > 0 && access(dst, F_OK) < 0)
                        continue;
                r = bind_sealed(src, dst);
                if (r < 0)
                        return fail_with(fail, r, "bind", dst + strlen(NEWROOT));
        }
        return 0;
}

static int setup_scratch(const struct run_config *cfg, struct setup_failure *fail)
{
        char opts[96];
        /* nr_inodes as well as size: empty files cost no blocks but a
         * kernel inode and dentry each (about 1.5 KiB of slab that no
         * memory limit without a cgroup sees), and every one of them is
         * a row to record after the run */
        snprintf(opts, sizeof(opts), "mode=0755,size=%llu,nr_inodes=%llu",
                 (unsigned long long)cfg->disk_bytes, (unsigned long long)cfg->inodes);
        if (mount("hutch-scratch", SCRATCH, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return fail_with(fail, -errno, "mount scratch tmpfs", SCRATCH);

        static const struct { const char *path; mode_t mode; } dirs[] = {
                { NEWROOT, 0755 }, { RW, 0755 }, { RW "/tmp", 01777 }, { RW "/var-tmp", 01777 },
                { RW "/shm", 01777 },
                { RW "/home", 0755 }, { RW "/workspace", 0755 }, { MASKS, 0755 }, { EMPTY_DIR, 0 },
        };
        /* mkdir obeys the umask; sticky and 0777 bits must be exact.
         * The job gets the caller's umask back (restored below). */
        mode_t old_umask = umask(0);
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (mkdir(dirs[i].path, dirs[i].mode) < 0) {
                        int e = -errno;
                        umask(old_umask);
                        return fail_with(fail, e, "mkdir", dirs[i].path);
                }
        umask(old_umask);
        if (mknod(EMPTY_FILE, S_IFREG | 0, 0) < 0)
                return fail_with(fail, -errno, "create", EMPTY_FILE);
        if (mount(NEWROOT, NEWROOT, NULL, MS_BIND, NULL) < 0)
                return fail_with(fail, -errno, "bind", NEWROOT);
        return 0;
}


/* --input HOST:NAME -> a read-only clone for <workspace>/input/NAME. */
static int clone_inputs(struct pending_list *l, const struct run_config *cfg, char **inputs,
                        int *clones, struct setup_failure *fail)
{
        size_t i = 0;
        for (char **p = inputs; p && *p; p++, i++) {
                const char *colon = strrchr(*p, ':');
                if (!colon)
                        return fail_with(fail, -EINVAL, "input", *p);
                _cleanup_free_ char *host = xstrdup(*p);
                host[colon - *p] = '\0';
                _cleanup_free_ char *inside = xasprintf("%s/input/%s", cfg->workdir_inside, colon + 1);
                int r = clone_host(l, host, inside, true, true,
                                   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                   clones ? &clones[i] : NULL, fail);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Clone every host tree the root will hold, while the host's paths are
 * still reachable: the system dirs (unless an image is the root), the
 * user's --ro and --rw binds, and the --input dirs. Attached later. */
static int clone_sources(const struct run_config *cfg, const struct mount_workspace *ws, bool image,
                         struct pending_list *system, struct pending_list *binds,
                         struct setup_failure *fail)
{
        const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        int r;

        for (char **p = cfg->ro_binds; !image && p && *p; p++) {
                r = clone_host(system, *p, *p, false, true, ro, NULL, fail);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; cfg->ro_paths && cfg->ro_paths[i]; i++) {
                r = clone_user(binds, cfg->ro_paths[i], false, ws && ws->ro_clones ? &ws->ro_clones[i] : NULL,
                               fail);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; cfg->rw_paths && cfg->rw_paths[i]; i++) {
                r = clone_user(binds, cfg->rw_paths[i], true, ws && ws->rw_clones ? &ws->rw_clones[i] : NULL,
                               fail);
                if (r < 0)
                        return r;
        }
        if (ws)
                return clone_inputs(binds, cfg, ws->inputs, ws->input_clones, fail);
        return 0;
}

/* The writable areas, all binds of the scratch: /tmp, /var/tmp (the
 * FHS's other temp dir: programs use it by default (cvs, vim, rpm) and
 * fail without it), home and the workspace. */
static int bind_writable_areas(const struct run_config *cfg, struct setup_failure *fail)
{
        static const char *const backing[] = { RW "/tmp", RW "/var-tmp", RW "/home", RW "/workspace" };
        const char *inside[] = { "/tmp", "/var/tmp", cfg->home, cfg->workdir_inside };

        for (size_t i = 0; i < ELEMENTSOF(backing); i++) {
                int r = bind_rw(backing[i], inside[i], fail);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Extra empty tmpfs dirs live on the scratch too, so they count against
 * the disk limit like every other writable path. */
static int bind_tmpfs_paths(const struct run_config *cfg, struct setup_failure *fail)
{
        for (size_t i = 0; cfg->tmpfs_paths && cfg->tmpfs_paths[i]; i++) {
                char backing[64];
                snprintf(backing, sizeof(backing), RW "/tmpfs-%zu", i);
                if (mkdir(backing, 0755) < 0)
                        return fail_with(fail, -errno, "mkdir", backing);
                int r = bind_rw(backing, cfg->tmpfs_paths[i], fail);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The user's binds go on top of the writable areas (a path under /tmp
 * must not vanish under the sandbox's own /tmp), and the masks on top of
 * everything, so no bind can uncover a secret. */
static int attach_binds_and_masks(const struct run_config *cfg, const struct mount_workspace *ws,
                                  struct pending_list *binds, struct setup_failure *fail)
{
        int r = attach_pending(binds, fail);
        if (r < 0)
                return r;
        r = mask_bound_specials(binds, fail);
        if (r < 0)
                return r;
        if (ws && ws->code_fd >= 0) {
                r = setup_code(ws->code_fd, ws->code_name, fail);
                if (r < 0)
                        return r;
        }
        for (char **p = cfg->masks; p && *p; p++) {
                r = mask_pattern(*p, fail);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The job's working dir current, and its artifacts dir made, while the
 * old root may still be stacked on / (*detach_fd >= 0): each reached
 * beneath / (mount_open_beneath_root()), or else after the detach, as
 * when there is none. */
static int enter_workdir(const struct run_config *cfg, int *detach_fd, struct setup_failure *fail)
{
        int fd = *detach_fd >= 0 ? mount_open_beneath_root(cfg->workdir_inside) : -1, r;

        if (fd >= 0) {
                r = fchdir(fd) < 0 ? -errno : 0;
                close(fd);
        } else {
                r = mount_detach_wait(detach_fd);
                if (r < 0)
                        return fail_with(fail, r, "detach old root", "/");
                r = chdir(cfg->workdir_inside) < 0 ? -errno : 0;
        }
        if (r < 0)
                return fail_with(fail, r, "chdir", cfg->workdir_inside);
        /* The artifacts dir exists when the job starts, so `echo x >
         * output/report.txt` works as the documentation shows. It is on
         * the workspace's writable layer and never part of a change set
         * (run/runfiles.c leaves it out); a workspace that already has
         * one keeps it, and where it cannot be made the job simply finds
         * none, as before. */
        if (!cfg->artifacts_dir)
                return 0;
        _cleanup_free_ char *parent = xstrdup(cfg->artifacts_dir);
        char *name = strrchr(parent, '/');
        *name++ = '\0';        /* an absolute path: there is a '/' */
        fd = *detach_fd >= 0 && *name ? mount_open_beneath_root(parent) : -1;
        if (fd >= 0) {
                (void)mkdirat(fd, name, 0755);
                close(fd);
                return 0;
        }
        r = mount_detach_wait(detach_fd);
        if (r < 0)
                return fail_with(fail, r, "detach old root", "/");
        (void)mkdir(cfg->artifacts_dir, 0755);
        return 0;
}

/* Make the new root the root and leave the job's working dir current.
 * With ret_detach_fd, the old root may be detached in the background
 * (mount-detach.c) and *ret_detach_fd says when it is gone; else it is
 * gone before this returns (*ret_detach_fd = -1). */
static int pivot(const struct run_config *cfg, bool image, struct setup_failure *fail, int *ret_detach_fd)
{
        int detached = -1;

        if (chdir(NEWROOT) < 0)
                return fail_with(fail, -errno, "chdir", NEWROOT);
        /* The root itself holds only mountpoints: nothing to write there.
         * An image root is the exception: writable everywhere, on the
         * scratch. Made read-only here, where NEWROOT names the one mount
         * that becomes /, before the old root is stacked on it. */
        if (!image && mount(NULL, NEWROOT, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
                return fail_with(fail, -errno, "read-only", "/");
        /* pivot_root(".", ".") stacks the old root on top of the new one;
         * detaching it leaves nothing of the host but the binds above. */
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return fail_with(fail, -errno, "pivot_root", NEWROOT);
        if (!ret_detach_fd || mount_detach_in_background(&detached) < 0) {
                if (umount2(".", MNT_DETACH) < 0)
                        return fail_with(fail, -errno, "detach old root", "/");
        }
        /* "/" itself never crosses into what is stacked on it */
        int r = chdir("/") < 0 ? fail_with(fail, -errno, "chdir", "/") : 0;
        /* an image's WorkingDir is made when the image lacks it, as
         * other runtimes do: the root is the writable overlay then (and
         * the old root gone already: ret_detach_fd is NULL) */
        if (r == 0 && cfg->image_workdir) {
                (void)mkdir_p(cfg->image_workdir, 0755);
                if (chdir(cfg->image_workdir) < 0)
                        r = fail_with(fail, -errno, "chdir", cfg->image_workdir);
        } else if (r == 0) {
                r = enter_workdir(cfg, &detached, fail);
        }
        if (r < 0 && detached >= 0)
                close(detached);
        else if (ret_detach_fd)
                *ret_detach_fd = detached;
        return r;
}

/* A directory of the new root (a path inside it), opened. */
static int open_inside(const char *inside, struct setup_failure *fail, int *ret_fd)
{
        char p[PATH_MAX];
        snprintf(p, sizeof(p), NEWROOT "%s", inside);
        int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return fail_with(fail, -errno, "open", inside);
        *ret_fd = fd;
        return 0;
}

/* The scratch, then the lower layers: an image root and the workspace's
 * overlay (*ret_upper_fd: its upper dir, when there is one). */
static int setup_layers(const struct run_config *cfg, struct mount_workspace *ws, bool image,
                        int lower_clone, struct setup_failure *fail, int *ret_upper_fd)
{
        int r = setup_scratch(cfg, fail);
        if (r < 0)
                return r;
        if (image) {
                r = setup_image_root(ws->root_clones, ws->n_root_clones, fail);
                if (r < 0)
                        return r;
        }
        if (lower_clone >= 0) {
                r = setup_overlay_workspace(lower_clone, fail);
                if (r < 0)
                        return r;
                *ret_upper_fd = open(RW "/upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (*ret_upper_fd < 0)
                        return fail_with(fail, -errno, "open", RW "/upper");
        }
        return 0;
}

/* The build itself, in order; mount_build_root() owns what it leaves. */
static int build_root(const struct run_config *cfg, struct mount_workspace *ws, int lower_clone,
                      struct pending_list *system, struct pending_list *binds,
                      struct setup_failure *fail, int *upper_fd, int *workspace_fd)
{
        bool image = ws && ws->n_root_clones > 0;
        int r;

        /* Our mounts must not propagate back to the host, and the host's
         * later mounts need not reach us. */
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
                return fail_with(fail, -errno, "make private", "/");
        r = clone_sources(cfg, ws, image, system, binds, fail);
        if (r < 0)
                return r;
        if (ws)
                ws->lower_clone = -1;   /* ours now */
        r = setup_layers(cfg, ws, image, lower_clone, fail, upper_fd);
        if (r < 0)
                return r;
        r = attach_pending(system, fail);
        if (r < 0)
                return r;
        r = setup_identity(cfg, fail);
        if (r < 0)
                return r;
        r = setup_proc(cfg->runtime == RUNTIME_GVISOR, fail);
        if (r < 0)
                return r;
        r = setup_dev(fail);
        if (r < 0)
                return r;
        r = bind_writable_areas(cfg, fail);
        if (r < 0)
                return r;
        if (ws) {
                r = open_inside(cfg->workdir_inside, fail, workspace_fd);
                if (r < 0)
                        return r;
        }
        r = bind_tmpfs_paths(cfg, fail);
        if (r < 0)
                return r;
        r = attach_binds_and_masks(cfg, ws, binds, fail);
        if (r < 0)
                return r;
        /* in the background unless the root is an image's, whose own
         * paths (WorkingDir) are walked right after */
        return pivot(cfg, image, fail, ws && !image && !cfg->image_workdir ? &ws->ret_detach_fd : NULL);
}

int mount_build_root(const struct run_config *cfg, struct mount_workspace *ws,
                     struct setup_failure *fail)
{
        struct pending_list system = { 0 }, binds = { 0 };
        _cleanup_close_ int lower_clone = ws ? ws->lower_clone : -1, upper_fd = -1, workspace_fd = -1;

        if (ws)
                ws->ret_detach_fd = -1;
        int r = build_root(cfg, ws, lower_clone, &system, &binds, fail, &upper_fd, &workspace_fd);
        if (r == 0 && ws) {
                ws->ret_upper_fd = TAKE_FD(upper_fd);
                ws->ret_workspace_fd = TAKE_FD(workspace_fd);
        }
        for (size_t i = 0; ws && i < ws->n_root_clones; i++)
                if (ws->root_clones[i] >= 0) {
                        close(ws->root_clones[i]);
                        ws->root_clones[i] = -1;
                }
        pending_list_free(&system);
        pending_list_free(&binds);
        return r;
}
