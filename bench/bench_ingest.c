/* bench_ingest.c - how fast telemd takes in batched samples, against the
 * same pipeline written directly on libzmq and msgpack-c.
 *
 * Workload: 64 samples per batch, 1,000 distinct series (metric names
 * cycling through bench.m0000..m0999), two batch tags (pid, rank), level 1,
 * over ipc.  One producer thread (this one) encodes and sends; the consumer
 * is one thread on the other core.
 *
 *   telem: telem_proto_encode_batch() -> PUSH -> in-process telemd actor
 *          (decode, level gate, host tag, store append) -> clock stops when
 *          TELEM_CTL_SYNC confirms the final batch's fin token.
 *   raw:   msgpack_pack_* of the same map -> PUSH -> PULL thread:
 *          msgpack_unpack() into a reused zone, walk, append ts/value to a
 *          plain array -> clock stops when the final empty batch is read.
 *          The raw producer's frames are checked, at start, to be byte for
 *          byte the ones telem_proto_encode_batch() makes.
 *
 * Both start their clock before the first encode.  Then, to show which
 * stage limits, each stage alone on one thread without sockets.
 * Targets (issue): >= 1 M samples/s, telem/raw >= 0.5.
 */
#include <msgpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "bench_common.h"
#include "telem_error.h"
#include "telem_store.h"
#include "telem_time.h"
#include "telemd_agent.h"

#define S_SERIES 1000
#define S_BATCH 64
#define S_NBATCH 50000                 /* 3.2 M samples per run */
#define S_REPS 5
#define S_MICRO_NBATCH 15625           /* 1 M samples per stage test */
#define S_NODE "benchnode"

typedef struct {
    char names[S_SERIES][16];
    telem_tag_t btags[2];
    int64_t ts0;
} s_work_t;

static void
s_work_init(s_work_t *w)
{
    for (int i = 0; i < S_SERIES; i++)
        snprintf(w->names[i], sizeof w->names[i], "bench.m%04d", i);
    w->btags[0] = (telem_tag_t) { "pid", "4242" };
    w->btags[1] = (telem_tag_t) { "rank", "0" };
    w->ts0 = telem_now_ns();
}

/* Sample k of the stream: series k % S_SERIES, timestamps increasing per
 * series. */
static void
s_fill(const s_work_t *w, uint64_t batch, telem_sample_t *out)
{
    for (int j = 0; j < S_BATCH; j++) {
        uint64_t k = batch * S_BATCH + (uint64_t) j;
        out[j] = (telem_sample_t) { .metric = w->names[k % S_SERIES],
                                    .level = 1, .ts_ns = w->ts0 + (int64_t) k,
                                    .value = (double) k };
    }
}

static int
s_encode(telem_proto_encoder_t *enc, const s_work_t *w, uint64_t batch,
         telem_sample_t *buf, const void **data, size_t *size)
{
    s_fill(w, batch, buf);
    telem_batch_t b = { .source = "bench", .tags = w->btags, .ntags = 2,
                        .samples = buf, .nsamples = S_BATCH };
    return telem_proto_encode_batch(enc, &b, data, size);
}

static void
s_pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

/* The same map telem_proto_encode_batch writes, by hand: v, t, src, fin, tg, s
 * (s_check_same_frames() checks that the bytes are the same). */
static void
s_pack_raw(msgpack_packer *pk, const s_work_t *w, uint64_t batch, int n)
{
    msgpack_pack_map(pk, 6);
    s_pack_str(pk, "v");
    msgpack_pack_uint8(pk, 1);
    s_pack_str(pk, "t");
    msgpack_pack_uint8(pk, 1);
    s_pack_str(pk, "src");
    s_pack_str(pk, "bench");
    s_pack_str(pk, "fin");
    msgpack_pack_uint8(pk, 0);
    s_pack_str(pk, "tg");
    msgpack_pack_map(pk, 2);
    for (int i = 0; i < 2; i++) {
        s_pack_str(pk, w->btags[i].key);
        s_pack_str(pk, w->btags[i].value);
    }
    s_pack_str(pk, "s");
    msgpack_pack_array(pk, (size_t) n);
    for (int j = 0; j < n; j++) {
        uint64_t k = batch * S_BATCH + (uint64_t) j;
        msgpack_pack_array(pk, 4);
        s_pack_str(pk, w->names[k % S_SERIES]);
        msgpack_pack_int64(pk, w->ts0 + (int64_t) k);
        msgpack_pack_double(pk, (double) k);
        msgpack_pack_uint8(pk, 1);
    }
}

/* Exits unless the raw producer's frames are byte for byte telem's: both
 * consumers must be given the same messages. */
static void
s_check_same_frames(const s_work_t *w)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_sample_t buf[S_BATCH];
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    for (uint64_t b = 0; b < 3; b++) {
        const void *data;
        size_t size;
        if (s_encode(enc, w, b * 7919, buf, &data, &size) != 0)
            bench_die("encode", "failed");
        msgpack_sbuffer_clear(&sb);
        s_pack_raw(&pk, w, b * 7919, S_BATCH);
        if (sb.size != size || memcmp(sb.data, data, size) != 0)
            bench_die("bench_ingest", "raw and telem frames differ "
                      "(%zu and %zu bytes)", sb.size, size);
    }
    msgpack_sbuffer_destroy(&sb);
    telem_proto_encoder_destroy(&enc);
}

/* ---- raw consumer ------------------------------------------------------- */

typedef struct {
    void *pull;
    int64_t *ts;
    double *val;
    size_t n, cap;
    int64_t t_end;
    int bad;
} s_sink_t;

static void
s_sink_push(s_sink_t *k, int64_t ts, double v)
{
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 1u << 20;
        k->ts = realloc(k->ts, k->cap * sizeof *k->ts);
        k->val = realloc(k->val, k->cap * sizeof *k->val);
        if (!k->ts || !k->val)
            bench_die("raw sink", "out of memory");
    }
    k->ts[k->n] = ts;
    k->val[k->n++] = v;
}

static int
s_key_is(const msgpack_object *o, const char *s)
{
    size_t n = strlen(s);
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n
           && memcmp(o->via.str.ptr, s, n) == 0;
}

/* Unpacks one frame and appends its samples; returns how many, or -1. */
static int
s_raw_decode(s_sink_t *k, msgpack_zone *z, const void *data, size_t size)
{
    msgpack_object obj;
    size_t off = 0;
    msgpack_zone_clear(z);
    if (msgpack_unpack(data, size, &off, z, &obj) != MSGPACK_UNPACK_SUCCESS
        || obj.type != MSGPACK_OBJECT_MAP)
        return -1;
    for (uint32_t i = 0; i < obj.via.map.size; i++) {
        const msgpack_object_kv *kv = &obj.via.map.ptr[i];
        if (!s_key_is(&kv->key, "s") || kv->val.type != MSGPACK_OBJECT_ARRAY)
            continue;
        const msgpack_object_array *a = &kv->val.via.array;
        for (uint32_t j = 0; j < a->size; j++) {
            const msgpack_object *s = a->ptr[j].via.array.ptr;
            if (a->ptr[j].type != MSGPACK_OBJECT_ARRAY
                || a->ptr[j].via.array.size < 4)
                return -1;
            s_sink_push(k, s[1].via.i64, s[2].via.f64);
        }
        return (int) a->size;
    }
    return -1;
}

static void *
s_raw_consumer(void *arg)
{
    s_sink_t *k = arg;
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1u << 16);
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    for (;;) {
        if (zmq_msg_recv(&msg, k->pull, 0) < 0)
            break;
        int n = s_raw_decode(k, &zone, zmq_msg_data(&msg), zmq_msg_size(&msg));
        if (n < 0)
            k->bad++;
        if (n == 0)
            break;
    }
    k->t_end = bench_now_ns();
    zmq_msg_close(&msg);
    msgpack_zone_destroy(&zone);
    return NULL;
}

static void *
s_socket(void *zctx, int type, int hwm)
{
    void *s = zmq_socket(zctx, type);
    int zero = 0;
    if (!s)
        bench_die("zmq_socket", "%s", zmq_strerror(zmq_errno()));
    zmq_setsockopt(s, type == ZMQ_PULL ? ZMQ_RCVHWM : ZMQ_SNDHWM, &hwm,
                   sizeof hwm);
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    return s;
}

/* One raw run; returns samples/s. */
static double
s_run_raw(const s_work_t *w, const char *dir)
{
    char ep[300];
    snprintf(ep, sizeof ep, "ipc://%s/raw.sock", dir);
    void *cctx = zmq_ctx_new(), *pctx = zmq_ctx_new();
    s_sink_t k = { .pull = s_socket(cctx, ZMQ_PULL, 10000) };
    if (zmq_bind(k.pull, ep) != 0)
        bench_die("raw bind", "%s", zmq_strerror(zmq_errno()));
    void *push = s_socket(pctx, ZMQ_PUSH, 1000);
    zmq_connect(push, ep);
    pthread_t th;
    pthread_create(&th, NULL, s_raw_consumer, &k);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int64_t t0 = bench_now_ns();
    for (uint64_t b = 0; b <= S_NBATCH; b++) {
        msgpack_sbuffer_clear(&sb);
        s_pack_raw(&pk, w, b, b < S_NBATCH ? S_BATCH : 0);
        if (zmq_send(push, sb.data, sb.size, 0) < 0)
            bench_die("raw send", "%s", zmq_strerror(zmq_errno()));
    }
    pthread_join(th, NULL);
    double rate = (double) k.n * 1e9 / (double) (k.t_end - t0);
    if (k.n != (size_t) S_NBATCH * S_BATCH || k.bad)
        bench_die("raw", "received %zu samples, %d bad frames", k.n, k.bad);
    msgpack_sbuffer_destroy(&sb);
    zmq_close(push);
    zmq_close(k.pull);
    zmq_ctx_term(pctx);
    zmq_ctx_term(cctx);
    free(k.ts);
    free(k.val);
    return rate;
}

/* One telem run against a fresh telemd; returns samples/s. */
static double
s_run_telem(const s_work_t *w, const char *dir, uint64_t token)
{
    telemd_t *td = bench_telemd_start(dir, S_NODE, 1, 300, (size_t) 2 << 30,
                                      0);
    void *zctx = zmq_ctx_new();
    void *push = s_socket(zctx, ZMQ_PUSH, 1000);
    if (zmq_connect(push, telemd_ingest_endpoint(td)) != 0)
        bench_die("telem connect", "%s", zmq_strerror(zmq_errno()));
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_sample_t buf[S_BATCH];
    int64_t t0 = bench_now_ns();
    for (uint64_t b = 0; b < S_NBATCH; b++) {
        const void *data;
        size_t size;
        int rc = s_encode(enc, w, b, buf, &data, &size);
        if (rc)
            bench_die("telem_proto_encode_batch", "%s", telem_strerror(rc));
        if (zmq_send(push, data, size, 0) < 0)
            bench_die("telem send", "%s", zmq_strerror(zmq_errno()));
    }
    int rc = bench_fin_and_sync(zctx, push, enc, telemd_ctl_endpoint(td),
                                token, 60000);
    int64_t t1 = bench_now_ns();
    if (rc)
        bench_die("telem sync", "%s", telem_strerror(rc));
    int64_t got = bench_ingested(zctx, telemd_ctl_endpoint(td));
    if (got != (int64_t) S_NBATCH * S_BATCH)
        bench_die("telem", "telemd ingested %lld of %lld samples",
                  (long long) got, (long long) S_NBATCH * S_BATCH);
    telem_proto_encoder_destroy(&enc);
    zmq_close(push);
    zmq_ctx_term(zctx);
    telemd_destroy(&td);
    return (double) S_NBATCH * S_BATCH * 1e9 / (double) (t1 - t0);
}

/* ---- stages alone --------------------------------------------------------- */

typedef struct {
    double enc_telem, enc_raw, dec_telem, dec_raw, agent;
    double store, store_tags, store_many;
} s_stages_t;

typedef struct {
    char *buf;
    size_t *off;        /* S_MICRO_NBATCH + 1 offsets */
} s_frames_t;

static void
s_frames_telem(const s_work_t *w, s_frames_t *f)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_sample_t buf[S_BATCH];
    size_t cap = 1u << 20, used = 0;
    f->buf = malloc(cap);
    f->off = malloc((S_MICRO_NBATCH + 1) * sizeof *f->off);
    for (uint64_t b = 0; b < S_MICRO_NBATCH; b++) {
        const void *data;
        size_t size;
        if (s_encode(enc, w, b, buf, &data, &size) != 0)
            bench_die("encode", "failed");
        while (used + size > cap)
            f->buf = realloc(f->buf, cap *= 2);
        memcpy(f->buf + used, data, size);
        f->off[b] = used;
        used += size;
    }
    f->off[S_MICRO_NBATCH] = used;
    telem_proto_encoder_destroy(&enc);
}

static double
s_rate_since(int64_t t0, double samples)
{
    return samples * 1e9 / (double) (bench_now_ns() - t0);
}

static void
s_stage_encode(const s_work_t *w, s_stages_t *st)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_sample_t buf[S_BATCH];
    const double n = (double) S_MICRO_NBATCH * S_BATCH;
    int64_t t0 = bench_now_ns();
    for (uint64_t b = 0; b < S_MICRO_NBATCH; b++) {
        const void *data;
        size_t size;
        if (s_encode(enc, w, b, buf, &data, &size) != 0)
            bench_die("encode", "failed");
    }
    st->enc_telem = s_rate_since(t0, n);
    telem_proto_encoder_destroy(&enc);

    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    t0 = bench_now_ns();
    for (uint64_t b = 0; b < S_MICRO_NBATCH; b++) {
        msgpack_sbuffer_clear(&sb);
        s_pack_raw(&pk, w, b, S_BATCH);
    }
    st->enc_raw = s_rate_since(t0, n);
    msgpack_sbuffer_destroy(&sb);
}

static void
s_stage_decode(const s_work_t *w, const s_frames_t *f, s_stages_t *st)
{
    const double n = (double) S_MICRO_NBATCH * S_BATCH;
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    telem_msg_t m;
    int64_t t0 = bench_now_ns();
    for (int b = 0; b < S_MICRO_NBATCH; b++)
        if (telem_proto_decode(dec, f->buf + f->off[b],
                               f->off[b + 1] - f->off[b], &m) != 0)
            bench_die("decode", "%s", telem_proto_decoder_error(dec));
    st->dec_telem = s_rate_since(t0, n);
    telem_proto_decoder_destroy(&dec);

    /* The raw path decodes its own frames (same content, packed by hand). */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    s_frames_t rf = { malloc((size_t) S_MICRO_NBATCH * 4096),
                      malloc((S_MICRO_NBATCH + 1) * sizeof *rf.off) };
    size_t used = 0;
    for (uint64_t b = 0; b < S_MICRO_NBATCH; b++) {
        msgpack_sbuffer_clear(&sb);
        s_pack_raw(&pk, w, b, S_BATCH);
        memcpy(rf.buf + used, sb.data, sb.size);
        rf.off[b] = used;
        used += sb.size;
    }
    rf.off[S_MICRO_NBATCH] = used;
    msgpack_sbuffer_destroy(&sb);
    s_sink_t k = { 0 };
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1u << 16);
    t0 = bench_now_ns();
    for (int b = 0; b < S_MICRO_NBATCH; b++)
        if (s_raw_decode(&k, &zone, rf.buf + rf.off[b],
                         rf.off[b + 1] - rf.off[b]) != S_BATCH)
            bench_die("raw decode", "failed");
    st->dec_raw = s_rate_since(t0, n);
    msgpack_zone_destroy(&zone);
    free(k.ts);
    free(k.val);
    free(rf.buf);
    free(rf.off);
}

static void
s_stage_agent(const s_frames_t *f, const char *dir, s_stages_t *st)
{
    telemd_config_t cfg = { .node = S_NODE, .rundir = dir, .level = 1,
                            .window_ns = 300 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC,
                            .mem_cap_bytes = (size_t) 1 << 30 };
    telemd_agent_t *a = telemd_agent_new(&cfg, NULL);
    if (!a)
        bench_die("telemd_agent_new", "failed");
    int64_t t0 = bench_now_ns();
    for (int b = 0; b < S_MICRO_NBATCH; b++)
        if (telemd_agent_ingest(a, f->buf + f->off[b],
                                f->off[b + 1] - f->off[b]) != 0)
            bench_die("agent ingest", "failed");
    st->agent = s_rate_since(t0, (double) S_MICRO_NBATCH * S_BATCH);
    telemd_agent_destroy(&a);
}

/* How the store alone is fed in s_store_run(). */
enum { S_PLAIN, S_PREPARED, S_MANY };

/* Appends the k-th sample of the stream, or the 64 from k on (S_MANY). */
static int
s_store_put(telem_store_t *s, const s_work_t *w, int how,
            telem_store_tags_t *set, const telem_tag_t *tags, uint64_t k,
            int64_t now)
{
    if (how == S_MANY) {
        telem_store_point_t pts[S_BATCH];
        for (uint64_t j = 0; j < S_BATCH; j++)
            pts[j] = (telem_store_point_t) { w->names[(k + j) % S_SERIES],
                                             w->ts0 + (int64_t) (k + j),
                                             (double) (k + j) };
        return telem_store_append_many(s, set, pts, S_BATCH, now);
    }
    const char *metric = w->names[k % S_SERIES];
    int64_t ts = w->ts0 + (int64_t) k;
    return how == S_PREPARED
           ? telem_store_append_tags(s, metric, set, ts, (double) k, now)
           : telem_store_append(s, metric, tags, 3, ts, (double) k, now);
}

/* 1M samples over the 1k series with the three tags telemd gives them,
 * into a fresh store: plain telem_store_append() (tags canonicalised per
 * sample), with the tags prepared once (telem_store_append_tags), or 64
 * points per telem_store_append_many() call (what telemd does). */
static double
s_store_run(const s_work_t *w, int how)
{
    telem_store_config_t cfg;
    telem_store_config_default(&cfg);
    cfg.mem_cap_bytes = (size_t) 1 << 30;
    telem_store_t *s = telem_store_new(&cfg, NULL);
    telem_store_tags_t *set = telem_store_tags_new();
    telem_tag_t tags[3] = { w->btags[0], w->btags[1], { "host", S_NODE } };
    if (!s || !set || telem_store_tags_set(set, tags, 3) != 0)
        bench_die("telem_store_new", "failed");
    const uint64_t n = (uint64_t) S_MICRO_NBATCH * S_BATCH;
    uint64_t step = how == S_MANY ? S_BATCH : 1;
    int64_t now = telem_now_ns();
    int64_t t0 = bench_now_ns();
    for (uint64_t k = 0; k < n; k += step)
        if (s_store_put(s, w, how, set, tags, k, now) != 0)
            bench_die("store append", "failed at %llu",
                      (unsigned long long) k);
    double rate = s_rate_since(t0, (double) n);
    telem_store_tags_destroy(&set);
    telem_store_destroy(&s);
    return rate;
}

static void
s_stage_store(const s_work_t *w, s_stages_t *st)
{
    st->store = s_store_run(w, S_PLAIN);
    st->store_tags = s_store_run(w, S_PREPARED);
    st->store_many = s_store_run(w, S_MANY);
}

/* ---- report ----------------------------------------------------------------- */

static void
s_row_runs(const char *what, double median, const double *runs)
{
    printf("  %-58s %12.0f  ", what, median);
    for (int r = 0; r < S_REPS; r++)
        printf(" %.2f", runs[r] / 1e6);
    printf("\n");
}

static void
s_report(double raw, double telem, const double *raws, const double *telems,
         const s_stages_t *st)
{
    printf("\nend to end over ipc: %d runs each of %d samples (64 per batch, "
           "%d series, 2 batch tags)\n", S_REPS, S_NBATCH * S_BATCH, S_SERIES);
    printf("  %-58s %12s   %s\n", "path", "samples/s", "each run, M/s");
    s_row_runs("raw: msgpack_pack -> PUSH/PULL -> msgpack_unpack -> array",
               raw, raws);
    s_row_runs("telem: encode_batch -> telemd -> store, SYNC-confirmed",
               telem, telems);
    printf("  %-58s %12.2f\n", "ratio telem / raw (medians)", telem / raw);

    printf("\nstages alone, one thread, no sockets, %d samples\n",
           S_MICRO_NBATCH * S_BATCH);
    printf("  %-58s %12s %10s\n", "stage", "samples/s", "ns/sample");
#define ROW(name, v) printf("  %-58s %12.0f %10.1f\n", name, v, 1e9 / (v))
    ROW("producer: telem_proto_encode_batch", st->enc_telem);
    ROW("producer: msgpack_pack_* by hand (raw)", st->enc_raw);
    ROW("consumer: telem_proto_decode", st->dec_telem);
    ROW("consumer: msgpack_unpack reused zone + append (raw)", st->dec_raw);
    ROW("consumer: telemd_agent_ingest (decode, gate, tag, store)",
        st->agent);
    ROW("consumer: telem_store_append alone (3 tags, 1k series)", st->store);
    ROW("consumer: telem_store_append_tags alone (1k series)",
        st->store_tags);
    ROW("consumer: telem_store_append_many alone (64 a call, 1k)",
        st->store_many);
#undef ROW

    printf("\ntargets\n");
    printf("  telemd ingest >= 1,000,000 samples/s   %12.0f  %s\n", telem,
           bench_verdict(telem >= 1e6));
    printf("  ratio telem/raw >= 0.5                  %12.2f  %s\n",
           telem / raw, bench_verdict(telem / raw >= 0.5));
    char peer[64], r[32];
    snprintf(peer, sizeof peer, "raw libzmq + msgpack-c %.2f M/s", raw / 1e6);
    snprintf(r, sizeof r, "%.2f", telem / raw);
    bench_figure("telemd ingest, 64-sample batches, 1k series, ipc",
                 ">= 1 M/s and >= 0.5x raw", peer, r,
                 telem >= 1e6 && telem / raw >= 0.5, "%.2f M/s", telem / 1e6);
}

int
main(void)
{
    bench_print_machine("bench_ingest");
    s_work_t *w = malloc(sizeof *w);
    if (!w)
        bench_die("bench_ingest", "out of memory");
    s_work_init(w);
    s_check_same_frames(w);
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "ingest");

    double raws[S_REPS], telems[S_REPS];
    for (int r = 0; r < S_REPS; r++) {
        /* Alternate the order so neither side always runs on a warm cache. */
        if (r % 2 == 0) {
            raws[r] = s_run_raw(w, dir);
            telems[r] = s_run_telem(w, dir, 1000 + (uint64_t) r);
        } else {
            telems[r] = s_run_telem(w, dir, 1000 + (uint64_t) r);
            raws[r] = s_run_raw(w, dir);
        }
    }
    double sr[S_REPS], st[S_REPS];
    memcpy(sr, raws, sizeof sr);
    memcpy(st, telems, sizeof st);
    double raw = bench_median_d(sr, S_REPS);
    double telem = bench_median_d(st, S_REPS);

    s_stages_t stages;
    s_frames_t f;
    s_frames_telem(w, &f);
    s_stage_encode(w, &stages);
    s_stage_decode(w, &f, &stages);
    s_stage_agent(&f, dir, &stages);
    s_stage_store(w, &stages);
    s_report(raw, telem, raws, telems, &stages);

    free(f.buf);
    free(f.off);
    bench_rmtree(dir);
    free(w);
    return 0;
}
