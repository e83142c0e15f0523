/* ac_query.c - queries across every node, and the results they produce.
 *
 * A query is encoded once and fanned out by ac.c; each node's reply is
 * copied out of the decoder into the result's arena as it arrives (the
 * decoder's memory is reused by the next reply), then the series are sorted
 * so that the merged view does not depend on which node answered first.
 */
#include "ac_internal.h"
#include "telem_grow.h"
#include "telem_time.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    telem_series_t s;        /* first member: ac_result_series() returns &s */
    const char *node;
} s_series_t;

typedef struct {
    size_t index;            /* node index, for ordering */
    const char *node;
    int code;
    const char *message;
} s_missing_t;

struct ac_result {
    ac__arena_t arena;
    s_series_t *series;
    size_t nseries;
    size_t cap;
    s_missing_t *missing;
    size_t nmissing;
    size_t ntruncated;
    const ac_t *client;      /* only during the call, for node names */
};

/* ---- building ---------------------------------------------------------- */

static int
s_copy_tags(ac__arena_t *a, telem_series_t *d, const telem_series_t *src)
{
    d->ntags = src->ntags;
    telem_tag_t *tags = ac__arena_alloc(a, src->ntags * sizeof *tags);
    if (!tags)
        return TELEM_ENOMEM;
    for (uint32_t t = 0; t < src->ntags; t++) {
        tags[t].key = ac__arena_strdup(a, src->tags[t].key);
        tags[t].value = ac__arena_strdup(a, src->tags[t].value);
        if (!tags[t].key || !tags[t].value)
            return TELEM_ENOMEM;
    }
    d->tags = tags;
    return 0;
}

static int
s_copy_series(ac_result_t *r, const telem_series_t *src, const char *node)
{
    if (telem_grow((void **) &r->series, &r->cap, r->nseries + 1,
                   sizeof *r->series, 64))
        return TELEM_ENOMEM;
    ac__arena_t *a = &r->arena;
    s_series_t *d = &r->series[r->nseries];
    memset(d, 0, sizeof *d);
    d->node = node;
    d->s.type = src->type;
    d->s.npoints = src->npoints;
    d->s.metric = ac__arena_strdup(a, src->metric);
    d->s.unit = ac__arena_strdup(a, src->unit);
    d->s.doc = ac__arena_strdup(a, src->doc);
    size_t pts = (size_t) src->npoints;
    d->s.ts = ac__arena_memdup(a, src->ts, pts * sizeof *src->ts);
    d->s.values = ac__arena_memdup(a, src->values, pts * sizeof *src->values);
    if (!d->s.metric || !d->s.unit || !d->s.doc || !d->s.ts || !d->s.values)
        return TELEM_ENOMEM;
    int rc = s_copy_tags(a, &d->s, src);
    if (rc)
        return rc;
    r->nseries++;
    return 0;
}

static int
s_on_reply(void *arg, size_t node, const telem_msg_t *msg)
{
    ac_result_t *r = arg;
    const telem_query_reply_t *qr = &msg->u.query_reply;
    const char *name =
        ac__arena_strdup(&r->arena, ac_node_name(r->client, node));
    if (!name)
        return TELEM_ENOMEM;
    size_t before = r->nseries;
    for (uint32_t i = 0; i < qr->nseries; i++) {
        int rc = s_copy_series(r, &qr->series[i], name);
        if (rc) {
            r->nseries = before;  /* all of this node, or none of it */
            return rc;
        }
    }
    if (qr->truncated)
        r->ntruncated++;
    return 0;
}

static void
s_on_miss(void *arg, size_t node, int code, const char *message)
{
    ac_result_t *r = arg;
    /* One slot per node was reserved up front, so this cannot fail to fit;
     * if a string cannot be copied the entry keeps a static one. */
    s_missing_t *m = &r->missing[r->nmissing++];
    m->index = node;
    m->code = code;
    m->node = ac__arena_strdup(&r->arena, ac_node_name(r->client, node));
    m->message = ac__arena_strdup(&r->arena, message);
    if (!m->node)
        m->node = "?";
    if (!m->message)
        m->message = "out of memory";
}

static int
s_cmp_tags(const telem_series_t *a, const telem_series_t *b)
{
    uint32_t n = a->ntags < b->ntags ? a->ntags : b->ntags;
    for (uint32_t i = 0; i < n; i++) {
        int c = strcmp(a->tags[i].key, b->tags[i].key);
        if (!c)
            c = strcmp(a->tags[i].value, b->tags[i].value);
        if (c)
            return c;
    }
    return (a->ntags > b->ntags) - (a->ntags < b->ntags);
}

static int
s_cmp_series(const void *pa, const void *pb)
{
    const s_series_t *a = pa, *b = pb;
    int c = strcmp(a->s.metric, b->s.metric);
    if (!c)
        c = s_cmp_tags(&a->s, &b->s);
    if (!c)
        c = strcmp(a->node, b->node);
    return c;
}

static int
s_cmp_missing(const void *pa, const void *pb)
{
    const s_missing_t *a = pa, *b = pb;
    return (a->index > b->index) - (a->index < b->index);
}

/* ---- the call ---------------------------------------------------------- */

/* Resolves the node subset to ascending indexes (duplicates dropped). */
static int
s_select(const ac_t *self, const ac_query_t *q, size_t *sel, size_t *nsel)
{
    size_t n = ac_node_count(self);
    *nsel = 0;
    if (!q->nodes) {
        for (size_t i = 0; i < n; i++)
            sel[(*nsel)++] = i;
        return 0;
    }
    unsigned char *mark = calloc(n ? n : 1, 1);
    if (!mark)
        return TELEM_ENOMEM;
    int rc = 0;
    for (size_t j = 0; j < q->nnodes && !rc; j++) {
        long i = ac_node_find(self, q->nodes[j]);
        if (i < 0)
            rc = TELEM_ENOTFOUND;
        else
            mark[i] = 1;
    }
    for (size_t i = 0; i < n && !rc; i++)
        if (mark[i])
            sel[(*nsel)++] = i;
    free(mark);
    return rc;
}

/* Fills the wire request from the caller's query. */
static int
s_request(const ac_query_t *q, uint64_t id, telem_query_t *req)
{
    if (q->nmetrics > TELEM_QUERY_METRICS_MAX || q->ntags > TELEM_TAGS_MAX)
        return TELEM_ETOOBIG;
    if ((q->nmetrics && !q->metrics) || (q->ntags && !q->tags))
        return TELEM_EINVAL;
    int64_t now = telem_now_ns();
    int64_t start = q->start_ns, end = q->end_ns;
    int whole = (q->flags & (TELEM_QUERY_LIST | TELEM_QUERY_LATEST)) != 0;
    if (start < 0)
        start = now + start;
    else if (start == 0 && !whole)
        start = now - AC_WINDOW_DEFAULT_NS;
    if (end < 0)
        end = now + end;
    if (start < 0 || end < 0 || (end != 0 && start > end))
        return TELEM_EINVAL;
    *req = (telem_query_t) {
        .id = id, .metrics = q->metrics, .nmetrics = (uint32_t) q->nmetrics,
        .filters = q->tags, .nfilters = (uint32_t) q->ntags,
        .start_ns = start, .end_ns = end, .max_points = q->max_points,
        .flags = q->flags,
    };
    return 0;
}

/* Allocates the result and encodes the request; *out stays NULL on error. */
static int
s_prepare(ac_t *self, const ac_query_t *q, ac__call_t *call, size_t *sel,
          ac_result_t **out)
{
    telem_query_t req;
    int rc = s_select(self, q, sel, &call->nsel);
    if (rc == 0)
        rc = s_request(q, ac__next_id(self), &req);
    if (rc == 0)
        rc = telem_proto_encode_query(ac__encoder(self), &req, &call->frame,
                                      &call->size);
    if (rc)
        return rc;
    ac_result_t *r = calloc(1, sizeof *r);
    if (r)
        r->missing = calloc(call->nsel ? call->nsel : 1, sizeof *r->missing);
    if (!r || !r->missing) {
        free(r);
        return TELEM_ENOMEM;
    }
    r->client = self;
    call->sel = sel;
    call->id = req.id;
    call->expect = TELEM_MSG_QUERY_REPLY;
    call->notfound_is_empty = 1;
    call->relay = 1;
    call->timeout_ms = ac__timeout(self, q->timeout_ms);
    call->on_reply = s_on_reply;
    call->on_miss = s_on_miss;
    call->arg = r;
    *out = r;
    return 0;
}

int
ac_query(ac_t *self, const ac_query_t *q, ac_result_t **out)
{
    static const ac_query_t everything = { 0 };
    if (!out)
        return TELEM_EINVAL;
    *out = NULL;
    if (!self)
        return TELEM_EINVAL;
    if (!q)
        q = &everything;
    size_t *sel = malloc((ac_node_count(self) + 1) * sizeof *sel);
    if (!sel)
        return TELEM_ENOMEM;
    ac__call_t call = { 0 };
    int rc = s_prepare(self, q, &call, sel, out);
    if (rc == 0) {
        ac_result_t *r = *out;
        rc = ac__fanout(self, &call);
        r->client = NULL;
        if (r->nseries > 1)
            qsort(r->series, r->nseries, sizeof *r->series, s_cmp_series);
        qsort(r->missing, r->nmissing, sizeof *r->missing, s_cmp_missing);
    }
    free(sel);
    return rc;
}

int
ac_metrics(ac_t *self, ac_result_t **out)
{
    ac_query_t q = { .flags = TELEM_QUERY_LIST };
    return ac_query(self, &q, out);
}

/* ---- accessors --------------------------------------------------------- */

size_t
ac_result_nseries(const ac_result_t *r)
{
    return r ? r->nseries : 0;
}

const telem_series_t *
ac_result_series(const ac_result_t *r, size_t i)
{
    return r && i < r->nseries ? &r->series[i].s : NULL;
}

const char *
ac_result_series_node(const ac_result_t *r, size_t i)
{
    return r && i < r->nseries ? r->series[i].node : NULL;
}

size_t
ac_result_ntruncated(const ac_result_t *r)
{
    return r ? r->ntruncated : 0;
}

size_t
ac_result_nmissing(const ac_result_t *r)
{
    return r ? r->nmissing : 0;
}

const char *
ac_result_missing(const ac_result_t *r, size_t i)
{
    return r && i < r->nmissing ? r->missing[i].node : NULL;
}

int
ac_result_missing_code(const ac_result_t *r, size_t i)
{
    return r && i < r->nmissing ? r->missing[i].code : 0;
}

const char *
ac_result_missing_message(const ac_result_t *r, size_t i)
{
    return r && i < r->nmissing ? r->missing[i].message : NULL;
}

void
ac_result_destroy(ac_result_t **r_p)
{
    if (!r_p || !*r_p)
        return;
    ac_result_t *r = *r_p;
    ac__arena_free(&r->arena);
    free(r->series);
    free(r->missing);
    free(r);
    *r_p = NULL;
}
