/* bench_curve_wire.c - what CURVE costs raw libzmq on loopback TCP: a
 * stream of telem's 64-sample batches (bench_curve.h); and the raw
 * sockets of this part and of the storm (bench_curve_storm.c).
 *
 * Push: telemd's ingest socket is bound on ipc only (telemd_actor.c,
 * s_bind_ingest): no sample of telem crosses TCP on its way in, so CURVE
 * costs telem's ingest nothing.  What a TCP ingest would pay is shown
 * with raw sockets: a PUSH in this thread sends 100,000 batches encoded by
 * telem_proto_encode_batch (64 samples, 1,000 series, bench_ingest's
 * workload) to a PULL in a thread of its own, which only counts them (no
 * decode): transport only.  Plain TCP, CURVE TCP, and ipc (telem's real
 * ingest path) for reference; 3 repetitions alternating, median.
 *
 * Beside them, the cipher alone: libsodium's crypto_box_easy_afternm
 * (XSalsa20-Poly1305, what CURVE seals every message with after the
 * handshake) and its open, on 64 KiB in this thread: the per-byte floor of
 * CURVE on this machine (each byte is sealed by one end, opened by the
 * other).
 *
 * The servers live in czmq's context, where telem's ZAP handler (started
 * by main) answers for their CURVE handshakes, as in a daemon.
 */
#include <czmq.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "bench_common.h"
#include "bench_curve.h"
#include "telem_error.h"
#include "telem_time.h"

#define S_NBATCH 100000
#define S_SERIES 1000
#define S_FRAMES 16
#define S_REPS 3

/* ---- raw sockets ------------------------------------------------------- */

void *
bcurve_server(int type, const telem_keys_t *keys, int backlog,
              const char *ep, char *out, size_t size)
{
    void *s = zmq_socket(zsys_init(), type);
    int zero = 0;
    if (!s)
        bench_die("zmq_socket", "%s", zmq_strerror(zmq_errno()));
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (backlog)
        zmq_setsockopt(s, ZMQ_BACKLOG, &backlog, sizeof backlog);
    if ((keys && telem_keys_apply_server(s, keys) != 0)
        || zmq_bind(s, ep) != 0
        || zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, out, &size) != 0)
        bench_die("server", "%s: %s", ep, zmq_strerror(zmq_errno()));
    return s;
}

void *
bcurve_client(void *zctx, int type, const telem_keys_t *keys, const char *ep)
{
    void *s = zmq_socket(zctx, type);
    int zero = 0;
    if (!s)
        bench_die("zmq_socket", "%s", zmq_strerror(zmq_errno()));
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if ((keys && telem_keys_apply_client(s, keys) != 0)
        || (ep && zmq_connect(s, ep) != 0))
        bench_die("client", "%s: %s", ep ? ep : "(not connected)",
                  zmq_strerror(zmq_errno()));
    return s;
}

/* ---- push -------------------------------------------------------------- */

typedef struct {
    char *data[S_FRAMES];
    size_t size[S_FRAMES];
    size_t bytes;               /* over the S_FRAMES */
} s_frames_t;

static void
s_frames_make(s_frames_t *f)
{
    static char names[S_SERIES][16];
    static const telem_tag_t tags[2] = { { "pid", "4242" }, { "rank", "0" } };
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_sample_t s[64];
    int64_t now = telem_now_ns();
    for (int i = 0; i < S_SERIES; i++)
        snprintf(names[i], sizeof names[i], "bench.m%04d", i);
    f->bytes = 0;
    for (int b = 0, k = 0; b < S_FRAMES; b++) {
        for (int j = 0; j < 64; j++, k++)
            s[j] = (telem_sample_t) { .metric = names[k % S_SERIES],
                                      .level = 1, .ts_ns = now + k,
                                      .value = (double) k };
        telem_batch_t batch = { .source = "bench", .tags = tags, .ntags = 2,
                                .samples = s, .nsamples = 64 };
        const void *data;
        if (telem_proto_encode_batch(enc, &batch, &data, &f->size[b]) != 0
            || !(f->data[b] = malloc(f->size[b])))
            bench_die("encode", "batch");
        memcpy(f->data[b], data, f->size[b]);
        f->bytes += f->size[b];
    }
    telem_proto_encoder_destroy(&enc);
}

typedef struct {
    void *pull;
    pthread_barrier_t warm;
    int64_t t_end;
    int failed;
} s_sink_t;

/* The receiver: one warm-up message, the barrier, then S_NBATCH. */
static void *
s_sink(void *arg)
{
    s_sink_t *k = arg;
    zmq_msg_t m;
    zmq_msg_init(&m);
    int ok = zmq_msg_recv(&m, k->pull, 0) >= 0;
    pthread_barrier_wait(&k->warm);
    for (int i = 0; ok && i < S_NBATCH; i++)
        ok = zmq_msg_recv(&m, k->pull, 0) >= 0;
    k->t_end = bench_now_ns();
    k->failed = !ok;
    zmq_msg_close(&m);
    return NULL;
}

/* Samples per second of one stream on `side`: 0 ipc, 1 TCP, 2 CURVE. */
static double
s_push_once(const bcurve_ctx_t *ctx, const s_frames_t *f, int side)
{
    char ep[512], bound[512];
    if (side == 0)
        snprintf(ep, sizeof ep, "ipc://%s/push.sock", ctx->dir);
    else
        snprintf(ep, sizeof ep, "tcp://127.0.0.1:*");
    const telem_keys_t *keys = side == 2 ? ctx->keys : NULL;
    s_sink_t k = { .pull = bcurve_server(ZMQ_PULL, keys, 0, ep, bound,
                                    sizeof bound) };
    void *zctx = zmq_ctx_new();
    void *push = bcurve_client(zctx, ZMQ_PUSH, keys, bound);
    pthread_t th;
    pthread_barrier_init(&k.warm, NULL, 2);
    pthread_create(&th, NULL, s_sink, &k);
    zmq_send(push, f->data[0], f->size[0], 0);
    pthread_barrier_wait(&k.warm);
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < S_NBATCH; i++)
        if (zmq_send(push, f->data[i % S_FRAMES], f->size[i % S_FRAMES], 0)
            < 0)
            bench_die("push", "send: %s", zmq_strerror(zmq_errno()));
    pthread_join(th, NULL);
    pthread_barrier_destroy(&k.warm);
    if (k.failed)
        bench_die("push", "receive failed");
    zmq_close(push);
    zmq_ctx_term(zctx);
    zmq_close(k.pull);
    return (double) S_NBATCH * 64 / ((double) (k.t_end - t0) / 1e9);
}

/* ---- the cipher alone ------------------------------------------------- */

#define S_SEAL_BYTES 65536
#define S_SEAL_N 4000               /* 256 MiB a direction */

/* MB/s of sealing (seal 1) or opening (seal 0) 64 KiB messages. */
static double
s_seal_rate(int seal)
{
    unsigned char pk[crypto_box_PUBLICKEYBYTES], sk[crypto_box_SECRETKEYBYTES];
    unsigned char k[crypto_box_BEFORENMBYTES], nonce[crypto_box_NONCEBYTES];
    unsigned char *m = calloc(1, S_SEAL_BYTES + crypto_box_MACBYTES);
    unsigned char *c = calloc(1, S_SEAL_BYTES + crypto_box_MACBYTES);
    memset(nonce, 7, sizeof nonce);
    if (!m || !c || crypto_box_keypair(pk, sk) != 0
        || crypto_box_beforenm(k, pk, sk) != 0
        || crypto_box_easy_afternm(c, m, S_SEAL_BYTES, nonce, k) != 0)
        bench_die("libsodium", "set-up failed");
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < S_SEAL_N; i++) {
        int rc = seal ? crypto_box_easy_afternm(c, m, S_SEAL_BYTES, nonce, k)
                      : crypto_box_open_easy_afternm(m, c, S_SEAL_BYTES
                                                     + crypto_box_MACBYTES,
                                                     nonce, k);
        if (rc != 0)
            bench_die("libsodium", "%s failed", seal ? "seal" : "open");
    }
    double rate = (double) S_SEAL_N * S_SEAL_BYTES
                  / ((double) (bench_now_ns() - t0) / 1e9) / 1e6;
    free(m);
    free(c);
    return rate;
}

void
bcurve_part_push(const bcurve_ctx_t *ctx, bcurve_table_t *t)
{
    s_frames_t f;
    s_frames_make(&f);
    printf("\n-- 3. ingest over TCP: telem has none (telemd's ingest socket "
           "is ipc only), so CURVE costs its ingest nothing.\n"
           "   What a TCP ingest would pay: raw PUSH -> PULL of %d batches "
           "of 64 samples (%zu B a batch on average), transport only, no "
           "decode; median of %d\n", S_NBATCH, f.bytes / S_FRAMES, S_REPS);
    static const char *const name[3] = { "ipc (telem's ingest path)",
                                         "TCP plain", "TCP CURVE" };
    double v[3][S_REPS], med[3];
    for (int rep = 0; rep < S_REPS; rep++)
        for (int j = 0; j < 3; j++) {
            int side = (j + rep) % 3;
            v[side][rep] = s_push_once(ctx, &f, side);
        }
    for (int s = 0; s < 3; s++) {
        med[s] = bench_median_d(v[s], S_REPS);
        printf("  %-28s %8.2f M samples/s  %8.1f MB/s\n", name[s],
               med[s] / 1e6, med[s] / 64 * (double) f.bytes / S_FRAMES / 1e6);
    }
    if (sodium_init() < 0)
        bench_die("libsodium", "sodium_init failed");
    printf("  the cipher alone, 64 KiB, one thread (libsodium "
           "crypto_box_*_afternm): seal %.0f MB/s, open %.0f MB/s\n",
           s_seal_rate(1), s_seal_rate(0));
    for (int b = 0; b < S_FRAMES; b++)
        free(f.data[b]);
    bcurve_add(t, &(bcurve_row_t) {
        .id = "push_tcp",
        .what = "raw PUSH/PULL TCP, 64-sample batches (M samples/s)",
        .plain = med[1] / 1e6, .curve = med[2] / 1e6, .rate = 1 });
}
