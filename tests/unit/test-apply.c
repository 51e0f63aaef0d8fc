/* test-apply.c - applying a real overlay's change set.
 *
 * The overlay scenario of fstest.c runs once (a child in a new user and
 * mount namespace edits through a real overlay and copies the merged view
 * to `expected`). Each test applies the change set to a fresh copy of the
 * lower dir and compares trees: applied, it must equal the merged view;
 * refused (conflicts) or failed (injected errors, bad source content), it
 * must equal what it was before, down to leftover temporaries. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tap-skip.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "workspace/apply.h"
#include "record/blobstore.h"
#include "workspace/changeset.h"
#include "workspace/protected.h"
#include "lib/fsutil.h"
#include "fstest.h"
#include "lib/util.h"

struct fixture {
        struct fst_overlay o;
        struct changeset cs;
        struct blobstore *bs;
        int upper_fd;
        bool skip;
        unsigned copies;
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        _cleanup_close_ int lower_fd = -1;
        _cleanup_free_ char *blobs = NULL;
        int r;

        *state = f;
        f->upper_fd = -1;
        if (fst_overlay_init(&f->o) < 0 || fst_scenario_lower(f->o.lower) < 0)
                return -1;
        r = fst_overlay_run(&f->o, fst_scenario_edit);
        if (r == 77) {
                f->skip = true;
                return 0;
        }
        if (r != 0)
                return -1;
        f->upper_fd = open(f->o.upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        lower_fd = open(f->o.lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        blobs = fst_path(f->o.base, "blobs");
        if (f->upper_fd < 0 || lower_fd < 0 || blobstore_open(blobs, &f->bs) < 0)
                return -1;
        return changeset_compute(f->upper_fd, lower_fd, NULL, f->bs, &f->cs) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        changeset_done(&f->cs);
        blobstore_free(f->bs);
        closep(&f->upper_fd);
        fst_overlay_done(&f->o);
        free(f);
        return 0;
}

#define SKIP_IF_NO_OVERLAY(f) do { if ((f)->skip) tap_skip("no overlay in a user namespace under $TMPDIR here"); } while (0)

/* A fresh copy of lower; returns its path, *fd an O_DIRECTORY fd. */
static char *copy_of_lower(struct fixture *f, int *fd)
{
        _cleanup_free_ char *name = xasprintf("target%u", f->copies++);
        char *p = fst_path(f->o.base, name);

        assert_int_equal(fst_copy_tree(f->o.lower, p), 0);
        *fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(*fd >= 0);
        return p;
}

static void assert_same_tree(const char *a, const char *b)
{
        _cleanup_free_ char *why = NULL;
        int r = fst_compare_trees(a, b, &why);

        if (r != 0)
                fail_msg("%s vs %s: %s", a, b, why ? why : strerror(-r));
}

static void apply_from_upper(void **state)
{
        struct fixture *f = *state;
        struct apply_source src = { .upper_fd = -1 };
        struct apply_result res;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *t = NULL;

        SKIP_IF_NO_OVERLAY(f);
        t = copy_of_lower(f, &fd);
        src.upper_fd = f->upper_fd;
        assert_int_equal(apply_changeset(&f->cs, fd, &src, NULL, &res), 0);
        assert_int_equal(res.n_conflicts, 0);
        assert_int_equal(res.n_applied, f->cs.n_carried);
        assert_int_equal(res.n_skipped, 1);     /* the fifo */
        assert_int_equal(res.n_leftover, 0);
        apply_result_done(&res);
        assert_same_tree(t, f->o.expected);

        /* again: everything is already there, nothing changes */
        assert_int_equal(apply_changeset(&f->cs, fd, &src, NULL, &res), 0);
        assert_int_equal(res.n_applied, 0);
        assert_int_equal(res.n_already, f->cs.n_carried);
        apply_result_done(&res);
        assert_same_tree(t, f->o.expected);
}

static void apply_from_blobs(void **state)
{
        struct fixture *f = *state;
        struct apply_source src = { .upper_fd = -1 };
        struct apply_result res;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *t = NULL;

        SKIP_IF_NO_OVERLAY(f);
        t = copy_of_lower(f, &fd);
        src.blobs = f->bs;      /* the upper dir could be gone by now */
        assert_int_equal(apply_changeset(&f->cs, fd, &src, NULL, &res), 0);
        apply_result_done(&res);
        assert_same_tree(t, f->o.expected);
}

static void refuses_on_conflict(void **state)
{
        struct fixture *f = *state;
        struct apply_source src = { .upper_fd = -1 };
        struct apply_result res;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *t = NULL, *snap = NULL, *outside = NULL, *p = NULL;
        static const struct {
                const char *path, *reason;
        } want[] = {
                { "del.txt", "changed" },
                { "edit.txt", "changed" },
                { "new.txt", "exists" },
                { "newdir", "exists" },
                { "newdir/empty", "unsafe" },
                { "newdir/inner.txt", "unsafe" },
                { "tree/a/extra.txt", "not_empty" },
                { "typechg", "type" },
                { "typechg/f1", "unsafe" },
                { "typechg/f2", "unsafe" },
        };

        SKIP_IF_NO_OVERLAY(f);
        t = copy_of_lower(f, &fd);
        src.upper_fd = f->upper_fd;
        /* the user kept working after the run */
        assert_int_equal(fst_write(t, "edit.txt", "user edit\n", 0644), 0);
        assert_int_equal(fst_write(t, "del.txt", "still needed\n", 0644), 0);
        assert_int_equal(fst_write(t, "new.txt", "someone else's\n", 0644), 0);
        assert_int_equal(fst_write(t, "tree/a/extra.txt", "keep me\n", 0644), 0);
        p = fst_path(t, "typechg");
        assert_int_equal(fst_rm_rf(p), 0);
        assert_int_equal(symlink("keep.txt", p), 0);
        /* and a symlink where the change set wants to create a directory:
         * nothing may be written through it */
        outside = fst_path(f->o.base, "outside");
        assert_int_equal(mkdir(outside, 0755), 0);
        assert_int_equal(fst_symlink(outside, t, "newdir"), 0);

        snap = fst_path(f->o.base, "conflict-snapshot");
        assert_int_equal(fst_copy_tree(t, snap), 0);

        assert_int_equal(apply_changeset(&f->cs, fd, &src, NULL, &res), -ESTALE);
        for (size_t i = 0; i < res.n_conflicts; i++)
                print_message("# conflict %s: %s\n", res.conflicts[i].path,
                              apply_conflict_reason_to_string(res.conflicts[i].reason));
        assert_int_equal(res.n_conflicts, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_string_equal(res.conflicts[i].path, want[i].path);
                assert_string_equal(apply_conflict_reason_to_string(res.conflicts[i].reason),
                                    want[i].reason);
        }
        apply_result_done(&res);
        assert_same_tree(t, snap);              /* nothing changed, no temporaries */
        assert_false(fst_tree_has_prefix(outside, ""));
}

/* Fail before every commit step in turn: each time, the target must come
 * back exactly as it was; the last run succeeds. */
static void rolls_back(void **state)
{
        struct fixture *f = *state;
        struct apply_source src = { .upper_fd = -1 };
        struct apply_result res;
        struct apply_options opts = { 0 };
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *t = NULL, *snap = NULL;
        int r;

        SKIP_IF_NO_OVERLAY(f);
        t = copy_of_lower(f, &fd);
        snap = fst_path(f->o.base, "rollback-snapshot");
        assert_int_equal(fst_copy_tree(t, snap), 0);
        src.blobs = f->bs;
        for (opts.fail_before_step = 1;; opts.fail_before_step++) {
                r = apply_changeset(&f->cs, fd, &src, &opts, &res);
                if (r == 0)
                        break;
                assert_int_equal(r, -EIO);
                assert_int_equal(res.n_rollback_failed, 0);
                assert_int_equal(res.n_leftover, 0);
                apply_result_done(&res);
                assert_same_tree(t, snap);
                assert_true(opts.fail_before_step < 1000);
        }
        apply_result_done(&res);
        print_message("# %u commit steps, each rolled back\n", opts.fail_before_step - 1);
        assert_true(opts.fail_before_step > 20);
        assert_same_tree(t, f->o.expected);
}

/* Content that does not hash to the recorded sha256 is refused before
 * anything in the target changes. */
static void verifies_source(void **state)
{
        struct fixture *f = *state;
        struct apply_source src = { .upper_fd = -1 };
        struct apply_result res;
        _cleanup_close_ int fd = -1, ufd = -1;
        _cleanup_free_ char *t = NULL, *snap = NULL, *u2 = NULL;

        SKIP_IF_NO_OVERLAY(f);
        t = copy_of_lower(f, &fd);
        snap = fst_path(f->o.base, "source-snapshot");
        assert_int_equal(fst_copy_tree(t, snap), 0);
        u2 = fst_path(f->o.base, "upper-tampered");
        assert_int_equal(fst_copy_tree(f->o.upper, u2), 0);
        assert_int_equal(fst_write(u2, "newdir/inner.txt", "tampered\n", 0600), 0);
        ufd = open(u2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(ufd >= 0);
        src.upper_fd = ufd;
        assert_int_equal(apply_changeset(&f->cs, fd, &src, NULL, &res), -EBADMSG);
        apply_result_done(&res);
        assert_same_tree(t, snap);
}

/* Filesystems without RENAME_EXCHANGE / RENAME_NOREPLACE (renameat2 with
 * flags fails with EINVAL there): a seccomp filter in a child makes it so,
 * and apply must still get every state right, rollbacks included. */
static int fallback_child(struct fixture *f, const char *t, const char *snap)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        struct apply_source src = { .upper_fd = -1, .blobs = f->bs };
        struct apply_options opts = { 0 };
        struct apply_result res;
        _cleanup_free_ char *why = NULL;
        int fd, r;

        if (!ctx ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(renameat2), 1,
                             SCMP_A4(SCMP_CMP_NE, 0)) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0)
                return 77;
        if (renameat2(AT_FDCWD, "/nonexistent-a", AT_FDCWD, "/nonexistent-b", RENAME_NOREPLACE) == 0 ||
            errno != EINVAL)
                return 78;
        fd = open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 79;
        for (opts.fail_before_step = 1; opts.fail_before_step < 1000; opts.fail_before_step++) {
                r = apply_changeset(&f->cs, fd, &src, &opts, &res);
                if (r == 0)
                        break;
                if (r != -EIO || res.n_rollback_failed || res.n_leftover)
                        return 10;
                apply_result_done(&res);
                if (fst_compare_trees(t, snap, &why) != 0) {
                        fprintf(stderr, "# after failing at step %u: %s\n", opts.fail_before_step, why);
                        return 11;
                }
        }
        apply_result_done(&res);
        if (fst_compare_trees(t, f->o.expected, &why) != 0) {
                fprintf(stderr, "# applied: %s\n", why);
                return 12;
        }
        return 0;
}

static void without_rename_flags(void **state)
{
        struct fixture *f = *state;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *t = NULL, *snap = NULL;
        int status;
        pid_t pid;

        SKIP_IF_NO_OVERLAY(f);
        t = copy_of_lower(f, &fd);
        snap = fst_path(f->o.base, "fallback-snapshot");
        assert_int_equal(fst_copy_tree(t, snap), 0);
        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(fallback_child(f, t, snap));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                tap_skip("cannot load a seccomp filter hiding openat2 here");
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void skipped_and_unsafe_entries(void **state)
{
        _cleanup_free_ char *base = fst_mkdtemp("apply-unit");
        _cleanup_close_ int fd = -1;
        struct change e[2] = { 0 };
        struct changeset cs = { .entries = e, .n = 2 };
        struct apply_source src = { .upper_fd = -1 };
        struct apply_result res;

        assert_non_null(base);
        fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        e[0] = (struct change){ .path = "../escape", .kind = CHANGE_ADDED, .mode = S_IFDIR | 0755 };
        e[1] = (struct change){ .path = "x", .kind = CHANGE_ADDED, .mode = S_IFIFO | 0644,
                                .skip = CHANGE_SKIP_SPECIAL };
        assert_int_equal(apply_changeset(&cs, fd, &src, NULL, &res), -ESTALE);
        assert_int_equal(res.n_conflicts, 1);
        assert_int_equal(res.conflicts[0].reason, APPLY_CONFLICT_UNSAFE);
        assert_int_equal(res.n_skipped, 1);
        apply_result_done(&res);
        assert_false(fst_tree_has_prefix(base, ""));
        fst_rm_rf(base);
}

/* Which paths are protected (protected.h): components at any depth,
 * case folded, subtrees, symlink targets read as text, profile globs. */
static void protected_paths(void **state)
{
        static const char *const yes[] = {
                ".git", ".git/hooks/pre-commit", ".git/config", ".GIT/Config", "sub/.git/hooks/x",
                ".gitmodules", "a/.gitattributes", ".envrc", ".env", ".env.local", ".bashrc", "home/.zshenv",
                ".vscode/tasks.json", ".VSCode/settings.json", ".idea/workspace.xml", ".mcp.json",
                ".claude/settings.json", ".cursor/mcp.json", ".devcontainer/devcontainer.json",
                ".github/workflows/ci.yml", ".npmrc", ".yarnrc.yml", "mise.toml", ".ssh/authorized_keys",
                NULL,
        };
        static const char *const no[] = {
                "git", ".gitignore", "src/main.c", ".github/CODEOWNERS", "a.git/x", "x.envrc", "envrc",
                "workflows/x", ".vscodex/y", "README.md", ".environment", NULL,
        };
        char *extra[] = { "secrets", "deploy/*.sh", NULL };
        struct change c = { .kind = CHANGE_ADDED, .mode = S_IFLNK | 0777 };

        (void)state;
        for (size_t i = 0; yes[i]; i++)
                if (!protected_path_reason(yes[i], NULL))
                        fail_msg("%s should be protected", yes[i]);
        for (size_t i = 0; no[i]; i++)
                if (protected_path_reason(no[i], NULL))
                        fail_msg("%s should not be protected", no[i]);
        /* a profile's patterns: a name anywhere, a directory's subtree, a glob */
        assert_non_null(protected_path_reason("a/secrets/key", extra));
        assert_non_null(protected_path_reason("Secrets", extra));
        assert_non_null(protected_path_reason("deploy/run.sh", extra));
        assert_null(protected_path_reason("deploy/run.py", extra));
        assert_null(protected_path_reason("a/secrets-not", extra));
        /* symlinks: their target, read lexically from the link's directory */
        c.path = "docs/hook";
        c.link_target = "../.git/hooks/pre-commit";
        assert_non_null(protected_change_reason(&c, NULL));
        c.link_target = "/home/u/.bashrc";
        assert_non_null(protected_change_reason(&c, NULL));
        c.link_target = "../src/./main.c";
        assert_null(protected_change_reason(&c, NULL));
        c.link_target = "../../../.git";
        assert_non_null(protected_change_reason(&c, NULL));
        c.kind = CHANGE_DELETED;        /* a removed link points nowhere */
        c.link_target = "../.git/config";
        assert_null(protected_change_reason(&c, NULL));
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(apply_from_upper),
                cmocka_unit_test(apply_from_blobs),
                cmocka_unit_test(refuses_on_conflict),
                cmocka_unit_test(rolls_back),
                cmocka_unit_test(verifies_source),
                cmocka_unit_test(without_rename_flags),
                cmocka_unit_test(skipped_and_unsafe_entries),
                cmocka_unit_test(protected_paths),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, setup, teardown);
}
