/* cli/apply.c - `hutch apply ID [--to DIR]`: carry the workspace changes a
 * run recorded into a directory (by default the --workdir DIR it ran on),
 * all or nothing (apply.h): when the directory changed under the run in
 * a way that collides with the changes, nothing is written and every
 * conflict is listed; --skip-conflicts leaves those paths out and
 * applies the rest, again all or nothing. Changes to protected paths
 * (workspace/protected.h) are refused unless --skip-protected or
 * --allow-protected; what a killed apply left in the directory is
 * cleaned up by the next one (journal, below). Also the shared helper
 * behind `hutch run --apply` and session commits. */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "workspace/apply.h"
#include "workspace/protected.h"
#include "record/blobstore.h"
#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "run/runfiles.h"
#include "lib/sanitize.h"
#include "lib/digest.h"
#include "lib/fsutil.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "record/store.h"

static void help(void)
{
        printf("Usage: hutch apply [--to DIR] [--force] [--keep-modes] [--overwrite]\n"
               "                   [--skip-conflicts] [--skip-protected | --allow-protected] ID\n"
               "\n"
               "Apply the workspace changes of run ID (see hutch diff) to DIR, by\n"
               "default the --workdir the run was started with. If DIR changed\n"
               "since in a way that collides with them, nothing is changed, the\n"
               "conflicts are listed and hutch apply exits 1. Applying twice is\n"
               "harmless.\n"
               "\n"
               "  --to DIR    apply to DIR instead\n"
               "  --force     apply even if the run did not succeed or some changes\n"
               "              were not recorded (they are left out); conflicts are\n"
               "              never overridden\n"
               "  --keep-modes  install the permission bits the job left (set-uid\n"
               "              and set-gid are still dropped); by default your umask\n"
               "              filters them and the sticky bit is dropped\n"
               "  --overwrite install the job's version of paths the host changed\n"
               "              while the job ran (conflicts \"during_run\"); they must\n"
               "              still be as they were when the run ended\n"
               "  --skip-conflicts  apply every change that does not conflict and\n"
               "              list the paths left out (exit 1 if any was)\n"
               "\n"
               "A change to a protected path (.git/, .gitattributes, .envrc, shell rc\n"
               "files, .vscode/, .mcp.json, ... and the profile's [apply] protect;\n"
               "see hutch-apply(1)) would let the job run code as you later: by\n"
               "default nothing is applied, each such path is named and hutch apply\n"
               "exits 1.\n"
               "  --skip-protected   apply the rest, leave those out (exit 1)\n"
               "  --allow-protected  apply them too\n"
               "  -h, --help  this text\n");
}

/* Is path conflict's path itself or below it? */
static bool at_or_below(const char *path, const char *conflict)
{
        size_t n = strlen(conflict);
        return strncmp(path, conflict, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* cs without the entries at or below any of res's conflicts, and
 * without a directory it deletes or replaces that holds one (the host
 * put something there), as a view into cs (free only ret->entries).
 * Returns how many were left out. */
static size_t without_conflicts(const struct changeset *cs, const struct apply_result *res,
                                struct changeset *ret)
{
        size_t left = 0;

        *ret = (struct changeset){ .entries = xcalloc(cs->n ? cs->n : 1, sizeof(*cs->entries)) };
        for (size_t i = 0; i < cs->n; i++) {
                const struct change *c = &cs->entries[i];
                bool out = false;
                bool old_dir = c->kind != CHANGE_ADDED && S_ISDIR(c->old_mode);
                for (size_t k = 0; k < res->n_conflicts && !out; k++)
                        out = at_or_below(c->path, res->conflicts[k].path) ||
                              (old_dir && at_or_below(res->conflicts[k].path, c->path));
                if (out) {
                        left++;
                        continue;
                }
                ret->entries[ret->n++] = *c;
                if (c->skip == CHANGE_SKIP_NONE)
                        ret->n_carried++;
        }
        return left;
}

static void list_conflicts(const struct apply_result *res, bool *ret_during)
{
        for (size_t i = 0; i < res->n_conflicts; i++) {
                _cleanup_free_ char *p = sanitize_quote_name(res->conflicts[i].path);
                fprintf(stderr, "  %-10s %s\n", apply_conflict_reason_to_string(res->conflicts[i].reason), p);
                *ret_during |= res->conflicts[i].reason == APPLY_CONFLICT_DURING_RUN;
        }
}

/* Name each protected path of res and why. */
static void list_protected(const struct apply_result *res)
{
        for (size_t i = 0; i < res->n_protected; i++) {
                _cleanup_free_ char *p = sanitize_quote_name(res->protected[i].path);
                fprintf(stderr, "  protected  %s: %s\n", p, res->protected[i].reason);
        }
}

/* Say what became of the protected paths of res after apply returned r.
 * Returns whether any was left out (refused or skipped). */
static bool report_protected(const char *verb, const char *target, const struct apply_result *res,
                             const struct apply_options *opts, int r)
{
        if (!res->n_protected)
                return false;
        if (r == -EPERM) {
                log_error("%s: the run changes %zu protected path%s, which your tools would run as you; "
                          "nothing was applied to %s:", verb, res->n_protected,
                          res->n_protected == 1 ? "" : "s", target);
                list_protected(res);
                log_error("%s: review them (hutch diff); --skip-protected applies the rest, "
                          "--allow-protected applies them too", verb);
                return true;
        }
        if (opts->protected_policy == APPLY_PROTECTED_SKIP) {
                log_warning("%s: left out %zu protected path%s:", verb, res->n_protected,
                            res->n_protected == 1 ? "" : "s");
                list_protected(res);
                return true;
        }
        return false;
}

/* --skip-conflicts: leave out what conflicts, and what lies below it,
 * then try the rest, all or nothing again; each round leaves out at
 * least one entry, so at most cs->n rounds. */
static int apply_rest(const char *verb, const struct changeset *cs, int fd, const char *target,
                      const struct apply_source *src, const struct apply_options *opts, bool *ret_applied)
{
        struct changeset cur = { .entries = xcalloc(cs->n ? cs->n : 1, sizeof(*cs->entries)) };
        size_t left = 0;
        bool during = false, prot_left = false;
        int r;

        memcpy(cur.entries, cs->entries, cs->n * sizeof(*cs->entries));
        cur.n = cs->n;
        cur.n_carried = cs->n_carried;
        for (;;) {
                struct apply_result res = { 0 };
                r = apply_changeset(&cur, fd, src, opts, &res);
                /* the protected list is the same every round: said once,
                 * when the rounds end */
                if (r != -ESTALE)
                        prot_left = report_protected(verb, target, &res, opts, r);
                if (r == -EPERM) {
                        apply_result_done(&res);
                        break;
                }
                if (r != -ESTALE) {
                        if (r < 0)
                                log_error_errno(r, "%s: applying to %s failed, rolled back%s: %m", verb, target,
                                                res.n_rollback_failed ? " (not completely)" : "");
                        else
                                log_info("applied %zu change%s to %s%s", res.n_applied, res.n_applied == 1 ? "" : "s",
                                         target, res.n_already ? " (some were already there)" : "");
                        apply_result_done(&res);
                        break;
                }
                if (!left)
                        log_warning("%s: %s changed under the run; left out as conflicts:", verb, target);
                list_conflicts(&res, &during);
                struct changeset next;
                size_t n = without_conflicts(&cur, &res, &next);
                apply_result_done(&res);
                free(cur.entries);
                cur = next;
                left += n;
                if (!n) {
                        r = -ESTALE;    /* a conflict outside every entry: nothing can go */
                        break;
                }
        }
        free(cur.entries);
        if (during)
                log_warning("%s: during_run: the host changed these paths while the job ran; --overwrite "
                            "installs the job's version anyway", verb);
        if (r >= 0 && left)
                log_warning("%s: %zu change%s left out (conflicts above)", verb, left, left == 1 ? "" : "s");
        *ret_applied = r >= 0;
        return r < 0 || left || prot_left ? EXIT_FAILURE_GENERIC : EXIT_OK;
}

/* Everything or nothing (apply.h); *ret_applied: the change set is in. */
static int apply_all(const char *verb, const struct changeset *cs, int fd, const char *target,
                     const struct apply_source *src, const struct apply_options *opts, bool *ret_applied)
{
        struct apply_result res = { 0 };
        bool prot_left;
        int r;

        r = apply_changeset(cs, fd, src, opts, &res);
        prot_left = report_protected(verb, target, &res, opts, r);
        if (r == -EPERM) {
                apply_result_done(&res);
                return EXIT_FAILURE_GENERIC;
        }
        if (r == -ESTALE) {
                bool during = false;
                log_error("%s: %s changed under the run; nothing was applied. Conflicts:", verb, target);
                list_conflicts(&res, &during);
                if (during)
                        log_warning("%s: during_run: the host changed these paths while the job ran, so "
                                 "the job may not have seen those edits; --overwrite installs the job's "
                                 "version anyway", verb);
                apply_result_done(&res);
                return EXIT_FAILURE_GENERIC;
        }
        if (r < 0) {
                log_error_errno(r, "%s: applying to %s failed, rolled back%s: %m", verb, target,
                                res.n_rollback_failed ? " (not completely)" : "");
                apply_result_done(&res);
                return EXIT_FAILURE_GENERIC;
        }
        *ret_applied = true;
        log_info("applied %zu change%s to %s%s", res.n_applied, res.n_applied == 1 ? "" : "s", target,
                 res.n_already ? " (some were already there)" : "");
        apply_result_done(&res);
        return prot_left ? EXIT_FAILURE_GENERIC : EXIT_OK;
}

/* ---- leftovers of an interrupted apply ----------------------------------
 *
 * A SIGKILL during an apply leaves its temporaries in the target
 * (.hutch-apply-*: new versions being staged, old ones renamed aside;
 * apply.h), where `git add -A` would pick them up. apply_changeset()
 * names each one as it makes it (note_temp), and we append the names to
 * a journal in the state dir, one per target directory:
 * STATE/apply/<sha256 of the target's real path>.journal, records
 * "DIR\0NAME\0" (DIR relative to the target). The next apply to the same
 * directory that succeeds removes those still there that are provably
 * ours: recorded there, named .hutch-apply-*, owned by our uid (the
 * completed apply makes the old versions useless, as its own phase 4
 * would have; the change set's old contents stay in the blob store).
 * One that does not succeed names them instead. The journal goes when
 * nothing it names is left. A kill between making a temporary and
 * recording it (two adjacent system calls) leaves one unrecorded: it is
 * never removed, only its name pattern says whose it is. */

#define JOURNAL_MAX (64u << 20)

static char *journal_path(const char *target)
{
        _cleanup_free_ char *db = NULL, *real = realpath(target, NULL);
        char hex[DIGEST_HEX_SIZE];

        if (!real || store_default_path(&db) < 0)
                return NULL;
        digest_buffer(real, strlen(real), hex);
        return xasprintf("%s/apply/%s.journal", dirname(db), hex);
}

/* Open and lock the journal: one apply to a directory at a time, so no
 * apply takes another's live temporaries for leftovers. A journal the
 * previous holder removed while we waited is opened again. -1 if it
 * cannot be had (then nothing is recorded, and nothing removed). */
static int journal_open(const char *path)
{
        _cleanup_free_ char *dir = xstrdup(path);
        char *slash = strrchr(dir, '/');

        *slash = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -1;
        for (int attempt = 0; attempt < 100; attempt++) {
                struct stat a, b;
                int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        return -1;
                if (flock(fd, LOCK_EX) == 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
                    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                        return fd;
                close(fd);
        }
        return -1;
}

static void journal_note(void *userdata, const char *dir, const char *name)
{
        int fd = *(const int *)userdata;
        size_t a = strlen(dir) + 1, b = strlen(name) + 1;
        _cleanup_free_ char *rec = NULL;

        if (fd < 0)
                return;
        rec = xmalloc(a + b);
        memcpy(rec, dir, a);
        memcpy(rec + a, name, b);
        /* O_APPEND: one record, one write; a journal line lost only
         * leaves that temporary to be named, never removed wrongly */
        if (write(fd, rec, a + b) != (ssize_t)(a + b))
                log_debug("apply: cannot journal a temporary: %m");
}

/* The journal's temporaries still in the target that are ours, as
 * "DIR/NAME" paths relative to it (NULL: none). */
static char **journal_leftovers(const char *path, int target_fd)
{
        _cleanup_free_ char *data = NULL;
        size_t len = 0, n = 0;
        char **left = NULL;

        if (!path || read_file(path, &data, &len) < 0 || len > JOURNAL_MAX)
                return NULL;
        for (size_t off = 0; off < len;) {
                const char *dir = data + off;
                size_t dl = strnlen(dir, len - off);
                if (off + dl + 1 >= len)
                        break;
                const char *name = dir + dl + 1;
                size_t nl = strnlen(name, len - off - dl - 1);
                if (off + dl + 1 + nl >= len)
                        break;
                off += dl + 1 + nl + 1;
                struct stat st;
                _cleanup_close_ int dfd = -1;
                if (!startswith(name, ".hutch-apply-") || strchr(name, '/') || (*dir && !fs_path_valid(dir)))
                        continue;
                dfd = fs_open_beneath(target_fd, dir, O_RDONLY | O_DIRECTORY, 0);
                if (dfd < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != geteuid())
                        continue;
                _cleanup_free_ char *p = *dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
                if (!strv_contains(left, p))
                        left = strv_push(left, &n, p);
        }
        return left;
}

static void list_leftovers(char **left)
{
        for (char **l = left; l && *l; l++) {
                _cleanup_free_ char *p = sanitize_quote_name(*l);
                fprintf(stderr, "  leftover   %s\n", p);
        }
}

/* After an apply to target (fd): remove what an interrupted one left when
 * this one succeeded, name it when not; drop the journal once empty. */
static void journal_finish(const char *verb, const char *target, int fd, const char *path, char **left,
                           bool applied)
{
        size_t n = strv_length(left), removed = 0;

        if (!path)
                return;
        if (applied) {
                for (char **l = left; l && *l; l++) {
                        _cleanup_free_ char *dir = xstrdup(*l);
                        char *slash = strrchr(dir, '/');
                        const char *name = slash ? slash + 1 : *l;
                        if (slash)
                                *slash = '\0';
                        _cleanup_close_ int dfd = fs_open_beneath(fd, slash ? dir : "", O_RDONLY | O_DIRECTORY, 0);
                        if (dfd >= 0 && fs_remove_tree_at(dfd, name) >= 0)
                                removed++;
                }
                if (removed)
                        log_warning("%s: removed %zu leftover%s of an interrupted apply in %s", verb, removed,
                                 removed == 1 ? "" : "s", target);
        } else if (n) {
                log_warning("%s: %s holds %zu leftover%s of an interrupted hutch apply (old or half-written "
                            "versions); the next apply to it that succeeds removes them:", verb, target, n,
                            n == 1 ? "" : "s");
                list_leftovers(left);
        }
        _cleanup_strv_ char **still = journal_leftovers(path, fd);
        if (!still)
                (void)unlink(path);
}

static int apply_to(const char *verb, const struct changeset *cs, const char *target, struct blobstore *bs,
                    bool force, bool keep_modes, bool overwrite, bool skip_conflicts,
                    enum apply_protected_policy policy, char *const *protect)
{
        struct apply_options opts = { .keep_modes = keep_modes, .overwrite = overwrite,
                                      .protected_policy = policy, .protect = protect };
        struct apply_source src = { .upper_fd = -1, .blobs = bs };
        size_t skipped = cs->n - cs->n_carried;
        bool applied = false;
        int code;

        if (skipped && !force) {
                log_error("%s: %zu change%s could not be recorded (see hutch show): not applying a partial "
                          "change set (--force applies the rest)", verb, skipped, skipped == 1 ? "" : "s");
                return EXIT_FAILURE_GENERIC;
        }
        /* The target is the user's own directory. apply_changeset() works
         * beneath this fd only, never follows a symlink on the way, and
         * writes only after checking every path (apply.h). */
        _cleanup_close_ int fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                log_error_errno(-errno, "%s: %s: %m", verb, target);
                return EXIT_FAILURE_GENERIC;
        }
        _cleanup_free_ char *jpath = journal_path(target);
        _cleanup_close_ int jfd = jpath ? journal_open(jpath) : -1;
        if (jfd < 0) {
                free(jpath);            /* unlocked: leave leftovers alone */
                jpath = NULL;
        }
        _cleanup_strv_ char **left = journal_leftovers(jpath, fd);
        opts.note_temp = journal_note;
        opts.note_userdata = &jfd;
        if (skip_conflicts)
                code = apply_rest(verb, cs, fd, target, &src, &opts, &applied);
        else
                code = apply_all(verb, cs, fd, target, &src, &opts, &applied);
        journal_finish(verb, target, fd, jpath, left, applied);
        return code;
}

int cli_apply_changeset(const char *verb, const struct changeset *cs, const char *target,
                        struct blobstore *bs, bool force, bool keep_modes, bool overwrite)
{
        return apply_to(verb, cs, target, bs, force, keep_modes, overwrite, false, APPLY_PROTECTED_REFUSE,
                        NULL);
}

int cli_apply_changeset_protected(const char *verb, const struct changeset *cs, const char *target,
                                  struct blobstore *bs, bool force, enum apply_protected_policy policy,
                                  char *const *protect)
{
        return apply_to(verb, cs, target, bs, force, false, false, false, policy,
                        protect);
}

char **cli_run_protect_patterns(const struct run_record *rec)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;
        char **ret = NULL;

        if (!rec->profile_text)
                return NULL;
        run_config_init(&cfg);
        if (profile_load_text(&cfg, rec->profile_text, rec->id, true, &err) >= 0)
                ret = TAKE_PTR(cfg.apply_protect);
        else
                log_debug("apply: run %s: stored profile: %s", rec->id, err);
        run_config_done(&cfg);
        return ret;
}

void cli_mark_protected_files(struct store *s, const struct run_record *rec, json_t *files)
{
        _cleanup_strv_ char **protect = NULL;
        struct changeset cs = { 0 };
        size_t i;
        json_t *o;

        if (!json_is_array(files) || json_array_size(files) == 0 || runfiles_load_changeset(s, rec->id, &cs) < 0)
                return;
        protect = cli_run_protect_patterns(rec);
        json_array_foreach(files, i, o) {
                const char *path = json_string_value(json_object_get(o, "path"));
                const char *kind = json_string_value(json_object_get(o, "kind"));
                const struct change *c = path && kind && !streq(kind, "output") ? changeset_find(&cs, path) : NULL;
                const char *why = c ? protected_changeset_reason(&cs, c, -1, protect) : NULL;
                if (why)
                        json_object_set_new(o, "protected", json_string(why));
        }
        changeset_done(&cs);
}

int verb_apply(int argc, char **argv)
{
        static const struct option options[] = {
                { "to",    required_argument, NULL, 't' },
                { "force", no_argument,       NULL, 'f' },
                { "keep-modes", no_argument,  NULL, 'k' },
                { "overwrite", no_argument,   NULL, 'o' },
                { "skip-conflicts", no_argument, NULL, 's' },
                { "skip-protected", no_argument, NULL, 'S' },
                { "allow-protected", no_argument, NULL, 'A' },
                { "help",  no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        _cleanup_free_ char *workdir = NULL;
        struct changeset cs = { 0 };
        const char *to = NULL;
        bool force = false, keep_modes = false, overwrite = false, skip_conflicts = false;
        enum apply_protected_policy policy = APPLY_PROTECTED_REFUSE;
        _cleanup_strv_ char **protect = NULL;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 't':
                        to = optarg;
                        break;
                case 'f':
                        force = true;
                        break;
                case 'k':
                        keep_modes = true;
                        break;
                case 'o':
                        overwrite = true;
                        break;
                case 's':
                        skip_conflicts = true;
                        break;
                case 'S':
                case 'A':
                        if (policy != APPLY_PROTECTED_REFUSE) {
                                log_error("apply: --skip-protected and --allow-protected exclude each other");
                                return EXIT_USAGE;
                        }
                        policy = c == 'S' ? APPLY_PROTECTED_SKIP : APPLY_PROTECTED_ALLOW;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("apply", argv, options);
                }
        r = cli_open_run("apply", argc, argv, optind, &s, &rec);
        if (r != EXIT_OK)
                return r;
        if (rec->status == RUN_RUNNING) {
                log_error("apply: run %s is still running", rec->id);
                return EXIT_FAILURE_GENERIC;
        }
        if (rec->status != RUN_SUCCESS && !force) {
                log_error("apply: run %s ended %s; --force applies its changes anyway", rec->id,
                          run_status_to_string(rec->status));
                return EXIT_FAILURE_GENERIC;
        }
        if (store_workspace_get(s, rec->id, &workdir, NULL) < 0 || !workdir) {
                if (!to) {
                        log_error("apply: run %s had no --workdir: say where with --to DIR", rec->id);
                        return EXIT_FAILURE_GENERIC;
                }
        }
        r = runfiles_load_changeset(s, rec->id, &cs);
        if (r < 0) {
                log_error("apply: run store %s: %s", store_path(s), store_error(s));
                return EXIT_SETUP;
        }
        r = runfiles_open_blobs(s, &bs);
        if (r < 0) {
                changeset_done(&cs);
                log_error_errno(r, "apply: blob store: %m");
                return EXIT_SETUP;
        }
        protect = cli_run_protect_patterns(rec);
        r = apply_to("apply", &cs, to ? to : workdir, bs, force, keep_modes, overwrite, skip_conflicts, policy,
                     protect);
        changeset_done(&cs);
        return r;
}
