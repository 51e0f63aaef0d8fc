/* capture.c - head + tail capture of one output stream (see capture.h).
 *
 * Shape of the data: the first `limit` bytes go to `head` and never move;
 * every later byte goes into `tail`, a ring of `limit` bytes that keeps
 * only the most recent ones. Counters see every byte. The workload is one
 * capture_append() per read() of a pipe (typically 4-64 KiB) for up to
 * gigabytes, so appending is at most two memcpy()s plus a newline count
 * that looks at eight bytes at a time; nothing is allocated after
 * capture_new(). Rendering happens once, at the end of a run.
 */
#include "config.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "supervise/capture.h"
#include "lib/redact.h"
#include "lib/util.h"
#include "record/store.h"

struct capture {
        size_t limit;
        char *head;             /* limit bytes */
        size_t head_len;
        char *tail;             /* ring of limit bytes */
        size_t tail_pos;        /* next write position in the ring */
        size_t tail_len;        /* bytes held in the ring, <= limit */
        uint64_t total;         /* bytes appended */
        uint64_t newlines;      /* '\n' appended */
        char last;              /* last byte appended (valid if total > 0) */
        /* With secrets, what is kept is the stream redacted before it is
         * cut (a value across the head's end would otherwise be kept
         * in part); kept_* count that stream. pending holds seen_len
         * bytes kept already (to look back at: redact_lookbehind()),
         * then the bytes that could still start a value. Without,
         * kept_* equal the above. */
        char *const *secrets;
        uint64_t kept_total, kept_newlines;
        char *pending;
        size_t pending_len, seen_len;
};

#define HIGHS 0x8080808080808080ULL
#define LOWS  0x7f7f7f7f7f7f7f7fULL
#define NLS   0x0a0a0a0a0a0a0a0aULL

/* One 0x01 per byte of w that is '\n', 0x00 elsewhere. Exact for every
 * byte (no carries between lanes): a byte x is zero iff neither
 * ((x & 0x7f) + 0x7f) nor x has its high bit set. */
static inline uint64_t newline_lanes(uint64_t w)
{
        uint64_t x = w ^ NLS;
        uint64_t t = ((x & LOWS) + LOWS) | x;
        return (~t & HIGHS) >> 7;
}

uint64_t count_newlines(const void *buf, size_t n)
{
        const unsigned char *p = buf;
        uint64_t count = 0;

#ifdef __SSE2__
        /* 16 bytes a step: each lane of acc counts down by one (cmpeq
         * gives 0xff) per '\n'. Each accumulator sees two vectors a step,
         * so at most 127 steps before the lanes (bytes) are summed. */
        const __m128i nl = _mm_set1_epi8('\n');
        while (n >= 64) {
                size_t steps = MIN(n / 64, (size_t)127);
                __m128i a0 = _mm_setzero_si128(), a1 = _mm_setzero_si128();
                for (size_t i = 0; i < steps; i++, p += 64) {
                        __m128i v0 = _mm_loadu_si128((const __m128i *)p);
                        __m128i v1 = _mm_loadu_si128((const __m128i *)(p + 16));
                        __m128i v2 = _mm_loadu_si128((const __m128i *)(p + 32));
                        __m128i v3 = _mm_loadu_si128((const __m128i *)(p + 48));
                        a0 = _mm_sub_epi8(a0, _mm_cmpeq_epi8(v0, nl));
                        a1 = _mm_sub_epi8(a1, _mm_cmpeq_epi8(v1, nl));
                        a0 = _mm_sub_epi8(a0, _mm_cmpeq_epi8(v2, nl));
                        a1 = _mm_sub_epi8(a1, _mm_cmpeq_epi8(v3, nl));
                }
                __m128i s0 = _mm_sad_epu8(a0, _mm_setzero_si128());
                __m128i s1 = _mm_sad_epu8(a1, _mm_setzero_si128());
                __m128i sum = _mm_add_epi64(s0, s1);
                count += (uint64_t)_mm_cvtsi128_si64(sum) +
                         (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum));
                n -= steps * 64;
        }
#endif
        while (n > 0 && ((uintptr_t)p & 7)) {
                count += *p++ == '\n';
                n--;
        }
        while (n >= 8) {
                /* per-lane sums stay below 256 for up to 255 words */
                size_t words = MIN(n / 8, (size_t)127);
                uint64_t acc = 0;
                for (size_t i = 0; i < words; i++) {
                        uint64_t w;
                        memcpy(&w, p + 8 * i, 8);
                        acc += newline_lanes(w);
                }
                /* add the eight byte lanes (each < 256) through 16-bit lanes */
                acc = (acc & 0x00ff00ff00ff00ffULL) + ((acc >> 8) & 0x00ff00ff00ff00ffULL);
                count += (acc * 0x0001000100010001ULL) >> 48;
                p += 8 * words;
                n -= 8 * words;
        }
        while (n > 0) {
                count += *p++ == '\n';
                n--;
        }
        return count;
}

struct capture *capture_new(size_t limit)
{
        struct capture *c = xcalloc(1, sizeof(*c));
        c->limit = limit;
        c->head = xmalloc(limit);
        c->tail = xmalloc(limit);
        return c;
}

struct capture *capture_free(struct capture *c)
{
        if (!c)
                return NULL;
        free(c->head);
        free(c->tail);
        if (c->pending)
                explicit_bzero(c->pending, c->pending_len);
        free(c->pending);
        free(c);
        return NULL;
}

void capture_set_secrets(struct capture *c, char *const *secrets)
{
        c->secrets = secrets && secrets[0] ? secrets : NULL;
}

static void tail_append(struct capture *c, const char *p, size_t n)
{
        if (c->limit == 0)
                return;
        if (n >= c->limit) {
                /* only the last `limit` bytes can survive */
                memcpy(c->tail, p + (n - c->limit), c->limit);
                c->tail_pos = 0;
                c->tail_len = c->limit;
                return;
        }
        size_t first = MIN(n, c->limit - c->tail_pos);
        memcpy(c->tail + c->tail_pos, p, first);
        memcpy(c->tail, p + first, n - first);
        c->tail_pos = (c->tail_pos + n) % c->limit;
        c->tail_len = MIN(c->tail_len + n, c->limit);
}

/* Keep n more bytes of the (redacted) stream in head and tail. */
static void keep(struct capture *c, const char *p, size_t n)
{
        c->kept_total += n;
        if (c->secrets)
                c->kept_newlines += count_newlines(p, n);
        if (c->head_len < c->limit) {
                size_t take = MIN(n, c->limit - c->head_len);
                memcpy(c->head + c->head_len, p, take);
                c->head_len += take;
                p += take;
                n -= take;
        }
        if (n > 0)
                tail_append(c, p, n);
}

/* Redact what can be judged of pending + p[0..n) and keep it; the rest
 * waits in pending (at most the longest value minus one byte). With
 * flush, everything is judged (the end of the stream). */
static void keep_redacted(struct capture *c, const char *p, size_t n, bool flush)
{
        _cleanup_free_ char *work = xmalloc(c->pending_len + n + 1), *clean = NULL;
        size_t len = c->pending_len + n, skip = c->seen_len, cut, clean_len, back;

        memcpy(work, c->pending, c->pending_len);
        if (n)
                memcpy(work + c->pending_len, p, n);
        cut = flush ? len : MAX(redact_cut(work, len, c->secrets), skip);
        clean = redact_range(work, cut, skip, c->secrets, &clean_len);
        keep(c, clean ? clean : work + skip, clean ? clean_len : cut - skip);
        if (clean)
                explicit_bzero(clean, clean_len);
        back = flush ? 0 : MIN(cut, redact_lookbehind(c->secrets));
        free(c->pending);
        c->pending_len = len - cut + back;
        c->seen_len = back;
        c->pending = c->pending_len ? xmalloc(c->pending_len) : NULL;
        if (c->pending_len)
                memcpy(c->pending, work + cut - back, c->pending_len);
        explicit_bzero(work, len);
}

void capture_append(struct capture *c, const void *buf, size_t n)
{
        const char *p = buf;

        if (n == 0)
                return;
        c->total += n;
        c->newlines += count_newlines(p, n);
        c->last = p[n - 1];
        if (c->secrets)
                keep_redacted(c, p, n, false);
        else
                keep(c, p, n);
}

uint64_t capture_total_bytes(const struct capture *c)
{
        return c->total;
}

uint64_t capture_total_lines(const struct capture *c)
{
        return c->newlines + (c->total > 0 && c->last != '\n');
}

bool capture_truncated(const struct capture *c)
{
        return c->kept_total + (c->pending_len - c->seen_len) > (uint64_t)c->head_len + c->tail_len;
}

size_t capture_limit(const struct capture *c)
{
        return c->limit;
}

/* Copy the ring's contents, oldest byte first, to dst. */
static size_t copy_tail(const struct capture *c, char *dst)
{
        size_t start = (c->tail_pos + c->limit - c->tail_len) % (c->limit ? c->limit : 1);
        size_t first = MIN(c->tail_len, c->limit - start);
        memcpy(dst, c->tail + start, first);
        memcpy(dst + first, c->tail, c->tail_len - first);
        return c->tail_len;
}

/* A copy of c with its pending bytes judged and kept: rendering happens
 * once, at the end of a run, and must not change c. */
static struct capture *finished_copy(const struct capture *c)
{
        struct capture *d = capture_new(c->limit);
        memcpy(d->head, c->head, c->head_len);
        memcpy(d->tail, c->tail, c->limit);
        char *head = d->head, *tail = d->tail;
        *d = *c;
        d->head = head;
        d->tail = tail;
        d->pending = c->pending_len ? xmalloc(c->pending_len) : NULL;
        if (c->pending_len)
                memcpy(d->pending, c->pending, c->pending_len);
        keep_redacted(d, NULL, 0, true);
        return d;
}

int capture_render(const struct capture *c, char **ret, size_t *ret_len, bool *ret_truncated)
{
        if (c->pending_len > c->seen_len) {
                _cleanup_capture_ struct capture *d = finished_copy(c);
                return capture_render(d, ret, ret_len, ret_truncated);
        }
        bool truncated = capture_truncated(c);
        uint64_t kept_newlines = c->secrets ? c->kept_newlines : c->newlines;
        _cleanup_free_ char *marker = NULL;
        size_t marker_len = 0, len = 0;
        char *out;

        if (truncated) {
                uint64_t omitted = c->kept_total - c->head_len - c->tail_len;
                uint64_t head_nl = count_newlines(c->head, c->head_len);
                uint64_t tail_nl = 0;
                size_t start = (c->tail_pos + c->limit - c->tail_len) % (c->limit ? c->limit : 1);
                size_t first = MIN(c->tail_len, c->limit - start);
                tail_nl = count_newlines(c->tail + start, first) +
                          count_newlines(c->tail, c->tail_len - first);
                bool need_nl = c->head_len > 0 && c->head[c->head_len - 1] != '\n';
                marker = xasprintf("%s[\xe2\x80\xa6 %llu bytes, %llu lines omitted \xe2\x80\xa6]\n",
                                   need_nl ? "\n" : "",
                                   (unsigned long long)omitted,
                                   (unsigned long long)(kept_newlines - head_nl - tail_nl));
                marker_len = strlen(marker);
        }

        out = xmalloc(c->head_len + marker_len + c->tail_len + 1);
        memcpy(out, c->head, c->head_len);
        len = c->head_len;
        if (marker) {
                memcpy(out + len, marker, marker_len);
                len += marker_len;
        }
        len += copy_tail(c, out + len);
        out[len] = '\0';

        *ret = out;
        if (ret_len)
                *ret_len = len;
        if (ret_truncated)
                *ret_truncated = truncated;
        return 0;
}

int run_output_from_capture(struct run_output *o, const struct capture *c)
{
        free(o->data);
        capture_render(c, &o->data, &o->len, &o->truncated);
        o->total_bytes = capture_total_bytes(c);
        o->lines = capture_total_lines(c);
        return 0;
}
