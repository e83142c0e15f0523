/* telem_hist.h - history read back from segment and dump files: an index
 * over any number of files, and queries on it.
 *
 * Adding a file reads it once (a dump with a valid index: only its index)
 * and keeps, per node and series, where each of its blocks lies (file,
 * offset, size, first_seq, point count, time range) - not the blocks: a
 * query or telem_hist_chunks() reads the blocks it needs from the files
 * again (pread; the files stay open while the history lives).  48
 * bytes a block version kept, plus each series' key; an hour of 10,000
 * series at 1 Hz in 1,024-point blocks is ~40,000 blocks, ~2 MB.
 *
 * telem_chunk.h's rules, across files:
 * - Versions.  Records of one node+key with the same first_seq and the
 *   same first point time are versions of one block: one is kept, a
 *   closed one before an open one, then the one with more points, then
 *   the one read last (files in the order added, records in file order).
 *   So a segment and a dump of the same data, or two dumps of the same
 *   run, hold each block once.
 * - Other runs.  Records with the same first_seq but another first point
 *   time (a run that started its numbering again, a dump that numbered
 *   its own blocks) are other blocks, all kept.
 * - Duplicate points.  A query merges a series' blocks by time and drops
 *   a point whose timestamp and value bits equal those of a point already
 *   taken from another block (the same sample in two runs' files, or in
 *   two versions that differ by a late point).  Equal points within one
 *   block are kept.
 *
 * Not thread-safe: one user at a time (queries use the history's
 * scratch).  Distinct histories may be used in parallel.
 */
#ifndef TELEM_HIST_H
#define TELEM_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "telem_chunk.h"
#include "telem_error.h"
#include "telem_seg.h"
#include "telem_store.h"
#include "telem_types.h"

typedef struct telem_hist telem_hist_t;

typedef struct {
    uint64_t files;               /* files added */
    uint64_t nodes;
    uint64_t series;              /* node+key pairs */
    uint64_t blocks;              /* block versions kept */
    uint64_t versions_dropped;    /* older or smaller versions replaced */
    uint64_t points;              /* points of the blocks kept (duplicate
                                     points across blocks counted twice) */
    int64_t first_ts;             /* oldest point (INT64_MAX when none) */
    int64_t last_ts;              /* newest point (INT64_MIN when none) */
    uint64_t bad;                 /* damaged stretches in the files read */
    uint64_t bytes_skipped;
    uint64_t files_refused;       /* not telem files, newer versions */
    uint64_t notes;               /* annotation records read (before
                                     duplicates are merged) */
} telem_hist_stats_t;

/* Returns an empty history, or NULL with *err (NULL allowed) set to
 * TELEM_ENOMEM. */
telem_hist_t *telem_hist_new(int *err);

/* Frees the history and closes its files; accepts NULL, nulls *self_p. */
void telem_hist_destroy(telem_hist_t **self_p);

/* Adds the segment or dump file at path: a dump through its index when it
 * has a valid one, else (and every segment) by reading it whole; damage is
 * skipped as telem_seg_read() does and reported in *damage (NULL allowed)
 * and in the stats.  The file stays open.
 * Returns 0, TELEM_ENOTFOUND, TELEM_EIO, TELEM_EPROTO (not a telem file),
 * TELEM_EVERSION (a newer version) - the history is then unchanged - or
 * TELEM_ENOMEM (the history may hold part of the file). */
int telem_hist_add_file(telem_hist_t *self, const char *path,
                        telem_seg_damage_t *damage);

/* Adds every file in dir (not below) whose name ends in TELEM_SEG_SUFFIX
 * or TELEM_DUMP_SUFFIX, in name order (segments: time order).  A file that
 * cannot be read is skipped and counted (files_refused); *damage (NULL
 * allowed) sums the damage of all.  Returns 0, TELEM_ENOTFOUND (no such
 * directory), TELEM_EIO or TELEM_ENOMEM. */
int telem_hist_add_dir(telem_hist_t *self, const char *dir,
                       telem_seg_damage_t *damage);

/* Number of nodes held, and the i-th (0 <= i < n, sorted by name; the
 * string lives as long as the history).  NULL past the end. */
uint32_t telem_hist_nnodes(const telem_hist_t *self);
const char *telem_hist_node(const telem_hist_t *self, uint32_t i);

/* The node's newest snapshot (by creation time, then order read):
 * *json / *len point into the history (valid until it is destroyed),
 * *created_ns (NULL allowed) its time.  Returns 0, TELEM_ENOTFOUND (no such
 * node or no snapshot) or TELEM_EIO (its record no longer reads). */
int telem_hist_snapshot(telem_hist_t *self, const char *node,
                        const char **json, size_t *len, int64_t *created_ns);

/* Calls fn for every metric meta of node (NULL: every node), the last
 * read winning per node and metric.  Returns 0 or fn's non-zero value. */
int telem_hist_meta_walk(const telem_hist_t *self, const char *node,
                         int (*fn)(void *arg, const char *node,
                                   const telem_meta_t *m),
                         void *arg);

/* Called per matching series; s and what it points to are valid only
 * during the call.  Return non-zero to stop. */
typedef int (*telem_hist_series_fn)(void *arg, const char *node,
                                    const telem_series_t *s);

/* Walks the series of node (NULL: every node) matching q as
 * telem_store_query() does - metrics, filters ("*" = key present),
 * inclusive range, max_points (newest kept), TELEM_QUERY_LATEST,
 * TELEM_QUERY_LIST (every series held, npoints 0) - except that the range
 * is not bounded by a window: start_ns 0 is the beginning of the history,
 * end_ns 0 its end.  Series come sorted by node, then key; points in time
 * order, duplicates removed (above), with the node's meta (gauge, "", ""
 * without one).  Blocks that no longer read (file changed, damaged) are
 * skipped and counted in the stats' bad.
 * Returns 0, fn's non-zero value, TELEM_EINVAL (as telem_store_query())
 * or TELEM_ENOMEM. */
int telem_hist_query(telem_hist_t *self, const char *node,
                     const telem_store_query_t *q, telem_hist_series_fn fn,
                     void *arg);

/* For a reloading telemd: calls fn with every kept block version of node
 * whose newest point is at or after since_ns (INT64_MIN: all), series by
 * series (sorted by key), in first_seq order per series (versions with
 * the same first_seq in the order read).  Chunks carry key, key_len,
 * metric, counter, first_seq, block, closed (tags NULL); they are valid
 * only during the call.  Blocks that no longer read are skipped (counted).
 * Returns 0, fn's non-zero value, TELEM_ENOTFOUND (no such node) or
 * TELEM_ENOMEM. */
int telem_hist_chunks(telem_hist_t *self, const char *node, int64_t since_ns,
                      int (*fn)(void *arg, const telem_chunk_t *c),
                      void *arg);

void telem_hist_stats(const telem_hist_t *self, telem_hist_stats_t *out);

/* One job event of the files' ANNOTATION records (telem_seg.h). */
typedef struct {
    telem_seg_note_t type;        /* event or restart */
    int64_t time_ms;
    const char *json;             /* its JSON text, NUL-terminated */
    size_t len;
} telem_hist_note_t;

/* The job events of every file added, sorted by time, then type, then
 * text; records equal in all three (two dumps of one run) are one.  The
 * count and the i-th (NULL past the end); pointers valid until the next
 * telem_hist_add_* or destroy.  Job events are not a node's: a dump holds
 * those of the run directory it was made with. */
uint32_t telem_hist_nnotes(telem_hist_t *self);
const telem_hist_note_t *telem_hist_note(telem_hist_t *self, uint32_t i);

#endif
