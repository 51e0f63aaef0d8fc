/* history.h - the tools that read the run history: read_output,
 * list_runs, get_file. Each opens the store read-only for the one call
 * and answers a CallToolResult.
 *
 * They see only runs that carry the label mcp.client, that is runs
 * started through `hutch mcp`, of the server's own scope (mcp.scope): a
 * model must not read the output or the files (or the argv, which may
 * hold -e values) of the operator's own runs, or of another
 * conversation's, through this server.
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
/* scope: the server's (NULL: MCP_SCOPE_DEFAULT); a tool sees only the
 * runs labelled mcp.scope=scope (in the default scope also the runs
 * from before scopes, with mcp.client and no mcp.scope). */
json_t *mcp_read_output(json_t *args, const char *scope);
json_t *mcp_list_runs(json_t *args, const char *scope);
json_t *mcp_get_file(json_t *args, const char *scope);

/* Resolve a run_id argument (a prefix of 4 or more characters is fine)
 * among the runs of scope: NULL and ret_id the full id, and *ret_workdir
 * (may be NULL) the host --workdir it ran on (a new string, or NULL);
 * else a tool error. */
json_t *mcp_resolve_run(json_t *idv, const char *scope, char *ret_id, char **ret_workdir);
