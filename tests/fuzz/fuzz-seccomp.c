/* fuzz-seccomp.c - libFuzzer target: arbitrary bytes as the syscall
 * groups file (share/seccomp.ini). The groups check and building the
 * default and strict policies from it must never crash, leak or loop,
 * whatever the file holds (cycles, unknown names, huge groups). The
 * input is written to a private temporary directory named by
 * HUTCH_DATADIR; nothing is loaded into the kernel.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/seccomp.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/hutch-fuzz-seccomp.XXXXXX";
static char *path;

static void remove_dir(void)
{
        (void)unlink(path);
        (void)rmdir(dir);
}

static char *groups_file(void)
{
        if (!path) {
                if (!mkdtemp(dir))
                        abort();
                setenv("HUTCH_DATADIR", dir, 1);
                path = xasprintf("%s/seccomp.ini", dir);
                atexit(remove_dir);
        }
        return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *path = groups_file();
        FILE *f = fopen(path, "we");
        char *err = NULL;

        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
                abort();
        (void)seccomp_groups_check(&err);
        free(err);
        for (int strict = 0; strict < 2; strict++) {
                struct seccomp_settings s = { 0 };
                struct seccomp_policy *p = NULL;
                struct seccomp_report report;
                err = NULL;
                if (strict)
                        seccomp_settings_strict(&s);
                else
                        seccomp_settings_default(&s);
                if (seccomp_policy_build(&s, &p, &report, &err) == 0 && !p)
                        abort();
                seccomp_policy_free(p);
                seccomp_settings_done(&s);
                free(err);
        }
        return 0;
}
