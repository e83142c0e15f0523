/* telemd_reply.h - the series of one query reply, copied as a store or
 * history walk hands them out, until the reply is encoded.
 *
 * A walk's series are valid only during its callback; a reply needs them
 * all at once.  Each is deep-copied into one allocation; the encoded size
 * is estimated as they come, and the walk is stopped (and the reply marked
 * truncated) before the estimate passes the budget, so a reply always fits
 * the protocol's frame limit.
 *
 * Not thread-safe: one owner (telemd's agent).  Errors: 0 or TELEM_E*.
 */
#ifndef TELEMD_REPLY_H
#define TELEMD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "telem_types.h"

typedef struct telemd_reply telemd_reply_t;

/* An empty reply bounded at `budget` bytes (estimated encoded size).
 * NULL without memory. */
telemd_reply_t *telemd_reply_new(size_t budget);
/* Frees the reply and its copies; accepts NULL, nulls *self_p. */
void telemd_reply_destroy(telemd_reply_t **self_p);
/* Frees the copies; the reply is empty and not truncated. */
void telemd_reply_reset(telemd_reply_t *r);
/* A walk callback (telem_store_query(), telem_hist_query() as telemd
 * calls it): copies *s.  Returns 0, 1 when the budget is reached (the
 * reply is marked truncated, *s not added: stops the walk) or
 * TELEM_ENOMEM. */
int telemd_reply_collect(void *arg, const telem_series_t *s);
/* The series copied so far, in walk order; valid until reset. */
uint32_t telemd_reply_count(const telemd_reply_t *r);
const telem_series_t *telemd_reply_series(const telemd_reply_t *r,
                                          uint32_t i);
/* Copies *s into *out, everything it points to in one malloc'd block
 * (*mem, the caller's to free): points first (aligned), tags, strings.
 * Returns 0 or TELEM_ENOMEM. */
int telemd_series_copy(const telem_series_t *s, telem_series_t *out,
                       void **mem);
/* 1 when the budget stopped the walk. */
int telemd_reply_truncated(const telemd_reply_t *r);

#endif
