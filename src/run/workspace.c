/* run/workspace.c - a run's workspace on the host side: --workdir,
 * --input and --session resolved (and the session locked) before the
 * sandbox exists, and after it is gone the change set and artifacts
 * recorded and, for --apply or --session, the changes applied.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run-internal.h"
#include "config/request.h"
#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/blobstore.h"
#include "run/runfiles.h"
#include "record/store.h"
#include "sandbox/ns.h"
#include "supervise/supervise.h"
#include "workspace/session.h"
#include "workspace/snapshot.h"
#include "lib/fsutil.h"

/* --session: lock the session (waiting if asked) and use its tree as
 * the lower dir. Returns an exit code. */
int run_open_session(const struct run_args *a, const char *db_path, struct workspace_plan *wp)
{
        _cleanup_free_ char *root = session_root(db_path);
        int r = session_acquire(root, a->session, a->session_wait_ms, &wp->session);
        if (r == -EBUSY) {
                log_error("run: session %s is in use by another run%s", a->session,
                          a->session_wait_ms ? " (waited --session-wait)" : "; --session-wait DURATION waits for it");
                return EXIT_SETUP;
        }
        if (r < 0) {
                log_error_errno(r, "run: session %s in %s: %m", a->session, root);
                return EXIT_SETUP;
        }
        session_touch(&wp->session);
        if (a->n_session_files) {
                /* a request's files with a session: uploaded into the tree
                 * under our lock, owned as the session's other files */
                size_t bad = 0;
                bool as_root = geteuid() == 0;
                r = session_put_files(&wp->session, a->session_files, a->n_session_files,
                                      as_root ? ns_host_uid() : (uid_t)-1, as_root ? ns_host_gid() : (gid_t)-1, &bad);
                if (r < 0) {
                        log_error("run: session %s: files/%s: %s", a->session, a->session_files[bad].path,
                                  r == -EEXIST ? "something other than a regular file is in its place" : strerror(-r));
                        return EXIT_SETUP;
                }
        }
        wp->workdir = xstrdup(wp->session.tree);
        /* no lower_since: only hutch changes a session's tree, under the
         * lock we hold for the whole run */
        wp->lower_fd = open(wp->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (wp->lower_fd < 0) {
                log_error_errno(-errno, "run: session %s: %s: %m", a->session, wp->workdir);
                return EXIT_SETUP;
        }
        return EXIT_OK;
}


/* NAME of --input PATH:NAME: a relative path (sub/b.txt) whose parts are
 * neither empty nor "." nor "..", so it stays under <workspace>/input. */
static bool input_name_ok(const char *name)
{
        if (name[0] == '/')
                return false;
        _cleanup_free_ char *copy = xstrdup(name);
        char *save = NULL;
        size_t parts = 0;
        for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save), parts++)
                if (streq(t, ".") || streq(t, ".."))
                        return false;
        return parts > 0 && !strstr(name, "//") && name[strlen(name) - 1] != '/';
}

/* The moment after which a host edit of the workdir counts as made
 * during the run (changeset_limits.since), taken before the sandbox
 * exists. A file's ctime is at least the coarse clock at the change and
 * at most the fine clock, so: take the fine clock, then wait (less than
 * one tick, a few ms) until the coarse clock has passed it. An edit
 * before that point has ctime < since and is not flagged, though it may
 * be recent (a tree made just before the run); one after it, and so every
 * edit the job could have raced with, has ctime >= since. */
static void take_lower_since(struct timespec *ret)
{
        struct timespec fine, coarse;

        clock_gettime(CLOCK_REALTIME, &fine);
        for (int i = 0; i < 1000; i++) {
                clock_gettime(CLOCK_REALTIME_COARSE, &coarse);
                if (coarse.tv_sec > fine.tv_sec ||
                    (coarse.tv_sec == fine.tv_sec && coarse.tv_nsec > fine.tv_nsec))
                        break;
                struct timespec ms = { 0, 1000000L };
                nanosleep(&ms, NULL);
        }
        *ret = fine;
}

int run_prepare_workspace(const struct run_args *a, struct workspace_plan *wp, char **ret_error)
{
        if (a->apply && !a->workdir) {
                *ret_error = xstrdup("--apply needs --workdir DIR");
                return -EINVAL;
        }
        if (a->session && a->workdir) {
                *ret_error = xstrdup("--session and --workdir cannot be combined");
                return -EINVAL;
        }
        if (a->workdir) {
                wp->workdir = realpath(a->workdir, NULL);
                if (!wp->workdir) {
                        *ret_error = xasprintf("--workdir %s: %s", a->workdir, strerror(errno));
                        return -errno;
                }
                take_lower_since(&wp->lower_since);
                wp->lower_fd = open(wp->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (wp->lower_fd < 0) {
                        *ret_error = xasprintf("--workdir %s: %s", a->workdir, strerror(errno));
                        return -errno;
                }
        }
        for (char **p = a->inputs; p && *p; p++) {
                _cleanup_free_ char *host = xstrdup(*p);
                char *colon = strrchr(host, ':');
                const char *name;
                if (colon && colon[1] && input_name_ok(colon + 1)) {
                        *colon = '\0';
                        name = colon + 1;
                } else {
                        char *slash;
                        while ((slash = strrchr(host, '/')) && slash != host && !slash[1])
                                *slash = '\0';
                        name = strrchr(host, '/') ? strrchr(host, '/') + 1 : host;
                }
                if (!*name || streq(name, ".") || streq(name, "..") || strchr(name, ':')) {
                        *ret_error = xasprintf("--input %s: cannot name it (use PATH:NAME)", *p);
                        return -EINVAL;
                }
                _cleanup_free_ char *real = realpath(host, NULL);
                if (!real) {
                        *ret_error = xasprintf("--input %s: %s", host, strerror(errno));
                        return -errno;
                }
                _cleanup_free_ char *spec = xasprintf("%s:%s", real, name);
                wp->inputs = strv_append(wp->inputs, spec);
        }
        return 0;
}

/* A deadline ms from now on CLOCK_MONOTONIC. */
static struct timespec deadline_in(uint64_t ms)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += (time_t)(ms / 1000);
        t.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        return t;
}

int run_snapshot_workspace(const struct run_config *cfg, const char *run_id, struct workspace_plan *wp)
{
        _cleanup_free_ char *db = NULL, *dir = NULL, *fail = NULL;
        _cleanup_close_ int parent = -1, dst = -1;
        struct snapshot_stats st;
        struct stat pst;
        uint64_t t0 = now_monotonic_ms();
        int r;

        if (!cfg->snapshot || !wp->workdir || wp->session.tree)
                return EXIT_OK;         /* a session's tree only changes under our lock */
        if (store_default_path(&db) < 0) {
                log_error("run: --snapshot: no state dir (set HUTCH_STATE_DIR or HOME)");
                return EXIT_SETUP;
        }
        char *slash = strrchr(db, '/');
        if (slash)
                *slash = '\0';
        dir = xasprintf("%s/snapshots", db);
        /* private to the caller: the copy holds the workdir's files */
        r = mkdir_p(db, 0700);
        if (r < 0) {
                log_error_errno(r, "run: --snapshot: %s: %m", db);
                return EXIT_SETUP;
        }
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                log_error_errno(-errno, "run: --snapshot: %s: %m", dir);
                return EXIT_SETUP;
        }
        parent = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (parent < 0 || fstat(parent, &pst) < 0) {
                log_error_errno(-errno, "run: --snapshot: %s: %m", dir);
                return EXIT_SETUP;
        }
        if (pst.st_uid != geteuid() || (pst.st_mode & 077)) {
                log_error("run: --snapshot: %s is not the caller's private directory (mode %04o, owner %u)",
                          dir, (unsigned)(pst.st_mode & 07777), (unsigned)pst.st_uid);
                return EXIT_SETUP;
        }
        if (mkdirat(parent, run_id, 0700) < 0) {
                log_error_errno(-errno, "run: --snapshot: %s/%s: %m", dir, run_id);
                return EXIT_SETUP;
        }
        wp->snapshot = xasprintf("%s/%s", dir, run_id);
        dst = openat(parent, run_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dst < 0) {
                log_error_errno(-errno, "run: --snapshot: %s: %m", wp->snapshot);
                return EXIT_SETUP;
        }
        /* bounded like the job's own scratch: --disk bytes, limits.inodes
         * entries, and the time collection gets (hutch-run(1)) */
        struct snapshot_limits lim = {
                .max_bytes = cfg->disk_bytes, .max_entries = cfg->inodes,
                .deadline = deadline_in(MAX(cfg->timeout_ms, (uint64_t)RUN_COLLECT_MIN_MS)),
                .keep_owners = ns_real_root(),
        };
        r = snapshot_copy(wp->lower_fd, dst, &lim, &st, &fail);
        if (r < 0) {
                const char *why = r == -ENOSPC ? "more than --disk" : r == -EMLINK ? "more entries than limits.inodes"
                                : r == -ELOOP ? "nested too deep" : r == -ETIME ? "took longer than the run's timeout"
                                : r == -EAGAIN ? "it kept changing while it was copied" : strerror(-r);
                log_error("run: --snapshot: cannot copy %s%s%s: %s", wp->workdir, fail ? " at " : "",
                          fail ? fail : "", why);
                return EXIT_SETUP;
        }
        log_debug("snapshot of %s: %llu entries, %llu bytes in %llu ms (%llu left out, %llu unreadable)",
                  wp->workdir, (unsigned long long)st.entries, (unsigned long long)st.bytes,
                  (unsigned long long)(now_monotonic_ms() - t0), (unsigned long long)st.left_out,
                  (unsigned long long)st.unreadable);
        /* what the job sees differs from the host's tree there: say so */
        if (st.left_out)
                log_warning("run: --snapshot: %llu socket%s or device node%s left out of the copy of %s",
                            (unsigned long long)st.left_out, st.left_out == 1 ? "" : "s",
                            st.left_out == 1 ? "" : "s", wp->workdir);
        if (st.unreadable)
                log_warning("run: --snapshot: %llu entr%s of %s unreadable to you, copied empty",
                            (unsigned long long)st.unreadable, st.unreadable == 1 ? "y" : "ies", wp->workdir);
        close(wp->lower_fd);
        wp->lower_fd = TAKE_FD(dst);
        /* the lower dir no longer changes under the job: nothing the host
         * does is "during the run"; apply compares with the copy instead */
        wp->lower_since = (struct timespec){ 0, 0 };
        return EXIT_OK;
}

void run_snapshot_remove(struct workspace_plan *wp)
{
        if (!wp->snapshot)
                return;
        int r = fs_remove_tree_at(AT_FDCWD, wp->snapshot);
        if (r < 0 && r != -ENOENT)
                log_warning("run: cannot remove the snapshot %s: %s", wp->snapshot, strerror(-r));
        wp->snapshot = (free(wp->snapshot), NULL);
}

/* No change set to compute (no lower dir) and no artifacts dir in the
 * workspace, and nothing to apply: then no file can need the blob store,
 * which is neither opened nor locked. The sandbox is gone, so what the
 * workspace holds now is final. */
static bool nothing_to_collect(const struct runfiles_params *p, const struct run_args *a)
{
        if ((p->upper_fd >= 0 && p->lower_fd >= 0) || a->apply || a->session)
                return false;
        if (p->workspace_fd < 0 || !p->output_rel)
                return true;
        int out = fs_open_beneath(p->workspace_fd, p->output_rel, O_RDONLY | O_DIRECTORY, 0);
        if (out < 0)
                return out == -ENOENT;
        /* the sandbox makes the artifacts dir for every run: an empty
         * one is nothing to collect either (and costs no blob store) */
        DIR *d = fdopendir(out);
        if (!d) {
                close(out);
                return false;
        }
        struct dirent *e;
        bool empty = true;
        while (empty && (e = readdir(d)))
                empty = streq(e->d_name, ".") || streq(e->d_name, "..");
        closedir(d);
        return empty;
}

/* After the sandbox is gone: record the change set and the artifacts,
 * and apply the changes if --apply and the job succeeded. Returns the
 * exit code to use instead of the job's (1 when --apply could not
 * apply), or -1 to keep the job's. */
int run_collect_files(struct store *store, struct run_record *rec, const struct run_config *cfg,
                      const struct run_args *a, struct workspace_plan *wp,
                      int workspace_fd, int upper_fd, int upper_error, struct run_outcome *out)
{
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        struct runfiles_result res = { 0 };
        const char *step = "blob store";
        const char *output_rel = NULL;
        size_t wl = strlen(cfg->workdir_inside);
        int r, code = -1;

        if (cfg->artifacts_dir && strncmp(cfg->artifacts_dir, cfg->workdir_inside, wl) == 0 &&
            (cfg->artifacts_dir[wl] == '/' || (wl == 1 && cfg->workdir_inside[0] == '/')))
                output_rel = cfg->artifacts_dir + wl + (cfg->artifacts_dir[wl] == '/');
        else if (cfg->artifacts_dir)
                log_debug("artifacts dir %s is outside the workspace %s: not collected",
                          cfg->artifacts_dir, cfg->workdir_inside);
        struct runfiles_params p = {
                .workspace_fd = workspace_fd, .upper_fd = upper_fd, .lower_fd = wp->lower_fd,
                .output_rel = output_rel && *output_rel ? output_rel : NULL,
                .has_inputs = wp->inputs != NULL,
                .max_files = cfg->artifacts_max_files, .max_bytes = cfg->artifacts_max_bytes,
                /* the job could not have written more than its disk: a
                 * change set that claims more is holes, and is not expanded */
                .changes = { .max_files = (size_t)cfg->max_changes, .max_bytes = cfg->disk_bytes,
                             .max_path = (size_t)cfg->max_path, .since = wp->lower_since },
                .secrets = cfg->redact_env,
        };
        /* Collection has its own cap, as long as the job's wall timeout
         * and at least RUN_COLLECT_MIN_MS (hutch-run(1)): the job chooses
         * how much it leaves, and must not buy unbounded supervisor time
         * after its deadline. What is reached after it is skipped "time". */
        uint64_t cap_ms = MAX(cfg->timeout_ms, (uint64_t)RUN_COLLECT_MIN_MS);
        clock_gettime(CLOCK_MONOTONIC, &p.changes.deadline);
        p.changes.deadline.tv_sec += (time_t)(cap_ms / 1000);
        p.changes.deadline.tv_nsec += (long)(cap_ms % 1000) * 1000000L;
        if (p.changes.deadline.tv_nsec >= 1000000000L) {
                p.changes.deadline.tv_sec++;
                p.changes.deadline.tv_nsec -= 1000000000L;
        }
        rec->files_summary = true;
        /* a session run says whether its changes reached the session:
         * not until the commit below did */
        if (a->session)
                rec->committed = 0;
        if (!upper_error && nothing_to_collect(&p, a))
                return -1;
        r = runfiles_open_blobs(store, &bs);
        if (r >= 0)
                r = runfiles_collect(store, rec->id, bs, &p, &res, &step);
        if (r >= 0 && upper_error < 0) {
                /* the landlock tier's copy could not be compared: the
                 * record must not say the job changed nothing, and
                 * --apply must not apply the nothing it was left */
                step = "the workspace copy's change set";
                r = upper_error;
        }
        if (r < 0 || res.artifacts_error) {
                /* the record must not claim a run left nothing behind when
                 * we could not look: files_error, the message, exit code */
                _cleanup_free_ char *why = r < 0 ? xasprintf("%s: %s", step, strerror(-r))
                        : xasprintf("artifacts %s: %s", cfg->artifacts_dir, strerror(-res.artifacts_error));
                log_error("run %s: cannot record its files (%s)", rec->id, why);
                rec->files_error = xstrdup(why);
                rec->files_unlisted = res.n_unlisted;
                if (!out->message[0] || out->status == RUN_SUCCESS)
                        snprintf(out->message, sizeof(out->message), "files not recorded: %s", why);
                if (r < 0) {
                        runfiles_result_done(&res);
                        return out->exit_code == EXIT_OK || a->apply || a->session ? EXIT_FAILURE_GENERIC : -1;
                }
        } else
                rec->files_unlisted = res.n_unlisted;
        if (res.n_unlisted)
                log_warning("run %s: %zu change%s or artifact%s over the caps, counted but not listed",
                            rec->id, res.n_unlisted, res.n_unlisted == 1 ? "" : "s", res.n_unlisted == 1 ? "" : "s");
        if (res.cs.n)
                log_info("%zu change%s in the workspace (hutch diff %s)", res.cs.n, res.cs.n == 1 ? "" : "s",
                         rec->id);
        if (res.n_outputs || res.n_outputs_skipped)
                log_info("%zu artifact%s collected%s", res.n_outputs, res.n_outputs == 1 ? "" : "s",
                         res.n_outputs_skipped ? ", some skipped (see hutch show)" : "");
        if (a->apply) {
                if (out->status != RUN_SUCCESS)
                        log_info("not applying the changes: the job did not succeed");
                else
                        code = a->ui->apply_changeset(&res.cs, wp->workdir, bs, a->apply_protected,
                                                      cfg->apply_protect);
        }
        if (a->session) {
                /* the session keeps a run's changes when the policy says
                 * (by default only when it succeeded); we still hold its lock */
                rec->committed = 0;
                if (!session_commit_wanted(cfg->commit, out->status == RUN_SUCCESS))
                        log_info("session %s left as it was: %s", a->session,
                                 cfg->commit == SESSION_COMMIT_NEVER ? "commit = never"
                                                                   : "the job did not succeed");
                else if (!res.cs.n)
                        rec->committed = 1;     /* nothing to commit: the session is what the run saw */
                else {
                        /* the session's own tree, not the user's: protected
                         * paths matter when it is applied elsewhere */
                        code = a->ui->apply_changeset(&res.cs, wp->workdir, bs, APPLY_PROTECTED_ALLOW, NULL);
                        rec->committed = code == EXIT_OK;
                        /* root's sandbox user is uid 65534: the next run must
                         * be able to change what this one committed */
                        if (code == EXIT_OK && geteuid() == 0 &&
                            (r = session_chown_tree(&wp->session, ns_host_uid(), ns_host_gid())) < 0)
                                log_error_errno(r, "run: session %s: chown: %m", a->session);
                }
                session_touch(&wp->session);
        }
        int artifacts_error = res.artifacts_error;
        runfiles_result_done(&res);
        if (code == EXIT_OK || code == -1)
                return artifacts_error && out->exit_code == EXIT_OK ? EXIT_FAILURE_GENERIC : -1;
        return code;
}
