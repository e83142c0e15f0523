/* telem_chunk.h - one block of one series, as the store hands it to the
 * flush log and takes it back on reload, and as segment and dump files
 * hold it.
 *
 * The contract between the store (telem_store.h), the segment files
 * (telem_seg.h) and their readers (telem_hist.h):
 *
 * Sequence numbers.  A series numbers the points it accepts 0, 1, 2, ...
 * in the order it accepts them, for as long as its history lasts (across
 * restarts of telemd: a series reloaded from the log goes on from the
 * number its last block ended at).  A block covers the numbers
 * [first_seq, first_seq + npoints); the blocks of one series never share
 * a number.  A point that arrives late (older than the series' newest) is
 * still placed in the open block, in time order, so blocks may overlap in
 * time but never in numbers; readers merge them by time.
 *
 * Versions.  The open block is written again at every flush while it
 * grows (closed == 0), and once more when it closes (closed == 1), always
 * with the same first_seq.  For one series, the records with the same
 * first_seq are versions of one block: the last one read wins, whole (a
 * late point inserted below what an earlier version held is in the later
 * version).  A record whose first_seq is below the start of the series'
 * newest block, and is not a version of a block already held, is a
 * duplicate of history already held and is skipped.
 *
 * Keys.  A series' canonical key is "metric\0k1\0v1\0k2\0v2\0..." with
 * the tags sorted by key (bytes, as strcmp), each key once; key_len
 * counts every byte, the last NUL included (a metric without tags is
 * "metric\0", key_len strlen(metric) + 1).
 */
#ifndef TELEM_CHUNK_H
#define TELEM_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "telem_types.h"

typedef struct {
    const char *key;            /* canonical key, key_len bytes */
    uint32_t key_len;
    const char *metric;         /* the key's metric name (NUL-terminated) */
    const telem_tag_t *tags;    /* the key's tags, sorted; may be NULL */
    uint32_t ntags;             /* when only key is set */
    int counter;                /* a counter series (telem_store_counter_add):
                                   its total goes on from its last value */
    uint64_t first_seq;         /* number of the block's first point */
    const void *block;          /* a telem_block (telem_block.h) */
    size_t block_len;
    int closed;                 /* 1: final; 0: the open block so far */
} telem_chunk_t;

#endif
