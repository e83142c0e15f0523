/* telem_series.h - the store's building blocks: a point ring and a key index.
 *
 * Internal to the store (telem_store.c); nothing else should include it.
 *
 * The index (telem_series_index_t) is a hash table from key bytes to
 * anything whose first member is a telem_series_key_t: open addressing,
 * linear probing, load at most 3/4, backward-shift deletion (no
 * tombstones), the full 64-bit hash kept in each slot.  Functions that
 * allocate or free slots adjust a byte counter the caller passes in.
 *
 * The ring (telem_series_ring_t) holds the points of one series.  Points
 * are kept as two parallel arrays (timestamps, then values) in one
 * allocation of cap * TELEM_SERIES_POINT_BYTES bytes, used as a ring that
 * starts at `head`.  Points are always in time order: an append whose
 * timestamp is not older than the newest point is O(1); an older one is
 * inserted in place by shifting the shorter side of the ring (rare).
 *
 * The ring never grows on its own: the store decides capacities (it keeps
 * the memory accounting) and calls telem_series_ring_resize().
 *
 * A tag set (telem_series_tags_t) is the canonical form of a sample's
 * tags: validated, sorted by key, a repeated key keeping its last value,
 * laid out as the part of a series key that follows "metric\0", with its
 * own hash.  A series key's hash combines the metric name's hash with the
 * tag set's, so a caller that prepares a tag set once (one per batch) pays
 * per sample only for hashing and comparing the metric name and the set.
 * Not thread-safe; owned by one store.
 */
#ifndef TELEM_SERIES_H
#define TELEM_SERIES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "telem_types.h"

/* --- index ------------------------------------------------------------ */

/* The head of anything kept in an index: its key bytes and their hash.
 * The bytes are owned by the containing object. */
typedef struct {
    const char *bytes;
    uint32_t len;
    uint64_t hash;
} telem_series_key_t;

typedef struct {
    uint64_t hash;
    telem_series_key_t *key;   /* NULL: empty slot */
} telem_series_slot_t;

typedef struct {
    telem_series_slot_t *slots;
    uint32_t cap;              /* 0 or a power of two */
    uint32_t n;
} telem_series_index_t;        /* zero-initialised is empty */

/* 64-bit hash of len bytes (not stable across machines; in-process only). */
uint64_t telem_series_hash(const void *data, size_t len);

/* Hash of a key made of two parts, from the parts' hashes: a series key's
 * is telem_series_hash_pair(hash of "metric\0", tag set's hash). */
uint64_t telem_series_hash_pair(uint64_t first, uint64_t second);

/* memcmp(a, b, n) == 0, inline: for the short keys of an index a call to
 * memcmp per part of a key cost more than the comparison itself. */
static inline int
telem_series_bytes_eq(const char *a, const char *b, uint32_t n)
{
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return 0;
    }
    for (; n > 0; a++, b++, n--)
        if (*a != *b)
            return 0;
    return 1;
}

/* True when k's bytes are a[0..alen) followed by b[0..blen). */
static inline int
telem_series_key_is(const telem_series_key_t *k, const char *a, uint32_t alen,
                    const char *b, uint32_t blen)
{
    return k->len == alen + blen && telem_series_bytes_eq(k->bytes, a, alen)
           && telem_series_bytes_eq(k->bytes + alen, b, blen);
}

/* The key whose bytes are a[0..alen) followed by b[0..blen), or NULL. */
telem_series_key_t *telem_series_index_find(const telem_series_index_t *t,
                                            uint64_t hash, const char *a,
                                            uint32_t alen, const char *b,
                                            uint32_t blen);

/* Bytes that inserting one more key would allocate (0 if it fits). */
size_t telem_series_index_growth(const telem_series_index_t *t);

/* Inserts a key that is not present yet (key->hash set); may grow the
 * table, adding the growth to *mem.  Returns 0 or TELEM_ENOMEM. */
int telem_series_index_insert(telem_series_index_t *t,
                              telem_series_key_t *key, uint64_t *mem);

/* Removes a key that is present, by identity. */
void telem_series_index_remove(telem_series_index_t *t,
                               const telem_series_key_t *key);

/* Shrinks a sparse table, subtracting what it frees from *mem. */
void telem_series_index_shrink(telem_series_index_t *t, uint64_t *mem);

/* Frees the slots (not the keys). */
void telem_series_index_release(telem_series_index_t *t);

/* --- tag sets --------------------------------------------------------- */

/* Room for the largest canonical tag set: TELEM_TAGS_MAX keys and values
 * of TELEM_NAME_MAX bytes, each with its NUL. */
#define TELEM_SERIES_TAGS_BYTES (2 * TELEM_TAGS_MAX * (TELEM_NAME_MAX + 1))

typedef struct {
    int rc;                           /* 0, or why the tags were refused */
    uint32_t ntags;
    uint32_t len;                     /* bytes used in `bytes` */
    uint64_t hash;                    /* telem_series_hash of those bytes */
    uint32_t off[TELEM_TAGS_MAX];     /* offset of tag i's key in bytes */
    uint32_t klen[TELEM_TAGS_MAX];    /* its value follows at off+klen+1 */
    char bytes[TELEM_SERIES_TAGS_BYTES];  /* "k1\0v1\0k2\0v2\0..." */
} telem_series_tags_t;

/* True when a name (metric, tag key or value) is non-NULL, at most
 * TELEM_NAME_MAX bytes and, unless allow_empty, not empty; sets *len. */
int telem_series_name_ok(const char *s, int allow_empty, uint32_t *len);

/* Builds the canonical set of tags[0..ntags) in *set (copying the
 * strings).  Returns 0, or TELEM_EINVAL (more than TELEM_TAGS_MAX tags,
 * tags NULL with ntags > 0, a NULL or empty key, a NULL value, a name over
 * TELEM_NAME_MAX), which is also left in set->rc with an empty set. */
int telem_series_tags_set(telem_series_tags_t *set, const telem_tag_t *tags,
                          uint32_t ntags);

/* --- ring ------------------------------------------------------------- */

/* Bytes one slot of capacity costs: an int64 timestamp and a double. */
#define TELEM_SERIES_POINT_BYTES (sizeof(int64_t) + sizeof(double))

typedef struct {
    int64_t *ts;        /* cap timestamps; NULL when cap is 0 */
    double *val;        /* cap values, in the same allocation as ts */
    uint32_t head;      /* physical index of the oldest point */
    uint32_t count;     /* points held */
    uint32_t cap;       /* slots allocated */
    int64_t oldest;     /* cached timestamps of the first and last point, */
    int64_t newest;     /* valid when count > 0 (saves a cache miss each) */
} telem_series_ring_t;

/* Physical slot of logical index i (0 = oldest); i < cap. */
static inline uint32_t
telem_series_ring_phys(const telem_series_ring_t *r, uint32_t i)
{
    uint32_t tail_room = r->cap - r->head;
    return i < tail_room ? r->head + i : i - tail_room;
}

/* Timestamp of logical point i (0 = oldest); i < count. */
static inline int64_t
telem_series_ring_ts(const telem_series_ring_t *r, uint32_t i)
{
    return r->ts[telem_series_ring_phys(r, i)];
}

/* Timestamps of the oldest and newest point; count must be > 0. */
static inline int64_t
telem_series_ring_oldest(const telem_series_ring_t *r)
{
    return r->oldest;
}

static inline int64_t
telem_series_ring_newest(const telem_series_ring_t *r)
{
    return r->newest;
}

/* Frees the storage; the ring is then empty with cap 0. */
void telem_series_ring_release(telem_series_ring_t *r);

/* Reallocates to exactly `cap` slots (cap >= count; 0 frees), keeping the
 * points in order.  Returns 0 or TELEM_ENOMEM (the ring is unchanged). */
int telem_series_ring_resize(telem_series_ring_t *r, uint32_t cap);

/* Adds one point in time order; a point equal to existing timestamps goes
 * after them.  The ring must have room (count < cap). */
void telem_series_ring_add(telem_series_ring_t *r, int64_t ts, double value);

/* Removes the n oldest points (n <= count). */
void telem_series_ring_drop_oldest(telem_series_ring_t *r, uint32_t n);

/* Index of the first point with timestamp >= ts (count if none). */
uint32_t telem_series_ring_lower(const telem_series_ring_t *r, int64_t ts);

/* Index of the first point with timestamp > ts (count if none). */
uint32_t telem_series_ring_upper(const telem_series_ring_t *r, int64_t ts);

/* True when points [lo, lo + n) lie contiguously in memory. */
static inline int
telem_series_ring_contiguous(const telem_series_ring_t *r, uint32_t lo,
                             uint32_t n)
{
    return n == 0 || telem_series_ring_phys(r, lo) + (uint64_t) n <= r->cap;
}

/* Copies points [lo, lo + n) in time order into ts_out and val_out, which
 * must hold n elements each. */
void telem_series_ring_copy(const telem_series_ring_t *r, uint32_t lo,
                            uint32_t n, int64_t *ts_out, double *val_out);

#endif
