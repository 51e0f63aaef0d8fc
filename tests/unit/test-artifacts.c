/* test-artifacts.c - collecting an output directory: what is collected
 * (content byte-identical in the blob store, MIME guessed), what is not
 * (symlinks, wherever they point, are never followed; fifos; anything
 * over the caps) and that the caps are exact: 10,000 files against the
 * default cap of 1000, and one 100 MB file stored and read back. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "workspace/artifacts.h"
#include "record/blobstore.h"
#include "lib/fsutil.h"
#include "fstest.h"
#include "lib/util.h"

struct fixture {
        char *base, *out;
        int out_fd;
        struct blobstore *bs;
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        _cleanup_free_ char *blobs = NULL;

        *state = f;
        f->base = fst_mkdtemp("artifacts");
        if (!f->base)
                return -1;
        f->out = fst_path(f->base, "out");
        blobs = fst_path(f->base, "blobs");
        if (mkdir(f->out, 0755) < 0 || blobstore_open(blobs, &f->bs) < 0)
                return -1;
        f->out_fd = open(f->out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return f->out_fd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        closep(&f->out_fd);
        blobstore_free(f->bs);
        fst_rm_rf(f->base);
        free(f->base);
        free(f->out);
        free(f);
        return 0;
}

static const struct artifact *find(const struct artifact_list *l, const char *path)
{
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].path, path))
                        return &l->items[i];
        return NULL;
}

static int write_bytes(const char *dir, const char *rel, const void *data, size_t n)
{
        _cleanup_free_ char *p = fst_path(dir, rel);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        return fd < 0 ? -errno : write_all(fd, data, n);
}

/* The blob named by a's sha256 holds exactly the bytes of dir/a->path. */
static void assert_blob_is_file(struct blobstore *bs, const char *dir, const struct artifact *a)
{
        _cleanup_free_ char *want = NULL, *got = NULL, *p = fst_path(dir, a->path);
        _cleanup_close_ int fd = blobstore_open_blob(bs, a->sha256);
        size_t wn, gn;

        assert_true(fd >= 0);
        assert_int_equal(read_file(p, &want, &wn), 0);
        {
                _cleanup_free_ char *bp = xasprintf("/proc/self/fd/%d", fd);
                assert_int_equal(read_file(bp, &got, &gn), 0);
        }
        assert_int_equal(wn, gn);
        assert_int_equal(a->size, wn);
        assert_memory_equal(want, got, wn);
}

static void collects_and_refuses_to_follow(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *sub = fst_path(f->out, "sub"), *deeper = fst_path(f->out, "sub/deeper");
        _cleanup_free_ char *fifo = fst_path(f->out, "pipe");
        static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R' };
        static const unsigned char bin[] = { 0x00, 0x01, 0xfe, 0xff, 0x10, 0x80, 0x00, 0x7f };
        static const unsigned char gz[] = { 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00 };
        struct artifact_list l = { 0 };
        const struct artifact *a;
        char hex[DIGEST_HEX_SIZE];

        assert_int_equal(write_bytes(f->out, "plot.png", png, sizeof(png)), 0);
        assert_int_equal(fst_write(f->out, "notes.txt", "résumé of the run\n", 0644), 0);
        assert_int_equal(fst_write(f->out, "result.json", "{\"answer\": 42}\n", 0644), 0);
        assert_int_equal(fst_write(f->out, "table.csv", "a,b\n1,2\n", 0644), 0);
        assert_int_equal(write_bytes(f->out, "blob.bin", bin, sizeof(bin)), 0);
        assert_int_equal(fst_write(f->out, "empty", "", 0600), 0);
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(mkdir(deeper, 0755), 0);
        assert_int_equal(fst_write(f->out, "sub/report.pdf", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", 0644), 0);
        assert_int_equal(write_bytes(f->out, "sub/deeper/data.gz", gz, sizeof(gz)), 0);
        /* escapes: none may be followed */
        assert_int_equal(fst_symlink("/etc/passwd", f->out, "passwd"), 0);
        assert_int_equal(fst_symlink("../../..", f->out, "up"), 0);
        assert_int_equal(fst_symlink("/etc", f->out, "sub/etc"), 0);
        assert_int_equal(fst_symlink("notes.txt", f->out, "inside-link"), 0);
        assert_int_equal(mkfifo(fifo, 0644), 0);

        assert_int_equal(artifacts_collect(f->out_fd, f->bs, NULL, &l), 0);
        for (size_t i = 0; i < l.n; i++)
                print_message("# %-22s %-10s %s\n", l.items[i].path,
                              artifact_skip_to_string(l.items[i].skip) ?: "",
                              l.items[i].mime ?: "");
        assert_int_equal(l.n, 13);
        assert_int_equal(l.n_collected, 8);
        for (size_t i = 1; i < l.n; i++)
                assert_true(fs_path_compare(l.items[i - 1].path, l.items[i].path) < 0);

        a = find(&l, "plot.png");
        assert_string_equal(a->mime, "image/png");
        assert_blob_is_file(f->bs, f->out, a);
        a = find(&l, "notes.txt");
        assert_string_equal(a->mime, "text/plain");
        assert_string_equal(a->sha256, fst_sha("résumé of the run\n", hex));
        assert_blob_is_file(f->bs, f->out, a);
        assert_string_equal(find(&l, "result.json")->mime, "application/json");
        assert_string_equal(find(&l, "table.csv")->mime, "text/csv");
        assert_string_equal(find(&l, "blob.bin")->mime, "application/octet-stream");
        assert_string_equal(find(&l, "sub/report.pdf")->mime, "application/pdf");
        assert_string_equal(find(&l, "sub/deeper/data.gz")->mime, "application/gzip");
        a = find(&l, "empty");
        assert_int_equal(a->size, 0);
        assert_string_equal(a->sha256, fst_sha("", hex));
        assert_blob_is_file(f->bs, f->out, find(&l, "sub/deeper/data.gz"));

        a = find(&l, "passwd");
        assert_int_equal(a->skip, ARTIFACT_SKIP_SYMLINK);
        assert_string_equal(a->link_target, "/etc/passwd");
        assert_string_equal(a->sha256, "");
        a = find(&l, "up");
        assert_int_equal(a->skip, ARTIFACT_SKIP_SYMLINK);
        assert_string_equal(a->link_target, "../../..");
        assert_int_equal(find(&l, "sub/etc")->skip, ARTIFACT_SKIP_SYMLINK);
        assert_int_equal(find(&l, "inside-link")->skip, ARTIFACT_SKIP_SYMLINK);
        assert_int_equal(find(&l, "pipe")->skip, ARTIFACT_SKIP_SPECIAL);
        /* nothing from behind the links */
        for (size_t i = 0; i < l.n; i++) {
                assert_false(startswith(l.items[i].path, "sub/etc/"));
                assert_false(startswith(l.items[i].path, "up/"));
        }
        artifact_list_done(&l);
}

static void ten_thousand_files(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *dir = fst_path(f->base, "many");
        _cleanup_close_ int fd = -1;
        struct artifact_list l = { 0 };
        struct artifacts_limits lim = { .max_skipped_listed = 100 };
        size_t skipped = 0;

        assert_int_equal(mkdir(dir, 0755), 0);
        for (int i = 0; i < 10000; i++) {
                char name[32], text[32];
                snprintf(name, sizeof(name), "f%05d.txt", i);
                snprintf(text, sizeof(text), "file %d\n", i);
                assert_int_equal(fst_write(dir, name, text, 0644), 0);
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);

        /* defaults: 1000 collected, the other 9000 listed as skipped */
        assert_int_equal(artifacts_collect(fd, f->bs, NULL, &l), 0);
        assert_int_equal(l.n_collected, ARTIFACTS_DEFAULT_MAX_FILES);
        assert_int_equal(l.n, 10000);
        assert_int_equal(l.n_unlisted, 0);
        for (size_t i = 0; i < l.n; i++) {
                char name[32];
                snprintf(name, sizeof(name), "f%05zu.txt", i);
                assert_string_equal(l.items[i].path, name);     /* first 1000 in path order */
                assert_int_equal(l.items[i].skip, i < 1000 ? ARTIFACT_SKIP_NONE : ARTIFACT_SKIP_MAX_FILES);
        }
        artifact_list_done(&l);

        /* a listing cap: the rest is only counted */
        assert_int_equal(artifacts_collect(fd, f->bs, &lim, &l), 0);
        for (size_t i = 0; i < l.n; i++)
                skipped += l.items[i].skip != ARTIFACT_SKIP_NONE;
        assert_int_equal(skipped, 100);
        assert_int_equal(l.n_unlisted, 10000 - 1000 - 100);
        artifact_list_done(&l);

        /* a byte cap */
        lim = (struct artifacts_limits){ .max_bytes = 100 };
        assert_int_equal(artifacts_collect(fd, f->bs, &lim, &l), 0);
        {
                /* files are taken in path order while they fit */
                uint64_t sum = 0;
                size_t fit = 0;
                for (int i = 0; i < 10000; i++) {
                        char text[32];
                        uint64_t n = (uint64_t)snprintf(text, sizeof(text), "file %d\n", i);
                        if (sum + n <= 100) {
                                sum += n;
                                fit++;
                        }
                }
                assert_int_equal(l.n_collected, fit);
                assert_int_equal(l.bytes, sum);
        }
        assert_int_equal(find(&l, "f00000.txt")->skip, ARTIFACT_SKIP_NONE);
        assert_int_equal(find(&l, "f09999.txt")->skip, ARTIFACT_SKIP_MAX_BYTES);
        artifact_list_done(&l);
}

static uint64_t xorshift(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

static void fill(uint64_t *seed, unsigned char *buf, size_t n)
{
        for (size_t i = 0; i < n; i += 8) {
                uint64_t v = xorshift(seed);
                memcpy(buf + i, &v, 8);
        }
}

static void hundred_megabytes(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *dir = fst_path(f->base, "big");
        _cleanup_free_ unsigned char *buf = xmalloc(1 << 20), *back = xmalloc(1 << 20);
        _cleanup_close_ int fd = -1, blob = -1;
        struct artifact_list l = { 0 };
        struct digest d;
        char want[DIGEST_HEX_SIZE], got[DIGEST_HEX_SIZE];
        uint64_t seed = 0x5eed5eed5eedULL;

        assert_int_equal(mkdir(dir, 0755), 0);
        {
                _cleanup_free_ char *p = fst_path(dir, "model.bin");
                _cleanup_close_ int out = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                assert_true(out >= 0);
                digest_init(&d);
                for (int i = 0; i < 100; i++) {
                        fill(&seed, buf, 1 << 20);
                        digest_update(&d, buf, 1 << 20);
                        assert_int_equal(write_all(out, buf, 1 << 20), 0);
                }
                digest_final_hex(&d, want);
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(artifacts_collect(fd, f->bs, NULL, &l), 0);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.items[0].skip, ARTIFACT_SKIP_NONE);
        assert_int_equal(l.items[0].size, 100ULL << 20);
        assert_string_equal(l.items[0].sha256, want);

        /* read back: byte-identical, and the hash agrees */
        blob = blobstore_open_blob(f->bs, want);
        assert_true(blob >= 0);
        seed = 0x5eed5eed5eedULL;
        for (int i = 0; i < 100; i++) {
                fill(&seed, buf, 1 << 20);
                assert_int_equal(read_full(blob, back, 1 << 20), 1 << 20);
                assert_memory_equal(buf, back, 1 << 20);
        }
        assert_int_equal(read_full(blob, back, 1), 0);
        assert_int_equal(lseek(blob, 0, SEEK_SET), 0);
        assert_int_equal(digest_fd(blob, got), 0);
        assert_string_equal(got, want);
        artifact_list_done(&l);

        /* a smaller byte cap skips it, and stores nothing new */
        struct artifacts_limits lim = { .max_bytes = 50ULL << 20 };
        assert_int_equal(artifacts_collect(fd, f->bs, &lim, &l), 0);
        assert_int_equal(l.items[0].skip, ARTIFACT_SKIP_MAX_BYTES);
        assert_int_equal(l.n_collected, 0);
        artifact_list_done(&l);
}

static void mime_guesses(void **state)
{
        static const unsigned char jpeg[] = { 0xff, 0xd8, 0xff, 0xe0 };
        static const unsigned char elf[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
        static const unsigned char zip[] = { 'P', 'K', 3, 4, 20, 0 };
        static const unsigned char latin1[] = { 'c', 'a', 'f', 0xe9, '\n' };
        char tar[512] = "hello.txt";

        memcpy(tar + 257, "ustar", 5);
        assert_string_equal(artifacts_guess_mime(jpeg, sizeof(jpeg), true, "x.bin"), "image/jpeg");
        assert_string_equal(artifacts_guess_mime("GIF89a..", 8, true, NULL), "image/gif");
        assert_string_equal(artifacts_guess_mime(elf, sizeof(elf), false, "prog"), "application/x-executable");
        assert_string_equal(artifacts_guess_mime(zip, sizeof(zip), false, "a.docx"), "application/zip");
        assert_string_equal(artifacts_guess_mime(tar, sizeof(tar), false, "a"), "application/x-tar");
        assert_string_equal(artifacts_guess_mime("RIFF\0\0\0\0WEBPVP8 ", 16, false, NULL), "image/webp");
        /* signature beats extension */
        assert_string_equal(artifacts_guess_mime("%PDF-1.4", 8, false, "x.txt"), "application/pdf");
        /* JSON heuristics */
        assert_string_equal(artifacts_guess_mime(" [1, 2, 3]\n", 11, true, NULL), "application/json");
        assert_string_equal(artifacts_guess_mime("{\"a\":", 5, false, NULL), "application/json");
        assert_string_equal(artifacts_guess_mime("{\"a\": 1", 7, true, NULL), "text/plain");
        assert_string_equal(artifacts_guess_mime("[section]\nk=v\n", 14, true, "a.ini"), "text/plain");
        assert_string_equal(artifacts_guess_mime("{not json}", 10, true, NULL), "text/plain");
        /* text by extension; non-UTF-8 is not text */
        assert_string_equal(artifacts_guess_mime("# Title\n", 8, true, "README.md"), "text/markdown");
        assert_string_equal(artifacts_guess_mime("print(1)\n", 9, true, "a.PY"), "text/x-python");
        assert_string_equal(artifacts_guess_mime(latin1, sizeof(latin1), true, "a.txt"), "application/octet-stream");
        /* a UTF-8 sequence cut by the end of the head is still text */
        assert_string_equal(artifacts_guess_mime("ab\xc3", 3, false, NULL), "text/plain");
        assert_string_equal(artifacts_guess_mime("ab\xc3", 3, true, NULL), "application/octet-stream");
        /* binary by extension */
        assert_string_equal(artifacts_guess_mime("\x01\x02", 2, true, "w.wasm"), "application/wasm");
        assert_string_equal(artifacts_guess_mime("", 0, true, "empty.json"), "application/json");
        assert_string_equal(artifacts_guess_mime("", 0, true, NULL), "application/octet-stream");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(collects_and_refuses_to_follow),
                cmocka_unit_test(ten_thousand_files),
                cmocka_unit_test(hundred_megabytes),
                cmocka_unit_test(mime_guesses),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, setup, teardown);
}
