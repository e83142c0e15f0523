/* telemd_log.h - telemd's flush log: the store's blocks written to the
 * node's segment files, reloaded at start, read by queries that reach
 * before the retention window.
 *
 * Flush, in two halves.  In the caller's (the actor's) thread, every
 * chunk the store has not handed to a flush yet (telem_store_flush:
 * closed blocks, then the open block of each series that changed) is
 * copied, with every metric meta, into one hand-off buffer (bounded at
 * 64 MiB; what does not fit stays unflushed in the store and goes with the
 * next flush).  That walk and copy is the only part that holds up ingest:
 * encoding happened when the blocks were built, so it copies bytes.  The
 * buffer then goes to the log's writer thread, which puts the chunks and
 * metas into the segment log (telem_seglog_put_chunk, put_meta) and
 * commits them (one write, fdatasync by telem_seg.h's policy: at every
 * commit); the segment log is touched by that thread only.
 *
 * Overlap: while the writer still writes the previous flush, a flush is
 * skipped and counted (`skipped`); nothing is lost, the store keeps its
 * chunks unflushed and the next flush takes them.  Waiting instead would
 * stall ingest for the length of a commit, which is what the thread is
 * there to avoid.
 *
 * Nothing copied is lost while telemd lives: a chunk counts as flushed in
 * the store once it is in the buffer, so the buffer is written whole.  A
 * failed commit stays pending in the segment log and is written by the
 * next commit; a chunk the log could not take (no memory, the pending
 * flush full and its commit failing) stays in the buffer and the next
 * flush writes it first instead of walking the store.
 *
 * Crash semantics: a crash (kill -9, power) loses at most what arrived
 * since the last completed flush: the last flush interval plus the flush
 * being written at the time.  A stop (telemd_log_sync: SIGTERM, a
 * hand-over) waits for the writer and writes everything.
 *
 * Reload: an index over the directory's segments (telem_hist.h) yields
 * the node's chunks whose newest point is inside the retention window, in
 * first_seq order per series, to telem_store_load().  A torn or damaged
 * tail is reported in one log line and skipped.
 *
 * History queries: an index over the directory, built when a query needs
 * it and rebuilt when a commit happened since, never while the writer
 * commits (a lock): when a commit is under way the previous index
 * answers (it holds its files open, removed ones too); the first index
 * waits for the commit.
 *
 * Thread safety: the calls below are one owner's (telemd's agent, the
 * actor thread); the writer thread is internal.  Errors: 0 or TELEM_E*.
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
    int64_t last_pause_ns;        /* the store walk + copy of the last
                                     flush: how long ingest waited */
    int64_t max_pause_ns;         /* the longest since start */
    int64_t last_write_ns;        /* the writer's put + commit, last */
    int64_t max_write_ns;         /* the longest since start */
    uint64_t skipped;             /* flushes skipped: the writer was busy
                                     (or finishing the previous one) */
    int writing;                  /* 1: the writer is writing now */
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

/* Starts one flush at now_ns (realtime), as above, and returns without
 * waiting for the write.  Returns 0, TELEM_ESTATE when the writer is
 * still busy (skipped, counted), or the store walk's error (counted in
 * flush_errors; what was copied is still written).  The writer's errors
 * are counted in flush_errors and logged with a rate limit. */
int telemd_log_flush(telemd_log_t *self, telem_store_t *store,
                     int64_t now_ns);

/* The last flush, for a stop: waits for the writer, then flushes and
 * waits for the commit until the store has nothing unflushed (more than
 * one round when a flush passed the buffer's bound).  Blocks for as long
 * as that takes.  Returns 0 or the first error of a round (then what was
 * not committed is lost at exit). */
int telemd_log_sync(telemd_log_t *self, telem_store_t *store,
                    int64_t now_ns);

/* Adds the node's system snapshot (JSON, taken at created_ns; copied) to
 * the log: written by the next flush, and again at the start of every later
 * segment (telem_seglog_put_snapshot).  Returns 0 or its error. */
int telemd_log_snapshot(telemd_log_t *self, const char *json, size_t len,
                        int64_t created_ns);

/* The index over the log for a query (see above); NULL when it cannot be
 * built.  Owned by the log, valid until the next call. */
telem_hist_t *telemd_log_hist(telemd_log_t *self);

/* The figures above (a consistent copy; takes the log's mutex). */
void telemd_log_stats(telemd_log_t *self, telemd_log_stats_t *out);

#endif
