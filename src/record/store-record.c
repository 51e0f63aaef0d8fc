/* store-record.c - run records in memory (see store.h): making and
 * freeing them, filling one in for a new run, telling whether its
 * supervisor is gone, and their JSON forms: the hutch.result/1 document
 * and the text of the argv column.
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/sanitize.h"
#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

/* ---- records ------------------------------------------------------------ */

struct run_record *run_record_new(void)
{
        struct run_record *rec = xcalloc(1, sizeof(*rec));
        rec->status = RUN_RUNNING;
        rec->exit_code = -1;
        rec->job_exit_code = -1;
        rec->started_at_ms = RUN_UNSET;
        rec->finished_at_ms = RUN_UNSET;
        rec->duration_ms = RUN_UNSET;
        rec->cpu_user_ms = RUN_UNSET;
        rec->cpu_sys_ms = RUN_UNSET;
        rec->peak_memory_bytes = RUN_UNSET;
        rec->supervisor_start = RUN_UNSET;
        rec->heartbeat_at_ms = RUN_UNSET;
        rec->committed = -1;
        return rec;
}

struct run_record *run_record_free(struct run_record *rec)
{
        if (!rec)
                return NULL;
        strv_free(rec->argv);
        free(rec->cwd);
        free(rec->profile);
        free(rec->message);
        free(rec->out.data);
        free(rec->err.data);
        free(rec->limits_json);
        free(rec->enforcement_json);
        free(rec->session);
        free(rec->idempotency_key);
        free(rec->rerun_of);
        free(rec->profile_text);
        free(rec->profile_sha256);
        free(rec->lang);
        free(rec->code);
        free(rec->output_lost);
        free(rec->files_error);
        free(rec);
        return NULL;
}

void run_record_free_many(struct run_record **recs, size_t n)
{
        if (!recs)
                return;
        for (size_t i = 0; i < n; i++)
                run_record_free(recs[i]);
        free(recs);
}

int run_record_begin(struct run_record *rec, char *const *argv, const char *cwd,
                     const char *profile)
{
        uint64_t start;
        int r;

        r = ulid_new(rec->id);
        if (r < 0)
                return r;
        /* without /proc the pid alone has to tell whether we are alive */
        if (proc_start_time(getpid(), &start) < 0)
                start = RUN_UNSET;
        strv_free(rec->argv);
        rec->argv = NULL;
        for (size_t i = 0, n = 0; argv && argv[i]; i++)
                rec->argv = strv_push(rec->argv, &n, argv[i]);
        free(rec->cwd);
        rec->cwd = cwd ? xstrdup(cwd) : NULL;
        free(rec->profile);
        rec->profile = profile ? xstrdup(profile) : NULL;
        rec->status = RUN_RUNNING;
        rec->started_at_ms = now_realtime_ms();
        rec->heartbeat_at_ms = rec->started_at_ms;
        rec->supervisor_pid = getpid();
        rec->supervisor_start = start;
        return 0;
}

int proc_start_time(pid_t pid, uint64_t *ret)
{
        char path[64];
        _cleanup_free_ char *text = NULL;
        unsigned long long start;
        char *p;
        int r;

        if (pid <= 0)
                return -ESRCH;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        r = read_file(path, &text, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        /* "pid (comm) state ppid ...": comm may hold spaces and parens, so
         * count fields from the last ')' */
        p = strrchr(text, ')');
        if (!p || p[1] != ' ')
                return -EIO;
        p += 2;
        if (*p == 'Z' || *p == 'X')
                return -ESRCH;
        for (int field = 3; field < 22; field++) {
                p = strchr(p, ' ');
                if (!p)
                        return -EIO;
                p++;
        }
        if (sscanf(p, "%llu", &start) != 1)
                return -EIO;
        *ret = start;
        return 0;
}

bool run_record_is_orphan(const struct run_record *rec)
{
        uint64_t start;
        int r;

        if (rec->status != RUN_RUNNING || rec->supervisor_pid <= 0)
                return false;
        r = proc_start_time(rec->supervisor_pid, &start);
        if (r == -ESRCH)
                return true;
        if (r < 0)
                return false;   /* cannot tell: do not call it dead */
        return rec->supervisor_start != RUN_UNSET && start != rec->supervisor_start;
}

/* ---- JSON --------------------------------------------------------------- */

const char *format_iso8601_ms(uint64_t ms, char *buf, size_t len)
{
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        char base[32];

        gmtime_r(&t, &tm);
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, len, "%s.%03uZ", base, (unsigned)(ms % 1000));
        return buf;
}

static json_t *json_u64(uint64_t v)
{
        return v == RUN_UNSET ? json_null() : json_integer((json_int_t)v);
}

static json_t *json_time(uint64_t ms)
{
        char buf[64];
        if (ms == RUN_UNSET)
                return json_null();
        return json_string(format_iso8601_ms(ms, buf, sizeof(buf)));
}

static json_t *json_embedded(const char *text)
{
        json_t *j;
        if (!text)
                return json_null();
        j = json_loads(text, JSON_DECODE_ANY, NULL);
        return j ? j : json_null();
}

static json_t *json_output(const struct run_output *o)
{
        size_t len;
        _cleanup_free_ char *clean = sanitize_text(o->data ? o->data : "", o->len, &len);
        _cleanup_free_ char *folded = sanitize_fold(clean, len, SANITIZE_FOLD_WIDTH, &len);
        json_t *j = json_stringn(folded, len);
        return j ? j : json_null();
}

/* Text a job could put terminal escapes in (a message quoting an
 * exception's name or a path, an argument): sanitised as its output is. */
static json_t *json_clean(const char *s)
{
        if (!s)
                return json_null();
        _cleanup_free_ char *clean = sanitize_text(s, strlen(s), NULL);
        json_t *j = json_string(clean);
        return j ? j : json_null();
}

/* clean for a view; the stored argv (store_argv_to_text()) is the
 * command itself: rerun and --id's same-request check read it back */
static json_t *json_argv(char *const *argv, bool clean)
{
        json_t *a = json_array();
        for (size_t i = 0; argv && argv[i]; i++)
                json_array_append_new(a, clean ? json_clean(argv[i]) : json_text(argv[i]));
        return a;
}

const char *run_status_error_code(enum run_status st)
{
        if (st == RUN_RUNNING || st == RUN_SUCCESS || st < 0 || st >= _RUN_STATUS_MAX)
                return NULL;
        /* the same word as hutch.error/1 for a sandbox that was refused */
        return st == RUN_SETUP_ERROR ? "setup_refused" : run_status_to_string(st);
}

json_t *run_record_to_json(const struct run_record *rec, bool with_output)
{
        json_t *o = json_object();

        json_object_set_new(o, "schema", json_string("hutch.result/1"));
        json_object_set_new(o, "id", json_string(rec->id));
        json_object_set_new(o, "status", json_string(run_status_to_string(rec->status)));
        json_object_set_new(o, "exit_code", rec->exit_code >= 0 ? json_integer(rec->exit_code) : json_null());
        json_object_set_new(o, "signal", rec->signal > 0 ? json_integer(rec->signal) : json_null());
        json_object_set_new(o, "job_exit_code", rec->job_exit_code >= 0 ? json_integer(rec->job_exit_code)
                                                                         : json_null());
        json_object_set_new(o, "message", json_clean(rec->message));
        /* a failed run's stable error code (hutch-json(7); "code" is a
         * --lang run's program), and whether running it again as it was
         * may succeed: only when hutch lost the run, not when the job
         * ended by itself or by its limits */
        const char *error_code = run_status_error_code(rec->status);
        json_object_set_new(o, "error_code", error_code ? json_string(error_code) : json_null());
        json_object_set_new(o, "retryable", json_boolean(rec->status == RUN_ORPHANED));
        json_object_set_new(o, "argv", json_argv(rec->argv, true));
        json_object_set_new(o, "cwd", json_text(rec->cwd));
        json_object_set_new(o, "started_at", json_time(rec->started_at_ms));
        json_object_set_new(o, "finished_at", json_time(rec->finished_at_ms));
        json_object_set_new(o, "duration_ms", json_u64(rec->duration_ms));
        json_object_set_new(o, "cpu_user_ms", json_u64(rec->cpu_user_ms));
        json_object_set_new(o, "cpu_sys_ms", json_u64(rec->cpu_sys_ms));
        if (rec->cpu_user_ms == RUN_UNSET && rec->cpu_sys_ms == RUN_UNSET)
                json_object_set_new(o, "cpu_ms", json_null());
        else
                json_object_set_new(o, "cpu_ms", json_integer((json_int_t)(
                        (rec->cpu_user_ms == RUN_UNSET ? 0 : rec->cpu_user_ms) +
                        (rec->cpu_sys_ms == RUN_UNSET ? 0 : rec->cpu_sys_ms))));
        if (rec->peak_memory_bytes == RUN_UNSET)
                json_object_set_new(o, "peak_memory_mb", json_null());
        else
                /* MiB with one decimal, rounded to nearest */
                json_object_set_new(o, "peak_memory_mb",
                                    json_real((double)((rec->peak_memory_bytes * 10 + 524288) / 1048576) / 10.0));
        if (with_output) {
                json_object_set_new(o, "stdout", json_output(&rec->out));
                json_object_set_new(o, "stderr", json_output(&rec->err));
        }
        json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)rec->out.total_bytes));
        json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)rec->err.total_bytes));
        json_object_set_new(o, "stdout_lines", json_integer((json_int_t)rec->out.lines));
        json_object_set_new(o, "stderr_lines", json_integer((json_int_t)rec->err.lines));
        json_object_set_new(o, "stdout_truncated", json_boolean(rec->out.truncated));
        json_object_set_new(o, "stderr_truncated", json_boolean(rec->err.truncated));
        json_object_set_new(o, "output_lost", json_clean(rec->output_lost));
        json_object_set_new(o, "limits", json_embedded(rec->limits_json));
        json_object_set_new(o, "enforcement", json_embedded(rec->enforcement_json));
        json_object_set_new(o, "profile", json_text(rec->profile));
        json_object_set_new(o, "profile_sha256", json_text(rec->profile_sha256));
        json_object_set_new(o, "rerun_of", json_text(rec->rerun_of));
        json_object_set_new(o, "session", json_text(rec->session));
        /* --lang runs: the code that ran (it lives outside the workspace,
         * so the change set does not carry it) */
        json_object_set_new(o, "lang", json_text(rec->lang));
        if (with_output && rec->code) {
                _cleanup_free_ char *code = sanitize_text(rec->code, rec->code_len, NULL);
                json_object_set_new(o, "code", json_string(code));
        } else if (with_output)
                json_object_set_new(o, "code", json_null());
        json_object_set_new(o, "idempotency_key", json_text(rec->idempotency_key));
        return o;
}

char *run_record_to_json_string(const struct run_record *rec, bool with_output)
{
        json_t *o = run_record_to_json(rec, with_output);
        char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(o);
        if (!s)
                s = xstrdup("{}");      /* only on allocation failure */
        return s;
}

/* argv as JSON array text for the argv column. */
char *store_argv_to_text(char *const *argv)
{
        json_t *a = json_argv(argv, false);
        char *s = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        return s ? s : xstrdup("[]");
}

char **store_argv_from_text(const char *text)
{
        json_t *a = text ? json_loads(text, 0, NULL) : NULL;
        char **v = NULL;
        size_t i, n = 0;
        json_t *e;

        if (!json_is_array(a)) {
                json_decref(a);
                return NULL;
        }
        json_array_foreach(a, i, e)
                if (json_is_string(e))
                        v = strv_push(v, &n, json_string_value(e));
        json_decref(a);
        return v;
}
