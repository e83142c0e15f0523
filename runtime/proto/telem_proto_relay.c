/* telem_proto_relay.c - message family "relay": relay (24) and
 * relay_reply (25), the envelope between the analysis client and
 * telem_relay (telem_proto_relay.h, docs/protocol.md).
 *
 * The frames a relay carries travel as msgpack bins and are copied, as
 * bytes, into the decoder's string arena (reserved at the frame's size, so
 * it never moves while a frame decodes: a bin of n bytes costs at least
 * n+2 on the wire).  Node lists go into the metric-name vector and items
 * into their own vector; both are reserved once, after their declared
 * count was checked against the bytes left, so nothing points into memory
 * that moves.  An item is a 5-element array
 *     [node, code, answered, message, frame]
 * (an array keeps it small; thousands travel in one frame).
 */
#include "telem_proto_int.h"

#include <stdio.h>
#include <string.h>

#define S_MIN_ITEM 8    /* fixarray, str, int, bool, str, bin */

enum { R_ND = 3, R_IN = 7 };
static const tp_field_t s_req_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_relay_req_t, id, 0, 0),
    TP_F("nd", TP_K_X, 1, telem_relay_req_t, nodes, 0, 0),
    TP_F("dl", TP_K_U32, 1, telem_relay_req_t, deadline_ms, 1, UINT32_MAX),
    TP_F("rt", TP_K_U32, 0, telem_relay_req_t, report_ms, 0, UINT32_MAX),
    TP_F("mr", TP_K_U64, 0, telem_relay_req_t, max_reply, 0, 0),
    TP_F("rq", TP_K_X, 1, telem_relay_req_t, inner, 0, 0) };

enum { P_IT = 5 };
static const tp_field_t s_rep_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_relay_rep_t, id, 0, 0),
    TP_F("pt", TP_K_U32, 0, telem_relay_rep_t, part, 0, UINT32_MAX),
    TP_F("mo", TP_K_BOOL8, 0, telem_relay_rep_t, more, 0, 1),
    TP_F("it", TP_K_X, 1, telem_relay_rep_t, items, 0, 0) };

/* ---------------------------------------------------------------- decode */

/* A bin of at most max bytes, copied into the string arena. */
static int
s_take_bin(telem_proto_decoder_t *d, telem_rd_t *r, size_t max,
           const void **out, size_t *size)
{
    const uint8_t *b;
    uint32_t len;
    int rc = tp_rd_bytes(r, true, &b, &len);
    if (rc)
        return rc;
    if (len > max)
        return tp_bad(r, TELEM_ETOOBIG, "is too long");
    tp_vec_t *a = &d->vec[TP_VEC_STR];
    if (d->nstr + len > a->cap)
        return tp_bad(r, TELEM_EPROTO, "overflows the string arena");
    char *c = (char *) a->p + d->nstr;
    if (len)
        memcpy(c, b, len);
    d->nstr += len;
    *out = len ? c : NULL;
    *size = len;
    return 0;
}

static int
s_req_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_relay_req_t *m = base;
    int rc;
    if (idx == R_IN) {
        rc = s_take_bin(d, r, TELEM_RELAY_INNER_MAX, &m->inner,
                        &m->inner_size);
        if (rc == 0 && m->inner_size == 0)
            rc = tp_bad(r, TELEM_EPROTO, "is empty");
        return rc ? tp_fail(d, rc, "rq %s", r->why) : 0;
    }
    uint32_t n;
    if ((rc = tp_rd_count(r, false, 2, &n)) != 0)
        return tp_fail(d, rc, "nd %s", r->why);
    if (n == 0)
        return tp_fail(d, TELEM_EPROTO, "nd is empty");
    if (n > TELEM_RELAY_NODES_MAX)
        return tp_fail(d, TELEM_ETOOBIG, "%u nodes, the limit is %d", n,
                       TELEM_RELAY_NODES_MAX);
    if (tp_reserve(&d->vec[TP_VEC_METRICS], n, sizeof(const char *)))
        return tp_fail(d, TELEM_ENOMEM, "out of memory");
    const char **v = d->vec[TP_VEC_METRICS].p;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &v[i])) != 0)
            return tp_fail(d, rc, "node %u %s", i, r->why);
    m->nodes = v;
    m->nnodes = n;
    return 0;
}

static int
s_dec_req(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return tp_dec_map(d, r, nkeys, s_req_tab, TP_NTAB(s_req_tab), msg,
                      s_req_x);
}

/* One item array into *it. */
static int
s_dec_item(telem_proto_decoder_t *d, telem_rd_t *r, telem_relay_item_t *it)
{
    uint32_t n;
    int64_t code, an;
    int rc = tp_rd_count(r, false, 1, &n);
    if (rc)
        return rc;
    if (n != 5)
        return tp_bad(r, TELEM_EPROTO, "is not an array of 5");
    if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &it->node)) != 0 ||
        (rc = tp_rd_i64(r, &code)) != 0 || (rc = tp_rd_bool(r, &an)) != 0 ||
        (rc = tp_take_str(d, r, TELEM_TEXT_MAX, false, &it->message)) != 0 ||
        (rc = s_take_bin(d, r, TELEM_PROTO_MAX_MSG, &it->frame, &it->size)))
        return rc;
    if (code > 0 || code < INT32_MIN)
        return tp_bad(r, TELEM_EPROTO, "code is out of range");
    if (code == 0 && it->size == 0)
        return tp_bad(r, TELEM_EPROTO, "has neither a frame nor a code");
    if (code != 0 && it->size != 0)
        return tp_bad(r, TELEM_EPROTO, "has both a frame and a code");
    it->code = (int32_t) code;
    it->answered = (uint8_t) an;
    return 0;
}

static int
s_rep_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_relay_rep_t *m = base;
    uint32_t n;
    (void) idx;
    int rc = tp_rd_count(r, false, S_MIN_ITEM, &n);
    if (rc)
        return tp_fail(d, rc, "it %s", r->why);
    if (n > TELEM_RELAY_NODES_MAX)
        return tp_fail(d, TELEM_ETOOBIG, "%u items, the limit is %d", n,
                       TELEM_RELAY_NODES_MAX);
    if (n == 0)
        return 0;
    if (tp_reserve(&d->vec[TP_VEC_RELAY], n, sizeof(telem_relay_item_t)))
        return tp_fail(d, TELEM_ENOMEM, "out of memory");
    telem_relay_item_t *v = d->vec[TP_VEC_RELAY].p;
    for (uint32_t i = 0; i < n; i++) {
        memset(&v[i], 0, sizeof v[i]);
        if ((rc = s_dec_item(d, r, &v[i])) != 0)
            return tp_fail(d, rc, "item %u %s", i, r->why);
    }
    m->items = v;
    m->nitems = n;
    return 0;
}

static int
s_dec_rep(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return tp_dec_map(d, r, nkeys, s_rep_tab, TP_NTAB(s_rep_tab), msg,
                      s_rep_x);
}

/* ---------------------------------------------------------------- encode */

int
telem_proto_encode_relay(telem_proto_encoder_t *e, const telem_relay_req_t *m,
                         const void **data, size_t *size)
{
    if (!e || !m || !data || !size || !m->nodes || m->nnodes == 0 ||
        m->deadline_ms == 0 || !m->inner || m->inner_size == 0)
        return TELEM_EINVAL;
    if (m->nnodes > TELEM_RELAY_NODES_MAX ||
        m->inner_size > TELEM_RELAY_INNER_MAX)
        return TELEM_ETOOBIG;
    int rc = tp_enc_begin(e, TELEM_MSG_RELAY, s_req_tab, TP_NTAB(s_req_tab),
                          m);
    if (rc == 0) {
        tp_put_key(e, "nd");
        e->fail |= msgpack_pack_array(&e->pk, m->nnodes);
        for (uint32_t i = 0; i < m->nnodes && rc == 0; i++)
            rc = tp_put_name(e, m->nodes[i]);
        tp_put_key(e, "rq");
        e->fail |= msgpack_pack_bin_with_body(&e->pk, m->inner,
                                              m->inner_size);
    }
    return tp_enc_end(e, rc, data, size);
}

static int
s_put_item(telem_proto_encoder_t *e, const telem_relay_item_t *it)
{
    if (it->code > 0 || (it->code == 0 && (!it->frame || !it->size)))
        return TELEM_EINVAL;
    const char *msg = it->code ? it->message : "";
    size_t mlen;
    int rc = tp_check_str(&msg, TELEM_TEXT_MAX, false, &mlen);
    if (rc)
        return rc;
    e->fail |= msgpack_pack_array(&e->pk, 5);
    if ((rc = tp_put_name(e, it->node)) != 0)
        return rc;
    e->fail |= msgpack_pack_int32(&e->pk, it->code);
    e->fail |= it->answered ? msgpack_pack_true(&e->pk)
                            : msgpack_pack_false(&e->pk);
    tp_put_str(e, msg, mlen);
    e->fail |= msgpack_pack_bin_with_body(&e->pk, it->code ? "" : it->frame,
                                          it->code ? 0 : it->size);
    return 0;
}

int
telem_proto_encode_relay_reply(telem_proto_encoder_t *e,
                               const telem_relay_rep_t *m, const void **data,
                               size_t *size)
{
    if (!e || !m || !data || !size || (!m->items && m->nitems))
        return TELEM_EINVAL;
    if (m->nitems > TELEM_RELAY_NODES_MAX)
        return TELEM_ETOOBIG;
    int rc = tp_enc_begin(e, TELEM_MSG_RELAY_REPLY, s_rep_tab,
                          TP_NTAB(s_rep_tab), m);
    if (rc == 0) {
        tp_put_key(e, "it");
        e->fail |= msgpack_pack_array(&e->pk, m->nitems);
        for (uint32_t i = 0; i < m->nitems && rc == 0; i++)
            rc = s_put_item(e, &m->items[i]);
    }
    return tp_enc_end(e, rc, data, size);
}

size_t
telem_proto_relay_item_size(const telem_relay_item_t *it)
{
    size_t n = 32;
    n += it->node ? strnlen(it->node, TELEM_NAME_MAX + 1) : 0;
    if (it->code)
        n += it->message ? strnlen(it->message, TELEM_TEXT_MAX + 1) : 0;
    else
        n += it->size;
    return n;
}

/* ---------------------------------------------------------- inner check */

int
telem_proto_relay_inner_check(telem_proto_decoder_t *d, const void *inner,
                              size_t size, uint64_t *id, char *why,
                              size_t why_size)
{
    char dummy[8];
    if (!why || !why_size)
        why = dummy, why_size = sizeof dummy;
    telem_msg_t m;
    int rc = telem_proto_decode(d, inner, size, &m);
    if (rc) {
        snprintf(why, why_size, "undecodable inner request: %s",
                 telem_proto_decoder_error(d));
        return rc;
    }
    switch ((int) m.type) {
    case TELEM_MSG_QUERY: *id = m.u.query.id; return 0;
    case TELEM_MSG_SYSINFO: *id = m.u.sysinfo.id; return 0;
    case TELEM_MSG_CONTROL:
        *id = m.u.control.id;
        if (m.u.control.op == TELEM_CTL_STATUS ||
            m.u.control.op == TELEM_CTL_SYNC)
            return 0;
        snprintf(why, why_size, "control operation %d changes or stops a "
                 "node and is refused through a relay: send it to the node "
                 "directly", (int) m.u.control.op);
        return TELEM_EPERM;
    default:
        snprintf(why, why_size, "not a request a relay passes on (%s): "
                 "query, sysinfo and control status or sync only",
                 telem_proto_msg_type_name(m.type));
        return TELEM_EPROTO;
    }
}

static const tp_type_t s_types[] = {
    { TELEM_MSG_RELAY, "relay", s_dec_req, sizeof(telem_relay_req_t) },
    { TELEM_MSG_RELAY_REPLY, "relay_reply", s_dec_rep,
      sizeof(telem_relay_rep_t) },
};

const tp_family_t tp_relay_family = {
    "relay", s_types, sizeof s_types / sizeof s_types[0]
};
