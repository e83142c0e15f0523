/* ac_arena.c - bump allocator for query results.
 *
 * A query result copies thousands of small strings and arrays out of the
 * decoder and frees them all at once; a chain of large chunks makes that
 * one allocation per 64 KiB instead of one per string, and one free loop.
 */
#include "ac_internal.h"

#include <stdlib.h>
#include <string.h>

#define S_CHUNK_MIN (64u * 1024u)

struct ac__chunk {
    ac__chunk_t *next;
    size_t size;      /* usable bytes in data */
    size_t used;
    max_align_t data[];
};

static size_t
s_align8(size_t n)
{
    return (n + 7u) & ~(size_t) 7u;
}

void *
ac__arena_alloc(ac__arena_t *a, size_t size)
{
    size_t need = s_align8(size ? size : 1);
    ac__chunk_t *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t csize = need > S_CHUNK_MIN ? need : S_CHUNK_MIN;
        if (csize > SIZE_MAX - sizeof *c)
            return NULL;
        c = malloc(sizeof *c + csize);
        if (!c)
            return NULL;
        c->size = csize;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = (char *) c->data + c->used;
    c->used += need;
    return p;
}

void *
ac__arena_memdup(ac__arena_t *a, const void *src, size_t size)
{
    void *p = ac__arena_alloc(a, size);
    if (p && size)
        memcpy(p, src, size);
    return p;
}

char *
ac__arena_strdup(ac__arena_t *a, const char *s)
{
    if (!s)
        s = "";
    return ac__arena_memdup(a, s, strlen(s) + 1);
}

void
ac__arena_free(ac__arena_t *a)
{
    ac__chunk_t *c = a->head;
    while (c) {
        ac__chunk_t *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}
