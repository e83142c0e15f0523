/* ddict_shard.h - which shard a key lives in, and which nodes own a shard.
 *
 * Keys hash to one of DDICT_SHARDS fixed shards (by the key bytes only, so
 * that a key and its checkpoint copies in other namespaces share a shard).
 * A shard map assigns every shard an ordered owner list, primary first,
 * by rendezvous (highest random weight) hashing of (node name, shard): the
 * owners of a shard are the `replicas` nodes with the highest scores.  This
 * is a pure function of the node list, so every server and client that
 * knows the list agrees on the map without talking, and removing or adding
 * a node moves only the shards that node owned or wins (about 1/n each).
 *
 * Maps are immutable after ddict_map_new(); reading one from several
 * threads is safe.
 */
#ifndef DDICT_SHARD_H
#define DDICT_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define DDICT_SHARDS 256
#define DDICT_REPLICAS_MAX 4
#define DDICT_NODES_MAX 1024

/* 64-bit hash of a byte string (stable across hosts and versions: it is
 * part of the on-disk and wire contract). */
uint64_t ddict_hash(const void *data, size_t size);

/* Shard of a key, 0 .. DDICT_SHARDS-1. */
uint32_t ddict_shard_of(const void *key, size_t klen);

typedef struct ddict_map ddict_map_t;

/* Builds the map for `n` distinct, valid node names (telem_node_valid) and
 * a replication factor, clamped to 1 .. min(n, DDICT_REPLICAS_MAX); 0 asks
 * for the default (2 when n >= 2).  The names are copied and kept in the
 * given order.  Returns NULL on a bad list (empty, too long, duplicate or
 * invalid name) or no memory. */
ddict_map_t *ddict_map_new(const char *const *nodes, int n, int replicas);
void ddict_map_destroy(ddict_map_t **self_p);

int ddict_map_size(const ddict_map_t *self);
int ddict_map_replicas(const ddict_map_t *self);
const char *ddict_map_node(const ddict_map_t *self, int index);

/* Index of `name` in the node list, or -1. */
int ddict_map_index(const ddict_map_t *self, const char *name);

/* Owner node indexes of `shard`, primary first; returns their number
 * (ddict_map_replicas()) and writes them to owners[0 ..]. */
int ddict_map_owners(const ddict_map_t *self, uint32_t shard,
                     int owners[DDICT_REPLICAS_MAX]);

/* Position of node `index` among the owners of `shard`: 0 primary,
 * 1.. replica, -1 not an owner. */
int ddict_map_role(const ddict_map_t *self, uint32_t shard, int index);

#endif
