/* cli_run.c - `sbx run`: command line -> run_config -> sandbox -> exit
 * code. This is the one place that logs what went wrong with a run. */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "cli.h"
#include "exit-codes.h"
#include "log.h"
#include "run-config.h"
#include "sandbox.h"
#include "supervise.h"

static void run_help(FILE *f)
{
        fprintf(f,
"Usage: sbx run [OPTIONS] [--] COMMAND [ARG...]\n"
"\n"
"Run COMMAND in a fresh rootless sandbox: new user, mount, pid, net, ipc,\n"
"uts and cgroup namespaces, a read-only view of the host's system dirs,\n"
"and a throwaway writable /tmp, $HOME and /workspace.\n"
"\n"
"Options:\n"
"  -t, --tty               give the job a pseudo-terminal (interactive use)\n"
"  -e, --env KEY=VALUE     set an environment variable (repeatable)\n"
"      --timeout DURATION  wall-clock limit, e.g. 500ms, 30s, 5m (default 30s;\n"
"                          0 = none); then SIGTERM, and SIGKILL after --grace\n"
"      --grace DURATION    time between SIGTERM and SIGKILL (default 2s)\n"
"      --disk SIZE         size of the writable scratch space (default 1G)\n"
"      --nofile N          open-file limit of the job (default 1024)\n"
"      --memory SIZE       memory limit of the whole job (default 512M)\n"
"      --cpu-time DURATION cpu time limit of the whole job (default none)\n"
"      --pids N            process limit of the sandbox (default 256)\n"
"      --max-file-size SIZE  largest file the job may write (default none)\n"
"      --ro PATH[:DEST]    bind a host file or dir read-only (repeatable); it\n"
"                          must exist\n"
"      --uid N             uid (and gid) of the job inside (default 1000;\n"
"                          0 gives a root-looking job with no capabilities)\n"
"  -v, --verbose           say what sbx is doing\n"
"  -q, --quiet             print nothing but errors\n"
"  -h, --help              show this help\n"
"\n"
"Exit status: the job's own exit code; 128+N if it was killed by signal N;\n"
"124 timed out; 125 the sandbox could not be set up; 126 the command is not\n"
"executable; 127 the command was not found; 130/143 cancelled (Ctrl-C twice,\n"
"or SIGTERM to sbx). See sbx-run(1).\n");
}

enum {
        OPT_TIMEOUT = 0x100, OPT_GRACE, OPT_DISK, OPT_UID, OPT_NOFILE, OPT_RO,
        OPT_MEMORY, OPT_CPU_TIME, OPT_PIDS, OPT_MAX_FILE_SIZE,
};

static const struct option run_options[] = {
        { "tty",     no_argument,       NULL, 't' },
        { "env",     required_argument, NULL, 'e' },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "grace",   required_argument, NULL, OPT_GRACE },
        { "disk",    required_argument, NULL, OPT_DISK },
        { "nofile",  required_argument, NULL, OPT_NOFILE },
        { "uid",     required_argument, NULL, OPT_UID },
        { "ro",      required_argument, NULL, OPT_RO },
        { "memory",  required_argument, NULL, OPT_MEMORY },
        { "cpu-time", required_argument, NULL, OPT_CPU_TIME },
        { "pids",    required_argument, NULL, OPT_PIDS },
        { "max-file-size", required_argument, NULL, OPT_MAX_FILE_SIZE },
        { "verbose", no_argument,       NULL, 'v' },
        { "quiet",   no_argument,       NULL, 'q' },
        { "help",    no_argument,       NULL, 'h' },
        {}
};

static int parse_run_args(int argc, char **argv, struct run_config *cfg)
{
        int c, verbosity = LOG_NORMAL;
        uint64_t v;

        optind = 1;
        /* '+': options end at the first non-option, the job's command */
        while ((c = getopt_long(argc, argv, "+te:vqh", run_options, NULL)) != -1) {
                switch (c) {
                case 't':
                        cfg->tty = true;
                        break;
                case 'e':
                        if (!strchr(optarg, '=') || optarg[0] == '=')
                                return cli_bad_value("run", "env", optarg, "expected KEY=VALUE");
                        cfg->env = strv_append(cfg->env, optarg);
                        break;
                case OPT_TIMEOUT:
                        if (parse_duration_ms(optarg, &cfg->timeout_ms) < 0)
                                return cli_bad_value("run", "timeout", optarg, "expected a duration like 30s");
                        break;
                case OPT_GRACE:
                        if (parse_duration_ms(optarg, &cfg->grace_ms) < 0)
                                return cli_bad_value("run", "grace", optarg, "expected a duration like 2s");
                        break;
                case OPT_DISK:
                        if (parse_size(optarg, &v) < 0 || v < 64 * 1024)
                                return cli_bad_value("run", "disk", optarg, "expected a size of at least 64K like 1G");
                        cfg->disk_bytes = v;
                        break;
                case OPT_NOFILE:
                        if (parse_size(optarg, &v) < 0 || v < 3 || v > (1 << 20))
                                return cli_bad_value("run", "nofile", optarg, "expected a count from 3 to 1048576");
                        cfg->nofile = v;
                        break;
                case OPT_UID:
                        if (parse_size(optarg, &v) < 0 || v > 65533 || strpbrk(optarg, "KMGTBkmgtb."))
                                return cli_bad_value("run", "uid", optarg, "expected a number from 0 to 65533");
                        cfg->uid = (uid_t)v;
                        cfg->gid = (gid_t)v;
                        break;
                case OPT_MEMORY:
                        if (parse_size(optarg, &cfg->memory_bytes) < 0)
                                return cli_bad_value("run", "memory", optarg, "expected a size like 512M (0 = none)");
                        break;
                case OPT_CPU_TIME:
                        if (parse_duration_ms(optarg, &cfg->cpu_time_ms) < 0)
                                return cli_bad_value("run", "cpu-time", optarg, "expected a duration like 10s (0 = none)");
                        break;
                case OPT_PIDS:
                        if (parse_size(optarg, &cfg->pids) < 0 || strpbrk(optarg, "KMGTBkmgtb."))
                                return cli_bad_value("run", "pids", optarg, "expected a count like 256 (0 = none)");
                        break;
                case OPT_MAX_FILE_SIZE:
                        if (parse_size(optarg, &cfg->max_file_size) < 0)
                                return cli_bad_value("run", "max-file-size", optarg, "expected a size like 100M (0 = none)");
                        break;
                case OPT_RO:
                        if (optarg[0] != '/')
                                return cli_bad_value("run", "ro", optarg, "expected an absolute path");
                        cfg->ro_extra = strv_append(cfg->ro_extra, optarg);
                        break;
                case 'v':
                        verbosity = verbosity < LOG_VERBOSE ? LOG_VERBOSE : LOG_DEBUG;
                        break;
                case 'q':
                        verbosity = LOG_QUIET;
                        break;
                case 'h':
                        run_help(stdout);
                        return -1;
                default:
                        fprintf(stderr, "Try 'sbx run --help'.\n");
                        return EXIT_USAGE;
                }
        }
        log_set_level((enum log_level)verbosity);
        if (optind >= argc) {
                log_error("run: no command given (try: sbx run -- sh -c 'echo hi')");
                return EXIT_USAGE;
        }
        for (int i = optind; i < argc; i++)
                cfg->argv = strv_append(cfg->argv, argv[i]);
        if (cfg->uid == 0)
                cfg->home = (free(cfg->home), xstrdup("/root"));
        return 0;
}

/* The user's terminal, put in raw mode for -t and restored on every exit
 * path that returns through here (the loop handles every signal that
 * would otherwise kill us). */
struct tty_state {
        bool saved;
        struct termios orig;
};

static void tty_raw(struct tty_state *t)
{
        struct termios raw;
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->orig) < 0)
                return;
        raw = t->orig;
        cfmakeraw(&raw);
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
                t->saved = true;
}

static void tty_restore(struct tty_state *t)
{
        if (t->saved)
                (void)tcsetattr(STDIN_FILENO, TCSADRAIN, &t->orig);
        t->saved = false;
}

int verb_run(int argc, char **argv)
{
        struct run_config cfg;
        struct sandbox sb = { .pidfd = -1, .sync_fd = -1, .stdout_fd = -1, .stderr_fd = -1 };
        struct run_outcome out = { 0 };
        struct tty_state tty = { 0 };
        struct winsize ws, *wsp = NULL;
        sigset_t set, old;
        int r;

        run_config_init(&cfg);
        r = parse_run_args(argc, argv, &cfg);
        if (r != 0) {
                run_config_done(&cfg);
                return r < 0 ? EXIT_OK : r;
        }

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

        if (cfg.tty && isatty(STDIN_FILENO) && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
                wsp = &ws;
        r = sandbox_spawn(&cfg, wsp, &sb);
        if (r < 0) {
                sigprocmask(SIG_SETMASK, &old, NULL);
                log_error_errno(r, "setup: clone sandbox: %m%s",
                                r == -EPERM || r == -ENOSPC || r == -EINVAL
                                ? " (are unprivileged user namespaces enabled? see: sbx doctor)" : "");
                run_config_done(&cfg);
                return EXIT_SETUP;
        }
        log_info("sandbox started (init pid %d on the host)", (int)sb.pid);
        if (cfg.tty)
                tty_raw(&tty);

        r = supervise(&cfg, &sb, NULL, &out);
        tty_restore(&tty);
        sandbox_close(&sb);
        sigprocmask(SIG_SETMASK, &old, NULL);

        if (r < 0) {
                log_error_errno(r, "supervisor failed: %m");
                run_config_done(&cfg);
                return EXIT_SETUP;
        }
        switch (out.status) {
        case RUN_SUCCESS:
        case RUN_FAILED:
        case RUN_SIGNALED:
                if (out.message[0])
                        log_info("%s", out.message);
                break;
        default:
                log_error("%s", out.message);
                break;
        }
        run_config_done(&cfg);
        return out.exit_code;
}
