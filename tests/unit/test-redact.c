/* test-redact.c - unit tests for secrets (redact.c) and base64
 * (base64.c): values replaced wherever they occur, names checked,
 * NAME=@FILE read, and base64 round trips with strict decoding. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "lib/base64.h"
#include "lib/redact.h"
#include "lib/util.h"

static void replaces(void **state)
{
        char *secrets[] = { "TOKEN=abc123", "LONG=abc1234567", "EMPTY=", NULL };
        const char in[] = "x abc123 y abc1234567 zabc123abc123";
        size_t len;
        _cleanup_free_ char *out = redact(in, sizeof(in) - 1, secrets, &len);
        assert_non_null(out);
        assert_string_equal(out, "x [secret TOKEN] y [secret LONG] z[secret TOKEN][secret TOKEN]");
        assert_int_equal(len, strlen(out));
        assert_null(redact("nothing here", 12, secrets, &len));
        assert_int_equal(redact_max_len(secrets), 10);
        /* binary data around the value */
        const char bin[] = "\0\xff" "abc123" "\0";
        _cleanup_free_ char *b = redact(bin, sizeof(bin) - 1, secrets, &len);
        assert_int_equal(len, 2 + strlen("[secret TOKEN]") + 1);
        assert_memory_equal(b, "\0\xff[secret TOKEN]\0", len);
}

static void names(void **state)
{
        assert_true(secret_name_valid("API_KEY"));
        assert_true(secret_name_valid("_x9"));
        assert_false(secret_name_valid(""));
        assert_false(secret_name_valid("9X"));
        assert_false(secret_name_valid("A-B"));
        assert_false(secret_name_valid("A=B"));
}

static void resolve(void **state)
{
        char path[] = "/tmp/hutch-test-secret-XXXXXX";
        int fd = mkstemp(path);
        _cleanup_free_ char *kv = NULL, *err = NULL, *spec = xasprintf("F=@%s", path);
        assert_true(fd >= 0);
        assert_int_equal(write_all(fd, "filevalue\n", 10), 0);
        close(fd);

        setenv("HUTCH_TEST_SECRET", "envvalue", 1);
        assert_int_equal(secret_resolve("HUTCH_TEST_SECRET", &kv, &err), 0);
        assert_string_equal(kv, "HUTCH_TEST_SECRET=envvalue");
        free(kv);
        assert_int_equal(secret_resolve(spec, &kv, &err), 0);
        assert_string_equal(kv, "F=filevalue");         /* one trailing newline dropped */
        unlink(path);

        assert_int_equal(secret_resolve("HUTCH_TEST_UNSET_SECRET", &kv, &err), -ENOENT);
        assert_non_null(strstr(err, "not set"));
        free(err);
        err = NULL;
        /* a value in argv would be visible to everyone: refused */
        assert_int_equal(secret_resolve("A=plain", &kv, &err), -EINVAL);
        free(err);
        err = NULL;
        assert_int_equal(secret_resolve(spec, &kv, &err), -ENOENT);
}

static void base64(void **state)
{
        static const struct { const char *raw, *enc; } v[] = {
                { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
                { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
        };
        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                size_t n;
                _cleanup_free_ char *e = base64_encode(v[i].raw, strlen(v[i].raw), &n);
                char *d;
                assert_string_equal(e, v[i].enc);
                assert_int_equal(n, strlen(v[i].enc));
                assert_int_equal(base64_decode(e, n, &d, &n), 0);
                assert_int_equal(n, strlen(v[i].raw));
                assert_memory_equal(d, v[i].raw, n);
                free(d);
        }
        char all[256], *d;
        size_t n;
        for (int i = 0; i < 256; i++)
                all[i] = (char)i;
        _cleanup_free_ char *e = base64_encode(all, sizeof(all), NULL);
        assert_int_equal(base64_decode(e, strlen(e), &d, &n), 0);
        assert_int_equal(n, 256);
        assert_memory_equal(d, all, 256);
        free(d);
        /* strict: no foreign characters, no bad lengths, no stray bits */
        assert_int_equal(base64_decode("Zm9v\n", 5, &d, &n), -EINVAL);
        assert_int_equal(base64_decode("Z", 1, &d, &n), -EINVAL);
        assert_int_equal(base64_decode("Zh==", 4, &d, &n), -EINVAL);
        assert_int_equal(base64_decode("Zm9=v", 5, &d, &n), -EINVAL);
        assert_int_equal(base64_decode("Zg", 2, &d, &n), 0);    /* padding optional */
        free(d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(replaces),
                cmocka_unit_test(names),
                cmocka_unit_test(resolve),
                cmocka_unit_test(base64),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
