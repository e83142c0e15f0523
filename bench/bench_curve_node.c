/* bench_curve_node.c - what CURVE costs the analysis client's queries and
 * the watcher's tick, against real telemd processes (bench_curve.h).
 *
 * Query: two telemd processes, one started with --keys (its TCP endpoint
 * CURVE, its own ZAP handler) and one with $TELEM_KEYS empty (plain
 * TCP), each filled through its ipc ingest socket with the series
 * bench_query uses (3,600 points, 1 s apart); one analysis client per
 * telemd (opened with $TELEM_KEYS set, and empty) asks for the whole
 * series 1,000 times each, in alternating blocks of 50, so that noise
 * from the shared machine falls on both alike.  Before timing, a client
 * without keys must get no answer from the CURVE telemd: proof that
 * CURVE is in force, not merely configured.
 *
 * Watch: the workload of bench_watch (1,000 devices, 125 on each of 8
 * nodes, 100 rounds, slowgpu) on two clusters of 8 telemd processes,
 * plain and CURVE, reached over TCP (bench_watch reaches in-process
 * agents over ipc); each round goes into both clusters, then one
 * watch_tick() on each, in alternating order.  Rounds 10+ are timed.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "ac.h"
#include "bench_common.h"
#include "bench_curve.h"
#include "det.h"
#include "telem_error.h"
#include "telem_time.h"
#include "watch.h"

#define S_POINTS 3600
#define S_QUERIES 1000
#define S_WARMUP 50
#define S_BLOCK 50                  /* divides S_QUERIES */
#define S_QMETRIC "bench.query"
#define S_WINDOW_S 7200

#define S_NODES 8
#define S_PER 125
#define S_DEV (S_NODES * S_PER)
#define S_ROUNDS 100
#define S_SKIP 10
#define S_SLOW 777
#define S_WMETRIC "cg_dgemm_seconds"

static const char *const s_side[2] = { "plain", "CURVE" };

/* ---- helpers ----------------------------------------------------------- */

static void
s_rundir(const bcurve_ctx_t *ctx, const char *name, char *buf, size_t size)
{
    if (snprintf(buf, size, "%s/%s", ctx->dir, name) >= (int) size)
        bench_die("bench_curve", "path too long");
    if (mkdir(buf, 0700) != 0)
        bench_die("mkdir", "%s", buf);
}

static ac_t *
s_ac_open(const bcurve_ctx_t *ctx, int curve, const char *const *names,
          const char *const *eps, size_t n)
{
    bcurve_client_keys(ctx, curve);
    int err = 0;
    ac_t *ac = ac_connect_nodes(names, eps, n, 2000, &err);
    if (!ac)
        bench_die("ac_connect_nodes", "%s", telem_strerror(err));
    return ac;
}

/* ---- query ------------------------------------------------------------- */

/* Sends the series (3,600 points in batches of 64) to telemd's ingest
 * socket and waits until telemd has stored it all. */
static void
s_fill_series(void *zctx, const bcurve_daemon_t *d, uint64_t token)
{
    static const telem_tag_t tags[2] = { { "pid", "4242" }, { "rank", "0" } };
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    void *push = zmq_socket(zctx, ZMQ_PUSH);
    zmq_connect(push, d->ingest);
    int64_t now = telem_now_ns();
    telem_sample_t s[64];
    for (int i = 0; i < S_POINTS; i += 64) {
        uint32_t k = 0;
        for (; k < 64 && i + (int) k < S_POINTS; k++)
            s[k] = (telem_sample_t) { .metric = S_QMETRIC, .level = 1,
                .ts_ns = now - (S_POINTS - i - (int) k) * TELEM_NS_PER_SEC,
                .value = (i + (int) k) * 0.25 };
        telem_batch_t b = { .source = "bench", .tags = tags, .ntags = 2,
                            .samples = s, .nsamples = k };
        const void *data;
        size_t size;
        if (telem_proto_encode_batch(enc, &b, &data, &size) != 0)
            bench_die("encode", "batch");
        zmq_send(push, data, size, 0);
    }
    if (bench_fin_and_sync(zctx, push, enc, d->ctl, token, 10000) != 0)
        bench_die("fill", "telemd did not confirm the series");
    zmq_close(push);
    telem_proto_encoder_destroy(&enc);
}

/* One timed ac_query of the whole series; 0 on a wrong answer when
 * `may_fail`, else exits. */
static int64_t
s_query_once(ac_t *ac, int timeout_ms, int may_fail)
{
    static const char *const metrics[] = { S_QMETRIC };
    ac_query_t q = { .metrics = metrics, .nmetrics = 1,
                     .start_ns = -S_WINDOW_S * TELEM_NS_PER_SEC,
                     .timeout_ms = timeout_ms };
    ac_result_t *r = NULL;
    int64_t t0 = bench_now_ns();
    int rc = ac_query(ac, &q, &r);
    int64_t dt = bench_now_ns() - t0;
    const telem_series_t *s = r && ac_result_nseries(r) == 1
                                  ? ac_result_series(r, 0) : NULL;
    int ok = rc == 0 && s && s->npoints == S_POINTS;
    ac_result_destroy(&r);
    if (!ok && !may_fail)
        bench_die("ac_query", "rc %s, %u points", telem_strerror(rc),
                  s ? s->npoints : 0);
    return ok ? dt : 0;
}

/* The reply's size on the wire: the answer re-encoded as telemd encodes
 * it (CURVE adds a few dozen bytes a message to that). */
static size_t
s_reply_size(ac_t *ac)
{
    static const char *const metrics[] = { S_QMETRIC };
    ac_query_t q = { .metrics = metrics, .nmetrics = 1,
                     .start_ns = -S_WINDOW_S * TELEM_NS_PER_SEC };
    ac_result_t *r = NULL;
    size_t size = 0;
    if (ac_query(ac, &q, &r) != 0 || ac_result_nseries(r) != 1)
        bench_die("ac_query", "no series");
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_query_reply_t rep = { .id = UINT64_MAX / 3, .node = "qplain",
                                .series = ac_result_series(r, 0),
                                .nseries = 1 };
    const void *data;
    if (telem_proto_encode_query_reply(enc, &rep, &data, &size) != 0)
        bench_die("encode", "reply");
    telem_proto_encoder_destroy(&enc);
    ac_result_destroy(&r);
    return size;
}

/* A client without keys must get nothing from the CURVE telemd. */
static void
s_check_refused(const bcurve_ctx_t *ctx, const bcurve_daemon_t *d)
{
    const char *names[] = { "qcurve" }, *eps[] = { d->query };
    ac_t *ac = s_ac_open(ctx, 0, names, eps, 1);
    if (s_query_once(ac, 300, 1) != 0)
        bench_die("bench_curve", "a client without keys was answered by the "
                  "CURVE telemd: CURVE is not in force");
    ac_close(&ac);
    printf("  checked: a client without keys got no answer from the CURVE "
           "telemd in 300 ms\n");
}

static void
s_query_rows(bcurve_table_t *t, bench_lat_t lat[2], size_t reply)
{
    printf("  one reply: %zu B; CURVE's extra p50 %.1f us is %.0f MB/s of "
           "reply\n", reply, (lat[1].p50 - lat[0].p50) / 1e3,
           lat[1].p50 > lat[0].p50
               ? (double) reply / ((double) (lat[1].p50 - lat[0].p50) / 1e9)
                 / 1e6 : 0.0);
    printf("  %-24s %9s %9s %9s %9s   (microseconds)\n", "ac_query, 3,600 "
           "points", "p50", "p99", "mean", "max");
    for (int c = 0; c < 2; c++)
        printf("  %-24s %9.1f %9.1f %9.1f %9.1f\n", s_side[c],
               lat[c].p50 / 1e3, lat[c].p99 / 1e3, lat[c].mean / 1e3,
               lat[c].max / 1e3);
    bcurve_add(t, &(bcurve_row_t) {
        .id = "query_p50", .what = "ac_query 3,600 points, p50 (ms)",
        .plain = lat[0].p50 / 1e6, .curve = lat[1].p50 / 1e6 });
    bcurve_add(t, &(bcurve_row_t) {
        .id = "query_p99", .what = "ac_query 3,600 points, p99 (ms)",
        .plain = lat[0].p99 / 1e6, .curve = lat[1].p99 / 1e6,
        .target = "CURVE <= 10 ms", .met = lat[1].p99 <= 10000000 });
}

void
bcurve_part_query(const bcurve_ctx_t *ctx, bcurve_table_t *t)
{
    printf("\n-- 1. ac_query over loopback TCP: one telemd process with "
           "--keys, one without\n");
    char rundir[512];
    s_rundir(ctx, "query", rundir, sizeof rundir);
    bcurve_daemon_t d[2];
    static const char *const node[2] = { "qplain", "qcurve" };
    void *zctx = zmq_ctx_new();
    ac_t *ac[2];
    for (int c = 0; c < 2; c++) {
        bcurve_telemd(ctx, rundir, node[c], c, &d[c]);
        s_fill_series(zctx, &d[c], 77 + (uint64_t) c);
        const char *eps[] = { d[c].query };
        ac[c] = s_ac_open(ctx, c, &node[c], eps, 1);
    }
    s_check_refused(ctx, &d[1]);
    size_t reply = s_reply_size(ac[0]);
    int64_t *lat[2] = { malloc(S_QUERIES * sizeof(int64_t)),
                        malloc(S_QUERIES * sizeof(int64_t)) };
    if (!lat[0] || !lat[1])
        bench_die("bench_curve", "out of memory");
    for (int i = 0; i < S_WARMUP; i++)
        for (int c = 0; c < 2; c++)
            s_query_once(ac[c], 2000, 0);
    for (int b = 0; b < S_QUERIES; b += S_BLOCK)
        for (int c = 0; c < 2; c++)
            for (int i = b; i < b + S_BLOCK; i++)
                lat[c][i] = s_query_once(ac[c], 2000, 0);
    bench_lat_t sum[2];
    for (int c = 0; c < 2; c++) {
        bench_summarise(lat[c], S_QUERIES, &sum[c]);
        ac_close(&ac[c]);
        bcurve_stop(&d[c]);
        free(lat[c]);
    }
    zmq_ctx_term(zctx);
    s_query_rows(t, sum, reply);
}

/* ---- watch ------------------------------------------------------------- */

typedef struct {
    int64_t ts[S_DEV][S_ROUNDS];
    double val[S_DEV][S_ROUNDS];
} s_data_t;

typedef struct {
    bcurve_daemon_t td[S_NODES];
    void *push[S_NODES];
    ac_t *ac;
    watch_t *watch;
    int64_t tick[S_ROUNDS], query[S_ROUNDS];
    size_t n, flagged;
} s_cluster_t;

/* bench_watch's rounds: 1 % noise, device 777 20 % slower from round 50. */
static void
s_make(s_data_t *d, int64_t t0)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int i = 0; i < S_DEV; i++)
        for (int r = 0; r < S_ROUNDS; r++) {
            d->ts[i][r] = t0 + r * TELEM_NS_PER_SEC;
            d->val[i][r] = 0.01 * (1 + gsl_ran_gaussian(rng, 0.01)) *
                           (i == S_SLOW && r >= 50 ? 1.2 : 1);
        }
    gsl_rng_free(rng);
}

static void
s_cluster_up(const bcurve_ctx_t *ctx, s_cluster_t *c, int curve, void *zctx)
{
    char rundir[512];
    s_rundir(ctx, curve ? "watch-curve" : "watch-plain", rundir,
             sizeof rundir);
    static char nm[S_NODES][16];
    const char *names[S_NODES], *eps[S_NODES];
    for (int k = 0; k < S_NODES; k++) {
        snprintf(nm[k], sizeof nm[k], "node%03d", k);
        bcurve_telemd(ctx, rundir, nm[k], curve, &c->td[k]);
        c->push[k] = zmq_socket(zctx, ZMQ_PUSH);
        zmq_connect(c->push[k], c->td[k].ingest);
        names[k] = nm[k];
        eps[k] = c->td[k].query;
    }
    c->ac = s_ac_open(ctx, curve, names, eps, S_NODES);
    c->watch = watch_new(c->ac);
    char why[256];
    if (!c->watch || watch_add_detector(c->watch, "slowgpu", why, sizeof why))
        bench_die("watch", "slowgpu: %s", c->watch ? why : "no memory");
    watch_set_timeout(c->watch, 2000);
}

static void
s_cluster_down(s_cluster_t *c)
{
    watch_destroy(&c->watch);
    ac_close(&c->ac);
    for (int k = 0; k < S_NODES; k++) {
        zmq_close(c->push[k]);
        bcurve_stop(&c->td[k]);
    }
}

/* Round r of every device into its node; waits until each has it. */
static void
s_push_round(s_cluster_t *c, const s_data_t *d, int r, void *zctx,
             telem_proto_encoder_t *enc, uint64_t token)
{
    static telem_sample_t s[S_PER];
    static telem_tag_t tg[S_PER];
    static char gname[S_PER][8];
    telem_tag_t btags[] = { { "group", "cg" }, { "backend", "cpu" } };
    for (int k = 0; k < S_NODES; k++) {
        for (int j = 0; j < S_PER; j++) {
            int i = k * S_PER + j;
            snprintf(gname[j], sizeof gname[j], "%d", j);
            tg[j] = (telem_tag_t) { "gpu", gname[j] };
            s[j] = (telem_sample_t) { .metric = S_WMETRIC, .tags = &tg[j],
                                      .ntags = 1, .level = 1,
                                      .ts_ns = d->ts[i][r],
                                      .value = d->val[i][r] };
        }
        telem_batch_t b = { "bench", btags, 2, s, S_PER, 0 };
        const void *data;
        size_t size;
        if (telem_proto_encode_batch(enc, &b, &data, &size))
            bench_die("encode", "batch");
        zmq_send(c->push[k], data, size, 0);
    }
    for (int k = 0; k < S_NODES; k++)
        if (bench_fin_and_sync(zctx, c->push[k], enc, c->td[k].ctl,
                               token + (uint64_t) k, 5000))
            bench_die("sync", "node %d", k);
}

static void
s_tick(s_cluster_t *c, const s_data_t *d, int r)
{
    int64_t t0 = bench_now_ns();
    if (watch_tick(c->watch, d->ts[0][r] + TELEM_NS_PER_SEC / 2))
        bench_die("watch_tick", "failed");
    int64_t dt = bench_now_ns() - t0;
    const det_events_t *evs = watch_events(c->watch);
    for (size_t e = 0; e < det_events_count(evs); e++)
        c->flagged += strcmp(det_events_get(evs, e)->nodes[0], "node006") == 0;
    if (r < S_SKIP)
        return;
    c->tick[c->n] = dt;
    c->query[c->n++] = watch_stats(c->watch)->last_query_ns;
}

static void
s_watch_rows(bcurve_table_t *t, s_cluster_t c[2])
{
    size_t n = c[0].n;
    printf("  %-30s %9s %9s %9s %9s   (ms; queries: p50 of the tick's "
           "query part)\n", "watcher tick, 1,000 devices", "p50", "p99",
           "max", "queries");
    for (int k = 0; k < 2; k++) {
        bench_sort_i64(c[k].tick, n);
        bench_sort_i64(c[k].query, n);
        printf("  %-30s %9.3f %9.3f %9.3f %9.3f   slow device named: %s\n",
               s_side[k], c[k].tick[n / 2] / 1e6,
               bench_percentile_sorted(c[k].tick, n, 99) / 1e6,
               c[k].tick[n - 1] / 1e6, c[k].query[n / 2] / 1e6,
               c[k].flagged ? "yes" : "NO");
    }
    double p50[2], p99[2];
    for (int k = 0; k < 2; k++) {
        p50[k] = c[k].tick[n / 2] / 1e6;
        p99[k] = bench_percentile_sorted(c[k].tick, n, 99) / 1e6;
    }
    bcurve_add(t, &(bcurve_row_t) {
        .id = "tick_p50", .what = "watcher tick, 1,000 devices, p50 (ms)",
        .plain = p50[0], .curve = p50[1], .target = "CURVE <= 10 ms",
        .met = p50[1] <= 10.0 });
    bcurve_add(t, &(bcurve_row_t) {
        .id = "tick_p99", .what = "watcher tick, 1,000 devices, p99 (ms)",
        .plain = p99[0], .curve = p99[1] });
}

void
bcurve_part_watch(const bcurve_ctx_t *ctx, bcurve_table_t *t)
{
    printf("\n-- 2. watcher tick, 1,000 devices on 8 telemd processes over "
           "loopback TCP, plain and CURVE (%d rounds, %d+ timed)\n",
           S_ROUNDS, S_SKIP);
    s_data_t *d = malloc(sizeof *d);
    s_cluster_t *c = calloc(2, sizeof *c);
    if (!d || !c)
        bench_die("bench_curve", "out of memory");
    s_make(d, telem_now_ns() - (S_ROUNDS + 5) * TELEM_NS_PER_SEC);
    void *zctx = zmq_ctx_new();
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    for (int k = 0; k < 2; k++)
        s_cluster_up(ctx, &c[k], k, zctx);
    for (int r = 0; r < S_ROUNDS; r++) {
        for (int k = 0; k < 2; k++)
            s_push_round(&c[k], d, r, zctx, enc,
                         (uint64_t) (r + 1) * 1000 + (uint64_t) k * 100);
        for (int j = 0; j < 2; j++)
            s_tick(&c[(r + j) % 2], d, r);
    }
    s_watch_rows(t, c);
    for (int k = 0; k < 2; k++)
        s_cluster_down(&c[k]);
    telem_proto_encoder_destroy(&enc);
    zmq_ctx_term(zctx);
    free(c);
    free(d);
}
