/* test-lang.c - the language table: the shipped share/languages.ini, every
 * error of a languages file, template expansion, PATH lookup and plans. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "config/lang.h"
#include "lib/util.h"

/* The shipped file, found through $HUTCH_DATADIR as make check sets it. */
static void shipped_table(void **state)
{
        _cleanup_(lang_table_freep) struct lang_table *t = NULL;
        _cleanup_free_ char *err = NULL;
        const struct lang *l;
        static const char *const names[] = { "bash", "c", "node", "perl", "python", "sh" };

        assert_non_null(getenv("HUTCH_DATADIR"));
        assert_int_equal(lang_table_load(NULL, &t, &err), 0);
        assert_null(err);
        assert_int_equal(lang_table_count(t), ELEMENTSOF(names));
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                assert_int_equal(lang_lookup(t, names[i], &l, &err), 0);
                assert_string_equal(l->name, names[i]);
                assert_non_null(l->command);
                assert_true(l->extension[0] == '.');
                assert_non_null(l->profile);
        }
        assert_int_equal(lang_lookup(t, "python", &l, &err), 0);
        assert_true(startswith(l->command, "python3 -I -u -c "));
        assert_non_null(strstr(l->command, "getcwd()"));
        assert_string_equal(l->extension, ".py");
        assert_string_equal(l->profile, "python");
        assert_null(l->compile);

        assert_int_equal(lang_lookup(t, "c", &l, &err), 0);
        assert_string_equal(l->compile, "cc -O2 -iquote . -o {out} -x c {file}");
        assert_string_equal(l->command, "{out}");

        assert_int_equal(lang_lookup(t, "cobol", &l, &err), -ENOENT);
        assert_string_equal(err, "unknown language \"cobol\" (known: bash, c, node, perl, python, sh)");
}

static void parse_errors(void **state)
{
        static const struct {
                const char *text;
                const char *error;
        } cases[] = {
                { "command = x\n", "t.ini:1: command: key outside a [language] section" },
                { "[Py]\n", "t.ini:1: [Py]: expected a language name (a-z, 0-9, _ - +)" },
                { "[py]\ncommand = python3 {file}\nextension = .py\n[py]\n",
                  "t.ini:4: [py]: duplicate language (first on line 1)" },
                { "[py]\ncommand = a {file}\ncommand = b\n", "t.ini:3: command: duplicate key in [py]" },
                { "[py]\ncmd = python3\n", "t.ini:2: cmd: unknown key (command, compile, extension, profile)" },
                { "[py]\ncommand = python3 {src}\n",
                  "t.ini:2: command: unknown placeholder near \"{src}\" (use {file} or {out})" },
                { "[py]\nextension = .py\n", "t.ini:1: [py]: missing command" },
                { "[py]\ncommand = python3 {file}\n", "t.ini:1: [py]: missing extension" },
                { "[py]\ncommand = python3 {file}\nextension = py\n",
                  "t.ini:3: extension: expected a file extension like .py, got \"py\"" },
                { "[c]\ncommand = {out}\nextension = .c\n",
                  "t.ini:1: [c]: command uses {out} but there is no compile step" },
                { "[py]\ncommand = python3\n  -u\n", "t.ini:3: command: unexpected indented line" },
                { "[py]\nthis is not ini\n",
                  "t.ini:2: expected \"key = value\", \"[language]\" or a comment" },
                { "[py]\nprofile = a b\n", "t.ini:2: profile: expected a profile name, got \"a b\"" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct lang_table *t = NULL;
                _cleanup_free_ char *err = NULL;
                assert_int_equal(lang_table_parse(cases[i].text, "t.ini", &t, &err), -EINVAL);
                assert_null(t);
                assert_non_null(err);
                assert_string_equal(err, cases[i].error);
        }
}

static void missing_file(void **state)
{
        struct lang_table *t = NULL;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(lang_table_load("/nonexistent/languages.ini", &t, &err), -ENOENT);
        assert_string_equal(err, "languages /nonexistent/languages.ini: cannot read: No such file or directory");
}

static void expand(void **state)
{
        _cleanup_strv_ char **argv = NULL, **argv2 = NULL;
        char **bad = NULL;
        _cleanup_free_ char *err = NULL;

        assert_int_equal(lang_expand("cc  -O2 -o {out}\t{file}", "/w/main.c", "/w/main", &argv, &err), 0);
        assert_int_equal(strv_length(argv), 5);
        assert_string_equal(argv[0], "cc");
        assert_string_equal(argv[1], "-O2");
        assert_string_equal(argv[3], "/w/main");
        assert_string_equal(argv[4], "/w/main.c");

        /* inside a word, and twice */
        assert_int_equal(lang_expand("tool -o{out} --in={file},{file}", "f", "o", &argv2, &err), 0);
        assert_string_equal(argv2[1], "-oo");
        assert_string_equal(argv2[2], "--in=f,f");

        assert_int_equal(lang_expand("x {nope}", "f", "o", &bad, &err), -EINVAL);
        assert_null(bad);
        assert_int_equal(lang_expand("x {out}", "f", NULL, &bad, &err), -EINVAL);
        assert_int_equal(lang_expand("   ", "f", "o", &bad, &err), -EINVAL);
        assert_string_equal(err, "empty command template");
}

static void find_program(void **state)
{
        _cleanup_free_ char *p = NULL;

        assert_int_equal(lang_find_program("sh", "/nonexistent:/bin:/usr/bin", &p), 0);
        assert_true(strstr(p, "/sh") != NULL);
        assert_int_equal(lang_find_program("/bin/sh", NULL, NULL), 0);
        assert_int_equal(lang_find_program("hutch-no-such-interpreter", "/bin:/usr/bin", NULL), -ENOENT);
        /* a directory is not a program */
        assert_int_equal(lang_find_program("/tmp", NULL, NULL), -ENOENT);
        assert_int_equal(lang_find_program("", NULL, NULL), -ENOENT);
}

static void check_host(void **state)
{
        _cleanup_(lang_table_freep) struct lang_table *t = NULL;
        _cleanup_free_ char *err = NULL;
        const struct lang *l;

        assert_int_equal(lang_table_parse("[sh]\ncommand = sh {file}\nextension = .sh\n"
                                          "[ghost]\ncommand = hutch-no-such-interpreter {file}\nextension = .g\n"
                                          "[cg]\ncompile = hutch-no-such-cc -o {out} {file}\ncommand = {out}\n"
                                          "extension = .c\n"
                                          "[self]\ncommand = {file}\nextension = .x\n",
                                          "t.ini", &t, &err), 0);
        assert_int_equal(lang_lookup(t, "sh", &l, &err), 0);
        assert_string_equal(l->profile, "default");
        assert_int_equal(lang_check_host(l, "/usr/bin:/bin", &err), 0);

        assert_int_equal(lang_lookup(t, "ghost", &l, &err), 0);
        assert_int_equal(lang_check_host(l, "/usr/bin:/bin", &err), -ENOENT);
        assert_string_equal(err, "language ghost: interpreter \"hutch-no-such-interpreter\" not found on PATH "
                                 "(/usr/bin:/bin)");

        assert_int_equal(lang_lookup(t, "cg", &l, &err), 0);
        assert_int_equal(lang_check_host(l, "/usr/bin:/bin", &err), -ENOENT);
        assert_string_equal(err, "language cg: compiler \"hutch-no-such-cc\" not found on PATH (/usr/bin:/bin)");

        /* the program is the file itself: nothing to look up */
        assert_int_equal(lang_lookup(t, "self", &l, &err), 0);
        assert_int_equal(lang_check_host(l, "/nonexistent", &err), 0);
}

static void plans(void **state)
{
        _cleanup_(lang_table_freep) struct lang_table *t = NULL;
        _cleanup_(lang_plan_done) struct lang_plan py = {}, c = {};
        _cleanup_free_ char *err = NULL;
        const struct lang *l;

        assert_int_equal(lang_table_load(NULL, &t, &err), 0);
        assert_int_equal(lang_lookup(t, "python", &l, &err), 0);
        assert_int_equal(lang_plan_make(l, &py, &err), 0);
        assert_string_equal(py.source, "/run/hutch/code/main.py");
        assert_null(py.compile_argv);
        /* python3 -I -u -c BOOTSTRAP FILE: isolated mode kept, the
         * bootstrap puts the working directory on sys.path */
        assert_int_equal(strv_length(py.run_argv), 6);
        assert_string_equal(py.run_argv[0], "python3");
        assert_string_equal(py.run_argv[1], "-I");
        assert_string_equal(py.run_argv[3], "-c");
        assert_non_null(strstr(py.run_argv[4], "getcwd()"));
        assert_string_equal(py.run_argv[5], "/run/hutch/code/main.py");

        assert_int_equal(lang_lookup(t, "c", &l, &err), 0);
        assert_int_equal(lang_plan_make(l, &c, &err), 0);
        assert_string_equal(c.source, "/run/hutch/code/main.c");
        assert_string_equal(c.output, "/run/hutch/build/main");
        assert_string_equal(c.compile_argv[0], "cc");
        assert_string_equal(c.compile_argv[2], "-iquote");
        assert_string_equal(c.compile_argv[5], "/run/hutch/build/main");
        /* -x c: in a live session {file} is a pipe, /dev/fd/3, without the .c */
        assert_string_equal(c.compile_argv[6], "-x");
        assert_string_equal(c.compile_argv[7], "c");
        assert_string_equal(c.compile_argv[8], "/run/hutch/code/main.c");
        assert_int_equal(strv_length(c.run_argv), 1);
        assert_string_equal(c.run_argv[0], "/run/hutch/build/main");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(shipped_table),
                cmocka_unit_test(parse_errors),
                cmocka_unit_test(missing_file),
                cmocka_unit_test(expand),
                cmocka_unit_test(find_program),
                cmocka_unit_test(check_host),
                cmocka_unit_test(plans),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
