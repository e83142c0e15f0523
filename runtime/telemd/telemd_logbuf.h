/* telemd_logbuf.h - one flush's chunks and metas, copied out of the store
 * for the flush log's writer thread (telemd_log.c).
 *
 * The store hands out chunks whose bytes stay valid only during its
 * callback; the writer puts them into the segment log later, in another
 * thread.  A buffer is one byte arena (keys, block bytes, meta strings)
 * and two arrays of offsets into it, reused from flush to flush, bounded
 * by `max` bytes: an add that would pass the bound is refused with
 * TELEM_EFULL and nothing is added, so the store keeps that chunk for the
 * next flush.
 *
 * Not thread-safe: one user at a time (the log hands it from the actor to
 * the writer under its mutex).  Errors: 0 or TELEM_E*.
 */
#ifndef TELEMD_LOGBUF_H
#define TELEMD_LOGBUF_H

#include <stddef.h>
#include <stdint.h>

#include "telem_chunk.h"
#include "telem_types.h"

typedef struct {
    size_t key_off, block_off, block_len;
    uint64_t first_seq;
    uint32_t key_len;
    uint8_t counter, closed;
} telemd_logbuf_chunk_t;

typedef struct {
    size_t metric_off, unit_off, doc_off;
    telem_metric_type_t type;
} telemd_logbuf_meta_t;

typedef struct {
    char *mem;                     /* the arena */
    size_t len, cap;
    telemd_logbuf_chunk_t *chunks;
    size_t nchunks, chunks_cap;
    telemd_logbuf_meta_t *metas;
    size_t nmetas, metas_cap;
    size_t done;                   /* chunks the writer has put */
    size_t max;                    /* bound on all of the above, bytes */
} telemd_logbuf_t;

/* Empties the buffer, keeping its memory. */
void telemd_logbuf_reset(telemd_logbuf_t *b);
/* Frees its memory (the struct is the caller's). */
void telemd_logbuf_free(telemd_logbuf_t *b);
/* Copies a chunk (key, key_len, counter, first_seq, block, closed).
 * Returns 0, TELEM_EFULL (over the bound) or TELEM_ENOMEM. */
int telemd_logbuf_add_chunk(telemd_logbuf_t *b, const telem_chunk_t *c);
/* Copies a meta (NULL unit/doc become "").  Returns as above. */
int telemd_logbuf_add_meta(telemd_logbuf_t *b, const telem_meta_t *m);
/* Chunk / meta i as the segment log takes them; valid until the next
 * add or reset. */
telem_chunk_t telemd_logbuf_chunk(const telemd_logbuf_t *b, size_t i);
telem_meta_t telemd_logbuf_meta(const telemd_logbuf_t *b, size_t i);
/* Bytes held (arena and arrays), as counted against the bound. */
size_t telemd_logbuf_bytes(const telemd_logbuf_t *b);

#endif
