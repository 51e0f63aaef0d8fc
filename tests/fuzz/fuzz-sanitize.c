/* fuzz-sanitize.c - libFuzzer target: arbitrary bytes as a job's output,
 * through what the host makes of it for JSON and for a terminal
 * (lib/sanitize.c). Whatever the job writes:
 *  - sanitize_text() gives valid UTF-8 (NUL aside) with no ESC and no C1
 *    control in any form;
 *  - sanitize_fold() keeps every line within the width (plus one
 *    character and the mark) and only adds marks;
 *  - the terminal stream, fed in pieces of the sizes the input picks,
 *    writes valid UTF-8 with no control a terminal obeys: no C0 but tab
 *    and newline, no DEL, no C1 (U+0080-U+009F).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/sanitize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "sanitize: %s\n", what);
                abort();
        }
}

/* valid UTF-8 (NUL allowed) without ESC, without C1 controls */
static void check_clean_text(const char *s, size_t n, const char *what)
{
        const unsigned char *p = (const unsigned char *)s;
        for (size_t i = 0; i < n; i++) {
                check(p[i] != 0x1b, what);
                check(!(p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f), what);
        }
        for (size_t i = 0, start = 0; i <= n; i++)
                if (i == n || p[i] == 0) {
                        check(sanitize_utf8_valid(s + start, i - start), what);
                        start = i + 1;
                }
}

static void check_text(const uint8_t *data, size_t size)
{
        size_t len = 0, flen = 0, width = size ? (size_t)data[0] % 64 + 1 : 1;
        char *t = sanitize_text((const char *)data, size, &len);
        check(t[len] == '\0', "sanitize_text: not terminated");
        check_clean_text(t, len, "sanitize_text: escape, C1 control or invalid UTF-8 left");

        char *f = sanitize_fold(t, len, width, &flen);
        check(f[flen] == '\0', "sanitize_fold: not terminated");
        check_clean_text(f, flen, "sanitize_fold: escape, C1 control or invalid UTF-8 made");
        check(flen >= len && (flen - len) % (sizeof(SANITIZE_FOLD_MARK) - 1) == 0, "sanitize_fold: changed more than marks");
        for (size_t i = 0, run = 0; i < flen; i++) {
                run = f[i] == '\n' ? 0 : run + 1;
                check(run <= width + 4 + sizeof(SANITIZE_FOLD_MARK), "sanitize_fold: line over the width");
        }
        free(f);
        free(t);
}

static void check_tty(const uint8_t *data, size_t size)
{
        int fd = memfd_create("fuzz-tty", MFD_CLOEXEC);
        check(fd >= 0, "memfd_create");
        FILE *f = sanitize_tty_stream(fd);
        check(f != NULL, "sanitize_tty_stream");
        setvbuf(f, NULL, _IONBF, 0);    /* one write per piece: sequences cut between writes */
        for (size_t off = 0, k = 0; off < size; k++) {
                size_t piece = 1 + (size_t)data[k % size] % 7;
                if (piece > size - off)
                        piece = size - off;
                check(fwrite(data + off, 1, piece, f) == piece, "fwrite");
                off += piece;
        }
        check(fclose(f) == 0, "fclose");

        off_t n = lseek(fd, 0, SEEK_END);
        check(n >= 0, "lseek");
        char *out = malloc((size_t)n + 1);
        check(out != NULL, "malloc");
        check(pread(fd, out, (size_t)n, 0) == n, "pread");
        close(fd);
        check(sanitize_utf8_valid(out, (size_t)n), "tty: invalid UTF-8 or NUL written");
        for (off_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)out[i];
                check(!(c < 0x20 && c != '\n' && c != '\t'), "tty: a C0 control reached the terminal");
                check(c != 0x7f, "tty: DEL reached the terminal");
                check(!(c == 0xc2 && i + 1 < n && (unsigned char)out[i + 1] <= 0x9f), "tty: a C1 control reached the terminal");
        }
        free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        check_text(data, size);
        check_tty(data, size);
        return 0;
}
