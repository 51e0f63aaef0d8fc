/* cli/session.c - `hutch session ls|rm`: the persistent workspaces of
 * `hutch run --session NAME` (session.h), and their idle-TTL expiry for
 * `hutch gc`. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "workspace/session.h"
#include "record/store.h"

static void help(void)
{
        printf("Usage: hutch session ls [--json]\n"
               "       hutch session rm NAME...\n"
               "\n"
               "List or remove the persistent workspaces of hutch run --session NAME.\n"
               "A session in use by a run is not removed. hutch gc removes sessions\n"
               "unused for longer than the profile key session_ttl (default 1d).\n"
               "\n"
               "  --json      ls: one JSON object per line\n"
               "  -h, --help  this text\n");
}

static char *root_of(struct store *s)
{
        return session_root(store_path(s));
}

static int session_ls(struct store *s, bool json)
{
        _cleanup_free_ char *root = root_of(s);
        struct session_info *v = NULL;
        size_t n = 0;
        int r = session_list(root, &v, &n);
        if (r < 0) {
                log_error_errno(r, "session: %s: %m", root);
                return EXIT_FAILURE_GENERIC;
        }
        if (!json && n)
                printf("%-24s %-20s %10s %8s  %s\n", "NAME", "LAST USED", "SIZE", "ENTRIES", "STATE");
        for (size_t i = 0; i < n; i++) {
                char when[32], size[32];
                format_iso8601_ms(v[i].last_used_ms, when, sizeof(when));
                if (json) {
                        json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:b}", "schema", "hutch.session/1",
                                              "name", v[i].name, "last_used", when,
                                              "bytes", (json_int_t)v[i].bytes, "entries", (json_int_t)v[i].files,
                                              "in_use", v[i].in_use);
                        _cleanup_free_ char *t = json_dumps(o, JSON_COMPACT);
                        json_decref(o);
                        puts(t ? t : "{}");
                } else {
                        when[19] = '\0';
                        when[10] = ' ';
                        printf("%-24s %-20s %10s %8llu  %s\n", v[i].name, when,
                               format_size(v[i].bytes, size, sizeof(size)),
                               (unsigned long long)v[i].files, v[i].in_use ? "in use" : "idle");
                }
        }
        session_info_free(v, n);
        return EXIT_OK;
}

static int session_rm(struct store *s, char **names)
{
        _cleanup_free_ char *root = root_of(s);
        int code = EXIT_OK;
        for (char **p = names; *p; p++) {
                int r = session_remove(root, *p);
                if (r == -EBUSY)
                        log_error("session: %s is in use by a run; not removed", *p);
                else if (r == -ENOENT || r == -EINVAL)
                        log_error("session: no session '%s'", *p);
                else if (r < 0)
                        log_error_errno(r, "session: removing %s: %m", *p);
                else
                        continue;
                code = EXIT_FAILURE_GENERIC;
        }
        return code;
}

int cli_session_gc(struct store *s, bool dry_run)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL, *root = root_of(s);
        struct session_info *v = NULL;
        size_t n = 0, removed = 0;
        char ttl[32];

        /* the TTL is the default profile's (a session outlives any one run) */
        run_config_init(&cfg);
        if (profile_load(&cfg, "default", &err) < 0)
                log_debug("gc: default profile: %s; session_ttl at its built-in default", err);
        uint64_t ttl_ms = cfg.session_ttl_ms;
        run_config_done(&cfg);
        format_duration_ms(ttl_ms, ttl, sizeof(ttl));
        if (ttl_ms == 0)
                return EXIT_OK;
        int r = session_list(root, &v, &n);
        if (r < 0) {
                log_error_errno(r, "gc: sessions in %s: %m", root);
                return EXIT_FAILURE_GENERIC;
        }
        uint64_t now = now_realtime_ms();
        for (size_t i = 0; i < n; i++) {
                if (v[i].in_use || v[i].last_used_ms + ttl_ms > now)
                        continue;
                if (!dry_run && (r = session_remove(root, v[i].name)) < 0) {
                        if (r != -EBUSY)
                                log_error_errno(r, "gc: removing session %s: %m", v[i].name);
                        continue;
                }
                removed++;
        }
        session_info_free(v, n);
        printf("%s %zu session%s unused for %s\n", dry_run ? "would remove" : "removed", removed,
               removed == 1 ? "" : "s", ttl);
        return EXIT_OK;
}

int verb_session(int argc, char **argv)
{
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_store_ struct store *s = NULL;
        bool json = false;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("session", argv, options);
                }
        if (optind >= argc) {
                log_error("session: expected ls or rm (see hutch session --help)");
                return EXIT_USAGE;
        }
        const char *sub = argv[optind++];
        /* options may also follow the subcommand: hutch session ls --json */
        for (int i = optind; i < argc; i++)
                if (streq(argv[i], "--json")) {
                        json = true;
                        memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(char *));
                        argc--;
                        i--;
                }
        if (!streq(sub, "ls") && !streq(sub, "rm")) {
                log_error("session: unknown subcommand '%s' (ls, rm)", sub);
                return EXIT_USAGE;
        }
        if (streq(sub, "ls") && optind != argc) {
                log_error("session: ls takes no arguments");
                return EXIT_USAGE;
        }
        if (streq(sub, "rm") && optind == argc) {
                log_error("session: rm needs a session name");
                return EXIT_USAGE;
        }
        r = cli_open_store("session", &s);
        if (r != EXIT_OK)
                return r;
        return streq(sub, "ls") ? session_ls(s, json) : session_rm(s, argv + optind);
}
