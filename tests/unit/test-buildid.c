/* test-buildid.c - unit tests for the running binary's identity. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/buildid.h"

static void stable_and_hex(void **state)
{
        char a[128], b[128];

        assert_int_equal(build_id(a, sizeof(a)), 0);
        assert_int_equal(build_id(b, sizeof(b)), 0);
        assert_string_equal(a, b);
        if (strncmp(a, "exe:", 4) != 0) {
                /* a GNU build-id: sha1 by default, at least 8 bytes */
                assert_true(strlen(a) >= 16);
                assert_int_equal(strspn(a, "0123456789abcdef"), strlen(a));
        }
}

static void cut_to_fit(void **state)
{
        char full[128], small[9];

        assert_int_equal(build_id(full, sizeof(full)), 0);
        assert_int_equal(build_id(small, sizeof(small)), 0);
        assert_true(strlen(small) < sizeof(small));
        assert_memory_equal(small, full, strlen(small));
        assert_int_equal(build_id(small, 1), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(stable_and_hex),
                cmocka_unit_test(cut_to_fit),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
