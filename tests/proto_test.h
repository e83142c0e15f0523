/* proto_test.h - shared by the codec's tests (test_proto.c: round trips,
 * encoder refusals, reuse; test_proto_bad.c: malformed input): the check
 * macros, field-by-field comparison of messages, a raw msgpack frame
 * builder for malformed input, and fixtures (one valid message of every
 * type).  Everything is static (inline) so each test file takes what it
 * needs.
 */
#ifndef TELEM_TESTS_PROTO_TEST_H
#define TELEM_TESTS_PROTO_TEST_H

#include "telem_proto.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "check.h"

/* ------------------------------------------------------------- helpers */

static inline const char *
s0(const char *s)
{
    return s ? s : "";
}

static inline bool
s_same_str(const char *a, const char *b)
{
    return b && strcmp(s0(a), b) == 0;
}

static inline bool
s_same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static inline bool
s_same_tags(const telem_tag_t *a, uint32_t na, const telem_tag_t *b, uint32_t nb)
{
    if (na != nb || (nb == 0 && b != NULL))
        return false;
    for (uint32_t i = 0; i < na; i++)
        if (!s_same_str(a[i].key, b[i].key) || !s_same_str(a[i].value, b[i].value))
            return false;
    return true;
}

static inline bool
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
            x->kind != y->kind ||
            !s_same_tags(x->tags, x->ntags, y->tags, y->ntags))
            return false;
    }
    return true;
}

static inline bool
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

static inline bool
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

static inline bool
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

static inline bool
s_same_status(const telem_status_t *a, const telem_status_t *b)
{
    return s_same_str(a->node, b->node) && a->pid == b->pid && a->level == b->level &&
           a->window_ns == b->window_ns && a->interval_ns == b->interval_ns &&
           a->uptime_ns == b->uptime_ns && a->nseries == b->nseries &&
           a->npoints == b->npoints && a->mem_bytes == b->mem_bytes &&
           a->mem_cap_bytes == b->mem_cap_bytes && a->ingested == b->ingested &&
           a->dropped == b->dropped && a->bad_messages == b->bad_messages &&
           a->push_refused == b->push_refused && a->log_bytes == b->log_bytes &&
           a->log_segments == b->log_segments && a->flushes == b->flushes &&
           a->last_flush_ns == b->last_flush_ns &&
           a->flush_errors == b->flush_errors && a->denied == b->denied &&
           a->refused_peers == b->refused_peers;
}

static inline bool
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

static inline int
s_encode(telem_proto_encoder_t *e, const telem_msg_t *m, const void **data,
         size_t *size)
{
    switch (m->type) {
    case TELEM_MSG_BATCH:
        return telem_proto_encode_batch(e, &m->u.batch, data, size);
    case TELEM_MSG_META:
        return telem_proto_encode_meta(e, &m->u.meta, data, size);
    case TELEM_MSG_QUERY:
        return telem_proto_encode_query(e, &m->u.query, data, size);
    case TELEM_MSG_QUERY_REPLY:
        return telem_proto_encode_query_reply(e, &m->u.query_reply, data, size);
    case TELEM_MSG_CONTROL:
        return telem_proto_encode_control(e, &m->u.control, data, size);
    case TELEM_MSG_CONTROL_REPLY:
        return telem_proto_encode_control_reply(e, &m->u.control_reply, data,
                                                size);
    case TELEM_MSG_ERROR:
        return telem_proto_encode_error(e, &m->u.error, data, size);
    }
    return TELEM_EINVAL;
}

/* Encodes m, decodes it with d and checks every field came back. */
static inline void
s_round_trip(telem_proto_encoder_t *e, telem_proto_decoder_t *d,
             const telem_msg_t *m)
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
        fprintf(stderr, "round trip of a %s changed it\n",
                telem_proto_msg_type_name(m->type));
    }
}

/* A raw frame builder for malformed input. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} s_raw_t;

static inline void
s_raw_init(s_raw_t *w)
{
    msgpack_sbuffer_init(&w->sb);
    msgpack_packer_init(&w->pk, &w->sb, msgpack_sbuffer_write);
}

static inline void
s_raw_str(s_raw_t *w, const char *s)
{
    msgpack_pack_str_with_body(&w->pk, s, strlen(s));
}

static inline void
s_raw_int(s_raw_t *w, const char *key, int64_t v)
{
    s_raw_str(w, key);
    msgpack_pack_int64(&w->pk, v);
}

/* Starts a top map of n pairs with "v" and "t" (n counts them). */
static inline void
s_raw_head(s_raw_t *w, size_t n, int64_t version, int64_t type)
{
    msgpack_sbuffer_clear(&w->sb);
    msgpack_pack_map(&w->pk, n);
    s_raw_int(w, "v", version);
    s_raw_int(w, "t", type);
}

static inline int
s_raw_decode(telem_proto_decoder_t *d, s_raw_t *w)
{
    telem_msg_t out;
    return telem_proto_decode(d, w->sb.data, w->sb.size, &out);
}

/* A batch with one sample whose pieces the caller writes: 4-element array
 * follows after this call. */
static inline void
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

static inline void
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
static inline telem_msg_t
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
            .ntags = i % 4 == 1 ? 3 : 0,
            /* kinds with and without tags (elements 4 and 5) */
            .kind = (uint8_t) (i % 7 == 3 ? 1 : i % 7 == 5 ? 255 : 0) };
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

static inline telem_msg_t
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
    .dropped = 6, .bad_messages = 7, .push_refused = 8, .log_bytes = 9,
    .log_segments = 10, .flushes = 11, .last_flush_ns = 12,
    .flush_errors = 13, .denied = 14, .refused_peers = UINT64_MAX };

/* One valid message of each type, for truncation and mutation. */
typedef struct {
    telem_sample_t samples[8];
    telem_series_t series[3];
    int64_t ts[8];
    double v[8];
    const char *metrics[2];
    telem_msg_t msg[7];
} s_corpus_t;

static inline void
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

#endif
