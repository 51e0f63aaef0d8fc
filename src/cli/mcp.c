/* cli/mcp.c - `hutch mcp`: the Model Context Protocol server's command
 * line. The operator's options become the ceilings of every run (a
 * model's arguments can only lower the timeout) and the options each
 * child `hutch run` gets; the server itself is src/mcp/. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run-internal.h"
#include "config/lang.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/live.h"
#include "mcp/server.h"
#include "mcp/tools.h"

#define MCP_CONCURRENT_DEFAULT 4u
#define MCP_CONCURRENT_MAX 64u
/* live sandboxes at once: each may hold background work up to a run's
 * limits until its idle timeout, so the operator's ceilings bound them */
#define MCP_SESSIONS_DEFAULT 8u
#define MCP_SESSIONS_MAX 64u

static void help(void)
{
        printf("Usage: hutch mcp [--profile P] [--max-timeout D] [--max-memory S] [--scope NAME]\n"
               "                 [--max-concurrent N] [--net none|host|allow] [--allow HOST[:PORT]]...\n"
               "                 [--workdir DIR [--allow-apply]] [--sessions live|fresh]\n"
               "                 [--idle-timeout D] [--max-sessions N] [--publish [HOST_PORT:]PORT]...\n"
               "                 [--no-kernels]\n"
               "\n"
               "Serve the Model Context Protocol on stdin and stdout (one JSON-RPC\n"
               "message per line), for an MCP client that starts hutch as its server.\n"
               "Tools: run_code, run_command (each call a recorded, sandboxed run),\n"
               "read_output, list_runs, get_file, diff (and apply), list_processes and\n"
               "list_ports (live sessions). Logs go to stderr. Speaks revision\n"
               "2026-07-28 and 2025-11-25 back to 2024-11-05.\n"
               "\n"
               "  -p, --profile P         run every job with profile P\n"
               "      --max-timeout D     the longest timeout a call may ask for (default 30s;\n"
               "                          a call's default is 30s or this, the lower)\n"
               "      --max-memory S      memory limit of every run (default: the profile's;\n"
               "                          a profile's lower limit stays)\n"
               "                          Every limit of a run (memory, timeout, cpus, pids,\n"
               "                          disk) is at most the ceiling set by these flags and\n"
               "                          the profile, even under a language's own profile\n"
               "      --max-concurrent N  runs at once, more wait in a queue (default %u)\n"
               "      --net MODE          network of every run: none (default), host, or\n"
               "                          allow with --allow rules (see hutch-run(1))\n"
               "      --allow HOST[:PORT] with --net allow: what runs may reach (repeatable)\n"
               "      --workdir DIR       every call's run sees DIR at /workspace through an\n"
               "                          overlay (DIR itself unchanged); the diff tool shows\n"
               "                          a run's changes\n"
               "      --allow-apply       with --workdir: offer the apply tool, which applies\n"
               "                          a run's changes to DIR as hutch apply does\n"
               "      --scope NAME        what the tools see and change (default \"default\"):\n"
               "                          a server sees only the runs, output, files and\n"
               "                          sessions of its own scope; one scope per\n"
               "                          conversation, one state dir per tenant\n"
               "      --sessions MODE     live (default): a session is a live sandbox, started\n"
               "                          by its first call, where files and processes stay\n"
               "                          between calls; its files are committed when it\n"
               "                          stops; fresh: each call a new sandbox of the\n"
               "                          session (files kept, processes not)\n"
               "      --idle-timeout D    a live session's sandbox stops after D without a\n"
               "                          call (default 10m); all stop when the server exits\n"
               "      --max-sessions N    live sandboxes at once, 1 to 64 (default %u): each\n"
               "                          may keep background work running up to a run's\n"
               "                          limits until it stops; a call that would start one\n"
               "                          more is refused (admission_full, retryable) until one\n"
               "                          stops at its idle timeout\n"
               "      --publish [HOST_PORT:]PORT  each live session's sandbox relays\n"
               "                          127.0.0.1:HOST_PORT on the host to its PORT (HOST_PORT\n"
               "                          omitted: one the kernel picks; list_ports says which)\n"
               "      --no-kernels        run_code in python or node runs as a program in\n"
               "                          the live session's sandbox; by default (--kernels)\n"
               "                          code without stdin, files or env runs in the\n"
               "                          session's persistent interpreter: variables and\n"
               "                          imports stay between calls\n"
               "  -h, --help              this text\n"
               "\n"
               "Every run is labelled mcp.client=<client name>, mcp.session=<id> and\n"
               "mcp.scope=<scope>:\n"
               "hutch ls --label mcp.session=ID lists a session's runs. See hutch-mcp(1).\n",
               MCP_CONCURRENT_DEFAULT, MCP_SESSIONS_DEFAULT);
}

/* [HOST_PORT:]PORT: PORT 1-65535, HOST_PORT 0-65535 (0: the kernel
 * picks one, as without it). `sandbox start` checks it again. */
static bool publish_spec_valid(const char *spec)
{
        const char *colon = strchr(spec, ':');
        for (int part = 0; part < (colon ? 2 : 1); part++) {
                const char *s = part == 0 && colon ? spec : colon ? colon + 1 : spec;
                size_t n = part == 0 && colon ? (size_t)(colon - spec) : strlen(s);
                unsigned long v = 0;
                if (n == 0 || n > 5 || strspn(s, "0123456789") < n)
                        return false;
                for (size_t i = 0; i < n; i++)
                        v = v * 10 + (unsigned long)(s[i] - '0');
                bool host = colon && part == 0;
                if (v > 65535 || (!host && v == 0))
                        return false;
        }
        return true;
}

/* min(), with 0 (no limit) above everything. */
static uint64_t min_limit(uint64_t a, uint64_t b)
{
        return !a ? b : !b ? a : MIN(a, b);
}

/* What no run of the server may exceed (0: no limit). */
struct ceiling {
        uint64_t memory_bytes, disk_bytes, pids;
        double cpus;
};

/* The limits a run under profile pc gets: each of memory, disk, pids
 * and cpus held at most at the ceiling's, as request limits
 * (hutch.request/1 "limits"). Sizes round down to a MiB, never up past
 * the ceiling. */
static json_t *clamped_limits(const struct run_config *pc, const struct ceiling *c)
{
        json_t *o = json_object();
        uint64_t memory = min_limit(pc->memory_bytes, c->memory_bytes);
        uint64_t disk = min_limit(pc->disk_bytes, c->disk_bytes);
        uint64_t pids = min_limit(pc->pids, c->pids);
        double cpus = !pc->cpus ? c->cpus : !c->cpus ? pc->cpus : MIN(pc->cpus, c->cpus);

        if (memory)
                json_object_set_new(o, "memory_mb", json_integer((json_int_t)MAX(memory >> 20, 1)));
        if (disk)
                json_object_set_new(o, "disk_mb", json_integer((json_int_t)MAX(disk >> 20, 1)));
        if (pids)
                json_object_set_new(o, "pids", json_integer((json_int_t)pids));
        if (cpus > 0)
                /* cpus has 3 decimals at most: floor, never above */
                json_object_set_new(o, "cpu_cores", json_real(floor(cpus * 1000.0) / 1000.0));
        return o;
}

/* The ceilings of every run: --max-memory and --max-timeout where
 * given, else the operator's profile's (--profile, or the default
 * one); cpus, pids and disk are the profile's. A run gets the lower of
 * its profile's limit and the ceiling: a flag never raises a profile's
 * limit. The profiles are read once here, so a bad one stops the server
 * at its start, not at every call.
 *
 * Without --profile, run_code in a language runs under that language's
 * profile (python, node: more memory and time for an interpreter), as
 * `hutch run --lang` does, and the record names it; but each of its
 * limits is held under the ceilings, whatever the language brings.
 * cfg->limits maps a language ("" for run_command and any language
 * without a profile of its own) to the limits its runs get. */
static int profile_ceilings(const char *profile, uint64_t max_memory, bool max_timeout_set,
                            struct mcp_config *cfg)
{
        struct run_config base;
        _cleanup_free_ char *err = NULL;
        _cleanup_(lang_table_freep) struct lang_table *langs = NULL;
        int r;

        run_config_init(&base);
        r = profile_load(&base, profile, &err);
        if (r < 0) {
                log_error("mcp: %s", err ? err : strerror(-r));
                run_config_done(&base);
                return EXIT_SETUP;
        }
        struct ceiling c = {
                .memory_bytes = max_memory ? max_memory : base.memory_bytes,
                .disk_bytes = base.disk_bytes, .pids = base.pids, .cpus = base.cpus,
        };
        if (base.timeout_ms && base.timeout_ms < cfg->max_timeout_ms && !max_timeout_set)
                cfg->max_timeout_ms = base.timeout_ms;

        cfg->limits = json_object();
        json_object_set_new(cfg->limits, "", clamped_limits(&base, &c));
        run_config_done(&base);
        /* no table of languages: run_code then fails in each run, as it
         * would with hutch run --lang */
        if (profile || lang_table_load(NULL, &langs, NULL) < 0)
                return EXIT_OK;
        for (size_t i = 0; i < lang_table_count(langs); i++) {
                const struct lang *l = lang_table_get(langs, i);
                struct run_config pc;
                _cleanup_free_ char *lerr = NULL;
                if (!l->profile || streq(l->profile, "default"))
                        continue;
                run_config_init(&pc);
                r = profile_load(&pc, l->profile, &lerr);
                if (r < 0) {
                        log_error("mcp: language %s: %s", l->name, lerr ? lerr : strerror(-r));
                        run_config_done(&pc);
                        return EXIT_SETUP;
                }
                json_object_set_new(cfg->limits, l->name, clamped_limits(&pc, &c));
                run_config_done(&pc);
        }
        return EXIT_OK;
}

/* --max-timeout (T), --max-memory (M), --max-concurrent (C): the
 * server's ceilings. Returns EXIT_OK or EXIT_USAGE after saying why. */
static int mcp_opt_limit(int c, struct mcp_config *cfg, uint64_t *max_memory, bool *max_timeout_set)
{
        uint64_t v;

        switch (c) {
        case 'T':
                if (parse_duration_ms(optarg, &v) < 0 || v == 0)
                        return cli_bad_value("mcp", "max-timeout", optarg, "expected a duration above 0 (30s, 5m)");
                cfg->max_timeout_ms = v;
                *max_timeout_set = true;
                return EXIT_OK;
        case 'M':
                if (parse_size(optarg, &v) < 0 || v == 0)
                        return cli_bad_value("mcp", "max-memory", optarg, "expected a size above 0 (512M, 2G)");
                *max_memory = v;
                return EXIT_OK;
        default: {
                char *end;
                errno = 0;
                unsigned long n = strtoul(optarg, &end, 10);
                if (errno || *end || !*optarg || *optarg == '-' || n < 1 || n > MCP_CONCURRENT_MAX)
                        return cli_bad_value("mcp", "max-concurrent", optarg, "expected 1 to 64");
                cfg->max_concurrent = (unsigned)n;
                return EXIT_OK;
        }
        }
}

static const struct option mcp_options[] = {
        { "profile",        required_argument, NULL, 'p' },
        { "max-timeout",    required_argument, NULL, 'T' },
        { "max-memory",     required_argument, NULL, 'M' },
        { "max-concurrent", required_argument, NULL, 'C' },
        { "net",            required_argument, NULL, 'N' },
        { "allow",          required_argument, NULL, 'A' },
        { "scope",          required_argument, NULL, 'S' },
        { "workdir",        required_argument, NULL, 'W' },
        { "allow-apply",    no_argument,       NULL, 'Y' },
        { "sessions",       required_argument, NULL, 'L' },
        { "idle-timeout",   required_argument, NULL, 'I' },
        { "max-sessions",   required_argument, NULL, 'X' },
        { "publish",        required_argument, NULL, 'P' },
        { "kernels",        no_argument,       NULL, 'K' },
        { "no-kernels",     no_argument,       NULL, 'k' },
        { "help",           no_argument,       NULL, 'h' },
        {}
};

/* What the command line says, before it is checked as a whole and
 * turned into the server's configuration; the strings it owns live
 * until verb_mcp returns, as cfg points into them. */
struct mcp_opts {
        struct mcp_config cfg;
        char **run_args, **publish;
        char *workdir;
        const char *net, *profile;
        uint64_t max_memory;
        bool max_timeout_set, allow, kernels_set, max_sessions_set, help;
};

static void mcp_opts_done(struct mcp_opts *o)
{
        strv_free(o->run_args);
        strv_free(o->publish);
        free(o->workdir);
}

/* Each option on its own. Returns EXIT_OK (o->help set once --help is
 * printed) or a usage exit code after saying why. */
static int mcp_parse(int argc, char **argv, struct mcp_opts *o)
{
        struct stat st;
        int c, r;

        while ((c = getopt_long(argc, argv, "hp:", mcp_options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        o->run_args = strv_append(strv_append(o->run_args, "--profile"), optarg);
                        o->profile = optarg;
                        break;
                case 'T':
                case 'M':
                case 'C':
                        r = mcp_opt_limit(c, &o->cfg, &o->max_memory, &o->max_timeout_set);
                        if (r != EXIT_OK)
                                return r;
                        break;
                case 'N':
                        if (!streq(optarg, "none") && !streq(optarg, "host") && !streq(optarg, "allow"))
                                return cli_bad_value("mcp", "net", optarg, "expected none, host or allow");
                        o->net = optarg;
                        break;
                case 'A':
                        o->run_args = strv_append(strv_append(o->run_args, "--allow"), optarg);
                        o->allow = true;
                        break;
                case 'W':
                        free(o->workdir);
                        o->workdir = realpath(optarg, NULL);
                        if (!o->workdir || stat(o->workdir, &st) < 0 || !S_ISDIR(st.st_mode))
                                return cli_bad_value("mcp", "workdir", optarg, "expected an existing directory");
                        break;
                case 'Y':
                        o->cfg.allow_apply = true;
                        break;
                case 'L':
                        if (!streq(optarg, "live") && !streq(optarg, "fresh"))
                                return cli_bad_value("mcp", "sessions", optarg, "expected live or fresh");
                        o->cfg.live = streq(optarg, "live");
                        break;
                case 'K':
                        o->cfg.kernels = o->kernels_set = true;
                        break;
                case 'k':
                        o->cfg.kernels = false;
                        break;
                case 'P':
                        if (!publish_spec_valid(optarg))
                                return cli_bad_value("mcp", "publish", optarg,
                                                     "expected [HOST_PORT:]PORT, ports 1 to 65535 (HOST_PORT may be 0)");
                        o->publish = strv_append(o->publish, optarg);
                        break;
                case 'I':
                        if (parse_duration_ms(optarg, &o->cfg.idle_ms) < 0 || o->cfg.idle_ms == 0)
                                return cli_bad_value("mcp", "idle-timeout", optarg,
                                                     "expected a duration above 0 (30s, 10m)");
                        break;
                case 'X': {
                        char *end;
                        errno = 0;
                        unsigned long v = strtoul(optarg, &end, 10);
                        if (errno || *end || !*optarg || *optarg == '-' || v < 1 || v > MCP_SESSIONS_MAX)
                                return cli_bad_value("mcp", "max-sessions", optarg, "expected 1 to 64");
                        o->cfg.max_sessions = (unsigned)v;
                        o->max_sessions_set = true;
                        break;
                }
                case 'S':
                        if (!mcp_scope_valid(optarg))
                                return cli_bad_value("mcp", "scope", optarg, "expected 1 to 16 letters, digits or '_'");
                        o->cfg.scope = optarg;
                        break;
                case 'h':
                        help();
                        o->help = true;
                        return EXIT_OK;
                default:
                        return cli_usage_error("mcp", argv, mcp_options);
                }
        return cli_no_operands("mcp", argc, argv, optind);
}

/* The options together: those that only mean something with another.
 * Returns EXIT_OK or EXIT_USAGE after saying why. */
static int mcp_check(struct mcp_opts *o)
{
        if (o->allow && !(o->net && streq(o->net, "allow"))) {
                log_error("mcp: --allow goes with --net allow");
                return EXIT_USAGE;
        }
        if ((o->publish || o->kernels_set || o->max_sessions_set) && !o->cfg.live) {
                log_error("mcp: --%s goes with live sessions (not --sessions fresh)",
                          o->publish ? "publish" : o->kernels_set ? "kernels" : "max-sessions");
                return EXIT_USAGE;
        }
        o->cfg.publish = o->publish;
        o->cfg.kernels = o->cfg.kernels && o->cfg.live;
        o->cfg.ui = cli_run_ui();
        if (o->cfg.allow_apply && !o->workdir) {
                log_error("mcp: --allow-apply goes with --workdir DIR (the directory it applies to)");
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

/* The options every child `hutch run` gets after the ceilings are
 * known (--queue-wait is the timeout ceiling). */
static void mcp_child_args(struct mcp_opts *o)
{
        /* the children's messages go to our stderr: each carries its run's id */
        o->run_args = strv_append(o->run_args, "--log-id");
        /* never the host's network unless the operator says so */
        o->run_args = strv_append(strv_append(o->run_args, "--net"), o->net ? o->net : "none");
        /* a node whose [admission] cap is reached queues the call, as long
         * as a run may last, instead of failing it: the server's own
         * queue (max_concurrent) comes first, the node's count second */
        _cleanup_free_ char *queue_wait = xasprintf("%llums", (unsigned long long)o->cfg.max_timeout_ms);
        o->run_args = strv_append(strv_append(o->run_args, "--queue-wait"), queue_wait);
        o->cfg.run_args = o->run_args;
}

int verb_mcp(int argc, char **argv)
{
        _cleanup_(mcp_opts_done) struct mcp_opts o = {
                .cfg = { .max_timeout_ms = MCP_DEFAULT_TIMEOUT_MS,
                         .max_concurrent = MCP_CONCURRENT_DEFAULT, .scope = MCP_SCOPE_DEFAULT,
                         .live = true, .kernels = true, .idle_ms = MCP_LIVE_IDLE_DEFAULT_MS,
                         .max_sessions = MCP_SESSIONS_DEFAULT },
        };
        int r;

        r = mcp_parse(argc, argv, &o);
        if (r != EXIT_OK || o.help)
                return r;
        r = mcp_check(&o);
        if (r != EXIT_OK)
                return r;
        if (o.workdir) {
                /* every call's run sees DIR through the overlay; its
                 * changes are a change set (diff), never written to DIR
                 * but by the apply tool, when allowed */
                o.run_args = strv_append(strv_append(o.run_args, "--workdir"), o.workdir);
                o.cfg.workdir = o.workdir;
        }
        r = profile_ceilings(o.profile, o.max_memory, o.max_timeout_set, &o.cfg);
        if (r != EXIT_OK)
                return r;
        mcp_child_args(&o);
        if (isatty(STDIN_FILENO))
                log_warning("mcp: stdin is a terminal; this server speaks JSON-RPC, one message per line, "
                            "for an MCP client that starts it");

        r = mcp_serve(&o.cfg);
        json_decref(o.cfg.limits);
        if (r < 0) {
                log_error("mcp: %s", strerror(-r));
                return EXIT_SETUP;
        }
        return EXIT_OK;
}
