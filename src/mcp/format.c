/* format.c - CallToolResults of runs (see format.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "mcp/format.h"

static bool continuation(unsigned char b)
{
        return (b & 0xc0) == 0x80;
}

size_t mcp_utf8_floor(const char *s, size_t len, size_t i)
{
        if (i >= len)
                return len;
        while (i > 0 && continuation((unsigned char)s[i]))
                i--;
        return i;
}

size_t mcp_utf8_ceil(const char *s, size_t len, size_t i)
{
        while (i < len && continuation((unsigned char)s[i]))
                i++;
        return MIN(i, len);
}

char *mcp_text_without_nul(const char *s, size_t len, size_t *ret_len)
{
        size_t nuls = 0;
        for (size_t i = 0; i < len; i++)
                nuls += s[i] == '\0';
        char *out = xmalloc(len + nuls * (sizeof(MCP_NUL_SHOWN) - 2) + 1), *o = out;
        for (size_t i = 0; i < len; i++)
                if (s[i])
                        *o++ = s[i];
                else
                        o = mempcpy(o, MCP_NUL_SHOWN, sizeof(MCP_NUL_SHOWN) - 1);
        *o = '\0';
        if (ret_len)
                *ret_len = (size_t)(o - out);
        return out;
}

void mcp_json_without_nul(json_t *v)
{
        const char *k;
        json_t *x;
        size_t i;

        if (json_is_object(v))
                json_object_foreach(v, k, x)
                        mcp_json_without_nul(x);
        else if (json_is_array(v))
                json_array_foreach(v, i, x)
                        mcp_json_without_nul(x);
        else if (json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v)) {
                size_t n;
                _cleanup_free_ char *t = mcp_text_without_nul(json_string_value(v), json_string_length(v), &n);
                /* U+FFFD for NUL keeps it valid UTF-8 */
                (void)json_string_setn(v, t, n);
        }
}

char *mcp_cut_text(const char *text, size_t len, size_t budget, const char *run_id, const char *stream,
                   const struct mcp_stream_size *size)
{
        if (len <= budget) {
                char *s = xmalloc(len + 1);
                memcpy(s, text, len);
                s[len] = '\0';
                return s;
        }
        size_t head = mcp_utf8_floor(text, len, budget / 2);
        size_t tail = mcp_utf8_ceil(text, len, len - budget / 2);
        /* A model reads the last number as the size of the whole output:
         * say first what the program wrote, then what the record kept of
         * it (and that the rest is gone for good), then what this text
         * shows and how to read what it does not. */
        _cleanup_free_ char *kept = NULL;
        if (size && size->truncated)
                kept = xasprintf("%s was %llu bytes; the record kept only its first and last %llu bytes "
                                 "(%zu bytes of text, the bytes in between are gone for good, marked "
                                 "\"omitted\" in it)", stream, (unsigned long long)size->bytes,
                                 (unsigned long long)size->capture_bytes, len);
        else
                kept = xasprintf("%s is %zu bytes of text, all kept", stream, len);
        return xasprintf("%.*s\n[... %zu bytes cut here. %s; shown here: bytes 0 to %zu and %zu to %zu; "
                         "read the %zu cut bytes with read_output {\"run_id\": \"%s\", \"stream\": \"%s\", "
                         "\"offset\": %zu} ...]\n%.*s",
                         (int)head, text, tail - head, kept, head, tail, len, tail - head, run_id, stream, head,
                         (int)(len - tail), text + tail);
}

static const char *str_or(json_t *o, const char *key, const char *dflt)
{
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : dflt;
}

static void append_stream(FILE *f, const char *name, const char *cut)
{
        size_t n = strlen(cut);
        fprintf(f, "[%s]\n%s%s", name, cut, n && cut[n - 1] == '\n' ? "" : "\n");
}

json_t *mcp_result_from_run(json_t *run)
{
        const char *id = str_or(run, "id", "?"), *status = str_or(run, "status", "unknown");
        const char *out = str_or(run, "stdout", ""), *err = str_or(run, "stderr", "");
        size_t lo = strlen(out), le = strlen(err);
        size_t bo = MCP_TEXT_BUDGET / 2, be = MCP_TEXT_BUDGET / 2;
        json_t *code = json_object_get(run, "exit_code"), *dur = json_object_get(run, "duration_ms");
        const char *message = json_string_value(json_object_get(run, "message"));
        _cleanup_free_ char *text = NULL, *co = NULL, *ce = NULL;
        char codebuf[24] = "none", durbuf[32] = "-";
        size_t tlen = 0;

        /* what one stream does not need the other may use */
        if (lo < bo)
                be += bo - lo;
        if (le < be && lo > bo)
                bo += be - le;
        json_t *lim = json_object_get(run, "limits");
        struct mcp_stream_size so = {
                .bytes = (uint64_t)json_integer_value(json_object_get(run, "stdout_bytes")),
                .truncated = json_is_true(json_object_get(run, "stdout_truncated")),
                .capture_bytes = (uint64_t)json_integer_value(json_object_get(lim, "capture_bytes")),
        }, se = {
                .bytes = (uint64_t)json_integer_value(json_object_get(run, "stderr_bytes")),
                .truncated = json_is_true(json_object_get(run, "stderr_truncated")),
                .capture_bytes = so.capture_bytes,
        };
        co = mcp_cut_text(out, lo, bo, id, "stdout", &so);
        ce = mcp_cut_text(err, le, be, id, "stderr", &se);
        if (json_is_integer(code))
                snprintf(codebuf, sizeof(codebuf), "%lld", (long long)json_integer_value(code));
        if (json_is_integer(dur))
                snprintf(durbuf, sizeof(durbuf), "%.2fs", json_integer_value(dur) / 1000.0);

        FILE *f = open_memstream(&text, &tlen);
        if (!f)
                return mcp_result_error_code("failed", false, "out of memory formatting run %s", id);
        fprintf(f, "exit_code=%s status=%s %s id=%s\n", codebuf, status, durbuf, id);
        if (message)
                fprintf(f, "message: %s\n", message);
        if (lo)
                append_stream(f, "stdout", co);
        if (le)
                append_stream(f, "stderr", ce);
        if (!lo && !le)
                fputs("(no output)\n", f);
        fclose(f);

        json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
        /* structuredContent is bounded like the text: its streams are the
         * same cut texts (the marker says how to page the rest), so a
         * large capture never goes to the client whole */
        json_t *sc = json_copy(run);
        /* the host directory the server was started in is none of the
         * model's business (the job's own is /workspace) */
        json_object_set_new(sc, "cwd", json_null());
        json_t *cs = json_string(co), *ces = json_string(ce);
        if (cs && lo > bo)
                json_object_set(sc, "stdout", cs);
        if (ces && le > be)
                json_object_set(sc, "stderr", ces);
        json_decref(cs);
        json_decref(ces);
        return json_pack("{s:o, s:o, s:b}", "content", content, "structuredContent", sc, "isError",
                         !streq(status, "success"));
}

void mcp_result_note(json_t *result, const char *note)
{
        json_t *block = json_array_get(json_object_get(result, "content"), 0);
        const char *text = json_string_value(json_object_get(block, "text"));
        if (!note || !text)
                return;
        _cleanup_free_ char *t = xasprintf("note: %s\n%s", note, text);
        json_t *v = json_string(t);
        if (v)
                json_object_set_new(block, "text", v);
        json_t *sc = json_object_get(result, "structuredContent");
        if (sc)
                json_object_set_new(sc, "notes", json_pack("[s]", note));
}

/* The isError result of text (NUL-free; NULL: out of memory), with
 * the error's stable code and retryable flag in _meta, as hutch.error/1
 * carries them (hutch-json(7)). */
static json_t *error_result(const char *code, bool retryable, const char *text)
{
        json_t *t = json_string(text ? text : "error");
        if (!t)
                t = json_string("error (message not valid UTF-8)");
        return json_pack("{s:[{s:s, s:o}], s:b, s:{s:{s:s, s:b}}}", "content", "type", "text", "text", t, "isError", 1,
                         "_meta", MCP_META_ERROR, "code", code, "retryable", retryable);
}

json_t *mcp_result_error(const char *fmt, ...)
{
        va_list ap;
        _cleanup_free_ char *text = NULL;
        va_start(ap, fmt);
        if (vasprintf(&text, fmt, ap) < 0)
                text = NULL;
        va_end(ap);
        return error_result("bad_request", false, text);
}

json_t *mcp_result_error_code(const char *code, bool retryable, const char *fmt, ...)
{
        va_list ap;
        _cleanup_free_ char *text = NULL;
        va_start(ap, fmt);
        if (vasprintf(&text, fmt, ap) < 0)
                text = NULL;
        va_end(ap);
        return error_result(code, retryable, text);
}

json_t *mcp_result_from_child(const char *what, const char *out, size_t len, bool overflow, int wstatus)
{
        char how[64];
        if (WIFEXITED(wstatus))
                snprintf(how, sizeof(how), "exited %d", WEXITSTATUS(wstatus));
        else
                snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(wstatus));
        if (overflow)
                return mcp_result_error_code("failed", false, "%s %s; its result was over the %u MiB this "
                                             "server keeps (list_runs and read_output find the run)", what, how, 32u);
        /* the run's text may hold NUL bytes (\u0000, the program wrote
         * them): taken, and each shown as U+FFFD, so no C string of the
         * result ends early */
        json_t *j = out ? json_loadb(out, len, JSON_ALLOW_NUL, NULL) : NULL;
        mcp_json_without_nul(j);
        const char *schema = json_string_value(json_object_get(j, "schema"));
        json_t *r;
        if (schema && streq(schema, "hutch.result/1"))
                r = mcp_result_from_run(j);
        else if (schema && streq(schema, "hutch.error/1")) {
                const char *ptr = json_string_value(json_object_get(j, "pointer"));
                r = mcp_result_error_code(str_or(j, "code", "failed"),
                                          json_is_true(json_object_get(j, "retryable")),
                                          "no run: %s%s%s%s (exit_code=%lld)", str_or(j, "message", "?"),
                                          ptr && *ptr ? " (at " : "", ptr && *ptr ? ptr : "", ptr && *ptr ? ")" : "",
                                          (long long)json_integer_value(json_object_get(j, "exit_code")));
        } else
                r = mcp_result_error_code("failed", false,
                                          "%s %s without a result (its messages went to the server's stderr)",
                                          what, how);
        json_decref(j);
        return r;
}
