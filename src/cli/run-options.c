/* cli/run-options.c - `hutch run`'s command line: the usage text, the
 * option table (hutch's own options plus one per profile key) and the
 * parser that turns argv into a run_config and the run's arguments
 * (struct run_args). A bad command line runs nothing and records
 * nothing.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run-internal.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "workspace/session.h"

static void run_help(FILE *f)
{
        fprintf(f,
"Usage: hutch run [OPTIONS] [--] COMMAND [ARG...]\n"
"       hutch run [OPTIONS] --lang LANG (-c CODE | --file FILE | -) [-- ARG...]\n"
"\n"
"Run COMMAND in a fresh rootless sandbox: new user, mount, pid, net, ipc,\n"
"uts and cgroup namespaces, a read-only view of the host's system dirs,\n"
"and a throwaway writable /tmp, $HOME and /workspace. Every run is\n"
"recorded (see hutch ls, hutch show).\n"
"\n"
"Options:\n"
"  -p, --profile NAME|PATH  settings to start from (default: default)\n"
"      --trust-profile      let a -p PATH outside the trusted profile dirs\n"
"                           widen the sandbox (host paths, masks, network,\n"
"                           syscall allowances); refused otherwise\n"
"  -t, --tty                give the job a pseudo-terminal (interactive use:\n"
"                           no default timeout; every key goes to the job;\n"
"                           ~. at the start of a line ends it)\n"
"  -e, --env KEY=VALUE      set an environment variable (repeatable)\n"
"      --lang LANG          run code in LANG (share/languages.ini: python,\n"
"                           node, bash, sh, perl, c, ...), given by\n"
"  -c, --code CODE          ... this argument,\n"
"      --file FILE          ... this host file, or\n"
"  -                        ... standard input\n"
"      --json               print one JSON object (hutch.result/1) at the end\n"
"                           instead of passing the job's output through\n"
"      --events             print JSON lines (hutch.event/1) as things happen:\n"
"                           started (with the id), output, heartbeat,\n"
"                           truncated, warning, and exit (with the result)\n"
"      --detach             print the run id and return; the run goes on in\n"
"                           the background (hutch wait, logs --follow, kill)\n"
"      --log-id             start each of hutch's messages with the run's id, once\n"
"                           it has one (for a server collecting many runs' stderr)\n"
"      --request FILE|-     the whole run as one JSON document (hutch.request/1,\n"
"                           see hutch-json(7)); answers with --json's object\n"
"                           (or with --events)\n"
"      --id KEY             idempotency key: if a finished run has KEY, answer\n"
"                           with its stored result and exit code, run nothing\n"
"      --id-wait            ... and if one with KEY is still running, wait for it\n"
"                           (default: fail with exit 75)\n"
"      --label KEY=VALUE    record a label with the run (repeatable; hutch ls\n"
"                           --label, hutch stats --label)\n"
"      --secret NAME[=@FILE]  pass the caller's variable NAME (or FILE's contents)\n"
"                           to the job as NAME; its value is never stored and\n"
"                           is replaced by [secret NAME] in the output (passed\n"
"                           through or captured) and JSON. -e values ARE stored\n"
"                           in the history: use --secret for credentials\n"

"      --net MODE           none (default: only loopback), host, or allow:\n"
"                           TCP only where --allow says, through hutch\n"
"      --allow HOST[:PORT]  let the job reach HOST (name, *.suffix, *, IP,\n"
"                           CIDR) on PORT (N, N-M, *; default 443 and 80)\n"
"      --deny HOST[:PORT]   refuse HOST before the allow rules (all ports)\n"
"      --add-host NAME=IP   dial IP for NAME in this run\n"
"      --net-max-connections N, --net-max-bytes SIZE  egress limits\n"
"  -w, --workdir DIR        show host DIR at the workspace (/workspace) through\n"
"                           an overlay: the job may change anything there,\n"
"                           DIR itself is never written; the changes are\n"
"                           recorded (hutch diff, hutch apply)\n"
"      --apply              apply the changes to DIR when the job succeeds; changes to\n"
"                           protected paths (.git/, shell rc files, editor and agent\n"
"                           config: hutch-apply(1)) make it apply nothing\n"
"      --skip-protected     with --apply: apply the rest, leave protected paths out\n"
"      --allow-protected    with --apply: apply protected paths too\n"
"      --snapshot yes|no    copy DIR before the job starts and run on the copy:\n"
"                           diff shows exactly the job's change, apply refuses\n"
"                           what you changed in DIR meanwhile (default no)\n"
"  -i, --input PATH[:NAME]  show host file or dir PATH read-only at\n"
"                           <workspace>/input/NAME (NAME: PATH's last part)\n"
"      --session NAME       work in persistent workspace NAME (created on first\n"
"                           use); the changes are kept only if the job succeeds\n"
"      --session-wait DURATION  wait this long for another run of the session\n"
"                           (default: fail at once)\n"
"      --commit success|always|never  when to keep a session's changes: when\n"
"                           the job succeeds (default), whatever it did, or never\n"
"      --queue-wait DURATION  when the node's [admission] cap is reached, wait\n"
"                           this long for a slot (default: exit 75 at once)\n"
"      --workdir-inside DIR the job's working directory inside the sandbox\n"
"                           (profile key workdir, default /workspace)\n"
"  -v, --verbose            say what hutch is doing (the run id, ...)\n"
"  -q, --quiet              print nothing but errors\n"
"  -h, --help               show this help\n"
"\n"
"Every profile key is an option too (hutch-profile(5)), e.g.:\n"
"      --timeout DURATION   wall-clock limit (default 30s, none with -t), then SIGTERM and\n"
"                           SIGKILL after --grace (default 2s)\n"
"      --memory SIZE        memory limit (default 512M)\n"
"      --cpu-time DURATION  cpu time limit of the whole job (default none)\n"
"      --pids N             process limit (default 256)\n"
"      --disk SIZE          writable scratch space (default 1G)\n"
"      --max-file-size SIZE, --nofile N, --cpus N, --memory-high SIZE\n"
"      --io-max \"DEV KEY=VAL\"  disk I/O cap (io.max), e.g. \"8:0 wbps=10M\"\n"
"      --capture SIZE       head and tail of each stream kept (default 64K)\n"
"      --ro PATH[:DEST]     bind a host path read-only (repeatable)\n"
"      --rw PATH[:DEST]     bind a host path read-write (repeatable)\n"
"      --runtime native|gvisor  gvisor: the job under gVisor's runsc, a\n"
"                           user-space kernel (slower; see hutch-run(1))\n"
"      --isolation namespaces|landlock|auto  landlock: no namespace, for\n"
"                           hosts that refuse them (weaker; hutch-run(1)\n"
"                           ISOLATION); auto: landlock only there, said so\n"
"      --uid N, --gid N, --hostname NAME\n"
"      --seccomp-mode deny|allow, --seccomp-deny LIST, --seccomp-allow LIST,\n"
"      --allow-ptrace yes|no, --require LIMITS|isolation=namespaces\n"
"\n"
"Exit status: the job's own exit code; 128+N if it was killed by signal N;\n"
"124 timed out (wall or cpu); 125 the sandbox could not be set up (or the\n"
"profile or the run store is unusable); 126 the command is not executable;\n"
"127 the command was not found; 130/143 cancelled (Ctrl-C twice, or SIGTERM\n"
"to hutch); 137 memory limit. See hutch-run(1).\n");
}

bool run_label_valid(const char *kv)
{
        const char *eq = strchr(kv, '=');
        return eq && eq != kv && eq - kv <= 256 && strlen(eq + 1) <= 4096;
}

/* The option handlers below each take the options of one concern and
 * return 0 (taken), a nonzero exit code (bad value), or OPT_NOT_MINE
 * when the option belongs to another concern. */
#define OPT_NOT_MINE (-2)

/* how the run is asked for and reported: profile, tty, code, output */
static int run_opt_output(int c, struct run_config *cfg, struct run_args *a)
{
        switch (c) {
        case 'p':
                a->profile = optarg;
                return 0;
        case 't':
                cfg->tty = true;
                return 0;
        case 'c':
                a->code = optarg;
                return 0;
        case OPT_LANG:
                a->lang = optarg;
                return 0;
        case OPT_FILE:
                a->code_file = optarg;
                return 0;
        case OPT_JSON:
                a->json = true;
                return 0;
        case 'v':
                a->verbosity = a->verbosity < LOG_VERBOSE ? LOG_VERBOSE : LOG_DEBUG;
                return 0;
        case 'q':
                a->verbosity = LOG_QUIET;
                return 0;
        case OPT_TRUST_PROFILE:
                a->trust_profile = true;
                return 0;
        case OPT_LOG_ID:
                a->log_id = true;
                return 0;
        case OPT_REQUEST:
                a->request = optarg;
                return 0;
        case OPT_EVENTS:
                a->events = true;
                return 0;
        case OPT_DETACH:
                a->detach = true;
                return 0;
        default:
                return OPT_NOT_MINE;
        }
}

/* what is recorded with the run and what the job is given: env,
 * labels, idempotency key, secrets */
static int run_opt_record(int c, struct run_args *a)
{
        switch (c) {
        case 'e':
                if (!is_key_value(optarg))
                        return cli_bad_value("run", "env", optarg, "expected KEY=VALUE");
                a->overrides = strv_push(a->overrides, &a->n_overrides, "env");
                a->overrides = strv_push(a->overrides, &a->n_overrides, optarg);
                return 0;
        case OPT_LABEL:
                if (!run_label_valid(optarg))
                        return cli_bad_value("run", "label", optarg,
                                             "expected KEY=VALUE (KEY: 1-256 characters)");
                a->labels = strv_append(a->labels, optarg);
                return 0;
        case OPT_ID:
                if (!*optarg || strlen(optarg) > 256)
                        return cli_bad_value("run", "id", optarg, "expected a key of 1-256 characters");
                a->id_key = optarg;
                return 0;
        case OPT_ID_WAIT:
                a->id_wait = true;
                return 0;
        case OPT_SECRET:
                a->secrets = strv_append(a->secrets, optarg);
                return 0;
        default:
                return OPT_NOT_MINE;
        }
}

/* the workspace: host dir, apply policy, inputs, session, waits */
static int run_opt_workspace(int c, struct run_args *a)
{
        switch (c) {
        case 'w':
                a->workdir = optarg;
                return 0;
        case OPT_WORKDIR_INSIDE:
                a->overrides = strv_push(a->overrides, &a->n_overrides, "workdir");
                a->overrides = strv_push(a->overrides, &a->n_overrides, optarg);
                return 0;
        case OPT_APPLY:
                a->apply = true;
                return 0;
        case OPT_SKIP_PROTECTED:
        case OPT_ALLOW_PROTECTED: {
                enum apply_protected_policy p = c == OPT_SKIP_PROTECTED ? APPLY_PROTECTED_SKIP
                                                                        : APPLY_PROTECTED_ALLOW;
                if (a->apply_protected != APPLY_PROTECTED_REFUSE && a->apply_protected != p) {
                        log_error("run: --skip-protected and --allow-protected exclude each other");
                        return EXIT_USAGE;
                }
                a->apply_protected = p;
                return 0;
        }
        case 'i':
                a->inputs = strv_append(a->inputs, optarg);
                return 0;
        case OPT_SESSION:
                if (!session_name_valid(optarg))
                        return cli_bad_value("run", "session", optarg,
                                             "expected 1-64 letters, digits, '.', '_' or '-', "
                                             "not starting with '.'");
                a->session = optarg;
                return 0;
        case OPT_QUEUE_WAIT:
                if (parse_duration_ms(optarg, &a->queue_wait_ms) < 0)
                        return cli_bad_value("run", "queue-wait", optarg, "expected a duration");
                return 0;
        case OPT_SESSION_WAIT:
                if (parse_duration_ms(optarg, &a->session_wait_ms) < 0)
                        return cli_bad_value("run", "session-wait", optarg, "expected a duration");
                return 0;
        default:
                return OPT_NOT_MINE;
        }
}

/* --net and every profile key (--timeout, --memory, ..., --image):
 * passed through to the profile as overrides */
static int run_opt_profile_key(int c, struct run_args *a)
{
        const char *key;

        if (c == OPT_NET)
                key = "network";
        else if (c >= OPT_KEY_BASE && c <= OPT_KEY_BASE + (int)profile_n_keys + 1)
                key = c == OPT_KEY_BASE + (int)profile_n_keys + 1 ? "image"
                      : c == OPT_KEY_BASE + (int)profile_n_keys ? "env" : profile_keys[c - OPT_KEY_BASE].flag;
        else
                return OPT_NOT_MINE;
        a->overrides = strv_push(a->overrides, &a->n_overrides, key);
        a->overrides = strv_push(a->overrides, &a->n_overrides, optarg);
        return 0;
}

/* After the options: options that exclude each other, and what to run
 * (the request, code in a language, or the command after the options). */
static int run_check_args(int argc, char **argv, struct run_config *cfg, struct run_args *a)
{
        if (a->events && a->json) {
                log_error("run: --events and --json exclude each other (the exit event holds the result)");
                return EXIT_USAGE;
        }
        if (a->apply_protected != APPLY_PROTECTED_REFUSE && !a->apply) {
                log_error("run: --%s only goes with --apply",
                          a->apply_protected == APPLY_PROTECTED_SKIP ? "skip-protected" : "allow-protected");
                return EXIT_USAGE;
        }
        if ((a->events || a->detach) && cfg->tty) {
                log_error("run: --%s and -t exclude each other", a->events ? "events" : "detach");
                return EXIT_USAGE;
        }
        if (a->request) {
                /* the request says what to run */
                if (optind < argc || a->code || a->code_file || a->lang) {
                        log_error("run: --request gives the command; no command, --lang, -c or --file with it");
                        return EXIT_USAGE;
                }
                return 0;
        }
        if (a->lang) {
                if (optind < argc && streq(argv[optind], "-")) {
                        a->code_stdin = true;
                        optind++;
                }
                if (optind < argc && streq(argv[optind], "--"))
                        optind++;
                if (!!a->code + !!a->code_file + a->code_stdin != 1) {
                        log_error("run: --lang needs exactly one of -c CODE, --file FILE or - (stdin)");
                        return EXIT_USAGE;
                }
                for (size_t i = (size_t)optind, n = strv_length(cfg->argv); i < (size_t)argc; i++)
                        cfg->argv = strv_push(cfg->argv, &n, argv[i]);
                return 0;
        }
        if (a->code || a->code_file) {
                log_error("run: -c and --file need --lang (e.g. hutch run --lang python -c 'print(42)')");
                return EXIT_USAGE;
        }
        /* an image may bring its command (Entrypoint, Cmd): checked
         * once it is resolved */
        bool image = false;
        for (size_t i = 0; i + 1 < a->n_overrides; i += 2)
                if (streq(a->overrides[i], "image") ||
                    (streq(a->overrides[i], "root") && startswith(a->overrides[i + 1], "image:")))
                        image = true;
        if (optind >= argc && !image) {
                log_error("run: no command given (try: hutch run -- sh -c 'echo hi')");
                return EXIT_USAGE;
        }
        for (size_t i = (size_t)optind, n = strv_length(cfg->argv); i < (size_t)argc; i++)
                cfg->argv = strv_push(cfg->argv, &n, argv[i]);
        return 0;
}

int run_parse_args(int argc, char **argv, struct run_config *cfg, struct run_args *a)
{
        static const struct option own[] = {
                { "profile", required_argument, NULL, 'p' },
                { "tty",     no_argument,       NULL, 't' },
                { "env",     required_argument, NULL, 'e' },
                { "code",    required_argument, NULL, 'c' },
                { "lang",    required_argument, NULL, OPT_LANG },
                { "file",    required_argument, NULL, OPT_FILE },
                { "json",    no_argument,       NULL, OPT_JSON },
                { "net",     required_argument, NULL, OPT_NET },
                { "verbose", no_argument,       NULL, 'v' },
                { "quiet",   no_argument,       NULL, 'q' },
                { "workdir", required_argument, NULL, 'w' },
                { "workdir-inside", required_argument, NULL, OPT_WORKDIR_INSIDE },
                { "apply",   no_argument,       NULL, OPT_APPLY },
                { "skip-protected", no_argument, NULL, OPT_SKIP_PROTECTED },
                { "allow-protected", no_argument, NULL, OPT_ALLOW_PROTECTED },
                { "input",   required_argument, NULL, 'i' },
                { "session", required_argument, NULL, OPT_SESSION },
                { "session-wait", required_argument, NULL, OPT_SESSION_WAIT },
                { "queue-wait", required_argument, NULL, OPT_QUEUE_WAIT },
                { "log-id",  no_argument,       NULL, OPT_LOG_ID },
                { "trust-profile", no_argument, NULL, OPT_TRUST_PROFILE },
                { "request", required_argument, NULL, OPT_REQUEST },
                { "label",   required_argument, NULL, OPT_LABEL },
                { "id",      required_argument, NULL, OPT_ID },
                { "id-wait", no_argument,       NULL, OPT_ID_WAIT },
                { "secret",  required_argument, NULL, OPT_SECRET },
                { "events",  no_argument,       NULL, OPT_EVENTS },
                { "detach",  no_argument,       NULL, OPT_DETACH },
                { "help",    no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_free_ struct option *opts = profile_cli_options(own, OPT_KEY_BASE);
        int c, r;

        optind = 1;
        opterr = 0;
        a->verbosity = LOG_NORMAL;
        /* '+': options end at the first non-option, the job's command */
        while ((c = getopt_long(argc, argv, "+:p:te:c:vqhw:i:", opts, NULL)) != -1) {
                if (c == 'h') {
                        run_help(stdout);
                        return -1;
                }
                if (c == '?' && optind > 0 && startswith(argv[optind - 1], "--publish")) {
                        log_error("run: --publish is for a live sandbox (hutch sandbox start --publish "
                                  "[HOST_PORT:]PORT), not for a run");
                        return EXIT_USAGE;
                }
                if (c == ':' || c == '?')
                        /* sandbox start parses its run options here too:
                         * the error names the verb the user typed */
                        return cli_usage_error(streq(argv[0], "sandbox start") ? argv[0] : "run", argv, opts);
                r = run_opt_output(c, cfg, a);
                if (r == OPT_NOT_MINE)
                        r = run_opt_record(c, a);
                if (r == OPT_NOT_MINE)
                        r = run_opt_workspace(c, a);
                if (r == OPT_NOT_MINE)
                        r = run_opt_profile_key(c, a);
                if (r == OPT_NOT_MINE)
                        return EXIT_USAGE;
                if (r != 0)
                        return r;
        }
        log_set_level((enum log_level)a->verbosity);

        return run_check_args(argc, argv, cfg, a);
}
