/* cli/run.c - `hutch run`: command line -> run_config -> record -> sandbox
 * -> record -> exit code. This is the one place that logs what went
 * wrong with a run.
 *
 * Order matters for "never lose a run": the profile is resolved and the
 * syscall policy built first (a bad profile runs nothing and records
 * nothing, like a bad command line); then the run's row is written with
 * status running *before* the sandbox exists, and completed in one
 * transaction at the end. If the row cannot be written, the job does not
 * run.
 */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>

#include "workspace/apply.h"
#include "record/blobstore.h"
#include "supervise/capture.h"
#include "limits/cgroup.h"
#include "limits/cgroup-systemd.h"
#include "limits/iomax.h"
#include "cli/cli.h"
#include "limits/enforce.h"
#include "lib/exit-codes.h"
#include "config/lang.h"
#include "lib/log.h"
#include "sandbox/ns.h"
#include "config/profile.h"
#include "record/runfiles.h"
#include "config/run-config.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"
#include "workspace/session.h"
#include "record/store.h"
#include "supervise/supervise.h"

#define HEARTBEAT_MS 5000

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
"  -t, --tty                give the job a pseudo-terminal (interactive use)\n"
"  -e, --env KEY=VALUE      set an environment variable (repeatable)\n"
"      --lang LANG          run code in LANG (share/languages.ini: python,\n"
"                           node, bash, sh, perl, c, ...), given by\n"
"  -c, --code CODE          ... this argument,\n"
"      --file FILE          ... this host file, or\n"
"  -                        ... standard input\n"
"      --json               print one JSON object (hutch.result/1) at the end\n"
"                           instead of passing the job's output through\n"
"      --net MODE           none (default: only loopback) or host\n"
"  -w, --workdir DIR        show host DIR at the workspace (/workspace) through\n"
"                           an overlay: the job may change anything there,\n"
"                           DIR itself is never written; the changes are\n"
"                           recorded (hutch diff, hutch apply)\n"
"      --apply              apply the changes to DIR when the job succeeds\n"
"  -i, --input PATH[:NAME]  show host file or dir PATH read-only at\n"
"                           <workspace>/input/NAME (NAME: PATH's last part)\n"
"      --session NAME       work in persistent workspace NAME (created on first\n"
"                           use); the changes are kept only if the job succeeds\n"
"      --session-wait DURATION  wait this long for another run of the session\n"
"                           (default: fail at once)\n"
"      --commit success|always  when to keep a session's changes (default success)\n"
"      --workdir-inside DIR the job's working directory inside the sandbox\n"
"                           (profile key workdir, default /workspace)\n"
"  -v, --verbose            say what hutch is doing (the run id, ...)\n"
"  -q, --quiet              print nothing but errors\n"
"  -h, --help               show this help\n"
"\n"
"Every profile key is an option too (hutch-profile(5)), e.g.:\n"
"      --timeout DURATION   wall-clock limit (default 30s), then SIGTERM and\n"
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
"      --uid N, --gid N, --hostname NAME\n"
"      --seccomp-mode deny|allow, --seccomp-deny LIST, --seccomp-allow LIST,\n"
"      --allow-ptrace yes|no, --require LIMITS\n"
"\n"
"Exit status: the job's own exit code; 128+N if it was killed by signal N;\n"
"124 timed out (wall or cpu); 125 the sandbox could not be set up (or the\n"
"profile or the run store is unusable); 126 the command is not executable;\n"
"127 the command was not found; 130/143 cancelled (Ctrl-C twice, or SIGTERM\n"
"to hutch); 137 memory limit. See hutch-run(1).\n");
}

enum {
        OPT_JSON = 0x100, OPT_NET, OPT_LANG, OPT_FILE, OPT_APPLY, OPT_WORKDIR_INSIDE,
        OPT_SESSION, OPT_SESSION_WAIT, OPT_COMMIT,
        OPT_KEY_BASE = 0x200,
};

struct run_args {
        const char *profile;
        char **overrides;       /* key, value, key, value, ... */
        bool json;
        const char *lang;
        const char *code;
        const char *code_file;
        bool code_stdin;
        int verbosity;
        const char *workdir;    /* --workdir: host dir under the workspace */
        bool apply;
        char **inputs;          /* --input, as given */
        const char *session;    /* --session NAME */
        uint64_t session_wait_ms;
        bool commit_always;
};

static int parse_run_args(int argc, char **argv, struct run_config *cfg, struct run_args *a)
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
                { "input",   required_argument, NULL, 'i' },
                { "session", required_argument, NULL, OPT_SESSION },
                { "session-wait", required_argument, NULL, OPT_SESSION_WAIT },
                { "commit",  required_argument, NULL, OPT_COMMIT },
                { "help",    no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_free_ struct option *opts = profile_cli_options(own, OPT_KEY_BASE);
        int c;

        optind = 1;
        opterr = 0;
        a->verbosity = LOG_NORMAL;
        /* '+': options end at the first non-option, the job's command */
        while ((c = getopt_long(argc, argv, "+:p:te:c:vqhw:i:", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        a->profile = optarg;
                        break;
                case 't':
                        cfg->tty = true;
                        break;
                case 'e':
                        if (!strchr(optarg, '=') || optarg[0] == '=')
                                return cli_bad_value("run", "env", optarg, "expected KEY=VALUE");
                        a->overrides = strv_append(a->overrides, "env");
                        a->overrides = strv_append(a->overrides, optarg);
                        break;
                case 'c':
                        a->code = optarg;
                        break;
                case OPT_LANG:
                        a->lang = optarg;
                        break;
                case OPT_FILE:
                        a->code_file = optarg;
                        break;
                case OPT_JSON:
                        a->json = true;
                        break;
                case OPT_NET:
                        a->overrides = strv_append(a->overrides, "network");
                        a->overrides = strv_append(a->overrides, optarg);
                        break;
                case 'v':
                        a->verbosity = a->verbosity < LOG_VERBOSE ? LOG_VERBOSE : LOG_DEBUG;
                        break;
                case 'q':
                        a->verbosity = LOG_QUIET;
                        break;
                case 'w':
                        a->workdir = optarg;
                        break;
                case OPT_WORKDIR_INSIDE:
                        a->overrides = strv_append(a->overrides, "workdir");
                        a->overrides = strv_append(a->overrides, optarg);
                        break;
                case OPT_APPLY:
                        a->apply = true;
                        break;
                case 'i':
                        a->inputs = strv_append(a->inputs, optarg);
                        break;
                case OPT_SESSION:
                        if (!session_name_valid(optarg))
                                return cli_bad_value("run", "session", optarg,
                                                     "expected 1-64 letters, digits, '.', '_' or '-', "
                                                     "not starting with '.'");
                        a->session = optarg;
                        break;
                case OPT_SESSION_WAIT:
                        if (parse_duration_ms(optarg, &a->session_wait_ms) < 0)
                                return cli_bad_value("run", "session-wait", optarg, "expected a duration");
                        break;
                case OPT_COMMIT:
                        if (!streq(optarg, "success") && !streq(optarg, "always"))
                                return cli_bad_value("run", "commit", optarg, "expected success or always");
                        a->commit_always = streq(optarg, "always");
                        break;
                case 'h':
                        run_help(stdout);
                        return -1;
                case ':':
                        log_error("run: option '%s' needs a value (see hutch run --help)", argv[optind - 1]);
                        return EXIT_USAGE;
                case '?':
                        log_error("run: unknown option '%s' (see hutch run --help)", argv[optind - 1]);
                        return EXIT_USAGE;
                default:
                        if (c >= OPT_KEY_BASE && c <= OPT_KEY_BASE + (int)profile_n_keys) {
                                const char *key = c == OPT_KEY_BASE + (int)profile_n_keys
                                                          ? "env" : profile_keys[c - OPT_KEY_BASE].flag;
                                a->overrides = strv_append(a->overrides, key);
                                a->overrides = strv_append(a->overrides, optarg);
                                break;
                        }
                        return EXIT_USAGE;
                }
        }
        log_set_level((enum log_level)a->verbosity);

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
                for (int i = optind; i < argc; i++)
                        cfg->argv = strv_append(cfg->argv, argv[i]);
                return 0;
        }
        if (a->code || a->code_file) {
                log_error("run: -c and --file need --lang (e.g. hutch run --lang python -c 'print(42)')");
                return EXIT_USAGE;
        }
        if (optind >= argc) {
                log_error("run: no command given (try: hutch run -- sh -c 'echo hi')");
                return EXIT_USAGE;
        }
        for (int i = optind; i < argc; i++)
                cfg->argv = strv_append(cfg->argv, argv[i]);
        return 0;
}

/* The user's terminal, put in raw mode for -t and restored on every exit
 * path that returns through here (the loop handles every signal that
 * would otherwise kill us). */
struct tty_state {
        bool saved;
        int excl;               /* TIOCGEXCL before the run */
        struct termios orig;
};

static void tty_raw(struct tty_state *t)
{
        struct termios raw;
        t->excl = -1;
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->orig) < 0)
                return;
        raw = t->orig;
        cfmakeraw(&raw);
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
                t->saved = true;
}

/* Without -t the job's stdin *is* the user's terminal when hutch runs
 * from one, and a terminal's modes belong to the terminal, not to the
 * fd: a job could leave the user's shell with echo off, no line editing
 * or output stopped (stty -echo -icanon, tcflow(TCOOFF)), or in exclusive
 * mode (TIOCEXCL: every later open of it fails with EBUSY, so sudo, ssh
 * and less cannot prompt), long after the run. Save the state before the
 * run; tty_restore() puts it back once the sandbox, and so every process
 * that held the terminal, is gone. */
static void tty_save(struct tty_state *t)
{
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->orig) < 0)
                return;
        if (ioctl(STDIN_FILENO, TIOCGEXCL, &t->excl) < 0)
                t->excl = -1;   /* unknown: leave it as the job does */
        t->saved = true;
}

static void tty_restore(struct tty_state *t)
{
        if (t->saved) {
                /* output first: TCSADRAIN would wait forever on a
                 * terminal whose output the job stopped */
                (void)tcflow(STDIN_FILENO, TCOON);
                (void)tcsetattr(STDIN_FILENO, TCSADRAIN, &t->orig);
                if (t->excl == 0)
                        (void)ioctl(STDIN_FILENO, TIOCNXCL);
        }
        t->saved = false;
}

/* The syscall policy the profile asks for, compiled to BPF (cached next
 * to the run store: the same profile gives the same filter). */
static int build_seccomp(const struct run_config *cfg, void **ret_blob, size_t *ret_len,
                         struct seccomp_report *report, char **ret_error)
{
        _cleanup_free_ char *db = NULL, *cache = NULL;
        if (store_default_path(&db) == 0) {
                char *slash = strrchr(db, '/');
                if (slash)
                        *slash = '\0';
                cache = xasprintf("%s/cache", db);
        }
        struct seccomp_settings s = { 0 };
        int r = cfg->seccomp_mode == SECCOMP_MODE_ALLOW ? seccomp_settings_strict(&s)
                                                        : seccomp_settings_default(&s);
        if (r < 0)
                return r;
        free(s.name);
        s.name = xstrdup(cfg->profile_name ? cfg->profile_name : "default");
        if (cfg->seccomp_default_action) {
                free(s.default_action);
                s.default_action = xstrdup(streq(cfg->seccomp_default_action, "eperm")
                                           ? "errno" : cfg->seccomp_default_action);
        }
        for (char **p = cfg->seccomp_deny; p && *p; p++)
                s.deny = strv_append(s.deny, *p);
        for (char **p = cfg->seccomp_allow; p && *p; p++)
                s.allow = strv_append(s.allow, *p);
        s.allow_ptrace = cfg->seccomp_allow_ptrace;
        s.allow_io_uring = cfg->seccomp_allow_io_uring;
        r = seccomp_policy_compile(&s, cache, ret_blob, ret_len, report, ret_error);
        seccomp_settings_done(&s);
        return r;
}

/* --lang: where the code comes from, what runs it. */
struct lang_job {
        struct lang_plan plan;
        int code_fd;
        const char *profile;    /* the language's profile, unless -p */
        struct lang_table *table;
};

static int prepare_lang(const struct run_args *a, struct run_config *cfg, struct lang_job *lj,
                        char **ret_error)
{
        const struct lang *l;
        int r;

        r = lang_table_load(NULL, &lj->table, ret_error);
        if (r < 0)
                return r;
        r = lang_lookup(lj->table, a->lang, &l, ret_error);
        if (r < 0)
                return r;
        r = lang_check_host(l, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ret_error);
        if (r < 0)
                return r;
        r = lang_plan_make(l, cfg->workdir_inside ? cfg->workdir_inside : "/workspace", &lj->plan, ret_error);
        if (r < 0)
                return r;
        lj->profile = l->profile;

        /* The code travels into the sandbox as an anonymous file: nothing
         * is written on the host. */
        lj->code_fd = memfd_create("hutch-code", MFD_CLOEXEC);
        if (lj->code_fd < 0)
                return -errno;
        if (a->code)
                r = write_all(lj->code_fd, a->code, strlen(a->code));
        else {
                _cleanup_close_ int in = a->code_stdin ? dup(STDIN_FILENO) : open(a->code_file, O_RDONLY | O_CLOEXEC);
                char buf[65536];
                ssize_t n;
                if (in < 0) {
                        *ret_error = xasprintf("--file %s: %s", a->code_file, strerror(errno));
                        return -errno;
                }
                r = 0;
                while (r == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                r = -errno;
                                break;
                        }
                        r = write_all(lj->code_fd, buf, (size_t)n);
                }
        }
        if (r < 0 && !*ret_error)
                *ret_error = xasprintf("reading the code: %s", strerror(-r));
        return r;
}

/* The run's own cgroup, when a delegated cgroup v2 subtree is usable
 * (cgroup.h: $HUTCH_CGROUP, else hutch's own cgroup): made before the
 * sandbox exists, so init is cloned straight into it. Only limits the
 * profile sets are written. Without one, *ret stays NULL, *ret_reason
 * says why, and the fallbacks of DESIGN §3 (watchdog, rlimits) hold
 * the limits instead. HUTCH_CGROUP=none asks for the fallbacks. */
/* How long systemd may take to hand out a scope before the run goes on
 * without one: it answers in milliseconds unless it is wedged. */
#define SYSTEMD_SCOPE_TIMEOUT_MS 5000

static void prepare_cgroup(const struct run_config *cfg, const char *run_id, const char *io_max,
                           struct cgroup_run **ret, char **ret_unit, char **ret_reason)
{
        _cleanup_free_ char *base = NULL, *name = NULL;
        const char *env = getenv("HUTCH_CGROUP");
        /* io only when asked: enabling it costs the kernel per-I/O accounting */
        const unsigned want = CGROUP_CPU | CGROUP_MEMORY | CGROUP_PIDS | (io_max ? CGROUP_IO : 0);
        unsigned usable = 0;
        int r;

        if (env && streq(env, "none")) {
                *ret_reason = xstrdup("cgroups turned off by HUTCH_CGROUP=none");
                return;
        }
        r = cgroup_base_prepare(want, &base, &usable, ret_reason);
        if (r < 0 && !(env && *env) && cgroup_systemd_available()) {
                /* Nothing delegated to us where we run (an ssh session's
                 * scope, say): systemd can give us a scope of our own. */
                _cleanup_free_ char *why = NULL;
                r = cgroup_systemd_scope(run_id, SYSTEMD_SCOPE_TIMEOUT_MS, ret_unit, &why);
                if (r < 0) {
                        char *both = xasprintf("%s; %s", *ret_reason ? *ret_reason : "no delegated cgroup", why);
                        free(*ret_reason);
                        *ret_reason = both;
                        return;
                }
                free(*ret_reason);
                *ret_reason = NULL;
                r = cgroup_base_prepare(want, &base, &usable, ret_reason);
                if (r < 0 && *ret_reason) {
                        char *more = xasprintf("in systemd's scope %s: %s", *ret_unit, *ret_reason);
                        free(*ret_reason);
                        *ret_reason = more;
                }
        }
        if (r < 0) {
                if (!*ret_reason)
                        *ret_reason = xstrdup(strerror(-r));
                return;
        }
        struct cgroup_limits lim = {
                .memory_max = cfg->memory_bytes,
                /* memory.high only when the profile asks for it: the
                 * throttling it adds before memory.max can hold a hog
                 * for seconds before the OOM verdict (see hutch-run(1));
                 * high >= max means "not set" to cgroup_run_new() */
                .memory_high = cfg->memory_high_bytes ? cfg->memory_high_bytes : cfg->memory_bytes,
                .cpus = cfg->cpus,
                .pids_max = cfg->pids,
                .io_max = io_max,
                /* an OOM kill ends the whole run, never half of it */
                .oom_group = true,
        };
        name = xasprintf("run-%s", run_id);
        r = cgroup_run_new(base, name, usable, &lim, ret);
        if (r < 0)
                *ret_reason = xasprintf("cannot create the run cgroup %s/%s: %s", base, name, strerror(-r));
}

/* --workdir and --input, resolved on the host before the sandbox exists. */
struct workspace_plan {
        char *workdir;          /* canonical host path, or NULL */
        int lower_fd;           /* O_DIRECTORY fd of workdir, or -1 */
        char **inputs;          /* "CANONICAL_PATH:NAME" */
        struct session session; /* --session: locked while we run */
};

/* --session: lock the session (waiting if asked) and use its tree as
 * the lower dir. Returns an exit code. */
static int open_session(const struct run_args *a, const char *db_path, struct workspace_plan *wp)
{
        _cleanup_free_ char *root = session_root(db_path);
        int r = session_acquire(root, a->session, a->session_wait_ms, &wp->session);
        if (r == -EBUSY) {
                log_error("run: session %s is in use by another run%s", a->session,
                          a->session_wait_ms ? " (waited --session-wait)" : "; --session-wait DURATION waits for it");
                return EXIT_SETUP;
        }
        if (r < 0) {
                log_error_errno(r, "run: session %s in %s: %m", a->session, root);
                return EXIT_SETUP;
        }
        session_touch(&wp->session);
        wp->workdir = xstrdup(wp->session.tree);
        wp->lower_fd = open(wp->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (wp->lower_fd < 0) {
                log_error_errno(-errno, "run: session %s: %s: %m", a->session, wp->workdir);
                return EXIT_SETUP;
        }
        return EXIT_OK;
}

static int prepare_workspace(const struct run_args *a, struct workspace_plan *wp, char **ret_error)
{
        if (a->apply && !a->workdir) {
                *ret_error = xstrdup("--apply needs --workdir DIR");
                return -EINVAL;
        }
        if (a->session && a->workdir) {
                *ret_error = xstrdup("--session and --workdir cannot be combined");
                return -EINVAL;
        }
        if (a->workdir) {
                wp->workdir = realpath(a->workdir, NULL);
                if (!wp->workdir) {
                        *ret_error = xasprintf("--workdir %s: %s", a->workdir, strerror(errno));
                        return -errno;
                }
                wp->lower_fd = open(wp->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (wp->lower_fd < 0) {
                        *ret_error = xasprintf("--workdir %s: %s", a->workdir, strerror(errno));
                        return -errno;
                }
        }
        for (char **p = a->inputs; p && *p; p++) {
                _cleanup_free_ char *host = xstrdup(*p);
                char *colon = strrchr(host, ':');
                const char *name;
                if (colon && colon[1] && !strchr(colon + 1, '/')) {
                        *colon = '\0';
                        name = colon + 1;
                } else {
                        char *slash;
                        while ((slash = strrchr(host, '/')) && slash != host && !slash[1])
                                *slash = '\0';
                        name = strrchr(host, '/') ? strrchr(host, '/') + 1 : host;
                }
                if (!*name || streq(name, ".") || streq(name, "..") || strchr(name, ':')) {
                        *ret_error = xasprintf("--input %s: cannot name it (use PATH:NAME)", *p);
                        return -EINVAL;
                }
                _cleanup_free_ char *real = realpath(host, NULL);
                if (!real) {
                        *ret_error = xasprintf("--input %s: %s", host, strerror(errno));
                        return -errno;
                }
                _cleanup_free_ char *spec = xasprintf("%s:%s", real, name);
                wp->inputs = strv_append(wp->inputs, spec);
        }
        return 0;
}

/* After the sandbox is gone: record the change set and the artifacts,
 * and apply the changes if --apply and the job succeeded. Returns the
 * exit code to use instead of the job's (1 when --apply could not
 * apply), or -1 to keep the job's. */
static int collect_files(struct store *store, const struct run_record *rec, const struct run_config *cfg,
                         const struct run_args *a, struct workspace_plan *wp,
                         int workspace_fd, int upper_fd, const struct run_outcome *out)
{
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        struct runfiles_result res = { 0 };
        const char *step = "blob store";
        const char *output_rel = NULL;
        size_t wl = strlen(cfg->workdir_inside);
        int r, code = -1;

        if (cfg->artifacts_dir && strncmp(cfg->artifacts_dir, cfg->workdir_inside, wl) == 0 &&
            (cfg->artifacts_dir[wl] == '/' || (wl == 1 && cfg->workdir_inside[0] == '/')))
                output_rel = cfg->artifacts_dir + wl + (cfg->artifacts_dir[wl] == '/');
        else if (cfg->artifacts_dir)
                log_debug("artifacts dir %s is outside the workspace %s: not collected",
                          cfg->artifacts_dir, cfg->workdir_inside);
        struct runfiles_params p = {
                .workspace_fd = workspace_fd, .upper_fd = upper_fd, .lower_fd = wp->lower_fd,
                .output_rel = output_rel && *output_rel ? output_rel : NULL,
                .has_inputs = wp->inputs != NULL,
                .max_files = cfg->artifacts_max_files, .max_bytes = cfg->artifacts_max_bytes,
        };
        r = runfiles_open_blobs(store, &bs);
        if (r >= 0)
                r = runfiles_collect(store, rec->id, bs, &p, &res, &step);
        if (r < 0) {
                log_error_errno(r, "run %s: cannot record its files (%s): %m", rec->id, step);
                runfiles_result_done(&res);
                return a->apply || a->session ? EXIT_FAILURE_GENERIC : -1;
        }
        if (res.cs.n)
                log_info("%zu change%s in the workspace (hutch diff %s)", res.cs.n, res.cs.n == 1 ? "" : "s",
                         rec->id);
        if (res.n_outputs || res.n_outputs_skipped)
                log_info("%zu artifact%s collected%s", res.n_outputs, res.n_outputs == 1 ? "" : "s",
                         res.n_outputs_skipped ? ", some skipped (see hutch show)" : "");
        if (a->apply) {
                if (out->status != RUN_SUCCESS)
                        log_info("not applying the changes: the job did not succeed");
                else
                        code = cli_apply_changeset("run", &res.cs, wp->workdir, bs, false);
        }
        if (a->session) {
                /* the session keeps a run's changes only when it succeeded
                 * (or --commit always); we still hold its lock */
                if (out->status != RUN_SUCCESS && !a->commit_always)
                        log_info("session %s left as it was: the job did not succeed", a->session);
                else if (res.cs.n) {
                        code = cli_apply_changeset("run", &res.cs, wp->workdir, bs, false);
                        /* root's sandbox user is uid 65534: the next run must
                         * be able to change what this one committed */
                        if (code == EXIT_OK && geteuid() == 0 &&
                            (r = session_chown_tree(&wp->session, ns_host_uid(), ns_host_gid())) < 0)
                                log_error_errno(r, "run: session %s: chown: %m", a->session);
                }
                session_touch(&wp->session);
        }
        runfiles_result_done(&res);
        return code == EXIT_OK ? -1 : code;
}

struct run_ctx {
        struct store *store;
        struct run_record *rec;
        struct capture *out, *err;
};

static void on_output(void *userdata, enum output_stream stream, const void *buf, size_t n)
{
        struct run_ctx *ctx = userdata;
        capture_append(stream == STREAM_STDERR ? ctx->err : ctx->out, buf, n);
}

/* The job is on its way: a due WAL checkpoint's disk syncs now overlap
 * with it (and with the sandbox's teardown) instead of delaying its
 * start or adding to the end of the run. */
static void on_job_started(void *userdata)
{
        struct run_ctx *ctx = userdata;
        store_checkpoint_if_due(ctx->store);
}

static void on_heartbeat(void *userdata)
{
        struct run_ctx *ctx = userdata;
        /* best effort: a busy store must not disturb the job */
        (void)store_run_heartbeat(ctx->store, ctx->rec->id, now_realtime_ms());
        store_checkpoint_if_due(ctx->store);
}

static char *json_dumps_new(json_t *j)
{
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
        return s;
}

/* Read an anonymous code file back, for the run's record. */
static char *slurp_fd(int fd, size_t *ret_len)
{
        size_t cap = 4096, len = 0;
        char *buf = xmalloc(cap);
        ssize_t n;

        if (lseek(fd, 0, SEEK_SET) < 0) {
                free(buf);
                return NULL;
        }
        while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
                len += (size_t)n;
                if (len + 1 >= cap)
                        buf = xrealloc(buf, cap *= 2);
        }
        buf[len] = '\0';
        *ret_len = len;
        return buf;
}

/* Everything after the configuration is resolved: policy, record,
 * sandbox, record again. Returns hutch's exit code. */
static int execute(struct run_config *cfg, struct lang_job *lj, const struct run_args *a,
                   const char *lang, bool json, const char *rerun_of)
{
        struct workspace_plan wp = { .lower_fd = -1, .session.lock_fd = -1 };
        int workspace_fd = -1, upper_fd = -1;
        _cleanup_free_ char *db_path = NULL;
        struct sandbox sb = { .pidfd = -1, .sync_fd = -1, .stdout_fd = -1, .stderr_fd = -1 };
        struct run_outcome out = { 0 };
        struct tty_state tty = { 0 };
        struct winsize ws, *wsp = NULL;
        struct seccomp_report sc_report = { 0 };
        _cleanup_store_ struct store *store = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_capture_ struct capture *cap_out = NULL, *cap_err = NULL;
        _cleanup_free_ char *err = NULL, *profile_text = NULL, *cwd = NULL, *cg_reason = NULL, *cg_unit = NULL, *io_max = NULL;
        _cleanup_cgroup_run_ struct cgroup_run *cgroup = NULL;
        _cleanup_free_ void *bpf = NULL;
        size_t bpf_len = 0;
        char sha[DIGEST_HEX_SIZE];
        sigset_t set, old;
        int r, code = EXIT_SETUP;
        json_t *enforcement = NULL;

        r = prepare_workspace(a, &wp, &err);
        if (r < 0) {
                log_error("run: %s", err);
                code = EXIT_USAGE;
                goto out;
        }
        if (cfg->uid == 0 && streq(cfg->home, "/home/sandbox"))
                cfg->home = (free(cfg->home), xstrdup("/root"));
        profile_text = profile_canonical_text(cfg);
        profile_sha256_hex(profile_text, sha);

        rec = run_record_new();
        cwd = getcwd(NULL, 0);
        r = run_record_begin(rec, cfg->argv, cwd ? cwd : "", cfg->profile_name);
        if (r < 0) {
                log_error_errno(r, "run: cannot start a run record: %m");
                goto out;
        }
        if (a->session) {
                /* before the row: a run waiting for its session is not running */
                r = store_default_path(&db_path);
                if (r < 0) {
                        log_error("run: no state dir (set HUTCH_STATE_DIR or HOME)");
                        goto out;
                }
                code = open_session(a, db_path, &wp);
                if (code != EXIT_OK)
                        goto out;
                code = EXIT_SETUP;
                rec->session = xstrdup(a->session);
                rec->started_at_ms = rec->heartbeat_at_ms = now_realtime_ms();
        }
        /* The run's cgroup (or the reason there is none) comes before the
         * sandbox, which is cloned straight into it, and before the report,
         * which names what really holds each limit. */
        /* io_max names devices: a wrong one is the user's error, said
         * before anything runs */
        r = iomax_lines(cfg->io_max, &io_max, &err);
        if (r < 0) {
                log_error("run: %s", err);
                goto out;
        }
        prepare_cgroup(cfg, rec->id, io_max, &cgroup, &cg_unit, &cg_reason);
        if (cgroup)
                log_debug("run cgroup %s", cgroup_run_path(cgroup));
        else if (getenv("HUTCH_CGROUP") && *getenv("HUTCH_CGROUP") && !streq(getenv("HUTCH_CGROUP"), "none"))
                /* asked for by name: say so, but still run as the fallbacks allow
                 * (--require makes a missing limit an error) */
                log_warning("run: HUTCH_CGROUP: %s; limits fall back to the watchdog and rlimits", cg_reason);
        else
                log_debug("no run cgroup (%s): falling back to the watchdog and rlimits", cg_reason);

        struct sandbox_inputs inputs = {
                .code_fd = lj->code_fd, .code_path = lj->plan.source,
                .compile_argv = lj->plan.compile_argv, .argv = cfg->argv,
                .seccomp_required = true,
                .cgroup = cgroup,
                .pids_in_cgroup = cgroup && (cgroup_run_enforced(cgroup) & CGROUP_LIMIT_PIDS),
                .workspace_lower = wp.workdir, .inputs = wp.inputs,
        };
        sandbox_signal_set(&set);
        sigprocmask(SIG_BLOCK, &set, &old);
        /* A shell starts background jobs with SIGINT and SIGQUIT ignored;
         * an ignored signal never reaches our signalfd, so `kill -INT`
         * from a script would be lost instead of forwarded. Take them
         * back (they stay blocked, so this cannot kill us). SIGHUP stays
         * ignored under nohup, as the user asked. */
        for (int s = 1; s < NSIG; s++) {
                struct sigaction sa;
                if (!sigismember(&set, s) || s == SIGHUP || sigaction(s, NULL, &sa) < 0)
                        continue;
                if (sa.sa_handler == SIG_IGN)
                        signal(s, SIG_DFL);
        }
        if (cfg->tty && isatty(STDIN_FILENO) && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
                wsp = &ws;

        /* The sandbox builds itself while we record the run; it starts the
         * job only after sandbox_start(), so the record still comes first:
         * no row, no job. Cloning before the store is open also keeps the
         * child's copy of our memory small. */
        int spawn_r = sandbox_spawn(cfg, &inputs, wsp, &sb);
        bool spawned = spawn_r >= 0;

        /* The syscall filter is compiled here, in parallel with the
         * sandbox's own setup, and travels with the start message. */
        r = build_seccomp(cfg, &bpf, &bpf_len, &sc_report, &err);
        if (r < 0) {
                log_error("%s", err ? err : strerror(-r));
                goto abort;
        }
        struct enforce_cgroup cg_report = {
                .path = cgroup ? cgroup_run_path(cgroup) : NULL,
                .enforced = cgroup ? cgroup_run_enforced(cgroup) : 0,
                .reason = cg_reason,
                .systemd_unit = cg_unit,
                .io_max_error = cgroup ? cgroup_run_io_max_error(cgroup) : NULL,
        };
        enforcement = enforcement_build(cfg, &sc_report, &cg_report, ns_host_uid(), ns_host_gid());
        r = enforcement_check_required(cfg, enforcement, &err);
        if (r < 0) {
                log_error("run: %s", err);
                goto abort;
        }

        code = cli_open_store("run", &store);
        if (code != EXIT_OK)
                goto abort;
        code = EXIT_SETUP;
        /* the row below is written while the sandbox child builds the
         * job's root: a checkpoint's disk syncs there would delay the job.
         * on_job_started() does a due one; a run that crosses the
         * threshold only in its last row leaves it to the next run. */
        store_defer_checkpoints(store);
        rec->limits_json = json_dumps_new(limits_build(cfg));
        rec->enforcement_json = json_dumps(enforcement, JSON_COMPACT | JSON_SORT_KEYS);
        rec->profile_text = xstrdup(profile_text);
        rec->profile_sha256 = xstrdup(sha);
        if (rerun_of)
                rec->rerun_of = xstrdup(rerun_of);
        if (lang && lj->code_fd >= 0) {
                rec->lang = xstrdup(lang);
                rec->code = slurp_fd(lj->code_fd, &rec->code_len);
        }
        r = store_run_insert(store, rec);
        if (r < 0) {
                log_error("run: run store %s: %s", store_path(store), store_error(store));
                goto abort;
        }
        if (wp.workdir && store_workspace_set(store, rec->id, a->session ? NULL : wp.workdir, a->session) < 0) {
                log_error("run: run store %s: %s", store_path(store), store_error(store));
                goto abort;
        }
        log_info("run %s", rec->id);

        cap_out = capture_new(cfg->capture_bytes);
        cap_err = capture_new(cfg->capture_bytes);
        struct run_ctx ctx = { .store = store, .rec = rec, .out = cap_out, .err = cap_err };
        struct supervise_hooks hooks = {
                .on_output = on_output, .on_heartbeat = on_heartbeat, .on_job_started = on_job_started,
                .heartbeat_ms = HEARTBEAT_MS,
                .userdata = &ctx, .quiet_output = json,
        };

        if (spawned)
                spawn_r = sandbox_start(&sb, bpf, bpf_len);
        if (spawn_r < 0) {
                if (spawned) {
                        sandbox_abort(&sb);
                        sandbox_close(&sb);
                }
                sigprocmask(SIG_SETMASK, &old, NULL);
                out.status = RUN_SETUP_ERROR;
                out.exit_code = EXIT_SETUP;
                out.error = -spawn_r;
                snprintf(out.message, sizeof(out.message), "setup: %s: %s%s",
                         sb.failed_step ? sb.failed_step : "start the sandbox", strerror(-spawn_r),
                         spawn_r == -EPERM || spawn_r == -ENOSPC || spawn_r == -EINVAL || spawn_r == -EACCES
                         ? " (see: hutch doctor)" : "");
        } else {
                log_debug("sandbox started (init pid %d on the host)", (int)sb.pid);
                if (cfg->tty)
                        tty_raw(&tty);
                else
                        tty_save(&tty);
                r = supervise(cfg, &sb, &hooks, &out);
                tty_restore(&tty);
                /* init is reaped: nothing can write to the workspace now */
                workspace_fd = TAKE_FD(sb.workspace_fd);
                upper_fd = TAKE_FD(sb.upper_fd);
                sandbox_close(&sb);
                sigprocmask(SIG_SETMASK, &old, NULL);
                if (r < 0) {
                        out.status = RUN_SETUP_ERROR;
                        out.exit_code = EXIT_SETUP;
                        snprintf(out.message, sizeof(out.message), "supervisor failed: %s", strerror(-r));
                }
        }

        int files_code = -1;
        if (workspace_fd >= 0)
                files_code = collect_files(store, rec, cfg, a, &wp, workspace_fd, upper_fd, &out);

        if (cgroup) {
                /* init is reaped; nothing of the run may stay behind */
                r = cgroup_run_remove(cgroup, 2000);
                if (r < 0)
                        log_warning("run: cannot remove the run cgroup %s: %s", cgroup_run_path(cgroup),
                                    strerror(-r));
        }
        rec->status = out.status;
        rec->exit_code = out.exit_code;
        rec->signal = out.signal;
        rec->message = out.message[0] ? xstrdup(out.message) : NULL;
        rec->finished_at_ms = now_realtime_ms();
        rec->duration_ms = out.wall_ms;
        rec->cpu_user_ms = out.cpu_user_ms;
        rec->cpu_sys_ms = out.cpu_sys_ms;
        rec->peak_memory_bytes = out.cgroup_memory_peak_bytes ? out.cgroup_memory_peak_bytes
                                                              : MAX(out.peak_rss_bytes, out.peak_tree_memory_bytes);
        (void)run_output_from_capture(&rec->out, cap_out);
        (void)run_output_from_capture(&rec->err, cap_err);
        r = store_run_finish(store, rec);
        if (r < 0)
                /* the job ran; its exit code still stands, but say loudly
                 * that the record is incomplete (gc will mark it) */
                log_error("run: cannot complete the record of run %s in %s: %s",
                          rec->id, store_path(store), store_error(store));

        switch (out.status) {
        case RUN_SUCCESS:
        case RUN_FAILED:
        case RUN_SIGNALED:
        case RUN_COMPILE_ERROR:
                if (out.message[0])
                        log_info("%s", out.message);
                break;
        default:
                log_error("%s", out.message);
                break;
        }
        if (json) {
                _cleanup_free_ char *j = cli_run_json(store, rec);
                if (j)
                        printf("%s\n", j);
        }
        code = files_code >= 0 ? files_code : out.exit_code;
        goto out;
abort:
        /* nothing of the job ran: take the half-built sandbox down */
        if (spawned) {
                sandbox_abort(&sb);
                sandbox_close(&sb);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
out:
        if (workspace_fd >= 0)
                close(workspace_fd);
        if (upper_fd >= 0)
                close(upper_fd);
        if (wp.lower_fd >= 0)
                close(wp.lower_fd);
        free(wp.workdir);
        strv_free(wp.inputs);
        session_release(&wp.session);
        if (enforcement)
                json_decref(enforcement);
        return code;
}

/* The job's argv for a --lang run: the language's run command, then the
 * program's own arguments. */
static void lang_argv(struct run_config *cfg, const struct lang_job *lj)
{
        char **job_argv = NULL;
        for (char **p = lj->plan.run_argv; *p; p++)
                job_argv = strv_append(job_argv, *p);
        for (char **p = cfg->argv; p && *p; p++)
                job_argv = strv_append(job_argv, *p);
        strv_free(cfg->argv);
        cfg->argv = job_argv;
}

static void lang_job_done(struct lang_job *lj)
{
        if (lj->code_fd >= 0)
                close(lj->code_fd);
        lang_plan_done(&lj->plan);
        lang_table_free(lj->table);
}

int verb_run(int argc, char **argv)
{
        struct run_config cfg;
        struct run_args a = { 0 };
        struct lang_job lj = { .code_fd = -1 };
        _cleanup_free_ char *err = NULL;
        int r, code = EXIT_SETUP;

        run_config_init(&cfg);
        r = parse_run_args(argc, argv, &cfg, &a);
        if (r != 0) {
                code = r < 0 ? EXIT_OK : r;
                goto out;
        }
        if (a.lang) {
                r = prepare_lang(&a, &cfg, &lj, &err);
                if (r < 0) {
                        log_error("run: %s", err ? err : strerror(-r));
                        goto out;
                }
                lang_argv(&cfg, &lj);
        }

        r = profile_load(&cfg, a.profile ? a.profile : lj.profile, &err);
        if (r < 0) {
                log_error("%s", err);
                goto out;
        }
        /* a bad value on the command line is a usage error, not a bad profile */
        r = profile_apply_cli(&cfg, a.overrides, &err);
        if (r < 0) {
                log_error("run: %s", err);
                code = EXIT_USAGE;
                goto out;
        }
        r = profile_validate(&cfg, &err);
        if (r < 0) {
                log_error("%s", err);
                goto out;
        }
        code = execute(&cfg, &lj, &a, a.lang, a.json, NULL);
out:
        lang_job_done(&lj);
        strv_free(a.overrides);
        strv_free(a.inputs);
        run_config_done(&cfg);
        return code;
}

static void rerun_help(FILE *f)
{
        fprintf(f,
"Usage: hutch rerun [--json] [-v|-q] ID\n"
"\n"
"Run again what run ID ran (its command, or its --lang code) with the very\n"
"same resolved profile, as recorded with it, and record a new run that\n"
"points back to ID (rerun_of). ID may be any unique prefix of 4 or more\n"
"characters. Exit status as for hutch run.\n");
}

int verb_rerun(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json",    no_argument, NULL, OPT_JSON },
                { "verbose", no_argument, NULL, 'v' },
                { "quiet",   no_argument, NULL, 'q' },
                { "help",    no_argument, NULL, 'h' },
                {}
        };
        _cleanup_store_ struct store *store = NULL;
        _cleanup_run_record_ struct run_record *orig = NULL;
        _cleanup_free_ char *err = NULL, *display = NULL;
        struct lang_job lj = { .code_fd = -1 };
        struct run_config cfg;
        bool json = false;
        int c, r, code, verbosity = LOG_NORMAL;

        optind = 1;
        while ((c = getopt_long(argc, argv, "vqh", opts, NULL)) != -1) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case 'v':
                        verbosity = verbosity < LOG_VERBOSE ? LOG_VERBOSE : LOG_DEBUG;
                        break;
                case 'q':
                        verbosity = LOG_QUIET;
                        break;
                case 'h':
                        rerun_help(stdout);
                        return EXIT_OK;
                default:
                        fprintf(stderr, "Try 'hutch rerun --help'.\n");
                        return EXIT_USAGE;
                }
        }
        log_set_level((enum log_level)verbosity);
        code = cli_open_run("rerun", argc, argv, optind, &store, &orig);
        if (code != EXIT_OK)
                return code;
        store = store_close(TAKE_PTR(store));
        if (!orig->profile_text) {
                log_error("rerun: run %s has no recorded profile (recorded by an older hutch)", orig->id);
                return EXIT_FAILURE_GENERIC;
        }

        run_config_init(&cfg);
        code = EXIT_SETUP;
        display = xasprintf("run %s", orig->id);
        /* the text is hutch's own resolution of a profile it accepted then */
        r = profile_load_text(&cfg, orig->profile_text, display, true, &err);
        if (r >= 0)
                r = profile_validate(&cfg, &err);
        if (r < 0) {
                log_error("rerun: %s", err);
                goto out;
        }
        free(cfg.profile_name);
        cfg.profile_name = xstrdup(orig->profile ? orig->profile : "default");
        for (char **p = orig->argv; p && *p; p++)
                cfg.argv = strv_append(cfg.argv, *p);
        if (orig->lang) {
                const struct lang *l;
                r = lang_table_load(NULL, &lj.table, &err);
                if (r >= 0)
                        r = lang_lookup(lj.table, orig->lang, &l, &err);
                if (r >= 0)
                        r = lang_plan_make(l, cfg.workdir_inside, &lj.plan, &err);
                if (r < 0) {
                        log_error("rerun: %s", err);
                        goto out;
                }
                lj.code_fd = memfd_create("hutch-code", MFD_CLOEXEC);
                if (lj.code_fd < 0 || write_all(lj.code_fd, orig->code ? orig->code : "", orig->code_len) < 0) {
                        log_error("rerun: cannot stage the code: %s", strerror(errno));
                        goto out;
                }
        }
        /* the workspace options (--workdir, --session, --input) are not
         * part of the profile: a rerun runs in a fresh workspace */
        struct run_args none = { 0 };
        code = execute(&cfg, &lj, &none, orig->lang, json, orig->id);
out:
        lang_job_done(&lj);
        run_config_done(&cfg);
        return code;
}
