/* run/live-record.c - an exec's row, written by the live sandbox's
 * supervisor (live-internal.h).
 *
 * The supervisor has the store open for the sandbox's own run, its
 * profile in hand, and is the one that asks init for the job: writing
 * the exec's row here, in one commit, before that request, keeps "the
 * row before the job" and spares every `hutch exec` a store open and
 * an insert on its way to the job (it opens the store while the job
 * runs, for the final update, which stays its own: the output it
 * captured goes into it, synced before it returns). The row names the
 * client as its supervisor, so `hutch kill ID` signals the client,
 * which cancels the exec, and gc sees a dead client as it sees a dead
 * `hutch run`; a client that dies first has its run completed by the
 * supervisor (live.c). */
#include "config.h"

#include <string.h>

#include "lib/util.h"
#include "record/store.h"
#include "run/live-internal.h"

int live_record_exec(struct store *s, const char *name, const struct run_record *sandbox_rec, char **argv,
                     const char *cwd, pid_t client, char ret_id[32])
{
        _cleanup_run_record_ struct run_record *rec = run_record_new();
        _cleanup_free_ char *label = xasprintf("sandbox=%s", name), *profile = xasprintf("sandbox:%s", name);
        char *labels[] = { label, NULL };
        uint64_t start;

        int r = run_record_begin(rec, argv, cwd, profile);
        if (r < 0)
                return r;
        rec->supervisor_pid = client;
        rec->supervisor_start = proc_start_time(client, &start) == 0 ? start : RUN_UNSET;
        if (sandbox_rec) {
                /* the exec runs under its sandbox's profile and limits */
                free(rec->profile);
                rec->profile = sandbox_rec->profile ? xstrdup(sandbox_rec->profile) : xstrdup(profile);
                rec->profile_text = sandbox_rec->profile_text ? xstrdup(sandbox_rec->profile_text) : NULL;
                rec->profile_sha256 = sandbox_rec->profile_sha256 ? xstrdup(sandbox_rec->profile_sha256) : NULL;
                rec->limits_json = sandbox_rec->limits_json ? xstrdup(sandbox_rec->limits_json) : NULL;
                rec->enforcement_json = sandbox_rec->enforcement_json ? xstrdup(sandbox_rec->enforcement_json) : NULL;
        }
        r = store_batch_begin(s);
        if (r < 0)
                return r;
        r = store_run_insert(s, rec);
        if (r == 0)
                r = store_labels_set(s, rec->id, labels);
        int k = store_batch_end(s, r == 0);
        if (r == 0 && k < 0)
                r = k;
        if (r == 0)
                snprintf(ret_id, 32, "%s", rec->id);
        return r;
}
