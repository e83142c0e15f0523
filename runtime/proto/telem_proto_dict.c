/* telem_proto_dict.c - codec family "dict": the distributed dictionary's
 * message headers, types 32-37 (see telem_proto_dict.h, docs/protocol.md).
 *
 * Operations and results are short msgpack arrays, not maps, because a
 * request may carry tens of thousands of them and each map key would cost
 * bytes and a comparison: an op is [op, key (bin), arg, val], a result
 * [code, version, val]; either has a fifth (fourth) element, a bin, when
 * its value travels inline.  Their vectors are decoded into TP_VEC_DICT;
 * keys and inline values are copied into the string arena (a bin of n bytes
 * costs at least n+2 on the wire, so the arena reserved at the frame size
 * always holds them).
 * Node lists reuse TP_VEC_METRICS (arrays of names).
 */
#include "telem_proto_int.h"

#include <string.h>

#include "telem_proto_dict.h"

#define S_MIN_OP 5          /* fixarray, op, bin8 header (2), arg */
#define S_MIN_RES 4         /* fixarray, code, version, val */

enum { RQ_OPS = 5 };
static const tp_field_t s_req_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_dict_req_t, id, 0, 0),
    TP_F("ep", TP_K_U64, 0, telem_dict_req_t, epoch, 0, 0),
    TP_F("ns", TP_K_STR, 0, telem_dict_req_t, ns, 0, 0),
    TP_F("ops", TP_K_X, 1, telem_dict_req_t, ops, 0, 0) };

enum { RP_RES = 5 };
static const tp_field_t s_rep_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_dict_rep_t, id, 0, 0),
    TP_F("ep", TP_K_U64, 0, telem_dict_rep_t, epoch, 0, 0),
    TP_F("c", TP_K_I32, 0, telem_dict_rep_t, code, INT32_MIN, 0),
    TP_F("r", TP_K_X, 0, telem_dict_rep_t, res, 0, 0) };

enum { AD_NODES = 7 };
static const tp_field_t s_admin_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_dict_admin_t, id, 0, 0),
    TP_F("op", TP_K_I32, 1, telem_dict_admin_t, op, 1, TELEM_DADM_MAX),
    TP_F("ep", TP_K_U64, 0, telem_dict_admin_t, epoch, 0, 0),
    TP_F("pe", TP_K_U64, 0, telem_dict_admin_t, prev_epoch, 0, 0),
    TP_F("rf", TP_K_I32, 0, telem_dict_admin_t, replicas, 0, 64),
    TP_F("nds", TP_K_X, 0, telem_dict_admin_t, nodes, 0, 0) };

enum { AR_NODES = 11 };
static const tp_field_t s_arep_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_dict_admin_rep_t, id, 0, 0),
    TP_F("c", TP_K_I32, 0, telem_dict_admin_rep_t, code, INT32_MIN, 0),
    TP_F("nd", TP_K_STR, 0, telem_dict_admin_rep_t, node, 0, 0),
    TP_F("ep", TP_K_U64, 0, telem_dict_admin_rep_t, epoch, 0, 0),
    TP_F("rf", TP_K_I32, 0, telem_dict_admin_rep_t, replicas, 0, 64),
    TP_F("st", TP_K_I32, 0, telem_dict_admin_rep_t, state, 0, 1),
    TP_F("k", TP_K_U64, 0, telem_dict_admin_rep_t, keys, 0, 0),
    TP_F("b", TP_K_U64, 0, telem_dict_admin_rep_t, bytes, 0, 0),
    TP_F("ce", TP_K_U64, 0, telem_dict_admin_rep_t, committed, 0, 0),
    TP_F("nds", TP_K_X, 0, telem_dict_admin_rep_t, nodes, 0, 0) };

/* ---------------------------------------------------------------- decode */

/* Copies a bin of at most max bytes into the arena (not NUL-terminated;
 * may hold any byte); what names it in an error. */
static int
s_take_bin(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t max,
           const char *what, const uint8_t **out, uint32_t *len)
{
    const uint8_t *s;
    int rc = tp_rd_bytes(r, true, &s, len);
    if (rc)
        return rc;
    if (*len > max)
        return tp_bad(r, TELEM_ETOOBIG, what);
    tp_vec_t *a = &d->vec[TP_VEC_STR];
    if (d->nstr + *len + 1 > a->cap)
        return tp_bad(r, TELEM_EPROTO, "overflows the string arena");
    uint8_t *c = (uint8_t *) a->p + d->nstr;
    memcpy(c, s, *len);
    d->nstr += *len + 1;
    *out = c;
    return 0;
}

static int
s_small(telem_rd_t *r, uint64_t max, uint64_t *out)
{
    int rc = tp_rd_u64(r, out);
    if (rc == 0 && *out > max)
        return tp_bad(r, TELEM_EPROTO, "is out of range");
    return rc;
}

/* The inline value that ends an op or a result when `present`; none may
 * stand beside a value frame (`framed`). */
static int
s_take_inline(telem_proto_decoder_t *d, telem_rd_t *r, bool present,
              bool framed, const uint8_t **ival, uint32_t *ivlen)
{
    *ival = NULL;
    *ivlen = 0;
    if (!present)
        return 0;
    if (framed)
        return tp_bad(r, TELEM_EPROTO, "has a value frame and an inline value");
    return s_take_bin(d, r, TELEM_DICT_INLINE_MAX, "inline value is too long",
                      ival, ivlen);
}

static int
s_dec_op(telem_proto_decoder_t *d, telem_rd_t *r, telem_dict_op_t *op)
{
    uint32_t n;
    uint64_t v;
    int rc = tp_rd_count(r, false, 1, &n);
    if (rc == 0 && n != 4 && n != 5)
        return tp_bad(r, TELEM_EPROTO, "is not an array of 4 or 5");
    if (rc || (rc = s_small(r, TELEM_DOP_MAX, &v)) != 0)
        return rc;
    if (v == 0)
        return tp_bad(r, TELEM_EPROTO, "has op 0");
    op->op = (uint8_t) v;
    if ((rc = s_take_bin(d, r, TELEM_DICT_KEY_MAX, "key is too long",
                         &op->key, &op->klen)) != 0
        || (rc = tp_rd_u64(r, &op->arg)) != 0
        || (rc = s_small(r, 0xffff * 2 + 1, &v)) != 0)
        return rc;
    op->val = (uint8_t) (v & 1);
    op->shard = (uint16_t) (v >> 1);
    return s_take_inline(d, r, n == 5, op->val, &op->ival, &op->ivlen);
}

static int
s_dec_res(telem_proto_decoder_t *d, telem_rd_t *r, telem_dict_res_t *res)
{
    uint32_t n;
    int64_t code;
    uint64_t v;
    int rc = tp_rd_count(r, false, 1, &n);
    if (rc == 0 && n != 3 && n != 4)
        return tp_bad(r, TELEM_EPROTO, "is not an array of 3 or 4");
    if (rc || (rc = tp_rd_i64(r, &code)) != 0)
        return rc;
    if (code > 0 || code < INT32_MIN)
        return tp_bad(r, TELEM_EPROTO, "has a bad code");
    res->code = (int32_t) code;
    if ((rc = tp_rd_u64(r, &res->version)) != 0
        || (rc = s_small(r, 1, &v)) != 0)
        return rc;
    res->val = (uint8_t) v;
    return s_take_inline(d, r, n == 4, res->val, &res->ival, &res->ivlen);
}

/* Decodes an array of ops (is_req) or results into TP_VEC_DICT. */
static int
s_dec_list(telem_proto_decoder_t *d, telem_rd_t *r, bool is_req,
           uint32_t *count)
{
    uint32_t n;
    int rc = tp_rd_count(r, false, is_req ? S_MIN_OP : S_MIN_RES, &n);
    if (rc)
        return rc;
    if (n > TELEM_DICT_OPS_MAX)
        return tp_bad(r, TELEM_ETOOBIG, "has too many operations");
    size_t sz = is_req ? sizeof(telem_dict_op_t) : sizeof(telem_dict_res_t);
    if (tp_reserve(&d->vec[TP_VEC_DICT], n, sz))
        return tp_bad(r, TELEM_ENOMEM, "is out of memory");
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *slot = (uint8_t *) d->vec[TP_VEC_DICT].p + i * sz;
        rc = is_req ? s_dec_op(d, r, (telem_dict_op_t *) (void *) slot)
                    : s_dec_res(d, r, (telem_dict_res_t *) (void *) slot);
        if (rc)
            return tp_fail(d, rc, "%s %u %s", is_req ? "op" : "result", i,
                           r->why);
    }
    *count = n;
    return 0;
}

static int
s_dec_nodes(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t *count)
{
    uint32_t n;
    int rc = tp_rd_count(r, false, 2, &n);
    if (rc)
        return rc;
    if (n > TELEM_DICT_NODES_MAX)
        return tp_bad(r, TELEM_ETOOBIG, "has too many nodes");
    if (tp_reserve(&d->vec[TP_VEC_METRICS], n, sizeof(const char *)))
        return tp_bad(r, TELEM_ENOMEM, "is out of memory");
    const char **v = d->vec[TP_VEC_METRICS].p;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &v[i])) != 0)
            return tp_fail(d, rc, "node %u %s", i, r->why);
    *count = n;
    return 0;
}

static int
s_custom(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base,
         int which)
{
    int rc;
    switch (which) {
    case TELEM_MSG_DICT_REQ: {
        telem_dict_req_t *m = base;
        rc = idx == RQ_OPS ? s_dec_list(d, r, true, &m->nops) : TELEM_EPROTO;
        m->ops = m->nops ? d->vec[TP_VEC_DICT].p : NULL;
        break;
    }
    case TELEM_MSG_DICT_REP: {
        telem_dict_rep_t *m = base;
        rc = idx == RP_RES ? s_dec_list(d, r, false, &m->nres) : TELEM_EPROTO;
        m->res = m->nres ? d->vec[TP_VEC_DICT].p : NULL;
        break;
    }
    case TELEM_MSG_DICT_ADMIN: {
        telem_dict_admin_t *m = base;
        rc = idx == AD_NODES ? s_dec_nodes(d, r, &m->nnodes) : TELEM_EPROTO;
        m->nodes = m->nnodes ? d->vec[TP_VEC_METRICS].p : NULL;
        break;
    }
    default: {
        telem_dict_admin_rep_t *m = base;
        rc = idx == AR_NODES ? s_dec_nodes(d, r, &m->nnodes) : TELEM_EPROTO;
        m->nodes = m->nnodes ? d->vec[TP_VEC_METRICS].p : NULL;
        break;
    }
    }
    if (rc && d->err[0] == '\0')
        tp_fail(d, rc, "%s", r->why ? r->why : "is malformed");
    return rc;
}

static int
s_custom_req(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    return s_custom(d, r, idx, base, TELEM_MSG_DICT_REQ);
}

static int
s_custom_rep(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    return s_custom(d, r, idx, base, TELEM_MSG_DICT_REP);
}

static int
s_custom_admin(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    return s_custom(d, r, idx, base, TELEM_MSG_DICT_ADMIN);
}

static int
s_custom_arep(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    return s_custom(d, r, idx, base, TELEM_MSG_DICT_ADMIN_REP);
}

static int
s_dec_req(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    d->err[0] = '\0';
    return tp_dec_map(d, r, nkeys, s_req_tab, TP_NTAB(s_req_tab), msg,
                      s_custom_req);
}

static int
s_dec_rep(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    d->err[0] = '\0';
    return tp_dec_map(d, r, nkeys, s_rep_tab, TP_NTAB(s_rep_tab), msg,
                      s_custom_rep);
}

static int
s_dec_admin(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    d->err[0] = '\0';
    return tp_dec_map(d, r, nkeys, s_admin_tab, TP_NTAB(s_admin_tab), msg,
                      s_custom_admin);
}

static int
s_dec_arep(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    d->err[0] = '\0';
    return tp_dec_map(d, r, nkeys, s_arep_tab, TP_NTAB(s_arep_tab), msg,
                      s_custom_arep);
}

static const tp_type_t s_types[] = {
    { TELEM_MSG_DICT_REQ, "dict_req", s_dec_req, sizeof(telem_dict_req_t) },
    { TELEM_MSG_DICT_REP, "dict_rep", s_dec_rep, sizeof(telem_dict_rep_t) },
    { TELEM_MSG_DICT_REPL, "dict_repl", s_dec_req, sizeof(telem_dict_req_t) },
    { TELEM_MSG_DICT_ACK, "dict_ack", s_dec_rep, sizeof(telem_dict_rep_t) },
    { TELEM_MSG_DICT_ADMIN, "dict_admin", s_dec_admin,
      sizeof(telem_dict_admin_t) },
    { TELEM_MSG_DICT_ADMIN_REP, "dict_admin_rep", s_dec_arep,
      sizeof(telem_dict_admin_rep_t) },
};

const tp_family_t tp_dict_family = { "dict", s_types, TP_NTAB(s_types) };

/* ---------------------------------------------------------------- encode */

static void
s_put_bin(telem_proto_encoder_t *e, const void *p, uint32_t n)
{
    e->fail |= msgpack_pack_bin(&e->pk, n);
    e->fail |= msgpack_pack_bin_body(&e->pk, p, n);
}

int
telem_proto_encode_dict_req(telem_proto_encoder_t *e, int type,
                            const telem_dict_req_t *m, const void **data,
                            size_t *size)
{
    if (!m || (type != TELEM_MSG_DICT_REQ && type != TELEM_MSG_DICT_REPL)
        || (m->nops && !m->ops))
        return TELEM_EINVAL;
    if (m->nops > TELEM_DICT_OPS_MAX)
        return TELEM_ETOOBIG;
    for (uint32_t i = 0; i < m->nops; i++) {
        const telem_dict_op_t *op = &m->ops[i];
        if (op->op < 1 || op->op > TELEM_DOP_MAX || (op->klen && !op->key))
            return TELEM_EINVAL;
        if (op->klen > TELEM_DICT_KEY_MAX
            || (op->ival && op->ivlen > TELEM_DICT_INLINE_MAX))
            return TELEM_ETOOBIG;
        if (op->ival && op->val)
            return TELEM_EINVAL;
    }
    int rc = tp_enc_begin(e, type, s_req_tab, TP_NTAB(s_req_tab), m);
    if (rc)
        return rc;
    tp_put_key(e, "ops");
    e->fail |= msgpack_pack_array(&e->pk, m->nops);
    for (uint32_t i = 0; i < m->nops; i++) {
        const telem_dict_op_t *op = &m->ops[i];
        e->fail |= msgpack_pack_array(&e->pk, op->ival ? 5 : 4);
        e->fail |= msgpack_pack_uint8(&e->pk, op->op);
        s_put_bin(e, op->key, op->klen);
        e->fail |= msgpack_pack_uint64(&e->pk, op->arg);
        e->fail |= msgpack_pack_uint32(&e->pk, (uint32_t) op->shard << 1
                                                   | (op->val ? 1u : 0u));
        if (op->ival)
            s_put_bin(e, op->ival, op->ivlen);
    }
    return tp_enc_end(e, 0, data, size);
}

int
telem_proto_encode_dict_rep(telem_proto_encoder_t *e, int type,
                            const telem_dict_rep_t *m, const void **data,
                            size_t *size)
{
    if (!m || (type != TELEM_MSG_DICT_REP && type != TELEM_MSG_DICT_ACK)
        || (m->nres && !m->res) || m->code > 0)
        return TELEM_EINVAL;
    if (m->nres > TELEM_DICT_OPS_MAX)
        return TELEM_ETOOBIG;
    int rc = tp_enc_begin(e, type, s_rep_tab, TP_NTAB(s_rep_tab), m);
    if (rc)
        return rc;
    tp_put_key(e, "r");
    e->fail |= msgpack_pack_array(&e->pk, m->nres);
    for (uint32_t i = 0; i < m->nres; i++) {
        const telem_dict_res_t *res = &m->res[i];
        if (res->code > 0 || (res->ival && res->val))
            return TELEM_EINVAL;
        if (res->ival && res->ivlen > TELEM_DICT_INLINE_MAX)
            return TELEM_ETOOBIG;
        e->fail |= msgpack_pack_array(&e->pk, res->ival ? 4 : 3);
        e->fail |= msgpack_pack_int32(&e->pk, res->code);
        e->fail |= msgpack_pack_uint64(&e->pk, res->version);
        e->fail |= msgpack_pack_uint8(&e->pk, res->val ? 1 : 0);
        if (res->ival)
            s_put_bin(e, res->ival, res->ivlen);
    }
    return tp_enc_end(e, 0, data, size);
}

static int
s_enc_nodes(telem_proto_encoder_t *e, const char *const *nodes, uint32_t n)
{
    if (n > TELEM_DICT_NODES_MAX)
        return TELEM_ETOOBIG;
    if (n && !nodes)
        return TELEM_EINVAL;
    tp_put_key(e, "nds");
    e->fail |= msgpack_pack_array(&e->pk, n);
    for (uint32_t i = 0; i < n; i++) {
        int rc = tp_put_name(e, nodes[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int
telem_proto_encode_dict_admin(telem_proto_encoder_t *e,
                              const telem_dict_admin_t *m, const void **data,
                              size_t *size)
{
    if (!m)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_DICT_ADMIN, s_admin_tab,
                          TP_NTAB(s_admin_tab), m);
    if (rc == 0)
        rc = s_enc_nodes(e, m->nodes, m->nnodes);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_dict_admin_rep(telem_proto_encoder_t *e,
                                  const telem_dict_admin_rep_t *m,
                                  const void **data, size_t *size)
{
    if (!m)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_DICT_ADMIN_REP, s_arep_tab,
                          TP_NTAB(s_arep_tab), m);
    if (rc == 0)
        rc = s_enc_nodes(e, m->nodes, m->nnodes);
    return tp_enc_end(e, rc, data, size);
}
