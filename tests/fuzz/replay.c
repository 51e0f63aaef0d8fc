/* replay.c - run a fuzz target over saved inputs, without libFuzzer.
 *
 * Used when hutch is configured without --enable-fuzzing, so the target is
 * always compiled and its seed corpus exercised by `make check`. Each
 * argument is a file or a directory of files; output is TAP, one test per
 * input. A crash is the failure signal, as under libFuzzer.
 */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
        _cleanup_strv_ char **files = NULL;
        size_t n;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                DIR *d;
                struct dirent *de;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        files = strv_append(files, argv[i]);
                        continue;
                }
                d = opendir(argv[i]);
                if (!d)
                        return 1;
                while ((de = readdir(d))) {
                        _cleanup_free_ char *p = NULL;
                        if (de->d_name[0] == '.')
                                continue;
                        p = xasprintf("%s/%s", argv[i], de->d_name);
                        files = strv_append(files, p);
                }
                closedir(d);
        }
        n = strv_length(files);
        if (n)
                qsort(files, n, sizeof(char *), cmp_str);

        printf("1..%zu\n", n);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *data = NULL;
                size_t len = 0;
                int r = read_file(files[i], &data, &len);
                if (r < 0) {
                        printf("not ok %zu - %s: %s\n", i + 1, files[i], strerror(-r));
                        continue;
                }
                fflush(stdout);
                LLVMFuzzerTestOneInput((const uint8_t *)data, len);
                printf("ok %zu - %s\n", i + 1, files[i]);
        }
        return 0;
}
