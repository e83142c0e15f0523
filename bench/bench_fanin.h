/* bench_fanin.h - the parts of bench_fanin (the fan-in benchmark on a
 * cluster of namespaced nodes) that talk to the nodes: the feeder, the
 * three fan-outs it times, and the per-operation sample sets.  bench_fanin.c
 * runs the job under telem_launch and times restarts and start-up.
 */
#ifndef BENCH_FANIN_H
#define BENCH_FANIN_H

#include <stddef.h>
#include <stdint.h>

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

#endif
