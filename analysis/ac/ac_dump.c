/* ac_dump.c - ac_dump(): a job's history into one dump file (ac_dump.h).
 *
 * One metric at a time: its series over the whole range from every node
 * (one ac_query; a cut reply is asked again in two halves of its range,
 * earlier half first, so each series' points arrive in time order), each
 * series' points gathered in an accumulator and written as a closed block
 * every AC_DUMP_BLOCK_POINTS points and at the end of the metric.  The
 * accumulators of one metric live in a small open-addressing table keyed
 * by node and canonical key; memory is bounded by one metric's series
 * times one block, not by the range.
 *
 * The catalog, metas and snapshots are ac_dump_main.c's. */
#include "ac_dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ac_dump_int.h"
#include "telem_block.h"
#include "telem_seg.h"
#include "telem_time.h"

#define S_SLICE_MIN_NS INT64_C(1000000)    /* below: write a cut reply */

typedef struct {
    char *node;
    char *key;                 /* canonical key, key_len bytes */
    uint32_t key_len;
    int counter;
    int64_t *ts;
    double *v;
    uint32_t n, cap;
    uint64_t written;          /* points written: the next first_seq */
} s_acc_t;

typedef struct {
    ac__dump_t *d;
    s_acc_t *slots;            /* open addressing, size a power of two */
    size_t size, used;
} s_table_t;

/* ---- canonical keys ------------------------------------------------------ */

/* "metric\0k1\0v1\0..." of s (its tags are sorted by key) into a malloc'd
 * buffer; NULL when out of memory. */
static char *
s_key(const telem_series_t *s, uint32_t *len)
{
    size_t n = strlen(s->metric) + 1;
    for (uint32_t t = 0; t < s->ntags; t++)
        n += strlen(s->tags[t].key) + strlen(s->tags[t].value) + 2;
    char *k = malloc(n), *p = k;
    if (!k)
        return NULL;
    p = stpcpy(p, s->metric) + 1;
    for (uint32_t t = 0; t < s->ntags; t++) {
        p = stpcpy(p, s->tags[t].key) + 1;
        p = stpcpy(p, s->tags[t].value) + 1;
    }
    *len = (uint32_t) n;
    return k;
}

static uint64_t
s_hash(const char *node, const char *key, uint32_t len)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (const char *p = node; *p; p++)
        h = (h ^ (unsigned char) *p) * UINT64_C(1099511628211);
    h = (h ^ 0xff) * UINT64_C(1099511628211);
    for (uint32_t i = 0; i < len; i++)
        h = (h ^ (unsigned char) key[i]) * UINT64_C(1099511628211);
    return h;
}

/* ---- the accumulators ------------------------------------------------------ */

/* Writes acc's points as one closed block. */
static int
s_write(s_table_t *t, s_acc_t *a)
{
    if (a->n == 0)
        return 0;
    unsigned char *block = NULL;
    size_t len = 0;
    int rc = telem_block_encode(a->ts, a->v, a->n, NULL, &block, &len);
    if (rc == 0) {
        telem_chunk_t c = { .key = a->key, .key_len = a->key_len,
                            .metric = a->key, .counter = a->counter,
                            .first_seq = a->written, .block = block,
                            .block_len = len, .closed = 1 };
        rc = telem_dump_put_chunk(t->d->dump, a->node, &c);
    }
    if (rc == 0) {
        t->d->st.blocks++;
        t->d->st.block_bytes += len;
        t->d->st.points += a->n;
        if (a->written == 0)
            t->d->st.series++;
        a->written += a->n;
        a->n = 0;
    }
    free(block);
    return rc;
}

static void
s_table_clear(s_table_t *t)
{
    for (size_t i = 0; i < t->size; i++) {
        free(t->slots[i].node);
        free(t->slots[i].key);
        free(t->slots[i].ts);
        free(t->slots[i].v);
    }
    free(t->slots);
    t->slots = NULL;
    t->size = t->used = 0;
}

/* Writes every accumulator's rest, then empties the table. */
static int
s_table_flush(s_table_t *t)
{
    int rc = 0;
    for (size_t i = 0; i < t->size && rc == 0; i++)
        if (t->slots[i].key)
            rc = s_write(t, &t->slots[i]);
    s_table_clear(t);
    return rc;
}

static int
s_table_grow(s_table_t *t)
{
    size_t size = t->size ? t->size * 2 : 64;
    s_acc_t *slots = calloc(size, sizeof *slots);
    if (!slots)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < t->size; i++) {
        s_acc_t *a = &t->slots[i];
        if (!a->key)
            continue;
        size_t j = s_hash(a->node, a->key, a->key_len) & (size_t) (size - 1);
        while (slots[j].key)
            j = (j + 1) & (size - 1);
        slots[j] = *a;
    }
    free(t->slots);
    t->slots = slots;
    t->size = size;
    return 0;
}

/* The accumulator of (node, key), made when new (takes *key_p then). */
static s_acc_t *
s_table_get(s_table_t *t, const char *node, char **key_p, uint32_t len,
            int counter)
{
    if ((t->used + 1) * 2 > t->size && s_table_grow(t))
        return NULL;
    size_t j = s_hash(node, *key_p, len) & (t->size - 1);
    for (; t->slots[j].key; j = (j + 1) & (t->size - 1)) {
        s_acc_t *a = &t->slots[j];
        if (a->key_len == len && memcmp(a->key, *key_p, len) == 0
            && strcmp(a->node, node) == 0)
            return a;
    }
    s_acc_t *a = &t->slots[j];
    if (!(a->node = strdup(node)))
        return NULL;
    a->key = *key_p;
    *key_p = NULL;
    a->key_len = len;
    a->counter = counter;
    t->used++;
    return a;
}

static int
s_append(s_table_t *t, s_acc_t *a, int64_t ts, double v)
{
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 16;
        cap = cap > AC_DUMP_BLOCK_POINTS ? AC_DUMP_BLOCK_POINTS : cap;
        int64_t *nts = realloc(a->ts, cap * sizeof *nts);
        if (nts)
            a->ts = nts;
        double *nv = nts ? realloc(a->v, cap * sizeof *nv) : NULL;
        if (!nv)
            return TELEM_ENOMEM;
        a->v = nv;
        a->cap = cap;
    }
    /* A point older than the last one kept (a late point the node
     * filed after an earlier page was asked) ends the block first. */
    if (a->n && ts < a->ts[a->n - 1]) {
        int rc = s_write(t, a);
        if (rc)
            return rc;
    }
    a->ts[a->n] = ts;
    a->v[a->n++] = v;
    return a->n == AC_DUMP_BLOCK_POINTS ? s_write(t, a) : 0;
}

static int
s_absorb(s_table_t *t, const ac_result_t *r)
{
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        if (s->npoints == 0)
            continue;
        uint32_t len = 0;
        char *key = s_key(s, &len);
        s_acc_t *a = key ? s_table_get(t, ac_result_series_node(r, i), &key,
                                       len, s->type == TELEM_METRIC_COUNTER)
                         : NULL;
        free(key);
        if (!a)
            return TELEM_ENOMEM;
        for (uint32_t p = 0; p < s->npoints; p++) {
            int rc = s_append(t, a, s->ts[p], s->values[p]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---- paging -------------------------------------------------------------- */

/* Fetches `metric` over [start, end] into the table, halving cut ranges. */
static int
s_range(s_table_t *t, const char *metric, int64_t start, int64_t end)
{
    ac__dump_t *d = t->d;
    ac_query_t q = d->q;
    q.metrics = &metric;
    q.nmetrics = 1;
    q.start_ns = start;
    q.end_ns = end;
    ac_result_t *r = NULL;
    int rc = ac_query(d->ac, &q, &r);
    d->st.queries++;
    if (!r)
        return ac__dump_fail(d, rc, "a query was refused");
    if (ac_result_ntruncated(r) && end - start >= S_SLICE_MIN_NS) {
        ac_result_destroy(&r);
        int64_t mid = start + (end - start) / 2;
        rc = s_range(t, metric, start, mid);
        return rc ? rc : s_range(t, metric, mid + 1, end);
    }
    d->st.cut += ac_result_ntruncated(r) ? 1 : 0;
    ac__dump_note_missing(d, r);
    rc = s_absorb(t, r);
    ac_result_destroy(&r);
    if (d->o.progress)
        d->o.progress(d->o.progress_arg, &d->st);
    return rc ? ac__dump_fail(d, rc, "writing the dump") : 0;
}

int
ac__dump_series(ac__dump_t *d, const char *const *metrics, size_t n)
{
    s_table_t t = { .d = d };
    int rc = 0;
    d->st.nmetrics = n;
    for (size_t i = 0; i < n && rc == 0; i++) {
        d->st.metric = metrics[i];
        d->st.metric_index = i;
        rc = s_range(&t, metrics[i], d->start_ns, d->end_ns);
        int frc = s_table_flush(&t);
        if (rc == 0 && frc)
            rc = ac__dump_fail(d, frc, "writing the dump");
    }
    s_table_clear(&t);
    d->st.metric = NULL;
    return rc;
}
