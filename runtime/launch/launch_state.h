/* launch_state.h - the launcher's node state machine (prefix
 * launch_state_; constants LAUNCH_NODE_ and LAUNCH_VERDICT_): which nodes
 * of the allocation run the program, which wait in reserve, which are
 * excluded, and whether a failure leads to a restart or ends the job.
 *
 * Pure data: no sockets, no processes, no clocks.  The supervisor
 * (launch_job.c) tells it what failed; it answers with a verdict and the new
 * node set, so every rule below is tested without starting anything.
 *
 * Rules:
 *   - The job uses the first N + K nodes of the allocation, in order: N
 *     ACTIVE (run the program, ranks 0..N-1 in allocation order), K IDLE
 *     (reserves, daemons running, no program).  Nodes past N + K are not
 *     used.  Every node is equal: the first one may be excluded too.
 *   - A failure names nodes.  Named ACTIVE and IDLE nodes go DOWN for the
 *     rest of the job.  If no ACTIVE node went down but some IDLE one did,
 *     the program is unaffected: verdict LAUNCH_VERDICT_NONE.
 *   - Otherwise a restart is wanted.  It is refused when the restart budget
 *     (max_restarts) is spent (LAUNCH_VERDICT_BUDGET), or when it downs no
 *     node and one such restart already happened (LAUNCH_VERDICT_BOOTLOOP:
 *     a job that keeps failing with no hardware to blame would loop
 *     forever).
 *   - Reserves are promoted, first in allocation order, until N nodes are
 *     ACTIVE again.  If fewer than N are left: with exhaust the job goes on
 *     with what is left, down to one node; without it, or with none left,
 *     LAUNCH_VERDICT_UNRECOVERABLE.
 *   - Restart k waits backoff_ns(k) before starting the program: 0 for the
 *     first, then base, 2*base, 4*base ... capped at backoff_max_ns.
 *
 * Thread safety: none; one owner.
 */
#ifndef LAUNCH_STATE_H
#define LAUNCH_STATE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    LAUNCH_NODE_ACTIVE = 0,    /* runs the program */
    LAUNCH_NODE_IDLE = 1,      /* reserve: daemons only */
    LAUNCH_NODE_DOWN = 2       /* excluded for the rest of the job */
} launch_state_node_t;

typedef enum {
    LAUNCH_VERDICT_NONE = 0,          /* nothing to do for the program */
    LAUNCH_VERDICT_RESTART = 1,       /* restart on the new active set */
    LAUNCH_VERDICT_UNRECOVERABLE = 2, /* not enough nodes left */
    LAUNCH_VERDICT_BUDGET = 3,        /* max_restarts reached */
    LAUNCH_VERDICT_BOOTLOOP = 4       /* a second restart that downed no node */
} launch_state_verdict_t;

typedef struct {
    long nodes;             /* N active nodes (when nodes_given) */
    long idle;              /* K reserves (when idle_given) */
    int nodes_given;        /* else N = allocation minus K */
    int idle_given;         /* else K = allocation minus N */
    int exhaust;            /* go on with fewer than N nodes, down to one */
    long max_restarts;      /* restart budget; < 0: unlimited */
    int64_t backoff_ns;     /* base delay from the second restart on */
    int64_t backoff_max_ns; /* cap of the delay */
} launch_state_config_t;

typedef struct {
    launch_state_verdict_t verdict;
    size_t downed_active;   /* ACTIVE nodes this failure took down */
    size_t downed_idle;     /* IDLE nodes this failure took down */
    size_t promoted;        /* reserves made ACTIVE */
    long restart;           /* number of this restart (1-based), else 0 */
    int64_t backoff_ns;     /* delay before starting again */
} launch_state_outcome_t;

typedef struct launch_state launch_state_t;

/* Fills `cfg` with the defaults: all nodes active, no reserve, no
 * exhaust, 10 restarts, back-off 1 s doubling up to 30 s. */
void launch_state_config_defaults(launch_state_config_t *cfg);

/* Checks `cfg` against an allocation of `alloc` nodes.  Returns 0, or
 * TELEM_EINVAL with a sentence for the user in `why` (e.g. "--nodes 3 plus
 * --idle 2 needs 5 nodes, the allocation has 4"). */
int launch_state_config_check(const launch_state_config_t *cfg, size_t alloc,
                              char *why,
                              size_t why_size);

/* Creates the state for the allocation `names` (n names, copied) under
 * `cfg`, which must pass launch_state_config_check() (else NULL with
 * TELEM_EINVAL in *err).  NULL with TELEM_ENOMEM when out of memory.  err
 * may be NULL. */
launch_state_t *launch_state_new(const char *const *names, size_t n,
                                 const launch_state_config_t *cfg, int *err);

/* Frees the state; accepts NULL or a pointer to NULL; nulls the pointer. */
void launch_state_destroy(launch_state_t **self_p);

/* Nodes in the job (N + K), in allocation order. */
size_t launch_state_size(const launch_state_t *self);

/* Name of node i (NULL if out of range); owned by the state. */
const char *launch_state_name(const launch_state_t *self, size_t i);

/* State of node i (LAUNCH_NODE_DOWN if out of range). */
launch_state_node_t launch_state_node(const launch_state_t *self, size_t i);

/* Rank of node i among the ACTIVE nodes (allocation order), or -1. */
long launch_state_rank(const launch_state_t *self, size_t i);

/* Index of the node called `name`, or -1. */
long launch_state_find(const launch_state_t *self, const char *name);

/* Number of nodes in state `st`. */
size_t launch_state_count(const launch_state_t *self, launch_state_node_t st);

/* Restarts done so far. */
long launch_state_restarts(const launch_state_t *self);

/* Applies a failure of the `n` nodes whose indexes are in `idx` (indexes
 * out of range and nodes already DOWN are ignored; n may be 0: a failure
 * no node is blamed for) and fills *out.  On LAUNCH_VERDICT_RESTART the new
 * active set is in place and the restart is counted.  Returns 0, or
 * TELEM_EINVAL when out is NULL or idx is NULL with n > 0. */
int launch_state_fail(launch_state_t *self, const size_t *idx, size_t n,
                      launch_state_outcome_t *out);

/* The verdict as a short word: "none", "restart", "unrecoverable",
 * "budget", "bootloop". */
const char *launch_state_verdict_name(launch_state_verdict_t v);

/* The node state as a word: "active", "idle", "down". */
const char *launch_state_node_name(launch_state_node_t st);

#endif
