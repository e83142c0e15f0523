/* ddict_reform.c - the coordinator of a re-form (ddict_reform()).
 *
 * Three phases, each sent to every server of the new node list and
 * complete only when all of them answered OK: PREPARE (new map and epoch,
 * stop serving, wipe if not part of the last map), TRANSFER (each server
 * sends every shard it holds to the shard's new owners and answers when
 * they acknowledged), COMMIT (drop foreign shards, serve).  A server
 * that does not answer a phase within the deadline fails the re-form with
 * TELEM_ETIMEDOUT; running it again with a list without that server is
 * safe, because PREPARE of a later epoch supersedes an unfinished one and
 * transfers only ever merge newer versions.
 *
 * The coordinator learns the epochs from the listed servers themselves
 * (a HELLO to each, answered by serving and re-forming servers alike), so
 * a retry works even when a failed re-form left every server re-forming:
 * the new epoch is above every epoch seen, and prev_epoch is the highest
 * committed epoch seen (servers below it wipe their data at PREPARE).
 */
#include "ddict_client_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_time.h"

typedef struct {
    uint64_t epoch;           /* highest epoch answered */
    uint64_t committed;       /* highest committed epoch answered */
} s_seen_t;

/* Sends m to every socket and waits for every reply; *seen (may be NULL)
 * collects the epochs of the replies. */
static int
s_phase(ddict_t *self, void **socks, int n, telem_dict_admin_t *m,
        int64_t deadline, s_seen_t *seen)
{
    m->id = ++self->next_id;
    const void *data;
    size_t size;
    int rc = telem_proto_encode_dict_admin(self->enc, m, &data, &size);
    if (rc)
        return rc;
    zmq_pollitem_t *items = calloc((size_t) n, sizeof *items);
    if (!items)
        return TELEM_ENOMEM;
    for (int i = 0; i < n && rc == 0; i++)
        rc = dc_send_frame(socks[i], data, size, 0);
    int left = n;
    while (rc == 0 && left > 0) {
        int i = dc_poll(socks, n, items, deadline);
        if (i < 0) {
            rc = TELEM_ETIMEDOUT;
            break;
        }
        zmq_msg_t head;
        zmq_msg_init(&head);
        telem_msg_t r;
        if (dc_recv_head(socks[i], &head) == 0
            && telem_proto_decode(self->dec, zmq_msg_data(&head),
                                  zmq_msg_size(&head), &r) == 0
            && (int) r.type == TELEM_MSG_DICT_ADMIN_REP
            && r.u.dict_admin_rep.id == m->id) {
            const telem_dict_admin_rep_t *a = &r.u.dict_admin_rep;
            left--;
            rc = a->code;
            if (seen && a->epoch > seen->epoch)
                seen->epoch = a->epoch;
            if (seen && a->committed > seen->committed)
                seen->committed = a->committed;
        }
        zmq_msg_close(&head);
    }
    free(items);
    return rc;
}

int
ddict_reform(ddict_t *self, const char *const *nodes, int n, int replicas)
{
    ddict_map_t *check = ddict_map_new(nodes, n, replicas, NULL);
    if (!check)
        return TELEM_EINVAL;
    ddict_map_destroy(&check);
    int64_t deadline = telem_mono_ns() + self->timeout_ms * TELEM_NS_PER_MS;
    void **socks = calloc((size_t) n, sizeof *socks);
    if (!socks)
        return TELEM_ENOMEM;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char ep[TELEM_PATH_MAX];
        rc = dc_lookup(self, nodes[i], ep, sizeof ep);
        if (rc == 0 && !(socks[i] = dc_connect(self, ep)))
            rc = TELEM_ECONN;
    }
    s_seen_t seen = { self->epoch, 0 };
    telem_dict_admin_t m = { 0, TELEM_DADM_HELLO, 0, 0, 0, NULL, 0 };
    if (rc == 0)
        rc = s_phase(self, socks, n, &m, deadline, &seen);
    telem_dict_admin_t p = { 0, TELEM_DADM_PREPARE, seen.epoch + 1,
                             seen.committed ? seen.committed : self->epoch,
                             replicas, nodes, (uint32_t) n };
    if (rc == 0)
        rc = s_phase(self, socks, n, &p, deadline, NULL);
    p.op = TELEM_DADM_TRANSFER;
    if (rc == 0)
        rc = s_phase(self, socks, n, &p, deadline, NULL);
    p.op = TELEM_DADM_COMMIT;
    if (rc == 0)
        rc = s_phase(self, socks, n, &p, deadline, NULL);
    for (int i = 0; i < n; i++)
        dc_close(&socks[i]);
    free(socks);
    if (rc == 0)
        rc = dc_refresh(self, deadline);
    return rc;
}
