/* telem_proto_ingest.c - message family "ingest": batch (1) and meta (2),
 * the one-way messages of the ingest socket (docs/protocol.md).
 *
 * batch is the hot path: a sample is a msgpack array rather than a map to
 * keep it small, and its metric name usually repeats the previous one, so
 * the decoder compares the raw bytes with the last name and reuses the
 * arena copy instead of scanning and copying again.  Sample tags are
 * appended to the decoder's tag vector, which may move, so samples point
 * at their tags only in a fix-up pass after the whole frame is read.
 */
#include "telem_proto_int.h"

#include <string.h>

#define S_MIN_SAMPLE 6   /* fixarray, metric (>= 2), ts, value, level */

enum { B_SRC = 2, B_FIN, B_TG, B_S };
static const tp_field_t s_batch_tab[] = { TP_FV,
    TP_F("src", TP_K_STR, 0, telem_batch_t, source, 0, 0),
    TP_F("fin", TP_K_U64, 0, telem_batch_t, fin_token, 0, 0),
    TP_F("tg", TP_K_X, 0, telem_batch_t, tags, 0, 0),
    TP_F("s", TP_K_X, 0, telem_batch_t, samples, 0, 0) };

static const tp_field_t s_meta_tab[] = { TP_FV,
    TP_F("m", TP_K_NAME, 1, telem_meta_t, metric, 0, 0),
    TP_F("mt", TP_K_I32, 0, telem_meta_t, type, 0, 1),
    TP_F("u", TP_K_TEXT, 0, telem_meta_t, unit, 0, 0),
    TP_F("d", TP_K_TEXT, 0, telem_meta_t, doc, 0, 0) };

/* ------------------------------------------------------------ decoding */

/* Sample metric names usually repeat: reuse the last copy when the bytes
 * match, so the hot path skips a scan and a copy. */
static int
s_take_metric(telem_proto_decoder_t *d, telem_rd_t *r, const char **out)
{
    const uint8_t *p = r->p;
    if (p < r->end && *p >= 0xa1 && *p <= 0xbf && d->last_len == (uint32_t) (*p - 0xa0)
        && tp_left(r) > d->last_len && memcmp(p + 1, d->last_raw, d->last_len) == 0) {
        r->p += 1 + d->last_len;
        *out = d->last_copy;
        return 0;
    }
    int rc = tp_take_str(d, r, TELEM_NAME_MAX, true, out);
    if (rc)
        return rc;
    d->last_len = (uint32_t) strlen(*out);
    d->last_raw = r->p - d->last_len;
    d->last_copy = *out;
    return 0;
}

static int
s_dec_sample(telem_proto_decoder_t *d, telem_rd_t *r, telem_sample_t *s)
{
    uint32_t n;
    int64_t level;
    int rc = tp_rd_count(r, false, 1, &n);
    if (rc)
        return tp_fail(d, rc, "%s", r->why);
    if (n < 4)
        return tp_fail(d, TELEM_EPROTO, "has %u elements, expected 4 or 5", n);
    if ((rc = s_take_metric(d, r, &s->metric)) != 0)
        return tp_fail(d, rc, "metric %s", r->why);
    if ((rc = tp_rd_i64(r, &s->ts_ns)) != 0)
        return tp_fail(d, rc, "timestamp %s", r->why);
    if ((rc = tp_rd_f64(r, &s->value)) != 0)
        return tp_fail(d, rc, "value %s", r->why);
    if ((rc = tp_rd_i64(r, &level)) != 0)
        return tp_fail(d, rc, "level %s", r->why);
    if (level < 0 || level > 4)
        return tp_fail(d, TELEM_EPROTO, "level %lld is not 0-4", (long long) level);
    s->level = (uint8_t) level;
    s->ntags = 0;
    s->tags = NULL;
    s->kind = TELEM_SAMPLE_VALUE;
    if (n >= 5 && r->p < r->end && *r->p == 0xc0)
        r->p++;
    else if (n >= 5 && (rc = tp_dec_tags(d, r, &s->ntags)) != 0)
        return rc;
    if (n >= 6) {
        int64_t kind;
        if ((rc = tp_rd_i64(r, &kind)) != 0)
            return tp_fail(d, rc, "kind %s", r->why);
        if (kind < 0 || kind > 255)
            return tp_fail(d, TELEM_EPROTO, "kind %lld is not 0-255",
                           (long long) kind);
        s->kind = (uint8_t) kind;
    }
    for (uint32_t k = 6; k < n; k++)   /* fields of later versions */
        if ((rc = tp_rd_skip(r)) != 0)
            return tp_fail(d, rc, "element %u %s", k, r->why);
    return 0;
}

static int
s_dec_samples(telem_proto_decoder_t *d, telem_rd_t *r, telem_batch_t *b)
{
    uint32_t n;
    int rc = tp_rd_count(r, false, S_MIN_SAMPLE, &n);
    if (rc)
        return tp_fail(d, rc, "samples %s", r->why);
    if (n > TELEM_BATCH_MAX)
        return tp_fail(d, TELEM_ETOOBIG, "%u samples, the limit is %d", n,
                       TELEM_BATCH_MAX);
    tp_vec_t *v = &d->vec[TP_VEC_SAMPLES];
    if ((rc = tp_reserve(v, n, sizeof(telem_sample_t))) != 0)
        return tp_fail(d, rc, "out of memory");
    telem_sample_t *s = v->p;
    d->mark[1] = d->ntags;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = s_dec_sample(d, r, &s[i])) != 0)
            return tp_wrap(d, rc, "sample %u", i);
    b->samples = n ? s : NULL;
    b->nsamples = n;
    return 0;
}

static int
s_batch_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_batch_t *b = base;
    if (idx == B_TG) {
        d->mark[0] = d->ntags;
        return tp_dec_tags(d, r, &b->ntags);
    }
    return s_dec_samples(d, r, b);
}

static int
s_dec_batch(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    telem_batch_t *b = msg;
    int rc = tp_dec_map(d, r, nkeys, s_batch_tab, TP_NTAB(s_batch_tab), b,
                        s_batch_x);
    if (rc)
        return rc;
    size_t c = d->mark[0];
    tp_fix_tags(d, &b->tags, b->ntags, &c);
    c = d->mark[1];
    telem_sample_t *s = d->vec[TP_VEC_SAMPLES].p;
    for (uint32_t i = 0; i < b->nsamples; i++)
        tp_fix_tags(d, &s[i].tags, s[i].ntags, &c);
    return 0;
}

static int
s_dec_meta(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return tp_dec_map(d, r, nkeys, s_meta_tab, TP_NTAB(s_meta_tab), msg, NULL);
}

/* ------------------------------------------------------------ encoding */

static int
s_enc_sample(telem_proto_encoder_t *e, const telem_sample_t *s)
{
    if (s->level > 4)
        return TELEM_EINVAL;
    /* Trailing elements only when needed: a plain sample without tags
     * stays 4 elements, as version 1 first sent it. */
    e->fail |= msgpack_pack_array(&e->pk, s->kind ? 6 : s->ntags ? 5 : 4);
    int rc = tp_put_name(e, s->metric);
    if (rc)
        return rc;
    e->fail |= msgpack_pack_int64(&e->pk, s->ts_ns);
    e->fail |= msgpack_pack_double(&e->pk, s->value);
    e->fail |= msgpack_pack_uint8(&e->pk, s->level);
    if (s->ntags)
        rc = tp_enc_tags(e, s->tags, s->ntags);
    else if (s->kind)
        e->fail |= msgpack_pack_nil(&e->pk);
    if (s->kind)
        e->fail |= msgpack_pack_uint8(&e->pk, s->kind);
    return rc;
}

int
telem_proto_encode_batch(telem_proto_encoder_t *e, const telem_batch_t *m,
                         const void **data, size_t *size)
{
    if (!e || !m || !data || !size || (m->nsamples && !m->samples))
        return TELEM_EINVAL;
    if (m->nsamples > TELEM_BATCH_MAX)
        return TELEM_ETOOBIG;
    int rc = tp_enc_begin(e, TELEM_MSG_BATCH, s_batch_tab, TP_NTAB(s_batch_tab), m);
    if (rc == 0) {
        tp_put_key(e, "tg");
        rc = tp_enc_tags(e, m->tags, m->ntags);
    }
    if (rc == 0) {
        tp_put_key(e, "s");
        e->fail |= msgpack_pack_array(&e->pk, m->nsamples);
    }
    for (uint32_t i = 0; rc == 0 && i < m->nsamples; i++)
        rc = s_enc_sample(e, &m->samples[i]);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_meta(telem_proto_encoder_t *e, const telem_meta_t *m,
                        const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_META, s_meta_tab, TP_NTAB(s_meta_tab), m);
    return tp_enc_end(e, rc, data, size);
}

/* -------------------------------------------------------- registration */

static const tp_type_t s_types[] = {
    { TELEM_MSG_BATCH, "batch", s_dec_batch, sizeof(telem_batch_t) },
    { TELEM_MSG_META, "meta", s_dec_meta, sizeof(telem_meta_t) },
};

const tp_family_t tp_ingest_family = {
    "ingest", s_types, sizeof s_types / sizeof s_types[0]
};
