/* gvisor-status.c - the job's wait status under the gvisor runtime, as
 * gVisor's kernel reported it to runsc (see gvisor.h).
 *
 * `runsc run` exits with the job's exit code, or 128+N when the job was
 * killed by signal N, or 128 when runsc itself failed: from the exit
 * code alone a job killed by SIGKILL and a job that ran `exit 137` look
 * the same, and so do runsc failing and a job's own `exit 128`. But
 * runsc run writes the raw wait status it got from the sentry to its
 * debug log, as its very last line, just before it exits:
 *
 *   I1201 12:26:08.593837   32452 main.go:266] Exiting with status: 9
 *
 * gvisor_exec() points that log (--debug-log, for the run command only:
 * the sentry and gofer get none) at a file in the bundle, and init
 * reads it once runsc run is reaped. Why the job cannot forge it:
 *  - the file is written by runsc run, a host process outside gVisor,
 *    and lives under GVISOR_DIR, which the sentry covers with a tmpfs
 *    of its own (mode 000): the job has no path to it, and without
 *    capabilities inside gVisor it cannot unmount that cover; the job's
 *    code runs only in gVisor's stubs, whose every system call the
 *    sentry serves, so it holds no host fd either;
 *  - the status is the sentry's own wait status for the container's
 *    first process: `exit 137` gives 35072 (exited, 137), SIGKILL 9;
 *  - only the last line is taken (after it, runsc may log warnings
 *    only), and it must agree with runsc's real
 *    exit code (the same code, or 128+N for signal N); anything else is
 *    ignored and the exit code stands, as it would without this log.
 *    (The line's pid is not checked: rootless runsc re-executes itself
 *    in a user namespace of its own, and that child, which init never
 *    sees, is the one that logs; the parent exits with its code and
 *    logs nothing after it.) The other lines runsc run logs at this
 *    level are its own configuration and steps, no text of the job's.
 * Only the file's tail is read, so its size costs nothing here.
 */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/exit-codes.h"
#include "sandbox/gvisor.h"
#include "lib/util.h"

/* runsc run logs some 30 lines of ~100 bytes; the status line is last */
#define LOG_TAIL_BYTES 4096

static const char *digits(const char *p, size_t min, size_t max, unsigned long *ret)
{
        size_t n = 0;
        unsigned long v = 0;
        while (isdigit((unsigned char)p[n]) && n < max) {
                v = v * 10 + (unsigned long)(p[n] - '0');
                n++;
        }
        if (n < min || isdigit((unsigned char)p[n]))
                return NULL;
        if (ret)
                *ret = v;
        return p + n;
}

static const char *literal(const char *p, const char *s)
{
        size_t n = strlen(s);
        return p && strncmp(p, s, n) == 0 ? p + n : NULL;
}

/* One glog-style line, NUL-terminated, without its newline:
 * "I1201 12:26:08.593837   32452 main.go:266] Exiting with status: 9".
 * Returns the status, or -1 when the line is not exactly that. */
static long status_line(const char *p)
{
        unsigned long v;
        if (*p++ != 'I' || !(p = digits(p, 4, 4, NULL)) || !(p = literal(p, " ")) ||
            !(p = digits(p, 2, 2, NULL)) || !(p = literal(p, ":")) || !(p = digits(p, 2, 2, NULL)) ||
            !(p = literal(p, ":")) || !(p = digits(p, 2, 2, NULL)) || !(p = literal(p, ".")) ||
            !(p = digits(p, 6, 6, NULL)))
                return -1;
        while (*p == ' ')
                p++;
        if (!(p = digits(p, 1, 10, NULL)) || !(p = literal(p, " ")))
                return -1;
        /* the source file: main.go in 2022's runsc, cli.go later */
        while (islower((unsigned char)*p) || *p == '_')
                p++;
        if (!(p = literal(p, ".go:")) || !(p = digits(p, 1, 6, NULL)) ||
            !(p = literal(p, "] Exiting with status: ")) || !(p = digits(p, 1, 5, &v)) || *p)
                return -1;
        return v <= 0xffff ? (long)v : -1;
}

/* Whether wait status s is what runsc's exit code says. */
static bool agrees(int s, int runsc_status)
{
        int code = WEXITSTATUS(runsc_status);
        if (WIFEXITED(s))
                return WEXITSTATUS(s) == code;
        if (WIFSIGNALED(s))
                return EXIT_SIGNAL_BASE + WTERMSIG(s) == code;
        return false;
}

int gvisor_status_from_log(const char *log, size_t len, int runsc_status, int *ret_status)
{
        /* runsc run itself was killed (the watchdog, the namespace's end):
         * the job went with it */
        if (!WIFEXITED(runsc_status)) {
                *ret_status = runsc_status;
                return 0;
        }
        /* the last line but warnings: the rootless parent may warn after
         * its child's status line that the SIGCHLD it got could not be
         * forwarded to the child that just exited */
        long s = -1;
        size_t end = len;
        while (end > 0) {
                while (end > 0 && log[end - 1] == '\n')
                        end--;
                size_t start = end;
                while (start > 0 && log[start - 1] != '\n')
                        start--;
                if (start == end || log[start] != 'W') {
                        char line[256];
                        if (end > start && end - start < sizeof(line)) {
                                memcpy(line, log + start, end - start);
                                line[end - start] = '\0';
                                s = status_line(line);
                        }
                        break;
                }
                end = start;
        }
        if (s >= 0 && agrees((int)s, runsc_status)) {
                *ret_status = (int)s;
                return 0;
        }
        /* no status from runsc: 128 is its own failure (gvisor.h) */
        if (WEXITSTATUS(runsc_status) == GVISOR_RUNSC_FAILED)
                return -EIO;
        *ret_status = runsc_status;
        return 0;
}

int gvisor_job_status(int runsc_status, bool compile, int *ret_status)
{
        char path[PATH_MAX], buf[LOG_TAIL_BYTES];
        ssize_t n = 0;

        gvisor_log_path(path, sizeof(path), compile);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
                off_t off = st.st_size > LOG_TAIL_BYTES ? st.st_size - LOG_TAIL_BYTES : 0;
                n = pread(fd, buf, sizeof(buf), off);
                if (n < 0)
                        n = 0;
        }
        return gvisor_status_from_log(buf, (size_t)n, runsc_status, ret_status);
}

void gvisor_log_path(char *buf, size_t len, bool compile)
{
        snprintf(buf, len, GVISOR_DIR "/%s/runsc.log", compile ? "hutch-compile" : "hutch");
}
