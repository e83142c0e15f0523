/* bench_watch.c - what one telem_watch tick costs with 1,000 devices.
 *
 * Part 1, detectors only: 1,000 device series (125 nodes x 8 devices) of
 * synthetic round times (1 % Gaussian noise, one device 20 % slower from
 * round 50), fed to the watcher core one round at a time the way a tick
 * hands them over (watch_run on one new point per series), for several
 * detector sets.  Part 2, a whole tick: the same rounds pushed into 8 real
 * telemd agents (in-process actors, 125 devices each), then watch_tick() does
 * what telem_watch does every period: plans its queries, asks all 8 nodes
 * through the analysis client with a deadline, turns the answer into
 * detector input and runs slowgpu.  Its query part is compared with a bare
 * ac_query of the same data measured in the same run.  Target: a tick at
 * or under 10 ms for 1,000 devices.
 */
#include "bench_common.h"
#include "telem_time.h"
#include "det.h"
#include "watch.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define S_NODES 8
#define S_PER 125
#define S_DEV (S_NODES * S_PER)
#define S_ROUNDS 100
#define S_SLOW 777                    /* the device that turns slow */
#define S_METRIC "cg_dgemm_seconds"

typedef struct {
    char host[S_DEV][16], gpu[S_DEV][8];
    det_tag_t tags[S_DEV][3];
    int64_t ts[S_DEV][S_ROUNDS];
    double val[S_DEV][S_ROUNDS];
} s_data_t;

static void
s_make(s_data_t *d, int64_t t0)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int i = 0; i < S_DEV; i++) {
        snprintf(d->host[i], sizeof d->host[i], "node%03d", i / 8);
        snprintf(d->gpu[i], sizeof d->gpu[i], "%d", i % 8);
        d->tags[i][0] = (det_tag_t) { "gpu", d->gpu[i] };
        d->tags[i][1] = (det_tag_t) { "group", "cg" };
        d->tags[i][2] = (det_tag_t) { "host", d->host[i] };
        for (int r = 0; r < S_ROUNDS; r++) {
            d->ts[i][r] = t0 + r * INT64_C(1000000000);
            d->val[i][r] = 0.01 * (1 + gsl_ran_gaussian(rng, 0.01)) *
                           (i == S_SLOW && r >= 50 ? 1.2 : 1);
        }
    }
    gsl_rng_free(rng);
}

static void
s_report(const char *what, int64_t *ns, size_t n, size_t events)
{
    bench_sort_i64(ns, n);
    printf("  %-44s %9.3f %9.3f %9.3f %6zu\n", what, ns[n / 2] / 1e6,
           ns[(n * 99) / 100] / 1e6, ns[n - 1] / 1e6, events);
}

/* ---- part 1: detectors only -------------------------------------------- */

static void
s_detectors_only(s_data_t *d, const char *label, const char *const *specs)
{
    watch_t *watch = watch_new(NULL);
    char why[256];
    for (size_t i = 0; specs[i]; i++)
        if (watch_add_detector(watch, specs[i], why, sizeof why))
            bench_die("watch_add_detector", "%s: %s", specs[i], why);
    static det_series_t v[S_DEV];
    static const char *nodes[S_DEV / 8];
    for (int i = 0; i < S_DEV / 8; i++)
        nodes[i] = d->host[i * 8];
    int64_t ns[S_ROUNDS];
    size_t nns = 0, events = 0;
    for (int r = 0; r < S_ROUNDS; r++) {
        for (int i = 0; i < S_DEV; i++)
            v[i] = (det_series_t) {
                .node = d->host[i], .device = d->gpu[i], .metric = S_METRIC,
                .tags = d->tags[i], .ntags = 3, .ts = &d->ts[i][r],
                .val = &d->val[i][r], .n = 1,
            };
        det_input_t in = { .now_ns = d->ts[0][r] + 500000000, .series = v,
                           .nseries = S_DEV, .latest = v, .nlatest = S_DEV,
                           .nodes = nodes, .nnodes = S_DEV / 8 };
        int64_t t0 = bench_now_ns();
        if (watch_run(watch, &in))
            bench_die("watch_run", "failed");
        int64_t t = bench_now_ns() - t0;
        events += det_events_count(watch_events(watch));
        if (r >= 10)
            ns[nns++] = t;
    }
    s_report(label, ns, nns, events);
    watch_destroy(&watch);
}

/* ---- part 2: whole ticks against real agents ---------------------------- */

typedef struct {
    telemd_t *td[S_NODES];
    void *push[S_NODES];
    void *zctx;
    telem_proto_encoder_t *enc;
    ac_t *ac;
} s_cluster_t;

static void
s_cluster_up(s_cluster_t *c, const char *dir)
{
    const char *names[S_NODES], *eps[S_NODES];
    static char nm[S_NODES][16];
    c->zctx = zmq_ctx_new();
    c->enc = telem_proto_encoder_new();
    for (int k = 0; k < S_NODES; k++) {
        snprintf(nm[k], sizeof nm[k], "node%03d", k);
        c->td[k] = bench_telemd_start(dir, nm[k], 1, 600, 0, 0);
        c->push[k] = zmq_socket(c->zctx, ZMQ_PUSH);
        zmq_connect(c->push[k], telemd_ingest_endpoint(c->td[k]));
        names[k] = nm[k];
        eps[k] = telemd_ctl_endpoint(c->td[k]);
    }
    int err = 0;
    if (!(c->ac = ac_connect_nodes(names, eps, S_NODES, 2000, &err)))
        bench_die("ac_connect_nodes", "%s", telem_strerror(err));
}

/* Pushes round r of every device into its node (device j of node k is
 * series k * S_PER + j, tagged gpu=j) and waits until every node has
 * stored it. */
static void
s_push_round(s_cluster_t *c, const s_data_t *d, int r, uint64_t token)
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
            s[j] = (telem_sample_t) { .metric = S_METRIC, .tags = &tg[j],
                                      .ntags = 1, .level = 1,
                                      .ts_ns = d->ts[i][r],
                                      .value = d->val[i][r] };
        }
        telem_batch_t b = { "bench", btags, 2, s, S_PER, 0 };
        const void *data;
        size_t size;
        if (telem_proto_encode_batch(c->enc, &b, &data, &size))
            bench_die("encode", "batch");
        zmq_send(c->push[k], data, size, 0);
    }
    for (int k = 0; k < S_NODES; k++)
        if (bench_fin_and_sync(c->zctx, c->push[k], c->enc,
                               telemd_ctl_endpoint(c->td[k]), token + k, 5000))
            bench_die("sync", "node %d", k);
}

static void
s_cluster_down(s_cluster_t *c)
{
    ac_close(&c->ac);
    for (int k = 0; k < S_NODES; k++) {
        zmq_close(c->push[k]);
        telemd_destroy(&c->td[k]);
    }
    telem_proto_encoder_destroy(&c->enc);
    zmq_ctx_term(c->zctx);
}

/* A bare ac_query of the newest round: the floor of a tick's query. */
static int64_t
s_bare_query(ac_t *ac, int64_t after)
{
    const char *m[] = { S_METRIC };
    ac_query_t q = { .metrics = m, .nmetrics = 1, .start_ns = after,
                     .timeout_ms = 2000 };
    ac_result_t *res = NULL;
    int64_t t0 = bench_now_ns();
    int rc = ac_query(ac, &q, &res);
    int64_t t = bench_now_ns() - t0;
    if (rc || ac_result_nseries(res) != S_DEV)
        bench_die("ac_query", "rc %d, %zu series", rc,
                  res ? ac_result_nseries(res) : 0);
    ac_result_destroy(&res);
    return t;
}

static void
s_ticks(s_data_t *d)
{
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "watch");
    s_cluster_t c;
    s_cluster_up(&c, dir);
    watch_t *watch = watch_new(c.ac);
    char why[256];
    if (watch_add_detector(watch, "slowgpu", why, sizeof why))
        bench_die("watch_add_detector", "%s", why);
    watch_set_timeout(watch, 2000);
    static int64_t tick[S_ROUNDS], query[S_ROUNDS], det[S_ROUNDS],
        bare[S_ROUNDS];
    size_t n = 0, events = 0, flagged = 0;
    for (int r = 0; r < S_ROUNDS; r++) {
        s_push_round(&c, d, r, (uint64_t) (r + 1) * 1000);
        int64_t t0 = bench_now_ns();
        if (watch_tick(watch, d->ts[0][r] + 500000000))
            bench_die("watch_tick", "failed");
        int64_t t = bench_now_ns() - t0;
        const watch_stats_t *st = watch_stats(watch);
        const det_events_t *evs = watch_events(watch);
        events += det_events_count(evs);
        for (size_t e = 0; e < det_events_count(evs); e++)
            flagged += strcmp(det_events_get(evs, e)->nodes[0], "node006") == 0;
        if (r < 10)
            continue;
        tick[n] = t;
        query[n] = st->last_query_ns;
        det[n] = t - st->last_query_ns;
        bare[n] = s_bare_query(c.ac, d->ts[0][r] - 1);
        n++;
    }
    s_report("whole tick (query + input + slowgpu)", tick, n, events);
    s_report("  of which the queries", query, n, 0);
    s_report("  of which input + detectors", det, n, 0);
    s_report("bare ac_query of the same round", bare, n, 0);
    printf("  ratio tick / bare query (medians): %.2f; slow device named: %s\n",
           (double) tick[n / 2] / (double) bare[n / 2],
           flagged ? "yes" : "NO");
    printf("  verdict (tick p50 <= 10 ms): %s\n",
           bench_verdict(tick[n / 2] <= 10 * 1000000));
    char peer[64], r[32];
    snprintf(peer, sizeof peer, "bare ac_query %.2f ms",
             (double) bare[n / 2] / 1e6);
    snprintf(r, sizeof r, "%.2f", (double) tick[n / 2] / (double) bare[n / 2]);
    bench_figure("watcher tick, 1,000 devices on 8 agents, p50", "<= 10 ms",
                 peer, r, tick[n / 2] <= 10 * 1000000, "%.2f ms",
                 (double) tick[n / 2] / 1e6);
    watch_destroy(&watch);
    s_cluster_down(&c);
    bench_rmtree(dir);
}

int
main(void)
{
    bench_print_machine("bench_watch");
    static s_data_t d;
    s_make(&d, telem_now_ns() - (S_ROUNDS + 5) * INT64_C(1000000000));
    printf("%d devices (%d nodes x %d), %d rounds, rounds 10+ timed; "
           "times in ms\n", S_DEV, S_NODES, S_PER, S_ROUNDS);
    printf("  %-44s %9s %9s %9s %6s\n", "detectors only, per round", "p50",
           "p99", "max", "events");
    s_detectors_only(&d, "slowgpu (robust rule, drift)",
                     (const char *const[]) { "slowgpu", NULL });
    s_detectors_only(&d, "slowgpu rule=both (robust + Dragon)",
                     (const char *const[]) { "slowgpu:rule=both", NULL });
    s_detectors_only(&d, "slowgpu + threshold + heartbeat",
                     (const char *const[]) { "slowgpu",
                     "threshold:metric=" S_METRIC ",value=1",
                     "heartbeat", NULL });
    printf("\n  %-44s %9s %9s %9s %6s\n", "whole tick, 8 telemd agents",
           "p50", "p99", "max", "events");
    s_ticks(&d);
    return 0;
}
