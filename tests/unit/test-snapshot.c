/* test-snapshot.c - unit tests for the --snapshot copy: what it carries
 * (files, dirs, symlinks as strings, FIFOs new, holes as holes, modes
 * without set-id), what it leaves out (sockets), and every bound
 * refusing rather than copying part of a tree. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "workspace/snapshot.h"
#include "fstest.h"
#include "lib/util.h"

static int copy(const char *src, const char *dst, const struct snapshot_limits *lim,
                struct snapshot_stats *st, char **fail)
{
        _cleanup_close_ int s = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mkdir(dst, 0700) < 0)
                return -errno;
        _cleanup_close_ int d = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return snapshot_copy(s, d, lim, st, fail);
}

static int at(const char *dir, const char *rel, struct stat *st)
{
        _cleanup_free_ char *p = fst_path(dir, rel);
        return lstat(p, st) < 0 ? -errno : 0;
}

static void carries_the_tree(void **state)
{
        _cleanup_free_ char *base = fst_mkdtemp("snap"), *src = fst_path(base, "src"), *dst = fst_path(base, "dst");
        _cleanup_free_ char *fail = NULL, *sock = NULL, *sparse = NULL, *got = NULL;
        struct snapshot_limits lim = { .max_bytes = 1 << 20, .max_entries = 100 };
        struct snapshot_stats st;
        struct stat s;
        char link[64];

        assert_int_equal(fst_mkdir(base, "src", 0755), 0);
        assert_int_equal(fst_write(src, "a.txt", "alpha\n", 0640), 0);
        assert_int_equal(fst_write(src, "new\nline", "x", 0644), 0);
        assert_int_equal(fst_write(src, "suid", "s", 04755), 0);
        assert_int_equal(fst_mkdir(src, "ro", 0555), 0);
        assert_int_equal(fst_symlink("/etc/passwd", src, "abs"), 0);
        sock = fst_path(src, "sock");
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        close(fd);
        _cleanup_free_ char *fifo = fst_path(src, "fifo");
        assert_int_equal(mkfifo(fifo, 0620), 0);
        sparse = fst_path(src, "sparse");
        fd = open(sparse, O_WRONLY | O_CREAT, 0644);
        assert_int_equal(ftruncate(fd, 1LL << 30), 0);      /* 1G of hole, far over max_bytes */
        close(fd);

        assert_int_equal(copy(src, dst, &lim, &st, &fail), 0);
        assert_int_equal(st.left_out, 1);
        assert_int_equal(st.entries, 7);
        got = fst_read(dst, "a.txt");
        assert_string_equal(got, "alpha\n");
        assert_int_equal(at(dst, "a.txt", &s), 0);
        assert_int_equal(s.st_mode & 07777, 0640);
        assert_int_equal(at(dst, "suid", &s), 0);
        assert_int_equal(s.st_mode & 07777, 0755);          /* set-id dropped */
        assert_int_equal(at(dst, "ro", &s), 0);
        assert_int_equal(s.st_mode & 07777, 0555);
        assert_int_equal(at(dst, "abs", &s), 0);
        assert_true(S_ISLNK(s.st_mode));
        _cleanup_free_ char *abs = fst_path(dst, "abs");
        ssize_t n = readlink(abs, link, sizeof(link) - 1);
        assert_true(n > 0);
        link[n] = '\0';
        assert_string_equal(link, "/etc/passwd");          /* the string, not the file */
        assert_int_equal(at(dst, "fifo", &s), 0);
        assert_true(S_ISFIFO(s.st_mode));
        assert_int_equal(at(dst, "sock", &s), -ENOENT);
        assert_int_equal(at(dst, "sparse", &s), 0);
        assert_int_equal(s.st_size, 1LL << 30);
        assert_true((uint64_t)s.st_blocks * 512 < (1 << 20));
        assert_int_equal(at(dst, "new\nline", &s), 0);
        fst_rm_rf(base);
}

static void bounds_refuse(void **state)
{
        _cleanup_free_ char *base = fst_mkdtemp("snapb"), *src = fst_path(base, "src");
        struct snapshot_stats st;
        char *fail = NULL;
        char big[8192];

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(fst_mkdir(base, "src", 0755), 0);
        assert_int_equal(fst_write(src, "big", big, 0644), 0);
        assert_int_equal(fst_write(src, "small", "s", 0644), 0);
        assert_int_equal(fst_mkdir(src, "d1", 0755), 0);
        assert_int_equal(fst_mkdir(src, "d1/d2", 0755), 0);

        struct snapshot_limits bytes = { .max_bytes = 4096 };
        _cleanup_free_ char *d1 = fst_path(base, "d1");
        assert_int_equal(copy(src, d1, &bytes, &st, &fail), -ENOSPC);
        assert_string_equal(fail, "big");
        fail = (free(fail), NULL);

        struct snapshot_limits entries = { .max_entries = 2 };
        _cleanup_free_ char *d2 = fst_path(base, "d2");
        assert_int_equal(copy(src, d2, &entries, &st, &fail), -EMLINK);
        fail = (free(fail), NULL);

        struct snapshot_limits depth = { .max_depth = 1 };
        _cleanup_free_ char *d3 = fst_path(base, "d3");
        assert_int_equal(copy(src, d3, &depth, &st, &fail), -ELOOP);
        assert_string_equal(fail, "d1/d2");
        fail = (free(fail), NULL);

        struct snapshot_limits late = { .deadline = { 1, 0 } };     /* long past */
        _cleanup_free_ char *d4 = fst_path(base, "d4");
        assert_int_equal(copy(src, d4, &late, &st, &fail), -ETIME);
        fail = (free(fail), NULL);
        fst_rm_rf(base);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(carries_the_tree),
                cmocka_unit_test(bounds_refuse),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
