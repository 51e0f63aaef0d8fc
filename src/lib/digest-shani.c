/* digest-shani.c - SHA-256 blocks on the x86 SHA extensions.
 *
 * Why: hutch hashes every changed file, artifact and blob it keeps, and
 * the portable code runs at about a fifth of the speed of the CPU's own
 * SHA-256 rounds (SHA-NI, in Intel CPUs since Goldmont/Ice Lake and AMD
 * since Zen). Same results, bit for bit: test-digest.c runs both on the
 * same input.
 *
 * Layout the instructions want (Intel's SHA extensions reference): the
 * eight working variables in two registers, one holding A B E F and the
 * other C D G H, highest lane first. SHA256RNDS2 does two rounds and
 * takes its two message-plus-constant words from the low half of its
 * third operand; SHA256MSG1/MSG2 compute the message schedule four words
 * at a time (MSG1 the sigma0 part, MSG2 the sigma1 part, which depends
 * on the two words just before).
 *
 * Only this file is compiled for those instructions (the target
 * attribute), so nothing else in hutch can end up using them on a CPU
 * that lacks them; digest_shani_usable() asks the CPU first.
 */
#include "config.h"

#include "lib/digest-internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#ifdef HAVE_SYS_PLATFORM_X86_H
#include <sys/platform/x86.h>
#else
#include <cpuid.h>
#endif

/* SHA (CPUID leaf 7 EBX bit 29), SSSE3 (byte shuffles) and SSE4.1
 * (blends). Under a hypervisor CPUID traps to it: 5.8 us a call on the
 * VM the README's figures come from, and __get_cpuid_count() makes two,
 * so four calls were 23 us of every hutch process. glibc's loader has
 * asked already and keeps the answer (<sys/platform/x86.h>, glibc 2.33),
 * "active" meaning the CPU has it and the kernel saves its registers;
 * reading that costs nothing. Under valgrind the loader sees valgrind's
 * CPU, which has no SHA, so the portable code runs there. Without that
 * header the CPU is asked, once: the answer is a fact about the CPU, the
 * same for every caller, so one cached copy is no hidden state:
 * 0 unknown, 1 no, 2 yes. */
bool digest_shani_usable(void)
{
#ifdef HAVE_SYS_PLATFORM_X86_H
        return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSSE3) && CPU_FEATURE_ACTIVE(SSE4_1);
#else
        static int known;
        int k = __atomic_load_n(&known, __ATOMIC_RELAXED);

        if (k == 0) {
                unsigned a, b, c, d;
                bool sha = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
                bool sse = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 9)) && (c & (1u << 19));
                k = sha && sse ? 2 : 1;
                __atomic_store_n(&known, k, __ATOMIC_RELAXED);
        }
        return k == 2;
#endif
}

#define SHANI __attribute__((target("sha,ssse3,sse4.1")))

/* Four rounds: schedule words w (already big-endian decoded) plus their
 * constants, two rounds into each register in turn. */
SHANI static inline void four_rounds(__m128i *abef, __m128i *cdgh, __m128i w, int group)
{
        __m128i wk = _mm_add_epi32(w, _mm_load_si128((const __m128i *)&digest_k[4 * group]));
        *cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, wk);
        *abef = _mm_sha256rnds2_epu32(*abef, *cdgh, _mm_shuffle_epi32(wk, 0x0e));
}

SHANI void digest_blocks_shani(uint32_t h[8], const uint8_t *blocks, size_t n_blocks)
{
        /* each 32-bit word of a block is big-endian */
        const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
        __m128i abcd = _mm_loadu_si128((const __m128i *)&h[0]);
        __m128i efgh = _mm_loadu_si128((const __m128i *)&h[4]);

        /* lanes low to high: abcd = A B C D, efgh = E F G H; wanted
         * abef = F E B A and cdgh = H G D C */
        __m128i badc = _mm_shuffle_epi32(abcd, 0xb1);
        __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1b);
        __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);
        __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xf0);

        for (; n_blocks > 0; n_blocks--, blocks += 64) {
                __m128i abef_in = abef, cdgh_in = cdgh;
                __m128i w[4];   /* the last 16 schedule words, 4 per lane group */

                for (int g = 0; g < 16; g++) {
                        __m128i next;
                        if (g < 4) {
                                next = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 16 * g)),
                                                        bswap);
                        } else {
                                /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] for
                                 * t = 4g .. 4g+3: MSG1 gives W[t-16] + s0(W[t-15]),
                                 * the alignment W[t-7], MSG2 adds s1 in order */
                                __m128i w16 = w[g & 3], w12 = w[(g + 1) & 3];
                                __m128i w8 = w[(g + 2) & 3], w4 = w[(g + 3) & 3];
                                next = _mm_add_epi32(_mm_sha256msg1_epu32(w16, w12), _mm_alignr_epi8(w4, w8, 4));
                                next = _mm_sha256msg2_epu32(next, w4);
                        }
                        w[g & 3] = next;
                        four_rounds(&abef, &cdgh, next, g);
                }
                abef = _mm_add_epi32(abef, abef_in);
                cdgh = _mm_add_epi32(cdgh, cdgh_in);
        }

        /* back: abef = F E B A, cdgh = H G D C (low to high) */
        __m128i abef_fwd = _mm_shuffle_epi32(abef, 0x1b);       /* A B E F */
        __m128i ghcd = _mm_shuffle_epi32(cdgh, 0xb1);           /* G H C D */
        _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(abef_fwd, ghcd, 0xf0));
        _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(ghcd, abef_fwd, 8));
}

#else

bool digest_shani_usable(void)
{
        return false;
}

void digest_blocks_shani(uint32_t h[8], const uint8_t *blocks, size_t n_blocks)
{
        digest_blocks_portable(h, blocks, n_blocks);
}

#endif
