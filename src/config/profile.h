/* profile.h - profiles: named INI files that set a run's limits, binds,
 * environment and policy (DESIGN §5, hutch-profile(5)).
 *
 * One table, profile_keys[], describes every key: its section, name, CLI
 * flag, type, default and documentation. The parser, the command line,
 * `hutch profile show`, run_config_init() and the tests all go through it.
 *
 * Building a run's settings:
 *
 *     struct run_config cfg;
 *     _cleanup_free_ char *err = NULL;
 *     run_config_init(&cfg);                              built-in defaults
 *     r = profile_load(&cfg, opt_profile, &err);          NAME or PATH; NULL = default
 *     r = profile_set_key(&cfg, "memory-high", "400M",    each --<key> VALUE
 *                         ORIGIN_CLI, NULL, 0, &err);
 *     r = profile_validate(&cfg, &err);                   checks across keys
 *     text = profile_canonical_text(&cfg);                store with the run
 *     profile_sha256_hex(text, hex);
 *
 * On failure every function returns a negative errno and, if ret_error is
 * not NULL, one line of explanation without the "hutch: " prefix, e.g.
 *     profile python.ini:12: memory: expected a size like 512M, got "lots"
 *     --memory: expected a size like 512M, got "lots"
 * which the caller logs and turns into exit code 125 (or 2 for a bad
 * command-line value, at the caller's choice). Nothing here logs.
 */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/run-config.h"
#include "lib/digest.h"

enum profile_type {
        PROFILE_SIZE,           /* bytes: 512, 64K, 512M, 1.5G (binary units) */
        PROFILE_DURATION,       /* ms: 250ms, 30s, 2m, 1h, 1d; bare number = seconds */
        PROFILE_COUNT,          /* whole number */
        PROFILE_NUMBER,         /* decimal with up to 3 places: 1, 0.5, 2.25 */
        PROFILE_BOOL,           /* yes/no, true/false, on/off, 1/0 */
        PROFILE_STRING,         /* one line of text */
        PROFILE_TEXT,           /* free text; may continue on indented lines; blanks collapse */
        PROFILE_LIST,           /* blank-separated items; "double quotes" keep blanks in one */
        PROFILE_ENUM,           /* one of a fixed set of words */
        _PROFILE_TYPE_MAX,
        _PROFILE_TYPE_INVALID = -EINVAL,
};

/* One key. Public so the CLI, `profile show` and the tests can walk the
 * table; only the profile-*.c files read the fields after `doc`. */
struct profile_key {
        const char *section;    /* "limits", ...; "" for top-level keys */
        const char *name;       /* key as written in the file */
        const char *flag;       /* command-line flag without "--" */
        enum profile_type type;
        const char *def;        /* default, in profile syntax */
        const char *unit;       /* for docs: "bytes", "ms", ... or NULL */
        const char *doc;        /* one line for --help and profile show */

        size_t offset;          /* field in struct run_config */
        size_t width;           /* sizeof that field (COUNT: 4 or 8) */
        const char *const *words;       /* ENUM: allowed words, index = stored value */
        const char *zero;       /* numeric types: word meaning 0 ("none", "auto"), or NULL */
        uint64_t min, max;      /* numeric types: bounds (NUMBER: in thousandths) */
        /* extra check of a STRING value or of each LIST item: NULL if fine,
         * else what was expected ("an absolute path") */
        const char *(*check)(const char *value);
        /* run after a successful set (e.g. split root into layers) */
        void (*after)(struct run_config *cfg);
        bool trusted_only;      /* non-empty value only from trusted files and the CLI */
};

extern const struct profile_key profile_keys[];
extern const size_t profile_n_keys;

/* Set every key of cfg to its table default (origin ORIGIN_DEFAULT).
 * Called by run_config_init(); aborts if a built-in default is invalid,
 * which is a programming error the unit tests catch. */
void profile_apply_defaults(struct run_config *cfg);

/* Find a key by any of its names: the flag ("memory-high"), the INI name
 * if unique ("memory_high"), or "section.name" ("limits.memory_high").
 * Returns NULL if there is none. */
const struct profile_key *profile_key_find(const char *name);

/* Set one key from its text form, as the profile parser does.
 *   key     any name profile_key_find() accepts; also "env" with value
 *           "NAME=VALUE", or "env.NAME" with value "VALUE"
 *   origin  ORIGIN_CLI for the command line: for a list key the value is
 *           one item, appended (an empty value clears the list); every
 *           other origin reads a whole list and replaces.
 *           ORIGIN_FILE_UNTRUSTED refuses trusted-only keys (rw).
 *   file, line  where the value came from (NULL, 0 for the CLI); copied
 * Returns 0, or -EINVAL (bad value), -ENOENT (no such key), -EPERM (a
 * trusted-only key from an untrusted file), with *ret_error set. */
int profile_set_key(struct run_config *cfg, const char *key, const char *value,
                    enum origin origin, const char *file, unsigned line, char **ret_error);

/* profile_set_key(..., ORIGIN_CLI, NULL, 0, ...) for each pair of a vector
 * "key", "value", "key", "value", ..., NULL, in order (a verb collects its
 * --KEY VALUE options while parsing, loads the profile, then applies
 * them). Stops at the first error. */
int profile_apply_cli(struct run_config *cfg, char *const *pairs, char **ret_error);

/* Checks across keys, once everything is set (after the command line):
 * memory_high above memory, a `require`d limit set to none, a workdir
 * that would hide a system dir. Returns 0 or
 * -EINVAL with a message naming where the offending value came from. */
int profile_validate(const struct run_config *cfg, char **ret_error);

/* Load profile name_or_path on top of cfg (which run_config_init() set up).
 * A value containing '/' or ending in ".ini" is a path; otherwise NAME.ini
 * is looked up in profile_search_dirs() order. NULL means "default"; if no
 * default.ini is installed, the built-in defaults stand (profile_path stays
 * NULL). `extends` chains are followed. Sets profile_name, profile_path,
 * profile_files. Returns 0, -ENOENT (not found, or missing extends target),
 * -ELOOP (extends cycle or chain too deep), -EINVAL (bad content), -EPERM
 * (untrusted rw) or another -errno from reading the file. On failure cfg
 * may hold part of the profile: report the error and discard it. */
int profile_load(struct run_config *cfg, const char *name_or_path, char **ret_error);

/* profile_load(), but with trust set a profile named by a path outside
 * the trusted directories is trusted too (`hutch run --trust-profile`):
 * it may then widen the sandbox (host paths, masks, network, syscall
 * allowances). Profiles it extends by path are still judged by where
 * they are. */
int profile_load_trusting(struct run_config *cfg, const char *name_or_path, bool trust, char **ret_error);

/* Parse profile text as if read from a file shown as display_name (e.g. a
 * resolved profile kept with a past run, for `hutch rerun`). trusted decides
 * whether rw is honoured. An `extends` by name uses the search path; by
 * path, it is relative to the current directory. Same returns as
 * profile_load(); does not touch profile_name or profile_path. */
int profile_load_text(struct run_config *cfg, const char *text, const char *display_name,
                      bool trusted, char **ret_error);

/* What a verb asks of profile_resolve(). */
struct profile_request {
        const char *profile;            /* NAME or PATH; NULL: the default profile */
        bool trust;                     /* --trust-profile (profile_load_trusting()) */
        char *const *overrides;         /* the command line's "key", "value", ..., or NULL */
        bool tty;                       /* -t: an interactive run (no default timeout) */
        const char *image_dir;          /* the image store (image_store_dir()) for root =
                                         * image:REF; NULL: no state dir, such roots fail */
};

/* Resolve a run's settings into cfg (fresh from run_config_init(), with
 * the job's argv and -t already set): load req->profile, apply
 * req->overrides, derive what follows from them (network none becomes
 * allow with allow rules not overridden by --network; -t drops a timeout
 * nobody chose), and validate. `hutch run` and
 * `hutch profile show` both resolve here, and nothing changes cfg after:
 * its canonical text is the run's stored profile. Returns 0 or -errno
 * with *ret_error set; *ret_cli_error is true when a command-line value
 * was bad (a usage error) rather than the profile. */
int profile_resolve(struct run_config *cfg, const struct profile_request *req, bool *ret_cli_error,
                    char **ret_error);

/* root = image:REF (config/image-root.c). */
#define PROFILE_IMAGE_PREFIX "image:"
bool profile_root_is_image(const char *root);
/* REF as root = image:REF takes it: NAME[:TAG], NAME[:TAG]@sha256:HEX or
 * sha256:HEX (a manifest digest). */
bool profile_image_ref_valid(const char *ref);
/* Fold the image cfg->root names (if it names one) into cfg: root
 * pinned to the manifest digest, root_layers, the image's Env under the
 * profile's, image_workdir, argv from Entrypoint and Cmd when empty.
 * Called by profile_resolve(), and by rerun on a stored profile, whose
 * pinned image must still be in the store. 0 or -errno with *ret_error
 * (-ENOENT: no such image). */
int profile_resolve_image(struct run_config *cfg, const char *image_dir, char **ret_error);

/* The directories searched for NAME.ini, in order (all trusted):
 * $XDG_CONFIG_HOME/hutch/profiles (default ~/.config/hutch/profiles),
 * /etc/hutch/profiles, HUTCH_SYSCONFDIR/hutch/profiles if that is not /etc, then
 * each dir of $HUTCH_PROFILE_PATH if set, else HUTCH_DATADIR/profiles.
 * Returns a new NULL-terminated vector (free with strv_free). */
char **profile_search_dirs(void);

/* Whether path (a file) lies inside one of profile_search_dirs(), after
 * resolving symlinks. false if it cannot be resolved. */
bool profile_path_is_trusted(const char *path);

/* Every profile in the search path: for each NAME, the file that wins.
 * *ret_names and *ret_paths are parallel NULL-terminated vectors sorted by
 * name. Unreadable or missing dirs are skipped. Returns the count. */
int profile_list(char ***ret_names, char ***ret_paths);

/* The value of key in cfg, in the canonical form the parser reads back
 * ("512M", "30s", "none", "/usr /bin"). Newly allocated. */
char *profile_format_value(const struct run_config *cfg, const struct profile_key *key);

/* The resolved profile as INI text: every key of every section (and each
 * [env] entry), sections and keys sorted, values canonical, long lists
 * folded onto indented lines. Equal settings give equal text; parsing it
 * back gives the same settings. Newly allocated; never fails. */
char *profile_canonical_text(const struct run_config *cfg);

/* sha256 of text (the canonical text) as 64 hex digits in ret. */
char *profile_sha256_hex(const char *text, char ret[DIGEST_HEX_SIZE]);

/* getopt_long options for every key's flag (plus "env", NAME=VALUE, and
 * "image", NAME: root = image:NAME), after the caller's own options `own`
 * (terminated by a zero entry, may be NULL). A key's option has val =
 * base + its index in profile_keys[]; "env" has val = base +
 * profile_n_keys, "image" base + profile_n_keys + 1. The caller's options come first,
 * so a verb can give a flag its own meaning (getopt takes the first
 * match). Free the result with free(). */
struct option *profile_cli_options(const struct option *own, int base);
