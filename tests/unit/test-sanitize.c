/* test-sanitize.c - unit tests for turning raw output into safe text:
 * escape sequences removed, invalid UTF-8 replaced by U+FFFD, valid text
 * and ordinary control characters untouched. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "lib/sanitize.h"
#include "lib/util.h"

#define FFFD "\xef\xbf\xbd"

static void check(const char *in, size_t n, const char *want, size_t want_len)
{
        size_t len;
        _cleanup_free_ char *out = sanitize_text(in, n, &len);
        assert_int_equal(len, want_len);
        assert_memory_equal(out, want, want_len);
        assert_int_equal(out[len], '\0');
}
#define CHECK(in, want) check(in, sizeof(in) - 1, want, sizeof(want) - 1)

static void plain(void **state)
{
        CHECK("", "");
        CHECK("hello\n\tworld\r\n", "hello\n\tworld\r\n");
        CHECK("a\0b", "a\0b");
        CHECK("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

static void escapes(void **state)
{
        CHECK("\x1b[31mred\x1b[0m", "red");
        CHECK("\x1b[1;38;5;196mbold\x1b[m!", "bold!");
        CHECK("\x1b]0;title\x07text", "text");
        CHECK("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link");
        CHECK("\x1b" "Pdcs\x1b\\after", "after");
        CHECK("a\x1b" "7b\x1b" "8c", "abc");
        CHECK("x\x1b(By", "xy");
        CHECK("\xc2\x9b" "2Jclear", "clear");
        CHECK("end\x1b", "end");
        CHECK("end\x1b[12", "end");
}

static void invalid_utf8(void **state)
{
        CHECK("\xff", FFFD);
        CHECK("a\x80z", "a" FFFD "z");
        CHECK("\xc0\xaf", FFFD FFFD);                 /* overlong */
        CHECK("\xed\xa0\x80", FFFD FFFD FFFD);        /* surrogate */
        CHECK("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD);/* > U+10FFFF */
        CHECK("\xe2\x82", FFFD);                      /* cut short at the end */
        CHECK("\xe2\x82z", FFFD "z");                 /* cut short inside */
        CHECK("\xf0\x9f\x98", FFFD);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(plain),
                cmocka_unit_test(escapes),
                cmocka_unit_test(invalid_utf8),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
