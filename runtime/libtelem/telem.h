/* telem.h - record your application's own metrics into telem.
 *
 *   #include <telem/telem.h>
 *   telem_add_data("loss", loss, 0, 1);          // 0 = now, level 1
 *   telem_add_data_tags("step_time", dt, 0, 2, 2, "phase", "fwd", "rank", "3");
 *   telem_finalize();                            // at exit: flush, confirmed
 *
 * Calls never block and never fail the application: samples are batched in
 * the calling process and handed to a background sender thread that pushes
 * them to the node's telemd over ZeroMQ with a bounded queue.  When telemd is
 * not running, or the queue is full, samples are dropped and counted
 * (telem_stats()).  Every function here is thread-safe.
 *
 * Configuration comes from the environment the launcher sets:
 *   TELEM_LEVEL   telemetry level 0-4 (default 1).  A sample whose level is
 *                 above it is dropped at once; level 0 turns everything off.
 *   TELEM_NODE    node name (see telem_paths.h), TELEM_RUNDIR run directory,
 *   TELEM_INGEST  explicit ingest endpoint (overrides the two above),
 *   TELEM_RANK    added as tag "rank" when set.
 * Every sample carries tags host=<node> and pid=<pid>, so two processes that
 * write the same metric on one node stay two series.
 */
#ifndef TELEM_H
#define TELEM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Records one sample.  ts_ns is realtime nanoseconds since the epoch, 0 for
 * now; level is 1-4.  Returns 0 when queued, 1 when skipped because the
 * level is above TELEM_LEVEL (no error), or a negative telem_err_t:
 * TELEM_EINVAL (NULL/empty/over-long name, level outside 1-4, non-finite
 * value), TELEM_EFULL (queue full; the sample is dropped and counted),
 * TELEM_ESTATE (after telem_finalize()).  The name is copied. */
int telem_add_data(const char *metric, double value, int64_t ts_ns, int level);

/* Like telem_add_data() with `ntags` extra tags given as key, value string
 * pairs after the count (at most 8 pairs; keys "host" and "pid" are
 * reserved and rejected).  Strings are copied. */
int telem_add_data_tags(const char *metric, double value, int64_t ts_ns,
                        int level, int ntags, ...);

/* Describes a metric for listings (telem_client -l): type is "gauge" or
 * "counter", unit may be "" and doc is a sentence.  Sent once, not per
 * sample.  Same return values as telem_add_data(). */
int telem_describe(const char *metric, const char *type, const char *unit,
                   const char *doc);

/* Sends every queued sample and waits, at most timeout_ms, until telemd
 * confirms it received them.  Returns 0, TELEM_ETIMEDOUT, or TELEM_ECONN
 * when no telemd is reachable (queued samples are then dropped). */
int telem_flush(int timeout_ms);

/* Flushes (waiting at most $TELEM_FINALIZE_MS, default 2000 ms), stops the
 * sender thread and frees everything.  Later calls to telem_add_data()
 * return TELEM_ESTATE until telem_init() is called again.  Safe to call more
 * than once and when nothing was ever recorded.  Returns as telem_flush(). */
int telem_finalize(void);

/* (Re)initialises explicitly; optional, the first telem_add_data() does it.
 * Reads the environment described above.  Returns 0 or a negative code. */
int telem_init(void);

/* The level samples are compared with (TELEM_LEVEL, or set here: 0-4). */
int telem_level(void);
int telem_set_level(int level);

typedef struct {
    uint64_t queued;       /* samples accepted by telem_add_data */
    uint64_t sent;         /* samples handed to ZeroMQ */
    uint64_t dropped;      /* samples lost: queue full, no telemd, errors */
    uint64_t filtered;     /* samples skipped by the level */
} telem_stats_t;

/* Counters since telem_init(); thread-safe snapshot. */
void telem_stats(telem_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif
