/* telem_proto_watch.c - codec family "watch": the watcher's events,
 * restart requests and acks, and its control messages, types 8-12 (see
 * telem_proto_watch.h, docs/protocol.md).
 *
 * Lists are msgpack arrays: names as strings, a device as [node, device],
 * evidence as [name, value] (an array, not a map, so the order a detector
 * gives is kept and values are floats), a control row as [detector, key,
 * value].  A message may hold up to three lists; they are decoded into one
 * byte vector of the decoder (TP_VEC_WATCH), each at an 8-byte aligned
 * offset after the lists before it.  Because the vector may move while the
 * frame decodes, a list's pointer field holds its offset + 1 until the map
 * is complete, and s_fix() turns offsets into pointers at the end.
 */
#include "telem_proto_int.h"

#include <stdint.h>
#include <string.h>

#include "telem_proto_watch.h"

enum { L_NAMES, L_DEVS, L_EVID, L_ROWS };

/* Bytes a list element needs on the wire at least, and in memory. */
static const size_t s_min[] = { 2, 4, 4, 5 };
static const size_t s_size[] = {
    sizeof(const char *), sizeof(telem_watch_dev_t),
    sizeof(telem_watch_evidence_t), sizeof(telem_watch_row_t),
};

enum { EV_SCORE = 6, EV_NODES = 8, EV_DEVS = 9, EV_EVID = 10 };
static const tp_field_t s_event_tab[] = { TP_FV,
    TP_F("sq", TP_K_U64, 1, telem_watch_event_t, seq, 0, 0),
    TP_F("dt", TP_K_NAME, 1, telem_watch_event_t, detector, 0, 0),
    TP_F("sv", TP_K_I32, 1, telem_watch_event_t, severity, 1, 2),
    TP_F("ts", TP_K_I64, 0, telem_watch_event_t, ts_ns, 0, 0),
    TP_F("sc", TP_K_X, 0, telem_watch_event_t, score, 0, 0),
    TP_F("tx", TP_K_TEXT, 0, telem_watch_event_t, text, 0, 0),
    TP_F("nd", TP_K_X, 0, telem_watch_event_t, nodes, 0, 0),
    TP_F("dv", TP_K_X, 0, telem_watch_event_t, devices, 0, 0),
    TP_F("ev", TP_K_X, 0, telem_watch_event_t, evidence, 0, 0) };

enum { RS_EXCL = 5, RS_DEVS = 6, RS_DETS = 7 };
static const tp_field_t s_restart_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_restart_t, id, 0, 0),
    TP_F("ts", TP_K_I64, 0, telem_restart_t, ts_ns, 0, 0),
    TP_F("why", TP_K_TEXT, 0, telem_restart_t, reason, 0, 0),
    TP_F("ex", TP_K_X, 1, telem_restart_t, exclude, 0, 0),
    TP_F("dv", TP_K_X, 0, telem_restart_t, devices, 0, 0),
    TP_F("dt", TP_K_X, 0, telem_restart_t, detectors, 0, 0) };

static const tp_field_t s_ack_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_restart_ack_t, id, 0, 0),
    TP_F("c", TP_K_I32, 0, telem_restart_ack_t, code, INT32_MIN, 0),
    TP_F("msg", TP_K_TEXT, 0, telem_restart_ack_t, message, 0, 0) };

static const tp_field_t s_ctl_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_watch_ctl_t, id, 0, 0),
    TP_F("op", TP_K_I32, 1, telem_watch_ctl_t, op, 1, INT32_MAX),
    TP_F("dt", TP_K_STR, 0, telem_watch_ctl_t, detector, 0, 0),
    TP_F("pm", TP_K_STR, 0, telem_watch_ctl_t, param, 0, 0),
    TP_F("val", TP_K_STR, 0, telem_watch_ctl_t, value, 0, 0) };

enum { CR_ROWS = 5 };
static const tp_field_t s_reply_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_watch_ctl_reply_t, id, 0, 0),
    TP_F("c", TP_K_I32, 0, telem_watch_ctl_reply_t, code, INT32_MIN, 0),
    TP_F("msg", TP_K_TEXT, 0, telem_watch_ctl_reply_t, message, 0, 0),
    TP_F("rw", TP_K_X, 0, telem_watch_ctl_reply_t, rows, 0, 0) };

/* ---------------------------------------------------------------- decode */

/* A list being decoded: where its pointer and count live in the message. */
typedef struct {
    const void **ptr;
    uint32_t *count;
    int kind;
} s_list_t;

/* End (bytes, 8-aligned) of the lists already decoded into TP_VEC_WATCH. */
static size_t
s_used(const s_list_t *lists, size_t n)
{
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        uintptr_t off = (uintptr_t) *lists[i].ptr;
        if (off == 0)
            continue;
        size_t e = (off - 1) + *lists[i].count * s_size[lists[i].kind];
        if (e > end)
            end = e;
    }
    return (end + 7) & ~(size_t) 7;
}

static int
s_dec_elem(telem_proto_decoder_t *d, telem_rd_t *r, int kind, uint8_t *slot)
{
    uint32_t n;
    int rc;
    if (kind == L_NAMES)
        return tp_take_str(d, r, TELEM_NAME_MAX, true, (const char **) slot);
    if ((rc = tp_rd_count(r, false, 1, &n)) != 0)
        return rc;
    if (n != (kind == L_ROWS ? 3u : 2u))
        return tp_bad(r, TELEM_EPROTO, kind == L_ROWS ? "is not an array "
                      "of 3" : "is not an array of 2");
    if (kind == L_DEVS) {
        telem_watch_dev_t *v = (telem_watch_dev_t *) (void *) slot;
        if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &v->node)) != 0)
            return rc;
        return tp_take_str(d, r, TELEM_NAME_MAX, false, &v->device);
    }
    if (kind == L_EVID) {
        telem_watch_evidence_t *v = (telem_watch_evidence_t *) (void *) slot;
        if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &v->name)) != 0)
            return rc;
        return tp_rd_f64(r, &v->value);
    }
    telem_watch_row_t *v = (telem_watch_row_t *) (void *) slot;
    if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, false, &v->detector)) != 0 ||
        (rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &v->key)) != 0)
        return rc;
    return tp_take_str(d, r, TELEM_TEXT_MAX, false, &v->value);
}

/* Decodes list `which` of `lists` into TP_VEC_WATCH after the others. */
static int
s_dec_list(telem_proto_decoder_t *d, telem_rd_t *r, s_list_t *lists, size_t nl,
           size_t which)
{
    static const char *const names[] = { "name", "device", "evidence", "row" };
    s_list_t *l = &lists[which];
    uint32_t n;
    int rc = tp_rd_count(r, false, s_min[l->kind], &n);
    if (rc)
        return tp_fail(d, rc, "%s", r->why);
    if (n > TELEM_WATCH_LIST_MAX)
        return tp_fail(d, TELEM_ETOOBIG, "has too many elements");
    size_t off = s_used(lists, nl), sz = s_size[l->kind];
    if (tp_reserve(&d->vec[TP_VEC_WATCH], off + (size_t) n * sz + 8, 1))
        return tp_fail(d, TELEM_ENOMEM, "is out of memory");
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *slot = (uint8_t *) d->vec[TP_VEC_WATCH].p + off + i * sz;
        if ((rc = s_dec_elem(d, r, l->kind, slot)) != 0)
            return tp_fail(d, rc, "%s %u %s", names[l->kind], i, r->why);
    }
    *l->count = n;
    *l->ptr = n ? (const void *) (uintptr_t) (off + 1) : NULL;
    return 0;
}

/* Turns the lists' offsets into pointers, once the frame is decoded. */
static void
s_fix(telem_proto_decoder_t *d, s_list_t *lists, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uintptr_t off = (uintptr_t) *lists[i].ptr;
        *lists[i].ptr = off ? (uint8_t *) d->vec[TP_VEC_WATCH].p + (off - 1)
                            : NULL;
    }
}

/* The lists of a message struct, by type. */
static size_t
s_lists(int type, void *base, s_list_t *l)
{
    if (type == TELEM_MSG_WATCH_EVENT) {
        telem_watch_event_t *m = base;
        l[0] = (s_list_t) { (const void **) &m->nodes, &m->nnodes, L_NAMES };
        l[1] = (s_list_t) { (const void **) &m->devices, &m->ndevices, L_DEVS };
        l[2] = (s_list_t) { (const void **) &m->evidence, &m->nevidence, L_EVID };
        return 3;
    }
    if (type == TELEM_MSG_RESTART) {
        telem_restart_t *m = base;
        l[0] = (s_list_t) { (const void **) &m->exclude, &m->nexclude, L_NAMES };
        l[1] = (s_list_t) { (const void **) &m->devices, &m->ndevices, L_DEVS };
        l[2] = (s_list_t) { (const void **) &m->detectors, &m->ndetectors,
                            L_NAMES };
        return 3;
    }
    telem_watch_ctl_reply_t *m = base;
    l[0] = (s_list_t) { (const void **) &m->rows, &m->nrows, L_ROWS };
    return 1;
}

static int
s_custom_event(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    s_list_t l[3];
    size_t n = s_lists(TELEM_MSG_WATCH_EVENT, base, l);
    if (idx == EV_SCORE) {
        int rc = tp_rd_f64(r, &((telem_watch_event_t *) base)->score);
        return rc ? tp_fail(d, rc, "score %s", r->why) : 0;
    }
    return s_dec_list(d, r, l, n, idx == EV_NODES ? 0 : idx == EV_DEVS ? 1 : 2);
}

static int
s_custom_restart(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    s_list_t l[3];
    size_t n = s_lists(TELEM_MSG_RESTART, base, l);
    return s_dec_list(d, r, l, n, idx == RS_EXCL ? 0 : idx == RS_DEVS ? 1 : 2);
}

static int
s_custom_reply(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    (void) idx;
    s_list_t l[1];
    size_t n = s_lists(TELEM_MSG_WATCH_CTL_REPLY, base, l);
    return s_dec_list(d, r, l, n, 0);
}

/* Decodes a map with lists, then fixes their pointers. */
static int
s_dec_lists(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg,
            int type, const tp_field_t *tab, int ntab, tp_custom_fn fn)
{
    s_list_t l[3];
    d->err[0] = '\0';
    int rc = tp_dec_map(d, r, nkeys, tab, ntab, msg, fn);
    size_t n = s_lists(type, msg, l);
    if (rc)
        return rc;
    s_fix(d, l, n);
    if (type == TELEM_MSG_RESTART && ((telem_restart_t *) msg)->nexclude == 0)
        return tp_fail(d, TELEM_EPROTO, "names no node to exclude");
    return 0;
}

static int
s_dec_event(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return s_dec_lists(d, r, nkeys, msg, TELEM_MSG_WATCH_EVENT, s_event_tab,
                       TP_NTAB(s_event_tab), s_custom_event);
}

static int
s_dec_restart(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys,
              void *msg)
{
    return s_dec_lists(d, r, nkeys, msg, TELEM_MSG_RESTART, s_restart_tab,
                       TP_NTAB(s_restart_tab), s_custom_restart);
}

static int
s_dec_reply(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return s_dec_lists(d, r, nkeys, msg, TELEM_MSG_WATCH_CTL_REPLY,
                       s_reply_tab, TP_NTAB(s_reply_tab), s_custom_reply);
}

static int
s_dec_ack(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    d->err[0] = '\0';
    return tp_dec_map(d, r, nkeys, s_ack_tab, TP_NTAB(s_ack_tab), msg, NULL);
}

static int
s_dec_ctl(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    d->err[0] = '\0';
    return tp_dec_map(d, r, nkeys, s_ctl_tab, TP_NTAB(s_ctl_tab), msg, NULL);
}

static const tp_type_t s_types[] = {
    { TELEM_MSG_WATCH_EVENT, "watch_event", s_dec_event,
      sizeof(telem_watch_event_t) },
    { TELEM_MSG_RESTART, "restart", s_dec_restart, sizeof(telem_restart_t) },
    { TELEM_MSG_RESTART_ACK, "restart_ack", s_dec_ack,
      sizeof(telem_restart_ack_t) },
    { TELEM_MSG_WATCH_CTL, "watch_ctl", s_dec_ctl, sizeof(telem_watch_ctl_t) },
    { TELEM_MSG_WATCH_CTL_REPLY, "watch_ctl_reply", s_dec_reply,
      sizeof(telem_watch_ctl_reply_t) },
};

const tp_family_t tp_watch_family = { "watch", s_types, TP_NTAB(s_types) };

/* ---------------------------------------------------------------- encode */

/* Checks and writes a string of 0..max bytes (non-empty when asked). */
static int
s_put_s(telem_proto_encoder_t *e, const char *s, size_t max, bool nonempty)
{
    size_t len;
    int rc = tp_check_str(&s, max, nonempty, &len);
    if (rc == 0)
        tp_put_str(e, s, len);
    return rc;
}

static int
s_enc_names(telem_proto_encoder_t *e, const char *key, const char *const *v,
            uint32_t n)
{
    if (n && !v)
        return TELEM_EINVAL;
    if (n > TELEM_WATCH_LIST_MAX)
        return TELEM_ETOOBIG;
    tp_put_key(e, key);
    e->fail |= msgpack_pack_array(&e->pk, n);
    for (uint32_t i = 0; i < n; i++) {
        int rc = s_put_s(e, v[i], TELEM_NAME_MAX, true);
        if (rc)
            return rc;
    }
    return 0;
}

static int
s_enc_devs(telem_proto_encoder_t *e, const telem_watch_dev_t *v, uint32_t n)
{
    if (n && !v)
        return TELEM_EINVAL;
    if (n > TELEM_WATCH_LIST_MAX)
        return TELEM_ETOOBIG;
    tp_put_key(e, "dv");
    e->fail |= msgpack_pack_array(&e->pk, n);
    for (uint32_t i = 0; i < n; i++) {
        e->fail |= msgpack_pack_array(&e->pk, 2);
        int rc = s_put_s(e, v[i].node, TELEM_NAME_MAX, true);
        if (rc || (rc = s_put_s(e, v[i].device, TELEM_NAME_MAX, false)))
            return rc;
    }
    return 0;
}

static int
s_enc_evidence(telem_proto_encoder_t *e, const telem_watch_evidence_t *v,
               uint32_t n)
{
    if (n && !v)
        return TELEM_EINVAL;
    if (n > TELEM_WATCH_LIST_MAX)
        return TELEM_ETOOBIG;
    tp_put_key(e, "ev");
    e->fail |= msgpack_pack_array(&e->pk, n);
    for (uint32_t i = 0; i < n; i++) {
        e->fail |= msgpack_pack_array(&e->pk, 2);
        int rc = s_put_s(e, v[i].name, TELEM_NAME_MAX, true);
        if (rc)
            return rc;
        e->fail |= msgpack_pack_double(&e->pk, v[i].value);
    }
    return 0;
}

int
telem_proto_encode_watch_event(telem_proto_encoder_t *e,
                               const telem_watch_event_t *m, const void **data,
                               size_t *size)
{
    if (!m || (m->severity != 1 && m->severity != 2))
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_WATCH_EVENT, s_event_tab,
                          TP_NTAB(s_event_tab), m);
    if (rc == 0) {
        tp_put_key(e, "sc");
        e->fail |= msgpack_pack_double(&e->pk, m->score);
        rc = s_enc_names(e, "nd", m->nodes, m->nnodes);
    }
    if (rc == 0)
        rc = s_enc_devs(e, m->devices, m->ndevices);
    if (rc == 0)
        rc = s_enc_evidence(e, m->evidence, m->nevidence);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_restart(telem_proto_encoder_t *e, const telem_restart_t *m,
                           const void **data, size_t *size)
{
    if (!m || m->nexclude == 0)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_RESTART, s_restart_tab,
                          TP_NTAB(s_restart_tab), m);
    if (rc == 0)
        rc = s_enc_names(e, "ex", m->exclude, m->nexclude);
    if (rc == 0)
        rc = s_enc_devs(e, m->devices, m->ndevices);
    if (rc == 0)
        rc = s_enc_names(e, "dt", m->detectors, m->ndetectors);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_restart_ack(telem_proto_encoder_t *e,
                               const telem_restart_ack_t *m, const void **data,
                               size_t *size)
{
    if (!m || m->code > 0)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_RESTART_ACK, s_ack_tab,
                          TP_NTAB(s_ack_tab), m);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_watch_ctl(telem_proto_encoder_t *e,
                             const telem_watch_ctl_t *m, const void **data,
                             size_t *size)
{
    if (!m || m->op < 1)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_WATCH_CTL, s_ctl_tab,
                          TP_NTAB(s_ctl_tab), m);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_watch_ctl_reply(telem_proto_encoder_t *e,
                                   const telem_watch_ctl_reply_t *m,
                                   const void **data, size_t *size)
{
    if (!m || m->code > 0 || (m->nrows && !m->rows))
        return TELEM_EINVAL;
    if (m->nrows > TELEM_WATCH_LIST_MAX)
        return TELEM_ETOOBIG;
    int rc = tp_enc_begin(e, TELEM_MSG_WATCH_CTL_REPLY, s_reply_tab,
                          TP_NTAB(s_reply_tab), m);
    if (rc == 0) {
        tp_put_key(e, "rw");
        e->fail |= msgpack_pack_array(&e->pk, m->nrows);
    }
    for (uint32_t i = 0; rc == 0 && i < m->nrows; i++) {
        const telem_watch_row_t *w = &m->rows[i];
        e->fail |= msgpack_pack_array(&e->pk, 3);
        rc = s_put_s(e, w->detector, TELEM_NAME_MAX, false);
        if (rc == 0)
            rc = s_put_s(e, w->key, TELEM_NAME_MAX, true);
        if (rc == 0)
            rc = s_put_s(e, w->value, TELEM_TEXT_MAX, false);
    }
    return tp_enc_end(e, rc, data, size);
}
