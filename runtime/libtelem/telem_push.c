/* telem_push.c - the push calls of telem.h: telem_counter_add() and
 * telem_gauge_set(), named in Prometheus syntax (telem_promname.h).
 *
 * A push travels like telem_add_data()'s samples: into the calling
 * thread's batch, to the sender thread, to telemd.  The name with its
 * labels is parsed once per batch, not once per call: the first push of a
 * name copies the text as given, the metric name and the labels (the
 * sample's tags) into the batch's arena and remembers where (the thread's
 * pushed-name cache, TAPI_PCACHE names of the current batch); a later push
 * of the same text only compares it with the copy and reuses the name and
 * tags.  A counter increment whose counter already has a sample in the
 * batch is added to that sample (its time becomes the newest increment's):
 * the node total telemd keeps is the same, and a loop that counts in a
 * tight loop sends one sample per counter per batch instead of one per
 * call.  Gauges are not merged: every set is a point.
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

#include "telem_error.h"
#include "telem_int.h"
#include "telem_promname.h"
#include "telem_proto.h"
#include "telem_time.h"

_Static_assert(TELEM_PROMNAME_LABELS <= TELEM_Q_TAGS_MAX,
               "a pushed name's labels must fit a sample's tags");
_Static_assert(TELEM_PROMNAME_TEXT_MAX + 1
                   + sizeof(((telem_promname_t *) 0)->buf) <= TELEM_Q_ARENA,
               "a pushed name of maximal size must fit an empty batch");

/* The cached name of the batch that equals text (len bytes) and whose
 * sample has this kind, or NULL. */
static const tapi_pname_t *
s_lookup(const tapi_pcache_t *pc, const telem_qbatch_t *b, const char *text,
         size_t len, uint8_t kind)
{
    if (!b || pc->batch != b || pc->gen != b->gen)
        return NULL;
    for (uint32_t k = 0; k < pc->n; k++) {
        /* Newest first: a loop over a few names finds its own soon. */
        const tapi_pname_t *e
            = &pc->names[(pc->next + TAPI_PCACHE - 1 - k) % TAPI_PCACHE];
        if (e->len == len && b->s[e->sample].kind == kind
            && memcmp(b->arena + e->text, text, len) == 0)
            return e;
    }
    return NULL;
}

static void
s_remember(tapi_pcache_t *pc, const telem_qbatch_t *b, uint32_t text,
           uint32_t len, uint32_t sample)
{
    if (pc->batch != b || pc->gen != b->gen) {
        pc->batch = (telem_qbatch_t *) b;
        pc->gen = b->gen;
        pc->n = pc->next = 0;
    }
    pc->names[pc->next] = (tapi_pname_t) { text, len, sample };
    pc->next = (pc->next + 1) % TAPI_PCACHE;
    if (pc->n < TAPI_PCACHE)
        pc->n++;
}

/* Appends a sample that reuses the name and tags of sample `from`. */
static void
s_append_like(telem_qbatch_t *b, uint32_t from, double value, int64_t now)
{
    telem_qsample_t *s = &b->s[b->n++];
    *s = b->s[from];
    s->value = value;
    s->ts_ns = now;
}

/* First push of `text` into this batch: parses it, makes room, copies the
 * text, the metric and the labels into the arena.  Called locked; returns
 * unlocked. */
static int
s_push_new(tapi_tbuf_t *tb, const char *text, size_t len, double value,
           uint8_t kind, int64_t now)
{
    telem_promname_t pn;
    int rc;
    if (telem_promname_parse(text, 0, &pn, NULL, 0) != 0) {
        tapi_unlock(tb, 0);
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    telem_qbatch_t *b = tapi_room(tb, len + 1 + pn.bytes, &rc);
    if (!b)
        return rc;
    uint32_t at = tapi_put(b, text, len);
    telem_qsample_t *s = &b->s[b->n];
    s->name = tapi_put(b, pn.metric, strlen(pn.metric));
    s->tags = b->used;
    for (uint32_t i = 0; i < pn.nlabels; i++) {
        tapi_put(b, pn.labels[i].key, strlen(pn.labels[i].key));
        tapi_put(b, pn.labels[i].value, strlen(pn.labels[i].value));
    }
    s->ntags = (uint8_t) pn.nlabels;
    s->ts_ns = now;
    s->value = value;
    s->level = 1;
    s->kind = kind;
    s_remember(tapi_pcache(tb), b, at, (uint32_t) len, b->n);
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
    int64_t now = telem_now_ns();
    if ((rc = tapi_lock(tb)) != 0)
        return rc;
    telem_qbatch_t *b = tapi_batch(tb);
    const tapi_pname_t *e = s_lookup(tapi_pcache(tb), b, text, len, kind);
    if (e && kind == TELEM_SAMPLE_COUNTER_ADD) {
        telem_qsample_t *s = &b->s[e->sample];
        s->value += value;
        if (now > s->ts_ns)
            s->ts_ns = now;
        tapi_unlock(tb, 1);
        return 0;
    }
    if (e && b->n < TELEM_Q_SAMPLES) {
        s_append_like(b, e->sample, value, now);
        tapi_unlock(tb, 1);
        return 0;
    }
    return s_push_new(tb, text, len, value, kind, now);
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
