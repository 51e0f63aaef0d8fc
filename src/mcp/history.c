/* history.c - read_output, list_runs and get_file (see history.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base64.h"
#include "lib/jsonutil.h"
#include "lib/sanitize.h"
#include "lib/util.h"
#include "mcp/format.h"
#include "mcp/history.h"
#include "mcp/tools.h"
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

/* Whether run id was started through `hutch mcp` in scope: labelled
 * mcp.client and mcp.scope=scope; in the default scope, a run from
 * before scopes (mcp.client, no mcp.scope) too. */
static bool started_here(struct store *s, const char *id, const char *scope)
{
        _cleanup_strv_ char **labels = NULL;
        const char *own = NULL;
        bool client = false;
        if (store_labels_get(s, id, &labels) < 0)
                return false;
        if (!scope)
                scope = MCP_SCOPE_DEFAULT;
        for (char **l = labels; l && *l; l++)
                if (startswith(*l, "mcp.client="))
                        client = true;
                else if (startswith(*l, "mcp.scope="))
                        own = *l + strlen("mcp.scope=");
        return client && (own ? streq(own, scope) : streq(scope, MCP_SCOPE_DEFAULT));
}

struct prefix_ctx {
        struct store *s;
        const char *scope;
        const char *prefix;
        size_t len;
        char *first;            /* the first of ours that matches */
        size_t n;               /* how many of ours match */
};

static int match_prefix(struct run_record *rec, void *userdata)
{
        struct prefix_ctx *c = userdata;
        if (strncasecmp(rec->id, c->prefix, c->len) == 0 && started_here(c->s, rec->id, c->scope)) {
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
static json_t *find_run(struct store *s, json_t *idv, const char *scope, struct run_record **ret)
{
        const char *id = json_string_value(idv);
        if (!id)
                return mcp_result_error("run_id: expected a string");
        int r = store_run_get(s, id, ret, NULL);
        if (r == -ENOTUNIQ) {
                struct prefix_ctx c = { .s = s, .scope = scope, .prefix = id, .len = strlen(id) };
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
        if (r < 0 || !started_here(s, (*ret)->id, scope)) {
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

json_t *mcp_resolve_run(json_t *idv, const char *scope, char *ret_id, char **ret_workdir)
{
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(run_record_freep) struct run_record *rec = NULL;
        json_t *e;

        if ((e = open_store(&s)) || (e = find_run(s, idv, scope, &rec)))
                return e == NO_STORE ? mcp_result_error_code("not_found", false, "no runs recorded yet") : e;
        memcpy(ret_id, rec->id, ULID_LEN + 1);
        if (ret_workdir) {
                *ret_workdir = NULL;
                if (store_workspace_get(s, rec->id, ret_workdir, NULL) < 0)
                        *ret_workdir = NULL;
        }
        return NULL;
}

/* The stream read_output paged last. A model reads a long output page
 * after page: the store is opened, the record read (its blobs checked)
 * and the whole stream sanitised once, then each page is a slice of this
 * text. Only a finished run's stream is kept (it no longer changes), and
 * only one: the server holds at most one stream's text (a few hundred
 * KiB, the capture's head and tail) for it. */
static struct {
        char id[ULID_LEN + 1];
        char stream[8];
        char *text;
        size_t len;
} page_cache;

/* The sanitised text of run_id's stream: from page_cache when it holds
 * that run's stream, else from the store (and then kept). NULL and
 * *ret_error a tool error. *ret_id: the run's full id. */
static const char *stream_text(json_t *idv, const char *stream, const char *scope, size_t *ret_len,
                               char ret_id[ULID_LEN + 1], json_t **ret_error)
{
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(run_record_freep) struct run_record *rec = NULL;
        const char *id = json_string_value(idv);
        json_t *e;

        if (id && page_cache.text && streq(id, page_cache.id) && streq(stream, page_cache.stream)) {
                memcpy(ret_id, page_cache.id, sizeof(page_cache.id));
                *ret_len = page_cache.len;
                return page_cache.text;
        }
        if ((e = open_store(&s)) || (e = find_run(s, idv, scope, &rec))) {
                *ret_error = e == NO_STORE ? mcp_result_error_code("not_found", false, "no runs recorded yet") : e;
                return NULL;
        }
        /* the same sanitised text as the run's result carried, so the
         * offsets its cut marker names are offsets here */
        json_t *run = run_record_to_json(rec, true);
        json_t *text = json_object_get(run, stream);
        free(page_cache.text);
        /* a NUL byte the program wrote shows as in the result (format.h),
         * and neither ends the text nor shifts an offset it named */
        page_cache.text = mcp_text_without_nul(json_string_value(text) ?: "", json_string_length(text),
                                               &page_cache.len);
        json_decref(run);
        snprintf(page_cache.id, sizeof(page_cache.id), "%s", rec->id);
        snprintf(page_cache.stream, sizeof(page_cache.stream), "%s", stream);
        memcpy(ret_id, page_cache.id, sizeof(page_cache.id));
        *ret_len = page_cache.len;
        if (rec->status == RUN_RUNNING)
                page_cache.id[0] = '\0';      /* still growing: read it again next time */
        return page_cache.text;
}

json_t *mcp_read_output(json_t *args, const char *scope)
{
        static const char *const known[] = { "run_id", "stream", "offset", "limit", NULL };
        uint64_t offset = 0, limit = MCP_PAGE_DEFAULT;
        char id[ULID_LEN + 1];
        json_t *e = NULL;

        if ((e = unknown_arg(args, known)))
                return e;
        const char *stream = json_string_value(json_object_get(args, "stream"));
        if (!stream || !(streq(stream, "stdout") || streq(stream, "stderr")))
                return mcp_result_error("stream: expected \"stdout\" or \"stderr\"");
        if (!get_uint(args, "offset", 0, INT64_MAX, &offset))
                return mcp_result_error("offset: expected an integer >= 0");
        if (!get_uint(args, "limit", 1, MCP_PAGE_MAX, &limit))
                return mcp_result_error("limit: expected an integer from 1 to %u", MCP_PAGE_MAX);
        size_t total = 0;
        const char *text = stream_text(json_object_get(args, "run_id"), stream, scope, &total, id, &e);
        if (!text)
                return e;
        size_t from = mcp_utf8_ceil(text, total, MIN(offset, total));
        size_t to = from + limit >= total ? total : mcp_utf8_floor(text, total, from + limit);
        if (to <= from && from < total)
                to = mcp_utf8_ceil(text, total, from + 1);   /* a limit below one character */
        json_t *page = json_stringn(text ? text + from : "", to - from);
        json_t *sc = json_pack("{s:s, s:s, s:I, s:I, s:I, s:b, s:O}", "run_id", id, "stream", stream,
                               "offset", (json_int_t)from, "next_offset", (json_int_t)to, "total", (json_int_t)total,
                               "eof", to >= total, "text", page);
        _cleanup_free_ char *header = xasprintf("run %s %s bytes %zu to %zu of %zu%s\n", id, stream, from, to,
                                                total, to >= total ? " (end)" : "");
        json_t *content = json_pack("[{s:s, s:s}, {s:s, s:o}]", "type", "text", "text", header, "type", "text", "text", page);
        return json_pack("{s:o, s:o, s:b}", "content", content, "structuredContent", sc, "isError", 0);
}

struct list_ctx {
        struct store *s;
        const char *scope;
        json_t *runs;
        FILE *text;
        size_t limit;
};

static int list_one(struct run_record *rec, void *userdata)
{
        struct list_ctx *c = userdata;
        if (started_here(c->s, rec->id, c->scope)) {
                json_t *o = run_record_to_json(rec, false);
                json_object_set_new(o, "labels", store_labels_json(c->s, rec->id));
                /* the server's own directory is none of the model's business */
                json_object_set_new(o, "cwd", json_null());
                /* a --lang run's argv is the interpreter's bootstrap: the
                 * language and the code's first line say what ran */
                (void)store_run_code_get(c->s, rec);
                _cleanup_free_ char *line = rec->lang ? sanitize_code_line(rec->lang, rec->code, rec->code_len, 60)
                                                      : NULL;
                json_object_set_new(o, "lang", json_text(rec->lang));
                if (line)
                        json_object_set_new(o, "code_first_line", json_string(line + strlen(rec->lang) + 2));
                json_array_append_new(c->runs, o);
                _cleanup_free_ char *argv = line ? xstrdup(line) : sanitize_argv_line(rec->argv, 60);
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

json_t *mcp_list_runs(json_t *args, const char *scope)
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
        struct list_ctx c = { .s = s, .scope = scope, .runs = json_array(), .limit = limit };
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

/* The content blocks of a page of a file: text as it is; anything else
 * a note and an embedded resource (base64), and a whole image that fits
 * also as an image block, which clients show to the model. */
static json_t *file_blocks(const char *run_id, const struct file_record *f, size_t len, bool text, bool whole,
                           json_t *content)
{
        if (text)
                return json_pack("[{s:s, s:O}]", "type", "text", "text", content);
        const char *mime = f->mime ? f->mime : "application/octet-stream";
        _cleanup_free_ char *uri = xasprintf("hutch://run/%s/%s", run_id, f->path);
        _cleanup_free_ char *note = xasprintf("%s: %zu bytes of binary data%s%s (base64 in the resource)", f->path, len,
                                              f->mime ? ", " : "", f->mime ? f->mime : "");
        json_t *uriv = json_string(uri);
        json_t *blocks = json_pack("[{s:s, s:s}, {s:s, s:{s:o, s:s, s:O}}]", "type", "text", "text", note, "type",
                                   "resource", "resource", "uri", uriv ? uriv : json_string("hutch://run/file"),
                                   "mimeType", mime, "blob", content);
        /* the image formats clients display; a page of one is no image */
        static const char *const images[] = { "image/png", "image/jpeg", "image/gif", "image/webp", NULL };
        for (const char *const *m = images; whole && *m; m++)
                if (streq(mime, *m)) {
                        json_array_append_new(blocks, json_pack("{s:s, s:O, s:s}", "type", "image", "data", content,
                                                                "mimeType", mime));
                        break;
                }
        return blocks;
}

/* Whether the whole of fd's content (total bytes) is UTF-8 text without
 * NUL: a file is text or binary as a whole, so every page of it comes
 * back the same way, whatever its page boundaries split. A chunk's last
 * character, which may be cut, is carried into the next chunk. The
 * blob was just read whole to check its sha256: this is a second read
 * of the same size, in fixed memory. */
static bool file_is_text(int fd, uint64_t total)
{
        enum { CHUNK = 64 << 10 };
        _cleanup_free_ char *buf = xmalloc(CHUNK + 4);
        size_t carry = 0;

        for (uint64_t at = 0;;) {
                ssize_t got = pread(fd, buf + carry, CHUNK, (off_t)at);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0)
                        return false;
                if (got == 0)
                        return at >= total && sanitize_utf8_valid(buf, carry);
                at += (uint64_t)got;
                size_t n = carry + (size_t)got;
                size_t last = mcp_utf8_floor(buf, n, n - 1);
                /* a character is at most 4 bytes: a longer tail is
                 * stray continuation bytes */
                if (n - last > 4 || !sanitize_utf8_valid(buf, last))
                        return false;
                carry = n - last;
                memmove(buf, buf + last, carry);
        }
}

/* What a text page reads past its limit: up to 3 bytes skipped at
 * its start, a character of up to 4 when the limit is below one, and
 * the byte after its end, which says whether the end splits one. */
#define PAGE_SLACK 8u

/* A page of the bytes data[0..n) read at the call's offset: [start,
 * end) of them. */
struct page {
        size_t start, end;
        bool text;
};

/* The page of data[0..n) (at most limit + PAGE_SLACK bytes read at the
 * call's offset; fewer at the file's end) that get_file returns. A
 * binary file's page is its limit of bytes as they are. A text file's
 * (text: the whole file is UTF-8) starts and ends on characters, so
 * that every page is text and paging by next_offset gets every byte
 * once: an offset inside a character starts at the next one (a
 * well-formed file has at most 3 continuation bytes in a row), a limit
 * that splits one ends before it, and a limit below one character
 * still gets that character (or the page would not move on). */
static struct page page_of(const char *data, size_t n, uint64_t limit, bool text)
{
        struct page p = { .text = text };
        size_t cap = (size_t)MIN((uint64_t)n, limit);

        if (!text) {
                /* binary on every page, the empty one at its end too: a
                 * client that pages it decodes base64 throughout (the
                 * whole file decides, file_is_text(); an empty file is
                 * text) */
                p.end = cap;
                return p;
        }
        p.start = mcp_utf8_ceil(data, n, 0);
        p.end = cap < n ? mcp_utf8_floor(data, n, cap) : n;
        if (p.end <= p.start)
                p.end = p.start < n ? mcp_utf8_ceil(data, n, p.start + 1) : p.start;
        return p;
}

json_t *mcp_get_file(json_t *args, const char *scope)
{
        static const char *const known[] = { "run_id", "path", "offset", "limit", NULL };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(run_record_freep) struct run_record *rec = NULL;
        _cleanup_(blobstore_freep) struct blobstore *bs = NULL;
        struct file_record *files = NULL, *hit = NULL;
        uint64_t offset = 0, limit = MCP_FILE_MAX;
        size_t n = 0;
        json_t *e;

        if ((e = unknown_arg(args, known)))
                return e;
        if (!get_uint(args, "offset", 0, INT64_MAX, &offset))
                return mcp_result_error("offset: expected an integer >= 0");
        if (!get_uint(args, "limit", 1, MCP_FILE_MAX, &limit))
                return mcp_result_error("limit: expected an integer from 1 to %u", MCP_FILE_MAX);
        const char *path = json_string_value(json_object_get(args, "path"));
        if (!path || !*path)
                return mcp_result_error("path: expected a file's path");
        if ((e = open_store(&s)) || (e = find_run(s, json_object_get(args, "run_id"), scope, &rec)))
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
        /* one page of at most MCP_FILE_MAX bytes (the blob is checked
         * whole first: a damaged one is refused, not paged); read with
         * room for a text page's last character and the byte after it */
        _cleanup_free_ char *data = xmalloc(limit + PAGE_SLACK + 1);
        _cleanup_close_ int fd = -1;
        ssize_t len = -1;
        struct stat st = {};
        int r = runfiles_open_blobs(s, &bs);
        if (r >= 0)
                r = fd = blobstore_open_verified(bs, hit->sha256);
        if (r >= 0 && fstat(fd, &st) < 0)
                r = -errno;
        uint64_t total = (uint64_t)st.st_size;
        if (r >= 0 && offset > total)
                r = -ERANGE;
        if (r >= 0 && lseek(fd, (off_t)offset, SEEK_SET) < 0)
                r = -errno;
        if (r >= 0) {
                len = read_full(fd, data, limit + PAGE_SLACK);
                r = len < 0 ? (int)len : 0;
        }
        if (r < 0) {
                e = r == -ERANGE ? mcp_result_error("run %s: \"%s\" is %llu bytes: offset %llu is past its end", rec->id,
                                                    path, (unsigned long long)total, (unsigned long long)offset)
                                 : mcp_result_error("run %s: \"%s\": cannot read its stored content: %s", rec->id, path,
                                                    strerror(-r));
                file_records_free(files, n);
                return e;
        }
        struct page pg = page_of(data, (size_t)len, limit, file_is_text(fd, total));
        uint64_t from = offset + pg.start, next = offset + pg.end;
        bool eof = next >= total;
        const char *bytes = data + pg.start;
        size_t got = pg.end - pg.start;
        _cleanup_free_ char *b64 = pg.text ? NULL : base64_encode(bytes, got, NULL);
        json_t *content = pg.text ? json_stringn(bytes, got) : json_string(b64);
        json_t *sc = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s?, s:s, s:O, s:I, s:I, s:b}", "run_id", rec->id, "path",
                               hit->path, "kind", hit->kind, "size", (json_int_t)total, "sha256", hit->sha256, "mime",
                               hit->mime, "encoding", pg.text ? "utf-8" : "base64", "content", content, "offset",
                               (json_int_t)from, "next_offset", (json_int_t)next, "eof", eof);
        json_t *blocks = file_blocks(rec->id, hit, got, pg.text, from == 0 && eof, content);
        if (pg.start) {
                /* said, so that a client that computed its own offset
                 * knows which bytes it got */
                json_object_set_new(sc, "requested_offset", json_integer((json_int_t)offset));
                _cleanup_free_ char *why = xasprintf("[offset %llu is inside a UTF-8 character: this page starts at "
                                                     "the next character, byte %llu]", (unsigned long long)offset,
                                                     (unsigned long long)from);
                json_t *m = json_string(why);
                if (m)
                        json_array_insert_new(blocks, 0, json_pack("{s:s, s:o}", "type", "text", "text", m));
        }
        if (!eof) {
                _cleanup_free_ char *more = xasprintf("[bytes %llu to %llu of %llu; the next page: get_file {\"run_id\": "
                                                      "\"%s\", \"path\": \"%s\", \"offset\": %llu}]",
                                                      (unsigned long long)from, (unsigned long long)next,
                                                      (unsigned long long)total, rec->id, hit->path,
                                                      (unsigned long long)next);
                json_t *m = json_string(more);
                if (m)
                        json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "text", "text", m));
        }
        json_decref(content);
        file_records_free(files, n);
        return json_pack("{s:o, s:o, s:b}", "content", blocks, "structuredContent", sc, "isError", 0);
}
