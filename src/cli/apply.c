/* cli/apply.c - `hutch apply ID [--to DIR]`: carry the workspace changes a
 * run recorded into a directory (by default the --workdir DIR it ran on),
 * all or nothing (apply.h): when the directory changed under the run in
 * a way that collides with the changes, nothing is written and every
 * conflict is listed; --skip-conflicts leaves those paths out and
 * applies the rest, again all or nothing. Also the shared helper behind
 * `hutch run --apply`. */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "workspace/apply.h"
#include "record/blobstore.h"
#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "run/runfiles.h"
#include "lib/sanitize.h"
#include "record/store.h"

static void help(void)
{
        printf("Usage: hutch apply [--to DIR] [--force] [--keep-modes] [--overwrite]\n"
               "                   [--skip-conflicts] ID\n"
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
                _cleanup_free_ char *p = sanitize_text(res->conflicts[i].path, strlen(res->conflicts[i].path), NULL);
                fprintf(stderr, "  %-10s %s\n", apply_conflict_reason_to_string(res->conflicts[i].reason), p);
                *ret_during |= res->conflicts[i].reason == APPLY_CONFLICT_DURING_RUN;
        }
}

/* --skip-conflicts: leave out what conflicts, and what lies below it,
 * then try the rest, all or nothing again; each round leaves out at
 * least one entry, so at most cs->n rounds. */
static int apply_rest(const char *verb, const struct changeset *cs, int fd, const char *target,
                      const struct apply_source *src, const struct apply_options *opts)
{
        struct changeset cur = { .entries = xcalloc(cs->n ? cs->n : 1, sizeof(*cs->entries)) };
        size_t left = 0;
        bool during = false;
        int r;

        memcpy(cur.entries, cs->entries, cs->n * sizeof(*cs->entries));
        cur.n = cs->n;
        cur.n_carried = cs->n_carried;
        for (;;) {
                struct apply_result res = { 0 };
                r = apply_changeset(&cur, fd, src, opts, &res);
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
        return r < 0 || left ? EXIT_FAILURE_GENERIC : EXIT_OK;
}

static int apply_to(const char *verb, const struct changeset *cs, const char *target, struct blobstore *bs,
                    bool force, bool keep_modes, bool overwrite, bool skip_conflicts)
{
        struct apply_options opts = { .keep_modes = keep_modes, .overwrite = overwrite };
        struct apply_result res = { 0 };
        struct apply_source src = { .upper_fd = -1, .blobs = bs };
        size_t skipped = cs->n - cs->n_carried;
        int r;

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
        if (skip_conflicts)
                return apply_rest(verb, cs, fd, target, &src, &opts);
        r = apply_changeset(cs, fd, &src, &opts, &res);
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
        log_info("applied %zu change%s to %s%s", res.n_applied, res.n_applied == 1 ? "" : "s", target,
                 res.n_already ? " (some were already there)" : "");
        apply_result_done(&res);
        return EXIT_OK;
}

int cli_apply_changeset(const char *verb, const struct changeset *cs, const char *target,
                        struct blobstore *bs, bool force, bool keep_modes, bool overwrite)
{
        return apply_to(verb, cs, target, bs, force, keep_modes, overwrite, false);
}

int verb_apply(int argc, char **argv)
{
        static const struct option options[] = {
                { "to",    required_argument, NULL, 't' },
                { "force", no_argument,       NULL, 'f' },
                { "keep-modes", no_argument,  NULL, 'k' },
                { "overwrite", no_argument,   NULL, 'o' },
                { "skip-conflicts", no_argument, NULL, 's' },
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
        r = apply_to("apply", &cs, to ? to : workdir, bs, force, keep_modes, overwrite, skip_conflicts);
        changeset_done(&cs);
        return r;
}
