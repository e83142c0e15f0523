/* test_watch.c - the watcher's parts without a cluster: detector specs,
 * query results turned into detector input, a run that names the slow
 * device, control requests, text and JSON output of awkward host names,
 * the --exec action, and the control and restart sockets with a small
 * receiving end playing the launcher.
 */
#include "watch.h"
#include "watch_net.h"
#include "watch_out.h"
#include "telem_time.h"

#include <czmq.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define T0 INT64_C(1700000000000000000)
#define SEC INT64_C(1000000000)

/* ---- detector specs ---------------------------------------------------- */

static void
test_specs(void)
{
    watch_t *watch = watch_new(NULL);
    char why[256];
    CHECK_RC(watch_add_detector(watch, "slowgpu", why, sizeof why), 0);
    CHECK_RC(watch_add_detector(watch, "slowgpu:effect=0.2,k=3,n=4", why,
                                sizeof why), 0);
    CHECK_RC(watch_add_detector(watch, "hot=threshold:metric=cpu_percent,op=>=,"
                             "value=95", why, sizeof why), 0);
    CHECK(watch_ndetectors(watch) == 3);
    CHECK(watch_find(watch, "slowgpu-2") != NULL);
    char v[64];
    CHECK_RC(det_get(watch_find(watch, "slowgpu-2"), "k", v, sizeof v), 0);
    CHECK(strcmp(v, "3") == 0);
    CHECK_RC(det_get(watch_find(watch, "hot"), "op", v, sizeof v), 0);
    CHECK(strcmp(v, ">=") == 0);
    CHECK_RC(watch_add_detector(watch, "nope", why, sizeof why),
             TELEM_ENOTFOUND);
    CHECK(strstr(why, "nope") != NULL);
    CHECK_RC(watch_add_detector(watch, "threshold", why, sizeof why),
             TELEM_EINVAL);
    CHECK(strstr(why, "metric") != NULL);
    CHECK_RC(watch_add_detector(watch, "slowgpu:k=6", why, sizeof why),
             TELEM_EINVAL);
    CHECK_RC(watch_add_detector(watch, "slowgpu:effect", why, sizeof why),
             TELEM_EINVAL);
    CHECK_RC(watch_add_detector(watch, "hot=heartbeat", why, sizeof why),
             TELEM_EINVAL);                    /* label taken */
    CHECK(watch_ndetectors(watch) == 3);
    CHECK_RC(watch_set_spec(watch, "hot.value=80", why, sizeof why), 0);
    CHECK_RC(watch_set_spec(watch, "slowgpu.effect=abc", why, sizeof why),
             TELEM_EINVAL);
    CHECK_RC(watch_set_spec(watch, "cold.value=1", why, sizeof why),
             TELEM_ENOTFOUND);
    CHECK_RC(watch_set_spec(watch, "novalue", why, sizeof why), TELEM_EINVAL);
    CHECK_RC(watch_tick(watch, T0), TELEM_ESTATE);   /* no analysis client */
    watch_destroy(&watch);
    watch_destroy(&watch);
}

/* ---- from query results to a run --------------------------------------- */

enum { NDEV = 4, NROUND = 6 };

typedef struct {
    char host[NDEV][32], gpu[NDEV][8];
    telem_tag_t tags[NDEV][3];
    int64_t ts[NDEV][NROUND];
    double val[NDEV][NROUND];
    telem_series_t s[NDEV];
} table_t;

/* Four devices on two nodes (one oddly named); device 3 is 30 % slower. */
static void
table_fill(table_t *t)
{
    for (int i = 0; i < NDEV; i++) {
        snprintf(t->host[i], sizeof t->host[i], "%s", i < 2 ? "n1"
                 : "n \"two\"\\");
        snprintf(t->gpu[i], sizeof t->gpu[i], "%d", i % 2);
        t->tags[i][0] = (telem_tag_t) { "gpu", t->gpu[i] };
        t->tags[i][1] = (telem_tag_t) { "group", "cg" };
        t->tags[i][2] = (telem_tag_t) { "host", t->host[i] };
        for (int r = 0; r < NROUND; r++) {
            t->ts[i][r] = T0 + r * SEC;
            t->val[i][r] = 0.01 * (i == 3 ? 1.3 : 1 + 0.001 * (r % 3));
        }
        t->s[i] = (telem_series_t) {
            .metric = "cg_dgemm_seconds", .tags = t->tags[i], .ntags = 3,
            .ts = t->ts[i], .values = t->val[i], .npoints = NROUND,
        };
    }
}

static void
test_input_and_run(void)
{
    static table_t t;
    table_fill(&t);
    watch_input_t *in = watch_input_new();
    for (int i = 0; i < NDEV; i++)
        CHECK_RC(watch_input_add(in, t.host[i], &t.s[i], 0), 0);
    CHECK_RC(watch_input_add(in, "n1", &t.s[0], 1), 0);
    const char *nodes[] = { "n1", t.host[2] };
    det_input_t di = { .now_ns = T0 + NROUND * SEC, .nodes = nodes,
                       .nnodes = 2 };
    watch_input_fill(in, &di);
    CHECK(di.nseries == NDEV && di.nlatest == 1);
    CHECK(di.series[3].device && strcmp(di.series[3].device, "1") == 0);
    CHECK(di.series[3].ntags == 3 &&
          strcmp(di.series[3].tags[2].value, t.host[3]) == 0);
    CHECK(di.series[2].val == t.val[2] && di.series[2].n == NROUND);
    watch_t *watch = watch_new(NULL);
    char why[256];
    CHECK_RC(watch_add_detector(watch, "slowgpu:noise=0,settle=0", why,
                                sizeof why),
             0);                /* 6 rounds: judged from the first */
    CHECK_RC(watch_run(watch, &di), 0);
    const det_events_t *evs = watch_events(watch);
    CHECK(det_events_count(evs) == 1);
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && e->nnodes == 1 && strcmp(e->nodes[0], t.host[3]) == 0);
    CHECK(e && e->ndevices == 1 && strcmp(e->devices[0].device, "1") == 0);
    CHECK(watch_stats(watch)->events == 1);
    watch_input_clear(in);
    watch_input_fill(in, &di);
    CHECK(di.nseries == 0 && di.nlatest == 0);
    watch_input_destroy(&in);
    watch_destroy(&watch);
}

/* ---- control ----------------------------------------------------------- */

static const char *
row(const telem_watch_ctl_reply_t *r, const char *det, const char *key)
{
    for (uint32_t i = 0; i < r->nrows; i++)
        if (strcmp(r->rows[i].detector, det) == 0 &&
            strcmp(r->rows[i].key, key) == 0)
            return r->rows[i].value;
    return NULL;
}

static void
test_control(void)
{
    watch_t *watch = watch_new(NULL);
    char why[256];
    CHECK_RC(watch_add_detector(watch, "slowgpu", why, sizeof why), 0);
    CHECK_RC(watch_add_detector(watch, "heartbeat:timeout=3", why, sizeof why),
             0);
    const char *extra[] = { "pub", "ipc://x" };
    telem_watch_ctl_t q = { 5, TELEM_WCTL_STATUS, "", "", "" };
    const telem_watch_ctl_reply_t *r = watch_control(watch, &q, extra, 2);
    CHECK(r->id == 5 && r->code == 0);
    CHECK(row(r, "", "ticks") && strcmp(row(r, "", "ticks"), "0") == 0);
    CHECK(row(r, "", "pub") && strcmp(row(r, "", "pub"), "ipc://x") == 0);
    CHECK(row(r, "slowgpu", "state") &&
          strcmp(row(r, "slowgpu", "state"), "running") == 0);
    CHECK(row(r, "slowgpu", "flagged") != NULL);
    CHECK(row(r, "heartbeat", "lost") != NULL);

    q = (telem_watch_ctl_t) { 6, TELEM_WCTL_THRESHOLDS, "", "", "" };
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == 0 && row(r, "heartbeat", "timeout") &&
          strcmp(row(r, "heartbeat", "timeout"), "3") == 0);
    CHECK(row(r, "slowgpu", "effect") &&
          strcmp(row(r, "slowgpu", "effect"), "0.06") == 0);
    q.detector = "heartbeat";
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == 0 && row(r, "slowgpu", "effect") == NULL);

    q = (telem_watch_ctl_t) { 7, TELEM_WCTL_SET, "slowgpu", "effect", "0.15" };
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == 0 && strstr(r->message, "0.06 -> 0.15") != NULL);
    char v[32];
    det_get(watch_find(watch, "slowgpu"), "effect", v, sizeof v);
    CHECK(strcmp(v, "0.15") == 0);
    q.value = "-1";
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == TELEM_EINVAL && strstr(r->message, "range") != NULL);
    q.param = "nope";
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == TELEM_ENOTFOUND);

    q = (telem_watch_ctl_t) { 8, TELEM_WCTL_PAUSE, "heartbeat", "", "" };
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == 0 && det_paused(watch_find(watch, "heartbeat")));
    q.op = TELEM_WCTL_RESUME;
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == 0 && !det_paused(watch_find(watch, "heartbeat")));
    q.detector = "ghost";
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == TELEM_ENOTFOUND && strstr(r->message, "slowgpu") != NULL);
    q.op = 99;
    r = watch_control(watch, &q, NULL, 0);
    CHECK(r->code == TELEM_EUNSUPPORTED && r->nrows == 0);
    watch_destroy(&watch);
}

/* ---- output ------------------------------------------------------------ */

static const char *const s_odd[] = {
    "a \"q\" \\ b", "bad\xff\xfe" "utf8", "ctl\x01" "char", "ünï",
};

static det_event_t
odd_event(det_device_t *devs, det_evidence_t *ev)
{
    devs[0] = (det_device_t) { s_odd[0], "0" };
    devs[1] = (det_device_t) { s_odd[3], "" };
    ev[0] = (det_evidence_t) { "ratio", 1.5 };
    ev[1] = (det_evidence_t) { "nan", NAN };
    return (det_event_t) {
        .detector = "slow gpu", .severity = DET_SEV_ACT, .ts_ns = T0 + 5,
        .nodes = s_odd, .nnodes = 4, .devices = devs, .ndevices = 2,
        .score = 0.5, .evidence = ev, .nevidence = 2,
        .text = "line\nbreak 'quoted'",
    };
}

static void
test_json_and_text(void)
{
    det_device_t devs[2];
    det_evidence_t ev[2];
    det_event_t e = odd_event(devs, ev);
    char *s = watch_out_event_json(&e, 9);
    CHECK(s && !strchr(s, '\n'));
    json_error_t err;
    json_t *o = s ? json_loads(s, 0, &err) : NULL;
    CHECK(o != NULL);
    json_t *nodes = json_object_get(o, "nodes");
    CHECK(json_array_size(nodes) == 4);
    CHECK(strcmp(json_string_value(json_array_get(nodes, 0)), s_odd[0]) == 0);
    CHECK(strcmp(json_string_value(json_array_get(nodes, 1)),
                 "bad\xef\xbf\xbd\xef\xbf\xbd" "utf8") == 0);
    CHECK(strcmp(json_string_value(json_array_get(nodes, 2)), s_odd[2]) == 0);
    CHECK(strcmp(json_string_value(json_array_get(nodes, 3)), "ünï") == 0);
    CHECK(json_integer_value(json_object_get(o, "seq")) == 9);
    CHECK(strcmp(json_string_value(json_object_get(o, "severity")),
                 "act") == 0);
    CHECK(json_integer_value(json_object_get(o, "ts_ns")) == T0 + 5);
    json_t *evd = json_object_get(o, "evidence");
    CHECK(json_real_value(json_object_get(evd, "ratio")) == 1.5);
    CHECK(json_is_null(json_object_get(evd, "nan")));
    json_t *d0 = json_array_get(json_object_get(o, "devices"), 0);
    CHECK(strcmp(json_string_value(json_object_get(d0, "node")),
                 s_odd[0]) == 0);
    CHECK(strcmp(json_string_value(json_object_get(o, "text")),
                 e.text) == 0);
    json_decref(o);
    free(s);

    char line[1024];
    size_t n = watch_out_event_text(&e, 9, line, sizeof line);
    CHECK(n == strlen(line) && !strchr(line, '\n') && !strchr(line, '\x01'));
    CHECK(strstr(line, "\"a \\\"q\\\" \\\\ b\"") != NULL);
    CHECK(strstr(line, "ctl\\x01char") != NULL);
    CHECK(strstr(line, "line\\x0abreak") != NULL);
    CHECK(strstr(line, " ACT ") != NULL && strstr(line, "#9") != NULL);
    char tiny[16];
    CHECK(watch_out_event_text(&e, 9, tiny,
                               sizeof tiny) == 15 && strlen(tiny) == 15);
}

/* ---- --exec ------------------------------------------------------------ */

static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void
test_exec(void)
{
    char dir[] = "/tmp/test_watch.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("TW_TEST_DIR", dir, 1);
    det_device_t devs[2];
    det_evidence_t ev[2];
    det_event_t e = odd_event(devs, ev);
    pid_t pid = 0;
    char why[256];
    CHECK_RC(watch_out_exec("cat > \"$TW_TEST_DIR/in.json\"; "
                     "printf '%s' \"$TELEM_EVENT_NODES\" > \"$TW_TEST_DIR/nodes\"; "
                     "printf '%s|%s|%s' \"$TELEM_EVENT_SEQ\" "
                     "\"$TELEM_EVENT_SEVERITY\" \"$TELEM_EVENT_DETECTOR\" "
                     "> \"$TW_TEST_DIR/env\"", &e, 4, &pid, why, sizeof why), 0);
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    char path[256];
    snprintf(path, sizeof path, "%s/in.json", dir);
    json_error_t err;
    json_t *o = json_loads(slurp(path) ? slurp(path) : "", 0, &err);
    CHECK(o && json_integer_value(json_object_get(o, "seq")) == 4);
    json_decref(o);
    snprintf(path, sizeof path, "%s/nodes", dir);
    const char *nodes = slurp(path);
    CHECK(nodes && strncmp(nodes, "a \"q\" \\ b\nbad", 13) == 0);
    snprintf(path, sizeof path, "%s/env", dir);
    CHECK(slurp(path) && strcmp(slurp(path), "4|act|slow gpu") == 0);
    /* A command that does not read its stdin and fails is only reported by
     * its exit status. */
    CHECK_RC(watch_out_exec("exit 3", &e, 5, &pid, why, sizeof why), 0);
    CHECK(waitpid(pid, &status, 0) == pid && WEXITSTATUS(status) == 3);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* ---- sockets ----------------------------------------------------------- */

static zmsg_t *recv_within(zsock_t *s, int ms);

/* Receives one frame from s within 5 s, or NULL. */
static zmsg_t *
recv_within(zsock_t *s, int ms)
{
    zpoller_t *p = zpoller_new(s, NULL);
    zmsg_t *m = zpoller_wait(p, ms) == s ? zmsg_recv(s) : NULL;
    zpoller_destroy(&p);
    return m;
}

/* Serves one control request that `dealer` sent, returns the reply. */
static zmsg_t *
ctl_roundtrip(watch_net_t *net, watch_t *watch, zsock_t *dealer,
              const void *data,
              size_t size)
{
    zmq_send(zsock_resolve(dealer), data, size, 0);
    zpoller_t *p = zpoller_new(watch_net_ctl_sock(net), NULL);
    void *which = zpoller_wait(p, 5000);
    zpoller_destroy(&p);
    CHECK(which == watch_net_ctl_sock(net));
    if (which != watch_net_ctl_sock(net))
        return NULL;
    watch_net_serve(net, watch, NULL, 0);
    return recv_within(dealer, 5000);
}

static void
test_control_socket(watch_net_t *net, watch_t *watch,
                    telem_proto_decoder_t *dec)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    zsock_set_linger(dealer, 0);
    CHECK(zsock_connect(dealer, "%s", watch_net_ctl_endpoint(net)) == 0);
    telem_watch_ctl_t q = { 77, TELEM_WCTL_SET, "slowgpu", "k", "3" };
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_watch_ctl(enc, &q, &data, &size), 0);
    zmsg_t *m = ctl_roundtrip(net, watch, dealer, data, size);
    zframe_t *f = m ? zmsg_first(m) : NULL;
    telem_msg_t out;
    CHECK(f && telem_proto_decode(dec, zframe_data(f), zframe_size(f),
                                  &out) == 0);
    CHECK(f && (int) out.type == TELEM_MSG_WATCH_CTL_REPLY &&
          out.u.watch_ctl_reply.id == 77 && out.u.watch_ctl_reply.code == 0);
    zmsg_destroy(&m);
    m = ctl_roundtrip(net, watch, dealer, "garbage", 7);
    f = m ? zmsg_first(m) : NULL;
    CHECK(f && telem_proto_decode(dec, zframe_data(f), zframe_size(f),
                                  &out) == 0 &&
          out.u.watch_ctl_reply.code == TELEM_EPROTO);
    zmsg_destroy(&m);
    /* A good request followed by frames it does not take: refused,
       counted with the garbage. */
    uint64_t bad = watch_net_bad_requests(net);
    CHECK_RC(telem_proto_encode_watch_ctl(enc, &q, &data, &size), 0);
    zmq_send(zsock_resolve(dealer), data, size, ZMQ_SNDMORE);
    zmq_send(zsock_resolve(dealer), "x", 1, ZMQ_SNDMORE);
    m = ctl_roundtrip(net, watch, dealer, "y", 1);
    f = m ? zmsg_first(m) : NULL;
    CHECK(f && telem_proto_decode(dec, zframe_data(f), zframe_size(f),
                                  &out) == 0 &&
          out.u.watch_ctl_reply.code == TELEM_EPROTO);
    zmsg_destroy(&m);
    CHECK_INT(watch_net_bad_requests(net), bad + 1);
    CHECK(bad >= 1);
    zsock_destroy(&dealer);
    telem_proto_encoder_destroy(&enc);
}

static void
test_publish(watch_net_t *net, telem_proto_decoder_t *dec)
{
    zsock_t *sub = zsock_new_sub(watch_net_pub_endpoint(net), "");
    det_device_t devs[2];
    det_evidence_t ev[2];
    det_event_t e = odd_event(devs, ev);
    zmsg_t *m = NULL;
    /* A SUB joins asynchronously: publish until one arrives. */
    for (int i = 0; i < 100 && !m; i++) {
        CHECK_RC(watch_net_publish(net, &e, (uint64_t) i + 1), 0);
        m = recv_within(sub, 100);
    }
    CHECK(m && zmsg_size(m) == 2);
    char *topic = m ? zmsg_popstr(m) : NULL;
    CHECK(topic && strcmp(topic, "slow gpu") == 0);
    free(topic);
    zframe_t *f = m ? zmsg_first(m) : NULL;
    telem_msg_t out;
    CHECK(f && telem_proto_decode(dec, zframe_data(f), zframe_size(f),
                                  &out) == 0);
    CHECK(f && (int) out.type == TELEM_MSG_WATCH_EVENT &&
          out.u.watch_event.nnodes == 4 &&
          strcmp(out.u.watch_event.nodes[1], s_odd[1]) == 0 &&
          out.u.watch_event.severity == DET_SEV_ACT);
    zmsg_destroy(&m);
    zsock_destroy(&sub);
}

/* The launcher's side: receives the restart request, answers an ack. */
static void
test_restart(watch_net_t *net, zsock_t *launcher, telem_proto_decoder_t *dec)
{
    const char *ex[] = { "n2" };
    telem_watch_dev_t dv[] = { { "n2", "1" } };
    const char *dets[] = { "slowgpu" };
    telem_restart_t req = { 0, T0, "slow", ex, 1, dv, 1, dets, 1 };
    CHECK_RC(watch_net_restart_send(net, &req), 0);
    zmsg_t *m = recv_within(launcher, 5000);
    CHECK(m && zmsg_size(m) == 2);
    zframe_t *id = m ? zmsg_pop(m) : NULL;
    zframe_t *f = m ? zmsg_first(m) : NULL;
    telem_msg_t out;
    CHECK(f && telem_proto_decode(dec, zframe_data(f), zframe_size(f),
                                  &out) == 0);
    CHECK(f && (int) out.type == TELEM_MSG_RESTART &&
          out.u.restart.id == req.id && out.u.restart.nexclude == 1 &&
          strcmp(out.u.restart.exclude[0], "n2") == 0 &&
          strcmp(out.u.restart.devices[0].device, "1") == 0);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_restart_ack_t ack = { req.id, 0, "restarting without n2" };
    const void *data;
    size_t size;
    CHECK_RC(telem_proto_encode_restart_ack(enc, &ack, &data, &size), 0);
    zmsg_t *reply = zmsg_new();
    zmsg_append(reply, &id);
    zmsg_addmem(reply, data, size);
    zmsg_send(&reply, launcher);
    zmsg_destroy(&m);
    zpoller_t *p = zpoller_new(watch_net_restart_sock(net), NULL);
    CHECK(zpoller_wait(p, 5000) == watch_net_restart_sock(net));
    zpoller_destroy(&p);
    telem_restart_ack_t got;
    CHECK_RC(watch_net_restart_recv(net, &got), 0);
    CHECK(got.id == req.id && got.code == 0 &&
          strcmp(got.message, "restarting without n2") == 0);
    CHECK_RC(watch_net_restart_recv(net, &got), TELEM_ETIMEDOUT);
    /* After a reset the connection is fresh and still reaches the launcher. */
    CHECK_RC(watch_net_restart_reset(net), 0);
    CHECK_RC(watch_net_restart_send(net, &req), 0);
    m = recv_within(launcher, 5000);
    CHECK(m != NULL);
    zmsg_destroy(&m);
    telem_proto_encoder_destroy(&enc);
}

static void
test_net(void)
{
    char dir[] = "/tmp/test_watch_net.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    zsock_t *launcher = zsock_new_router("@tcp://127.0.0.1:*");
    char ep[128];
    snprintf(ep, sizeof ep, "%s", zsock_endpoint(launcher));
    watch_net_opts_t o = { dir, "w one", NULL, NULL, ep, NULL, 0 };
    char why[512];
    watch_net_t *net = watch_net_new(&o, why, sizeof why, NULL);
    CHECK(net != NULL);
    if (!net) {
        fprintf(stderr, "watch_net_new: %s\n", why);
        zsock_destroy(&launcher);
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/w one/endpoints", dir);
    const char *txt = slurp(path);
    CHECK(txt && strstr(txt, "ctl ipc://") && strstr(txt, "pub ipc://"));
    int err = 0;
    CHECK(watch_net_new(&o, why, sizeof why, &err) == NULL &&
          err == TELEM_ESTATE && strstr(why, "another") != NULL);
    watch_t *watch = watch_new(NULL);
    CHECK_RC(watch_add_detector(watch, "slowgpu", why, sizeof why), 0);
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    test_control_socket(net, watch, dec);
    test_publish(net, dec);
    test_restart(net, launcher, dec);
    watch_net_destroy(&net);
    CHECK(access(path, F_OK) != 0);          /* endpoints file removed */
    net = watch_net_new(&o, why, sizeof why, NULL);   /* lock released */
    CHECK(net != NULL);
    watch_net_destroy(&net);
    telem_proto_decoder_destroy(&dec);
    watch_destroy(&watch);
    zsock_destroy(&launcher);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* ---- a restart receiver for it_watch.sh -------------------------------- */

/* test_watch --restart-sink EP [--refuse] [--count N] [--idle S]: binds a
 * ROUTER at EP, prints "ready", then for each restart request prints one
 * line (exclude=..., devices=..., detectors=..., reason=...) and answers an
 * ack (a refusal with --refuse).  Exits 0 after N requests (default 1), 1
 * when none came for S seconds (default 60; 0: wait until killed).  This
 * plays the launcher in the integration test. */
static int
sink_main(int argc, char **argv)
{
    int refuse = 0, count = 1, idle_s = 60;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--refuse") == 0)
            refuse = 1;
        else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
            count = atoi(argv[++i]);
        else if (strcmp(argv[i], "--idle") == 0 && i + 1 < argc)
            idle_s = atoi(argv[++i]);
    }
    zsock_t *s = zsock_new(ZMQ_ROUTER);
    if (!s || zsock_bind(s, "%s", argv[2]) < 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    int got = 0;
    while (got < count) {
        zmsg_t *m = recv_within(s, idle_s > 0 ? idle_s * 1000 : -1);
        if (!m)
            break;
        zframe_t *id = zmsg_pop(m), *f = zmsg_first(m);
        telem_msg_t out;
        if (f && telem_proto_decode(dec, zframe_data(f), zframe_size(f),
                                    &out) == 0 &&
            (int) out.type == TELEM_MSG_RESTART) {
            const telem_restart_t *r = &out.u.restart;
            printf("restart exclude=");
            for (uint32_t i = 0; i < r->nexclude; i++)
                printf("%s%s", i ? "," : "", r->exclude[i]);
            printf(" devices=");
            for (uint32_t i = 0; i < r->ndevices; i++)
                printf("%s%s/%s", i ? "," : "", r->devices[i].node,
                       r->devices[i].device);
            printf(" detectors=");
            for (uint32_t i = 0; i < r->ndetectors; i++)
                printf("%s%s", i ? "," : "", r->detectors[i]);
            printf(" reason=%s\n", r->reason);
            fflush(stdout);
            telem_restart_ack_t ack = { r->id, refuse ? TELEM_ESTATE : 0,
                refuse ? "no node to spare" : "restarting" };
            const void *data;
            size_t size;
            if (telem_proto_encode_restart_ack(enc, &ack, &data, &size) == 0) {
                zmsg_t *reply = zmsg_new();
                zmsg_append(reply, &id);
                zmsg_addmem(reply, data, size);
                zmsg_send(&reply, s);
            }
            got++;
        }
        zframe_destroy(&id);
        zmsg_destroy(&m);
    }
    telem_proto_decoder_destroy(&dec);
    telem_proto_encoder_destroy(&enc);
    zsock_destroy(&s);
    return got == count ? 0 : 1;
}

int
main(int argc, char **argv)
{
    zsys_handler_set(NULL);
    if (argc >= 3 && strcmp(argv[1], "--restart-sink") == 0)
        return sink_main(argc, argv);
    test_specs();
    test_input_and_run();
    test_control();
    test_json_and_text();
    test_exec();
    test_net();
    return check_report("test_watch");
}
