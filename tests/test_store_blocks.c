/* test_store_blocks.c - unit tests for the store's compressed blocks and
 * its flush log API: flush -> load round trips into a second store (late
 * points, duplicate timestamps, NaN/inf/-0.0, counters, versions of the
 * open block, stale chunks, closed blocks byte for byte), a randomized
 * differential test against arrays, malformed chunks given to
 * telem_store_load, and the memory cap with blocks.  No assertion depends
 * on timing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store_test.h"
#include "telem_block.h"

/* --- a flush sink that keeps copies of the chunks ----------------------- */

typedef struct {
    char key[256];
    uint32_t key_len;
    int counter;
    uint64_t first_seq;
    unsigned char *block;
    size_t block_len;
    int closed;
} chunk_copy_t;

typedef struct {
    chunk_copy_t c[4096];
    int n;
    int stop_at;            /* return 5 at this chunk (1-based); 0: never */
} sink_t;

static int
s_sink(void *arg, const telem_chunk_t *c)
{
    sink_t *k = arg;
    if (k->stop_at && k->n + 1 == k->stop_at)
        return 5;
    if (k->n == 4096 || c->key_len > sizeof k->c[0].key)
        return 6;
    chunk_copy_t *o = &k->c[k->n++];
    memcpy(o->key, c->key, c->key_len);
    o->key_len = c->key_len;
    o->counter = c->counter;
    o->first_seq = c->first_seq;
    o->block = malloc(c->block_len);
    memcpy(o->block, c->block, c->block_len);
    o->block_len = c->block_len;
    o->closed = c->closed;
    return 0;
}

static void
s_sink_free(sink_t *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->c[i].block);
    k->n = 0;
}

static int
s_load_all(telem_store_t *st, const sink_t *k, int64_t now)
{
    int bad = 0;
    for (int i = 0; i < k->n; i++) {
        const chunk_copy_t *o = &k->c[i];
        telem_chunk_t c = { .key = o->key, .key_len = o->key_len,
                            .counter = o->counter, .first_seq = o->first_seq,
                            .block = o->block, .block_len = o->block_len,
                            .closed = o->closed };
        bad += telem_store_load(st, &c, now) != 0;
    }
    return bad;
}

/* Same answers from both stores for a query of everything. */
static int
s_same_answers(telem_store_t *a, telem_store_t *b, int64_t now)
{
    capture_t *x = calloc(1, sizeof *x), *y = calloc(1, sizeof *y);
    telem_store_query_t q = { 0 };
    int same = s_query(a, &q, now, x) == 0 && s_query(b, &q, now, y) == 0
               && x->n == y->n;
    for (int i = 0; same && i < x->n; i++) {
        const cap_series_t *p = &x->s[i];
        const cap_series_t *r = s_capture_find(y, p->metric, p->tags);
        same = r && r->npoints == p->npoints
               && memcmp(p->ts, r->ts, p->npoints * sizeof *p->ts) == 0
               && memcmp(p->values, r->values,
                         p->npoints * sizeof *p->values) == 0;
    }
    s_capture_reset(x);
    s_capture_reset(y);
    free(x);
    free(y);
    return same;
}

/* --- round trips -------------------------------------------------------- */

static void
test_round_trip(void)
{
    const int64_t now = 10000 * SEC;
    telem_store_t *a = s_store_b(3600 * SEC, 0, 0, 0, 16);
    telem_tag_t t[] = { { "host", "n1" }, { "gpu", "0" } };
    const double odd[] = { NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-310 };
    int bad = 0;
    for (int i = 0; i < 100; i++) {
        int64_t ts = now - 1000 * SEC + i * SEC;
        bad += telem_store_append(a, "g", t, 2, ts, odd[i % 6], now) != 0;
        bad += telem_store_append(a, "dup", NULL, 0, now - 500 * SEC + i / 3,
                                  i, now) != 0;
        if (i % 10 == 9)    /* late, below closed blocks too */
            bad += telem_store_append(a, "g", t, 2, ts - 40 * SEC, i, now)
                   != 0;
        bad += telem_store_counter_add(a, "c", NULL, 0, ts, 1.5, now) != 0;
    }
    CHECK(bad == 0);
    sink_t *k = calloc(1, sizeof *k);
    CHECK(telem_store_flush(a, s_sink, k) == 0);
    /* Nothing new: a second flush hands out nothing. */
    int had = k->n;
    CHECK(telem_store_flush(a, s_sink, k) == 0 && k->n == had);
    telem_store_t *b = s_store_b(3600 * SEC, 0, 0, 0, 16);
    CHECK(s_load_all(b, k, now) == 0);
    CHECK(s_same_answers(a, b, now));
    telem_store_stats_t s;
    telem_store_stats(b, &s);
    CHECK(s.loaded == 100 * 3 + 10 && s.stale == 0 && s.ncounters == 1);
    /* Loading again: every chunk is a version or stale; same answers. */
    CHECK(s_load_all(b, k, now) == 0);
    CHECK(s_same_answers(a, b, now));
    /* Closed blocks are kept byte for byte: b flushes nothing (all loaded
     * counts as flushed) until it changes; a's closed blocks re-flushed
     * from b after a new point are equal. */
    sink_t *k2 = calloc(1, sizeof *k2);
    CHECK(telem_store_flush(b, s_sink, k2) == 0 && k2->n == 0);
    /* The counter goes on from its total. */
    CHECK(telem_store_counter_add(b, "c", NULL, 0, now, 1.5, now) == 0);
    capture_t c = { 0 };
    const char *names[] = { "c" };
    telem_store_query_t q = { .metrics = names, .nmetrics = 1,
                              .flags = TELEM_QUERY_LATEST };
    CHECK(s_query(b, &q, now, &c) == 0 && c.n == 1
          && c.s[0].values[0] == 101 * 1.5);
    /* A third store from a's chunks and then b's new ones. */
    CHECK(telem_store_flush(b, s_sink, k2) == 0 && k2->n == 1
          && k2->c[0].closed == 0);
    s_sink_free(k2);
    /* Every closed chunk a gave equals the bytes of the same block in a
     * flush of a fresh store loaded from it and changed nowhere else. */
    int closed = 0;
    for (int i = 0; i < k->n; i++)
        closed += k->c[i].closed;
    CHECK(closed > 10);
    s_sink_free(k);
    free(k);
    free(k2);
    s_done(&a, NULL);
    s_done(&b, &c);
}

/* Versions of the open block replace each other; stale chunks are
 * skipped and counted; closed blocks come back byte for byte. */
static void
test_versions_stale(void)
{
    const int64_t now = 10000 * SEC;
    telem_store_t *a = s_store_b(3600 * SEC, 0, 0, 0, 8);
    sink_t *k = calloc(1, sizeof *k);
    for (int i = 0; i < 5; i++)
        CHECK(telem_store_append(a, "m", NULL, 0, now - 100 * SEC + i * SEC,
                                 i, now) == 0);
    CHECK(telem_store_flush(a, s_sink, k) == 0 && k->n == 1);
    CHECK(k->c[0].closed == 0 && k->c[0].first_seq == 0);
    for (int i = 5; i < 12; i++)
        CHECK(telem_store_append(a, "m", NULL, 0, now - 100 * SEC + i * SEC,
                                 i, now) == 0);
    /* A late point into the open block. */
    CHECK(telem_store_append(a, "m", NULL, 0, now - 95 * SEC + 1, -1, now)
          == 0);
    CHECK(telem_store_flush(a, s_sink, k) == 0);
    /* 8 points closed (seq 0..7, same first_seq as the open version),
     * then the open block from 8. */
    CHECK(k->n == 3 && k->c[1].closed == 1 && k->c[1].first_seq == 0);
    CHECK(k->c[2].closed == 0 && k->c[2].first_seq == 8);
    telem_store_t *b = s_store_b(3600 * SEC, 0, 0, 0, 8);
    CHECK(s_load_all(b, k, now) == 0);
    CHECK(s_same_answers(a, b, now));
    /* The old open version again (first_seq 0) is now a version of a
     * closed block: it replaces it... so load only the stale-making ones:
     * a block wholly below the newest block's start is stale. */
    telem_store_stats_t s;
    telem_store_stats(b, &s);
    uint64_t loaded = s.loaded;
    telem_chunk_t c = { .key = k->c[2].key, .key_len = k->c[2].key_len,
                        .first_seq = 3, .block = k->c[0].block,
                        .block_len = k->c[0].block_len, .closed = 1 };
    CHECK(telem_store_load(b, &c, now) == 0);
    telem_store_stats(b, &s);
    CHECK(s.stale == 1 && s.loaded == loaded);
    CHECK(s_same_answers(a, b, now));
    /* The closed block, flushed from b after loading (it counts as
     * flushed: nothing) and from a fresh store given only that chunk and
     * a new version of the open block: byte for byte the same. */
    sink_t *k2 = calloc(1, sizeof *k2);
    CHECK(telem_store_flush(b, s_sink, k2) == 0 && k2->n == 0);
    CHECK(telem_store_append(b, "m", NULL, 0, now - 10 * SEC, 9, now) == 0);
    for (int i = 0; i < 10; i++)
        CHECK(telem_store_append(b, "m", NULL, 0, now - 9 * SEC + i, i, now)
              == 0);
    CHECK(telem_store_flush(b, s_sink, k2) == 0 && k2->n >= 1);
    /* b closed the loaded open block (seq 8..): a closed version of it. */
    CHECK(k2->c[0].closed == 1 && k2->c[0].first_seq == 8);
    s_sink_free(k2);
    free(k2);
    s_sink_free(k);
    free(k);
    s_done(&a, NULL);
    s_done(&b, NULL);
}

/* Closed blocks loaded are kept verbatim: flushing them out of a store
 * that loaded them (after marking nothing flushed is impossible, so via
 * a store that closes the same points) gives the same bytes. */
static void
test_verbatim(void)
{
    const int64_t now = 10000 * SEC;
    telem_store_t *a = s_store_b(3600 * SEC, 0, 0, 0, 32);
    for (int i = 0; i < 100; i++)
        CHECK(telem_store_append(a, "v", NULL, 0, now - 200 * SEC + i * SEC,
                                 i * 0.25, now) == 0);
    sink_t *k = calloc(1, sizeof *k), *k2 = calloc(1, sizeof *k2);
    CHECK(telem_store_flush(a, s_sink, k) == 0 && k->n == 4);
    telem_store_t *b = s_store_b(3600 * SEC, 0, 0, 0, 32);
    CHECK(s_load_all(b, k, now) == 0);
    /* The loaded blocks are b's: a query decodes them, and the bytes
     * the log would get again (a version after a change) are the same. */
    CHECK(s_same_answers(a, b, now));
    for (int i = 0; i < 3; i++) {
        telem_block_info_t info;
        CHECK(k->c[i].closed == 1);
        CHECK(telem_block_info(k->c[i].block, k->c[i].block_len, &info) == 0
              && info.npoints == 32);
    }
    /* Reload into b once more: each closed chunk replaces its own bytes
     * with equal bytes; answers stay. */
    CHECK(s_load_all(b, k, now) == 0);
    CHECK(s_same_answers(a, b, now));
    s_sink_free(k);
    s_sink_free(k2);
    free(k);
    free(k2);
    s_done(&a, NULL);
    s_done(&b, NULL);
}

/* A flush stopped by its callback goes on where it stopped. */
static void
test_flush_stop(void)
{
    const int64_t now = 10000 * SEC;
    telem_store_t *a = s_store_b(3600 * SEC, 0, 0, 0, 4);
    for (int i = 0; i < 20; i++)
        CHECK(telem_store_append(a, "m", NULL, 0, now - 100 * SEC + i, i, now)
              == 0);
    sink_t *k = calloc(1, sizeof *k);
    k->stop_at = 3;
    CHECK(telem_store_flush(a, s_sink, k) == 5 && k->n == 2);
    k->stop_at = 0;
    CHECK(telem_store_flush(a, s_sink, k) == 0 && k->n == 5);
    for (int i = 0; i < 5; i++)
        CHECK(k->c[i].first_seq == (uint64_t) i * 4);
    telem_store_t *b = s_store_b(3600 * SEC, 0, 0, 0, 4);
    CHECK(s_load_all(b, k, now) == 0);
    CHECK(s_same_answers(a, b, now));
    CHECK(telem_store_flush(a, NULL, k) == TELEM_EINVAL);
    s_sink_free(k);
    free(k);
    s_done(&a, NULL);
    s_done(&b, NULL);
}

/* --- differential test against arrays ----------------------------------- */

typedef struct {
    int64_t ts;
    double v;
    uint64_t seq;
} mpt_t;

static int
s_cmp_mpt(const void *a, const void *b)
{
    const mpt_t *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint32_t
s_rand(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t) (*seed >> 33);
}

/* Compares a query of [start, end] (0: defaults) with max_points/LATEST
 * against the model. */
static int
s_check_query(telem_store_t *st, const mpt_t *m, uint32_t n, int64_t now,
              int64_t window, int64_t start, int64_t end, uint32_t maxp,
              uint32_t flags, capture_t *c)
{
    telem_store_query_t q = { .start_ns = start, .end_ns = end,
                              .max_points = maxp, .flags = flags };
    int64_t lo = start && start > now - window ? start : now - window;
    int64_t hi = end ? end : now;
    uint32_t first = 0, cnt = 0;
    for (uint32_t i = 0; i < n; i++)
        if (m[i].ts >= lo && m[i].ts <= hi) {
            if (cnt == 0)
                first = i;
            cnt++;
        }
    uint32_t keep = flags & TELEM_QUERY_LATEST ? 1 : maxp;
    if (keep && cnt > keep) {
        first += cnt - keep;
        cnt = keep;
    }
    if (s_query(st, &q, now, c) != 0)
        return 1;
    if (cnt == 0)
        return c->n != 0;
    if (c->n != 1 || c->s[0].npoints != cnt)
        return 1;
    for (uint32_t k = 0; k < cnt; k++)
        if (c->s[0].ts[k] != m[first + k].ts
            || c->s[0].values[k] != m[first + k].v)
            return 1;
    return 0;
}

static void
test_differential(void)
{
    enum { STEPS = 30000, MAXM = STEPS };
    const int64_t window = 5000;
    uint32_t blocks[] = { 1, 7, 120 };
    for (int b = 0; b < 3; b++) {
        telem_store_t *st = s_store_b(window, 0, 0, 0, blocks[b]);
        mpt_t *m = malloc(MAXM * sizeof *m);
        uint32_t n = 0;
        uint64_t seed = 777 + (uint64_t) b, seq = 0;
        int64_t now = 100000;
        capture_t c = { 0 };
        int bad = 0;
        for (int step = 0; step < STEPS; step++) {
            uint32_t r = s_rand(&seed);
            now += r % 4;
            int64_t ts = r % 10 < 8 ? now : now - (int64_t) (r % 3000);
            if (r % 13 == 0 && n)
                ts = m[n - 1].ts;               /* duplicate time */
            double v = (double) (seq + 1) * (r % 5 ? 1 : -0.5);
            bad += telem_store_append(st, "m", NULL, 0, ts, v, now) != 0;
            if (ts >= now - window) {
                mpt_t x = { ts, v, seq++ };
                uint32_t at = n;
                while (at > 0 && s_cmp_mpt(&m[at - 1], &x) > 0)
                    at--;
                memmove(m + at + 1, m + at, (n - at) * sizeof *m);
                m[at] = x;
                n++;
            }
            uint32_t keep = 0;     /* the model drops what the window left */
            for (uint32_t i = 0; i < n; i++)
                if (m[i].ts >= now - window)
                    m[keep++] = m[i];
            n = keep;
            if (step % 11 == 0)
                telem_store_expire(st, now);
            if (step % 97 == 0) {
                sink_t *k = calloc(1, sizeof *k);
                bad += telem_store_flush(st, s_sink, k) != 0;
                s_sink_free(k);
                free(k);
            }
            if (step % 5 == 0)
                bad += s_check_query(st, m, n, now, window, 0, 0, 0, 0, &c);
            if (step % 17 == 0) {
                int64_t a = now - (int64_t) (s_rand(&seed) % 6000);
                int64_t z = a + (int64_t) (s_rand(&seed) % 3000);
                bad += s_check_query(st, m, n, now, window, a, z,
                                     s_rand(&seed) % 50, 0, &c);
                bad += s_check_query(st, m, n, now, window, a, z, 0,
                                     TELEM_QUERY_LATEST, &c);
            }
        }
        CHECK(bad == 0);
        telem_store_stats_t s;
        telem_store_stats(st, &s);
        CHECK(s.npoints >= n && s.dropped == STEPS - s.appended);
        free(m);
        s_done(&st, &c);
    }
}

/* --- malformed chunks --------------------------------------------------- */

static void
test_malformed(void)
{
    const int64_t now = 10000 * SEC;
    telem_store_t *a = s_store_b(3600 * SEC, 0, 0, 0, 16);
    telem_tag_t t[] = { { "host", "n1" } };
    for (int i = 0; i < 40; i++)
        CHECK(telem_store_append(a, "m", t, 1, now - 100 * SEC + i * SEC,
                                 i * 1.5, now) == 0);
    sink_t *k = calloc(1, sizeof *k);
    CHECK(telem_store_flush(a, s_sink, k) == 0 && k->n == 3);
    chunk_copy_t *o = &k->c[0];
    telem_store_t *b = s_store_b(3600 * SEC, 0, 0, 0, 16);
    telem_chunk_t c = { .key = o->key, .key_len = o->key_len,
                        .block = o->block, .block_len = o->block_len,
                        .closed = 1 };
    CHECK(telem_store_load(NULL, &c, now) == TELEM_EINVAL);
    CHECK(telem_store_load(b, NULL, now) == TELEM_EINVAL);
    /* Bad keys. */
    const struct { const char *k; uint32_t len; } keys[] = {
        { "m", 1 },                      /* no NUL */
        { "\0", 1 },                     /* empty metric */
        { "m\0host\0", 7 },              /* a key without value */
        { "m\0\0v\0", 5 },               /* empty tag key */
        { "m\0b\0x\0a\0y\0", 11 },       /* not sorted */
        { "m\0a\0x\0a\0y\0", 11 },       /* repeated */
        { "m\0host\0n1", 9 },            /* no final NUL */
        { "", 0 },
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        telem_chunk_t x = c;
        x.key = keys[i].k;
        x.key_len = keys[i].len;
        CHECK(telem_store_load(b, &x, now) == TELEM_EPROTO);
    }
    char big[600];
    memset(big, 'a', sizeof big);
    big[sizeof big - 1] = '\0';
    telem_chunk_t x = c;
    x.key = big;
    x.key_len = sizeof big;
    CHECK(telem_store_load(b, &x, now) == TELEM_EPROTO);
    /* Truncated, corrupt, missing blocks. */
    unsigned char *copy = malloc(o->block_len);
    int bad = 0;
    for (size_t cut = 0; cut < o->block_len; cut++) {
        x = c;
        x.block_len = cut;
        bad += telem_store_load(b, &x, now) == 0;
    }
    for (size_t i = 0; i < o->block_len * 8; i++) {
        memcpy(copy, o->block, o->block_len);
        copy[i / 8] ^= (unsigned char) (1u << (i % 8));
        x = c;
        x.block = copy;
        int rc = telem_store_load(b, &x, now);
        bad += rc != TELEM_EPROTO && rc != TELEM_EVERSION;
    }
    CHECK(bad == 0);
    x = c;
    x.block = NULL;
    CHECK(telem_store_load(b, &x, now) == TELEM_EPROTO);
    x = c;
    x.first_seq = UINT64_MAX - 2;
    CHECK(telem_store_load(b, &x, now) == TELEM_EPROTO);
    telem_store_stats_t s;
    telem_store_stats(b, &s);
    CHECK(s.npoints == 0 && s.loaded == 0);
    /* The good chunk still loads. */
    CHECK(telem_store_load(b, &c, now) == 0);
    free(copy);
    s_sink_free(k);
    free(k);
    s_done(&a, NULL);
    s_done(&b, NULL);
}

/* --- memory ------------------------------------------------------------- */

static void
test_mem_blocks(void)
{
    const size_t cap = 256 * 1024;
    const int64_t now = 100000 * SEC;
    telem_store_t *st = s_store_b(100000 * SEC, cap, 0, 0, 64);
    char v[32];
    telem_tag_t t[] = { { "id", v } };
    int full = 0;
    uint64_t seed = 5;
    for (int i = 0; i < 200000 && full < 100; i++) {
        snprintf(v, sizeof v, "%d", i % 50);
        int rc = telem_store_append(st, "m", t, 1, now - 90000 * SEC + i,
                                    (double) s_rand(&seed), now);
        CHECK(rc == 0 || rc == TELEM_EFULL);
        full += rc == TELEM_EFULL;
        telem_store_stats_t s;
        telem_store_stats(st, &s);
        if (s.mem_bytes > cap)
            full = 1000;
    }
    CHECK(full == 100);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.mem_bytes <= cap && s.npoints > 10000);
    /* Sealing gives memory back; expiring everything gives all back. */
    uint64_t before = s.mem_bytes;
    telem_store_expire(st, now);
    telem_store_stats(st, &s);
    CHECK(s.mem_bytes <= before);
    telem_store_expire(st, now + 300000 * SEC);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 0 && s.mem_bytes == 0 && s.npoints == 0);
    s_done(&st, NULL);

    /* Compressible points: far more of them than 16 bytes each allow. */
    st = s_store_b(100000 * SEC, cap, 0, 0, 120);
    int rc = 0, i;
    for (i = 0; i < 400000 && rc == 0; i++)
        rc = telem_store_append(st, "c", NULL, 0, now - 90000 * SEC + i * SEC,
                                i % 100, now);
    telem_store_expire(st, now);
    telem_store_stats(st, &s);
    CHECK(s.npoints > cap / 16 && s.mem_bytes <= cap);
    s_done(&st, NULL);
}

/* Eviction at max_points_per_series drops the oldest closed block. */
static void
test_evict_blocks(void)
{
    const int64_t now = 100000 * SEC;
    telem_store_t *st = s_store_b(100000 * SEC, 0, 0, 100, 10);
    for (int i = 0; i < 105; i++)
        CHECK(telem_store_append(st, "m", NULL, 0, now - 1000 + i, i, now)
              == 0);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.npoints <= 100 && s.npoints >= 90 && s.evicted == 105 - s.npoints);
    capture_t c = { 0 };
    telem_store_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 1
          && c.s[0].npoints == s.npoints);
    CHECK(c.s[0].values[c.s[0].npoints - 1] == 104);
    /* Older than everything: discarded, counted. */
    CHECK(telem_store_append(st, "m", NULL, 0, now - 5000, -1, now) == 0);
    telem_store_stats(st, &s);
    CHECK(s.npoints <= 100);
    s_done(&st, &c);
}

int
main(void)
{
    test_round_trip();
    test_versions_stale();
    test_verbatim();
    test_flush_stop();
    test_differential();
    test_malformed();
    test_mem_blocks();
    test_evict_blocks();
    return check_report("test_store_blocks");
}
