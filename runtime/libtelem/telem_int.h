/* telem_int.h - PRIVATE to libtelem's user API (telem.c, telem_push.c).
 *
 * telem.c keeps the process-wide state, the per-thread buffers and the
 * path of telem_add_data(); telem_push.c builds the push calls
 * (telem_counter_add(), telem_gauge_set()) on the pieces below;
 * telem_env.c reads the environment.  The order is one way:
 * telem_push.c calls telem.c, which calls telem_env.c, never the
 * reverse.
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

#define TAPI_PCACHE 256    /* pushed-name slots per thread, power of 2 */
#define TAPI_SCACHE 64     /* section slots per thread, power of 2 */

typedef struct s_tbuf tapi_tbuf_t;

/* One pushed name in the thread's batch of generation `gen` (0: empty):
 * its text (as given to the call) at arena offset `text` of length `len`,
 * and the sample that carries it, whose name and tags a repeat reuses. */
typedef struct {
    uint64_t gen;
    uint32_t text;
    uint32_t len;
    uint32_t sample;
} tapi_pname_t;

/* Direct-mapped by a hash of the text; an entry counts only while its
 * gen is the thread's batch's (a batch's gen is new at each hand-out, so
 * a queued batch leaves every entry stale at once).  Written only by the
 * owner thread under its buffer's mutex. */
typedef struct {
    tapi_pname_t slots[TAPI_PCACHE];
} tapi_pcache_t;

/* Where a section's strings lie in the thread's batch of generation `gen`
 * (telem_section.c): its tags (section, name, rank, value) for table
 * entry `slot`, direct-mapped by slot; and the two metric names. */
typedef struct {
    uint64_t gen;
    uint32_t slot;
    uint32_t tags;
} tapi_sname_t;

typedef struct {
    tapi_sname_t slots[TAPI_SCACHE];
    uint64_t names_gen;
    uint32_t seconds;             /* "telem_section_seconds" */
    uint32_t step;                /* "telem_section_step" */
} tapi_scache_t;

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

/* tapi_room() for `nsamples` samples (1-TELEM_Q_SAMPLES). */
telem_qbatch_t *tapi_room_n(tapi_tbuf_t *tb, uint32_t nsamples, size_t need,
                            int *rc);

/* The batch of a locked buffer as it is (may be NULL), without room. */
telem_qbatch_t *tapi_batch(tapi_tbuf_t *tb);

/* Counts `queued` accepted samples and unlocks. */
void tapi_unlock(tapi_tbuf_t *tb, int queued);

/* Counts n more samples filtered by the level in the thread's buffer. */
void tapi_count_filtered(tapi_tbuf_t *tb, uint64_t n);
/* The level samples are compared with, initialising the library on first
 * use; a negative telem_err_t (TELEM_ESTATE after telem_finalize()). */
int tapi_level(void);

/* The thread's section cache; use it only while locked. */
tapi_scache_t *tapi_scache(tapi_tbuf_t *tb);

/* The thread's pushed-name cache; use it only while locked. */
tapi_pcache_t *tapi_pcache(tapi_tbuf_t *tb);

/* Sets the function telem_flush() (final 0) and telem_finalize() (final
 * 1) call first, while the library still takes samples: the sections'
 * device times (telem_section_gpu.c) are read then.  One hook. */
void tapi_set_flush_hook(void (*hook)(int final));

/* Counts a call refused with TELEM_EINVAL (telem_stats()'s `invalid`). */
void tapi_count_invalid(void);

/* Copies len bytes and a NUL into the batch's arena; returns the offset.
 * The caller has checked the room. */
uint32_t tapi_put(telem_qbatch_t *b, const char *s, size_t len);

/* ---- telem_env.c ---- */

/* The integer in environment variable `name` when it is one within
 * [lo, hi], else dflt. */
int tapi_env_int(const char *name, int lo, int hi, int dflt);

/* Fills the node name (TELEM_NAME_MAX + 1 bytes) and the ingest and
 * control endpoints (TELEM_PATH_MAX bytes each) from the environment
 * (telem.h); "" where none can be made. */
void tapi_endpoints(char *node, char *ingest, char *ctl);

/* The process's rank (telem.h, sections): the first of TELEM_RANK,
 * SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK that holds a
 * non-negative integer, else "0".  size >= 20. */
void tapi_env_rank(char *out, size_t size);

#endif
