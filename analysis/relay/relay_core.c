/* relay_core.c - one relay request, served: checked, forwarded to the
 * group's nodes with the analysis client, answered as merged parts
 * (relay_core.h, docs/relay.md).
 *
 * Every node named gets exactly one item, in the order named: its raw
 * reply, or why there is none (not in this relay's group, no connection,
 * no reply in time, over the caller's size limit or the relay's buffer).
 * Replies are copied as they come (ac_forward hands them over only during
 * its call) and cut into parts of whole items when the answer passes one
 * frame; the relay's client sockets take at most TELEM_RELAY_FRAME_MAX per
 * reply, so one item always fits a part.
 */
#include "relay_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_BYTES_DEFAULT ((size_t) 256 << 20)

typedef struct {
    long node;              /* index in the ac_t, or -1 */
    int code;               /* 0 with frame, else why not */
    int answered;
    int done;               /* an outcome is recorded */
    char *message;
    void *frame;
    size_t size;
} s_slot_t;

struct relay_core {
    ac_t *ac;
    size_t max_bytes;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;     /* the relay request */
    telem_proto_decoder_t *idec;    /* its inner request */
    long *slot_of;                  /* ac node index -> slot, or -1 */
    size_t *sel;                    /* ac node indexes asked, ascending */
    s_slot_t *slots;
    size_t nslots;
    size_t held;                    /* reply bytes held */
    const telem_relay_req_t *req;
    relay_core_stats_t st;
};

relay_core_t *
relay_core_new(ac_t **ac_p, size_t max_bytes)
{
    relay_core_t *self = calloc(1, sizeof *self);
    size_t n = ac_node_count(*ac_p);
    if (self) {
        self->ac = *ac_p;
        *ac_p = NULL;
        self->max_bytes = max_bytes ? max_bytes : S_MAX_BYTES_DEFAULT;
        self->enc = telem_proto_encoder_new();
        self->dec = telem_proto_decoder_new();
        self->idec = telem_proto_decoder_new();
        self->slot_of = malloc((n + 1) * sizeof *self->slot_of);
        self->sel = malloc((n + 1) * sizeof *self->sel);
        self->slots = calloc(TELEM_RELAY_NODES_MAX, sizeof *self->slots);
    }
    if (!self || !self->enc || !self->dec || !self->idec || !self->slot_of
        || !self->sel || !self->slots) {
        relay_core_destroy(&self);
        ac_close(ac_p);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        self->slot_of[i] = -1;
    return self;
}

void
relay_core_destroy(relay_core_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    relay_core_t *self = *self_p;
    ac_close(&self->ac);
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    telem_proto_decoder_destroy(&self->idec);
    free(self->slot_of);
    free(self->sel);
    free(self->slots);
    free(self);
    *self_p = NULL;
}

void
relay_core_stats(const relay_core_t *self, relay_core_stats_t *out)
{
    *out = self->st;
}

int
relay_core_refuse(telem_proto_encoder_t *enc, uint64_t id, int code,
                  const char *message, relay_core_send_fn *send, void *arg)
{
    const telem_error_msg_t m = { .id = id, .code = code, .message = message };
    const void *data;
    size_t size;
    int rc = telem_proto_encode_error(enc, &m, &data, &size);
    return rc ? rc : send(arg, data, size, 0);
}

uint64_t
relay_core_request_id(telem_proto_decoder_t *dec, const void *req, size_t size)
{
    telem_msg_t m;
    if (telem_proto_decode(dec, req, size, &m) != 0
        || (int) m.type != TELEM_MSG_RELAY)
        return 0;
    return m.u.relay.id;
}

/* ---- collecting -------------------------------------------------------- */

static void
s_miss(s_slot_t *s, int code, int answered, const char *message)
{
    s->code = code;
    s->answered = answered;
    s->message = strdup(message ? message : "");
    s->done = 1;
}

static void
s_on_node(void *arg, size_t node, int code, int answered, const char *message,
          const void *frame, size_t size)
{
    relay_core_t *self = arg;
    long k = self->slot_of[node];
    if (k < 0 || self->slots[k].done)
        return;
    s_slot_t *s = &self->slots[k];
    char why[256];
    if (code != 0) {
        s_miss(s, code, answered, message);
    } else if (self->req->max_reply && size > self->req->max_reply) {
        snprintf(why, sizeof why, "no reply within %u ms (node down or busy, "
                 "or its reply was over the %llu-byte limit)",
                 self->req->report_ms ? self->req->report_ms
                                      : self->req->deadline_ms,
                 (unsigned long long) self->req->max_reply);
        s_miss(s, TELEM_ETIMEDOUT, 0, why);
    } else if (size > self->max_bytes - self->held
               || !(s->frame = malloc(size))) {
        snprintf(why, sizeof why, "reply of %zu bytes over the relay's "
                 "%zu-byte buffer for one request", size, self->max_bytes);
        s_miss(s, TELEM_ETOOBIG, 0, why);
    } else {
        memcpy(s->frame, frame, size);
        s->size = size;
        s->done = 1;
        self->held += size;
    }
}

/* Maps the request's names to slots and the ac's nodes; returns how many
 * nodes to ask (ascending in self->sel). */
static size_t
s_map(relay_core_t *self, const telem_relay_req_t *r)
{
    size_t nsel = 0, n = ac_node_count(self->ac);
    self->nslots = r->nnodes;
    for (uint32_t k = 0; k < r->nnodes; k++) {
        s_slot_t *s = &self->slots[k];
        memset(s, 0, sizeof *s);
        s->node = ac_node_find(self->ac, r->nodes[k]);
        if (s->node < 0)
            s_miss(s, TELEM_ENOTFOUND, 0, "node not in this relay's group");
        else if (self->slot_of[s->node] >= 0)
            s->done = 1, s->node = -1;   /* named twice: one item */
        else
            self->slot_of[s->node] = (long) k;
    }
    for (size_t i = 0; i < n; i++)
        if (self->slot_of[i] >= 0)
            self->sel[nsel++] = i;
    return nsel;
}

/* ---- answering --------------------------------------------------------- */

/* Encodes and sends items [from, to) as part `part`. */
static int
s_part(relay_core_t *self, telem_relay_item_t *items, size_t nitems,
       uint32_t part, int more, relay_core_send_fn *send, void *arg)
{
    const telem_relay_rep_t rep = {
        .id = self->req->id, .part = part, .more = (uint8_t) more,
        .items = items, .nitems = (uint32_t) nitems,
    };
    const void *data;
    size_t size;
    int rc = telem_proto_encode_relay_reply(self->enc, &rep, &data, &size);
    if (rc)
        return rc;
    self->st.parts++;
    return send(arg, data, size, more);
}

static int
s_answer(relay_core_t *self, relay_core_send_fn *send, void *arg)
{
    telem_relay_item_t *items = calloc(self->nslots + 1, sizeof *items);
    if (!items)
        return TELEM_ENOMEM;
    size_t n = 0, bytes = TELEM_RELAY_PART_OVERHEAD;
    uint32_t part = 0;
    int rc = 0;
    for (size_t k = 0; k < self->nslots && rc == 0; k++) {
        s_slot_t *s = &self->slots[k];
        if (s->node < 0 && s->code == 0)
            continue;   /* a name given twice */
        telem_relay_item_t it = {
            .node = self->req->nodes[k], .code = s->done ? s->code
                                                         : TELEM_ETIMEDOUT,
            .answered = (uint8_t) s->answered,
            .message = s->done ? s->message : "no outcome",
            .frame = s->frame, .size = s->size,
        };
        size_t sz = telem_proto_relay_item_size(&it);
        if (n && bytes + sz > TELEM_PROTO_MAX_MSG) {
            rc = s_part(self, items, n, part++, 1, send, arg);
            n = 0;
            bytes = TELEM_RELAY_PART_OVERHEAD;
        }
        items[n++] = it;
        bytes += sz;
        self->st.nodes_missing += it.code != 0;
    }
    if (rc == 0)
        rc = s_part(self, items, n, part, 0, send, arg);
    free(items);
    return rc;
}

static void
s_clear(relay_core_t *self)
{
    for (size_t k = 0; k < self->nslots; k++) {
        s_slot_t *s = &self->slots[k];
        if (s->node >= 0)
            self->slot_of[s->node] = -1;
        free(s->message);
        free(s->frame);
        memset(s, 0, sizeof *s);
    }
    self->nslots = 0;
    self->held = 0;
    self->req = NULL;
}

int
relay_core_serve(relay_core_t *self, const void *req, size_t size,
                 relay_core_send_fn *send, void *arg)
{
    telem_msg_t m;
    char why[512];
    uint64_t id = 0;
    int rc = telem_proto_decode(self->dec, req, size, &m);
    if (rc || (int) m.type != TELEM_MSG_RELAY) {
        self->st.bad++;
        snprintf(why, sizeof why, "not a relay request: %s",
                 rc ? telem_proto_decoder_error(self->dec)
                    : telem_proto_msg_type_name(m.type));
        return relay_core_refuse(self->enc, 0, rc ? rc : TELEM_EPROTO, why,
                                 send, arg);
    }
    const telem_relay_req_t *r = &m.u.relay;
    rc = telem_proto_relay_inner_check(self->idec, r->inner, r->inner_size,
                                       &id, why, sizeof why);
    if (rc) {
        self->st.refused++;
        return relay_core_refuse(self->enc, r->id, rc, why, send, arg);
    }
    self->req = r;
    size_t nsel = s_map(self, r);
    const ac_forward_t f = {
        .frame = r->inner, .size = r->inner_size, .nodes = self->sel,
        .nnodes = nsel, .timeout_ms = (int) (r->deadline_ms > 0x7fffffff
                                             ? 0x7fffffff : r->deadline_ms),
        .report_ms = (int) (r->report_ms > 0x7fffffff ? 0x7fffffff
                                                      : r->report_ms),
        .report_max = (size_t) r->max_reply, .fn = s_on_node, .arg = self,
    };
    if (nsel)
        ac_forward(self->ac, &f);
    self->st.served++;
    self->st.nodes_asked += nsel;
    rc = s_answer(self, send, arg);
    s_clear(self);
    return rc;
}
