/* jsonutil.c - see jsonutil.h */
#include "config.h"

#include <string.h>

#include "lib/jsonutil.h"
#include "lib/sanitize.h"
#include "lib/util.h"

const char *json_type_name(const json_t *j)
{
        switch (json_typeof(j)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a number";
        case JSON_TRUE:
        case JSON_FALSE: return "a boolean";
        default: return "null";
        }
}

char *json_pointer_join(const char *base, const char *token)
{
        size_t n = strlen(base);
        char *out = xmalloc(n + 2 * strlen(token) + 2);

        memcpy(out, base, n);
        out[n++] = '/';
        for (const char *c = token; *c; c++) {
                if (*c == '~' || *c == '/') {
                        out[n++] = '~';
                        out[n++] = *c == '~' ? '0' : '1';
                } else
                        out[n++] = *c;
        }
        out[n] = '\0';
        return out;
}

json_t *json_text(const char *s)
{
        if (!s)
                return json_null();
        json_t *j = json_string(s);
        if (!j) {
                _cleanup_free_ char *clean = sanitize_text(s, strlen(s), NULL);
                j = json_string(clean);
        }
        return j ? j : json_null();
}
