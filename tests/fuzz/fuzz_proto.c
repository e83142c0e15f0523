/* fuzz_proto.c - libFuzzer target: the wire decoder of every message
 * family (runtime/proto: ingest, request/reply, control, watch events,
 * sysinfo, relay envelopes, dictionary headers) through telem_proto_decode(), the one
 * entry point every receiving socket uses.
 *
 * The input is one frame, as a socket would deliver it.  Oracles beyond
 * the sanitizers:
 *   - a decoded message re-encodes with its own encoder, the result
 *     decodes, and encoding that again gives the same bytes (the encoders
 *     write one canonical form, so decode o encode is a fixed point);
 *   - every string a decoded message points to is read whole (ASan sees
 *     a pointer left dangling by the decoder's fix-up pass).
 * The decoders are reused between inputs, as telemd reuses its own, so
 * state carried from one frame to the next is exercised too.
 *
 * msgpack-c's own unpacker preallocates whatever element count a header
 * claims (upstream issues #1013, #985); telem's reader checks every count
 * against the bytes left first (telem_proto_rd.c).  The seed corpus holds
 * such headers, and run.sh runs this target under -malloc_limit_mb, so an
 * allocation sized by a claimed count would be reported.  The control arm:
 * with TELEM_FUZZ_MSGPACK=1 each input is also handed to
 * msgpack_unpack_next(), which the same limit then reports on those seeds
 * (docs/testing.md, "Fuzzing").
 */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telem_proto.h"

static int
s_enc_core(telem_proto_encoder_t *e, const telem_msg_t *m, const void **d,
           size_t *n)
{
    switch ((int) m->type) {
    case TELEM_MSG_BATCH: return telem_proto_encode_batch(e, &m->u.batch, d, n);
    case TELEM_MSG_META: return telem_proto_encode_meta(e, &m->u.meta, d, n);
    case TELEM_MSG_QUERY: return telem_proto_encode_query(e, &m->u.query, d, n);
    case TELEM_MSG_QUERY_REPLY:
        return telem_proto_encode_query_reply(e, &m->u.query_reply, d, n);
    case TELEM_MSG_CONTROL:
        return telem_proto_encode_control(e, &m->u.control, d, n);
    case TELEM_MSG_CONTROL_REPLY:
        return telem_proto_encode_control_reply(e, &m->u.control_reply, d, n);
    case TELEM_MSG_ERROR: return telem_proto_encode_error(e, &m->u.error, d, n);
    }
    return TELEM_EINVAL;
}

static int
s_enc_other(telem_proto_encoder_t *e, const telem_msg_t *m, const void **d,
            size_t *n)
{
    int t = (int) m->type;
    switch (t) {
    case TELEM_MSG_DICT_REQ: case TELEM_MSG_DICT_REPL:
        return telem_proto_encode_dict_req(e, t, &m->u.dict_req, d, n);
    case TELEM_MSG_DICT_REP: case TELEM_MSG_DICT_ACK:
        return telem_proto_encode_dict_rep(e, t, &m->u.dict_rep, d, n);
    case TELEM_MSG_DICT_ADMIN:
        return telem_proto_encode_dict_admin(e, &m->u.dict_admin, d, n);
    case TELEM_MSG_DICT_ADMIN_REP:
        return telem_proto_encode_dict_admin_rep(e, &m->u.dict_admin_rep, d, n);
    case TELEM_MSG_WATCH_EVENT:
        return telem_proto_encode_watch_event(e, &m->u.watch_event, d, n);
    case TELEM_MSG_RESTART:
        return telem_proto_encode_restart(e, &m->u.restart, d, n);
    case TELEM_MSG_RESTART_ACK:
        return telem_proto_encode_restart_ack(e, &m->u.restart_ack, d, n);
    case TELEM_MSG_WATCH_CTL:
        return telem_proto_encode_watch_ctl(e, &m->u.watch_ctl, d, n);
    case TELEM_MSG_WATCH_CTL_REPLY:
        return telem_proto_encode_watch_ctl_reply(e, &m->u.watch_ctl_reply, d, n);
    case TELEM_MSG_SYSINFO:
        return telem_proto_encode_sysinfo(e, &m->u.sysinfo, d, n);
    case TELEM_MSG_SYSINFO_REPLY:
        return telem_proto_encode_sysinfo_reply(e, &m->u.sysinfo_reply, d, n);
    case TELEM_MSG_RELAY:
        return telem_proto_encode_relay(e, &m->u.relay, d, n);
    case TELEM_MSG_RELAY_REPLY:
        return telem_proto_encode_relay_reply(e, &m->u.relay_reply, d, n);
    }
    return s_enc_core(e, m, d, n);
}

/* Reads every string and tag of the message families whose structs hold
 * them at known places; a dangling pointer shows as an ASan report. */
static size_t
s_touch_tags(const telem_tag_t *t, uint32_t n)
{
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        k += strlen(t[i].key) + strlen(t[i].value);
    return k;
}

static size_t
s_touch(const telem_msg_t *m)
{
    size_t k = 0;
    if (m->type == TELEM_MSG_BATCH) {
        const telem_batch_t *b = &m->u.batch;
        k += strlen(b->source) + s_touch_tags(b->tags, b->ntags);
        for (uint32_t i = 0; i < b->nsamples; i++)
            k += strlen(b->samples[i].metric)
                 + s_touch_tags(b->samples[i].tags, b->samples[i].ntags);
    } else if (m->type == TELEM_MSG_QUERY) {
        for (uint32_t i = 0; i < m->u.query.nmetrics; i++)
            k += strlen(m->u.query.metrics[i]);
        k += s_touch_tags(m->u.query.filters, m->u.query.nfilters);
    } else if ((int) m->type == TELEM_MSG_RELAY) {
        for (uint32_t i = 0; i < m->u.relay.nnodes; i++)
            k += strlen(m->u.relay.nodes[i]);
        k += ((const uint8_t *) m->u.relay.inner)[m->u.relay.inner_size - 1];
    } else if ((int) m->type == TELEM_MSG_RELAY_REPLY) {
        const telem_relay_rep_t *r = &m->u.relay_reply;
        for (uint32_t i = 0; i < r->nitems; i++) {
            k += strlen(r->items[i].node) + strlen(r->items[i].message);
            if (r->items[i].size)
                k += ((const uint8_t *) r->items[i].frame)[r->items[i].size - 1];
        }
    } else if (m->type == TELEM_MSG_QUERY_REPLY) {
        const telem_query_reply_t *r = &m->u.query_reply;
        for (uint32_t i = 0; i < r->nseries; i++) {
            const telem_series_t *s = &r->series[i];
            k += strlen(s->metric) + s_touch_tags(s->tags, s->ntags);
            for (uint32_t j = 0; j < s->npoints; j++)
                k += (size_t) (s->ts[j] != 0) + (s->values[j] != 0);
        }
    }
    return k;
}

/* decode -> encode -> decode -> encode: the two encodings are equal. */
static void
s_fixed_point(telem_proto_decoder_t *d2, const telem_msg_t *m)
{
    static telem_proto_encoder_t *e1, *e2;
    if (!e1 && !(e1 = telem_proto_encoder_new()))
        abort();
    if (!e2 && !(e2 = telem_proto_encoder_new()))
        abort();
    const void *a, *b;
    size_t na, nb;
    int rc = s_enc_other(e1, m, &a, &na);
    if (rc != 0) {
        fprintf(stderr, "fuzz_proto: a decoded %s does not re-encode: %s\n",
                telem_proto_msg_type_name((int) m->type), telem_strerror(rc));
        abort();
    }
    telem_msg_t m2;
    rc = telem_proto_decode(d2, a, na, &m2);
    if (rc != 0) {
        fprintf(stderr, "fuzz_proto: a re-encoded %s does not decode: %s\n",
                telem_proto_msg_type_name((int) m->type),
                telem_proto_decoder_error(d2));
        abort();
    }
    FZ_CHECK(m2.type == m->type);
    FZ_CHECK(s_enc_other(e2, &m2, &b, &nb) == 0);
    FZ_CHECK(na == nb && memcmp(a, b, na) == 0);
}

/* The control arm: msgpack-c's unpacker on the same bytes. */
static void
s_msgpack_control(const uint8_t *data, size_t size)
{
    msgpack_unpacked u;
    size_t off = 0;
    msgpack_unpacked_init(&u);
    while (msgpack_unpack_next(&u, (const char *) data, size, &off)
           == MSGPACK_UNPACK_SUCCESS)
        ;
    msgpack_unpacked_destroy(&u);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static telem_proto_decoder_t *d1, *d2;
    static int control = -1;
    if (control < 0) {
        const char *env = getenv("TELEM_FUZZ_MSGPACK");
        control = env && strcmp(env, "1") == 0;
    }
    if (!d1 && !(d1 = telem_proto_decoder_new()))
        abort();
    if (!d2 && !(d2 = telem_proto_decoder_new()))
        abort();
    if (control)
        s_msgpack_control(data, size);
    telem_msg_t m;
    int rc = telem_proto_decode(d1, data, size, &m);
    FZ_CHECK(strlen(telem_proto_decoder_error(d1)) < 256);
    if (rc != 0) {
        FZ_CHECK(rc < 0);
        return 0;
    }
    volatile size_t sink = s_touch(&m);
    (void) sink;
    s_fixed_point(d2, &m);
    return 0;
}
