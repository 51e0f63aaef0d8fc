/* cli/sandbox.c - `hutch sandbox start|ls|stop|fork` and `hutch exec`: live
 * sandboxes (run/live.h). `sandbox start` takes `hutch run`'s options
 * and builds the sandbox with `hutch run`'s stages; the rest is run/. */
#include "config.h"

#include <getopt.h>
#include <string.h>
#include <sys/random.h>

#include "cli/cli.h"
#include "cli/run-internal.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "run/live-kernel.h"
#include "run/live.h"
#include "run/live-publish.h"
#include "run/run.h"
#include "sandbox/landlock.h"
#include "sandbox/sandbox.h"

#define IDLE_DEFAULT_MS (3600u * 1000)

static void sandbox_help(FILE *f)
{
        fprintf(f,
                "Usage: hutch sandbox start [NAME] [--idle-timeout D] [--publish [HOST_PORT:]PORT]...\n"
                "                           [RUN OPTIONS]\n"
                "       hutch sandbox ls [--json]\n"
                "       hutch sandbox stop NAME\n"
                "       hutch sandbox fork NAME NEW\n"
                "\n"
                "A live sandbox stays up between calls: `hutch exec NAME -- CMD` runs a job in it.\n"
                "start builds it as `hutch run` would (-p, --workdir, --session, --memory, ...),\n"
                "prints its name and returns; it stops after --idle-timeout (default 1h) without an\n"
                "exec, or at `hutch sandbox stop`, and nothing of it survives.\n"
                "fork copies NAME's workspace files as they are now (not its processes) into a new\n"
                "stopped sandbox NEW, kept as the session NEW; `hutch sandbox start NEW` starts it\n"
                "with NAME's run options and that session.\n"
                "\n"
                "Options:\n"
                "  --idle-timeout D     start: stop after D without an exec (30s, 10m, 1h; none)\n"
                "  --publish [HOST_PORT:]PORT\n"
                "                       start: relay 127.0.0.1:HOST_PORT on the host (omitted or 0:\n"
                "                       a free one, shown by start and by `sandbox ls --json`) to\n"
                "                       127.0.0.1:PORT inside; repeatable\n"
                "  --json               ls: one JSON object a line\n"
                "\n"
                "See hutch-sandbox(1).\n");
}

/* One --publish SPEC, added to ports[*n]: 0 or EXIT_USAGE, said. */
static int add_publish(const char *spec, struct live_port *ports, size_t *n)
{
        struct live_port p;
        const char *why;
        if (!spec)
                return log_error("sandbox start: --publish needs [HOST_PORT:]PORT"), EXIT_USAGE;
        if (live_publish_parse(spec, &p, &why) < 0)
                return cli_bad_value("sandbox start", "publish", spec, why);
        if (*n >= LIVE_PUBLISH_MAX) {
                log_error("sandbox start: --publish %s: at most %d ports", spec, LIVE_PUBLISH_MAX);
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < *n; i++)
                if (ports[i].port == p.port || (p.host_port && ports[i].host_port == p.host_port)) {
                        log_error("sandbox start: --publish %s: port %u is published twice", spec,
                                  ports[i].port == p.port ? p.port : p.host_port);
                        return EXIT_USAGE;
                }
        ports[(*n)++] = p;
        return 0;
}

/* Bind every --publish on the host's loopback, before the supervisor
 * forks: 0 or an exit code, said. */
static int bind_publish(const struct run_config *cfg, struct live_port *ports, size_t n)
{
        if (n && cfg->net == NET_HOST) {
                log_error("sandbox start: --publish: the sandbox shares the host's network (network = host); "
                          "its ports are the host's already");
                return EXIT_USAGE;
        }
        if (n && cfg->isolation == ISOLATION_LANDLOCK) {
                log_error("sandbox start: --publish needs a network namespace of the sandbox's own "
                          "(isolation = namespaces)");
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < n; i++) {
                unsigned asked = ports[i].host_port;
                int r = live_publish_bind(&ports[i]);
                if (r == -EACCES && asked && asked < live_publish_unprivileged_start()) {
                        log_error("sandbox start: --publish %u:%u: host port %u is privileged here (below %u, "
                                  "net.ipv4.ip_unprivileged_port_start) and hutch runs unprivileged",
                                  asked, ports[i].port, asked, live_publish_unprivileged_start());
                        return EXIT_USAGE;
                }
                if (r < 0) {
                        log_error_errno(r, "sandbox start: --publish %u:%u: cannot listen on 127.0.0.1:%u: %m",
                                        asked, ports[i].port, asked);
                        return EXIT_SETUP;
                }
        }
        return EXIT_OK;
}

/* The words after NAME: --idle-timeout and --publish are the
 * sandbox's own, the rest go to `hutch run`'s parser (after the
 * forked-from sandbox's options in *args) and to *given. Sets
 * live->args, what NAME.json keeps. Returns EXIT_OK, -1 after printing
 * the help (--help), or a usage exit code after saying why. */
static int start_options(int argc, char **argv, int i, struct run_live *live, struct live_port *ports,
                         char ***args, size_t *n, char ***forked, char ***given)
{
        size_t n_given = 0;
        int r;

        for (; i < argc; i++) {
                if (streq(argv[i], "--help") || streq(argv[i], "-h")) {
                        /* start's own help, not hutch run's, which parses the rest */
                        sandbox_help(stdout);
                        return -1;
                }
                if (streq(argv[i], "--idle-timeout") || startswith(argv[i], "--idle-timeout=")) {
                        const char *v = strchr(argv[i], '=') ? strchr(argv[i], '=') + 1 : argv[++i];
                        if (!v) {
                                log_error("sandbox start: --idle-timeout needs a duration");
                                return EXIT_USAGE;
                        }
                        if (streq(v, "none"))
                                live->idle_ms = 0;
                        else if (parse_duration_ms(v, &live->idle_ms) < 0 || !live->idle_ms)
                                return cli_bad_value("sandbox start", "idle-timeout", v,
                                                     "expected a duration (30s, 10m, 1h) or none");
                        continue;
                }
                if (streq(argv[i], "--publish") || startswith(argv[i], "--publish=")) {
                        const char *v = strchr(argv[i], '=') ? strchr(argv[i], '=') + 1 : argv[++i];
                        r = add_publish(v, ports, &live->n_ports);
                        if (r != 0)
                                return r;
                        continue;
                }
                if (streq(argv[i], "--")) {
                        log_error("sandbox start: no command: jobs come with hutch exec %s -- CMD", live->name);
                        return EXIT_USAGE;
                }
                if (*forked && (streq(argv[i], "--session") || startswith(argv[i], "--session=") ||
                                streq(argv[i], "--workdir") || startswith(argv[i], "--workdir=") ||
                                streq(argv[i], "-w"))) {
                        log_error("sandbox start: %s is a fork: its workspace is its session %s, not %s",
                                  live->name, live->name, argv[i]);
                        return EXIT_USAGE;
                }
                *args = strv_push(*args, n, argv[i]);
                *given = strv_push(*given, &n_given, argv[i]);
        }
        /* what NAME.json keeps for a fork of this sandbox */
        if (*forked) {
                size_t nf = strv_length(*forked);
                for (char **g = *given; g && *g; g++)
                        *forked = strv_push(*forked, &nf, *g);
        }
        live->args = *forked ? *forked : *given;
        return EXIT_OK;
}

/* What `hutch run`'s parser took, checked for a live sandbox, and the
 * profile resolved. Returns EXIT_OK or an exit code after saying why. */
static int start_check(struct run_config *cfg, struct run_args *a)
{
        _cleanup_free_ char *err = NULL;

        /* --secret: an exec's record is written by `hutch exec`, which
         * would not know the values to redact; refused until it does */
        if (a->lang || a->code || a->code_file || a->request || a->id_key || a->apply || a->detach || a->json ||
            a->events || cfg->tty || a->secrets) {
                log_error("sandbox start: --lang, -c, --file, --request, --id, --apply, --detach, --json, "
                          "--events, --secret and --tty are not for a live sandbox");
                return EXIT_USAGE;
        }
        int code = run_resolve_secrets(a, cfg);
        if (code != EXIT_OK)
                return code;
        struct profile_request preq = { .profile = a->profile, .trust = a->trust_profile, .overrides = a->overrides };
        bool cli_error;
        if (profile_resolve(cfg, &preq, &cli_error, &err) < 0) {
                log_error("sandbox start: %s", err);
                return cli_error ? EXIT_USAGE : EXIT_SETUP;
        }
        if (cfg->runtime == RUNTIME_GVISOR || cfg->tty) {
                log_error("sandbox start: runtime gvisor and tty are not supported for a live sandbox yet");
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

static int start(int argc, char **argv)
{
        struct run_config cfg;
        struct run_args a = { .ui = cli_run_ui() };
        struct live_port ports[LIVE_PUBLISH_MAX];
        struct run_live live = { .idle_ms = IDLE_DEFAULT_MS, .listen_fd = -1, .ports = ports };
        pid_t me = getpid();
        _cleanup_free_ char *gen = NULL;
        char **args = NULL, **forked = NULL, **given = NULL;
        size_t n = 0;
        int i = 1, code = EXIT_USAGE, r;

        run_config_init(&cfg);
        args = strv_push(args, &n, "sandbox start");
        if (i < argc && argv[i][0] != '-')
                live.name = argv[i++];
        else {
                uint8_t b[4] = { 0 };
                (void)!getrandom(b, sizeof(b), 0);
                live.name = gen = xasprintf("sb-%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
        }
        if (!live_name_valid(live.name)) {
                log_error("sandbox start: \"%s\": not a sandbox name (1-64 of A-Z a-z 0-9 . _ -)", live.name);
                goto out;
        }
        /* a stopped fork (hutch sandbox fork): its session and the run
         * options of the sandbox it came from, before the ones given */
        r = live_fork_start_args(live.name, &forked);
        if (r < 0 && r != -ENOENT) {
                code = EXIT_SETUP;
                goto out;
        }
        for (char **f = forked; f && *f; f++)
                args = strv_push(args, &n, *f);
        code = start_options(argc, argv, i, &live, ports, &args, &n, &forked, &given);
        if (code != EXIT_OK) {
                code = code < 0 ? EXIT_OK : code;       /* -1: the help, printed */
                goto out;
        }
        /* the sandbox's own run: its command says what it is */
        args = strv_push(args, &n, "--");
        args = strv_push(args, &n, "sandbox");
        args = strv_push(args, &n, live.name);
        r = run_parse_args((int)n, args, &cfg, &a);
        if (r != 0) {
                code = r < 0 ? EXIT_OK : r;
                goto out;
        }
        code = start_check(&cfg, &a);
        if (code != EXIT_OK)
                goto out;
        /* each exec's job gets a Landlock domain of its own: without
         * one, execs can reach each other's stdio through /proc */
        if (landlock_abi() <= 0)
                log_warning("sandbox start: this kernel has no Landlock: the execs of %s, one user in one pid "
                            "namespace, can reach each other's processes and stdio (hutch-exec(1))", live.name);
        live.workdir = a.workdir != NULL;
        code = bind_publish(&cfg, ports, live.n_ports);
        if (code != EXIT_OK)
                goto out;
        if (live_nofile_raise() < 0) {
                code = EXIT_SETUP;
                goto out;
        }
        if (live_listen(live.name, &live.listen_fd, &live.listen_ino) < 0) {
                code = EXIT_SETUP;
                goto out;
        }
        a.live = &live;
        a.detach = true;
        a.events = true;
        pid_t exiting = 0;
        code = run_execute(&cfg, &(struct lang_job) { .code_fd = -1 }, &a, NULL, false, NULL, &exiting);
        if (exiting > 0)
                sandbox_reap(exiting);
        /* the caller (not the supervisor, a fork of ours): where they are */
        for (size_t k = 0; code == EXIT_OK && getpid() == me && k < live.n_ports; k++)
                fprintf(stderr, "sandbox %s: 127.0.0.1:%u -> port %u inside\n", live.name, ports[k].host_port,
                        ports[k].port);
out:
        for (size_t k = 0; k < live.n_ports; k++)
                if (ports[k].fd >= 0)
                        close(ports[k].fd);
        if (live.listen_fd >= 0) {
                /* the caller, whose start failed: no sandbox to list */
                if (code != EXIT_OK && getpid() == me)
                        live_unlisten(live.name, live.listen_ino);
                close(live.listen_fd);
        }
        strv_free(args);
        strv_free(forked);
        strv_free(given);
        strv_free(a.overrides);
        strv_free(a.inputs);
        strv_free(a.labels);
        strv_free(a.secrets);
        run_config_done(&cfg);
        return code;
}

int verb_sandbox(int argc, char **argv)
{
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                sandbox_help(argc < 2 ? stderr : stdout);
                return argc < 2 ? EXIT_USAGE : EXIT_OK;
        }
        if (streq(argv[1], "start"))
                return start(argc - 1, argv + 1);
        if (streq(argv[1], "ls")) {
                bool json = argc == 3 && streq(argv[2], "--json");
                if (argc > 3 || (argc == 3 && !json)) {
                        log_error("sandbox ls: unexpected argument \"%s\" (usage: hutch sandbox ls [--json])",
                                  argv[argc - 1]);
                        return EXIT_USAGE;
                }
                return live_list(json);
        }
        if (streq(argv[1], "stop")) {
                if (argc != 3) {
                        log_error("sandbox stop: usage: hutch sandbox stop NAME");
                        return EXIT_USAGE;
                }
                return live_stop(argv[2]);
        }
        if (streq(argv[1], "fork")) {
                if (argc != 4) {
                        log_error("sandbox fork: usage: hutch sandbox fork NAME NEW");
                        return EXIT_USAGE;
                }
                return live_fork(argv[2], argv[3]);
        }
        log_error("sandbox: unknown command \"%s\" (start, ls, stop, fork)", argv[1]);
        return EXIT_USAGE;
}

static void exec_help(void)
{
        printf("Usage: hutch exec NAME [OPTIONS] -- CMD [ARGS...]\n"
               "       hutch exec NAME --kernel python|node [--timeout D] [--json] (-c CODE | --file FILE)\n"
               "\n"
               "Run CMD in the live sandbox NAME (hutch sandbox start) as a recorded run\n"
               "labelled sandbox=NAME, with its own timeout, output and exit status. Its stdin\n"
               "is empty unless --stdin or --stdin-file says otherwise.\n"
               "With --kernel, run CODE (or FILE's text; - reads stdin) in the sandbox's\n"
               "long-lived interpreter of that language: variables, imports and open files\n"
               "persist between calls, a final expression's value is printed as a REPL does,\n"
               "the timeout interrupts the call (the state lives on), and a call after the\n"
               "kernel died says its state was lost.\n"
               "\n"
               "Options:\n"
               "      --timeout DURATION   wall-clock limit (default: the sandbox profile's);\n"
               "                           then the job's process group is killed\n"
               "      --stdin              relay this command's stdin to the job's, as\n"
               "                           `cat | CMD` would; the job reads EOF when it ends\n"
               "      --stdin-file FILE    the job's stdin is FILE's bytes (read by hutch, as\n"
               "                           the caller: FILE never enters the sandbox)\n"
               "      --json               print one JSON object (hutch.result/1) at the end\n"
               "                           instead of passing the job's output through\n"
               "      --events             print JSON lines (hutch.event/1) as things happen:\n"
               "                           started (with the id), output, truncated, and exit\n"
               "                           (with the result), as hutch run --events does\n"
               "      --kernel LANG        run code in the sandbox's python or node interpreter\n"
               "  -c, --code CODE          the code (with --kernel)\n"
               "      --file FILE          the code from FILE, - for stdin (with --kernel)\n"
               "  -h, --help               show this help\n"
               "\n"
               "Exit status: the job's own, or as hutch run's (124 timed out, 126, 127, 128+N);\n"
               "75 when 16 execs are running in NAME already or a fork is copying it; 125 when\n"
               "NAME is not running.\n"
               "See hutch-exec(1).\n");
}

/* `hutch exec NAME --kernel LANG (-c CODE | --file FILE)` */
static int exec_kernel(const char *name, int kernel, const char *code, const char *file, int rest,
                       uint64_t timeout_ms, bool json)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        if (kernel < 0) {
                log_error("exec: -c and --file need --kernel python|node");
                return EXIT_USAGE;
        }
        if (!code == !file || rest > 0) {
                log_error("exec: --kernel takes its code from one of -c CODE or --file FILE, and no command");
                return EXIT_USAGE;
        }
        if (file) {
                int r = read_file(streq(file, "-") ? "/dev/stdin" : file, &text, &len);
                if (r < 0) {
                        log_error("exec: --file %s: %s", file, strerror(-r));
                        return EXIT_USAGE;
                }
                code = text;
        } else {
                len = strlen(code);
        }
        return live_kernel_exec(name, kernel, code, len, timeout_ms, json, cli_run_ui());
}

int verb_exec(int argc, char **argv)
{
        enum { OPT_STDIN = 0x100, OPT_STDIN_FILE, OPT_EXEC_EVENTS };
        static const struct option opts[] = {
                { "timeout",    required_argument, NULL, 'T' },
                { "json",       no_argument,       NULL, 'j' },
                { "events",     no_argument,       NULL, OPT_EXEC_EVENTS },
                { "stdin",      no_argument,       NULL, OPT_STDIN },
                { "stdin-file", required_argument, NULL, OPT_STDIN_FILE },
                { "input",      required_argument, NULL, 'i' },
                { "kernel",     required_argument, NULL, 'K' },
                { "code",       required_argument, NULL, 'c' },
                { "file",       required_argument, NULL, 'f' },
                { "help",       no_argument,       NULL, 'h' },
                {}
        };
        struct live_exec_opts eo = { 0 };
        int c, kernel = -1;
        const char *code = NULL, *code_file = NULL;

        /* NAME first, then exec's options, then the command */
        const char *name = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
        if (name) {
                argv++;
                argc--;
        }
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:hi:c:", opts, NULL)) != -1)
                switch (c) {
                case 'T':
                        if (parse_duration_ms(optarg, &eo.timeout_ms) < 0 || !eo.timeout_ms)
                                return cli_bad_value("exec", "timeout", optarg, "expected a duration (10s, 5m)");
                        break;
                case 'j':
                        eo.json = true;
                        break;
                case OPT_EXEC_EVENTS:
                        eo.events = true;
                        break;
                case OPT_STDIN:
                        eo.stdin_relay = true;
                        break;
                case OPT_STDIN_FILE:
                        eo.stdin_file = optarg;
                        break;
                case 'i':
                        /* hutch run's -i shows a host path in the workspace:
                         * the same letter must not mean stdin here */
                        log_error("exec: -i/--input is hutch run's (a host path shown in the workspace); give "
                                  "it to hutch sandbox start, or the job's stdin with --stdin-file %s", optarg);
                        return EXIT_USAGE;
                case 'K':
                        kernel = live_kernel_lang_from_string(optarg);
                        if (kernel < 0)
                                return cli_bad_value("exec", "kernel", optarg, "expected python or node");
                        break;
                case 'c':
                        code = optarg;
                        break;
                case 'f':
                        code_file = optarg;
                        break;
                case 'h':
                        exec_help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("exec", argv, opts);
                }
        if (eo.json && eo.events) {
                log_error("exec: --events and --json exclude each other (the exit event holds the result)");
                return EXIT_USAGE;
        }
        if (eo.stdin_relay && eo.stdin_file) {
                log_error("exec: --stdin and --stdin-file exclude each other (the job has one stdin)");
                return EXIT_USAGE;
        }
        if (!name && optind < argc && !streq(argv[optind], "--"))
                name = argv[optind++];
        if (!name) {
                log_error("exec: no sandbox name (usage: hutch exec NAME -- CMD)");
                return EXIT_USAGE;
        }
        if (kernel >= 0 || code || code_file) {
                if (eo.events || eo.stdin_relay || eo.stdin_file) {
                        log_error("exec: --events, --stdin and --stdin-file are for a command, not --kernel");
                        return EXIT_USAGE;
                }
                return exec_kernel(name, kernel, code, code_file, argc - optind, eo.timeout_ms, eo.json);
        }
        if (optind < argc && streq(argv[optind], "--"))
                optind++;
        if (optind >= argc) {
                log_error("exec: no command given (try: hutch exec %s -- sh -c 'echo hi')", name);
                return EXIT_USAGE;
        }
        return live_exec(name, argv + optind, &eo, cli_run_ui());
}
