/* test-image.c - the image module's pure parts: image names, and
 * unpack_layer() on tar streams written here with libarchive's writer
 * (entries tar(1) would not write: "..", absolute names, links out). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image/image-internal.h"
#include "lib/fsutil.h"
#include "lib/util.h"
#include "tap-skip.h"

static void names(void **state)
{
        const char *ok[][2] = {
                { "bb", "bb:latest" }, { "bb:1.0", "bb:1.0" }, { "library/debian:12", "library/debian:12" },
                { "docker.io/library/busybox:1.36", "docker.io/library/busybox:1.36" },
                { "a.b_c-d:T_1.2-x", "a.b_c-d:T_1.2-x" },
        };
        const char *bad[] = { "", ":tag", "Bad Name", "a:b:c", "../x", "a/../b", "a//b", "a/", "-x", ".x",
                              "x:", "x:a/b", "x\n", "a..b", "registry:5000/x" };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                _cleanup_free_ char *n = image_ref_normalize(ok[i][0]);
                assert_non_null(n);
                assert_string_equal(n, ok[i][1]);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                print_message("# %s\n", bad[i]);
                assert_null(image_ref_normalize(bad[i]));
        }
        assert_string_equal(digest_ref_hex("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
                            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_null(digest_ref_hex("sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        assert_null(digest_ref_hex("sha256:../../etc/passwd"));
}

/* ---- layers ---------------------------------------------------------------- */

struct entry {
        const char *name;
        mode_t type;            /* AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR; 0: hardlink */
        const char *data;       /* content, or the link target */
        mode_t perm;
};

/* a tar stream of entries, gzip'ed, in a memfd at offset 0 */
static int layer(const struct entry *e, size_t n)
{
        int fd = memfd_create("layer", MFD_CLOEXEC);
        struct archive *a = archive_write_new();
        assert_true(fd >= 0);
        archive_write_set_format_pax_restricted(a);
        archive_write_add_filter_gzip(a);
        assert_int_equal(archive_write_open_fd(a, fd), ARCHIVE_OK);
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *ae = archive_entry_new();
                archive_entry_set_pathname(ae, e[i].name);
                archive_entry_set_perm(ae, e[i].perm ? e[i].perm : 0644);
                if (e[i].type == 0) {
                        archive_entry_set_filetype(ae, AE_IFREG);
                        archive_entry_set_hardlink(ae, e[i].data);
                } else {
                        archive_entry_set_filetype(ae, e[i].type);
                        if (e[i].type == AE_IFLNK)
                                archive_entry_set_symlink(ae, e[i].data);
                        if (e[i].type == AE_IFREG)
                                archive_entry_set_size(ae, (la_int64_t)strlen(e[i].data ? e[i].data : ""));
                }
                assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
                if (e[i].type == AE_IFREG && e[i].data)
                        archive_write_data(a, e[i].data, strlen(e[i].data));
                archive_entry_free(ae);
        }
        archive_write_close(a);
        archive_write_free(a);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        return fd;
}

struct dirs {
        char top[64];
        int topfd, rootfd;
};

static void dirs_make(struct dirs *d)
{
        snprintf(d->top, sizeof(d->top), "/tmp/test-image.XXXXXX");
        assert_non_null(mkdtemp(d->top));
        d->topfd = open(d->top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(mkdirat(d->topfd, "rootfs", 0755), 0);
        assert_int_equal(mkdirat(d->topfd, "outside", 0755), 0);
        d->rootfd = openat(d->topfd, "rootfs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void dirs_done(struct dirs *d)
{
        close(d->rootfd);
        fs_remove_tree_at(d->topfd, "rootfs");
        fs_remove_tree_at(d->topfd, "outside");
        close(d->topfd);
        rmdir(d->top);
}

/* unpack entries; r and *err as unpack_layer() returns them */
static int unpack(struct dirs *d, const struct entry *e, size_t n, uint64_t max, struct unpack_stats *st,
                  char **err)
{
        struct image_limits lim = { .max_layer_bytes = max, .owner_uid = (uid_t)-1, .owner_gid = (gid_t)-1 };
        _cleanup_close_ int fd = layer(e, n);
        return unpack_layer(fd, d->rootfd, &lim, st, err);
}

static void refused(const struct entry *e, size_t n, const char *why)
{
        struct dirs d;
        struct unpack_stats st;
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_ char **left = NULL;

        dirs_make(&d);
        assert_true(unpack(&d, e, n, 0, &st, &err) < 0);
        print_message("# %s\n", err);
        assert_non_null(strstr(err, why));
        /* nothing beside the layer */
        _cleanup_close_ int out = openat(d.topfd, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(fs_list_dir(out, &left), 0);
        dirs_done(&d);
}

static void hostile(void **state)
{
        refused((struct entry[]){ { "../outside/x", AE_IFREG, "x" } }, 1, "an absolute name, \"..\"");
        refused((struct entry[]){ { "a/../../outside/x", AE_IFREG, "x" } }, 1, "an absolute name, \"..\"");
        refused((struct entry[]){ { "/tmp/x", AE_IFREG, "x" } }, 1, "an absolute name");
        refused((struct entry[]){ { "l", AE_IFLNK, "../outside" }, { "l/x", AE_IFREG, "x" } }, 2,
                "layer entry 'l/x': a symlink on the way");
        refused((struct entry[]){ { "h", 0, "/etc/shadow" } }, 1, "a hardlink to a name outside the layer");
        refused((struct entry[]){ { "h", 0, "../outside/y" } }, 1, "a hardlink to a name outside the layer");
        refused((struct entry[]){ { "l", AE_IFLNK, "/etc" }, { "h", 0, "l/shadow" } }, 2, "a symlink on the way");
        refused((struct entry[]){ { "d", AE_IFDIR, NULL, 0755 }, { "h", 0, "d" } }, 2, "a hardlink to a directory");
        refused((struct entry[]){ { ".wh.x/y", AE_IFREG, "" } }, 1, "a directory named like a whiteout");
}

static void neutralised(void **state)
{
        struct dirs d;
        struct unpack_stats st;
        _cleanup_free_ char *err = NULL;
        struct stat sb;
        char v[8];

        dirs_make(&d);
        const struct entry e[] = {
                { "./bin/", AE_IFDIR, NULL, 0555 },
                { "./bin/su", AE_IFREG, "#!", 04755 },
                { "./dev/null", AE_IFCHR, NULL, 0666 },
                { "./etc/gone", AE_IFREG, "" },         /* this layer's own: the whiteout below is moot */
                { "./etc/.wh.gone", AE_IFREG, "" },
                { "./etc/.wh.lower", AE_IFREG, "" },
                { "./opq/.wh..wh..opq", AE_IFREG, "" },
                { "./opq/.wh.moot", AE_IFREG, "" },
                { "./link", AE_IFLNK, "/etc/shadow" },  /* a symlink out is data, never followed */
                { "./bin/again", 0, "bin/su" },
        };
        assert_int_equal(unpack(&d, e, ELEMENTSOF(e), 0, &st, &err), 0);
        assert_int_equal(st.specials, 1);
        assert_int_equal(st.setid, 1);
        assert_int_equal(st.whiteouts, 1);
        assert_int_equal(st.opaque, 1);
        assert_int_equal(fstatat(d.rootfd, "bin/su", &sb, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(sb.st_mode & 07777, 0755);
        assert_int_equal(sb.st_nlink, 2);
        assert_int_equal(fstatat(d.rootfd, "bin", &sb, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(sb.st_mode & 07777, 0755);     /* u+w for the store */
        assert_int_equal(fstatat(d.rootfd, "dev/null", &sb, AT_SYMLINK_NOFOLLOW), -1);
        assert_int_equal(fstatat(d.rootfd, "etc/gone", &sb, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(getxattr(d.top, "x", v, sizeof(v)) < 0, true);
        _cleanup_free_ char *lower = xasprintf("%s/rootfs/etc/lower", d.top);
        _cleanup_free_ char *gone = xasprintf("%s/rootfs/etc/gone", d.top);
        _cleanup_free_ char *etc = xasprintf("%s/rootfs/etc", d.top);
        _cleanup_free_ char *opq = xasprintf("%s/rootfs/opq", d.top);
        _cleanup_free_ char *moot = xasprintf("%s/rootfs/opq/moot", d.top);
        _cleanup_free_ char *root = xasprintf("%s/rootfs", d.top);
        assert_int_equal(getxattr(lower, "user.overlay.whiteout", v, sizeof(v)), 1);
        assert_int_equal(getxattr(gone, "user.overlay.whiteout", v, sizeof(v)), -1);
        assert_int_equal(getxattr(etc, "user.overlay.opaque", v, sizeof(v)), 1);
        assert_int_equal(v[0], 'x');
        assert_int_equal(getxattr(root, "user.overlay.opaque", v, sizeof(v)), 1);
        assert_int_equal(v[0], 'x');
        assert_int_equal(getxattr(opq, "user.overlay.opaque", v, sizeof(v)), 1);
        assert_int_equal(v[0], 'y');
        assert_int_equal(access(moot, F_OK), -1);
        char target[64] = { 0 };
        assert_int_equal(readlinkat(d.rootfd, "link", target, sizeof(target) - 1), 11);
        assert_string_equal(target, "/etc/shadow");
        dirs_done(&d);
}

static void bounded(void **state)
{
        struct dirs d;
        struct unpack_stats st;
        _cleanup_free_ char *err = NULL, *big = xmalloc(70000);

        memset(big, 'a', 69999);
        big[69999] = '\0';
        dirs_make(&d);
        const struct entry e[] = { { "small", AE_IFREG, "x" }, { "big", AE_IFREG, big } };
        assert_int_equal(unpack(&d, e, 2, 65536, &st, &err), -EFBIG);
        assert_non_null(strstr(err, "layer entry 'big': the layer unpacks to more than max_layer_size"));
        dirs_done(&d);
        free(err);
        err = NULL;
        dirs_make(&d);
        assert_int_equal(unpack(&d, e, 2, 80000, &st, &err), 0);
        assert_int_equal(st.bytes, 70000 + 2 * 512);
        dirs_done(&d);
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(names),
                cmocka_unit_test(hostile),
                cmocka_unit_test(neutralised),
                cmocka_unit_test(bounded),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
