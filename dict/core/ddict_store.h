/* ddict_store.h - a dictionary server's in-memory data: one hash table per
 * shard, keyed by (namespace, key).
 *
 * Values are shared, reference-counted bytes (ddict_val.h): the store
 * holds a reference to the value a server received, and a value sent
 * back out is another reference to the same bytes, never a copy.  The
 * same sharing makes a checkpoint copy of a namespace cost one small
 * entry per key, whatever the size of the values.
 *
 * Per-shard tables make the operations re-forming needs (walk a shard,
 * drop a shard) proportional to that shard only.  Tables are chained hash
 * tables that double when their load passes 1.
 *
 * Not thread-safe: one owner (the server's actor thread).
 */
#ifndef DDICT_STORE_H
#define DDICT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ddict_val.h"

typedef struct ddict_store ddict_store_t;
typedef struct ddict_store_entry ddict_store_entry_t;

/* A (namespace, key) pair; bytes are borrowed. */
typedef struct {
    const char *ns;
    uint8_t nslen;
    const void *key;
    uint32_t klen;
} ddict_store_key_t;

ddict_store_t *ddict_store_new(void);
void ddict_store_destroy(ddict_store_t **self_p);

/* The entry of `k` in `shard`, or NULL.  The pointer is valid until the
 * next change to the store. */
ddict_store_entry_t *ddict_store_find(ddict_store_t *self, uint32_t shard,
                                const ddict_store_key_t *k);

/* Sets `k` in `shard` to `val` with `version`.  The store takes a
 * reference of its own (the caller keeps and releases its own).  Returns
 * 0 or TELEM_ENOMEM (then the store is unchanged). */
int ddict_store_put(ddict_store_t *self, uint32_t shard,
                    const ddict_store_key_t *k, ddict_val_t *val,
                    uint64_t version);

/* Sets the value and version of entry `e`, found in this store by
 * ddict_store_find with no change to the store since: a reference to val
 * is taken as by ddict_store_put, without a second lookup, and the old
 * value's reference dropped.  Cannot fail. */
void ddict_store_replace(ddict_store_t *self, ddict_store_entry_t *e,
                         ddict_val_t *val, uint64_t version);

/* Removes `k` from `shard`.  Returns 0 or TELEM_ENOTFOUND. */
int ddict_store_del(ddict_store_t *self, uint32_t shard,
                    const ddict_store_key_t *k);

uint64_t ddict_store_entry_version(const ddict_store_entry_t *e);
/* The stored value; borrowed until the next change to the store
 * (ddict_val_hold() it to keep it longer, to send it say). */
ddict_val_t *ddict_store_entry_value(const ddict_store_entry_t *e);
/* The entry's namespace and key, borrowed. */
ddict_store_key_t ddict_store_entry_key(const ddict_store_entry_t *e);

/* Calls fn for every entry of `shard` (all namespaces if ns is NULL, else
 * only namespace ns/nslen).  fn must not change the store; a non-zero
 * return stops the walk and is returned. */
typedef int (*ddict_store_fn)(void *arg, uint32_t shard,
                              ddict_store_entry_t *e);
int ddict_store_foreach(ddict_store_t *self, uint32_t shard, const char *ns,
                        int nslen, ddict_store_fn fn, void *arg);

/* Number of entries of namespace ns in `shard`. */
uint64_t ddict_store_count(ddict_store_t *self, uint32_t shard,
                           const char *ns, uint8_t nslen);

/* Replaces namespace `dst` in `shard` by a copy of namespace `src`
 * (values shared, not copied).  Returns 0 or TELEM_ENOMEM. */
int ddict_store_copy_ns(ddict_store_t *self, uint32_t shard, const char *src,
                        uint8_t srclen, const char *dst, uint8_t dstlen);

/* Removes every key of namespace ns from `shard`. */
void ddict_store_clear_ns(ddict_store_t *self, uint32_t shard,
                          const char *ns, uint8_t nslen);

/* Removes everything from `shard`. */
void ddict_store_drop(ddict_store_t *self, uint32_t shard);

/* Entries in `shard`, all namespaces. */
uint64_t ddict_store_size(const ddict_store_t *self, uint32_t shard);

/* Bytes of keys and values held (values shared between namespaces count
 * once per entry). */
uint64_t ddict_store_bytes(const ddict_store_t *self);

#endif
