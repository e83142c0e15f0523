/* launch_job_int.h - what the files of the job supervisor share: the job
 * structure, its processes and nodes.  Not a public header.
 *
 *   launch_job.c        life cycle, phases, failures and restarts
 *   launch_job_sup.c    supervision of the node daemons: restart with
 *                       back-off, pause, report
 *   launch_job_loop.c   creation, the loop, signals, heartbeat, requests
 *   launch_job_start.c  what is started on the nodes, with which words
 *   launch_job_procs.c  the process table: spawn, exit, stop, telemd output
 *   launch_job_step.c   one kind on many nodes as one Slurm job step
 *   launch_job_files.c  run directory files and the program's environment
 *   launch_job_dict.c   the job's distributed dictionary: forming,
 *                       re-forming
 *   launch_job_req.c    restart requests from the watcher's socket
 *   launch_job_relay.c  the relays (telem_relay) and the relays file
 * Every file exports the launch_job_ prefix of launch_job.h.  Calls go one
 * way, down this order: launch_job_loop.c, launch_job_req.c,
 * launch_job.c, launch_job_sup.c, launch_job_start.c, launch_job_procs.c,
 * launch_job_step.c, then launch_job_dict.c and launch_job_files.c; no
 * file calls one above it (the process table hands exits and output lines
 * up as return values and through self->on_line and self->on_exit;
 * supervision reports a node it finds lost through self->on_node_lost).
 */
#ifndef LAUNCH_JOB_INT_H
#define LAUNCH_JOB_INT_H

#include <czmq.h>
#include <stdio.h>
#include <sys/types.h>

#include "ac.h"
#include "launch_argv.h"
#include "launch_env.h"
#include "launch_job.h"
#include "launch_proc.h"
#include "telem_keys.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_zap.h"

struct ddict;
typedef struct launch_job_relays launch_job_relays_t;
typedef struct launch_job_step launch_job_step_t;   /* launch_job_step.c */

typedef enum {
    LAUNCH_ROLE_TELEMD = 0,
    LAUNCH_ROLE_DICTD = 1,
    LAUNCH_ROLE_COLLECT = 2,
    LAUNCH_ROLE_WATCH = 3,
    LAUNCH_ROLE_PROGRAM = 4,
    LAUNCH_ROLE_AGG = 5,
    LAUNCH_ROLE_RELAY = 6,      /* not supervised (launch_job_relay.c) */
    LAUNCH_ROLE_DETCMD = 7      /* --detector-cmd k runs in role
                                   LAUNCH_ROLE_DETCMD + k, k <
                                   LAUNCH_DETCMD_MAX: each command is a
                                   daemon of its own for supervision */
} launch_job_role_t;

/* Whether `role` is one of the --detector-cmd roles. */
#define LAUNCH_ROLE_IS_DETCMD(role) \
    ((int) (role) >= LAUNCH_ROLE_DETCMD \
     && (int) (role) < LAUNCH_ROLE_DETCMD + LAUNCH_DETCMD_MAX)

typedef struct {
    pid_t pid;                  /* also the process group; 0 for a task of
                                   a step (its srun has the pid) */
    size_t node;
    launch_job_role_t role;
    int stopping;               /* the launcher asked it to stop */
    int killed;                 /* ... and then sent SIGKILL */
    int64_t kill_at_ns;         /* SIGKILL when still running by then */
    int respawn;                /* started again on its node once it has
                                   stopped (launch_job_sup_respawn()) */
    int out_fd;                 /* telemd's stdout pipe, -1 when none */
    char line[1024];            /* partial output line */
    size_t len;
    launch_job_step_t *step;    /* the Slurm step it is a task of; NULL:
                                   a process of its own */
    size_t rank;                /* its rank in the step */
    long task_pid;              /* a task's process on its node (telem_step
                                   printed it); 0 while unknown */
    int sent;                   /* a task: its stop signal was sent */
    char how[160];              /* how a task ended, when srun said more
                                   than a wait status does; "" */
} launch_job_proc_t;

/* What supervision knows of one daemon of one node (launch_job_sup.c). */
typedef enum {
    LAUNCH_SUP_STOPPED = 0,     /* not started, or not supervised now */
    LAUNCH_SUP_RUNNING = 1,     /* up (telemd, telem_dictd: ready) */
    LAUNCH_SUP_STARTING = 2,    /* restarted, not ready yet */
    LAUNCH_SUP_WAITING = 3,     /* dead, restarted when the back-off ends */
    LAUNCH_SUP_PAUSED = 4       /* dead too often, tried again later */
} launch_sup_state_t;

#define LAUNCH_SUP_ROLES (LAUNCH_ROLE_DETCMD + LAUNCH_DETCMD_MAX)
                                /* indexed by launch_job_role_t; the
                                   relay's slot is never used */

typedef struct {
    struct launch_job *job;     /* for the timers */
    size_t node;
    launch_job_role_t role;
    launch_sup_state_t state;
    int up_once;                /* was up once in this job */
    int timer;                  /* back-off, pause or start deadline; -1 */
    int deaths;                 /* in the window that started at ... */
    int64_t window_start_ns;    /* ... this time (monotonic) */
    long restarts;              /* restarts in this job */
    int64_t until_rt_ns;        /* WAITING, PAUSED: when (realtime) */
    char last[128];             /* how it last ended */
} launch_job_sup_t;

typedef struct {
    launch_job_proc_t *telemd;          /* NULL when not running */
    launch_job_proc_t *program;         /* NULL when not running */
    launch_job_proc_t *dictd;           /* NULL when not running */
    int ready;                  /* telemd printed "ready" */
    int dict_ready;             /* telem_dictd printed "ready" */
    char dict_endpoint[TELEM_PATH_MAX]; /* telem_dictd's, as it printed */
    long dict_keep_port;        /* a restarted telem_dictd binds this TCP
                                   port again (its peers and the dict
                                   node file keep the endpoint); 0: any */
    int done;                   /* the program ended 0 in this run */
    int misses;                 /* heartbeat misses in a row */
    int64_t started_ns;         /* when telemd was started (monotonic) */
    char endpoint[TELEM_PATH_MAX];  /* query endpoint */
    char metrics[TELEM_NAME_MAX + 16]; /* /metrics as HOST:PORT; "" none */
    char reported[TELEM_NAME_MAX + 1]; /* node name telemd printed */
    long keep_port;             /* a restarted telemd binds this TCP port
                                   again (its last one), 0: any */
    char prev_endpoint[TELEM_PATH_MAX]; /* before telemd's restart */
    launch_job_sup_t sup[LAUNCH_SUP_ROLES];
} launch_job_node_t;

typedef enum {
    LAUNCH_PHASE_STARTING = 0,      /* waiting for the active nodes' telemd */
    LAUNCH_PHASE_RUNNING = 1,       /* the program runs */
    LAUNCH_PHASE_STOPPING = 2,      /* a restart stops the program */
    LAUNCH_PHASE_BACKOFF = 3,       /* a restart waits before starting */
    LAUNCH_PHASE_ENDING = 4         /* everything is being stopped */
} launch_job_phase_t;

/* The restart in progress, for its one line. */
typedef struct {
    int pending;                /* started, its line not printed yet */
    long number;
    char trigger[256];
    char nodes[512];
    char promoted[512];
    char why[TELEM_TEXT_MAX];   /* whole sentences, or "; and N more" */
    unsigned why_dropped;       /* sentences left out of why */
    int64_t t0, t_stopped, t_reformed, t_backoff_end;
    int64_t backoff_ns;
    char reform_error[160];     /* the re-form failed: why; "" when not */
} launch_job_restart_t;

struct launch_job {
    launch_job_config_t cfg;
    launch_source_t *source;
    launch_state_t *state;
    launch_job_node_t *nodes;           /* launch_state_size() of them */
    size_t n;
    launch_job_proc_t **procs;          /* running processes */
    size_t nprocs, cap;
    launch_job_step_t **steps;          /* running Slurm steps */
    size_t nsteps, steps_cap;
    pid_t *helpers;             /* one-node sruns signalling one task */
    size_t nhelpers, helpers_cap;
    unsigned step_seq;          /* steps started in this job */
    int steps_due;              /* a stop of tasks is to be decided */
    FILE *step_log;             /* launch/steps.log, opened at first use */
    zloop_t *loop;
    zsock_t *restart_sock;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    zactor_t *hb;               /* the heartbeat: owns the analysis client
                                   and runs its status fan-out off the
                                   loop (launch_job_loop.c) */
    int hb_busy;                /* a status round is under way */
    int hb_due;                 /* a period passed during it: the next
                                   round starts when it ends */
    int hb_sent;                /* the actor was given a node list */
    int hb_fresh;               /* its sockets are new: no miss counted */
    unsigned hb_gen;            /* node list generation; results of an
                                   older one are dropped */
    int ac_stale;               /* membership changed since the list was
                                   given */
    int sigfd;
    int lock_fd;
    launch_job_phase_t phase;
    int exit_code;              /* decided when ENDING starts */
    int timer;                  /* the phase's zloop timer, -1: none */
    int runs;                   /* times the program was started */
    int dict;                   /* telem_dictd runs on every node */
    int dict_formed;            /* the first map was formed */
    struct ddict *dd;           /* the re-form coordinator's handle, kept
                                   for the job: its sockets to the servers
                                   stay connected between re-forms */
    launch_job_restart_t rs;
    FILE *restart_log;
    FILE *daemon_log;           /* launch/daemons.log */
    telem_ratelimit_t rl;       /* bad restart requests */
    uint64_t bad_requests;      /* restart requests refused as malformed */
    char rundir[TELEM_PATH_MAX];
    char launch_dir[TELEM_PATH_MAX];
    char nodefile[TELEM_PATH_MAX];
    char dict_nodefile[TELEM_PATH_MAX];    /* telem_dictd registers here */
    char restart_ep[TELEM_PATH_MAX + 32];  /* the one the nodes are told:
                                              ipc, or TCP off this host */
    char restart_ipc[TELEM_PATH_MAX + 32]; /* always bound */
    char prom_config[TELEM_PATH_MAX];      /* absolute; "" when none */
    char prom_targets[TELEM_PATH_MAX + 16];
    char bin_telemd[TELEM_PATH_MAX];
    char bin_dictd[TELEM_PATH_MAX];
    char bin_collect[TELEM_PATH_MAX];
    char bin_watch[TELEM_PATH_MAX];
    char bin_agg[TELEM_PATH_MAX];
    char bin_step[TELEM_PATH_MAX];  /* telem_step; "" when not there: every
                                       node's process is then its own srun */
    launch_job_relays_t *relays;   /* launch_job_relay.c; NULL: none yet */
    size_t agg_announced;       /* 1 + the node whose tunnel line was
                                   printed last (0: none yet) */
    /* The job's secrets (launch_job_keys.c). */
    telem_keys_t *keys;         /* RUNDIR/keys/job.key */
    telem_zap_t *zap;           /* checks the restart socket's clients */
    char keys_dir[TELEM_PATH_MAX];
    char token_file[TELEM_PATH_MAX];   /* RUNDIR/keys/agg.token; "" when
                                          the user gave --agg-token-file */
    char agg_token[65];         /* its token, for the tunnel line */
    /* Each line of a daemon's output, handed up by launch_job_procs.c
     * (launch_job_on_line), so that the process table never calls up. */
    void (*on_line)(launch_job_t *self, launch_job_proc_t *p,
                    const char *line);
    /* A task of a step that ended while its srun runs on (status as from
     * waitpid; p->how may say more), out of the table: launch_job_on_exit
     * installed the same way.  p is freed when it returns. */
    void (*on_exit)(launch_job_t *self, launch_job_proc_t *p, int status);
    /* A node supervision finds lost (a daemon that cannot be started
     * again there): launch_job_node_failed(), installed the same way. */
    void (*on_node_lost)(launch_job_t *self, size_t i, const char *trigger,
                         const char *why);
};

/* ---- launch_job_keys.c --------------------------------------------------- */

/* Makes the job's key pair in RUNDIR/keys, sets TELEM_KEYS in the
 * launcher's own environment, starts the ZAP handler and, unless the user
 * gave --agg-token-file, writes telem_agg's token.  0, or an error with
 * a sentence in why. */
int launch_job_keys_open(launch_job_t *self, char *why, size_t why_size);

/* The token file telem_agg is given (the user's, or the job's own). */
const char *launch_job_keys_token_file(const launch_job_t *self);

/* Stops the ZAP handler and removes the key and the token.  Safe to call
 * when nothing was made. */
void launch_job_keys_close(launch_job_t *self);

/* ---- launch_job_procs.c -------------------------------------------------- */

/* Starts `argv` in role `role` for node `node` through the source, with
 * env `env` (and its TELEM_* keys `telem_kv` for sources that do not carry
 * the environment).  The standard output of telemd, telem_dictd and
 * telem_relay is piped into the loop, their standard error goes to
 * <launch_dir>/<node>.<role>.log;
 * the program, the collectors and the watcher write to the launcher's own
 * output.  Returns the process, or NULL with a log line. */
launch_job_proc_t *launch_job_spawn(launch_job_t *self, size_t node,
                                    launch_job_role_t role,
                                    const char *const *argv,
                                    const launch_env_t *env,
                                    const char *const *telem_kv);

/* Starts the program on nodes idx[0..n) at once (one Slurm step, else
 * launch_proc_spawn_many) with launch_job_env()'s environment for each,
 * and sets each node's `program` (NULL where it could not be started:
 * logged).  Returns how many started. */
size_t launch_job_spawn_programs(launch_job_t *self, const size_t *idx,
                                 size_t n);

/* Whether one kind started on many nodes is one Slurm step: the source is
 * Slurm and telem_step is in the binaries' directory. */
int launch_job_uses_steps(const launch_job_t *self);

/* Starts `role` on nodes idx[0..n), node idx[k] with the words argvs[k]
 * and launch_job_env()'s environment: one Slurm step
 * (launch_job_uses_steps()), else launch_job_spawn() for each.  Sets
 * recs[k] (NULL where it could not be started).  Returns how many
 * started. */
size_t launch_job_spawn_nodes(launch_job_t *self, launch_job_role_t role,
                              const size_t *idx, size_t n,
                              const launch_argv_t *argvs,
                              launch_job_proc_t **recs);

/* The address node i's telemd and telem_dictd bind: --bind, else the
 * node's own address from the source (Slurm's NodeAddr), else NULL (their
 * default, 127.0.0.1). */
const char *launch_job_bind_addr(const launch_job_t *self, size_t i);

/* Starts telemd on every node, then telem_dictd when the job uses the
 * dictionary, each kind on all nodes at once (one Slurm step under
 * Slurm).  Returns 0 or TELEM_EIO (some node's could not be started:
 * logged) or TELEM_ENOMEM. */
int launch_job_start_daemons(launch_job_t *self);

/* Starts telemd on node i.  Returns 0 or a negative error (logged). */
int launch_job_start_telemd(launch_job_t *self, size_t i);

/* Starts telem_dictd on node i when the job uses the dictionary, its
 * first map being the job's nodes; its standard output (endpoint, then
 * "ready") is piped into the loop.  Returns 0 or a negative error
 * (logged). */
int launch_job_start_dictd(launch_job_t *self, size_t i);

/* Starts one daemon of `role` (telemd, telem_dictd, telem_collect,
 * telem_watch or telem_agg) on node i, as the functions below do; for the
 * observers only what they would start.  Returns 0 or a negative error
 * (logged): TELEM_EIO when the command could not be started. */
int launch_job_start_role(launch_job_t *self, size_t i, launch_job_role_t role);

/* Starts, from node i, what observes the whole active set and so is
 * restarted with the program: telem_collect (which starts a collector per
 * device on every node of the node file) when collectors were asked for,
 * telem_agg (launch_job_start_agg; it alone may outlive a restart), and
 * telem_watch when detectors were. */
void launch_job_start_observers(launch_job_t *self, size_t i);

/* Starts telem_agg on node i when the level is 1 or more, it is not
 * turned off (--no-agg), it is built and none runs already (one whose node
 * stayed active keeps serving across a restart: it follows the node file
 * itself, so its address and its dashboards' connections survive, and an
 * /api/reboot that asked for the restart gets its answer); prints the SSH
 * tunnel line the first time. */
void launch_job_start_agg(launch_job_t *self, size_t i);

/* Stops the telem_agg whose node is no longer active (as launch_job_stop;
 * returns how many were signalled). */
size_t launch_job_stop_agg_off(launch_job_t *self);

/* Sends SIGTERM to every process matching the filter (role < 0: any;
 * node < 0: any) and marks it stopping, to be killed when the grace period
 * ends (the caller arms a timer calling launch_job_kill_due()).  Returns how
 * many were signalled. */
size_t launch_job_stop(launch_job_t *self, int role, long node);

/* SIGKILL to every stopping process whose grace period ended by
 * `now_ns` (monotonic). */
void launch_job_kill_due(launch_job_t *self, int64_t now_ns);

/* zloop timer handler (arg: the job) calling launch_job_kill_due() now;
 * returns launch_job_loop_result(). */
int launch_job_on_kill_due(zloop_t *loop, int timer_id, void *arg);

/* Number of processes running in role `role` (< 0: any). */
size_t launch_job_count(const launch_job_t *self, int role);

/* Number of those the launcher asked to stop. */
size_t launch_job_count_stopping(const launch_job_t *self, int role);

/* Reaps one exited child without waiting: returns its process, out of the
 * table with its output closed (the caller hands it to launch_job_on_exit()
 * and frees it), with its wait status in *status; NULL when no child of
 * the table is left to reap (children not in the table are reaped and
 * their groups killed on the way). */
launch_job_proc_t *launch_job_reap(launch_job_t *self, int *status);

/* Role names for logs: "telemd", "dictd", "collect", "watch", "program",
 * "agg", "relay", "detcmd1".."detcmd4". */
const char *launch_job_role_name(launch_job_role_t role);

/* Stops the loop's polling of output pipe *fd, closes it and sets it to
 * -1; nothing when it is -1 already. */
void launch_job_unwatch_fd(launch_job_t *self, int *fd);

/* ---- launch_job_step.c --------------------------------------------------- */

/* How a step hands up a task that ended: the process table takes it out
 * and calls self->on_exit. */
typedef void launch_job_step_end_fn(launch_job_t *self, launch_job_proc_t *p,
                                    int status);

/* Starts `role` on nodes idx[0..n) as one Slurm step: writes the step
 * file (argvs[k] and the TELEM_* keys kvs[k] of node idx[k]) and the host
 * file, sets SLURM_HOSTFILE in `env` (srun's environment) and spawns
 * srun, its output polled by the loop.  Returns the step, whose n task
 * records (launch_job_step_task()) the caller enters into the table, or
 * NULL (logged).  Tasks that end go to `end`. */
launch_job_step_t *launch_job_step_start(launch_job_t *self,
                                         launch_job_role_t role,
                                         const size_t *idx, size_t n,
                                         const launch_argv_t *argvs,
                                         const launch_argv_t *kvs,
                                         launch_env_t *env,
                                         launch_job_step_end_fn *end);

/* Task `rank`'s record, NULL once it ended. */
launch_job_proc_t *launch_job_step_task(const launch_job_step_t *st,
                                        size_t rank);

/* Forgets task `rank` (its record is freed by the caller). */
void launch_job_step_forget(launch_job_step_t *st, size_t rank);

/* Sends the stop signal for every task marked stopping: to srun when
 * every task of its step stops, else to each such task alone on its
 * node (telem_step --signal through a one-node srun). */
void launch_job_step_stop(launch_job_t *self);

/* SIGKILL for tasks whose grace ended by now_ns: to srun's group when it
 * is the whole step; a task alone is killed on its node and handed up as
 * ended (no longer waited for). */
void launch_job_step_kill(launch_job_t *self, int64_t now_ns);

/* A child `pid` was reaped with `status`: when it is a step's srun, what
 * is left of its output is read, every task it did not report ended is
 * handed up, and the step is freed; a signalling helper is forgotten.
 * Returns 1 when pid was one of them, else 0. */
int launch_job_step_reaped(launch_job_t *self, pid_t pid, int status);

/* SIGKILL to every step's srun and every helper, their files removed,
 * all freed (launch_job_destroy; the task records are the table's). */
void launch_job_step_close_all(launch_job_t *self);

/* ---- launch_job_sup.c ---------------------------------------------------- */

/* Prepares the supervision records of every node (no timer). */
void launch_job_sup_init(launch_job_t *self);

/* Daemon p (not asked to stop, its node not DOWN) died, `how` as
 * launch_proc_status_describe() says.  Returns 1 when supervision took it
 * (a restart after a back-off or a pause is due, or its node was reported
 * lost through self->on_node_lost), 0 when the caller applies the rule
 * without supervision (daemon_exclude; a telemd or telem_dictd that never
 * came up; the program). */
int launch_job_sup_on_death(launch_job_t *self, const launch_job_proc_t *p,
                            const char *how);

/* telemd or telem_dictd (role) of node i printed "ready".  After a
 * restart: prints the restart's line, rewrites the node files (telemd),
 * starts telem_watch again when telemd's endpoint changed, and lets a
 * telem_dictd rejoin the dictionary by a re-form (its failure fails the
 * node). */
void launch_job_sup_on_ready(launch_job_t *self, size_t i,
                             launch_job_role_t role);

/* A process stopped for a respawn ended: starts it again on its node. */
void launch_job_sup_respawn(launch_job_t *self, const launch_job_proc_t *p);

/* Forgets the observers' (telem_collect, telem_watch, the detector
 * commands) deaths and pending
 * restarts: a restart of the job starts them afresh.  telem_agg, which
 * outlives restarts, is forgotten only with its node. */
void launch_job_sup_reset_observers(launch_job_t *self);

/* Forgets node i's daemons (it went DOWN): no restart is due there. */
void launch_job_sup_forget_node(launch_job_t *self, size_t i);

/* ---- launch_job_relay.c -------------------------------------------------- */

/* Makes the relays fit the active nodes (cfg.relays): keeps the relays
 * whose group is unchanged, stops the others, starts the missing ones on
 * their group's first node; the relays files are rewritten once every
 * relay is ready or the start deadline passed, and at once when relays
 * were stopped.  Call after the node file is written. */
void launch_job_relays_update(launch_job_t *self);

/* One line of a relay's output ("query", "ipc", "ready"). */
void launch_job_relays_line(launch_job_t *self, launch_job_proc_t *p,
                            const char *line);

/* A relay ended (`how` as launch_proc_status_describe() says): its group
 * leaves the relays file; it is not restarted before the next update. */
void launch_job_relays_exit(launch_job_t *self, launch_job_proc_t *p,
                            const char *how);

/* Removes the relays files and frees the relays' records (their
 * processes are stopped with every other one). */
void launch_job_relays_close(launch_job_t *self);

/* ---- launch_job_files.c -------------------------------------------------- */

/* Creates <rundir>/launch, takes its lock and opens the restart log.
 * Returns 0, or TELEM_ESTATE/TELEM_EIO with a sentence in why. */
int launch_job_files_open(launch_job_t *self, char *why, size_t why_size);

/* Writes the node file (active nodes), <launch_dir>/job (all nodes),
 * <launch_dir>/telemd_nodes and the Prometheus files, each atomically.
 * Returns 0 or TELEM_EIO (logged). */
int launch_job_files_write(launch_job_t *self);

/* With a Prometheus configuration asked for: writes it (one scrape job,
 * "telem", reading its targets from a file beside it) and the targets
 * file (every node whose telemd serves /metrics, labels node and
 * telem_state), each atomically; Prometheus re-reads the targets by
 * itself.  Returns 0 (also when none is asked for) or TELEM_EIO
 * (logged). */
int launch_job_files_write_prometheus(launch_job_t *self);

/* Removes the node file, the job file and the lock; closes the log; leaves
 * the Prometheus configuration with no target. */
void launch_job_files_close(launch_job_t *self);

/* --dump DIR: the job's history into DIR/job-<time>-<pid>.tdump, from
 * every node whose telemd runs (launch_job_dump.c); logs what it wrote
 * or why not.  Nothing without cfg.dump_dir. */
void launch_job_dump(launch_job_t *self);

/* Appends one line to the restart log. */
void launch_job_files_log_restart(launch_job_t *self, const char *line);

/* Appends one line to launch/daemons.log (the daemons' deaths, restarts
 * and pauses), after its UTC time. */
void launch_job_files_log_daemon(launch_job_t *self, const char *line);

/* Appends one line to launch/steps.log (what srun says of the job's
 * steps), after its UTC time; the file is made (emptied) at first use. */
void launch_job_files_log_step(launch_job_t *self, const char *line);

/* The descriptor of launch/steps.log (opened if need be), for helpers'
 * output; -1 when it cannot be opened. */
int launch_job_files_step_log_fd(launch_job_t *self);

/* Writes launch/daemons atomically: every supervised daemon, its state,
 * pid, deaths in the window, restarts and when it is tried again.
 * Returns 0 or TELEM_EIO (logged). */
int launch_job_files_write_daemons(launch_job_t *self);

/* A base environment for node i and role: the launcher's own, plus
 * TELEM_RUNDIR, TELEM_LEVEL, TELEM_NODEFILE, TELEM_LAUNCH_ENDPOINT and, for
 * the program, TELEM_NODE, TELEM_RANK, TELEM_NNODES, TELEM_RESTART_COUNT,
 * TELEM_RESTARTED.  The TELEM_* keys it set are appended to `telem_kv`.
 * NULL when out of memory. */
launch_env_t *launch_job_env(const launch_job_t *self, size_t i,
                             launch_job_role_t role,
                             launch_argv_t *telem_kv);

/* ---- launch_job_loop.c / launch_job.c ------------------------------------ */

/* ---- launch_job_dict.c --------------------------------------------------- */

/* Re-forms the dictionary on every node that is not DOWN (active and
 * reserve), through ddict_reform(), with a deadline.  Blocks the loop for
 * at most that deadline.  Returns 0 (also when the job has no
 * dictionary) or a negative error with a sentence in `why`. */
int launch_job_dict_reform(launch_job_t *self, char *why, size_t why_size);

/* Closes the handle the re-forms keep (launch_job_destroy). */
void launch_job_dict_close(launch_job_t *self);

/* Whether node i is ready for the program to start: its telemd (active
 * nodes) and its telem_dictd (every node not DOWN, when the job uses the
 * dictionary) printed "ready". */
int launch_job_node_ready(const launch_job_t *self, size_t i);

/* ---- launch_job_req.c ---------------------------------------------------- */

/* Reads one message from the restart request socket, acts on it and
 * answers it (a zloop reader; `arg` is the job). */
int launch_job_on_request(zloop_t *loop, zsock_t *sock, void *arg);

/* Returns -1 (end the loop) when the job is ending and nothing runs. */
int launch_job_loop_result(const launch_job_t *self);


/* A process ended: `status` as from waitpid.  The process is already out
 * of the table and is freed by the caller when this returns. */
void launch_job_on_exit(launch_job_t *self, launch_job_proc_t *p, int status);

/* telemd of node i printed "ready" (or failed its identity check: then
 * launch_job_node_failed() was called instead). */
void launch_job_on_ready(launch_job_t *self, size_t i);

/* The endpoint a daemon of `node` printed, as others reach it: one bound
 * to every address (tcp://0.0.0.0:PORT) through the node's name. */
void launch_job_reach_endpoint(char *out, size_t size, const char *node,
                               const char *ep);

/* One line of a daemon's standard output (telemd: "node", "query", "ctl"
 * and "ready" lines; telem_dictd: "ready"): what launch_job_new() installs
 * as self->on_line for launch_job_procs.c. */
void launch_job_on_line(launch_job_t *self, launch_job_proc_t *p,
                        const char *line);

/* Starts the daemons on every node and waits for the active ones. */
void launch_job_begin(launch_job_t *self);

/* Nodes idx[0..n) failed for `why` (one sentence naming them); `trigger`
 * names the detection ("heartbeat", ...). */
void launch_job_nodes_failed(launch_job_t *self, const size_t *idx, size_t n,
                             const char *trigger, const char *why);

/* Node `i` failed for `why`; `trigger` names the detection. */
void launch_job_node_failed(launch_job_t *self, size_t i, const char *trigger,
                            const char *why);

/* Ends the job with exit code `code` (the first call decides). */
void launch_job_end(launch_job_t *self, int code, const char *why);

#endif
