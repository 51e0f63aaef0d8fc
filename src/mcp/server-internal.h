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

struct lang_table;

/* A session's live sandbox (live-sessions.c, mcp/live.h). */
enum live_state {
        LIVE_STARTING,          /* `hutch sandbox start` runs (helper) */
        LIVE_UP,                /* calls exec into it */
        LIVE_STOPPING,          /* `hutch sandbox stop` or `hutch kill` runs (helper) */
};

struct mcp_live {
        struct mcp_live *next;
        char *session;          /* the hutch session */
        char *name;             /* the sandbox's: "mcp-<server session>-<n>" */
        enum live_state state;
        struct mcp_call *helper; /* the start or stop child, or NULL */
        bool commit;            /* what its stop does: commit (stop) or throw away (kill) */
        uint64_t idle_at_ms;    /* stop it then (monotonic); 0 while a call runs */
        unsigned seq;           /* calls it served */
};

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
        struct mcp_live *lives;         /* the sessions' live sandboxes */
        unsigned live_count;            /* sandboxes started: names them */
        struct lang_table *langs;       /* languages.ini, for run_code in a live
                                         * session (NULL: none readable) */
        int keeper_fd;                  /* the keeper's pipe (mcp/live.h), or -1 */
};

/* Live sessions (live-sessions.c). */
/* Start a queued session call c in its live sandbox: starts the
 * sandbox first when it has none (c stays queued until it is up). 1:
 * c runs; 0: c waits; -1: c was answered (an error) and is to be dropped. */
int live_dispatch(struct mcp_server *s, struct mcp_call *c, uint64_t now_ms);
/* With live sessions, a call of session (the hutch session's name)
 * that would start a sandbox while max_sessions are up (starting, up or
 * stopping): its error result (admission_full, retryable), naming the
 * cap, the live sessions and the idle timeout that frees one; NULL when
 * the session has a sandbox or there is room. */
json_t *live_cap_refusal(struct mcp_server *s, const char *session);
/* A live call (CALL_LIVE, CALL_PS) finished with result (stolen; may be
 * NULL for a cancelled call): label its run, say in c->note what a live
 * call is, set when its sandbox goes idle and what its stop does.
 * Returns the result to send (a list_processes answer for CALL_PS). */
json_t *live_call_finished(struct mcp_server *s, struct mcp_call *c, json_t *result, uint64_t now_ms);
/* Reap: pid was a live sandbox's helper. Returns whether it was. */
bool live_reaped(struct mcp_server *s, pid_t pid, int wstatus, uint64_t now_ms);
/* Stop the sandboxes that are idle (or all once closing and no call is
 * left); returns the ms to the next idle stop, or -1. */
int live_timers(struct mcp_server *s, uint64_t now_ms);
/* The tools list_processes (NULL: a CALL_PS was queued, answered when
 * it ends) and list_ports: the result to send now. */
json_t *live_list_processes(struct mcp_server *s, json_t *id, bool modern, json_t *args, uint64_t now_ms);
json_t *live_list_ports(struct mcp_server *s, json_t *args);
/* Drop every entry (at exit, after the loop). */
void live_free_all(struct mcp_server *s);

/* Handle one line from the client. */
void mcp_handle_line(struct mcp_server *s, const char *line, uint64_t now_ms);
/* Answer a line longer than MCP_LINE_MAX. */
void mcp_handle_too_long(struct mcp_server *s);
/* Send the response to a finished call (not for a cancelled one). */
void mcp_send_call_result(struct mcp_server *s, struct mcp_call *c, json_t *result);
/* Send a progress notification for a queued or running call. */
void mcp_send_progress(struct mcp_server *s, struct mcp_call *c, uint64_t now_ms, size_t ahead,
                       bool session_busy);
