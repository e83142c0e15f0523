/* ac_dump.h - a job's history into one dump file, through the analysis
 * client.
 *
 * ac_dump() asks every node of a client (ac.h) for its series in a time
 * range, encodes each series' points into compressed blocks
 * (telem_block.h) and writes them with every node's metric metas (and,
 * where the nodes give one, each node's system snapshot) to a dump file
 * (telem_seg.h: the segment format with an index), with the job's
 * detector events and restarts when given its run directory.  Dumps of several
 * nodes, of several ranges and of several runs of a job can be read
 * together by telem_hist.h, which merges them without duplicate points.
 *
 * Paging: the nodes' replies are bounded (ac.h's size limit; telemd cuts
 * a reply that would pass it).  A dump asks one metric at a time over the
 * whole range; a reply that comes back cut is asked again as two halves
 * of its range, recursively, so a job of any size fits (a range narrower
 * than a millisecond that is still cut is written as it came, counted in
 * `cut`).  Each series' blocks are numbered from 0 in the dump (first_seq
 * counts the series' points written before the block).
 *
 * Not part of the installed library (it needs the store's file writer):
 * link telem_ac_dump.  Thread safety: as ac.h (one thread per client).
 */
#ifndef AC_DUMP_H
#define AC_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "ac.h"

/* Points per block written (telem_block.h's default writer capacity). */
#define AC_DUMP_BLOCK_POINTS 1024u

typedef struct {
    const char *metric;        /* the metric being fetched */
    size_t metric_index;       /* 0-based, of nmetrics */
    size_t nmetrics;
    uint64_t series;           /* written so far */
    uint64_t points;
    uint64_t blocks;
    uint64_t block_bytes;      /* compressed bytes of the blocks */
    uint64_t queries;          /* ac_query calls made */
    uint64_t cut;              /* ranges left cut (see above) */
    size_t nodes_missing;      /* nodes that did not answer some query */
    uint64_t notes;            /* job events written (opts.rundir) */
} ac_dump_stats_t;

typedef struct {
    /* Realtime ns, inclusive.  start 0: the beginning of what the nodes
     * hold; < 0: now + start.  end 0: now; < 0: now + end. */
    int64_t start_ns;
    int64_t end_ns;
    const char *const *metrics;   /* NULL: every metric of the catalog */
    size_t nmetrics;
    const telem_tag_t *tags;      /* exact filters, "*" = present */
    size_t ntags;
    const char *const *nodes;     /* NULL: every node of the client */
    size_t nnodes;
    int timeout_ms;               /* per query; <= 0: the client's */
    /* Called after each query with the totals so far (NULL: none). */
    void (*progress)(void *arg, const ac_dump_stats_t *st);
    void *progress_arg;
    /* The job's run directory (NULL: none): its detector events
     * (telem_watch/events.jsonl) and restarts (launch/restarts.log) in
     * the range are written as ANNOTATION records, each the JSON object
     * telem_web_job.h reads, so telem_view shows what telem_agg shows.
     * Files absent there are no error. */
    const char *rundir;
} ac_dump_opts_t;

/* Writes the dump to `path` (created mode 0600; an existing file is
 * refused).  Nodes that do not answer are left out of the parts they did
 * not answer (named in why, counted in st->nodes_missing) and the dump is
 * still written.  *st (NULL allowed) receives the totals.
 * Returns 0, TELEM_EPARTIAL (written, some node missing), TELEM_ETIMEDOUT
 * (no node answered the catalog: nothing written, no file left),
 * TELEM_EINVAL (bad options), TELEM_EIO (the file: errno kept; a file
 * already there is EEXIST), TELEM_ENOMEM, or ac_query()'s refusal; with
 * a sentence in why (why_size > 0). */
int ac_dump(ac_t *ac, const ac_dump_opts_t *o, const char *path,
            ac_dump_stats_t *st, char *why, size_t why_size);

#endif
