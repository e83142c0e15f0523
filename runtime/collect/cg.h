/* cg.h - collector groups: one collector process per device on every node
 * of a job, each pinned to its device, timing one test in rounds.
 *
 *   cg_t *g = cg_new("burnin", NULL);
 *   cg_set_period(g, 500 * 1000000LL);          // 0.5 s rounds
 *   if (cg_start(g, why, sizeof why) == 0) {
 *       ...                                     // samples flow into telemd
 *       cg_stop(g, 0);
 *   }
 *   cg_destroy(&g);
 *
 * A group is configured with cg_set_*() and then started once.  Start reads
 * the job's nodes (the node file, see telem_paths.h, or cg_set_nodes()),
 * chooses the group's epoch (the next multiple of the period after now, so
 * the samples of one round carry the same timestamp everywhere), and
 * launches with posix_spawn one collector (telem_collector.h) per selected
 * device per node, or one per node for a per-node test.
 *
 * The test.  Built-in: a kernel of the backend by name (cpu: "dgemm",
 * cuda: "fma"), metric cg_<kernel>_seconds.  User: a function returning one
 * figure per repetition, in a program that calls cg_collector_main() when
 * cg_is_collector() says it was started as a collector; the group is told
 * the program and the metric with cg_set_user_test().  Each round pushes
 * <metric> (median of the repetitions) and <metric>_spread (their MAD),
 * tagged gpu=<device index> (not for per-node tests), backend, group,
 * host and pid, stamped epoch + k * period.
 *
 * Where collectors run.  With no spawn template (the default) every
 * collector is spawned on this machine with --node <node>, which is how
 * virtual nodes on one machine are run.  Their devices are then spread over
 * this machine's devices: device i of the k-th node (0-based, in node
 * order) runs on this machine's device (i + k * ndev) mod nmachine, where
 * ndev is the number of devices selected per node, so the nodes' devices
 * land on distinct devices (cores) while there are enough; collectors that
 * must share a device get different phases within the period (share s of
 * n runs s/n of a period after the round's time) so their rounds do not
 * overlap.  cg_info() reports the mapping.
 * With a spawn template, e.g. "ssh {node}" or "srun -N1 -n1 -w {node}",
 * each collector's command line is the template's words ({node} replaced
 * by the node name, words split at blanks, no quoting) followed by the
 * collector's arguments; a word that is exactly "{cmd}" is replaced instead
 * by the whole collector command as one shell string, "exec 'prog' 'arg'
 * ...", for commands that hand it to a shell ("ssh {node} {cmd}",
 * "bash -c {cmd}"); the exec makes the shell become the collector.
 * With cg_set_only() the group runs one node's collectors here (one group
 * per node, each started on its own node, as telem_launch does under
 * Slurm).  Remote collectors run on device i itself,
 * phase 0.  The default device list of remote nodes is this machine's (as
 * for homogeneous nodes); pass cg_set_devices() otherwise.
 *
 * Stop.  cg_stop() sends SIGTERM to every collector (each then flushes its
 * last samples with an acknowledgement), waits up to a bound, then sends
 * SIGKILL to any left.  Waiting uses pidfds (Linux 5.3+) and poll(), never
 * sleeps.  cg_destroy() stops a running group.
 *
 * The library never logs and installs no signal handlers; it reaps only
 * its own children (waitpid on their pids).  Thread safety: a cg_t is used
 * by one thread at a time.  Errors are telem_err_t codes.
 */
#ifndef CG_H
#define CG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "telem_collector.h"
#include "telem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CG_STOP_DEFAULT_MS 5000

typedef struct cg cg_t;

/* A user test function: see telem_collector_test_fn in telem_collector.h. */
typedef telem_collector_test_fn cg_test_fn;

typedef enum {
    CG_PENDING = 0,     /* not started */
    CG_RUNNING = 1,
    CG_EXITED = 2       /* exited or killed; see exit_code / signal */
} cg_state_t;

typedef struct {
    const char *node;       /* node name (owned by the group) */
    int device;             /* device index on the node (tag gpu); -1 for a
                               per-node test */
    int pin;                /* this machine's device it runs on (local
                               spawn), -1 when unknown or not pinned */
    const char *pin_id;     /* backend id of that device (cpu: the core
                               number), "" when unknown */
    int64_t phase_ns;       /* offset of its rounds within the period */
    pid_t pid;              /* of the collector (or of the spawn command) */
    cg_state_t state;
    int exit_code;          /* exit status when it exited, else -1 */
    int signal;             /* signal that ended it, else 0 */
} cg_info_t;

/* Creates a group called `name` (its group tag; NULL = "cg"; 1-255 bytes)
 * with the defaults: backend cpu, its first kernel, every device, period
 * 1 s, 5 repetitions, per device, nodes from the default node file, local
 * spawn.  Returns the group, or NULL with *err (NULL allowed) set to
 * TELEM_EINVAL (a bad name) or TELEM_ENOMEM. */
cg_t *cg_new(const char *name, int *err);

/* Stops a running group (cg_stop with CG_STOP_DEFAULT_MS) and frees it.
 * Accepts NULL or a pointer to NULL; nulls the caller's pointer. */
void cg_destroy(cg_t **g_p);

/* Setters: each returns 0, TELEM_EINVAL (bad value), TELEM_ENOMEM, or
 * TELEM_ESTATE once the group was started.  Strings are copied. */
int cg_set_backend(cg_t *g, const char *backend);         /* cpu, cuda */
int cg_set_kernel(cg_t *g, const char *kernel);  /* built-in; NULL default */
/* A user test: collectors run `program` (NULL: this program) with
 * TELEM_COLLECTOR_FLAG first, and it must call cg_collector_main(); the
 * samples are called `metric` and `<metric>_spread`. */
int cg_set_user_test(cg_t *g, const char *metric, const char *program);
/* Device indices per node, "0,2-3"; NULL or "all" = every device. */
int cg_set_devices(cg_t *g, const char *list);
int cg_set_period(cg_t *g, int64_t period_ns);   /* 1 ms - 1 day */
int cg_set_reps(cg_t *g, int reps);               /* 1-1000 */
/* 1: each collector spreads its repetitions evenly over the round
 * (telem_collector --spread); with local spawn, collectors sharing a
 * device then take turns inside period/reps instead of the period. */
int cg_set_spread(cg_t *g, int spread);
/* Local spawn only: the machine's devices the virtual nodes' devices are
 * mapped onto, "1" or "0,2-3" (NULL or "all": every device).  Mapping
 * every virtual device onto one core makes them take turns on it, so they
 * are compared on equal hardware; the map formula is applied to this
 * list instead of to all the machine's devices. */
int cg_set_local_devices(cg_t *g, const char *list);
int cg_set_per_node(cg_t *g, int per_node);       /* 1: one per node */
int cg_set_nodefile(cg_t *g, const char *path);   /* NULL: the default */
/* Explicit node names instead of the node file (copied). */
int cg_set_nodes(cg_t *g, const char *const *names, size_t n);
int cg_set_spawn(cg_t *g, const char *tmpl);      /* NULL: local spawn */
/* Only the collectors of node `node` (which must be in the node list), run
 * here: how one telem_collect per node of a cluster runs its own node's
 * devices.  Device i then runs on this machine's device i at phase 0,
 * unless cg_set_local_devices() was given: then the map is the one all the
 * nodes would get from one local group (the node's position in the node
 * list decides its pins and phases), for nodes that share one machine.
 * NULL: every node's collectors (the default). */
int cg_set_only(cg_t *g, const char *node);
/* The collector program for built-in kernels (default: telem_collector
 * beside this program's executable, else found on PATH).  A program given
 * here decides which kernels it runs: cg_start() then accepts a kernel
 * the backend does not have (letters, digits and '_' only), passes it as
 * --kernel and names the metric cg_<kernel>_seconds, so a collector
 * written in another language (a Python script, docs/python.md) records
 * what the detectors read. */
int cg_set_collector(cg_t *g, const char *path);
/* Appends one word to put right after the collector program, before its
 * own options: "python3" as the program, then the script and its flag as
 * words.  At most CG_COLLECTOR_ARGS_MAX words of 1 to CG_COLLECTOR_ARG_MAX
 * bytes, no control characters.  Returns 0, TELEM_EINVAL (a bad word),
 * TELEM_ETOOBIG (one word too many), TELEM_ENOMEM or TELEM_ESTATE. */
#define CG_COLLECTOR_ARGS_MAX 16
#define CG_COLLECTOR_ARG_MAX 4096
int cg_add_collector_arg(cg_t *g, const char *arg);

/* Starts every collector.  Returns 0; TELEM_ESTATE if already started;
 * TELEM_ENOTFOUND/TELEM_EINVAL/TELEM_EIO for a missing or bad node file
 * or an unknown kernel; TELEM_EUNSUPPORTED when the backend is not present
 * on this machine and the devices cannot be known without it; TELEM_EIO
 * when a collector could not be spawned (the ones already started are
 * stopped again).  A sentence goes to `why` (if why_size > 0). */
int cg_start(cg_t *g, char *why, size_t why_size);

/* Stops every running collector: SIGTERM, wait up to timeout_ms (<= 0:
 * CG_STOP_DEFAULT_MS), SIGKILL whatever is left and reap it.  Returns 0
 * when every collector ended on SIGTERM, TELEM_ETIMEDOUT when some had to
 * be killed, TELEM_ESTATE when the group never started. */
int cg_stop(cg_t *g, int timeout_ms);

/* Waits until a running collector exits, `wake_fd` (if >= 0) becomes
 * readable, or timeout_ms passes (< 0: no limit; 0: just look), and reaps
 * every collector that has exited.  Returns the number of collectors that
 * exited during this call (0 or more), or TELEM_ESTATE when none is
 * running, TELEM_EIO if poll() failed. */
int cg_wait(cg_t *g, int timeout_ms, int wake_fd);

/* Starts collector i again after it exited, with the same node, device,
 * pin, phase and epoch (its rounds stay on the group's grid).  Returns 0,
 * TELEM_EINVAL (no such collector), TELEM_ESTATE (it is running, or the
 * group never started) or TELEM_EIO with a sentence in `why`. */
int cg_restart(cg_t *g, size_t i, char *why, size_t why_size);

/* Collectors of a started group (0 before cg_start), and collector i's
 * state (TELEM_EINVAL when i is out of range). */
size_t cg_count(const cg_t *g);
int cg_info(const cg_t *g, size_t i, cg_info_t *out);

/* Number of collectors still running. */
size_t cg_running(const cg_t *g);

/* The group's epoch (realtime ns of round 0), 0 before cg_start. */
int64_t cg_epoch(const cg_t *g);

/* The group's name, backend, period and metric (cg_<kernel>_seconds or
 * the user test's).  Owned by the group. */
const char *cg_name(const cg_t *g);
const char *cg_backend(const cg_t *g);
int64_t cg_period(const cg_t *g);
const char *cg_metric(const cg_t *g);

/* 1 when argv[1] is TELEM_COLLECTOR_FLAG: this program was started by a
 * group as a collector and should call cg_collector_main(). */
int cg_is_collector(int argc, char **argv);

/* Runs this process as one collector of a user test (see
 * telem_collector_main()); returns the exit status for main(). */
int cg_collector_main(int argc, char **argv, const char *metric,
                      cg_test_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
