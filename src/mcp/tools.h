/* tools.h - the tools `hutch mcp` offers: their definitions for
 * tools/list (name, description, inputSchema, outputSchema, in a fixed
 * order) and the checking of a call's arguments.
 *
 * run_code and run_command become a hutch.request/1 document built only
 * from the fields a model may set (never host paths, profiles, network
 * or environment), with the timeout held under the operator's ceiling
 * and the run's labels added.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

enum mcp_tool {
        TOOL_RUN_CODE,
        TOOL_RUN_COMMAND,
        TOOL_READ_OUTPUT,
        TOOL_LIST_RUNS,
        TOOL_GET_FILE,
        TOOL_DIFF,
        TOOL_APPLY,             /* listed and served only with --allow-apply */
        TOOL_LIST_PROCESSES,    /* listed and served only with live sessions */
        TOOL_LIST_PORTS,        /* likewise */
        _TOOL_MAX,
        _TOOL_INVALID = -EINVAL,
};

/* The default wall-clock limit of a run: under the 60 s after which
 * common clients give up on a call. */
#define MCP_DEFAULT_TIMEOUT_MS 30000u

/* A call's session NAME is the hutch session "mcp-NAME" in the default
 * scope, "mcs-SCOPE-NAME" in another: the scope's sessions are apart
 * from the operator's and from every other scope's (a scope name has no
 * '-', so the first '-' after "mcs-" ends it and no two (scope, name)
 * pairs give one session). A hutch session name is at most 64 bytes. */
#define MCP_SESSION_PREFIX "mcp-"
#define MCP_SCOPED_SESSION_PREFIX "mcs-"
#define MCP_SESSION_NAME_MAX 60u
/* the most variables a call's env argument may set */
#define MCP_ENV_MAX 256u

/* The scope of a server started without --scope. Every run of a server
 * is labelled mcp.scope=SCOPE, and its history tools see only the runs
 * of its own scope. */
#define MCP_SCOPE_DEFAULT "default"
#define MCP_SCOPE_MAX 16u
/* A scope name: 1-16 letters, digits or '_'. */
bool mcp_scope_valid(const char *scope);
/* The hutch session of a call's session name in scope (a new string),
 * or NULL with *ret_error when it is not a valid name there. */
char *mcp_session_name(const char *scope, const char *name, char **ret_error);

/* path/key (key alone when path is ""): the key cut to 64 bytes on a
 * character, the path grown no further past 512 bytes. A new string. */
char *mcp_path_join(const char *path, const char *key);
/* The path (a/b/0, as the argument errors name a place) of the first
 * string in v holding a NUL byte, v itself at path: a new string, or
 * NULL when none does. */
char *mcp_json_nul_path(const json_t *v, const char *path);
/* The same for tool t's arguments, but for the strings that may hold a
 * NUL: run_code's and run_command's stdin and files contents, which
 * hutch run takes as bytes. */
char *mcp_args_nul_path(enum mcp_tool t, const json_t *args);

/* name -> tool, or _TOOL_INVALID. */
enum mcp_tool mcp_tool_from_name(const char *name);

/* The tools array of tools/list: a new reference. max_timeout_ms goes
 * into the descriptions. */
json_t *mcp_tools_json(uint64_t max_timeout_ms, bool allow_apply, bool live);

/* The outputSchema of tool t (borrowed, parsed once). */
json_t *mcp_tool_output_schema(enum mcp_tool t);

/* Check the arguments of a run_code or run_command call and build its
 * request: 0 and *ret (a new object), or -EINVAL and *ret_error (one
 * line naming the argument, for the model to correct). labels is an
 * object of label -> value (borrowed); limits (mcp_config.limits, may
 * be NULL) gives the request's limits by language, "" for the rest, and
 * the timeout is the call's, at most max_timeout_ms. */
int mcp_tool_request(enum mcp_tool t, json_t *args, const char *scope, uint64_t max_timeout_ms,
                     const json_t *limits, json_t *labels,
                     json_t **ret, char **ret_error);
