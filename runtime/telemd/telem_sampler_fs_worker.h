/* telem_sampler_fs_worker.h - statvfs() with a deadline, for the fs
 * sampler: a helper thread runs a batch of statvfs calls while the sampler
 * waits, at most a deadline per call.  A call that does not return in time
 * (a hung NFS or FUSE server) leaves its thread behind: the worker is
 * abandoned (the thread frees it when the call finally returns) and the
 * caller starts a new one for the rest of the batch.
 *
 * Used from the sampler's thread only; each worker's own thread touches
 * only the worker.
 */
#ifndef TELEM_SAMPLER_FS_WORKER_H
#define TELEM_SAMPLER_FS_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tfs_worker_t tfs_worker_t;

typedef struct {
    int rc;                     /* 0 or -errno of statvfs */
    uint64_t size, free, avail; /* bytes */
    uint64_t files, files_free;
} tfs_result_t;

/* Starts a worker and its thread; NULL without memory or threads. */
tfs_worker_t *tfs_worker_new(void);

/* Runs statvfs on paths[0..n) in order, each given deadline_ns.  Fills
 * res[0..k) and returns k: n when every call returned, fewer when call k
 * did not return in time, in which case the worker is abandoned and
 * *worker_p moved to *stuck_p (the caller keeps it to learn, with
 * tfs_worker_returned, when the call came back).  Returns -1 (and *stuck_p
 * NULL) when the batch could not be started (too many paths, no memory). */
long tfs_worker_run(tfs_worker_t **worker_p, const char *const *paths,
                    size_t n, int64_t deadline_ns, tfs_result_t *res,
                    tfs_worker_t **stuck_p);

/* True once an abandoned worker's call has returned (its thread is gone
 * or going). */
bool tfs_worker_returned(tfs_worker_t *w);

/* Stops an idle worker and joins its thread, or lets go of an abandoned
 * one; accepts NULL and nulls *worker_p. */
void tfs_worker_destroy(tfs_worker_t **worker_p);

#endif
