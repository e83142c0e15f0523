/* telemd_logbuf.c - the flush log's hand-off buffer (telemd_logbuf.h).
 *
 * Offsets, not pointers, into the arena: it grows by realloc while a
 * flush is copied.
 */
#include "telemd_logbuf.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"

void
telemd_logbuf_reset(telemd_logbuf_t *b)
{
    b->len = 0;
    b->nchunks = 0;
    b->nmetas = 0;
    b->done = 0;
}

void
telemd_logbuf_free(telemd_logbuf_t *b)
{
    free(b->mem);
    free(b->chunks);
    free(b->metas);
    size_t max = b->max;
    memset(b, 0, sizeof *b);
    b->max = max;
}

size_t
telemd_logbuf_bytes(const telemd_logbuf_t *b)
{
    return b->len + b->nchunks * sizeof *b->chunks
           + b->nmetas * sizeof *b->metas;
}

/* Room for `more` bytes of arena and `entry` bytes of array, within the
 * bound. */
static int
s_room(telemd_logbuf_t *b, size_t more, size_t entry)
{
    if (more > b->max || telemd_logbuf_bytes(b) + more + entry > b->max)
        return TELEM_EFULL;
    if (b->len + more > b->cap
        && telem_grow((void **) &b->mem, &b->cap, b->len + more, 1,
                      1u << 20))
        return TELEM_ENOMEM;
    return 0;
}

static size_t
s_put(telemd_logbuf_t *b, const void *p, size_t n)
{
    size_t off = b->len;
    if (n)
        memcpy(b->mem + off, p, n);
    b->len += n;
    return off;
}

int
telemd_logbuf_add_chunk(telemd_logbuf_t *b, const telem_chunk_t *c)
{
    int rc = s_room(b, (size_t) c->key_len + c->block_len, sizeof *b->chunks);
    if (rc)
        return rc;
    if (b->nchunks + 1 > b->chunks_cap
        && telem_grow((void **) &b->chunks, &b->chunks_cap, b->nchunks + 1,
                      sizeof *b->chunks, 1024))
        return TELEM_ENOMEM;
    telemd_logbuf_chunk_t *e = &b->chunks[b->nchunks++];
    e->key_off = s_put(b, c->key, c->key_len);
    e->key_len = c->key_len;
    e->block_off = s_put(b, c->block, c->block_len);
    e->block_len = c->block_len;
    e->first_seq = c->first_seq;
    e->counter = c->counter != 0;
    e->closed = c->closed != 0;
    return 0;
}

int
telemd_logbuf_add_meta(telemd_logbuf_t *b, const telem_meta_t *m)
{
    const char *unit = m->unit ? m->unit : "", *doc = m->doc ? m->doc : "";
    size_t lm = strlen(m->metric) + 1, lu = strlen(unit) + 1,
           ld = strlen(doc) + 1;
    int rc = s_room(b, lm + lu + ld, sizeof *b->metas);
    if (rc)
        return rc;
    if (b->nmetas + 1 > b->metas_cap
        && telem_grow((void **) &b->metas, &b->metas_cap, b->nmetas + 1,
                      sizeof *b->metas, 64))
        return TELEM_ENOMEM;
    telemd_logbuf_meta_t *e = &b->metas[b->nmetas++];
    e->metric_off = s_put(b, m->metric, lm);
    e->unit_off = s_put(b, unit, lu);
    e->doc_off = s_put(b, doc, ld);
    e->type = m->type;
    return 0;
}

telem_chunk_t
telemd_logbuf_chunk(const telemd_logbuf_t *b, size_t i)
{
    const telemd_logbuf_chunk_t *e = &b->chunks[i];
    return (telem_chunk_t) {
        .key = b->mem + e->key_off, .key_len = e->key_len,
        .metric = b->mem + e->key_off, .counter = e->counter,
        .first_seq = e->first_seq, .block = b->mem + e->block_off,
        .block_len = e->block_len, .closed = e->closed,
    };
}

telem_meta_t
telemd_logbuf_meta(const telemd_logbuf_t *b, size_t i)
{
    const telemd_logbuf_meta_t *e = &b->metas[i];
    return (telem_meta_t) {
        .metric = b->mem + e->metric_off, .type = e->type,
        .unit = b->mem + e->unit_off, .doc = b->mem + e->doc_off,
    };
}
