/* cli/json-error.c - the hutch.error/1 object: what a machine caller
 * (--json, --request, --events) reads on stdout when hutch could not
 * even start a run, instead of a prose line it would have to parse.
 * One small function, so that every verb prints the same shape
 * (share/schema/hutch.error-1.json), with the stable code and the
 * retryable flag hutch-json(7) documents. */
#include "config.h"

#include <jansson.h>

#include "cli/cli.h"
#include "lib/errcode.h"
#include "lib/log.h"
#include "lib/util.h"

void cli_error_code(const char *code)
{
        log_set_error_code(code);
}

/* The code of an error kind, unless a verb chose one. */
static const char *code_of(const char *error)
{
        static const char *const kinds[][2] = {
                { "request", "bad_request" },  { "usage", "usage" },         { "busy", "idempotency_in_flight" },
                { "timeout", "wait_timeout" }, { "setup", "setup_refused" }, { "damaged", "damaged" },
                { "store", "store_unusable" }, { "not_found", "not_found" },
        };
        if (log_error_code())
                return log_error_code();
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (streq(kinds[i][0], error))
                        return kinds[i][1];
        return "failed";
}

char *cli_error_json(const char *error, const char *message, const char *pointer, int exit_code)
{
        json_t *o = json_object();
        const char *code = code_of(error);
        char *text;

        json_object_set_new(o, "schema", json_string("hutch.error/1"));
        json_object_set_new(o, "error", json_string(error));
        json_object_set_new(o, "code", json_string(code));
        json_object_set_new(o, "retryable", json_boolean(errcode_retryable(code)));
        /* the message may quote the caller's bytes: repair, never drop */
        json_t *m = json_string(message ? message : "");
        json_object_set_new(o, "message", m ? m : json_string("(message not valid UTF-8)"));
        if (pointer) {
                json_t *p = json_string(pointer);
                json_object_set_new(o, "pointer", p ? p : json_string(""));
        }
        json_object_set_new(o, "exit_code", json_integer(exit_code));
        text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        return text ? text : xstrdup("{\"schema\":\"hutch.error/1\",\"error\":\"internal\",\"code\":\"failed\","
                                     "\"retryable\":false,\"message\":\"\",\"exit_code\":125}");
}

void cli_print_error_json(const char *error, const char *message, const char *pointer, int exit_code)
{
        _cleanup_free_ char *text = cli_error_json(error, message, pointer, exit_code);
        printf("%s\n", text);
}
