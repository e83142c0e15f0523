/* ddict_hash.c - the dictionary's key hash (see ddict_hash.h).
 *
 * FNV-1a over the bytes followed by the murmur3 64-bit finaliser
 * (telem_hash_mix64, telem_grow.h), which spreads FNV's weak low bits.
 * It is telem's own code, not a library's, because it is part of the
 * persistent format and must never change with a library version.
 */
#include "ddict_hash.h"

#include "telem_grow.h"

uint64_t
ddict_hash(const void *data, size_t size)
{
    const uint8_t *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return telem_hash_mix64(h ^ size);
}

uint32_t
ddict_hash_shard(const void *key, size_t klen)
{
    return (uint32_t) (ddict_hash(key, klen) % DDICT_SHARDS);
}
