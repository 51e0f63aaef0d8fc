/* jsonutil.h - small helpers the JSON readers share (requests, imported
 * records, reports): how a value's type is named in an error, the RFC
 * 6901 pointer an error names, and text that may be anybody's. */
#pragma once

#include <jansson.h>

/* "an object", "a string", ... "null": for "expected X, got Y" errors */
const char *json_type_name(const json_t *j);

/* base + "/" + token, with '~' and '/' in token escaped as RFC 6901
 * says ("~0", "~1"); base is "" for the document's root. Never NULL. */
char *json_pointer_join(const char *base, const char *token);

/* A JSON string for s, NULL -> null. Invalid UTF-8 (a job's, a
 * caller's environment) is repaired rather than refused: json_string()
 * alone returns NULL there, and json_object_set_new() then drops the
 * key without a word. */
json_t *json_text(const char *s);
