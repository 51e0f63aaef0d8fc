/* history.c - read_output, list_runs and get_file (see history.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lib/base64.h"
#include "lib/sanitize.h"
#include "lib/util.h"
#include "mcp/format.h"
#include "mcp/history.h"
#include "record/blobstore.h"
#include "run/runfiles.h"
#include "record/store.h"

#define NO_STORE ((json_t *)1)   /* open_store(): no history yet */

static json_t *open_store(struct store **ret)
{
        _cleanup_free_ char *path = NULL, *error = NULL;
        if (store_default_path(&path) < 0)
                return mcp_result_error_code("store_unusable", false, "run store: set HUTCH_STATE_DIR, XDG_STATE_HOME or HOME for the server");
        int r = store_open_readonly(path, ret, &error);
        if (r == -ENOENT)
                return NO_STORE;
        if (r < 0)
                return mcp_result_error_code(r == -EBUSY ? "store_busy" : "store_unusable", r == -EBUSY,
                                             "run store: %s", error ? error : path);
        return NULL;
}

static bool started_here(struct store *s, const char *id)
{
        _cleanup_strv_ char **labels = NULL;
        if (store_labels_get(s, id, &labels) < 0)
                return false;
        for (char **l = labels; l && *l; l++)
                if (startswith(*l, "mcp.client="))
                        return true;
        return false;
}

struct prefix_ctx {
        struct store *s;
        const char *prefix;
        size_t len;
        char *first;            /* the first of ours that matches */
        size_t n;               /* how many of ours match */
};

static int match_prefix(struct run_record *rec, void *userdata)
{
        struct prefix_ctx *c = userdata;
        if (strncasecmp(rec->id, c->prefix, c->len) == 0 && started_here(c->s, rec->id)) {
                if (!c->first)
                        c->first = xstrdup(rec->id);
                c->n++;
        }
        run_record_free(rec);
        /* two are enough to say "several" */
        return c->n > 1 ? -ECANCELED : 0;
}

/* Find run id (a prefix is fine) among the runs started through MCP.
 * A prefix is resolved among those runs only: "several runs match" for
 * a prefix that only the operator's own runs share would tell a model
 * they exist, and roughly when they started (an id starts with its
 * time). */
static json_t *find_run(struct store *s, json_t *idv, struct run_record **ret)
{
        const char *id = json_string_value(idv);
        if (!id)
                return mcp_result_error("run_id: expected a string");
        int r = store_run_get(s, id, ret, NULL);
        if (r == -ENOTUNIQ) {
                struct prefix_ctx c = { .s = s, .prefix = id, .len = strlen(id) };
                struct store_filter f = STORE_FILTER_ALL;
                r = store_run_foreach(s, &f, match_prefix, &c);
                if (r < 0 && r != -ECANCELED) {
                        free(c.first);
                        return mcp_result_error("run store: %s", store_error(s));
                }
                if (c.n > 1) {
                        free(c.first);
                        return mcp_result_error("run_id \"%s\": several runs match; give more of the id", id);
                }
                r = c.n ? store_run_get(s, c.first, ret, NULL) : -ENOENT;
                free(c.first);
        }
        if (r == -EBADMSG)
                return mcp_result_error_code("damaged", false, "run %s: its stored output is damaged", id);
        if (r < 0 || !started_here(s, (*ret)->id)) {
                if (r == 0)
                        run_record_free(TAKE_PTR(*ret));
                return mcp_result_error_code("not_found", false, "run_id \"%s\": no run of this server's tools has this id", id);
        }
        return NULL;
}

static json_t *unknown_arg(json_t *args, const char *const *known)
{
        const char *k;
        json_t *v;
        json_object_foreach(args, k, v) {
                bool ok = false;
                for (const char *const *n = known; *n; n++)
                        ok = ok || streq(k, *n);
                if (!ok)
                        return mcp_result_error("unknown argument \"%s\"", k);
        }
        return NULL;
}

static bool get_uint(json_t *args, const char *key, uint64_t min, uint64_t max, uint64_t *v)
{
        json_t *x = json_object_get(args, key);
        if (!x)
                return true;
        if (!json_is_integer(x) || json_integer_value(x) < (json_int_t)min || json_integer_value(x) > (json_int_t)max)
                return false;
        *v = (uint64_t)json_integer_value(x);
        return true;
}

json_t *mcp_read_output(json_t *args)
{
        static const char *const known[] = { "run_id", "stream", "offset", "limit", NULL };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(run_record_freep) struct run_record *rec = NULL;
        uint64_t offset = 0, limit = MCP_PAGE_DEFAULT;
        json_t *e;

        if ((e = unknown_arg(args, known)))
                return e;
        const char *stream = json_string_value(json_object_get(args, "stream"));
        if (!stream || !(streq(stream, "stdout") || streq(stream, "stderr")))
                return mcp_result_error("stream: expected \"stdout\" or \"stderr\"");
        if (!get_uint(args, "offset", 0, INT64_MAX, &offset))
                return mcp_result_error("offset: expected an integer >= 0");
        if (!get_uint(args, "limit", 1, MCP_PAGE_MAX, &limit))
                return mcp_result_error("limit: expected an integer from 1 to %u", MCP_PAGE_MAX);
        if ((e = open_store(&s)) || (e = find_run(s, json_object_get(args, "run_id"), &rec)))
                return e == NO_STORE ? mcp_result_error_code("not_found", false, "no runs recorded yet") : e;

        /* the same sanitised text as the run's result carried, so the
         * offsets its cut marker names are offsets here */
        json_t *run = run_record_to_json(rec, true);
        const char *text = json_string_value(json_object_get(run, stream));
        size_t total = text ? strlen(text) : 0;
        size_t from = mcp_utf8_ceil(text, total, MIN(offset, total));
        size_t to = from + limit >= total ? total : mcp_utf8_floor(text, total, from + limit);
        if (to <= from && from < total)
                to = mcp_utf8_ceil(text, total, from + 1);   /* a limit below one character */
        json_t *page = json_stringn(text ? text + from : "", to - from);
        json_t *sc = json_pack("{s:s, s:s, s:I, s:I, s:I, s:b, s:O}", "run_id", rec->id, "stream", stream,
                               "offset", (json_int_t)from, "next_offset", (json_int_t)to, "total", (json_int_t)total,
                               "eof", to >= total, "text", page);
        json_decref(run);
        _cleanup_free_ char *header = xasprintf("run %s %s bytes %zu to %zu of %zu%s\n", rec->id, stream, from, to,
                                                total, to >= total ? " (end)" : "");
        json_t *content = json_pack("[{s:s, s:s}, {s:s, s:o}]", "type", "text", "text", header, "type", "text", "text", page);
        return json_pack("{s:o, s:o, s:b}", "content", content, "structuredContent", sc, "isError", 0);
}

struct list_ctx {
        struct store *s;
        json_t *runs;
        FILE *text;
        size_t limit;
};

static int list_one(struct run_record *rec, void *userdata)
{
        struct list_ctx *c = userdata;
        if (started_here(c->s, rec->id)) {
                json_t *o = run_record_to_json(rec, false);
                json_object_set_new(o, "labels", store_labels_json(c->s, rec->id));
                json_array_append_new(c->runs, o);
                _cleanup_free_ char *argv = sanitize_argv_line(rec->argv, 60);
                json_t *code = json_object_get(o, "exit_code");
                char cbuf[24] = "none";
                if (json_is_integer(code))
                        snprintf(cbuf, sizeof(cbuf), "%lld", (long long)json_integer_value(code));
                fprintf(c->text, "%s %s exit_code=%s %s\n", rec->id, run_status_to_string(rec->status), cbuf,
                        argv ? argv : "");
        }
        run_record_free(rec);
        /* enough: stop the walk (not an error, see mcp_list_runs) */
        return json_array_size(c->runs) >= c->limit ? -ECANCELED : 0;
}

json_t *mcp_list_runs(json_t *args)
{
        static const char *const known[] = { "status", "label", "limit", NULL };
        _cleanup_(store_closep) struct store *s = NULL;
        struct store_filter f = STORE_FILTER_ALL;
        uint64_t limit = MCP_LIST_DEFAULT;
        json_t *e, *x;

        if ((e = unknown_arg(args, known)))
                return e;
        if ((x = json_object_get(args, "status"))) {
                int st = json_is_string(x) ? run_status_from_string(json_string_value(x)) : -1;
                if (st < 0)
                        return mcp_result_error("status: expected a run status (success, failed, timeout, ...)");
                f.status = st;
        }
        if ((x = json_object_get(args, "label"))) {
                const char *l = json_string_value(x);
                if (!l || !is_key_value(l))
                        return mcp_result_error("label: expected KEY=VALUE");
                f.label = l;
        }
        if (!get_uint(args, "limit", 1, MCP_LIST_MAX, &limit))
                return mcp_result_error("limit: expected an integer from 1 to %u", MCP_LIST_MAX);
        if ((e = open_store(&s)) == NO_STORE)
                return json_pack("{s:[{s:s, s:s}], s:{s:[]}, s:b}", "content", "type", "text", "text", "no runs\n",
                                 "structuredContent", "runs", "isError", 0);
        if (e)
                return e;

        _cleanup_free_ char *text = NULL;
        size_t tlen = 0;
        struct list_ctx c = { .s = s, .runs = json_array(), .limit = limit };
        c.text = open_memstream(&text, &tlen);
        if (!c.text) {
                json_decref(c.runs);
                return mcp_result_error_code("failed", false, "out of memory");
        }
        int r = store_run_foreach(s, &f, list_one, &c);
        fclose(c.text);
        if (r < 0 && r != -ECANCELED) {
                json_decref(c.runs);
                return mcp_result_error_code("store_unusable", false, "run store: %s", store_error(s));
        }
        json_t *t = json_string(tlen ? text : "no runs\n");
        return json_pack("{s:[{s:s, s:o}], s:{s:o}, s:b}", "content", "type", "text", "text",
                         t ? t : json_string("(not UTF-8)"), "structuredContent", "runs", c.runs, "isError", 0);
}

json_t *mcp_get_file(json_t *args)
{
        static const char *const known[] = { "run_id", "path", NULL };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(run_record_freep) struct run_record *rec = NULL;
        _cleanup_(blobstore_freep) struct blobstore *bs = NULL;
        struct file_record *files = NULL, *hit = NULL;
        size_t n = 0;
        json_t *e;

        if ((e = unknown_arg(args, known)))
                return e;
        const char *path = json_string_value(json_object_get(args, "path"));
        if (!path || !*path)
                return mcp_result_error("path: expected a file's path");
        if ((e = open_store(&s)) || (e = find_run(s, json_object_get(args, "run_id"), &rec)))
                return e == NO_STORE ? mcp_result_error_code("not_found", false, "no runs recorded yet") : e;
        if (store_files_list(s, rec->id, NULL, &files, &n) < 0)
                return mcp_result_error_code("store_unusable", false, "run store: %s", store_error(s));
        /* as hutch cp: an artifact by its name, then a workspace file, then "output/NAME" */
        const char *out = startswith(path, "output/") ? path + strlen("output/") : NULL;
        for (int pass = 0; pass < 3 && !hit; pass++)
                for (size_t i = 0; i < n && !hit; i++) {
                        bool output = streq(files[i].kind, "output");
                        if ((pass == 0 && output && streq(files[i].path, path)) ||
                            (pass == 1 && !output && !streq(files[i].kind, "deleted") && streq(files[i].path, path)) ||
                            (pass == 2 && output && out && streq(files[i].path, out)))
                                hit = &files[i];
                }
        if (!hit) {
                file_records_free(files, n);
                return mcp_result_error("run %s recorded no file \"%s\" (its result's files list names them)", rec->id, path);
        }
        if (!hit->sha256[0] || hit->skip || hit->link_target) {
                e = mcp_result_error("run %s: \"%s\" has no stored content%s%s", rec->id, path,
                                     hit->skip ? ": " : (hit->link_target ? " (a symlink)" : ""), hit->skip ? hit->skip : "");
                file_records_free(files, n);
                return e;
        }
        if (hit->size != RUN_UNSET && hit->size > MCP_FILE_MAX) {
                e = mcp_result_error("run %s: \"%s\" is %llu bytes, over the %u this tool returns; "
                                     "copy it with hutch cp on the host", rec->id, path,
                                     (unsigned long long)hit->size, MCP_FILE_MAX);
                file_records_free(files, n);
                return e;
        }

        _cleanup_free_ char *data = xmalloc(MCP_FILE_MAX + 1);
        _cleanup_close_ int fd = -1;
        ssize_t len = -1;
        int r = runfiles_open_blobs(s, &bs);
        if (r >= 0)
                r = fd = blobstore_open_verified(bs, hit->sha256);
        if (r >= 0) {
                len = read_full(fd, data, MCP_FILE_MAX + 1);
                r = len < 0 ? (int)len : len > MCP_FILE_MAX ? -EFBIG : 0;
        }
        if (r < 0) {
                e = mcp_result_error("run %s: \"%s\": cannot read its stored content: %s", rec->id, path, strerror(-r));
                file_records_free(files, n);
                return e;
        }
        bool text = sanitize_utf8_valid(data, (size_t)len);
        _cleanup_free_ char *b64 = text ? NULL : base64_encode(data, (size_t)len, NULL);
        json_t *content = text ? json_stringn(data, (size_t)len) : json_string(b64);
        json_t *sc = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s?, s:s, s:O}", "run_id", rec->id, "path", hit->path,
                               "kind", hit->kind, "size", (json_int_t)len, "sha256", hit->sha256, "mime", hit->mime,
                               "encoding", text ? "utf-8" : "base64", "content", content);
        json_t *blocks;
        if (text)
                blocks = json_pack("[{s:s, s:O}]", "type", "text", "text", content);
        else {
                _cleanup_free_ char *uri = xasprintf("hutch://run/%s/%s", rec->id, hit->path);
                _cleanup_free_ char *note = xasprintf("%s: %zd bytes of binary data%s%s (base64 in the resource)",
                                                      hit->path, len, hit->mime ? ", " : "", hit->mime ? hit->mime : "");
                json_t *uriv = json_string(uri);
                blocks = json_pack("[{s:s, s:s}, {s:s, s:{s:o, s:s, s:O}}]", "type", "text", "text", note, "type",
                                   "resource", "resource", "uri", uriv ? uriv : json_string("hutch://run/file"),
                                   "mimeType", hit->mime ? hit->mime : "application/octet-stream", "blob", content);
        }
        json_decref(content);
        file_records_free(files, n);
        return json_pack("{s:o, s:o, s:b}", "content", blocks, "structuredContent", sc, "isError", 0);
}
