/* telem_int.h - PRIVATE to libtelem's user API (telem.c, telem_push.c).
 *
 * telem.c keeps the process-wide state, the per-thread buffers and the
 * path of telem_add_data(); telem_push.c builds the push calls
 * (telem_counter_add(), telem_gauge_set()) on the pieces below.  The
 * order is one way: telem_push.c calls telem.c, never the reverse.
 *
 * Thread safety: a thread only ever uses its own buffer (tapi_tbuf_t);
 * between tapi_lock() and tapi_unlock() (or a failed tapi_room()) it
 * holds that buffer's mutex, which the sender thread also takes to
 * collect partial batches.
 */
#ifndef TELEM_INT_H
#define TELEM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "telem_queue.h"

#define TAPI_PCACHE 16     /* pushed names remembered per thread */

typedef struct s_tbuf tapi_tbuf_t;

/* One pushed name already in the thread's batch: its text (as given to
 * the call) at arena offset `text` of length `len`, and the sample that
 * carries it, whose name and tags offsets a repeat reuses. */
typedef struct {
    uint32_t text;
    uint32_t len;
    uint32_t sample;
} tapi_pname_t;

/* The names of the batch `batch` (valid while batch->gen == gen), most
 * recent at (next - 1) % TAPI_PCACHE.  Written only by the owner thread
 * under its buffer's mutex. */
typedef struct {
    telem_qbatch_t *batch;
    uint32_t gen;
    uint32_t n;
    uint32_t next;
    tapi_pname_t names[TAPI_PCACHE];
} tapi_pcache_t;

/* Starts a call at `level` (1-4): initialises on first use and finds the
 * calling thread's buffer.  Returns 0 (go on, *tb set), 1 (filtered by the
 * level, counted), or a negative code (TELEM_ESTATE after finalize,
 * TELEM_ENOMEM). */
int tapi_begin(int level, tapi_tbuf_t **tb);

/* Locks the thread's buffer (attaching it again if a finalize detached
 * it).  Returns 0, or a negative code (then it is not locked). */
int tapi_lock(tapi_tbuf_t *tb);

/* With the buffer locked: returns its batch with room for one more sample
 * and `need` arena bytes, queueing a full batch for an empty one when
 * there is no room.  NULL when there is none (the buffer is then
 * unlocked, the sample counted as dropped) with *rc = TELEM_EFULL or
 * TELEM_ENOMEM. */
telem_qbatch_t *tapi_room(tapi_tbuf_t *tb, size_t need, int *rc);

/* The batch of a locked buffer as it is (may be NULL), without room. */
telem_qbatch_t *tapi_batch(tapi_tbuf_t *tb);

/* Counts one accepted call (queued) and unlocks. */
void tapi_unlock(tapi_tbuf_t *tb, int queued);

/* The thread's pushed-name cache; use it only while locked. */
tapi_pcache_t *tapi_pcache(tapi_tbuf_t *tb);

/* Counts a call refused with TELEM_EINVAL (telem_stats()'s `invalid`). */
void tapi_count_invalid(void);

/* Copies len bytes and a NUL into the batch's arena; returns the offset.
 * The caller has checked the room. */
uint32_t tapi_put(telem_qbatch_t *b, const char *s, size_t len);

#endif
