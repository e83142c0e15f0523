/* ddict_server_compact.c - rewriting a server's log down to its live
 * state without stopping the server for the whole rewrite.
 *
 * When the log passes its threshold (64 MiB and twice the live data), the
 * server takes a snapshot of the store: one small item per entry, holding
 * a copy of the key and a reference to the value (which shares the bytes,
 * so the snapshot costs O(keys), not O(bytes)), and remembers the
 * log's size at that point.  Then, after each burst of client messages
 * (ddict_server_flush), it writes at most S_STEP bytes of the snapshot to
 * "dict.log.tmp" and starts their write-back; the loop does not sleep
 * while this goes on.  When the snapshot is out, the records the live log
 * received since the snapshot point are appended to the new file, which
 * is synced and renamed over the log (ddict_log_compact_finish).  Replay
 * of the new file gives the snapshot, then every later change: the live
 * state.  A crash at any point leaves the old log or the new one, both
 * complete.  The server loop is blocked for one step at a time (a few
 * milliseconds) and once for the snapshot and the final tail copy.
 *
 * ds_dump() writes the whole state in one go; the admin COMPACT request
 * and tests use it through ddict_log_compact().
 *
 * Called by ddict_server.c (each flush) and ddict_server_repl.c (admin);
 * calls only ddict_server_base.c (ddict_server.c lists the order).
 */
#include "ddict_server_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"

#define S_COMPACT_MIN (64ull << 20)
#define S_STEP (8u << 20)           /* snapshot bytes written per step */

typedef struct {
    uint16_t shard;
    uint8_t nslen;
    uint32_t klen;
    uint64_t version;
    size_t koff;                    /* ns then key, in keys[] */
    ddict_val_t *val;               /* a reference, until written */
} s_item_t;

struct ds_compact {
    ddict_log_t *fresh;
    s_item_t *items;
    size_t n, next, cap;
    uint8_t *keys;
    size_t kused, kcap;
    int64_t t0;
};

/* ---------------------------------------------------------------- whole */

static int
s_dump_entry(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    ddict_log_t *out = arg;
    ddict_store_key_t k = ddict_store_entry_key(e);
    ddict_val_t *v = ddict_store_entry_value(e);
    ddict_log_rec_t r = { DDICT_LOG_REC_PUT, (uint16_t) shard, k.ns, k.nslen,
                          k.key, k.klen, NULL, 0,
                          ddict_store_entry_version(e) };
    return ddict_log_append_val(out, &r, v);
}

/* Writes the map record of the current map to `out`. */
static int
s_dump_map(ddict_server_t *self, ddict_log_t *out)
{
    ddict_log_t *live = self->log;
    self->log = out;
    const char *names[DDICT_NODES_MAX];
    int n = ddict_map_size(self->map);
    for (int i = 0; i < n; i++)
        names[i] = ddict_map_node(self->map, i);
    /* Rebuild the map record through the same path as live changes. */
    ddict_map_t *keep = self->map;
    self->map = NULL;
    int rc = ds_set_map(self, names, n, ddict_map_replicas(keep), self->epoch,
                        1);
    ddict_map_destroy(&keep);
    self->log = live;
    return rc;
}

int
ds_dump(void *arg, ddict_log_t *out)
{
    ddict_server_t *self = arg;
    int rc = s_dump_map(self, out);
    for (uint32_t s = 0; rc == 0 && s < DDICT_SHARDS; s++)
        rc = ddict_store_foreach(self->store, s, NULL, 0, s_dump_entry, out);
    return rc;
}

/* ---------------------------------------------------------------- steps */

static void
s_free(ds_compact_t **c_p)
{
    ds_compact_t *c = *c_p;
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        ddict_val_release(&c->items[i].val);
    free(c->items);
    free(c->keys);
    free(c);
    *c_p = NULL;
}

static int
s_snap_fn(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    ds_compact_t *c = arg;
    ddict_store_key_t k = ddict_store_entry_key(e);
    size_t len = (size_t) k.nslen + k.klen;
    if (c->n == c->cap || c->kused + len > c->kcap)
        return TELEM_ENOMEM;        /* sized by the counting pass */
    s_item_t *it = &c->items[c->n++];
    it->shard = (uint16_t) shard;
    it->nslen = k.nslen;
    it->klen = k.klen;
    it->version = ddict_store_entry_version(e);
    it->koff = c->kused;
    memcpy(c->keys + c->kused, k.ns, k.nslen);
    memcpy(c->keys + c->kused + k.nslen, k.key, k.klen);
    c->kused += len;
    it->val = ddict_val_hold(ddict_store_entry_value(e));
    return 0;
}

static int
s_count_fn(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    (void) shard;
    ds_compact_t *c = arg;
    ddict_store_key_t k = ddict_store_entry_key(e);
    c->cap++;
    c->kcap += (size_t) k.nslen + k.klen;
    return 0;
}

/* Takes the snapshot and opens the new file. */
static int
s_begin(ddict_server_t *self)
{
    ds_compact_t *c = calloc(1, sizeof *c);
    if (!c)
        return TELEM_ENOMEM;
    for (uint32_t s = 0; s < DDICT_SHARDS; s++)
        ddict_store_foreach(self->store, s, NULL, 0, s_count_fn, c);
    c->items = malloc((c->cap + 1) * sizeof *c->items);
    c->keys = malloc(c->kcap + 1);
    int rc = c->items && c->keys ? 0 : TELEM_ENOMEM;
    for (uint32_t s = 0; rc == 0 && s < DDICT_SHARDS; s++)
        rc = ddict_store_foreach(self->store, s, NULL, 0, s_snap_fn, c);
    if (rc == 0)
        rc = ddict_log_compact_begin(self->log, &c->fresh);
    if (rc == 0 && (rc = s_dump_map(self, c->fresh)) != 0)
        ddict_log_compact_abort(self->log, &c->fresh);
    if (rc) {
        s_free(&c);
        return rc;
    }
    c->t0 = telem_mono_ns();
    self->compact = c;
    return 0;
}

/* Writes up to S_STEP bytes of the snapshot; 1 when all of it is out. */
static int
s_write_some(ds_compact_t *c, int *rc)
{
    uint64_t bytes = 0;
    while (*rc == 0 && c->next < c->n && bytes < S_STEP) {
        s_item_t *it = &c->items[c->next++];
        const uint8_t *kb = c->keys + it->koff;
        ddict_log_rec_t r = { DDICT_LOG_REC_PUT, it->shard, (const char *) kb,
                          it->nslen, kb + it->nslen, it->klen,
                          NULL, 0, it->version };
        *rc = ddict_log_append_val(c->fresh, &r, it->val);
        bytes += DDICT_LOG_HDR + r.nslen + r.klen
                 + ddict_val_size(it->val);
        ddict_val_release(&it->val);
    }
    if (*rc == 0)
        *rc = ddict_log_pace(c->fresh);
    return c->next == c->n;
}

void
ds_compact_step(ddict_server_t *self)
{
    ds_compact_t *c = self->compact;
    int rc = 0;
    if (!c) {
        uint64_t size = ddict_log_size(self->log);
        uint64_t min = self->cfg.compact_min ? self->cfg.compact_min
                                             : S_COMPACT_MIN;
        if (size < min || size < 2 * ddict_store_bytes(self->store) + min / 2)
            return;
        if ((rc = s_begin(self)) != 0)
            telem_log_limited(&self->rl, TELEM_LOG_WARN,
                              "log compaction did not start: %s",
                              telem_strerror(rc));
        return;
    }
    if (!s_write_some(c, &rc) && rc == 0)
        return;
    uint64_t before = ddict_log_size(self->log);
    if (rc == 0)
        rc = ddict_log_compact_finish(self->log, &c->fresh);
    if (rc)
        telem_log(TELEM_LOG_WARN, "log compaction failed: %s",
                  telem_strerror(rc));
    else
        telem_log(TELEM_LOG_INFO, "log compacted from %llu to %llu bytes "
                  "in %.1f ms (%zu entries, served meanwhile)",
                  (unsigned long long) before,
                  (unsigned long long) ddict_log_size(self->log),
                  (double) (telem_mono_ns() - c->t0) / 1e6, c->n);
    ds_compact_abort(self);
}

void
ds_compact_abort(ddict_server_t *self)
{
    if (!self->compact)
        return;
    ddict_log_compact_abort(self->log, &self->compact->fresh);
    s_free(&self->compact);
}
