/* test-util.c - unit tests for the unit parsers and string helpers. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "lib/log.h"
#include "lib/strindex.h"
#include "lib/util.h"

static void sizes(void **state)
{
        uint64_t v;
        assert_int_equal(parse_size("512", &v), 0);
        assert_int_equal(v, 512);
        assert_int_equal(parse_size("64K", &v), 0);
        assert_int_equal(v, 65536);
        assert_int_equal(parse_size("512M", &v), 0);
        assert_int_equal(v, 512ULL << 20);
        assert_int_equal(parse_size("1.5G", &v), 0);
        assert_int_equal(v, 3ULL << 29);
        assert_int_equal(parse_size("2GiB", &v), 0);
        assert_int_equal(v, 2ULL << 30);
        assert_int_equal(parse_size("lots", &v), -EINVAL);
        assert_int_equal(parse_size("", &v), -EINVAL);
        assert_int_equal(parse_size("12Q", &v), -EINVAL);
        assert_int_equal(parse_size("-1", &v), -EINVAL);
        assert_int_equal(parse_size("99999999999T", &v), -ERANGE);
}

static void durations(void **state)
{
        uint64_t v;
        assert_int_equal(parse_duration_ms("250ms", &v), 0);
        assert_int_equal(v, 250);
        assert_int_equal(parse_duration_ms("30s", &v), 0);
        assert_int_equal(v, 30000);
        assert_int_equal(parse_duration_ms("30", &v), 0);
        assert_int_equal(v, 30000);
        assert_int_equal(parse_duration_ms("1.5s", &v), 0);
        assert_int_equal(v, 1500);
        assert_int_equal(parse_duration_ms("2m", &v), 0);
        assert_int_equal(v, 120000);
        assert_int_equal(parse_duration_ms("1h", &v), 0);
        assert_int_equal(v, 3600000);
        assert_int_equal(parse_duration_ms("5 parsecs", &v), -EINVAL);
        assert_int_equal(parse_duration_ms("s", &v), -EINVAL);
}

static void formatting(void **state)
{
        char buf[32];
        assert_string_equal(format_size(512ULL << 20, buf, sizeof(buf)), "512M");
        assert_string_equal(format_size(1ULL << 30, buf, sizeof(buf)), "1G");
        assert_string_equal(format_size(1000, buf, sizeof(buf)), "1000");
        assert_string_equal(format_duration_ms(30000, buf, sizeof(buf)), "30s");
        assert_string_equal(format_duration_ms(250, buf, sizeof(buf)), "250ms");
        assert_string_equal(format_duration_ms(120000, buf, sizeof(buf)), "2m");
        assert_string_equal(format_duration_ms(1500, buf, sizeof(buf)), "1.5s");
}

static void strv(void **state)
{
        _cleanup_strv_ char **v = NULL;
        v = strv_append(v, "a");
        v = strv_append(v, "b");
        assert_int_equal(strv_length(v), 2);
        assert_string_equal(v[1], "b");
        assert_null(v[2]);
        assert_true(startswith("--timeout", "--"));
        assert_false(streq("a", NULL));
}

static void strv_push_linear(void **state)
{
        (void)state;
        char **v = strv_append(NULL, "a");
        size_t n = 1;
        v = strv_push(v, &n, "b");
        v = strv_append(v, "c");
        n = strv_length(v);
        v = strv_push(v, &n, "d");
        assert_int_equal(n, 4);
        assert_string_equal(v[3], "d");
        assert_true(strv_contains(v, "c"));
        assert_false(strv_contains(v, "e"));
        assert_false(strv_contains(NULL, "e"));
        strv_free(v);
        /* many pushes: every one counted and terminated (the cost is
         * measured in bench/argv.sh, not asserted here) */
        v = NULL;
        n = 0;
        for (size_t i = 0; i < 100000; i++)
                v = strv_push(v, &n, i % 2 ? "odd" : "even");
        assert_int_equal(n, 100000);
        assert_int_equal(strv_length(v), 100000);
        assert_string_equal(v[99999], "odd");
        strv_free(v);
}

static const char *word_at(void *userdata, size_t pos, size_t *ret_len)
{
        char **v = userdata;
        *ret_len = strcspn(v[pos], "=");
        return v[pos];
}

static void strindex_lookup(void **state)
{
        (void)state;
        struct strindex ix = { 0 };
        char **v = NULL;
        size_t n = 0;
        char buf[32];

        assert_int_equal(strindex_find(&ix, "a", 1, word_at, v), STRINDEX_NONE);
        for (size_t i = 0; i < 5000; i++) {
                snprintf(buf, sizeof(buf), "K%zu=%zu", i, i * 3);
                v = strv_push(v, &n, buf);
                strindex_add(&ix, n - 1, word_at, v);
        }
        for (size_t i = 0; i < 5000; i += 7) {
                snprintf(buf, sizeof(buf), "K%zu", i);
                assert_int_equal(strindex_find(&ix, buf, strlen(buf), word_at, v), i);
        }
        /* a key is its bytes: prefixes and longer names do not match */
        assert_int_equal(strindex_find(&ix, "K1", 1, word_at, v), STRINDEX_NONE);
        assert_int_equal(strindex_find(&ix, "K10000", 6, word_at, v), STRINDEX_NONE);
        assert_int_equal(strindex_find(&ix, "K4999", 5, word_at, v), 4999);
        strindex_done(&ix);
        assert_int_equal(strindex_find(&ix, "K1", 2, word_at, v), STRINDEX_NONE);
        strv_free(v);
}

static void escaping(void **state)
{
        (void)state;
        static const char in[] = "a\nb\x1b[2J\t\xc2\x9b\r\x7f\xc3\xa9z";
        _cleanup_free_ char *out = log_escape(in, sizeof(in) - 1);
        assert_string_equal(out, "a\\nb\\x1b[2J\\t\\xc2\\x9b\\r\\x7f\xc3\xa9z");
        _cleanup_free_ char *nul = log_escape("x\0y", 3);
        assert_string_equal(nul, "x\\x00y");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(sizes),
                cmocka_unit_test(durations),
                cmocka_unit_test(formatting),
                cmocka_unit_test(strv),
                cmocka_unit_test(strv_push_linear),
                cmocka_unit_test(escaping),
                cmocka_unit_test(strindex_lookup),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
