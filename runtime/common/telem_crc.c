/* telem_crc.c - CRC-32C with the CPU's instruction where there is one
 * (see telem_crc.h).
 *
 * The raw CRC register is linear: running it over A then B gives
 * crc(B from 0) xor shift(crc(A), |B|), where shift multiplies by
 * x^(8|B|) modulo the polynomial.  Large buffers are therefore cut into
 * three lanes that the CPU computes in parallel (the instruction has a
 * latency of 3 cycles and a throughput of 1), and the lanes are joined
 * with two multiplications modulo P.  Polynomials are in the reflected
 * bit order the instruction uses: bit 31 is x^0.
 */
#include "telem_crc.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define S_TARGET __attribute__((target("sse4.2")))
#define S_HW_STEP64(c, v) _mm_crc32_u64((c), (v))
#define S_HW_STEP8(c, v) _mm_crc32_u8((uint32_t) (c), (v))
#define S_HW_OK() __builtin_cpu_supports("sse4.2")
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define S_TARGET
#define S_HW_STEP64(c, v) __crc32cd((uint32_t) (c), (v))
#define S_HW_STEP8(c, v) __crc32cb((uint32_t) (c), (v))
#define S_HW_OK() 1
#endif

#define S_POLY 0x82f63b78u          /* reflected Castagnoli polynomial */
#define S_LANE 4096u                /* bytes per lane of a 3-lane block */

/* a * b mod P, reflected. */
static uint32_t
s_mulmod(uint32_t a, uint32_t b)
{
    uint32_t p = 0;
    for (uint32_t m = 1u << 31; m && a; m >>= 1) {
        if (a & m) {
            p ^= b;
            a &= ~m;
        }
        b = (b & 1) ? (b >> 1) ^ S_POLY : b >> 1;
    }
    return p;
}

/* x^(8n) mod P, reflected, by squaring. */
static uint32_t
s_xpow8n(uint64_t n)
{
    uint32_t result = 1u << 31;           /* x^0 */
    uint32_t sq = 1u << 23;               /* x^8 */
    for (; n; n >>= 1) {
        if (n & 1)
            result = s_mulmod(result, sq);
        sq = s_mulmod(sq, sq);
    }
    return result;
}

static uint32_t
s_soft(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ S_POLY : crc >> 1;
    }
    return crc;
}

#ifdef S_HW_STEP64
static inline S_TARGET uint64_t
s_lane(uint64_t c, const uint8_t *p, size_t n)
{
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = S_HW_STEP64(c, v);
    }
    for (; n; n--)
        c = S_HW_STEP8(c, *p++);
    return c;
}

/* Raw register over p[0..n), three lanes at a time. */
static S_TARGET uint32_t
s_hw(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c = crc;
    if (n >= 3 * S_LANE) {
        uint32_t k1 = s_xpow8n(S_LANE), k2 = s_xpow8n(2 * S_LANE);
        for (; n >= 3 * S_LANE; n -= 3 * S_LANE, p += 3 * S_LANE) {
            uint64_t a = c, b = 0, d = 0;
            for (size_t i = 0; i < S_LANE; i += 8) {
                uint64_t x, y, z;
                memcpy(&x, p + i, 8);
                memcpy(&y, p + S_LANE + i, 8);
                memcpy(&z, p + 2 * S_LANE + i, 8);
                a = S_HW_STEP64(a, x);
                b = S_HW_STEP64(b, y);
                d = S_HW_STEP64(d, z);
            }
            c = s_mulmod((uint32_t) a, k2) ^ s_mulmod((uint32_t) b, k1)
                ^ (uint32_t) d;
        }
    }
    return (uint32_t) s_lane(c, p, n);
}
#endif

uint32_t
telem_crc32c(uint32_t crc, const void *data, size_t size)
{
    uint32_t c = ~crc;
#ifdef S_HW_STEP64
    if (S_HW_OK())
        return ~s_hw(c, data, size);
#endif
    return ~s_soft(c, data, size);
}
