/* fuzz_http.c - libFuzzer target: the HTTP API's request path after the
 * HTTP parser (analysis/agg: agg_handle()'s routing, /api/query's JSON
 * body and query string, /api/suggest, /api/search/lookup, the job and
 * snapshot endpoints, the dashboard's files) over recorded data, and
 * /api/put's body parser over a live source, in memory.
 *
 * HTTP itself is parsed by libmicrohttpd; what telem parses is what it
 * hands a handler: method, path, arguments, body.  So the target builds
 * the request object the HTTP module would (telem_http_int.h; tests may
 * use private headers) without a connection, calls the handler and takes
 * the response it made.  The data source is a dump file written once at
 * start-up (two nodes, three series, a meta, a snapshot, an annotation),
 * served through telem_view's source (agg_dump.c).  /api/put goes to an
 * aggregator over a live source whose nodes run no telemd here: its
 * points are parsed and checked, and none is sent (a node's ingest
 * socket must be on this host; none is).  /api/reboot is left to the
 * recorded source (a 501): the live one would wait for a launcher.
 *
 * Input: a flag byte (method), a path line, a query-string line
 * (k=v&k=v, %-escapes decoded as libmicrohttpd does), then the body.
 * Oracles beyond the sanitizers: every request gets exactly one response
 * with a status in 100..599.  A query that fills too many buckets to run
 * on every input is skipped (fuzz_tsdb.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agg.h"
#include "agg_dump.h"
#include "fuzz.h"
#include "fuzz_tsdb.h"
#include "telem_block.h"
#include "telem_http_int.h"
#include "telem_log.h"
#include "telem_seg.h"
#include "telem_time.h"

#define S_T0 INT64_C(1700000000000000000)   /* ns: the data's first point */

typedef struct {
    agg_dump_t *dump;
    agg_t *view;                  /* over the dump */
    agg_t *live;                  /* over nodes that run nothing here */
} s_world_t;

static s_world_t s_w;

/* One block of n points a second apart from t0, values v0, v0 + 1, ... */
static void
s_put_series(telem_dump_t *d, const char *node, const char *key, size_t klen,
             int64_t t0, double v0, uint32_t n)
{
    int64_t ts[64];
    double v[64];
    for (uint32_t i = 0; i < n; i++) {
        ts[i] = t0 + (int64_t) i * 1000000000;
        v[i] = v0 + i;
    }
    unsigned char *b = NULL;
    size_t len = 0;
    if (telem_block_encode(ts, v, n, NULL, &b, &len) != 0)
        abort();
    telem_chunk_t c = { .key = key, .key_len = (uint32_t) klen, .metric = key,
                        .first_seq = 0, .block = b, .block_len = len,
                        .closed = 1 };
    if (telem_dump_put_chunk(d, node, &c) != 0)
        abort();
    free(b);
}

static void
s_write_dump(const char *path)
{
    telem_dump_t *d = telem_dump_open(path, NULL);
    if (!d)
        abort();
    static const char k1[] = "cpu_percent";
    static const char k2[] = "gpu.util\0gpu\0" "0";
    static const char k3[] = "train.loss\0rank\0" "1";
    s_put_series(d, "n1", k1, sizeof k1, S_T0, 10, 60);
    s_put_series(d, "n2", k1, sizeof k1, S_T0 + 500000000, 20, 60);
    s_put_series(d, "n1", k2, sizeof k2, S_T0, 50, 30);
    s_put_series(d, "n2", k3, sizeof k3, S_T0, 3, 10);
    telem_meta_t m = { "cpu_percent", TELEM_METRIC_GAUGE, "percent", "busy" };
    const char snap[] = "{\"schema\":1,\"node\":\"n1\",\"cpu\":{\"cores\":2}}";
    const char note[] = "{\"detector\":\"slowgpu\",\"text\":\"n2 gpu 0 slow\"}";
    if (telem_dump_put_meta(d, "n1", &m) != 0
        || telem_dump_put_snapshot(d, "n1", snap, sizeof snap - 1, S_T0) != 0
        || telem_dump_put_annotation(d, TELEM_SEG_NOTE_EVENT,
                                     S_T0 / 1000000 + 5000, note,
                                     sizeof note - 1) != 0
        || telem_dump_close(&d) != 0)
        abort();
}

/* The live aggregator's run directory and node file: two nodes whose
 * sockets do not exist. */
static agg_t *
s_live(const char *dir)
{
    char nodefile[FZ_PATH_MAX], text[3 * FZ_PATH_MAX], ep[FZ_PATH_MAX];
    snprintf(nodefile, sizeof nodefile, "%s/nodes", dir);
    snprintf(text, sizeof text, "n1\tipc://%s/n1/ctl.sock\n"
             "n2\tipc://%s/n2/ctl.sock\n", dir, dir);
    if (fz_write(nodefile, text, strlen(text)) != 0)
        abort();
    snprintf(ep, sizeof ep, "ipc://%s/launch.sock", dir);
    agg_cfg_t cfg = { .nodefile = nodefile, .rundir = dir, .launch_ep = ep,
                      .timeout_ms = 50, .pool = 1 };
    return agg_new(&cfg, NULL);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    telem_log_init("fuzz_http", TELEM_LOG_ERROR);
    const char *dir = fz_scratch();
    char path[FZ_PATH_MAX], why[256];
    snprintf(path, sizeof path, "%s/job" TELEM_DUMP_SUFFIX, dir);
    s_write_dump(path);
    const char *files[] = { path };
    s_w.dump = agg_dump_new(files, 1, why, sizeof why);
    agg_cfg_t cfg = { .src_vt = &agg_dump_vt, .src = s_w.dump,
                      .rundir = "/" };
    s_w.view = s_w.dump ? agg_new(&cfg, NULL) : NULL;
    s_w.live = s_live(dir);
    if (!s_w.view || !s_w.live) {
        fprintf(stderr, "fuzz_http: cannot set up: %s\n", why);
        abort();
    }
    return 0;
}

/* Decodes %XX escapes in place, as libmicrohttpd does for arguments. */
static void
s_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        unsigned hi, lo;
        if (r[0] == '%' && sscanf(r + 1, "%1x%1x", &hi, &lo) == 2) {
            *w++ = (char) (hi << 4 | lo);
            r += 2;
        } else {
            *w++ = *r == '+' ? ' ' : *r;
        }
    }
    *w = '\0';
}

/* Splits the query string (modified in place) into the request's args. */
static void
s_args(telem_http_req_t *r, char *qs)
{
    size_t n = 1;
    for (char *p = qs; *p; p++)
        n += *p == '&';
    r->args = calloc(n, sizeof *r->args);
    if (!r->args)
        abort();
    r->args_cap = n;
    for (char *tok = strtok(qs, "&"); tok; tok = strtok(NULL, "&")) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq++ = '\0';
        s_unescape(tok);
        if (eq)
            s_unescape(eq);
        r->args[r->nargs].key = tok;
        r->args[r->nargs++].value = eq ? eq : "";
    }
}

/* A query that fills too many buckets to run on every input
 * (fuzz_tsdb.h), parsed as agg_query.c parses it. */
static int
s_heavy(const telem_http_req_t *r)
{
    if (strncmp(r->path, "/api/query", 10) != 0)
        return 0;
    tsdb_error_t e;
    int64_t now = telem_now_ns() / 1000000;
    tsdb_query_t *q;
    if (strcmp(r->method, "POST") == 0) {
        q = tsdb_query_parse_json(r->body ? r->body : "", r->body_len, now, &e);
    } else {
        const char *k[256], *v[256];
        size_t n = r->nargs < 256 ? r->nargs : 256;
        for (size_t i = 0; i < n; i++) {
            k[i] = r->args[i].key;
            v[i] = r->args[i].value;
        }
        q = tsdb_query_parse_args(k, v, n, now, &e);
    }
    int heavy = q && fz_tsdb_heavy(q);
    tsdb_query_destroy(&q);
    return heavy;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = { "GET", "POST", "HEAD", "PUT" };
    fz_in_t in = { data, size };
    const char *method = methods[fz_u8(&in) & 3];
    char *path = fz_token(&in, '\n'), *qs = fz_token(&in, '\n');
    telem_http_req_t *r = calloc(1, sizeof *r);
    if (!path || !qs || !r)
        abort();
    r->method = method;
    r->path = path;
    r->server_name = "fuzz_http";
    r->max_body = 1u << 20;
    s_args(r, qs);
    if (in.n && thttp_req_append(r, (const char *) in.p, in.n) != 0)
        abort();
    int put = strncmp(path, "/api/put", 8) == 0
              && (path[8] == '\0' || (path[8] == '/' && path[9] == '\0'));
    if (s_heavy(r)) {
        thttp_req_destroy(&r);
        free(path);
        free(qs);
        return 0;
    }
    agg_handle(r, put ? s_w.live : s_w.view);
    FZ_CHECK(r->replied);
    unsigned status = 0;
    struct MHD_Response *resp = thttp_req_take_response(r, &status);
    FZ_CHECK(resp && status >= 100 && status <= 599);
    MHD_destroy_response(resp);
    thttp_req_destroy(&r);
    free(path);
    free(qs);
    return 0;
}
