/* agg_ops.c - the endpoints that change something: POST /api/put (samples
 * into a node's telemd) and POST /api/reboot (ask telem_launch to restart
 * the job without some nodes).
 *
 * put: OpenTSDB's body, one data point {"metric","timestamp","value",
 * "tags"} or an array of them; timestamp in seconds (up to 10 digits) or
 * milliseconds, value a number or a numeric string, at least one tag.
 * The "host" tag names the node (telemd sets "host" itself); without one
 * the point goes to the first node of the node file.  telemd takes
 * samples only on its own host (an ipc socket, never TCP), so a node
 * whose ingest socket is not on this host is refused per point with that
 * reason.  The points of each node go in batches under the ingest
 * socket's frame limit (TELEM_PROTO_INGEST_MAX), the last with a fin
 * token; the node's confirmation of that token (TELEM_CTL_SYNC) within
 * the deadline is what makes them count as stored.  Answer as OpenTSDB:
 * 204 when all were stored; with ?summary or ?details 200 and {"success",
 * "failed"} (and "errors" with ?details); failures without them are 400
 * "One or more data points had errors".
 *
 * reboot (Dragon's extension): {"hostnames":["n2",...]} (or a bare JSON
 * array of names) becomes one restart request (docs/protocol.md) to the
 * launcher's restart socket, the path telem_watch uses; the launcher's
 * acknowledgement within the deadline is the answer: 200 {"accepted":
 * true,"message"}, 409 when refused, 503 when no launcher answered. */
#include "agg.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_proto.h"
#include "telem_proto_watch.h"
#include "telem_sock_raw.h"
#include "telem_time.h"
#include "tsdb_time.h"

#define S_POINTS_MAX 65536
#define S_SYNC_PAUSE_NS 2000000     /* between two SYNC questions: 2 ms */

typedef struct {
    json_t *point;             /* borrowed from the body */
    long node;                 /* index in the analysis client */
    const char *error;         /* NULL: fine so far */
} s_point_t;

static const telem_sock_opts_t s_opts = {
    .max_msg = -1, .sndhwm = 0, .rcvhwm = 0, .linger_ms = 2000,
    .sndtimeo_ms = 2000, .immediate = 0, .reconnect_ivl_max_ms = 0
};

/* The value of a point (a number or a numeric string) into *v. */
static int
s_value(json_t *j, double *v)
{
    if (json_is_number(j)) {
        *v = json_number_value(j);
        return 0;
    }
    const char *s = json_string_value(j);
    char *end = NULL;
    if (!s || !*s)
        return -1;
    *v = strtod(s, &end);
    return *end ? -1 : 0;
}

static int
s_tags_ok(json_t *tags)
{
    const char *k;
    json_t *v;
    json_object_foreach(tags, k, v) {
        const char *s = json_string_value(v);
        if (!*k || strlen(k) > TELEM_NAME_MAX || !s || !*s
            || strlen(s) > TELEM_NAME_MAX)
            return 0;
    }
    return 1;
}

/* A point's timestamp (seconds or milliseconds) in ns, INT64_MAX past
 * what int64 ns hold (the year 2262). */
static int64_t
s_ts_ns(json_t *p)
{
    json_int_t t = json_integer_value(json_object_get(p, "timestamp"));
    return tsdb_time_ns(t < INT64_C(10000000000) ? (int64_t) t * 1000
                                                 : (int64_t) t);
}

/* Checks a point and finds its node; sets p->error on a bad one. */
static void
s_check(ac_t *ac, const char *rundir, s_point_t *p)
{
    json_t *m = json_object_get(p->point, "metric");
    json_t *ts = json_object_get(p->point, "timestamp");
    json_t *tags = json_object_get(p->point, "tags");
    double v;
    const char *host = json_string_value(json_object_get(tags, "host"));
    p->node = host ? ac_node_find(ac, host) : 0;
    if (!json_is_string(m) || !*json_string_value(m)
        || strlen(json_string_value(m)) > TELEM_NAME_MAX)
        p->error = "Metric name was empty, too long or not a string";
    else if (!json_is_integer(ts) || json_integer_value(ts) <= 0
             || s_ts_ns(p->point) == INT64_MAX)
        p->error = "Invalid timestamp";
    else if (s_value(json_object_get(p->point, "value"), &v) || !isfinite(v))
        p->error = "Unable to parse value to a number";
    else if (!json_is_object(tags) || json_object_size(tags) == 0)
        p->error = "Missing tags";
    else if (json_object_size(tags) > TELEM_TAGS_MAX)
        p->error = "Too many tags";
    else if (!s_tags_ok(tags))
        p->error = "Tag keys and values must be strings of 1 to 255 bytes";
    else if (p->node < 0)
        p->error = "No such node: the host tag names no node of the job";
    else {
        char path[TELEM_PATH_MAX + 64];
        struct stat st;
        if (telem_node_path(path, sizeof path, rundir,
                            ac_node_name(ac, (size_t) p->node), "ingest.sock")
            || stat(path, &st) != 0)
            p->error = "The node's telemd takes samples only on its own host:"
                       " send the point to that node's telem_agg";
    }
}

/* An upper bound on the bytes sample `s` takes in a batch: the array and
 * its numbers (32 bytes at most), the name and each tag with their string
 * headers (2 bytes each, strings of at most 255 bytes). */
static size_t
s_sample_bound(const telem_sample_t *s)
{
    size_t n = 32 + 2 + strlen(s->metric);
    for (uint32_t i = 0; i < s->ntags; i++)
        n += 4 + strlen(s->tags[i].key) + strlen(s->tags[i].value);
    return n;
}

/* Sends sm[0..k) on `sock` in batches that each stay under the ingest
 * socket's frame limit (TELEM_PROTO_INGEST_MAX; a larger frame would make
 * telemd drop the connection), the last one carrying `token`: the batches
 * travel in order on one connection, so the token's confirmation covers
 * them all.  0 or a telem_err_t. */
static int
s_send_batches(void *sock, telem_proto_encoder_t *enc, telem_sample_t *sm,
               size_t k, uint64_t token)
{
    const size_t budget = TELEM_PROTO_INGEST_MAX - 1024;  /* the header */
    size_t i = 0;
    int rc = 0;
    do {
        size_t j = i, bytes = 0;
        while (j < k && (j == i || bytes + s_sample_bound(&sm[j]) <= budget))
            bytes += s_sample_bound(&sm[j++]);
        telem_batch_t b = { "telem_agg", NULL, 0, sm + i, (uint32_t) (j - i),
                            j == k ? token : 0 };
        const void *data = NULL;
        size_t size = 0;
        rc = telem_proto_encode_batch(enc, &b, &data, &size);
        if (!rc && zmq_send(sock, data, size, 0) < 0)
            rc = TELEM_EIO;
        i = j;
    } while (!rc && i < k);
    return rc;
}

/* The samples of node `node` into sm[] (their tags into tg[]); returns
 * how many. */
static size_t
s_node_samples(s_point_t *pts, size_t n, long node, telem_sample_t *sm,
               telem_tag_t *tg)
{
    size_t j = 0, t = 0;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].error || pts[i].node != node)
            continue;
        json_t *p = pts[i].point, *v;
        const char *key;
        sm[j] = (telem_sample_t) { .metric = json_string_value(
            json_object_get(p, "metric")), .tags = tg + t, .level = 1,
            .ts_ns = s_ts_ns(p) };
        s_value(json_object_get(p, "value"), &sm[j].value);
        json_object_foreach(json_object_get(p, "tags"), key, v)
            if (strcmp(key, "host") != 0) {
                tg[t++] = (telem_tag_t) { key, json_string_value(v) };
                sm[j].ntags++;
            }
        j++;
    }
    return j;
}

/* The samples of node `node` onto its ingest socket, in batches under the
 * socket's frame limit; the fin token of the last into *token.  0 or a
 * telem_err_t. */
static int
s_send_node(agg_t *self, ac_t *ac, s_point_t *pts, size_t n, long node,
            uint64_t *token)
{
    size_t k = 0, ntags = 0;
    for (size_t i = 0; i < n; i++)
        if (!pts[i].error && pts[i].node == node) {
            k++;
            ntags += json_object_size(json_object_get(pts[i].point, "tags"));
        }
    telem_sample_t *sm = calloc(k ? k : 1, sizeof *sm);
    telem_tag_t *tg = calloc(ntags ? ntags : 1, sizeof *tg);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    int rc = sm && tg && enc ? 0 : TELEM_ENOMEM;
    if (!rc)
        k = s_node_samples(pts, n, node, sm, tg);
    *token = ((uint64_t) telem_now_ns() << 8) ^ (uint64_t) (uintptr_t) pts
             ^ (uint64_t) node;
    char path[TELEM_PATH_MAX + 64], ep[TELEM_PATH_MAX + 80];
    if (!rc)
        rc = telem_node_path(path, sizeof path, agg_rundir(self),
                             ac_node_name(ac, (size_t) node), "ingest.sock");
    void *sock = NULL;
    if (!rc) {
        snprintf(ep, sizeof ep, ">ipc://%s", path);
        sock = telem_sock_raw_new(agg_zctx(self), ZMQ_PUSH, &s_opts, ep, &rc);
    }
    if (!rc)
        rc = s_send_batches(sock, enc, sm, k, *token);
    if (sock)
        zmq_close(sock);
    telem_proto_encoder_destroy(&enc);
    free(sm);
    free(tg);
    return rc;
}

/* Asks node `node` whether it has seen `token` until it has or the
 * deadline passes: the batch travels on the node's ingest socket and the
 * question on its query socket, so the first answer may come before the
 * batch is filed.  1 when confirmed. */
static int
s_synced(ac_t *ac, long node, uint64_t token, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = (deadline_ns - telem_mono_ns()) / TELEM_NS_PER_MS;
        if (left <= 0)
            return 0;
        ac_status_result_t *st = NULL;
        ac_control(ac, node, TELEM_CTL_SYNC, (int64_t) token, (int) left,
                   &st);
        int synced = st && ac_status_result_synced(st, 0);
        int answered = st && ac_status_result_code(st, 0) == 0;
        ac_status_result_destroy(&st);
        if (synced)
            return 1;
        if (!answered)
            return 0;                  /* the node did not answer in time */
        struct timespec pause = { 0, S_SYNC_PAUSE_NS };
        nanosleep(&pause, NULL);       /* still filing: ask again */
    }
}

/* Sends and confirms the points of every node; marks failures. */
static void
s_store(agg_t *self, ac_t *ac, s_point_t *pts, size_t n, int64_t deadline_ns)
{
    for (long node = 0; node < (long) ac_node_count(ac); node++) {
        int any = 0;
        for (size_t j = 0; j < n && !any; j++)
            any = !pts[j].error && pts[j].node == node;
        if (!any)
            continue;
        uint64_t token = 0;
        int rc = s_send_node(self, ac, pts, n, node, &token);
        int synced = !rc && s_synced(ac, node, token, deadline_ns);
        for (size_t j = 0; j < n; j++)
            if (!pts[j].error && pts[j].node == node && !synced)
                pts[j].error = rc ? "The points could not be sent to the node"
                                  : "The node did not confirm the points "
                                    "within the deadline";
    }
}

static void
s_put_answer(telem_http_req_t *req, s_point_t *pts, size_t n)
{
    size_t failed = 0;
    json_t *errors = json_array();
    for (size_t i = 0; i < n; i++)
        if (pts[i].error) {
            failed++;
            json_array_append_new(errors, json_pack("{s:O, s:s}", "datapoint",
                                                    pts[i].point, "error",
                                                    pts[i].error));
        }
    int details = telem_http_req_arg(req, "details") != NULL;
    if (details || telem_http_req_arg(req, "summary")) {
        json_t *o = json_pack("{s:I, s:I}", "success",
                              (json_int_t) (n - failed), "failed",
                              (json_int_t) failed);
        if (details)
            json_object_set(o, "errors", errors);
        telem_http_reply_json(req, failed ? 400 : 200, o);
    } else if (failed)
        telem_http_reply_error(req, 400, "One or more data points had errors",
                               "Please see the TSD logs or append \"details\" "
                               "to the put request");
    else
        telem_http_reply(req, 204, "application/json", "", 0);
    json_decref(errors);
}

void
agg_put(agg_t *self, telem_http_req_t *req)
{
    int64_t deadline_ns = telem_mono_ns()
                          + (int64_t) agg_timeout_ms(self) * TELEM_NS_PER_MS;
    size_t len = 0;
    const char *body = telem_http_req_body(req, &len);
    json_error_t e;
    json_t *j = json_loadb(body, len, 0, &e);
    if (json_is_object(j)) {
        json_t *one = json_array();
        json_array_append_new(one, j);
        j = one;
    }
    size_t n = json_array_size(j);
    if (!json_is_array(j) || n == 0 || n > S_POINTS_MAX) {
        telem_http_reply_error(req, 400, !j ? "Unable to parse the given JSON"
                               : "The body must hold 1 to 65536 data points",
                               !j ? e.text : "");
        json_decref(j);
        return;
    }
    char why[512] = "";
    ac_t *ac = agg_ac_get(self, why, sizeof why);
    s_point_t *pts = ac ? calloc(n, sizeof *pts) : NULL;
    if (!pts)
        telem_http_reply_error(req, 503, "no node of the job can be asked",
                               why);
    for (size_t i = 0; pts && i < n; i++) {
        pts[i].point = json_array_get(j, i);
        s_check(ac, agg_rundir(self), &pts[i]);
    }
    if (pts) {
        s_store(self, ac, pts, n, deadline_ns);
        s_put_answer(req, pts, n);
    }
    if (ac)
        agg_ac_put(self, ac);
    free(pts);
    json_decref(j);
}

/* ---- reboot ------------------------------------------------------------ */

/* The names of the body into names[] (borrowed from j); count or -1. */
static long
s_hostnames(json_t *j, const char **names, size_t cap)
{
    json_t *list = json_is_array(j) ? j : json_object_get(j, "hostnames");
    size_t i, n = json_array_size(list);
    json_t *v;
    if (!json_is_array(list) || n == 0 || n > cap)
        return -1;
    json_array_foreach(list, i, v)
        if (!(names[i] = json_string_value(v)) || !*names[i])
            return -1;
    return (long) n;
}

/* Sends the request and waits for its ack until the deadline.  0 with
 * *code and msg filled, or a telem_err_t (TELEM_ETIMEDOUT: no ack). */
static int
s_ask_launcher(agg_t *self, const telem_restart_t *m, int *code, char *msg,
               size_t msg_size)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    char ep[TELEM_PATH_MAX + 40];
    snprintf(ep, sizeof ep, ">%s", agg_launch_ep(self));
    telem_sock_opts_t o = s_opts;
    o.linger_ms = 0;
    o.keys = agg_keys(self);
    int rc = enc && dec ? 0 : TELEM_ENOMEM;
    void *sock = rc ? NULL : telem_sock_raw_new(agg_zctx(self), ZMQ_DEALER,
                                                &o, ep, &rc);
    const void *data = NULL;
    size_t size = 0;
    if (!rc)
        rc = telem_proto_encode_restart(enc, m, &data, &size);
    if (!rc && zmq_send(sock, data, size, ZMQ_DONTWAIT) < 0)
        rc = TELEM_ECONN;
    int64_t deadline = telem_mono_ns()
                       + (int64_t) agg_timeout_ms(self) * TELEM_NS_PER_MS;
    for (int left; !rc; ) {
        left = (int) ((deadline - telem_mono_ns()) / TELEM_NS_PER_MS);
        zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
        if (left <= 0 || zmq_poll(&it, 1, left) <= 0) {
            rc = TELEM_ETIMEDOUT;
            break;
        }
        zmq_msg_t f;
        zmq_msg_init(&f);
        telem_msg_t r;
        if (zmq_msg_recv(&f, sock, 0) >= 0
            && telem_proto_decode(dec, zmq_msg_data(&f), zmq_msg_size(&f),
                                  &r) == 0
            && (int) r.type == TELEM_MSG_RESTART_ACK && r.u.restart_ack.id == m->id) {
            *code = r.u.restart_ack.code;
            snprintf(msg, msg_size, "%s", r.u.restart_ack.message
                     ? r.u.restart_ack.message : "");
            zmq_msg_close(&f);
            break;
        }
        zmq_msg_close(&f);             /* another id or not an ack */
    }
    if (sock)
        zmq_close(sock);
    telem_proto_encoder_destroy(&enc);
    telem_proto_decoder_destroy(&dec);
    return rc;
}

void
agg_reboot(agg_t *self, telem_http_req_t *req)
{
    size_t len = 0;
    const char *body = telem_http_req_body(req, &len);
    json_t *j = json_loadb(body, len, 0, NULL);
    const char *names[256];
    long n = s_hostnames(j, names, 256);
    if (n < 0) {
        telem_http_reply_error(req, 400, "Expected {\"hostnames\": [\"node\", "
                               "...]} with 1 to 256 names", "");
        json_decref(j);
        return;
    }
    const char *det = "telem_agg";
    telem_restart_t m = { 0 };
    m.id = (uint64_t) telem_now_ns();
    m.ts_ns = telem_now_ns();
    m.reason = "asked for through telem_agg's /api/reboot";
    m.exclude = names;
    m.nexclude = (uint32_t) n;
    m.detectors = &det;
    m.ndetectors = 1;
    int code = 0;
    char msg[512] = "";
    int rc = s_ask_launcher(self, &m, &code, msg, sizeof msg);
    if (rc)
        telem_http_reply_error(req, 503, "no acknowledgement from the "
                               "launcher", rc == TELEM_ETIMEDOUT
                               ? "no telem_launch answered within the deadline"
                                 "; the job was not restarted"
                               : telem_strerror(rc));
    else if (code)
        telem_http_reply_error(req, 409, "the launcher refused the restart",
                               msg);
    else
        telem_http_reply_json(req, 200, json_pack("{s:b, s:s}", "accepted", 1,
                                                  "message", msg));
    json_decref(j);
}
