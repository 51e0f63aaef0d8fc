/* cli/kill.c - `hutch kill ID`: cancel a run from another process.
 *
 * The request goes to the run's supervisor (cancel.h), never to the
 * job's processes directly: the supervisor is the one that knows the
 * sandbox, ends it with SIGKILL to its init (which takes the whole pid
 * namespace with it) and records the run as cancelled. The supervisor
 * is addressed through a pidfd checked against the start time in the
 * row, so a pid reused since cannot receive the signal.
 */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/store.h"
#include "supervise/cancel.h"

/* how long to wait for the run to end beyond its grace */
#define KILL_WAIT_EXTRA_MS 10000

static void help(void)
{
        printf("Usage: hutch kill [--signal SIG] [--grace DURATION] [--no-wait] ID\n"
               "\n"
               "Cancel running run ID: send SIG (default TERM) to the job, then\n"
               "SIGKILL to the whole sandbox after the grace period, and record the\n"
               "run as cancelled (its hutch run exits 143). Waits until the run has\n"
               "ended and prints its final status.\n"
               "\n"
               "  -s, --signal SIG      TERM, INT, HUP, KILL, ... or a number\n"
               "  -g, --grace DURATION  time between SIG and SIGKILL (default: the\n"
               "                        run's profile grace)\n"
               "      --no-wait         return once the request is delivered\n"
               "  -h, --help            this text\n"
               "\n"
               "Exit status: 0 the run ended; 1 no such run, or it is not running.\n");
}

static int parse_signal(const char *s)
{
        char *end;
        long n;

        if (*s >= '0' && *s <= '9') {
                n = strtol(s, &end, 10);
                return *end || n < 1 || n > 64 ? -EINVAL : (int)n;
        }
        if (startswith(s, "SIG"))
                s += 3;
        for (int sig = 1; sig < NSIG; sig++) {
                const char *abbrev = sigabbrev_np(sig);
                if (abbrev && strcasecmp(abbrev, s) == 0)
                        return sig;
        }
        return -EINVAL;
}

int verb_kill(int argc, char **argv)
{
        static const struct option options[] = {
                { "signal",  required_argument, NULL, 's' },
                { "grace",   required_argument, NULL, 'g' },
                { "no-wait", no_argument,       NULL, 'W' },
                { "help",    no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL, *done = NULL;
        struct cancel_request req = { .signal = SIGTERM };
        bool wait = true;
        uint64_t start;
        int c, r;

        while ((c = getopt_long(argc, argv, "s:g:h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        req.signal = parse_signal(optarg);
                        if (req.signal < 0)
                                return cli_bad_value("kill", "signal", optarg, "expected a signal name or number");
                        break;
                case 'g':
                        if (parse_duration_ms(optarg, &req.grace_ms) < 0 || req.grace_ms > UINT32_MAX)
                                return cli_bad_value("kill", "grace", optarg, "expected a duration like 2s");
                        req.grace_given = true;
                        break;
                case 'W':
                        wait = false;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("kill", argv, options);
                }
        r = cli_open_run("kill", argc, argv, optind, &s, &rec);
        if (r != EXIT_OK)
                return r;
        if (rec->status != RUN_RUNNING) {
                log_error("kill: run %s is not running (%s)", rec->id, run_status_to_string(rec->status));
                return EXIT_FAILURE_GENERIC;
        }

        _cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, rec->supervisor_pid, 0);
        /* the pidfd pins the process: check it is the one that wrote the row */
        if (pidfd < 0 || proc_start_time(rec->supervisor_pid, &start) < 0 ||
            (rec->supervisor_start != RUN_UNSET && start != rec->supervisor_start)) {
                log_error("kill: run %s: its supervisor (pid %d) is gone", rec->id, (int)rec->supervisor_pid);
                return EXIT_FAILURE_GENERIC;
        }
        siginfo_t si = { 0 };
        si.si_signo = SIGTERM;
        si.si_code = SI_QUEUE;
        si.si_pid = getpid();
        si.si_uid = getuid();
        si.si_value.sival_ptr = (void *)(uintptr_t)cancel_encode(&req);
        if (syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, &si, 0) < 0) {
                log_error("kill: run %s: cannot signal its supervisor (pid %d): %s", rec->id,
                          (int)rec->supervisor_pid, strerror(errno));
                return EXIT_FAILURE_GENERIC;
        }
        if (!wait)
                return EXIT_OK;

        uint64_t grace = req.grace_given ? req.grace_ms : 30000;
        r = cli_wait_run(s, rec->id, grace + KILL_WAIT_EXTRA_MS, &done);
        if (r == -ETIMEDOUT) {
                log_error("kill: run %s has not ended yet", rec->id);
                return EXIT_FAILURE_GENERIC;
        }
        if (r < 0) {
                log_error("kill: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        printf("%s %s\n", done->id, run_status_to_string(done->status));
        return EXIT_OK;
}
