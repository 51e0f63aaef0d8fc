/* test-changeset.c - the change set of a real overlay.
 *
 * A child enters a new user and mount namespace, mounts
 * overlay(lower, upper, work, userxattr) and edits through it (edit,
 * create, delete, rename a file and a directory, rm -rf and recreate a
 * directory (opaque), type changes, mode changes, copy-ups that change
 * nothing, a fifo, a symlink pointing out). The parent then computes the
 * change set of upper against lower and checks it is exactly those
 * changes, and that lower was not touched. Skips (77) where user
 * namespaces or overlay in them are not available. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tap-skip.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "record/blobstore.h"
#include "workspace/changeset.h"
#include "lib/fsutil.h"
#include "fstest.h"
#include "lib/util.h"

struct fixture {
        struct fst_overlay o;
        char *snapshot;         /* copy of lower taken before the run */
        int upper_fd, lower_fd;
        bool skip;
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        int r;

        *state = f;
        f->upper_fd = f->lower_fd = -1;
        if (fst_overlay_init(&f->o) < 0 || fst_scenario_lower(f->o.lower) < 0)
                return -1;
        f->snapshot = fst_path(f->o.base, "snapshot");
        if (fst_copy_tree(f->o.lower, f->snapshot) < 0)
                return -1;
        r = fst_overlay_run(&f->o, fst_scenario_edit);
        if (r == 77) {
                f->skip = true;
                return 0;
        }
        if (r != 0)
                return -1;
        f->upper_fd = open(f->o.upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        f->lower_fd = open(f->o.lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return f->upper_fd >= 0 && f->lower_fd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        closep(&f->upper_fd);
        closep(&f->lower_fd);
        fst_overlay_done(&f->o);
        free(f->snapshot);
        free(f);
        return 0;
}

#define SKIP_IF_NO_OVERLAY(f) do { if ((f)->skip) tap_skip("no overlay in a user namespace under $TMPDIR here"); } while (0)

/* The scenario really produced what the overlay-specific code handles. */
static void upper_has_overlay_markers(void **state)
{
        struct fixture *f = *state;
        struct stat st;
        char buf[8] = "";

        SKIP_IF_NO_OVERLAY(f);
        assert_int_equal(fstatat(f->upper_fd, "del.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        assert_int_equal(fstatat(f->upper_fd, "dir", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        {
                _cleanup_free_ char *p = fst_path(f->o.upper, "rmre");
                assert_int_equal(lgetxattr(p, "user.overlay.opaque", buf, sizeof(buf)), 1);
                assert_int_equal(buf[0], 'y');
        }
        /* the no-op copy-ups are really in upper */
        assert_int_equal(fstatat(f->upper_fd, "touch.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(fstatat(f->upper_fd, "chmodback.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(fstatat(f->upper_fd, "same.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
}

static void exact_changes(void **state)
{
        struct fixture *f = *state;
        struct changeset cs = { 0 };

        SKIP_IF_NO_OVERLAY(f);
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, NULL, NULL, &cs), 0);
        for (size_t i = 0; i < cs.n; i++)
                print_message("# %-9s %-10s %s\n", change_kind_to_string(cs.entries[i].kind),
                              change_skip_to_string(cs.entries[i].skip) ?: "", cs.entries[i].path);
        assert_int_equal(cs.n, fst_scenario_n_changes);
        for (unsigned i = 0; i < fst_scenario_n_changes; i++) {
                const struct fst_expect *e = &fst_scenario_changes[i];
                const struct change *c = changeset_find(&cs, e->path);

                if (!c)
                        fail_msg("missing change: %s", e->path);
                assert_string_equal(change_kind_to_string(c->kind), e->kind);
                if (e->skip)
                        assert_string_equal(change_skip_to_string(c->skip), e->skip);
                else
                        assert_int_equal(c->skip, CHANGE_SKIP_NONE);
        }
        /* sorted as a tree: parents first, a subtree contiguous */
        for (size_t i = 1; i < cs.n; i++)
                assert_true(fs_path_compare(cs.entries[i - 1].path, cs.entries[i].path) < 0);
        assert_int_equal(cs.n_carried, fst_scenario_n_changes - 1);    /* all but the fifo */
        assert_int_equal(cs.n_unlisted, 0);
        changeset_done(&cs);
}

static void entry_details(void **state)
{
        struct fixture *f = *state;
        struct changeset cs = { 0 };
        const struct change *c;
        char hex[DIGEST_HEX_SIZE];

        SKIP_IF_NO_OVERLAY(f);
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, NULL, NULL, &cs), 0);

        c = changeset_find(&cs, "edit.txt");
        assert_non_null(c);
        assert_string_equal(c->sha256, fst_sha("new content\n", hex));
        assert_string_equal(c->old_sha256, fst_sha("old\n", hex));
        assert_int_equal(c->size, 12);
        assert_int_equal(c->old_size, 4);
        assert_int_equal(c->mode, S_IFREG | 0644);

        c = changeset_find(&cs, "chmod.txt");              /* mode only */
        assert_string_equal(c->sha256, c->old_sha256);
        assert_int_equal(c->mode, S_IFREG | 0755);
        assert_int_equal(c->old_mode, S_IFREG | 0644);

        c = changeset_find(&cs, "del.txt");
        assert_string_equal(c->old_sha256, fst_sha("bye\n", hex));
        assert_string_equal(c->sha256, "");
        assert_int_equal(c->mode, 0);

        c = changeset_find(&cs, "link");                   /* retargeted symlink */
        assert_true(S_ISLNK(c->mode));
        assert_string_equal(c->link_target, "edit.txt");
        assert_string_equal(c->sha256, fst_sha("edit.txt", hex));
        assert_string_equal(c->old_sha256, fst_sha("keep.txt", hex));

        c = changeset_find(&cs, "escape");                 /* recorded, not followed */
        assert_true(S_ISLNK(c->mode));
        assert_string_equal(c->link_target, "/etc/passwd");
        assert_string_equal(c->sha256, fst_sha("/etc/passwd", hex));
        assert_int_equal(c->size, strlen("/etc/passwd"));

        c = changeset_find(&cs, "typechg");                /* dir -> file */
        assert_true(S_ISDIR(c->old_mode));
        assert_true(S_ISREG(c->mode));
        assert_string_equal(c->sha256, fst_sha("now a file\n", hex));

        c = changeset_find(&cs, "file2dir");               /* file -> dir */
        assert_true(S_ISREG(c->old_mode));
        assert_true(S_ISDIR(c->mode));
        assert_string_equal(c->old_sha256, fst_sha("was a file\n", hex));

        c = changeset_find(&cs, "dirmode");
        assert_int_equal(c->mode, S_IFDIR | 0700);
        assert_int_equal(c->old_mode, S_IFDIR | 0755);

        c = changeset_find(&cs, "rmre/x.txt");             /* under an opaque dir */
        assert_string_equal(c->sha256, fst_sha("new x\n", hex));
        assert_string_equal(c->old_sha256, fst_sha("old x\n", hex));

        c = changeset_find(&cs, "dir2/sub/b.txt");
        assert_int_equal(c->mode, S_IFREG | 0600);
        c = changeset_find(&cs, "dir/sub");
        assert_int_equal(c->old_mode, S_IFDIR | 0750);

        c = changeset_find(&cs, "fifo");
        assert_int_equal(c->skip, CHANGE_SKIP_SPECIAL);
        assert_true(S_ISFIFO(c->mode));

        /* the copy-ups that changed nothing are not reported */
        assert_null(changeset_find(&cs, "touch.txt"));
        assert_null(changeset_find(&cs, "openw.txt"));
        assert_null(changeset_find(&cs, "chmodback.txt"));
        assert_null(changeset_find(&cs, "same.txt"));
        assert_null(changeset_find(&cs, "rmre"));
        assert_null(changeset_find(&cs, "keep.txt"));
        changeset_done(&cs);
}

static void lower_untouched(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *why = NULL;

        SKIP_IF_NO_OVERLAY(f);
        if (fst_compare_trees(f->o.lower, f->snapshot, &why) != 0)
                fail_msg("lower changed: %s", why ? why : "?");
}

static void stores_blobs(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *dir = NULL;
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        struct changeset cs = { 0 };
        char hex[DIGEST_HEX_SIZE];

        SKIP_IF_NO_OVERLAY(f);
        dir = fst_path(f->o.base, "blobs");
        assert_int_equal(blobstore_open(dir, &bs), 0);
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, NULL, bs, &cs), 0);
        assert_int_equal(cs.n, fst_scenario_n_changes);
        for (size_t i = 0; i < cs.n; i++) {
                const struct change *c = &cs.entries[i];
                if (c->skip == CHANGE_SKIP_NONE && c->kind != CHANGE_DELETED && S_ISREG(c->mode)) {
                        _cleanup_close_ int fd = blobstore_open_blob(bs, c->sha256);
                        assert_true(fd >= 0);
                        assert_int_equal(digest_fd(fd, hex), 0);
                        assert_string_equal(hex, c->sha256);
                }
        }
        /* an identical copy-up did not cost a blob */
        assert_false(blobstore_has(bs, fst_sha("touched\n", hex)));
        assert_false(blobstore_has(bs, fst_sha("opened for writing\n", hex)));
        changeset_done(&cs);
}

static void limits(void **state)
{
        struct fixture *f = *state;
        struct changeset cs = { 0 };
        struct changeset_limits lim = { .max_files = 5 };
        size_t skipped = 0;

        SKIP_IF_NO_OVERLAY(f);
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, &lim, NULL, &cs), 0);
        assert_int_equal(cs.n_carried, 5);
        for (size_t i = 0; i < cs.n; i++)
                if (cs.entries[i].skip != CHANGE_SKIP_NONE) {
                        skipped++;
                        assert_true(cs.entries[i].skip == CHANGE_SKIP_MAX_FILES ||
                                    cs.entries[i].skip == CHANGE_SKIP_SPECIAL);
                        assert_string_equal(cs.entries[i].sha256, "");
                }
        assert_true(skipped <= 5);      /* listing is capped too */
        assert_int_equal(cs.n_carried + skipped + cs.n_unlisted, fst_scenario_n_changes);
        changeset_done(&cs);

        lim = (struct changeset_limits){ .max_bytes = 20 };
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, &lim, NULL, &cs), 0);
        assert_true(cs.bytes <= 20);
        skipped = 0;
        for (size_t i = 0; i < cs.n; i++)
                if (cs.entries[i].skip == CHANGE_SKIP_MAX_BYTES)
                        skipped++;
        assert_true(skipped > 0);
        assert_int_equal(cs.n + cs.n_unlisted, fst_scenario_n_changes);
        changeset_done(&cs);
}

static void empty_upper(void **state)
{
        _cleanup_free_ char *base = fst_mkdtemp("cs-empty");
        _cleanup_close_ int u = -1, l = -1;
        struct changeset cs = { 0 };
        _cleanup_free_ char *up = NULL, *lo = NULL;

        assert_non_null(base);
        up = fst_path(base, "u");
        lo = fst_path(base, "l");
        assert_int_equal(mkdir(up, 0755), 0);
        assert_int_equal(mkdir(lo, 0755), 0);
        assert_int_equal(fst_write(lo, "f", "x", 0644), 0);
        u = open(up, O_RDONLY | O_DIRECTORY);
        l = open(lo, O_RDONLY | O_DIRECTORY);
        assert_int_equal(changeset_compute(u, l, NULL, NULL, &cs), 0);
        assert_int_equal(cs.n, 0);
        changeset_done(&cs);
        fst_rm_rf(base);
}

static const struct change *find(const struct changeset *cs, const char *path)
{
        const struct change *c = changeset_find(cs, path);
        assert_non_null(c);
        return c;
}

/* A lower file that changed after "since" (the job's start) marks its
 * change lower_changed; the others stay unmarked. Runs last: it changes
 * the ctime (only) of a lower file. */
static void host_changes(void **state)
{
        struct fixture *f = *state;
        struct changeset cs = { 0 };
        struct changeset_limits lim = { 0 };
        struct stat st;

        SKIP_IF_NO_OVERLAY(f);
        assert_int_equal(clock_gettime(CLOCK_REALTIME_COARSE, &lim.since), 0);
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, &lim, NULL, &cs), 0);
        for (size_t i = 0; i < cs.n; i++)
                assert_false(cs.entries[i].lower_changed);
        changeset_done(&cs);

        /* the host touches edit.txt (ctime only: same mode) and del.txt */
        assert_int_equal(fstatat(f->lower_fd, "edit.txt", &st, 0), 0);
        assert_int_equal(fchmodat(f->lower_fd, "edit.txt", st.st_mode & 07777, 0), 0);
        assert_int_equal(fstatat(f->lower_fd, "del.txt", &st, 0), 0);
        assert_int_equal(fchmodat(f->lower_fd, "del.txt", st.st_mode & 07777, 0), 0);
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, &lim, NULL, &cs), 0);
        assert_true(find(&cs, "edit.txt")->lower_changed);
        assert_true(find(&cs, "del.txt")->lower_changed);
        assert_false(find(&cs, "chmod.txt")->lower_changed);
        assert_false(find(&cs, "samesize.txt")->lower_changed);
        changeset_done(&cs);

        /* without a since, nothing is judged */
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, NULL, NULL, &cs), 0);
        assert_false(find(&cs, "edit.txt")->lower_changed);
        changeset_done(&cs);
}

/* Past collection's deadline, nothing more is hashed or carried: every
 * change is there as skipped "time" (or counted), none carried. */
static void collection_deadline(void **state)
{
        struct fixture *f = *state;
        struct changeset cs = { 0 };
        struct changeset_limits lim = { .deadline = { .tv_sec = 0, .tv_nsec = 1 } };
        size_t timed = 0;

        SKIP_IF_NO_OVERLAY(f);
        assert_int_equal(changeset_compute(f->upper_fd, f->lower_fd, &lim, NULL, &cs), 0);
        assert_int_equal(cs.n_carried, 0);
        assert_true(cs.n > 0);
        for (size_t i = 0; i < cs.n; i++) {
                assert_int_equal(cs.entries[i].skip, CHANGE_SKIP_TIME);
                assert_string_equal(cs.entries[i].sha256, "");
                timed++;
        }
        assert_string_equal(change_skip_to_string(CHANGE_SKIP_TIME), "time");
        changeset_done(&cs);
        (void)timed;
}

static void kind_names(void **state)
{
        assert_int_equal(change_kind_from_string("deleted"), CHANGE_DELETED);
        assert_int_equal(change_kind_from_string("renamed"), _CHANGE_KIND_INVALID);
        assert_string_equal(change_kind_to_string(CHANGE_ADDED), "added");
        assert_null(change_skip_to_string(CHANGE_SKIP_NONE));
        assert_true(fs_path_compare("a", "a/b") < 0);
        assert_true(fs_path_compare("a/b", "a.b") < 0);
        assert_true(fs_path_compare("a/z", "a0") < 0);
        assert_false(fs_path_valid("../x"));
        assert_false(fs_path_valid("a/./b"));
        assert_false(fs_path_valid("/etc"));
        assert_false(fs_path_valid("a//b"));
        assert_false(fs_path_valid("a/"));
        assert_true(fs_path_valid("a/b..c/.d"));
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(upper_has_overlay_markers),
                cmocka_unit_test(exact_changes),
                cmocka_unit_test(entry_details),
                cmocka_unit_test(lower_untouched),
                cmocka_unit_test(stores_blobs),
                cmocka_unit_test(limits),
                cmocka_unit_test(empty_upper),
                cmocka_unit_test(kind_names),
                cmocka_unit_test(collection_deadline),
                cmocka_unit_test(host_changes),
        };

        /* one group: TAP allows one plan per program */
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, setup, teardown);
}
