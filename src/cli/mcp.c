/* cli/mcp.c - `hutch mcp`: the Model Context Protocol server's command
 * line. The operator's options become the ceilings of every run (a
 * model's arguments can only lower the timeout) and the options each
 * child `hutch run` gets; the server itself is src/mcp/. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/server.h"
#include "mcp/tools.h"

#define MCP_CONCURRENT_DEFAULT 4u
#define MCP_CONCURRENT_MAX 64u

static void help(void)
{
        printf("Usage: hutch mcp [--profile P] [--max-timeout D] [--max-memory S]\n"
               "                 [--max-concurrent N] [--net none|host|allow] [--allow HOST[:PORT]]...\n"
               "\n"
               "Serve the Model Context Protocol on stdin and stdout (one JSON-RPC\n"
               "message per line), for an MCP client that starts hutch as its server.\n"
               "Tools: run_code, run_command (each call a recorded, sandboxed run),\n"
               "read_output, list_runs, get_file. Logs go to stderr. Speaks revision\n"
               "2026-07-28 and 2025-11-25 back to 2024-11-05.\n"
               "\n"
               "  -p, --profile P         run every job with profile P\n"
               "      --max-timeout D     the longest timeout a call may ask for (default 30s;\n"
               "                          a call's default is 30s or this, the lower)\n"
               "      --max-memory S      memory limit of every run (default: the profile's;\n"
               "                          a profile's lower limit stays)\n"
               "      --max-concurrent N  runs at once, more wait in a queue (default %u)\n"
               "      --net MODE          network of every run: none (default), host, or\n"
               "                          allow with --allow rules (see hutch-run(1))\n"
               "      --allow HOST[:PORT] with --net allow: what runs may reach (repeatable)\n"
               "  -h, --help              this text\n"
               "\n"
               "Every run is labelled mcp.client=<client name> and mcp.session=<id>:\n"
               "hutch ls --label mcp.session=ID lists a session's runs. See hutch-mcp(1).\n",
               MCP_CONCURRENT_DEFAULT);
}

/* The flags are ceilings, never raises: a run gets the lower of a flag
 * and the profile's own limit. The profile is read once here, so a bad
 * one stops the server at its start, not at every call. Without
 * --max-timeout, the profile's timeout (when it has one) is the
 * ceiling if it is below the default. */
static int profile_ceilings(const char *profile, uint64_t max_memory, bool max_timeout_set,
                            struct mcp_config *cfg, char ***run_args)
{
        struct run_config pc;
        _cleanup_free_ char *err = NULL;
        run_config_init(&pc);
        int r = profile_load(&pc, profile, &err);
        if (r < 0) {
                log_error("mcp: %s", err ? err : strerror(-r));
                run_config_done(&pc);
                return EXIT_SETUP;
        }
        uint64_t memory = pc.memory_bytes, timeout = pc.timeout_ms;
        run_config_done(&pc);

        if (max_memory && (memory == 0 || memory > max_memory)) {
                char size[32];
                snprintf(size, sizeof(size), "%" PRIu64, max_memory);
                *run_args = strv_append(strv_append(*run_args, "--memory"), size);
        }
        if (timeout && timeout < cfg->max_timeout_ms && !max_timeout_set)
                cfg->max_timeout_ms = timeout;
        return EXIT_OK;
}

int verb_mcp(int argc, char **argv)
{
        static const struct option options[] = {
                { "profile",        required_argument, NULL, 'p' },
                { "max-timeout",    required_argument, NULL, 'T' },
                { "max-memory",     required_argument, NULL, 'M' },
                { "max-concurrent", required_argument, NULL, 'C' },
                { "net",            required_argument, NULL, 'N' },
                { "allow",          required_argument, NULL, 'A' },
                { "help",           no_argument,       NULL, 'h' },
                {}
        };
        struct mcp_config cfg = { .max_timeout_ms = MCP_DEFAULT_TIMEOUT_MS,
                                  .max_concurrent = MCP_CONCURRENT_DEFAULT };
        _cleanup_strv_ char **run_args = NULL;
        const char *net = NULL, *profile = NULL;
        uint64_t max_memory = 0;
        bool max_timeout_set = false;
        bool allow = false;
        uint64_t v;
        int c, r;

        while ((c = getopt_long(argc, argv, "hp:", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        run_args = strv_append(strv_append(run_args, "--profile"), optarg);
                        profile = optarg;
                        break;
                case 'T':
                        if (parse_duration_ms(optarg, &v) < 0 || v == 0)
                                return cli_bad_value("mcp", "max-timeout", optarg, "expected a duration above 0 (30s, 5m)");
                        cfg.max_timeout_ms = v;
                        max_timeout_set = true;
                        break;
                case 'M':
                        if (parse_size(optarg, &v) < 0 || v == 0)
                                return cli_bad_value("mcp", "max-memory", optarg, "expected a size above 0 (512M, 2G)");
                        max_memory = v;
                        break;
                case 'C': {
                        char *end;
                        errno = 0;
                        unsigned long n = strtoul(optarg, &end, 10);
                        if (errno || *end || !*optarg || *optarg == '-' || n < 1 || n > MCP_CONCURRENT_MAX)
                                return cli_bad_value("mcp", "max-concurrent", optarg, "expected 1 to 64");
                        cfg.max_concurrent = (unsigned)n;
                        break;
                }
                case 'N':
                        if (!streq(optarg, "none") && !streq(optarg, "host") && !streq(optarg, "allow"))
                                return cli_bad_value("mcp", "net", optarg, "expected none, host or allow");
                        net = optarg;
                        break;
                case 'A':
                        run_args = strv_append(strv_append(run_args, "--allow"), optarg);
                        allow = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("mcp", argv, options);
                }
        r = cli_no_operands("mcp", argc, argv, optind);
        if (r != EXIT_OK)
                return r;
        if (allow && !(net && streq(net, "allow"))) {
                log_error("mcp: --allow goes with --net allow");
                return EXIT_USAGE;
        }
        r = profile_ceilings(profile, max_memory, max_timeout_set, &cfg, &run_args);
        if (r != EXIT_OK)
                return r;
        /* never the host's network unless the operator says so */
        run_args = strv_append(strv_append(run_args, "--net"), net ? net : "none");
        /* a node whose [admission] cap is reached queues the call, as long
         * as a run may last, instead of failing it: the server's own
         * queue (max_concurrent) comes first, the node's count second */
        _cleanup_free_ char *queue_wait = xasprintf("%llums", (unsigned long long)cfg.max_timeout_ms);
        run_args = strv_append(strv_append(run_args, "--queue-wait"), queue_wait);
        cfg.run_args = run_args;
        if (isatty(STDIN_FILENO))
                log_warning("mcp: stdin is a terminal; this server speaks JSON-RPC, one message per line, "
                            "for an MCP client that starts it");

        r = mcp_serve(&cfg);
        if (r < 0) {
                log_error("mcp: %s", strerror(-r));
                return EXIT_SETUP;
        }
        return EXIT_OK;
}
