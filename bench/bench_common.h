/* bench_common.h - helpers shared by telem's benchmarks (bench/ only).
 *
 * Timing, percentiles, a private run directory per benchmark, an in-process
 * telemd, and the end-of-stream handshake (a batch carrying a fin token,
 * then TELEM_CTL_SYNC on the control socket until telemd has seen it) that
 * lets a benchmark stop its clock only once every sample has arrived.
 * Nothing here is part of telem; benchmarks are single-purpose programs and
 * exit on set-up errors with a message.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "telem_proto.h"
#include "telemd_actor.h"

/* Monotonic nanoseconds. */
int64_t bench_now_ns(void);

/* Prints "what: message" to stderr and exits 1. */
void bench_die(const char *what, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Sorts v[0..n) and returns the nearest-rank percentile p (0-100). */
int64_t bench_percentile_sorted(const int64_t *v, size_t n, double p);
void bench_sort_i64(int64_t *v, size_t n);
void bench_sort_d(double *v, size_t n);
double bench_median_d(double *v, size_t n);   /* sorts v; 0 if n is 0 */

/* Prints the header every benchmark starts with: name, date (UTC), nproc,
 * CPU model, kernel. */
void bench_print_machine(const char *bench_name);

/* Creates a fresh 0700 directory under $TMPDIR (or /tmp) into buf. */
void bench_tmpdir(char *buf, size_t size, const char *tag);

/* Removes a directory tree made by bench_tmpdir(). */
void bench_rmtree(const char *dir);

/* Starts an in-process telemd for `node` under `rundir`.  window_s is the
 * retention window; tcp non-zero also binds tcp://127.0.0.1:*.  Exits on
 * failure. */
telemd_t *bench_telemd_start(const char *rundir, const char *node, int level,
                             int64_t window_s, size_t mem_cap, int tcp);

/* One control request (DEALER, one frame) to `ctl_ep`; fills *out with the
 * decoded reply (strings point into `dec`).  Returns 0 or a telem_err_t. */
int bench_control(void *zctx, const char *ctl_ep, telem_proto_decoder_t *dec,
                  telem_ctl_op_t op, int64_t arg, int timeout_ms,
                  telem_control_reply_t *out);

/* Repeats TELEM_CTL_SYNC for `token` until telemd has seen it.  Returns 0
 * or TELEM_ETIMEDOUT. */
int bench_sync(void *zctx, const char *ctl_ep, uint64_t token, int timeout_ms);

/* Sends the encoded batches frames[0..n) to td's ingest socket, then a fin
 * with `token`, and waits (timeout_ms) until telemd has taken them all;
 * exits through bench_die() when it does not. */
void bench_fill_telemd(telemd_t *td, char *const *frames, const size_t *sizes,
                       int n, uint64_t token, int timeout_ms);

/* Sends an empty batch carrying `token` on the connected PUSH socket
 * `push`, then waits with bench_sync().  Returns 0 or an error. */
int bench_fin_and_sync(void *zctx, void *push, telem_proto_encoder_t *enc,
                       const char *ctl_ep, uint64_t token, int timeout_ms);

/* Samples ingested by the telemd behind `ctl_ep` (status "in"), or -1. */
int64_t bench_ingested(void *zctx, const char *ctl_ep);

/* The decimal number of nanoseconds held by the file DIR/NAME (a
 * program's start stamp, bench_restart_prog); bench_die() names `who`
 * when it cannot be read. */
int64_t bench_read_stamp(const char *dir, const char *name, const char *who);

/* Starts `path` with argv (environ), stdin from /dev/null and stdout and
 * stderr into the new file `log` (0600); bench_die() names `who` when it
 * cannot.  Returns the child's pid. */
pid_t bench_spawn_logged(const char *path, char *const argv[],
                         const char *log, const char *who);

/* "PASS" or "MISS" */
const char *bench_verdict(int ok);

/* Prints one line of bench/run.sh's summary table, tab-separated:
 *   FIGURE name target measured peer ratio met
 * `measured_fmt` formats the measured value; target, peer and ratio may
 * be NULL or "" (printed "-"); met is "met", "missed" or "-" from `ok`
 * (1, 0, or -1 when the figure has no target). */
void bench_figure(const char *name, const char *target, const char *peer,
                  const char *ratio, int ok, const char *measured_fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* A latency sample's summary: percentiles and max of v[0..n) (n >= 1;
 * sorts v) and its mean. */
typedef struct {
    int64_t p50, p99, p999, max;
    double mean;
} bench_lat_t;
void bench_summarise(int64_t *v, size_t n, bench_lat_t *out);

#endif
