/* test-capture.c - unit tests for head+tail output capture: exact bytes
 * when the stream fits, exact omitted byte and line counts when it does
 * not (checked against a naive reference on random input), line counting,
 * and the newline counter at every alignment. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "supervise/capture.h"
#include "lib/util.h"

static uint64_t naive_newlines(const char *p, size_t n)
{
        uint64_t c = 0;
        for (size_t i = 0; i < n; i++)
                c += p[i] == '\n';
        return c;
}

/* What capture_render() must produce for input[0..n) with this limit,
 * computed the obvious way: the middle is counted directly. */
static char *reference(const char *input, size_t n, size_t limit, size_t *ret_len)
{
        if (n <= 2 * limit) {
                char *out = xmalloc(n + 1);
                memcpy(out, input, n);
                out[n] = '\0';
                *ret_len = n;
                return out;
        }
        _cleanup_free_ char *marker = xasprintf(
                "%s[\xe2\x80\xa6 %zu bytes, %llu lines omitted \xe2\x80\xa6]\n",
                limit > 0 && input[limit - 1] != '\n' ? "\n" : "",
                n - 2 * limit,
                (unsigned long long)naive_newlines(input + limit, n - 2 * limit));
        size_t ml = strlen(marker);
        char *out = xmalloc(2 * limit + ml + 1);
        memcpy(out, input, limit);
        memcpy(out + limit, marker, ml);
        memcpy(out + limit + ml, input + n - limit, limit);
        *ret_len = 2 * limit + ml;
        out[*ret_len] = '\0';
        return out;
}

static void check_render(struct capture *c, const char *input, size_t n, size_t limit)
{
        _cleanup_free_ char *got = NULL, *want = NULL;
        size_t got_len, want_len;
        bool truncated;

        assert_int_equal(capture_render(c, &got, &got_len, &truncated), 0);
        want = reference(input, n, limit, &want_len);
        assert_int_equal(truncated, n > 2 * limit);
        assert_int_equal(capture_truncated(c), n > 2 * limit);
        assert_int_equal(got_len, want_len);
        assert_memory_equal(got, want, want_len);
        assert_int_equal(got[got_len], '\0');
        assert_int_equal(capture_total_bytes(c), n);
        assert_int_equal(capture_total_lines(c),
                         naive_newlines(input, n) + (n > 0 && input[n - 1] != '\n'));
}

static void empty(void **state)
{
        _cleanup_capture_ struct capture *c = capture_new(16);
        _cleanup_free_ char *out = NULL;
        size_t len = 99;
        bool truncated = true;

        capture_append(c, NULL, 0);
        assert_int_equal(capture_total_bytes(c), 0);
        assert_int_equal(capture_total_lines(c), 0);
        assert_int_equal(capture_render(c, &out, &len, &truncated), 0);
        assert_int_equal(len, 0);
        assert_false(truncated);
        assert_string_equal(out, "");
}

static void lines(void **state)
{
        static const struct { const char *in; uint64_t lines; } cases[] = {
                { "a", 1 }, { "a\n", 1 }, { "\n", 1 }, { "\n\n", 2 },
                { "a\nb", 2 }, { "a\nb\n", 2 }, { "abc", 1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_capture_ struct capture *c = capture_new(2);
                capture_append(c, cases[i].in, strlen(cases[i].in));
                assert_int_equal(capture_total_lines(c), cases[i].lines);
        }
}

static void fits_exactly(void **state)
{
        const char *in = "0123456789abcdef";    /* 16 = 2 * 8 */
        _cleanup_capture_ struct capture *c = capture_new(8);

        capture_append(c, in, 3);
        capture_append(c, in + 3, 9);
        capture_append(c, in + 12, 4);
        check_render(c, in, 16, 8);
        assert_false(capture_truncated(c));

        /* one more byte and it is truncated */
        capture_append(c, "g", 1);
        check_render(c, "0123456789abcdefg", 17, 8);
}

static void truncated_marker(void **state)
{
        const char *in = "head\nAAAA\nBBBB\nCCCC\ntail\n";
        _cleanup_capture_ struct capture *c = capture_new(5);
        _cleanup_free_ char *out = NULL;
        size_t len;
        bool truncated;

        capture_append(c, in, strlen(in));
        assert_int_equal(capture_render(c, &out, &len, &truncated), 0);
        assert_true(truncated);
        /* 25 bytes, 5 kept each end: 15 omitted holding 3 newlines */
        assert_string_equal(out, "head\n[\xe2\x80\xa6 15 bytes, 3 lines omitted \xe2\x80\xa6]\ntail\n");
        assert_int_equal(capture_total_lines(c), 5);

        /* a head that ends mid-line gets the marker on a line of its own */
        _cleanup_capture_ struct capture *d = capture_new(3);
        _cleanup_free_ char *out2 = NULL;
        capture_append(d, "abcdefghij", 10);
        assert_int_equal(capture_render(d, &out2, &len, NULL), 0);
        assert_string_equal(out2, "abc\n[\xe2\x80\xa6 4 bytes, 0 lines omitted \xe2\x80\xa6]\nhij");
}

static void zero_limit(void **state)
{
        _cleanup_capture_ struct capture *c = capture_new(0);
        _cleanup_free_ char *out = NULL;
        size_t len;

        capture_append(c, "a\nb\n", 4);
        assert_int_equal(capture_render(c, &out, &len, NULL), 0);
        assert_string_equal(out, "[\xe2\x80\xa6 4 bytes, 2 lines omitted \xe2\x80\xa6]\n");
}

static void random_streams(void **state)
{
        const size_t n = 200000;
        _cleanup_free_ char *input = xmalloc(n);
        unsigned seed = 12345;

        for (int round = 0; round < 60; round++) {
                size_t len = (size_t)rand_r(&seed) % n;
                size_t limit = (size_t)rand_r(&seed) % (round < 30 ? 64 : 70000);
                int nl_odds = 1 + rand_r(&seed) % 40;
                _cleanup_capture_ struct capture *c = capture_new(limit);

                for (size_t i = 0; i < len; i++)
                        input[i] = rand_r(&seed) % nl_odds == 0 ? '\n' : (char)(rand_r(&seed) & 0xff);
                for (size_t off = 0; off < len;) {
                        /* chunks from 1 byte to well over the limit */
                        size_t chunk = 1 + (size_t)rand_r(&seed) % (rand_r(&seed) % 2 ? 16 : 3 * limit + 2);
                        chunk = MIN(chunk, len - off);
                        capture_append(c, input + off, chunk);
                        off += chunk;
                }
                check_render(c, input, len, limit);
        }
}

static void newline_counter(void **state)
{
        char buf[1100];
        unsigned seed = 7;

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = rand_r(&seed) % 3 == 0 ? '\n' : (char)(rand_r(&seed) & 0xff);
        for (size_t off = 0; off < 16; off++)
                for (size_t len = 0; len + off <= sizeof(buf); len += 1 + len / 7)
                        assert_int_equal(count_newlines(buf + off, len), naive_newlines(buf + off, len));
        /* bytes that differ from '\n' by one bit, and 0x8a, must not count */
        memset(buf, 0x0b, 64);
        buf[3] = 0x8a;
        buf[9] = 0x0e;
        buf[17] = 0x1a;
        buf[40] = '\n';
        assert_int_equal(count_newlines(buf, 64), 1);
        memset(buf, '\n', 1024);
        assert_int_equal(count_newlines(buf, 1024), 1024);

        /* long runs of newlines: no per-lane counter may wrap */
        _cleanup_free_ char *big = xmalloc(1 << 20);
        memset(big, '\n', 1 << 20);
        for (size_t len = 1; len <= (1 << 20); len = len * 3 + 1)
                assert_int_equal(count_newlines(big + 1, len - 1), len - 1);
        assert_int_equal(count_newlines(big, 1 << 20), 1 << 20);
}

/* With secrets, the stream is redacted before it is cut into head and
 * tail: a value across the head's end, the tail's start or inside
 * either is never kept, not even in part (it used to be kept minus the
 * bytes past the cut, redaction then running on the cut pieces). Every
 * position of the value and several read sizes are tried. */
static void secrets_before_cut(void **state)
{
        /* none of the value's letters is in "[secret TOK]" or the
         * omitted-bytes line */
        char *secrets[] = { "TOK=QWERYUIPAS", NULL };
        const char *value = "QWERYUIPAS";
        const size_t limit = 16, vlen = strlen(value);
        const size_t reads[] = { 1, 3, 7, 64 };
        (void)state;
        for (size_t pos = 0; pos < 4 * limit; pos++)
                for (size_t r = 0; r < sizeof(reads) / sizeof(reads[0]); r++) {
                        size_t n = pos + vlen + 2 * limit;
                        _cleanup_free_ char *in = xmalloc(n);
                        memset(in, 'a', pos);
                        memcpy(in + pos, value, vlen);
                        memset(in + pos + vlen, 'b', n - pos - vlen);
                        _cleanup_capture_ struct capture *c = capture_new(limit);
                        capture_set_secrets(c, secrets);
                        for (size_t at = 0; at < n; at += reads[r])
                                capture_append(c, in + at, MIN(reads[r], n - at));
                        _cleanup_free_ char *out = NULL;
                        size_t len;
                        capture_render(c, &out, &len, NULL);
                        assert_int_equal(capture_total_bytes(c), n);
                        if (memchr(out, 'Q', len) || strpbrk(out, "WERYUIPAS"))
                                fail_msg("value at %zu, reads of %zu: kept '%s'", pos, reads[r], out);
                }
}

static void big_stream(void **state)
{
        /* 64 MiB through a 64 KiB capture: only counts and ends survive */
        const size_t chunk = 65536;
        _cleanup_free_ char *block = xmalloc(chunk);
        _cleanup_capture_ struct capture *c = capture_new(65536);
        _cleanup_free_ char *out = NULL;
        size_t len;

        for (size_t i = 0; i < chunk; i++)
                block[i] = i % 64 == 63 ? '\n' : 'x';
        for (int i = 0; i < 1024; i++)
                capture_append(c, block, chunk);
        assert_int_equal(capture_total_bytes(c), 64ULL << 20);
        assert_int_equal(capture_total_lines(c), (64ULL << 20) / 64);
        assert_int_equal(capture_render(c, &out, &len, NULL), 0);
        assert_non_null(strstr(out, "[\xe2\x80\xa6 66977792 bytes, 1046528 lines omitted \xe2\x80\xa6]\n"));
        assert_int_equal(len, 2 * 65536 + strlen("[\xe2\x80\xa6 66977792 bytes, 1046528 lines omitted \xe2\x80\xa6]\n"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(empty),
                cmocka_unit_test(lines),
                cmocka_unit_test(fits_exactly),
                cmocka_unit_test(truncated_marker),
                cmocka_unit_test(zero_limit),
                cmocka_unit_test(random_streams),
                cmocka_unit_test(newline_counter),
                cmocka_unit_test(big_stream),
                cmocka_unit_test(secrets_before_cut),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
