/* fstest.c - filesystem test helpers and the overlay scenario (fstest.h). */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fstest.h"
#include "lib/util.h"

char *fst_mkdtemp(const char *tag)
{
        const char *tmp = getenv("TMPDIR");
        char *p = xasprintf("%s/hutch-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);

        if (!mkdtemp(p)) {
                free(p);
                return NULL;
        }
        return p;
}

char *fst_path(const char *dir, const char *rel)
{
        return xasprintf("%s/%s", dir, rel);
}

int fst_write(const char *dir, const char *rel, const char *content, mode_t mode)
{
        _cleanup_free_ char *p = fst_path(dir, rel);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        int r;

        if (fd < 0)
                return -errno;
        r = write_all(fd, content, strlen(content));
        if (r < 0)
                return r;
        return fchmod(fd, mode) < 0 ? -errno : 0;
}

char *fst_read(const char *dir, const char *rel)
{
        _cleanup_free_ char *p = fst_path(dir, rel);
        char *s = NULL;

        if (read_file(p, &s, NULL) < 0)
                return NULL;
        return s;
}

int fst_mkdir(const char *dir, const char *rel, mode_t mode)
{
        _cleanup_free_ char *p = fst_path(dir, rel);

        if (mkdir(p, 0700) < 0)
                return -errno;
        return chmod(p, mode) < 0 ? -errno : 0;
}

int fst_symlink(const char *target, const char *dir, const char *rel)
{
        _cleanup_free_ char *p = fst_path(dir, rel);
        return symlink(target, p) < 0 ? -errno : 0;
}

static int list_sorted(const char *dir, char ***ret)
{
        struct dirent **ents = NULL;
        char **v = NULL;
        int n = scandir(dir, &ents, NULL, alphasort);

        if (n < 0)
                return -errno;
        for (int i = 0; i < n; i++) {
                if (!streq(ents[i]->d_name, ".") && !streq(ents[i]->d_name, ".."))
                        v = strv_append(v, ents[i]->d_name);
                free(ents[i]);
        }
        free(ents);
        if (!v)
                v = xcalloc(1, sizeof(char *));
        *ret = v;
        return 0;
}

int fst_rm_rf(const char *path)
{
        struct stat st;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISDIR(st.st_mode)) {
                _cleanup_strv_ char **names = NULL;
                int r;

                (void)chmod(path, 0700);
                r = list_sorted(path, &names);
                if (r < 0)
                        return r;
                for (char **n = names; *n; n++) {
                        _cleanup_free_ char *c = fst_path(path, *n);
                        r = fst_rm_rf(c);
                        if (r < 0)
                                return r;
                }
                return rmdir(path) < 0 ? -errno : 0;
        }
        return unlink(path) < 0 ? -errno : 0;
}

static int copy_file(const char *src, const char *dst, mode_t mode)
{
        _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_close_ int out = -1;
        char buf[65536];
        ssize_t n;

        if (in < 0)
                return -errno;
        out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        while ((n = read(in, buf, sizeof(buf))) > 0) {
                int r = write_all(out, buf, (size_t)n);
                if (r < 0)
                        return r;
        }
        if (n < 0)
                return -errno;
        return fchmod(out, mode & 07777) < 0 ? -errno : 0;
}

int fst_copy_tree(const char *src, const char *dst)
{
        struct stat st;
        int r;

        if (lstat(src, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode)) {
                char target[4096];
                ssize_t n = readlink(src, target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                target[n] = '\0';
                return symlink(target, dst) < 0 ? -errno : 0;
        }
        if (S_ISREG(st.st_mode))
                return copy_file(src, dst, st.st_mode);
        if (!S_ISDIR(st.st_mode))
                return 0;       /* specials: not carried */

        _cleanup_strv_ char **names = NULL;
        if (mkdir(dst, 0700) < 0)
                return -errno;
        r = list_sorted(src, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *s = fst_path(src, *n), *d = fst_path(dst, *n);
                r = fst_copy_tree(s, d);
                if (r < 0)
                        return r;
        }
        return chmod(dst, st.st_mode & 07777) < 0 ? -errno : 0;
}

static int compare(const char *a, const char *b, const char *rel, char **why)
{
        struct stat sa, sb;
        int r;

        if (lstat(a, &sa) < 0 || lstat(b, &sb) < 0) {
                *why = xasprintf("%s: missing on one side", rel);
                return 1;
        }
        if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
                *why = xasprintf("%s: type differs", rel);
                return 1;
        }
        if (!S_ISLNK(sa.st_mode) && (sa.st_mode & 07777) != (sb.st_mode & 07777)) {
                *why = xasprintf("%s: mode %o vs %o", rel, sa.st_mode & 07777, sb.st_mode & 07777);
                return 1;
        }
        if (S_ISLNK(sa.st_mode)) {
                char ta[4096] = "", tb[4096] = "";
                if (readlink(a, ta, sizeof(ta) - 1) < 0 || readlink(b, tb, sizeof(tb) - 1) < 0)
                        return -errno;
                if (!streq(ta, tb)) {
                        *why = xasprintf("%s: link %s vs %s", rel, ta, tb);
                        return 1;
                }
                return 0;
        }
        if (S_ISREG(sa.st_mode)) {
                _cleanup_free_ char *ca = NULL, *cb = NULL;
                size_t la, lb;
                if (read_file(a, &ca, &la) < 0 || read_file(b, &cb, &lb) < 0)
                        return -EIO;
                if (la != lb || memcmp(ca, cb, la) != 0) {
                        *why = xasprintf("%s: content differs", rel);
                        return 1;
                }
                return 0;
        }
        if (!S_ISDIR(sa.st_mode))
                return 0;

        _cleanup_strv_ char **na = NULL, **nb = NULL;
        r = list_sorted(a, &na);
        if (r < 0)
                return r;
        r = list_sorted(b, &nb);
        if (r < 0)
                return r;
        for (size_t i = 0; na[i] || nb[i]; i++) {
                if (!na[i] || !nb[i] || !streq(na[i], nb[i])) {
                        *why = xasprintf("%s: entries differ at '%s' vs '%s'", rel,
                                         na[i] ? na[i] : "(end)", nb[i] ? nb[i] : "(end)");
                        return 1;
                }
                _cleanup_free_ char *ca = fst_path(a, na[i]), *cb = fst_path(b, nb[i]);
                _cleanup_free_ char *cr = *rel ? fst_path(rel, na[i]) : xstrdup(na[i]);
                r = compare(ca, cb, cr, why);
                if (r != 0)
                        return r;
        }
        return 0;
}

int fst_compare_trees(const char *a, const char *b, char **why)
{
        *why = NULL;
        return compare(a, b, "", why);
}

const char *fst_sha(const char *s, char hex[DIGEST_HEX_SIZE])
{
        digest_buffer(s, strlen(s), hex);
        return hex;
}

bool fst_tree_has_prefix(const char *dir, const char *prefix)
{
        _cleanup_strv_ char **names = NULL;

        if (list_sorted(dir, &names) < 0)
                return false;
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *p = fst_path(dir, *n);
                struct stat st;

                if (startswith(*n, prefix))
                        return true;
                if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && fst_tree_has_prefix(p, prefix))
                        return true;
        }
        return false;
}

/* ---- overlay ------------------------------------------------------------- */

int fst_overlay_init(struct fst_overlay *o)
{
        memset(o, 0, sizeof(*o));
        o->base = fst_mkdtemp("ovl");
        if (!o->base)
                return -errno;
        o->lower = fst_path(o->base, "lower");
        o->upper = fst_path(o->base, "upper");
        o->work = fst_path(o->base, "work");
        o->merged = fst_path(o->base, "merged");
        o->expected = fst_path(o->base, "expected");
        if (mkdir(o->lower, 0755) < 0 || mkdir(o->upper, 0755) < 0 || mkdir(o->work, 0700) < 0 ||
            mkdir(o->merged, 0755) < 0)
                return -errno;
        return 0;
}

void fst_overlay_done(struct fst_overlay *o)
{
        if (o->base)
                (void)fst_rm_rf(o->base);
        free(o->base);
        free(o->lower);
        free(o->upper);
        free(o->work);
        free(o->merged);
        free(o->expected);
        memset(o, 0, sizeof(*o));
}

static int write_proc(const char *file, const char *fmt, ...) _printf_(2, 3);
static int write_proc(const char *file, const char *fmt, ...)
{
        _cleanup_free_ char *text = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&text, fmt, ap) < 0)
                text = NULL;
        va_end(ap);
        if (!text)
                return -ENOMEM;
        return write_file(file, text, 0);
}

static _noreturn_ void child(struct fst_overlay *o, int (*edit)(const char *), uid_t uid, gid_t gid)
{
        _cleanup_free_ char *opts = NULL;
        int r;

        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
                fprintf(stderr, "# unshare: %s\n", strerror(errno));
                _exit(77);
        }
        /* a process may always map its own uid/gid, once setgroups is
         * denied; that is all an unprivileged user can do, and enough */
        if (write_proc("/proc/self/setgroups", "deny") < 0 ||
            write_proc("/proc/self/uid_map", "0 %u 1", (unsigned)uid) < 0 ||
            write_proc("/proc/self/gid_map", "0 %u 1", (unsigned)gid) < 0) {
                fprintf(stderr, "# id maps: %s\n", strerror(errno));
                _exit(77);
        }
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                fprintf(stderr, "# make / private: %s\n", strerror(errno));
                _exit(77);
        }
        opts = xasprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", o->lower, o->upper, o->work);
        if (mount("overlay", o->merged, "overlay", 0, opts) < 0) {
                fprintf(stderr, "# mount overlay (%s): %s\n", opts, strerror(errno));
                _exit(77);
        }
        r = edit(o->merged);
        if (r != 0) {
                fprintf(stderr, "# edit failed: %s\n", strerror(r < 0 ? -r : EIO));
                _exit(2);
        }
        r = fst_copy_tree(o->merged, o->expected);
        if (r < 0) {
                fprintf(stderr, "# copy merged view: %s\n", strerror(-r));
                _exit(3);
        }
        if (umount(o->merged) < 0) {
                fprintf(stderr, "# umount: %s\n", strerror(errno));
                _exit(4);
        }
        _exit(0);
}

int fst_overlay_run(struct fst_overlay *o, int (*edit)(const char *merged))
{
        uid_t uid = geteuid();
        gid_t gid = getegid();
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child(o, edit, uid, gid);
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        if (!WIFEXITED(status))
                return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return WEXITSTATUS(status);
}

/* ---- the scenario ---------------------------------------------------------- */

#define TRY(x)                                                                  \
        do {                                                                    \
                int _r = (x);                                                   \
                if (_r < 0) {                                                   \
                        fprintf(stderr, "# %s:%d: %s: %s\n", __FILE__, __LINE__, \
                                #x, strerror(-_r));                             \
                        return _r;                                              \
                }                                                               \
        } while (0)
#define SYS(x) TRY((x) < 0 ? -errno : 0)

int fst_scenario_lower(const char *L)
{
        TRY(fst_write(L, "keep.txt", "keep\n", 0644));
        TRY(fst_write(L, "edit.txt", "old\n", 0644));
        TRY(fst_write(L, "del.txt", "bye\n", 0644));
        TRY(fst_write(L, "touch.txt", "touched\n", 0644));
        TRY(fst_write(L, "openw.txt", "opened for writing\n", 0644));
        TRY(fst_write(L, "chmod.txt", "chmod me\n", 0644));
        TRY(fst_write(L, "chmodback.txt", "chmod and back\n", 0644));
        TRY(fst_write(L, "same.txt", "same bytes\n", 0644));
        TRY(fst_write(L, "samesize.txt", "aaaa", 0644));
        TRY(fst_write(L, "mv-src.txt", "moving\n", 0640));
        TRY(fst_mkdir(L, "dir", 0755));
        TRY(fst_write(L, "dir/a.txt", "in dir\n", 0644));
        TRY(fst_mkdir(L, "dir/sub", 0750));
        TRY(fst_write(L, "dir/sub/b.txt", "in dir/sub\n", 0600));
        TRY(fst_mkdir(L, "rmre", 0755));
        TRY(fst_write(L, "rmre/x.txt", "old x\n", 0644));
        TRY(fst_write(L, "rmre/y.txt", "old y\n", 0644));
        TRY(fst_mkdir(L, "rmre/sub", 0755));
        TRY(fst_write(L, "rmre/sub/z.txt", "old z\n", 0644));
        TRY(fst_symlink("keep.txt", L, "link"));
        TRY(fst_mkdir(L, "typechg", 0755));
        TRY(fst_write(L, "typechg/f1", "one\n", 0644));
        TRY(fst_write(L, "typechg/f2", "two\n", 0644));
        TRY(fst_write(L, "file2dir", "was a file\n", 0644));
        TRY(fst_mkdir(L, "dirmode", 0755));
        TRY(fst_write(L, "dirmode/inside.txt", "unchanged\n", 0644));
        TRY(fst_mkdir(L, "tree", 0755));
        TRY(fst_mkdir(L, "tree/a", 0755));
        TRY(fst_mkdir(L, "tree/a/b", 0755));
        TRY(fst_write(L, "tree/a/b/c.txt", "deep\n", 0644));
        TRY(fst_mkdir(L, "rodir", 0755));
        TRY(fst_write(L, "rodir/old.txt", "old\n", 0644));
        TRY(fst_mkdir(L, "unchanged", 0755));
        TRY(fst_write(L, "unchanged/u.txt", "u\n", 0644));
        return 0;
}

/* what `mv` does when rename() says EXDEV: copy, then remove */
static int move_tree(const char *from, const char *to)
{
        if (rename(from, to) == 0)
                return 0;
        if (errno != EXDEV)
                return -errno;
        TRY(fst_copy_tree(from, to));
        TRY(fst_rm_rf(from));
        return 0;
}

int fst_scenario_edit(const char *M)
{
        _cleanup_free_ char *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
        _cleanup_close_ int fd = -1;

        TRY(fst_write(M, "edit.txt", "new content\n", 0644));
        p1 = fst_path(M, "del.txt");
        SYS(unlink(p1));
        free(p1);
        p1 = fst_path(M, "touch.txt");
        SYS(utimensat(AT_FDCWD, p1, NULL, 0));                  /* copy-up, same content */
        free(p1);
        p1 = fst_path(M, "openw.txt");
        fd = open(p1, O_WRONLY | O_CLOEXEC);                    /* copy-up, nothing written */
        SYS(fd);
        free(p1);
        p1 = fst_path(M, "chmod.txt");
        SYS(chmod(p1, 0755));
        free(p1);
        p1 = fst_path(M, "chmodback.txt");
        SYS(chmod(p1, 0600));
        SYS(chmod(p1, 0644));
        TRY(fst_write(M, "same.txt", "same bytes\n", 0644));    /* rewritten identically */
        TRY(fst_write(M, "samesize.txt", "bbbb", 0644));

        p2 = fst_path(M, "mv-src.txt");
        p3 = fst_path(M, "mv-dst.txt");
        SYS(rename(p2, p3));
        free(p2);
        free(p3);
        p2 = fst_path(M, "dir");
        p3 = fst_path(M, "dir2");
        TRY(move_tree(p2, p3));                                 /* EXDEV without redirect_dir */

        p4 = fst_path(M, "rmre");
        TRY(fst_rm_rf(p4));
        SYS(mkdir(p4, 0755));                                   /* opaque now */
        TRY(fst_write(M, "rmre/x.txt", "new x\n", 0644));

        free(p1);
        p1 = fst_path(M, "link");
        SYS(unlink(p1));
        TRY(fst_symlink("edit.txt", M, "link"));

        TRY(fst_write(M, "new.txt", "brand new\n", 0644));
        TRY(fst_mkdir(M, "newdir", 0755));
        TRY(fst_write(M, "newdir/inner.txt", "inner\n", 0600));
        TRY(fst_mkdir(M, "newdir/empty", 0700));
        TRY(fst_symlink("/etc/passwd", M, "escape"));
        free(p1);
        p1 = fst_path(M, "fifo");
        SYS(mkfifo(p1, 0644));

        free(p1);
        p1 = fst_path(M, "typechg");
        TRY(fst_rm_rf(p1));
        TRY(fst_write(M, "typechg", "now a file\n", 0644));
        free(p1);
        p1 = fst_path(M, "file2dir");
        SYS(unlink(p1));
        TRY(fst_mkdir(M, "file2dir", 0755));
        TRY(fst_write(M, "file2dir/c.txt", "in the new dir\n", 0644));

        free(p1);
        p1 = fst_path(M, "dirmode");
        SYS(chmod(p1, 0700));
        free(p1);
        p1 = fst_path(M, "tree");
        TRY(fst_rm_rf(p1));
        /* a file in, then the directory made read-only */
        TRY(fst_write(M, "rodir/new.txt", "new in ro\n", 0644));
        free(p1);
        p1 = fst_path(M, "rodir");
        SYS(chmod(p1, 0555));
        return 0;
}

const struct fst_expect fst_scenario_changes[] = {
        { "edit.txt", "modified", NULL },
        { "del.txt", "deleted", NULL },
        { "chmod.txt", "modified", NULL },
        { "samesize.txt", "modified", NULL },
        { "mv-src.txt", "deleted", NULL },
        { "mv-dst.txt", "added", NULL },
        { "dir", "deleted", NULL },
        { "dir/a.txt", "deleted", NULL },
        { "dir/sub", "deleted", NULL },
        { "dir/sub/b.txt", "deleted", NULL },
        { "dir2", "added", NULL },
        { "dir2/a.txt", "added", NULL },
        { "dir2/sub", "added", NULL },
        { "dir2/sub/b.txt", "added", NULL },
        { "rmre/x.txt", "modified", NULL },
        { "rmre/y.txt", "deleted", NULL },
        { "rmre/sub", "deleted", NULL },
        { "rmre/sub/z.txt", "deleted", NULL },
        { "link", "modified", NULL },
        { "new.txt", "added", NULL },
        { "newdir", "added", NULL },
        { "newdir/inner.txt", "added", NULL },
        { "newdir/empty", "added", NULL },
        { "escape", "added", NULL },
        { "fifo", "added", "special" },
        { "typechg", "modified", NULL },
        { "typechg/f1", "deleted", NULL },
        { "typechg/f2", "deleted", NULL },
        { "file2dir", "modified", NULL },
        { "file2dir/c.txt", "added", NULL },
        { "dirmode", "modified", NULL },
        { "tree", "deleted", NULL },
        { "tree/a", "deleted", NULL },
        { "tree/a/b", "deleted", NULL },
        { "tree/a/b/c.txt", "deleted", NULL },
        { "rodir", "modified", NULL },
        { "rodir/new.txt", "added", NULL },
};
const unsigned fst_scenario_n_changes = ELEMENTSOF(fst_scenario_changes);
