/* telem_procwalk.h - one walk of /proc a sampling round for the samplers
 * that count the job user's processes: the proc sampler's
 * num_running_processes and the job sampler's job_threads and
 * job_open_files.
 *
 * Reading /proc's directory is the dearest thing those samplers do (about
 * 330 us a pass for 135 processes on the reference machine, then a path
 * lookup of ~4-5 us per process), and both need the same walk.  telemd
 * makes one walker and lends it to every sampler (telem_sampler_env_t's
 * procwalk): the first to ask in a sampling round walks, the others get
 * the same counts.  A sampler opened without one makes its own and walks
 * on every call.
 *
 * Not thread-safe: telemd uses it on its actor thread only, as the
 * samplers.
 */
#ifndef TELEM_PROCWALK_H
#define TELEM_PROCWALK_H

#include <stdint.h>
#include <sys/types.h>

typedef struct telem_procwalk telem_procwalk_t;

typedef struct {
    uint64_t procs;     /* /proc/<pid> directories owned by the job user */
    uint64_t threads;   /* their threads (of those whose task/ was read) */
    uint64_t files;     /* their open files (of those whose fd/ was read) */
} telem_procwalk_counts_t;

/* A walker of proc_root (NULL: "/proc") counting job_uid's processes.
 * Returns NULL with *err (may be NULL) TELEM_EUNSUPPORTED when proc_root
 * is not a readable directory, or TELEM_ENOMEM; *err is 0 on success. */
telem_procwalk_t *telem_procwalk_new(const char *proc_root, uid_t job_uid,
                                     int *err);

/* Closes the directory and frees the walker; accepts NULL and nulls
 * *self_p. */
void telem_procwalk_destroy(telem_procwalk_t **self_p);

/* Fills *out with the counts of sampling round `round` (the round's time,
 * as samplers get it): walks /proc on the first call with a round other
 * than the last walk's, and hands later calls with the same round the
 * same counts without walking.  Round 0 walks on every call.  A process
 * that exits during the walk is left out. */
void telem_procwalk_counts(telem_procwalk_t *self, int64_t round,
                           telem_procwalk_counts_t *out);

/* Walks done since the walker was made (for tests and benchmarks). */
uint64_t telem_procwalk_walks(const telem_procwalk_t *self);

#endif
