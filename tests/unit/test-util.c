/* test-util.c - unit tests for the unit parsers and string helpers. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(sizes),
                cmocka_unit_test(durations),
                cmocka_unit_test(formatting),
                cmocka_unit_test(strv),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
