/* test-blobstore.c - put, dedup, open, gc of the content-addressed store. */
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
#include <sys/wait.h>

#include "record/blobstore.h"
#include "record/store.h"
#include "fstest.h"
#include "lib/fsutil.h"
#include "lib/util.h"

static int put_text(struct blobstore *bs, const char *text, char hex[DIGEST_HEX_SIZE])
{
        int p[2], r;
        uint64_t size;

        if (pipe(p) < 0)
                return -errno;
        (void)write_all(p[1], text, strlen(text));
        close(p[1]);
        r = blobstore_put_fd(bs, p[0], 0, hex, &size);
        close(p[0]);
        if (r >= 0 && size != strlen(text))
                return -EIO;
        return r;
}

static void put_open_dedup(void **state)
{
        _cleanup_free_ char *dir = fst_mkdtemp("blobs"), *blob = NULL, *rel = NULL;
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        char hex[DIGEST_HEX_SIZE], hex2[DIGEST_HEX_SIZE], want[DIGEST_HEX_SIZE];
        struct stat st1, st2;

        assert_non_null(dir);
        assert_int_equal(blobstore_open(dir, &bs), 0);
        assert_int_equal(put_text(bs, "hello blob\n", hex), 1);         /* new */
        assert_string_equal(hex, fst_sha("hello blob\n", want));

        /* layout: ab/cdef..., read-only */
        rel = blobstore_relpath(hex);
        assert_int_equal(strlen(rel), 65);
        assert_int_equal(rel[2], '/');
        blob = fst_path(dir, rel);
        assert_int_equal(stat(blob, &st1), 0);
        assert_int_equal(st1.st_mode & 0777, 0400);

        assert_int_equal(put_text(bs, "hello blob\n", hex2), 0);        /* already there */
        assert_string_equal(hex, hex2);
        assert_int_equal(stat(blob, &st2), 0);
        assert_int_equal(st1.st_ino, st2.st_ino);                       /* not rewritten */

        {
                _cleanup_close_ int fd = blobstore_open_blob(bs, hex);
                char buf[64] = "";
                assert_true(fd >= 0);
                assert_int_equal(read(fd, buf, sizeof(buf)), 11);
                assert_string_equal(buf, "hello blob\n");
        }
        assert_true(blobstore_has(bs, hex));
        assert_false(blobstore_has(bs, fst_sha("never stored", want)));
        assert_int_equal(blobstore_open_blob(bs, "../../../../etc/passwd"), -EINVAL);
        assert_int_equal(blobstore_open_blob(bs, fst_sha("never stored", want)), -ENOENT);
        /* no temporaries left behind */
        assert_false(fst_tree_has_prefix(dir, ".tmp-"));
        fst_rm_rf(dir);
}

static void too_big_stores_nothing(void **state)
{
        _cleanup_free_ char *dir = fst_mkdtemp("blobs");
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        char hex[DIGEST_HEX_SIZE];
        int p[2];

        assert_int_equal(blobstore_open(dir, &bs), 0);
        assert_int_equal(pipe(p), 0);
        assert_int_equal(write_all(p[1], "0123456789", 10), 0);
        close(p[1]);
        assert_int_equal(blobstore_put_fd(bs, p[0], 5, hex, NULL), -EFBIG);
        close(p[0]);
        assert_false(fst_tree_has_prefix(dir, ""));     /* not even a temporary */
        fst_rm_rf(dir);
}

static void gc_keeps_the_set(void **state)
{
        _cleanup_free_ char *dir = fst_mkdtemp("blobs");
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        char a[DIGEST_HEX_SIZE], b[DIGEST_HEX_SIZE], c[DIGEST_HEX_SIZE];
        const char *keep[] = { b, b };

        assert_int_equal(blobstore_open(dir, &bs), 0);
        assert_int_equal(put_text(bs, "a", a), 1);
        assert_int_equal(put_text(bs, "b", b), 1);
        assert_int_equal(put_text(bs, "c", c), 1);
        assert_int_equal(fst_write(dir, "README", "not a blob", 0644), 0);
        assert_int_equal(blobstore_gc(bs, keep, ELEMENTSOF(keep)), 2);
        assert_false(blobstore_has(bs, a));
        assert_true(blobstore_has(bs, b));
        assert_false(blobstore_has(bs, c));
        {
                _cleanup_free_ char *s = fst_read(dir, "README");
                assert_string_equal(s, "not a blob");  /* foreign files untouched */
        }
        assert_int_equal(blobstore_gc(bs, NULL, 0), 1);
        assert_false(blobstore_has(bs, b));
        fst_rm_rf(dir);
}

/* Temporaries carry their writer's pid and start time; gc removes those
 * whose writer is gone at once, a live writer's never, and an older
 * hutch's (no owner in the name) only after an hour. */
static void gc_temporaries(void **state)
{
        _cleanup_free_ char *dir = fst_mkdtemp("blobs"), *mine = NULL, *dead = NULL, *reused = NULL;
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        _cleanup_strv_ char **names = NULL;
        uint64_t start;
        pid_t child;
        int status;
        char a[DIGEST_HEX_SIZE];

        (void)state;
        assert_non_null(dir);
        assert_int_equal(proc_start_time(getpid(), &start), 0);
        /* a pid that is surely free: a child we reaped */
        child = fork();
        assert_true(child >= 0);
        if (child == 0)
                _exit(0);
        assert_int_equal(waitpid(child, &status, 0), child);

        assert_int_equal(blobstore_open(dir, &bs), 0);
        /* a batch's temporaries stay until committed: named for us */
        blobstore_batch_begin(bs);
        assert_int_equal(put_text(bs, "staged\n", a), 1);
        assert_true(fs_list_dir(blobstore_dirfd(bs), &names) >= 1);
        mine = xasprintf(".tmp-%d-%llu-", (int)getpid(), (unsigned long long)start);
        bool found = false;
        for (char **n = names; *n; n++)
                found |= startswith(*n, mine);
        assert_true(found);

        dead = xasprintf(".tmp-%d-%llu-0123456789abcdef", (int)child, (unsigned long long)start);
        reused = xasprintf(".tmp-%d-%llu-0123456789abcdef", (int)getpid(), (unsigned long long)start + 1);
        assert_int_equal(fst_write(dir, dead, "half", 0600), 0);
        assert_int_equal(fst_write(dir, reused, "half", 0600), 0);
        assert_int_equal(fst_write(dir, ".tmp-0123456789abcdef", "old style, fresh", 0600), 0);
        assert_int_equal(blobstore_gc(bs, (const char *[]){ a }, 1), 0);
        _cleanup_free_ char *p_dead = fst_path(dir, dead), *p_reused = fst_path(dir, reused),
                            *p_old = fst_path(dir, ".tmp-0123456789abcdef");
        assert_int_equal(access(p_dead, F_OK), -1);     /* writer gone */
        assert_int_equal(access(p_reused, F_OK), -1);   /* pid now another process */
        assert_int_equal(access(p_old, F_OK), 0);       /* cannot tell: the hour rule */
        /* the live batch's own temporary survived: it still commits */
        assert_int_equal(blobstore_batch_commit(bs), 0);
        assert_true(blobstore_has(bs, a));
        fst_rm_rf(dir);
}

/* Where renameat2 flags are unsupported (EINVAL), a hard link stands in
 * for RENAME_NOREPLACE: same result, still never replacing. */
/* Batch mode: staged blobs are usable through the handle but have no
 * name until commit; an uncommitted batch leaves nothing behind. */
static void batch_commit_and_drop(void **state)
{
        _cleanup_free_ char *dir = fst_mkdtemp("blobs"), *rel_a = NULL, *path_a = NULL;
        char a[DIGEST_HEX_SIZE], b[DIGEST_HEX_SIZE], a2[DIGEST_HEX_SIZE];
        struct stat st;

        assert_non_null(dir);
        {
                _cleanup_blobstore_ struct blobstore *bs = NULL;
                assert_int_equal(blobstore_open(dir, &bs), 0);
                blobstore_batch_begin(bs);
                assert_int_equal(put_text(bs, "first\n", a), 1);
                assert_int_equal(put_text(bs, "second\n", b), 1);
                assert_int_equal(put_text(bs, "first\n", a2), 0);      /* dedup within the batch */
                assert_string_equal(a, a2);
                assert_true(blobstore_has(bs, a));
                int fd = blobstore_open_blob(bs, b);
                assert_true(fd >= 0);
                char buf[16] = { 0 };
                assert_int_equal(read(fd, buf, sizeof(buf)), 7);
                assert_string_equal(buf, "second\n");
                close(fd);
                /* not named yet */
                rel_a = blobstore_relpath(a);
                path_a = fst_path(dir, rel_a);
                assert_int_equal(stat(path_a, &st), -1);
                assert_int_equal(blobstore_batch_commit(bs), 0);
                assert_int_equal(stat(path_a, &st), 0);
                assert_int_equal(st.st_mode & 0777, 0400);
                assert_true(blobstore_has(bs, b));
                /* a second batch that is never committed */
                blobstore_batch_begin(bs);
                assert_int_equal(put_text(bs, "abandoned\n", b), 1);
                assert_int_equal(put_text(bs, "first\n", a2), 0);      /* dedup against the store */
        }
        /* freed uncommitted: no temporary and no name for "abandoned" */
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        assert_int_equal(blobstore_open(dir, &bs), 0);
        assert_false(blobstore_has(bs, b));
        assert_true(blobstore_has(bs, a));
        _cleanup_strv_ char **names = NULL;
        assert_true(fs_list_dir(blobstore_dirfd(bs), &names) >= 0);
        for (char **n = names; *n; n++)
                assert_false(startswith(*n, ".tmp-"));
        fst_rm_rf(dir);
}

static int no_noreplace_child(const char *dir)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        struct blobstore *bs = NULL;
        char hex[DIGEST_HEX_SIZE], want[DIGEST_HEX_SIZE];
        int r = 0;

        if (!ctx ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(renameat2), 1,
                             SCMP_A4(SCMP_CMP_NE, 0)) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0)
                return 77;
        if (blobstore_open(dir, &bs) < 0)
                return 10;
        if (put_text(bs, "fallback", hex) != 1 || !streq(hex, fst_sha("fallback", want)))
                r = 11;
        else if (put_text(bs, "fallback", hex) != 0)
                r = 12;
        else if (!blobstore_has(bs, hex))
                r = 13;
        else if (fst_tree_has_prefix(dir, ".tmp-"))
                r = 14;
        blobstore_free(bs);
        return r;
}

static void without_rename_noreplace(void **state)
{
        _cleanup_free_ char *dir = fst_mkdtemp("blobs");
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(no_noreplace_child(dir));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                tap_skip("cannot load a seccomp filter hiding renameat2 here");
        assert_int_equal(WEXITSTATUS(status), 0);
        fst_rm_rf(dir);
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(put_open_dedup),
                cmocka_unit_test(too_big_stores_nothing),
                cmocka_unit_test(gc_keeps_the_set),
                cmocka_unit_test(gc_temporaries),
                cmocka_unit_test(batch_commit_and_drop),
                cmocka_unit_test(without_rename_noreplace),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
