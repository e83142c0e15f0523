/* telem_push.c - the push calls of telem.h: telem_counter_add() and
 * telem_gauge_set(), named in Prometheus syntax (telem_promname.h).
 *
 * A push travels like telem_add_data()'s samples: into the calling
 * thread's batch, to the sender thread, to telemd.  The name with its
 * labels is parsed once per batch, not once per call: the first push of a
 * name copies the text as given, the metric name and the labels (the
 * sample's tags) into the batch's arena and remembers where (the thread's
 * pushed-name cache: TAPI_PCACHE slots, two chosen by a hash of the text); a
 * later push of the same text only compares it with the copy and reuses
 * the name and tags.  A counter increment whose counter already has a
 * sample in the batch is added to that sample (its time becomes the
 * newest increment's, read from the coarse clock, a few ms): the node
 * total telemd keeps is the same, and a program that counts in a tight
 * loop sends one sample per counter per batch instead of one per call.
 * Gauges are not merged: every set is a point.
 *
 * Level: pushes are user metrics, level 1.  Exactness: increments are
 * added as doubles, so sums of integers stay exact below 2^53.
 *
 * Call order: this file calls telem.c through telem_int.h, never the
 * reverse.
 */
#include "telem.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_int.h"
#include "telem_promname.h"
#include "telem_proto.h"
#include "telem_time.h"

_Static_assert(TELEM_PROMNAME_LABELS <= TELEM_Q_TAGS_MAX,
               "a pushed name's labels must fit a sample's tags");
_Static_assert(2 * TELEM_PROMNAME_TEXT_MAX + 2 + 2 * TELEM_PROMNAME_LABELS
                   <= TELEM_Q_ARENA,
               "a pushed name of maximal size must fit an empty batch");


static inline int
s_is(const tapi_pname_t *e, const telem_qbatch_t *b, const char *text,
     size_t len, uint8_t kind)
{
    return e->gen == b->gen && e->len == len && e->sample < b->n
           && b->s[e->sample].kind == kind
           && memcmp(b->arena + e->text, text, len) == 0;
}

/* The cache entry of text in batch b with a sample of this kind, or
 * NULL. */
static tapi_pname_t *
s_lookup(tapi_pcache_t *pc, const telem_qbatch_t *b, const char *text,
         size_t len, uint8_t kind, uint64_t h)
{
    if (!b)
        return NULL;
    tapi_pname_t *e = &pc->slots[h & (TAPI_PCACHE - 1)];
    if (s_is(e, b, text, len, kind))
        return e;
    e = &pc->slots[(h >> 32) & (TAPI_PCACHE - 1)];
    return s_is(e, b, text, len, kind) ? e : NULL;
}

/* Where a new name of batch b goes: a slot of another batch (stale), else
 * the second, else the first is taken over. */
static tapi_pname_t *
s_slot_for(tapi_pcache_t *pc, const telem_qbatch_t *b, uint64_t h)
{
    tapi_pname_t *e1 = &pc->slots[h & (TAPI_PCACHE - 1)];
    tapi_pname_t *e2 = &pc->slots[(h >> 32) & (TAPI_PCACHE - 1)];
    return e1->gen != b->gen ? e1 : e2->gen != b->gen ? e2 : e1;
}

/* Realtime to a few ms (the coarse clock, no syscall): the time of a
 * merged increment, whose sample already has a precise one. */
static inline int64_t
s_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (int64_t) ts.tv_sec * TELEM_NS_PER_SEC + ts.tv_nsec;
}

/* First push of `text` into this batch: makes room (for the most a text
 * of this length can need: itself, the metric and the unescaped labels
 * with their NULs), parses it, copies the text, the metric and the labels
 * into the arena and remembers where.  Called locked; returns unlocked. */
static int
s_push_new(tapi_tbuf_t *tb, const char *text, size_t len, double value,
           uint8_t kind, uint64_t h)
{
    int rc;
    telem_qbatch_t *b = tapi_room(tb, 2 * len + 2 + 2 * TELEM_PROMNAME_LABELS,
                                  &rc);
    if (!b)
        return rc;
    telem_promname_t pn;
    if (telem_promname_parse(text, 0, &pn, NULL, 0) != 0) {
        tapi_unlock(tb, 0);
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    uint32_t at = tapi_put(b, text, len);
    telem_qsample_t *s = &b->s[b->n];
    s->name = tapi_put(b, pn.metric, strlen(pn.metric));
    s->tags = b->used;
    for (uint32_t i = 0; i < pn.nlabels; i++) {
        tapi_put(b, pn.labels[i].key, strlen(pn.labels[i].key));
        tapi_put(b, pn.labels[i].value, strlen(pn.labels[i].value));
    }
    s->ntags = (uint8_t) pn.nlabels;
    s->ts_ns = telem_now_ns();
    s->value = value;
    s->level = 1;
    s->kind = kind;
    *s_slot_for(tapi_pcache(tb), b, h) = (tapi_pname_t) { b->gen, at,
                                                         (uint32_t) len,
                                                         b->n };
    b->n++;
    tapi_unlock(tb, 1);
    return 0;
}

static int
s_push(const char *text, double value, uint8_t kind)
{
    tapi_tbuf_t *tb;
    int rc = tapi_begin(1, &tb);
    if (rc)
        return rc;
    size_t len = text ? strnlen(text, TELEM_PROMNAME_TEXT_MAX + 1) : 0;
    if (len == 0 || len > TELEM_PROMNAME_TEXT_MAX || !isfinite(value)
        || (kind == TELEM_SAMPLE_COUNTER_ADD && value < 0)) {
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    /* The two slots a text may take in the cache (two choices keep names
     * that collide in one slot from evicting each other) come from its
     * hash (telem_grow.h). */
    uint64_t h = telem_hash_text(text, len);
    if ((rc = tapi_lock(tb)) != 0)
        return rc;
    telem_qbatch_t *b = tapi_batch(tb);
    tapi_pname_t *e = s_lookup(tapi_pcache(tb), b, text, len, kind, h);
    if (e && kind == TELEM_SAMPLE_COUNTER_ADD) {
        telem_qsample_t *s = &b->s[e->sample];
        int64_t now = s_coarse_ns();
        s->value += value;
        if (now > s->ts_ns)
            s->ts_ns = now;
        tapi_unlock(tb, 1);
        return 0;
    }
    if (e && b->n < TELEM_Q_SAMPLES) {
        telem_qsample_t *s = &b->s[b->n++];
        *s = b->s[e->sample];
        s->value = value;
        s->ts_ns = telem_now_ns();
        tapi_unlock(tb, 1);
        return 0;
    }
    return s_push_new(tb, text, len, value, kind, h);
}

int
telem_counter_add(const char *name, double delta)
{
    return s_push(name, delta, TELEM_SAMPLE_COUNTER_ADD);
}

int
telem_gauge_set(const char *name, double value)
{
    return s_push(name, value, TELEM_SAMPLE_VALUE);
}
