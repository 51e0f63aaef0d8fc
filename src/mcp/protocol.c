/* protocol.c - the messages of `hutch mcp`: JSON-RPC 2.0 checks, the two
 * eras of the Model Context Protocol, and the tools/call dispatch.
 *
 * Legacy clients (revision 2025-11-25 and earlier) open with initialize;
 * we answer the version they asked for when we speak it, else our
 * latest legacy one (the lifecycle's version negotiation), and serve
 * them without resultType. Modern clients (2026-07-28) carry the version
 * in each request's _meta (io.modelcontextprotocol/protocolVersion);
 * a version we do not speak gets UnsupportedProtocolVersionError
 * (-32022) listing ours; results carry resultType "complete" and our
 * serverInfo in _meta. Both may use one server (the spec's dual era).
 */
#include "config.h"

#include <string.h>

#include "lib/util.h"
#include "mcp/format.h"
#include "mcp/history.h"
#include "mcp/repo.h"
#include "mcp/server-internal.h"
#include "mcp/tools.h"

#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define MCP_UNSUPPORTED_VERSION -32022

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT "io.modelcontextprotocol/clientInfo"
#define META_SERVER "io.modelcontextprotocol/serverInfo"

static const char *const modern_versions[] = { "2026-07-28", NULL };
static const char *const legacy_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL };

static const char instructions[] =
        "Each run_code or run_command call runs in a fresh sandbox and is recorded; with a session "
        "it runs in the session's sandbox, where files (and on a server with live sessions, "
        "processes) stay between calls; "
        "the result's header line gives exit code, status and duration, and long output "
        "is cut in the middle: page the rest with read_output.";

static bool in_list(const char *const *list, const char *v)
{
        for (; *list; list++)
                if (streq(*list, v))
                        return true;
        return false;
}

static json_t *all_versions(void)
{
        json_t *a = json_array();
        for (const char *const *v = modern_versions; *v; v++)
                json_array_append_new(a, json_string(*v));
        for (const char *const *v = legacy_versions; *v; v++)
                json_array_append_new(a, json_string(*v));
        return a;
}

static json_t *server_info(void)
{
        return json_pack("{s:s, s:s}", "name", "hutch", "version", PACKAGE_VERSION);
}

static void send_error(struct mcp_server *s, json_t *id, int code, const char *message, json_t *data)
{
        json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
        if (data)
                json_object_set_new(err, "data", data);
        json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", err);
        wire_out_send(&s->out, m);
        json_decref(m);
}

/* Send result (stolen) for request id, dressed for the era. */
static void send_result(struct mcp_server *s, json_t *id, bool modern, json_t *result)
{
        if (!result)
                result = mcp_result_error_code("failed", false, "internal error: the result could not be encoded");
        if (modern) {
                json_object_set_new(result, "resultType", json_string("complete"));
                json_t *meta = json_object_get(result, "_meta");
                if (!meta)
                        json_object_set_new(result, "_meta", meta = json_object());
                json_object_set_new(meta, META_SERVER, server_info());
        }
        json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
        wire_out_send(&s->out, m);
        json_decref(m);
}

void mcp_send_call_result(struct mcp_server *s, struct mcp_call *c, json_t *result)
{
        send_result(s, c->id, c->modern, result);
}

void mcp_send_progress(struct mcp_server *s, struct mcp_call *c, uint64_t now_ms, size_t ahead,
                       bool session_busy)
{
        uint64_t secs = (now_ms - c->received_ms) / 1000;
        _cleanup_free_ char *msg = session_busy
                ? xasprintf("queued for %llus: waiting for the earlier calls of session %s",
                            (unsigned long long)secs, c->session + strlen(MCP_SESSION_PREFIX))
                : c->state == CALL_QUEUED && c->live_waiting
                ? xasprintf("queued for %llus: the session's live sandbox is starting or stopping",
                            (unsigned long long)secs)
                : c->state == CALL_QUEUED
                ? xasprintf("queued for %llus: %zu run%s ahead (at most %u at once)", (unsigned long long)secs,
                            ahead, ahead == 1 ? "" : "s", s->cfg->max_concurrent)
                : xasprintf("running for %llus", (unsigned long long)secs);
        /* progress must increase: the seconds since the call came */
        json_t *m = json_pack("{s:s, s:s, s:{s:O, s:I, s:s}}", "jsonrpc", "2.0", "method", "notifications/progress",
                              "params", "progressToken", c->progress_token, "progress", (json_int_t)secs,
                              "message", msg);
        wire_out_send(&s->out, m);
        json_decref(m);
}

static void handle_initialize(struct mcp_server *s, json_t *id, json_t *params)
{
        const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
        if (!asked) {
                send_error(s, id, RPC_INVALID_PARAMS, "initialize: params.protocolVersion: expected a string", NULL);
                return;
        }
        const char *v = in_list(legacy_versions, asked) ? asked : legacy_versions[0];
        free(s->legacy_version);
        s->legacy_version = xstrdup(v);
        const char *name = json_string_value(json_object_get(json_object_get(params, "clientInfo"), "name"));
        free(s->legacy_client);
        s->legacy_client = name ? xstrdup(name) : NULL;
        send_result(s, id, false,
                    json_pack("{s:s, s:{s:{s:b}}, s:o, s:s}", "protocolVersion", v, "capabilities", "tools",
                              "listChanged", 0, "serverInfo", server_info(), "instructions", instructions));
}

/* The label value naming the client: its self-reported name, cut to a
 * label's size (display only, never trusted). */
static json_t *labels_for(struct mcp_server *s, json_t *meta, bool modern)
{
        const char *name = modern ? json_string_value(json_object_get(json_object_get(meta, META_CLIENT), "name"))
                                  : s->legacy_client;
        char buf[257];
        size_t n = name ? strlen(name) : 0;
        if (!n)
                name = "unknown", n = strlen(name);
        n = mcp_utf8_floor(name, n, MIN(n, sizeof(buf) - 1));
        memcpy(buf, name, n);
        buf[n] = '\0';
        return json_pack("{s:s, s:s, s:s}", "mcp.client", buf, "mcp.session", s->session, "mcp.scope",
                         s->cfg->scope ? s->cfg->scope : MCP_SCOPE_DEFAULT);
}

/* A call of session that would start a live sandbox over
 * --max-sessions: refused at once, not after a wait for a run slot. A
 * call queued behind another of its session is checked when it would
 * start the sandbox (live_dispatch()). */
static json_t *new_session_refusal(struct mcp_server *s, const char *session)
{
        if (!session)
                return NULL;
        for (struct mcp_call *o = s->calls; o; o = o->next)
                if (o->session && streq(o->session, session))
                        return NULL;
        return live_cap_refusal(s, session);
}

static void handle_call(struct mcp_server *s, json_t *id, json_t *params, bool modern, uint64_t now_ms)
{
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        json_t *meta = json_object_get(params, "_meta");

        if (!name) {
                send_error(s, id, RPC_INVALID_PARAMS, "tools/call: params.name: expected a string", NULL);
                return;
        }
        enum mcp_tool t = mcp_tool_from_name(name);
        if (t < 0) {
                _cleanup_free_ char *m = xasprintf("Unknown tool: %s", name);
                send_error(s, id, RPC_INVALID_PARAMS, m, NULL);
                return;
        }
        if (args && !json_is_object(args)) {
                send_error(s, id, RPC_INVALID_PARAMS, "tools/call: params.arguments: expected an object", NULL);
                return;
        }
        _cleanup_(json_decrefp) json_t *empty = json_object();
        if (!args)
                args = empty;
        _cleanup_free_ char *nul = mcp_args_nul_path(t, args);
        if (nul) {
                /* an argument error like the others: said, never cut */
                send_result(s, id, modern,
                            mcp_result_error("%s: %s: holds a NUL byte (\\u0000), which hutch cannot pass in this "
                                             "string (only stdin and files contents may hold one)", name, nul));
                return;
        }

        switch (t) {
        case TOOL_READ_OUTPUT:
                send_result(s, id, modern, mcp_read_output(args, s->cfg->scope));
                return;
        case TOOL_LIST_RUNS:
                send_result(s, id, modern, mcp_list_runs(args, s->cfg->scope));
                return;
        case TOOL_GET_FILE:
                send_result(s, id, modern, mcp_get_file(args, s->cfg->scope));
                return;
        case TOOL_DIFF:
                send_result(s, id, modern, mcp_diff(args, s->cfg, s->exe_fd));
                return;
        case TOOL_APPLY:
                if (!s->cfg->allow_apply) {
                        /* not listed: as unknown as any other name */
                        _cleanup_free_ char *m = xasprintf("Unknown tool: %s", name);
                        send_error(s, id, RPC_INVALID_PARAMS, m, NULL);
                        return;
                }
                send_result(s, id, modern, mcp_apply(args, s->cfg, s->exe_fd));
                return;
        case TOOL_LIST_PROCESSES:
        case TOOL_LIST_PORTS: {
                if (!s->cfg->live) {
                        _cleanup_free_ char *m = xasprintf("Unknown tool: %s", name);
                        send_error(s, id, RPC_INVALID_PARAMS, m, NULL);
                        return;
                }
                json_t *r = t == TOOL_LIST_PORTS ? live_list_ports(s, args)
                                                 : live_list_processes(s, id, modern, args, now_ms);
                if (r)
                        send_result(s, id, modern, r);
                return;
        }
        default:
                break;
        }
        if (s->cfg->workdir && (json_object_get(args, "session") || json_object_get(args, "files"))) {
                /* every call of this server works on its --workdir */
                send_result(s, id, modern, mcp_result_error("%s: this server works on its working directory "
                                                            "(hutch mcp --workdir): a call takes no %s", name,
                                                            json_object_get(args, "session") ? "session" : "files"));
                return;
        }

        size_t waiting = 0;
        for (struct mcp_call *c = s->calls; c; c = c->next)
                waiting += c->state == CALL_QUEUED;
        if (waiting >= MCP_QUEUE_MAX) {
                /* each queued call holds its request: bound them */
                send_result(s, id, modern,
                            mcp_result_error_code("admission_full", true,
                                                  "%s: %zu calls are already waiting for one of the %u run slots; "
                                                  "try again later", name, waiting, s->cfg->max_concurrent));
                return;
        }
        _cleanup_(json_decrefp) json_t *labels = labels_for(s, meta, modern);
        _cleanup_(json_decrefp) json_t *req = NULL;
        _cleanup_free_ char *error = NULL;
        if (mcp_tool_request(t, args, s->cfg->scope, s->cfg->max_timeout_ms, s->cfg->limits, labels, &req,
                             &error) < 0) {
                /* a model's mistake: a tool error it can read and correct */
                send_result(s, id, modern, mcp_result_error("%s: %s", name, error));
                return;
        }
        char *text = json_dumps(req, JSON_COMPACT);
        if (!text) {
                send_result(s, id, modern, mcp_result_error("%s: the request could not be encoded", name));
                return;
        }
        const char *session = json_string_value(json_object_get(req, "session"));
        json_t *refused = new_session_refusal(s, session);
        if (refused) {
                free(text);
                send_result(s, id, modern, refused);
                return;
        }
        json_t *token = json_object_get(meta, "progressToken");
        if (token && !json_is_string(token) && !json_is_integer(token))
                token = NULL;
        struct mcp_call *c = call_new(id, token, modern, text, now_ms), **tail = &s->calls;
        c->next_progress_ms = now_ms + MCP_PROGRESS_MS;
        /* a model asking for more than the ceiling is told it got less */
        json_t *asked = json_object_get(args, "timeout_s");
        if (json_is_number(asked) && json_number_value(asked) * 1000.0 > (double)s->cfg->max_timeout_ms)
                c->note = xasprintf("timeout_s %g is over this server's ceiling: the run had %g s",
                                    json_number_value(asked), s->cfg->max_timeout_ms / 1000.0);
        c->session = session ? xstrdup(session) : NULL;
        if (session) {
                /* this server's own calls on it queue (server.c); a holder
                 * outside it is waited for as long as the call may run */
                json_int_t wait_ms = json_integer_value(json_object_get(json_object_get(req, "limits"), "timeout_ms"));
                c->session_wait = xasprintf("%lldms", (long long)(wait_ms > 0 ? wait_ms : MCP_DEFAULT_TIMEOUT_MS));
        }
        while (*tail)
                tail = &(*tail)->next;
        *tail = c;
}

static void handle_cancelled(struct mcp_server *s, json_t *params, uint64_t now_ms)
{
        json_t *rid = json_object_get(params, "requestId");
        for (struct mcp_call **p = &s->calls; rid && *p; p = &(*p)->next) {
                struct mcp_call *c = *p;
                if (!json_equal(c->id, rid) || c->cancelled)
                        continue;
                if (c->state == CALL_QUEUED) {
                        /* never started: nothing ran, nothing to record */
                        *p = c->next;
                        call_free(c);
                } else
                        call_cancel(c, now_ms, MCP_CANCEL_KILL_MS);
                return;
        }
        /* unknown or finished: the spec says ignore it */
}

static void handle_request(struct mcp_server *s, json_t *id, const char *method, json_t *params, uint64_t now_ms)
{
        json_t *meta = json_object_get(params, "_meta");
        json_t *pv = json_object_get(meta, META_VERSION);
        bool modern = false;

        if (streq(method, "initialize")) {
                handle_initialize(s, id, params);
                return;
        }
        if (pv) {
                const char *v = json_string_value(pv);
                if (!v || !(in_list(modern_versions, v) || in_list(legacy_versions, v))) {
                        json_t *data = json_pack("{s:o, s:s}", "supported", all_versions(), "requested",
                                                 v ? v : "(not a string)");
                        send_error(s, id, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version", data);
                        return;
                }
                modern = in_list(modern_versions, v);
        } else if (!s->legacy_version && !streq(method, "ping")) {
                send_error(s, id, RPC_INVALID_REQUEST,
                           "no protocol version: send initialize first (revision 2025-11-25 and earlier), or give "
                           "_meta." META_VERSION " in each request (2026-07-28)",
                           json_pack("{s:o}", "supported", all_versions()));
                return;
        }

        if (streq(method, "ping") && !modern)
                send_result(s, id, false, json_object());
        else if (streq(method, "server/discover"))
                send_result(s, id, modern,
                            json_pack("{s:o, s:{s:{}}, s:s, s:i, s:s}", "supportedVersions", all_versions(),
                                      "capabilities", "tools", "instructions", instructions, "ttlMs", 3600000,
                                      "cacheScope", "public"));
        else if (streq(method, "tools/list")) {
                json_t *r = json_pack("{s:o}", "tools", mcp_tools_json(s->cfg->max_timeout_ms, s->cfg->allow_apply, s->cfg->live));
                if (modern) {
                        /* the list depends on this server's ceilings only */
                        json_object_set_new(r, "ttlMs", json_integer(3600000));
                        json_object_set_new(r, "cacheScope", json_string("private"));
                }
                send_result(s, id, modern, r);
        } else if (streq(method, "tools/call"))
                handle_call(s, id, params, modern, now_ms);
        else {
                _cleanup_free_ char *m = xasprintf("Method not found: %s", method);
                send_error(s, id, RPC_METHOD_NOT_FOUND, m, NULL);
        }
}

void mcp_handle_too_long(struct mcp_server *s)
{
        _cleanup_free_ char *m = xasprintf("Parse error: message longer than %u MiB", MCP_LINE_MAX >> 20);
        send_error(s, NULL, RPC_PARSE_ERROR, m, NULL);
}

/* Where in a request's params a string holds a NUL byte (a new
 * string), or NULL. Not tools/call's arguments (handle_call() answers
 * those as a tool error), nor a progress token (only echoed). */
static char *params_nul_path(json_t *params, const char *method)
{
        const char *k, *mk;
        json_t *v, *mv;

        json_object_foreach(params, k, v) {
                char *r = NULL;
                _cleanup_free_ char *at = mcp_path_join("params", k);
                if (streq(k, "arguments") && streq(method, "tools/call"))
                        continue;
                if (streq(k, "_meta") && json_is_object(v)) {
                        json_object_foreach(v, mk, mv) {
                                if (streq(mk, "progressToken"))
                                        continue;
                                _cleanup_free_ char *mat = mcp_path_join(at, mk);
                                if ((r = mcp_json_nul_path(mv, mat)))
                                        return r;
                        }
                        continue;
                }
                if ((r = mcp_json_nul_path(v, at)))
                        return r;
        }
        return NULL;
}

void mcp_handle_line(struct mcp_server *s, const char *line, uint64_t now_ms)
{
        json_error_t e;
        /* \u0000 is valid JSON: taken, and refused where it matters
         * (below, handle_call()) with the request's id and its place */
        _cleanup_(json_decrefp) json_t *m = json_loads(line, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);

        if (!line[strspn(line, " \t\r")])
                return;         /* a blank line carries no message */
        if (!m) {
                _cleanup_free_ char *msg = xasprintf("Parse error: %s at column %d", e.text, e.column);
                json_t *t = json_string(msg);
                send_error(s, NULL, RPC_PARSE_ERROR, t ? msg : "Parse error: invalid JSON", NULL);
                json_decref(t);
                return;
        }
        json_t *id = json_object_get(m, "id");
        json_t *method = json_object_get(m, "method");
        json_t *params = json_object_get(m, "params");
        bool id_ok = id && (json_is_string(id) || json_is_integer(id));

        if (!json_is_object(m) || !streq(json_string_value(json_object_get(m, "jsonrpc")) ?: "", "2.0") ||
            (id && !id_ok) || (params && !json_is_object(params))) {
                send_error(s, id_ok ? id : NULL, RPC_INVALID_REQUEST,
                           "Invalid Request: expected a JSON-RPC 2.0 object (jsonrpc \"2.0\", a string or "
                           "integer id, params an object)", NULL);
                return;
        }
        if (!method) {
                /* a response: we send no requests, so there is nothing to match */
                if (id && (json_object_get(m, "result") || json_object_get(m, "error")))
                        return;
                send_error(s, id, RPC_INVALID_REQUEST, "Invalid Request: no method", NULL);
                return;
        }
        if (!json_is_string(method)) {
                send_error(s, id, RPC_INVALID_REQUEST, "Invalid Request: method must be a string", NULL);
                return;
        }
        if (strlen(json_string_value(method)) != json_string_length(method)) {
                if (id)
                        send_error(s, id, RPC_INVALID_REQUEST, "Invalid Request: method holds a NUL byte (\\u0000)",
                                   NULL);
                return;
        }
        if (!id) {
                if (streq(json_string_value(method), "notifications/cancelled"))
                        handle_cancelled(s, params, now_ms);
                /* notifications/initialized and any other: nothing to do */
                return;
        }
        _cleanup_free_ char *nul = params_nul_path(params, json_string_value(method));
        if (nul) {
                _cleanup_free_ char *msg = xasprintf("Invalid params: %s holds a NUL byte (\\u0000), which hutch "
                                                     "cannot take there", nul);
                send_error(s, id, RPC_INVALID_PARAMS, msg, NULL);
                return;
        }
        handle_request(s, id, json_string_value(method), params, now_ms);
}
