/* telemd_slurmd.h - the node's slurmd, watched by telemd under Slurm.
 *
 * Why: a node whose slurmd has died still runs its job's processes, and
 * telemd still answers, but Slurm can start nothing there any more and
 * will mark the node DOWN after SlurmdTimeout (tens of seconds, minutes on
 * most clusters), taking the job with it.  telemd notices at once and says
 * so in its answer to the launcher's next status request (docs/telemd.md,
 * "Under Slurm"), so the job is restarted without the node within telem's
 * own heartbeat.
 *
 * Finding it: among the processes named "slurmd" under the proc root,
 *   1. the one started for this node (`slurmd -N NODE`, as with several
 *      slurmd on one host) in telemd's network namespace, else the one
 *      started for this node anywhere, else
 *   2. the only one in telemd's own network namespace, else
 *   3. the only one there is.
 * Otherwise (none, or several that cannot be told apart) nothing is
 * watched, and telemd_slurmd_find() says why.  The process is known by its
 * pid and its start time, so a reused pid is not mistaken for it.
 *
 * Thread safety: none; one owner (telemd's actor).
 */
#ifndef TELEMD_SLURMD_H
#define TELEMD_SLURMD_H

#include <stddef.h>
#include <sys/types.h>

typedef struct telemd_slurmd telemd_slurmd_t;

/* Finds node `node`'s slurmd under `proc_root` (NULL: "/proc").  Returns
 * the watch, or NULL with a sentence in `why` (not found, ambiguous, out
 * of memory). */
telemd_slurmd_t *telemd_slurmd_find(const char *proc_root, const char *node,
                                    char *why, size_t why_size);

/* telemd_slurmd_find() for telemd: logs "watching slurmd (pid P) of node
 * N", or, when none is found, a warning saying why nothing is watched (and
 * returns NULL). */
telemd_slurmd_t *telemd_slurmd_start(const char *proc_root, const char *node);

/* 1 with "node lost: <why>" in `why` once the watched slurmd is gone (an
 * error line is logged the first time); 0 while it runs, or when `self`
 * is NULL (nothing watched). */
int telemd_slurmd_lost(telemd_slurmd_t *self, char *why, size_t why_size);

/* Frees; accepts NULL or a pointer to NULL; nulls the pointer. */
void telemd_slurmd_destroy(telemd_slurmd_t **self_p);

/* The watched slurmd's pid. */
pid_t telemd_slurmd_pid(const telemd_slurmd_t *self);

/* 1 while the slurmd found is still running (same pid, same start time,
 * not a zombie); 0 once it is gone, with a sentence in `why`.  Once gone,
 * it stays gone. */
int telemd_slurmd_alive(telemd_slurmd_t *self, char *why, size_t why_size);

#endif
