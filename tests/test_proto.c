/* test_proto.c - the wire codec: a round trip per message type, encoder
 * validation, decoder rejections (truncation at every offset, wrong types,
 * limits, absurd counts, trailing bytes), decoder reuse, and a fixed-seed
 * byte-flipping run that must never crash (run it under ASan to make that
 * mean something).  Malformed frames are built with msgpack-c's packer.
 */
#include "telem_proto.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

static int s_failures;

#define CHECK(c) do { \
        if (!(c)) { \
            s_failures++; \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); \
        } \
    } while (0)

#define CHECK_RC(got, want) do { \
        int got_ = (got), want_ = (want); \
        if (got_ != want_) { \
            s_failures++; \
            fprintf(stderr, "%s:%d: %s = %d, expected %d\n", __FILE__, __LINE__, \
                    #got, got_, want_); \
        } \
    } while (0)

/* ------------------------------------------------------------- helpers */

static const char *
s0(const char *s)
{
    return s ? s : "";
}

static bool
s_same_str(const char *a, const char *b)
{
    return b && strcmp(s0(a), b) == 0;
}

static bool
s_same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static bool
s_same_tags(const telem_tag_t *a, uint32_t na, const telem_tag_t *b, uint32_t nb)
{
    if (na != nb || (nb == 0 && b != NULL))
        return false;
    for (uint32_t i = 0; i < na; i++)
        if (!s_same_str(a[i].key, b[i].key) || !s_same_str(a[i].value, b[i].value))
            return false;
    return true;
}

static bool
s_same_batch(const telem_batch_t *a, const telem_batch_t *b)
{
    if (!s_same_str(a->source, b->source) || a->fin_token != b->fin_token ||
        !s_same_tags(a->tags, a->ntags, b->tags, b->ntags) ||
        a->nsamples != b->nsamples || (b->nsamples == 0 && b->samples))
        return false;
    for (uint32_t i = 0; i < a->nsamples; i++) {
        const telem_sample_t *x = &a->samples[i], *y = &b->samples[i];
        if (!s_same_str(x->metric, y->metric) || x->ts_ns != y->ts_ns ||
            !s_same_f64(x->value, y->value) || x->level != y->level ||
            !s_same_tags(x->tags, x->ntags, y->tags, y->ntags))
            return false;
    }
    return true;
}

static bool
s_same_query(const telem_query_t *a, const telem_query_t *b)
{
    if (a->id != b->id || a->start_ns != b->start_ns || a->end_ns != b->end_ns ||
        a->max_points != b->max_points || a->flags != b->flags ||
        a->nmetrics != b->nmetrics || (b->nmetrics == 0 && b->metrics) ||
        !s_same_tags(a->filters, a->nfilters, b->filters, b->nfilters))
        return false;
    for (uint32_t i = 0; i < a->nmetrics; i++)
        if (!s_same_str(a->metrics[i], b->metrics[i]))
            return false;
    return true;
}

static bool
s_same_series(const telem_series_t *a, const telem_series_t *b)
{
    if (!s_same_str(a->metric, b->metric) || a->type != b->type ||
        !s_same_str(a->unit, b->unit) || !s_same_str(a->doc, b->doc) ||
        !s_same_tags(a->tags, a->ntags, b->tags, b->ntags) ||
        a->npoints != b->npoints || (b->npoints == 0 && (b->ts || b->values)))
        return false;
    for (uint32_t i = 0; i < a->npoints; i++)
        if (a->ts[i] != b->ts[i] || !s_same_f64(a->values[i], b->values[i]))
            return false;
    /* decoded points must be naturally aligned */
    return b->npoints == 0 || ((uintptr_t) b->ts % 8 == 0 && (uintptr_t) b->values % 8 == 0);
}

static bool
s_same_reply(const telem_query_reply_t *a, const telem_query_reply_t *b)
{
    if (a->id != b->id || !s_same_str(a->node, b->node) ||
        (a->truncated != 0) != (b->truncated != 0) || a->nseries != b->nseries ||
        (b->nseries == 0 && b->series))
        return false;
    for (uint32_t i = 0; i < a->nseries; i++)
        if (!s_same_series(&a->series[i], &b->series[i]))
            return false;
    return true;
}

static bool
s_same_status(const telem_status_t *a, const telem_status_t *b)
{
    return s_same_str(a->node, b->node) && a->pid == b->pid && a->level == b->level &&
           a->window_ns == b->window_ns && a->interval_ns == b->interval_ns &&
           a->uptime_ns == b->uptime_ns && a->nseries == b->nseries &&
           a->npoints == b->npoints && a->mem_bytes == b->mem_bytes &&
           a->mem_cap_bytes == b->mem_cap_bytes && a->ingested == b->ingested &&
           a->dropped == b->dropped && a->bad_messages == b->bad_messages;
}

static bool
s_same_msg(const telem_msg_t *a, const telem_msg_t *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case TELEM_MSG_BATCH:
        return s_same_batch(&a->u.batch, &b->u.batch);
    case TELEM_MSG_META:
        return s_same_str(a->u.meta.metric, b->u.meta.metric) &&
               a->u.meta.type == b->u.meta.type &&
               s_same_str(a->u.meta.unit, b->u.meta.unit) &&
               s_same_str(a->u.meta.doc, b->u.meta.doc);
    case TELEM_MSG_QUERY:
        return s_same_query(&a->u.query, &b->u.query);
    case TELEM_MSG_QUERY_REPLY:
        return s_same_reply(&a->u.query_reply, &b->u.query_reply);
    case TELEM_MSG_CONTROL:
        return a->u.control.id == b->u.control.id && a->u.control.op == b->u.control.op &&
               a->u.control.arg == b->u.control.arg;
    case TELEM_MSG_CONTROL_REPLY:
        return a->u.control_reply.id == b->u.control_reply.id &&
               a->u.control_reply.op == b->u.control_reply.op &&
               a->u.control_reply.synced == b->u.control_reply.synced &&
               s_same_status(&a->u.control_reply.status, &b->u.control_reply.status);
    case TELEM_MSG_ERROR:
        return a->u.error.id == b->u.error.id && a->u.error.code == b->u.error.code &&
               s_same_str(a->u.error.message, b->u.error.message);
    }
    return false;
}

static int
s_encode(telem_encoder_t *e, const telem_msg_t *m, const void **data, size_t *size)
{
    switch (m->type) {
    case TELEM_MSG_BATCH: return telem_encode_batch(e, &m->u.batch, data, size);
    case TELEM_MSG_META: return telem_encode_meta(e, &m->u.meta, data, size);
    case TELEM_MSG_QUERY: return telem_encode_query(e, &m->u.query, data, size);
    case TELEM_MSG_QUERY_REPLY:
        return telem_encode_query_reply(e, &m->u.query_reply, data, size);
    case TELEM_MSG_CONTROL: return telem_encode_control(e, &m->u.control, data, size);
    case TELEM_MSG_CONTROL_REPLY:
        return telem_encode_control_reply(e, &m->u.control_reply, data, size);
    case TELEM_MSG_ERROR: return telem_encode_error(e, &m->u.error, data, size);
    }
    return TELEM_EINVAL;
}

/* Encodes m, decodes it with d and checks every field came back. */
static void
s_round_trip(telem_encoder_t *e, telem_decoder_t *d, const telem_msg_t *m)
{
    const void *data = NULL;
    size_t size = 0;
    telem_msg_t out;
    CHECK_RC(s_encode(e, m, &data, &size), 0);
    CHECK(data && size > 0);
    int rc = telem_proto_decode(d, data, size, &out);
    CHECK_RC(rc, 0);
    if (rc == 0 && !s_same_msg(m, &out)) {
        s_failures++;
        fprintf(stderr, "round trip of a %s changed it\n", telem_msg_type_name(m->type));
    }
}

/* A raw frame builder for malformed input. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} s_raw_t;

static void
s_raw_init(s_raw_t *w)
{
    msgpack_sbuffer_init(&w->sb);
    msgpack_packer_init(&w->pk, &w->sb, msgpack_sbuffer_write);
}

static void
s_raw_str(s_raw_t *w, const char *s)
{
    msgpack_pack_str_with_body(&w->pk, s, strlen(s));
}

static void
s_raw_int(s_raw_t *w, const char *key, int64_t v)
{
    s_raw_str(w, key);
    msgpack_pack_int64(&w->pk, v);
}

/* Starts a top map of n pairs with "v" and "t" (n counts them). */
static void
s_raw_head(s_raw_t *w, size_t n, int64_t version, int64_t type)
{
    msgpack_sbuffer_clear(&w->sb);
    msgpack_pack_map(&w->pk, n);
    s_raw_int(w, "v", version);
    s_raw_int(w, "t", type);
}

static int
s_raw_decode(telem_decoder_t *d, s_raw_t *w)
{
    telem_msg_t out;
    return telem_proto_decode(d, w->sb.data, w->sb.size, &out);
}

/* A batch with one sample whose pieces the caller writes: 4-element array
 * follows after this call. */
static void
s_raw_batch1(s_raw_t *w, uint32_t nelem)
{
    s_raw_head(w, 3, TELEM_PROTO_VERSION, TELEM_MSG_BATCH);
    s_raw_str(w, "s");
    msgpack_pack_array(&w->pk, 1);
    msgpack_pack_array(&w->pk, nelem);
}

/* ------------------------------------------------------------ fixtures */

static char s_long_name[TELEM_NAME_MAX + 2];
static char s_long_text[TELEM_TEXT_MAX + 2];

static void
s_init_strings(void)
{
    memset(s_long_name, 'n', TELEM_NAME_MAX);
    s_long_name[TELEM_NAME_MAX] = '\0';
    memset(s_long_text, 'x', TELEM_TEXT_MAX);
    s_long_text[TELEM_TEXT_MAX] = '\0';
}

static const telem_tag_t s_tags2[] = { { "pid", "4242" }, { "rank", "7" } };
static const telem_tag_t s_tags3[] = {
    { "gpu", "0" }, { "host", "node-01" }, { "job", "*" } };

/* A batch of every interesting shape; fills the caller's sample array. */
static telem_msg_t
s_make_batch(telem_sample_t *s, uint32_t n)
{
    telem_msg_t m = { .type = TELEM_MSG_BATCH };
    for (uint32_t i = 0; i < n; i++) {
        s[i] = (telem_sample_t) {
            .metric = i % 3 == 0 ? "train.step_time" : i % 3 == 1 ? "gpu.util" : s_long_name,
            .ts_ns = (int64_t) i * 1000003 - 5000000,
            .value = i * 0.25 - 3,
            .level = (uint8_t) (i % 5),
            .tags = i % 4 == 1 ? s_tags3 : NULL,
            .ntags = i % 4 == 1 ? 3 : 0 };
    }
    if (n > 2) {
        s[1].value = -0.0;
        s[2].ts_ns = INT64_MIN;
        s[0].ts_ns = INT64_MAX;
    }
    m.u.batch = (telem_batch_t) { .source = "trainer", .tags = s_tags2, .ntags = 2,
        .samples = s, .nsamples = n, .fin_token = UINT64_MAX };
    return m;
}

static telem_msg_t
s_make_reply(telem_series_t *sr, int64_t *ts, double *v, uint32_t npts)
{
    telem_msg_t m = { .type = TELEM_MSG_QUERY_REPLY };
    for (uint32_t i = 0; i < npts; i++) {
        ts[i] = (int64_t) i * 7 - 3;
        v[i] = i * 1.5;
    }
    if (npts >= 6) {
        v[0] = NAN;
        v[1] = INFINITY;
        v[2] = -INFINITY;
        v[3] = -0.0;
        ts[4] = INT64_MIN;
        ts[5] = INT64_MAX;
    }
    sr[0] = (telem_series_t) { .metric = "gpu.util", .tags = s_tags3, .ntags = 3,
        .type = TELEM_METRIC_GAUGE, .unit = "%", .doc = "GPU utilization",
        .ts = ts, .values = v, .npoints = npts };
    sr[1] = (telem_series_t) { .metric = s_long_name, .type = TELEM_METRIC_COUNTER,
        .unit = NULL, .doc = s_long_text };
    sr[2] = (telem_series_t) { .metric = "cpu_percent", .tags = s_tags2, .ntags = 1,
        .ts = ts + 1, .values = v + 1, .npoints = npts > 1 ? npts - 1 : 0 };
    m.u.query_reply = (telem_query_reply_t) { .id = 99, .node = "node-01",
        .series = sr, .nseries = 3, .truncated = 2 };   /* any non-zero is true */
    return m;
}

static const telem_status_t s_status = {
    .node = "n1", .pid = -1, .level = 4, .window_ns = INT64_MAX,
    .interval_ns = 100000000, .uptime_ns = INT64_MIN, .nseries = UINT64_MAX,
    .npoints = 2, .mem_bytes = 3, .mem_cap_bytes = 4, .ingested = 5,
    .dropped = 6, .bad_messages = 7 };

/* One valid message of each type, for truncation and mutation. */
typedef struct {
    telem_sample_t samples[8];
    telem_series_t series[3];
    int64_t ts[8];
    double v[8];
    const char *metrics[2];
    telem_msg_t msg[7];
} s_corpus_t;

static void
s_make_corpus(s_corpus_t *c)
{
    c->msg[0] = s_make_batch(c->samples, 8);
    c->msg[1] = (telem_msg_t) { .type = TELEM_MSG_META, .u.meta = {
        .metric = "gpu.power", .type = TELEM_METRIC_COUNTER, .unit = "W", .doc = "board power" } };
    c->metrics[0] = "a";
    c->metrics[1] = "gpu.util";
    c->msg[2] = (telem_msg_t) { .type = TELEM_MSG_QUERY, .u.query = {
        .id = 5, .metrics = c->metrics, .nmetrics = 2, .filters = s_tags3, .nfilters = 3,
        .start_ns = -10, .end_ns = 1000, .max_points = 10, .flags = TELEM_QUERY_LATEST } };
    c->msg[3] = s_make_reply(c->series, c->ts, c->v, 8);
    c->series[1].doc = "short doc";
    c->msg[4] = (telem_msg_t) { .type = TELEM_MSG_CONTROL, .u.control = {
        .id = 77, .op = TELEM_CTL_SET_WINDOW, .arg = -300 } };
    c->msg[5] = (telem_msg_t) { .type = TELEM_MSG_CONTROL_REPLY, .u.control_reply = {
        .id = 78, .op = TELEM_CTL_SYNC, .synced = 1, .status = s_status } };
    c->msg[6] = (telem_msg_t) { .type = TELEM_MSG_ERROR, .u.error = {
        .id = 79, .code = TELEM_ENOTFOUND, .message = "no such metric" } };
}

/* --------------------------------------------------------- round trips */

static void
test_round_trips(telem_encoder_t *e, telem_decoder_t *d)
{
    telem_sample_t s[40];
    telem_msg_t m = s_make_batch(s, 40);
    s_round_trip(e, d, &m);
    /* names that a cache of the previous sample's metric could confuse */
    static const char *const tricky[] = { "ab", "b", "ab", "abc", "abd", "a", "a", "ba",
        "a-name-longer-than-thirty-one-bytes", "a-name-longer-than-thirty-one-bytes",
        "a-name-longer-than-thirty-one-byteZ", "Z", "ab" };
    for (uint32_t i = 0; i < 13; i++)
        s[i].metric = tricky[i];
    m.u.batch.nsamples = 13;
    s_round_trip(e, d, &m);
    m.u.batch = (telem_batch_t) { .source = NULL };   /* empty, fin only */
    m.u.batch.fin_token = 1;
    s_round_trip(e, d, &m);

    m = (telem_msg_t) { .type = TELEM_MSG_META, .u.meta = { .metric = s_long_name,
        .type = TELEM_METRIC_COUNTER, .unit = "bytes", .doc = s_long_text } };
    s_round_trip(e, d, &m);
    m.u.meta = (telem_meta_t) { .metric = "x", .unit = NULL, .doc = NULL };
    s_round_trip(e, d, &m);

    const char **names = calloc(TELEM_QUERY_METRICS_MAX, sizeof *names);
    for (int i = 0; i < TELEM_QUERY_METRICS_MAX; i++)
        names[i] = i % 2 ? s_long_name : "m";
    m = (telem_msg_t) { .type = TELEM_MSG_QUERY, .u.query = { .id = UINT64_MAX,
        .metrics = names, .nmetrics = TELEM_QUERY_METRICS_MAX, .filters = s_tags3,
        .nfilters = 3, .start_ns = INT64_MIN, .end_ns = -1, .max_points = UINT32_MAX,
        .flags = TELEM_QUERY_LIST | TELEM_QUERY_LATEST | 0x80000000u } };
    s_round_trip(e, d, &m);
    m.u.query = (telem_query_t) { .id = 0 };
    s_round_trip(e, d, &m);
    free(names);

    telem_series_t sr[3];
    int64_t ts[100];
    double v[100];
    m = s_make_reply(sr, ts, v, 100);
    s_round_trip(e, d, &m);
    m.u.query_reply = (telem_query_reply_t) { .node = "n" };   /* no series */
    s_round_trip(e, d, &m);

    for (int op = TELEM_CTL_STATUS; op <= TELEM_CTL_SET_WINDOW; op++) {
        m = (telem_msg_t) { .type = TELEM_MSG_CONTROL, .u.control = {
            .id = (uint64_t) op, .op = (telem_ctl_op_t) op, .arg = op == 2 ? INT64_MIN : -op } };
        s_round_trip(e, d, &m);
        m = (telem_msg_t) { .type = TELEM_MSG_CONTROL_REPLY, .u.control_reply = {
            .id = UINT64_MAX - (uint64_t) op, .op = (telem_ctl_op_t) op,
            .synced = op == TELEM_CTL_SYNC, .status = s_status } };
        s_round_trip(e, d, &m);
    }
    m = (telem_msg_t) { .type = TELEM_MSG_ERROR, .u.error = { .id = 3,
        .code = TELEM_EPROTO, .message = NULL } };
    s_round_trip(e, d, &m);
    m.u.error.message = s_long_text;
    m.u.error.code = INT32_MIN;
    s_round_trip(e, d, &m);
}

static void
test_type_names(void)
{
    CHECK(strcmp(telem_msg_type_name(TELEM_MSG_BATCH), "batch") == 0);
    CHECK(strcmp(telem_msg_type_name(TELEM_MSG_QUERY_REPLY), "query_reply") == 0);
    CHECK(strcmp(telem_msg_type_name(TELEM_MSG_ERROR), "error") == 0);
    CHECK(strcmp(telem_msg_type_name(0), "unknown") == 0);
    CHECK(strcmp(telem_msg_type_name(8), "unknown") == 0);
    CHECK(strcmp(telem_msg_type_name(-1), "unknown") == 0);
}

/* ---------------------------------------------------- encoder refusals */

static void
test_encode_batch_refusals(telem_encoder_t *e)
{
    const void *data;
    size_t size;
    char too_long[TELEM_NAME_MAX + 2];
    memset(too_long, 'a', TELEM_NAME_MAX + 1);
    too_long[TELEM_NAME_MAX + 1] = '\0';
    telem_sample_t s = { .metric = "m", .level = 1 };
    telem_batch_t b = { .samples = &s, .nsamples = 1 };
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), 0);
    CHECK_RC(telem_encode_batch(NULL, &b, &data, &size), TELEM_EINVAL);
    CHECK_RC(telem_encode_batch(e, NULL, &data, &size), TELEM_EINVAL);
    CHECK_RC(telem_encode_batch(e, &b, NULL, &size), TELEM_EINVAL);
    s.metric = NULL;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.metric = "";
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.metric = too_long;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);
    s.metric = "m";
    s.level = 5;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.level = 1;
    telem_tag_t many[TELEM_TAGS_MAX + 1];
    for (int i = 0; i <= TELEM_TAGS_MAX; i++)
        many[i] = (telem_tag_t) { "k", "v" };
    s.tags = many;
    s.ntags = TELEM_TAGS_MAX + 1;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);
    s.ntags = 2;   /* duplicate keys */
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.tags = NULL;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.ntags = 0;
    b.tags = (telem_tag_t[]) { { "k", "" } };
    b.ntags = 1;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    b.ntags = 0;
    b.source = too_long;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);
    b.source = NULL;
    b.samples = NULL;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    b.nsamples = TELEM_BATCH_MAX + 1;
    b.samples = &s;
    CHECK_RC(telem_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);

}

static void
test_encoder_refusals(telem_encoder_t *e, telem_decoder_t *d)
{
    const void *data;
    size_t size;
    char too_long[TELEM_NAME_MAX + 2];
    memset(too_long, 'a', TELEM_NAME_MAX + 1);
    too_long[TELEM_NAME_MAX + 1] = '\0';
    telem_meta_t meta = { .metric = "m", .type = 2 };
    CHECK_RC(telem_encode_meta(e, &meta, &data, &size), TELEM_EINVAL);
    meta = (telem_meta_t) { .metric = "m", .doc = too_long };
    CHECK_RC(telem_encode_meta(e, &meta, &data, &size), 0);
    char text[TELEM_TEXT_MAX + 2];
    memset(text, 't', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    meta.unit = text;
    CHECK_RC(telem_encode_meta(e, &meta, &data, &size), TELEM_ETOOBIG);

    const char *names[TELEM_QUERY_METRICS_MAX + 1];
    for (int i = 0; i <= TELEM_QUERY_METRICS_MAX; i++)
        names[i] = "m";
    telem_query_t q = { .metrics = names, .nmetrics = TELEM_QUERY_METRICS_MAX + 1 };
    CHECK_RC(telem_encode_query(e, &q, &data, &size), TELEM_ETOOBIG);
    q.nmetrics = 1;
    q.metrics = NULL;
    CHECK_RC(telem_encode_query(e, &q, &data, &size), TELEM_EINVAL);
    q = (telem_query_t) { .filters = NULL, .nfilters = 1 };
    CHECK_RC(telem_encode_query(e, &q, &data, &size), TELEM_EINVAL);

    telem_series_t sr = { .metric = "m", .npoints = 3 };
    telem_query_reply_t rp = { .node = "n", .series = &sr, .nseries = 1 };
    CHECK_RC(telem_encode_query_reply(e, &rp, &data, &size), TELEM_EINVAL);
    rp.series = NULL;
    CHECK_RC(telem_encode_query_reply(e, &rp, &data, &size), TELEM_EINVAL);
    rp = (telem_query_reply_t) { .node = "" };
    CHECK_RC(telem_encode_query_reply(e, &rp, &data, &size), TELEM_EINVAL);

    telem_control_t c = { .op = 0 };
    CHECK_RC(telem_encode_control(e, &c, &data, &size), TELEM_EINVAL);
    telem_control_reply_t cr = { .op = TELEM_CTL_STATUS, .status = s_status };
    cr.status.level = 5;
    CHECK_RC(telem_encode_control_reply(e, &cr, &data, &size), TELEM_EINVAL);
    cr.status = s_status;
    cr.status.node = NULL;
    CHECK_RC(telem_encode_control_reply(e, &cr, &data, &size), TELEM_EINVAL);
    telem_error_msg_t em = { .code = TELEM_EIO, .message = text };
    CHECK_RC(telem_encode_error(e, &em, &data, &size), TELEM_ETOOBIG);

    /* a failed encode leaves the encoder usable */
    telem_msg_t ok = { .type = TELEM_MSG_CONTROL, .u.control = { .id = 1, .op = 1 } };
    s_round_trip(e, d, &ok);
}

/* ---------------------------------------------------- decoder refusals */

static void
test_truncation(telem_encoder_t *e, telem_decoder_t *d)
{
    s_corpus_t c;
    s_make_corpus(&c);
    for (int k = 0; k < 7; k++) {
        const void *data;
        size_t size;
        CHECK_RC(s_encode(e, &c.msg[k], &data, &size), 0);
        unsigned char *copy = malloc(size + 1);
        memcpy(copy, data, size);
        telem_msg_t out;
        int bad = 0;
        for (size_t n = 0; n < size; n++) {
            unsigned char *tail = malloc(n ? n : 1);   /* exact size: ASan sees overreads */
            memcpy(tail, copy, n);
            if (telem_proto_decode(d, tail, n, &out) != TELEM_EPROTO)
                bad++;
            free(tail);
        }
        CHECK(bad == 0);
        CHECK_RC(telem_proto_decode(d, copy, size, &out), 0);
        CHECK(s_same_msg(&c.msg[k], &out));
        copy[size] = 0xc0;   /* one trailing byte */
        CHECK_RC(telem_proto_decode(d, copy, size + 1, &out), TELEM_EPROTO);
        CHECK(strstr(telem_decoder_error(d), "trailing") != NULL);
        free(copy);
    }
}

static void
test_header_refusals(telem_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    telem_msg_t out;
    CHECK_RC(telem_proto_decode(d, "", 0, &out), TELEM_EPROTO);
    CHECK_RC(telem_proto_decode(d, NULL, 0, &out), TELEM_EPROTO);
    CHECK_RC(telem_proto_decode(d, "x", TELEM_PROTO_MAX_MSG + 1ul, &out), TELEM_ETOOBIG);
    CHECK_RC(telem_proto_decode(NULL, "x", 1, &out), TELEM_EINVAL);
    CHECK_RC(telem_proto_decode(d, "\x01", 1, &out), TELEM_EPROTO);        /* int */
    CHECK_RC(telem_proto_decode(d, "\x92\x01\x02", 3, &out), TELEM_EPROTO); /* array */
    CHECK_RC(telem_proto_decode(d, "\x80", 1, &out), TELEM_EPROTO);        /* {} */
    CHECK(strstr(telem_decoder_error(d), "missing \"v\"") != NULL);

    s_raw_head(&w, 3, 2, TELEM_MSG_CONTROL);
    s_raw_int(&w, "id", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EVERSION);
    s_raw_head(&w, 2, 0, TELEM_MSG_CONTROL);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EVERSION);
    const int64_t types[] = { 0, 8, 99, -1, INT64_MAX };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        s_raw_head(&w, 2, TELEM_PROTO_VERSION, types[i]);
        CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
        CHECK(strstr(telem_decoder_error(d), "unknown message type") != NULL);
    }
    msgpack_sbuffer_clear(&w.sb);   /* "v" as a string */
    msgpack_pack_map(&w.pk, 2);
    s_raw_str(&w, "v");
    s_raw_str(&w, "1");
    s_raw_int(&w, "t", 5);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_clear(&w.sb);   /* "t" missing */
    msgpack_pack_map(&w.pk, 1);
    s_raw_int(&w, "v", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_clear(&w.sb);   /* a key that is not a string */
    msgpack_pack_map(&w.pk, 3);
    s_raw_int(&w, "v", 1);
    s_raw_int(&w, "t", TELEM_MSG_CONTROL);
    msgpack_pack_int(&w.pk, 1);
    msgpack_pack_int(&w.pk, 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_destroy(&w.sb);
}

/* Missing mandatory fields, duplicate keys, integers out of range. */
static void
test_mandatory_refusals(telem_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    s_raw_head(&w, 3, 1, TELEM_MSG_CONTROL);
    s_raw_int(&w, "id", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    CHECK(strcmp(telem_decoder_error(d), "control: missing \"op\"") == 0);
    s_raw_head(&w, 5, 1, TELEM_MSG_CONTROL);
    s_raw_int(&w, "id", 1);
    s_raw_int(&w, "op", 1);
    s_raw_int(&w, "id", 2);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_head(&w, 4, 1, TELEM_MSG_CONTROL_REPLY);
    s_raw_int(&w, "id", 1);
    s_raw_int(&w, "op", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_head(&w, 4, 1, TELEM_MSG_CONTROL);   /* id < 0 */
    s_raw_int(&w, "id", -1);
    s_raw_int(&w, "op", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_head(&w, 4, 1, TELEM_MSG_CONTROL);   /* op out of int32 */
    s_raw_int(&w, "id", 1);
    s_raw_int(&w, "op", (int64_t) INT32_MAX + 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_destroy(&w.sb);
}

/* A batch of one sample: metric, ts, value, level as given by `how`. */
static int
s_sample_case(telem_decoder_t *d, s_raw_t *w, int how)
{
    s_raw_batch1(w, how == 9 ? 3 : 4);
    msgpack_packer *pk = &w->pk;
    switch (how) {
    case 0: msgpack_pack_int(pk, 5); break;               /* metric not a str */
    case 1: msgpack_pack_bin_with_body(pk, "m", 1); break; /* metric as bin */
    case 2: msgpack_pack_str_with_body(pk, "a\0b", 3); break;
    case 3: msgpack_pack_str_with_body(pk, "", 0); break;
    case 4: msgpack_pack_str_with_body(pk, s_long_name, TELEM_NAME_MAX + 1); break;
    default: s_raw_str(w, "m"); break;
    }
    if (how == 5)
        msgpack_pack_double(pk, 1.0);          /* ts as float */
    else if (how == 6)
        msgpack_pack_uint64(pk, UINT64_MAX);   /* ts out of int64 */
    else
        msgpack_pack_int64(pk, -5);
    if (how == 7)
        s_raw_str(w, "1.5");
    else if (how == 10)
        msgpack_pack_true(pk);
    else
        msgpack_pack_double(pk, 1.5);
    if (how == 8)
        msgpack_pack_int(pk, 5);
    else if (how != 9)
        msgpack_pack_int(pk, how == 11 ? -1 : 2);
    return s_raw_decode(d, w);
}

static void
test_field_refusals(telem_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    static const int want[] = { TELEM_EPROTO, TELEM_EPROTO, TELEM_EPROTO, TELEM_EPROTO,
        TELEM_ETOOBIG, TELEM_EPROTO, TELEM_EPROTO, TELEM_EPROTO, TELEM_EPROTO,
        TELEM_EPROTO, TELEM_EPROTO, TELEM_EPROTO };
    for (int how = 0; how < 12; how++) {
        int rc = s_sample_case(d, &w, how);
        if (rc != want[how]) {
            s_failures++;
            fprintf(stderr, "sample case %d: rc %d (%s)\n", how, rc, telem_decoder_error(d));
        }
    }
    CHECK_RC(s_sample_case(d, &w, 12), 0);   /* the well-formed one */

    /* the reason names the sample and the field */
    s_raw_head(&w, 3, 1, TELEM_MSG_BATCH);
    s_raw_str(&w, "s");
    msgpack_pack_array(&w.pk, 4);
    for (int i = 0; i < 4; i++) {
        msgpack_pack_array(&w.pk, 4);
        s_raw_str(&w, "m");
        msgpack_pack_int(&w.pk, i);
        if (i == 3)
            s_raw_str(&w, "x");
        else
            msgpack_pack_int(&w.pk, i);   /* an int value is accepted */
        msgpack_pack_int(&w.pk, 1);
    }
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    CHECK(strcmp(telem_decoder_error(d), "batch: sample 3: value is not a number") == 0);

    /* too many tags, an over-long tag value, a duplicate tag, an empty value */
    for (int k = 0; k < 4; k++) {
        s_raw_head(&w, 3, 1, TELEM_MSG_BATCH);
        s_raw_str(&w, "tg");
        uint32_t n = k == 0 ? TELEM_TAGS_MAX + 1 : 2;
        msgpack_pack_map(&w.pk, n);
        for (uint32_t i = 0; i < n; i++) {
            char key[16];
            snprintf(key, sizeof key, "k%u", k == 2 ? 0 : i);
            s_raw_str(&w, key);
            if (k == 1 && i == 1)
                msgpack_pack_str_with_body(&w.pk, s_long_name, TELEM_NAME_MAX + 1);
            else
                s_raw_str(&w, k == 3 && i == 1 ? "" : "v");
        }
        CHECK_RC(s_raw_decode(d, &w), k >= 2 ? TELEM_EPROTO : TELEM_ETOOBIG);
    }
    msgpack_sbuffer_destroy(&w.sb);
}

static void
test_count_refusals(telem_decoder_t *d)
{
    telem_msg_t out;
    /* {"v":1,"t":1,"s": array32 claiming 4 billion samples} */
    static const unsigned char huge[] = { 0x83, 0xa1, 'v', 0x01, 0xa1, 't', 0x01,
        0xa1, 's', 0xdd, 0xff, 0xff, 0xff, 0xff };
    CHECK_RC(telem_proto_decode(d, huge, sizeof huge, &out), TELEM_EPROTO);
    /* a top-level map32 claiming 4 billion pairs */
    static const unsigned char hugemap[] = { 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'v', 1 };
    CHECK_RC(telem_proto_decode(d, hugemap, sizeof hugemap, &out), TELEM_EPROTO);
    /* an unknown key whose value is a deep pile of map32 headers */
    unsigned char deep[64] = { 0x83, 0xa1, 'v', 0x01, 0xa1, 't', 0x05, 0xa1, 'z' };
    for (size_t i = 9; i + 5 <= sizeof deep; i += 5)
        memcpy(deep + i, "\xdf\xff\xff\xff\xff", 5);
    CHECK_RC(telem_proto_decode(d, deep, sizeof deep - 4, &out), TELEM_EPROTO);
    /* a reply whose series array claims 4 billion entries */
    static const unsigned char hugesr[] = { 0x84, 0xa1, 'v', 0x01, 0xa1, 't', 0x04,
        0xa2, 'i', 'd', 0x01, 0xa2, 's', 'r', 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0 };
    CHECK_RC(telem_proto_decode(d, hugesr, sizeof hugesr, &out), TELEM_EPROTO);
    /* str32 claiming 4 GB */
    static const unsigned char hugestr[] = { 0x82, 0xa1, 'v', 0x01, 0xdb, 0xff, 0xff,
        0xff, 0xff, 't' };
    CHECK_RC(telem_proto_decode(d, hugestr, sizeof hugestr, &out), TELEM_EPROTO);

    /* a real batch one sample over the limit */
    s_raw_t w;
    s_raw_init(&w);
    s_raw_head(&w, 3, 1, TELEM_MSG_BATCH);
    s_raw_str(&w, "s");
    msgpack_pack_array(&w.pk, TELEM_BATCH_MAX + 1);
    for (int i = 0; i <= TELEM_BATCH_MAX; i++) {
        msgpack_pack_array(&w.pk, 4);
        s_raw_str(&w, "m");
        msgpack_pack_int(&w.pk, i);
        msgpack_pack_int(&w.pk, 1);
        msgpack_pack_int(&w.pk, 1);
    }
    CHECK_RC(s_raw_decode(d, &w), TELEM_ETOOBIG);
    /* a query with one metric too many */
    s_raw_head(&w, 4, 1, TELEM_MSG_QUERY);
    s_raw_int(&w, "id", 1);
    s_raw_str(&w, "m");
    msgpack_pack_array(&w.pk, TELEM_QUERY_METRICS_MAX + 1);
    for (int i = 0; i <= TELEM_QUERY_METRICS_MAX; i++)
        s_raw_str(&w, "m");
    CHECK_RC(s_raw_decode(d, &w), TELEM_ETOOBIG);
    msgpack_sbuffer_destroy(&w.sb);
}

/* A reply with one series whose ts and vl bins are given. */
static int
s_series_case(telem_decoder_t *d, s_raw_t *w, size_t nts, size_t nvl, bool with_vl)
{
    static const unsigned char zeros[64];
    s_raw_head(w, 5, 1, TELEM_MSG_QUERY_REPLY);
    s_raw_int(w, "id", 1);
    s_raw_str(w, "nd");
    s_raw_str(w, "n1");
    s_raw_str(w, "sr");
    msgpack_pack_array(&w->pk, 1);
    msgpack_pack_map(&w->pk, with_vl ? 3 : 2);
    s_raw_str(w, "m");
    s_raw_str(w, "cpu");
    s_raw_str(w, "ts");
    msgpack_pack_bin_with_body(&w->pk, zeros, nts);
    if (with_vl) {
        s_raw_str(w, "vl");
        msgpack_pack_bin_with_body(&w->pk, zeros, nvl);
    }
    return s_raw_decode(d, w);
}

static void
test_reply_refusals(telem_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    CHECK_RC(s_series_case(d, &w, 16, 16, true), 0);
    CHECK_RC(s_series_case(d, &w, 0, 0, true), 0);
    CHECK_RC(s_series_case(d, &w, 12, 12, true), TELEM_EPROTO);
    CHECK_RC(s_series_case(d, &w, 16, 8, true), TELEM_EPROTO);
    CHECK_RC(s_series_case(d, &w, 16, 0, false), TELEM_EPROTO);
    /* ts as a str instead of a bin */
    s_raw_head(&w, 4, 1, TELEM_MSG_QUERY_REPLY);
    s_raw_int(&w, "id", 1);
    s_raw_str(&w, "nd");
    s_raw_str(&w, "n1");
    s_raw_str(&w, "sr");
    msgpack_pack_array(&w.pk, 1);
    msgpack_pack_map(&w.pk, 3);
    s_raw_str(&w, "m");
    s_raw_str(&w, "cpu");
    s_raw_str(&w, "ts");
    s_raw_str(&w, "12345678");
    s_raw_str(&w, "vl");
    msgpack_pack_bin_with_body(&w.pk, "12345678", 8);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_destroy(&w.sb);
}

/* Forms a strict reader might refuse but telem accepts: keys in any order,
 * unknown keys of every type, ints for doubles, float32, nil tags, extra
 * sample elements, bool/int for flags. */
/* One value holding every msgpack form, for the skipping of unknown keys. */
static void
s_raw_every_form(s_raw_t *w)
{
    static char blob[70000];
    msgpack_packer *pk = &w->pk;
    msgpack_pack_map(pk, 1);
    s_raw_str(w, "a");
    msgpack_pack_array(pk, 29);
    msgpack_pack_nil(pk);
    msgpack_pack_true(pk);
    msgpack_pack_false(pk);
    msgpack_pack_int8(pk, -100);
    msgpack_pack_int16(pk, -1000);
    msgpack_pack_int32(pk, -100000);
    msgpack_pack_int64(pk, INT64_MIN);
    msgpack_pack_uint8(pk, 200);
    msgpack_pack_uint16(pk, 60000);
    msgpack_pack_uint32(pk, 4000000000u);
    msgpack_pack_uint64(pk, UINT64_MAX);
    msgpack_pack_float(pk, 1.0f);
    msgpack_pack_double(pk, 2.0);
    msgpack_pack_str_with_body(pk, blob, 40);      /* str 8 */
    msgpack_pack_str_with_body(pk, blob, 300);     /* str 16 */
    msgpack_pack_str_with_body(pk, blob, 70000);   /* str 32 */
    msgpack_pack_bin_with_body(pk, blob, 20);
    msgpack_pack_bin_with_body(pk, blob, 300);
    msgpack_pack_bin_with_body(pk, blob, 70000);
    static const size_t ext_len[] = { 1, 2, 4, 8, 16, 3, 300, 70000 };
    for (int i = 0; i < 8; i++)   /* fixext 1-16, ext 8/16/32 */
        msgpack_pack_ext_with_body(pk, blob, ext_len[i], 7);
    msgpack_pack_array(pk, 20);                    /* array 16 */
    for (int i = 0; i < 20; i++)
        msgpack_pack_array(pk, 0);
    msgpack_pack_map(pk, 20);                      /* map 16 */
    for (int i = 0; i < 20; i++) {
        msgpack_pack_int(pk, i);
        msgpack_pack_map(pk, 0);
    }
}

static void
s_build_lenient(s_raw_t *w)
{
    msgpack_sbuffer_clear(&w->sb);
    msgpack_pack_map(&w->pk, 6);
    s_raw_str(w, "zz");                       /* unknown: every msgpack form */
    s_raw_every_form(w);
    s_raw_str(w, "s");
    msgpack_pack_array(&w->pk, 3);
    msgpack_pack_array(&w->pk, 4);
    s_raw_str(w, "m");
    msgpack_pack_int64(&w->pk, -1000000);       /* int32 form */
    msgpack_pack_int(&w->pk, -3);               /* int value */
    msgpack_pack_int(&w->pk, 0);
    msgpack_pack_array(&w->pk, 5);
    s_raw_str(w, "m");
    msgpack_pack_int(&w->pk, -1);               /* negative fixint */
    msgpack_pack_float(&w->pk, 0.5f);
    msgpack_pack_int(&w->pk, 4);
    msgpack_pack_nil(&w->pk);                   /* no tags */
    msgpack_pack_array(&w->pk, 6);
    s_raw_str(w, "m2");
    msgpack_pack_uint64(&w->pk, 7);
    msgpack_pack_uint64(&w->pk, UINT64_MAX);
    msgpack_pack_int(&w->pk, 1);
    msgpack_pack_map(&w->pk, 1);
    s_raw_str(w, "k");
    s_raw_str(w, "v");
    s_raw_str(w, "later");                    /* a field of a later version */
    s_raw_int(w, "t", TELEM_MSG_BATCH);
    s_raw_str(w, "fin");
    msgpack_pack_uint64(&w->pk, UINT64_MAX);
    s_raw_str(w, "bin");
    msgpack_pack_bin_with_body(&w->pk, "xyz", 3);
    s_raw_int(w, "v", 1);                     /* v and t last */
}

static void
test_lenient_forms(telem_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    telem_msg_t out;
    s_build_lenient(&w);
    int rc = telem_proto_decode(d, w.sb.data, w.sb.size, &out);
    CHECK_RC(rc, 0);
    if (rc == 0) {
        const telem_batch_t *b = &out.u.batch;
        CHECK(out.type == TELEM_MSG_BATCH && b->nsamples == 3 && b->ntags == 0);
        CHECK(b->fin_token == UINT64_MAX && strcmp(b->source, "") == 0);
        CHECK(b->samples[0].ts_ns == -1000000 && b->samples[0].value == -3.0);
        CHECK(b->samples[1].ts_ns == -1 && b->samples[1].value == 0.5);
        CHECK(b->samples[1].level == 4 && b->samples[1].tags == NULL);
        CHECK(b->samples[2].value == 18446744073709551615.0);
        CHECK(b->samples[2].ntags == 1 && strcmp(b->samples[2].tags[0].value, "v") == 0);
        CHECK(strcmp(b->samples[2].metric, "m2") == 0 && strcmp(b->samples[0].metric, "m") == 0);
    }
    s_raw_head(&w, 6, 1, TELEM_MSG_CONTROL_REPLY);   /* int synced, op 99 */
    s_raw_int(&w, "id", 1);
    s_raw_int(&w, "op", 99);
    s_raw_int(&w, "sy", 1);
    s_raw_str(&w, "st");
    msgpack_pack_map(&w.pk, 1);
    s_raw_str(&w, "nd");
    s_raw_str(&w, "n");
    rc = telem_proto_decode(d, w.sb.data, w.sb.size, &out);
    CHECK_RC(rc, 0);
    CHECK(rc || (out.u.control_reply.synced == 1 && out.u.control_reply.op == 99 &&
                 out.u.control_reply.status.pid == 0));
    msgpack_sbuffer_destroy(&w.sb);
}

/* -------------------------------------------------------------- reuse */

static void
test_reuse(telem_encoder_t *e)
{
    telem_decoder_t *d = telem_decoder_new();
    telem_encoder_t *e2 = telem_encoder_new();
    CHECK(d && e2);
    s_corpus_t c;
    s_make_corpus(&c);
    /* a big reply grows the vectors past the trim threshold */
    enum { BIG = 200000 };
    int64_t *ts = malloc(BIG * sizeof *ts);
    double *v = malloc(BIG * sizeof *v);
    telem_series_t sr[3];
    telem_msg_t big = s_make_reply(sr, ts, v, BIG);
    for (int round = 0; round < 50; round++) {
        const telem_msg_t *m = round % 10 == 3 ? &big : &c.msg[round % 7];
        const void *data;
        size_t size;
        telem_msg_t out;
        CHECK_RC(s_encode(e, m, &data, &size), 0);
        CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
        CHECK(s_same_msg(m, &out));
        /* re-encode what was decoded (it points into d), then fail a
         * decode in between: neither may disturb the next decode */
        telem_msg_t copy = out;
        CHECK_RC(s_encode(e2, &copy, &data, &size), 0);
        CHECK_RC(telem_proto_decode(d, data, size / 2, &out), TELEM_EPROTO);
        CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
        CHECK(s_same_msg(m, &out));
    }
    free(ts);
    free(v);
    telem_decoder_destroy(&d);
    telem_encoder_destroy(&e2);
    CHECK(d == NULL && e2 == NULL);
    telem_decoder_destroy(&d);   /* NULL is fine */
    telem_decoder_destroy(NULL);
    telem_encoder_destroy(NULL);
}

/* ----------------------------------------------------------- mutation */

static uint64_t
s_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Flips random bytes of valid frames: the decoder must answer 0 or a
 * known error; whatever it accepts must re-encode and decode the same. */
static void
test_mutation(telem_encoder_t *e, telem_decoder_t *d)
{
    telem_decoder_t *d2 = telem_decoder_new();
    telem_encoder_t *e2 = telem_encoder_new();
    s_corpus_t c;
    s_make_corpus(&c);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int accepted = 0, bad_rc = 0, unstable = 0;
    for (int k = 0; k < 7; k++) {
        const void *data;
        size_t size;
        CHECK_RC(s_encode(e, &c.msg[k], &data, &size), 0);
        unsigned char *frame = malloc(size);
        unsigned char *copy = malloc(size);
        memcpy(frame, data, size);
        for (int it = 0; it < 3000; it++) {
            memcpy(copy, frame, size);
            int flips = 1 + (int) (s_next(&seed) % 4);
            for (int f = 0; f < flips; f++) {
                size_t at = s_next(&seed) % size;
                uint64_t r = s_next(&seed);
                copy[at] = r & 1 ? (unsigned char) (r >> 8) : copy[at] ^ (unsigned char) (1u << (r >> 8) % 8);
            }
            size_t n = s_next(&seed) % 8 == 0 ? s_next(&seed) % size : size;
            telem_msg_t out, again;
            int rc = telem_proto_decode(d, copy, n, &out);
            if (rc != 0 && rc != TELEM_EPROTO && rc != TELEM_EVERSION && rc != TELEM_ETOOBIG)
                bad_rc++;
            if (rc != 0)
                continue;
            accepted++;
            const void *d2data;
            size_t d2size;
            if (s_encode(e2, &out, &d2data, &d2size) != 0 ||
                telem_proto_decode(d2, d2data, d2size, &again) != 0 || !s_same_msg(&out, &again))
                unstable++;
        }
        free(frame);
        free(copy);
    }
    CHECK(bad_rc == 0);
    CHECK(unstable == 0);
    CHECK(accepted > 0);   /* some flips land in values: the test saw both paths */
    printf("mutation: %d of 21000 mutated frames accepted\n", accepted);
    telem_decoder_destroy(&d2);
    telem_encoder_destroy(&e2);
}

int
main(void)
{
    s_init_strings();
    telem_encoder_t *e = telem_encoder_new();
    telem_decoder_t *d = telem_decoder_new();
    if (!e || !d) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    CHECK(strcmp(telem_decoder_error(d), "no error") == 0);
    test_type_names();
    test_round_trips(e, d);
    test_encode_batch_refusals(e);
    test_encoder_refusals(e, d);
    test_truncation(e, d);
    test_header_refusals(d);
    test_mandatory_refusals(d);
    test_field_refusals(d);
    test_count_refusals(d);
    test_reply_refusals(d);
    test_lenient_forms(d);
    test_reuse(e);
    test_mutation(e, d);
    telem_encoder_destroy(&e);
    telem_decoder_destroy(&d);
    CHECK(e == NULL && d == NULL);
    if (s_failures) {
        fprintf(stderr, "test_proto: %d check(s) failed\n", s_failures);
        return 1;
    }
    printf("test_proto: all checks passed\n");
    return 0;
}
