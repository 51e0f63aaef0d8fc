/* test-redact.c - unit tests for secrets (redact.c) and base64
 * (base64.c): values replaced wherever they occur, names checked,
 * NAME=@FILE read, the --events stream never splitting a value over
 * two events, and base64 round trips with strict decoding. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/base64.h"
#include "lib/redact.h"
#include "lib/util.h"
#include "supervise/events.h"

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

/* Under a tty the pty writes a value's "\n" as "\r\n": that form is
 * looked for too, under the same name; without a tty it is not added. */
static void tty_forms(void **state)
{
        char *secrets[] = { "KEY=l1\nl2\n", "ONE=plain", NULL };
        char **forms = redact_forms(secrets, true);
        assert_non_null(forms);
        assert_string_equal(forms[0], "KEY=l1\nl2\n");
        assert_string_equal(forms[1], "KEY=l1\r\nl2\r\n");
        assert_string_equal(forms[2], "ONE=plain");
        assert_null(forms[3]);
        const char in[] = "<l1\r\nl2\r\n>";
        size_t len;
        _cleanup_free_ char *out = redact(in, sizeof(in) - 1, forms, &len);
        assert_non_null(out);
        assert_string_equal(out, "<[secret KEY]>");
        redact_forms_free(forms);
        forms = redact_forms(secrets, false);
        assert_string_equal(forms[1], "ONE=plain");
        assert_null(forms[2]);
        redact_forms_free(forms);
        assert_null(redact_forms(NULL, true));
}

/* Overlapping values: every byte of either is covered; one inside
 * another is said once, by the longer; a value overlapping itself
 * ("aa" in "aaaaa") is one marker; adjacent ones stay two. */
static void overlaps(void **state)
{
        (void)state;
        char *secrets[] = { "A=abcdefgh12", "B=gh12ZYXWVU", "IN=def", "AA=aa", NULL };
        static const struct { const char *in, *out; } cases[] = {
                { "<abcdefgh12ZYXWVU>", "<[secret A][secret B]>" },
                { "<gh12ZYXWVU abcdefgh12>", "<[secret B] [secret A]>" },
                { "xdefx", "x[secret IN]x" },
                { "abcdefgh12", "[secret A]" },
                { "xaaaaay", "x[secret AA]y" },
                { "abcdefgh12abcdefgh12ZYXWVU", "[secret A][secret A][secret B]" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                size_t len;
                _cleanup_free_ char *out = redact(cases[i].in, strlen(cases[i].in), secrets, &len);
                assert_non_null(out);
                if (strcmp(out, cases[i].out) != 0)
                        fail_msg("%s: got %s, not %s", cases[i].in, out, cases[i].out);
                assert_int_equal(len, strlen(out));
        }
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

/* Feed text to an events stream in the pieces cut at the offsets in
 * cuts[0..ncuts), and return the text of all its output events joined:
 * a value split over two events shows there whole and unredacted. */
static char *stream_through_events(const char *text, const size_t *cuts, size_t ncuts,
                                   char *const *secrets)
{
        FILE *f = tmpfile();
        assert_non_null(f);
        struct events *ev = events_new(fileno(f), secrets);
        size_t at = 0, n = strlen(text);
        for (size_t i = 0; i <= ncuts; i++) {
                size_t to = i < ncuts ? cuts[i] : n;
                events_output(ev, STREAM_STDOUT, text + at, to - at);
                at = to;
        }
        events_flush(ev);
        events_free(ev);
        rewind(f);
        char line[4096], *joined = xstrdup("");
        while (fgets(line, sizeof(line), f)) {
                json_t *o = json_loads(line, 0, NULL);
                assert_non_null(o);
                const char *data = json_string_value(json_object_get(o, "data"));
                if (data) {
                        assert_false(json_is_true(json_object_get(o, "base64")));
                        char *next = xasprintf("%s%s", joined, data);
                        free(joined);
                        joined = next;
                }
                json_decref(o);
        }
        fclose(f);
        return joined;
}

/* Whether text holds any secret's value. */
static bool holds_value(const char *text, char *const *secrets)
{
        for (char *const *s = secrets; *s; s++)
                if (strstr(text, strchr(*s, '=') + 1))
                        return true;
        return false;
}

/* text without its "[secret NAME]" markers: the job's bytes that were
 * left as they are. */
static char *plain_bytes(const char *text)
{
        char *out = xstrdup(text), *w = out;
        for (const char *p = text; *p;) {
                const char *close = strncmp(p, "[secret ", 8) == 0 ? strchr(p, ']') : NULL;
                if (close) {
                        p = close + 1;
                        continue;
                }
                *w++ = *p++;
        }
        *w = '\0';
        return out;
}

/* Check one text cut at cuts[0..ncuts): no value comes out whole, and
 * the bytes left as they are are those redacting it whole leaves (no
 * part of a value that overlaps another comes out); unless matches
 * overlap (where which markers say a run may depend on the cuts), the
 * text is what redacting it whole gives. */
static void check_cuts(const char *text, const size_t *cuts, size_t ncuts, char *const *secrets,
                       bool overlapping)
{
        size_t len;
        _cleanup_free_ char *want = redact(text, strlen(text), secrets, &len);
        _cleanup_free_ char *got = stream_through_events(text, cuts, ncuts, secrets);
        _cleanup_free_ char *got_plain = plain_bytes(got), *want_plain = plain_bytes(want ? want : text);
        if (holds_value(got, secrets) || strcmp(got_plain, want_plain) != 0 ||
            (!overlapping && strcmp(got, want ? want : text) != 0))
                fail_msg("'%s' cut at %zu and %zu: got '%s', want '%s'", text, ncuts ? cuts[0] : 0,
                         ncuts > 1 ? cuts[1] : 0, got, want ? want : text);
}

/* A value with a border (its start is also its end: "abcXabc") written
 * last used to leave as "abcX" then "abc", whole, past the redaction:
 * the held tail ("abc", the start of a value) cut a full match in two.
 * Every way of cutting the stream in two and in three is tried. */
static void events_never_split(void **state)
{
        char *secrets[] = { "TOKEN=abcXabc", "AA=aaaa", "SHORT=Xa", NULL };
        const char *texts[] = {
                "abcXabc", "pre abcXabc", "abcXabc post", "abcXabcXabc", "xxabcXabcabcXabcyy",
                "aaaaaaa", "ab abcXab", "Xaaaa abc", "aXaaaaX", NULL,
        };
        (void)state;
        for (const char **t = texts; *t; t++) {
                size_t n = strlen(*t);
                /* "Xa" and "aaaa" overlap in the last three; so do the
                 * two TOKENs of "abcXabcXabc" and the AAs of "aaaaaaa":
                 * redacted whole, the union of the matches is one
                 * marker; a stream cut inside such a run redacts each
                 * side alone (no value whole in either) */
                bool overlapping = t - texts >= 7 || strcmp(*t, "abcXabcXabc") == 0 ||
                                   strcmp(*t, "aaaaaaa") == 0;
                check_cuts(*t, NULL, 0, secrets, false);
                for (size_t i = 0; i <= n; i++)
                        for (size_t j = i; j <= n; j++) {
                                size_t cuts[2] = { i, j };
                                check_cuts(*t, cuts, 1, secrets, overlapping);
                                check_cuts(*t, cuts, 2, secrets, overlapping);
                        }
        }
}

/* Two values that overlap, the first whole in one write and the rest of
 * the second in the next: nothing of the second comes out. */
static void events_overlap_across_writes(void **state)
{
        char *secrets[] = { "A=abcdefgh12", "B=gh12ZYXWVU", NULL };
        const char *texts[] = { "abcdefgh12ZYXWVU", "x abcdefgh12ZYXWVU y", "gh12ZYXWVU", NULL };
        (void)state;
        for (const char **t = texts; *t; t++) {
                size_t n = strlen(*t);
                for (size_t i = 0; i <= n; i++)
                        for (size_t j = i; j <= n; j++) {
                                size_t cuts[2] = { i, j };
                                check_cuts(*t, cuts, 1, secrets, true);
                                check_cuts(*t, cuts, 2, secrets, true);
                        }
        }
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
                cmocka_unit_test(tty_forms),
                cmocka_unit_test(overlaps),
                cmocka_unit_test(names),
                cmocka_unit_test(resolve),
                cmocka_unit_test(events_never_split),
                cmocka_unit_test(events_overlap_across_writes),
                cmocka_unit_test(base64),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
