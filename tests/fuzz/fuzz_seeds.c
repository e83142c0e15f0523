/* fuzz_seeds.c - writes the binary seeds of the fuzz corpus with telem's
 * own writers: one frame of every message type, and the msgpack headers
 * that claim more elements than any frame holds (proto); blocks of every
 * value codec (block); a segment and a dump (seg); a dictionary log with
 * every record type (ddict_log).  The seeds are committed under
 * tests/fuzz/corpus/; tests/fuzz/make_seeds.sh runs this program to make
 * them again after a format changes.  Not a fuzz target.
 *
 *   fuzz_seeds CORPUS_DIR        (writes CORPUS_DIR/<target>/<name>)
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ddict_log.h"
#include "fuzz.h"
#include "proto_test.h"
#include "telem_block.h"
#include "telem_proto.h"
#include "telem_seg.h"

static const char *s_top;

/* Writes <top>/<target>/<name>: a flag byte (when flag >= 0), then p[0..n). */
static void
s_seed(const char *target, const char *name, int flag, const void *p, size_t n)
{
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", s_top, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", s_top, target, name);
    unsigned char *b = malloc(n + 1);
    if (!b)
        abort();
    size_t k = 0;
    if (flag >= 0)
        b[k++] = (unsigned char) flag;
    memcpy(b + k, p, n);
    if (fz_write(path, b, n + k) != 0) {
        fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
        exit(1);
    }
    free(b);
}

/* ---------------------------------------------------------------- proto */

static telem_proto_encoder_t *s_enc;

static void
s_frame(const char *name, int rc, const void *data, size_t size)
{
    if (rc != 0) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", name, telem_strerror(rc));
        exit(1);
    }
    s_seed("proto", name, -1, data, size);
}

static void
s_proto_core(void)
{
    static s_corpus_t c;
    static const char *const names[7] = { "batch", "meta", "query",
        "query_reply", "control", "control_reply", "error" };
    s_init_strings();
    s_make_corpus(&c);
    c.series[1].doc = "short";
    for (int k = 0; k < 7; k++) {
        const void *d;
        size_t n;
        s_frame(names[k], s_encode(s_enc, &c.msg[k], &d, &n), d, n);
    }
    (void) s_failures;
    (void) s_checks;
}

static void
s_proto_dict(void)
{
    static const char *const nodes[] = { "n1", "n2", "n3" };
    static const uint8_t key[] = "k1", val[] = "value";
    telem_dict_op_t ops[3] = {
        { TELEM_DOP_PUT, 0, 0, key, 2, 0, val, 5 },
        { TELEM_DOP_GET, 0, 0, key, 2, 0, NULL, 0 },
        { TELEM_DOP_CAS, 1, 7, key, 2, 3, NULL, 0 },
    };
    telem_dict_res_t res[2] = { { 0, 0, 4, val, 5 }, { TELEM_ENOTFOUND, 0, 0, NULL, 0 } };
    telem_dict_req_t req = { 1, 2, "ns", ops, 3 };
    telem_dict_rep_t rep = { 1, 2, 0, res, 2 };
    telem_dict_admin_t adm = { 3, TELEM_DADM_PREPARE, 4, 3, 2, nodes, 3 };
    telem_dict_admin_rep_t arep = { 3, 0, "n1", 4, 2, 0, 10, 200, nodes, 3, 3 };
    const void *d;
    size_t n;
    s_frame("dict_req", telem_proto_encode_dict_req(s_enc, TELEM_MSG_DICT_REQ, &req, &d, &n), d, n);
    s_frame("dict_repl", telem_proto_encode_dict_req(s_enc, TELEM_MSG_DICT_REPL, &req, &d, &n), d, n);
    s_frame("dict_rep", telem_proto_encode_dict_rep(s_enc, TELEM_MSG_DICT_REP, &rep, &d, &n), d, n);
    s_frame("dict_ack", telem_proto_encode_dict_rep(s_enc, TELEM_MSG_DICT_ACK, &rep, &d, &n), d, n);
    s_frame("dict_admin", telem_proto_encode_dict_admin(s_enc, &adm, &d, &n), d, n);
    s_frame("dict_admin_rep", telem_proto_encode_dict_admin_rep(s_enc, &arep, &d, &n), d, n);
}

static void
s_proto_watch(void)
{
    static const char *const nodes[] = { "n2" }, *const dets[] = { "slowgpu" };
    static const telem_watch_dev_t devs[] = { { "n2", "gpu0" } };
    static const telem_watch_evidence_t ev[] = { { "ratio", 1.4 } };
    static const telem_watch_row_t rows[] = { { "slowgpu", "effect", "0.06" } };
    telem_watch_event_t e = { 1, "slowgpu", 2, 1700000000000000000, 3.5,
                              "n2 gpu0 is 40 % slower", nodes, 1, devs, 1, ev, 1 };
    telem_restart_t r = { 9, 1700000000000000000, "slow device", nodes, 1,
                          devs, 1, dets, 1 };
    telem_restart_ack_t a = { 9, 0, "accepted" };
    telem_watch_ctl_t c = { 5, TELEM_WCTL_SET, "slowgpu", "effect", "0.1" };
    telem_watch_ctl_reply_t cr = { 5, 0, "", rows, 1 };
    telem_sysinfo_req_t si = { 11 };
    telem_sysinfo_rep_t sr = { 11, "n1", "{\"schema\":1,\"cpu\":{\"cores\":2}}" };
    const void *d;
    size_t n;
    s_frame("watch_event", telem_proto_encode_watch_event(s_enc, &e, &d, &n), d, n);
    s_frame("restart", telem_proto_encode_restart(s_enc, &r, &d, &n), d, n);
    s_frame("restart_ack", telem_proto_encode_restart_ack(s_enc, &a, &d, &n), d, n);
    s_frame("watch_ctl", telem_proto_encode_watch_ctl(s_enc, &c, &d, &n), d, n);
    s_frame("watch_ctl_reply", telem_proto_encode_watch_ctl_reply(s_enc, &cr, &d, &n), d, n);
    s_frame("sysinfo", telem_proto_encode_sysinfo(s_enc, &si, &d, &n), d, n);
    s_frame("sysinfo_reply", telem_proto_encode_sysinfo_reply(s_enc, &sr, &d, &n), d, n);
}

/* The relay's envelope around a real request and real replies. */
static void
s_proto_relay(void)
{
    static const char *const nodes[] = { "n1", "n2" };
    static unsigned char inner[256], reply[256];
    const void *d;
    size_t n, ni, nr;
    telem_control_t c = { 21, TELEM_CTL_STATUS, 0 };
    if (telem_proto_encode_control(s_enc, &c, &d, &n) != 0)
        exit(1);
    memcpy(inner, d, ni = n);
    telem_error_msg_t em = { 21, TELEM_ENOTFOUND, "nothing matches" };
    if (telem_proto_encode_error(s_enc, &em, &d, &n) != 0)
        exit(1);
    memcpy(reply, d, nr = n);
    telem_relay_req_t rq = { 21, nodes, 2, 1500, 2000, 1u << 20, inner, ni };
    telem_relay_item_t it[2] = {
        { "n1", 0, 0, "", reply, nr },
        { "n2", TELEM_ETIMEDOUT, 0, "no reply within 2000 ms", NULL, 0 },
    };
    telem_relay_rep_t rp = { 21, 0, 0, it, 2 };
    s_frame("relay", telem_proto_encode_relay(s_enc, &rq, &d, &n), d, n);
    s_frame("relay_reply", telem_proto_encode_relay_reply(s_enc, &rp, &d, &n),
            d, n);
}

/* Headers that claim 2^32-1 elements: msgpack-c's unpacker allocates for
 * the claim (an 11-byte input asks for ~256 GB); telem's reader must
 * refuse them before allocating anything. */
static void
s_proto_claims(void)
{
    static const struct { const char *name; const char *b; size_t n; } c[] = {
        { "claim-array32", "\xdd\xff\xff\xff\xff", 5 },
        /* 2^22: msgpack-c asks for 128 MiB, which -malloc_limit_mb=64
         * reports (ASan's allocator itself refuses the larger claims) */
        { "claim-array-4m", "\xdd\x00\x40\x00\x00\xc0", 6 },
        { "claim-map32", "\xdf\xff\xff\xff\xff", 5 },
        { "claim-nested-arrays", "\xdd\xff\xff\xff\xff\xdd\xff\xff\xff\xff\xc0", 11 },
        { "claim-nested-maps", "\xdf\xff\xff\xff\xff\xdf\xff\xff\xff\xff\xc0", 11 },
        { "claim-str32", "\xdb\xff\xff\xff\xff" "abc", 8 },
        { "claim-bin32", "\xc6\xff\xff\xff\xff" "abc", 8 },
        /* {"v":1,"t":1,"s":[2^32-1 samples]} and the same for tags */
        { "claim-batch-samples",
          "\x83\xa1v\x01\xa1t\x01\xa1s\xdd\xff\xff\xff\xff\x94", 14 },
        { "claim-batch-tags",
          "\x83\xa1v\x01\xa1t\x01\xa2tg\xdf\xff\xff\xff\xff\xa1k", 16 },
        /* a query reply whose series claim 2^32-1 and bins 4 GiB */
        { "claim-reply-series",
          "\x85\xa1v\x01\xa1t\x04\xa2id\x01\xa2nd\xa2n1\xa2sr\xdd\xff\xff\xff\xff",
          26 },
        { "claim-reply-bin",
          "\x85\xa1v\x01\xa1t\x04\xa2id\x01\xa2nd\xa2n1\xa2sr\x91\x83\xa1m\xa1x"
          "\xa2ts\xc6\xff\xff\xff\xff\xa2vl\xc4\x00", 40 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        s_seed("proto", c[i].name, -1, c[i].b, c[i].n);
}

/* ---------------------------------------------------------------- block */

static void
s_blocks(void)
{
    static const char *const names[] = { "raw", "xor", "dec", "bits", "decx", "ratio" };
    int64_t ts[32];
    double v[32];
    for (int c = 0; c < 6; c++) {
        for (int i = 0; i < 32; i++) {
            ts[i] = INT64_C(1700000000000000000) + i * INT64_C(1000000000) + (i % 3) * 7;
            v[i] = c == 2 ? i * 3.0 : c == 3 ? 4.25 : c == 4 ? i * 0.1 + 1e-17
                 : c == 5 ? (double) (i % 7) / 25.0 * 100 : i * 1.37 - 5;
        }
        telem_block_opts_t o;
        telem_block_opts_default(&o);
        o.value_codec = (telem_block_vcodec_t) c;
        unsigned char *b = NULL;
        size_t n = 0;
        if (telem_block_encode(ts, v, 32, &o, &b, &n) != 0) {
            fprintf(stderr, "fuzz_seeds: block codec %s refused\n", names[c]);
            exit(1);
        }
        s_seed("block", names[c], 2, b, n);
        free(b);
    }
}

/* ------------------------------------------------------------ seg, dump */

static unsigned char *
s_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t) len : 1);
    if (!b || fread(b, 1, (size_t) len, f) != (size_t) len)
        abort();
    fclose(f);
    *n = (size_t) len;
    return b;
}

static telem_chunk_t
s_chunk(const char *key, size_t klen, unsigned char **b, size_t *n)
{
    int64_t ts[8];
    double v[8];
    for (int i = 0; i < 8; i++) {
        ts[i] = INT64_C(1700000000000000000) + i * INT64_C(1000000000);
        v[i] = i * 2.5;
    }
    if (telem_block_encode(ts, v, 8, NULL, b, n) != 0)
        abort();
    return (telem_chunk_t) { .key = key, .key_len = (uint32_t) klen,
        .metric = key, .first_seq = 0, .block = *b, .block_len = *n,
        .closed = 1 };
}

static void
s_dump(const char *dir)
{
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/seed.tdump", dir);
    unlink(path);
    telem_dump_t *d = telem_dump_open(path, NULL);
    unsigned char *b;
    size_t n;
    static const char key[] = "gpu.util\0gpu\0" "0";
    telem_chunk_t c = s_chunk(key, sizeof key, &b, &n);
    telem_meta_t m = { "gpu.util", TELEM_METRIC_GAUGE, "%", "GPU busy" };
    const char snap[] = "{\"schema\":1}", note[] = "{\"text\":\"restart\"}";
    if (!d || telem_dump_put_chunk(d, "n1", &c) || telem_dump_put_meta(d, "n1", &m)
        || telem_dump_put_snapshot(d, "n1", snap, sizeof snap - 1, 1)
        || telem_dump_put_annotation(d, TELEM_SEG_NOTE_RESTART, 1700000001000,
                                     note, sizeof note - 1)
        || telem_dump_close(&d))
        abort();
    free(b);
    unsigned char *file = s_slurp(path, &n);
    s_seed("seg", "dump", 2, file, n);
    free(file);
}

static void
s_segment(const char *dir)
{
    telem_seglog_config_t cfg;
    telem_seglog_config_default(&cfg);
    cfg.dir = dir;
    cfg.node = "n1";
    cfg.fsync = TELEM_SEG_FSYNC_NEVER;
    telem_seglog_t *log = telem_seglog_open(&cfg, NULL);
    unsigned char *b;
    size_t n;
    telem_chunk_t c = s_chunk("cpu_percent", sizeof "cpu_percent", &b, &n);
    telem_meta_t m = { "cpu_percent", TELEM_METRIC_GAUGE, "percent", "busy" };
    if (!log || telem_seglog_put_chunk(log, &c) || telem_seglog_put_meta(log, &m)
        || telem_seglog_put_snapshot(log, "{}", 2, 1)
        || telem_seglog_commit(log, INT64_C(1700000010000000000)))
        abort();
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s", telem_seglog_path(log));
    telem_seglog_close(&log);
    free(b);
    unsigned char *file = s_slurp(path, &n);
    s_seed("seg", "segment", 0, file, n);
    free(file);
}

/* ------------------------------------------------------------ ddict_log */

static void
s_ddict(const char *dir)
{
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/dict.log", dir);
    unlink(path);
    ddict_log_t *log = ddict_log_open(path, NULL, NULL, NULL, NULL);
    const char nodes[] = "n1\nn2\nn3";
    ddict_log_rec_t r[] = {
        { DDICT_LOG_REC_MAP, 2, "", 0, "", 0, nodes, sizeof nodes - 1, 4 },
        { DDICT_LOG_REC_PUT, 17, "ns", 2, "key", 3, "value", 5, 1 },
        { DDICT_LOG_REC_PUT, 18, "ns", 2, "k2", 2, "v2", 2, 2 },
        { DDICT_LOG_REC_DEL, 18, "ns", 2, "k2", 2, "", 0, 3 },
        { DDICT_LOG_REC_CKPT, 17, "ck", 2, "", 0, "ns", 2, 0 },
        { DDICT_LOG_REC_CLEAR, 17, "ck", 2, "", 0, "", 0, 0 },
        { DDICT_LOG_REC_DROP, 99, "", 0, "", 0, "", 0, 0 },
    };
    for (size_t i = 0; log && i < sizeof r / sizeof r[0]; i++)
        if (ddict_log_append(log, &r[i]) != 0)
            abort();
    if (!log || ddict_log_sync(log) != 0)
        abort();
    ddict_log_destroy(&log);
    size_t n;
    unsigned char *file = s_slurp(path, &n);
    s_seed("ddict_log", "records", 0, file, n);
    free(file);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR\n");
        return 2;
    }
    s_top = argv[1];
    mkdir(s_top, 0755);
    if (!(s_enc = telem_proto_encoder_new()))
        return 1;
    s_proto_core();
    s_proto_dict();
    s_proto_watch();
    s_proto_relay();
    s_proto_claims();
    s_blocks();
    const char *dir = fz_scratch();
    s_dump(dir);
    s_segment(dir);
    s_ddict(dir);
    telem_proto_encoder_destroy(&s_enc);
    return 0;
}
