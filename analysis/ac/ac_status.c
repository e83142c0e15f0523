/* ac_status.c - control operations across nodes (status, level, shutdown).
 *
 * Same fan-out as a query, with one entry per node asked: each answer's
 * telem_status_t is copied (its one string included) so the result outlives
 * the decoder and the client.
 */
#include "ac_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *node;
    int code;                /* 0: answered */
    char *message;
    int synced;
    int answered;
    telem_status_t status;   /* status.node points into status_node */
    char *status_node;
} s_entry_t;

struct ac_status_result {
    s_entry_t *e;
    size_t n;
    const size_t *sel;       /* during the call: entry j is node sel[j] */
};

/* Entry index for node index `node` (sel is ascending). */
static s_entry_t *
s_entry(ac_status_result_t *r, size_t node)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->sel[mid] < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->sel[lo] == node ? &r->e[lo] : NULL;
}

static int
s_on_reply(void *arg, size_t node, const telem_msg_t *msg)
{
    s_entry_t *e = s_entry(arg, node);
    if (!e)
        return TELEM_EPROTO;
    const telem_control_reply_t *cr = &msg->u.control_reply;
    char *sn = strdup(cr->status.node ? cr->status.node : "");
    if (!sn)
        return TELEM_ENOMEM;
    e->status = cr->status;
    e->status.node = e->status_node = sn;
    e->synced = cr->synced;
    e->answered = 1;
    return 0;
}

static void
s_on_miss(void *arg, size_t node, int code, const char *message)
{
    s_entry_t *e = s_entry(arg, node);
    if (!e)
        return;
    e->code = code ? code : TELEM_EPROTO;
    free(e->message);
    e->message = strdup(message ? message : "");
}

/* Allocates the result with one entry per selected node. */
static ac_status_result_t *
s_result_new(const ac_t *self, const size_t *sel, size_t nsel)
{
    ac_status_result_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->e = calloc(nsel ? nsel : 1, sizeof *r->e);
    r->n = nsel;
    int ok = r->e != NULL;
    for (size_t j = 0; ok && j < nsel; j++) {
        r->e[j].node = strdup(ac_node_name(self, sel[j]));
        ok = r->e[j].node != NULL;
    }
    if (!ok)
        ac_status_result_destroy(&r);
    return r;
}

int
ac_control(ac_t *self, long node, telem_ctl_op_t op, int64_t arg,
           int timeout_ms, ac_status_result_t **out)
{
    if (!out)
        return TELEM_EINVAL;
    *out = NULL;
    size_t n = ac_node_count(self);
    if (!self || (node >= 0 && (size_t) node >= n))
        return TELEM_EINVAL;
    size_t *sel = malloc((n + 1) * sizeof *sel);
    if (!sel)
        return TELEM_ENOMEM;
    size_t nsel = 0;
    if (node >= 0)
        sel[nsel++] = (size_t) node;
    else
        for (size_t i = 0; i < n; i++)
            sel[nsel++] = i;
    telem_control_t req = { .id = ac__next_id(self), .op = op, .arg = arg };
    ac__call_t call = {
        .sel = sel, .nsel = nsel, .id = req.id,
        .expect = TELEM_MSG_CONTROL_REPLY,
        /* Reads only: control that changes a node never goes through a
           relay (docs/relay.md). */
        .relay = op == TELEM_CTL_STATUS || op == TELEM_CTL_SYNC,
        .timeout_ms = ac__timeout(self, timeout_ms),
        .on_reply = s_on_reply, .on_miss = s_on_miss,
    };
    int rc = telem_proto_encode_control(ac__encoder(self), &req, &call.frame,
                                        &call.size);
    ac_status_result_t *r = NULL;
    if (rc == 0 && !(r = s_result_new(self, sel, nsel)))
        rc = TELEM_ENOMEM;
    if (rc == 0) {
        r->sel = sel;
        call.arg = r;
        rc = ac__fanout(self, &call);
        r->sel = NULL;
        *out = r;
    }
    free(sel);
    return rc;
}

int
ac_status(ac_t *self, ac_status_result_t **out)
{
    return ac_control(self, -1, TELEM_CTL_STATUS, 0, 0, out);
}

/* ---- accessors --------------------------------------------------------- */

static const s_entry_t *
s_at(const ac_status_result_t *r, size_t i)
{
    return r && i < r->n ? &r->e[i] : NULL;
}

size_t
ac_status_result_count(const ac_status_result_t *r)
{
    return r ? r->n : 0;
}

const char *
ac_status_result_node(const ac_status_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    return e ? e->node : NULL;
}

const telem_status_t *
ac_status_result_status(const ac_status_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    return e && e->answered ? &e->status : NULL;
}

int
ac_status_result_synced(const ac_status_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    return e && e->answered ? e->synced != 0 : 0;
}

int
ac_status_result_code(const ac_status_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    return e ? e->code : 0;
}

const char *
ac_status_result_message(const ac_status_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    if (!e)
        return NULL;
    return e->message ? e->message : (e->code ? "out of memory" : "");
}

size_t
ac_status_result_nmissing(const ac_status_result_t *r)
{
    size_t k = 0;
    for (size_t i = 0; r && i < r->n; i++)
        k += r->e[i].code != 0;
    return k;
}

void
ac_status_result_destroy(ac_status_result_t **r_p)
{
    if (!r_p || !*r_p)
        return;
    ac_status_result_t *r = *r_p;
    for (size_t i = 0; r->e && i < r->n; i++) {
        free(r->e[i].node);
        free(r->e[i].message);
        free(r->e[i].status_node);
    }
    free(r->e);
    free(r);
    *r_p = NULL;
}
