/* supervise-outcome.c - what ended a run, as a status, an exit code and
 * a one-line message (see supervise-internal.h). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "lib/exit-codes.h"
#include "lib/util.h"
#include "sandbox/ns.h"
#include "supervise/supervise-internal.h"


static const char *signal_name(int sig, char *buf, size_t len)
{
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev)
                snprintf(buf, len, "SIG%s", abbrev);
        else
                snprintf(buf, len, "signal %d", sig);
        return buf;
}

/* The kernel's OOM killer ended the sandbox in its cgroup. */
static void say_cgroup_oom(const struct loop *l, struct run_outcome *out)
{
        char lim[32], peak[32];
        out->status = RUN_OOM;
        out->exit_code = EXIT_OOM;
        snprintf(out->message, sizeof(out->message),
                 "memory limit %s exceeded: the kernel's OOM killer ended the sandbox in its cgroup "
                 "(memory.max; %llu process%s killed, peak %s)",
                 format_size(l->cfg->memory_bytes, lim, sizeof(lim)),
                 (unsigned long long)l->cg_stats.memory_events.oom_kill,
                 l->cg_stats.memory_events.oom_kill == 1 ? "" : "es",
                 format_size((l->cg_stats.memory_peak >> 20) << 20, peak, sizeof(peak)));
}

/* The watchdog measured the memory limit exceeded. */
static void say_watchdog_oom(const struct loop *l, struct run_outcome *out)
{
        char lim[32], used[32];
        out->status = RUN_OOM;
        out->exit_code = EXIT_OOM;
        snprintf(out->message, sizeof(out->message),
                 "memory limit %s exceeded: the watchdog measured %s in use and killed the sandbox",
                 format_size(l->cfg->memory_bytes, lim, sizeof(lim)),
                 format_size((l->worst.memory_bytes >> 20) << 20, used, sizeof(used)));
}

/* The disk watch killed the sandbox. */
static void say_disk_limit(const struct loop *l, struct run_outcome *out)
{
        char lim[32], used[32];
        out->status = RUN_DISK_LIMIT;
        out->exit_code = EXIT_DISK;
        if (l->disk_too_deep)
                snprintf(out->message, sizeof(out->message),
                         "disk limit: the job nested directories more than %d deep in its scratch, past "
                         "what the disk watch walks, and it killed the sandbox", DU_MAX_DEPTH);
        else if (l->disk_worst.entries > l->hooks->disk_max_entries)
                snprintf(out->message, sizeof(out->message),
                         "disk limit: the scratch held %llu entries, over the %llu allowed (limits.inodes "
                         "%llu beyond the workspace copy), when the disk watch looked, and it killed the "
                         "sandbox", (unsigned long long)l->disk_worst.entries,
                         (unsigned long long)l->hooks->disk_max_entries,
                         (unsigned long long)l->cfg->inodes);
        else
                snprintf(out->message, sizeof(out->message),
                         "disk limit %s exceeded: the scratch held %s beyond the workspace copy when the "
                         "disk watch looked, and it killed the sandbox",
                         format_size(l->cfg->disk_bytes, lim, sizeof(lim)),
                         format_size(l->disk_worst.bytes - (l->hooks->disk_max_bytes - l->cfg->disk_bytes),
                                     used, sizeof(used)));
}

/* A setup step failed. */
static void say_setup_error(const struct loop *l, struct run_outcome *out)
{
        out->status = RUN_SETUP_ERROR;
        out->exit_code = EXIT_SETUP;
        out->error = l->setup_error.error;
        char limit[256];
        const char *why = ns_explain_refusal(-l->setup_error.error, l->setup_error.step,
                                           l->cfg->net != NET_HOST, limit, sizeof(limit));
        snprintf(out->message, sizeof(out->message), "setup: %s%s%s: %s%s",
                 l->setup_error.step, l->setup_error.path[0] ? " " : "",
                 l->setup_error.path, why ? why : strerror(l->setup_error.error),
                 why ? " (see: hutch doctor)" : "");
}

/* The job's command could not be executed. */
static void say_exec_error(const struct loop *l, struct run_outcome *out)
{
        int e = l->exec_error.error;
        out->error = e;
        if (e == ENOENT || e == ENOTDIR) {
                out->status = RUN_NOT_FOUND;
                out->exit_code = EXIT_NOT_FOUND;
                snprintf(out->message, sizeof(out->message), "command not found: %s",
                         l->exec_error.path);
        } else {
                out->status = RUN_NOT_EXECUTABLE;
                out->exit_code = EXIT_NOT_EXECUTABLE;
                snprintf(out->message, sizeof(out->message), "cannot execute %s: %s",
                         l->exec_error.path, strerror(e));
        }
}

/* The compile step failed. */
static void say_compile_failed(const struct loop *l, struct run_outcome *out)
{
        int st = l->compile_failed.status;
        out->status = RUN_COMPILE_ERROR;
        out->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_SIGNAL_BASE + WTERMSIG(st);
        out->job_exit_code = -1;
        snprintf(out->message, sizeof(out->message), "compile step failed: %s %s %d",
                 l->compile_failed.path, WIFEXITED(st) ? "exited with code" : "killed by signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* init ended without telling us about the job. */
static void say_init_ended(const struct loop *l, struct run_outcome *out)
{
        char sig[32];
        int s = WIFSIGNALED(l->init_status) ? WTERMSIG(l->init_status) : 0;
        out->status = s ? RUN_SIGNALED : RUN_SETUP_ERROR;
        out->signal = s;
        out->exit_code = s ? EXIT_SIGNAL_BASE + s : EXIT_SETUP;
        if (s)
                snprintf(out->message, sizeof(out->message),
                         "sandbox init was killed by %s", signal_name(s, sig, sizeof(sig)));
        else
                snprintf(out->message, sizeof(out->message),
                         "sandbox init exited before the job started");
}

void decide(struct loop *l, struct run_outcome *out)
{
        char tmp[64], sig[32];

        out->job_exit_code = -1;
        if (l->have_job_exit && WIFEXITED(l->job_exit.status))
                out->job_exit_code = WEXITSTATUS(l->job_exit.status);
        if (l->have_job_exit && WIFSIGNALED(l->job_exit.status))
                out->signal = WTERMSIG(l->job_exit.status);

        bool cg_oom = l->have_cg_stats &&
                      (l->cg_stats.memory_events.oom_kill || l->cg_stats.memory_events.oom_group_kill);
        if (l->reason == STOP_NONE && cg_oom) {
                say_cgroup_oom(l, out);
        } else if (l->reason == STOP_OOM) {
                say_watchdog_oom(l, out);
        } else if (l->reason == STOP_DISK) {
                say_disk_limit(l, out);
        } else if (l->reason == STOP_CPU ||
                   (l->reason == STOP_NONE && out->signal == SIGXCPU && l->cfg->cpu_time_ms)) {
                out->status = RUN_CPU_TIMEOUT;
                out->exit_code = EXIT_TIMEOUT;
                snprintf(out->message, sizeof(out->message), "cpu time limit %s exceeded%s",
                         format_duration_ms(l->cfg->cpu_time_ms, tmp, sizeof(tmp)),
                         l->cg_cpu_ms ? " (cgroup cpu.stat)" : "");
        } else if (l->reason == STOP_TIMEOUT) {
                out->status = RUN_TIMEOUT;
                out->exit_code = EXIT_TIMEOUT;
                snprintf(out->message, sizeof(out->message), "timed out after %s",
                         format_duration_ms(l->cfg->timeout_ms, tmp, sizeof(tmp)));
        } else if (l->reason == STOP_CANCEL_ESCAPE) {
                out->status = RUN_CANCELLED;
                out->exit_code = EXIT_CANCELLED_INT;
                snprintf(out->message, sizeof(out->message), "cancelled by ~. on the terminal");
        } else if (l->reason == STOP_CANCEL_KILL) {
                out->status = RUN_CANCELLED;
                out->exit_code = EXIT_CANCELLED_TERM;
                snprintf(out->message, sizeof(out->message), "cancelled by hutch kill (%s)",
                         signal_name(l->cancel.signal, sig, sizeof(sig)));
        } else if (l->reason == STOP_CANCEL_INT || l->reason == STOP_CANCEL_TERM) {
                int s = l->reason == STOP_CANCEL_INT ? SIGINT : SIGTERM;
                out->status = RUN_CANCELLED;
                out->exit_code = s == SIGINT ? EXIT_CANCELLED_INT : EXIT_CANCELLED_TERM;
                snprintf(out->message, sizeof(out->message), "cancelled by %s to hutch",
                         signal_name(s, sig, sizeof(sig)));
        } else if (l->have_setup_error) {
                say_setup_error(l, out);
        } else if (l->have_exec_error) {
                say_exec_error(l, out);
        } else if (l->have_compile_failed) {
                say_compile_failed(l, out);
        } else if (l->have_job_exit && WIFEXITED(l->job_exit.status)) {
                int code = WEXITSTATUS(l->job_exit.status);
                out->status = code == 0 ? RUN_SUCCESS : RUN_FAILED;
                out->exit_code = code;
                if (code)
                        snprintf(out->message, sizeof(out->message), "exited with code %d", code);
        } else if (l->have_job_exit && WIFSIGNALED(l->job_exit.status)) {
                out->status = RUN_SIGNALED;
                out->exit_code = EXIT_SIGNAL_BASE + out->signal;
                snprintf(out->message, sizeof(out->message), "killed by %s",
                         signal_name(out->signal, sig, sizeof(sig)));
        } else {
                /* init ended without telling us about the job */
                say_init_ended(l, out);
        }
}
