/* test_proto_relay.c - the relay's wire messages (runtime/proto/
 * telem_proto_relay.c): round trips of relay and relay_reply, encoder
 * refusals, the inner-request check that keeps control over a daemon off
 * relays, and the malformed side: truncation at every offset, wrong
 * types, huge declared counts, items that are neither a frame nor a code,
 * trailing bytes, and a fixed-seed byte-flipping run that must never
 * crash (it means most under ASan).
 */
#include "check.h"
#include "proto_test.h"

static const char *const s_nodes[] = { "n1", "node two", "n3" };

/* A relay request carrying a real query frame (copied to `inner`). */
static void
s_relay_req(telem_proto_encoder_t *e, telem_relay_req_t *m,
            unsigned char *inner, size_t *inner_size)
{
    const char *metrics[] = { "cpu_percent", "loss" };
    telem_query_t q = { .id = 77, .metrics = metrics, .nmetrics = 2,
                        .flags = TELEM_QUERY_LATEST };
    const void *d;
    size_t n;
    CHECK_RC(telem_proto_encode_query(e, &q, &d, &n), 0);
    memcpy(inner, d, n);
    *inner_size = n;
    *m = (telem_relay_req_t) { .id = 0x1234567890ull, .nodes = s_nodes,
        .nnodes = 3, .deadline_ms = 1500, .report_ms = 2000,
        .max_reply = 1u << 20, .inner = inner, .inner_size = n };
}

static void
test_req_roundtrip(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    unsigned char inner[512];
    size_t isz;
    telem_relay_req_t m;
    s_relay_req(e, &m, inner, &isz);
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_relay(e, &m, &data, &size), 0);
    telem_msg_t out;
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK_INT(out.type, TELEM_MSG_RELAY);
    const telem_relay_req_t *r = &out.u.relay;
    CHECK(r->id == m.id);
    CHECK_INT(r->nnodes, 3);
    for (uint32_t i = 0; i < 3 && r->nnodes == 3; i++)
        CHECK_STR(r->nodes[i], s_nodes[i]);
    CHECK_INT(r->deadline_ms, 1500);
    CHECK_INT(r->report_ms, 2000);
    CHECK_INT(r->max_reply, 1u << 20);
    CHECK_INT(r->inner_size, isz);
    CHECK(r->inner && memcmp(r->inner, inner, isz) == 0);
    /* The inner frame decodes as the query it was. */
    telem_proto_decoder_t *d2 = telem_proto_decoder_new();
    telem_msg_t q;
    CHECK_RC(telem_proto_decode(d2, r->inner, r->inner_size, &q), 0);
    CHECK_INT(q.type, TELEM_MSG_QUERY);
    CHECK_INT(q.u.query.id, 77);
    telem_proto_decoder_destroy(&d2);
    CHECK_STR(telem_proto_msg_type_name(TELEM_MSG_RELAY), "relay");
    CHECK_STR(telem_proto_msg_type_name(TELEM_MSG_RELAY_REPLY),
              "relay_reply");
}

static void
test_rep_roundtrip(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    unsigned char big[70000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char) (i * 7);
    telem_relay_item_t it[3] = {
        { .node = "n1", .code = 0, .frame = big, .size = sizeof big },
        { .node = "node two", .code = TELEM_ETIMEDOUT, .answered = 0,
          .message = "no reply within 2000 ms" },
        { .node = "n3", .code = TELEM_EPROTO, .answered = 1,
          .message = "undecodable reply: x" },
    };
    telem_relay_rep_t m = { .id = 9, .part = 2, .more = 1, .items = it,
                            .nitems = 3 };
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_relay_reply(e, &m, &data, &size), 0);
    size_t bound = TELEM_RELAY_PART_OVERHEAD;
    for (int i = 0; i < 3; i++)
        bound += telem_proto_relay_item_size(&it[i]);
    CHECK(size <= bound);
    telem_msg_t out;
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK_INT(out.type, TELEM_MSG_RELAY_REPLY);
    const telem_relay_rep_t *r = &out.u.relay_reply;
    CHECK_INT(r->id, 9);
    CHECK_INT(r->part, 2);
    CHECK_INT(r->more, 1);
    CHECK_INT(r->nitems, 3);
    if (r->nitems == 3) {
        CHECK_STR(r->items[0].node, "n1");
        CHECK_INT(r->items[0].code, 0);
        CHECK_INT(r->items[0].size, sizeof big);
        CHECK(memcmp(r->items[0].frame, big, sizeof big) == 0);
        CHECK_STR(r->items[1].node, "node two");
        CHECK_INT(r->items[1].code, TELEM_ETIMEDOUT);
        CHECK_INT(r->items[1].answered, 0);
        CHECK_STR(r->items[1].message, "no reply within 2000 ms");
        CHECK(r->items[1].frame == NULL && r->items[1].size == 0);
        CHECK_INT(r->items[2].answered, 1);
    }
    /* An empty last part. */
    m = (telem_relay_rep_t) { .id = 10 };
    CHECK_RC(telem_proto_encode_relay_reply(e, &m, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK_INT(out.u.relay_reply.nitems, 0);
    CHECK_INT(out.u.relay_reply.more, 0);
}

static void
test_encoder_refusals(telem_proto_encoder_t *e)
{
    unsigned char inner[512];
    size_t isz;
    telem_relay_req_t m, b;
    s_relay_req(e, &m, inner, &isz);
    const void *data;
    size_t size;
    b = m; b.nnodes = 0;
    CHECK_RC(telem_proto_encode_relay(e, &b, &data, &size), TELEM_EINVAL);
    b = m; b.deadline_ms = 0;
    CHECK_RC(telem_proto_encode_relay(e, &b, &data, &size), TELEM_EINVAL);
    b = m; b.inner_size = 0;
    CHECK_RC(telem_proto_encode_relay(e, &b, &data, &size), TELEM_EINVAL);
    b = m; b.inner_size = TELEM_RELAY_INNER_MAX + 1;
    CHECK_RC(telem_proto_encode_relay(e, &b, &data, &size), TELEM_ETOOBIG);
    b = m; b.nnodes = TELEM_RELAY_NODES_MAX + 1;
    CHECK_RC(telem_proto_encode_relay(e, &b, &data, &size), TELEM_ETOOBIG);
    const char *const empty[] = { "n1", "" };
    b = m; b.nodes = empty; b.nnodes = 2;
    CHECK_RC(telem_proto_encode_relay(e, &b, &data, &size), TELEM_EINVAL);
    telem_relay_item_t it = { .node = "n1", .code = 0 };
    telem_relay_rep_t r = { .id = 1, .items = &it, .nitems = 1 };
    CHECK_RC(telem_proto_encode_relay_reply(e, &r, &data, &size),
             TELEM_EINVAL);                       /* code 0, no frame */
    it.code = 3;
    CHECK_RC(telem_proto_encode_relay_reply(e, &r, &data, &size),
             TELEM_EINVAL);                       /* positive code */
    it = (telem_relay_item_t) { .node = "", .code = TELEM_EIO };
    CHECK_RC(telem_proto_encode_relay_reply(e, &r, &data, &size),
             TELEM_EINVAL);                       /* no name */
    r.items = NULL;
    CHECK_RC(telem_proto_encode_relay_reply(e, &r, &data, &size),
             TELEM_EINVAL);
}

static int
s_check_ctl(telem_proto_encoder_t *e, telem_proto_decoder_t *d,
            telem_ctl_op_t op, uint64_t *id)
{
    telem_control_t c = { .id = 5, .op = op, .arg = 1 };
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_control(e, &c, &data, &size), 0);
    char why[256];
    return telem_proto_relay_inner_check(d, data, size, id, why, sizeof why);
}

static void
test_inner_check(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    uint64_t id = 0;
    CHECK_RC(s_check_ctl(e, d, TELEM_CTL_STATUS, &id), 0);
    CHECK_INT(id, 5);
    CHECK_RC(s_check_ctl(e, d, TELEM_CTL_SYNC, &id), 0);
    CHECK_RC(s_check_ctl(e, d, TELEM_CTL_SHUTDOWN, &id), TELEM_EPERM);
    CHECK_RC(s_check_ctl(e, d, TELEM_CTL_HANDOVER, &id), TELEM_EPERM);
    CHECK_RC(s_check_ctl(e, d, TELEM_CTL_SET_LEVEL, &id), TELEM_EPERM);
    CHECK_RC(s_check_ctl(e, d, TELEM_CTL_SET_WINDOW, &id), TELEM_EPERM);
    CHECK_RC(s_check_ctl(e, d, (telem_ctl_op_t) 99, &id), TELEM_EPERM);
    telem_sysinfo_req_t si = { .id = 8 };
    const void *data;
    size_t size;
    char why[256];
    CHECK_RC(telem_proto_encode_sysinfo(e, &si, &data, &size), 0);
    CHECK_RC(telem_proto_relay_inner_check(d, data, size, &id, why,
                                           sizeof why), 0);
    CHECK_INT(id, 8);
    /* A batch is not a request; a relay inside a relay is not either. */
    telem_sample_t s = { .metric = "m", .level = 1, .value = 1 };
    telem_batch_t bt = { .samples = &s, .nsamples = 1 };
    CHECK_RC(telem_proto_encode_batch(e, &bt, &data, &size), 0);
    CHECK_RC(telem_proto_relay_inner_check(d, data, size, &id, why,
                                           sizeof why), TELEM_EPROTO);
    CHECK(strstr(why, "batch") != NULL);
    CHECK_RC(telem_proto_relay_inner_check(d, "\x81", 1, &id, why,
                                           sizeof why), TELEM_EPROTO);
}

/* ---------------------------------------------------------- malformed */

static void
s_truncations(telem_proto_decoder_t *d, const void *data, size_t size)
{
    unsigned char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    telem_msg_t out;
    int bad = 0;
    for (size_t n = 0; n < size; n++) {
        unsigned char *tail = malloc(n ? n : 1);
        memcpy(tail, copy, n);
        int rc = telem_proto_decode(d, tail, n, &out);
        if (rc != TELEM_EPROTO)
            bad++;
        free(tail);
    }
    CHECK_INT(bad, 0);
    copy[size] = 0xc0;
    CHECK_RC(telem_proto_decode(d, copy, size + 1, &out), TELEM_EPROTO);
    free(copy);
}

static void
test_truncation(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    unsigned char inner[512], frame[600];
    size_t isz;
    telem_relay_req_t m;
    s_relay_req(e, &m, inner, &isz);
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_relay(e, &m, &data, &size), 0);
    s_truncations(d, data, size);
    telem_relay_item_t it[2] = {
        { .node = "n1", .frame = inner, .size = isz },
        { .node = "n2", .code = TELEM_ECONN, .message = "down" },
    };
    telem_relay_rep_t r = { .id = 3, .items = it, .nitems = 2 };
    CHECK_RC(telem_proto_encode_relay_reply(e, &r, &data, &size), 0);
    CHECK(size <= sizeof frame);
    memcpy(frame, data, size);
    s_truncations(d, frame, size);
}

/* A relay_reply whose one item the caller writes after this call. */
static void
s_raw_rep(s_raw_t *w, uint32_t nitems)
{
    s_raw_head(w, 4, TELEM_PROTO_VERSION, TELEM_MSG_RELAY_REPLY);
    s_raw_int(w, "id", 1);
    s_raw_str(w, "it");
    msgpack_pack_array(&w->pk, nitems);
}

static void
s_raw_item(s_raw_t *w, const char *node, int64_t code, int an,
           const char *frame, size_t fsize)
{
    msgpack_pack_array(&w->pk, 5);
    s_raw_str(w, node);
    msgpack_pack_int64(&w->pk, code);
    if (an) msgpack_pack_true(&w->pk); else msgpack_pack_false(&w->pk);
    s_raw_str(w, "");
    msgpack_pack_bin_with_body(&w->pk, frame, fsize);
}

static void
test_bad_items(telem_proto_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    s_raw_rep(&w, 1);
    s_raw_item(&w, "n1", 0, 0, "ab", 2);
    CHECK_RC(s_raw_decode(d, &w), 0);                 /* the control */
    s_raw_rep(&w, 1);
    s_raw_item(&w, "n1", 0, 0, "", 0);                /* neither */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_rep(&w, 1);
    s_raw_item(&w, "n1", TELEM_EIO, 0, "ab", 2);      /* both */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_rep(&w, 1);
    s_raw_item(&w, "n1", 5, 0, "", 0);                /* positive code */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_rep(&w, 1);
    s_raw_item(&w, "", TELEM_EIO, 0, "", 0);          /* empty name */
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_rep(&w, 1);                                 /* array of 4 */
    msgpack_pack_array(&w.pk, 4);
    s_raw_str(&w, "n1");
    msgpack_pack_int64(&w.pk, -1);
    msgpack_pack_false(&w.pk);
    s_raw_str(&w, "");
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_rep(&w, 1);                                 /* frame as a str */
    msgpack_pack_array(&w.pk, 5);
    s_raw_str(&w, "n1");
    msgpack_pack_int64(&w.pk, 0);
    msgpack_pack_false(&w.pk);
    s_raw_str(&w, "");
    s_raw_str(&w, "frame");
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    s_raw_rep(&w, 0xffffffffu);                       /* huge count */
    CHECK(s_raw_decode(d, &w) < 0);
    s_raw_rep(&w, 2);                                 /* count > items */
    s_raw_item(&w, "n1", 0, 0, "ab", 2);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    msgpack_sbuffer_destroy(&w.sb);
}

static void
test_bad_requests(telem_proto_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    /* The control: every required key. */
    s_raw_head(&w, 6, TELEM_PROTO_VERSION, TELEM_MSG_RELAY);
    s_raw_int(&w, "id", 1);
    s_raw_str(&w, "nd");
    msgpack_pack_array(&w.pk, 1);
    s_raw_str(&w, "n1");
    s_raw_int(&w, "dl", 100);
    s_raw_str(&w, "rq");
    msgpack_pack_bin_with_body(&w.pk, "x", 1);
    CHECK_RC(s_raw_decode(d, &w), 0);
    /* No nodes, a deadline of 0, no inner frame, a node list of ints, a
       huge node count, an empty inner frame, an inner frame as a str. */
    struct { int nd; int64_t dl; int rq; } bad[] = {
        { 0, 100, 1 }, { 1, 0, 1 }, { 1, 100, 0 }, { 2, 100, 1 },
        { 3, 100, 1 }, { 1, 100, 2 }, { 1, 100, 3 }, { 1, -1, 1 },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        s_raw_head(&w, 5 + (bad[k].rq != 0), TELEM_PROTO_VERSION,
                   TELEM_MSG_RELAY);
        s_raw_int(&w, "id", 1);
        s_raw_str(&w, "nd");
        if (bad[k].nd == 3) {
            msgpack_pack_array(&w.pk, 0x7fffffff);
        } else {
            msgpack_pack_array(&w.pk, bad[k].nd == 0 ? 0 : 1);
            if (bad[k].nd == 1)
                s_raw_str(&w, "n1");
            else if (bad[k].nd == 2)
                msgpack_pack_int64(&w.pk, 7);
        }
        s_raw_int(&w, "dl", bad[k].dl);
        if (bad[k].rq) {
            s_raw_str(&w, "rq");
            if (bad[k].rq == 3)
                s_raw_str(&w, "x");
            else
                msgpack_pack_bin_with_body(&w.pk, "x", bad[k].rq == 1);
        }
        int rc = s_raw_decode(d, &w);
        if (rc >= 0)
            fprintf(stderr, "bad relay request %zu decoded\n", k);
        CHECK(rc < 0);
    }
    msgpack_sbuffer_destroy(&w.sb);
}

/* Flips bytes of a valid reply at fixed-seed random places; the decoder
 * must answer every variant with 0 or an error, never a crash. */
static void
test_flips(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    unsigned char inner[512];
    size_t isz;
    telem_relay_req_t m;
    s_relay_req(e, &m, inner, &isz);
    telem_relay_item_t it[2] = {
        { .node = "n1", .frame = inner, .size = isz },
        { .node = "n2", .code = TELEM_ECONN, .message = "down" },
    };
    telem_relay_rep_t r = { .id = 3, .items = it, .nitems = 2 };
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_relay_reply(e, &r, &data, &size), 0);
    unsigned char *buf = malloc(size);
    uint32_t seed = 12345;
    int crashed = 0;
    for (int k = 0; k < 20000; k++) {
        memcpy(buf, data, size);
        for (int f = 0; f < 3; f++) {
            seed = seed * 1103515245u + 12345u;
            buf[(seed >> 8) % size] ^= (unsigned char) (seed >> 24 | 1);
        }
        telem_msg_t out;
        int rc = telem_proto_decode(d, buf, size, &out);
        crashed += rc > 0;
    }
    CHECK_INT(crashed, 0);
    free(buf);
}

int
main(void)
{
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    test_req_roundtrip(e, d);
    test_rep_roundtrip(e, d);
    test_encoder_refusals(e);
    test_inner_check(e, d);
    test_truncation(e, d);
    test_bad_items(d);
    test_bad_requests(d);
    test_flips(e, d);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&d);
    return check_report("test_proto_relay");
}
