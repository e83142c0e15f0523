/* telem_seg_keys.c - a set of byte strings numbered in the order added
 * (the writers' "series already in this file" tables), and the writers'
 * one write loop.
 *
 * Open addressing with linear probing at load <= 1/2, the 64-bit hash of
 * each key kept beside it; keys are never removed one by one (a segment
 * or dump forgets all its keys at once).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_seg_int.h"

uint64_t
seg_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return telem_hash_mix64(h);
}

static long long
s_probe(const seg_keys_t *s, const void *key, size_t len, uint64_t h,
        size_t *slot)
{
    size_t mask = s->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t k = s->slots[i];
        if (!k) {
            *slot = i;
            return -1;
        }
        k--;
        if (s->hashes[k] == h && s->lens[k] == len &&
            memcmp(s->keys[k], key, len) == 0)
            return k;
    }
}

long long
seg_keys_find(const seg_keys_t *s, const void *key, size_t len)
{
    size_t slot;
    if (!s->nslots)
        return -1;
    return s_probe(s, key, len, seg_hash(key, len), &slot);
}

static int
s_rehash(seg_keys_t *s)
{
    size_t n = s->nslots ? s->nslots * 2 : 256;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return TELEM_ENOMEM;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = s->hashes[k] & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = (uint32_t) (k + 1);
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = n;
    return 0;
}

long long
seg_keys_add(seg_keys_t *s, const void *key, size_t len)
{
    if (s->n >= UINT32_MAX - 1 || len > UINT32_MAX)
        return TELEM_ENOMEM;
    if ((s->n + 1) * 2 > s->nslots && s_rehash(s))
        return TELEM_ENOMEM;
    if (s->n + 1 > s->cap) {
        size_t cap = s->cap, c2 = s->cap, c3 = s->cap;
        if (telem_grow((void **) &s->keys, &cap, s->n + 1, sizeof *s->keys,
                       64) ||
            telem_grow((void **) &s->lens, &c2, s->n + 1, sizeof *s->lens,
                       64) ||
            telem_grow((void **) &s->hashes, &c3, s->n + 1,
                       sizeof *s->hashes, 64))
            return TELEM_ENOMEM;   /* the grown arrays keep their data */
        s->cap = cap < c2 ? (cap < c3 ? cap : c3) : (c2 < c3 ? c2 : c3);
    }
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return TELEM_ENOMEM;
    memcpy(copy, key, len);
    uint64_t h = seg_hash(key, len);
    size_t slot;
    (void) s_probe(s, key, len, h, &slot);
    s->keys[s->n] = copy;
    s->lens[s->n] = (uint32_t) len;
    s->hashes[s->n] = h;
    s->slots[slot] = (uint32_t) (s->n + 1);
    return (long long) s->n++;
}

void
seg_keys_clear(seg_keys_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->keys[i]);
    free(s->keys);
    free(s->lens);
    free(s->hashes);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

int
seg_write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return TELEM_EIO;
        b += w;
        n -= (size_t) w;
    }
    return 0;
}
