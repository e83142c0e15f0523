/* bench_agg.c - what telem_agg's HTTP and JSON add to a query over the
 * job's nodes: /api/query latency against the analysis client's fan-out
 * (ac_query) for the same series, in the same run.
 *
 * In-process telemds (with TCP query endpoints) make up a job of 65
 * virtual nodes written to a node file:
 *   (a) node "a0" holds one series of 3,600 points (the last hour at 1 Hz);
 *   (b) nodes b00..b63 hold 10 series each (tag dev=0..9) of 360 points
 *       (the last hour every 10 s).
 * The real telem_agg program (next to this one) is started on an ephemeral
 * port over that node file; its address comes from RUNDIR/telem_agg/url.
 * Then, in alternating blocks of S_BLOCK so machine noise falls on both
 * alike, S_QUERIES sequential requests of each kind are timed:
 *   HTTP   POST /api/query on one kept-alive connection, the whole answer
 *          read (a minimal HTTP/1.1 client over a TCP socket);
 *   ac     ac_query() of the same metric, range and nodes (what telem_agg
 *          asks its nodes for).
 * (a) is {"metric":"bench.a","aggregator":"sum", host literal_or a0}, which
 * telem_agg sends to a0 only; (b) is bench.b summed per host (wildcard
 * host filter, groupBy): 640 series fetched, 64 results written.
 * Targets (issue): HTTP and JSON add <= 50 % to the fan-out (ratio of
 * the p50s <= 1.5); p99 <= 10 ms for (a), <= 100 ms for (b).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "ac.h"
#include "bench_common.h"
#include "telem_error.h"
#include "telem_time.h"
#include "tsdb_exec.h"
#include "tsdb_query.h"

#define S_A_POINTS 3600
#define S_B_NODES 64
#define S_B_SERIES 10
#define S_B_POINTS 360
#define S_QUERIES 500
#define S_WARMUP 20
#define S_BLOCK 25                   /* divides S_QUERIES */
#define S_WINDOW_S 7200

extern char **environ;

typedef bench_lat_t s_lat_t;

/* ---- filling the nodes --------------------------------------------------- */

/* Sends `n` points of `metric` with tag dev=`dev`, `step_s` apart and
 * ending now, to the telemd, and waits until it has filed them. */
static void
s_fill(telemd_t *td, const char *metric, const char *dev, int n,
       int step_s, int64_t now)
{
    const telem_tag_t tags[1] = { { "dev", dev } };
    void *zctx = zmq_ctx_new();
    void *push = zmq_socket(zctx, ZMQ_PUSH);
    zmq_connect(push, telemd_ingest_endpoint(td));
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_sample_t s[64];
    for (int i = 0; i < n; i += 64) {
        uint32_t k = 0;
        for (; k < 64 && i + (int) k < n; k++) {
            int p = i + (int) k;
            s[k] = (telem_sample_t) { .metric = metric, .level = 1,
                .ts_ns = now - (int64_t) (n - p) * step_s * TELEM_NS_PER_SEC,
                .value = p * 0.25 };
        }
        telem_batch_t b = { .source = "bench", .tags = tags, .ntags = 1,
                            .samples = s, .nsamples = k };
        const void *data;
        size_t size;
        if (telem_proto_encode_batch(enc, &b, &data, &size) != 0)
            bench_die("encode", "batch");
        zmq_send(push, data, size, 0);
    }
    int rc = bench_fin_and_sync(zctx, push, enc, telemd_ctl_endpoint(td),
                                (uint64_t) now ^ (uint64_t) (uintptr_t) td,
                                10000);
    if (rc)
        bench_die("fill", "sync: %s", telem_strerror(rc));
    telem_proto_encoder_destroy(&enc);
    zmq_close(push);
    zmq_ctx_term(zctx);
}

typedef struct {
    char dir[256];
    char nodefile[300];
    telemd_t *td[1 + S_B_NODES];
    char names[1 + S_B_NODES][16];
    int64_t now_ns;
} s_job_t;

static void
s_job_start(s_job_t *j)
{
    bench_tmpdir(j->dir, sizeof j->dir, "agg");
    snprintf(j->nodefile, sizeof j->nodefile, "%s/nodes", j->dir);
    FILE *f = fopen(j->nodefile, "w");
    if (!f)
        bench_die("node file", "%s", strerror(errno));
    j->now_ns = telem_now_ns();
    for (int i = 0; i <= S_B_NODES; i++) {
        if (i == 0)
            snprintf(j->names[i], sizeof j->names[i], "a0");
        else
            snprintf(j->names[i], sizeof j->names[i], "b%02d", i - 1);
        j->td[i] = bench_telemd_start(j->dir, j->names[i], 1, S_WINDOW_S, 0,
                                      1);
        fprintf(f, "%s\t%s\n", j->names[i], telemd_tcp_endpoint(j->td[i]));
        if (i == 0) {
            s_fill(j->td[i], "bench.a", "0", S_A_POINTS, 1, j->now_ns);
            continue;
        }
        for (int d = 0; d < S_B_SERIES; d++) {
            char dev[8];
            snprintf(dev, sizeof dev, "%d", d);
            s_fill(j->td[i], "bench.b", dev, S_B_POINTS, 10, j->now_ns);
        }
    }
    if (fclose(f) != 0)
        bench_die("node file", "%s", strerror(errno));
}

static void
s_job_stop(s_job_t *j)
{
    for (int i = 0; i <= S_B_NODES; i++)
        telemd_destroy(&j->td[i]);
    bench_rmtree(j->dir);
}

/* ---- telem_agg ------------------------------------------------------------ */

/* Starts telem_agg over the job; its pid, and its port from the url file. */
static pid_t
s_agg_start(const s_job_t *j, int *port)
{
    char bin[PATH_MAX], url_path[300];
    ssize_t len = readlink("/proc/self/exe", bin, sizeof bin - 1);
    if (len <= 0)
        bench_die("bench_agg", "readlink /proc/self/exe failed");
    bin[len] = '\0';
    char *slash = strrchr(bin, '/');
    size_t at = slash ? (size_t) (slash - bin) + 1 : 0;
    snprintf(bin + at, sizeof bin - at, "telem_agg");
    snprintf(url_path, sizeof url_path, "%s/telem_agg/url", j->dir);
    char *argv[] = { bin, "--port", "0", "--rundir", (char *) j->dir,
                     "--nodefile", (char *) j->nodefile, "--log-level",
                     "warn", NULL };
    pid_t pid;
    posix_spawn_file_actions_t fa;    /* its "serving" line: not ours */
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        bench_die("spawn telem_agg", "%s: %s", bin, strerror(rc));
    for (int i = 0; i < 2000; i++) {            /* up to 20 s */
        FILE *f = fopen(url_path, "r");
        if (f) {
            int ok = fscanf(f, "http://127.0.0.1:%d/", port) == 1;
            fclose(f);
            if (ok)
                return pid;
        }
        usleep(10000);
    }
    bench_die("telem_agg", "no %s after 20 s", url_path);
}

static void
s_agg_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* ---- a minimal HTTP/1.1 client ------------------------------------------- */

typedef struct {
    int fd;
    int port;
    char *buf;                 /* the last answer's body */
    size_t cap;
} s_http_t;

static void
s_http_connect(s_http_t *h)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t) h->port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (h->fd < 0 || connect(h->fd, (struct sockaddr *) &a, sizeof a) != 0)
        bench_die("connect telem_agg", "%s", strerror(errno));
}

static void
s_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            bench_die("http", "write: %s", strerror(errno));
        p += w;
        n -= (size_t) w;
    }
}

/* Reads until the head is complete and the body's Content-Length bytes
 * are in h->buf; returns the body's length (status must be 200). */
static size_t
s_http_read(s_http_t *h)
{
    size_t got = 0, head = 0, body = 0;
    for (;;) {
        if (got + 65536 > h->cap) {
            h->cap = (got + 65536) * 2;
            if (!(h->buf = realloc(h->buf, h->cap)))
                bench_die("http", "out of memory");
        }
        ssize_t r = read(h->fd, h->buf + got, h->cap - got - 1);
        if (r <= 0)
            bench_die("http", "read: %s", r ? strerror(errno) : "closed");
        got += (size_t) r;
        h->buf[got] = '\0';
        char *end = head ? NULL : strstr(h->buf, "\r\n\r\n");
        if (end) {
            head = (size_t) (end - h->buf) + 4;
            char *cl = strcasestr(h->buf, "\r\nContent-Length:");
            if (strncmp(h->buf, "HTTP/1.1 200", 12) != 0 || !cl || cl > end)
                bench_die("http", "answer: %.200s", h->buf);
            body = strtoul(cl + 17, NULL, 10);
        }
        if (head && got >= head + body) {
            memmove(h->buf, h->buf + head, body);
            h->buf[body] = '\0';
            return body;
        }
    }
}

/* One request: POST /api/query with `json`, or with json NULL GET
 * /api/version (the floor: the HTTP round trip and a tiny answer). */
static int64_t
s_http_once(s_http_t *h, const char *json, size_t *body_len)
{
    char req[4096];
    int n = json ? snprintf(req, sizeof req, "POST /api/query HTTP/1.1\r\n"
                            "Host: 127.0.0.1:%d\r\nContent-Type: "
                            "application/json\r\nContent-Length: %zu\r\n"
                            "\r\n%s", h->port, strlen(json), json)
                 : snprintf(req, sizeof req, "GET /api/version HTTP/1.1\r\n"
                            "Host: 127.0.0.1:%d\r\n\r\n", h->port);
    int64_t t0 = bench_now_ns();
    s_write_all(h->fd, req, (size_t) n);
    size_t len = s_http_read(h);
    int64_t dt = bench_now_ns() - t0;
    if (body_len)
        *body_len = len;
    return dt;
}

/* ---- the two kinds of request ----------------------------------------------- */

typedef struct {
    const char *name;
    char json[1024];
    const char *metric;
    const char *nodes[1];
    size_t nnodes;              /* 0: every node */
    size_t want_results, want_points, want_series;
    int64_t start_ns, end_ns;
} s_case_t;

static void
s_cases(const s_job_t *j, s_case_t *c)
{
    int64_t start_ms = (j->now_ns - 3700 * TELEM_NS_PER_SEC) / 1000000;
    int64_t end_ms = (j->now_ns + 600 * TELEM_NS_PER_SEC) / 1000000;
    c[0] = (s_case_t) { .name = "(a) 1 series x 3,600 points", .metric =
                        "bench.a", .nodes = { "a0" }, .nnodes = 1,
                        .want_results = 1, .want_points = S_A_POINTS,
                        .want_series = 1 };
    snprintf(c[0].json, sizeof c[0].json, "{\"start\":%lld,\"end\":%lld,"
             "\"queries\":[{\"metric\":\"bench.a\",\"aggregator\":\"sum\","
             "\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"host\","
             "\"filter\":\"a0\",\"groupBy\":false}]}]}", (long long) start_ms,
             (long long) end_ms);
    c[1] = (s_case_t) { .name = "(b) 64 nodes x 10 series x 360 points",
                        .metric = "bench.b", .want_results = S_B_NODES,
                        .want_points = S_B_POINTS,
                        .want_series = S_B_NODES * S_B_SERIES };
    snprintf(c[1].json, sizeof c[1].json, "{\"start\":%lld,\"end\":%lld,"
             "\"queries\":[{\"metric\":\"bench.b\",\"aggregator\":\"sum\","
             "\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"host\","
             "\"filter\":\"*\",\"groupBy\":true}]}]}", (long long) start_ms,
             (long long) end_ms);
    for (int k = 0; k < 2; k++) {
        c[k].start_ns = start_ms * 1000000;
        c[k].end_ns = end_ms * 1000000;
    }
}

/* Checks one answer of telem_agg: the results and points expected. */
static void
s_check_answer(const s_case_t *c, const char *body, size_t len)
{
    json_error_t e;
    json_t *a = json_loadb(body, len, 0, &e);
    size_t i;
    json_t *r;
    if (json_array_size(a) != c->want_results)
        bench_die(c->name, "%zu results, want %zu: %.200s",
                  json_array_size(a), c->want_results, body);
    json_array_foreach(a, i, r)
        if (json_object_size(json_object_get(r, "dps")) != c->want_points)
            bench_die(c->name, "result %zu: %zu points, want %zu", i,
                      json_object_size(json_object_get(r, "dps")),
                      c->want_points);
    json_decref(a);
}

static int64_t
s_ac_once(ac_t *ac, const s_case_t *c)
{
    ac_query_t q = { .metrics = &c->metric, .nmetrics = 1,
                     .start_ns = c->start_ns, .end_ns = c->end_ns,
                     .nodes = c->nnodes ? c->nodes : NULL,
                     .nnodes = c->nnodes, .timeout_ms = 5000 };
    ac_result_t *r = NULL;
    int64_t t0 = bench_now_ns();
    int rc = ac_query(ac, &q, &r);
    int64_t dt = bench_now_ns() - t0;
    if (rc || ac_result_nseries(r) != c->want_series)
        bench_die("ac_query", "%s: rc %s, %zu series", c->name,
                  telem_strerror(rc), ac_result_nseries(r));
    ac_result_destroy(&r);
    return dt;
}

/* What telem_agg does with the fetched series, timed alone without
 * sockets: the request parsed, the sub-query run (tsdb_exec_run: filters,
 * grouping, aggregation, the points to write) and the answer's text
 * written (tsdb_results_dump, what telem_agg hands the HTTP module). */
static void
s_parts(const s_case_t *c, ac_t *ac, s_lat_t *exec, s_lat_t *dump)
{
    ac_query_t aq = { .metrics = &c->metric, .nmetrics = 1,
                      .start_ns = c->start_ns, .end_ns = c->end_ns,
                      .nodes = c->nnodes ? c->nodes : NULL,
                      .nnodes = c->nnodes, .timeout_ms = 5000 };
    ac_result_t *r = NULL;
    if (ac_query(ac, &aq, &r) != 0)
        bench_die("ac_query", "%s", c->name);
    size_t n = ac_result_nseries(r);
    telem_series_t *series = calloc(n, sizeof *series);
    int64_t *lat[2] = { malloc(S_QUERIES * sizeof(int64_t)),
                        malloc(S_QUERIES * sizeof(int64_t)) };
    if (!series || !lat[0] || !lat[1])
        bench_die("bench_agg", "out of memory");
    for (size_t i = 0; i < n; i++)
        series[i] = *ac_result_series(r, i);
    for (int i = 0; i < S_QUERIES; i++) {
        tsdb_error_t err = { 0 };
        int64_t t0 = bench_now_ns();
        tsdb_query_t *q = tsdb_query_parse_json(c->json, strlen(c->json),
                                                c->end_ns / 1000000, &err);
        tsdb_results_t *results = tsdb_results_new();
        if (!q || !results
            || tsdb_exec_run(q, 0, series, n, results, &err) != 0)
            bench_die("tsdb", "%s: %s", c->name, err.message);
        int64_t t1 = bench_now_ns();
        char *text = tsdb_results_dump(results, NULL);
        int64_t t2 = bench_now_ns();
        if (!text)
            bench_die("tsdb", "%s: out of memory", c->name);
        lat[0][i] = t1 - t0;
        lat[1][i] = t2 - t1;
        free(text);
        tsdb_results_destroy(&results);
        tsdb_query_destroy(&q);
    }
    bench_summarise(lat[0], S_QUERIES, exec);
    bench_summarise(lat[1], S_QUERIES, dump);
    free(lat[0]);
    free(lat[1]);
    free(series);
    ac_result_destroy(&r);
}

static void
s_run_case(const s_case_t *c, ac_t *ac, s_http_t *h, s_lat_t *http,
           s_lat_t *acl, size_t *body_len)
{
    int64_t *lat[2] = { malloc(S_QUERIES * sizeof(int64_t)),
                        malloc(S_QUERIES * sizeof(int64_t)) };
    if (!lat[0] || !lat[1])
        bench_die("bench_agg", "out of memory");
    s_http_once(h, c->json, body_len);
    s_check_answer(c, h->buf, *body_len);
    for (int i = 0; i < S_WARMUP; i++) {
        s_http_once(h, c->json, NULL);
        s_ac_once(ac, c);
    }
    for (int b = 0; b < S_QUERIES; b += S_BLOCK) {
        for (int i = b; i < b + S_BLOCK; i++)
            lat[0][i] = s_http_once(h, c->json, NULL);
        for (int i = b; i < b + S_BLOCK; i++)
            lat[1][i] = s_ac_once(ac, c);
    }
    bench_summarise(lat[0], S_QUERIES, http);
    bench_summarise(lat[1], S_QUERIES, acl);
    free(lat[0]);
    free(lat[1]);
}

static void
s_row(const char *what, const s_lat_t *l)
{
    printf("  %-44s %9.2f %9.2f %9.2f\n", what, (double) l->p50 / 1e6,
           (double) l->p99 / 1e6, (double) l->max / 1e6);
}

typedef struct {
    s_case_t c[2];
    s_lat_t http[2], ac[2], exec[2], dump[2], floor;
    size_t body[2];
} s_figures_t;

static void
s_print(const s_figures_t *f)
{
    printf("\n%d sequential requests per case, telem_agg over %d nodes "
           "(4 threads)\n", S_QUERIES, 1 + S_B_NODES);
    printf("  %-44s %9s %9s %9s\n", "case (milliseconds)", "p50", "p99",
           "max");
    for (int k = 0; k < 2; k++) {
        printf("  %s: answer %zu bytes of JSON\n", f->c[k].name, f->body[k]);
        s_row("  POST /api/query (HTTP + JSON)", &f->http[k]);
        s_row("  ac_query, same series", &f->ac[k]);
        s_row("    alone: parse + tsdb_exec_run", &f->exec[k]);
        s_row("    alone: tsdb_results_dump (the text)", &f->dump[k]);
        printf("  %-44s %9.2f %9.2f\n", "  ratio HTTP+JSON / ac_query",
               (double) f->http[k].p50 / (double) f->ac[k].p50,
               (double) f->http[k].p99 / (double) f->ac[k].p99);
    }
    s_row("GET /api/version (the HTTP round trip alone)", &f->floor);
    printf("\ntargets\n");
    for (int k = 0; k < 2; k++) {
        double ratio = (double) f->http[k].p50 / (double) f->ac[k].p50;
        int64_t lim = k == 0 ? 10000000 : 100000000;
        printf("  %s: p99 <= %d ms        %9.2f ms  %s\n", f->c[k].name,
               k == 0 ? 10 : 100, (double) f->http[k].p99 / 1e6,
               bench_verdict(f->http[k].p99 <= lim));
        printf("  %s: HTTP+JSON adds <= 50 %% %8.0f %%    %s\n",
               f->c[k].name, (ratio - 1) * 100, bench_verdict(ratio <= 1.5));
        printf("    of which the bare HTTP round trip %20.0f %%\n",
               (double) f->floor.p50 / (double) f->ac[k].p50 * 100);
        char name[160], tgt[32], peer[64], r[32];
        snprintf(name, sizeof name, "telem_agg /api/query, %s, p99",
                 f->c[k].name);
        snprintf(tgt, sizeof tgt, "<= %d ms", k == 0 ? 10 : 100);
        bench_figure(name, tgt, NULL, NULL, f->http[k].p99 <= lim, "%.2f ms",
                     (double) f->http[k].p99 / 1e6);
        snprintf(name, sizeof name, "telem_agg HTTP + JSON over ac_query, "
                 "%s, p50", f->c[k].name);
        snprintf(peer, sizeof peer, "ac_query %.2f ms",
                 (double) f->ac[k].p50 / 1e6);
        snprintf(r, sizeof r, "%.2fx", ratio);
        bench_figure(name, "<= 1.5x ac_query", peer, r, ratio <= 1.5,
                     "%.2f ms", (double) f->http[k].p50 / 1e6);
    }
}

int
main(void)
{
    bench_print_machine("bench_agg");
    signal(SIGPIPE, SIG_IGN);
    static s_job_t job;
    static s_figures_t f;
    s_job_start(&job);
    int port = 0, err = 0;
    pid_t agg = s_agg_start(&job, &port);
    ac_t *ac = ac_connect(job.nodefile, 5000, &err);
    if (!ac)
        bench_die("ac_connect", "%s", telem_strerror(err));
    s_http_t h = { .fd = -1, .port = port };
    s_http_connect(&h);
    s_cases(&job, f.c);
    for (int k = 0; k < 2; k++) {
        s_run_case(&f.c[k], ac, &h, &f.http[k], &f.ac[k], &f.body[k]);
        s_parts(&f.c[k], ac, &f.exec[k], &f.dump[k]);
    }
    int64_t *lat = malloc(S_QUERIES * sizeof *lat);
    if (!lat)
        bench_die("bench_agg", "out of memory");
    for (int i = 0; i < S_QUERIES; i++)
        lat[i] = s_http_once(&h, NULL, NULL);
    bench_summarise(lat, S_QUERIES, &f.floor);
    free(lat);
    close(h.fd);
    free(h.buf);
    ac_close(&ac);
    s_agg_stop(agg);
    s_job_stop(&job);
    s_print(&f);
    return 0;
}
