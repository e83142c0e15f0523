/* test_watch_proto.c - the watcher's wire messages (types 8-12): every
 * type round-trips field by field, encoders refuse what decoders would,
 * and malformed frames (truncated at every byte, wrong types, over-limit
 * counts, a restart without nodes, random mutations) give an error code,
 * never a crash (the sanitizer build checks the "never").
 */
#include "telem_proto.h"

#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int
same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Copies a frame (the encoder's buffer is reused by the next encode). */
static void *
dup_frame(const void *data, size_t size)
{
    void *p = malloc(size);
    memcpy(p, data, size);
    return p;
}

/* ---- fixtures ---------------------------------------------------------- */

static const char *const s_nodes[] = { "n1", "a \"quoted\" node", "ünï" };
static const telem_watch_dev_t s_devs[] = { { "n1", "0" }, { "ünï", "" } };
static const telem_watch_evidence_t s_ev[] = {
    { "ratio", 1.25 }, { "z", -0.0 }, { "nan", NAN }, { "inf", INFINITY },
};

static telem_watch_event_t
event_fixture(void)
{
    return (telem_watch_event_t) {
        .seq = 42, .detector = "slowgpu", .severity = 2,
        .ts_ns = -5, .score = 0.25, .text = "device 0 on 'n1' is slow",
        .nodes = s_nodes, .nnodes = 3, .devices = s_devs, .ndevices = 2,
        .evidence = s_ev, .nevidence = 4,
    };
}

static const char *const s_dets[] = { "slowgpu", "heartbeat" };

static telem_restart_t
restart_fixture(void)
{
    return (telem_restart_t) {
        .id = UINT64_MAX, .ts_ns = INT64_MAX, .reason = "slow",
        .exclude = s_nodes, .nexclude = 2, .devices = s_devs, .ndevices = 1,
        .detectors = s_dets, .ndetectors = 2,
    };
}

static const telem_watch_row_t s_rows[] = {
    { "", "ticks", "12" }, { "slowgpu", "effect", "0.08" },
    { "slowgpu", "flagged", "" },
};

/* ---- round trips ------------------------------------------------------- */

static void
test_event(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    telem_watch_event_t m = event_fixture();
    const void *data;
    size_t size;
    telem_msg_t out;
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK((int) out.type == TELEM_MSG_WATCH_EVENT);
    const telem_watch_event_t *r = &out.u.watch_event;
    CHECK(r->seq == 42 && r->severity == 2 && r->ts_ns == -5);
    CHECK(r->score == 0.25 && same(r->detector, "slowgpu"));
    CHECK(same(r->text, m.text));
    CHECK(r->nnodes == 3 && r->ndevices == 2 && r->nevidence == 4);
    for (uint32_t i = 0; i < r->nnodes && i < 3; i++)
        CHECK(same(r->nodes[i], s_nodes[i]));
    CHECK(r->ndevices == 2 && same(r->devices[1].node, "ünï") &&
          same(r->devices[1].device, "") && same(r->devices[0].device, "0"));
    CHECK(r->nevidence == 4 && same(r->evidence[0].name, "ratio") &&
          r->evidence[0].value == 1.25 && signbit(r->evidence[1].value) &&
          isnan(r->evidence[2].value) && isinf(r->evidence[3].value));
    CHECK(
        same(telem_proto_msg_type_name(TELEM_MSG_WATCH_EVENT), "watch_event"));
    /* Empty lists. */
    m.nnodes = m.ndevices = m.nevidence = 0;
    m.nodes = NULL;
    m.devices = NULL;
    m.evidence = NULL;
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK(out.u.watch_event.nnodes == 0 && out.u.watch_event.nodes == NULL);
    /* Refusals. */
    m = event_fixture();
    m.severity = 3;
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size), TELEM_EINVAL);
    m = event_fixture();
    m.detector = "";
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size), TELEM_EINVAL);
    m = event_fixture();
    m.nodes = NULL;
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size), TELEM_EINVAL);
    const char *empty[] = { "" };
    m = event_fixture();
    m.nodes = empty;
    m.nnodes = 1;
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size), TELEM_EINVAL);
    char big[TELEM_NAME_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *bigs[] = { big };
    m.nodes = bigs;
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size),
             TELEM_ETOOBIG);
}

static void
test_restart(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    telem_restart_t m = restart_fixture();
    const void *data;
    size_t size;
    telem_msg_t out;
    CHECK_RC(telem_proto_encode_restart(e, &m, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK((int) out.type == TELEM_MSG_RESTART);
    const telem_restart_t *r = &out.u.restart;
    CHECK(r->id == UINT64_MAX && r->ts_ns == INT64_MAX && same(r->reason, "slow"));
    CHECK(r->nexclude == 2 && same(r->exclude[0], "n1") &&
          same(r->exclude[1], "a \"quoted\" node"));
    CHECK(r->ndevices == 1 && same(r->devices[0].node, "n1"));
    CHECK(r->ndetectors == 2 && same(r->detectors[1], "heartbeat"));
    m.nexclude = 0;
    CHECK_RC(telem_proto_encode_restart(e, &m, &data, &size), TELEM_EINVAL);

    telem_restart_ack_t a = { 7, TELEM_ECONN, "launcher busy" };
    CHECK_RC(telem_proto_encode_restart_ack(e, &a, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK((int) out.type == TELEM_MSG_RESTART_ACK);
    CHECK(out.u.restart_ack.id == 7 && out.u.restart_ack.code == TELEM_ECONN &&
          same(out.u.restart_ack.message, "launcher busy"));
    a.code = 1;
    CHECK_RC(telem_proto_encode_restart_ack(e, &a, &data, &size), TELEM_EINVAL);
}

static void
test_ctl(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    telem_watch_ctl_t c = { 9, TELEM_WCTL_SET, "slowgpu", "effect", "0.1" };
    const void *data;
    size_t size;
    telem_msg_t out;
    CHECK_RC(telem_proto_encode_watch_ctl(e, &c, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK((int) out.type == TELEM_MSG_WATCH_CTL);
    CHECK(out.u.watch_ctl.id == 9 && out.u.watch_ctl.op == TELEM_WCTL_SET &&
          same(out.u.watch_ctl.detector, "slowgpu") &&
          same(out.u.watch_ctl.param, "effect") &&
          same(out.u.watch_ctl.value, "0.1"));
    telem_watch_ctl_t s = { 1, TELEM_WCTL_STATUS, NULL, NULL, NULL };
    CHECK_RC(telem_proto_encode_watch_ctl(e, &s, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK(same(out.u.watch_ctl.detector, "") && same(out.u.watch_ctl.value, ""));
    s.op = 0;
    CHECK_RC(telem_proto_encode_watch_ctl(e, &s, &data, &size), TELEM_EINVAL);

    telem_watch_ctl_reply_t r = { 9, 0, "", s_rows, 3 };
    CHECK_RC(telem_proto_encode_watch_ctl_reply(e, &r, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK((int) out.type == TELEM_MSG_WATCH_CTL_REPLY);
    const telem_watch_ctl_reply_t *o = &out.u.watch_ctl_reply;
    CHECK(o->id == 9 && o->code == 0 && o->nrows == 3);
    for (uint32_t i = 0; i < o->nrows && i < 3; i++)
        CHECK(same(o->rows[i].detector, s_rows[i].detector) &&
              same(o->rows[i].key, s_rows[i].key) &&
              same(o->rows[i].value, s_rows[i].value));
    r.code = 2;
    CHECK_RC(telem_proto_encode_watch_ctl_reply(e, &r, &data, &size),
             TELEM_EINVAL);
    r.code = 0;
    r.rows = NULL;
    CHECK_RC(telem_proto_encode_watch_ctl_reply(e, &r, &data, &size),
             TELEM_EINVAL);
}

/* A large event: many nodes, long texts. */
static void
test_large(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    enum { N = 5000 };
    static char names[N][16];
    static const char *ptrs[N];
    static telem_watch_row_t rows[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "node-%d", i);
        ptrs[i] = names[i];
        rows[i] = (telem_watch_row_t) { names[i], "k", names[N - 1 - i] };
    }
    telem_watch_event_t m = event_fixture();
    m.nodes = ptrs;
    m.nnodes = N;
    const void *data;
    size_t size;
    telem_msg_t out;
    CHECK_RC(telem_proto_encode_watch_event(e, &m, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK(out.u.watch_event.nnodes == N &&
          same(out.u.watch_event.nodes[N - 1], "node-4999") &&
          out.u.watch_event.ndevices == 2 &&
          same(out.u.watch_event.devices[1].node, "ünï") &&
          same(out.u.watch_event.evidence[0].name, "ratio"));
    telem_watch_ctl_reply_t r = { 1, 0, "", rows, N };
    CHECK_RC(telem_proto_encode_watch_ctl_reply(e, &r, &data, &size), 0);
    CHECK_RC(telem_proto_decode(d, data, size, &out), 0);
    CHECK(out.u.watch_ctl_reply.nrows == N &&
          same(out.u.watch_ctl_reply.rows[10].value, "node-4989"));
}

/* ---- malformed input --------------------------------------------------- */

static void
test_truncation(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    telem_watch_event_t ev = event_fixture();
    telem_restart_t rs = restart_fixture();
    telem_restart_ack_t ack = { 1, -3, "x" };
    telem_watch_ctl_t ctl = { 1, 3, "a", "b", "c" };
    telem_watch_ctl_reply_t rep = { 1, 0, "m", s_rows, 3 };
    const void *data;
    size_t size;
    for (int k = 0; k < 5; k++) {
        int rc = k == 0 ? telem_proto_encode_watch_event(e, &ev, &data, &size)
            : k == 1    ? telem_proto_encode_restart(e, &rs, &data, &size)
            : k == 2    ? telem_proto_encode_restart_ack(e, &ack, &data, &size)
            : k == 3
            ? telem_proto_encode_watch_ctl(e, &ctl, &data, &size)
            : telem_proto_encode_watch_ctl_reply(e, &rep, &data, &size);
        CHECK_RC(rc, 0);
        void *frame = dup_frame(data, size);
        for (size_t n = 0; n < size; n++) {
            void *cut = dup_frame(frame, n ? n : 1);  /* exact-size buffer */
            telem_msg_t out;
            CHECK(telem_proto_decode(d, cut, n, &out) < 0);
            free(cut);
        }
        telem_msg_t out;
        CHECK_RC(telem_proto_decode(d, frame, size, &out), 0);
        free(frame);
    }
}

/* A frame built by hand: {"v":1,"t":type, ...}. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} raw_t;

static void
raw_begin(raw_t *r, int type, int nextra)
{
    msgpack_sbuffer_init(&r->sb);
    msgpack_packer_init(&r->pk, &r->sb, msgpack_sbuffer_write);
    msgpack_pack_map(&r->pk, 2 + (size_t) nextra);
    msgpack_pack_str_with_body(&r->pk, "v", 1);
    msgpack_pack_int(&r->pk, 1);
    msgpack_pack_str_with_body(&r->pk, "t", 1);
    msgpack_pack_int(&r->pk, type);
}

static void
raw_key(raw_t *r, const char *k)
{
    msgpack_pack_str_with_body(&r->pk, k, strlen(k));
}

static int
raw_decode(raw_t *r, telem_proto_decoder_t *d, telem_msg_t *out)
{
    int rc = telem_proto_decode(d, r->sb.data, r->sb.size, out);
    msgpack_sbuffer_destroy(&r->sb);
    return rc;
}

static void
test_bad_fields(telem_proto_decoder_t *d)
{
    telem_msg_t out;
    raw_t r;
    /* restart: "ex" missing, then empty. */
    raw_begin(&r, TELEM_MSG_RESTART, 1);
    raw_key(&r, "id");
    msgpack_pack_uint64(&r.pk, 1);
    CHECK_RC(raw_decode(&r, d, &out), TELEM_EPROTO);
    raw_begin(&r, TELEM_MSG_RESTART, 2);
    raw_key(&r, "id");
    msgpack_pack_uint64(&r.pk, 1);
    raw_key(&r, "ex");
    msgpack_pack_array(&r.pk, 0);
    CHECK_RC(raw_decode(&r, d, &out), TELEM_EPROTO);
    CHECK(strstr(telem_proto_decoder_error(d), "exclude") != NULL);
    /* event: nodes not a list; a device that is not a pair; evidence that
     * is not a number; severity out of range; an unknown key is fine. */
    static const char *const bad[] = { "nd", "dv", "ev", "sv", "zz" };
    for (int k = 0; k < 5; k++) {
        raw_begin(&r, TELEM_MSG_WATCH_EVENT, k == 3 ? 3 : 4);
        raw_key(&r, "sq");
        msgpack_pack_uint64(&r.pk, 1);
        raw_key(&r, "dt");
        msgpack_pack_str_with_body(&r.pk, "x", 1);
        if (k != 3) {
            raw_key(&r, "sv");
            msgpack_pack_int(&r.pk, 1);
        }
        raw_key(&r, bad[k]);
        if (k == 0) {
            msgpack_pack_str_with_body(&r.pk, "n1", 2);
        } else if (k == 1 || k == 2) {
            msgpack_pack_array(&r.pk, 1);
            msgpack_pack_array(&r.pk, 2);
            msgpack_pack_str_with_body(&r.pk, "n1", 2);
            if (k == 1)
                msgpack_pack_int(&r.pk, 0);     /* device must be a str */
            else
                msgpack_pack_str_with_body(&r.pk, "0", 1);
        } else if (k == 3) {
            msgpack_pack_int(&r.pk, 3);
        } else {
            msgpack_pack_array(&r.pk, 1);
            msgpack_pack_nil(&r.pk);
        }
        CHECK_RC(raw_decode(&r, d, &out), k == 4 ? 0 : TELEM_EPROTO);
    }
    /* A list header claiming 2^32-1 elements in a tiny frame. */
    raw_begin(&r, TELEM_MSG_WATCH_CTL_REPLY, 2);
    raw_key(&r, "id");
    msgpack_pack_uint64(&r.pk, 1);
    raw_key(&r, "rw");
    msgpack_pack_array(&r.pk, UINT32_MAX);
    CHECK(raw_decode(&r, d, &out) < 0);
    /* watch_ctl with op 0. */
    raw_begin(&r, TELEM_MSG_WATCH_CTL, 2);
    raw_key(&r, "id");
    msgpack_pack_uint64(&r.pk, 1);
    raw_key(&r, "op");
    msgpack_pack_int(&r.pk, 0);
    CHECK_RC(raw_decode(&r, d, &out), TELEM_EPROTO);
    /* Rows: a row of 2, an empty key. */
    for (int k = 0; k < 2; k++) {
        raw_begin(&r, TELEM_MSG_WATCH_CTL_REPLY, 2);
        raw_key(&r, "id");
        msgpack_pack_uint64(&r.pk, 1);
        raw_key(&r, "rw");
        msgpack_pack_array(&r.pk, 1);
        msgpack_pack_array(&r.pk, k == 0 ? 2 : 3);
        msgpack_pack_str_with_body(&r.pk, "d", 1);
        msgpack_pack_str_with_body(&r.pk, "", 0);
        if (k == 1)
            msgpack_pack_str_with_body(&r.pk, "v", 1);
        CHECK_RC(raw_decode(&r, d, &out), TELEM_EPROTO);
    }
}

/* Random byte mutations of valid frames: any result but a crash, and a
 * frame that still decodes has usable strings. */
static void
test_mutation(telem_proto_encoder_t *e, telem_proto_decoder_t *d)
{
    telem_watch_event_t ev = event_fixture();
    telem_restart_t rs = restart_fixture();
    telem_watch_ctl_reply_t rep = { 1, 0, "m", s_rows, 3 };
    uint64_t x = 88172645463325252ULL;
    for (int k = 0; k < 3; k++) {
        const void *data;
        size_t size;
        int rc = k == 0 ? telem_proto_encode_watch_event(e, &ev, &data, &size)
            : k == 1
            ? telem_proto_encode_restart(e, &rs, &data, &size)
            : telem_proto_encode_watch_ctl_reply(e, &rep, &data, &size);
        CHECK_RC(rc, 0);
        uint8_t *f = dup_frame(data, size);
        for (int it = 0; it < 3000; it++) {
            uint8_t *m = dup_frame(f, size);
            for (int j = 0; j < 3; j++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                m[x % size] = (uint8_t) (x >> 24);
            }
            telem_msg_t out;
            if (telem_proto_decode(d, m, size, &out) == 0 &&
                (int) out.type == TELEM_MSG_WATCH_EVENT) {
                const telem_watch_event_t *w = &out.u.watch_event;
                for (uint32_t i = 0; i < w->nnodes; i++)
                    CHECK(w->nodes[i] && strlen(w->nodes[i]) > 0);
                for (uint32_t i = 0; i < w->ndevices; i++)
                    CHECK(w->devices[i].node && w->devices[i].device);
            }
            free(m);
        }
        free(f);
    }
}

int
main(void)
{
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    test_event(e, d);
    test_restart(e, d);
    test_ctl(e, d);
    test_large(e, d);
    test_truncation(e, d);
    test_bad_fields(d);
    test_mutation(e, d);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&d);
    return check_report("test_watch_proto");
}
