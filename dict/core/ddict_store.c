/* ddict_store.c - per-shard chained hash tables of (namespace, key) ->
 * (version, value message).  See ddict_store.h.
 *
 * An entry is one allocation: header, then namespace and key bytes.  The
 * value is a reference (ddict_val_t), so replacing a value never
 * reallocates the entry.
 *
 * Buckets are picked with the hash's upper half: the shard of a key is
 * the key hash's low byte (ddict_hash_shard), identical for every key of a
 * shard, so low bits would put a whole shard into one chain.
 */
#include "ddict_store.h"

#include <stdlib.h>
#include <string.h>

#include "ddict_map.h"
#include "telem_error.h"

#define S_MIN_BUCKETS 16u

struct ddict_store_entry {
    ddict_store_entry_t *next;
    uint64_t hash;
    uint64_t version;
    ddict_val_t *val;
    uint32_t klen;
    uint8_t nslen;
    char bytes[];       /* ns, then key */
};

typedef struct {
    ddict_store_entry_t **buckets;
    uint32_t nbuckets;  /* 0 or a power of two */
    uint64_t count;
} s_table_t;

struct ddict_store {
    s_table_t shards[DDICT_SHARDS];
    uint64_t bytes;
};

static uint64_t
s_hash(const ddict_store_key_t *k)
{
    uint64_t h = ddict_hash(k->key, k->klen);
    if (k->nslen)
        h ^= ddict_hash(k->ns, k->nslen) * UINT64_C(0x9e3779b97f4a7c15);
    return h;
}

static uint32_t
s_bucket(uint64_t h, uint32_t nbuckets)
{
    return (uint32_t) (h >> 32) & (nbuckets - 1);
}

static int
s_match(const ddict_store_entry_t *e, uint64_t h, const ddict_store_key_t *k)
{
    return e->hash == h && e->klen == k->klen && e->nslen == k->nslen
           && memcmp(e->bytes, k->ns, k->nslen) == 0
           && memcmp(e->bytes + k->nslen, k->key, k->klen) == 0;
}

static void
s_entry_free(ddict_store_t *self, ddict_store_entry_t *e)
{
    self->bytes -= e->klen + e->nslen + ddict_val_size(e->val);
    ddict_val_release(&e->val);
    free(e);
}

ddict_store_t *
ddict_store_new(void)
{
    return calloc(1, sizeof (ddict_store_t));
}

void
ddict_store_destroy(ddict_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_store_t *self = *self_p;
    for (uint32_t s = 0; s < DDICT_SHARDS; s++) {
        ddict_store_drop(self, s);
        free(self->shards[s].buckets);
    }
    free(self);
    *self_p = NULL;
}

static int
s_grow(s_table_t *t)
{
    uint32_t n = t->nbuckets ? t->nbuckets * 2 : S_MIN_BUCKETS;
    ddict_store_entry_t **b = calloc(n, sizeof *b);
    if (!b)
        return TELEM_ENOMEM;
    for (uint32_t i = 0; i < t->nbuckets; i++) {
        ddict_store_entry_t *e = t->buckets[i];
        while (e) {
            ddict_store_entry_t *next = e->next;
            uint32_t j = s_bucket(e->hash, n);
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
    return 0;
}

static ddict_store_entry_t **
s_slot(s_table_t *t, uint64_t h, const ddict_store_key_t *k)
{
    if (!t->nbuckets)
        return NULL;
    ddict_store_entry_t **pp = &t->buckets[s_bucket(h, t->nbuckets)];
    while (*pp && !s_match(*pp, h, k))
        pp = &(*pp)->next;
    return pp;
}

ddict_store_entry_t *
ddict_store_find(ddict_store_t *self, uint32_t shard,
                 const ddict_store_key_t *k)
{
    ddict_store_entry_t **pp = s_slot(&self->shards[shard % DDICT_SHARDS],
                                s_hash(k), k);
    return pp ? *pp : NULL;
}

int
ddict_store_put(ddict_store_t *self, uint32_t shard, const ddict_store_key_t *k,
                ddict_val_t *val, uint64_t version)
{
    s_table_t *t = &self->shards[shard % DDICT_SHARDS];
    uint64_t h = s_hash(k);
    ddict_store_entry_t **pp = s_slot(t, h, k);
    if (pp && *pp) {
        ddict_store_replace(self, *pp, val, version);
        return 0;
    }
    if (t->count >= t->nbuckets && s_grow(t) != 0)
        return TELEM_ENOMEM;
    ddict_store_entry_t *e = malloc(sizeof *e + k->nslen + k->klen);
    if (!e)
        return TELEM_ENOMEM;
    e->hash = h;
    e->version = version;
    e->klen = k->klen;
    e->nslen = k->nslen;
    memcpy(e->bytes, k->ns, k->nslen);
    memcpy(e->bytes + k->nslen, k->key, k->klen);
    e->val = ddict_val_hold(val);
    uint32_t j = s_bucket(h, t->nbuckets);
    e->next = t->buckets[j];
    t->buckets[j] = e;
    t->count++;
    self->bytes += e->klen + e->nslen + ddict_val_size(e->val);
    return 0;
}

void
ddict_store_replace(ddict_store_t *self, ddict_store_entry_t *e,
                    ddict_val_t *val, uint64_t version)
{
    ddict_val_hold(val);      /* before the release: val may be e->val */
    self->bytes -= ddict_val_size(e->val);
    ddict_val_release(&e->val);
    e->val = val;
    self->bytes += ddict_val_size(val);
    e->version = version;
}

int
ddict_store_del(ddict_store_t *self, uint32_t shard, const ddict_store_key_t *k)
{
    s_table_t *t = &self->shards[shard % DDICT_SHARDS];
    ddict_store_entry_t **pp = s_slot(t, s_hash(k), k);
    if (!pp || !*pp)
        return TELEM_ENOTFOUND;
    ddict_store_entry_t *e = *pp;
    *pp = e->next;
    t->count--;
    s_entry_free(self, e);
    return 0;
}

uint64_t
ddict_store_entry_version(const ddict_store_entry_t *e)
{
    return e->version;
}

ddict_val_t *
ddict_store_entry_value(const ddict_store_entry_t *e)
{
    return e->val;
}

ddict_store_key_t
ddict_store_entry_key(const ddict_store_entry_t *e)
{
    ddict_store_key_t k = { e->bytes, e->nslen, e->bytes + e->nslen, e->klen };
    return k;
}

static int
s_in_ns(const ddict_store_entry_t *e, const char *ns, int nslen)
{
    return nslen < 0 || (e->nslen == nslen
                         && memcmp(e->bytes, ns, (size_t) nslen) == 0);
}

int
ddict_store_foreach(ddict_store_t *self, uint32_t shard, const char *ns,
                    int nslen, ddict_store_fn fn, void *arg)
{
    s_table_t *t = &self->shards[shard % DDICT_SHARDS];
    if (!ns)
        nslen = -1;
    for (uint32_t i = 0; i < t->nbuckets; i++)
        for (ddict_store_entry_t *e = t->buckets[i]; e; e = e->next) {
            if (!s_in_ns(e, ns, nslen))
                continue;
            int rc = fn(arg, shard, e);
            if (rc)
                return rc;
        }
    return 0;
}

static int
s_count_fn(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    (void) shard;
    (void) e;
    (*(uint64_t *) arg)++;
    return 0;
}

uint64_t
ddict_store_count(ddict_store_t *self, uint32_t shard, const char *ns,
                  uint8_t nslen)
{
    uint64_t n = 0;
    ddict_store_foreach(self, shard, ns, nslen, s_count_fn, &n);
    return n;
}

/* Removes the entries of namespace ns (all when nslen < 0). */
static void
s_filter(ddict_store_t *self, uint32_t shard, const char *ns, int nslen)
{
    s_table_t *t = &self->shards[shard % DDICT_SHARDS];
    for (uint32_t i = 0; i < t->nbuckets; i++) {
        ddict_store_entry_t **pp = &t->buckets[i];
        while (*pp) {
            ddict_store_entry_t *e = *pp;
            if (s_in_ns(e, ns, nslen)) {
                *pp = e->next;
                t->count--;
                s_entry_free(self, e);
            } else {
                pp = &e->next;
            }
        }
    }
}

void
ddict_store_clear_ns(ddict_store_t *self, uint32_t shard, const char *ns,
                     uint8_t nslen)
{
    s_filter(self, shard, ns, nslen);
}

void
ddict_store_drop(ddict_store_t *self, uint32_t shard)
{
    s_filter(self, shard, NULL, -1);
}

/* Entries to copy are collected first: inserting while walking the same
 * table could grow it under the walk. */
typedef struct {
    ddict_store_entry_t **v;
    uint64_t n;
} s_list_t;

static int
s_collect_fn(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    (void) shard;
    s_list_t *l = arg;
    l->v[l->n++] = e;
    return 0;
}

int
ddict_store_copy_ns(ddict_store_t *self, uint32_t shard, const char *src,
                    uint8_t srclen, const char *dst, uint8_t dstlen)
{
    ddict_store_clear_ns(self, shard, dst, dstlen);
    uint64_t n = ddict_store_count(self, shard, src, srclen);
    s_list_t l = { calloc(n + 1, sizeof (ddict_store_entry_t *)), 0 };
    if (!l.v)
        return TELEM_ENOMEM;
    ddict_store_foreach(self, shard, src, srclen, s_collect_fn, &l);
    int rc = 0;
    for (uint64_t i = 0; i < l.n && rc == 0; i++) {
        ddict_store_entry_t *e = l.v[i];
        ddict_store_key_t k = { dst, dstlen, e->bytes + e->nslen, e->klen };
        rc = ddict_store_put(self, shard, &k, e->val, e->version);
    }
    free(l.v);
    return rc;
}

uint64_t
ddict_store_size(const ddict_store_t *self, uint32_t shard)
{
    return self->shards[shard % DDICT_SHARDS].count;
}

uint64_t
ddict_store_bytes(const ddict_store_t *self)
{
    return self->bytes;
}
