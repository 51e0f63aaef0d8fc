/* history.h - the tools that read the run history: read_output,
 * list_runs, get_file. Each opens the store read-only for the one call
 * and answers a CallToolResult.
 *
 * They see only runs that carry the label mcp.client, that is runs
 * started through `hutch mcp`: a model must not read the output or the
 * files (or the argv, which may hold -e values) of the operator's own
 * runs through this server.
 */
#pragma once

#include <jansson.h>

#define MCP_PAGE_DEFAULT 16384
#define MCP_PAGE_MAX 65536
#define MCP_FILE_MAX (1u << 20)
#define MCP_LIST_DEFAULT 20
#define MCP_LIST_MAX 100

/* Each returns a new CallToolResult (isError with a message for bad
 * arguments or a run it cannot show). */
json_t *mcp_read_output(json_t *args);
json_t *mcp_list_runs(json_t *args);
json_t *mcp_get_file(json_t *args);
