/* test-ulid.c - unit tests for run ids: the encoding against known
 * values, the alphabet and length, time order and strict monotonicity
 * within one process. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "record/ulid.h"
#include "lib/util.h"

static void encoding(void **state)
{
        char id[ULID_LEN + 1];
        uint8_t zero[10] = { 0 }, ones[10], top[10] = { 0x80 }, low[10] = { 0 };

        memset(ones, 0xff, sizeof(ones));
        low[9] = 0x01;

        ulid_encode(0, zero, id);
        assert_string_equal(id, "00000000000000000000000000");
        ulid_encode((1ULL << 48) - 1, ones, id);
        assert_string_equal(id, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
        /* the timestamp of the ULID specification's example */
        ulid_encode(1469918176385ULL, zero, id);
        assert_memory_equal(id, "01ARYZ6S41", 10);
        ulid_encode(1, top, id);
        assert_string_equal(id, "0000000001G000000000000000");
        ulid_encode(0, low, id);
        assert_string_equal(id, "00000000000000000000000001");
        assert_int_equal(ulid_timestamp_ms("01ARYZ6S41TSV4RRFFQ69G5FAV"), 1469918176385ULL);
}

static void validity(void **state)
{
        assert_true(ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FAV"));
        assert_false(ulid_valid("01aryz6s41tsv4rrffq69g5fav"));    /* stored ids are upper case */
        assert_false(ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FA"));     /* 25 */
        assert_false(ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FAVX"));   /* 27 */
        assert_false(ulid_valid("81ARYZ6S41TSV4RRFFQ69G5FAV"));    /* > 48 bits */
        assert_false(ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FAU"));    /* U is not a digit */
        assert_false(ulid_valid(NULL));
        assert_true(ulid_char_valid('z'));
        assert_false(ulid_char_valid('I'));
        assert_false(ulid_char_valid('-'));
        assert_false(ulid_char_valid('\0'));
}

static void fresh_ids(void **state)
{
        char prev[ULID_LEN + 1] = "", id[ULID_LEN + 1];
        uint64_t before = now_realtime_ms();

        for (int i = 0; i < 100000; i++) {
                assert_int_equal(ulid_new(id), 0);
                assert_int_equal(strlen(id), ULID_LEN);
                assert_true(ulid_valid(id));
                /* strictly increasing, even within one millisecond */
                assert_true(strcmp(prev, id) < 0);
                memcpy(prev, id, sizeof(id));
        }
        uint64_t after = now_realtime_ms();
        uint64_t ts = ulid_timestamp_ms(id);
        assert_true(ts >= before);
        /* increments within a millisecond never run ahead of the clock
         * by more than the (astronomically unlikely) carries */
        assert_true(ts <= after + 1);
}

static void random_part_differs(void **state)
{
        char a[ULID_LEN + 1], b[ULID_LEN + 1];
        /* two ids 2 ms apart draw fresh randomness: the random parts of
         * independent draws are equal with probability 2^-80 */
        assert_int_equal(ulid_new(a), 0);
        usleep(2000);
        assert_int_equal(ulid_new(b), 0);
        assert_true(strcmp(a, b) < 0);
        assert_memory_not_equal(a + 10, b + 10, 15);
}

/* hutch mcp makes ids in several threads at once: none may be another's */
#define PER_THREAD 20000

static void *make_ids(void *p)
{
        char (*ids)[ULID_LEN + 1] = p;
        for (int i = 0; i < PER_THREAD; i++)
                if (ulid_new(ids[i]) < 0)
                        return (void *)1;
        return NULL;
}

static int cmp_id(const void *a, const void *b)
{
        return strcmp(a, b);
}

static void threads_never_share_an_id(void **state)
{
        (void)state;
        enum { THREADS = 4 };
        char (*ids)[ULID_LEN + 1] = xmalloc(sizeof(*ids) * PER_THREAD * THREADS);
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_create(&t[i], NULL, make_ids, ids + i * PER_THREAD), 0);
        for (int i = 0; i < THREADS; i++) {
                void *r;
                assert_int_equal(pthread_join(t[i], &r), 0);
                assert_null(r);
        }
        qsort(ids, PER_THREAD * THREADS, sizeof(*ids), cmp_id);
        for (int i = 1; i < PER_THREAD * THREADS; i++)
                assert_string_not_equal(ids[i - 1], ids[i]);
        free(ids);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(encoding),
                cmocka_unit_test(validity),
                cmocka_unit_test(fresh_ids),
                cmocka_unit_test(random_part_differs),
                cmocka_unit_test(threads_never_share_an_id),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
