/* telem_store_int.h - PRIVATE to the store (runtime/store/telem_store*.c); nothing
 * else includes it.  telem_store.h is the public API.
 *
 * The store is split by responsibility:
 *   telem_store.c        life cycle, metric entries and series, appends
 *                        (one by one and many at a time), counter series,
 *                        expiry, metas, counters
 *   telem_store_blocks.c a series' points: the open block, closed
 *                        blocks end to end, sealing, expiry, eviction,
 *                        decoding for queries
 *   telem_store_query.c  walking the series that match a query
 *   telem_store_log.c    flush, load and meta walk for the flush log
 *   telem_series.c       the building blocks: key index, tag sets
 * Internal names carry the tstore_ prefix (s_ stays for file statics).
 *
 * A metric entry holds the metric's meta and a list of its series; the
 * metric entries form a list too.  A series lives in one allocation: the
 * struct, its tags (pointing into the key) and its canonical key
 * "metric\0k1\0v1\0...".  Both are found through hash indexes whose slots
 * point at their first member (the key).
 */
#ifndef TELEM_STORE_INT_H
#define TELEM_STORE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "telem_block.h"
#include "telem_series.h"
#include "telem_store.h"

typedef struct tstore_metric tstore_metric_t;
typedef struct tstore_series tstore_series_t;

/* One closed block of a series: where it lies in the series' buffer and
 * its sequence numbers (its times are read from its header). */
typedef struct {
    uint64_t first_seq;
    uint32_t off;           /* offset in tstore_points_t.buf */
    uint16_t npoints;
    uint8_t flushed;        /* handed to a flush (or loaded) */
    uint8_t sealed;         /* in its best encodings (else as the open
                               block wrote it: sealed at expire/flush) */
} tstore_block_t;

/* A series' points: closed blocks laid end to end in one buffer, and the
 * open block (a telem_block_writer_t, made at the first point). */
typedef struct {
    unsigned char *buf;     /* closed blocks, end to end */
    size_t len, cap;
    tstore_block_t *blk;    /* their index, in sequence order */
    uint32_t nblk, blk_cap;
    telem_block_writer_t *w;    /* the open block, or NULL */
    size_t w_mem;           /* telem_block_writer_mem(w), as accounted */
    uint64_t open_seq;      /* sequence number of the open block's first */
    uint64_t next_seq;      /* of the next point accepted */
    uint64_t npoints;       /* closed and open */
    int64_t exp_ts;         /* last time of the first closed block
                               (INT64_MAX without one): expiry's test */
    int64_t max_last;       /* newest time among closed blocks */
    int64_t open_first;     /* oldest time in the open block (INT64_MAX
                               when empty) */
    bool open_flushed;      /* a version of the open block was flushed */
    bool open_dirty;        /* it changed since (or was never flushed) */
    bool overlap;           /* blocks may overlap in time: merge */
    bool unsealed;          /* some closed block is not sealed */
} tstore_points_t;

struct tstore_series {
    telem_series_key_t key;           /* first member: tables point here */
    tstore_series_t *prev, *next;     /* in the metric's list */
    tstore_metric_t *metric;
    tstore_points_t pts;
    int64_t last_ts;        /* newest timestamp ever stored */
    double total;           /* counter series: the running total */
    bool counter;           /* made by telem_store_counter_add() */
    size_t bytes;           /* this allocation, as accounted */
    uint32_t ntags;
    telem_tag_t tags[];     /* then the key bytes */
};

struct tstore_metric {
    telem_series_key_t key;           /* first member: the name */
    tstore_metric_t *prev, *next;
    tstore_series_t *series;
    uint32_t nseries;
    bool has_meta;
    telem_meta_t meta;
    char *meta_strings;     /* "unit\0doc\0" */
    size_t meta_bytes;
    size_t bytes;
    char name[];
};

struct telem_store_tags {
    telem_series_tags_t set;
};

struct telem_store {
    telem_store_config_t cfg;
    telem_series_index_t series_tab;
    telem_series_index_t metric_tab;
    tstore_metric_t *metrics;
    uint64_t nseries, npoints, mem;
    uint64_t ncounters;     /* counter series among nseries */
    uint64_t appended, dropped, expired, evicted;
    uint64_t loaded, stale;
    telem_block_opts_t wopts;       /* of the open blocks */
    size_t w_base;                  /* bytes of an empty writer */
    int64_t *q_ts;          /* query scratch: decoded points */
    double *q_val;
    size_t q_cap;
    int64_t *o_ts;          /* scratch of rebuilds and sealing */
    double *o_val;
    size_t o_cap;
    unsigned char *o_buf;   /* scratch of snapshots of open blocks */
    size_t o_buf_cap;
    telem_block_writer_t *o_w;      /* scratch writer of rebuilds */
    tstore_series_t *hot;           /* series of the last append, or NULL */
    telem_series_tags_t scratch;    /* tags of telem_store_append */
};

/* Hash of a metric name with its NUL: the first part of its series keys,
 * and the key of its metric entry. */
static inline uint64_t
tstore_metric_hash(const char *name, uint32_t len)
{
    return telem_series_hash(name, (size_t) len + 1);
}

static inline tstore_metric_t *
tstore_metric_find(const telem_store_t *self, const char *name, uint32_t len,
                   uint64_t hash)
{
    return (tstore_metric_t *) telem_series_index_find(&self->metric_tab,
                                                       hash, name, len, "",
                                                       0);
}

/* a - b without overflow, for b > 0. */
static inline int64_t
tstore_sub_sat(int64_t a, int64_t b)
{
    return a < INT64_MIN + b ? INT64_MIN : a - b;
}

/* Oldest timestamp inside the retention window as of now_ns. */
static inline int64_t
tstore_horizon(const telem_store_t *self, int64_t now_ns)
{
    return tstore_sub_sat(now_ns, self->cfg.window_ns);
}

/* --- telem_store_blocks.c: a series' points ------------------------------ */

/* Adds one point to s (its series' caps, eviction, closing a full open
 * block, the memory cap); counts appended, evicted, dropped, npoints.
 * Returns 0, TELEM_EFULL or TELEM_ENOMEM. */
int tstore_points_put(telem_store_t *self, tstore_series_t *s, int64_t ts,
                      double value);

/* Drops what is older than horizon: whole closed blocks, and points of an
 * open block never flushed (one flushed is closed instead).  Returns the
 * points removed (counted in expired). */
uint64_t tstore_points_expire(telem_store_t *self, tstore_series_t *s,
                              int64_t horizon);

/* Re-codes up to `budget` points of unsealed closed blocks in their best
 * encodings; returns the points sealed. */
uint64_t tstore_points_seal(telem_store_t *self, tstore_series_t *s,
                            uint64_t budget);

/* Gives back spare buffer capacity. */
void tstore_points_shrink(telem_store_t *self, tstore_series_t *s);

/* Frees the points of s, adjusting mem and npoints. */
void tstore_points_release(telem_store_t *self, tstore_series_t *s);

/* Frees without accounting (store destruction). */
void tstore_points_free(tstore_points_t *p);

/* First and last time of closed block i (header read, no checksum). */
void tstore_block_times(const tstore_points_t *p, uint32_t i, int64_t *first,
                        int64_t *last);

/* Size in bytes of closed block i. */
size_t tstore_block_size(const tstore_points_t *p, uint32_t i);

/* Writes the open block (at least one point) as a block into the store's
 * snapshot scratch: *buf, *len.  Returns 0 or TELEM_ENOMEM. */
int tstore_open_snapshot(telem_store_t *self, const tstore_series_t *s,
                         const unsigned char **buf, size_t *len);

/* Makes room for n points in the query scratch.  0 or TELEM_ENOMEM. */
int tstore_query_room(telem_store_t *self, size_t n);

/* Makes room for n points in the rebuild scratch.  0 or TELEM_ENOMEM. */
int tstore_scratch_room(telem_store_t *self, size_t n);

/* Appends a closed block (bytes copied verbatim, already checked) with
 * first_seq after the others; flushed and sealed as given.  Returns 0,
 * TELEM_EFULL or TELEM_ENOMEM. */
int tstore_points_add_block(telem_store_t *self, tstore_series_t *s,
                            const void *block, size_t len,
                            const telem_block_info_t *info,
                            uint64_t first_seq, bool flushed, bool sealed);

/* Replaces the bytes of closed block i with block[0..len).  Returns 0,
 * TELEM_EFULL or TELEM_ENOMEM. */
int tstore_points_replace_block(telem_store_t *self, tstore_series_t *s,
                                uint32_t i, const void *block, size_t len,
                                const telem_block_info_t *info);

/* Replaces the open block with ts[0..n), val[0..n) (time order; n may be
 * 0) numbered from first_seq.  Returns 0, TELEM_EFULL or TELEM_ENOMEM. */
int tstore_points_set_open(telem_store_t *self, tstore_series_t *s,
                           const int64_t *ts, const double *val, uint32_t n,
                           uint64_t first_seq);

/* Closes the open block (if it holds points) into a closed block.
 * Returns 0, TELEM_EFULL or TELEM_ENOMEM. */
int tstore_points_close(telem_store_t *self, tstore_series_t *s);

/* --- telem_store.c, for telem_store_log.c ------------------------------- */

/* Finds or makes the series of metric (mlen bytes) and a canonical tag
 * set.  Returns 0, TELEM_EFULL or TELEM_ENOMEM. */
int tstore_series_get(telem_store_t *self, const char *metric, uint32_t mlen,
                      const telem_series_tags_t *tags, tstore_series_t **out);

/* Marks s a counter series (respecting max_counter_series when it is not
 * one yet).  Returns 0 or TELEM_EFULL. */
int tstore_series_make_counter(telem_store_t *self, tstore_series_t *s);

#endif
