/* ulid.c - time-sortable run ids (see ulid.h).
 *
 * The one static here is the last id handed out, which is what makes ids
 * strictly increasing within a process; a mutex guards it, as hutch mcp's
 * kernel-call threads each make ids (two threads reading the same last
 * id made the same new one). The 128 bits are written as 26
 * five-bit digits: 10 for the timestamp (50 bits, the top two always 0)
 * and 16 for the 80 random bits.
 */
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include "record/ulid.h"
#include "lib/util.h"

static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

#define ULID_MAX_MS ((1ULL << 48) - 1)

static struct {
        bool valid;
        uint64_t ms;
        uint8_t rnd[10];
} last;
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;

void ulid_encode(uint64_t ms, const uint8_t rnd[10], char ret[ULID_LEN + 1])
{
        ms &= ULID_MAX_MS;
        for (int i = 9; i >= 0; i--) {
                ret[i] = alphabet[ms & 31];
                ms >>= 5;
        }
        /* 80 bits = 16 digits; take them five at a time from the top */
        for (int i = 0; i < 16; i++) {
                unsigned bit = (unsigned)i * 5, v = 0;
                for (unsigned b = 0; b < 5; b++) {
                        unsigned pos = bit + b;
                        v = (v << 1) | ((rnd[pos / 8] >> (7 - pos % 8)) & 1);
                }
                ret[10 + i] = alphabet[v];
        }
        ret[ULID_LEN] = '\0';
}

/* Add one to a big-endian 80-bit number; false when it wrapped to 0. */
static bool increment(uint8_t rnd[10])
{
        for (int i = 9; i >= 0; i--)
                if (++rnd[i] != 0)
                        return true;
        return false;
}

static int fill_random(uint8_t *buf, size_t n)
{
        size_t got = 0;
        while (got < n) {
                ssize_t r = getrandom(buf + got, n - got, 0);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t)r;
        }
        return 0;
}

static int next_id(char ret[ULID_LEN + 1]);

int ulid_new(char ret[ULID_LEN + 1])
{
        pthread_mutex_lock(&last_lock);
        int r = next_id(ret);
        pthread_mutex_unlock(&last_lock);
        return r;
}

static int next_id(char ret[ULID_LEN + 1])
{
        uint64_t ms = now_realtime_ms() & ULID_MAX_MS;

        if (last.valid && ms <= last.ms) {
                /* same millisecond (or the clock stepped back): stay above
                 * the previous id */
                ms = last.ms;
                if (!increment(last.rnd)) {
                        ms++;
                        int r = fill_random(last.rnd, sizeof(last.rnd));
                        if (r < 0)
                                return r;
                }
        } else {
                int r = fill_random(last.rnd, sizeof(last.rnd));
                if (r < 0)
                        return r;
        }
        last.ms = ms;
        last.valid = true;
        ulid_encode(ms, last.rnd, ret);
        return 0;
}

static int digit_value(char c)
{
        const char *p;
        if (c >= 'a' && c <= 'z')
                c = (char)(c - 'a' + 'A');
        if (c == '\0')
                return -1;
        p = strchr(alphabet, c);
        return p ? (int)(p - alphabet) : -1;
}

bool ulid_char_valid(char c)
{
        return digit_value(c) >= 0;
}

bool ulid_valid(const char *s)
{
        if (!s || strlen(s) != ULID_LEN || s[0] > '7')
                return false;
        for (size_t i = 0; i < ULID_LEN; i++)
                if (s[i] >= 'a' || digit_value(s[i]) < 0)
                        return false;
        return true;
}

uint64_t ulid_timestamp_ms(const char *s)
{
        uint64_t ms = 0;
        if (!ulid_valid(s))
                return 0;
        for (size_t i = 0; i < 10; i++)
                ms = (ms << 5) | (uint64_t)digit_value(s[i]);
        return ms;
}
