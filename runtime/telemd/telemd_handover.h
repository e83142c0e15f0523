/* telemd_handover.h - a new telemd takes a node over from the one running.
 *
 * One telemd runs per node and run directory (it holds RUNDIR/NODE/
 * telemd.lock).  A new one that finds the lock held asks, with increasing
 * insistence:
 *   1. a TELEM_CTL_HANDOVER request on the node's ctl.sock: the old telemd
 *      lets its ingest connections go to the new one, reads what they still
 *      carry, flushes everything to the log and exits; the new one waits
 *      up to `ask_ns` for the lock;
 *   2. SIGTERM to the old telemd's pid (from RUNDIR/NODE/endpoints, else
 *      the lock file), only when /proc says that pid is a telemd of this
 *      user: it drains and exits the same way; waits up to `term_ns`;
 *   3. SIGKILL, waits up to `kill_ns`.
 * Each step is logged.  The caller binds its ingest socket before step 1
 * (so senders that reconnect find it) and reads it only once it holds the
 * lock and has reloaded the log.
 */
#ifndef TELEMD_HANDOVER_H
#define TELEMD_HANDOVER_H

#include <stdint.h>

typedef struct {
    int64_t ask_ns;     /* wait after the request (default 5 s) */
    int64_t term_ns;    /* wait after SIGTERM (default 3 s) */
    int64_t kill_ns;    /* wait after SIGKILL (default 2 s) */
} telemd_handover_config_t;

#define TELEMD_HANDOVER_ASK_NS  (INT64_C(5) * 1000000000)
#define TELEMD_HANDOVER_TERM_NS (INT64_C(3) * 1000000000)
#define TELEMD_HANDOVER_KILL_NS (INT64_C(2) * 1000000000)

/* Tries to take the lock file `path` without waiting.  The file is
 * re-created when its holder removed it meanwhile (the inode locked is the
 * one at `path`), and gets this process's pid.  Returns 0 with *fd_out
 * the locked descriptor, TELEM_ESTATE when another process holds it, or
 * TELEM_EIO. */
int telemd_lock_try(const char *path, int *fd_out);

/* Runs the steps above for `node` in `rundir` until the lock at
 * `lock_path` is taken.  Returns 0 with *fd_out the locked descriptor, or
 * TELEM_ETIMEDOUT when the old telemd outlived every step, TELEM_EIO. */
int telemd_handover(const char *rundir, const char *node,
                    const char *lock_path,
                    const telemd_handover_config_t *cfg, int *fd_out);

#endif
