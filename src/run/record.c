/* run/record.c - the run's record while the job runs (the
 * supervisor's hooks: output into the capture, heartbeats, the deferred
 * checkpoint) and at its end: the outcome, the output and the metering
 * in one final update, then the rest of the output and the answer
 * (--json, --events). Part of the run (run/run-internal.h). */
#include "config.h"

#include <string.h>

#include "run/run-internal.h"
#include "config/run-config.h"
#include "lib/log.h"
#include "limits/watchdog.h"
#include "record/store.h"
#include "supervise/capture.h"
#include "supervise/events.h"
#include "supervise/hostio.h"
#include "supervise/supervise.h"

/* after the run, how long a reader may take nothing before the rest of
 * the output (already in the record) is no longer passed on */
#define OUTPUT_STALL_MS 5000

void run_on_output(void *userdata, enum output_stream stream, const void *buf, size_t n)
{
        struct run_ctx *ctx = userdata;
        struct capture *c = stream == STREAM_STDERR ? ctx->err : ctx->out;
        capture_append(c, buf, n);
        if (!ctx->ev)
                return;
        events_output(ctx->ev, stream, buf, n);
        bool *t = &ctx->truncated[stream == STREAM_STDERR];
        if (!*t && capture_truncated(c)) {
                /* from here on the record keeps only head and tail: what
                 * follows the head may be left out */
                *t = true;
                events_truncated(ctx->ev, stream, (uint64_t)capture_limit(c));
        }
}

/* The job is on its way: a due WAL checkpoint's disk syncs now overlap
 * with it (and with the sandbox's teardown) instead of delaying its
 * start or adding to the end of the run. */
void run_on_job_started(void *userdata)
{
        struct run_ctx *ctx = userdata;
        store_run_prepare_finish(ctx->store);
        store_checkpoint_if_due(ctx->store);
}

void run_on_heartbeat(void *userdata)
{
        struct run_ctx *ctx = userdata;
        /* best effort: a busy store must not disturb the job */
        (void)store_run_heartbeat(ctx->store, ctx->rec->id, now_realtime_ms());
        store_checkpoint_if_due(ctx->store);
        if (ctx->ev) {
                struct tree_sample s;
                bool have = ctx->init_pid > 0 && watchdog_sample(ctx->init_pid, &s) == 0;
                events_heartbeat(ctx->ev, now_monotonic_ms() - ctx->started_ms, have,
                                 have ? s.cpu_ms : 0, have ? s.memory_bytes : 0);
        }
}

void run_finish_record(const struct run_ui *ui, struct store *store, struct run_record *rec,
                       const struct run_config *cfg,
                       const struct run_outcome *out, const struct capture *cap_out,
                       const struct capture *cap_err, struct hostio *host_out, struct hostio *host_err,
                       struct events *ev, bool json)
{
        int r;

        rec->status = out->status;
        rec->exit_code = out->exit_code;
        rec->job_exit_code = out->job_exit_code;
        rec->signal = out->signal;
        rec->message = out->message[0] ? xstrdup(out->message) : NULL;
        rec->finished_at_ms = now_realtime_ms();
        rec->duration_ms = out->wall_ms;
        rec->cpu_user_ms = out->cpu_user_ms;
        rec->cpu_sys_ms = out->cpu_sys_ms;
        rec->peak_memory_bytes = out->cgroup_memory_peak_bytes ? out->cgroup_memory_peak_bytes
                                                               : MAX(out->peak_rss_bytes, out->peak_tree_memory_bytes);
        (void)run_output_from_capture(&rec->out, cap_out);
        (void)run_output_from_capture(&rec->err, cap_err);
        run_redact_record(rec, cfg->redact_env);
        r = store_run_finish(store, rec);
        if (r > 0) {
                log_warning("run: run %s is recorded without its output: %s", rec->id, rec->output_lost);
                if (ev) {
                        _cleanup_free_ char *msg = xasprintf("the run is recorded without its output: %s",
                                                             rec->output_lost);
                        events_warning(ev, msg);
                }
        } else if (r < 0) {
                /* the job ran; its exit code still stands, but say loudly
                 * that the record is incomplete (gc will mark it) */
                /* a step that failed without a message of the store's
                 * still has its errno */
                const char *why = store_error(store);
                log_error("run: cannot complete the record of run %s in %s: %s",
                          rec->id, store_path(store), streq(why, "no error") ? strerror(-r) : why);
                if (ev)
                        events_warning(ev, "the run's record could not be completed; hutch gc will mark it");
        }

        /* The record is final; now the rest of the output, for a reader
         * that is slow, but not for one that stopped taking any */
        size_t dropped = 0;
        if (host_out)
                dropped += hostio_drain(host_out, OUTPUT_STALL_MS);
        if (host_err)
                dropped += hostio_drain(host_err, OUTPUT_STALL_MS);
        if (dropped)
                log_warning("run: the output's reader took nothing for %d s: %zu bytes of output not "
                            "passed on (hutch logs %s has the head and tail)",
                            OUTPUT_STALL_MS / 1000, dropped, rec->id);

        switch (out->status) {
        case RUN_SUCCESS:
        case RUN_FAILED:
        case RUN_SIGNALED:
        case RUN_COMPILE_ERROR:
                if (out->message[0])
                        log_info("%s", out->message);
                break;
        default:
                log_error("%s", out->message);
                break;
        }
        if (ev) {
                json_t *o = ui->result_object(store, rec);
                events_exit(ev, o);
                json_decref(o);
        } else if (json) {
                json_t *o = ui->result_object(store, rec);
                _cleanup_free_ char *j = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
                json_decref(o);
                if (j)
                        printf("%s\n", j);
        }
}
