/* tools.h - the five tools `hutch mcp` offers: their definitions for
 * tools/list (name, description, inputSchema, outputSchema, in a fixed
 * order) and the checking of a call's arguments.
 *
 * run_code and run_command become a hutch.request/1 document built only
 * from the fields a model may set (never host paths, profiles, network
 * or environment), with the timeout held under the operator's ceiling
 * and the run's labels added.
 */
#pragma once

#include <stdint.h>
#include <jansson.h>

enum mcp_tool {
        TOOL_RUN_CODE,
        TOOL_RUN_COMMAND,
        TOOL_READ_OUTPUT,
        TOOL_LIST_RUNS,
        TOOL_GET_FILE,
        _TOOL_MAX,
        _TOOL_INVALID = -EINVAL,
};

/* The default wall-clock limit of a run: under the 60 s after which
 * common clients give up on a call. */
#define MCP_DEFAULT_TIMEOUT_MS 30000u

/* A call's session NAME is the hutch session "mcp-NAME". */
#define MCP_SESSION_PREFIX "mcp-"
#define MCP_SESSION_NAME_MAX 60u

/* name -> tool, or _TOOL_INVALID. */
enum mcp_tool mcp_tool_from_name(const char *name);

/* The tools array of tools/list: a new reference. max_timeout_ms goes
 * into the descriptions. */
json_t *mcp_tools_json(uint64_t max_timeout_ms);

/* The outputSchema of tool t (borrowed, parsed once). */
json_t *mcp_tool_output_schema(enum mcp_tool t);

/* Check the arguments of a run_code or run_command call and build its
 * request: 0 and *ret (a new object), or -EINVAL and *ret_error (one
 * line naming the argument, for the model to correct). labels is an
 * object of label -> value (borrowed); limits (mcp_config.limits, may
 * be NULL) gives the request's limits by language, "" for the rest, and
 * the timeout is the call's, at most max_timeout_ms. */
int mcp_tool_request(enum mcp_tool t, json_t *args, uint64_t max_timeout_ms, const json_t *limits,
                     json_t *labels,
                     json_t **ret, char **ret_error);
