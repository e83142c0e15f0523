/* test_telem_api.c - the user metrics API (telem.h) end to end.
 *
 * Scenarios, each between telem_init() and telem_finalize():
 *   invalid input   every rejected argument gives TELEM_EINVAL, nothing is
 *                   counted, and after finalize every call is TELEM_ESTATE;
 *   levels          TELEM_LEVEL 0-4 (and invalid values), telem_set_level;
 *   no telemd       an empty run directory: adds never fail beyond EFULL,
 *                   flush says TELEM_ECONN without waiting for its
 *                   deadline, every sample is counted as dropped;
 *   fake telemd     a PULL and a ROUTER bound where telemd would bind them,
 *                   decoding with the real codec and answering SYNC as
 *                   telemd does: samples from four threads (which exit
 *                   before the flush) arrive exactly once with their
 *                   metric, value and tags plus pid and rank, a partial
 *                   batch arrives without a flush, describe arrives as META;
 *   races           finalize and init again while three threads keep
 *                   adding, describing and flushing;
 *   fork            a child adds and finalizes through its own sender; its
 *                   samples carry its pid and the parent's unsent samples
 *                   are not sent twice.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "check.h"
#include "telem.h"
#include "telem_error.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_time.h"

#define S_THREADS 4
#define S_PER_THREAD 5000
#define S_CHILD_SAMPLES 1000
#define S_MAIN_TS INT64_C(1234567890123456789)
#define S_RANK "7"

/* ---- a fake telemd speaking the real protocol ----------------------- */

typedef struct {
    char dir[TELEM_PATH_MAX];
    char ingest[TELEM_PATH_MAX];
    char ctl[TELEM_PATH_MAX];
    void *zctx;
    void *pull;
    void *router;
    pthread_t thread;
    atomic_int stop;
    pthread_mutex_t mu;            /* guards everything below */
    uint8_t seen[S_THREADS * S_PER_THREAD];
    uint64_t tokens[1024];
    uint32_t ntokens;
    int bad;                       /* samples or batches that failed checks */
    int bad_messages;
    uint64_t main_seen, tick_seen, prefork_seen, child_ok, after_fork;
    uint64_t meta_seen;
    uint64_t names_seen;           /* api.n / api.nn with the right value */
    int64_t main_ts;
} s_fake_t;

static s_fake_t s_fake;

static const char *
s_tag(const telem_tag_t *tags, uint32_t n, const char *key)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(tags[i].key, key) == 0)
            return tags[i].value;
    return NULL;
}

/* Checks one sample of the four-thread scenario; under s_fake.mu. */
static void
s_fake_thread_sample(const telem_batch_t *b, const telem_sample_t *s)
{
    int k = s->metric[5] - '0';
    double v = s->value;
    const char *th = s_tag(s->tags, s->ntags, "thread");
    const char *ph = s_tag(s->tags, s->ntags, "phase");
    const char *pid = s_tag(b->tags, b->ntags, "pid");
    const char *rank = s_tag(b->tags, b->ntags, "rank");
    char want_pid[24];
    snprintf(want_pid, sizeof want_pid, "%ld", (long) getpid());
    if (k < 0 || k >= S_THREADS || v < k * S_PER_THREAD
        || v >= (k + 1) * S_PER_THREAD || v != floor(v) || s->ntags != 2
        || !th || th[0] - '0' != k || !ph || strcmp(ph, "fwd") != 0
        || !pid || strcmp(pid, want_pid) != 0 || !rank
        || strcmp(rank, S_RANK) != 0 || s->level != 1 || s->ts_ns <= 0
        || strcmp(b->source, "fake") != 0) {
        s_fake.bad++;
        return;
    }
    s_fake.seen[(size_t) v]++;
}

static void
s_fake_sample(const telem_batch_t *b, const telem_sample_t *s)
{
    const char *pid = s_tag(b->tags, b->ntags, "pid");
    int mine = pid && atol(pid) == (long) getpid();
    if (strncmp(s->metric, "api.t", 5) == 0 && strlen(s->metric) == 6)
        s_fake_thread_sample(b, s);
    else if (strcmp(s->metric, "api.main") == 0) {
        s_fake.main_seen++;
        s_fake.main_ts = s->ts_ns;
    } else if (strcmp(s->metric, "api.tick") == 0)
        s_fake.tick_seen++;
    else if (strcmp(s->metric, "api.prefork") == 0)
        s_fake.prefork_seen += mine;
    else if (strcmp(s->metric, "api.child") == 0)
        s_fake.child_ok += pid && !mine;
    else if (strcmp(s->metric, "api.n") == 0 || strcmp(s->metric, "api.nn") == 0)
        s_fake.names_seen += s->value == (double) strlen(s->metric);
    else if (strcmp(s->metric, "api.afterfork") == 0)
        s_fake.after_fork += mine;
    else
        s_fake.bad++;
}

static void
s_fake_ingest(telem_proto_decoder_t *dec, const void *data, size_t size)
{
    telem_msg_t m;
    pthread_mutex_lock(&s_fake.mu);
    if (telem_proto_decode(dec, data, size, &m) != 0) {
        s_fake.bad_messages++;
    } else if (m.type == TELEM_MSG_BATCH) {
        for (uint32_t i = 0; i < m.u.batch.nsamples; i++)
            s_fake_sample(&m.u.batch, &m.u.batch.samples[i]);
        if (m.u.batch.fin_token)
            s_fake.tokens[s_fake.ntokens++ % 1024] = m.u.batch.fin_token;
    } else if (m.type == TELEM_MSG_META) {
        const telem_meta_t *meta = &m.u.meta;
        if (strcmp(meta->metric, "api.t0") == 0
            && meta->type == TELEM_METRIC_COUNTER
            && strcmp(meta->unit, "steps") == 0
            && strcmp(meta->doc, "Steps done.") == 0)
            s_fake.meta_seen++;
        else
            s_fake.bad++;
    } else {
        s_fake.bad_messages++;
    }
    pthread_mutex_unlock(&s_fake.mu);
}

static int
s_fake_token_seen(uint64_t token)
{
    pthread_mutex_lock(&s_fake.mu);
    int seen = 0;
    uint32_t n = s_fake.ntokens < 1024 ? s_fake.ntokens : 1024;
    for (uint32_t i = 0; i < n && !seen; i++)
        seen = token && s_fake.tokens[i] == token;
    pthread_mutex_unlock(&s_fake.mu);
    return seen;
}

/* Answers one [identity, (empty,) request] on the ROUTER. */
static void
s_fake_control(telem_proto_decoder_t *dec, telem_proto_encoder_t *enc)
{
    zmq_msg_t part[3];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t f;
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, s_fake.router, 0) < 0) {
            zmq_msg_close(&f);
            break;
        }
        more = zmq_msg_more(&f);
        if (n < 3)
            part[n++] = f;
        else
            zmq_msg_close(&f);
    }
    telem_msg_t m;
    if (n >= 2 && telem_proto_decode(dec, zmq_msg_data(&part[n - 1]),
                                     zmq_msg_size(&part[n - 1]), &m) == 0
        && m.type == TELEM_MSG_CONTROL && m.u.control.op == TELEM_CTL_SYNC) {
        telem_control_reply_t r;
        memset(&r, 0, sizeof r);
        r.id = m.u.control.id;
        r.op = TELEM_CTL_SYNC;
        r.synced = s_fake_token_seen((uint64_t) m.u.control.arg);
        r.status.node = "fake";
        const void *data;
        size_t size;
        if (telem_proto_encode_control_reply(enc, &r, &data, &size) == 0) {
            zmq_send(s_fake.router, zmq_msg_data(&part[0]),
                     zmq_msg_size(&part[0]), ZMQ_SNDMORE);
            if (n == 3)
                zmq_send(s_fake.router, "", 0, ZMQ_SNDMORE);
            zmq_send(s_fake.router, data, size, 0);
        }
    } else {
        pthread_mutex_lock(&s_fake.mu);
        s_fake.bad_messages++;
        pthread_mutex_unlock(&s_fake.mu);
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&part[i]);
}

static void *
s_fake_run(void *arg)
{
    (void) arg;
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    REQUIRE(dec && enc);
    zmq_msg_t f;
    zmq_msg_init(&f);
    while (!atomic_load(&s_fake.stop)) {
        zmq_pollitem_t items[2] = { { s_fake.pull, 0, ZMQ_POLLIN, 0 },
                                    { s_fake.router, 0, ZMQ_POLLIN, 0 } };
        if (zmq_poll(items, 2, 50) <= 0)
            continue;
        /* Ingest first, so a SYNC sees every batch that came before it. */
        while (zmq_msg_recv(&f, s_fake.pull, ZMQ_DONTWAIT) >= 0)
            s_fake_ingest(dec, zmq_msg_data(&f), zmq_msg_size(&f));
        if (items[1].revents & ZMQ_POLLIN)
            s_fake_control(dec, enc);
    }
    zmq_msg_close(&f);
    telem_proto_decoder_destroy(&dec);
    telem_proto_encoder_destroy(&enc);
    return NULL;
}

static void
s_fake_start(const char *rundir, const char *node)
{
    memset(&s_fake, 0, sizeof s_fake);
    pthread_mutex_init(&s_fake.mu, NULL);
    REQUIRE(telem_node_path(s_fake.dir, sizeof s_fake.dir, rundir, node, "")
            == 0);
    REQUIRE(mkdir(s_fake.dir, 0700) == 0);
    REQUIRE(telem_node_endpoint(s_fake.ingest, sizeof s_fake.ingest, rundir,
                                node, "ingest.sock") == 0);
    REQUIRE(telem_node_endpoint(s_fake.ctl, sizeof s_fake.ctl, rundir, node,
                                "ctl.sock") == 0);
    s_fake.zctx = zmq_ctx_new();
    s_fake.pull = zmq_socket(s_fake.zctx, ZMQ_PULL);
    s_fake.router = zmq_socket(s_fake.zctx, ZMQ_ROUTER);
    REQUIRE(s_fake.pull && s_fake.router);
    int zero = 0;
    zmq_setsockopt(s_fake.pull, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s_fake.router, ZMQ_LINGER, &zero, sizeof zero);
    REQUIRE(zmq_bind(s_fake.pull, s_fake.ingest) == 0);
    REQUIRE(zmq_bind(s_fake.router, s_fake.ctl) == 0);
    REQUIRE(pthread_create(&s_fake.thread, NULL, s_fake_run, NULL) == 0);
}

static void
s_fake_stop(void)
{
    atomic_store(&s_fake.stop, 1);
    pthread_join(s_fake.thread, NULL);
    zmq_close(s_fake.pull);
    zmq_close(s_fake.router);
    zmq_ctx_term(s_fake.zctx);
    unlink(s_fake.ingest + 6);
    unlink(s_fake.ctl + 6);
    rmdir(s_fake.dir);
    pthread_mutex_destroy(&s_fake.mu);
}

/* Waits (at most 10 s) until *counter, read under the lock, reaches want. */
static uint64_t
s_fake_wait(uint64_t *counter, uint64_t want)
{
    int64_t deadline = telem_mono_ns() + 10 * TELEM_NS_PER_SEC;
    uint64_t v;
    for (;;) {
        pthread_mutex_lock(&s_fake.mu);
        v = *counter;
        pthread_mutex_unlock(&s_fake.mu);
        if (v >= want || telem_mono_ns() > deadline)
            return v;
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* ---- helpers --------------------------------------------------------- */

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
s_stats(telem_stats_t *st)
{
    memset(st, 0xff, sizeof *st);
    telem_stats(st);
}

/* ---- scenarios ------------------------------------------------------- */

/* Bad samples; returns how many good ones it added. */
static int
s_test_invalid_samples(void)
{
    char name[300];
    memset(name, 'x', sizeof name);
    name[256] = '\0';
    int ok = 0;
    CHECK(telem_add_data(NULL, 1, 0, 1) == TELEM_EINVAL);
    CHECK(telem_add_data("", 1, 0, 1) == TELEM_EINVAL);
    CHECK(telem_add_data(name, 1, 0, 1) == TELEM_EINVAL);
    name[255] = '\0';
    CHECK(telem_add_data(name, 1, 0, 1) == 0 && ++ok);
    CHECK(telem_add_data("a", 1, 0, 0) == TELEM_EINVAL);
    CHECK(telem_add_data("a", 1, 0, 5) == TELEM_EINVAL);
    CHECK(telem_add_data("a", 1, 0, -1) == TELEM_EINVAL);
    CHECK(telem_add_data("a", NAN, 0, 1) == TELEM_EINVAL);
    CHECK(telem_add_data("a", INFINITY, 0, 1) == TELEM_EINVAL);
    CHECK(telem_add_data("a", -INFINITY, 0, 1) == TELEM_EINVAL);
    CHECK(telem_add_data("a", 1, -1, 1) == TELEM_EINVAL);
    CHECK(telem_add_data("a", -1e300, 1234, 1) == 0 && ++ok);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 9) == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, -1) == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "host", "h") == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "pid", "1") == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, (char *) NULL, "v")
          == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "k", (char *) NULL)
          == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "", "v") == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "k", "") == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "k", name) == 0 && ++ok);
    name[255] = 'x';
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "k", name) == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 2, "k", "1", "k", "2")
          == TELEM_EINVAL);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 8, "a", "1", "b", "2", "c", "3",
                              "d", "4", "e", "5", "f", "6", "g", "7", "rank",
                              "8") == 0 && ++ok);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 0) == 0 && ++ok);
    return ok;
}

static void
s_test_invalid(void)
{
    REQUIRE(telem_init() == 0);
    int ok = s_test_invalid_samples();
    char doc[TELEM_TEXT_MAX + 2];
    memset(doc, 'd', sizeof doc);
    doc[TELEM_TEXT_MAX + 1] = '\0';
    CHECK(telem_describe(NULL, "gauge", "", "") == TELEM_EINVAL);
    CHECK(telem_describe("a", NULL, "", "") == TELEM_EINVAL);
    CHECK(telem_describe("a", "histogram", "", "") == TELEM_EINVAL);
    CHECK(telem_describe("a", "gauge", "", doc) == TELEM_EINVAL);
    doc[TELEM_TEXT_MAX] = '\0';
    CHECK(telem_describe("a", "gauge", NULL, doc) == 0);
    CHECK(telem_describe("a", "counter", "s", NULL) == 0);
    CHECK(telem_set_level(5) == TELEM_EINVAL);
    CHECK(telem_set_level(-1) == TELEM_EINVAL);

    telem_stats_t st;
    s_stats(&st);
    CHECK(st.queued == (uint64_t) ok);
    CHECK(st.filtered == 0);
    /* No telemd in this run directory. */
    CHECK(telem_finalize() == TELEM_ECONN);
    s_stats(&st);
    CHECK(st.queued == (uint64_t) ok && st.sent == 0
          && st.dropped == (uint64_t) ok);
    CHECK(telem_add_data("a", 1, 0, 1) == TELEM_ESTATE);
    CHECK(telem_add_data_tags("a", 1, 0, 1, 1, "k", "v") == TELEM_ESTATE);
    CHECK(telem_describe("a", "gauge", "", "") == TELEM_ESTATE);
    CHECK(telem_flush(10) == TELEM_ESTATE);
    CHECK(telem_finalize() == 0);
}

static void
s_test_levels(void)
{
    for (int level = 0; level <= 4; level++) {
        char v[16];
        snprintf(v, sizeof v, "%d", level);
        setenv("TELEM_LEVEL", v, 1);
        REQUIRE(telem_init() == 0);
        CHECK(telem_level() == level);
        for (int l = 1; l <= 4; l++) {
            int want = level == 0 || l > level ? 1 : 0;
            CHECK(telem_add_data("api.level", l, 0, l) == want);
            CHECK(telem_add_data_tags("api.level", l, 0, l, 1, "k", "v")
                  == want);
        }
        CHECK(telem_describe("api.level", "gauge", "", "") == (level ? 0 : 1));
        telem_stats_t st;
        s_stats(&st);
        CHECK(st.queued == (uint64_t) (2 * level));
        CHECK(st.filtered == (uint64_t) (level ? 2 * (4 - level) : 0));
        CHECK(telem_set_level(4) == 0 && telem_level() == 4);
        CHECK(telem_add_data("api.level", 4, 0, 4) == 0);
        CHECK(telem_set_level(0) == 0 && telem_level() == 0);
        CHECK(telem_add_data("api.level", 1, 0, 1) == 1);
        telem_finalize();
    }
    const char *bad[] = { "abc", "5", "-1", "2x", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TELEM_LEVEL", bad[i], 1);
        REQUIRE(telem_init() == 0);
        CHECK(telem_level() == 1);
        telem_finalize();
    }
    unsetenv("TELEM_LEVEL");
}

static void
s_test_no_telemd(const char *rundir)
{
    REQUIRE(telem_init() == 0);
    const int n = 20000;
    uint64_t accepted = 0, refused = 0, other = 0;
    for (int i = 0; i < n; i++) {
        int rc = telem_add_data("api.lonely", i, 0, 1);
        accepted += rc == 0;
        refused += rc == TELEM_EFULL;
        other += rc != 0 && rc != TELEM_EFULL;
    }
    CHECK(other == 0);
    CHECK(accepted > 0);
    int64_t t0 = telem_mono_ns();
    CHECK(telem_flush(60000) == TELEM_ECONN);
    /* ECONN comes at once, not at the 60 s deadline. */
    CHECK(telem_mono_ns() - t0 < 30 * TELEM_NS_PER_SEC);
    telem_stats_t st;
    s_stats(&st);
    CHECK(st.queued == accepted);
    CHECK(st.sent == 0);
    CHECK(st.dropped == accepted + refused);
    t0 = telem_mono_ns();
    CHECK(telem_finalize() == TELEM_ECONN);
    CHECK(telem_mono_ns() - t0 < 10 * TELEM_NS_PER_SEC);

    /* An explicit TELEM_INGEST on a path without a socket: same story. */
    char ep[TELEM_PATH_MAX];
    snprintf(ep, sizeof ep, "ipc://%s/none/ingest.sock", rundir);
    setenv("TELEM_INGEST", ep, 1);
    REQUIRE(telem_init() == 0);
    CHECK(telem_add_data("api.lonely", 1, 0, 1) == 0);
    CHECK(telem_flush(60000) == TELEM_ECONN);
    CHECK(telem_finalize() == TELEM_ECONN);
    unsetenv("TELEM_INGEST");
}

static atomic_int s_race_stop;

/* Adds, describes and flushes in a loop until told to stop; counts return
 * codes that telem.h does not allow. */
static void *
s_racer(void *arg)
{
    long *unexpected = arg;
    for (long i = 0; !atomic_load(&s_race_stop); i++) {
        int rc = i % 512 == 511 ? telem_describe("api.race", "gauge", "", "")
                 : i % 4096 == 4095 ? telem_flush(1)
                 : telem_add_data_tags("api.race", i, 0, 1, 1, "k", "v");
        if (rc != 0 && rc != 1 && rc != TELEM_EFULL && rc != TELEM_ESTATE
            && rc != TELEM_ECONN && rc != TELEM_ETIMEDOUT)
            (*unexpected)++;
    }
    return NULL;
}

/* telem_finalize() and telem_init() while other threads keep adding. */
static void
s_test_races(void)
{
    pthread_t th[3];
    long unexpected[3] = { 0, 0, 0 };
    REQUIRE(telem_init() == 0);
    atomic_store(&s_race_stop, 0);
    for (int k = 0; k < 3; k++)
        REQUIRE(pthread_create(&th[k], NULL, s_racer, &unexpected[k]) == 0);
    for (int round = 0; round < 20; round++) {
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        int rc = telem_finalize();
        CHECK(rc == 0 || rc == TELEM_ECONN);
        nanosleep(&ts, NULL);
        CHECK(telem_add_data("api.race", 1, 0, 1) == TELEM_ESTATE);
        CHECK(telem_init() == 0);
    }
    atomic_store(&s_race_stop, 1);
    for (int k = 0; k < 3; k++) {
        pthread_join(th[k], NULL);
        CHECK(unexpected[k] == 0);
    }
    telem_finalize();
}

typedef struct {
    int k;
    uint8_t *accepted;
    uint64_t refused;
} s_worker_t;

static void *
s_worker(void *arg)
{
    s_worker_t *w = arg;
    char metric[32], thread[16];
    snprintf(metric, sizeof metric, "api.t%d", w->k);
    snprintf(thread, sizeof thread, "%d", w->k);
    for (int i = 0; i < S_PER_THREAD; i++) {
        int idx = w->k * S_PER_THREAD + i;
        int rc = telem_add_data_tags(metric, idx, 0, 1, 2, "thread", thread,
                                     "phase", "fwd");
        w->accepted[idx] = rc == 0;
        w->refused += rc == TELEM_EFULL;
        if (rc != 0 && rc != TELEM_EFULL)
            w->refused += 1000000;   /* fails the check below */
    }
    return NULL;
}

/* Four threads add tagged samples, then exit; returns the refused count. */
static uint64_t
s_run_workers(uint8_t *accepted)
{
    s_worker_t w[S_THREADS];
    pthread_t th[S_THREADS];
    for (int k = 0; k < S_THREADS; k++) {
        w[k] = (s_worker_t) { k, accepted, 0 };
        REQUIRE(pthread_create(&th[k], NULL, s_worker, &w[k]) == 0);
    }
    uint64_t refused = 0;
    for (int k = 0; k < S_THREADS; k++) {
        pthread_join(th[k], NULL);
        refused += w[k].refused;
    }
    CHECK(refused < S_THREADS * S_PER_THREAD);
    return refused;
}

/* After a flush: what the fake telemd got, against what was accepted. */
static void
s_check_received(const uint8_t *accepted, uint64_t refused)
{
    uint64_t naccepted = 0;
    pthread_mutex_lock(&s_fake.mu);
    int mismatched = 0;
    for (size_t i = 0; i < S_THREADS * S_PER_THREAD; i++) {
        naccepted += accepted[i];
        mismatched += s_fake.seen[i] != accepted[i];
    }
    CHECK(mismatched == 0);
    CHECK(naccepted > 0);
    CHECK(s_fake.bad == 0);
    CHECK(s_fake.bad_messages == 0);
    CHECK(s_fake.main_seen == 1 && s_fake.main_ts == S_MAIN_TS);
    CHECK(s_fake.tick_seen == 1);
    CHECK(s_fake.meta_seen == 1);
    CHECK(s_fake.names_seen == 300);
    pthread_mutex_unlock(&s_fake.mu);

    telem_stats_t st;
    s_stats(&st);
    CHECK(st.queued == naccepted + 2 + 300);
    CHECK(st.sent == st.queued);
    CHECK(st.dropped == refused);
    CHECK(st.filtered == 0);
    fprintf(stderr, "fake telemd: %llu samples accepted, %llu refused (full)\n",
            (unsigned long long) naccepted, (unsigned long long) refused);
}

static void
s_test_fake_telemd(void)
{
    setenv("TELEM_RANK", S_RANK, 1);
    REQUIRE(telem_init() == 0);
    /* Nothing queued: only the end-of-stream handshake. */
    CHECK(telem_flush(30000) == 0);

    /* A lone sample reaches telemd without a flush (sender's timer). */
    CHECK(telem_add_data("api.tick", 1, 0, 1) == 0);
    CHECK(s_fake_wait(&s_fake.tick_seen, 1) == 1);

    CHECK(telem_describe("api.t0", "counter", "steps", "Steps done.") == 0);
    static uint8_t accepted[S_THREADS * S_PER_THREAD];
    uint64_t refused = s_run_workers(accepted);
    CHECK(telem_add_data("api.main", 42, S_MAIN_TS, 1) == 0);
    /* Names that are prefixes of each other, one after another (a batch
     * stores a repeated name once). */
    static const char *const names[] = { "api.nn", "api.n", "api.n", "api.nn" };
    for (int i = 0; i < 300; i++)
        CHECK(telem_add_data(names[i % 4], (double) strlen(names[i % 4]), 0, 1)
              == 0);
    CHECK(telem_flush(30000) == 0);
    s_check_received(accepted, refused);
}

static void
s_test_fork(void)
{
    /* Unsent samples in the parent's buffer at fork time. */
    for (int i = 0; i < 3; i++)
        CHECK(telem_add_data("api.prefork", i, 0, 1) == 0);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int ok = 0;
        for (int i = 0; i < S_CHILD_SAMPLES; i++)
            ok += telem_add_data("api.child", i, 0, 1) == 0;
        int rc = telem_finalize();
        telem_stats_t st;
        telem_stats(&st);
        _exit(rc == 0 && ok == S_CHILD_SAMPLES && st.sent == S_CHILD_SAMPLES
              ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(telem_add_data("api.afterfork", 1, 0, 1) == 0);
    CHECK(telem_finalize() == 0);
    pthread_mutex_lock(&s_fake.mu);
    CHECK(s_fake.child_ok == S_CHILD_SAMPLES);
    CHECK(s_fake.prefork_seen == 3);
    CHECK(s_fake.after_fork == 1);
    CHECK(s_fake.bad == 0);
    pthread_mutex_unlock(&s_fake.mu);
}

int
main(void)
{
    char tmpl_a[] = "/tmp/telem_api_XXXXXX";
    char tmpl_b[] = "/tmp/telem_api_XXXXXX";
    char *empty = mkdtemp(tmpl_a);
    char *rundir = mkdtemp(tmpl_b);
    REQUIRE(empty && rundir);

    s_env(empty, "lonely");
    s_test_invalid();
    s_test_levels();
    s_test_no_telemd(empty);
    s_test_races();

    s_env(rundir, "fake");
    s_fake_start(rundir, "fake");
    s_test_fake_telemd();
    s_test_fork();
    s_fake_stop();

    rmdir(empty);
    rmdir(rundir);
    return check_report("test_telem_api");
}
