/* iomax.c - the io_max limit's items, checked and turned into io.max
 * lines (see iomax.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "config/iomax.h"
#include "lib/util.h"

static bool all_digits(const char *s, size_t n)
{
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char)s[i]))
                        return false;
        return true;
}

/* Parse one item; with resolve, also turn a device path into MAJ:MIN
 * and the values into bytes, appending the io.max line to *out. */
static const char *io_max_item(const char *item, bool resolve, char **out, int *ret_errno)
{
        static const char expect[] =
                "\"DEVICE KEY=VALUE...\": DEVICE a whole disk as MAJ:MIN or /dev/NAME, KEY rbps or wbps "
                "(bytes/s, K/M/G) or riops or wiops (ops/s), VALUE a number or max";
        _cleanup_free_ char *copy = xstrdup(item), *line = NULL;
        char *save = NULL, *dev = strtok_r(copy, " \t", &save);
        int n_keys = 0;

        *ret_errno = 0;
        if (!dev)
                return expect;
        const char *colon = strchr(dev, ':');
        if (dev[0] == '/') {
                if (resolve) {
                        struct stat st;
                        if (stat(dev, &st) < 0) {
                                *ret_errno = errno;
                                return "an existing block device";
                        }
                        if (!S_ISBLK(st.st_mode)) {
                                *ret_errno = ENOTBLK;
                                return "a block device";
                        }
                        line = xasprintf("%u:%u", major(st.st_rdev), minor(st.st_rdev));
                }
        } else if (!colon || !all_digits(dev, (size_t)(colon - dev)) || !all_digits(colon + 1, strlen(colon + 1)))
                return expect;
        else if (resolve)
                line = xstrdup(dev);

        for (char *kv = strtok_r(NULL, " \t", &save); kv; kv = strtok_r(NULL, " \t", &save)) {
                char *eq = strchr(kv, '=');
                if (!eq)
                        return expect;
                *eq = '\0';
                const char *key = kv, *val = eq + 1;
                bool bps = streq(key, "rbps") || streq(key, "wbps");
                if (!bps && !streq(key, "riops") && !streq(key, "wiops"))
                        return expect;
                uint64_t v = 0;
                if (!streq(val, "max")) {
                        if (bps ? parse_size(val, &v) < 0 : !all_digits(val, strlen(val)))
                                return expect;
                        if (!bps) {
                                errno = 0;
                                v = strtoull(val, NULL, 10);
                                if (errno)
                                        return expect;
                        }
                        if (v == 0)
                                return "a value above 0 (or max)";
                }
                n_keys++;
                if (resolve) {
                        char *l = streq(val, "max") ? xasprintf("%s %s=max", line, key)
                                                    : xasprintf("%s %s=%llu", line, key, (unsigned long long)v);
                        free(line);
                        line = l;
                }
        }
        if (n_keys == 0)
                return expect;
        if (resolve) {
                char *all = *out ? xasprintf("%s\n%s", *out, line) : xstrdup(line);
                free(*out);
                *out = all;
        }
        return NULL;
}

const char *iomax_check(const char *item)
{
        int e;
        return io_max_item(item, false, NULL, &e);
}

int iomax_lines(char *const *items, char **ret_lines, char **ret_error)
{
        char *lines = NULL;
        for (char *const *i = items; i && *i; i++) {
                int e;
                const char *bad = io_max_item(*i, true, &lines, &e);
                if (bad) {
                        *ret_error = e ? xasprintf("io_max \"%s\": %s: %s", *i, bad, strerror(e))
                                       : xasprintf("io_max \"%s\": expected %s", *i, bad);
                        free(lines);
                        return e ? -e : -EINVAL;
                }
        }
        *ret_lines = lines;
        return 0;
}
