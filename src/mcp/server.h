/* server.h - `hutch mcp`: a Model Context Protocol server on stdin and
 * stdout whose run tools are recorded hutch runs (hutch-mcp(1)).
 *
 * One loop polls the client's stdin and stdout, a signalfd and every
 * child's pipes; nothing in it waits for a run or for a slow client.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct run_ui;

struct mcp_config {
        uint64_t max_timeout_ms;        /* the ceiling of a run's timeout */
        unsigned max_concurrent;        /* runs at once; more queue */
        char **run_args;                /* added to each `hutch run`: the operator's
                                         * profile and network (owned by the caller) */
        const char *workdir;            /* --workdir: the host dir every call's run sees
                                         * at /workspace (absolute), or NULL */
        bool allow_apply;               /* --allow-apply: offer the apply tool */
        const char *scope;              /* --scope: what this server's tools see and
                                         * change (mcp_scope_valid(); MCP_SCOPE_DEFAULT) */
        bool live;                      /* sessions are live sandboxes (--sessions live) */
        unsigned max_sessions;          /* live sandboxes at once (--max-sessions); a call
                                         * that would start one more is refused */
        uint64_t idle_ms;
        bool kernels;                   /* unless --no-kernels: run_code python|node in a live
                                         * session's persistent interpreter */
        char **publish;                 /* --publish [HOST_PORT:]PORT of each session's
                                         * sandbox (owned by the caller), or NULL */               /* a session's sandbox stops after this long
                                         * without a call (--idle-timeout) */
        const struct run_ui *ui;        /* how a run is answered (its result object):
                                         * with it, kernel calls run and are recorded
                                         * in the server; NULL: every call is a child */
        json_t *limits;                 /* language ("" for the rest) -> the request
                                         * "limits" its runs get, each at most the
                                         * operator's ceiling (owned by the caller) */
};

/* Serve on stdin/stdout until end of input (or SIGTERM, SIGINT,
 * SIGHUP): then cancel the runs in flight, wait for them to be
 * recorded, and return 0; -errno when the loop itself fails. */
int mcp_serve(const struct mcp_config *cfg);
