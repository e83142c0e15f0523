/* ddict_map.h - which nodes own a shard: the dictionary's shard map.
 *
 * A shard map assigns every one of the DDICT_SHARDS shards (ddict_hash.h)
 * an ordered owner list, primary first, by rendezvous (highest random
 * weight) hashing of (node name, shard): the owners of a shard are the
 * `replicas` nodes with the highest scores.  This is a pure function of
 * the node list, so every server and client that knows the list agrees
 * on the map without talking, and removing or adding a node moves only
 * the shards that node owned or wins (about 1/n each).
 *
 * Maps are immutable after ddict_map_new(); reading one from several
 * threads is safe.
 */
#ifndef DDICT_MAP_H
#define DDICT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "ddict_hash.h"

#define DDICT_REPLICAS_MAX 4
#define DDICT_NODES_MAX 1024

typedef struct ddict_map ddict_map_t;

/* Builds the map for `n` distinct, valid node names (telem_node_valid) and
 * a replication factor, clamped to 1 .. min(n, DDICT_REPLICAS_MAX); 0 asks
 * for the default (2 when n >= 2).  The names are copied and kept in the
 * given order.  Returns the map, or NULL with *err (may be NULL) set to
 * TELEM_EINVAL (empty or too long a list, a duplicate or invalid name) or
 * TELEM_ENOMEM. */
ddict_map_t *ddict_map_new(const char *const *nodes, int n, int replicas,
                           int *err);
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
