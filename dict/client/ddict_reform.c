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
 *
 * Nothing here is done server by server in turn: the endpoints come from
 * one read of the node file, each phase goes to every server before any
 * reply is read, every wake-up takes every reply that is waiting and the
 * next poll watches only the servers still to answer.  With 1,024
 * servers, a poll over every socket per reply (what this did first) was a
 * million socket checks per phase.  The handle keeps its sockets to the
 * servers for the next re-form (a launcher re-forms at every restart), so
 * a re-form on the same servers makes no new connection; a server whose
 * endpoint changed in the node file gets a new one.  After the COMMIT the
 * handle installs the new map itself (every server now serves exactly the
 * map it was sent) instead of asking for it again.
 */
#include "ddict_client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "telem_time.h"

typedef struct {
    uint64_t epoch;           /* highest epoch answered */
    uint64_t committed;       /* highest committed epoch answered */
} s_seen_t;

/* One phase's replies still to come: the indices of their sockets. */
typedef struct {
    int *left;
    int nleft;
    void **socks;             /* scratch for dc_poll: the sockets of left */
    zmq_pollitem_t *items;
} s_wait_t;

/* Takes every message waiting on sock; returns 1 once the reply to `id`
 * was among them, its code in *code (the first error kept). */
static int
s_take(ddict_t *self, void *sock, uint64_t id, int *code, s_seen_t *seen)
{
    int done = 0;
    while (!done && dc_has_input(sock)) {
        zmq_msg_t head;
        zmq_msg_init(&head);
        telem_msg_t r;
        if (dc_recv_head(sock, &head) == 0
            && telem_proto_decode(self->dec, zmq_msg_data(&head),
                                  zmq_msg_size(&head), &r) == 0
            && (int) r.type == TELEM_MSG_DICT_ADMIN_REP
            && r.u.dict_admin_rep.id == id) {
            const telem_dict_admin_rep_t *a = &r.u.dict_admin_rep;
            done = 1;
            if (a->code && !*code)
                *code = a->code;
            if (seen && a->epoch > seen->epoch)
                seen->epoch = a->epoch;
            if (seen && a->committed > seen->committed)
                seen->committed = a->committed;
        }
        zmq_msg_close(&head);
    }
    return done;
}

/* Waits for the replies to `id` from every socket in w (all of them to
 * start with); 0, the first error a server answered, or TELEM_ETIMEDOUT. */
static int
s_gather(ddict_t *self, void **socks, s_wait_t *w, uint64_t id,
         int64_t deadline, s_seen_t *seen)
{
    int code = 0;
    while (w->nleft > 0) {
        for (int k = 0; k < w->nleft; k++)
            w->socks[k] = socks[w->left[k]];
        if (dc_poll(w->socks, w->nleft, w->items, deadline) < 0)
            return TELEM_ETIMEDOUT;
        /* Every socket with input, not only the one dc_poll named. */
        int kept = 0;
        for (int k = 0; k < w->nleft; k++)
            if (!s_take(self, socks[w->left[k]], id, &code, seen))
                w->left[kept++] = w->left[k];
        w->nleft = kept;
    }
    return code;
}

/* Sends m to every socket and waits for every reply; *seen (may be NULL)
 * collects the epochs of the replies. */
static int
s_phase(ddict_t *self, void **socks, int n, s_wait_t *w,
        telem_dict_admin_t *m, int64_t deadline, s_seen_t *seen)
{
    m->id = ++self->next_id;
    const void *data;
    size_t size;
    int rc = telem_proto_encode_dict_admin(self->enc, m, &data, &size);
    for (int i = 0; i < n && rc == 0; i++)
        rc = dc_send_frame(socks[i], data, size, 0);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++)
        w->left[i] = i;
    w->nleft = n;
    return s_gather(self, socks, w, m->id, deadline, seen);
}

typedef struct {
    const char *name;
    int idx;
} s_name_t;

static int
s_name_cmp(const void *a, const void *b)
{
    return strcmp(((const s_name_t *) a)->name, ((const s_name_t *) b)->name);
}

/* Reads the endpoints of nodes[0..n) into eps[] from one read of the
 * node file (lines "name<TAB>endpoint"; the last line of a name wins, as
 * telem_nodefile_lookup reads it).  0, TELEM_ENOTFOUND (no file, or a
 * node not in it) or TELEM_ENOMEM. */
static int
s_endpoints(ddict_t *self, const char *const *nodes, int n,
            char (*eps)[TELEM_PATH_MAX])
{
    s_name_t *by = calloc((size_t) n, sizeof *by);
    FILE *f = by ? fopen(self->nodefile, "r") : NULL;
    int rc = !by ? TELEM_ENOMEM : f ? 0 : TELEM_ENOTFOUND;
    if (f) {
        flock(fileno(f), LOCK_SH);
        for (int i = 0; i < n; i++)
            by[i] = (s_name_t) { nodes[i], i };
        qsort(by, (size_t) n, sizeof *by, s_name_cmp);
        char line[TELEM_PATH_MAX + TELEM_NAME_MAX + 8];
        while (fgets(line, sizeof line, f)) {
            char *tab = strchr(line, '\t');
            if (line[0] == '#' || !tab)
                continue;
            *tab = '\0';
            tab[1 + strcspn(tab + 1, "\r\n")] = '\0';
            s_name_t key = { line, 0 };
            const s_name_t *hit = bsearch(&key, by, (size_t) n, sizeof *by,
                                          s_name_cmp);
            if (hit)
                snprintf(eps[hit->idx], sizeof eps[0], "%s", tab + 1);
        }
        fclose(f);
    }
    for (int i = 0; i < n && rc == 0; i++)
        if (!eps[i][0])
            rc = TELEM_ENOTFOUND;
    free(by);
    return rc;
}

/* socks[i]: the kept socket of nodes[i] if its endpoint is still eps[i]
 * (taken out of the handle's set), else a new one.  0 or TELEM_ECONN. */
static int
s_connect(ddict_t *self, const char *const *nodes, int n,
          char (*eps)[TELEM_PATH_MAX], void **socks)
{
    s_name_t *by = calloc((size_t) self->nrf + 1, sizeof *by);
    for (int j = 0; by && j < self->nrf; j++)
        by[j] = (s_name_t) { self->rf[j].name, j };
    if (by)
        qsort(by, (size_t) self->nrf, sizeof *by, s_name_cmp);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        s_name_t key = { nodes[i], 0 };
        const s_name_t *hit = by ? bsearch(&key, by, (size_t) self->nrf,
                                           sizeof *by, s_name_cmp) : NULL;
        dc_node_t *kept = hit ? &self->rf[hit->idx] : NULL;
        if (kept && kept->sock && strcmp(kept->endpoint, eps[i]) == 0) {
            socks[i] = kept->sock;
            kept->sock = NULL;
        } else if (!(socks[i] = dc_connect(self, eps[i]))) {
            rc = TELEM_ECONN;
        }
    }
    free(by);
    return rc;
}

/* Keeps socks[0..n) (to nodes[i] at eps[i]) for the next re-form, closing
 * whatever was kept before and not used. */
static void
s_keep(ddict_t *self, const char *const *nodes, int n,
       char (*eps)[TELEM_PATH_MAX], void **socks)
{
    dc_reform_forget(self);
    dc_node_t *rf = calloc((size_t) n, sizeof *rf);
    for (int i = 0; i < n; i++) {
        if (!rf) {
            dc_close(&socks[i]);
            continue;
        }
        snprintf(rf[i].name, sizeof rf[i].name, "%s", nodes[i]);
        snprintf(rf[i].endpoint, sizeof rf[i].endpoint, "%s", eps[i]);
        rf[i].sock = socks[i];
        socks[i] = NULL;
    }
    self->rf = rf;
    self->nrf = rf ? n : 0;
}

void
dc_reform_forget(ddict_t *self)
{
    for (int j = 0; j < self->nrf; j++)
        dc_close(&self->rf[j].sock);
    free(self->rf);
    self->rf = NULL;
    self->nrf = 0;
}

/* The three phases after the HELLO that learns the epochs; *epoch is the
 * new one. */
static int
s_phases(ddict_t *self, void **socks, int n, s_wait_t *w,
         const char *const *nodes, int replicas, int64_t deadline,
         uint64_t *epoch)
{
    s_seen_t seen = { self->epoch, 0 };
    telem_dict_admin_t m = { 0, TELEM_DADM_HELLO, 0, 0, 0, NULL, 0 };
    int rc = s_phase(self, socks, n, w, &m, deadline, &seen);
    telem_dict_admin_t p = { 0, TELEM_DADM_PREPARE, seen.epoch + 1,
                             seen.committed ? seen.committed : self->epoch,
                             replicas, nodes, (uint32_t) n };
    *epoch = p.epoch;
    if (rc == 0)
        rc = s_phase(self, socks, n, w, &p, deadline, NULL);
    p.op = TELEM_DADM_TRANSFER;
    if (rc == 0)
        rc = s_phase(self, socks, n, w, &p, deadline, NULL);
    p.op = TELEM_DADM_COMMIT;
    if (rc == 0)
        rc = s_phase(self, socks, n, w, &p, deadline, NULL);
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
    char (*eps)[TELEM_PATH_MAX] = calloc((size_t) n, sizeof *eps);
    s_wait_t w = { calloc((size_t) n, sizeof *w.left), 0,
                   calloc((size_t) n, sizeof *w.socks),
                   calloc((size_t) n, sizeof *w.items) };
    uint64_t epoch = 0;
    int rc = socks && eps && w.left && w.socks && w.items
             ? s_endpoints(self, nodes, n, eps) : TELEM_ENOMEM;
    if (rc == 0)
        rc = s_connect(self, nodes, n, eps, socks);
    if (rc == 0)
        rc = s_phases(self, socks, n, &w, nodes, replicas, deadline, &epoch);
    /* Every server serves exactly this map now. */
    if (rc == 0)
        rc = dc_install(self, nodes, n, replicas, epoch,
                        (const char (*)[TELEM_PATH_MAX]) eps);
    /* A server that did not answer may still send its reply late: its
       socket goes (s_take skips stale replies on the others). */
    for (int k = 0; rc && k < w.nleft; k++)
        dc_close(&socks[w.left[k]]);
    if (socks && eps)
        s_keep(self, nodes, n, eps, socks);
    for (int i = 0; socks && i < n; i++)
        dc_close(&socks[i]);
    free(socks);
    free(eps);
    free(w.left);
    free(w.socks);
    free(w.items);
    return rc;
}
