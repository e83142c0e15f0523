/* ddict_api.c - the operations of ddict.h, each a small batch run by the
 * engine (ddict_batch.c), plus checkpoints, events and re-forming.
 *
 * Checkpoints use two hidden namespaces per user namespace, "\002a<ns>"
 * and "\002b<ns>", written alternately: checkpoint N copies the namespace
 * into the slot the committed checkpoint does not use, on every server,
 * then commits by a replicated put of (id, slot) under key "ckpt<ns>" in
 * the hidden namespace "\001meta".  A crash before the commit leaves the
 * previous checkpoint (in the other slot) in force.  Restore reads the
 * commit record and copies the slot back over the namespace everywhere.
 * Hidden namespaces start with a byte below 0x20, which user namespaces
 * may not contain, and are sharded, replicated and re-formed like any.
 */
#include "ddict_client_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_time.h"

#define S_META_NS "\001meta"

static int
s_one(ddict_t *self, uint8_t op, const void *key, size_t klen, uint64_t arg,
      const void *val, size_t vlen, int target, const char *ns)
{
    ddict_batch_t *b = self->one;
    ddict_batch_clear(b);
    int rc = dc_batch_add(b, op, key, klen, arg, val, vlen, target);
    if (rc == 0)
        rc = dc_exec(self, b, ns);
    return rc ? rc : b->codes[0];
}

/* The version of the handle's one op, 0 when it was refused before it
 * entered the batch (an over-long key or value): the batch is then empty
 * and its arrays may never have been allocated. */
static uint64_t
s_one_version(const ddict_t *self)
{
    return self->one->n ? self->one->versions[0] : 0;
}

int
ddict_put(ddict_t *self, const void *key, size_t klen, const void *val,
          size_t vlen, uint64_t *version)
{
    int rc = s_one(self, TELEM_DOP_PUT, key, klen, 0, val ? val : "", vlen,
                   -1, NULL);
    if (version)
        *version = s_one_version(self);
    return rc;
}

int
ddict_cas(ddict_t *self, const void *key, size_t klen, const void *val,
          size_t vlen, uint64_t expected, uint64_t *version)
{
    int rc = s_one(self, TELEM_DOP_CAS, key, klen, expected, val ? val : "",
                   vlen, -1, NULL);
    if (version)
        *version = s_one_version(self);
    return rc;
}

int
ddict_get(ddict_t *self, const void *key, size_t klen, void **val,
          size_t *vlen, uint64_t *version)
{
    int rc = s_one(self, TELEM_DOP_GET, key, klen, 0, NULL, 0, -1, NULL);
    if (rc)
        return rc;
    zmq_msg_t *m = &self->one->rvals[0];
    size_t n = zmq_msg_size(m);
    char *copy = malloc(n + 1);
    if (!copy)
        return TELEM_ENOMEM;
    memcpy(copy, zmq_msg_data(m), n);
    copy[n] = '\0';
    *val = copy;
    if (vlen)
        *vlen = n;
    if (version)
        *version = self->one->versions[0];
    return 0;
}

int
ddict_get_into(ddict_t *self, const void *key, size_t klen, void *buf,
               size_t cap, size_t *vlen, uint64_t *version)
{
    ddict_batch_t *b = self->one;
    ddict_batch_clear(b);
    int rc = dc_batch_add_into(b, key, klen, buf, cap);
    if (rc == 0)
        rc = dc_exec(self, b, NULL);
    if (rc == 0)
        rc = b->codes[0];
    if (vlen)
        *vlen = b->n ? b->dlen[0] : 0;
    if (version)
        *version = b->n ? b->versions[0] : 0;
    return rc;
}

int
ddict_del(ddict_t *self, const void *key, size_t klen)
{
    return s_one(self, TELEM_DOP_DEL, key, klen, 0, NULL, 0, -1, NULL);
}

/* Runs one op on every node of the map; *sum gets the versions' sum. */
static int
s_everywhere(ddict_t *self, uint8_t op, const void *key, size_t klen,
             const char *ns, uint64_t *sum)
{
    ddict_batch_t *b = self->one;
    ddict_batch_clear(b);
    int rc = 0;
    for (int i = 0; i < self->nnodes && rc == 0; i++)
        rc = dc_batch_add(b, op, key, klen, 0, NULL, 0, i);
    if (rc == 0)
        rc = dc_exec(self, b, ns);
    uint64_t total = 0;
    for (size_t i = 0; rc == 0 && i < b->n; i++) {
        rc = b->codes[i];
        total += b->versions[i];
    }
    if (sum)
        *sum = total;
    return rc;
}

int
ddict_len(ddict_t *self, uint64_t *n)
{
    return s_everywhere(self, TELEM_DOP_LEN, "", 0, NULL, n);
}

int
ddict_keys(ddict_t *self, ddict_key_fn fn, void *arg)
{
    ddict_batch_t *b = self->one;
    ddict_batch_clear(b);
    int rc = 0;
    for (uint32_t s = 0; s < DDICT_SHARDS && rc == 0; s++)
        rc = dc_batch_add(b, TELEM_DOP_KEYS, "", 0, s, NULL, 0, -2);
    if (rc == 0)
        rc = dc_exec(self, b, NULL);
    for (size_t i = 0; rc == 0 && i < b->n; i++) {
        if ((rc = b->codes[i]) != 0)
            break;
        const uint8_t *p = zmq_msg_data(&b->rvals[i]);
        size_t left = zmq_msg_size(&b->rvals[i]);
        while (rc == 0 && left >= 4) {
            uint32_t len = (uint32_t) p[0] | (uint32_t) p[1] << 8
                           | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
            if (len > left - 4)
                return TELEM_EPROTO;
            rc = fn(arg, p + 4, len);
            p += 4 + len;
            left -= 4 + len;
        }
    }
    return rc;
}

/* ---------------------------------------------------------------- events */

int
ddict_event_set(ddict_t *self, const char *name)
{
    return s_one(self, TELEM_DOP_EVSET, name, strlen(name), 0, NULL, 0, -1,
                 NULL);
}

int
ddict_event_is_set(ddict_t *self, const char *name)
{
    int rc = s_one(self, TELEM_DOP_GET, name, strlen(name), 0, NULL, 0, -1,
                   "\001ev");
    return rc == 0 ? 1 : rc == TELEM_ENOTFOUND ? 0 : rc;
}

int
ddict_event_clear(ddict_t *self, const char *name)
{
    int rc = s_one(self, TELEM_DOP_DEL, name, strlen(name), 0, NULL, 0, -1,
                   "\001ev");
    return rc == TELEM_ENOTFOUND ? 0 : rc;
}

int
ddict_event_wait(ddict_t *self, const char *name, int64_t timeout_ms)
{
    if (timeout_ms < 0)
        timeout_ms = 0;
    int64_t keep = self->timeout_ms;
    /* The server answers when the event is set or its wait ends; the
       handle's deadline covers the wait plus one round trip. */
    self->timeout_ms = timeout_ms + keep;
    int rc = s_one(self, TELEM_DOP_EVWAIT, name, strlen(name),
                   (uint64_t) timeout_ms, NULL, 0, -1, NULL);
    self->timeout_ms = keep;
    return rc;
}

/* ---------------------------------------------------------------- ckpt */

static void
s_slot_ns(const ddict_t *self, int slot, char *buf, size_t size)
{
    snprintf(buf, size, "\002%c%s", slot ? 'b' : 'a', self->ns);
}

/* Reads the commit record: id and slot. */
static int
s_committed(ddict_t *self, uint64_t *id, int *slot)
{
    char key[DDICT_NS_LIMIT + 16];
    int n = snprintf(key, sizeof key, "ckpt%s", self->ns);
    int rc = s_one(self, TELEM_DOP_GET, key, (size_t) n, 0, NULL, 0, -1,
                   S_META_NS);
    if (rc)
        return rc;
    zmq_msg_t *m = &self->one->rvals[0];
    if (zmq_msg_size(m) != 9)
        return TELEM_EPROTO;
    const uint8_t *p = zmq_msg_data(m);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    *id = v;
    *slot = p[8] ? 1 : 0;
    return 0;
}

int
ddict_checkpoint(ddict_t *self, uint64_t id)
{
    uint64_t cur = 0;
    int slot = 1;
    int rc = s_committed(self, &cur, &slot);
    if (rc && rc != TELEM_ENOTFOUND)
        return rc;
    int next = rc == TELEM_ENOTFOUND ? 0 : !slot;
    char dst[DDICT_NS_LIMIT + 16];
    s_slot_ns(self, next, dst, sizeof dst);
    if ((rc = s_everywhere(self, TELEM_DOP_CKPT, dst, strlen(dst), NULL,
                           NULL)) != 0)
        return rc;
    uint8_t rec[9];
    for (int i = 0; i < 8; i++)
        rec[i] = (uint8_t) (id >> (8 * i));
    rec[8] = (uint8_t) next;
    char key[DDICT_NS_LIMIT + 16];
    int n = snprintf(key, sizeof key, "ckpt%s", self->ns);
    return s_one(self, TELEM_DOP_PUT, key, (size_t) n, 0, rec, sizeof rec, -1,
                 S_META_NS);
}

int
ddict_restore(ddict_t *self, uint64_t *id)
{
    uint64_t cur;
    int slot;
    int rc = s_committed(self, &cur, &slot);
    if (rc)
        return rc;
    char src[DDICT_NS_LIMIT + 16];
    s_slot_ns(self, slot, src, sizeof src);
    /* Copy the slot over the namespace: the CKPT op copies the request's
       namespace into the namespace named by its key. */
    rc = s_everywhere(self, TELEM_DOP_CKPT, self->ns, strlen(self->ns), src,
                      NULL);
    if (rc == 0 && id)
        *id = cur;
    return rc;
}
