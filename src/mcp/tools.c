/* tools.c - the tool definitions and argument checks of `hutch mcp`
 * (see tools.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "lib/util.h"
#include "mcp/format.h"
#include "mcp/tools.h"
#include "workspace/session.h"

static const char *const names[_TOOL_MAX] = {
        [TOOL_RUN_CODE] = "run_code",
        [TOOL_RUN_COMMAND] = "run_command",
        [TOOL_READ_OUTPUT] = "read_output",
        [TOOL_LIST_RUNS] = "list_runs",
        [TOOL_GET_FILE] = "get_file",
        [TOOL_DIFF] = "diff",
        [TOOL_APPLY] = "apply",
        [TOOL_LIST_PROCESSES] = "list_processes",
        [TOOL_LIST_PORTS] = "list_ports",
};

/* share/schema/hutch.result-1.json, as built into the binary: the
 * outputSchema of the run tools is the published schema itself. */
static const char result_schema_text[] =
#include "mcp/result-schema.inc"
        ;

#define COMMON_INPUT \
        "\"stdin\":{\"type\":\"string\",\"description\":\"text given to the program on standard input\"}," \
        "\"files\":{\"type\":\"object\",\"description\":\"files put in the working directory first: relative path -> text, or {content, encoding: utf-8|base64}\"," \
        "\"additionalProperties\":{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"object\",\"required\":[\"content\"],\"additionalProperties\":false," \
        "\"properties\":{\"content\":{\"type\":\"string\"},\"encoding\":{\"enum\":[\"utf-8\",\"base64\"]}}}]}}," \
        "\"timeout_s\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"wall-clock limit in seconds (default 30 or the server's ceiling, the lower; at most that ceiling)\"}," \
        "\"session\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,59}$\",\"description\":\"a persistent workspace: files kept between calls of the same session, and on a server with live sessions (the default) its running processes too (one live sandbox per session); files given with it are put into the session first\",\"maxLength\":60}," \
        "\"env\":{\"type\":\"object\",\"maxProperties\":256,\"propertyNames\":{\"pattern\":\"^[A-Za-z_][A-Za-z0-9_]{0,127}$\"},\"additionalProperties\":{\"type\":\"string\"},\"description\":\"environment variables of the program (name -> value)\"}," \
        "\"commit\":{\"enum\":[\"always\",\"success\",\"never\"],\"description\":\"with session: keep the run's changes in the session always (default: like a REPL, even when the program fails), only on success, or never; in a live session, what the sandbox's stop does with its files, as of this call\"}"

static const char *const input_text[_TOOL_MAX] = {
        [TOOL_RUN_CODE] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"language\",\"code\"],\"properties\":{"
                "\"language\":{\"type\":\"string\",\"description\":\"bash, c, node, perl, python or sh\"},"
                "\"code\":{\"type\":\"string\",\"description\":\"the program's source\"}," COMMON_INPUT "}}",
        [TOOL_RUN_COMMAND] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"argv\"],\"properties\":{"
                "\"argv\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"string\"},\"description\":\"the command and its arguments, no shell\"},"
                COMMON_INPUT "}}",
        [TOOL_READ_OUTPUT] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"run_id\",\"stream\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\",\"description\":\"a run id (or a unique prefix of 4 or more characters)\"},"
                "\"stream\":{\"enum\":[\"stdout\",\"stderr\"]},"
                "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"byte offset in the stream's text (default 0)\"},"
                "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65536,\"description\":\"bytes to return (default 16384)\"}}}",
        [TOOL_LIST_RUNS] = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
                "\"status\":{\"enum\":[\"running\",\"success\",\"failed\",\"signaled\",\"timeout\",\"cpu_timeout\",\"oom\",\"cancelled\","
                "\"setup_error\",\"not_found\",\"not_executable\",\"compile_error\",\"orphaned\",\"disk_limit\"]},"
                "\"label\":{\"type\":\"string\",\"pattern\":\"^[^=]+=\",\"description\":\"KEY=VALUE: only runs with this label\"},"
                "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":\"at most this many, newest first (default 20)\"}}}",
        [TOOL_GET_FILE] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"run_id\",\"path\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\"},"
                "\"path\":{\"type\":\"string\",\"description\":\"an artifact (output/NAME) or a workspace file the run added or changed\"},"
                "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"byte offset in the file (default 0): page a large file with next_offset\"},"
                "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576,\"description\":\"bytes to return (default and at most 1048576)\"}}}",
        [TOOL_DIFF] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"run_id\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\"},"
                "\"stat\":{\"type\":\"boolean\",\"description\":\"one line per changed path instead of the diff\"}}}",
        [TOOL_APPLY] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"run_id\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\"}}}",
        [TOOL_LIST_PROCESSES] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\"],\"properties\":{"
                "\"session\":{\"type\":\"string\",\"description\":\"the session whose live sandbox to look into\"}}}",
        [TOOL_LIST_PORTS] = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\"],\"properties\":{"
                "\"session\":{\"type\":\"string\",\"description\":\"the session whose live sandbox to look into\"}}}",
};

static const char *const output_text[_TOOL_MAX] = {
        [TOOL_READ_OUTPUT] = "{\"type\":\"object\",\"required\":[\"run_id\",\"stream\",\"offset\",\"next_offset\",\"total\",\"eof\",\"text\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\"},\"stream\":{\"enum\":[\"stdout\",\"stderr\"]},"
                "\"offset\":{\"type\":\"integer\",\"minimum\":0},\"next_offset\":{\"type\":\"integer\",\"minimum\":0},"
                "\"total\":{\"type\":\"integer\",\"minimum\":0},\"eof\":{\"type\":\"boolean\"},\"text\":{\"type\":\"string\"}}}",
        [TOOL_LIST_RUNS] = "{\"type\":\"object\",\"required\":[\"runs\"],\"properties\":{\"runs\":{\"type\":\"array\",\"items\":"
                "{\"type\":\"object\",\"required\":[\"schema\",\"id\",\"status\",\"exit_code\",\"argv\",\"started_at\",\"duration_ms\",\"labels\"],"
                "\"properties\":{\"schema\":{\"const\":\"hutch.result/1\"},\"id\":{\"type\":\"string\"},\"status\":{\"type\":\"string\"},"
                "\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
                "\"started_at\":{\"type\":[\"string\",\"null\"]},\"duration_ms\":{\"type\":[\"integer\",\"null\"]},"
                "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
                "\"lang\":{\"type\":[\"string\",\"null\"]},\"code_first_line\":{\"type\":\"string\"}}}}}}",
        [TOOL_GET_FILE] = "{\"type\":\"object\",\"required\":[\"run_id\",\"path\",\"kind\",\"size\",\"sha256\",\"mime\",\"encoding\",\"content\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
                "\"kind\":{\"enum\":[\"output\",\"added\",\"modified\"]},\"size\":{\"type\":\"integer\",\"minimum\":0},"
                "\"sha256\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{64}$\"},\"mime\":{\"type\":[\"string\",\"null\"]},"
                "\"encoding\":{\"enum\":[\"utf-8\",\"base64\"]},\"content\":{\"type\":\"string\"},"
                "\"offset\":{\"type\":\"integer\",\"minimum\":0},\"next_offset\":{\"type\":\"integer\",\"minimum\":0},"
                "\"requested_offset\":{\"type\":\"integer\",\"minimum\":0},\"eof\":{\"type\":\"boolean\"}}}",
        [TOOL_DIFF] = "{\"type\":\"object\",\"required\":[\"run_id\",\"text\",\"truncated\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}}}",
        [TOOL_APPLY] = "{\"type\":\"object\",\"required\":[\"run_id\",\"applied\",\"exit_code\",\"text\"],\"properties\":{"
                "\"run_id\":{\"type\":\"string\"},\"applied\":{\"type\":\"boolean\"},"
                "\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"text\":{\"type\":\"string\"}}}",
        [TOOL_LIST_PROCESSES] = "{\"type\":\"object\",\"required\":[\"sandbox\",\"running\",\"processes\"],\"properties\":{"
                "\"sandbox\":{\"type\":[\"string\",\"null\"]},\"running\":{\"type\":\"boolean\"},"
                "\"run_id\":{\"type\":\"string\"},"
                "\"processes\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"pid\",\"ppid\",\"state\",\"command\"],"
                "\"properties\":{\"pid\":{\"type\":\"integer\"},\"ppid\":{\"type\":\"integer\"},\"state\":{\"type\":\"string\"},"
                "\"command\":{\"type\":\"string\"}}}}}}",
        [TOOL_LIST_PORTS] = "{\"type\":\"object\",\"required\":[\"sandbox\",\"running\",\"ports\"],\"properties\":{"
                "\"sandbox\":{\"type\":[\"string\",\"null\"]},\"running\":{\"type\":\"boolean\"},"
                "\"ports\":{\"type\":\"array\"}}}",
};

static const char *const descriptions[_TOOL_MAX] = {
        [TOOL_RUN_CODE] = "Run a program in a fresh, isolated sandbox (no network unless the operator allows it), "
                "or with session in the session's live sandbox, and return its exit status and output. Every run is recorded; long output is cut in the "
                "middle and the rest can be paged with read_output.",
        [TOOL_RUN_COMMAND] = "Run a command (argv, no shell) in a fresh, isolated sandbox, or with session in "
                "the session's live sandbox (a background process it starts keeps running for the next call), "
                "and return its exit status and output. Every run is recorded; long output is cut in the middle and the rest can "
                "be paged with read_output.",
        [TOOL_READ_OUTPUT] = "Read part of a recorded run's stdout or stderr (sanitised text), for output the "
                "run's result left out.",
        [TOOL_LIST_RUNS] = "List recorded runs started through this server's tools, newest first.",
        [TOOL_GET_FILE] = "Get a file a recorded run left: an artifact it wrote under output/ or a workspace "
                "file it added or changed (text, or base64 for binary files; an image also as an image "
                "block). At most 1 MiB a call: page a larger file with offset and limit.",
        [TOOL_DIFF] = "Show what a recorded run changed in its workspace (the server's --workdir or a session): "
                "a unified diff of text files, one line for the rest; changes to protected paths "
                "(.git/hooks, .envrc, ...) first.",
        [TOOL_LIST_PROCESSES] = "List the processes running in a session's live sandbox (what earlier calls "
                "left running, such as a server started in the background): pid, parent, state, command line.",
        [TOOL_LIST_PORTS] = "List the ports a session's live sandbox publishes on the host's loopback "
                "(reachable by the user at 127.0.0.1:PORT).",
        [TOOL_APPLY] = "Apply a recorded run's changes to the server's working directory, all or nothing: "
                "refused when the directory changed under the run in a conflicting way, or when the run "
                "changes protected paths.",
};

enum mcp_tool mcp_tool_from_name(const char *name)
{
        for (size_t i = 0; i < _TOOL_MAX; i++)
                if (streq(name, names[i]))
                        return (enum mcp_tool)i;
        return _TOOL_INVALID;
}

static json_t *parse_const(const char *text)
{
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        if (!j) {
                /* the texts are ours: a typo here is a bug caught by the tests */
                fprintf(stderr, "hutch: mcp: built-in schema: %s (line %d)\n", e.text, e.line);
                abort();
        }
        return j;
}

json_t *mcp_tool_output_schema(enum mcp_tool t)
{
        static json_t *cache[_TOOL_MAX];
        if (!cache[t]) {
                if (t == TOOL_RUN_CODE || t == TOOL_RUN_COMMAND) {
                        json_t *s = parse_const(result_schema_text);
                        /* the document's own identity, not part of a tool's schema */
                        json_object_del(s, "$id");
                        cache[t] = s;
                } else
                        cache[t] = parse_const(output_text[t]);
        }
        return cache[t];
}

json_t *mcp_tools_json(uint64_t max_timeout_ms, bool allow_apply, bool live)
{
        json_t *a = json_array();
        for (size_t i = 0; i < _TOOL_MAX; i++) {
                _cleanup_free_ char *desc = NULL;
                if (i == TOOL_APPLY && !allow_apply)
                        continue;       /* applying stays the operator's unless allowed */
                if ((i == TOOL_LIST_PROCESSES || i == TOOL_LIST_PORTS) && !live)
                        continue;       /* no live sessions, nothing to look into */
                if (i == TOOL_RUN_CODE || i == TOOL_RUN_COMMAND)
                        desc = xasprintf("%s Time limit: timeout_s, default %gs, at most %gs.", descriptions[i],
                                         MIN(MCP_DEFAULT_TIMEOUT_MS, max_timeout_ms) / 1000.0,
                                         max_timeout_ms / 1000.0);
                json_t *t = json_pack("{s:s, s:s, s:o, s:O}", "name", names[i], "description",
                                      desc ? desc : descriptions[i], "inputSchema", parse_const(input_text[i]),
                                      "outputSchema", mcp_tool_output_schema(i));
                json_array_append_new(a, t);
        }
        return a;
}

/* A file entry as a model may give it: text, or {content, encoding}.
 * Never {host_path}: a model must not read the host through a run. */
static int check_file(const char *path, json_t *v, char **ret_error)
{
        if (json_is_string(v))
                return 0;
        if (json_is_object(v)) {
                const char *k;
                json_t *x;
                bool content = false;
                json_object_foreach(v, k, x) {
                        if (streq(k, "content") && json_is_string(x))
                                content = true;
                        else if (streq(k, "encoding") && json_is_string(x) &&
                                 (streq(json_string_value(x), "utf-8") || streq(json_string_value(x), "base64")))
                                ;
                        else {
                                *ret_error = xasprintf("files/%s: unexpected \"%s\" (give content and optionally "
                                                       "encoding utf-8 or base64)", path, k);
                                return -EINVAL;
                        }
                }
                if (content)
                        return 0;
        }
        *ret_error = xasprintf("files/%s: expected a string or {\"content\": ..., \"encoding\": \"utf-8\"|\"base64\"}", path);
        return -EINVAL;
}

static bool env_name_valid(const char *n)
{
        size_t len = strlen(n);
        if (len < 1 || len > 128 || (n[0] >= '0' && n[0] <= '9'))
                return false;
        for (; *n; n++)
                if (!(*n >= 'a' && *n <= 'z') && !(*n >= 'A' && *n <= 'Z') && !(*n >= '0' && *n <= '9') && *n != '_')
                        return false;
        return true;
}

bool mcp_scope_valid(const char *scope)
{
        size_t n = scope ? strlen(scope) : 0;
        if (n < 1 || n > MCP_SCOPE_MAX)
                return false;
        for (; *scope; scope++)
                if (!(*scope >= 'a' && *scope <= 'z') && !(*scope >= 'A' && *scope <= 'Z') &&
                    !(*scope >= '0' && *scope <= '9') && *scope != '_')
                        return false;
        return true;
}

char *mcp_session_name(const char *scope, const char *name, char **ret_error)
{
        bool dflt = !scope || streq(scope, MCP_SCOPE_DEFAULT);
        /* the hutch name must fit session_name_valid()'s 64 bytes */
        size_t max = dflt ? MCP_SESSION_NAME_MAX : 64 - strlen(MCP_SCOPED_SESSION_PREFIX) - strlen(scope) - 1;
        /* the published pattern, ^[A-Za-z0-9_-][A-Za-z0-9._-]{0,59}$:
         * session_name_valid() sees the prefix first, so a name of the
         * call's own starting with '.' ("..", ".hidden") is refused here */
        char *full = name && *name && *name != '.' && strlen(name) <= max
                ? (dflt ? xasprintf(MCP_SESSION_PREFIX "%s", name)
                        : xasprintf(MCP_SCOPED_SESSION_PREFIX "%s-%s", scope, name))
                : NULL;
        if (!full || !session_name_valid(full)) {
                free(full);
                *ret_error = xasprintf("session: expected a name of 1 to %zu letters, digits, '.', '_' or '-', "
                                       "not starting with '.'%s", max, dflt ? "" : " (in this server's scope)");
                return NULL;
        }
        return full;
}

/* (a message names where, briefly) */
#define NUL_PATH_MAX 512u
char *mcp_path_join(const char *path, const char *key)
{
        size_t n = strlen(key), cut = n > 64 ? mcp_utf8_floor(key, n, 64) : n;
        if (strlen(path) >= NUL_PATH_MAX)
                return xstrdup(path);
        return xasprintf("%s%s%.*s%s", path, *path ? "/" : "", (int)cut, key, cut < n ? "..." : "");
}

char *mcp_json_nul_path(const json_t *v, const char *path)
{
        const char *k;
        json_t *x;
        size_t i;

        if (json_is_string(v))
                return strlen(json_string_value(v)) != json_string_length(v) ? xstrdup(path) : NULL;
        if (json_is_object(v))
                json_object_foreach((json_t *)v, k, x) {
                        _cleanup_free_ char *p = mcp_path_join(path, k);
                        char *r = mcp_json_nul_path(x, p);
                        if (r)
                                return r;
                }
        else if (json_is_array(v))
                json_array_foreach(v, i, x) {
                        char idx[24];
                        snprintf(idx, sizeof(idx), "%zu", i);
                        _cleanup_free_ char *p = mcp_path_join(path, idx);
                        char *r = mcp_json_nul_path(x, p);
                        if (r)
                                return r;
                }
        return NULL;
}

char *mcp_args_nul_path(enum mcp_tool t, const json_t *args)
{
        bool run = t == TOOL_RUN_CODE || t == TOOL_RUN_COMMAND;
        const char *k, *p, *m;
        json_t *v, *f, *x;

        json_object_foreach((json_t *)args, k, v) {
                char *r = NULL;
                /* bytes hutch run passes whole (hutch.request/1 reads
                 * them with their length); a live session refuses them
                 * itself (live.c) */
                if (run && streq(k, "stdin"))
                        continue;
                if (run && streq(k, "files") && json_is_object(v)) {
                        json_object_foreach(v, p, f) {
                                if (!json_is_object(f))
                                        continue;       /* its content */
                                json_object_foreach(f, m, x) {
                                        if (streq(m, "content"))
                                                continue;
                                        _cleanup_free_ char *at = mcp_path_join(k, p), *at2 = mcp_path_join(at, m);
                                        if ((r = mcp_json_nul_path(x, at2)))
                                                return r;
                                }
                        }
                        continue;
                }
                /* every other string becomes a C string (an argv word, a
                 * name, a path): cut at its NUL it would be another */
                if ((r = mcp_json_nul_path(v, k)))
                        return r;
        }
        return NULL;
}

/* run_command's argv: a non-empty array of strings. Returns 0, or
 * -EINVAL with *ret_error set. */
static int check_argv(json_t *v, char **ret_error)
{
        size_t i;
        json_t *x;

        if (!json_is_array(v) || json_array_size(v) == 0) {
                *ret_error = xstrdup("argv: expected a non-empty array of strings");
                return -EINVAL;
        }
        json_array_foreach(v, i, x)
                if (!json_is_string(x)) {
                        *ret_error = xasprintf("argv/%zu: expected a string", i);
                        return -EINVAL;
                }
        return 0;
}

/* env: at most MCP_ENV_MAX variable names -> strings without NUL.
 * Returns 0, or -EINVAL with *ret_error set. */
static int check_env(json_t *v, char **ret_error)
{
        const char *name;
        json_t *x;

        if (!json_is_object(v) || json_object_size(v) > MCP_ENV_MAX) {
                *ret_error = xasprintf("env: expected an object of at most %u names -> strings", MCP_ENV_MAX);
                return -EINVAL;
        }
        json_object_foreach(v, name, x)
                if (!env_name_valid(name) || !json_is_string(x) ||
                    strlen(json_string_value(x)) != json_string_length(x)) {
                        *ret_error = xasprintf("env/%.64s: expected a variable name "
                                               "([A-Za-z_][A-Za-z0-9_]*) and a string without NUL", name);
                        return -EINVAL;
                }
        return 0;
}

int mcp_tool_request(enum mcp_tool t, json_t *args, const char *scope, uint64_t max_timeout_ms,
                     const json_t *limits, json_t *labels,
                     json_t **ret, char **ret_error)
{
        json_t *req = json_pack("{s:s}", "schema", "hutch.request/1");
        uint64_t timeout_ms = MIN(MCP_DEFAULT_TIMEOUT_MS, max_timeout_ms);
        bool have_lang = false, have_code = false, have_argv = false;
        const char *k;
        json_t *v;
        int r = -EINVAL;

        json_object_foreach(args, k, v) {
                if (t == TOOL_RUN_CODE && (streq(k, "language") || streq(k, "code"))) {
                        if (!json_is_string(v)) {
                                *ret_error = xasprintf("%s: expected a string", k);
                                goto out;
                        }
                        json_object_set(req, k, v);
                        *(streq(k, "code") ? &have_code : &have_lang) = true;
                } else if (t == TOOL_RUN_COMMAND && streq(k, "argv")) {
                        if (check_argv(v, ret_error) < 0)
                                goto out;
                        json_object_set(req, k, v);
                        have_argv = true;
                } else if (streq(k, "stdin")) {
                        if (!json_is_string(v)) {
                                *ret_error = xstrdup("stdin: expected a string");
                                goto out;
                        }
                        json_object_set(req, k, v);
                } else if (streq(k, "session")) {
                        /* a model's sessions live apart from the operator's
                         * and other scopes': it cannot name (and change)
                         * their workspaces */
                        char *full = mcp_session_name(scope, json_string_value(v), ret_error);
                        if (!full)
                                goto out;
                        json_object_set_new(req, k, json_string(full));
                        free(full);
                } else if (streq(k, "env")) {
                        /* the job's own environment, inside the sandbox:
                         * nothing of it reaches the host or hutch */
                        if (check_env(v, ret_error) < 0)
                                goto out;
                        json_object_set(req, k, v);
                } else if (streq(k, "commit")) {
                        const char *c = json_string_value(v);
                        if (!c || session_commit_from_string(c) < 0) {
                                *ret_error = xstrdup("commit: expected \"always\", \"success\" or \"never\"");
                                goto out;
                        }
                        json_object_set(req, k, v);
                } else if (streq(k, "files")) {
                        const char *p;
                        json_t *f;
                        if (!json_is_object(v)) {
                                *ret_error = xstrdup("files: expected an object: relative path -> content");
                                goto out;
                        }
                        json_object_foreach(v, p, f)
                                if (check_file(p, f, ret_error) < 0)
                                        goto out;
                        json_object_set(req, k, v);
                } else if (streq(k, "timeout_s")) {
                        double s = json_number_value(v);
                        if (!json_is_number(v) || !(s > 0) || !isfinite(s)) {
                                *ret_error = xstrdup("timeout_s: expected a number of seconds above 0");
                                goto out;
                        }
                        /* a model can lower the ceiling, never raise it */
                        double ms = ceil(s * 1000.0);
                        timeout_ms = ms >= (double)max_timeout_ms ? max_timeout_ms : (uint64_t)ms;
                } else {
                        *ret_error = xasprintf("unknown argument \"%s\"", k);
                        goto out;
                }
        }
        if (t == TOOL_RUN_CODE && !(have_lang && have_code)) {
                *ret_error = xasprintf("missing argument \"%s\"", have_lang ? "code" : "language");
                goto out;
        }
        if (t == TOOL_RUN_COMMAND && !have_argv) {
                *ret_error = xstrdup("missing argument \"argv\"");
                goto out;
        }
        /* the limits of the profile the run will use, each held under
         * the operator's ceiling (a language's profile may bring more) */
        const char *lang = json_string_value(json_object_get(args, "language"));
        json_t *base = json_object_get(limits, t == TOOL_RUN_CODE && lang && json_object_get(limits, lang)
                                       ? lang : "");
        json_t *lim = base ? json_deep_copy(base) : json_object();
        json_object_set_new(lim, "timeout_ms", json_integer((json_int_t)timeout_ms));
        json_object_set_new(req, "limits", lim);
        json_object_set(req, "labels", labels);
        /* a model's session keeps what each call did, failing or not:
         * "edit, then run the tests" must not lose the edit */
        if (json_object_get(req, "session") && !json_object_get(req, "commit"))
                json_object_set_new(req, "commit", json_string("always"));
        *ret = TAKE_PTR(req);
        r = 0;
out:
        json_decref(req);
        return r;
}
