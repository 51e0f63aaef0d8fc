/* format.h - a finished run as an MCP CallToolResult: one text block
 * for the model (a header line, then stdout and stderr cut head and
 * tail to about MCP_TEXT_BUDGET bytes with a marker saying how to page
 * the rest with read_output), structuredContent the hutch.result/1
 * object, isError unless the run succeeded.
 *
 * A program that fails is a result with isError, never a JSON-RPC
 * error; so is a run hutch could not start (a bad language, a session
 * in use): the model can read the message and correct its call.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "lib/util.h"

#define MCP_TEXT_BUDGET 16384

/* The CallToolResult of hutch.result/1 object run (borrowed). */
json_t *mcp_result_from_run(json_t *run);

/* The CallToolResult of what a `hutch run --json` child (or what: the
 * child or thread named in a message, "hutch exec", ...) printed
 * (out[0..len), overflow: it printed more than was kept) and how it
 * ended (wstatus from waitpid). A NUL byte in its strings shows as
 * MCP_NUL_SHOWN. */
json_t *mcp_result_from_child(const char *what, const char *out, size_t len, bool overflow, int wstatus);

/* What a NUL byte of a run's output (or any text of its result) shows
 * as in a tool's text: U+FFFD, as for invalid UTF-8. A C string can
 * hold neither a NUL nor what follows it, and a client may read its
 * text as one; hutch-mcp(1) says so. */
#define MCP_NUL_SHOWN "\xef\xbf\xbd"

/* s[0..len) with each NUL byte as MCP_NUL_SHOWN: a new string, its
 * length in *ret_len (may be NULL). */
char *mcp_text_without_nul(const char *s, size_t len, size_t *ret_len);

/* Every string in v (recursively) with its NUL bytes as MCP_NUL_SHOWN. */
void mcp_json_without_nul(json_t *v);

/* Put note (NULL: nothing) first in result's first text block, and in
 * its structuredContent's "notes". */
void mcp_result_note(json_t *result, const char *note);

/* Where an error result's stable code and retryable flag go in its
 * _meta: { "hutch/error": { "code": ..., "retryable": ... } }, the
 * codes of hutch.error/1 (hutch-json(7)). */
#define MCP_META_ERROR "hutch/error"

/* A CallToolResult with isError and one text block: a caller's mistake
 * (code bad_request, not retryable). */
json_t *mcp_result_error(const char *fmt, ...) _printf_(1, 2);
/* The same with another code (a static string) and retryable flag. */
json_t *mcp_result_error_code(const char *code, bool retryable, const char *fmt, ...) _printf_(3, 4);

/* What the program wrote on a stream, against the text the record kept. */
struct mcp_stream_size {
        uint64_t bytes;         /* stdout_bytes: all the program wrote */
        bool truncated;         /* the record kept only head and tail */
        uint64_t capture_bytes; /* each of them at most this (limits.capture_bytes) */
};

/* text[0..len) as at most about budget bytes: the whole text when it
 * fits, else its head and tail (never splitting a UTF-8 character)
 * around a marker saying the stream's real size (size, may be NULL),
 * what the record kept and what is gone for good, the bytes shown, and
 * the read_output call that pages the cut ones (run id, stream). A new
 * string. */
char *mcp_cut_text(const char *text, size_t len, size_t budget, const char *run_id, const char *stream,
                   const struct mcp_stream_size *size);

/* Byte index i moved back (or forward) to the start of a UTF-8
 * character of s[0..len). */
size_t mcp_utf8_floor(const char *s, size_t len, size_t i);
size_t mcp_utf8_ceil(const char *s, size_t len, size_t i);
