/* telemd_log.h - telemd's flush log: the store's blocks written to the
 * node's segment files, reloaded at start, read by queries that reach
 * before the retention window.
 *
 * Flush: every chunk the store has not handed to a flush yet
 * (telem_store_flush: closed blocks, then the open block of each series
 * that changed) goes to the segment log (telem_seglog_put_chunk), with
 * every metric meta, then one commit writes and fsyncs them
 * (telem_seg.h's policy: fdatasync at every commit).  The store's walk is
 * the only part that holds up ingest; encoding happened when the blocks
 * were built, so a flush copies bytes, it does not encode.
 *
 * Reload: an index over the directory's segments (telem_hist.h) yields
 * the node's chunks whose newest point is inside the retention window, in
 * first_seq order per series, to telem_store_load().  A torn or damaged
 * tail is reported in one log line and skipped.
 *
 * History queries: an index over the directory, built when a query needs
 * it and rebuilt when a commit happened since.
 *
 * Not thread-safe: one owner (telemd's agent).  Errors: 0 or TELEM_E*.
 */
#ifndef TELEMD_LOG_H
#define TELEMD_LOG_H

#include <stdint.h>

#include "telem_hist.h"
#include "telem_store.h"
#include "telemd_actor.h"

typedef struct telemd_log telemd_log_t;

typedef struct {
    uint64_t flushes;             /* completed (committed) flushes */
    uint64_t flush_errors;        /* failed puts or commits */
    int64_t last_flush_ns;        /* realtime of the last completed flush */
    int64_t last_pause_ns;        /* the store walk of the last flush */
    int64_t max_pause_ns;         /* the longest since start */
    uint64_t chunks;              /* chunks written since start */
    uint64_t bytes;               /* bytes in the directory's segments */
    uint64_t segments;            /* segment files */
    uint64_t reloaded_chunks;     /* loaded at start */
    int64_t reload_ns;            /* how long the reload took */
} telemd_log_stats_t;

/* Opens cfg->log_dir for cfg->node (telem_seglog_open: created 0700;
 * refused when another user's or open to others), with cfg->history_ns
 * and cfg->log_max_bytes as bounds.  Returns NULL with *err set on
 * failure (TELEM_EINVAL, TELEM_EIO, TELEM_ENOMEM). */
telemd_log_t *telemd_log_open(const telemd_config_t *cfg, int *err);
void telemd_log_destroy(telemd_log_t **self_p);

/* Loads the log's chunks of this node that reach into the window ending
 * at now_ns into `store`; logs what it loaded, and damage in one line.
 * Returns 0 (damage and refused chunks are counted, not errors) or
 * TELEM_ENOMEM. */
int telemd_log_reload(telemd_log_t *self, telem_store_t *store,
                      int64_t now_ns);

/* One flush at now_ns (realtime), as above.  Returns 0 or the error of the
 * put or the commit (counted in flush_errors; what was not committed is
 * written by the next flush). */
int telemd_log_flush(telemd_log_t *self, telem_store_t *store,
                     int64_t now_ns);

/* Adds the node's system snapshot (JSON, taken at created_ns) to the
 * log: written by the next flush, and again at the start of every later
 * segment (telem_seglog_put_snapshot).  Returns 0 or its error. */
int telemd_log_snapshot(telemd_log_t *self, const char *json, size_t len,
                        int64_t created_ns);

/* The index over the log for a query (see above); NULL when it cannot be
 * built.  Owned by the log, valid until the next call. */
telem_hist_t *telemd_log_hist(telemd_log_t *self);

void telemd_log_stats(const telemd_log_t *self, telemd_log_stats_t *out);

#endif
