/* cli/follow.c - `hutch logs --follow ID`: a detached run's output as it
 * happens, read from the events its supervisor spools (run --detach),
 * until the exit event; a run that has ended is answered from the
 * record. The spool is the supervisor's own file in the state dir; its
 * content is the job's, so every line is parsed as hostile input and
 * only the output it carries is written out.
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run-internal.h"
#include "lib/base64.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/store.h"
#include "supervise/events.h"

#define FOLLOW_POLL_US 20000            /* 20 ms: well inside the 100 ms a line may take */
#define FOLLOW_CHECK_MS 1000            /* how often the row is read again at EOF */
#define FOLLOW_LINE_MAX (64u << 20)     /* an output event of one 512 KiB read, in base64, fits */

/* One spooled event. Returns 1 after the exit event (*ret_code set), 0
 * to go on. */
static int one_event(const char *line, size_t len, bool events, uint64_t since, int *ret_code)
{
        json_t *o = json_loadb(line, len, 0, NULL);
        const char *type = json_string_value(json_object_get(o, "type"));
        int done = 0;

        if (!type) {
                json_decref(o);
                return 0;       /* not an event: skip it */
        }
        if (streq(type, "output")) {
                const char *stream = json_string_value(json_object_get(o, "stream"));
                json_t *d = json_object_get(o, "data");
                uint64_t offset = (uint64_t)json_integer_value(json_object_get(o, "offset"));
                _cleanup_free_ char *raw = NULL;
                const char *data = json_string_value(d);
                size_t n = json_string_length(d);
                if (json_is_true(json_object_get(o, "base64"))) {
                        if (!data || base64_decode(data, n, &raw, &n) < 0) {
                                json_decref(o);
                                return 0;
                        }
                        data = raw;
                }
                if (data && offset + n > since) {
                        if (events)
                                fwrite(line, 1, len, stdout), fputc('\n', stdout);
                        else {
                                size_t skip = since > offset ? (size_t)(since - offset) : 0;
                                FILE *f = stream && streq(stream, "stderr") ? stderr : stdout;
                                fwrite(data + skip, 1, n - skip, f);
                        }
                }
        } else if (events) {
                fwrite(line, 1, len, stdout);
                fputc('\n', stdout);
        }
        if (streq(type, "exit")) {
                json_t *code = json_object_get(json_object_get(o, "result"), "exit_code");
                *ret_code = json_is_integer(code) ? (int)json_integer_value(code) : EXIT_SETUP;
                done = 1;
        }
        fflush(stdout);
        fflush(stderr);
        json_decref(o);
        return done;
}

/* The run has ended (or its spool is gone with it): the record. */
static int from_record(struct store *s, const char *id, bool events, uint64_t since)
{
        _cleanup_run_record_ struct run_record *rec = NULL;
        if (cli_find_run("logs", s, id, &rec) != EXIT_OK)
                return EXIT_FAILURE_GENERIC;
        if (events)
                return cli_answer_run(s, rec, false, true);
        /* offsets name bytes of the stream; past a cut they mean nothing */
        size_t skip = !rec->out.truncated && since < rec->out.len ? (size_t)since : since ? rec->out.len : 0;
        fwrite(rec->out.data + skip, 1, rec->out.len - skip, stdout);
        fflush(stdout);
        skip = !rec->err.truncated && since < rec->err.len ? (size_t)since : since ? rec->err.len : 0;
        fwrite(rec->err.data + skip, 1, rec->err.len - skip, stderr);
        return cli_run_exit_code(rec);
}

int cli_follow(struct store *s, const struct run_record *rec, bool events, uint64_t since)
{
        _cleanup_free_ char *spool = NULL, *buf = NULL;
        _cleanup_close_ int fd = -1;
        size_t len = 0, cap = 65536;
        uint64_t next_check = now_monotonic_ms() + FOLLOW_CHECK_MS;
        int code = EXIT_OK;

        if (rec->status != RUN_RUNNING)
                return from_record(s, rec->id, events, since);
        spool = run_spool_path(rec->id);
        fd = spool ? open(spool, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (fd < 0) {
                _cleanup_run_record_ struct run_record *now = NULL;
                if (store_run_get(s, rec->id, &now, NULL) == 0 && now->status != RUN_RUNNING)
                        return from_record(s, rec->id, events, since);
                log_error("logs: run %s was not started with --detach: its output is stored when it "
                          "ends (hutch wait %s)", rec->id, rec->id);
                return EXIT_FAILURE_GENERIC;
        }
        buf = xmalloc(cap);
        for (;;) {
                if (len == cap) {
                        if (cap >= FOLLOW_LINE_MAX) {
                                log_error("logs: %s: an event longer than %u MiB", spool, FOLLOW_LINE_MAX >> 20);
                                return EXIT_FAILURE_GENERIC;
                        }
                        buf = xrealloc(buf, cap *= 2);
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        log_error_errno(-errno, "logs: %s: %m", spool);
                        return EXIT_FAILURE_GENERIC;
                }
                if (n == 0) {
                        /* at the end of what is written so far: the
                         * supervisor may have died without an exit event */
                        if (now_monotonic_ms() >= next_check) {
                                _cleanup_run_record_ struct run_record *now = NULL;
                                next_check = now_monotonic_ms() + FOLLOW_CHECK_MS;
                                if (store_run_get(s, rec->id, &now, NULL) == 0 &&
                                    (run_record_is_orphan(now) || now->status == RUN_ORPHANED)) {
                                        log_error("logs: run %s was orphaned: its supervisor died", rec->id);
                                        return EXIT_SETUP;
                                }
                        }
                        usleep(FOLLOW_POLL_US);
                        continue;
                }
                len += (size_t)n;
                char *start = buf, *nl;
                while ((nl = memchr(start, '\n', len - (size_t)(start - buf)))) {
                        if (one_event(start, (size_t)(nl - start), events, since, &code))
                                return code;
                        start = nl + 1;
                }
                len -= (size_t)(start - buf);
                memmove(buf, start, len);
        }
}
