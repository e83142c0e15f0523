/* ac_forward.c - ac_forward(): a request frame passed on unchanged to
 * chosen nodes, each reply handed back raw.
 *
 * This is the fan-out telem_relay serves with (docs/relay.md): the relay
 * does not interpret what it carries, so the frame is decoded here only
 * to learn the request id that replies must echo, and replies only to
 * match that id; the client at the other end of the relay checks
 * everything else as if the node had answered it directly.  Forwarding
 * never goes through relays.
 */
#include "ac_internal.h"

typedef struct {
    const ac_forward_t *f;
} s_fwd_t;

static void
s_raw(void *arg, size_t node, const void *frame, size_t size)
{
    const ac_forward_t *f = ((s_fwd_t *) arg)->f;
    f->fn(f->arg, node, 0, 0, "", frame, size);
}

/* Only an undecodable reply is a miss the node itself caused. */
static void
s_miss(void *arg, size_t node, int code, const char *message)
{
    const ac_forward_t *f = ((s_fwd_t *) arg)->f;
    f->fn(f->arg, node, code, code == TELEM_EPROTO, message, NULL, 0);
}

static int
s_unused(void *arg, size_t node, const telem_msg_t *msg)
{
    (void) arg;
    (void) node;
    (void) msg;
    return TELEM_EINVAL;
}

/* The request id of a query, control or sysinfo frame; 0 otherwise. */
static uint64_t
s_request_id(ac_t *self, const void *frame, size_t size)
{
    telem_msg_t m;
    if (telem_proto_decode(self->dec, frame, size, &m) != 0)
        return 0;
    switch ((int) m.type) {
    case TELEM_MSG_QUERY: return m.u.query.id;
    case TELEM_MSG_CONTROL: return m.u.control.id;
    case TELEM_MSG_SYSINFO: return m.u.sysinfo.id;
    default: return 0;
    }
}

int
ac_forward(ac_t *self, const ac_forward_t *f)
{
    if (!self || !f || !f->frame || !f->size || !f->fn
        || (f->nnodes && !f->nodes))
        return TELEM_EINVAL;
    for (size_t j = 0; j < f->nnodes; j++)
        if (f->nodes[j] >= self->n || (j && f->nodes[j] <= f->nodes[j - 1]))
            return TELEM_EINVAL;
    uint64_t id = s_request_id(self, f->frame, f->size);
    if (id == 0)
        return TELEM_EINVAL;
    if (f->nnodes == 0)
        return 0;
    s_fwd_t st = { f };
    const ac__call_t call = {
        .sel = f->nodes, .nsel = f->nnodes, .frame = f->frame,
        .size = f->size, .id = id,
        .timeout_ms = ac__timeout(self, f->timeout_ms),
        .report_ms = f->report_ms, .report_max = f->report_max,
        .on_reply = s_unused, .on_miss = s_miss, .on_raw = s_raw, .arg = &st,
    };
    return ac__fanout(self, &call);
}
