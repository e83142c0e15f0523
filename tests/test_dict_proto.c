/* test_dict_proto.c - the wire codec's dictionary family (types 32-37):
 * round trips of every message with the awkward values (binary keys with
 * zero bytes, empty keys and namespaces, shard numbers, negative codes,
 * node lists), the encoder's refusals, and the decoder on malformed input:
 * truncation at every offset, a trailing byte, hand-built frames with
 * wrong shapes and out-of-range fields, absurd counts, and a fixed-seed
 * byte-flipping run that must never crash (it means most under ASan).
 * The same approach as test_proto.c / test_proto_bad.c for the others.
 */
#include "check.h"
#include "proto_test.h"

#include "telem_proto_dict.h"

static const uint8_t s_kbin[] = { 0, 1, 2, 0xff, 0, 'k' };

static const uint8_t s_small[] = { 'v', 0, 0xff, 7 };
static uint8_t s_biggest[TELEM_DICT_INLINE_MAX];

#define S_OP(o, v, sh, k, kl, a) \
    { .op = (o), .val = (v), .shard = (sh), .key = (const uint8_t *) (k), \
      .klen = (kl), .arg = (a) }
static const telem_dict_op_t s_ops[] = {
    S_OP(TELEM_DOP_GET, 0, 0, "alpha", 5, 0),
    S_OP(TELEM_DOP_PUT, 1, 0, s_kbin, sizeof s_kbin, 0),
    S_OP(TELEM_DOP_CAS, 1, 0, "", 0, UINT64_MAX),
    S_OP(TELEM_DOP_KEYS, 0, 0, "", 0, 255),
    S_OP(TELEM_DOP_SET, 1, 65535, "x", 1, 7),
    S_OP(TELEM_DOP_REMOVE, 0, 17, "y", 1, 0),
    /* values carried inline: small, empty, the largest allowed */
    { .op = TELEM_DOP_PUT, .key = (const uint8_t *) "p", .klen = 1,
      .ival = s_small, .ivlen = sizeof s_small },
    { .op = TELEM_DOP_SET, .shard = 3, .key = (const uint8_t *) "q",
      .klen = 1, .arg = 9, .ival = (const uint8_t *) "", .ivlen = 0 },
    { .op = TELEM_DOP_CAS, .key = (const uint8_t *) "r", .klen = 1,
      .ival = s_biggest, .ivlen = sizeof s_biggest },
};
#define S_NOPS (sizeof s_ops / sizeof s_ops[0])

static const telem_dict_res_t s_res[] = {
    { .code = 0, .val = 1, .version = 42 },
    { .code = TELEM_ENOTFOUND },
    { .code = -64, .version = UINT64_MAX },
    { .code = INT32_MIN, .version = 1 },
    { .code = 0, .version = 5, .ival = s_small, .ivlen = sizeof s_small },
    { .code = 0, .version = 6, .ival = (const uint8_t *) "", .ivlen = 0 },
};
#define S_NRES (sizeof s_res / sizeof s_res[0])

/* Same inline value (both absent, or the same bytes). */
static bool
s_same_inline(const uint8_t *a, uint32_t alen, const uint8_t *b,
              uint32_t blen)
{
    if (!a || !b)
        return !a && !b;
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static const char *const s_nodes[] = { "n1", "node-2.example", "n3" };

static bool
s_same_req(const telem_dict_req_t *a, const telem_dict_req_t *b)
{
    if (a->id != b->id || a->epoch != b->epoch || !s_same_str(a->ns, b->ns)
        || a->nops != b->nops)
        return false;
    for (uint32_t i = 0; i < a->nops; i++) {
        const telem_dict_op_t *x = &a->ops[i], *y = &b->ops[i];
        if (x->op != y->op || x->val != y->val || x->shard != y->shard
            || x->klen != y->klen || x->arg != y->arg
            || (x->klen && memcmp(x->key, y->key, x->klen) != 0)
            || !s_same_inline(x->ival, x->ivlen, y->ival, y->ivlen))
            return false;
    }
    return true;
}

static bool
s_same_rep(const telem_dict_rep_t *a, const telem_dict_rep_t *b)
{
    if (a->id != b->id || a->epoch != b->epoch || a->code != b->code
        || a->nres != b->nres)
        return false;
    for (uint32_t i = 0; i < a->nres; i++)
        if (a->res[i].code != b->res[i].code || a->res[i].val != b->res[i].val
            || a->res[i].version != b->res[i].version
            || !s_same_inline(a->res[i].ival, a->res[i].ivlen,
                              b->res[i].ival, b->res[i].ivlen))
            return false;
    return true;
}

static bool
s_same_nodes(const char *const *a, uint32_t na, const char *const *b,
             uint32_t nb)
{
    if (na != nb)
        return false;
    for (uint32_t i = 0; i < na; i++)
        if (!s_same_str(a[i], b[i]))
            return false;
    return true;
}

/* ---------------------------------------------------------- round trips */

static void
test_req_roundtrip(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    const char *nss[] = { "", "app", "\001meta" };
    int types[] = { TELEM_MSG_DICT_REQ, TELEM_MSG_DICT_REPL };
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 3; k++) {
            telem_dict_req_t m = { 1000u + (uint64_t) k, (uint64_t) k * 7,
                                   nss[k], s_ops, (uint32_t) S_NOPS - k };
            const void *data;
            size_t size;
            CHECK_RC(telem_proto_encode_dict_req(e, types[t], &m, &data, &size),
                     0);
            telem_msg_t out;
            CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
            CHECK((int) out.type == types[t]);
            CHECK(s_same_req(&m, &out.u.dict_req));
        }
    /* No operations at all. */
    telem_dict_req_t m = { 1, 0, "", NULL, 0 };
    const void *data;
    size_t size;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        0);
    telem_msg_t out;
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK(out.u.dict_req.nops == 0 && out.u.dict_req.ops == NULL);
}

static void
test_rep_roundtrip(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    int types[] = { TELEM_MSG_DICT_REP, TELEM_MSG_DICT_ACK };
    for (int t = 0; t < 2; t++) {
        telem_dict_rep_t m = { UINT64_MAX, 3, 0, s_res, (uint32_t) S_NRES };
        telem_dict_rep_t whole = { 5, 9, TELEM_ESTATE, NULL, 0 };
        const telem_dict_rep_t *all[2] = { &m, &whole };
        for (int k = 0; k < 2; k++) {
            const void *data;
            size_t size;
            CHECK_RC(
                telem_proto_encode_dict_rep(e, types[t], all[k], &data, &size),
                0);
            telem_msg_t out;
            CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
            CHECK((int) out.type == types[t]);
            CHECK(s_same_rep(all[k], &out.u.dict_rep));
        }
    }
}

static void
test_admin_roundtrip(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    telem_dict_admin_t m = { 77, TELEM_DADM_PREPARE, 12, 11, 2, s_nodes, 3 };
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_dict_admin(e, &m, &data, &size), 0);
    telem_msg_t out;
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK((int) out.type == TELEM_MSG_DICT_ADMIN);
    const telem_dict_admin_t *a = &out.u.dict_admin;
    CHECK(a->id == 77 && a->op == TELEM_DADM_PREPARE && a->epoch == 12
          && a->prev_epoch == 11 && a->replicas == 2);
    CHECK(s_same_nodes(s_nodes, 3, a->nodes, a->nnodes));

    telem_dict_admin_rep_t r = { 78, TELEM_ETIMEDOUT, "n3", 12, 2, 1,
                                 1u << 20, UINT64_MAX, s_nodes, 2, 11 };
    CHECK_RC(telem_proto_encode_dict_admin_rep(e, &r, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK((int) out.type == TELEM_MSG_DICT_ADMIN_REP);
    const telem_dict_admin_rep_t *b = &out.u.dict_admin_rep;
    CHECK(b->id == 78 && b->code == TELEM_ETIMEDOUT && s_same_str(b->node, "n3")
          && b->epoch == 12 && b->replicas == 2 && b->state == 1
          && b->keys == 1u << 20 && b->bytes == UINT64_MAX
          && b->committed == 11);
    CHECK(s_same_nodes(s_nodes, 2, b->nodes, b->nnodes));
}

/* ---------------------------------------------------------- refusals */

static void
test_encoder_refusals(telem_proto_encoder_t *e)
{
    const void *data;
    size_t size;
    telem_dict_op_t bad = s_ops[0];
    telem_dict_req_t m = { 1, 0, "", &bad, 1 };
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REP, &m, &data, &size),
        TELEM_EINVAL);
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, NULL, &data, &size),
        TELEM_EINVAL);
    bad.op = 0;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_EINVAL);
    bad.op = TELEM_DOP_MAX + 1;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_EINVAL);
    bad = s_ops[0];
    bad.klen = TELEM_DICT_KEY_MAX + 1;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_ETOOBIG);
    bad.key = NULL;
    bad.klen = 3;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_EINVAL);
    /* An inline value over the limit, or beside a value frame. */
    bad = s_ops[8];
    bad.ivlen = TELEM_DICT_INLINE_MAX + 1;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_ETOOBIG);
    bad = s_ops[6];
    bad.val = 1;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_EINVAL);
    m.ops = NULL;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_EINVAL);
    m.ops = s_ops;
    m.nops = TELEM_DICT_OPS_MAX + 1;
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &m, &data, &size),
        TELEM_ETOOBIG);

    telem_dict_res_t pos = { .code = 1 };
    telem_dict_rep_t r = { 1, 0, 0, &pos, 1 };
    CHECK_RC(
        telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_REP, &r, &data, &size),
        TELEM_EINVAL);
    pos = s_res[4];
    pos.val = 1;
    CHECK_RC(
        telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_REP, &r, &data, &size),
        TELEM_EINVAL);
    pos.val = 0;
    pos.ivlen = TELEM_DICT_INLINE_MAX + 1;
    CHECK_RC(
        telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_REP, &r, &data, &size),
        TELEM_ETOOBIG);
    r.nres = 0;
    r.code = 3;
    CHECK_RC(
        telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_ACK, &r, &data, &size),
        TELEM_EINVAL);
    r.code = 0;
    CHECK_RC(
        telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_REQ, &r, &data, &size),
        TELEM_EINVAL);

    telem_dict_admin_t a = { 1, TELEM_DADM_HELLO, 0, 0, 0, NULL, 2 };
    CHECK(telem_proto_encode_dict_admin(e, &a, &data, &size) != 0);
    a.nodes = s_nodes;
    a.nnodes = TELEM_DICT_NODES_MAX + 1;
    CHECK_RC(telem_proto_encode_dict_admin(e, &a, &data, &size), TELEM_ETOOBIG);
    const char *badname[1] = { "" };
    a.nodes = badname;
    a.nnodes = 1;
    CHECK(telem_proto_encode_dict_admin(e, &a, &data, &size) != 0);
    CHECK_RC(telem_proto_encode_dict_admin(e, NULL, &data, &size),
             TELEM_EINVAL);
    CHECK_RC(telem_proto_encode_dict_admin_rep(e, NULL, &data, &size),
             TELEM_EINVAL);
    /* The encoder still works after refusals. */
    a.nodes = s_nodes;
    CHECK_RC(telem_proto_encode_dict_admin(e, &a, &data, &size), 0);
}

/* Every prefix of a valid frame is refused; so is a trailing byte. */
static void
s_truncate_all(telem_proto_decoder_t *d, const void *data, size_t size)
{
    unsigned char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    telem_msg_t out;
    int bad = 0;
    for (size_t n = 0; n < size; n++) {
        unsigned char *tail = malloc(n ? n : 1);
        memcpy(tail, copy, n);
        if (telem_proto_decode(d, tail, n, &out) != TELEM_EPROTO)
            bad++;
        free(tail);
    }
    CHECK(bad == 0);
    copy[size] = 0xc0;
    CHECK_RC(telem_proto_decode(d, copy, size + 1, &out), TELEM_EPROTO);
    free(copy);
}

static void
test_truncation(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    const void *data;
    size_t size;
    telem_dict_req_t q = { 1, 2, "ns", s_ops, (uint32_t) S_NOPS };
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REPL, &q, &data, &size),
        0);
    s_truncate_all(d, data, size);
    telem_dict_rep_t r = { 1, 2, 0, s_res, (uint32_t) S_NRES };
    CHECK_RC(
        telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_REP, &r, &data, &size),
        0);
    s_truncate_all(d, data, size);
    telem_dict_admin_t a = { 1, TELEM_DADM_PREPARE, 2, 1, 2, s_nodes, 3 };
    CHECK_RC(telem_proto_encode_dict_admin(e, &a, &data, &size), 0);
    s_truncate_all(d, data, size);
    telem_dict_admin_rep_t ar = { 1, 0, "n1", 2, 2, 0, 5, 6, s_nodes, 3, 1 };
    CHECK_RC(telem_proto_encode_dict_admin_rep(e, &ar, &data, &size), 0);
    s_truncate_all(d, data, size);
}

/* A raw REQ header with `nops` operations following. */
static void
s_raw_req(s_raw_t *w, uint32_t nops)
{
    msgpack_sbuffer_clear(&w->sb);
    s_raw_head(w, 4, TELEM_PROTO_VERSION, TELEM_MSG_DICT_REQ);
    s_raw_int(w, "id", 9);
    s_raw_str(w, "ops");
    msgpack_pack_array(&w->pk, nops);
}

static void
s_raw_op(s_raw_t *w, int n, int64_t op, int key_is_str, int64_t last)
{
    msgpack_pack_array(&w->pk, (size_t) n);
    msgpack_pack_int64(&w->pk, op);
    if (key_is_str)
        msgpack_pack_str_with_body(&w->pk, "k", 1);
    else
        msgpack_pack_bin_with_body(&w->pk, "k", 1);
    msgpack_pack_uint64(&w->pk, 0);
    if (n > 3)
        msgpack_pack_int64(&w->pk, last);
}

static void
test_malformed_ops(telem_proto_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    s_raw_req(&w, 1);
    s_raw_op(&w, 4, TELEM_DOP_GET, 0, 1);
    CHECK_RC(s_raw_decode(d, &w), 0);
    int64_t bad_op[] = { 0, TELEM_DOP_MAX + 1, -1, 1000 };
    for (int i = 0; i < 4; i++) {
        s_raw_req(&w, 1);
        s_raw_op(&w, 4, bad_op[i], 0, 0);
        CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    }
    s_raw_req(&w, 1);
    s_raw_op(&w, 3, TELEM_DOP_GET, 0, 0);          /* array of 3 */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    CHECK(strstr(telem_proto_decoder_error(d), "op 0") != NULL);
    /* An inline value: accepted; beside a value frame, too long, or not
       a bin: refused. */
    s_raw_req(&w, 1);
    s_raw_op(&w, 5, TELEM_DOP_PUT, 0, 0);
    msgpack_pack_bin_with_body(&w.pk, "val", 3);
    CHECK_RC(s_raw_decode(d, &w), 0);
    s_raw_req(&w, 1);
    s_raw_op(&w, 5, TELEM_DOP_PUT, 0, 1);
    msgpack_pack_bin_with_body(&w.pk, "val", 3);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    CHECK(strstr(telem_proto_decoder_error(d), "inline") != NULL);
    s_raw_req(&w, 1);
    s_raw_op(&w, 5, TELEM_DOP_PUT, 0, 0);
    msgpack_pack_bin_with_body(&w.pk, s_biggest, sizeof s_biggest);
    CHECK_RC(s_raw_decode(d, &w), 0);
    s_raw_req(&w, 1);
    s_raw_op(&w, 5, TELEM_DOP_PUT, 0, 0);
    msgpack_pack_bin(&w.pk, TELEM_DICT_INLINE_MAX + 1);
    msgpack_pack_bin_body(&w.pk, s_biggest, sizeof s_biggest);
    msgpack_pack_bin_body(&w.pk, "x", 1);
    CHECK(s_raw_decode(d, &w) != 0);
    s_raw_req(&w, 1);
    s_raw_op(&w, 5, TELEM_DOP_PUT, 0, 0);
    msgpack_pack_int64(&w.pk, 5);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_req(&w, 1);
    s_raw_op(&w, 4, TELEM_DOP_GET, 1, 0);          /* key is a str */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_req(&w, 1);
    s_raw_op(&w, 4, TELEM_DOP_GET, 0, 0x20000);    /* shard/val too big */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_req(&w, 2);                              /* says 2, holds 1 */
    s_raw_op(&w, 4, TELEM_DOP_GET, 0, 0);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_req(&w, UINT32_MAX);                     /* absurd count */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    /* More operations than a request may carry, all well formed. */
    s_raw_req(&w, TELEM_DICT_OPS_MAX + 1);
    for (uint32_t i = 0; i <= TELEM_DICT_OPS_MAX; i++)
        s_raw_op(&w, 4, TELEM_DOP_GET, 0, 0);
    CHECK_RC(s_raw_decode(d, &w), TELEM_ETOOBIG);
    msgpack_sbuffer_destroy(&w.sb);
}

static void
test_malformed_rest(telem_proto_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    /* A result that is not [code, version, val], or has a positive code. */
    int64_t shapes[][5] = { { 2, 0, 0, 0, 0 }, { 3, 5, 0, 0, 0 },
                            { 3, 0, 0, 2, 0 }, { 4, 0, 0, 0, 1 },
                            { 5, 0, 0, 0, 0 } };
    for (int i = 0; i < 5; i++) {
        msgpack_sbuffer_clear(&w.sb);
        s_raw_head(&w, 4, TELEM_PROTO_VERSION, TELEM_MSG_DICT_REP);
        s_raw_int(&w, "id", 1);
        s_raw_str(&w, "r");
        msgpack_pack_array(&w.pk, 1);
        msgpack_pack_array(&w.pk, (size_t) shapes[i][0]);
        for (int k = 1; k <= shapes[i][0] && k <= 4; k++)
            msgpack_pack_int64(&w.pk, shapes[i][k]);
        CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    }
    /* A result with a value frame and an inline value. */
    msgpack_sbuffer_clear(&w.sb);
    s_raw_head(&w, 4, TELEM_PROTO_VERSION, TELEM_MSG_DICT_REP);
    s_raw_int(&w, "id", 1);
    s_raw_str(&w, "r");
    msgpack_pack_array(&w.pk, 1);
    msgpack_pack_array(&w.pk, 4);
    msgpack_pack_int64(&w.pk, 0);
    msgpack_pack_int64(&w.pk, 0);
    msgpack_pack_int64(&w.pk, 1);
    msgpack_pack_bin_with_body(&w.pk, "v", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    /* Admin: op out of range, missing id, a node that is not a string. */
    int64_t ops[] = { 0, TELEM_DADM_MAX + 1 };
    for (int i = 0; i < 2; i++) {
        msgpack_sbuffer_clear(&w.sb);
        s_raw_head(&w, 4, TELEM_PROTO_VERSION, TELEM_MSG_DICT_ADMIN);
        s_raw_int(&w, "id", 1);
        s_raw_int(&w, "op", ops[i]);
        CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    }
    msgpack_sbuffer_clear(&w.sb);
    s_raw_head(&w, 3, TELEM_PROTO_VERSION, TELEM_MSG_DICT_ADMIN);
    s_raw_int(&w, "op", TELEM_DADM_HELLO);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_clear(&w.sb);
    s_raw_head(&w, 5, TELEM_PROTO_VERSION, TELEM_MSG_DICT_ADMIN);
    s_raw_int(&w, "id", 1);
    s_raw_int(&w, "op", TELEM_DADM_HELLO);
    s_raw_str(&w, "nds");
    msgpack_pack_array(&w.pk, 1);
    msgpack_pack_int64(&w.pk, 5);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    /* Admin reply with a state out of range. */
    msgpack_sbuffer_clear(&w.sb);
    s_raw_head(&w, 4, TELEM_PROTO_VERSION, TELEM_MSG_DICT_ADMIN_REP);
    s_raw_int(&w, "id", 1);
    s_raw_int(&w, "st", 2);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_destroy(&w.sb);
}

/* Flips bytes of valid frames with a fixed seed: decode must return
 * cleanly (0 or an error) every time. */
static void
test_flips(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    const void *data;
    size_t size;
    telem_dict_req_t q = { 1, 2, "ns", s_ops, (uint32_t) S_NOPS };
    CHECK_RC(
        telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &q, &data, &size),
        0);
    unsigned char *base = malloc(size), *copy = malloc(size);
    memcpy(base, data, size);
    uint32_t seed = 12345;
    int ok = 0;
    for (int i = 0; i < 20000; i++) {
        memcpy(copy, base, size);
        for (int k = 0; k < 1 + i % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % size] ^= (unsigned char) (1u << (seed >> 28) % 8);
        }
        telem_msg_t out;
        int rc = telem_proto_decode(d, copy, size, &out);
        ok += rc == 0;
        if (rc == 0 && (int) out.type == TELEM_MSG_DICT_REQ)
            for (uint32_t k = 0; k < out.u.dict_req.nops; k++)
                CHECK(out.u.dict_req.ops[k].op >= 1
                      && out.u.dict_req.ops[k].op <= TELEM_DOP_MAX);
    }
    CHECK(ok < 20000);
    free(base);
    free(copy);
}

int
main(void)
{
    for (size_t i = 0; i < sizeof s_biggest; i++)
        s_biggest[i] = (uint8_t) (i * 31u + 7u);
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    test_req_roundtrip(e, d);
    test_rep_roundtrip(e, d);
    test_admin_roundtrip(e, d);
    test_encoder_refusals(e);
    test_truncation(e, d);
    test_malformed_ops(d);
    test_malformed_rest(d);
    test_flips(e, d);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&d);
    return check_report("test_dict_proto");
}
