/* test-openmetrics.c - unit tests for the metrics text writer: label
 * names, the escaping of label values, family lines, numbers, and
 * histogram buckets (upper bounds inclusive, cumulative, +Inf last,
 * an exact sum). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/openmetrics.h"
#include "lib/util.h"

/* What writer wrote to a memory stream, as a new string. */
static char *capture(void (*writer)(FILE *f, void *arg), void *arg)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        writer(f, arg);
        fclose(f);
        return text;
}

static void label_names(void **state)
{
        assert_true(om_label_name_valid("task"));
        assert_true(om_label_name_valid("_x9"));
        assert_false(om_label_name_valid(""));
        assert_false(om_label_name_valid(NULL));
        assert_false(om_label_name_valid("9x"));
        assert_false(om_label_name_valid("a-b"));
        assert_false(om_label_name_valid("a.b"));
        assert_false(om_label_name_valid("__reserved"));
}

static void label_escaping(void **state)
{
        char *l = NULL;
        om_label_add(&l, "a", "plain");
        assert_string_equal(l, "a=\"plain\"");
        om_label_add(&l, "b", "q\"b\\n\nx");
        assert_string_equal(l, "a=\"plain\",b=\"q\\\"b\\\\n\\nx\"");
        om_label_add(&l, "c", "");
        assert_string_equal(l, "a=\"plain\",b=\"q\\\"b\\\\n\\nx\",c=\"\"");
        free(l);
}

static void samples_writer(FILE *f, void *arg)
{
        om_family(f, "x_seconds", "gauge", "seconds", "Help.");
        om_sample_u64(f, "x_seconds", NULL, 18446744073709551615ULL);
        om_sample_double(f, "x_seconds", "a=\"1\"", 0.1);
        om_sample_double(f, "x_seconds", "", 1.0 / 3.0);
        om_eof(f);
}

static void samples(void **state)
{
        char *text = capture(samples_writer, NULL);
        assert_string_equal(text, "# HELP x_seconds Help.\n# TYPE x_seconds gauge\n# UNIT x_seconds seconds\n"
                                  "x_seconds 18446744073709551615\n"
                                  "x_seconds{a=\"1\"} 0.1\n"
                                  "x_seconds 0.33333333333333331\n"
                                  "# EOF\n");
        free(text);
}

static void histogram_writer(FILE *f, void *arg)
{
        om_histogram_write(f, "d_seconds", "p=\"x\"", arg);
}

static void histogram(void **state)
{
        static const double bounds[] = { 0.1, 1 };
        struct om_histogram h;
        om_histogram_init(&h, bounds, 2, 1000);
        om_histogram_observe(&h, 100);  /* on the bound: counted in it */
        om_histogram_observe(&h, 101);
        om_histogram_observe(&h, 1000);
        om_histogram_observe(&h, 7000);
        om_histogram_observe(&h, 0);
        char *text = capture(histogram_writer, &h);
        assert_string_equal(text, "d_seconds_bucket{p=\"x\",le=\"0.1\"} 2\n"
                                  "d_seconds_bucket{p=\"x\",le=\"1\"} 4\n"
                                  "d_seconds_bucket{p=\"x\",le=\"+Inf\"} 5\n"
                                  "d_seconds_sum{p=\"x\"} 8.201\n"
                                  "d_seconds_count{p=\"x\"} 5\n");
        free(text);
        om_histogram_done(&h);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(label_names),
                cmocka_unit_test(label_escaping),
                cmocka_unit_test(samples),
                cmocka_unit_test(histogram),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
