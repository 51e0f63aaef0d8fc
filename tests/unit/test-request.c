/* test-request.c - unit tests for the hutch.request/1 reader: every
 * field mapped to what the command line would give, and every kind of
 * bad document refused with the JSON pointer of the field. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "config/request.h"
#include "lib/util.h"

static int parse(const char *text, struct request *r, char **ptr, char **err)
{
        *ptr = *err = NULL;
        return request_parse(text, strlen(text), r, ptr, err);
}

/* The overrides as "key=value" lines, for easy comparison. */
static char *overrides(const struct request *r)
{
        char *out = xstrdup("");
        for (char **p = r->overrides; p && p[0] && p[1]; p += 2) {
                char *next = xasprintf("%s%s=%s\n", out, p[0], p[1]);
                free(out);
                out = next;
        }
        return out;
}

static void full(void **state)
{
        struct request r;
        _cleanup_free_ char *ptr = NULL, *err = NULL, *ov = NULL;
        assert_int_equal(parse("{\"schema\":\"hutch.request/1\",\"argv\":[\"sh\",\"-c\",\"echo hi\"],"
                               "\"env\":{\"A\":\"1\"},\"limits\":{\"timeout_ms\":1500,\"memory_mb\":256,"
                               "\"cpu_cores\":0.5,\"disk_mb\":64,\"pids\":10},\"labels\":{\"team\":\"x=y\"},"
                               "\"profile\":\"python\",\"session\":\"s\",\"commit\":\"never\",\"idempotency_key\":\"k\","
                               "\"network\":\"none\",\"secrets\":[\"TOKEN\"],"
                               "\"files\":{\"a/b.txt\":\"hi\",\"bin\":{\"content\":\"AAEC\",\"encoding\":\"base64\"}},"
                               "\"stdin\":\"in\"}", &r, &ptr, &err), 0);
        assert_int_equal(strv_length(r.argv), 3);
        assert_string_equal(r.argv[2], "echo hi");
        ov = overrides(&r);
        assert_string_equal(ov, "env=A=1\ntimeout=1500ms\nmemory=256M\ncpus=0.500\ndisk=64M\npids=10\n"
                                "commit=never\nnetwork=none\n");
        assert_string_equal(r.labels[0], "team=x=y");
        assert_string_equal(r.profile, "python");
        assert_string_equal(r.session, "s");
        assert_string_equal(r.commit, "never");
        assert_string_equal(r.idempotency_key, "k");
        assert_string_equal(r.secret_specs[0], "TOKEN");
        assert_int_equal(r.n_files, 2);
        assert_string_equal(r.files[0].path, "a/b.txt");
        assert_int_equal(r.files[1].len, 3);
        assert_memory_equal(r.files[1].data, "\0\1\2", 3);
        assert_int_equal(r.stdin_len, 2);
        request_done(&r);
}

static void language(void **state)
{
        struct request r;
        _cleanup_free_ char *ptr = NULL, *err = NULL;
        assert_int_equal(parse("{\"language\":\"python\",\"code\":\"print(1)\"}", &r, &ptr, &err), 0);
        assert_string_equal(r.language, "python");
        assert_string_equal(r.code, "print(1)");
        assert_null(r.argv);
        request_done(&r);
}

static void secrets_object(void **state)
{
        struct request r;
        _cleanup_free_ char *ptr = NULL, *err = NULL;
        setenv("HUTCH_TEST_SECRET_SRC", "from-env", 1);
        assert_int_equal(parse("{\"argv\":[\"true\"],\"secrets\":{\"A\":{\"value\":\"v1\"},"
                               "\"B\":{\"file\":\"/f\"},\"C\":{\"env\":\"HUTCH_TEST_SECRET_SRC\"}}}",
                               &r, &ptr, &err), 0);
        assert_string_equal(r.secret_values[0], "A=v1");
        assert_string_equal(r.secret_values[1], "C=from-env");
        assert_string_equal(r.secret_specs[0], "B=@/f");
        request_done(&r);
}

/* private_env: the job's environment, kept apart from the profile's
 * [env] overrides (which the record keeps) */
static void private_env(void **state)
{
        (void)state;
        struct request r;
        _cleanup_free_ char *ptr = NULL, *err = NULL;
        assert_int_equal(parse("{\"argv\":[\"true\"],\"private_env\":{\"P\":\"pv\"},\"env\":{\"E\":\"ev\"}}",
                               &r, &ptr, &err), 0);
        assert_string_equal(r.private_env[0], "P=pv");
        assert_null(r.private_env[1]);
        for (char **o = r.overrides; o && *o; o++)
                assert_null(strstr(*o, "pv"));
        request_done(&r);
}

/* Each bad document, the pointer it must name, and a word of the message. */
static void errors(void **state)
{
        static const struct { const char *doc, *pointer, *word; int r; } cases[] = {
                { "", "", "not valid JSON", -EINVAL },
                { "[1]", "", "expected a JSON object", -EINVAL },
                { "{}", "", "nothing to run", -EINVAL },
                { "{\"argv\":[\"x\"],\"argv\":[\"y\"]}", "", "duplicate", -EINVAL },
                { "{\"argv\":[\"true\"],\"bogus\":1}", "/bogus", "unknown field", -EINVAL },
                { "{\"argv\":\"true\"}", "/argv", "array", -EINVAL },
                { "{\"argv\":[\"a\",2]}", "/argv/1", "string", -EINVAL },
                { "{\"argv\":[\"a\\u0000b\"]}", "/argv/0", "NUL", -EINVAL },
                { "{\"argv\":[\"x\"],\"limits\":{\"timeout_ms\":\"5s\"}}", "/limits/timeout_ms", "integer", -EINVAL },
                { "{\"argv\":[\"x\"],\"limits\":{\"timeout_ms\":-1}}", "/limits/timeout_ms", "integer", -EINVAL },
                { "{\"argv\":[\"x\"],\"limits\":{\"walltime\":1}}", "/limits/walltime", "unknown", -EINVAL },
                { "{\"argv\":[\"x\"],\"limits\":{\"memory_mb\":99999999999999999}}", "/limits/memory_mb", "", -EINVAL },
                { "{\"argv\":[\"x\"],\"env\":{\"A\":1}}", "/env/A", "string", -EINVAL },
                { "{\"argv\":[\"x\"],\"env\":{\"1A\":\"v\"}}", "/env/1A", "variable name", -EINVAL },
                { "{\"argv\":[\"x\"],\"private_env\":{\"1A\":\"v\"}}", "/private_env/1A", "variable name", -EINVAL },
                { "{\"argv\":[\"x\"],\"labels\":{\"a=b\":\"v\"}}", "/labels/a=b", "without '='", -EINVAL },
                { "{\"argv\":[\"x\"],\"network\":\"sometimes\"}", "/network", "", -EINVAL },
                { "{\"argv\":[\"x\"],\"network\":\"allow\"}", "/network", "from a profile", -EINVAL },
                { "{\"argv\":[\"x\"],\"commit\":\"sometimes\"}", "/commit", "never", -EINVAL },
                { "{\"argv\":[\"x\"],\"files\":{\"../x\":\"v\"}}", "/files/..~1x", "relative", -EINVAL },
                { "{\"argv\":[\"x\"],\"files\":{\"/etc/x\":\"v\"}}", "/files/~1etc~1x", "relative", -EINVAL },
                { "{\"argv\":[\"x\"],\"files\":{\"a\":{\"content\":\"!!\",\"encoding\":\"base64\"}}}",
                  "/files/a/content", "base64", -EINVAL },
                { "{\"argv\":[\"x\"],\"files\":{\"a\":{\"size\":1}}}", "/files/a/size", "unknown", -EINVAL },
                { "{\"argv\":[\"x\"],\"secrets\":{\"A\":{\"how\":\"x\"}}}", "/secrets/A/how", "unknown", -EINVAL },
                { "{\"argv\":[\"x\"],\"secrets\":[\"no-dash\"]}", "/secrets/0", "variable name", -EINVAL },
                { "{\"language\":\"python\"}", "/code", "together", -EINVAL },
                { "{\"schema\":\"hutch.request/2\",\"argv\":[\"x\"]}", "/schema", "hutch.request/1",
                  -EPROTONOSUPPORT },
                { "{\"schema\":1,\"argv\":[\"x\"]}", "/schema", "unsupported", -EPROTONOSUPPORT },
                /* the error stays one line: a newline in a key is shown, not written */
                { "{\"argv\":[\"x\"],\"a\\nb\":1}", "/a\nb", "request: /a\\x0ab: unknown", -EINVAL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct request r;
                _cleanup_free_ char *ptr = NULL, *err = NULL;
                int got = parse(cases[i].doc, &r, &ptr, &err);
                if (got != cases[i].r || !ptr || strcmp(ptr, cases[i].pointer) != 0 || !err ||
                    !strstr(err, cases[i].word))
                        fail_msg("case %zu (%s): r=%d pointer=%s error=%s", i, cases[i].doc, got,
                                 ptr ? ptr : "(null)", err ? err : "(null)");
                request_done(&r);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(full),
                cmocka_unit_test(language),
                cmocka_unit_test(secrets_object),
                cmocka_unit_test(private_env),
                cmocka_unit_test(errors),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
