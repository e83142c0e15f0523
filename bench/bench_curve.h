/* bench_curve.h - the parts of bench_curve (what CURVE costs telem), shared
 * between its files (bench/ only).
 *
 * bench_curve measures each figure twice in one run, over plain TCP and
 * over CURVE with the job's key, and prints them side by side.  The parts:
 *   bench_curve_node.c  ac_query and the watcher's tick against real telemd
 *                       processes (with --keys and without)
 *   bench_curve_dict.c  the dictionary's pipelined put/get against real
 *                       telem_dictd processes
 *   bench_curve_wire.c  raw libzmq on loopback TCP: PUSH/PULL of 64-sample
 *                       batches
 *   bench_curve_storm.c a storm of 1,000 DEALERs connecting to one ROUTER
 *   bench_curve_proc.c  starting and stopping those daemons
 * Each part appends rows to the run's table (bcurve_table_t); main prints
 * it.  The in-process CURVE servers (wire) live in czmq's context, where
 * the process's ZAP handler (telem_zap.h) answers for them, as in a
 * daemon.
 */
#ifndef BENCH_CURVE_H
#define BENCH_CURVE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "telem_keys.h"

/* ---- the table --------------------------------------------------------- */

#define BCURVE_ROWS_MAX 24

/* One figure.  plain/curve < 0: no figure (a timeout: `timed_out` says
 * which side, bit 0 plain, bit 1 CURVE).  `rate` figures (higher is
 * better) get the ratio plain/CURVE; times get CURVE/plain: either way
 * the ratio is how many times worse CURVE is. */
typedef struct {
    const char *id;             /* short key, for bench_curve.sh */
    const char *what;           /* the figure, with its unit */
    double plain, curve;
    int rate;
    int timed_out;
    const char *target;         /* NULL: reported only */
    int met;                    /* when target is set */
    double limit;               /* a timeout's bound, same unit */
} bcurve_row_t;

typedef struct {
    bcurve_row_t row[BCURVE_ROWS_MAX];
    int n;
} bcurve_table_t;

/* Appends a copy of *row (strings are borrowed: use literals). */
void bcurve_add(bcurve_table_t *t, const bcurve_row_t *row);

/* ---- what every part is handed ----------------------------------------- */

typedef struct {
    const char *argv0;          /* to find telemd and telem_dictd beside us */
    const char *dir;            /* this run's private directory */
    const char *keys_dir;       /* the job's key directory (DIR/job.key) */
    const telem_keys_t *keys;   /* loaded from it */
    const char *only;           /* run only parts named here, or NULL */
    double storm_limit_s;       /* bound on each connection storm */
} bcurve_ctx_t;

/* Sets $TELEM_KEYS for the clients opened next in this process: the key
 * directory when `curve`, else empty (no keys, on purpose). */
void bcurve_client_keys(const bcurve_ctx_t *ctx, int curve);

void bcurve_part_query(const bcurve_ctx_t *ctx, bcurve_table_t *t);
void bcurve_part_watch(const bcurve_ctx_t *ctx, bcurve_table_t *t);
void bcurve_part_push(const bcurve_ctx_t *ctx, bcurve_table_t *t);
void bcurve_part_dict(const bcurve_ctx_t *ctx, bcurve_table_t *t);
void bcurve_part_storm(const bcurve_ctx_t *ctx, bcurve_table_t *t);

/* ---- raw sockets (bench_curve_wire.c) ---------------------------------- */

/* A libzmq socket of `type` in czmq's context (where the ZAP handler
 * runs), linger 0, a CURVE server when `keys` is given, with listen
 * backlog `backlog` (0: libzmq's default), bound to `ep`; the bound
 * endpoint goes to out.  Exits on failure. */
void *bcurve_server(int type, const telem_keys_t *keys, int backlog,
                    const char *ep, char *out, size_t size);

/* A libzmq socket of `type` in `zctx`, linger 0, a CURVE client when
 * `keys` is given, connected to `ep` (NULL: not yet).  Exits on
 * failure. */
void *bcurve_client(void *zctx, int type, const telem_keys_t *keys,
                    const char *ep);

/* ---- daemons ----------------------------------------------------------- */

#define BCURVE_EP_MAX 256

/* A daemon started by the benchmark, and the endpoints it printed. */
typedef struct {
    pid_t pid;
    FILE *out;                  /* its stdout, kept open until it stops */
    char ingest[BCURVE_EP_MAX]; /* telemd: ingest, ctl (ipc), query (TCP) */
    char ctl[BCURVE_EP_MAX];
    char query[BCURVE_EP_MAX];
    char endpoint[BCURVE_EP_MAX];   /* telem_dictd: its TCP endpoint */
} bcurve_daemon_t;

/* Starts a telemd for `node` under `rundir`, bound on TCP 127.0.0.1, no
 * log, level 1, an hour-and-more window: with --keys when `curve`, else
 * with $TELEM_KEYS empty.  Waits for 'ready'; exits on failure.  The
 * daemon gets SIGTERM if this process dies first. */
void bcurve_telemd(const bcurve_ctx_t *ctx, const char *rundir,
                   const char *node, int curve, bcurve_daemon_t *d);

/* Starts a telem_dictd (one node, one copy, --sync none, --bind
 * 127.0.0.1) under `rundir`, registered in `nodefile`. */
void bcurve_dictd(const bcurve_ctx_t *ctx, const char *rundir,
                  const char *nodefile, int curve, bcurve_daemon_t *d);

/* SIGTERM, then SIGKILL after 5 s; reaps it.  Accepts a stopped one. */
void bcurve_stop(bcurve_daemon_t *d);

#endif
