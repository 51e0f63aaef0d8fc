/* run/record-start.c - the stages that bring a run to its row in the
 * store (run/run.c runs them in order, run/run-internal.h declares
 * them): the record begun in memory (--detach, --session, --snapshot),
 * admission to the node's [admission] cap, and the row written with
 * status running. An admitted run holds the admission lock from
 * run_admit() to the row's commit in run_record_start(). Part of the run
 * (run/run-internal.h).
 */
#include "config.h"

#include <string.h>

#include "run/run-internal.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/errcode.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "limits/cgroup.h"
#include "record/store.h"
#include "run/admission.h"
#include "run/enforce.h"
#include "run/live-internal.h"
#include "supervise/events.h"
#include "workspace/session.h"

static char *json_dumps_new(json_t *j)
{
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
        return s;
}

/* Read an anonymous code file back, for the run's record. */
static char *slurp_fd(int fd, size_t *ret_len)
{
        size_t cap = 4096, len = 0;
        char *buf = xmalloc(cap);
        ssize_t n;

        /* pread: the offset is shared with the sandbox's init, which
         * copies the same code into the sandbox meanwhile (setup_code()) */
        while ((n = pread(fd, buf + len, cap - len - 1, (off_t)len)) > 0 || (n < 0 && errno == EINTR)) {
                if (n < 0)
                        continue;
                len += (size_t)n;
                if (len + 1 >= cap)
                        buf = xrealloc(buf, cap *= 2);
        }
        buf[len] = '\0';
        *ret_len = len;
        return buf;
}

/* The record begun in memory; --detach forks here, --session waits for
 * its lock, --snapshot copies the workdir. */
int run_open_record(struct run *r)
{
        const struct run_args *a = r->a;
        _cleanup_free_ char *cwd = getcwd(NULL, 0), *db_path = NULL;
        int k, code;

        r->rec = run_record_new();
        k = run_record_begin(r->rec, r->cfg->argv, cwd ? cwd : "", r->cfg->profile_name);
        if (k < 0) {
                log_error_errno(k, "run: cannot start a run record: %m");
                return EXIT_SETUP;
        }
        if (a->detach) {
                /* the caller gets the id; the run goes on in the child */
                k = run_detach(r->rec, a->live ? a->live->name : NULL, &r->detach_notify);
                if (k >= 0) {
                        r->detached_parent = true;
                        return k;
                }
                r->ev = events_new(STDOUT_FILENO, r->cfg->redact_env);
        }
        if (a->session) {
                /* before the row: a run waiting for its session is not running */
                if (store_default_path(&db_path) < 0) {
                        log_error("run: no state dir (set HUTCH_STATE_DIR or HOME)");
                        return EXIT_SETUP;
                }
                code = run_open_session(a, db_path, &r->wp);
                if (code != EXIT_OK)
                        return code;
                /* how long it may stay unused: this run's profile says */
                k = session_set_ttl(&r->wp.session, r->cfg->session_ttl_ms);
                if (k < 0)
                        log_warning("run: session %s: cannot record its ttl (hutch gc uses the default "
                                    "profile's): %s", a->session, strerror(-k));
                r->rec->session = xstrdup(a->session);
                r->rec->started_at_ms = r->rec->heartbeat_at_ms = now_realtime_ms();
        }
        code = run_snapshot_workspace(&r->view, r->rec->id, &r->wp);
        if (code != EXIT_OK)
                return code;
        /* the landlock tier's scratch, its copy of the workspace, its rules */
        if (r->ll.active && run_landlock_prepare(&r->view, r->wp.lower_fd, r->egress.proxy_port, &r->ll,
                                                 &r->err) < 0) {
                log_error("run: %s", r->err);
                return EXIT_SETUP;
        }
        /* the egress helper touches files as the job's uid */
        if (r->ll.active) {
                r->egress.job_uid = r->ll.job.uid;
                r->egress.job_gid = r->ll.job.gid;
        }
        return RUN_NEXT;
}

/* A store that failed with error: busy past its timeout is worth
 * trying again (75, store_busy); anything else is not (125). */
static int store_failed(int error)
{
        log_set_error_code(error == -EBUSY ? "store_busy" : "store_unusable");
        return error == -EBUSY ? EXIT_BUSY : EXIT_SETUP;
}

/* Admission (run/admission.h), before anything of the sandbox exists:
 * a run over the node's cap waits for a slot (--queue-wait, with a
 * queued event on --events) or is refused with 75 and the retryable
 * code admission_full, and is then not recorded at all: the caller,
 * told to retry, holds the only copy of the request. An admitted run
 * keeps the lock until its row is written (run_record_start()), so the
 * count and the insert are one step for every run with a cap. */
int run_admit(struct run *r)
{
        const struct run_config *view = &r->view;
        struct node_resources node;
        struct admission_caps caps;
        _cleanup_free_ char *db = NULL, *error = NULL;
        _cleanup_store_ struct store *s = NULL;
        uint64_t start = now_monotonic_ms(), running = 0, memory = 0, shown = UINT64_MAX;
        int k, code = RUN_NEXT;

        if ((!view->admission_max_running || streq(view->admission_max_running, "none")) &&
            (!view->admission_max_memory || streq(view->admission_max_memory, "none")))
                return RUN_NEXT;
        k = node_resources_read(&node);
        if (k < 0)
                return log_error_errno(k, "run: admission: cannot read the node's resources: %m"), EXIT_SETUP;
        admission_caps_resolve(view, &node, &caps);
        log_debug("admission: %s", caps.how);
        if (store_default_path(&db) < 0) {
                log_error("run: run store: set HUTCH_STATE_DIR, XDG_STATE_HOME or HOME");
                admission_caps_done(&caps);
                return EXIT_SETUP;
        }
        /* made if need be: the lock lives beside it */
        k = store_open(db, &s, &error);
        if (k < 0) {
                log_error("run: run store: %s", error ? error : db);
                admission_caps_done(&caps);
                return store_failed(k);
        }
        for (;;) {
                int fd = admission_lock(db);
                if (fd < 0) {
                        code = EXIT_SETUP;
                        log_error_errno(fd, "run: admission lock beside %s: %m", db);
                        break;
                }
                k = admission_usage(s, caps.max_memory, &running, &memory);
                if (k < 0) {
                        close(fd);
                        code = EXIT_SETUP;
                        log_error("run: admission: run store: %s", store_error(s));
                        break;
                }
                if (admission_fits(&caps, running, memory, view->memory_bytes)) {
                        r->admit_fd = fd;
                        break;
                }
                close(fd);
                uint64_t now = now_monotonic_ms(), waited = now - start;
                if (waited >= r->a->queue_wait_ms) {
                        char d[32];
                        log_set_error_code("admission_full");
                        log_error("run: the node is full: %llu run%s of yours running (%s); %s%s",
                                  (unsigned long long)running, running == 1 ? "" : "s", caps.how,
                                  r->a->queue_wait_ms ? "no slot within --queue-wait " : "try again later, or wait "
                                                                                         "with --queue-wait DURATION",
                                  r->a->queue_wait_ms ? format_duration_ms(r->a->queue_wait_ms, d, sizeof(d)) : "");
                        code = EXIT_BUSY;
                        break;
                }
                if (running != shown) {
                        /* once, and again when the count changes */
                        events_queued(r->ev, r->rec->id, running, caps.max_running, waited);
                        log_info("run %s: queued: %llu of %llu running", r->rec->id, (unsigned long long)running,
                                 (unsigned long long)caps.max_running);
                        shown = running;
                }
                /* a slot frees when a run ends: look again soon, not in step */
                usleep((useconds_t)(MIN(r->a->queue_wait_ms - waited, 50 + (uint64_t)(random() % 100)) * 1000));
        }
        if (code == RUN_NEXT && now_monotonic_ms() - start > 1) {
                /* the run starts now, not when it began to wait */
                r->rec->started_at_ms = r->rec->heartbeat_at_ms = now_realtime_ms();
        }
        admission_caps_done(&caps);
        return code;
}

/* The run's cgroup (or the reason there is none) comes before the
 * sandbox, which is cloned straight into it, and before the report,
 * which names what really holds each limit. */
/* The run store, opened for writing; EXIT_OK, or EXIT_SETUP or
 * EXIT_BUSY (logged). */
static int open_store(struct store **ret)
{
        _cleanup_free_ char *path = NULL, *error = NULL;
        int k;

        if (store_default_path(&path) < 0) {
                log_error("run: run store: set HUTCH_STATE_DIR, XDG_STATE_HOME or HOME");
                return store_failed(-ENOENT);
        }
        k = store_open(path, ret, &error);
        if (k < 0) {
                log_error("run: run store: %s", error ? error : path);
                return store_failed(k);
        }
        return EXIT_OK;
}

/* The run's row, its labels and its workspace, in one transaction: one
 * lock and one commit while the sandbox builds, all or nothing. */
int run_record_start(struct run *r)
{
        const struct run_args *a = r->a;
        struct run_record *rec = r->rec;
        int code, k;

        code = open_store(&r->store);
        if (code != EXIT_OK)
                return code;
        /* the row below is written while the sandbox child builds the
         * job's root: a checkpoint's disk syncs there would delay the job.
         * on_job_started() does a due one; a run that crosses the
         * threshold only in its last row leaves it to the next run. */
        store_defer_checkpoints(r->store);
        rec->limits_json = json_dumps_new(limits_build(&r->view));
        rec->enforcement_json = json_dumps(r->enforcement, JSON_COMPACT | JSON_SORT_KEYS);
        rec->profile_text = xstrdup(r->profile_text);
        rec->profile_sha256 = xstrdup(r->sha);
        if (r->rerun_of)
                rec->rerun_of = xstrdup(r->rerun_of);
        if (a->id_key)
                rec->idempotency_key = xstrdup(a->id_key);
        if (r->lang && r->lj->code_fd >= 0) {
                rec->lang = xstrdup(r->lang);
                rec->code = slurp_fd(r->lj->code_fd, &rec->code_len);
        }
        /* what hutch does not keep of a request (its stdin, its files)
         * is said in labels, so hutch rerun can refuse to run without it */
        _cleanup_strv_ char **labels = strv_extend(NULL, a->labels);
        if (a->stdin_data)
                labels = strv_append(labels, RUN_LABEL_REQUEST_STDIN "=yes");
        if (a->stage_dir || a->n_session_files)
                labels = strv_append(labels, RUN_LABEL_REQUEST_FILES "=yes");
        run_redact_start(rec, labels, r->view.redact_env);
        k = store_batch_begin(r->store);
        if (k == 0)
                k = store_run_insert(r->store, rec);
        if (k == -EEXIST && a->id_key) {
                /* another hutch took the key since we looked: its run is
                 * the answer (run_done() gives it) */
                (void)store_batch_end(r->store, false);
                r->key_taken = true;
                return EXIT_SETUP;
        }
        if (k == 0 && (store_labels_set(r->store, rec->id, labels) < 0 ||
                       run_label_slurm(r->store, rec->id, &r->slurm, a->labels) < 0))
                k = -EIO;
        if (k == 0 && r->wp.workdir)
                k = store_workspace_set(r->store, rec->id, a->session ? NULL : r->wp.workdir, a->session);
        if (k == 0)
                k = store_batch_end(r->store, true);
        /* the row counts now: the next run's admission sees it */
        if (r->admit_fd >= 0) {
                close(r->admit_fd);
                r->admit_fd = -1;
        }
        if (k < 0) {
                (void)store_batch_end(r->store, false);
                log_error("run: run store %s: %s", store_path(r->store), store_error(r->store));
                return store_failed(k);
        }
        /* a live sandbox tells its caller once it is up (live.c) */
        if (!a->live)
                run_detach_started(&r->detach_notify);
        if (a->log_id)
                log_set_tag(rec->id);
        log_info("run %s", rec->id);
        return RUN_NEXT;
}
