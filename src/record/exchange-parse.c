/* exchange-parse.c - one line of `hutch export` read back (see
 * exchange.h): a hutch.result/1 object turned into a run record, its
 * labels and its node, for `hutch import`.
 *
 * The line comes from another machine and is treated as hostile. Every
 * field is checked for its type and bounded in size; a field this
 * reader does not know is refused rather than dropped (a newer hutch's
 * record is not silently cut down); strings with NUL bytes are refused
 * (they would be cut short in the store); output text is sanitised
 * again (sanitize.h), so an imported run shows no escape sequence the
 * export did not have in its already-sanitised text. What names the
 * other host's state is not taken: the supervisor pid and start time
 * (which would make gc judge a foreign process), the idempotency key
 * (which would answer a local `run --id` with a foreign run). Errors
 * name the field by its JSON pointer, as the request reader does.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/sanitize.h"
#include "lib/util.h"
#include "record/exchange.h"

#define MAX_ARGV 65536
#define MAX_LABELS 256
#define MAX_LABEL_KEY 256
#define MAX_LABEL_VALUE 4096
#define MAX_SHORT 4096          /* cwd, profile, session, lang, rerun_of ... */
#define MAX_MESSAGE (64u << 10)
#define MAX_OUTPUT (32u << 20)  /* one stream's text, or the code */
#define MAX_JSON_TEXT (1u << 20) /* limits, enforcement, as text */
#define MAX_COUNT ((json_int_t)1 << 53)
#define MAX_MEMORY_MB 1e12

struct parser {
        char *field;
        char *error;
};

static int fail(struct parser *p, const char *field, const char *fmt, ...) _printf_(3, 4);
static int fail(struct parser *p, const char *field, const char *fmt, ...)
{
        va_list ap;
        char *what = NULL;

        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);
        free(p->field);
        free(p->error);
        p->field = xstrdup(field);
        p->error = what ? what : xstrdup("bad value");
        return -EINVAL;
}

/* A string of at most max bytes without NUL; null gives NULL when
 * nullable. */
static int get_text(struct parser *p, const json_t *j, const char *field, size_t max, bool nullable,
                    char **ret)
{
        if (json_is_null(j) && nullable) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_string(j))
                return fail(p, field, "expected a string%s, got %s", nullable ? " or null" : "", json_type_name(j));
        if (json_string_length(j) > max)
                return fail(p, field, "longer than %zu bytes", max);
        if (strlen(json_string_value(j)) != json_string_length(j))
                return fail(p, field, "contains a NUL character");
        *ret = xstrdup(json_string_value(j));
        return 0;
}

/* A non-negative integer below 2^53, or null (RUN_UNSET) when nullable. */
static int get_count(struct parser *p, const json_t *j, const char *field, bool nullable, uint64_t *ret)
{
        if (json_is_null(j) && nullable) {
                *ret = RUN_UNSET;
                return 0;
        }
        if (!json_is_integer(j) || json_integer_value(j) < 0 || json_integer_value(j) >= MAX_COUNT)
                return fail(p, field, "expected a non-negative integer%s, got %s",
                            nullable ? " or null" : "", json_is_integer(j) ? "one out of range" : json_type_name(j));
        *ret = (uint64_t)json_integer_value(j);
        return 0;
}

/* An integer in [lo, hi] or null (*ret = unset). */
static int get_small(struct parser *p, const json_t *j, const char *field, int lo, int hi, int unset, int *ret)
{
        if (json_is_null(j)) {
                *ret = unset;
                return 0;
        }
        if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
                return fail(p, field, "expected an integer from %d to %d or null, got %s", lo, hi,
                            json_is_integer(j) ? "one out of range" : json_type_name(j));
        *ret = (int)json_integer_value(j);
        return 0;
}

static int get_bool(struct parser *p, const json_t *j, const char *field, bool *ret)
{
        if (!json_is_boolean(j))
                return fail(p, field, "expected a boolean, got %s", json_type_name(j));
        *ret = json_is_true(j);
        return 0;
}

/* "2026-11-29T13:41:39.123Z" (what format_iso8601_ms() writes) -> ms. */
static int get_time(struct parser *p, const json_t *j, const char *field, bool nullable, uint64_t *ret)
{
        unsigned y, mo, d, h, mi, s, ms;
        char z, tail;

        if (json_is_null(j) && nullable) {
                *ret = RUN_UNSET;
                return 0;
        }
        if (!json_is_string(j) || json_string_length(j) != 24 ||
            sscanf(json_string_value(j), "%4u-%2u-%2uT%2u:%2u:%2u.%3u%c%c", &y, &mo, &d, &h, &mi, &s, &ms,
                   &z, &tail) != 8 || z != 'Z')
                return fail(p, field, "expected a time as YYYY-MM-DDTHH:MM:SS.mmmZ%s",
                            nullable ? " or null" : "");
        struct tm tm = { .tm_year = (int)y - 1900, .tm_mon = (int)mo - 1, .tm_mday = (int)d,
                         .tm_hour = (int)h, .tm_min = (int)mi, .tm_sec = (int)s };
        if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59)
                return fail(p, field, "not a valid time");
        time_t t = timegm(&tm);
        struct tm back;
        /* timegm() normalises Feb 30 to Mar 2: a date that does not exist is refused */
        if (t < 0 || !gmtime_r(&t, &back) || back.tm_mday != (int)d || back.tm_mon != (int)mo - 1)
                return fail(p, field, "not a valid time");
        *ret = (uint64_t)t * 1000 + ms;
        return 0;
}

static int get_id(struct parser *p, const json_t *j, const char *field, bool nullable, char *ret)
{
        if (json_is_null(j) && nullable) {
                *ret = '\0';
                return 0;
        }
        if (!json_is_string(j) || !ulid_valid(json_string_value(j)))
                return fail(p, field, "expected a run id (26 characters of upper-case Crockford base32)%s",
                            nullable ? " or null" : "");
        memcpy(ret, json_string_value(j), ULID_LEN + 1);
        return 0;
}

/* An object or null, kept as compact text with sorted keys. */
static int get_object_text(struct parser *p, const json_t *j, const char *field, char **ret)
{
        if (json_is_null(j)) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_object(j))
                return fail(p, field, "expected an object or null, got %s", json_type_name(j));
        char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(12));
        if (!text || strlen(text) > MAX_JSON_TEXT) {
                free(text);
                return fail(p, field, "larger than %u bytes", MAX_JSON_TEXT);
        }
        *ret = text;
        return 0;
}

/* Undo the folding of the JSON view in text[0..*len) in place: a fold
 * mark right after a full-width line segment (sanitize_fold() breaks
 * after at most SANITIZE_FOLD_WIDTH bytes, at a character boundary, so
 * up to 3 bytes short) came from the fold and goes. Stored output is
 * kept unfolded, so the export of an imported run folds it exactly as
 * the record it came from (folding folded text again would not). */
static void unfold(char *text, size_t *len)
{
        const size_t mark = strlen(SANITIZE_FOLD_MARK);
        size_t in = 0, out = 0, segment = 0;

        while (in < *len) {
                if (segment + 3 >= SANITIZE_FOLD_WIDTH && segment <= SANITIZE_FOLD_WIDTH &&
                    *len - in >= mark && memcmp(text + in, SANITIZE_FOLD_MARK, mark) == 0) {
                        in += mark;
                        segment = 0;    /* as the fold counted: the line goes on */
                        continue;
                }
                segment = text[in] == '\n' ? 0 : segment + 1;
                text[out++] = text[in++];
        }
        text[out] = '\0';
        *len = out;
}

/* Output text, sanitised again and unfolded, as the stored bytes of o. */
static int get_output(struct parser *p, const json_t *j, const char *field, struct run_output *o)
{
        if (!json_is_string(j))
                return fail(p, field, "expected a string, got %s", json_type_name(j));
        if (json_string_length(j) > MAX_OUTPUT)
                return fail(p, field, "longer than %u bytes", MAX_OUTPUT);
        free(o->data);
        o->data = sanitize_text(json_string_value(j), json_string_length(j), &o->len);
        unfold(o->data, &o->len);
        return 0;
}

static int get_argv(struct parser *p, const json_t *a, char ***ret)
{
        char **v = NULL;
        size_t i, n = 0;
        json_t *e;

        if (!json_is_array(a))
                return fail(p, "/argv", "expected an array of strings, got %s", json_type_name(a));
        if (json_array_size(a) > MAX_ARGV)
                return fail(p, "/argv", "more than %d items", MAX_ARGV);
        json_array_foreach(a, i, e) {
                char field[32];
                snprintf(field, sizeof(field), "/argv/%zu", i);
                if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e)) {
                        strv_free(v);
                        return fail(p, field, "expected a string without NUL characters");
                }
                v = strv_push(v, &n, json_string_value(e));
        }
        *ret = v;
        return 0;
}

static int get_labels(struct parser *p, const json_t *o, char ***ret)
{
        const char *k;
        json_t *v;

        if (!json_is_object(o))
                return fail(p, "/labels", "expected an object of strings, got %s", json_type_name(o));
        if (json_object_size(o) > MAX_LABELS)
                return fail(p, "/labels", "more than %d labels", MAX_LABELS);
        json_object_foreach((json_t *)o, k, v) {
                _cleanup_free_ char *field = json_pointer_join("/labels", k);
                if (!*k || strchr(k, '=') || strlen(k) > MAX_LABEL_KEY)
                        return fail(p, field, "a key must be 1-%d characters without '='", MAX_LABEL_KEY);
                _cleanup_free_ char *value = NULL;
                int r = get_text(p, v, field, MAX_LABEL_VALUE, false, &value);
                if (r < 0)
                        return r;
                _cleanup_free_ char *kv = xasprintf("%s=%s", k, value);
                *ret = strv_append(*ret, kv);
        }
        return 0;
}

/* A finished run's status. */
static int get_status(struct parser *p, json_t *v, const char *field, enum run_status *ret)
{
        if (!json_is_string(v) || run_status_from_string(json_string_value(v)) < 0)
                return fail(p, field, "expected a run status (success, failed, timeout, ...)");
        *ret = run_status_from_string(json_string_value(v));
        if (*ret == RUN_RUNNING)
                return fail(p, field, "the run was still running when it was exported; "
                            "export it again once it has ended");
        return 0;
}

/* MiB as a number (or null: left alone), into bytes. */
static int get_memory_mb(struct parser *p, json_t *v, const char *field, uint64_t *ret_bytes)
{
        if (json_is_null(v))
                return 0;
        if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
            json_number_value(v) > MAX_MEMORY_MB)
                return fail(p, field, "expected a non-negative number or null, got %s", json_type_name(v));
        *ret_bytes = (uint64_t)(json_number_value(v) * 1048576.0 + 0.5);
        return 0;
}

/* A sha256 in lower-case hex, or null. */
static int get_sha256(struct parser *p, json_t *v, const char *field, char **ret)
{
        int r = get_text(p, v, field, 64, true, ret);
        if (r < 0 || !*ret)
                return r;
        if (strlen(*ret) != 64 || strspn(*ret, "0123456789abcdef") != 64)
                return fail(p, field, "expected 64 lower-case hex digits or null");
        return 0;
}

/* The run's --lang code, as the output fields are written, or null. */
static int get_code(struct parser *p, json_t *v, const char *field, struct run_record *rec)
{
        if (json_is_null(v))
                return 0;
        struct run_output code = { 0 };
        int r = get_output(p, v, field, &code);
        rec->code = code.data;
        rec->code_len = code.len;
        return r;
}

/* The exporting host's name. */
static int get_node(struct parser *p, json_t *v, const char *field, char **ret)
{
        int r = get_text(p, v, field, EXCHANGE_MAX_NODE, false, ret);
        if (r == 0 && !exchange_node_valid(*ret))
                return fail(p, field, "expected a host name (letters, digits, '.', '-', '_')");
        return r;
}

static int parse_field(struct parser *p, struct exchange_record *x, const char *k, json_t *v)
{
        struct run_record *rec = x->rec;
        _cleanup_free_ char *field = xasprintf("/%s", k);
        uint64_t u;
        int r;

        if (streq(k, "schema"))
                return 0;       /* checked first */
        if (streq(k, "id"))
                return get_id(p, v, field, false, rec->id);
        if (streq(k, "status"))
                return get_status(p, v, field, &rec->status);
        if (streq(k, "exit_code"))
                return get_small(p, v, field, 0, 255, -1, &rec->exit_code);
        if (streq(k, "signal"))
                return get_small(p, v, field, 1, 64, 0, &rec->signal);
        if (streq(k, "job_exit_code"))
                return get_small(p, v, field, 0, 255, -1, &rec->job_exit_code);
        if (streq(k, "message"))
                return get_text(p, v, field, MAX_MESSAGE, true, &rec->message);
        if (streq(k, "argv"))
                return get_argv(p, v, &rec->argv);
        if (streq(k, "cwd"))
                return get_text(p, v, field, MAX_SHORT, true, &rec->cwd);
        if (streq(k, "started_at"))
                return get_time(p, v, field, false, &rec->started_at_ms);
        if (streq(k, "finished_at"))
                return get_time(p, v, field, true, &rec->finished_at_ms);
        if (streq(k, "duration_ms"))
                return get_count(p, v, field, true, &rec->duration_ms);
        if (streq(k, "cpu_user_ms"))
                return get_count(p, v, field, true, &rec->cpu_user_ms);
        if (streq(k, "cpu_sys_ms"))
                return get_count(p, v, field, true, &rec->cpu_sys_ms);
        if (streq(k, "cpu_ms"))
                /* the sum of the two above: checked, then made again from them */
                return get_count(p, v, field, true, &u);
        if (streq(k, "peak_memory_mb"))
                return get_memory_mb(p, v, field, &rec->peak_memory_bytes);
        if (streq(k, "stdout") || streq(k, "stderr")) {
                x->with_output = true;
                return get_output(p, v, field, streq(k, "stdout") ? &rec->out : &rec->err);
        }
        if (streq(k, "stdout_bytes"))
                return get_count(p, v, field, false, &rec->out.total_bytes);
        if (streq(k, "stderr_bytes"))
                return get_count(p, v, field, false, &rec->err.total_bytes);
        if (streq(k, "stdout_lines"))
                return get_count(p, v, field, false, &rec->out.lines);
        if (streq(k, "stderr_lines"))
                return get_count(p, v, field, false, &rec->err.lines);
        if (streq(k, "stdout_truncated"))
                return get_bool(p, v, field, &rec->out.truncated);
        if (streq(k, "stderr_truncated"))
                return get_bool(p, v, field, &rec->err.truncated);
        if (streq(k, "output_lost"))
                return get_text(p, v, field, MAX_MESSAGE, true, &rec->output_lost);
        if (streq(k, "limits"))
                return get_object_text(p, v, field, &rec->limits_json);
        if (streq(k, "enforcement"))
                return get_object_text(p, v, field, &rec->enforcement_json);
        if (streq(k, "profile"))
                return get_text(p, v, field, MAX_SHORT, true, &rec->profile);
        if (streq(k, "profile_sha256"))
                return get_sha256(p, v, field, &rec->profile_sha256);
        if (streq(k, "rerun_of")) {
                char id[ULID_LEN + 1];
                r = get_id(p, v, field, true, id);
                if (r == 0 && *id)
                        rec->rerun_of = xstrdup(id);
                return r;
        }
        if (streq(k, "session"))
                return get_text(p, v, field, MAX_SHORT, true, &rec->session);
        if (streq(k, "lang"))
                return get_text(p, v, field, MAX_SHORT, true, &rec->lang);
        if (streq(k, "code"))
                return get_code(p, v, field, rec);
        if (streq(k, "idempotency_key")) {
                /* checked, not kept: see the top of this file */
                _cleanup_free_ char *key = NULL;
                return get_text(p, v, field, MAX_SHORT, true, &key);
        }
        if (streq(k, "labels"))
                return get_labels(p, v, &x->labels);
        if (streq(k, "node"))
                return get_node(p, v, field, &x->node);
        if (streq(k, "imported") || streq(k, "retryable"))
                /* this store decides what it imported; retryable and
                 * error_code follow from the status */
                return get_bool(p, v, field, &(bool){ false });
        if (streq(k, "error_code")) {
                _cleanup_free_ char *ignored = NULL;
                return get_text(p, v, field, MAX_SHORT, true, &ignored);
        }
        return fail(p, field, "unknown field (import reads what hutch export writes)");
}

int exchange_parse_record(const char *text, size_t len, struct exchange_record *ret,
                          char **ret_field, char **ret_error)
{
        static const char *const required[] = { "schema", "id", "status", "argv", "started_at", "node" };
        struct parser p = { 0 };
        json_error_t jerr;
        const char *k;
        json_t *v;
        int r = 0;

        memset(ret, 0, sizeof(*ret));
        ret->rec = run_record_new();
        ret->rec->exit_code = -1;
        ret->rec->job_exit_code = -1;
        ret->rec->out.total_bytes = ret->rec->err.total_bytes = 0;

        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!root) {
                r = fail(&p, "", "not JSON: %s (column %d)", jerr.text, jerr.column);
                goto out;
        }
        if (!json_is_object(root)) {
                r = fail(&p, "", "expected a JSON object, got %s", json_type_name(root));
                goto out;
        }
        v = json_object_get(root, "schema");
        if (!json_is_string(v) || !streq(json_string_value(v), "hutch.result/1")) {
                r = fail(&p, "/schema", "expected \"hutch.result/1\"");
                goto out;
        }
        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!json_object_get(root, required[i])) {
                        _cleanup_free_ char *field = xasprintf("/%s", required[i]);
                        r = fail(&p, field, "missing%s", streq(required[i], "node")
                                 ? " (hutch export writes the node each run ran on)" : "");
                        goto out;
                }
        json_object_foreach(root, k, v) {
                r = parse_field(&p, ret, k, v);
                if (r < 0)
                        goto out;
        }
        if (!!json_object_get(root, "stdout") != !!json_object_get(root, "stderr")) {
                r = fail(&p, json_object_get(root, "stdout") ? "/stderr" : "/stdout",
                         "missing (a record carries both streams or neither)");
                goto out;
        }
        struct run_record *rec = ret->rec;
        /* export writes cpu_ms as the sum, and import reads it below
         * 2^53: a record whose sum is past that could never be imported
         * again, from this store or any, so it is not accepted either */
        if (rec->cpu_user_ms != RUN_UNSET && rec->cpu_sys_ms != RUN_UNSET &&
            rec->cpu_user_ms + rec->cpu_sys_ms >= (uint64_t)MAX_COUNT) {
                r = fail(&p, "/cpu_sys_ms", "cpu_user_ms + cpu_sys_ms is not below 2^53");
                goto out;
        }
        json_t *cpu = json_object_get(root, "cpu_ms");
        if (json_is_integer(cpu) &&
            (uint64_t)json_integer_value(cpu) != (rec->cpu_user_ms == RUN_UNSET ? 0 : rec->cpu_user_ms) +
                                                  (rec->cpu_sys_ms == RUN_UNSET ? 0 : rec->cpu_sys_ms)) {
                r = fail(&p, "/cpu_ms", "is not cpu_user_ms + cpu_sys_ms");
                goto out;
        }
        /* what the record does not say is unknown, not now: no heartbeat
         * of this host's clock is ever claimed for it */
        rec->supervisor_pid = 0;
        rec->supervisor_start = RUN_UNSET;
        rec->heartbeat_at_ms = rec->finished_at_ms != RUN_UNSET ? rec->finished_at_ms : rec->started_at_ms;
out:
        json_decref(root);
        if (r < 0) {
                *ret_field = p.field;
                *ret_error = p.error;
        } else {
                free(p.field);
                free(p.error);
        }
        return r;
}

void exchange_record_done(struct exchange_record *x)
{
        run_record_free(x->rec);
        strv_free(x->labels);
        free(x->node);
        memset(x, 0, sizeof(*x));
}
