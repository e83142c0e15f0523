/* launch_job.h - one telem job under the launcher: daemons on every node,
 * the program on the active ones, supervision and restarts.
 *
 * launch_job_run() starts telemd on every node of the job (active and reserve),
 * and where their binaries sit next to telemd: telem_dictd on every node,
 * telem_collect on every node when collectors are asked for, telem_watch on
 * the first active node when detectors are.  When every active node's
 * telemd and every node's telem_dictd is ready, it forms the dictionary
 * on the job's nodes (a re-form, so servers that replayed an earlier map
 * from their logs agree on this job's), writes the node file (active
 * nodes, for ac_query and the watcher) and <rundir>/launch/job (every
 * node, its state, rank and endpoint), then starts the program once per
 * active node with:
 *   TELEM_LEVEL, TELEM_NODE, TELEM_RANK, TELEM_NNODES, TELEM_RESTART_COUNT,
 *   TELEM_RESTARTED=1 (only after a restart), TELEM_NODEFILE, TELEM_RUNDIR,
 *   TELEM_LAUNCH_ENDPOINT (the restart request socket), and
 *   TELEM_DICT_NODEFILE (where the dictionary's servers are, what
 *   ddict_open() reads) when the job has a dictionary.
 *
 * Failures and what they lead to (launch_state.h has the node rules):
 *   - a daemon that dies (telemd, telem_dictd, telem_collect, telem_watch,
 *     telem_agg) after it was up is started again on its node, with a
 *     back-off, and paused after too many deaths (launch_job_sup.c): the
 *     node stays and the program is not touched; with daemon_exclude, and
 *     for a telemd or telem_dictd that never came up, the node failed;
 *   - a node's telemd misses `heartbeat_misses` status requests in a row
 *     (each with its own deadline), or a daemon cannot be (re)started on
 *     it (the command fails, it is not ready in time, or through srun or a
 *     remote shell it ends before it is ready): the node failed;
 *   - the program exits non-zero on a node: with restart_on_failure the
 *     node failed, otherwise the job ends with LAUNCH_EXIT_PROGRAM;
 *   - launch_job_request_restart(), or a restart request on the socket
 *     (TELEM_MSG_RESTART, answered with TELEM_MSG_RESTART_ACK): the named
 *     nodes failed.
 * A failed node needs `resilient` to be restarted around (except a crash
 * with restart_on_failure); otherwise the job ends, LAUNCH_EXIT_UNRECOVERABLE.
 * A restart stops the program on every node (SIGTERM to each process
 * group, SIGKILL after `grace_ns`), stops the daemons of the nodes that
 * went down, re-forms the dictionary on the nodes not DOWN (a timed step;
 * a failed re-form is named in the restart line and the program is
 * started anyway), waits the back-off, and starts the
 * program again.  It prints and logs one line: trigger, nodes, why,
 * restart number, and the time of each step.
 *
 * Signals: the job blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP in the
 * calling thread and reads them from a signalfd in its loop, so
 * launch_job_new() must be called before the process starts any other thread.
 * SIGINT/SIGTERM/SIGHUP stop the whole job (program and daemons, every
 * node, whole process groups) and launch_job_run() returns 128 + the signal.
 *
 * Thread safety: one thread; the job owns every process it starts.
 */
#ifndef LAUNCH_JOB_H
#define LAUNCH_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "launch_source.h"
#include "launch_state.h"

/* Exit codes of launch_job_run() and of telem_launch. */
typedef enum {
    LAUNCH_EXIT_OK = 0,            /* the program ended 0 on every active
                                      node */
    LAUNCH_EXIT_PROGRAM = 1,       /* the program failed and is not restarted */
    LAUNCH_EXIT_USAGE = 2,         /* bad command line */
    LAUNCH_EXIT_UNRECOVERABLE = 3, /* a node failed, no restart is possible */
    LAUNCH_EXIT_BUDGET = 4,        /* restart budget spent, or boot-loop
                                      brake */
    LAUNCH_EXIT_START = 5          /* the job could not start (files,
                                      daemons) */
} launch_job_exit_t;               /* stopped by a signal: 128 + signal */

#define LAUNCH_DETCMD_MAX 4      /* --detector-cmd commands in one job */

typedef struct {
    launch_state_config_t nodes;          /* --nodes, --idle, exhaust, budget */
    int resilient;              /* restart around failed nodes */
    int restart_on_failure;     /* a crashed program fails its node */
    int level;                  /* telemetry level 0-4 */
    const char *bindir;         /* where telemd and friends are */
    const char *rundir;         /* NULL: telem_rundir_default() */
    const char *nodefile;       /* NULL: $TELEM_NODEFILE, else RUNDIR/nodes */
    const char *bind_addr;      /* telemd --bind; NULL: telemd's default */
    const char *const *detectors;  /* for telem_watch, may be NULL */
    size_t ndetectors;
    /* --detector-cmd: commands (split as a shell would) run beside
     * telem_watch on the first active node, started, stopped and
     * supervised as it is, with TELEM_WATCH_PERIOD and, in a resilient
     * job, TELEM_WATCH_RESTART=1 in their environment (a Python
     * telem.Detector, docs/detectors.md). */
    const char *const *detector_cmds;
    size_t ndetector_cmds;      /* at most LAUNCH_DETCMD_MAX */
    int64_t watch_period_ns;    /* telem_watch --period; 0: its own
                                   default (1 s) */
    const char *collect;        /* words for telem_collect, or NULL */
    int agg_port;               /* telem_agg's port on the first node (0:
                                   any free one); -1: no telem_agg */
    const char *agg_bind;       /* telem_agg --bind; NULL: its default */
    long relays;                /* nodes per telem_relay (2 or more); 0:
                                   no relays; -1 (auto, the default): 32
                                   when more than 64 nodes are active,
                                   else none (launch_job_relay.c) */
    const char *agg_token_file; /* telem_agg --token-file, or NULL */
    int metrics_port;           /* telemd --http-port on every node, GET
                                   /metrics for Prometheus (0: a free port
                                   per node); -1: none, the default, which
                                   launch_job_new() turns into 0 when
                                   prometheus_config is set */
    const char *metrics_bind;   /* telemd --http-bind; NULL: its default,
                                   127.0.0.1 */
    const char *sys_root;       /* telemd --sys-root on every node, each
                                   "{node}" in it replaced by the node's
                                   name; NULL: telemd's default, /sys */
    const char *prometheus_config;  /* a Prometheus configuration scraping
                                   every node's telemd is written there, its
                                   targets beside it (launch_job_files.c);
                                   NULL: none */
    int64_t grace_ns;           /* SIGTERM to SIGKILL */
    int64_t heartbeat_ns;       /* period of status requests; 0: none */
    int64_t heartbeat_timeout_ns;  /* deadline of one status request */
    int heartbeat_misses;       /* misses in a row that fail a node */
    int64_t start_timeout_ns;   /* a telemd not ready by then failed */
    /* Supervision of the node daemons (launch_job_sup.c): a daemon that
     * dies is started again on its node after daemon_backoff_ns, doubling
     * per death up to daemon_backoff_max_ns; the death that makes
     * daemon_restarts within daemon_window_ns (counted from the first of
     * them) pauses it for daemon_pause_ns instead.  daemon_exclude: a
     * telemd or telem_dictd that dies fails its node and the other
     * daemons are not restarted (the rule before supervision). */
    int daemon_exclude;
    int daemon_restarts;
    int64_t daemon_window_ns;
    int64_t daemon_pause_ns;
    int64_t daemon_backoff_ns;
    int64_t daemon_backoff_max_ns;
    const char *const *program; /* argv, NULL-terminated */
    const char *dump_dir;       /* --dump: a dump of the job's history is
                                   written there when the job ends, before
                                   the daemons stop; NULL: none */
} launch_job_config_t;

typedef struct launch_job launch_job_t;

/* Fills the defaults: level 2, grace 5 s, heartbeat every 1 s with a
 * 1 s deadline and 3 misses, start timeout 30 s, node defaults of
 * launch_state_config_defaults(); daemons restarted after 1 s doubling up
 * to 60 s, paused 300 s at the 5th death within 300 s. */
void launch_job_config_defaults(launch_job_config_t *cfg);

/* Prepares a job: checks the node configuration against the source,
 * prepares the run directory and <rundir>/launch (refusing one where
 * another launcher runs), binds the restart request socket, blocks the
 * signals above.  Takes the source (nulls *source_p) in every case.  The
 * strings of `cfg` must outlive the job.  Returns the job, or NULL with a
 * sentence in `why` and *err (err may be NULL): TELEM_EINVAL (configuration), TELEM_ENOTFOUND
 * (telemd, or telem_collect when asked for, missing from bindir; checked
 * for local nodes), TELEM_ESTATE (another launcher), TELEM_EIO or
 * TELEM_ENOMEM. */
launch_job_t *launch_job_new(const launch_job_config_t *cfg,
                             launch_source_t **source_p,
                             char *why, size_t why_size, int *err);

/* Runs the job to its end and stops everything it started.  Returns a
 * launch_job_exit_t, or 128 + the signal that stopped it. */
int launch_job_run(launch_job_t *self);

/* Asks for a restart excluding the nodes named (n may be 0: restart with
 * no node to blame, which the boot-loop brake allows once).  `trigger`
 * names who asks (a detector, "request"), `why` is shown in the restart
 * line.  The restart request socket calls it for the watcher's restart
 * message (after checking that the job is resilient; called directly on
 * a job that is not, it ends the job like any failure).  Returns 0,
 * TELEM_ENOTFOUND (a name is not a node of the job; nothing is done) or
 * TELEM_ESTATE (the job is ending). */
int launch_job_request_restart(launch_job_t *self, const char *const *names,
                               size_t n, const char *trigger, const char *why);

/* Frees the job (after launch_job_run(), or instead of it: then nothing was
 * started); accepts NULL or a pointer to NULL; nulls the pointer. */
void launch_job_destroy(launch_job_t **self_p);

#endif
