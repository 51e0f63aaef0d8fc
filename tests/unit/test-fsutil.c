/* test-fsutil.c - the symlink-proof path helpers every filesystem module
 * relies on: resolution beneath a root with openat2 and, forced by a
 * seccomp filter that makes openat2 fail with ENOSYS (as on kernels
 * before 5.6), with the per-component O_NOFOLLOW walk; tree removal that
 * never follows a link; path validation and tree order. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tap-skip.h"

#include <fcntl.h>
#include <seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/digest.h"
#include "lib/fsutil.h"
#include "fstest.h"
#include "lib/util.h"

struct fixture {
        char *base, *root, *outside;
        int root_fd;
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));

        *state = f;
        f->base = fst_mkdtemp("fsutil");
        if (!f->base)
                return -1;
        f->root = fst_path(f->base, "root");
        f->outside = fst_path(f->base, "outside");
        if (mkdir(f->root, 0755) < 0 || mkdir(f->outside, 0755) < 0 ||
            fst_write(f->outside, "secret", "secret\n", 0600) < 0 ||
            fst_mkdir(f->root, "a", 0755) < 0 || fst_mkdir(f->root, "a/b", 0755) < 0 ||
            fst_write(f->root, "a/b/file", "inside\n", 0644) < 0 ||
            fst_symlink(f->outside, f->root, "a/out") < 0 ||                 /* absolute, out */
            fst_symlink("../..", f->root, "a/b/up") < 0 ||                   /* relative, out */
            fst_symlink("b", f->root, "a/same") < 0 ||                       /* inside, still a link */
            fst_symlink("file", f->root, "a/b/flink") < 0)
                return -1;
        f->root_fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return f->root_fd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        closep(&f->root_fd);
        fst_rm_rf(f->base);
        free(f->base);
        free(f->root);
        free(f->outside);
        free(f);
        return 0;
}

/* The checks, as a function returning the first failing line (0 = all
 * good), so they can run in a child under a seccomp filter too. */
static int resolution_checks(int root)
{
        const char *name;
        char buf[16] = "";
        int fd;

#define CHECK(cond) do { if (!(cond)) return __LINE__; } while (0)
        fd = fs_open_beneath(root, "a/b/file", O_RDONLY, 0);
        CHECK(fd >= 0);
        CHECK(read(fd, buf, sizeof(buf) - 1) == 7 && streq(buf, "inside\n"));
        close(fd);
        CHECK(fs_open_beneath(root, "a/out/secret", O_RDONLY, 0) == -ELOOP);   /* link on the way */
        CHECK(fs_open_beneath(root, "a/b/up/outside/secret", O_RDONLY, 0) == -ELOOP);
        CHECK(fs_open_beneath(root, "a/same/file", O_RDONLY, 0) == -ELOOP);    /* even inside */
        CHECK(fs_open_beneath(root, "a/b/flink", O_RDONLY, 0) == -ELOOP);      /* last component */
        CHECK(fs_open_beneath(root, "a/out", O_RDONLY | O_DIRECTORY, 0) == -ELOOP);
        CHECK(fs_open_beneath(root, "../x", O_RDONLY, 0) == -EINVAL);
        CHECK(fs_open_beneath(root, "/etc/passwd", O_RDONLY, 0) == -EINVAL);
        CHECK(fs_open_beneath(root, "a/b/missing", O_RDONLY, 0) == -ENOENT);
        fd = fs_open_beneath(root, "a/b/new", O_WRONLY | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0);
        close(fd);
        CHECK(fs_open_beneath(root, "a/out/new", O_WRONLY | O_CREAT, 0600) == -ELOOP);

        fd = fs_open_parent(root, "a/b/file", &name);
        CHECK(fd >= 0 && streq(name, "file"));
        close(fd);
        fd = fs_open_parent(root, "top", &name);
        CHECK(fd >= 0 && streq(name, "top"));
        close(fd);
        CHECK(fs_open_parent(root, "a/out/secret", &name) == -ELOOP);
        CHECK(fs_open_parent(root, "a/b/flink/x", &name) == -ELOOP);
        CHECK(fs_open_beneath(root, "a/b/file/x", O_RDONLY, 0) == -ENOTDIR);
        return 0;
#undef CHECK
}

static void beneath_with_openat2(void **state)
{
        struct fixture *f = *state;

        assert_int_equal(resolution_checks(f->root_fd), 0);
        {
                _cleanup_free_ char *p = fst_path(f->root, "a/b/new");
                assert_int_equal(unlink(p), 0);
        }
}

static void beneath_without_openat2(void **state)
{
        struct fixture *f = *state;
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
                int line;

                if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0) < 0 ||
                    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0)
                        _exit(77);
                /* make sure the fallback is what runs */
                if (syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0) >= 0 || errno != ENOSYS)
                        _exit(78);
                line = resolution_checks(f->root_fd);
                _exit(line == 0 ? 0 : line % 200 + 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                tap_skip("cannot load a seccomp filter hiding openat2 here");
        if (WEXITSTATUS(status) != 0)
                fail_msg("fallback walk: check failed (exit %d: line %% 200 + 1)", WEXITSTATUS(status));
        {
                _cleanup_free_ char *p = fst_path(f->root, "a/b/new");
                assert_int_equal(unlink(p), 0);
        }
}

static void remove_tree_never_follows(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *doomed = fst_path(f->base, "doomed");
        _cleanup_free_ char *secret = NULL;
        _cleanup_close_ int base_fd = open(f->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        assert_int_equal(fst_copy_tree(f->root, doomed), 0);
        assert_int_equal(fst_mkdir(doomed, "locked", 0500), 0);        /* no write permission */
        assert_int_equal(fst_write(doomed, "a/b/ro", "x", 0400), 0);
        {
                _cleanup_free_ char *locked = fst_path(doomed, "locked");
                assert_int_equal(chmod(locked, 0700), 0);
                assert_int_equal(fst_write(doomed, "locked/inner", "x", 0600), 0);
                assert_int_equal(chmod(locked, 0500), 0);
        }
        assert_int_equal(fs_remove_tree_at(base_fd, "doomed"), 0);
        assert_int_equal(access(doomed, F_OK), -1);
        /* the links' targets are untouched */
        secret = fst_read(f->outside, "secret");
        assert_non_null(secret);
        assert_string_equal(secret, "secret\n");
        assert_int_equal(fs_remove_tree_at(base_fd, "doomed"), -ENOENT);
}

static void unique_names(void **state)
{
        struct fixture *f = *state;
        char a[64], b[64];
        int fd;

        fd = fs_create_unique(f->root_fd, ".tmp-", 'f', 0600, NULL, a, sizeof(a));
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(fs_create_unique(f->root_fd, ".tmp-", 'd', 0700, NULL, b, sizeof(b)), 0);
        assert_string_not_equal(a, b);
        assert_true(startswith(a, ".tmp-") && strlen(a) == 5 + 16);
        assert_int_equal(fs_remove_tree_at(f->root_fd, a), 0);
        assert_int_equal(fs_remove_tree_at(f->root_fd, b), 0);
        assert_int_equal(fs_create_unique(f->root_fd, ".tmp-", 'f', 0600, NULL, a, 8), -ENAMETOOLONG);
}

static void paths(void **state)
{
        assert_true(fs_path_compare("a", "a/b") < 0);
        assert_true(fs_path_compare("a/b", "a.b") < 0);
        assert_true(fs_path_compare("a/z", "a0") < 0);
        assert_true(fs_path_compare("a/b", "a/b") == 0);
        assert_true(fs_path_compare("b", "a/z") > 0);
        assert_true(fs_path_valid("a/b..c/.d"));
        assert_true(fs_path_valid("x"));
        assert_false(fs_path_valid(""));
        assert_false(fs_path_valid("../x"));
        assert_false(fs_path_valid("a/../x"));
        assert_false(fs_path_valid("a/./b"));
        assert_false(fs_path_valid("."));
        assert_false(fs_path_valid("/etc"));
        assert_false(fs_path_valid("a//b"));
        assert_false(fs_path_valid("a/"));
}

/* holes stay holes, the hash covers the zeros, the budget counts the
 * length and is checked before anything is read */
static void sparse_copy(void **state)
{
        struct fixture *f = *state;
        char a[64], b[64], hex1[DIGEST_HEX_SIZE], hex2[DIGEST_HEX_SIZE];
        struct digest d;
        struct stat st;

        int in = fs_create_unique(f->root_fd, "in-", 'f', 0600, NULL, a, sizeof(a));
        assert_true(in >= 0);
        assert_int_equal(pwrite(in, "x", 1, 64 << 20), 1);   /* 64 MiB of hole, then x */
        int out = fs_create_unique(f->root_fd, "out-", 'f', 0600, NULL, b, sizeof(b));
        assert_true(out >= 0);

        assert_int_equal(lseek(in, 0, SEEK_SET), 0);
        digest_init(&d);
        assert_int_equal(fs_copy_digest(in, out, &d, 0), (64 << 20) + 1);
        digest_final_hex(&d, hex1);
        assert_int_equal(fstat(out, &st), 0);
        assert_int_equal(st.st_size, (64 << 20) + 1);
        assert_true((uint64_t)st.st_blocks * 512 < 1 << 20);

        /* the copy, read densely, hashes the same */
        assert_int_equal(lseek(out, 0, SEEK_SET), 0);
        assert_int_equal(digest_fd(out, hex2), 0);
        assert_string_equal(hex1, hex2);

        /* over the budget: refused before a byte of the hole is hashed */
        assert_int_equal(lseek(in, 0, SEEK_SET), 0);
        assert_int_equal(fs_copy_digest(in, -1, NULL, 1 << 20), -EFBIG);
        close(in);
        close(out);
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(beneath_with_openat2),
                cmocka_unit_test(beneath_without_openat2),
                cmocka_unit_test(remove_tree_never_follows),
                cmocka_unit_test(unique_names),
                cmocka_unit_test(paths),
                cmocka_unit_test(sparse_copy),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, setup, teardown);
}
