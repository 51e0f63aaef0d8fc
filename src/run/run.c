/* run/run.c - one run, as stages over one frozen configuration:
 *
 *     run_start()          the host side: stdio, signals, Slurm, gVisor
 *     prepare_workspace()  --workdir and --input resolved on the host
 *     run_open_record()    the record begun (and --detach, --session, --snapshot)
 *     run_admit()          the node's [admission] cap: wait for a slot, or exit 75
 *     prepare_limits()     io.max and the run's cgroup
 *     build_sandbox()      the clone, the egress helper, the profile text
 *     build_policy()       the syscall filter and the enforcement report
 *     run_record_start()   the run's row, with status running
 *     supervise_job()      the job, from its start message to its end
 *     collect()            connections, files, the cgroup
 *     report()             the final update and the answer
 *     run_done()           everything the stages took, given back
 *
 * A stage returns RUN_NEXT to go on or hutch's exit code to stop there;
 * run_done() takes down whatever the stages left (a half-built sandbox,
 * the signal mask, the workspace's fds) on every path. The stages that
 * bring the run to its row (run_open_record(), run_admit(),
 * run_record_start()) are in run/record-start.c; struct run, the state
 * every stage shares, is in run/run-internal.h.
 *
 * Order matters for "never lose a run": the profile is resolved and the
 * syscall policy built first (a bad profile runs nothing and records
 * nothing, like a bad command line); then the run's row is written with
 * status running *before* the sandbox's job starts, and completed in one
 * transaction at the end. If the row cannot be written, the job does not
 * run.
 *
 * The resolved configuration is frozen: its canonical text is the run's
 * stored profile, what `hutch profile show` prints. What the run learns
 * on its way (a Slurm allocation's caps, gVisor's uid, the egress proxy's
 * variables, uid 0's home) goes into struct run's view of it, which the
 * sandbox, the limits and the report see, never back into it.
 */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "run/run-internal.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/errcode.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "limits/cgroup.h"
#include "config/iomax.h"
#include "limits/slurm.h"
#include "limits/watchdog.h"
#include "record/store.h"
#include "run/admission.h"
#include "run/enforce.h"
#include "run/landlock.h"
#include "run/live-internal.h"
#include "run/live-limits.h"
#include "image/image.h"
#include "sandbox/gvisor.h"
#include "sandbox/mount.h"
#include "sandbox/ns.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"
#include "supervise/capture.h"
#include "supervise/events.h"
#include "supervise/hostio.h"
#include "supervise/supervise.h"
#include "workspace/session.h"

#define HEARTBEAT_MS 5000

/* what image import accepts, the root overlay can stack */
_Static_assert(IMAGE_MAX_LAYERS <= MOUNT_MAX_LAYERS, "image import accepts more layers than a root can stack");
/* the buffer between the job's output and the caller's reader: bounds
 * hutch's memory while the reader is slow or stopped (supervise.c) */
#define PASS_BUFFER_BYTES (256u << 10)

static void close_if(int fd)
{
        if (fd >= 0)
                close(fd);
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

/* The host side before anything of the run exists: our stdio and
 * signals, the view of cfg, the Slurm step. Never fails. */
static void run_start(struct run *r)
{
        const struct run_config *cfg = r->cfg;

        r->view = *cfg;
        r->view.env = NULL;
        for (char **p = cfg->env; p && *p; p++)
                r->view.env = strv_append(r->view.env, *p);
        r->view.home = xstrdup(cfg->uid == 0 && streq(cfg->home, "/home/sandbox") ? "/root" : cfg->home);
        /* a detached run's events go to its spool, made after the fork */
        if (r->a->events && !r->a->detach)
                r->ev = events_new(STDOUT_FILENO, cfg->redact_env);

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
        if (read_file("/proc/self/cgroup", &r->self_cgroup, NULL) < 0)
                r->self_cgroup = NULL;
        /* inside a Slurm allocation before anything reads the limits */
        r->slurm_capped = run_apply_slurm(&r->view, r->self_cgroup, &r->slurm);
}

/* The landlock tier has no user or UTS namespace: a --uid, --gid or
 * --hostname the caller gave cannot be applied. The record's not_held
 * says so for the profile's; a flag typed on the command line gets a
 * line on stderr too, never dropped in silence. */
static void warn_not_applied(const struct run_args *a)
{
        for (size_t i = 0; i + 1 < a->n_overrides; i += 2) {
                const char *k = a->overrides[i];
                if (streq(k, "uid") || streq(k, "gid"))
                        log_warning("run: --%s %s is not applied in the landlock tier: it has no user namespace, "
                                    "the job runs as %s", k, a->overrides[i + 1],
                                    geteuid() == 0 ? "an unprivileged uid" : "your own uid and gid");
                else if (streq(k, "hostname"))
                        log_warning("run: --hostname %s is not applied in the landlock tier: it has no UTS "
                                    "namespace, the job sees the host's hostname", a->overrides[i + 1]);
        }
}

/* --workdir and --input on the host, the runtime, the egress rules. */
static int prepare_workspace(struct run *r)
{
        int k;

        k = run_prepare_workspace(r->a, &r->wp, &r->err);
        if (k < 0) {
                log_error("run: %s", r->err);
                return EXIT_USAGE;
        }
        /* --runtime gvisor without a usable runsc is the host's setup
         * error, said before anything is recorded: never a quiet fall
         * back to the native runtime */
        r->gvisor = r->cfg->runtime == RUNTIME_GVISOR;
        if (r->gvisor) {
                k = gvisor_probe(&r->gv, &r->err);
                if (k >= 0)
                        k = gvisor_check_config(&r->view, &r->gv, &r->err);
                if (k < 0) {
                        log_error("run: %s", r->err);
                        return EXIT_SETUP;
                }
                log_debug("runtime gvisor: %s version %s, platform %s", r->gv.path, r->gv.version, r->gv.platform);
        }
        /* the tier, before anything is recorded: auto may probe, and a
         * landlock run refuses here what it cannot hold */
        k = run_isolation_choose(r->cfg, r->wp.inputs != NULL, r->lj->code_fd >= 0, &r->ll, &r->err);
        if (k < 0) {
                log_error("run: %s", r->err);
                return EXIT_SETUP;
        }
        if (r->ll.active)
                warn_not_applied(r->a);
        k = run_egress_prepare(&r->view, r->ll.active, &r->egress, &r->err);
        if (k < 0) {
                log_error("run: %s", r->err);
                return EXIT_SETUP;
        }
        /* Under gVisor the job is uid 0 of gVisor's kernel whatever the
         * profile says (gvisor-spec.c); the sandbox around runsc must not
         * be uid 0, or runsc takes itself for real root and wants
         * capabilities it never gets. The record keeps the uid asked for. */
        if (r->gvisor && r->view.uid == 0)
                r->view.uid = 1000;
        if (r->gvisor && r->view.gid == 0)
                r->view.gid = 1000;
        return RUN_NEXT;
}

static int prepare_limits(struct run *r)
{
        const char *asked = getenv("HUTCH_CGROUP");

        /* io_max names devices: a wrong one is the user's error, said
         * before anything runs */
        if (iomax_lines(r->view.io_max, &r->io_max, &r->err) < 0) {
                log_error("run: %s", r->err);
                return EXIT_SETUP;
        }
        struct run_config host_view = r->view;
        /* runsc's tree needs room for gVisor's own tasks: pids.max is its
         * backstop there, the job's limit is inside */
        if (r->gvisor && host_view.pids)
                host_view.pids = GVISOR_HOST_TASKS(r->view.pids);
        run_prepare_cgroup(&host_view, r->self_cgroup, r->rec->id, r->io_max, &r->cgroup, &r->cg_unit,
                           &r->cg_reason);
        if (r->cgroup)
                log_debug("run cgroup %s", cgroup_run_path(r->cgroup));
        else if (asked && *asked && !streq(asked, "none"))
                /* asked for by name: say so, but still run as the fallbacks allow
                 * (--require makes a missing limit an error) */
                log_warning("run: HUTCH_CGROUP: %s; limits fall back to the watchdog and rlimits", r->cg_reason);
        else
                log_debug("no run cgroup (%s): falling back to the watchdog and rlimits", r->cg_reason);
        return RUN_NEXT;
}

/* Block the signals the supervisor takes from its signalfd. */
static void block_signals(struct run *r)
{
        sandbox_signal_set(&r->set);
        sigprocmask(SIG_BLOCK, &r->set, &r->old);
        r->masked = true;
        /* A shell starts background jobs with SIGINT and SIGQUIT ignored;
         * an ignored signal never reaches our signalfd, so `kill -INT`
         * from a script would be lost instead of forwarded. Take them
         * back (they stay blocked, so this cannot kill us). SIGHUP stays
         * ignored under nohup, as the user asked. */
        for (int s = 1; s < NSIG; s++) {
                struct sigaction sa;
                if (!sigismember(&r->set, s) || s == SIGHUP || sigaction(s, NULL, &sa) < 0)
                        continue;
                if (sa.sa_handler == SIG_IGN)
                        signal(s, SIG_DFL);
        }
}

/* The sandbox builds itself while we record the run; it starts the job
 * only after sandbox_start(), so the record still comes first: no row,
 * no job. Cloning before the store is open also keeps the child's copy
 * of our memory small. */
static int build_sandbox(struct run *r)
{
        const struct run_config *view = &r->view;

        r->inputs = (struct sandbox_inputs) {
                .code_fd = r->lj->code_fd, .code_name = r->lj->plan.source_name,
                .compile_argv = r->lj->plan.compile_argv, .argv = view->argv,
                .seccomp_required = !r->gvisor, /* gVisor's kernel serves the job's syscalls */
                .cgroup = r->cgroup,
                .pids_in_cgroup = r->cgroup && (cgroup_run_enforced(r->cgroup) & CGROUP_LIMIT_PIDS),
                .workspace_lower = r->wp.snapshot ? r->wp.snapshot : r->wp.workdir, .inputs = r->wp.inputs,
                .egress_fd = r->egress.sandbox_fd, .egress_ports = r->egress.ports,
                .n_egress_ports = r->egress.n_ports,
                .gvisor = r->gvisor ? &r->gv : NULL,
                .landlock = r->ll.active ? &r->ll.job : NULL,
                .live = r->a->live != NULL,
        };
        block_signals(r);
        r->have_ws = view->tty && isatty(STDIN_FILENO) && ioctl(STDIN_FILENO, TIOCGWINSZ, &r->ws) == 0;

        r->spawn_r = sandbox_spawn(view, &r->inputs, r->have_ws ? &r->ws : NULL, &r->sb);
        r->spawned = r->spawn_r >= 0;
        if (r->spawned) {
                int k = run_egress_start(view, r->sb.pid, &r->egress);
                if (k < 0) {
                        log_error_errno(k, "run: cannot start the egress helper: %m");
                        return EXIT_SETUP;
                }
                /* the landlock tier ends every child of ours it does not
                 * know when the job ends: the helper is ours, and its
                 * report comes after that */
                if (r->sb.subreaper && r->egress.helper.pid > 0) {
                        if (r->sb.n_keep >= SANDBOX_KEEP_MAX) {
                                log_error("run: too many helper processes to tell from the job's");
                                return EXIT_SETUP;
                        }
                        r->sb.keep[r->sb.n_keep++] = r->egress.helper.pid;
                }
        }
        /* The record's copy of the profile: the frozen settings, taken
         * after the clone, which it would only delay. */
        r->profile_text = profile_canonical_text(r->cfg);
        profile_sha256_hex(r->profile_text, r->sha);
        return RUN_NEXT;
}

/* The syscall filter is compiled here, in parallel with the sandbox's own
 * setup, and travels with the start message; then the enforcement
 * report, which --require checks. */
static int build_policy(struct run *r)
{
        const struct run_config *view = &r->view;
        int k;

        k = run_build_seccomp(view, &r->bpf, &r->bpf_len, &r->sc_report, &r->err);
        if (k < 0) {
                log_error("%s", r->err ? r->err : strerror(-k));
                return EXIT_SETUP;
        }
        /* the job is set up under it while we record the run */
        if (r->spawned &&
            (k = sandbox_send_filter(&r->sb, r->gvisor ? NULL : r->bpf, r->gvisor ? 0 : r->bpf_len)) < 0) {
                log_error_errno(k, "run: cannot hand the sandbox its syscall filter: %m");
                return EXIT_SETUP;
        }
        struct enforce_cgroup cg_report = {
                .path = r->cgroup ? cgroup_run_path(r->cgroup) : NULL,
                .enforced = r->cgroup ? cgroup_run_enforced(r->cgroup) : 0,
                .reason = r->cg_reason,
                .systemd_unit = r->cg_unit,
                .io_max_error = r->cgroup ? cgroup_run_io_max_error(r->cgroup) : NULL,
        };
        r->enforcement = enforcement_build(view, &r->sc_report, &cg_report, ns_host_uid(), ns_host_gid());
        /* gVisor's kernel has its own SysV IPC; the landlock tier has no
         * IPC namespace of its own: its limits would be the host's */
        if (r->spawned && !r->gvisor && !r->ll.active)
                run_limit_ipc(view, &r->sb, r->enforcement, &cg_report);
        run_isolation_report(r->enforcement, r->cfg, &r->ll, r->inputs.pids_in_cgroup);
        if (r->a->live)
                live_limits_enforcement(r->enforcement);
        gvisor_enforcement(r->enforcement, view, r->gvisor ? &r->gv : NULL);
        run_report_slurm(r->enforcement, &r->slurm, r->slurm_capped, r->cgroup != NULL);
        if (enforcement_check_required(view, r->enforcement, &r->err) < 0) {
                log_error("run: %s", r->err);
                return EXIT_SETUP;
        }
        return RUN_NEXT;
}

/* Where the job's output goes and its input comes from, and the hooks
 * the supervisor calls. The job's stdin is relayed from ours (no caller
 * fd ever enters the sandbox); its output passes through to ours unless
 * --json or --events. */
static int connect_io(struct run *r)
{
        const struct run_args *a = r->a;

        r->cap_out = capture_new(r->view.capture_bytes);
        r->cap_err = capture_new(r->view.capture_bytes);
        /* redacted as it is read, before the head/tail cut can split a value */
        capture_set_secrets(r->cap_out, r->view.redact_env);
        capture_set_secrets(r->cap_err, r->view.redact_env);
        r->ctx = (struct run_ctx) { .store = r->store, .rec = r->rec, .out = r->cap_out, .err = r->cap_err,
                                    .ev = r->ev, .init_pid = r->sb.pid, .started_ms = now_monotonic_ms() };
        if (r->ev) {
                /* the caller has the id before the job starts */
                json_t *limits = json_loads(r->rec->limits_json, 0, NULL),
                       *labels = store_labels_json(r->store, r->rec->id);
                events_started(r->ev, r->rec->id, getpid(), limits, labels);
                json_decref(limits);
                json_decref(labels);
        }
        if (a->stdin_data) {
                /* a request's stdin: relayed like ours, from a private copy */
                r->stdin_fd = memfd_create("hutch-stdin", MFD_CLOEXEC);
                if (r->stdin_fd < 0 || write_all(r->stdin_fd, a->stdin_data, a->stdin_len) < 0 ||
                    lseek(r->stdin_fd, 0, SEEK_SET) < 0) {
                        log_error_errno(-errno, "run: the request's stdin: %m");
                        return EXIT_SETUP;
                }
        }
        r->host_in = hostio_new(r->stdin_fd >= 0 ? r->stdin_fd : STDIN_FILENO, false, 0);
        if (!r->json && !r->ev) {
                r->host_out = hostio_new(STDOUT_FILENO, true, PASS_BUFFER_BYTES);
                r->host_err = hostio_new(STDERR_FILENO, true, PASS_BUFFER_BYTES);
                /* a terminal, or a pipe into a kept CI log: neither may
                 * get a value the record does not */
                hostio_set_secrets(r->host_out, r->view.redact_env);
                hostio_set_secrets(r->host_err, r->view.redact_env);
        }
        r->hooks = (struct supervise_hooks) {
                .on_output = run_on_output, .on_heartbeat = run_on_heartbeat, .on_job_started = run_on_job_started,
                .heartbeat_ms = HEARTBEAT_MS,
                .userdata = &r->ctx,
                .host_in = r->host_in, .host_out = r->ev ? events_hostio(r->ev) : r->host_out,
                .host_err = r->host_err,
                .events = r->ev != NULL,
                /* the egress helper's log is complete only once the
                 * sandbox is gone */
                .record_while_exiting = !r->egress.active,
                /* the landlock tier's disk limit: the copy of the
                 * workspace plus --disk, and as many entries more as
                 * limits.inodes (run/landlock.c) */
                .disk_dir = r->ll.active && r->view.disk_bytes ? r->ll.scratch.dir : NULL,
                .disk_max_bytes = r->ll.disk_base_bytes + r->view.disk_bytes,
                .disk_max_entries = r->ll.disk_base_entries + r->view.inodes,
        };
        return RUN_NEXT;
}

/* The sandbox could not be built or started: the run's outcome says
 * where, and why when the kernel's answer has a known cause. */
static void setup_failed(struct run *r, int error)
{
        struct run_outcome *out = &r->out;
        char limit[256];
        const char *why = ns_explain_refusal(error, r->sb.failed_step, r->view.net != NET_HOST, limit,
                                             sizeof(limit));

        out->status = RUN_SETUP_ERROR;
        out->exit_code = EXIT_SETUP;
        out->error = -error;
        snprintf(out->message, sizeof(out->message), "setup: %s%s%s: %s%s",
                 r->sb.failed_step ? r->sb.failed_step : "start the sandbox",
                 r->sb.failed_path[0] ? " " : "", r->sb.failed_path,
                 why ? why : strerror(-error),
                 error == -EPERM || error == -ENOSPC || error == -EINVAL || error == -EACCES
                 ? " (see: hutch doctor)" : "");
}

/* Start the job and supervise it to its end; the sandbox is gone (or
 * its init exiting alone, out.init_exiting) when this returns. */
static int supervise_job(struct run *r)
{
        int k = r->spawn_r;

        run_landlock_settle(&r->ll);
        if (r->spawned)
                k = sandbox_start(&r->sb, r->gvisor ? NULL : r->bpf, r->gvisor ? 0 : r->bpf_len);
        if (k < 0) {
                if (r->spawned) {
                        sandbox_abort(&r->sb);
                        sandbox_close(&r->sb);
                        r->spawned = false;
                }
                sigprocmask(SIG_SETMASK, &r->old, NULL);
                r->masked = false;
                setup_failed(r, k);
                return RUN_NEXT;
        }
        log_debug("sandbox started (init pid %d on the host)", (int)r->sb.pid);
        if (r->a->live) {
                /* a live sandbox: jobs come by `hutch exec` (live.c) */
                k = live_serve(&r->view, r->a->live, r->store, r->rec->id, &r->sb, &r->out, &r->detach_notify,
                               &r->egress.helper);
        } else {
                if (r->view.tty)
                        run_tty_raw(&r->tty);
                k = supervise(&r->view, &r->sb, &r->hooks, &r->out);
                run_tty_restore(&r->tty);
        }
        /* init is reaped, or is exiting with no process beside it
         * (out.init_exiting): nothing can write to the workspace */
        r->workspace_fd = TAKE_FD(r->sb.workspace_fd);
        r->upper_fd = TAKE_FD(r->sb.upper_fd);
        sandbox_close(&r->sb);
        r->spawned = false;
        /* the landlock tier's workspace is a copy: what the job changed
         * in it becomes an overlay-style upper dir */
        if (r->ll.active && r->workspace_fd >= 0 && r->wp.lower_fd >= 0) {
                /* a failure is the files' error (run_collect_files()) */
                r->upper_error = run_landlock_upper(&r->ll, r->wp.lower_fd, &r->upper_fd);
                if (r->upper_error > 0)
                        r->upper_error = 0;
        }
        sigprocmask(SIG_SETMASK, &r->old, NULL);
        r->masked = false;
        if (k < 0) {
                r->out.status = RUN_SETUP_ERROR;
                r->out.exit_code = EXIT_SETUP;
                snprintf(r->out.message, sizeof(r->out.message), "supervisor failed: %s", strerror(-k));
        }
        return RUN_NEXT;
}

/* The sandbox is gone: its connections, its files and its cgroup. */
static int collect(struct run *r)
{
        int k;

        if (r->out.status == RUN_SETUP_ERROR && r->sc_report.cached &&
            strncmp(r->out.message, "setup: seccomp:", 15) == 0)
                run_forget_seccomp(&r->view, &r->out);
        /* every connection of the job has ended */
        k = run_egress_record(r->store, r->rec->id, &r->egress, r->view.redact_env);
        if (k < 0)
                log_warning("run: the record of run %s's connections is incomplete: %s", r->rec->id,
                            strerror(-k));
        if (r->workspace_fd >= 0)
                r->files_code = run_collect_files(r->store, r->rec, &r->view, r->a, &r->wp, r->workspace_fd,
                                                  r->upper_fd, r->upper_error, &r->out);
        run_scrub_secret_files(r->store, r->rec->id, r->view.redact_env, r->ev);
        if (r->cgroup) {
                /* init is reaped; nothing of the run may stay behind */
                k = cgroup_run_remove(r->cgroup, 2000);
                if (k < 0)
                        log_warning("run: cannot remove the run cgroup %s: %s", cgroup_run_path(r->cgroup),
                                    strerror(-k));
        }
        return RUN_NEXT;
}

/* The final update and the answer; hutch's exit code. */
static int report(struct run *r)
{
        run_finish_record(r->a->ui, r->store, r->rec, &r->view, &r->out, r->cap_out, r->cap_err, r->host_out, r->host_err,
                          r->ev, r->json);
        return r->files_code >= 0 ? r->files_code : r->out.exit_code;
}

/* A run that could not start still ends its --events stream with the
 * exit event, saying what the record would have said. */
static void say_not_started(struct run *r, int code)
{
        if (!r->rec) {
                r->rec = run_record_new();
                (void)run_record_begin(r->rec, r->cfg->argv, NULL, r->cfg->profile_name);
        }
        r->rec->status = RUN_SETUP_ERROR;
        r->rec->exit_code = code;
        if (!r->rec->message)
                r->rec->message = xstrdup("the run could not start (hutch's message is on stderr)");
        json_t *o = r->a->ui->result_object(NULL, r->rec);
        /* refused rather than failed (admission_full, store_busy): the
         * exit event says so as hutch.error/1 would */
        if (log_error_code()) {
                json_object_set_new(o, "error_code", json_string(log_error_code()));
                json_object_set_new(o, "retryable", json_boolean(errcode_retryable(log_error_code())));
        }
        events_exit(r->ev, o);
        json_decref(o);
}

/* Give back everything the stages took, on every path; code is the
 * stage's answer, and the answer to return. */
static int run_done(struct run *r, int code)
{
        /* nothing of the job ran: take the half-built sandbox down */
        if (r->spawned) {
                sandbox_abort(&r->sb);
                sandbox_close(&r->sb);
        }
        if (r->masked)
                sigprocmask(SIG_SETMASK, &r->old, NULL);
        if (r->key_taken) {
                /* hutch-json(7): of two runs started at once with one key,
                 * one runs and the other answers with its result, so the
                 * one that lost the race waits for it (--id-wait or not) */
                int k = r->a->ui->answer_key(r->a, r->cfg->argv, true);
                code = k >= 0 ? k : EXIT_BUSY;
        }
        if (r->detach_notify >= 0)
                close(r->detach_notify);
        if (r->ev && !events_have_exited(r->ev) && !r->key_taken && !r->detached_parent)
                say_not_started(r, code);
        close_if(r->admit_fd);
        close_if(r->workspace_fd);
        close_if(r->upper_fd);
        close_if(r->wp.lower_fd);
        close_if(r->stdin_fd);
        run_snapshot_remove(&r->wp);
        run_landlock_done(&r->ll);
        free(r->wp.workdir);
        strv_free(r->wp.inputs);
        session_release(&r->wp.session);
        run_egress_done(&r->egress);
        slurm_step_done(&r->slurm);
        if (r->enforcement)
                json_decref(r->enforcement);
        if (r->a->detach && !r->detached_parent) {
                /* the exit event is written: a follower that has the spool
                 * open reads it to the end, a later one reads the record */
                _cleanup_free_ char *spool = run_spool_path(r->rec ? r->rec->id : "");
                if (spool)
                        (void)unlink(spool);
        }
        events_free(r->ev);
        hostio_free(r->host_in);
        hostio_free(r->host_out);
        hostio_free(r->host_err);
        capture_free(r->cap_out);
        capture_free(r->cap_err);
        cgroup_run_free(r->cgroup);
        store_close(r->store);
        run_record_free(r->rec);
        free(r->bpf);
        free(r->profile_text);
        free(r->io_max);
        free(r->cg_reason);
        free(r->cg_unit);
        free(r->self_cgroup);
        free(r->err);
        strv_free(r->view.env);
        free(r->view.home);
        return code;
}

int run_execute(const struct run_config *cfg, const struct lang_job *lj, const struct run_args *a,
                const char *lang, bool json, const char *rerun_of, pid_t *ret_exiting_init)
{
        static int (*const stages[])(struct run *) = {
                prepare_workspace, run_open_record, run_admit, prepare_limits, build_sandbox, build_policy,
                run_record_start, connect_io, supervise_job, collect,
        };
        struct run r = {
                .cfg = cfg, .a = a, .lj = lj, .lang = lang, .json = json, .rerun_of = rerun_of,
                .wp = { .lower_fd = -1, .session.lock_fd = -1 },
                .workspace_fd = -1, .upper_fd = -1,
                .egress = { .sandbox_fd = -1, .helper_fd = -1, .helper = { .ctl_fd = -1 } },
                .detach_notify = -1, .admit_fd = -1,
                .sb = { .pidfd = -1, .sync_fd = -1, .stdout_fd = -1, .stderr_fd = -1 },
                .stdin_fd = -1, .files_code = -1,
        };
        int code = RUN_NEXT;

        run_start(&r);
        for (size_t i = 0; i < ELEMENTSOF(stages) && code == RUN_NEXT; i++)
                code = stages[i](&r);
        if (code == RUN_NEXT)
                code = report(&r);
        /* Recorded while the sandbox's init exits on its own
         * (out.init_exiting): the caller reaps it, and hutch returns only
         * once it is gone. */
        if (r.out.init_exiting)
                *ret_exiting_init = r.sb.pid;
        return run_done(&r, code);
}
