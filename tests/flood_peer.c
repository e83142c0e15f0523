/* flood_peer.c - the flood of tests/it_flood.sh: malformed messages to
 * every socket of telemd and telem_dictd, with good requests between them
 * that must all be answered correctly.
 *
 *   flood_peer keys DIR
 *       makes a job's key directory (telem_keys_create): DIR/job.key.
 *   flood_peer zmq [--clean] --node N --keys DIR --ingest EP --ctl EP
 *                  --tcp EP --dict-ipc EP --dict-tcp EP --rounds R
 *                  --per-round B [--seed S]
 *       R rounds; each sends B malformed messages (flood_bad.c), in turn
 *       to telemd's ingest (ipc PUSH), its control socket (ipc) and its
 *       TCP query endpoint, and telem_dictd's ipc and TCP endpoints (TCP
 *       is CURVE with the keys of DIR, so the bytes reach the decoders),
 *       then on each of those sockets good requests (flood_good.c): a
 *       good batch confirmed by SYNC, status and query requests that must
 *       name the node and hold the newest good samples, a dictionary put
 *       and get across both dictionary sockets.  At the end, telemd must
 *       hold every good sample, its bad_messages must have grown by
 *       exactly what it was sent, every malformed request to telemd must
 *       have had its refusal, and telem_dictd's telem_dict_bad_messages
 *       (recorded at telemd) must reach exactly what it was sent.
 *       --clean sends the same good requests and no malformed one.
 *   flood_peer http [--clean] --port P [--token-file F] [--metrics]
 *                   --bad N --every K --slow S [--seed S]
 *       the HTTP flood of flood_http.c on 127.0.0.1:P.
 *
 * Prints its figures; exit 0 when every check held, 1 otherwise, 2 on bad
 * usage.
 */
#include "flood_good.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_sock_raw.h"
#include "telem_time.h"

#define S_TARGETS 5
#define S_DICT_METRIC "telem_dict_bad_messages"
#define S_METRIC_WAIT_NS (30 * TELEM_NS_PER_SEC)
#define S_QUERY_POINTS 16          /* newest points a round's query asks */
#define S_SAMPLE_EVERY 10          /* rounds per good sample */

typedef struct {
    int clean, metrics, slow;
    const char *node, *keys_dir, *token_file;
    const char *ep[S_TARGETS];     /* ingest, ctl, tcp, dict-ipc, dict-tcp */
    long rounds, per_round, bad, every;
    int port;
    uint64_t seed;
} s_opts_t;

typedef struct {
    s_opts_t *o;
    flood_ctx_t c;
    flood_target_t t[S_TARGETS];
    telem_keys_t *keys;
    void *zctx;
    long good;                     /* good requests answered correctly */
    long asked;                    /* good requests sent */
    int failed;
} s_run_t;

static const char *const s_names[S_TARGETS] = {
    "ingest", "ctl", "tcp", "dict-ipc", "dict-tcp"
};
static const flood_to_t s_to[S_TARGETS] = {
    FLOOD_TO_INGEST, FLOOD_TO_REQUEST, FLOOD_TO_REQUEST, FLOOD_TO_DICT,
    FLOOD_TO_DICT
};

/* ---- options ------------------------------------------------------------ */

static int
s_parse(s_opts_t *o, int argc, char **argv)
{
    static const struct option opts[] = {
        { "clean", 0, 0, 'c' }, { "node", 1, 0, 'n' }, { "keys", 1, 0, 'k' },
        { "ingest", 1, 0, '0' }, { "ctl", 1, 0, '1' }, { "tcp", 1, 0, '2' },
        { "dict-ipc", 1, 0, '3' }, { "dict-tcp", 1, 0, '4' },
        { "rounds", 1, 0, 'r' }, { "per-round", 1, 0, 'b' },
        { "seed", 1, 0, 's' }, { "port", 1, 0, 'p' },
        { "token-file", 1, 0, 't' }, { "metrics", 0, 0, 'm' },
        { "bad", 1, 0, 'B' }, { "every", 1, 0, 'e' }, { "slow", 1, 0, 'S' },
        { 0, 0, 0, 0 }
    };
    int c;
    o->seed = 42;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': o->clean = 1; break;
        case 'm': o->metrics = 1; break;
        case 'n': o->node = optarg; break;
        case 'k': o->keys_dir = optarg; break;
        case '0': case '1': case '2': case '3': case '4':
            o->ep[c - '0'] = optarg;
            break;
        case 'r': o->rounds = atol(optarg); break;
        case 'b': o->per_round = atol(optarg); break;
        case 's': o->seed = strtoull(optarg, NULL, 10); break;
        case 'p': o->port = atoi(optarg); break;
        case 't': o->token_file = optarg; break;
        case 'B': o->bad = atol(optarg); break;
        case 'e': o->every = atol(optarg); break;
        case 'S': o->slow = atoi(optarg); break;
        default: return -1;
        }
    }
    return 0;
}

/* ---- the ZeroMQ flood --------------------------------------------------- */

static int
s_connect(s_run_t *r)
{
    telem_sock_opts_t so = {
        .max_msg = TELEM_SOCK_KEEP, .sndhwm = TELEM_SOCK_KEEP,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = r->keys,
    };
    for (int i = 0; i < S_TARGETS; i++) {
        char ep[512];
        if (!r->o->ep[i])
            return fprintf(stderr, "flood: --%s is missing\n", s_names[i]), -1;
        snprintf(ep, sizeof ep, ">%s", r->o->ep[i]);
        r->t[i].name = s_names[i];
        r->t[i].to = s_to[i];
        r->t[i].sock = telem_sock_raw_new(r->zctx, i ? ZMQ_DEALER : ZMQ_PUSH,
                                          &so, ep, NULL);
        if (!r->t[i].sock)
            return fprintf(stderr, "flood: cannot connect to %s\n", ep), -1;
    }
    return 0;
}

/* The malformed messages of one round, to the sockets in turn. */
static void
s_bad_round(s_run_t *r, flood_bad_t *bad)
{
    for (long i = 0; i < r->o->per_round; i++) {
        flood_target_t *t = &r->t[i % S_TARGETS];
        flood_msg_t m;
        flood_bad_make(bad, t->to, &m);
        if (flood_send(t->sock, m.data, m.size, m.extra) != 0) {
            fprintf(stderr, "flood: %s: send failed\n", t->name);
            r->failed = 1;
            return;
        }
        t->bad++;
        t->per_kind[m.kind]++;
    }
}

/* The good requests of round `n` (from 1), on every socket.  Every
 * S_SAMPLE_EVERY-th round's batch holds a good sample (value n); the
 * others hold none and only pace the ingest socket, so the good series
 * stays small (a sanitizer build's allocator keeps what telemd's store
 * churns through as a series grows). */
static void
s_good_round(s_run_t *r, long n)
{
    flood_target_t *ing = &r->t[0], *ctl = &r->t[1], *tcp = &r->t[2];
    long last = n - n % S_SAMPLE_EVERY;       /* the newest good sample */
    int ok = flood_good_ingest(&r->c, ing, ctl, (double) n,
                               n % S_SAMPLE_EVERY == 0) == 0;
    r->good += ok;
    flood_target_t *q = n % 2 ? ctl : tcp, *s = n % 2 ? tcp : ctl;
    int rc = last ? flood_good_query(&r->c, q, (uint32_t) (n / S_SAMPLE_EVERY),
                                     (double) last, S_QUERY_POINTS)
                  : flood_good_status(&r->c, q, NULL);
    r->good += rc == 0;
    ok &= rc == 0;
    rc = flood_good_status(&r->c, s, NULL);
    r->good += rc == 0;
    ok &= rc == 0;
    rc = flood_good_dict(&r->c, &r->t[3 + n % 2], &r->t[4 - n % 2], n);
    r->good += rc == 0 ? 2 : 0;
    ok &= rc == 0;
    r->asked += 5;
    if (!ok)
        r->failed = 1;
}

/* telemd's bad_messages grew by what it was sent, and every malformed
 * request to it was refused with a reply. */
static void
s_check_telemd(s_run_t *r, uint64_t before)
{
    telem_status_t st;
    long n = r->o->rounds / S_SAMPLE_EVERY;
    if ((n && flood_good_query(&r->c, &r->t[2], (uint32_t) n,
                               (double) (n * S_SAMPLE_EVERY), 0) != 0)
        || flood_good_status(&r->c, &r->t[1], &st) != 0) {
        r->failed = 1;
        return;
    }
    printf("zmq: telemd holds every good sample: %ld\n", n);
    long sent = r->t[0].bad + r->t[1].bad + r->t[2].bad;
    printf("zmq: telemd bad_messages %llu -> %llu (+%llu; sent %ld); "
           "refusals read: ctl %ld of %ld, tcp %ld of %ld\n",
           (unsigned long long) before, (unsigned long long) st.bad_messages,
           (unsigned long long) (st.bad_messages - before), sent,
           r->t[1].replies, r->t[1].bad, r->t[2].replies, r->t[2].bad);
    if (st.bad_messages - before != (uint64_t) sent
        || r->t[1].replies != r->t[1].bad || r->t[2].replies != r->t[2].bad)
        r->failed = 1;
}

/* telem_dictd's count, recorded every second as a metric of its node,
 * reaches what it was sent. */
static void
s_check_dict(s_run_t *r)
{
    long sent = r->t[3].bad + r->t[4].bad;
    double v = -1;
    int64_t deadline = telem_mono_ns() + S_METRIC_WAIT_NS;
    while (telem_mono_ns() < deadline) {
        int rc = flood_good_latest(&r->c, &r->t[1], S_DICT_METRIC, &v);
        if (rc < 0 || (rc == 0 && v == (double) sent))
            break;
        struct timespec pause = { 0, 50 * 1000 * 1000 };
        nanosleep(&pause, NULL);      /* the next record comes each second */
    }
    printf("zmq: telem_dictd %s %.0f (sent %ld); refusals read: dict-ipc "
           "%ld, dict-tcp %ld (a request with value frames it does not "
           "declare is counted, not answered)\n", S_DICT_METRIC, v, sent,
           r->t[3].replies, r->t[4].replies);
    if (v != (double) sent)
        r->failed = 1;
}

static void
s_summary(s_run_t *r, double secs)
{
    long total = 0, kinds[FLOOD_BAD_N] = { 0 };
    for (int i = 0; i < S_TARGETS; i++) {
        total += r->t[i].bad;
        for (int k = 0; k < FLOOD_BAD_N; k++)
            kinds[k] += r->t[i].per_kind[k];
    }
    printf("zmq: %ld malformed messages (", total);
    for (int i = 0; i < S_TARGETS; i++)
        printf("%s%s %ld", i ? ", " : "", r->t[i].name, r->t[i].bad);
    printf(") in %.1f s (%.0f/s)\nzmq: by kind:", secs,
           secs > 0 ? (double) total / secs : 0);
    for (int k = 0; k < FLOOD_BAD_N; k++)
        printf("%s %s %ld", k ? "," : "", flood_bad_names[k], kinds[k]);
    printf("\nzmq: %ld good requests answered correctly of %ld\n", r->good,
           r->asked);
}

static void
s_rounds(s_run_t *r)
{
    flood_bad_t *bad = flood_bad_new(r->o->seed);
    for (long n = 1; n <= r->o->rounds && !r->failed; n++) {
        if (!r->o->clean)
            s_bad_round(r, bad);
        s_good_round(r, n);
    }
    flood_bad_destroy(&bad);
}

static int
s_zmq(s_opts_t *o)
{
    s_run_t r = { .o = o, .c = { .node = o->node, .seed = o->seed } };
    char why[512];
    int err = 0;
    r.c.enc = telem_proto_encoder_new();
    r.c.dec = telem_proto_decoder_new();
    r.zctx = zmq_ctx_new();
    if (!o->node || !o->keys_dir || o->rounds < 1 || o->per_round < 0
        || !(r.keys = telem_keys_load(o->keys_dir, &err, why, sizeof why)))
        return fprintf(stderr, "flood: zmq: --node, --keys (%s), --rounds "
                       "and --per-round are needed\n",
                       err ? why : "missing"), 2;
    telem_status_t st = { 0 };
    if (s_connect(&r) != 0 || flood_good_status(&r.c, &r.t[1], &st) != 0)
        return 1;
    uint64_t before = st.bad_messages;
    int64_t t0 = telem_mono_ns();
    s_rounds(&r);
    double secs = (double) (telem_mono_ns() - t0) / 1e9;
    s_summary(&r, secs);
    if (!r.failed)
        s_check_telemd(&r, before);
    if (!r.failed)
        s_check_dict(&r);
    for (int i = 0; i < S_TARGETS; i++)
        if (r.t[i].sock)
            zmq_close(r.t[i].sock);
    zmq_ctx_term(r.zctx);
    telem_keys_destroy(&r.keys);
    telem_proto_encoder_destroy(&r.c.enc);
    telem_proto_decoder_destroy(&r.c.dec);
    printf("zmq: %s\n", r.failed ? "FAILED" : "ok");
    return r.failed ? 1 : 0;
}

/* ---- the other modes ---------------------------------------------------- */

static int
s_keys(const char *dir)
{
    char why[512];
    int err = 0;
    telem_keys_t *k = telem_keys_create(dir, &err, why, sizeof why);
    if (!k)
        return fprintf(stderr, "flood: %s\n", why), 1;
    telem_keys_destroy(&k);
    return 0;
}

static int
s_http(const s_opts_t *o)
{
    char token[512] = "";
    if (o->token_file) {
        FILE *f = fopen(o->token_file, "r");
        if (!f || !fgets(token, sizeof token, f))
            return fprintf(stderr, "flood: cannot read %s\n",
                           o->token_file), 2;
        fclose(f);
        token[strcspn(token, "\r\n")] = '\0';
    }
    flood_http_opts_t h = {
        .host = "127.0.0.1", .port = o->port,
        .token = *token ? token : NULL, .metrics = o->metrics,
        .good_metric = FLOOD_GOOD_METRIC, .bad = o->bad,
        .every = o->every > 0 ? o->every : 100, .slow = o->slow,
        .seed = o->seed, .clean = o->clean,
    };
    if (o->port <= 0 || o->bad < 0)
        return fprintf(stderr, "flood: http: --port and --bad are needed\n"),
               2;
    return flood_http_run(&h);
}

int
main(int argc, char **argv)
{
    s_opts_t o = { 0 };
    if (argc < 2 || s_parse(&o, argc - 1, argv + 1) != 0) {
        fprintf(stderr, "usage: flood_peer keys DIR | zmq OPTIONS | http "
                "OPTIONS (see the top of tests/flood_peer.c)\n");
        return 2;
    }
    if (!strcmp(argv[1], "keys") && optind < argc - 1)
        return s_keys(argv[optind + 1]);
    if (!strcmp(argv[1], "zmq"))
        return s_zmq(&o);
    if (!strcmp(argv[1], "http"))
        return s_http(&o);
    fprintf(stderr, "flood_peer: unknown mode %s\n", argv[1]);
    return 2;
}
