/* test-digest.c - SHA-256 against the FIPS 180-4 / NIST example vectors,
 * padding boundaries (lengths around 55/56/64 bytes, values from an
 * independent implementation), streaming in odd pieces and digest_fd. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>

#include "lib/digest.h"
#include "lib/util.h"
#include "tap-skip.h"

static void hex_of(const char *s, char hex[DIGEST_HEX_SIZE])
{
        digest_buffer(s, strlen(s), hex);
}

static void nist_vectors(void **state)
{
        char hex[DIGEST_HEX_SIZE];

        hex_of("", hex);
        assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        hex_of("abc", hex);
        assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        /* 448 bits: the padding needs a second block */
        hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex);
        assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        hex_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
               "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu", hex);
        assert_string_equal(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void million_a(void **state)
{
        char hex[DIGEST_HEX_SIZE], chunk[1000];
        struct digest d;

        memset(chunk, 'a', sizeof(chunk));
        digest_init(&d);
        for (int i = 0; i < 1000; i++)
                digest_update(&d, chunk, sizeof(chunk));
        digest_final_hex(&d, hex);
        assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static const struct {
        size_t n;
        const char *hex;
} boundaries[] = {
        { 55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b" },
        { 56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27" },
        { 57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73" },
        { 63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055" },
        { 64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241" },
        { 65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e" },
        { 119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e" },
        { 120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5" },
        { 128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6" },
        { 1000, "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371" },
};

static void pattern(unsigned char *buf, size_t n)
{
        for (size_t i = 0; i < n; i++)
                buf[i] = (unsigned char)((i * 7 + 3) & 0xff);
}

static void padding_boundaries(void **state)
{
        unsigned char buf[1000];

        pattern(buf, sizeof(buf));
        for (size_t k = 0; k < ELEMENTSOF(boundaries); k++) {
                char hex[DIGEST_HEX_SIZE];

                digest_buffer(buf, boundaries[k].n, hex);
                assert_string_equal(hex, boundaries[k].hex);
        }
}

/* Every way of cutting the input into two or three pieces hashes alike. */
static void streaming_pieces(void **state)
{
        unsigned char buf[200];
        char whole[DIGEST_HEX_SIZE];

        pattern(buf, sizeof(buf));
        digest_buffer(buf, sizeof(buf), whole);
        for (size_t a = 0; a <= sizeof(buf); a += 7) {
                for (size_t b = a; b <= sizeof(buf); b += 13) {
                        struct digest d;
                        char hex[DIGEST_HEX_SIZE];

                        digest_init(&d);
                        digest_update(&d, buf, a);
                        digest_update(&d, buf + a, b - a);
                        digest_update(&d, NULL, 0);
                        digest_update(&d, buf + b, sizeof(buf) - b);
                        digest_final_hex(&d, hex);
                        assert_string_equal(hex, whole);
                }
        }
}

static void from_fd(void **state)
{
        char path[] = "/tmp/hutch-test-digest-XXXXXX", hex[DIGEST_HEX_SIZE];
        _cleanup_close_ int fd = mkstemp(path);
        unsigned char buf[1000];
        int pipefd[2];

        assert_true(fd >= 0);
        unlink(path);
        pattern(buf, sizeof(buf));
        assert_int_equal(write_all(fd, buf, sizeof(buf)), 0);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(digest_fd_size(fd, hex), 1000);
        assert_string_equal(hex, boundaries[ELEMENTSOF(boundaries) - 1].hex);

        /* from the current offset, and from a pipe */
        assert_int_equal(lseek(fd, 1000 - 64, SEEK_SET), 1000 - 64);
        assert_int_equal(digest_fd(fd, hex), 0);
        {
                char want[DIGEST_HEX_SIZE];
                digest_buffer(buf + 1000 - 64, 64, want);
                assert_string_equal(hex, want);
        }
        assert_int_equal(pipe(pipefd), 0);
        assert_int_equal(write_all(pipefd[1], "abc", 3), 0);
        close(pipefd[1]);
        assert_int_equal(digest_fd(pipefd[0], hex), 0);
        close(pipefd[0]);
        assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

        assert_true(digest_fd(-1, hex) == -EBADF);
}

static void hex_validity(void **state)
{
        assert_true(digest_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        assert_false(digest_hex_valid("E3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        assert_false(digest_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"));
        assert_false(digest_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8555"));
        assert_false(digest_hex_valid("../../../../etc/passwd"));
        assert_false(digest_hex_valid(NULL));
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(nist_vectors),
                cmocka_unit_test(million_a),
                cmocka_unit_test(padding_boundaries),
                cmocka_unit_test(streaming_pieces),
                cmocka_unit_test(from_fd),
                cmocka_unit_test(hex_validity),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
