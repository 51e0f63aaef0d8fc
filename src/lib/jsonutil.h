/* jsonutil.h - small helpers the JSON readers share (requests, imported
 * records): how a value's type is named in an error, and the RFC 6901
 * pointer an error names. */
#pragma once

#include <jansson.h>

/* "an object", "a string", ... "null": for "expected X, got Y" errors */
const char *json_type_name(const json_t *j);

/* base + "/" + token, with '~' and '/' in token escaped as RFC 6901
 * says ("~0", "~1"); base is "" for the document's root. Never NULL. */
char *json_pointer_join(const char *base, const char *token);
