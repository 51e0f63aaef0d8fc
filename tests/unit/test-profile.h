/* test-profile.h - helpers both profile test programs use: where a key's
 * value came from ("file:line", "default", "cli") and list membership. */
#pragma once

#include <stdbool.h>

#include "config/run-config.h"
#include "lib/util.h"

/* Where key came from, as "file:line", "default" or "cli". */
static inline char *from(const struct run_config *cfg, const char *key)
{
        const struct key_origin *o = run_config_origin(cfg, key);
        if (!o)
                return xstrdup("unset");
        if (o->file)
                return xasprintf("%s:%u", o->file, o->line);
        return xstrdup(origin_to_string(o->origin));
}

#define assert_from(cfg, key, expected)                                 \
        do {                                                            \
                _cleanup_free_ char *_f = from(cfg, key);               \
                assert_string_equal(_f, expected);                      \
        } while (0)

static inline bool strv_has(char *const *v, const char *s)
{
        for (; v && *v; v++)
                if (streq(*v, s))
                        return true;
        return false;
}
