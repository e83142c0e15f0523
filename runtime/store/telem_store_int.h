/* telem_store_int.h - PRIVATE to the store (runtime/store/telem_store*.c); nothing
 * else includes it.  telem_store.h is the public API.
 *
 * The store is split by responsibility:
 *   telem_store.c        life cycle, metric entries and series, appends
 *                        (one by one and many at a time), counter series,
 *                        expiry, metas, counters
 *   telem_store_query.c  walking the series that match a query
 *   telem_series.c       the building blocks: key index, tag sets, rings
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

#include "telem_series.h"
#include "telem_store.h"

typedef struct tstore_metric tstore_metric_t;
typedef struct tstore_series tstore_series_t;

struct tstore_series {
    telem_series_key_t key;           /* first member: tables point here */
    tstore_series_t *prev, *next;     /* in the metric's list */
    tstore_metric_t *metric;
    telem_series_ring_t ring;
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
    int64_t *q_ts;          /* query scratch for ranges that wrap */
    double *q_val;
    size_t q_cap;
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

#endif
