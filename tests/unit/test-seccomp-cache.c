/* test-seccomp-cache.c - unit tests for the compiled-filter cache
 * (seccomp-cache.c): an entry whose body or header was changed, that was
 * renamed onto another key, or that others may write is never used: the
 * filter is compiled again, the entry rewritten (0600), and the report's
 * counts are those of the compile, not of the file. */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "sandbox/seccomp.h"
#include "lib/util.h"

/* Header layout of a cache entry (seccomp-cache.c): magic[8], format,
 * syscalls, rules, blob_len (u32 each), key[64], check (u64). */
#define OFF_SYSCALLS 12
#define HEADER_SIZE 96

struct fixture {
        char dir[64];
        struct seccomp_settings s;
        void *fresh;            /* the filter compiled without a cache */
        size_t fresh_len;
        struct seccomp_report report;
        char *entry;
};

static int setup(void **state)
{
        struct fixture *f = xcalloc(1, sizeof(*f));
        _cleanup_free_ char *err = NULL;

        snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-bpf-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        seccomp_settings_default(&f->s);
        if (seccomp_policy_compile(&f->s, NULL, &f->fresh, &f->fresh_len, &f->report, &err) < 0)
                return -1;
        f->entry = seccomp_cache_path(&f->s, f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
                return -1;
        seccomp_settings_done(&f->s);
        free(f->fresh);
        free(f->entry);
        free(f);
        return 0;
}

/* Compile with the cache; the result must be the fresh filter and the
 * fresh counts. Returns whether it came from the cache. */
static bool compile_matches(struct fixture *f)
{
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ void *blob = NULL;
        struct seccomp_report r;
        size_t len;

        assert_int_equal(seccomp_policy_compile(&f->s, f->dir, &blob, &len, &r, &err), 0);
        assert_int_equal(len, f->fresh_len);
        assert_memory_equal(blob, f->fresh, len);
        assert_int_equal(r.syscalls, f->report.syscalls);
        assert_int_equal(r.rules, f->report.rules);
        return r.cached;
}

static void patch(const char *path, off_t off, const void *bytes, size_t n)
{
        int fd = open(path, O_WRONLY);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
        close(fd);
}

/* the check is CRC-64/XZ: its published check value, and it sees a
 * flip of any single bit of either part */
static void check_is_crc64(void **state)
{
        (void)state;
        assert_true(seccomp_cache_crc64("1234", 4, "56789", 5) == 0x995dc9bbdf1939faull);
        assert_true(seccomp_cache_crc64("", 0, "123456789", 9) == 0x995dc9bbdf1939faull);
        unsigned char a[40] = { 0 }, b[200] = { 0 };
        uint64_t base = seccomp_cache_crc64(a, sizeof(a), b, sizeof(b));
        for (size_t bit = 0; bit < 8 * (sizeof(a) + sizeof(b)); bit++) {
                unsigned char *p = bit / 8 < sizeof(a) ? &a[bit / 8] : &b[bit / 8 - sizeof(a)];
                *p ^= (unsigned char)(1u << (bit % 8));
                assert_true(seccomp_cache_crc64(a, sizeof(a), b, sizeof(b)) != base);
                *p ^= (unsigned char)(1u << (bit % 8));
        }
}

static void entry_written_private(void **state)
{
        struct fixture *f = *state;
        struct stat st;

        assert_non_null(f->entry);
        assert_false(compile_matches(f));       /* a miss: compiled, written */
        assert_int_equal(stat(f->entry, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(st.st_uid, geteuid());
        assert_int_equal((size_t)st.st_size, HEADER_SIZE + f->fresh_len);
        assert_true(compile_matches(f));        /* then a verified hit */
}

static void damaged_body_recompiled(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *before = NULL, *after = NULL;
        size_t len_before, len_after;

        assert_false(compile_matches(f));
        assert_int_equal(read_file(f->entry, &before, &len_before), 0);
        /* flip bits in every instruction's jump offsets, one at a time */
        for (size_t off = HEADER_SIZE + 12 + 2; off < len_before; off += 8 * 17) {
                unsigned char c = (unsigned char)before[off] ^ 0x04;
                patch(f->entry, (off_t)off, &c, 1);
                assert_false(compile_matches(f));
                /* rewritten whole */
                free(after);
                after = NULL;
                assert_int_equal(read_file(f->entry, &after, &len_after), 0);
                assert_int_equal(len_after, len_before);
                assert_memory_equal(after, before, len_before);
        }
}

static void edited_header_not_believed(void **state)
{
        struct fixture *f = *state;
        uint32_t lie = 3;

        assert_false(compile_matches(f));
        patch(f->entry, OFF_SYSCALLS, &lie, sizeof(lie));
        assert_false(compile_matches(f));       /* counts from the compile, not the file */
        assert_true(compile_matches(f));
        /* truncated */
        assert_int_equal(truncate(f->entry, HEADER_SIZE + 8), 0);
        assert_false(compile_matches(f));
        assert_true(compile_matches(f));
}

static void foreign_entries_refused(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *other = NULL, *text = NULL;
        size_t len;

        assert_false(compile_matches(f));
        /* writable by others: never loaded */
        assert_int_equal(chmod(f->entry, 0666), 0);
        assert_false(compile_matches(f));
        struct stat st;
        assert_int_equal(stat(f->entry, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);

        /* a valid entry of another policy under this policy's name */
        struct seccomp_settings t = { 0 };
        _cleanup_free_ char *err = NULL;
        void *blob;
        size_t blob_len;
        seccomp_settings_strict(&t);
        assert_int_equal(seccomp_policy_compile(&t, f->dir, &blob, &blob_len, NULL, &err), 0);
        free(blob);
        other = seccomp_cache_path(&t, f->dir);
        seccomp_settings_done(&t);
        assert_int_equal(read_file(other, &text, &len), 0);
        assert_int_equal(rename(other, f->entry), 0);
        assert_false(compile_matches(f));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(check_is_crc64),
                cmocka_unit_test_setup_teardown(entry_written_private, setup, teardown),
                cmocka_unit_test_setup_teardown(damaged_body_recompiled, setup, teardown),
                cmocka_unit_test_setup_teardown(edited_header_not_believed, setup, teardown),
                cmocka_unit_test_setup_teardown(foreign_entries_refused, setup, teardown),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
