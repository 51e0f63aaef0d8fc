/* ref.c - image names: "NAME[:TAG]" checked and made canonical. Apart
 * from the store so that the profile parser (config/) can check a root =
 * image:NAME without the rest of the image module.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "image/image.h"
#include "lib/util.h"

static bool name_char(char c, bool tag)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-' || (!tag && c == '/');
}

char *image_ref_normalize(const char *s)
{
        if (!s || !*s)
                return NULL;
        const char *colon = strrchr(s, ':');
        if (colon && strchr(colon, '/'))
                colon = NULL;   /* a registry's port, not a tag */
        size_t nlen = colon ? (size_t)(colon - s) : strlen(s);
        const char *tag = colon ? colon + 1 : IMAGE_DEFAULT_TAG;
        if (nlen == 0 || nlen > 200 || !*tag || strlen(tag) > 128 || !name_char(s[0], true) || s[0] == '.' ||
            s[0] == '-')
                return NULL;
        for (size_t i = 0; i < nlen; i++)
                if (!name_char(s[i], false) || (s[i] == '/' && (s[i + 1] == '/' || i + 1 == nlen)))
                        return NULL;
        for (const char *t = tag; *t; t++)
                if (!name_char(*t, true))
                        return NULL;
        char *out = xasprintf("%.*s:%s", (int)nlen, s, tag);
        return strstr(out, "..") ? (free(out), NULL) : out;
}
