/* telem_grow.h - grow-by-doubling arrays and the 64-bit hash finaliser,
 * the two helpers every part used to write for itself.
 *
 * telem_grow() makes room for `need` elements of `size` bytes in an array
 * kept as (pointer, capacity): it doubles the capacity (from `min` when the
 * array is empty) until `need` fits, reallocs once and updates both.  On
 * failure (no memory, or a byte count that would overflow) it returns
 * TELEM_ENOMEM and leaves the array and its capacity as they were, so the
 * caller still owns every element.  Call sites read
 *
 *     if (n + 1 > cap && telem_grow((void **) &v, &cap, n + 1, sizeof *v, 16))
 *         return TELEM_ENOMEM;
 *
 * telem_hash_mix64() is the finaliser of MurmurHash3 (fmix64): every input
 * bit affects every output bit, so the upper bits pick buckets well.
 * telem_hash_text() hashes a text of `len` >= 1 bytes by its length and
 * three 8-byte windows (start, middle, end), where names and label sets
 * differ: a few ns, for the hot paths' name caches.
 *
 * Both are thread-compatible: they touch only what they are given. */
#ifndef TELEM_GROW_H
#define TELEM_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0, or TELEM_ENOMEM with *p and *cap unchanged.  *p may be NULL with
 * *cap 0.  `min` is the first capacity (at least 1). */
int telem_grow(void **p, size_t *cap, size_t need, size_t size, size_t min);

static inline uint64_t
telem_hash_mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

static inline uint64_t
telem_hash_text(const char *text, size_t len)
{
    uint64_t a = 0, b = 0, c = 0;
    size_t w = len < 8 ? len : 8;
    memcpy(&a, text, w);
    memcpy(&b, text + (len - w) / 2, w);
    memcpy(&c, text + len - w, w);
    return telem_hash_mix64(a ^ telem_hash_mix64(b ^ len) ^ (c << 1));
}

#ifdef __cplusplus
}
#endif

#endif
