/* server-internal.h - the state `hutch mcp`'s loop (server.c) and its
 * message handling (protocol.c) share. */
#pragma once

#include <stdbool.h>
#include <jansson.h>

#include "mcp/calls.h"
#include "mcp/server.h"
#include "mcp/wire.h"
#include "record/ulid.h"

#define MCP_PROGRESS_MS 5000u
/* calls waiting for a run slot at most; more are refused (a tool error) */
#define MCP_QUEUE_MAX 256u
/* after a cancel, how long the child hutch run gets to record the run
 * before it is killed itself (its own grace then SIGKILL of the sandbox
 * take a few seconds at most) */
#define MCP_CANCEL_KILL_MS 30000u

struct mcp_server {
        const struct mcp_config *cfg;
        int exe_fd;                     /* our own binary, for the children */
        struct wire_in in;
        struct wire_out out;
        struct mcp_call *calls;         /* queued and running, in arrival order */
        char *legacy_version;           /* negotiated by initialize, or NULL */
        char *legacy_client;            /* its clientInfo.name */
        char session[ULID_LEN + 1];     /* this server's MCP session: the mcp.session label */
        bool closing;                   /* input ended: cancel all, exit once reaped */
};

/* Handle one line from the client. */
void mcp_handle_line(struct mcp_server *s, const char *line, uint64_t now_ms);
/* Answer a line longer than MCP_LINE_MAX. */
void mcp_handle_too_long(struct mcp_server *s);
/* Send the response to a finished call (not for a cancelled one). */
void mcp_send_call_result(struct mcp_server *s, struct mcp_call *c, json_t *result);
/* Send a progress notification for a queued or running call. */
void mcp_send_progress(struct mcp_server *s, struct mcp_call *c, uint64_t now_ms, size_t ahead,
                       bool session_busy);
