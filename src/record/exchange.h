/* exchange.h - one history from many stores (DESIGN §9): runs written
 * out as JSON lines of hutch.result/1 (`hutch export`) and merged into
 * another store (`hutch import`), and where each run came from.
 *
 * Every run has a node: the host it ran on. A run recorded by this
 * store's own hutch ran here (its node is this host's name, looked up
 * when asked); an imported run keeps the node its record named, in the
 * run_origin table (schema version 10), with the time it was imported.
 *
 * Import is idempotent by run id: a record whose run is already stored
 * and says the same thing changes nothing; one that says something else
 * is a conflict and is refused. Import input is hostile (a file from
 * another machine): exchange_parse_record() checks every field, bounds
 * every size and never trusts a value that names this host's state (a
 * supervisor pid, an idempotency key).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record/store.h"

/* The longest line (one record) import reads. A record carries at most
 * two streams' head and tail and a --lang run's code: far less. */
#define EXCHANGE_MAX_LINE (64u << 20)
/* The longest node name: a host name (RFC 1035 limits a whole name). */
#define EXCHANGE_MAX_NODE 255

/* This host's name (gethostname(), at most EXCHANGE_MAX_NODE bytes) into
 * buf; "localhost" when it has none. Returns buf. */
const char *exchange_local_node(char *buf, size_t len);

/* Whether name is a node name import accepts: 1-255 characters of
 * letters, digits, '.', '-' and '_'. */
bool exchange_node_valid(const char *name);

/* A run as import understands it: the record, its labels ("KEY=VALUE",
 * NULL-terminated, may be NULL) and its node. */
struct exchange_record {
        struct run_record *rec;
        char **labels;
        char *node;
        bool with_output;       /* the line carried stdout and stderr */
};
void exchange_record_done(struct exchange_record *x);

/* The export form of a run: run_record_to_json(rec, with_output) plus
 * "labels" (an object), "node" and "imported" (a boolean). labels is
 * borrowed (NULL: none). Returns a new reference; never NULL. */
json_t *exchange_json(const struct run_record *rec, bool with_output, json_t *labels,
                      const char *node, bool imported);

/* The same for a stored run, with its labels and origin read from s;
 * local_node names this host. NULL on a store error (see store_error()). */
json_t *exchange_store_json(struct store *s, const struct run_record *rec, bool with_output,
                            const char *local_node);

/* Parse one line of export text[0..len) into *ret (zeroed first; free
 * with exchange_record_done() whatever the result). 0, or -EINVAL with
 * *ret_field (the JSON pointer of the bad field, "" for the line) and
 * *ret_error (one line: what is wrong with it) set. A running run is
 * refused (it has no outcome yet), as is a record without a node. */
int exchange_parse_record(const char *text, size_t len, struct exchange_record *ret,
                          char **ret_field, char **ret_error);

/* The node and import time (ms since the epoch) of an imported run: 0,
 * or -ENOENT when run_id was recorded here (or is not stored). Either
 * out-parameter may be NULL. */
int store_origin_get(struct store *s, const char *run_id, char **ret_node, uint64_t *ret_imported_at);

/* Sets "node" and "imported" of a run's JSON object o from s. */
void store_origin_json(struct store *s, const char *run_id, const char *local_node, json_t *o);

/* Import: store_import_begin() takes the write lock and opens the one
 * transaction every record of an import goes into; store_import_add()
 * adds one (1: added, 0: already stored and the same, -EEXIST: stored
 * and different, with the first differing field's name in
 * *ret_conflict, to free; another -errno: the store failed);
 * store_import_commit() makes them all visible at once, and
 * store_import_abort() drops every one of them, so a failed import
 * leaves the store as it was. */
int store_import_begin(struct store *s);
/* What store_import_add() would do with x, without writing: 1 new, 0
 * stored and the same, -EEXIST (with *ret_conflict) or -errno. Needs no
 * transaction: an import checks its whole input this way first, so a
 * bad or conflicting input never takes the write lock, and a repeated
 * one takes it for nothing. */
int store_import_check(struct store *s, const struct exchange_record *x, const char *local_node,
                       char **ret_conflict);
int store_import_add(struct store *s, const struct exchange_record *x, const char *local_node,
                     uint64_t now_ms, char **ret_conflict);
int store_import_commit(struct store *s);
void store_import_abort(struct store *s);
