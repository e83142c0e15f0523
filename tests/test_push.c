/* test_push.c - the push calls of telem.h (telem_counter_add(),
 * telem_gauge_set()) from the application's side, through libtelem into a
 * real telemd actor running in this process.
 *
 * Scenarios:
 *   invalid input   malformed names, reserved and repeated labels, bad
 *                   values: TELEM_EINVAL, counted in telem_stats().invalid,
 *                   nothing queued; a name with labels describes its
 *                   metric; TELEM_LEVEL=0 gives 1; after finalize
 *                   TELEM_ESTATE.
 *   sums            four threads push the same counters, merged in their
 *                   batches and interleaved with more names than the
 *                   per-thread name cache holds, and set gauges; after
 *                   telem_flush() each counter's node series is the exact
 *                   sum, has host and its labels only (no pid), is typed
 *                   counter with the doc a name with labels gave it; the
 *                   gauges are per process (pid) with their labels;
 *   refusals        samples put on the wire by hand: counter increments
 *                   with a bad metric, a reserved or malformed label name,
 *                   a negative or infinite value, an unknown kind, are
 *                   refused and counted in the status's push_refused,
 *                   while the good samples of the same batch are stored.
 */
#include "tmpdir.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "ac.h"
#include "check.h"
#include "telem.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_time.h"
#include "telem_promname.h"
#include "telemd_actor.h"

#define S_THREADS 4
#define S_ROUNDS 20000

static void
s_env(const char *rundir, const char *node)
{
    setenv("TELEM_RUNDIR", rundir, 1);
    setenv("TELEM_NODE", node, 1);
    setenv("TELEM_FINALIZE_MS", "20000", 1);
    unsetenv("TELEM_INGEST");
    unsetenv("TELEM_CTL");
    unsetenv("TELEM_RANK");
    unsetenv("TELEM_LEVEL");
}

static void
s_test_invalid(void)
{
    REQUIRE(telem_init() == 0);
    static const char *const bad[] = {
        "", "9x", "a-b", "m{", "m{a=1}", "m{a=\"1\"", "m{a=\"\\t\"}",
        "m{host=\"h\"}", "m{pid=\"1\"}", "m{a=\"1\",a=\"2\"}", "m{__a=\"1\"}",
        "m{a=\"1\"} ", "m{a=\"1\"}{b=\"2\"}",
        "m{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\",f=\"6\",g=\"7\",h=\"8\","
        "i=\"9\"}",
    };
    size_t nbad = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < nbad; i++) {
        CHECK_RC(telem_counter_add(bad[i], 1), TELEM_EINVAL);
        CHECK_RC(telem_gauge_set(bad[i], 1), TELEM_EINVAL);
    }
    CHECK_RC(telem_counter_add(NULL, 1), TELEM_EINVAL);
    CHECK_RC(telem_counter_add("c", -1), TELEM_EINVAL);
    CHECK_RC(telem_counter_add("c", NAN), TELEM_EINVAL);
    CHECK_RC(telem_counter_add("c", INFINITY), TELEM_EINVAL);
    CHECK_RC(telem_gauge_set("g", NAN), TELEM_EINVAL);
    CHECK_RC(telem_gauge_set("g", -INFINITY), TELEM_EINVAL);
    char *huge = malloc(TELEM_PROMNAME_TEXT_MAX + 2);
    REQUIRE(huge);
    memset(huge, 'm', TELEM_PROMNAME_TEXT_MAX + 1);
    huge[TELEM_PROMNAME_TEXT_MAX + 1] = '\0';
    CHECK_RC(telem_counter_add(huge, 1), TELEM_EINVAL);
    free(huge);
    CHECK_RC(telem_counter_add("c{a=\"1\"}", 0), 0);
    CHECK_RC(telem_gauge_set("g", -2.5), 0);
    CHECK_RC(telem_describe("c{a=\"1\"}", "counter", "", "doc"), 0);
    CHECK_RC(telem_describe("c{a=1}", "counter", "", "doc"), TELEM_EINVAL);
    telem_stats_t st;
    telem_stats(&st);
    CHECK_INT(st.invalid, 2 * nbad + 7 + 1);
    CHECK_INT(st.queued, 2);
    CHECK_RC(telem_set_level(0), 0);
    CHECK_RC(telem_counter_add("c", 1), 1);
    CHECK_RC(telem_gauge_set("g", 1), 1);
    CHECK_RC(telem_finalize(), TELEM_ECONN);     /* no telemd here */
    CHECK_RC(telem_counter_add("c", 1), TELEM_ESTATE);
    CHECK_RC(telem_gauge_set("g", 1), TELEM_ESTATE);
}

/* ---- sums through a real telemd ------------------------------------- */

static const char *const s_names[] = {
    "push_hits_total{scall=\"read\"}", "push_hits_total{scall=\"write\"}",
    "push_bytes_total", "push_hits_total{scall=\"a\\\"b\"}",
    "push_hits_total{fd=\"3\",scall=\"read\"}",
    "push_hits_total{scall=\"read\",fd=\"3\"}",   /* the same series */
};
#define S_NNAMES (sizeof s_names / sizeof s_names[0])

/* What each thread's calls were accepted for (TELEM_EFULL is the
 * queue's back-pressure, not an error: those increments are not sent). */
static double s_accepted[S_THREADS][S_NNAMES];
static double s_last_gauge[S_THREADS];

static void *
s_pusher(void *arg)
{
    long t = (long) (intptr_t) arg;
    int bad = 0;
    s_last_gauge[t] = NAN;
    for (int i = 0; i < S_ROUNDS; i++) {
        /* name k gets k + 1 per round, merged or not */
        for (size_t k = 0; k < S_NNAMES; k++) {
            int rc = telem_counter_add(s_names[k], (double) (k + 1));
            if (rc == 0)
                s_accepted[t][k] += (double) (k + 1);
            bad += rc != 0 && rc != TELEM_EFULL;
        }
        if (i % 100 == 0) {
            char g[64];
            snprintf(g, sizeof g, "push_gauge{thread=\"%ld\"}", t);
            int rc = telem_gauge_set(g, i);
            if (rc == 0)
                s_last_gauge[t] = i;
            bad += rc != 0 && rc != TELEM_EFULL;
        }
    }
    return (void *) (intptr_t) bad;
}

static double
s_sum(size_t k)
{
    double sum = 0;
    for (int t = 0; t < S_THREADS; t++)
        sum += s_accepted[t][k];
    return sum;
}

/* The series of metric with tag key=value (NULL: any), from r. */
static const telem_series_t *
s_find(const ac_result_t *r, const char *metric, const char *key,
       const char *value)
{
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        if (strcmp(s->metric, metric) != 0)
            continue;
        for (uint32_t k = 0; key && k < s->ntags; k++)
            if (strcmp(s->tags[k].key, key) == 0
                && strcmp(s->tags[k].value, value) == 0)
                return s;
        if (!key)
            return s;
    }
    return NULL;
}

static double
s_latest(const telem_series_t *s)
{
    return s && s->npoints ? s->values[s->npoints - 1] : NAN;
}

static void
s_check_sums(ac_t *ac)
{
    const char *metrics[] = { "push_hits_total", "push_bytes_total",
                              "push_gauge" };
    ac_query_t q = { .metrics = metrics, .nmetrics = 3,
                     .flags = TELEM_QUERY_LATEST };
    ac_result_t *r = NULL;
    REQUIRE(ac_query(ac, &q, &r) == 0);
    const telem_series_t *s = s_find(r, "push_bytes_total", NULL, NULL);
    CHECK_EQ(s_latest(s), s_sum(2));
    CHECK(s && s->ntags == 1 && strcmp(s->tags[0].key, "host") == 0);
    CHECK(s && s->type == TELEM_METRIC_COUNTER);
    s = s_find(r, "push_hits_total", "scall", "write");
    CHECK_EQ(s_latest(s), s_sum(1));
    CHECK(s && s->ntags == 2 && s->type == TELEM_METRIC_COUNTER);
    CHECK(s && strcmp(s->doc, "Hits by system call.") == 0);
    CHECK_EQ(s_latest(s_find(r, "push_hits_total", "scall", "a\"b")),
             s_sum(3));
    CHECK_EQ(s_latest(s_find(r, "push_hits_total", "fd", "3")),
             s_sum(4) + s_sum(5));
    /* read: the one without fd */
    double read = NAN;
    int nhits = 0;
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *h = ac_result_series(r, i);
        if (strcmp(h->metric, "push_hits_total") != 0)
            continue;
        nhits++;
        for (uint32_t k = 0; k < h->ntags; k++)
            CHECK(strcmp(h->tags[k].key, "pid") != 0);
        if (h->ntags == 2 && strcmp(h->tags[1].value, "read") == 0)
            read = s_latest(h);
    }
    CHECK_INT(nhits, 4);
    CHECK_EQ(read, s_sum(0));
    for (long t = 0; t < S_THREADS; t++) {
        char v[8];
        snprintf(v, sizeof v, "%ld", t);
        s = s_find(r, "push_gauge", "thread", v);
        CHECK_EQ(s_latest(s), s_last_gauge[t]);
        char pid[24];
        snprintf(pid, sizeof pid, "%ld", (long) getpid());
        int has_pid = 0;
        for (uint32_t k = 0; s && k < s->ntags; k++)
            has_pid |= strcmp(s->tags[k].key, "pid") == 0
                       && strcmp(s->tags[k].value, pid) == 0;
        CHECK(has_pid);
        CHECK(s && s->type == TELEM_METRIC_GAUGE);
    }
    ac_result_destroy(&r);
}

static void
s_test_sums(ac_t *ac)
{
    REQUIRE(telem_init() == 0);
    CHECK_RC(telem_describe("push_hits_total{scall=\"x\"}", "counter", "",
                            "Hits by system call."), 0);
    pthread_t th[S_THREADS];
    for (long t = 0; t < S_THREADS; t++)
        REQUIRE(pthread_create(&th[t], NULL, s_pusher,
                               (void *) (intptr_t) t) == 0);
    int bad = 0;
    for (int t = 0; t < S_THREADS; t++) {
        void *ret;
        pthread_join(th[t], &ret);
        bad += (int) (intptr_t) ret;
    }
    CHECK_INT(bad, 0);
    CHECK_RC(telem_flush(20000), 0);
    telem_stats_t st;
    telem_stats(&st);
    /* Merged: fewer samples sent than calls accepted. */
    CHECK(st.sent < st.queued);
    CHECK(s_sum(0) > 0);
    if (getenv("TEST_PUSH_VERBOSE"))
        fprintf(stderr, "queued %llu sent %llu dropped %llu\n",
                (unsigned long long) st.queued, (unsigned long long) st.sent,
                (unsigned long long) st.dropped);
    s_check_sums(ac);
    CHECK_RC(telem_finalize(), 0);
}

/* ---- refusals on the wire --------------------------------------------- */

/* Sends, on a PUSH socket of its own, one batch of two good counter
 * increments of wire_total{scall="read"} (2 and 3), a gauge wire_gauge
 * (5, pid 1) and 7 samples telemd must refuse; its fin token is `token`. */
static void
s_send_bad(const char *ingest, uint64_t token)
{
    static const telem_tag_t ok_tag[] = { { "scall", "read" } };
    static const telem_tag_t bad_key[] = { { "a-b", "1" } };
    static const telem_tag_t reserved[] = { { "pid", "1" } };
    static const telem_tag_t under[] = { { "__x", "1" } };
    int64_t now = telem_now_ns();
    telem_sample_t s[] = {
        { .metric = "wire_total", .tags = ok_tag, .ntags = 1, .level = 1,
          .ts_ns = now, .value = 2, .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "bad-name", .level = 1, .ts_ns = now, .value = 1,
          .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "wire_total", .tags = bad_key, .ntags = 1, .level = 1,
          .ts_ns = now, .value = 1, .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "wire_total", .tags = reserved, .ntags = 1, .level = 1,
          .ts_ns = now, .value = 1, .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "wire_total", .tags = under, .ntags = 1, .level = 1,
          .ts_ns = now, .value = 1, .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "wire_total", .level = 1, .ts_ns = now, .value = -1,
          .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "wire_total", .level = 1, .ts_ns = now, .value = INFINITY,
          .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "wire_total", .level = 1, .ts_ns = now, .value = 1,
          .kind = 7 },
        { .metric = "wire_total", .tags = ok_tag, .ntags = 1, .level = 1,
          .ts_ns = now, .value = 3, .kind = TELEM_SAMPLE_COUNTER_ADD },
        { .metric = "wire_gauge", .level = 1, .ts_ns = now, .value = 5 },
    };
    telem_tag_t btags[] = { { "pid", "1" } };
    telem_batch_t b = { .source = "hand", .tags = btags, .ntags = 1,
                        .samples = s, .nsamples = 10, .fin_token = token };
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    const void *data;
    size_t size;
    REQUIRE(telem_proto_encode_batch(enc, &b, &data, &size) == 0);
    void *zctx = zmq_ctx_new();
    void *push = zmq_socket(zctx, ZMQ_PUSH);
    int linger = 10000;
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    REQUIRE(zmq_connect(push, ingest) == 0);
    REQUIRE(zmq_send(push, data, size, 0) == (int) size);
    zmq_close(push);
    zmq_ctx_term(zctx);
    telem_proto_encoder_destroy(&enc);
}

static void
s_test_refusals(ac_t *ac, const char *ingest)
{
    s_send_bad(ingest, 424242);
    /* Wait for the batch: its fin token. */
    int synced = 0;
    for (int i = 0; i < 1000 && !synced; i++) {
        ac_status_result_t *sr = NULL;
        ac_control(ac, 0, TELEM_CTL_SYNC, 424242, 0, &sr);
        synced = ac_status_result_synced(sr, 0);
        ac_status_result_destroy(&sr);
        if (!synced)
            usleep(2000);
    }
    CHECK(synced);
    ac_status_result_t *sr = NULL;
    REQUIRE(ac_status(ac, &sr) == 0);
    const telem_status_t *st = ac_status_result_status(sr, 0);
    CHECK(st && st->push_refused == 7);
    ac_status_result_destroy(&sr);
    const char *metrics[] = { "wire_total", "wire_gauge" };
    ac_query_t q = { .metrics = metrics, .nmetrics = 2,
                     .flags = TELEM_QUERY_LATEST };
    ac_result_t *r = NULL;
    REQUIRE(ac_query(ac, &q, &r) == 0);
    CHECK_INT(ac_result_nseries(r), 2);
    CHECK_EQ(s_latest(s_find(r, "wire_total", "scall", "read")), 5);
    CHECK_EQ(s_latest(s_find(r, "wire_gauge", "pid", "1")), 5);
    ac_result_destroy(&r);
}

int
main(int argc, char **argv)
{
    /* tests/it_push.sh: the refused samples, to a telemd of its own. */
    if (argc == 3 && strcmp(argv[1], "--send-bad") == 0) {
        s_send_bad(argv[2], 0);
        return check_report("test_push --send-bad");
    }
    telem_log_init("test_push", TELEM_LOG_ERROR);
    char dir[TELEM_PATH_MAX];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_push") == 0);
    s_env(dir, "nopush");
    s_test_invalid();

    s_env(dir, "n1");
    telemd_config_t cfg = { .node = "n1", .rundir = dir, .level = 1,
                            .window_ns = 300 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    int err = 0;
    telemd_t *d = telemd_new(&cfg, &err);
    REQUIRE(d);
    const char *name = "n1", *ep = telemd_ctl_endpoint(d);
    ac_t *ac = ac_connect_nodes(&name, &ep, 1, 10000, &err);
    REQUIRE(ac);
    s_test_sums(ac);
    s_test_refusals(ac, telemd_ingest_endpoint(d));
    ac_close(&ac);
    telemd_destroy(&d);
    test_rmtree(dir);
    return check_report("test_push");
}
