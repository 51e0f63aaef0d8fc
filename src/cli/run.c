/* cli/run.c - `hutch run` and `hutch rerun`: the run's flow, command
 * line -> run_config -> record -> sandbox -> record -> exit code. This
 * is the one place that logs what went wrong with a run. The parts live
 * beside it (cli/run-internal.h): the command line in run-options.c,
 * the seccomp filter and the run cgroup in run-limits.c, the workspace
 * in run-workspace.c, the user's terminal in run-tty.c, the record's
 * hooks and final update in run-record.c.
 *
 * Order matters for "never lose a run": the profile is resolved and the
 * syscall policy built first (a bad profile runs nothing and records
 * nothing, like a bad command line); then the run's row is written with
 * status running *before* the sandbox exists, and completed in one
 * transaction at the end. If the row cannot be written, the job does not
 * run.
 */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "supervise/capture.h"
#include "supervise/hostio.h"
#include "limits/cgroup.h"
#include "limits/slurm.h"
#include "limits/iomax.h"
#include "cli/cli.h"
#include "cli/run-internal.h"
#include "cli/run-landlock.h"
#include "limits/enforce.h"
#include "lib/exit-codes.h"
#include "config/lang.h"
#include "lib/log.h"
#include "sandbox/ns.h"
#include "config/profile.h"
#include "config/request.h"
#include "config/run-config.h"
#include "sandbox/gvisor.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"
#include "workspace/session.h"
#include "record/store.h"
#include "supervise/events.h"
#include "supervise/supervise.h"
#include "limits/watchdog.h"

#define HEARTBEAT_MS 5000
/* the buffer between the job's output and the caller's reader: bounds
 * hutch's memory while the reader is slow or stopped (supervise.c) */
#define PASS_BUFFER_BYTES (256u << 10)

static const char *basename_of(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

/* A closed 0, 1 or 2 would be taken by the next open(), the store's
 * database say, and the job's output or input would go there. Give
 * them /dev/null, as if the caller had. */
static void stdio_keep_open(void)
{
        for (int fd = 0; fd < 3; fd++)
                if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
                        int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
                        if (null >= 0 && null != fd) {
                                (void)dup2(null, fd);
                                close(null);
                        }
                }
}

/* --lang: where the code comes from, what runs it. */
struct lang_job {
        struct lang_plan plan;
        int code_fd;
        const char *profile;    /* the language's profile, unless -p */
        struct lang_table *table;
};

static int prepare_lang(const struct run_args *a, struct run_config *cfg, struct lang_job *lj,
                        char **ret_error)
{
        const struct lang *l;
        int r;

        r = lang_table_load(NULL, &lj->table, ret_error);
        if (r < 0)
                return r;
        r = lang_lookup(lj->table, a->lang, &l, ret_error);
        if (r < 0)
                return r;
        r = lang_check_host(l, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ret_error);
        if (r < 0)
                return r;
        r = lang_plan_make(l, &lj->plan, ret_error);
        if (r < 0)
                return r;
        lj->profile = l->profile;

        /* The code travels into the sandbox as an anonymous file: nothing
         * is written on the host. */
        lj->code_fd = memfd_create("hutch-code", MFD_CLOEXEC);
        if (lj->code_fd < 0)
                return -errno;
        if (a->code)
                r = write_all(lj->code_fd, a->code, strlen(a->code));
        else {
                _cleanup_close_ int in = a->code_stdin ? dup(STDIN_FILENO) : open(a->code_file, O_RDONLY | O_CLOEXEC);
                char buf[65536];
                ssize_t n;
                if (in < 0) {
                        *ret_error = xasprintf("--file %s: %s", a->code_file, strerror(errno));
                        return -errno;
                }
                r = 0;
                while (r == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                r = -errno;
                                break;
                        }
                        r = write_all(lj->code_fd, buf, (size_t)n);
                }
        }
        if (r < 0 && !*ret_error)
                *ret_error = xasprintf("reading the code: %s", strerror(-r));
        return r;
}


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

        if (lseek(fd, 0, SEEK_SET) < 0) {
                free(buf);
                return NULL;
        }
        while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
                len += (size_t)n;
                if (len + 1 >= cap)
                        buf = xrealloc(buf, cap *= 2);
        }
        buf[len] = '\0';
        *ret_len = len;
        return buf;
}

/* Everything after the configuration is resolved: policy, record,
 * sandbox, record again. Returns hutch's exit code. A run recorded while
 * its init was still exiting on its own (out.init_exiting) sets
 * *ret_exiting_init: the caller reaps it last (sandbox_reap()), once
 * everything else of hutch is put away, which then overlaps with init's
 * exit, the sandbox's mount teardown. Otherwise *ret_exiting_init stays
 * 0. */
static int execute(struct run_config *cfg, struct lang_job *lj, const struct run_args *a,
                   const char *lang, bool json, const char *rerun_of, pid_t *ret_exiting_init)
{
        struct workspace_plan wp = { .lower_fd = -1, .session.lock_fd = -1 };
        struct run_egress egress = { .sandbox_fd = -1, .helper_fd = -1, .helper = { .ctl_fd = -1 } };
        int workspace_fd = -1, upper_fd = -1;
        _cleanup_free_ char *db_path = NULL;
        struct sandbox sb = { .pidfd = -1, .sync_fd = -1, .stdout_fd = -1, .stderr_fd = -1 };
        struct run_outcome out = { 0 };
        struct tty_state tty = { 0 };
        struct winsize ws, *wsp = NULL;
        struct seccomp_report sc_report = { 0 };
        _cleanup_store_ struct store *store = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_capture_ struct capture *cap_out = NULL, *cap_err = NULL;
        _cleanup_hostio_ struct hostio *host_in = NULL, *host_out = NULL, *host_err = NULL;
        _cleanup_free_ char *err = NULL, *profile_text = NULL, *cwd = NULL, *cg_reason = NULL, *cg_unit = NULL, *io_max = NULL,
                               *self_cgroup = NULL;
        _cleanup_cgroup_run_ struct cgroup_run *cgroup = NULL;
        _cleanup_free_ void *bpf = NULL;
        size_t bpf_len = 0;
        char sha[DIGEST_HEX_SIZE];
        sigset_t set, old;
        int r, code = EXIT_SETUP, detach_notify = -1;
        _cleanup_close_ int stdin_fd = -1;
        bool key_taken = false, detached_parent = false;
        json_t *enforcement = NULL;
        struct slurm_step slurm = { 0 };
        unsigned slurm_capped = 0;
        struct run_landlock ll = { 0 };
        /* a detached run's events go to its spool, made after the fork */
        _cleanup_events_ struct events *ev = a->events && !a->detach ? events_new(STDOUT_FILENO, cfg->secret_env)
                                                                     : NULL;

        stdio_keep_open();
        /* Job control must never stop the supervisor: not when it puts
         * the terminal back from the background (SIGTTOU), not when it
         * would read the terminal there (SIGTTIN: it does not, and the
         * kernel answers EIO if it races). A stopped hutch would stop
         * the deadline and the watchdog, and leave its run `running`. */
        signal(SIGTTOU, SIG_IGN);
        signal(SIGTTIN, SIG_IGN);

        /* read once for the Slurm step and the run's cgroup: nothing
         * moves hutch between the two */
        if (read_file("/proc/self/cgroup", &self_cgroup, NULL) < 0)
                self_cgroup = NULL;
        /* inside a Slurm allocation before anything reads the limits */
        slurm_capped = run_apply_slurm(cfg, self_cgroup, &slurm);
        r = run_prepare_workspace(a, &wp, &err);
        if (r < 0) {
                log_error("run: %s", err);
                code = EXIT_USAGE;
                goto out;
        }
        /* --runtime gvisor without a usable runsc is the host's setup
         * error, said before anything is recorded: never a quiet fall
         * back to the native runtime */
        struct gvisor_info gv;
        bool gvisor = cfg->runtime == RUNTIME_GVISOR;
        if (gvisor) {
                r = gvisor_probe(&gv, &err);
                if (r >= 0)
                        r = gvisor_check_config(cfg, &gv, &err);
                if (r < 0) {
                        log_error("run: %s", err);
                        goto out;
                }
                log_debug("runtime gvisor: %s version %s, platform %s", gv.path, gv.version, gv.platform);
        }
        /* the tier, before anything is recorded: auto may probe, and a
         * landlock run refuses here what it cannot hold */
        r = run_isolation_choose(cfg, wp.inputs != NULL, lj->code_fd >= 0, &ll, &err);
        if (r < 0) {
                log_error("run: %s", err);
                goto out;
        }
        if (cfg->uid == 0 && streq(cfg->home, "/home/sandbox"))
                cfg->home = (free(cfg->home), xstrdup("/root"));
        /* The record's copy of the profile. With egress it is taken now,
         * before run_egress_prepare() adds its proxy variables (hutch's,
         * not the profile's); otherwise after the clone, which it would
         * only delay. */
        if (cfg->net == NET_ALLOW) {
                profile_text = profile_canonical_text(cfg);
                profile_sha256_hex(profile_text, sha);
        }
        r = run_egress_prepare(cfg, &egress, &err);
        if (r < 0) {
                log_error("run: %s", err);
                goto out;
        }
        /* Under gVisor the job is uid 0 of gVisor's kernel whatever the
         * profile says (gvisor-spec.c); the sandbox around runsc must not
         * be uid 0, or runsc takes itself for real root and wants
         * capabilities it never gets. The record keeps the uid asked for. */
        if (gvisor && cfg->uid == 0)
                cfg->uid = 1000;
        if (gvisor && cfg->gid == 0)
                cfg->gid = 1000;

        rec = run_record_new();
        cwd = getcwd(NULL, 0);
        r = run_record_begin(rec, cfg->argv, cwd ? cwd : "", cfg->profile_name);
        if (r < 0) {
                log_error_errno(r, "run: cannot start a run record: %m");
                goto out;
        }
        if (a->detach) {
                /* the caller gets the id; the run goes on in the child */
                r = run_detach(rec, &detach_notify);
                if (r >= 0) {
                        code = r;
                        detached_parent = true;
                        goto out;
                }
                ev = events_new(STDOUT_FILENO, cfg->secret_env);
        }
        if (a->session) {
                /* before the row: a run waiting for its session is not running */
                r = store_default_path(&db_path);
                if (r < 0) {
                        log_error("run: no state dir (set HUTCH_STATE_DIR or HOME)");
                        goto out;
                }
                code = run_open_session(a, db_path, &wp);
                if (code != EXIT_OK)
                        goto out;
                code = EXIT_SETUP;
                rec->session = xstrdup(a->session);
                rec->started_at_ms = rec->heartbeat_at_ms = now_realtime_ms();
        }
        code = run_snapshot_workspace(cfg, rec->id, &wp);
        if (code != EXIT_OK)
                goto out;
        code = EXIT_SETUP;
        if (ll.active) {
                r = run_landlock_prepare(cfg, wp.lower_fd, &ll, &err);
                if (r < 0) {
                        log_error("run: %s", err);
                        goto out;
                }
        }
        /* The run's cgroup (or the reason there is none) comes before the
         * sandbox, which is cloned straight into it, and before the report,
         * which names what really holds each limit. */
        /* io_max names devices: a wrong one is the user's error, said
         * before anything runs */
        r = iomax_lines(cfg->io_max, &io_max, &err);
        if (r < 0) {
                log_error("run: %s", err);
                goto out;
        }
        if (gvisor) {
                /* runsc's tree needs room for gVisor's own tasks: pids.max
                 * is its backstop there, the job's limit is inside */
                struct run_config host_cfg = *cfg;
                if (host_cfg.pids)
                        host_cfg.pids = GVISOR_HOST_TASKS(cfg->pids);
                run_prepare_cgroup(&host_cfg, self_cgroup, rec->id, io_max, &cgroup, &cg_unit, &cg_reason);
        } else
                run_prepare_cgroup(cfg, self_cgroup, rec->id, io_max, &cgroup, &cg_unit, &cg_reason);
        if (cgroup)
                log_debug("run cgroup %s", cgroup_run_path(cgroup));
        else if (getenv("HUTCH_CGROUP") && *getenv("HUTCH_CGROUP") && !streq(getenv("HUTCH_CGROUP"), "none"))
                /* asked for by name: say so, but still run as the fallbacks allow
                 * (--require makes a missing limit an error) */
                log_warning("run: HUTCH_CGROUP: %s; limits fall back to the watchdog and rlimits", cg_reason);
        else
                log_debug("no run cgroup (%s): falling back to the watchdog and rlimits", cg_reason);

        struct sandbox_inputs inputs = {
                .code_fd = lj->code_fd, .code_name = lj->plan.source_name,
                .compile_argv = lj->plan.compile_argv, .argv = cfg->argv,
                .seccomp_required = !gvisor,    /* gVisor's kernel serves the job's syscalls */
                .cgroup = cgroup,
                .pids_in_cgroup = cgroup && (cgroup_run_enforced(cgroup) & CGROUP_LIMIT_PIDS),
                .workspace_lower = wp.snapshot ? wp.snapshot : wp.workdir, .inputs = wp.inputs,
                .egress_fd = egress.sandbox_fd, .egress_ports = egress.ports, .n_egress_ports = egress.n_ports,
                .gvisor = gvisor ? &gv : NULL,
                .landlock = ll.active ? &ll.job : NULL,
        };
        sandbox_signal_set(&set);
        sigprocmask(SIG_BLOCK, &set, &old);
        /* A shell starts background jobs with SIGINT and SIGQUIT ignored;
         * an ignored signal never reaches our signalfd, so `kill -INT`
         * from a script would be lost instead of forwarded. Take them
         * back (they stay blocked, so this cannot kill us). SIGHUP stays
         * ignored under nohup, as the user asked. */
        for (int s = 1; s < NSIG; s++) {
                struct sigaction sa;
                if (!sigismember(&set, s) || s == SIGHUP || sigaction(s, NULL, &sa) < 0)
                        continue;
                if (sa.sa_handler == SIG_IGN)
                        signal(s, SIG_DFL);
        }
        if (cfg->tty && isatty(STDIN_FILENO) && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
                wsp = &ws;

        /* The sandbox builds itself while we record the run; it starts the
         * job only after sandbox_start(), so the record still comes first:
         * no row, no job. Cloning before the store is open also keeps the
         * child's copy of our memory small. */
        int spawn_r = sandbox_spawn(cfg, &inputs, wsp, &sb);
        bool spawned = spawn_r >= 0;
        if (spawned) {
                r = run_egress_start(cfg, sb.pid, &egress);
                if (r < 0) {
                        log_error_errno(r, "run: cannot start the egress helper: %m");
                        goto abort;
                }
        }
        if (!profile_text) {
                profile_text = profile_canonical_text(cfg);
                profile_sha256_hex(profile_text, sha);
        }

        /* The syscall filter is compiled here, in parallel with the
         * sandbox's own setup, and travels with the start message. */
        r = run_build_seccomp(cfg, &bpf, &bpf_len, &sc_report, &err);
        if (r < 0) {
                log_error("%s", err ? err : strerror(-r));
                goto abort;
        }
        /* the job is set up under it while we record the run */
        if (spawned && (r = sandbox_send_filter(&sb, gvisor ? NULL : bpf, gvisor ? 0 : bpf_len)) < 0) {
                log_error_errno(r, "run: cannot hand the sandbox its syscall filter: %m");
                goto abort;
        }
        struct enforce_cgroup cg_report = {
                .path = cgroup ? cgroup_run_path(cgroup) : NULL,
                .enforced = cgroup ? cgroup_run_enforced(cgroup) : 0,
                .reason = cg_reason,
                .systemd_unit = cg_unit,
                .io_max_error = cgroup ? cgroup_run_io_max_error(cgroup) : NULL,
        };
        enforcement = enforcement_build(cfg, &sc_report, &cg_report, ns_host_uid(), ns_host_gid());
        /* gVisor's kernel has its own SysV IPC; the landlock tier has
         * no IPC namespace of its own: its limits would be the host's */
        if (spawned && !gvisor && !ll.active)
                run_limit_ipc(cfg, &sb, enforcement, &cg_report);
        run_isolation_report(enforcement, cfg, &ll, inputs.pids_in_cgroup);
        gvisor_enforcement(enforcement, cfg, gvisor ? &gv : NULL);
        run_report_slurm(enforcement, &slurm, slurm_capped, cgroup != NULL);
        r = enforcement_check_required(cfg, enforcement, &err);
        if (r < 0) {
                log_error("run: %s", err);
                goto abort;
        }

        code = cli_open_store("run", &store);
        if (code != EXIT_OK)
                goto abort;
        code = EXIT_SETUP;
        /* the row below is written while the sandbox child builds the
         * job's root: a checkpoint's disk syncs there would delay the job.
         * on_job_started() does a due one; a run that crosses the
         * threshold only in its last row leaves it to the next run. */
        store_defer_checkpoints(store);
        rec->limits_json = json_dumps_new(limits_build(cfg));
        rec->enforcement_json = json_dumps(enforcement, JSON_COMPACT | JSON_SORT_KEYS);
        rec->profile_text = xstrdup(profile_text);
        rec->profile_sha256 = xstrdup(sha);
        if (rerun_of)
                rec->rerun_of = xstrdup(rerun_of);
        if (a->id_key)
                rec->idempotency_key = xstrdup(a->id_key);
        if (lang && lj->code_fd >= 0) {
                rec->lang = xstrdup(lang);
                rec->code = slurp_fd(lj->code_fd, &rec->code_len);
        }
        /* the row, its labels and its workspace in one transaction: one
         * lock and one commit while the sandbox builds, all or nothing */
        r = store_batch_begin(store);
        if (r == 0)
                r = store_run_insert(store, rec);
        if (r == -EEXIST && a->id_key) {
                /* another hutch took the key since we looked: its run is
                 * the answer */
                (void)store_batch_end(store, false);
                key_taken = true;
                goto abort;
        }
        if (r == 0 && (store_labels_set(store, rec->id, a->labels) < 0 ||
                       run_label_slurm(store, rec->id, &slurm, a->labels) < 0))
                r = -EIO;
        if (r == 0 && wp.workdir)
                r = store_workspace_set(store, rec->id, a->session ? NULL : wp.workdir, a->session);
        if (r == 0)
                r = store_batch_end(store, true);
        if (r < 0) {
                (void)store_batch_end(store, false);
                log_error("run: run store %s: %s", store_path(store), store_error(store));
                goto abort;
        }
        run_detach_started(&detach_notify);
        log_info("run %s", rec->id);

        cap_out = capture_new(cfg->capture_bytes);
        cap_err = capture_new(cfg->capture_bytes);
        struct run_ctx ctx = { .store = store, .rec = rec, .out = cap_out, .err = cap_err, .ev = ev,
                               .init_pid = sb.pid, .started_ms = now_monotonic_ms() };
        if (ev) {
                /* the caller has the id before the job starts */
                json_t *limits = json_loads(rec->limits_json, 0, NULL), *labels = store_labels_json(store, rec->id);
                events_started(ev, rec->id, getpid(), limits, labels);
                json_decref(limits);
                json_decref(labels);
        }
        /* The job's stdin is relayed from ours (no caller fd ever enters
         * the sandbox); its output passes through to ours unless --json. */
        if (a->stdin_data) {
                /* a request's stdin: relayed like ours, from a private copy */
                stdin_fd = memfd_create("hutch-stdin", MFD_CLOEXEC);
                if (stdin_fd < 0 || write_all(stdin_fd, a->stdin_data, a->stdin_len) < 0 ||
                    lseek(stdin_fd, 0, SEEK_SET) < 0) {
                        log_error_errno(-errno, "run: the request's stdin: %m");
                        goto abort;
                }
        }
        host_in = hostio_new(stdin_fd >= 0 ? stdin_fd : STDIN_FILENO, false, 0);
        if (!json && !ev) {
                host_out = hostio_new(STDOUT_FILENO, true, PASS_BUFFER_BYTES);
                host_err = hostio_new(STDERR_FILENO, true, PASS_BUFFER_BYTES);
        }
        struct supervise_hooks hooks = {
                .on_output = run_on_output, .on_heartbeat = run_on_heartbeat, .on_job_started = run_on_job_started,
                .heartbeat_ms = HEARTBEAT_MS,
                .userdata = &ctx,
                .host_in = host_in, .host_out = ev ? events_hostio(ev) : host_out, .host_err = host_err,
                .events = ev != NULL,
                /* the egress helper's log is complete only once the
                 * sandbox is gone */
                .record_while_exiting = !egress.active,
        };

        run_landlock_settle(&ll);
        if (spawned)
                spawn_r = sandbox_start(&sb, gvisor ? NULL : bpf, gvisor ? 0 : bpf_len);
        if (spawn_r < 0) {
                if (spawned) {
                        sandbox_abort(&sb);
                        sandbox_close(&sb);
                }
                sigprocmask(SIG_SETMASK, &old, NULL);
                out.status = RUN_SETUP_ERROR;
                out.exit_code = EXIT_SETUP;
                out.error = -spawn_r;
                char limit[256];
                const char *why = ns_explain_refusal(spawn_r, sb.failed_step, cfg->net != NET_HOST,
                                                   limit, sizeof(limit));
                snprintf(out.message, sizeof(out.message), "setup: %s%s%s: %s%s",
                         sb.failed_step ? sb.failed_step : "start the sandbox",
                         sb.failed_path[0] ? " " : "", sb.failed_path,
                         why ? why : strerror(-spawn_r),
                         spawn_r == -EPERM || spawn_r == -ENOSPC || spawn_r == -EINVAL || spawn_r == -EACCES
                         ? " (see: hutch doctor)" : "");
        } else {
                log_debug("sandbox started (init pid %d on the host)", (int)sb.pid);
                if (cfg->tty)
                        run_tty_raw(&tty);
                r = supervise(cfg, &sb, &hooks, &out);
                run_tty_restore(&tty);
                /* init is reaped, or is exiting with no process beside it
                 * (out.init_exiting): nothing can write to the workspace */
                workspace_fd = TAKE_FD(sb.workspace_fd);
                upper_fd = TAKE_FD(sb.upper_fd);
                sandbox_close(&sb);
                /* the landlock tier's workspace is a copy: what the job
                 * changed in it becomes an overlay-style upper dir */
                if (ll.active && workspace_fd >= 0 && wp.lower_fd >= 0) {
                        r = run_landlock_upper(&ll, wp.lower_fd, &upper_fd);
                        if (r < 0)
                                log_warning("run: cannot list what the job changed in its workspace copy: %s",
                                            strerror(-r));
                }
                sigprocmask(SIG_SETMASK, &old, NULL);
                if (r < 0) {
                        out.status = RUN_SETUP_ERROR;
                        out.exit_code = EXIT_SETUP;
                        snprintf(out.message, sizeof(out.message), "supervisor failed: %s", strerror(-r));
                }
        }

        if (out.status == RUN_SETUP_ERROR && sc_report.cached && strncmp(out.message, "setup: seccomp:", 15) == 0)
                run_forget_seccomp(cfg, &out);
        /* the sandbox is gone: every connection of the job has ended */
        r = run_egress_record(store, rec->id, &egress);
        if (r < 0)
                log_warning("run: the record of run %s's connections is incomplete: %s", rec->id, strerror(-r));

        int files_code = -1;
        if (workspace_fd >= 0)
                files_code = run_collect_files(store, rec, cfg, a, &wp, workspace_fd, upper_fd, &out);
        run_scrub_secret_files(store, rec->id, cfg->secret_env, ev);

        if (cgroup) {
                /* init is reaped; nothing of the run may stay behind */
                r = cgroup_run_remove(cgroup, 2000);
                if (r < 0)
                        log_warning("run: cannot remove the run cgroup %s: %s", cgroup_run_path(cgroup),
                                    strerror(-r));
        }
        run_finish_record(store, rec, cfg, &out, cap_out, cap_err, host_out, host_err, ev, json);
        code = files_code >= 0 ? files_code : out.exit_code;
        goto out;
abort:
        /* nothing of the job ran: take the half-built sandbox down */
        if (spawned) {
                sandbox_abort(&sb);
                sandbox_close(&sb);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (key_taken) {
                int k = run_answer_key(a, a->id_wait);
                code = k >= 0 ? k : EXIT_BUSY;
        }
out:
        if (detach_notify >= 0)
                close(detach_notify);
        if (ev && !events_have_exited(ev) && !key_taken && !detached_parent) {
                /* the run could not start: exit is still the last event,
                 * with what the record would have said */
                if (!rec) {
                        rec = run_record_new();
                        (void)run_record_begin(rec, cfg->argv, NULL, cfg->profile_name);
                }
                rec->status = RUN_SETUP_ERROR;
                rec->exit_code = code;
                if (!rec->message)
                        rec->message = xstrdup("the run could not start (hutch's message is on stderr)");
                json_t *o = cli_run_json_object(NULL, rec);
                events_exit(ev, o);
                json_decref(o);
        }
        if (workspace_fd >= 0)
                close(workspace_fd);
        if (upper_fd >= 0)
                close(upper_fd);
        if (wp.lower_fd >= 0)
                close(wp.lower_fd);
        run_snapshot_remove(&wp);
        run_landlock_done(&ll);
        free(wp.workdir);
        strv_free(wp.inputs);
        session_release(&wp.session);
        run_egress_done(&egress);
        slurm_step_done(&slurm);
        if (enforcement)
                json_decref(enforcement);
        if (a->detach && !detached_parent) {
                /* the exit event is written: a follower that has the spool
                 * open reads it to the end, a later one reads the record */
                _cleanup_free_ char *spool = run_spool_path(rec ? rec->id : "");
                if (spool)
                        (void)unlink(spool);
        }
        /* Recorded while the sandbox's init exits on its own
         * (out.init_exiting): the caller reaps it, and hutch returns only
         * once it is gone. */
        if (out.init_exiting)
                *ret_exiting_init = sb.pid;
        return code;
}

/* The job's argv for a --lang run: the language's run command, then the
 * program's own arguments. */
static void lang_argv(struct run_config *cfg, const struct lang_job *lj)
{
        char **job_argv = NULL;
        for (char **p = lj->plan.run_argv; *p; p++)
                job_argv = strv_append(job_argv, *p);
        for (char **p = cfg->argv; p && *p; p++)
                job_argv = strv_append(job_argv, *p);
        strv_free(cfg->argv);
        cfg->argv = job_argv;
}

static void lang_job_done(struct lang_job *lj)
{
        if (lj->code_fd >= 0)
                close(lj->code_fd);
        lang_plan_done(&lj->plan);
        lang_table_free(lj->table);
}

int verb_run(int argc, char **argv)
{
        struct run_config cfg;
        struct run_args a = { 0 };
        struct lang_job lj = { .code_fd = -1 };
        struct request req = { 0 };
        _cleanup_free_ char *err = NULL;
        pid_t exiting_init = 0;
        int r, code = EXIT_SETUP;

        run_config_init(&cfg);
        r = run_parse_args(argc, argv, &cfg, &a);
        if (r != 0) {
                code = r < 0 ? EXIT_OK : r;
                goto out;
        }
        if (a.request) {
                code = run_apply_request(&a, &cfg, &req);
                if (code != EXIT_OK)
                        goto out;
        }
        code = run_resolve_secrets(&a, &cfg);
        if (code != EXIT_OK)
                goto out;
        if (a.detach) {
                /* the caller gets the id; the spool gets the events */
                a.events = true;
                a.json = false;
        }
        /* a finished run with the key is the answer: nothing runs */
        r = run_answer_key(&a, a.id_wait);
        if (r >= 0) {
                code = r;
                goto out;
        }
        code = EXIT_SETUP;
        if (a.lang) {
                r = prepare_lang(&a, &cfg, &lj, &err);
                if (r < 0) {
                        log_error("run: %s", err ? err : strerror(-r));
                        goto out;
                }
                lang_argv(&cfg, &lj);
        }

        r = profile_load_trusting(&cfg, a.profile ? a.profile : lj.profile, a.trust_profile, &err);
        if (r < 0) {
                log_error("%s", err);
                goto out;
        }
        /* a bad value on the command line is a usage error, not a bad profile */
        r = profile_apply_cli(&cfg, a.overrides, &err);
        if (r < 0) {
                log_error("run: %s", err);
                code = EXIT_USAGE;
                goto out;
        }
        /* Any allow rule turns network none into allow, unless none was
         * asked for on the command line; host stays host. */
        const struct key_origin *mode = run_config_origin(&cfg, "network.mode");
        if (cfg.net_allow && cfg.net != NET_ALLOW) {
                if (cfg.net == NET_NONE && (!mode || mode->origin != ORIGIN_CLI))
                        cfg.net = NET_ALLOW;
                else
                        log_warning("run: network is %s: the allow rules are not used",
                                    cfg.net == NET_HOST ? "host" : "none");
        }
        r = profile_validate(&cfg, &err);
        if (r < 0) {
                log_error("%s", err);
                goto out;
        }
        /* An interactive run lasts as long as the person at it: the
         * default 30 s (built in, or the default profile's, which names
         * every key) would end a shell mid-command. A timeout someone
         * chose (--timeout, a named profile's) still holds; a runaway
         * job is ended from the terminal with ~. (hutch-run(1)). */
        const struct key_origin *timeout_origin = run_config_origin(&cfg, "limits.timeout");
        if (cfg.tty && (!timeout_origin || timeout_origin->origin == ORIGIN_DEFAULT ||
                        (timeout_origin->origin != ORIGIN_CLI && timeout_origin->file &&
                         streq(basename_of(timeout_origin->file), "default.ini"))))
                cfg.timeout_ms = 0;
        code = execute(&cfg, &lj, &a, a.lang, a.json, NULL, &exiting_init);
out:
        lang_job_done(&lj);
        strv_free(a.overrides);
        strv_free(a.inputs);
        strv_free(a.labels);
        strv_free(a.secrets);
        run_request_cleanup(&a);
        request_done(&req);
        run_config_done(&cfg);
        if (exiting_init > 0)
                sandbox_reap(exiting_init);
        return code;
}

static void rerun_help(FILE *f)
{
        fprintf(f,
"Usage: hutch rerun [--json] [-v|-q] ID\n"
"\n"
"Run again what run ID ran (its command, or its --lang code) with the very\n"
"same resolved profile, as recorded with it, and record a new run that\n"
"points back to ID (rerun_of). ID may be any unique prefix of 4 or more\n"
"characters. Exit status as for hutch run.\n");
}

int verb_rerun(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json",    no_argument, NULL, OPT_JSON },
                { "verbose", no_argument, NULL, 'v' },
                { "quiet",   no_argument, NULL, 'q' },
                { "help",    no_argument, NULL, 'h' },
                {}
        };
        _cleanup_store_ struct store *store = NULL;
        _cleanup_run_record_ struct run_record *orig = NULL;
        _cleanup_free_ char *err = NULL, *display = NULL;
        struct lang_job lj = { .code_fd = -1 };
        struct run_config cfg;
        bool json = false;
        pid_t exiting_init = 0;
        int c, r, code, verbosity = LOG_NORMAL;

        optind = 1;
        while ((c = getopt_long(argc, argv, "vqh", opts, NULL)) != -1) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case 'v':
                        verbosity = verbosity < LOG_VERBOSE ? LOG_VERBOSE : LOG_DEBUG;
                        break;
                case 'q':
                        verbosity = LOG_QUIET;
                        break;
                case 'h':
                        rerun_help(stdout);
                        return EXIT_OK;
                default:
                        return cli_usage_error("rerun", argv, opts);
                }
        }
        log_set_level((enum log_level)verbosity);
        code = cli_open_run("rerun", argc, argv, optind, &store, &orig);
        if (code != EXIT_OK)
                return code;
        store = store_close(TAKE_PTR(store));
        if (!orig->profile_text) {
                log_error("rerun: run %s has no recorded profile (recorded by an older hutch)", orig->id);
                return EXIT_FAILURE_GENERIC;
        }

        run_config_init(&cfg);
        code = EXIT_SETUP;
        display = xasprintf("run %s", orig->id);
        /* the text is hutch's own resolution of a profile it accepted then */
        r = profile_load_text(&cfg, orig->profile_text, display, true, &err);
        if (r >= 0)
                r = profile_validate(&cfg, &err);
        if (r < 0) {
                log_error("rerun: %s", err);
                goto out;
        }
        free(cfg.profile_name);
        cfg.profile_name = xstrdup(orig->profile ? orig->profile : "default");
        for (char **p = orig->argv; p && *p; p++)
                cfg.argv = strv_append(cfg.argv, *p);
        if (orig->lang) {
                const struct lang *l;
                r = lang_table_load(NULL, &lj.table, &err);
                if (r >= 0)
                        r = lang_lookup(lj.table, orig->lang, &l, &err);
                if (r >= 0)
                        r = lang_plan_make(l, &lj.plan, &err);
                if (r < 0) {
                        log_error("rerun: %s", err);
                        goto out;
                }
                lj.code_fd = memfd_create("hutch-code", MFD_CLOEXEC);
                if (lj.code_fd < 0 || write_all(lj.code_fd, orig->code ? orig->code : "", orig->code_len) < 0) {
                        log_error("rerun: cannot stage the code: %s", strerror(errno));
                        goto out;
                }
        }
        /* the workspace options (--workdir, --session, --input) are not
         * part of the profile: a rerun runs in a fresh workspace */
        struct run_args none = { 0 };
        code = execute(&cfg, &lj, &none, orig->lang, json, orig->id, &exiting_init);
out:
        lang_job_done(&lj);
        run_config_done(&cfg);
        if (exiting_init > 0)
                sandbox_reap(exiting_init);
        return code;
}
