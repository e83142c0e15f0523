/* run_tids.h - the tracer's table of traced threads, by thread id.
 *
 * Every thread telem_run traces has an entry: the system call it is inside
 * (its counter slot, when the call's bytes are to be counted at its exit)
 * and a few flags.  Threads come and go at every clone and exit of the
 * traced program, and each stop looks its thread up, so the table is an
 * open-addressing hash (linear probing, backward-shift deletion) that
 * grows by doubling and never holds more than half its capacity.
 *
 * Not thread-safe: the tracer's thread alone uses it.
 */
#ifndef RUN_TIDS_H
#define RUN_TIDS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RUN_TID_NO_CALL UINT32_MAX      /* `slot`: no I/O call pending */

enum {
    RUN_TID_DETACHED = 1,               /* let go during a detach */
};

typedef struct {
    pid_t tid;                          /* 0: free entry */
    uint32_t slot;                      /* pending I/O call's counter slot */
    uint32_t flags;
} run_tid_t;

typedef struct run_tids run_tids_t;

/* An empty table; NULL when out of memory. */
run_tids_t *run_tids_new(void);

/* Frees it; accepts NULL and nulls the caller's pointer. */
void run_tids_destroy(run_tids_t **tids_p);

/* The entry of `tid` (> 0), or NULL.  The pointer is valid until the next
 * run_tids_put() or run_tids_del(). */
run_tid_t *run_tids_get(run_tids_t *tids, pid_t tid);

/* The entry of `tid`, made (slot RUN_TID_NO_CALL, no flags) when missing;
 * NULL when out of memory.  Valid as run_tids_get()'s. */
run_tid_t *run_tids_put(run_tids_t *tids, pid_t tid);

/* Removes `tid`'s entry, if any. */
void run_tids_del(run_tids_t *tids, pid_t tid);

/* Removes every entry. */
void run_tids_clear(run_tids_t *tids);

/* The number of entries. */
size_t run_tids_count(const run_tids_t *tids);

/* Entry `i` of the table's storage, 0 <= i < run_tids_capacity(): a free
 * one has tid 0.  For walking every thread. */
size_t run_tids_capacity(const run_tids_t *tids);
run_tid_t *run_tids_at(run_tids_t *tids, size_t i);

#endif
