/* cli/profile.c - `hutch profile list` and `hutch profile show`.
 *
 * list: every profile in the search path (the file that wins for each
 * name), where it lives and its description.
 * show: one profile fully resolved (extends followed, command-line
 * overrides applied), every key with its value and where the value came
 * from; or, with --canonical, exactly the text hutch stores with a run and
 * hashes; with --sha256, just that hash.
 */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/util.h"

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: hutch profile list\n"
                "       hutch profile show [--canonical | --sha256] [--KEY VALUE...] [NAME|PATH]\n"
                "\n"
                "list   every profile hutch can find: name, file, description\n"
                "show   one profile resolved (default: \"default\"): every key, its value\n"
                "       and where it came from (file:line, default, or command line)\n"
                "\n"
                "Options of show:\n"
                "  --canonical     print the resolved profile exactly as stored with a run\n"
                "  --sha256        print only the sha256 of that text\n"
                "  --KEY VALUE     override a key as `hutch run --KEY VALUE` would\n"
                "                  (e.g. --memory 1G, --network host, --env NAME=VALUE)\n"
                "\n"
                "A NAME is looked up as NAME.ini in $XDG_CONFIG_HOME/hutch/profiles,\n"
                "/etc/hutch/profiles, then $HUTCH_PROFILE_PATH or the installed profiles;\n"
                "a value with '/' or ending in .ini is a path. See hutch-profile(5).\n");
}

static int profile_list_verb(int argc, char **argv)
{
        _cleanup_strv_ char **names = NULL, **paths = NULL;
        size_t width = 4, pwidth = 4;

        if (argc > 1) {
                if (streq(argv[1], "--help") || streq(argv[1], "-h")) {
                        usage(stdout);
                        return EXIT_OK;
                }
                log_error("profile list: unexpected argument '%s'", argv[1]);
                return EXIT_USAGE;
        }

        profile_list(&names, &paths);
        for (size_t i = 0; names[i]; i++) {
                width = MAX(width, strlen(names[i]));
                pwidth = MAX(pwidth, strlen(paths[i]));
        }
        printf("%-*s  %-*s  %s\n", (int)width, "NAME", (int)pwidth, "FILE", "DESCRIPTION");
        for (size_t i = 0; names[i]; i++) {
                struct run_config cfg;
                _cleanup_free_ char *err = NULL;
                int r;

                run_config_init(&cfg);
                r = profile_load(&cfg, paths[i], &err);
                if (r < 0)
                        log_warning("%s", err);
                printf("%-*s  %-*s  %s\n", (int)width, names[i], (int)pwidth, paths[i],
                       r < 0 ? "(does not load, see above)" :
                       cfg.description && cfg.description[0] ? cfg.description : "-");
                run_config_done(&cfg);
        }
        return EXIT_OK;
}

static char *origin_text(const struct key_origin *o)
{
        if (!o)
                return xstrdup("?");
        switch (o->origin) {
        case ORIGIN_DEFAULT:
                return xstrdup("default");
        case ORIGIN_CLI:
                return xstrdup("command line");
        case ORIGIN_FILE_UNTRUSTED:
                return xasprintf("%s:%u (untrusted)", o->file, o->line);
        default:
                /* line 0: no file line, the image an env variable came from */
                return o->line ? xasprintf("%s:%u", o->file, o->line) : xstrdup(o->file);
        }
}

static void show_line(const char *name, const char *value, const struct key_origin *o)
{
        _cleanup_free_ char *kv = xasprintf("%s =%s%s", name, value[0] ? " " : "", value);
        _cleanup_free_ char *from = origin_text(o);
        printf("%-40s ; %s\n", kv, from);
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void show_resolved(const struct run_config *cfg, const char *sha)
{
        const char *section = "";

        printf("; profile %s: %s\n", cfg->profile_name,
               cfg->profile_path ? cfg->profile_path : "(built-in defaults)");
        for (size_t i = 1; cfg->profile_files && cfg->profile_files[i]; i++)
                printf("; extends %s\n", cfg->profile_files[i]);
        printf("; sha256 %s\n", sha);

        for (size_t i = 0; i <= profile_n_keys; i++) {
                const struct profile_key *k = i < profile_n_keys ? &profile_keys[i] : NULL;
                const char *next = k ? k->section : "\x7f";

                if (!streq(next, section)) {
                        if (strcmp(section, "env") < 0 && strcmp(next, "env") > 0 && cfg->env) {
                                size_t n = strv_length(cfg->env);
                                _cleanup_free_ char **sorted = xmalloc((n + 1) * sizeof(char *));
                                memcpy(sorted, cfg->env, (n + 1) * sizeof(char *));
                                qsort(sorted, n, sizeof(char *), cmp_str);
                                printf("\n[env]\n");
                                for (size_t j = 0; j < n; j++) {
                                        const char *eq = strchr(sorted[j], '=');
                                        _cleanup_free_ char *name = xasprintf("%.*s", (int)(eq - sorted[j]), sorted[j]);
                                        _cleanup_free_ char *id = xasprintf("env.%s", name);
                                        show_line(name, eq + 1, run_config_origin(cfg, id));
                                }
                        }
                        if (!k)
                                break;
                        section = next;
                        printf("\n[%s]\n", section);
                }
                _cleanup_free_ char *value = profile_format_value(cfg, k);
                _cleanup_free_ char *id = k->section[0] ? xasprintf("%s.%s", k->section, k->name)
                                                        : xstrdup(k->name);
                show_line(k->name, value, run_config_origin(cfg, id));
        }
}

static int profile_show_verb(int argc, char **argv)
{
        enum { OPT_CANONICAL = 0x100, OPT_SHA256, OPT_KEY_BASE = 0x200 };
        static const struct option own[] = {
                { "help",      no_argument, NULL, 'h' },
                { "canonical", no_argument, NULL, OPT_CANONICAL },
                { "sha256",    no_argument, NULL, OPT_SHA256 },
                {}
        };
        _cleanup_free_ struct option *opts = profile_cli_options(own, OPT_KEY_BASE);
        _cleanup_strv_ char **overrides = NULL;
        _cleanup_free_ char *err = NULL, *text = NULL;
        bool canonical = false, sha_only = false;
        char sha[DIGEST_HEX_SIZE];
        struct run_config cfg;
        int c, r;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        usage(stdout);
                        return EXIT_OK;
                case OPT_CANONICAL:
                        canonical = true;
                        break;
                case OPT_SHA256:
                        sha_only = true;
                        break;
                case '?':
                case ':':
                        return cli_usage_error("profile show", argv, opts);
                default:
                        if (c >= OPT_KEY_BASE && c <= OPT_KEY_BASE + (int)profile_n_keys + 1) {
                                /* applied after the profile, in order */
                                const char *key = c == OPT_KEY_BASE + (int)profile_n_keys + 1 ? "image"
                                                  : c == OPT_KEY_BASE + (int)profile_n_keys
                                                          ? "env" : profile_keys[c - OPT_KEY_BASE].flag;
                                overrides = strv_append(overrides, key);
                                overrides = strv_append(overrides, optarg);
                                break;
                        }
                        return EXIT_USAGE;
                }
        }
        if (argc - optind > 1) {
                log_error("profile show: expected one profile, got %d", argc - optind);
                return EXIT_USAGE;
        }

        run_config_init(&cfg);
        /* resolved as `hutch run` resolves it, so this is the profile a
         * run with the same profile and flags stores */
        _cleanup_free_ char *image_dir = cli_image_dir();
        struct profile_request req = { .profile = optind < argc ? argv[optind] : NULL, .overrides = overrides,
                                       .image_dir = image_dir };
        bool cli_error;
        r = profile_resolve(&cfg, &req, &cli_error, &err);
        if (r < 0) {
                log_error("%s", err);
                run_config_done(&cfg);
                return EXIT_SETUP;
        }

        text = profile_canonical_text(&cfg);
        profile_sha256_hex(text, sha);
        if (sha_only)
                printf("%s\n", sha);
        else if (canonical)
                fputs(text, stdout);
        else
                show_resolved(&cfg, sha);
        run_config_done(&cfg);
        return EXIT_OK;
}

int verb_profile(int argc, char **argv)
{
        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE;
        }
        if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
                usage(stdout);
                return EXIT_OK;
        }
        if (streq(argv[1], "list"))
                return profile_list_verb(argc - 1, argv + 1);
        if (streq(argv[1], "show"))
                return profile_show_verb(argc - 1, argv + 1);
        log_error("profile: unknown subcommand '%s' (list or show)", argv[1]);
        return EXIT_USAGE;
}
