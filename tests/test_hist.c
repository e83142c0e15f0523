/* test_hist.c - history read back from segments and dumps: telem_chunk.h's
 * version rules, merges of overlapping dumps and of a segment with a dump
 * without duplicates, other runs, query semantics (filters, range,
 * max_points, LATEST, LIST, nodes, metas, snapshots), reload chunks,
 * refused files, and random histories against a reference model.
 */
#include "tmpdir.h"

#include <math.h>

#include "check.h"
#include "seg_test.h"
#include "telem_crc.h"
#include "telem_hist.h"
#include "telem_time.h"

static char s_dir[256];

typedef struct {
    int nseries;
    uint32_t npoints[64];
    int64_t ts[64][4096];
    double val[64][4096];
    char name[64][64];
    char node[64][32];
    int type[64];
} got_t;

static int
on_series(void *arg, const char *node, const telem_series_t *s)
{
    got_t *g = arg;
    int i = g->nseries++;
    if (i >= 64)
        return -99;
    g->npoints[i] = s->npoints;
    for (uint32_t k = 0; k < s->npoints && k < 4096; k++) {
        g->ts[i][k] = s->ts[k];
        g->val[i][k] = s->values[k];
    }
    snprintf(g->name[i], sizeof g->name[i], "%s%s%s", s->metric,
             s->ntags ? "," : "", s->ntags ? s->tags[0].value : "");
    snprintf(g->node[i], sizeof g->node[i], "%s", node);
    g->type[i] = s->type;
    return 0;
}

static telem_seglog_t *
open_log(const char *sub, const char *node)
{
    char dir[512];
    telem_seglog_config_t cfg;
    snprintf(dir, sizeof dir, "%s/%s", s_dir, sub);
    telem_seglog_config_default(&cfg);
    cfg.dir = dir;
    cfg.node = node;
    cfg.fsync = TELEM_SEG_FSYNC_NEVER;
    return telem_seglog_open(&cfg, NULL);
}

static void
put(telem_seglog_t *log, const char *key, uint32_t klen, uint64_t seq,
    int64_t t0, double v0, uint32_t n, int closed)
{
    size_t len;
    unsigned char *b = mk_block(t0, SEC, v0, n, &len);
    telem_chunk_t c = mk_chunk(key, klen, seq, b, len, closed);
    CHECK_RC(telem_seglog_put_chunk(log, &c), 0);
    free(b);
}

static void
dput(telem_dump_t *d, const char *node, const char *key, uint64_t seq,
     int64_t t0, double v0, uint32_t n)
{
    size_t len;
    unsigned char *b = mk_block(t0, SEC, v0, n, &len);
    telem_chunk_t c = mk_chunk(key, 0, seq, b, len, 1);
    CHECK_RC(telem_dump_put_chunk(d, node, &c), 0);
    free(b);
}

typedef struct {
    int n;
    uint64_t seq[64];
    int closed[64];
    uint32_t np[64];
} chunks_t;

static int
on_chunk(void *arg, const telem_chunk_t *c)
{
    chunks_t *k = arg;
    telem_block_info_t info;
    if (k->n >= 64 || telem_block_info(c->block, c->block_len, &info))
        return -1;
    k->seq[k->n] = c->first_seq;
    k->closed[k->n] = c->closed;
    k->np[k->n] = info.npoints;
    k->n++;
    return 0;
}

/* The open block written at every flush, then closed: one version kept. */
static void
test_versions(void)
{
    char dir[512];
    int64_t t0 = INT64_C(1700000000) * SEC;
    telem_seglog_t *log = open_log("ver", "n1");
    for (uint32_t f = 1; f <= 5; f++) {
        put(log, "cpu", 0, 0, t0, 0, f * 10, f == 5);
        if (f >= 4)
            put(log, "cpu", 0, 50, t0 + 50 * SEC, 50, (f - 3) * 5, 0);
        CHECK_RC(telem_seglog_commit(log, telem_now_ns()), 0);
    }
    telem_seglog_close(&log);
    telem_hist_t *h = telem_hist_new(NULL);
    snprintf(dir, sizeof dir, "%s/ver", s_dir);
    telem_seg_damage_t d;
    CHECK_RC(telem_hist_add_dir(h, dir, &d), 0);
    CHECK_INT(d.bad, 0);
    telem_hist_stats_t st;
    telem_hist_stats(h, &st);
    CHECK_INT(st.blocks, 2);
    CHECK_INT(st.versions_dropped, 5);
    CHECK_INT(st.points, 60);
    chunks_t k = {0};
    CHECK_RC(telem_hist_chunks(h, "n1", INT64_MIN, on_chunk, &k), 0);
    CHECK_INT(k.n, 2);
    CHECK_INT(k.seq[0], 0);
    CHECK_INT(k.closed[0], 1);
    CHECK_INT(k.np[0], 50);
    CHECK_INT(k.seq[1], 50);
    CHECK_INT(k.np[1], 10);
    /* since: only blocks with a point at or after it */
    memset(&k, 0, sizeof k);
    CHECK_RC(telem_hist_chunks(h, "n1", t0 + 55 * SEC, on_chunk, &k), 0);
    CHECK_INT(k.n, 1);
    CHECK_RC(telem_hist_chunks(h, "nx", 0, on_chunk, &k), TELEM_ENOTFOUND);
    static got_t g;
    memset(&g, 0, sizeof g);
    telem_store_query_t q = {0};
    CHECK_RC(telem_hist_query(h, NULL, &q, on_series, &g), 0);
    CHECK_INT(g.nseries, 1);
    CHECK_INT(g.npoints[0], 60);
    for (uint32_t i = 0; i < 60; i++) {
        CHECK_INT(g.ts[0][i], t0 + (int64_t) i * SEC);
        CHECK_EQ(g.val[0][i], i);
    }
    telem_hist_destroy(&h);
    CHECK(h == NULL);
}

/* Two dumps of one run that overlap, a segment of the same data, and a
 * second run whose numbering started again: every point once. */
static void
test_merge(void)
{
    char p1[512], p2[512], p3[512];
    int64_t t0 = INT64_C(1700000000) * SEC;
    snprintf(p1, sizeof p1, "%s/a.tdump", s_dir);
    snprintf(p2, sizeof p2, "%s/b.tdump", s_dir);
    snprintf(p3, sizeof p3, "%s/run2.tdump", s_dir);
    telem_dump_t *a = telem_dump_open(p1, NULL);
    telem_dump_t *b = telem_dump_open(p2, NULL);
    telem_dump_t *r2 = telem_dump_open(p3, NULL);
    for (int i = 0; i < 4; i++)            /* a: blocks 0-3 */
        dput(a, "n1", "m", (uint64_t) i * 100, t0 + i * 100 * SEC, i * 100,
             100);
    for (int i = 2; i < 6; i++)            /* b: blocks 2-5 */
        dput(b, "n1", "m", (uint64_t) i * 100, t0 + i * 100 * SEC, i * 100,
             100);
    /* the second run numbers from 0 again, later in time, and its first
       block repeats the last 10 points of the first run */
    dput(r2, "n1", "m", 0, t0 + 590 * SEC, 590, 110);
    telem_meta_t m = {"m", TELEM_METRIC_COUNTER, "B", "bytes"};
    CHECK_RC(telem_dump_put_meta(r2, "n1", &m), 0);
    CHECK_RC(telem_dump_close(&a), 0);
    CHECK_RC(telem_dump_close(&b), 0);
    CHECK_RC(telem_dump_close(&r2), 0);
    telem_hist_t *h = telem_hist_new(NULL);
    CHECK_RC(telem_hist_add_file(h, p1, NULL), 0);
    CHECK_RC(telem_hist_add_file(h, p2, NULL), 0);
    CHECK_RC(telem_hist_add_file(h, p3, NULL), 0);
    telem_hist_stats_t st;
    telem_hist_stats(h, &st);
    CHECK_INT(st.blocks, 7);
    CHECK_INT(st.versions_dropped, 2);
    static got_t g;
    memset(&g, 0, sizeof g);
    telem_store_query_t q = {0};
    CHECK_RC(telem_hist_query(h, "n1", &q, on_series, &g), 0);
    CHECK_INT(g.nseries, 1);
    CHECK_INT(g.npoints[0], 700);
    CHECK_INT(g.type[0], TELEM_METRIC_COUNTER);
    int fails = 0;
    for (int i = 0; i < 700; i++)
        fails += g.ts[0][i] != t0 + i * SEC || g.val[0][i] != i;
    CHECK_INT(fails, 0);
    telem_hist_destroy(&h);
}

static void
test_query(void)
{
    char dir[512];
    int64_t t0 = INT64_C(1700000000) * SEC;
    telem_seglog_t *l1 = open_log("q1", "n1");
    telem_seglog_t *l2 = open_log("q2", "n2");
    telem_meta_t m = {"cpu", TELEM_METRIC_GAUGE, "%", "busy"};
    CHECK_RC(telem_seglog_put_meta(l1, &m), 0);
    CHECK_RC(telem_seglog_put_snapshot(l1, "{\"v\":1}", 7, t0), 0);
    put(l1, "cpu\0core\0000", 11, 0, t0, 0, 100, 1);
    put(l1, "cpu\0core\0001", 11, 0, t0, 1000, 100, 1);
    put(l1, "mem", 0, 0, t0, 5, 100, 1);
    put(l2, "cpu\0core\0000", 11, 0, t0, 2000, 100, 1);
    CHECK_RC(telem_seglog_commit(l1, t0), 0);
    CHECK_RC(telem_seglog_put_snapshot(l1, "{\"v\":2}", 7, t0 + SEC), 0);
    CHECK_RC(telem_seglog_commit(l1, t0), 0);
    CHECK_RC(telem_seglog_commit(l2, t0), 0);
    telem_seglog_close(&l1);
    telem_seglog_close(&l2);
    telem_hist_t *h = telem_hist_new(NULL);
    snprintf(dir, sizeof dir, "%s/q1", s_dir);
    CHECK_RC(telem_hist_add_dir(h, dir, NULL), 0);
    snprintf(dir, sizeof dir, "%s/q2", s_dir);
    CHECK_RC(telem_hist_add_dir(h, dir, NULL), 0);
    CHECK_INT(telem_hist_nnodes(h), 2);
    CHECK_STR(telem_hist_node(h, 0), "n1");
    CHECK_STR(telem_hist_node(h, 1), "n2");
    CHECK(telem_hist_node(h, 2) == NULL);
    const char *json;
    size_t len;
    int64_t created;
    CHECK_RC(telem_hist_snapshot(h, "n1", &json, &len, &created), 0);
    CHECK_INT(len, 7);
    CHECK(memcmp(json, "{\"v\":2}", 7) == 0);
    CHECK_INT(created, t0 + SEC);
    CHECK_RC(telem_hist_snapshot(h, "n2", &json, &len, NULL),
             TELEM_ENOTFOUND);
    static got_t g;
    const char *cpu[] = {"cpu"};
    telem_tag_t f1 = {"core", "1"}, fall = {"core", "*"};
    /* metric + filter, range, max_points, LATEST, LIST, node */
    telem_store_query_t q = {.metrics = cpu, .nmetrics = 1};
    memset(&g, 0, sizeof g);
    CHECK_RC(telem_hist_query(h, NULL, &q, on_series, &g), 0);
    CHECK_INT(g.nseries, 3);
    CHECK_STR(g.node[0], "n1");
    CHECK_STR(g.name[0], "cpu,0");
    CHECK_STR(g.node[2], "n2");
    CHECK_INT(g.type[0], TELEM_METRIC_GAUGE);
    q.filters = &f1;
    q.nfilters = 1;
    q.start_ns = t0 + 10 * SEC;
    q.end_ns = t0 + 19 * SEC;
    memset(&g, 0, sizeof g);
    CHECK_RC(telem_hist_query(h, NULL, &q, on_series, &g), 0);
    CHECK_INT(g.nseries, 1);
    CHECK_INT(g.npoints[0], 10);
    CHECK_EQ(g.val[0][0], 1010);
    q.max_points = 3;
    memset(&g, 0, sizeof g);
    CHECK_RC(telem_hist_query(h, NULL, &q, on_series, &g), 0);
    CHECK_INT(g.npoints[0], 3);
    CHECK_EQ(g.val[0][0], 1017);
    q.flags = TELEM_QUERY_LATEST;
    q.start_ns = q.end_ns = 0;
    memset(&g, 0, sizeof g);
    CHECK_RC(telem_hist_query(h, NULL, &q, on_series, &g), 0);
    CHECK_INT(g.npoints[0], 1);
    CHECK_EQ(g.val[0][0], 1099);
    q.filters = &fall;
    q.flags = TELEM_QUERY_LIST;
    memset(&g, 0, sizeof g);
    CHECK_RC(telem_hist_query(h, "n1", &q, on_series, &g), 0);
    CHECK_INT(g.nseries, 2);
    CHECK_INT(g.npoints[0], 0);
    q = (telem_store_query_t){0};
    q.start_ns = t0 + 200 * SEC;
    memset(&g, 0, sizeof g);
    CHECK_RC(telem_hist_query(h, NULL, &q, on_series, &g), 0);
    CHECK_INT(g.nseries, 0);
    memset(&g, 0, sizeof g);
    CHECK_RC(telem_hist_query(h, "nx", &q, on_series, &g), 0);
    CHECK_INT(g.nseries, 0);
    q.nmetrics = 1;
    CHECK_RC(telem_hist_query(h, NULL, &q, on_series, &g), TELEM_EINVAL);
    CHECK_RC(telem_hist_query(h, NULL, NULL, on_series, &g), TELEM_EINVAL);
    /* refused files leave the history as it was */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/junk.tseg", s_dir);
    spit(bad, "junk junk junk junk junk junk junk", 34);
    telem_hist_stats_t before, after;
    telem_hist_stats(h, &before);
    CHECK_RC(telem_hist_add_file(h, bad, NULL), TELEM_EPROTO);
    CHECK_RC(telem_hist_add_file(h, "/nonexistent.tseg", NULL),
             TELEM_ENOTFOUND);
    telem_hist_stats(h, &after);
    CHECK_INT(after.series, before.series);
    CHECK_INT(after.files_refused, before.files_refused + 1);
    telem_hist_destroy(&h);
}

/* Random histories: blocks cut at random, open versions at random, a dump
 * repeating some blocks; random queries against the points written. */
enum { RS = 6, RP = 800 };

typedef struct {
    int64_t ts[RP];
    double val[RP];
    uint32_t n;
} ref_t;

static unsigned char *
enc(const ref_t *r, uint32_t a, uint32_t n, size_t *len)
{
    unsigned char *out = NULL;
    if (telem_block_encode(r->ts + a, r->val + a, n, NULL, &out, len) != 0)
        return NULL;
    return out;
}

static void
write_random(ref_t *ref, unsigned *seed, telem_seglog_t *log,
             telem_dump_t *d, const char *node, const char keys[][8])
{
    for (int s = 0; s < RS; s++) {
        ref_t *r = &ref[s];
        int64_t t = INT64_C(1700000000) * SEC + rand_r(seed) % 1000;
        r->n = RP / 2 + rand_r(seed) % (RP / 2);
        for (uint32_t i = 0; i < r->n; i++) {
            t += 1 + rand_r(seed) % (3 * SEC);
            r->ts[i] = t;
            r->val[i] = rand_r(seed) % 10 == 0 ? NAN : rand_r(seed) % 100;
        }
        for (uint32_t a = 0; a < r->n;) {
            uint32_t n = 1 + rand_r(seed) % 200;
            if (n > r->n - a)
                n = r->n - a;
            int last = a + n == r->n;
            for (uint32_t p = 1; p < n; p += 1 + rand_r(seed) % 60) {
                size_t len;
                unsigned char *b = enc(r, a, p, &len);
                telem_chunk_t c = mk_chunk(keys[s], 0, a, b, len, 0);
                CHECK_RC(telem_seglog_put_chunk(log, &c), 0);
                free(b);
                if (rand_r(seed) % 3 == 0)
                    CHECK_RC(telem_seglog_commit(log, telem_now_ns()), 0);
            }
            size_t len;
            unsigned char *b = enc(r, a, n, &len);
            telem_chunk_t c = mk_chunk(keys[s], 0, a, b, len, !last);
            CHECK_RC(telem_seglog_put_chunk(log, &c), 0);
            if (d && rand_r(seed) % 2)
                CHECK_RC(telem_dump_put_chunk(d, node, &c), 0);
            free(b);
            a += n;
        }
    }
    CHECK_RC(telem_seglog_commit(log, telem_now_ns()), 0);
}

static void
test_random(void)
{
    static ref_t ref[2][RS];
    static got_t g;
    const char keys[RS][8] = {"a", "b", "c", "d", "e", "f"};
    const char *nodes[2] = {"r1", "r2"};
    unsigned seed = 777;
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/rand.tdump", s_dir);
    telem_dump_t *d = telem_dump_open(path, NULL);
    for (int n = 0; n < 2; n++) {
        telem_seglog_t *log = open_log(n ? "rand2" : "rand1", nodes[n]);
        write_random(ref[n], &seed, log, n ? NULL : d, nodes[n], keys);
        telem_seglog_close(&log);
    }
    CHECK_RC(telem_dump_close(&d), 0);
    telem_hist_t *h = telem_hist_new(NULL);
    CHECK_RC(telem_hist_add_file(h, path, NULL), 0);
    for (int n = 0; n < 2; n++) {
        snprintf(dir, sizeof dir, "%s/rand%d", s_dir, n + 1);
        CHECK_RC(telem_hist_add_dir(h, dir, NULL), 0);
    }
    int fails = 0;
    for (int round = 0; round < 300; round++) {
        int n = rand_r(&seed) % 2, s = rand_r(&seed) % RS;
        const ref_t *r = &ref[n][s];
        const char *m[1] = {keys[s]};
        telem_store_query_t q = {.metrics = m, .nmetrics = 1};
        uint32_t a = rand_r(&seed) % r->n, b = a + rand_r(&seed) % (r->n - a);
        q.start_ns = r->ts[a];
        q.end_ns = r->ts[b];
        q.max_points = rand_r(&seed) % 3 ? 0 : 1 + rand_r(&seed) % 50;
        uint32_t want = b - a + 1;
        if (q.max_points && want > q.max_points) {
            a += want - q.max_points;
            want = q.max_points;
        }
        memset(&g, 0, sizeof g);
        CHECK_RC(telem_hist_query(h, nodes[n], &q, on_series, &g), 0);
        if (g.nseries != 1 || g.npoints[0] != want) {
            fails++;
            continue;
        }
        for (uint32_t i = 0; i < want; i++)
            fails += g.ts[0][i] != r->ts[a + i] ||
                     memcmp(&g.val[0][i], &r->val[a + i], 8) != 0;
    }
    CHECK_INT(fails, 0);
    telem_hist_destroy(&h);
}

/* Appends one framed record (docs/store.md) of kind with payload p. */
static void
add_record(const char *path, unsigned kind, const void *p, uint32_t len)
{
    size_t n;
    unsigned char *old = slurp(path, &n);
    unsigned char *b = malloc(n + 16 + len);
    memcpy(b, old, n);
    unsigned char *r = b + n;
    uint32_t sync = 0x0a52ec7eu, crc;
    memcpy(r, &sync, 4);
    memcpy(r + 4, &len, 4);
    r[8] = (unsigned char) kind;
    r[9] = 0;
    uint16_t h = (uint16_t) (telem_crc32c(0, r, 10) & 0xffff);
    memcpy(r + 10, &h, 2);
    memcpy(r + 12, p, len);
    crc = telem_crc32c(0, p, len);
    memcpy(r + 12 + len, &crc, 4);
    spit(path, b, n + 16 + len);
    free(b);
    free(old);
}

static void
note_dump(const char *name, int extra)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    telem_dump_t *d = telem_dump_open(path, NULL);
    dput(d, "n1", "m", 0, INT64_C(1700000000) * SEC, 1, 10);
    CHECK_RC(telem_dump_put_annotation(d, TELEM_SEG_NOTE_RESTART, 2000,
                                       "{\"a\":2}", 7), 0);
    CHECK_RC(telem_dump_put_annotation(d, TELEM_SEG_NOTE_EVENT, 1000,
                                       "{\"e\":1}", 7), 0);
    if (extra)
        CHECK_RC(telem_dump_put_annotation(d, TELEM_SEG_NOTE_EVENT, 1500,
                                           "{}", 2), 0);
    CHECK_RC(telem_dump_put_annotation(d, 9, 1, "{}", 2), TELEM_EINVAL);
    CHECK_RC(telem_dump_put_annotation(d, TELEM_SEG_NOTE_EVENT, 1, NULL, 0),
             TELEM_EINVAL);
    CHECK_RC(telem_dump_close(&d), 0);
}

/* ANNOTATION records: written, read by index and by scan, merged across
 * dumps without duplicates; a bad one is damage; a record of a later kind
 * is skipped and counted, not damage. */
static void
test_notes(void)
{
    char a[512], b[512], c[512];
    note_dump("na.tdump", 0);
    note_dump("nb.tdump", 1);
    snprintf(a, sizeof a, "%s/na.tdump", s_dir);
    snprintf(b, sizeof b, "%s/nb.tdump", s_dir);
    snprintf(c, sizeof c, "%s/nc.tdump", s_dir);
    /* nc: nb without its footer (scanned), then an annotation cut short,
     * a later kind and an annotation of a bad type (9) */
    size_t n;
    unsigned char *raw = slurp(b, &n);
    spit(c, raw, n - 28);
    free(raw);
    add_record(c, TELEM_SEG_REC_ANNOTATION, "\001\002", 2);  /* cut short */
    add_record(c, 77, "future", 6);
    unsigned char bad[9 + 2] = {9};
    memcpy(bad + 9, "{}", 2);
    add_record(c, TELEM_SEG_REC_ANNOTATION, bad, sizeof bad);
    telem_seg_damage_t dmg;
    CHECK_RC(telem_seg_read(c, NULL, NULL, NULL, &dmg), 0);
    CHECK_INT(dmg.unknown, 1);
    CHECK_INT(dmg.bad, 2);
    telem_hist_t *h = telem_hist_new(NULL);
    CHECK_RC(telem_hist_add_file(h, a, NULL), 0);
    CHECK_INT(telem_hist_nnotes(h), 2);
    CHECK_RC(telem_hist_add_file(h, b, NULL), 0);
    CHECK_RC(telem_hist_add_file(h, c, &dmg), 0);
    CHECK_INT(dmg.unknown, 1);
    CHECK_INT(telem_hist_nnotes(h), 3);
    const int64_t want_ms[3] = {1000, 1500, 2000};
    const int want_type[3] = {TELEM_SEG_NOTE_EVENT, TELEM_SEG_NOTE_EVENT,
                              TELEM_SEG_NOTE_RESTART};
    for (uint32_t i = 0; i < 3; i++) {
        const telem_hist_note_t *nt = telem_hist_note(h, i);
        CHECK_INT(nt->time_ms, want_ms[i]);
        CHECK_INT(nt->type, want_type[i]);
        CHECK_INT(strlen(nt->json), nt->len);
    }
    CHECK_STR(telem_hist_note(h, 2)->json, "{\"a\":2}");
    CHECK_INT(telem_hist_note(h, 3) == NULL, 1);
    telem_hist_stats_t st;
    telem_hist_stats(h, &st);
    CHECK_INT(st.notes, 2 + 3 + 3);
    telem_hist_destroy(&h);
}

int
main(void)
{
    if (test_tmpdir(s_dir, sizeof s_dir, "test_hist") != 0) {
        fprintf(stderr, "no temporary directory\n");
        return 1;
    }
    test_versions();
    test_merge();
    test_query();
    test_random();
    test_notes();
    test_rmtree(s_dir);
    return check_report("test_hist");
}
