/* cli/usage.c - the one wording of a bad command line, shared by every
 * verb: "hutch: VERB: unknown option '--jsn' (did you mean --json?; see
 * hutch VERB --help)", one line, exit 2. getopt's own messages are off
 * (main.c sets opterr = 0): they name the verb as argv[0] ("ls: ..."),
 * with no "hutch" and no suggestion. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"

/* Edit distance (insert, delete, substitute) between a and b, names of
 * at most 63 bytes (longer ones count as far apart). */
static size_t distance(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b), row[64];
        if (la > 63 || lb > 63)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t diag = row[0];
                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t up = row[j];
                        size_t best = diag + (a[i - 1] != b[j - 1]);
                        if (up + 1 < best)
                                best = up + 1;
                        if (row[j - 1] + 1 < best)
                                best = row[j - 1] + 1;
                        row[j] = best;
                        diag = up;
                }
        }
        return row[lb];
}

const char *cli_nearest_option(const struct option *opts, const char *name)
{
        const char *best = NULL;
        size_t best_d = SIZE_MAX, len = strlen(name);
        for (const struct option *o = opts; o && o->name; o++) {
                size_t d = distance(name, o->name);
                /* a prefix of a real option is a likely typo too */
                if (strncmp(o->name, name, len) == 0 && len >= 2)
                        d = d < 1 ? d : 1;
                if (d < best_d) {
                        best_d = d;
                        best = o->name;
                }
        }
        /* farther than a third of the word is a different word */
        return best && best_d <= (len > 6 ? len / 3 : 2) ? best : NULL;
}

int cli_usage_error(const char *verb, char **argv, const struct option *opts)
{
        const char *arg = optind > 0 ? argv[optind - 1] : "";

        if (strncmp(arg, "--", 2) == 0) {
                _cleanup_free_ char *name = xstrdup(arg + 2);
                bool has_value = strchr(name, '=') != NULL;
                name[strcspn(name, "=")] = '\0';
                for (const struct option *o = opts; o && o->name; o++) {
                        if (!streq(o->name, name))
                                continue;
                        if (o->has_arg == required_argument && !has_value)
                                log_error("%s: option '--%s' needs a value (see hutch %s --help)", verb, name, verb);
                        else if (o->has_arg == no_argument && has_value)
                                log_error("%s: option '--%s' takes no value (see hutch %s --help)", verb, name, verb);
                        else
                                log_error("%s: bad option '%s' (see hutch %s --help)", verb, arg, verb);
                        return EXIT_USAGE;
                }
                const char *near = cli_nearest_option(opts, name);
                if (near)
                        log_error("%s: unknown option '--%s' (did you mean --%s? see hutch %s --help)",
                                  verb, name, near, verb);
                else
                        log_error("%s: unknown option '--%s' (see hutch %s --help)", verb, name, verb);
                return EXIT_USAGE;
        }
        for (const struct option *o = opts; optopt && o && o->name; o++)
                if (o->val == optopt && o->has_arg == required_argument) {
                        log_error("%s: option '-%c' needs a value (see hutch %s --help)", verb, optopt, verb);
                        return EXIT_USAGE;
                }
        if (optopt > ' ' && optopt < 127)
                log_error("%s: unknown option '-%c' (see hutch %s --help)", verb, optopt, verb);
        else
                log_error("%s: bad option '%s' (see hutch %s --help)", verb, arg, verb);
        return EXIT_USAGE;
}

int cli_no_operands(const char *verb, int argc, char **argv, int first)
{
        if (first >= argc)
                return EXIT_OK;
        log_error("%s: unexpected argument '%s' (see hutch %s --help)", verb, argv[first], verb);
        return EXIT_USAGE;
}
