/* tap-skip.h - skips that the automake TAP driver counts as skips.
 *
 * cmocka (1.1.5 to 1.1.7 at least) prints a skipped test as
 * "not ok N # SKIP name", which tap-driver.sh counts as a FAIL, and has
 * no place for the reason. tap_skip_filter() puts a filter between the
 * tests and stdout: it rewrites that line to "ok N - name # SKIP reason",
 * the reason being what tap_skip(reason) printed just before. Everything
 * else passes through unchanged.
 *
 * Use: call tap_skip_filter() first in main(), before any output, and
 * tap_skip("why") instead of skip(). Header-only, for the test
 * programs alone. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TAP_SKIP_MARK "# hutch-skip-reason: "

/* Skip the running test, saying why (one line). */
#define tap_skip(reason) do {                                           \
                printf(TAP_SKIP_MARK "%s\n", (reason));                 \
                fflush(stdout);                                         \
                skip();                                                 \
        } while (0)

/* Fork: the child returns and runs the tests with stdout into a pipe;
 * the parent rewrites their TAP and exits with the child's status. */
static inline void tap_skip_filter(void)
{
        int p[2];

        fflush(stdout);
        if (pipe(p) < 0)
                return;         /* unfiltered: skips show as cmocka prints them */
        pid_t pid = fork();
        if (pid < 0) {
                close(p[0]);
                close(p[1]);
                return;
        }
        if (pid == 0) {
                close(p[0]);
                dup2(p[1], STDOUT_FILENO);
                close(p[1]);
                return;
        }
        close(p[1]);
        FILE *in = fdopen(p[0], "r");
        char line[4096], reason[4096] = "";
        while (in && fgets(line, sizeof(line), in)) {
                unsigned n;
                int off = 0;
                if (strncmp(line, TAP_SKIP_MARK, strlen(TAP_SKIP_MARK)) == 0) {
                        snprintf(reason, sizeof(reason), "%s", line + strlen(TAP_SKIP_MARK));
                        reason[strcspn(reason, "\n")] = '\0';
                        continue;
                }
                if (sscanf(line, "not ok %u # SKIP %n", &n, &off) == 1 && off > 0) {
                        char *name = line + off;
                        name[strcspn(name, "\n")] = '\0';
                        printf("ok %u - %s # SKIP %s\n", n, name, reason[0] ? reason : "skipped");
                        reason[0] = '\0';
                } else
                        fputs(line, stdout);
                fflush(stdout);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        exit(1);
        exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
