/* bench_fanin.h - the parts of bench_fanin (the fan-in benchmark on a
 * cluster of namespaced nodes) that talk to the nodes: the feeder, the
 * three fan-outs it times, and the per-operation sample sets.  bench_fanin.c
 * runs the job under telem_launch and times restarts and start-up.
 */
#ifndef BENCH_FANIN_H
#define BENCH_FANIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ac.h"
#include "watch.h"

#define FANIN_DEVICES 8             /* GPU-like devices a node */
#define FANIN_METRIC "cg_dgemm_seconds"
#define FANIN_QUERY_SERIES 10       /* node metrics asked per node (a) */

/* One operation's samples: wall time and the fanning-out process's CPU
 * time (user + system), both in ns. */
typedef struct {
    const char *name;
    int64_t *wall;
    int64_t cpu_total;
    size_t n, cap;
    size_t bad;                      /* samples where a node was missing */
} fanin_op_t;

void fanin_op_init(fanin_op_t *op, const char *name, size_t cap);
void fanin_op_add(fanin_op_t *op, int64_t wall, int64_t cpu);
void fanin_op_free(fanin_op_t *op);

/* The nodes' ipc ingest and control sockets, from the launcher's run
 * directory (path-based ipc reaches every namespace's telemd). */
typedef struct fanin_feed fanin_feed_t;
fanin_feed_t *fanin_feed_new(const char *rundir, const char *const *nodes,
                             size_t n);
void fanin_feed_destroy(fanin_feed_t **self_p);

/* Writes round `r` of every node's FANIN_DEVICES device timings
 * (FANIN_METRIC, tags gpu, group=cg, backend=cpu: what telem_collect's cpu
 * backend records and slowgpu reads) stamped ts_ns, device 3 of node
 * `slow` 20 % slower (slow < 0: none), and waits until every node stored
 * it.  Exits through bench_die() on failure. */
void fanin_feed_round(fanin_feed_t *self, int r, int64_t ts_ns, long slow);

/* (a) one ac_query of the newest point of FANIN_QUERY_SERIES node metrics
 * on every node; returns the number of series, *missing the nodes that did
 * not answer. */
size_t fanin_query_latest(ac_t *ac, size_t *missing);

/* (c) one POST /api/query to telem_agg at `url` (http://HOST:PORT/...)
 * with bearer `token`: `sum:1m-avg:FANIN_METRIC` over the last hour.
 * Returns the HTTP status (0: no answer); *bytes the body's size. */
int fanin_agg_query(const char *url, const char *token, int64_t now_s,
                    size_t *bytes);

/* CPU time of process `pid` (every thread, user + system) in ns from
 * /proc/PID/task/TID/schedstat, or -1.  A thread that ended between two
 * readings takes its time with it: for long-lived daemons only. */
int64_t fanin_proc_cpu_ns(long pid);

/* This process's CPU time in ns (every thread). */
int64_t fanin_self_cpu_ns(void);

/* ---- relay mode (bench_fanin_relay.c) ---------------------------------- */

typedef struct {
    const char *template_;           /* telem_launch's --exec-template */
    const char *rundir, *bindir;
    char **names;                    /* the job's nodes, n1 first */
    size_t n;
    size_t group;                    /* K: nodes a relay */
    int wait_s;                      /* bound of each wait */
} fanin_relay_opts_t;

typedef struct fanin_relays fanin_relays_t;

/* Starts one telem_relay per group of o->group nodes (r1 = the first K
 * nodes...) in the namespace of its first node, bound to that node's
 * address, with the job's key and node file; waits for every "ready" and
 * then writes RUNDIR/relays (0600, temporary file + rename).  Exits
 * through bench_die() on failure. */
fanin_relays_t *fanin_relays_start(const fanin_relay_opts_t *o);

/* Removes RUNDIR/relays, stops every relay (SIGTERM; SIGKILL after 10 s)
 * and frees; returns how many did not exit 0. */
size_t fanin_relays_stop(fanin_relays_t **self_p);

size_t fanin_relays_count(const fanin_relays_t *self);

/* The CPU time of every relay together, ns. */
int64_t fanin_relays_cpu_ns(const fanin_relays_t *self);

/* A telem_agg of the job (its telemd_nodes, token and key) started on the
 * first node with $TELEM_RELAYS=`relays` ("" : relays off) and run
 * directory `dir` (made here); waits for its URL (into url).  Its pid. */
pid_t fanin_agg_start(const fanin_relay_opts_t *o, const char *relays,
                      const char *dir, char *url, size_t size);

/* SIGTERM, then SIGKILL after wait_s; reaps.  0 if it exited 0. */
int fanin_stop_pid(pid_t pid, int wait_s);

/* Queries every series of FANIN_METRIC in [start, end] (realtime ns)
 * through both clients; 0 when both answered with every node and the same
 * series and points (an order-free digest), else -1; why says what each
 * got. */
int fanin_same_answers(ac_t *direct, ac_t *relayed, int64_t start,
                       int64_t end, char *why, size_t size);

/* ESTABLISHED TCP connections process `pid` holds to any of the
 * endpoints `eps` (tcp://A.B.C.D:PORT; neps 0: to anywhere). */
size_t fanin_tcp_conns(long pid, const char *const *eps, size_t neps);

#endif
