/* det_map.c - a string -> long hash map (det_map.h).
 *
 * FNV-1a hashes the key; the table doubles when it is half full.
 */
#include "det_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

typedef struct {
    char *key;
    long val;
} s_slot_t;

struct det_map {
    s_slot_t *slots;
    size_t cap;       /* power of two */
    size_t n;
};

static uint64_t
s_hash(const char *k)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *k; k++)
        h = (h ^ (unsigned char) *k) * 1099511628211ULL;
    return h;
}

det_map_t *
det_map_new(void)
{
    det_map_t *self = calloc(1, sizeof *self);
    if (self && !(self->slots = calloc(16, sizeof *self->slots))) {
        free(self);
        return NULL;
    }
    if (self)
        self->cap = 16;
    return self;
}

void
det_map_clear(det_map_t *self)
{
    for (size_t i = 0; i < self->cap; i++) {
        free(self->slots[i].key);
        self->slots[i].key = NULL;
    }
    self->n = 0;
}

void
det_map_destroy(det_map_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    det_map_clear(*self_p);
    free((*self_p)->slots);
    free(*self_p);
    *self_p = NULL;
}

size_t
det_map_count(const det_map_t *self)
{
    return self->n;
}

static s_slot_t *
s_find(s_slot_t *slots, size_t cap, const char *key)
{
    size_t i = (size_t) s_hash(key) & (cap - 1);
    while (slots[i].key && strcmp(slots[i].key, key) != 0)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

long
det_map_get(const det_map_t *self, const char *key)
{
    s_slot_t *s = s_find(self->slots, self->cap, key);
    return s->key ? s->val : -1;
}

static int
s_map_grow(det_map_t *self)
{
    size_t cap = self->cap * 2;
    s_slot_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < self->cap; i++)
        if (self->slots[i].key)
            *s_find(slots, cap, self->slots[i].key) = self->slots[i];
    free(self->slots);
    self->slots = slots;
    self->cap = cap;
    return 0;
}

int
det_map_put(det_map_t *self, const char *key, long val)
{
    if (2 * (self->n + 1) > self->cap && s_map_grow(self))
        return TELEM_ENOMEM;
    s_slot_t *s = s_find(self->slots, self->cap, key);
    if (!s->key) {
        if (!(s->key = strdup(key)))
            return TELEM_ENOMEM;
        self->n++;
    }
    s->val = val;
    return 0;
}

