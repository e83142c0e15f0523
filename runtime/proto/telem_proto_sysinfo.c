/* telem_proto_sysinfo.c - message family "sysinfo": sysinfo (16) and
 * sysinfo_reply (17), a node's one-time system snapshot
 * (telem_proto_sysinfo.h, docs/protocol.md).
 *
 * The snapshot travels as one msgpack str (the JSON text, as the node
 * wrote it): the codec checks its bound and that it holds no NUL, and
 * leaves parsing the JSON to whoever shows it.
 */
#include "telem_proto_int.h"

#include <string.h>

enum { S_JS = 4 };

static const tp_field_t s_req_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_sysinfo_req_t, id, 0, 0) };

static const tp_field_t s_rep_tab[] = { TP_FV,
    TP_F("id", TP_K_U64, 1, telem_sysinfo_rep_t, id, 0, 0),
    TP_F("nd", TP_K_NAME, 1, telem_sysinfo_rep_t, node, 0, 0),
    TP_F("js", TP_K_X, 1, telem_sysinfo_rep_t, json, 0, 0) };

static int
s_dec_req(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return tp_dec_map(d, r, nkeys, s_req_tab, TP_NTAB(s_req_tab), msg, NULL);
}

static int
s_rep_x(telem_proto_decoder_t *d, telem_rd_t *r, int idx, void *base)
{
    telem_sysinfo_rep_t *m = base;
    (void) idx;
    int rc = tp_take_str(d, r, TELEM_SYSINFO_MAX, true, &m->json);
    return rc ? tp_fail(d, rc, "js %s", r->why) : 0;
}

static int
s_dec_rep(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys, void *msg)
{
    return tp_dec_map(d, r, nkeys, s_rep_tab, TP_NTAB(s_rep_tab), msg, s_rep_x);
}

int
telem_proto_encode_sysinfo(telem_proto_encoder_t *e,
                           const telem_sysinfo_req_t *m, const void **data,
                           size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    int rc = tp_enc_begin(e, TELEM_MSG_SYSINFO, s_req_tab, TP_NTAB(s_req_tab), m);
    return tp_enc_end(e, rc, data, size);
}

int
telem_proto_encode_sysinfo_reply(telem_proto_encoder_t *e,
                                 const telem_sysinfo_rep_t *m,
                                 const void **data, size_t *size)
{
    if (!e || !m || !data || !size || !m->json)
        return TELEM_EINVAL;
    size_t len = strlen(m->json);
    if (len == 0)
        return TELEM_EINVAL;
    if (len > TELEM_SYSINFO_MAX)
        return TELEM_ETOOBIG;
    int rc = tp_enc_begin(e, TELEM_MSG_SYSINFO_REPLY, s_rep_tab,
                          TP_NTAB(s_rep_tab), m);
    if (rc == 0) {
        tp_put_key(e, "js");
        tp_put_str(e, m->json, len);
    }
    return tp_enc_end(e, rc, data, size);
}

static const tp_type_t s_types[] = {
    { TELEM_MSG_SYSINFO, "sysinfo", s_dec_req, sizeof(telem_sysinfo_req_t) },
    { TELEM_MSG_SYSINFO_REPLY, "sysinfo_reply", s_dec_rep,
      sizeof(telem_sysinfo_rep_t) },
};

const tp_family_t tp_sysinfo_family = {
    "sysinfo", s_types, sizeof s_types / sizeof s_types[0]
};
