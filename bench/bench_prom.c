/* bench_prom.c - GET /metrics of 10,000 series against a plain query of
 * the same series (target, issue 13: the render of 10,000 series <= 50 ms).
 *
 * 10,000 series: 100 metrics (half counters, half gauges, each with a doc
 * and a unit) times 100 processes (tag pid, and host), 10 points each in
 * the window.  Two parts, each timed over S_RUNS runs after S_WARMUP:
 *
 *   alone, without sockets (a telemd_agent fed the same batches):
 *     the snapshot (telemd_agent_snapshot: what telemd's actor spends on a
 *     scrape), its render as text 0.0.4 and as OpenMetrics, gzip of the
 *     text; against telemd_agent_request of a TELEM_QUERY_LATEST query of
 *     every series (the actor's cost of a plain query of the same series);
 *   end to end, a real in-process telemd over loopback:
 *     GET /metrics (text; OpenMetrics; text with gzip), read whole by a
 *     plain-socket client, against ac_query of the latest point of every
 *     series over TCP (decoded by the analysis client).
 *
 * Prints p50, p99 and mean per case, the ratios /metrics : query, and the
 * target verdict on the render (snapshot + text render, the work a scrape
 * makes telemd do).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "ac.h"
#include "bench_common.h"
#include "telem_error.h"
#include "telem_prom.h"
#include "telem_time.h"
#include "telemd_agent.h"

#define S_METRICS 100
#define S_PROCS 100
#define S_SERIES (S_METRICS * S_PROCS)
#define S_POINTS 10
#define S_RUNS 50
#define S_WARMUP 5
#define S_NODE "benchnode"
#define S_WINDOW_S 3600

typedef bench_lat_t s_lat_t;

typedef struct {
    char *frames[S_PROCS + S_METRICS];
    size_t sizes[S_PROCS + S_METRICS];
    int n;
} s_fill_t;

static void
s_keep(s_fill_t *f, const void *data, size_t size)
{
    f->frames[f->n] = malloc(size);
    memcpy(f->frames[f->n], data, size);
    f->sizes[f->n++] = size;
}

/* The descriptions, then one batch per process: every metric, S_POINTS
 * points each, one second apart, ending now. */
static void
s_fill_make(s_fill_t *f, int64_t now)
{
    static char names[S_METRICS][48];
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    const void *data;
    size_t size;
    f->n = 0;
    for (int m = 0; m < S_METRICS; m++) {
        snprintf(names[m], sizeof names[m], "bench_prom_%s_%02d_bytes",
                 m % 2 ? "read" : "queued", m);
        telem_meta_t meta = { names[m], (telem_metric_type_t) (m % 2),
                              "bytes", "Bytes the benchmark made up, with "
                              "a \"quoted\" word and a \\ backslash." };
        if (telem_proto_encode_meta(enc, &meta, &data, &size) != 0)
            bench_die("encode", "meta");
        s_keep(f, data, size);
    }
    telem_sample_t *s = calloc(S_METRICS * S_POINTS, sizeof *s);
    for (int p = 0; p < S_PROCS; p++) {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", 40000 + p);
        telem_tag_t tags[1] = { { "pid", pid } };
        for (int k = 0; k < S_METRICS * S_POINTS; k++)
            s[k] = (telem_sample_t) { .metric = names[k / S_POINTS],
                .level = 1, .ts_ns = now - (S_POINTS - k % S_POINTS) *
                                           TELEM_NS_PER_SEC,
                .value = k * 1.25 + p };
        telem_batch_t b = { .source = "bench", .tags = tags, .ntags = 1,
                            .samples = s, .nsamples = S_METRICS * S_POINTS };
        if (telem_proto_encode_batch(enc, &b, &data, &size) != 0)
            bench_die("encode", "batch");
        s_keep(f, data, size);
    }
    free(s);
    telem_proto_encoder_destroy(&enc);
}

/* --- the parts alone ------------------------------------------------------ */

typedef struct {
    s_lat_t snap, text, om, gzip, query;
    size_t block, text_len, om_len, gz_len, reply_len;
} s_parts_t;

static void
s_time_renders(const void *block, size_t len, int64_t *lat, s_parts_t *o)
{
    for (int fmt = 0; fmt < 2; fmt++) {
        telem_prom_opts_t opts = { (telem_prom_format_t) fmt, false };
        for (int i = -S_WARMUP; i < S_RUNS; i++) {
            char *out;
            size_t n;
            telem_prom_stats_t st;
            int64_t t0 = bench_now_ns();
            int rc = telem_prom_render(block, len, &opts, &out, &n, &st);
            int64_t dt = bench_now_ns() - t0;
            if (rc || st.series != S_SERIES)
                bench_die("render", "%s, %zu series", telem_strerror(rc),
                          st.series);
            if (i >= 0)
                lat[i] = dt;
            *(fmt ? &o->om_len : &o->text_len) = n;
            if (fmt == 0 && i == S_RUNS - 1) {
                for (int k = -S_WARMUP; k < S_RUNS; k++) {
                    char *gz;
                    int64_t g0 = bench_now_ns();
                    if (telem_prom_gzip(out, n, &gz, &o->gz_len) != 0)
                        bench_die("gzip", "failed");
                    if (k >= 0)
                        lat[S_RUNS + k] = bench_now_ns() - g0;
                    free(gz);
                }
                bench_summarise(lat + S_RUNS, S_RUNS, &o->gzip);
            }
            free(out);
        }
        bench_summarise(lat, S_RUNS, fmt ? &o->om : &o->text);
    }
}

static void
s_time_query(telemd_agent_t *a, int64_t *lat, s_parts_t *o)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_query_t q = { .id = 1, .flags = TELEM_QUERY_LATEST };
    const void *req;
    size_t req_size;
    if (telem_proto_encode_query(enc, &q, &req, &req_size) != 0)
        bench_die("encode", "query");
    for (int i = -S_WARMUP; i < S_RUNS; i++) {
        const void *reply;
        int64_t t0 = bench_now_ns();
        int rc = telemd_agent_request(a, req, req_size, TELEMD_FROM_JOB, &reply,
                                      &o->reply_len);
        int64_t dt = bench_now_ns() - t0;
        if (rc)
            bench_die("agent query", "%s", telem_strerror(rc));
        if (i >= 0)
            lat[i] = dt;
    }
    bench_summarise(lat, S_RUNS, &o->query);
    telem_proto_encoder_destroy(&enc);
}

static void
s_bench_parts(const s_fill_t *f, const char *dir, int64_t *lat,
              s_parts_t *o)
{
    telemd_config_t cfg = { .node = S_NODE, .rundir = dir, .level = 1,
                            .window_ns = S_WINDOW_S * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    int err = 0;
    telemd_agent_t *a = telemd_agent_new(&cfg, &err);
    if (!a)
        bench_die("telemd_agent_new", "%s", telem_strerror(err));
    for (int i = 0; i < f->n; i++)
        if (telemd_agent_ingest(a, f->frames[i], f->sizes[i]) != 0)
            bench_die("agent ingest", "frame %d", i);
    void *block = NULL;
    for (int i = -S_WARMUP; i < S_RUNS; i++) {
        free(block);
        int64_t t0 = bench_now_ns();
        if (telemd_agent_snapshot(a, &block, &o->block) != 0)
            bench_die("snapshot", "failed");
        if (i >= 0)
            lat[i] = bench_now_ns() - t0;
    }
    bench_summarise(lat, S_RUNS, &o->snap);
    s_time_renders(block, o->block, lat, o);
    free(block);
    s_time_query(a, lat, o);
    telemd_agent_destroy(&a);
}

/* --- end to end ----------------------------------------------------------- */

/* One GET on a new connection, read whole; returns the bytes read. */
static size_t
s_get(int port, const char *headers, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t) port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof a) != 0)
        bench_die("connect", "/metrics");
    char req[512];
    int n = snprintf(req, sizeof req, "GET /metrics HTTP/1.1\r\nHost: b\r\n"
                     "%sConnection: close\r\n\r\n", headers);
    if (write(fd, req, (size_t) n) != n)
        bench_die("write", "/metrics");
    size_t len = 0;
    ssize_t got;
    while (len < cap && (got = read(fd, buf + len, cap - len)) > 0)
        len += (size_t) got;
    close(fd);
    if (len < 12 || strncmp(buf, "HTTP/1.1 200", 12) != 0)
        bench_die("GET /metrics", "%.40s", buf);
    return len;
}

typedef struct {
    s_lat_t text, om, gzip, query;
    size_t text_bytes, gz_bytes;
} s_e2e_t;

static void
s_time_gets(int port, int64_t *lat, s_e2e_t *o)
{
    static const char *const headers[3] = {
        "", "Accept: application/openmetrics-text; version=1.0.0\r\n",
        "Accept-Encoding: gzip\r\n" };
    s_lat_t *out[3] = { &o->text, &o->om, &o->gzip };
    size_t cap = 64u << 20;
    char *buf = malloc(cap);
    for (int c = 0; c < 3; c++) {
        for (int i = -S_WARMUP; i < S_RUNS; i++) {
            int64_t t0 = bench_now_ns();
            size_t n = s_get(port, headers[c], buf, cap);
            if (i >= 0)
                lat[i] = bench_now_ns() - t0;
            if (c == 0)
                o->text_bytes = n;
            else if (c == 2)
                o->gz_bytes = n;
        }
        bench_summarise(lat, S_RUNS, out[c]);
    }
    free(buf);
}

static void
s_time_ac(const char *endpoint, int64_t *lat, s_e2e_t *o)
{
    const char *names[] = { S_NODE };
    const char *eps[] = { endpoint };
    int err = 0;
    ac_t *ac = ac_connect_nodes(names, eps, 1, 5000, &err);
    if (!ac)
        bench_die("ac_connect_nodes", "%s", telem_strerror(err));
    ac_query_t q = { .flags = TELEM_QUERY_LATEST, .timeout_ms = 5000 };
    for (int i = -S_WARMUP; i < S_RUNS; i++) {
        ac_result_t *r = NULL;
        int64_t t0 = bench_now_ns();
        int rc = ac_query(ac, &q, &r);
        int64_t dt = bench_now_ns() - t0;
        if (rc || ac_result_nseries(r) != S_SERIES)
            bench_die("ac_query", "%s, %zu series", telem_strerror(rc),
                      r ? ac_result_nseries(r) : 0);
        ac_result_destroy(&r);
        if (i >= 0)
            lat[i] = dt;
    }
    bench_summarise(lat, S_RUNS, &o->query);
    ac_close(&ac);
}

static void
s_fill_telemd(telemd_t *td, const s_fill_t *f)
{
    bench_fill_telemd(td, f->frames, f->sizes, f->n, 77, 20000);
}

static void
s_bench_e2e(const s_fill_t *f, const char *dir, int64_t *lat, s_e2e_t *o)
{
    telemd_config_t cfg = {
        .node = S_NODE, .rundir = dir, .level = 1,
        .window_ns = S_WINDOW_S * TELEM_NS_PER_SEC,
        .interval_ns = TELEM_NS_PER_SEC, .tcp_bind = "tcp://127.0.0.1:*",
        .job_uid = getuid(), .http_bind = "127.0.0.1", .http_port = 0,
    };
    int err = 0;
    telemd_t *td = telemd_new(&cfg, &err);
    if (!td)
        bench_die("telemd_new", "%s", telem_strerror(err));
    s_fill_telemd(td, f);
    const char *url = telemd_metrics_url(td);
    int port = atoi(strrchr(url, ':') + 1);
    s_time_gets(port, lat, o);
    s_time_ac(telemd_tcp_endpoint(td), lat, o);
    telemd_destroy(&td);
}

/* --- report --------------------------------------------------------------- */

static void
s_row(const char *what, const s_lat_t *l)
{
    printf("  %-56s %9.2f %9.2f %9.2f\n", what, (double) l->p50 / 1e6,
           (double) l->p99 / 1e6, l->mean / 1e6);
}

static void
s_report(const s_parts_t *p, const s_e2e_t *e)
{
    printf("\n%d series (%d metrics x %d processes), %d points each; "
           "%d runs per case\n", S_SERIES, S_METRICS, S_PROCS, S_POINTS,
           S_RUNS);
    printf("snapshot %zu B, text %zu B, OpenMetrics %zu B, gzip'd text %zu B, "
           "query reply %zu B\n", p->block, p->text_len, p->om_len,
           p->gz_len, p->reply_len);
    printf("  %-56s %9s %9s %9s\n", "alone, no sockets (milliseconds)", "p50",
           "p99", "mean");
    s_row("snapshot (telemd's actor: store walk + copy)", &p->snap);
    s_row("render, text 0.0.4", &p->text);
    s_row("render, OpenMetrics", &p->om);
    s_row("gzip of the text (zlib level 1)", &p->gzip);
    s_row("plain query, latest of every series (walk, copy, encode)",
          &p->query);
    printf("  %-56s %9s %9s %9s\n", "end to end, loopback (milliseconds)",
           "p50", "p99", "mean");
    s_row("GET /metrics, text", &e->text);
    s_row("GET /metrics, OpenMetrics", &e->om);
    s_row("GET /metrics, text, gzip", &e->gzip);
    s_row("ac_query of the latest point of every series, TCP", &e->query);
    printf("ratios (p50)\n");
    printf("  %-56s %9.2f\n", "snapshot / plain query (telemd's actor)",
           (double) p->snap.p50 / (double) p->query.p50);
    printf("  %-56s %9.2f\n", "snapshot + text render / plain query",
           (double) (p->snap.p50 + p->text.p50) / (double) p->query.p50);
    printf("  %-56s %9.2f\n", "GET /metrics text / ac_query",
           (double) e->text.p50 / (double) e->query.p50);
    printf("  %-56s %9.2f\n", "GET /metrics gzip / ac_query",
           (double) e->gzip.p50 / (double) e->query.p50);
    int64_t render = p->snap.p99 + p->text.p99;
    printf("\ntargets\n");
    printf("  render of 10,000 series <= 50 ms (snapshot + text, p99)"
           "  %7.2f ms  %s\n", (double) render / 1e6,
           bench_verdict(render <= 50 * 1000000));
    printf("  GET /metrics of 10,000 series, end to end, p99"
           "           %7.2f ms  %s\n", (double) e->text.p99 / 1e6,
           bench_verdict(e->text.p99 <= 50 * 1000000));
    char peer[64], r[32];
    bench_figure("/metrics render of 10,000 series, p99", "<= 50 ms", NULL,
                 NULL, render <= 50 * 1000000, "%.2f ms", render / 1e6);
    snprintf(peer, sizeof peer, "ac_query of their latest points %.2f ms",
             (double) e->query.p50 / 1e6);
    snprintf(r, sizeof r, "%.2f", (double) e->text.p50 / (double) e->query.p50);
    bench_figure("GET /metrics of 10,000 series, end to end, p99", "<= 50 ms",
                 peer, r, e->text.p99 <= 50 * 1000000, "%.2f ms",
                 (double) e->text.p99 / 1e6);
}

int
main(void)
{
    bench_print_machine("bench_prom");
    int64_t *lat = malloc(2 * S_RUNS * sizeof *lat);
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "prom");
    s_fill_t fill;
    s_fill_make(&fill, telem_now_ns());
    s_parts_t parts = { 0 };
    s_e2e_t e2e = { 0 };
    s_bench_parts(&fill, dir, lat, &parts);
    s_bench_e2e(&fill, dir, lat, &e2e);
    s_report(&parts, &e2e);
    for (int i = 0; i < fill.n; i++)
        free(fill.frames[i]);
    bench_rmtree(dir);
    free(lat);
    return 0;
}
