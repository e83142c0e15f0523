/* ac_snapshot.c - every node's one-time system snapshot (ac_snapshot()).
 *
 * The same fan-out as a status request, one entry per node asked: each
 * answer's JSON text is copied so the result outlives the decoder and
 * the client; a node that did not answer keeps its code and sentence.
 */
#include "ac_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *node;
    int code;                /* 0: answered */
    char *message;
    char *json;              /* NULL unless answered */
    size_t len;
} s_entry_t;

struct ac_snapshot_result {
    s_entry_t *e;
    size_t n;
    const size_t *sel;       /* during the call: entry j is node sel[j] */
};

static s_entry_t *
s_entry(ac_snapshot_result_t *r, size_t node)
{
    for (size_t j = 0; j < r->n; j++)
        if (r->sel[j] == node)
            return &r->e[j];
    return NULL;
}

static int
s_on_reply(void *arg, size_t node, const telem_msg_t *msg)
{
    s_entry_t *e = s_entry(arg, node);
    if (!e)
        return TELEM_EPROTO;
    const telem_sysinfo_rep_t *rep = &msg->u.sysinfo_reply;
    size_t len = strlen(rep->json);
    char *copy = malloc(len + 1);
    if (!copy)
        return TELEM_ENOMEM;
    memcpy(copy, rep->json, len + 1);
    free(e->json);
    e->json = copy;
    e->len = len;
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
    free(e->json);
    e->json = NULL;
    e->len = 0;
}

static ac_snapshot_result_t *
s_result_new(const ac_t *self, const size_t *sel, size_t nsel)
{
    ac_snapshot_result_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->e = calloc(nsel ? nsel : 1, sizeof *r->e);
    r->n = nsel;
    int ok = r->e != NULL;
    for (size_t j = 0; ok && j < nsel; j++)
        ok = (r->e[j].node = strdup(ac_node_name(self, sel[j]))) != NULL;
    if (!ok)
        ac_snapshot_result_destroy(&r);
    return r;
}

int
ac_snapshot(ac_t *self, long node, int timeout_ms, ac_snapshot_result_t **out)
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
    for (size_t i = 0; i < n; i++)
        if (node < 0 || (size_t) node == i)
            sel[nsel++] = i;
    telem_sysinfo_req_t req = { .id = ac__next_id(self) };
    ac__call_t call = {
        .sel = sel, .nsel = nsel, .id = req.id,
        .expect = (telem_msg_type_t) TELEM_MSG_SYSINFO_REPLY, .relay = 1,
        .timeout_ms = ac__timeout(self, timeout_ms),
        .on_reply = s_on_reply, .on_miss = s_on_miss,
    };
    int rc = telem_proto_encode_sysinfo(ac__encoder(self), &req, &call.frame,
                                        &call.size);
    ac_snapshot_result_t *r = NULL;
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

static const s_entry_t *
s_at(const ac_snapshot_result_t *r, size_t i)
{
    return r && i < r->n ? &r->e[i] : NULL;
}

size_t
ac_snapshot_result_count(const ac_snapshot_result_t *r)
{
    return r ? r->n : 0;
}

const char *
ac_snapshot_result_node(const ac_snapshot_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    return e ? e->node : NULL;
}

const char *
ac_snapshot_result_json(const ac_snapshot_result_t *r, size_t i, size_t *len)
{
    const s_entry_t *e = s_at(r, i);
    const char *json = e && e->code == 0 ? e->json : NULL;
    if (len)
        *len = json ? e->len : 0;
    return json;
}

int
ac_snapshot_result_code(const ac_snapshot_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    return e ? e->code : 0;
}

const char *
ac_snapshot_result_message(const ac_snapshot_result_t *r, size_t i)
{
    const s_entry_t *e = s_at(r, i);
    if (!e)
        return NULL;
    return e->message ? e->message : (e->code ? "out of memory" : "");
}

size_t
ac_snapshot_result_nmissing(const ac_snapshot_result_t *r)
{
    size_t k = 0;
    for (size_t i = 0; r && i < r->n; i++)
        k += r->e[i].code != 0;
    return k;
}

void
ac_snapshot_result_destroy(ac_snapshot_result_t **r_p)
{
    if (!r_p || !*r_p)
        return;
    ac_snapshot_result_t *r = *r_p;
    for (size_t i = 0; r->e && i < r->n; i++) {
        free(r->e[i].node);
        free(r->e[i].message);
        free(r->e[i].json);
    }
    free(r->e);
    free(r);
    *r_p = NULL;
}
