/* ddict_hash.c - the dictionary's key hash (see ddict_hash.h).
 *
 * FNV-1a over the bytes followed by the murmur3 64-bit finaliser, which
 * spreads FNV's weak low bits.  It is written out here, not taken from a
 * library, because it is part of the persistent format and must never
 * change with a library version.
 */
#include "ddict_hash.h"

static uint64_t
s_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

uint64_t
ddict_hash(const void *data, size_t size)
{
    const uint8_t *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return s_mix(h ^ size);
}

uint32_t
ddict_hash_shard(const void *key, size_t klen)
{
    return (uint32_t) (ddict_hash(key, klen) % DDICT_SHARDS);
}
