/* test_store_ingest.c - telemd's ingest path into its store, frame by frame.
 *
 * Drives a telemd agent (telemd_agent_ingest, no sockets) with encoded
 * batches and reads the store back through query and status requests.
 * telemd puts a batch's tags (with the node's host) into the store's form
 * once per batch and appends every sample without tags of its own with
 * them; these tests pin down that this gives what merging the tags per
 * sample gave: batch tags arriving unsorted, the same metric with and
 * without tags of its own in one batch, a sample's tag overriding the
 * batch's, host always the node's, a new batch bringing new tags, the tag
 * limit, and level gating in the counters.  No assertion depends on timing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_proto.h"
#include "telem_time.h"
#include "telemd_agent.h"

#define S_NODE "node-7"

typedef struct {
    telemd_agent_t *agent;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    telem_query_reply_t reply;     /* last query's reply, points into dec */
    int64_t now;
} s_fix_t;

static void
s_fix_init(s_fix_t *f)
{
    telemd_config_t cfg = { .node = S_NODE, .rundir = "/nonexistent",
                            .level = 1, .window_ns = 300 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    memset(f, 0, sizeof *f);
    f->agent = telemd_agent_new(&cfg, NULL);
    f->enc = telem_proto_encoder_new();
    f->dec = telem_proto_decoder_new();
    if (!f->agent || !f->enc || !f->dec) {
        fprintf(stderr, "test_store_ingest: set-up failed\n");
        exit(1);
    }
    f->now = telem_now_ns();
}

static void
s_fix_done(s_fix_t *f)
{
    telemd_agent_destroy(&f->agent);
    telem_proto_encoder_destroy(&f->enc);
    telem_proto_decoder_destroy(&f->dec);
}

static int
s_ingest(s_fix_t *f, const telem_tag_t *tags, uint32_t ntags,
         const telem_sample_t *samples, uint32_t n)
{
    telem_batch_t b = { .source = "test", .tags = tags, .ntags = ntags,
                        .samples = samples, .nsamples = n };
    const void *data;
    size_t size;
    int rc = telem_proto_encode_batch(f->enc, &b, &data, &size);
    return rc ? rc : telemd_agent_ingest(f->agent, data, size);
}

/* A sample of `metric` at now - age ns with value v, level 1. */
static telem_sample_t
s_sample(const s_fix_t *f, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, int64_t age, double v)
{
    return (telem_sample_t) { .metric = metric, .tags = tags, .ntags = ntags,
                              .level = 1, .ts_ns = f->now - age, .value = v };
}

static int
s_request(s_fix_t *f, const void *data, size_t size, telem_msg_t *m)
{
    const void *reply;
    size_t rsize;
    int rc = telemd_agent_request(f->agent, data, size, TELEMD_FROM_JOB, &reply, &rsize);
    if (rc == 0)
        rc = reply ? telem_proto_decode(f->dec, reply, rsize, m)
                   : TELEM_EPROTO;
    return rc;
}

/* Every series in the store into f->reply; returns 0 or an error. */
static int
s_query_all(s_fix_t *f)
{
    telem_query_t q = { .id = 1 };
    const void *data;
    size_t size;
    telem_msg_t m;
    int rc = telem_proto_encode_query(f->enc, &q, &data, &size);
    if (!rc)
        rc = s_request(f, data, size, &m);
    if (!rc && m.type != TELEM_MSG_QUERY_REPLY)
        rc = TELEM_EPROTO;
    f->reply = rc ? (telem_query_reply_t) { 0 } : m.u.query_reply;
    return rc;
}

static telem_status_t
s_status(s_fix_t *f)
{
    telem_control_t c = { .id = 2, .op = TELEM_CTL_STATUS };
    const void *data;
    size_t size;
    telem_msg_t m;
    if (telem_proto_encode_control(f->enc, &c, &data, &size) != 0
        || s_request(f, data, size, &m) != 0
        || m.type != TELEM_MSG_CONTROL_REPLY)
        return (telem_status_t) { .ingested = UINT64_MAX };
    return m.u.control_reply.status;
}

/* The reply's series of `metric` whose tags read "k=v,k=v" (in the
 * store's order, sorted by key), or NULL. */
static const telem_series_t *
s_find(const s_fix_t *f, const char *metric, const char *tags)
{
    for (uint32_t i = 0; i < f->reply.nseries; i++) {
        const telem_series_t *s = &f->reply.series[i];
        char buf[512] = "";
        for (uint32_t j = 0; j < s->ntags; j++) {
            size_t len = strlen(buf);
            snprintf(buf + len, sizeof buf - len, "%s%s=%s", j ? "," : "",
                     s->tags[j].key, s->tags[j].value);
        }
        if (strcmp(s->metric, metric) == 0 && strcmp(buf, tags) == 0)
            return s;
    }
    return NULL;
}

/* --- tests ------------------------------------------------------------- */

/* One batch: the same metric with and without tags of its own, a sample
 * tag overriding a batch tag, host from the batch or a sample replaced by
 * the node's, unsorted batch tags, and a sample above the level. */
static void
test_batch_tags(void)
{
    s_fix_t f;
    s_fix_init(&f);
    telem_tag_t bt[] = { { "rank", "3" }, { "host", "spoofed" },
                         { "pid", "7" } };
    telem_tag_t gpu[] = { { "gpu", "1" } };
    telem_tag_t rank[] = { { "rank", "9" } };
    telem_tag_t host[] = { { "host", "x" } };
    telem_sample_t s[] = {
        s_sample(&f, "m", NULL, 0, 60, 0),
        s_sample(&f, "m", gpu, 1, 50, 1),
        s_sample(&f, "m", rank, 1, 40, 2),
        s_sample(&f, "m", NULL, 0, 30, 3),
        s_sample(&f, "n", host, 1, 20, 4),
        s_sample(&f, "n", NULL, 0, 10, 5),
        s_sample(&f, "m", NULL, 0, 5, 6),
    };
    s[6].level = 2;                  /* above the agent's level 1 */
    CHECK(s_ingest(&f, bt, 3, s, 7) == 0);
    CHECK(s_query_all(&f) == 0 && f.reply.nseries == 4);
    const telem_series_t *m = s_find(&f, "m", "host=" S_NODE ",pid=7,rank=3");
    CHECK(m && m->npoints == 2 && m->values[0] == 0 && m->values[1] == 3);
    m = s_find(&f, "m", "gpu=1,host=" S_NODE ",pid=7,rank=3");
    CHECK(m && m->npoints == 1 && m->values[0] == 1);
    m = s_find(&f, "m", "host=" S_NODE ",pid=7,rank=9");
    CHECK(m && m->npoints == 1 && m->values[0] == 2);
    m = s_find(&f, "n", "host=" S_NODE ",pid=7,rank=3");
    CHECK(m && m->npoints == 2 && m->values[0] == 4 && m->values[1] == 5);
    telem_status_t st = s_status(&f);
    CHECK(st.ingested == 6 && st.dropped == 1 && st.nseries == 4);
    s_fix_done(&f);
}

/* Each batch brings its own tags: nothing of the previous batch's stays,
 * also when the tags differ only in a value or only in order. */
static void
test_batch_tags_change(void)
{
    s_fix_t f;
    s_fix_init(&f);
    telem_tag_t b1[] = { { "z", "1" }, { "a", "2" } };
    telem_tag_t b2[] = { { "a", "2" }, { "z", "1" } };
    telem_tag_t b3[] = { { "a", "2" }, { "z", "2" } };
    telem_sample_t s[2];
    s[0] = s_sample(&f, "m", NULL, 0, 30, 1);
    s[1] = s_sample(&f, "k", NULL, 0, 30, 1);
    CHECK(s_ingest(&f, b1, 2, s, 2) == 0);
    s[0] = s_sample(&f, "m", NULL, 0, 20, 2);
    s[1] = s_sample(&f, "k", NULL, 0, 20, 2);
    CHECK(s_ingest(&f, b2, 2, s, 2) == 0);
    s[0] = s_sample(&f, "m", NULL, 0, 10, 3);
    CHECK(s_ingest(&f, b3, 2, s, 1) == 0);
    s[0] = s_sample(&f, "m", NULL, 0, 5, 4);
    CHECK(s_ingest(&f, NULL, 0, s, 1) == 0);
    CHECK(s_query_all(&f) == 0 && f.reply.nseries == 4);
    const telem_series_t *m = s_find(&f, "m", "a=2,host=" S_NODE ",z=1");
    CHECK(m && m->npoints == 2 && m->values[0] == 1 && m->values[1] == 2);
    m = s_find(&f, "k", "a=2,host=" S_NODE ",z=1");
    CHECK(m && m->npoints == 2);
    m = s_find(&f, "m", "a=2,host=" S_NODE ",z=2");
    CHECK(m && m->npoints == 1 && m->values[0] == 3);
    m = s_find(&f, "m", "host=" S_NODE);
    CHECK(m && m->npoints == 1 && m->values[0] == 4);
    s_fix_done(&f);
}

/* TELEM_TAGS_MAX tags besides host leave no room for host: such samples
 * are dropped and counted, with or without tags of their own; one fewer
 * (and a host tag among them) is fine. */
static void
test_batch_tags_limit(void)
{
    s_fix_t f;
    s_fix_init(&f);
    telem_tag_t bt[TELEM_TAGS_MAX];
    char keys[TELEM_TAGS_MAX][8];
    for (int i = 0; i < TELEM_TAGS_MAX; i++) {
        snprintf(keys[i], sizeof keys[i], "k%02d", i);
        bt[i] = (telem_tag_t) { keys[i], "v" };
    }
    telem_tag_t own[] = { { "gpu", "0" } };
    telem_sample_t s[] = { s_sample(&f, "m", NULL, 0, 20, 1),
                           s_sample(&f, "m", own, 1, 20, 2),
                           s_sample(&f, "m", NULL, 0, 10, 3) };
    CHECK(s_ingest(&f, bt, TELEM_TAGS_MAX, s, 3) == 0);
    telem_status_t st = s_status(&f);
    CHECK(st.ingested == 0 && st.dropped == 3 && st.nseries == 0);
    bt[0].key = "host";
    CHECK(s_ingest(&f, bt, TELEM_TAGS_MAX, s, 3) == 0);
    st = s_status(&f);
    CHECK(st.ingested == 2 && st.dropped == 4 && st.nseries == 1);
    CHECK(s_query_all(&f) == 0 && f.reply.nseries == 1);
    CHECK(f.reply.nseries == 1 && f.reply.series[0].ntags == TELEM_TAGS_MAX
          && f.reply.series[0].npoints == 2);
    s_fix_done(&f);
}

/* Many batches over many series, each sample's value naming its series:
 * every point is where it belongs (the store's last-series cache and the
 * per-batch tags together). */
static void
test_many_batches(void)
{
    s_fix_t f;
    s_fix_init(&f);
    enum { NB = 200, BS = 64, NSER = 50 };
    static char names[NSER][16];
    for (int i = 0; i < NSER; i++)
        snprintf(names[i], sizeof names[i], "m%02d", i);
    telem_tag_t bt[2][1] = { { { "rank", "0" } }, { { "rank", "1" } } };
    telem_sample_t s[BS];
    int bad = 0;
    for (int b = 0; b < NB; b++) {
        for (int j = 0; j < BS; j++) {
            int k = (b * BS + j) / 3;     /* runs of three of one series */
            s[j] = s_sample(&f, names[k % NSER], NULL, 0,
                            NB * BS - (b * BS + j), k % NSER);
        }
        bad += s_ingest(&f, bt[b % 2], 1, s, BS) != 0;
    }
    CHECK(bad == 0);
    CHECK(s_query_all(&f) == 0 && f.reply.nseries == 2 * NSER);
    uint64_t points = 0;
    for (uint32_t i = 0; i < f.reply.nseries; i++) {
        const telem_series_t *ser = &f.reply.series[i];
        int want = atoi(ser->metric + 1);
        points += ser->npoints;
        for (uint32_t k = 0; k < ser->npoints; k++)
            bad += ser->values[k] != want;
    }
    CHECK(bad == 0 && points == (uint64_t) NB * BS);
    s_fix_done(&f);
}

/* A bad configuration is refused with TELEM_EINVAL; a good one says 0. */
static void
test_agent_config(void)
{
    telemd_config_t cfg = { .node = S_NODE, .rundir = "/nonexistent",
                            .level = 1, .window_ns = 300 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    int err = 1;
    telemd_agent_t *a = telemd_agent_new(&cfg, &err);
    CHECK(a && err == 0);
    telemd_agent_destroy(&a);
    cfg.level = 5;
    CHECK(telemd_agent_new(&cfg, &err) == NULL && err == TELEM_EINVAL);
    cfg.level = 1;
    cfg.window_ns = 0;
    err = 0;
    CHECK(telemd_agent_new(&cfg, &err) == NULL && err == TELEM_EINVAL);
    cfg.window_ns = 300 * TELEM_NS_PER_SEC;
    cfg.node = NULL;
    CHECK(telemd_agent_new(&cfg, NULL) == NULL);
    err = 0;
    CHECK(telemd_agent_new(NULL, &err) == NULL && err == TELEM_EINVAL);
}

int
main(void)
{
    telem_log_init("test_store_ingest", TELEM_LOG_WARN);
    test_batch_tags();
    test_batch_tags_change();
    test_batch_tags_limit();
    test_many_batches();
    test_agent_config();
    return check_report("test_store_ingest");
}
