/* repo.h - the repository tools of `hutch mcp`: diff (a run's change
 * set, always offered) and apply (only with --allow-apply).
 *
 * Each resolves the run among the server's own scope first (a model
 * names only its own runs), then runs `hutch diff` or `hutch apply` as a
 * short child, so the tools say and refuse exactly what the CLI does:
 * apply is all or nothing, refuses a directory that changed under the
 * run in a conflicting way and changes to protected paths (.git/hooks,
 * .envrc, ...), and is only done to the server's own --workdir.
 */
#pragma once

#include <jansson.h>

#include "mcp/server.h"

/* the most of a diff's text returned; the rest is cut with a marker */
#define MCP_DIFF_MAX (256u << 10)

/* A new CallToolResult. exe_fd: the server's binary. */
json_t *mcp_diff(json_t *args, const struct mcp_config *cfg, int exe_fd);
json_t *mcp_apply(json_t *args, const struct mcp_config *cfg, int exe_fd);
