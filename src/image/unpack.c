/* unpack.c - one image layer (a tar stream, compressed or not) unpacked
 * into a directory of the image store, treating the layer as hostile.
 *
 * libarchive reads the stream (tar in its ustar, pax and GNU forms;
 * gzip, zstd, xz, bzip2). A filter libarchive could only provide by
 * running an external program is not enabled: hutch execs nothing.
 *
 * The rules, each with its reason:
 *  - names: a leading "./" and empty or "." components are dropped; an
 *    absolute name, a ".." component, a component longer than NAME_MAX
 *    or a name of PATH_MAX or more refuse the layer. So every name stays
 *    beneath the layer's directory by construction.
 *  - no write ever follows a symlink: the parent of each entry is reached
 *    one component at a time from the layer's directory with
 *    openat(O_DIRECTORY | O_NOFOLLOW) (a symlink on the way is ELOOP, a
 *    file ENOTDIR: the layer is refused, naming the entry), and the last
 *    component is created with O_CREAT | O_EXCL | O_NOFOLLOW, mkdirat,
 *    symlinkat or linkat without AT_SYMLINK_FOLLOW. An entry that
 *    replaces an earlier one of the same name is unlinked first, never
 *    written through. Names never pass through "..", so no resolution
 *    can leave the directory and no magic link (/proc) is reachable.
 *  - symlinks are stored as they are: their targets are resolved only
 *    inside the sandbox's root, never by hutch.
 *  - hardlinks: the target is a name of this same layer under the same
 *    rules (an absolute or ".." target refuses the layer) and must
 *    already exist as a non-directory; a link to /etc/shadow cannot be
 *    made.
 *  - device nodes, FIFOs and sockets are skipped and counted: they could
 *    not be made unprivileged, and the sandbox's /dev is its own.
 *  - set-user-id and set-group-id bits are dropped and counted (the
 *    layers are also mounted nosuid); owners are not kept: every file
 *    belongs to the user who imported, which the sandbox maps to its own
 *    user. Directories get u+rwx, so the store can always remove them;
 *    their owner could chmod them anyway.
 *  - xattrs: only user.* are kept, and never user.overlay.*, which
 *    overlayfs would read as its own (redirects, whiteouts, opaque dirs
 *    the image did not declare the OCI way).
 *  - size: every data byte written and 512 per entry count against max;
 *    past it the layer is refused. A sparse entry's holes are kept as
 *    holes, but the disk gives its data whole blocks: from its first
 *    hole on, each fragment counts the blocks it touches (the file
 *    system's block size, at least 4 KiB), each block once. So a file of
 *    one-byte fragments 8 KiB apart costs what it takes on disk, not a
 *    byte each; a file without holes counts its bytes, as before.
 *  - OCI whiteouts: ".wh.NAME" becomes an empty file NAME carrying
 *    user.overlay.whiteout, its directory user.overlay.opaque=x (and the
 *    layer's root too), the xattr whiteout overlayfs honours in a lower
 *    layer mounted with userxattr (Linux 6.7+) — a 0/0 character device,
 *    the classic whiteout, cannot be made unprivileged.
 *    ".wh..wh..opq" marks its directory user.overlay.opaque=y. Both are
 *    applied after the last entry: a whiteout in an opaque directory is
 *    moot and left out, one naming an entry of this same layer too (the
 *    OCI rule: whiteouts hide only lower layers).
 * A rule broken fails the whole layer; the caller removes the directory.
 */
#include "config.h"

#include <archive.h>
#include <archive_entry.h>
#include "image/archive-dl.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image/image-internal.h"
#include "lib/util.h"

#define ENTRY_COST 512
#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

struct dirmeta {
        char *path;
        mode_t mode;
        struct timespec mtime;
};

struct unpack {
        int rootfd;
        uint64_t max;
        uid_t uid;              /* chown everything to uid:gid; -1: leave */
        gid_t gid;
        struct unpack_stats *st;
        char *cache_path;       /* the parent dir opened last ... */
        int cache_fd;           /* ... and its fd */
        struct dirmeta *dirs;
        size_t n_dirs;
        char **whiteouts, **opaques;
        size_t n_whiteouts, n_opaques;
        char **error;
};

/* name for a message: control bytes shown as '?', cut at 200 bytes */
static char *printable(const char *s)
{
        char *p = xstrdup(s ? s : "");
        if (strlen(p) > 200)
                strcpy(p + 197, "...");
        for (char *c = p; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                        *c = '?';
        return p;
}

static int fail(struct unpack *u, int r, const char *entry, const char *what)
{
        if (u->error && !*u->error) {
                _cleanup_free_ char *name = printable(entry);
                *u->error = xasprintf("layer entry '%s': %s", name, what);
        }
        return r;
}

/* The entry's name made canonical: "a/b/c" ("" for the root), or NULL
 * when it breaks the name rules. */
static char *clean_path(const char *in)
{
        if (!in || in[0] == '/' || strlen(in) >= PATH_MAX)
                return NULL;
        char *out = xmalloc(strlen(in) + 1);
        size_t o = 0;
        for (const char *p = in; *p;) {
                size_t n = strcspn(p, "/");
                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        free(out);
                        return NULL;
                }
                if (n > NAME_MAX) {
                        free(out);
                        return NULL;
                }
                if (n > 0 && !(n == 1 && p[0] == '.')) {
                        if (o)
                                out[o++] = '/';
                        memcpy(out + o, p, n);
                        o += n;
                }
                p += n;
                p += strspn(p, "/");
        }
        out[o] = '\0';
        return out;
}

/* Open dir (canonical, "" for the root) beneath rootfd one component at a
 * time, never following a symlink; with create, missing directories are
 * made (0755). An owned fd or -errno. */
static int walk_dir(struct unpack *u, const char *dir, bool create)
{
        int fd = openat(u->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (const char *p = dir; *p;) {
                size_t n = strcspn(p, "/");
                char comp[NAME_MAX + 1];
                memcpy(comp, p, n);
                comp[n] = '\0';
                bool made = false;
                if (create) {
                        if (mkdirat(fd, comp, 0700) == 0)
                                made = true;
                        else if (errno != EEXIST) {
                                int e = -errno;
                                close(fd);
                                return e;
                        }
                }
                int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int e = -errno;
                struct stat st;
                /* O_DIRECTORY answers ENOTDIR for a symlink: say what it is */
                if (next < 0 && e == -ENOTDIR && fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode))
                        e = -ELOOP;
                close(fd);
                if (next < 0)
                        return e;
                if (made && (fchmod(next, 0755) < 0 ||
                             (u->uid != (uid_t)-1 && fchown(next, u->uid, u->gid) < 0))) {
                        e = -errno;
                        close(next);
                        return e;
                }
                fd = next;
                p += n;
                if (*p == '/')
                        p++;
        }
        return fd;
}

/* The parent dir of path, through the one-entry cache (entries of one
 * directory come together in a tar). *ret_name points into path. The fd
 * belongs to u. The cached dir cannot go stale: an entry only ever
 * removes a name inside its own parent (make_room()), never the parent
 * or its ancestors, and another parent replaces the cache. */
static int parent_of(struct unpack *u, const char *path, const char **ret_name)
{
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *dir = slash ? strndup(path, (size_t)(slash - path)) : xstrdup("");

        *ret_name = slash ? slash + 1 : path;
        if (u->cache_path && streq(u->cache_path, dir))
                return u->cache_fd;
        int fd = walk_dir(u, dir, true);
        if (fd < 0)
                return fd;
        if (u->cache_fd >= 0)
                close(u->cache_fd);
        free(u->cache_path);
        u->cache_fd = fd;
        u->cache_path = TAKE_PTR(dir);
        return fd;
}

static int why_walk(struct unpack *u, int r, const char *entry)
{
        if (r == -ELOOP)
                return fail(u, r, entry, "a symlink on the way (a write through it could leave the layer)");
        if (r == -ENOTDIR)
                return fail(u, r, entry, "a non-directory on the way");
        return fail(u, r, entry, strerror(-r));
}

/* Make room for a new entry name in pfd: nothing there, or it goes (an
 * empty directory too). 1 when a directory is there and want_dir. */
static int make_room(struct unpack *u, int pfd, const char *name, bool want_dir, const char *entry)
{
        struct stat st;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : fail(u, -errno, entry, strerror(errno));
        if (S_ISDIR(st.st_mode)) {
                if (want_dir)
                        return 1;
                if (unlinkat(pfd, name, AT_REMOVEDIR) < 0)
                        return fail(u, -errno, entry, "replaces a directory that is not empty");
                return 0;
        }
        if (unlinkat(pfd, name, 0) < 0)
                return fail(u, -errno, entry, strerror(errno));
        return 0;
}

static int charge(struct unpack *u, uint64_t n, const char *entry)
{
        u->st->bytes += n;
        if (u->max && u->st->bytes > u->max) {
                char size[32];
                _cleanup_free_ char *what = xasprintf("the layer unpacks to more than max_layer_size (%s)",
                                                      format_size(u->max, size, sizeof(size)));
                return fail(u, -EFBIG, entry, what);
        }
        return 0;
}

/* the entry's owner: the sandbox user's host ids when they are not the
 * caller's (real root); set before the mode, which chown would clear
 * set-id bits from anyway */
static int own(struct unpack *u, int dirfd, const char *name, const char *entry)
{
        if (u->uid == (uid_t)-1)
                return 0;
        if (fchownat(dirfd, name, u->uid, u->gid, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH)) < 0)
                return fail(u, -errno, entry, strerror(errno));
        return 0;
}

static mode_t safe_mode(struct unpack *u, mode_t mode)
{
        if (mode & (S_ISUID | S_ISGID))
                u->st->setid++;
        return mode & (S_IRWXU | S_IRWXG | S_IRWXO | S_ISVTX);
}

/* user.* xattrs other than user.overlay.* onto fd; the rest counted */
static void apply_xattrs(struct unpack *u, struct archive_entry *e, int fd)
{
        const char *name;
        const void *value;
        size_t size;

        archive_entry_xattr_reset(e);
        while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
                if (fd < 0 || !startswith(name, "user.") || startswith(name, "user.overlay.") ||
                    fsetxattr(fd, name, value, size, 0) < 0)
                        u->st->xattrs++;
        }
}

/* What the block [off, off + len) of a file costs. *end is where the file
 * was charged to so far; a block that starts there (the file has had no
 * hole yet: *holey false) costs its bytes. Once there was a hole, every
 * block costs the whole file system blocks it touches, and *end is kept
 * block-aligned. */
static uint64_t data_cost(uint64_t off, uint64_t len, uint64_t blk, uint64_t *end, bool *holey)
{
        if (!*holey && off == *end) {
                *end = off + len;
                return len;
        }
        uint64_t cost = 0;
        if (!*holey) {
                /* the last block of the data before the first hole is whole on disk */
                *holey = true;
                uint64_t up = (*end + blk - 1) / blk * blk;
                cost = up - *end;
                *end = up;
        }
        uint64_t lo = off / blk * blk, hi = (off + len + blk - 1) / blk * blk;
        /* going on in the last block charged: that one is paid; a block
         * further back (data out of order) is paid again, never free */
        if (lo < *end && lo + blk >= *end)
                lo = *end;
        if (hi > lo)
                cost += hi - lo;
        if (hi > *end)
                *end = hi;
        return cost;
}

static int write_data(struct unpack *u, struct archive *a, int fd, const char *entry)
{
        const void *buf;
        size_t len;
        la_int64_t off;
        uint64_t end = 0, blk = 4096;
        bool holey = false;
        struct stat st;
        int r;

        if (fstat(fd, &st) == 0 && st.st_blksize > 4096)
                blk = (uint64_t)st.st_blksize;
        while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
                if (off < 0)
                        return fail(u, -EBADMSG, entry, "negative data offset");
                int c = charge(u, data_cost((uint64_t)off, len, blk, &end, &holey), entry);
                if (c < 0)
                        return c;
                for (size_t done = 0; done < len;) {
                        ssize_t w = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
                        if (w < 0) {
                                if (errno == EINTR)
                                        continue;
                                return fail(u, -errno, entry, strerror(errno));
                        }
                        done += (size_t)w;
                }
        }
        if (r != ARCHIVE_EOF)
                return fail(u, -EBADMSG, entry, archive_error_string(a) ? archive_error_string(a) : "bad data");
        return 0;
}

static int put_file(struct unpack *u, struct archive *a, struct archive_entry *e, const char *path)
{
        const char *name;
        int pfd = parent_of(u, path, &name);
        if (pfd < 0)
                return why_walk(u, pfd, path);
        int r = make_room(u, pfd, name, false, path);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return fail(u, -errno, path, strerror(errno));
        r = write_data(u, a, fd, path);
        if (r < 0)
                return r;
        /* the full length, the tail a hole when the entry ends in one */
        if (archive_entry_size_is_set(e) && archive_entry_size(e) >= 0 &&
            ftruncate(fd, archive_entry_size(e)) < 0)
                return fail(u, -errno, path, strerror(errno));
        apply_xattrs(u, e, fd);
        if ((r = own(u, fd, "", path)) < 0)
                return r;
        if (fchmod(fd, safe_mode(u, archive_entry_perm(e))) < 0)
                return fail(u, -errno, path, strerror(errno));
        struct timespec ts[2] = { { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
                                  { archive_entry_mtime(e), archive_entry_mtime_nsec(e) } };
        (void)futimens(fd, ts);
        return 0;
}

static int put_dir(struct unpack *u, struct archive_entry *e, const char *path)
{
        const char *name;
        _cleanup_close_ int fd = -1;

        if (*path) {
                int pfd = parent_of(u, path, &name);
                if (pfd < 0)
                        return why_walk(u, pfd, path);
                int r = make_room(u, pfd, name, true, path);
                if (r < 0)
                        return r;
                if (r == 0 && mkdirat(pfd, name, 0700) < 0)
                        return fail(u, -errno, path, strerror(errno));
                fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        } else
                fd = openat(u->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return fail(u, -errno, path, strerror(errno));
        apply_xattrs(u, e, fd);
        u->dirs = xrealloc(u->dirs, (u->n_dirs + 1) * sizeof(*u->dirs));
        u->dirs[u->n_dirs++] = (struct dirmeta){
                .path = xstrdup(path),
                .mode = safe_mode(u, archive_entry_perm(e)),
                .mtime = { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
        };
        return 0;
}

static int put_symlink(struct unpack *u, struct archive_entry *e, const char *path)
{
        const char *target = archive_entry_symlink(e), *name;
        if (!target || !*target || strlen(target) >= PATH_MAX)
                return fail(u, -EINVAL, path, "a symlink without a valid target");
        int pfd = parent_of(u, path, &name);
        if (pfd < 0)
                return why_walk(u, pfd, path);
        int r = make_room(u, pfd, name, false, path);
        if (r < 0)
                return r;
        if (symlinkat(target, pfd, name) < 0)
                return fail(u, -errno, path, strerror(errno));
        if ((r = own(u, pfd, name, path)) < 0)
                return r;
        struct timespec ts[2] = { { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
                                  { archive_entry_mtime(e), archive_entry_mtime_nsec(e) } };
        (void)utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW);
        apply_xattrs(u, e, -1);         /* no user.* xattrs on a symlink */
        return 0;
}

static int put_hardlink(struct unpack *u, const char *raw_target, const char *path)
{
        _cleanup_free_ char *target = clean_path(raw_target);
        if (!target || !*target)
                return fail(u, -EINVAL, path, "a hardlink to a name outside the layer");
        const char *slash = strrchr(target, '/');
        _cleanup_free_ char *tdir = slash ? strndup(target, (size_t)(slash - target)) : xstrdup("");
        const char *tname = slash ? slash + 1 : target;
        /* the target's dir is walked without creating anything */
        _cleanup_close_ int tfd = walk_dir(u, tdir, false);
        if (tfd < 0)
                return tfd == -ENOENT ? fail(u, tfd, path, "a hardlink to a name this layer does not have")
                                      : why_walk(u, tfd, path);
        struct stat st;
        if (fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(u, -errno, path, "a hardlink to a name this layer does not have");
        if (S_ISDIR(st.st_mode))
                return fail(u, -EPERM, path, "a hardlink to a directory");
        const char *name;
        int pfd = parent_of(u, path, &name);
        if (pfd < 0)
                return why_walk(u, pfd, path);
        int r = make_room(u, pfd, name, false, path);
        if (r < 0)
                return r;
        /* no AT_SYMLINK_FOLLOW: a link to a symlink links the symlink */
        if (linkat(tfd, tname, pfd, name, 0) < 0)
                return fail(u, -errno, path, errno == ENOENT ? "a hardlink to itself" : strerror(errno));
        return 0;
}

/* ".wh.X" and ".wh..wh..opq": noted, applied by finish() */
static int note_whiteout(struct unpack *u, const char *path, const char *base)
{
        size_t dirlen = (size_t)(base - path);
        _cleanup_free_ char *dir = strndup(path, dirlen ? dirlen - 1 : 0);

        if (streq(base, WH_OPAQUE)) {
                u->opaques = strv_push(u->opaques, &u->n_opaques, dir);
                return 0;
        }
        const char *victim = base + strlen(WH_PREFIX);
        if (!*victim || streq(victim, ".") || streq(victim, "..") || startswith(victim, WH_PREFIX))
                return fail(u, -EINVAL, path, "a whiteout without a valid name");
        _cleanup_free_ char *p = *dir ? xasprintf("%s/%s", dir, victim) : xstrdup(victim);
        u->whiteouts = strv_push(u->whiteouts, &u->n_whiteouts, p);
        return 0;
}

static int put_entry(struct unpack *u, struct archive *a, struct archive_entry *e)
{
        const char *raw = archive_entry_pathname(e);
        _cleanup_free_ char *path = clean_path(raw);
        if (!path)
                return fail(u, -EINVAL, raw, "an absolute name, \"..\" or a name too long (it would leave the layer)");
        int r = charge(u, ENTRY_COST, path);
        if (r < 0)
                return r;
        u->st->entries++;
        /* ".wh." is the whiteout prefix: in a directory's name it is not
         * one the OCI spec defines */
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        for (const char *p = path; (p = strstr(p, WH_PREFIX)); p++)
                if ((p == path || p[-1] == '/') && p != base)
                        return fail(u, -EINVAL, path, "a directory named like a whiteout");
        if (startswith(base, WH_PREFIX))
                return note_whiteout(u, path, base);
        if (archive_entry_hardlink(e))
                return *path ? put_hardlink(u, archive_entry_hardlink(e), path)
                             : fail(u, -EINVAL, raw, "a hardlink as the layer's root");
        switch (archive_entry_filetype(e)) {
        case AE_IFDIR:
                return put_dir(u, e, path);
        case AE_IFREG:
                return *path ? put_file(u, a, e, path) : fail(u, -EINVAL, raw, "a file as the layer's root");
        case AE_IFLNK:
                return *path ? put_symlink(u, e, path) : fail(u, -EINVAL, raw, "a symlink as the layer's root");
        case AE_IFCHR:
        case AE_IFBLK:
        case AE_IFIFO:
        case AE_IFSOCK:
                u->st->specials++;
                return 0;
        default:
                return fail(u, -EINVAL, path, "an entry of unknown type");
        }
}

static bool in_list(char **v, size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (streq(v[i], s))
                        return true;
        return false;
}

static int set_opaque(int fd, const char *value)
{
        return fsetxattr(fd, "user.overlay.opaque", value, 1, 0) < 0 ? -errno : 0;
}

/* Opaque dirs, whiteouts, then the directories' modes and times. */
static int finish(struct unpack *u)
{
        int r;

        for (size_t i = 0; i < u->n_opaques; i++) {
                _cleanup_close_ int fd = walk_dir(u, u->opaques[i], true);
                if (fd < 0)
                        return why_walk(u, fd, u->opaques[i]);
                if ((r = set_opaque(fd, "y")) < 0)
                        return fail(u, r, u->opaques[i], "cannot mark opaque (user xattrs on the image store?)");
                u->st->opaque++;
        }
        for (size_t i = 0; i < u->n_whiteouts; i++) {
                const char *path = u->whiteouts[i], *slash = strrchr(path, '/');
                _cleanup_free_ char *dir = slash ? strndup(path, (size_t)(slash - path)) : xstrdup("");
                const char *name = slash ? slash + 1 : path;
                struct stat st;
                if (in_list(u->opaques, u->n_opaques, dir))
                        continue;
                _cleanup_close_ int pfd = walk_dir(u, dir, true);
                if (pfd < 0)
                        return why_walk(u, pfd, path);
                if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        continue;       /* this layer's own entry wins */
                /* readable by all: overlayfs reads the xattr with the
                 * mounter's credentials, which for a root caller's
                 * sandbox are not the file's owner */
                _cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        return fail(u, -errno, path, strerror(errno));
                if (fsetxattr(fd, "user.overlay.whiteout", "y", 1, 0) < 0 || fchmod(fd, 0444) < 0 ||
                    set_opaque(pfd, "x") < 0)
                        return fail(u, -errno, path, "cannot write a whiteout (user xattrs on the image store?)");
                if ((r = own(u, fd, "", path)) < 0)
                        return r;
                u->st->whiteouts++;
        }
        if (u->st->whiteouts && (r = set_opaque(u->rootfd, "x")) < 0)
                return fail(u, r, "/", "cannot mark the layer's root");
        for (size_t i = 0; i < u->n_dirs; i++) {
                _cleanup_close_ int fd = walk_dir(u, u->dirs[i].path, false);
                if (fd < 0)
                        return why_walk(u, fd, u->dirs[i].path);
                struct timespec ts[2] = { u->dirs[i].mtime, u->dirs[i].mtime };
                if ((r = own(u, fd, "", u->dirs[i].path)) < 0)
                        return r;
                if (fchmod(fd, u->dirs[i].mode | S_IRWXU) < 0)
                        return fail(u, -errno, u->dirs[i].path, strerror(errno));
                (void)futimens(fd, ts);
        }
        return 0;
}

/* Only filters libarchive implements itself: ARCHIVE_WARN means it would
 * run an external program, which hutch never does. */
int unpack_archive_new(struct archive **ret)
{
        int (*const filters[])(struct archive *) = {
                archive_read_support_filter_gzip, archive_read_support_filter_zstd,
                archive_read_support_filter_xz, archive_read_support_filter_bzip2,
        };
        if (archive_dl_load(NULL) < 0)
                return -ELIBACC;        /* "cannot access a needed shared library" */
        struct archive *a = archive_read_new();
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(filters); i++)
                if (filters[i](a) != ARCHIVE_OK) {
                        archive_read_free(a);
                        a = archive_read_new();
                        if (!a)
                                return -ENOMEM;
                        /* start again with the filters before it only */
                        for (size_t j = 0; j < i; j++)
                                (void)filters[j](a);
                        break;
                }
        archive_read_support_filter_none(a);
        archive_read_support_format_tar(a);
        *ret = a;
        return 0;
}

int unpack_layer(int fd, int rootfd, const struct image_limits *lim, struct unpack_stats *stats, char **ret_error)
{
        struct unpack u = { .rootfd = rootfd, .max = lim->max_layer_bytes, .uid = lim->owner_uid,
                            .gid = lim->owner_gid, .st = stats, .cache_fd = -1, .error = ret_error };
        struct archive *a = NULL;
        struct archive_entry *e;
        int r;

        memset(stats, 0, sizeof(*stats));
        if (u.uid != (uid_t)-1 && fchown(rootfd, u.uid, u.gid) < 0)
                return -errno;
        r = unpack_archive_new(&a);
        if (r < 0)
                return r;
        if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
                r = fail(&u, -EBADMSG, "", archive_error_string(a) ? archive_error_string(a) : "not a tar stream");
                goto out;
        }
        for (;;) {
                int h = archive_read_next_header(a, &e);
                if (h == ARCHIVE_EOF)
                        break;
                if (h != ARCHIVE_OK && h != ARCHIVE_WARN) {
                        r = fail(&u, -EBADMSG, "", archive_error_string(a) ? archive_error_string(a)
                                                                            : "damaged tar stream");
                        goto out;
                }
                r = put_entry(&u, a, e);
                if (r < 0)
                        goto out;
        }
        r = finish(&u);
out:
        archive_read_free(a);
        if (u.cache_fd >= 0)
                close(u.cache_fd);
        free(u.cache_path);
        for (size_t i = 0; i < u.n_dirs; i++)
                free(u.dirs[i].path);
        free(u.dirs);
        strv_free(u.whiteouts);
        strv_free(u.opaques);
        return r;
}
