/* cli/wait.c - `hutch wait ID`: block until a run (usually a detached
 * one, or another caller's) ends, then answer with its result and exit
 * with its code. run's --id-wait uses the same wait and answer.
 *
 * The wait watches the run's supervisor through a pidfd, so it wakes
 * the moment that process ends, and reads the row again at least every
 * WAIT_POLL_MS in case the pid cannot be watched (another pid namespace,
 * no pidfd support). A supervisor that died without finishing the row
 * makes the run orphaned, which ends the wait too.
 */
#include "config.h"

#include <getopt.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/store.h"
#include "supervise/events.h"

#define WAIT_POLL_MS 200

/* A pidfd for rec's supervisor, if it is still the process that wrote
 * the row (same start time), else -1. */
static int supervisor_pidfd(const struct run_record *rec)
{
        uint64_t start;
        int fd;

        if (rec->supervisor_pid <= 0)
                return -1;
        fd = (int)syscall(SYS_pidfd_open, rec->supervisor_pid, 0);
        if (fd < 0)
                return -1;
        /* checked after opening: the pidfd pins the process, so a reused
         * pid cannot slip in between */
        if (proc_start_time(rec->supervisor_pid, &start) < 0 ||
            (rec->supervisor_start != RUN_UNSET && start != rec->supervisor_start)) {
                close(fd);
                return -1;
        }
        return fd;
}

int cli_wait_run(struct store *s, const char *id, uint64_t timeout_ms, struct run_record **ret)
{
        uint64_t deadline = timeout_ms ? now_monotonic_ms() + timeout_ms : 0;
        int pidfd = -1, r;

        for (;;) {
                _cleanup_run_record_ struct run_record *rec = NULL;
                r = store_run_get(s, id, &rec, NULL);
                if (r < 0)
                        break;
                if (rec->status != RUN_RUNNING || run_record_is_orphan(rec)) {
                        if (rec->status == RUN_RUNNING)
                                rec->status = RUN_ORPHANED;
                        *ret = TAKE_PTR(rec);
                        r = 0;
                        break;
                }
                uint64_t now = now_monotonic_ms();
                if (deadline && now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                if (pidfd < 0)
                        pidfd = supervisor_pidfd(rec);
                int wait_ms = WAIT_POLL_MS;
                if (deadline)
                        wait_ms = (int)MIN((uint64_t)wait_ms, deadline - now);
                if (pidfd >= 0) {
                        struct pollfd p = { .fd = pidfd, .events = POLLIN };
                        (void)poll(&p, 1, wait_ms);
                } else
                        usleep((useconds_t)wait_ms * 1000);
        }
        if (pidfd >= 0)
                close(pidfd);
        return r;
}

int cli_run_exit_code(const struct run_record *rec)
{
        if (rec->status == RUN_ORPHANED || rec->exit_code < 0)
                return EXIT_SETUP;
        return rec->exit_code;
}

int cli_answer_run(struct store *s, const struct run_record *rec, bool json, bool events)
{
        if (events) {
                /* nothing runs: the answer is the one last event */
                _cleanup_events_ struct events *ev = events_new(STDOUT_FILENO, NULL);
                json_t *o = cli_run_json_object(s, rec);
                events_exit(ev, o);
                json_decref(o);
        } else if (json) {
                _cleanup_free_ char *j = cli_run_json(s, rec);
                if (j)
                        printf("%s\n", j);
        } else {
                fwrite(rec->out.data ? rec->out.data : "", 1, rec->out.len, stdout);
                fflush(stdout);
                fwrite(rec->err.data ? rec->err.data : "", 1, rec->err.len, stderr);
        }
        return cli_run_exit_code(rec);
}

static void help(void)
{
        printf("Usage: hutch wait [--json] [--timeout DURATION] ID\n"
               "\n"
               "Wait until run ID ends (a detached run, or one another process\n"
               "started), then print its stored output (or, with --json, its\n"
               "hutch.result/1 object) and exit with its exit code, as hutch run\n"
               "would have. ID is a run id or a unique prefix.\n"
               "\n"
               "  --json              print the result object instead of the output\n"
               "  --timeout DURATION  give up after DURATION: exit 124, the run goes on\n"
               "  -h, --help          this text\n");
}

int verb_wait(int argc, char **argv)
{
        static const struct option options[] = {
                { "json",    no_argument,       NULL, 'j' },
                { "timeout", required_argument, NULL, 't' },
                { "help",    no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL, *done = NULL;
        uint64_t timeout_ms = 0;
        bool json = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 't':
                        if (parse_duration_ms(optarg, &timeout_ms) < 0 || timeout_ms == 0)
                                return cli_bad_value("wait", "timeout", optarg,
                                                     "expected a duration like 30s or 5m");
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("wait", argv, options);
                }
        r = cli_open_run("wait", argc, argv, optind, &s, &rec);
        if (r != EXIT_OK)
                return r;
        r = cli_wait_run(s, rec->id, timeout_ms, &done);
        if (r == -ETIMEDOUT) {
                char buf[32];
                log_error("wait: run %s is still running after %s", rec->id,
                          format_duration_ms(timeout_ms, buf, sizeof(buf)));
                if (json)
                        cli_print_error_json("timeout", "run is still running", NULL, EXIT_TIMEOUT);
                return EXIT_TIMEOUT;
        }
        if (r < 0) {
                log_error("wait: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        if (done->status == RUN_ORPHANED)
                log_error("wait: run %s was orphaned: its supervisor died", done->id);
        return cli_answer_run(s, done, json, false);
}
