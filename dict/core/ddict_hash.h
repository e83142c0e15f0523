/* ddict_hash.h - the dictionary's key hash and which shard a key lives in.
 *
 * Keys hash to one of DDICT_SHARDS fixed shards by the key bytes only, so
 * that a key and its checkpoint copies in other namespaces share a shard.
 * The hash is part of the on-disk and wire contract (shard numbers are in
 * the log and in replication messages): it is stable across hosts and
 * versions and must never change.
 *
 * Thread-safe (no state).
 */
#ifndef DDICT_HASH_H
#define DDICT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define DDICT_SHARDS 256

/* 64-bit hash of a byte string. */
uint64_t ddict_hash(const void *data, size_t size);

/* Shard of a key, 0 .. DDICT_SHARDS-1. */
uint32_t ddict_hash_shard(const void *key, size_t klen);

#endif
