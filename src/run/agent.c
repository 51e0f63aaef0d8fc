/* run/agent.c - what the agent interface adds to a run once it is
 * under way: secrets redacted from the record and scrubbed from its
 * files, and --detach (the spool of events, the fork that leaves the
 * caller). The request and the idempotency key's answer, which come
 * before the run, are cli/run-agent.c's.
 */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/wait.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/fsutil.h"
#include "lib/redact.h"
#include "record/blobstore.h"
#include "record/store.h"
#include "run/run-internal.h"
#include "run/runfiles.h"
#include "supervise/events.h"

/* Redact a stored buffer (a stream, the code) in place. */
static void redact_buffer(char **data, size_t *n, char *const *secrets)
{
        size_t len;
        char *clean = *data ? redact(*data, *n, secrets, &len) : NULL;
        if (clean) {
                explicit_bzero(*data, *n);
                free(*data);
                *data = clean;
                *n = len;
        }
}

void run_redact_record(struct run_record *rec, char *const *secrets)
{
        if (!secrets || !secrets[0])
                return;
        redact_buffer(&rec->out.data, &rec->out.len, secrets);
        redact_buffer(&rec->err.data, &rec->err.len, secrets);
        redact_str(&rec->message, secrets);
}

void run_redact_start(struct run_record *rec, char **labels, char *const *secrets)
{
        if (!secrets || !secrets[0])
                return;
        redact_strv(rec->argv, secrets);
        redact_strv(labels, secrets);
        redact_str(&rec->cwd, secrets);
        redact_str(&rec->profile_text, secrets);
        redact_buffer(&rec->code, &rec->code_len, secrets);
}

/* The name of the first secret whose value is in fd's content, or NULL.
 * Read in chunks that overlap by the longest value, so a value across
 * two reads is found. */
static const char *blob_secret(int fd, char *const *secrets)
{
        size_t keep = redact_max_len(secrets), len = 0, cap = 65536 + keep;
        _cleanup_free_ char *buf = xmalloc(cap);
        ssize_t n;

        while ((n = read(fd, buf + len, cap - len)) > 0) {
                len += (size_t)n;
                for (char *const *s = secrets; *s; s++) {
                        const char *eq = strchr(*s, '=');
                        if (eq && eq[1] && memmem(buf, len, eq + 1, strlen(eq + 1)))
                                return *s;
                }
                if (len > keep) {
                        memmove(buf, buf + len - keep, keep);
                        len = keep;
                }
        }
        return NULL;
}

void run_scrub_secret_files(struct store *s, const char *run_id, char *const *secrets, struct events *ev)
{
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        struct file_record *f = NULL;
        size_t n = 0;

        if (!secrets || !secrets[0] || store_files_list(s, run_id, NULL, &f, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                if (!f[i].sha256[0])
                        continue;
                if (!bs && runfiles_open_blobs(s, &bs) < 0)
                        break;
                _cleanup_close_ int fd = blobstore_open_blob(bs, f[i].sha256);
                const char *hit = fd >= 0 ? blob_secret(fd, secrets) : NULL;
                if (!hit)
                        continue;
                /* the blob holds the secret: it goes, and the row says why
                 * the file was not kept */
                _cleanup_free_ char *rel = blobstore_relpath(f[i].sha256);
                if (rel && unlinkat(blobstore_dirfd(bs), rel, 0) < 0 && errno != ENOENT)
                        log_warning("run: cannot remove blob %s holding a secret: %s", rel, strerror(errno));
                f[i].sha256[0] = '\0';
                free(f[i].skip);
                f[i].skip = xasprintf("not stored: it contains the value of secret %.*s",
                                      (int)(strchr(hit, '=') - hit), hit);
                if (store_files_add(s, run_id, &f[i], 1) < 0)
                        log_warning("run: run store: %s", store_error(s));
                log_warning("run: %s: %s", f[i].path, f[i].skip);
                if (ev) {
                        _cleanup_free_ char *msg = xasprintf("%s: %s", f[i].path, f[i].skip);
                        events_warning(ev, msg);
                }
        }
        file_records_free(f, n);
}

char *run_spool_path(const char *run_id)
{
        _cleanup_free_ char *db = NULL;
        if (store_default_path(&db) < 0)
                return NULL;
        char *slash = strrchr(db, '/');
        if (slash)
                *slash = '\0';
        return xasprintf("%s/spool/%s.events", db, run_id);
}

int run_detach(struct run_record *rec, const char *say, int *ret_notify)
{
        _cleanup_free_ char *spool = run_spool_path(rec->id);
        _cleanup_free_ char *dir = NULL;
        int p[2], r;
        char ok;
        pid_t pid;

        if (!spool) {
                log_error("run: --detach: no state dir (set HUTCH_STATE_DIR or HOME)");
                return EXIT_SETUP;
        }
        dir = xstrdup(spool);
        *strrchr(dir, '/') = '\0';
        r = mkdir_p(dir, 0700);
        if (r < 0) {
                log_error_errno(r, "run: --detach: %s: %m", dir);
                return EXIT_SETUP;
        }
        /* the spool holds the job's output (secrets redacted): ours only */
        _cleanup_close_ int fd = open(spool, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                log_error_errno(-errno, "run: --detach: %s: %m", spool);
                return EXIT_SETUP;
        }
        if (pipe2(p, O_CLOEXEC) < 0) {
                log_error_errno(-errno, "run: --detach: pipe: %m");
                return EXIT_SETUP;
        }
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0) {
                log_error_errno(-errno, "run: --detach: fork: %m");
                close(p[0]);
                close(p[1]);
                return EXIT_SETUP;
        }
        if (pid > 0) {
                /* the caller's side: the id once the row exists, or the
                 * supervisor's own exit code if it failed before that */
                int status;
                close(p[1]);
                ssize_t n;
                while ((n = read(p[0], &ok, 1)) < 0 && errno == EINTR)
                        ;
                close(p[0]);
                if (n == 1) {
                        printf("%s\n", say ? say : rec->id);
                        return EXIT_OK;
                }
                if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
                        return WEXITSTATUS(status) ? WEXITSTATUS(status) : EXIT_SETUP;
                return EXIT_SETUP;
        }

        /* The supervisor: its own session, so the caller's terminal and
         * its hangup are not ours; no stdin; the events go to the spool.
         * stderr stays the caller's until the row exists, so a run that
         * cannot start still says why where the caller looks. */
        close(p[0]);
        (void)setsid();
        signal(SIGHUP, SIG_IGN);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0)
                _exit(EXIT_SETUP);
        if (null > STDERR_FILENO)
                close(null);
        uint64_t start;
        rec->supervisor_pid = getpid();
        rec->supervisor_start = proc_start_time(getpid(), &start) == 0 ? start : RUN_UNSET;
        *ret_notify = p[1];
        return -1;
}

void run_detach_started(int *notify)
{
        if (*notify < 0)
                return;
        (void)!write(*notify, "", 1);
        close(*notify);
        *notify = -1;
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) {
                (void)dup2(null, STDERR_FILENO);
                if (null != STDERR_FILENO)
                        close(null);
        }
}
