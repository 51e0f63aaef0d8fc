/* test-libm-lazy.c - unit tests for lib/libm-lazy.c: the math functions
 * hutch defines in place of libm's give libm's results and errno, called
 * directly and through SQLite's SQL math functions. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>
#include <sqlite3.h>

/* volatile: no constant folding, every call is a real call */
static volatile double half = 0.5, two = 2.0, minus_one = -1.0, zero = 0.0;

static void *libm_symbol(const char *name)
{
        void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
        assert_non_null(h);
        return dlsym(h, name);
}

static void ours_not_libm(void **state)
{
        /* the program's own definitions, or this test would prove nothing */
        double (*mine)(double) = acos;
        assert_ptr_not_equal((void *)mine, libm_symbol("acos"));
}

static void same_results(void **state)
{
        double (*libm_acos)(double) = (double (*)(double))libm_symbol("acos");
        double (*libm_pow)(double, double) = (double (*)(double, double))libm_symbol("pow");

        assert_true(acos(half) == libm_acos(half));
        assert_true(pow(two, 10) == libm_pow(two, 10));
        assert_true(pow(two, 10) == 1024.0);
        assert_true(sqrt(two) * sqrt(two) - 2.0 < 1e-15);
        assert_true(trunc(-two - half) == -2.0);
        assert_true(fmod(7.5, two) == 1.5);
        assert_true(atan2(1.0, two) == atan(half));
}

static void same_errno(void **state)
{
        errno = 0;
        assert_true(isnan(log(minus_one)));
        assert_int_equal(errno, EDOM);
        errno = 0;
        assert_true(isinf(pow(zero, minus_one)));
        assert_int_equal(errno, ERANGE);
}

static int one_value(void *userdata, int n, char **values, char **names)
{
        double *out = userdata;
        *out = values[0] ? strtod(values[0], NULL) : -12345.0;
        return 0;
}

static void through_sqlite(void **state)
{
        sqlite3 *db = NULL;
        double v = 0;

        assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
        /* these need SQLite built with its math functions; skip if not */
        if (sqlite3_exec(db, "SELECT pow(2, 10)", one_value, &v, NULL) != SQLITE_OK) {
                sqlite3_close(db);
                skip();
        }
        assert_true(v == 1024.0);
        assert_int_equal(sqlite3_exec(db, "SELECT round(acos(0.5) * 3, 12)", one_value, &v, NULL), SQLITE_OK);
        assert_true(fabs(v - 3.14159265359) < 1e-11);
        assert_int_equal(sqlite3_exec(db, "SELECT ln(-1)", one_value, &v, NULL), SQLITE_OK);
        assert_true(v == -12345.0);     /* NULL, as SQLite answers a domain error */
        sqlite3_close(db);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(ours_not_libm),
                cmocka_unit_test(same_results),
                cmocka_unit_test(same_errno),
                cmocka_unit_test(through_sqlite),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
