/* telem_proto_dec.c - the decoder: its object, the trimming of its string
 * arena and typed vectors between frames, and the dispatch of
 * telem_proto_decode() over the registered message families.
 *
 * The decoder keeps its memory between calls (a fresh allocation per
 * frame would dominate the ingest path): one string arena reserved at the
 * frame size (a string of n bytes costs at least n+1 on the wire, so it
 * never moves during a decode) and typed vectors for samples, tags,
 * series, metric names and points.  Tags and points live in vectors that
 * may grow mid-decode, so messages point into them only in a final fix-up
 * pass.  Vectors that a past large frame left far bigger than the current
 * one are released.
 *
 * Message types are not listed here: each family (telem_proto_ingest.c,
 * telem_proto_req.c, ...) exports a tp_family_t of {type, name, decode fn,
 * struct size}, and s_families below names the families.  Message fields
 * are described by tables (telem_proto_int.h) shared with the encoders;
 * only arrays and nested maps have hand-written code.
 *
 * Call order (each file calls only those below it):
 *   telem_proto_dec.c       the decoder object and dispatch (this file)
 *   telem_proto_ingest.c, telem_proto_req.c, telem_proto_dict.c,
 *   telem_proto_watch.c     the message families: encoders and decoders
 *   telem_proto_dec_map.c   decoding helpers: vectors, strings, reasons,
 *                           table-driven maps and tags
 *   telem_proto_enc.c       the encoder object and its writing helpers
 *   telem_proto_rd.c        the msgpack reader
 * The families are only named here, in s_families; the decoder reaches
 * them through their tables, never the other way round.
 */
#include "telem_proto_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_KEEP_BYTES (1u << 20)   /* vectors above this may be released */

_Static_assert(sizeof(telem_metric_type_t) == sizeof(int32_t), "enum size");
_Static_assert(sizeof(telem_ctl_op_t) == sizeof(int32_t), "enum size");

/* Every message family.  Add a family here (and its declaration in
 * telem_proto_int.h); tp_families_check() guards the numbering. */
static const tp_family_t *const s_families[] = {
    &tp_ingest_family,
    &tp_request_family,
    &tp_dict_family,
    &tp_watch_family,
    &tp_sysinfo_family,
    &tp_relay_family,
};
#define S_NFAMILIES (sizeof s_families / sizeof s_families[0])

/* Element sizes of the decoder's vectors, in TP_VEC_* order. */
static const size_t s_vec_elem[TP_VEC_COUNT] = {
    [TP_VEC_STR] = 1,
    [TP_VEC_SAMPLES] = sizeof(telem_sample_t),
    [TP_VEC_TAGS] = sizeof(telem_tag_t),
    [TP_VEC_SERIES] = sizeof(telem_series_t),
    [TP_VEC_METRICS] = sizeof(const char *),
    [TP_VEC_TS] = sizeof(int64_t),
    [TP_VEC_VALS] = sizeof(double),
    [TP_VEC_DICT] = sizeof(telem_dict_op_t) > sizeof(telem_dict_res_t)
                    ? sizeof(telem_dict_op_t) : sizeof(telem_dict_res_t),
    [TP_VEC_WATCH] = 1,
    [TP_VEC_RELAY] = sizeof(telem_relay_item_t),
};

/* ------------------------------------------------------------- memory */

/* Releases a vector that a past large frame left far bigger than this one
 * can need, so one huge message does not pin its memory forever. */
static void
s_trim(tp_vec_t *v, size_t sz, size_t frame)
{
    if (v->cap * sz > S_KEEP_BYTES && v->cap * sz / 16 > frame) {
        free(v->p);
        v->p = NULL;
        v->cap = 0;
    }
}

/* -------------------------------------------------------------- dispatch */

const tp_type_t *
tp_type_find(int64_t type)
{
    for (size_t f = 0; f < S_NFAMILIES; f++)
        for (size_t i = 0; i < s_families[f]->ntypes; i++)
            if (s_families[f]->types[i].type == type)
                return &s_families[f]->types[i];
    return NULL;
}

const tp_family_t *const *
tp_families(size_t *n)
{
    *n = S_NFAMILIES;
    return s_families;
}

/* How many times `type` is registered in fams. */
static size_t
s_count_type(const tp_family_t *const *fams, size_t nfams, int type)
{
    size_t k = 0;
    for (size_t f = 0; f < nfams; f++)
        for (size_t i = 0; i < fams[f]->ntypes; i++)
            k += fams[f]->types[i].type == type;
    return k;
}

int
tp_families_check(const tp_family_t *const *fams, size_t nfams, char *why,
                  size_t whylen)
{
    char dummy[8];
    if (!why)
        why = dummy, whylen = sizeof dummy;
    for (size_t f = 0; f < nfams; f++) {
        const tp_family_t *fam = fams[f];
        for (size_t i = 0; i < fam->ntypes; i++) {
            const tp_type_t *t = &fam->types[i];
            const char *bad = t->type <= 0 || t->type > TP_TYPE_MAX ? "out of range"
                            : !t->name || !t->decode ? "without a name or decoder"
                            : t->size > sizeof(((telem_msg_t *) 0)->u) ? "too big"
                            : s_count_type(fams, nfams, t->type) > 1
                                ? "registered twice" : NULL;
            if (bad) {
                snprintf(why, whylen, "family %s: type %d %s", fam->name,
                         t->type, bad);
                return TELEM_EINVAL;
            }
        }
    }
    return 0;
}

const char *
telem_proto_msg_type_name(int type)
{
    const tp_type_t *t = tp_type_find(type);
    return t ? t->name : "unknown";
}

/* Finds "v" and "t" wherever they are in the top map (senders put them
 * first, so this usually reads two pairs) and checks the version. */
static int
s_find_vt(telem_proto_decoder_t *d, telem_rd_t r, uint32_t nkeys, int64_t *type)
{
    int64_t v = 0;
    int have = 0, rc;
    for (uint32_t i = 0; i < nkeys && have != 3; i++) {
        const uint8_t *k;
        uint32_t klen;
        if ((rc = tp_rd_bytes(&r, false, &k, &klen)) != 0)
            return tp_fail(d, rc, "key %u %s", i, r.why);
        int which = klen == 1 && *k == 'v' ? 1 : klen == 1 && *k == 't' ? 2 : 0;
        if (which == 1)
            rc = tp_rd_i64(&r, &v);
        else if (which == 2)
            rc = tp_rd_i64(&r, type);
        else
            rc = tp_rd_skip(&r);
        if (rc)
            return tp_fail(d, rc, "%s %s",
                           which ? (which == 1 ? "v" : "t") : "value", r.why);
        have |= which;
    }
    if (!(have & 1))
        return tp_fail(d, TELEM_EPROTO, "missing \"v\"");
    if (v != TELEM_PROTO_VERSION)
        return tp_fail(d, TELEM_EVERSION, "version %lld, this build speaks %d",
                       (long long) v, TELEM_PROTO_VERSION);
    if (!(have & 2))
        return tp_fail(d, TELEM_EPROTO, "missing \"t\"");
    return 0;
}

/* Per-frame reset: the string arena must hold every string of the frame
 * without moving, which size+1 bytes always does. */
static int
s_begin(telem_proto_decoder_t *d, size_t size)
{
    for (int i = 0; i < TP_VEC_COUNT; i++)
        s_trim(&d->vec[i], s_vec_elem[i], size);
    d->nstr = d->ntags = d->npts = 0;
    d->mark[0] = d->mark[1] = 0;
    d->last_raw = NULL;
    d->last_len = 0;
    d->last_copy = NULL;
    return tp_reserve(&d->vec[TP_VEC_STR], size + 1, 1);
}

int
telem_proto_decode(telem_proto_decoder_t *d, const void *data, size_t size,
                   telem_msg_t *out)
{
    if (!d || !out || (!data && size))
        return TELEM_EINVAL;
    if (size == 0)
        return tp_fail(d, TELEM_EPROTO, "empty frame");
    if (size > TELEM_PROTO_MAX_MSG)
        return tp_fail(d, TELEM_ETOOBIG, "frame of %zu bytes, the limit is %u",
                       size, TELEM_PROTO_MAX_MSG);
    if (s_begin(d, size) != 0)
        return tp_fail(d, TELEM_ENOMEM, "out of memory");
    telem_rd_t r = { data, (const uint8_t *) data + size, NULL };
    uint32_t nkeys;
    int64_t type = 0;
    int rc = tp_rd_count(&r, true, 2, &nkeys);
    if (rc)
        return tp_fail(d, rc, "top level %s", r.why);
    if ((rc = s_find_vt(d, r, nkeys, &type)) != 0)
        return rc;
    const tp_type_t *t = tp_type_find(type);
    if (!t)
        return tp_fail(d, TELEM_EPROTO, "unknown message type %lld", (long long) type);
    assert(t->size <= sizeof out->u);
    memset(out, 0, sizeof *out);
    out->type = (telem_msg_type_t) type;
    if ((rc = t->decode(d, &r, nkeys, &out->u)) != 0)
        return tp_wrap(d, rc, "%s", t->name);
    if (r.p != r.end)
        return tp_fail(d, TELEM_EPROTO, "%s: %zu trailing bytes after the map",
                       t->name, tp_left(&r));
    return 0;
}

const char *
telem_proto_decoder_error(const telem_proto_decoder_t *d)
{
    return d ? d->err : "no decoder";
}

telem_proto_decoder_t *
telem_proto_decoder_new(void)
{
    telem_proto_decoder_t *d = calloc(1, sizeof *d);
    if (d)
        snprintf(d->err, sizeof d->err, "no error");
    return d;
}

void
telem_proto_decoder_destroy(telem_proto_decoder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_proto_decoder_t *d = *self_p;
    for (int i = 0; i < TP_VEC_COUNT; i++)
        free(d->vec[i].p);
    free(d);
    *self_p = NULL;
}
