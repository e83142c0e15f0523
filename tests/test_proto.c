/* test_proto.c - the wire codec, well-formed side: a round trip per
 * message type, type names, the registration of message families, encoder
 * validation, and decoder/encoder reuse across frames of very different
 * sizes.  Malformed input is test_proto_bad.c's; shared helpers and
 * fixtures are in proto_test.h.
 */
#include "check.h"
#include "proto_test.h"
#include "telem_proto_int.h"

/* --------------------------------------------------------- round trips */

static void
test_round_trips(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
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
    CHECK(strcmp(telem_proto_msg_type_name(TELEM_MSG_BATCH), "batch") == 0);
    CHECK(
        strcmp(telem_proto_msg_type_name(TELEM_MSG_QUERY_REPLY), "query_reply")
        == 0);
    CHECK(strcmp(telem_proto_msg_type_name(TELEM_MSG_ERROR), "error") == 0);
    CHECK(strcmp(telem_proto_msg_type_name(0), "unknown") == 0);
    CHECK(strcmp(telem_proto_msg_type_name(18), "unknown")
          == 0); /* unassigned */
    CHECK(strcmp(telem_proto_msg_type_name(-1), "unknown") == 0);
}

/* The dispatch registration: the real one passes the checks, and the
 * checks refuse a duplicate type, a type out of range, a missing decoder
 * and a struct too big for telem_msg_t. */
static int
s_dec_dummy(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    (void) d, (void) r, (void) nkeys, (void) msg;
    return 0;
}

static void
test_families(void)
{
    char why[128] = "";
    size_t n = 0;
    const tp_family_t *const *fams = tp_families(&n);
    CHECK(n >= 2);
    CHECK_RC(tp_families_check(fams, n, why, sizeof why), 0);
    for (int type = TELEM_MSG_BATCH; type <= TELEM_MSG_ERROR; type++) {
        const tp_type_t *t = tp_type_find(type);
        CHECK(t && t->type == type
              && strcmp(t->name, telem_proto_msg_type_name(type)) == 0);
    }
    CHECK(tp_type_find(0) == NULL && tp_type_find(-1) == NULL);
    CHECK(tp_type_find(INT64_MAX) == NULL);

    static const tp_type_t dup[] = { { TELEM_MSG_META, "again", s_dec_dummy, 8 } };
    static const tp_type_t range[] = { { TP_TYPE_MAX + 1, "x", s_dec_dummy, 8 } };
    static const tp_type_t nodec[] = { { 200, "x", NULL, 8 } };
    static const tp_type_t big[] = { { 200, "x", s_dec_dummy, sizeof(telem_msg_t) } };
    const tp_family_t bad[4] = { { "dup", dup, 1 }, { "range", range, 1 },
                                 { "nodec", nodec, 1 }, { "big", big, 1 } };
    static const char *const reason[4] = { "type 2 registered twice",
        "type 256 out of range", "without a name or decoder", "too big" };
    for (int k = 0; k < 4; k++) {
        const tp_family_t *set[8];
        for (size_t i = 0; i < n && i < 7; i++)
            set[i] = fams[i];
        set[n < 7 ? n : 7] = &bad[k];
        CHECK_RC(tp_families_check(set, (n < 7 ? n : 7) + 1, why, sizeof why),
                 TELEM_EINVAL);
        CHECK(strstr(why, reason[k]) != NULL);
    }
}

/* ---------------------------------------------------- encoder refusals */

static void
test_encode_batch_refusals(telem_proto_encoder_t *e)
{
    const void *data;
    size_t size;
    char too_long[TELEM_NAME_MAX + 2];
    memset(too_long, 'a', TELEM_NAME_MAX + 1);
    too_long[TELEM_NAME_MAX + 1] = '\0';
    telem_sample_t s = { .metric = "m", .level = 1 };
    telem_batch_t b = { .samples = &s, .nsamples = 1 };
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), 0);
    CHECK_RC(telem_proto_encode_batch(NULL, &b, &data, &size), TELEM_EINVAL);
    CHECK_RC(telem_proto_encode_batch(e, NULL, &data, &size), TELEM_EINVAL);
    CHECK_RC(telem_proto_encode_batch(e, &b, NULL, &size), TELEM_EINVAL);
    s.metric = NULL;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.metric = "";
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.metric = too_long;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);
    s.metric = "m";
    s.level = 5;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.level = 1;
    telem_tag_t many[TELEM_TAGS_MAX + 1];
    for (int i = 0; i <= TELEM_TAGS_MAX; i++)
        many[i] = (telem_tag_t) { "k", "v" };
    s.tags = many;
    s.ntags = TELEM_TAGS_MAX + 1;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);
    s.ntags = 2;   /* duplicate keys */
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.tags = NULL;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    s.ntags = 0;
    b.tags = (telem_tag_t[]) { { "k", "" } };
    b.ntags = 1;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    b.ntags = 0;
    b.source = too_long;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);
    b.source = NULL;
    b.samples = NULL;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_EINVAL);
    b.nsamples = TELEM_BATCH_MAX + 1;
    b.samples = &s;
    CHECK_RC(telem_proto_encode_batch(e, &b, &data, &size), TELEM_ETOOBIG);
}

static void
test_encoder_refusals(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    const void *data;
    size_t size;
    char too_long[TELEM_NAME_MAX + 2];
    memset(too_long, 'a', TELEM_NAME_MAX + 1);
    too_long[TELEM_NAME_MAX + 1] = '\0';
    telem_meta_t meta = { .metric = "m", .type = 2 };
    CHECK_RC(telem_proto_encode_meta(e, &meta, &data, &size), TELEM_EINVAL);
    meta = (telem_meta_t) { .metric = "m", .doc = too_long };
    CHECK_RC(telem_proto_encode_meta(e, &meta, &data, &size), 0);
    char text[TELEM_TEXT_MAX + 2];
    memset(text, 't', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    meta.unit = text;
    CHECK_RC(telem_proto_encode_meta(e, &meta, &data, &size), TELEM_ETOOBIG);

    const char *names[TELEM_QUERY_METRICS_MAX + 1];
    for (int i = 0; i <= TELEM_QUERY_METRICS_MAX; i++)
        names[i] = "m";
    telem_query_t q = { .metrics = names, .nmetrics = TELEM_QUERY_METRICS_MAX + 1 };
    CHECK_RC(telem_proto_encode_query(e, &q, &data, &size), TELEM_ETOOBIG);
    q.nmetrics = 1;
    q.metrics = NULL;
    CHECK_RC(telem_proto_encode_query(e, &q, &data, &size), TELEM_EINVAL);
    q = (telem_query_t) { .filters = NULL, .nfilters = 1 };
    CHECK_RC(telem_proto_encode_query(e, &q, &data, &size), TELEM_EINVAL);

    telem_series_t sr = { .metric = "m", .npoints = 3 };
    telem_query_reply_t rp = { .node = "n", .series = &sr, .nseries = 1 };
    CHECK_RC(telem_proto_encode_query_reply(e, &rp, &data, &size),
             TELEM_EINVAL);
    rp.series = NULL;
    CHECK_RC(telem_proto_encode_query_reply(e, &rp, &data, &size),
             TELEM_EINVAL);
    rp = (telem_query_reply_t) { .node = "" };
    CHECK_RC(telem_proto_encode_query_reply(e, &rp, &data, &size),
             TELEM_EINVAL);

    telem_control_t c = { .op = 0 };
    CHECK_RC(telem_proto_encode_control(e, &c, &data, &size), TELEM_EINVAL);
    telem_control_reply_t cr = { .op = TELEM_CTL_STATUS, .status = s_status };
    cr.status.level = 5;
    CHECK_RC(telem_proto_encode_control_reply(e, &cr, &data, &size),
             TELEM_EINVAL);
    cr.status = s_status;
    cr.status.node = NULL;
    CHECK_RC(telem_proto_encode_control_reply(e, &cr, &data, &size),
             TELEM_EINVAL);
    telem_error_msg_t em = { .code = TELEM_EIO, .message = text };
    CHECK_RC(telem_proto_encode_error(e, &em, &data, &size), TELEM_ETOOBIG);

    /* a failed encode leaves the encoder usable */
    telem_msg_t ok = { .type = TELEM_MSG_CONTROL, .u.control = { .id = 1, .op = 1 } };
    s_round_trip(e, d, &ok);
}

/* -------------------------------------------------------------- reuse */

static void
test_reuse(telem_proto_encoder_t *e)
{
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    telem_proto_encoder_t *e2 = telem_proto_encoder_new();
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
    telem_proto_decoder_destroy(&d);
    telem_proto_encoder_destroy(&e2);
    CHECK(d == NULL && e2 == NULL);
    telem_proto_decoder_destroy(&d); /* NULL is fine */
    telem_proto_decoder_destroy(NULL);
    telem_proto_encoder_destroy(NULL);
}

int
main(void)
{
    s_init_strings();
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    if (!e || !d) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    CHECK(strcmp(telem_proto_decoder_error(d), "no error") == 0);
    test_type_names();
    test_families();
    test_round_trips(e, d);
    test_encode_batch_refusals(e);
    test_encoder_refusals(e, d);
    test_reuse(e);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&d);
    CHECK(e == NULL && d == NULL);
    return check_report("test_proto");
}
