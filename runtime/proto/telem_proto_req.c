/* telem_proto_req.c - message family "request": query (3), query_reply
 * (4), control (5), control_reply (6) and error (7), the request/reply
 * messages of the request socket (docs/protocol.md).
 *
 * Points of a query_reply travel as two little-endian bins per series
 * (timestamps, values): decoding is one copy into the decoder's aligned
 * point vectors (byte by byte only on big-endian or TELEM_PROTO_PORTABLE
 * builds).  Those vectors and the tag vector may move while the frame is
 * read, so series point into them only in the fix-up pass of s_dec_reply.
 */
#include "telem_proto_int.h"

#include <string.h>

#define S_MIN_SERIES 15   /* fixmap, "m", metric, "ts", bin, "vl", bin */

enum { Q_M = 3, Q_F };
static const tp_field_t s_query_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_query_t, id, 0, 0),
    TP_F("m", TP_K_X, 0, telem_query_t, metrics, 0, 0),
    TP_F("f", TP_K_X, 0, telem_query_t, filters, 0, 0),
    TP_F("s", TP_K_I64, 0, telem_query_t, start_ns, 0, 0),
    TP_F("e", TP_K_I64, 0, telem_query_t, end_ns, 0, 0),
    TP_F("n", TP_K_U32, 0, telem_query_t, max_points, 0, UINT32_MAX),
    TP_F("fl", TP_K_U32, 0, telem_query_t, flags, 0, UINT32_MAX) };

static const tp_field_t s_reply_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_query_reply_t, id, 0, 0),
    TP_F("nd", TP_K_NAME, 1, telem_query_reply_t, node, 0, 0),
    TP_F("tr", TP_K_BOOL8, 0, telem_query_reply_t, truncated, 0, 1),
    TP_F("sr", TP_K_X, 0, telem_query_reply_t, series, 0, 0) };

enum { S_TG = 4, S_TS, S_VL };
static const tp_field_t s_series_tab[] = {
    TP_F("m", TP_K_NAME, 1, telem_series_t, metric, 0, 0),
    TP_F("mt", TP_K_I32, 0, telem_series_t, type, 0, 1),
    TP_F("u", TP_K_TEXT, 0, telem_series_t, unit, 0, 0),
    TP_F("d", TP_K_TEXT, 0, telem_series_t, doc, 0, 0),
    TP_F("tg", TP_K_X, 0, telem_series_t, tags, 0, 0),
    TP_F("ts", TP_K_X, 1, telem_series_t, ts, 0, 0),
    TP_F("vl", TP_K_X, 1, telem_series_t, values, 0, 0) };

static const tp_field_t s_control_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_control_t, id, 0, 0),
    TP_F("op", TP_K_I32, 1, telem_control_t, op, 1, INT32_MAX),
    TP_F("a", TP_K_I64, 0, telem_control_t, arg, 0, 0) };

static const tp_field_t s_creply_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_control_reply_t, id, 0, 0),
    TP_F("op", TP_K_I32, 1, telem_control_reply_t, op, 1, INT32_MAX),
    TP_F("sy", TP_K_BOOL32, 0, telem_control_reply_t, synced, 0, 1),
    TP_F("st", TP_K_X, 1, telem_control_reply_t, status, 0, 0) };

static const tp_field_t s_status_tab[] = {
    TP_F("nd", TP_K_NAME, 1, telem_status_t, node, 0, 0),
    TP_F("pid", TP_K_I64, 0, telem_status_t, pid, 0, 0),
    TP_F("lv", TP_K_I32, 0, telem_status_t, level, 0, 4),
    TP_F("win", TP_K_I64, 0, telem_status_t, window_ns, 0, 0),
    TP_F("ivl", TP_K_I64, 0, telem_status_t, interval_ns, 0, 0),
    TP_F("up", TP_K_I64, 0, telem_status_t, uptime_ns, 0, 0),
    TP_F("ns", TP_K_U64, 0, telem_status_t, nseries, 0, 0),
    TP_F("np", TP_K_U64, 0, telem_status_t, npoints, 0, 0),
    TP_F("mem", TP_K_U64, 0, telem_status_t, mem_bytes, 0, 0),
    TP_F("cap", TP_K_U64, 0, telem_status_t, mem_cap_bytes, 0, 0),
    TP_F("in", TP_K_U64, 0, telem_status_t, ingested, 0, 0),
    TP_F("dr", TP_K_U64, 0, telem_status_t, dropped, 0, 0),
    TP_F("bad", TP_K_U64, 0, telem_status_t, bad_messages, 0, 0),
    TP_F("pr", TP_K_U64, 0, telem_status_t, push_refused, 0, 0),
    TP_F("lb", TP_K_U64, 0, telem_status_t, log_bytes, 0, 0),
    TP_F("lsg", TP_K_U64, 0, telem_status_t, log_segments, 0, 0),
    TP_F("fl", TP_K_U64, 0, telem_status_t, flushes, 0, 0),
    TP_F("lf", TP_K_I64, 0, telem_status_t, last_flush_ns, 0, 0),
    TP_F("fe", TP_K_U64, 0, telem_status_t, flush_errors, 0, 0),
    TP_F("den", TP_K_U64, 0, telem_status_t, denied, 0, 0),
    TP_F("rp", TP_K_U64, 0, telem_status_t, refused_peers, 0, 0) };

static const tp_field_t s_error_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_error_msg_t, id, 0, 0),
    TP_F("c", TP_K_I32, 1, telem_error_msg_t, code, INT32_MIN, INT32_MAX),
    TP_F("msg", TP_K_TEXT, 0, telem_error_msg_t, message, 0, 0) };

/* ------------------------------------------------------------ decoding */

static int
s_query_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_query_t *q = base;
    if (idx == Q_F) {
        d->mark[0] = d->ntags;
        int rc = tp_dec_tags(d, r, &q->nfilters);
        return rc ? tp_wrap(d, rc, "filters") : 0;
    }
    uint32_t n;
    int rc = tp_rd_count(r, false, 2, &n);
    if (rc)
        return tp_fail(d, rc, "metrics %s", r->why);
    if (n > TELEM_QUERY_METRICS_MAX)
        return tp_fail(d, TELEM_ETOOBIG, "%u metrics, the limit is %d", n,
                      TELEM_QUERY_METRICS_MAX);
    if ((rc = tp_reserve(&d->vec[TP_VEC_METRICS], n, sizeof(const char *))) != 0)
        return tp_fail(d, rc, "out of memory");
    const char **m = d->vec[TP_VEC_METRICS].p;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &m[i])) != 0)
            return tp_fail(d, rc, "metric %u %s", i, r->why);
    q->metrics = n ? m : NULL;
    q->nmetrics = n;
    return 0;
}

static int
s_dec_query(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    telem_query_t *q = msg;
    int rc = tp_dec_map(d, r, nkeys, s_query_tab, TP_NTAB(s_query_tab), q, s_query_x);
    if (rc == 0) {
        size_t c = d->mark[0];
        tp_fix_tags(d, &q->filters, q->nfilters, &c);
    }
    return rc;
}

/* One bin of little-endian 8-byte words into points[d->npts ...]. */
static int
s_dec_points(telem_proto_decoder_t *d, telem_rd_t *r, bool values, uint32_t *n)
{
    const uint8_t *b;
    uint32_t len;
    int rc = tp_rd_bytes(r, true, &b, &len);
    if (rc)
        return tp_fail(d, rc, "%s %s", values ? "vl" : "ts", r->why);
    if (len % 8)
        return tp_fail(d, TELEM_EPROTO, "%s length %u is not a multiple of 8",
                      values ? "vl" : "ts", len);
    *n = len / 8;
    if (*n == 0)
        return 0;
    if ((rc = tp_reserve(&d->vec[TP_VEC_TS], d->npts + *n, sizeof(int64_t))) != 0 ||
        (rc = tp_reserve(&d->vec[TP_VEC_VALS], d->vec[TP_VEC_TS].cap, sizeof(double))) != 0)
        return tp_fail(d, rc, "out of memory");
    void *dst = values ? (void *) ((double *) d->vec[TP_VEC_VALS].p + d->npts)
                       : (void *) ((int64_t *) d->vec[TP_VEC_TS].p + d->npts);
#if TP_LITTLE_ENDIAN
    memcpy(dst, b, len);
#else
    for (uint32_t i = 0; i < *n; i++) {
        uint64_t w = 0;
        for (int k = 7; k >= 0; k--)
            w = w << 8 | b[8 * i + (uint32_t) k];
        memcpy((char *) dst + 8 * i, &w, 8);
    }
#endif
    return 0;
}

static int
s_series_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_series_t *s = base;
    if (idx == S_TG)
        return tp_dec_tags(d, r, &s->ntags);
    return s_dec_points(d, r, idx == S_VL, idx == S_VL ? &d->nvl : &d->nts);
}

static int
s_dec_series(telem_proto_decoder_t *d, telem_rd_t *r, telem_series_t *s)
{
    uint32_t nkeys;
    int rc = tp_rd_count(r, true, 2, &nkeys);
    if (rc)
        return tp_fail(d, rc, "%s", r->why);
    memset(s, 0, sizeof *s);
    if ((rc = tp_dec_map(d, r, nkeys, s_series_tab, TP_NTAB(s_series_tab), s,
                        s_series_x)) != 0)
        return rc;
    if (d->nts != d->nvl)
        return tp_fail(d, TELEM_EPROTO, "%u timestamps but %u values", d->nts, d->nvl);
    s->npoints = d->nts;
    d->npts += d->nts;
    return 0;
}

static int
s_reply_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_query_reply_t *q = base;
    uint32_t n;
    (void) idx;
    int rc = tp_rd_count(r, false, S_MIN_SERIES, &n);
    if (rc)
        return tp_fail(d, rc, "series %s", r->why);
    if ((rc = tp_reserve(&d->vec[TP_VEC_SERIES], n, sizeof(telem_series_t))) != 0)
        return tp_fail(d, rc, "out of memory");
    telem_series_t *s = d->vec[TP_VEC_SERIES].p;
    d->mark[0] = d->ntags;
    for (uint32_t i = 0; i < n; i++) {
        d->nts = d->nvl = 0;
        if ((rc = s_dec_series(d, r, &s[i])) != 0)
            return tp_wrap(d, rc, "series %u", i);
    }
    q->series = n ? s : NULL;
    q->nseries = n;
    return 0;
}

static int
s_dec_reply(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    telem_query_reply_t *q = msg;
    int rc = tp_dec_map(d, r, nkeys, s_reply_tab, TP_NTAB(s_reply_tab), q, s_reply_x);
    if (rc)
        return rc;
    size_t c = d->mark[0], pt = 0;
    telem_series_t *s = d->vec[TP_VEC_SERIES].p;
    for (uint32_t i = 0; i < q->nseries; i++) {
        tp_fix_tags(d, &s[i].tags, s[i].ntags, &c);
        s[i].ts = s[i].npoints ? (const int64_t *) d->vec[TP_VEC_TS].p + pt : NULL;
        s[i].values = s[i].npoints ? (const double *) d->vec[TP_VEC_VALS].p + pt : NULL;
        pt += s[i].npoints;
    }
    return 0;
}

static int
s_dec_control(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys,
              void *msg)
{
    return tp_dec_map(d, r, nkeys, s_control_tab, TP_NTAB(s_control_tab), msg, NULL);
}

static int
s_creply_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_control_reply_t *c = base;
    uint32_t n;
    (void) idx;
    int rc = tp_rd_count(r, true, 2, &n);
    if (rc)
        return tp_fail(d, rc, "st %s", r->why);
    rc = tp_dec_map(d, r, n, s_status_tab, TP_NTAB(s_status_tab), &c->status, NULL);
    return rc ? tp_wrap(d, rc, "status") : 0;
}

static int
s_dec_creply(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return tp_dec_map(d, r, nkeys, s_creply_tab, TP_NTAB(s_creply_tab), msg, s_creply_x);
}

static int
s_dec_error(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return tp_dec_map(d, r, nkeys, s_error_tab, TP_NTAB(s_error_tab), msg, NULL);
}

/* ------------------------------------------------------------ encoding */

int
telem_proto_encode_query(telem_proto_encoder_t *e, const telem_query_t *m,
                         const void **data, size_t *size)
{
    if (!e || !m || !data || !size || (m->nmetrics && !m->metrics))
        return TELEM_EINVAL;
    if (m->nmetrics > TELEM_QUERY_METRICS_MAX)
        return TELEM_ETOOBIG;
    int rc = tp_enc_begin(e, TELEM_MSG_QUERY, s_query_tab, TP_NTAB(s_query_tab), m);
    if (rc == 0) {
        tp_put_key(e, "f");
        rc = tp_enc_tags(e, m->filters, m->nfilters);
    }
    if (rc == 0) {
        tp_put_key(e, "m");
        e->fail |= msgpack_pack_array(&e->pk, m->nmetrics);
    }
    for (uint32_t i = 0; rc == 0 && i < m->nmetrics; i++)
        rc = tp_put_name(e, m->metrics[i]);
    return tp_enc_end(e, rc, data, size);
}

static int
s_enc_series(telem_proto_encoder_t *e, const telem_series_t *s)
{
    if (s->npoints && (!s->ts || !s->values))
        return TELEM_EINVAL;
    if (s->npoints > TELEM_PROTO_MAX_MSG / 16)
        return TELEM_ETOOBIG;
    e->fail |= msgpack_pack_map(&e->pk, (size_t) TP_NTAB(s_series_tab));
    int rc = tp_enc_fields(e, s_series_tab, TP_NTAB(s_series_tab), s);
    if (rc)
        return rc;
    tp_put_key(e, "tg");
    if ((rc = tp_enc_tags(e, s->tags, s->ntags)) != 0)
        return rc;
    tp_put_key(e, "ts");
    tp_put_words(e, s->ts, s->npoints);
    tp_put_key(e, "vl");
    tp_put_words(e, s->values, s->npoints);
    return e->toobig ? TELEM_ETOOBIG : 0;
}

int
telem_proto_encode_query_reply(telem_proto_encoder_t *e,
                               const telem_query_reply_t *m, const void **data,
                               size_t *size)
{
    if (!e || !m || !data || !size || (m->nseries && !m->series))
        return TELEM_EINVAL;
    const tp_field_t *tab = s_reply_tab;
    int rc = tp_enc_begin(e, TELEM_MSG_QUERY_REPLY, tab, TP_NTAB(s_reply_tab), m);
    if (rc == 0) {
        tp_put_key(e, "sr");
        e->fail |= msgpack_pack_array(&e->pk, m->nseries);
    }
    for (uint32_t i = 0; rc == 0 && i < m->nseries; i++)
        rc = s_enc_series(e, &m->series[i]);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_control(telem_proto_encoder_t *e, const telem_control_t *m,
                           const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_CONTROL, s_control_tab, TP_NTAB(s_control_tab), m);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_control_reply(telem_proto_encoder_t *e,
                                 const telem_control_reply_t *m,
                                 const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    const tp_field_t *tab = s_creply_tab;
    int rc = tp_enc_begin(e, TELEM_MSG_CONTROL_REPLY, tab, TP_NTAB(s_creply_tab), m);
    if (rc == 0) {
        tp_put_key(e, "st");
        e->fail |= msgpack_pack_map(&e->pk, (size_t) TP_NTAB(s_status_tab));
        rc = tp_enc_fields(e, s_status_tab, TP_NTAB(s_status_tab), &m->status);
    }
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_error(telem_proto_encoder_t *e, const telem_error_msg_t *m,
                         const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_ERROR, s_error_tab, TP_NTAB(s_error_tab), m);
    return tp_enc_end(e, rc, data, size);
}

/* -------------------------------------------------------- registration */

static const tp_type_t s_types[] = {
    { TELEM_MSG_QUERY, "query", s_dec_query, sizeof(telem_query_t) },
    { TELEM_MSG_QUERY_REPLY, "query_reply", s_dec_reply,
      sizeof(telem_query_reply_t) },
    { TELEM_MSG_CONTROL, "control", s_dec_control, sizeof(telem_control_t) },
    { TELEM_MSG_CONTROL_REPLY, "control_reply", s_dec_creply,
      sizeof(telem_control_reply_t) },
    { TELEM_MSG_ERROR, "error", s_dec_error, sizeof(telem_error_msg_t) },
};

const tp_family_t tp_request_family = {
    "request", s_types, sizeof s_types / sizeof s_types[0]
};
