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
               "List or remove the persistent workspaces of hutch run --session NAME,\n"
               "with their age, how long they have been unused, their ttl and size.\n"
               "A session in use by a run is not removed. hutch gc removes sessions\n"
               "unused for longer than their ttl: the profile key session_ttl of the\n"
               "run that used them last (default 1d).\n"
               "\n"
               "  --json      ls: one JSON object per line\n"
               "  -h, --help  this text\n");
}

static char *root_of(struct store *s)
{
        return session_root(store_path(s));
}

/* The default profile's session_ttl: the ttl of a session that has
 * none recorded (one from before ttl files, or whose run could not
 * write it). */
static uint64_t default_ttl(void)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;

        run_config_init(&cfg);
        if (profile_load(&cfg, "default", &err) < 0)
                log_debug("session: default profile: %s; session_ttl at its built-in default", err);
        uint64_t ttl_ms = cfg.session_ttl_ms;
        run_config_done(&cfg);
        return ttl_ms;
}

static uint64_t ttl_of(const struct session_info *si, uint64_t fallback)
{
        return si->ttl_ms == UINT64_MAX ? fallback : si->ttl_ms;
}

/* "1h" for people, "-" when unknown (UINT64_MAX), "never" for 0 when
 * zero_never. */
static const char *duration_or(uint64_t ms, bool zero_never, char *buf, size_t len)
{
        if (ms == UINT64_MAX)
                return "-";
        if (zero_never && ms == 0)
                return "never";
        /* whole seconds: an age to the millisecond is noise */
        return format_duration_ms(ms < 1000 ? ms : ms / 1000 * 1000, buf, len);
}

static json_t *json_time_or_null(uint64_t ms)
{
        char when[32];
        return ms && ms != UINT64_MAX ? json_string(format_iso8601_ms(ms, when, sizeof(when))) : json_null();
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
        uint64_t now = now_realtime_ms(), fallback = n ? default_ttl() : 0;
        if (!json && n)
                printf("%-24s %8s %8s %8s %10s %8s  %s\n", "NAME", "AGE", "IDLE", "TTL", "SIZE", "ENTRIES", "STATE");
        for (size_t i = 0; i < n; i++) {
                char when[32], size[32], age[32], idle[32], ttl[32];
                uint64_t ttl_ms = ttl_of(&v[i], fallback);
                uint64_t age_ms = v[i].created_ms && v[i].created_ms <= now ? now - v[i].created_ms : UINT64_MAX;
                uint64_t idle_ms = v[i].last_used_ms <= now ? now - v[i].last_used_ms : 0;
                format_iso8601_ms(v[i].last_used_ms, when, sizeof(when));
                if (json) {
                        json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:b}", "schema", "hutch.session/1",
                                              "name", v[i].name, "last_used", when,
                                              "bytes", (json_int_t)v[i].bytes, "entries", (json_int_t)v[i].files,
                                              "in_use", v[i].in_use);
                        json_object_set_new(o, "created", json_time_or_null(v[i].created_ms));
                        json_object_set_new(o, "age_ms", age_ms == UINT64_MAX ? json_null()
                                                                              : json_integer((json_int_t)age_ms));
                        json_object_set_new(o, "idle_ms", json_integer((json_int_t)idle_ms));
                        json_object_set_new(o, "ttl_ms", json_integer((json_int_t)ttl_ms));
                        /* when gc may remove it; null: never (or in use now) */
                        json_object_set_new(o, "expires_at", ttl_ms && !v[i].in_use
                                                ? json_time_or_null(v[i].last_used_ms + ttl_ms) : json_null());
                        _cleanup_free_ char *t = json_dumps(o, JSON_COMPACT);
                        json_decref(o);
                        puts(t ? t : "{}");
                } else {
                        bool expired = ttl_ms && !v[i].in_use && idle_ms >= ttl_ms;
                        printf("%-24s %8s %8s %8s %10s %8llu  %s\n", v[i].name,
                               duration_or(age_ms, false, age, sizeof(age)),
                               duration_or(idle_ms, false, idle, sizeof(idle)),
                               duration_or(ttl_ms, true, ttl, sizeof(ttl)),
                               format_size(v[i].bytes, size, sizeof(size)), (unsigned long long)v[i].files,
                               v[i].in_use ? "in use" : expired ? "expired" : "idle");
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
        _cleanup_free_ char *root = root_of(s);
        struct session_info *v = NULL;
        size_t n = 0, removed = 0;

        int r = session_list(root, &v, &n);
        if (r < 0) {
                log_error_errno(r, "gc: sessions in %s: %m", root);
                return EXIT_FAILURE_GENERIC;
        }
        /* each session's own ttl (its last run's profile), else the
         * default profile's: a session outlives any one run */
        uint64_t now = now_realtime_ms(), fallback = n ? default_ttl() : 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t ttl_ms = ttl_of(&v[i], fallback);
                /* a session in use is never removed: its run holds the
                 * lock, which session_remove() takes first */
                if (ttl_ms == 0 || v[i].in_use || v[i].last_used_ms + ttl_ms > now)
                        continue;
                if (!dry_run && (r = session_remove(root, v[i].name)) < 0) {
                        if (r != -EBUSY)
                                log_error_errno(r, "gc: removing session %s: %m", v[i].name);
                        continue;
                }
                if (dry_run)
                        printf("would remove session %s (unused for longer than its ttl)\n", v[i].name);
                removed++;
        }
        session_info_free(v, n);
        printf("%s %zu session%s unused for longer than %s ttl\n", dry_run ? "would remove" : "removed", removed,
               removed == 1 ? "" : "s", removed == 1 ? "its" : "their");
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
