/* test_proto_bad.c - the wire codec, malformed side: decoder rejections
 * (truncation at every offset, wrong header, missing and duplicate keys,
 * wrong types, limits, absurd counts, trailing bytes), the lenient forms
 * it must accept, and a fixed-seed byte-flipping run that must never crash
 * (run it under ASan to make that mean something).  Malformed frames are
 * built with msgpack-c's packer (proto_test.h).
 */
#include "check.h"
#include "proto_test.h"

/* ---------------------------------------------------- decoder refusals */

static void
test_truncation(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
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
        CHECK(strstr(telem_proto_decoder_error(d), "trailing") != NULL);
        free(copy);
    }
}

static void
test_header_refusals(telem_proto_decoder_t *d)
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
    CHECK(strstr(telem_proto_decoder_error(d), "missing \"v\"") != NULL);

    s_raw_head(&w, 3, 2, TELEM_MSG_CONTROL);
    s_raw_int(&w, "id", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EVERSION);
    s_raw_head(&w, 2, 0, TELEM_MSG_CONTROL);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EVERSION);
    const int64_t types[] = { 0, 18, 99, -1, INT64_MAX };   /* unassigned */
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        s_raw_head(&w, 2, TELEM_PROTO_VERSION, types[i]);
        CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
        CHECK(strstr(telem_proto_decoder_error(d), "unknown message type")
              != NULL);
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
test_mandatory_refusals(telem_proto_decoder_t *d)
{
    s_raw_t w;
    s_raw_init(&w);
    s_raw_head(&w, 3, 1, TELEM_MSG_CONTROL);
    s_raw_int(&w, "id", 1);
    CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
    CHECK(strcmp(telem_proto_decoder_error(d), "control: missing \"op\"") == 0);
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
s_sample_case(telem_proto_decoder_t *d, s_raw_t *w, int how)
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
test_field_refusals(telem_proto_decoder_t *d)
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
            fprintf(stderr, "sample case %d: rc %d (%s)\n", how, rc,
                    telem_proto_decoder_error(d));
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
    CHECK(strcmp(telem_proto_decoder_error(d),
                 "batch: sample 3: value is not a number")
          == 0);

    /* a sample's kind (element 5) that is not an integer 0-255 */
    for (int k = 0; k < 3; k++) {
        s_raw_head(&w, 3, 1, TELEM_MSG_BATCH);
        s_raw_str(&w, "s");
        msgpack_pack_array(&w.pk, 1);
        msgpack_pack_array(&w.pk, 6);
        s_raw_str(&w, "m");
        msgpack_pack_int(&w.pk, 1);
        msgpack_pack_double(&w.pk, 1.0);
        msgpack_pack_int(&w.pk, 1);
        msgpack_pack_nil(&w.pk);
        if (k == 0)
            s_raw_str(&w, "1");
        else
            msgpack_pack_int(&w.pk, k == 1 ? -1 : 256);
        CHECK_RC(s_raw_decode(d, &w), TELEM_EPROTO);
        CHECK(strstr(telem_proto_decoder_error(d), "sample 0: kind") != NULL);
    }

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
test_count_refusals(telem_proto_decoder_t *d)
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
s_series_case(telem_proto_decoder_t *d, s_raw_t *w, size_t nts, size_t nvl,
              bool with_vl)
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
test_reply_refusals(telem_proto_decoder_t *d)
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
    msgpack_pack_array(&w->pk, 7);
    s_raw_str(w, "m2");
    msgpack_pack_uint64(&w->pk, 7);
    msgpack_pack_uint64(&w->pk, UINT64_MAX);
    msgpack_pack_int(&w->pk, 1);
    msgpack_pack_map(&w->pk, 1);
    s_raw_str(w, "k");
    s_raw_str(w, "v");
    msgpack_pack_uint64(&w->pk, 1);           /* kind: a counter increment */
    s_raw_str(w, "later");                    /* a field of a later version */
    s_raw_int(w, "t", TELEM_MSG_BATCH);
    s_raw_str(w, "fin");
    msgpack_pack_uint64(&w->pk, UINT64_MAX);
    s_raw_str(w, "bin");
    msgpack_pack_bin_with_body(&w->pk, "xyz", 3);
    s_raw_int(w, "v", 1);                     /* v and t last */
}

/* An empty tags map ("tg": {}, "f": {}) read by a decoder whose tag vector
 * was never allocated: nothing to point at, so no pointer is formed from
 * the NULL vector (a NULL + 0 the fuzzer's UBSan build reported). */
static void
test_empty_tags_fresh(void)
{
    s_raw_t w;
    s_raw_init(&w);
    telem_msg_t out;
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    CHECK(d != NULL);
    if (!d)
        return;
    s_raw_head(&w, 4, TELEM_PROTO_VERSION, TELEM_MSG_BATCH);
    s_raw_str(&w, "tg");
    msgpack_pack_map(&w.pk, 0);
    s_raw_str(&w, "s");
    msgpack_pack_array(&w.pk, 0);
    CHECK(telem_proto_decode(d, w.sb.data, w.sb.size, &out) == 0
          && out.u.batch.ntags == 0 && out.u.batch.tags == NULL);
    telem_proto_decoder_destroy(&d);
    d = telem_proto_decoder_new();
    CHECK(d != NULL);
    s_raw_head(&w, 4, TELEM_PROTO_VERSION, TELEM_MSG_QUERY);
    s_raw_int(&w, "id", 3);
    s_raw_str(&w, "f");
    msgpack_pack_map(&w.pk, 0);
    CHECK(d && telem_proto_decode(d, w.sb.data, w.sb.size, &out) == 0
          && out.u.query.nfilters == 0 && out.u.query.filters == NULL);
    telem_proto_decoder_destroy(&d);
    msgpack_sbuffer_destroy(&w.sb);
}

static void
test_lenient_forms(telem_proto_decoder_t *d)
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
        CHECK(b->samples[0].kind == 0 && b->samples[1].kind == 0);
        CHECK(b->samples[2].kind == TELEM_SAMPLE_COUNTER_ADD);
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
test_mutation(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    telem_proto_decoder_t *d2 = telem_proto_decoder_new();
    telem_proto_encoder_t *e2 = telem_proto_encoder_new();
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
            if (out.type > TELEM_MSG_ERROR)
                continue;   /* another family's message: its own tests */
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
    telem_proto_decoder_destroy(&d2);
    telem_proto_encoder_destroy(&e2);
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
    test_truncation(e, d);
    test_header_refusals(d);
    test_mandatory_refusals(d);
    test_field_refusals(d);
    test_count_refusals(d);
    test_reply_refusals(d);
    test_lenient_forms(d);
    test_empty_tags_fresh();
    test_mutation(e, d);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&d);
    CHECK(e == NULL && d == NULL);
    return check_report("test_proto_bad");
}
