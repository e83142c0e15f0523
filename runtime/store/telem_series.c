/* telem_series.c - the store's key index and the ring behind each series.
 *
 * The index is a plain open-addressing hash table: slots hold the full hash
 * and a pointer to the key, so a probe compares 8 bytes before touching the
 * key; deletion shifts the rest of a run back instead of leaving
 * tombstones, so lookups stay short however many series come and go.
 *
 * Hashing reads whole words only (a short key's tail too), and keys are
 * compared inline in two parts, so that looking up "metric" + a prepared
 * tag set never builds the key it looks for.  A tag set is sorted by
 * insertion (a sample has a handful of tags), then copied into one buffer.
 *
 * Ring: timestamps and values sit in two parallel arrays inside one
 * allocation, so a range of points is two contiguous runs at most and a
 * query can hand them out without copying when the range does not wrap.
 * Appends in time order (the common case) write one slot; a late point is
 * inserted by binary search and a shift of whichever side of the ring is
 * shorter.
 */
#include "telem_series.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"

#define S_TABLE_MIN 16u                /* smallest non-empty table */

/* --- index ---------------------------------------------------------------- */

static inline uint64_t
s_rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t
s_load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint64_t
s_load32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* The last 1-8 bytes of a key of `len` bytes ending at `end`, as one word,
 * read with whole loads: byte-wise copies into a word stall the load that
 * follows them (store forwarding), which cost as much as the rest of the
 * hash of a short key.  Bytes already hashed may be read again; the word
 * depends only on the key's bytes and length. */
static inline uint64_t
s_tail(const unsigned char *end, size_t rest, size_t len)
{
    if (len >= 8)
        return s_load64(end - 8);
    if (rest >= 4)
        return s_load32(end - rest) << 32 | s_load32(end - 4);
    if (rest == 0)
        return 0;
    return (uint64_t) end[-(ptrdiff_t) rest] << 16
           | (uint64_t) end[-(ptrdiff_t) (rest / 2) - 1] << 8 | end[-1];
}

/* 64-bit hash, eight bytes per step, with a final avalanche. */
uint64_t
telem_series_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    const unsigned char *end = p + len;
    const uint64_t k1 = UINT64_C(0x9e3779b97f4a7c15);
    const uint64_t k2 = UINT64_C(0xc2b2ae3d27d4eb4f);
    uint64_t h = k1 ^ (len * UINT64_C(0xff51afd7ed558ccd));
    size_t rest = len;
    for (; rest > 8; p += 8, rest -= 8) {
        h ^= s_rotl(s_load64(p) * k2, 31) * k1;
        h = s_rotl(h, 27) * 5 + UINT64_C(0x52dce729);
    }
    h ^= s_rotl(s_tail(end, rest, len) * k2, 31) * k1;
    return telem_hash_mix64(h);
}

uint64_t
telem_series_hash_pair(uint64_t first, uint64_t second)
{
    uint64_t h = first ^ s_rotl(second * UINT64_C(0x9e3779b97f4a7c15), 29);
    h ^= h >> 32;
    h *= UINT64_C(0xd6e8feb86659fd93);
    h ^= h >> 32;
    return h;
}

telem_series_key_t *
telem_series_index_find(const telem_series_index_t *t, uint64_t hash,
                        const char *a, uint32_t alen, const char *b,
                        uint32_t blen)
{
    if (t->cap == 0)
        return NULL;
    uint32_t mask = t->cap - 1;
    uint32_t len = alen + blen;
    for (uint32_t i = (uint32_t) hash & mask; t->slots[i].key;
         i = (i + 1) & mask) {
        telem_series_key_t *k = t->slots[i].key;
        if (t->slots[i].hash == hash && k->len == len
            && telem_series_key_is(k, a, alen, b, blen))
            return k;
    }
    return NULL;
}

static void
s_put_key(telem_series_index_t *t, telem_series_key_t *key)
{
    uint32_t mask = t->cap - 1;
    uint32_t i = (uint32_t) key->hash & mask;
    while (t->slots[i].key)
        i = (i + 1) & mask;
    t->slots[i].hash = key->hash;
    t->slots[i].key = key;
    t->n++;
}

/* Capacity the table needs to take one more key (load at most 3/4). */
static uint32_t
s_cap_for_insert(const telem_series_index_t *t)
{
    if ((uint64_t) (t->n + 1) * 4 <= (uint64_t) t->cap * 3)
        return t->cap;
    /* Doubling into a new table that every key is rehashed into, not a
     * realloc: telem_grow() does not apply. */
    return t->cap ? t->cap * 2 : S_TABLE_MIN;
}

size_t
telem_series_index_growth(const telem_series_index_t *t)
{
    return (size_t) (s_cap_for_insert(t) - t->cap)
           * sizeof(telem_series_slot_t);
}

/* Rehashes into `cap` slots and adjusts *mem. */
static int
s_resize(telem_series_index_t *t, uint32_t cap, uint64_t *mem)
{
    telem_series_slot_t *slots = calloc(cap, sizeof(telem_series_slot_t));
    if (!slots)
        return TELEM_ENOMEM;
    telem_series_index_t old = *t;
    t->slots = slots;
    t->cap = cap;
    t->n = 0;
    for (uint32_t i = 0; i < old.cap; i++)
        if (old.slots[i].key)
            s_put_key(t, old.slots[i].key);
    free(old.slots);
    *mem = *mem + (uint64_t) cap * sizeof(telem_series_slot_t)
           - (uint64_t) old.cap * sizeof(telem_series_slot_t);
    return 0;
}

int
telem_series_index_insert(telem_series_index_t *t, telem_series_key_t *key,
                          uint64_t *mem)
{
    uint32_t cap = s_cap_for_insert(t);
    if (cap != t->cap) {
        int rc = s_resize(t, cap, mem);
        if (rc)
            return rc;
    }
    s_put_key(t, key);
    return 0;
}

/* Removes `key`, shifting later entries of its run back into the hole. */
void
telem_series_index_remove(telem_series_index_t *t,
                          const telem_series_key_t *key)
{
    uint32_t mask = t->cap - 1;
    uint32_t i = (uint32_t) key->hash & mask;
    while (t->slots[i].key != key) {
        assert(t->slots[i].key);
        i = (i + 1) & mask;
    }
    for (uint32_t j = (i + 1) & mask; t->slots[j].key; j = (j + 1) & mask) {
        uint32_t home = (uint32_t) t->slots[j].hash & mask;
        /* The entry at j may fill i unless its home lies in (i, j]. */
        bool in_between = i <= j ? (home > i && home <= j)
                                 : (home > i || home <= j);
        if (!in_between) {
            t->slots[i] = t->slots[j];
            i = j;
        }
    }
    t->slots[i].key = NULL;
    t->n--;
}

/* Failure to shrink is harmless: the table stays as it was. */
void
telem_series_index_shrink(telem_series_index_t *t, uint64_t *mem)
{
    uint32_t cap = t->cap;
    while (cap > S_TABLE_MIN && (uint64_t) t->n * 8 < cap)
        cap /= 2;
    if (t->n == 0)
        cap = 0;
    if (cap == t->cap)
        return;
    if (cap == 0) {
        *mem -= (uint64_t) t->cap * sizeof(telem_series_slot_t);
        telem_series_index_release(t);
        return;
    }
    (void) s_resize(t, cap, mem);
}

void
telem_series_index_release(telem_series_index_t *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = t->n = 0;
}

/* --- tag sets ------------------------------------------------------------- */

int
telem_series_name_ok(const char *s, int allow_empty, uint32_t *len)
{
    if (!s)
        return 0;
    size_t n = strnlen(s, TELEM_NAME_MAX + 1);
    if (n > TELEM_NAME_MAX || (n == 0 && !allow_empty))
        return 0;
    *len = (uint32_t) n;
    return 1;
}

/* One tag while the set is being sorted. */
typedef struct {
    const char *key;
    const char *value;
    uint32_t klen;
    uint32_t vlen;
} s_tagref_t;

/* Inserts t into the sorted refs[0..*n); a repeated key replaces the
 * earlier value (the last one wins). */
static void
s_tag_insert(s_tagref_t *refs, uint32_t *n, const s_tagref_t *t)
{
    uint32_t j = *n;
    int cmp = 1;
    while (j > 0 && (cmp = strcmp(refs[j - 1].key, t->key)) > 0)
        j--;
    if (j > 0 && cmp == 0) {
        refs[j - 1] = *t;
        return;
    }
    memmove(refs + j + 1, refs + j, (*n - j) * sizeof *refs);
    refs[j] = *t;
    (*n)++;
}

static int
s_tags_refuse(telem_series_tags_t *set)
{
    set->rc = TELEM_EINVAL;
    set->ntags = set->len = 0;
    set->hash = telem_series_hash("", 0);
    return TELEM_EINVAL;
}

int
telem_series_tags_set(telem_series_tags_t *set, const telem_tag_t *tags,
                      uint32_t ntags)
{
    if (ntags > TELEM_TAGS_MAX || (ntags > 0 && !tags))
        return s_tags_refuse(set);
    s_tagref_t refs[TELEM_TAGS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < ntags; i++) {
        s_tagref_t t = { tags[i].key, tags[i].value, 0, 0 };
        if (!telem_series_name_ok(t.key, 0, &t.klen)
            || !telem_series_name_ok(t.value, 1, &t.vlen))
            return s_tags_refuse(set);
        s_tag_insert(refs, &n, &t);
    }
    char *p = set->bytes;
    for (uint32_t i = 0; i < n; i++) {
        set->off[i] = (uint32_t) (p - set->bytes);
        set->klen[i] = refs[i].klen;
        memcpy(p, refs[i].key, refs[i].klen + 1);
        p += refs[i].klen + 1;
        memcpy(p, refs[i].value, refs[i].vlen + 1);
        p += refs[i].vlen + 1;
    }
    set->rc = 0;
    set->ntags = n;
    set->len = (uint32_t) (p - set->bytes);
    set->hash = telem_series_hash(set->bytes, set->len);
    return 0;
}

/* --- ring ----------------------------------------------------------------- */

void
telem_series_ring_release(telem_series_ring_t *r)
{
    free(r->ts);
    r->ts = NULL;
    r->val = NULL;
    r->head = r->count = r->cap = 0;
}

void
telem_series_ring_copy(const telem_series_ring_t *r, uint32_t lo, uint32_t n,
                       int64_t *ts_out, double *val_out)
{
    if (n == 0)
        return;
    assert(lo + (uint64_t) n <= r->count);
    uint32_t start = telem_series_ring_phys(r, lo);
    uint32_t first = r->cap - start;
    if (first > n)
        first = n;
    memcpy(ts_out, r->ts + start, first * sizeof(int64_t));
    memcpy(val_out, r->val + start, first * sizeof(double));
    memcpy(ts_out + first, r->ts, (n - first) * sizeof(int64_t));
    memcpy(val_out + first, r->val, (n - first) * sizeof(double));
}

int
telem_series_ring_resize(telem_series_ring_t *r, uint32_t cap)
{
    assert(cap >= r->count);
    if (cap == r->cap)
        return 0;
    if (cap == 0) {
        telem_series_ring_release(r);
        return 0;
    }
    int64_t *ts = malloc((size_t) cap * TELEM_SERIES_POINT_BYTES);
    if (!ts)
        return TELEM_ENOMEM;
    double *val = (double *) (ts + cap);
    telem_series_ring_copy(r, 0, r->count, ts, val);
    free(r->ts);
    r->ts = ts;
    r->val = val;
    r->head = 0;
    r->cap = cap;
    return 0;
}

uint32_t
telem_series_ring_lower(const telem_series_ring_t *r, int64_t ts)
{
    uint32_t lo = 0, hi = r->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (telem_series_ring_ts(r, mid) < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint32_t
telem_series_ring_upper(const telem_series_ring_t *r, int64_t ts)
{
    uint32_t lo = 0, hi = r->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (telem_series_ring_ts(r, mid) <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Moves logical point `from` to logical slot `to` (both < cap). */
static inline void
s_move(telem_series_ring_t *r, uint32_t to, uint32_t from)
{
    uint32_t pt = telem_series_ring_phys(r, to);
    uint32_t pf = telem_series_ring_phys(r, from);
    r->ts[pt] = r->ts[pf];
    r->val[pt] = r->val[pf];
}

static inline void
s_put(telem_series_ring_t *r, uint32_t i, int64_t ts, double value)
{
    uint32_t p = telem_series_ring_phys(r, i);
    r->ts[p] = ts;
    r->val[p] = value;
}

void
telem_series_ring_add(telem_series_ring_t *r, int64_t ts, double value)
{
    assert(r->count < r->cap);
    if (r->count == 0 || ts >= r->newest) {
        if (r->count == 0)
            r->oldest = ts;
        r->newest = ts;
        s_put(r, r->count++, ts, value);
        return;
    }
    uint32_t pos = telem_series_ring_upper(r, ts);
    if (pos >= r->count / 2) {
        /* Shift the newer side one slot towards the tail. */
        for (uint32_t k = r->count; k > pos; k--)
            s_move(r, k, k - 1);
        s_put(r, pos, ts, value);
    }
    else {
        /* Open a slot before the head, shift the older side into it. */
        r->head = r->head == 0 ? r->cap - 1 : r->head - 1;
        for (uint32_t k = 0; k < pos; k++)
            s_move(r, k, k + 1);
        s_put(r, pos, ts, value);
    }
    if (pos == 0)
        r->oldest = ts;
    r->count++;
}

void
telem_series_ring_drop_oldest(telem_series_ring_t *r, uint32_t n)
{
    assert(n <= r->count);
    if (n == 0)
        return;
    r->count -= n;
    r->head = r->count == 0 ? 0 : telem_series_ring_phys(r, n);
    if (r->count > 0)
        r->oldest = r->ts[r->head];
}
