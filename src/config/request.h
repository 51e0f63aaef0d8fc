/* request.h - a whole run as one JSON document (`hutch run --request`,
 * schema hutch.request/1; share/schema/hutch.request-1.json and
 * hutch-json(7) describe it).
 *
 * The reader checks the document completely before anything runs and
 * turns it into what the command line would have given: profile key
 * overrides (the same setters as --timeout, -e, ...), the job's argv or
 * language and code, labels, secrets, an idempotency key. A field it does
 * not know, a wrong type or a bad value is an error naming the field by
 * its JSON pointer ("/limits/timeout_ms").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#define REQUEST_SCHEMA "hutch.request/1"
/* the largest request read (inline files included) */
#define REQUEST_MAX_BYTES (64u << 20)

/* A file the request puts in the workspace before the job starts. */
struct request_file {
        char *path;             /* relative, checked: no "..", no leading '/' */
        char *data;             /* inline content (decoded), or NULL */
        size_t len;
        char *host_path;        /* or a host file to copy, or NULL */
};

struct request {
        char *language, *code;  /* both or neither */
        char **argv;            /* the command, or the program's arguments with language */
        char *profile, *session, *workdir, *idempotency_key;
        char *commit;           /* "success", "always", "never" (checked), or NULL */
        char **overrides;       /* profile key, value, key, value, ... (limits, env, network) */
        char **labels;          /* "KEY=VALUE" */
        char **secret_specs;    /* --secret forms: "NAME" or "NAME=@FILE" */
        char **secret_values;   /* inline secrets, resolved: "NAME=VALUE" */
        char **private_env;     /* private_env: "NAME=VALUE" for the job's environment
                                 * only, never recorded (hutch mcp's fresh calls) */
        char *stdin_data;       /* stdin, or NULL */
        size_t stdin_len;
        struct request_file *files;
        size_t n_files;
};

/* Parse and check text[0..len) into *ret (zeroed first; free with
 * request_done() whatever the result). 0, or -EINVAL with *ret_pointer
 * (the JSON pointer of the bad field, "" for the document) and
 * *ret_error (one line, "request: /limits/memory_mb: expected ...")
 * set; -EPROTONOSUPPORT for a schema version this hutch does not read. */
int request_parse(const char *text, size_t len, struct request *ret, char **ret_pointer,
                  char **ret_error);

/* Read a request from path ("-": standard input), at most
 * REQUEST_MAX_BYTES, and parse it as request_parse() does. */
int request_read(const char *path, struct request *ret, char **ret_pointer, char **ret_error);

/* Free what r owns and zero it. */
void request_done(struct request *r);
