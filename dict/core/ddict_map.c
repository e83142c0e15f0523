/* ddict_map.c - rendezvous shard maps (see ddict_map.h).
 *
 * A node's score for a shard mixes the node name's hash (ddict_hash.h)
 * with the shard number through the murmur3 64-bit finaliser
 * (telem_hash_mix64); like the key hash it decides where data lives, so
 * it must never change.  The owner lists are computed once in ddict_map_new() (256 shards x n nodes
 * scores), so lookups are an array read.
 */
#include "ddict_map.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_paths.h"

struct ddict_map {
    int n;
    int replicas;
    char **names;
    int16_t owners[DDICT_SHARDS][DDICT_REPLICAS_MAX];
};

static uint64_t
s_score(uint64_t node_hash, uint32_t shard)
{
    return telem_hash_mix64(node_hash ^ ((uint64_t) (shard + 1)
                              * UINT64_C(0x9e3779b97f4a7c15)));
}

/* Picks the `r` best-scoring nodes of `shard` (ties broken by name). */
static void
s_fill(ddict_map_t *self, const uint64_t *nh, uint32_t shard)
{
    uint64_t best[DDICT_REPLICAS_MAX];
    int r = self->replicas;
    int have = 0;
    for (int i = 0; i < self->n; i++) {
        uint64_t s = s_score(nh[i], shard);
        int pos = have;
        while (pos > 0) {
            uint64_t b = best[pos - 1];
            int j = self->owners[shard][pos - 1];
            if (b > s || (b == s && strcmp(self->names[j],
                                           self->names[i]) < 0))
                break;
            pos--;
        }
        if (pos >= r)
            continue;
        int last = have < r ? have : r - 1;
        for (int k = last; k > pos; k--) {
            best[k] = best[k - 1];
            self->owners[shard][k] = self->owners[shard][k - 1];
        }
        best[pos] = s;
        self->owners[shard][pos] = (int16_t) i;
        if (have < r)
            have++;
    }
}

static int
s_strp_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* 1 if nodes[0..n) is a list a map can be built on: valid names, none
 * twice (checked on a sorted copy: a map of 1,024 nodes is built by every
 * server at every re-form). */
static int
s_valid(const char *const *nodes, int n)
{
    if (!nodes || n < 1 || n > DDICT_NODES_MAX)
        return 0;
    for (int i = 0; i < n; i++)
        if (!nodes[i] || !telem_node_valid(nodes[i]))
            return 0;
    const char **sorted = malloc((size_t) n * sizeof *sorted);
    if (!sorted)
        return 0;
    memcpy(sorted, nodes, (size_t) n * sizeof *sorted);
    qsort(sorted, (size_t) n, sizeof *sorted, s_strp_cmp);
    int ok = 1;
    for (int i = 1; ok && i < n; i++)
        ok = strcmp(sorted[i - 1], sorted[i]) != 0;
    free(sorted);
    return ok;
}

ddict_map_t *
ddict_map_new(const char *const *nodes, int n, int replicas, int *err)
{
    if (err)
        *err = TELEM_EINVAL;
    if (!s_valid(nodes, n))
        return NULL;
    if (err)
        *err = TELEM_ENOMEM;
    ddict_map_t *self = calloc(1, sizeof *self);
    uint64_t *nh = calloc((size_t) n, sizeof *nh);
    if (!self || !nh || !(self->names = calloc((size_t) n, sizeof (char *))))
        goto fail;
    self->n = n;
    for (int i = 0; i < n; i++) {
        if (!(self->names[i] = strdup(nodes[i])))
            goto fail;
        nh[i] = ddict_hash(nodes[i], strlen(nodes[i]));
    }
    if (replicas <= 0)
        replicas = 2;
    if (replicas > DDICT_REPLICAS_MAX)
        replicas = DDICT_REPLICAS_MAX;
    self->replicas = replicas < n ? replicas : n;
    for (uint32_t s = 0; s < DDICT_SHARDS; s++)
        s_fill(self, nh, s);
    free(nh);
    if (err)
        *err = 0;
    return self;
fail:
    free(nh);
    ddict_map_destroy(&self);
    return NULL;
}

void
ddict_map_destroy(ddict_map_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_map_t *self = *self_p;
    if (self->names)
        for (int i = 0; i < self->n; i++)
            free(self->names[i]);
    free(self->names);
    free(self);
    *self_p = NULL;
}

int
ddict_map_size(const ddict_map_t *self)
{
    return self->n;
}

int
ddict_map_replicas(const ddict_map_t *self)
{
    return self->replicas;
}

const char *
ddict_map_node(const ddict_map_t *self, int index)
{
    return index >= 0 && index < self->n ? self->names[index] : NULL;
}

int
ddict_map_index(const ddict_map_t *self, const char *name)
{
    for (int i = 0; i < self->n; i++)
        if (strcmp(self->names[i], name) == 0)
            return i;
    return -1;
}

int
ddict_map_owners(const ddict_map_t *self, uint32_t shard,
                 int owners[DDICT_REPLICAS_MAX])
{
    shard %= DDICT_SHARDS;
    for (int k = 0; k < self->replicas; k++)
        owners[k] = self->owners[shard][k];
    return self->replicas;
}

int
ddict_map_role(const ddict_map_t *self, uint32_t shard, int index)
{
    shard %= DDICT_SHARDS;
    for (int k = 0; k < self->replicas; k++)
        if (self->owners[shard][k] == index)
            return k;
    return -1;
}
