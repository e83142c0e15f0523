/* run_counts.h - a table of counters that telem_run's tracer and its MPI
 * library count into, and the flush that turns the table's running totals
 * into increments for the push API.
 *
 * A table has a fixed number of slots (one per system call number, one per
 * MPI function); each slot counts hits (calls) and bytes.  The counting
 * side adds with run_counts_add() (one writing thread) or
 * run_counts_add_mt() (several), without locks, allocation or I/O.  The
 * pushing side calls run_counts_flush() now and then: for every slot whose
 * totals moved since the last flush it hands the increments to a sink as
 * two metrics,
 *
 *     <hits_metric>{<label_key>="<label>"}    the calls since the last flush
 *     <bytes_metric>{<label_key>="<label>"}   the bytes, when any moved
 *
 * e.g. strace_hits_total{scall="write"}.  A slot's label is asked of the
 * table's label callback once, the first time the slot moves, and kept.
 *
 * Thread safety: counting may run in any number of threads at the same
 * time as one flushing thread; run_counts_flush(), run_counts_total() and
 * run_counts_destroy() are not to be called concurrently with each other.
 */
#ifndef RUN_COUNTS_H
#define RUN_COUNTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RUN_COUNTS_LABEL_MAX 64     /* a label value, NUL included */

typedef struct run_counts run_counts_t;

/* One slot's totals.  Written by the counting side, read by the flush. */
typedef struct {
    _Atomic uint64_t hits;
    _Atomic uint64_t bytes;
} run_counts_cell_t;

/* Writes slot `slot`'s label value (a system call's or function's name)
 * into buf (size RUN_COUNTS_LABEL_MAX).  Returns 0, or non-zero when the
 * slot has no name: it is then labelled "unknown". */
typedef int (run_counts_label_fn)(void *arg, size_t slot, char *buf,
                                  size_t size);

/* Receives one increment: `name` is the whole metric with its labels (valid
 * for the call only), `delta` > 0.  Returns 0 or a negative telem_err_t;
 * a failure is counted by the flush and the increment is not retried. */
typedef int (run_counts_sink_fn)(void *arg, const char *name, double delta);

/* Makes a table of `nslots` zeroed slots.  The metric names and label key
 * are copied; `label` is called as described above with `label_arg`.
 * Returns NULL when out of memory or when a name is NULL, empty or longer
 * than 63 bytes. */
run_counts_t *run_counts_new(size_t nslots, const char *hits_metric,
                             const char *bytes_metric, const char *label_key,
                             run_counts_label_fn *label, void *label_arg);

/* Frees the table; accepts NULL and nulls the caller's pointer. */
void run_counts_destroy(run_counts_t **counts_p);

/* The slots, for run_counts_add(): valid until run_counts_destroy(). */
run_counts_cell_t *run_counts_cells(run_counts_t *counts);

/* The number of slots. */
size_t run_counts_size(const run_counts_t *counts);

/* Counts one hit of a slot and `bytes` bytes, for a table that only one
 * thread counts into: a relaxed load and store, no locked instruction. */
static inline void
run_counts_add(run_counts_cell_t *cell, uint64_t bytes)
{
    atomic_store_explicit(&cell->hits,
                          atomic_load_explicit(&cell->hits,
                                               memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (bytes)
        atomic_store_explicit(&cell->bytes,
                              atomic_load_explicit(&cell->bytes,
                                                   memory_order_relaxed)
                                  + bytes,
                              memory_order_relaxed);
}

/* Adds bytes to a slot without counting a hit (the tracer learns the
 * bytes of a system call at its exit, after counting the call at entry);
 * one counting thread. */
static inline void
run_counts_add_bytes(run_counts_cell_t *cell, uint64_t bytes)
{
    atomic_store_explicit(&cell->bytes,
                          atomic_load_explicit(&cell->bytes,
                                               memory_order_relaxed)
                              + bytes,
                          memory_order_relaxed);
}

/* Like run_counts_add(), for tables that several threads count into. */
static inline void
run_counts_add_mt(run_counts_cell_t *cell, uint64_t bytes)
{
    atomic_fetch_add_explicit(&cell->hits, 1, memory_order_relaxed);
    if (bytes)
        atomic_fetch_add_explicit(&cell->bytes, bytes, memory_order_relaxed);
}

/* Hands every increment since the last flush to `sink` (hits first, then
 * bytes, slot by slot in slot order) and remembers the totals as pushed.
 * Returns the number of increments handed over (0 when nothing moved), or
 * TELEM_ENOMEM when a label could not be stored (the slot is tried again at
 * the next flush).  Sink failures are counted in run_counts_failed(). */
int run_counts_flush(run_counts_t *counts, run_counts_sink_fn *sink,
                     void *arg);

/* Increments a sink refused since the table was made. */
uint64_t run_counts_failed(const run_counts_t *counts);

/* Reads a slot's totals (not only the pushed part). */
void run_counts_total(run_counts_t *counts, size_t slot, uint64_t *hits,
                      uint64_t *bytes);

/* Writes slot `slot`'s label into buf (size RUN_COUNTS_LABEL_MAX), asking
 * the label callback when the flush has not yet done so. */
void run_counts_label(run_counts_t *counts, size_t slot, char *buf,
                      size_t size);

#endif
