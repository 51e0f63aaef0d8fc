/* test-sanitize.c - unit tests for turning raw output into safe text:
 * escape sequences removed, invalid UTF-8 replaced by U+FFFD, valid text
 * and ordinary control characters untouched. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
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

/* C1 controls in their UTF-8 form (U+009D is OSC) are dropped, not just CSI */
static void c1_dropped(void **state)
{
        check("a\xc2\x9d" "b\xc2\x85" "c\xc2\xa0", 9, "abc\xc2\xa0", 5);
}

/* What reaches a terminal: controls visible, never obeyed; the state
 * carries a UTF-8 sequence split between two writes */
static void tty_stream(void **state)
{
        int p[2];
        char buf[256];
        ssize_t n;

        assert_int_equal(pipe(p), 0);
        FILE *f = sanitize_tty_stream(p[1]);
        assert_non_null(f);
        setvbuf(f, NULL, _IONBF, 0);
        fputs("\x1b]52;c;aGk=\x07|\r\b|\xc2", f);
        fputs("\x9d|\x9b|ok\xc3", f);
        fputs("\xa9\t\n", f);
        fclose(f);
        close(p[1]);
        n = read(p[0], buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = '\0';
        assert_string_equal(buf, "^[]52;c;aGk=^G|^M^H|\\u009d|\\x9b|ok\xc3\xa9\t\n");
        close(p[0]);
}

static void base64_and_utf8(void **state)
{
        _cleanup_free_ char *a = sanitize_base64("bad\xffname", 8);
        _cleanup_free_ char *b = sanitize_base64("ab", 2);
        assert_string_equal(a, "YmFk/25hbWU=");
        assert_string_equal(b, "YWI=");
        assert_true(sanitize_utf8_valid("caf\xc3\xa9", 5));
        assert_false(sanitize_utf8_valid("bad\xff", 4));
        assert_false(sanitize_utf8_valid("a\0b", 3));
}

static void fold_long_lines(void **state)
{
        size_t len;
        _cleanup_free_ char *none = sanitize_fold("ab\ncd", 5, 2, &len);
        assert_string_equal(none, "ab\ncd");
        assert_int_equal(len, 5);

        _cleanup_free_ char *f = sanitize_fold("abcdefg\nxy", 10, 3, &len);
        assert_string_equal(f, "abc" SANITIZE_FOLD_MARK "def" SANITIZE_FOLD_MARK "g\nxy");
        assert_int_equal(len, strlen(f));

        /* never inside a character: "é" is two bytes */
        _cleanup_free_ char *u = sanitize_fold("a\xc3\xa9\xc3\xa9", 5, 2, NULL);
        assert_string_equal(u, "a\xc3\xa9" SANITIZE_FOLD_MARK "\xc3\xa9");
        assert_true(sanitize_utf8_valid(u, strlen(u)));

        _cleanup_free_ char *off = sanitize_fold("abcdef", 6, 0, NULL);
        assert_string_equal(off, "abcdef");
}

/* A --lang run in a listing: its language and its code's first line. */
static void code_line(void **state)
{
        _cleanup_free_ char *a = sanitize_code_line("python", "\n  \n# hi\nprint(1)\n", 17, 60);
        _cleanup_free_ char *b = sanitize_code_line("sh", "echo \x1b[31mred", 16, 60);
        _cleanup_free_ char *c = sanitize_code_line("sh", "abcdefgh", 8, 4);
        _cleanup_free_ char *d = sanitize_code_line("sh", NULL, 0, 4);
        /* never inside a character: "é" is 2 bytes */
        _cleanup_free_ char *e = sanitize_code_line("sh", "a\xc3\xa9b", 4, 2);

        assert_string_equal(a, "python: # hi");
        assert_null(strchr(b, '\x1b'));
        assert_string_equal(c, "sh: abcd...");
        assert_string_equal(d, "sh: ");
        assert_string_equal(e, "sh: a...");
}

static void quote(const char *in, const char *want)
{
        _cleanup_free_ char *out = sanitize_quote_name(in);
        assert_string_equal(out, want);
}

static void quote_name(void **state)
{
        /* plain names, UTF-8 ones too, stay as they are */
        quote("", "");
        quote("sub/b.txt", "sub/b.txt");
        quote("a b's (1).txt", "a b's (1).txt");
        quote("caf\xc3\xa9/\xe2\x82\xac", "caf\xc3\xa9/\xe2\x82\xac");
        /* a newline cannot start a forged diff line */
        quote("zz\n@@ -1 +1 @@\n-base\n+base", "\"zz\\n@@ -1 +1 @@\\n-base\\n+base\"");
        quote("\a\b\t\n\v\f\r", "\"\\a\\b\\t\\n\\v\\f\\r\"");
        /* backslash and quote: the quoted form reads back unambiguously */
        quote("a\\n", "\"a\\\\n\"");
        quote("say \"hi\"", "\"say \\\"hi\\\"\"");
        /* other controls, DEL, ESC, as octal */
        quote("\x1b[2Jx\x7f\x01", "\"\\033[2Jx\\177\\001\"");
        /* invalid UTF-8, byte by byte; valid characters around it kept */
        quote("\xff\xc3\xa9\xc3", "\"\\377\xc3\xa9\\303\"");
        quote("\xed\xa0\x80", "\"\\355\\240\\200\"");
        /* C1 controls, line separators and bidi overrides: octal bytes */
        quote("a\xc2\x9b" "31m", "\"a\\302\\23331m\"");
        quote("x\xe2\x80\xae.txt", "\"x\\342\\200\\256.txt\"");
        quote("x\xe2\x80\xa8y", "\"x\\342\\200\\250y\"");
        quote("\xe2\x81\xa6", "\"\\342\\201\\246\"");
        quote("\xd8\x9c", "\"\\330\\234\"");
        /* neighbours of those ranges are ordinary characters */
        quote("\xc2\xa0\xe2\x80\x94\xe2\x81\xaa", "\xc2\xa0\xe2\x80\x94\xe2\x81\xaa");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(plain),
                cmocka_unit_test(escapes),
                cmocka_unit_test(invalid_utf8),
                cmocka_unit_test(c1_dropped),
                cmocka_unit_test(tty_stream),
                cmocka_unit_test(base64_and_utf8),
                cmocka_unit_test(fold_long_lines),
                cmocka_unit_test(code_line),
                cmocka_unit_test(quote_name),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
