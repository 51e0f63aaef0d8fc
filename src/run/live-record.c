/* run/live-record.c - the records of execs and kernel calls, written
 * by the live sandbox's supervisor (live-internal.h).
 *
 * The supervisor has the store open for the sandbox's own run, its
 * profile in hand, and is the one that asks init for the job: writing
 * the exec's row here, in one commit, before that request, keeps "the
 * row before the job" and spares every `hutch exec` a store open and
 * an insert on its way to the job. Its end is written here too, when
 * the client sends it (FINISH: the outcome and the output it captured)
 * after the job's END: one final update, synced (store_run_finish())
 * before the client hears DONE, so the record is as durable when
 * `hutch exec` returns as when it wrote it itself, and the client never
 * opens the store (it does when FINISH cannot carry its output, or the
 * supervisor could not write it: then as before). The row names the
 * client as its supervisor, so `hutch kill ID` signals the client,
 * which cancels the exec, and gc sees a dead client as it sees a dead
 * `hutch run`; a client that dies first has its run completed by the
 * supervisor (live_record_lost()). */
#include "config.h"

#include <string.h>

#include "lib/exit-codes.h"
#include "lib/util.h"
#include "record/store.h"
#include "run/live-internal.h"
#include "supervise/supervise.h"

/* How long the supervisor waits for the store's write lock for a row. */
#define LIVE_RECORD_BUSY_MS 1000

/* The row of an exec or a kernel call (rec: argv, cwd and profile
 * begun), in one commit. */
static int insert(struct store *s, const char *name, const struct run_record *sandbox_rec, struct run_record *rec,
                  char **labels, pid_t client, char ret_id[32])
{
        uint64_t start;
        rec->supervisor_pid = client;
        rec->supervisor_start = proc_start_time(client, &start) == 0 ? start : RUN_UNSET;
        if (sandbox_rec) {
                /* the exec runs under its sandbox's profile and limits */
                free(rec->profile);
                rec->profile = sandbox_rec->profile ? xstrdup(sandbox_rec->profile) : xasprintf("sandbox:%s", name);
                rec->profile_text = sandbox_rec->profile_text ? xstrdup(sandbox_rec->profile_text) : NULL;
                rec->profile_sha256 = sandbox_rec->profile_sha256 ? xstrdup(sandbox_rec->profile_sha256) : NULL;
                rec->limits_json = sandbox_rec->limits_json ? xstrdup(sandbox_rec->limits_json) : NULL;
                rec->enforcement_json = sandbox_rec->enforcement_json ? xstrdup(sandbox_rec->enforcement_json) : NULL;
        }
        /* the supervisor serves other execs and their deadlines: it
         * waits for another writer's lock this long, not the store's
         * default; the client says "busy, try again" (75) past it */
        store_set_busy_timeout(s, LIVE_RECORD_BUSY_MS);
        int r = store_batch_begin(s);
        if (r == 0) {
                r = store_run_insert(s, rec);
                if (r == 0)
                        r = store_labels_set(s, rec->id, labels);
                int k = store_batch_end(s, r == 0);
                if (r == 0 && k < 0)
                        r = k;
        }
        store_set_busy_timeout(s, STORE_BUSY_TIMEOUT_MS);
        if (r == 0)
                snprintf(ret_id, 32, "%s", rec->id);
        return r;
}

int live_record_exec(struct store *s, const char *name, const struct run_record *sandbox_rec, char **argv,
                     const char *cwd, pid_t client, char ret_id[32])
{
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        _cleanup_free_ char *label = xasprintf("sandbox=%s", name), *profile = xasprintf("sandbox:%s", name);
        char *labels[] = { label, NULL };

        int r = run_record_begin(rec, argv, cwd, profile);
        return r < 0 ? r : insert(s, name, sandbox_rec, rec, labels, client, ret_id);
}

int live_record_kernel(struct store *s, const char *name, const struct run_record *sandbox_rec, const char *lang,
                       const char *code, size_t len, const char *cwd, pid_t client, char ret_id[32])
{
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        _cleanup_free_ char *label = xasprintf("sandbox=%s", name), *profile = xasprintf("sandbox:%s", name);
        _cleanup_free_ char *klabel = xasprintf("kernel=%s", lang);
        char *labels[] = { label, klabel, NULL };
        char *argv[] = { "--kernel", (char *)lang, NULL };

        int r = run_record_begin(rec, argv, cwd, profile);
        if (r < 0)
                return r;
        rec->lang = xstrdup(lang);
        rec->code = xmalloc(len + 1);
        memcpy(rec->code, code, len);
        rec->code[len] = '\0';
        rec->code_len = len;
        return insert(s, name, sandbox_rec, rec, labels, client, ret_id);
}

/* One stream of a FINISH into the record's o. */
static void output_of(struct run_output *o, const char *data, uint32_t len, uint64_t total, uint64_t lines,
                      uint8_t truncated)
{
        free(o->data);
        o->data = xmalloc((size_t)len + 1);
        memcpy(o->data, data, len);
        o->data[len] = '\0';
        o->len = len;
        o->total_bytes = total;
        o->lines = lines;
        o->truncated = truncated != 0;
}

int live_record_finish(struct store *s, const char *run_id, const char *buf, size_t n)
{
        _cleanup_run_record_ struct run_record *rec = NULL;
        struct live_fin f;

        if (n < sizeof(f))
                return -EBADMSG;
        memcpy(&f, buf, sizeof(f));
        if (f.version != LIVE_WIRE_VERSION || (uint64_t)f.out_len + f.err_len != n - sizeof(f) ||
            f.status < 0 || f.status >= _RUN_STATUS_MAX || f.status == RUN_RUNNING ||
            (uint64_t)f.out_len + f.err_len > LIVE_FIN_DATA_MAX || f.status == RUN_ORPHANED ||
            f.out_len > f.out_total + 200 || f.err_len > f.err_total + 200)
                return -EBADMSG;
        int r = store_run_get(s, run_id, &rec, NULL);
        if (r < 0)
                return r;
        if (rec->status != RUN_RUNNING)
                return 0;
        f.message[sizeof(f.message) - 1] = '\0';
        rec->status = f.status;
        rec->exit_code = f.exit_code;
        rec->job_exit_code = f.job_exit_code >= 0 && f.job_exit_code <= 255 ? f.job_exit_code : -1;
        rec->signal = f.signal;
        free(rec->message);
        rec->message = f.message[0] ? xstrdup(f.message) : NULL;
        rec->finished_at_ms = now_realtime_ms();
        rec->duration_ms = f.wall_ms;
        rec->cpu_user_ms = f.cpu_user_ms;
        rec->cpu_sys_ms = f.cpu_sys_ms;
        rec->peak_memory_bytes = f.peak_memory_bytes;
        output_of(&rec->out, buf + sizeof(f), f.out_len, f.out_total, f.out_lines, f.out_truncated);
        output_of(&rec->err, buf + sizeof(f) + f.out_len, f.err_len, f.err_total, f.err_lines, f.err_truncated);
        store_set_busy_timeout(s, LIVE_RECORD_BUSY_MS);
        r = store_run_finish(s, rec);
        store_set_busy_timeout(s, STORE_BUSY_TIMEOUT_MS);
        /* 1: recorded without its output (a full disk), and said so in
         * the row; the client could do no better */
        return r < 0 ? r : 0;
}

/* The end of run_id, still running, as o says (its output went to a
 * client that is gone, and is not recorded): written with the busy
 * timeout the supervisor's loop can afford. A row no longer running is
 * left alone (its client wrote its end after all). 0 or -errno. */
static int finish_lost(struct store *s, const char *run_id, const struct run_outcome *o)
{
        _cleanup_run_record_ struct run_record *rec = NULL;

        int r = store_run_get(s, run_id, &rec, NULL);
        if (r < 0)
                return r;
        if (rec->status != RUN_RUNNING)
                return 0;
        rec->status = o->status;
        rec->exit_code = o->exit_code;
        rec->job_exit_code = o->job_exit_code;
        rec->signal = o->signal;
        free(rec->message);
        rec->message = xstrdup(o->message);
        rec->finished_at_ms = now_realtime_ms();
        rec->duration_ms = o->wall_ms;
        rec->cpu_user_ms = o->cpu_user_ms;
        rec->cpu_sys_ms = o->cpu_sys_ms;
        store_set_busy_timeout(s, LIVE_RECORD_BUSY_MS);
        r = store_run_finish(s, rec) < 0 ? -EIO : 0;
        store_set_busy_timeout(s, STORE_BUSY_TIMEOUT_MS);
        return r;
}

int live_record_lost(struct store *s, const char *run_id, const struct live_reply *end, bool killed)
{
        struct run_outcome o = { 0 };

        live_outcome(end, &o);
        if (killed && !end->stopped) {
                o.status = RUN_CANCELLED;
                o.exit_code = EXIT_CANCELLED_TERM;
                o.signal = 0;
                snprintf(o.message, sizeof(o.message), "its hutch exec went away: the job was killed "
                         "with its process group; the output is not recorded");
        } else {
                size_t n = strlen(o.message);
                snprintf(o.message + n, sizeof(o.message) - n, "%sits hutch exec went away: the output is "
                         "not recorded", n ? "; " : "");
        }
        return finish_lost(s, run_id, &o);
}

int live_record_call_lost(struct store *s, const char *run_id, uint64_t wall_ms, const char *how)
{
        struct run_outcome o = { .status = RUN_CANCELLED, .exit_code = EXIT_CANCELLED_TERM, .wall_ms = wall_ms };

        snprintf(o.message, sizeof(o.message), "its caller went away; the call %s; the output is not recorded", how);
        return finish_lost(s, run_id, &o);
}
