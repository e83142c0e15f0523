/* test_seg.c - segment and dump files: round trips, recovery from a torn
 * tail or a corrupted record at every byte of a record, rotation, the
 * total and history bounds, permissions, malformed headers and lengths,
 * write errors, dumps with and without their index.
 */
#include "tmpdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "seg_test.h"
#include "telem_crc.h"
#include "telem_time.h"

static char s_dir[256];

/* What a read saw. */
typedef struct {
    int n;
    telem_seg_rec_kind_t kind[64];
    uint64_t off[64];
    uint32_t size[64];
    uint64_t seq[64];
    char key[64][64];
    int closed[64];
    uint32_t npoints[64];
} seen_t;

static int
on_rec(void *arg, const telem_seg_rec_t *r)
{
    seen_t *s = arg;
    if (s->n >= 64)
        return 0;
    s->kind[s->n] = r->kind;
    s->off[s->n] = r->offset;
    s->size[s->n] = r->size;
    s->seq[s->n] = r->chunk.first_seq;
    s->closed[s->n] = r->chunk.closed;
    s->npoints[s->n] = r->npoints;
    snprintf(s->key[s->n], sizeof s->key[0], "%s",
             r->kind == TELEM_SEG_REC_META ? r->meta.metric
             : r->chunk.key                ? r->chunk.key
                                           : "");
    s->n++;
    return 0;
}

static telem_seglog_t *
open_log(const char *sub, uint64_t seg_bytes, int64_t age, uint64_t total,
         int64_t history)
{
    char dir[512];
    telem_seglog_config_t cfg;
    snprintf(dir, sizeof dir, "%s/%s", s_dir, sub);
    telem_seglog_config_default(&cfg);
    cfg.dir = dir;
    cfg.node = "n1";
    cfg.fsync = TELEM_SEG_FSYNC_NEVER;
    if (seg_bytes)
        cfg.segment_bytes = seg_bytes;
    if (age)
        cfg.segment_age_ns = age;
    cfg.total_bytes = total;
    cfg.history_ns = history;
    int err = 0;
    telem_seglog_t *log = telem_seglog_open(&cfg, &err);
    CHECK_RC(err, 0);
    return log;
}

/* A log with META, SERIES a, BLOCK a, SERIES b, BLOCK b, BLOCK a. */
static void
write_three(telem_seglog_t *log, int64_t t0, char *path, size_t size)
{
    size_t l1, l2, l3;
    unsigned char *b1 = mk_block(t0, SEC, 1, 10, &l1);
    unsigned char *b2 = mk_block(t0, SEC, 100, 5, &l2);
    unsigned char *b3 = mk_block(t0 + 10 * SEC, SEC, 11, 7, &l3);
    telem_meta_t m = {"a", TELEM_METRIC_COUNTER, "B", "bytes"};
    telem_chunk_t c1 = mk_chunk("a", 0, 0, b1, l1, 1);
    telem_chunk_t c2 = mk_chunk("b\0host\0x", 9, 0, b2, l2, 0);
    telem_chunk_t c3 = mk_chunk("a", 0, 10, b3, l3, 0);
    CHECK_RC(telem_seglog_put_meta(log, &m), 0);
    CHECK_RC(telem_seglog_put_chunk(log, &c1), 0);
    CHECK_RC(telem_seglog_put_chunk(log, &c2), 0);
    CHECK_RC(telem_seglog_put_chunk(log, &c3), 0);
    CHECK_RC(telem_seglog_commit(log, t0), 0);
    snprintf(path, size, "%s", telem_seglog_path(log));
    free(b1);
    free(b2);
    free(b3);
}

static void
test_round_trip(void)
{
    char path[512];
    int64_t t0 = telem_now_ns();
    telem_seglog_t *log = open_log("rt", 0, 0, 0, 0);
    write_three(log, t0, path, sizeof path);
    telem_seglog_close(&log);
    CHECK(log == NULL);
    seen_t s = {0};
    telem_seg_damage_t d;
    telem_seg_info_t info;
    CHECK_RC(telem_seg_read(path, on_rec, &s, &info, &d), 0);
    CHECK_INT(info.kind, TELEM_SEG_FILE_SEGMENT);
    CHECK_STR(info.node, "n1");
    CHECK_INT(d.bad, 0);
    CHECK_INT(d.records, 6);
    CHECK_INT(s.n, 6);
    CHECK_INT(s.kind[0], TELEM_SEG_REC_META);
    CHECK_INT(s.kind[1], TELEM_SEG_REC_SERIES);
    CHECK_INT(s.kind[2], TELEM_SEG_REC_BLOCK);
    CHECK_STR(s.key[2], "a");
    CHECK_INT(s.npoints[2], 10);
    CHECK_INT(s.closed[2], 1);
    CHECK_INT(s.kind[4], TELEM_SEG_REC_BLOCK);
    CHECK_STR(s.key[4], "b");
    CHECK_INT(s.closed[4], 0);
    CHECK_INT(s.kind[5], TELEM_SEG_REC_BLOCK);
    CHECK_INT(s.seq[5], 10);
    CHECK_INT(s.npoints[5], 7);
    /* the block bytes come back exactly, and read_at finds a record */
    int fd = open(path, O_RDONLY);
    seen_t one = {0};
    CHECK_RC(telem_seg_read_at(fd, s.off[5], on_rec, &one), 0);
    CHECK_INT(one.n, 1);
    CHECK_INT(one.seq[0], 10);
    CHECK_RC(telem_seg_read_at(fd, s.off[5] + 1, on_rec, &one),
             TELEM_EPROTO);
    close(fd);
}

/* Cuts and flips every byte of the record at index k of a three-block
 * file; what precedes is always read, what follows after resync. */
static void
test_every_byte(void)
{
    char path[512], bad[600];
    telem_seglog_t *log = open_log("eb", 0, 0, 0, 0);
    write_three(log, telem_now_ns(), path, sizeof path);
    telem_seglog_close(&log);
    seen_t s = {0};
    CHECK_RC(telem_seg_read(path, on_rec, &s, NULL, NULL), 0);
    size_t len;
    unsigned char *file = slurp(path, &len);
    unsigned char *copy = malloc(len);
    snprintf(bad, sizeof bad, "%s/bad.tseg", s_dir);
    int k = 4;                        /* BLOCK b, between two blocks of a */
    uint64_t off = s.off[k];
    uint32_t size = s.size[k];
    int fails = 0;
    for (uint32_t i = 0; i < size; i++) {
        /* cut at off + i: the records before are read, a torn tail is
           reported unless the cut falls on the record's start */
        seen_t t = {0};
        telem_seg_damage_t d;
        spit(bad, file, off + i);
        int rc = telem_seg_read(bad, on_rec, &t, NULL, &d);
        if (rc != 0 || t.n != k || d.torn_tail != (i > 0) ||
            (i > 0 && (d.list[0].offset != off || d.list[0].bytes != i)))
            fails++;
        /* flip byte off + i: the record is skipped, reported, and the one
           after it read */
        memcpy(copy, file, len);
        copy[off + i] ^= 0xff;
        spit(bad, copy, len);
        memset(&t, 0, sizeof t);
        rc = telem_seg_read(bad, on_rec, &t, NULL, &d);
        if (rc != 0 || t.n != s.n - 1 || d.bad != 1 || d.torn_tail ||
            d.list[0].offset != off || d.list[0].bytes != size ||
            t.seq[k] != 10 || t.kind[k] != TELEM_SEG_REC_BLOCK)
            fails++;
    }
    CHECK_INT(fails, 0);
    /* a damaged SERIES record leaves its blocks orphans, reported */
    memcpy(copy, file, len);
    copy[s.off[1] + 14] ^= 0x01;
    spit(bad, copy, len);
    seen_t t = {0};
    telem_seg_damage_t d;
    CHECK_RC(telem_seg_read(bad, on_rec, &t, NULL, &d), 0);
    CHECK_INT(d.orphans, 2);
    CHECK_INT(d.bad, 1);
    free(copy);
    free(file);
}

static int
count_segments(const char *sub, char names[][64], int max)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", s_dir, sub);
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tseg") && strlen(e->d_name) < 64 && n < max)
            memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
    if (d)
        closedir(d);
    for (int i = 0; i < n; i++)          /* sort, for the oldest-first checks */
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char tmp[64];
                memcpy(tmp, names[i], 64);
                memcpy(names[i], names[j], 64);
                memcpy(names[j], tmp, 64);
            }
    return n;
}

/* Puts one block of each of nser series, points at t, and commits. */
static void
flush_some(telem_seglog_t *log, int nser, int64_t t, uint64_t seq, int64_t now)
{
    for (int i = 0; i < nser; i++) {
        char key[32];
        size_t len;
        snprintf(key, sizeof key, "m%d", i);
        unsigned char *b = mk_block(t, SEC, i, 60, &len);
        telem_chunk_t c = mk_chunk(key, 0, seq, b, len, 1);
        CHECK_RC(telem_seglog_put_chunk(log, &c), 0);
        free(b);
    }
    CHECK_RC(telem_seglog_commit(log, now), 0);
}

static void
check_self_contained(const char *sub, const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s/%s", s_dir, sub, name);
    telem_seg_damage_t d;
    seen_t s = {0};
    CHECK_RC(telem_seg_read(p, on_rec, &s, NULL, &d), 0);
    CHECK_INT(d.orphans, 0);
    CHECK_INT(d.bad, 0);
    int metas = 0;
    for (int i = 0; i < s.n; i++)
        metas += s.kind[i] == TELEM_SEG_REC_META;
    CHECK(s.n == 0 || metas == 1);
}

static void
test_rotation(void)
{
    char names[64][64];
    int64_t t0 = telem_now_ns();
    /* by size: every flush passes 2 KiB */
    telem_seglog_t *log = open_log("size", 2048, 0, 0, 0);
    telem_meta_t m = {"m0", TELEM_METRIC_GAUGE, "", ""};
    CHECK_RC(telem_seglog_put_meta(log, &m), 0);
    for (int f = 0; f < 4; f++)
        flush_some(log, 40, t0 + f * 60 * SEC, (uint64_t) f * 60, t0);
    telem_seglog_stats_t st;
    telem_seglog_stats(log, &st);
    CHECK_INT(st.rotations, 4);
    CHECK_INT(st.commits, 4);
    telem_seglog_close(&log);
    /* the last, empty segment is removed on close */
    int n = count_segments("size", names, 64);
    CHECK_INT(n, 4);
    for (int i = 0; i < n; i++)
        check_self_contained("size", names[i]);
    /* a new segment at every open, never an append */
    log = open_log("size", 2048, 0, 0, 0);
    flush_some(log, 1, t0, 0, t0);
    telem_seglog_close(&log);
    CHECK_INT(count_segments("size", names, 64), 5);
    /* by age: not before segment_age_ns, then at once */
    log = open_log("age", 0, 10 * SEC, 0, 0);
    flush_some(log, 2, t0, 0, t0 + 5 * SEC);
    telem_seglog_stats(log, &st);
    CHECK_INT(st.rotations, 0);
    flush_some(log, 2, t0, 60, t0 + 11 * SEC);
    telem_seglog_stats(log, &st);
    CHECK_INT(st.rotations, 1);
    flush_some(log, 2, t0, 120, t0 + 12 * SEC);
    telem_seglog_stats(log, &st);
    CHECK_INT(st.rotations, 1);
    telem_seglog_close(&log);
}

static void
test_bounds(void)
{
    char before[64][64], after[64][64];
    int64_t t0 = telem_now_ns();
    /* total: each segment ~1.5 KiB; a bound of 5 KiB keeps the newest */
    telem_seglog_t *log = open_log("total", 1024, 0, 0, 0);
    for (int f = 0; f < 6; f++)
        flush_some(log, 20, t0, (uint64_t) f * 60, t0);
    telem_seglog_close(&log);
    int nb = count_segments("total", before, 64);
    CHECK_INT(nb, 6);
    log = open_log("total", 1024, 0, 5000, 0);
    flush_some(log, 20, t0, 400, t0);
    telem_seglog_stats_t st;
    telem_seglog_stats(log, &st);
    CHECK(st.total_bytes <= 5000);
    CHECK(st.removed >= 3);
    telem_seglog_close(&log);
    int na = count_segments("total", after, 64);
    CHECK_INT(na, (int) (nb + 1 - st.removed));
    /* what is left is the newest: the removed were the oldest names */
    for (int i = 0; i < na - 1; i++)
        CHECK_STR(after[i], before[nb - (na - 1) + i]);
    /* history: segments whose newest point is older than now - history */
    log = open_log("hist", 1024, 0, 0, 600 * SEC);
    flush_some(log, 20, t0 - 3600 * SEC, 0, t0);   /* rotates: old points */
    flush_some(log, 20, t0, 60, t0);               /* recent points */
    flush_some(log, 20, t0, 120, t0);
    telem_seglog_stats(log, &st);
    CHECK_INT(st.removed, 1);
    CHECK_INT(st.segments, 3);
    telem_seglog_close(&log);
}

static void
test_permissions(void)
{
    char dir[512];
    struct stat st;
    telem_seglog_config_t cfg;
    int err = 0;
    telem_seglog_t *log = open_log("perm/deep/er", 0, 0, 0, 0);
    snprintf(dir, sizeof dir, "%s/perm/deep/er", s_dir);
    CHECK(log != NULL);
    CHECK_RC(stat(dir, &st), 0);
    CHECK_INT(st.st_mode & 0777, 0700);
    CHECK_RC(stat(telem_seglog_path(log), &st), 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    telem_seglog_close(&log);
    CHECK_RC(chmod(dir, 0750), 0);
    telem_seglog_config_default(&cfg);
    cfg.dir = dir;
    cfg.node = "n1";
    CHECK(telem_seglog_open(&cfg, &err) == NULL);
    CHECK_RC(err, TELEM_EINVAL);
    cfg.node = "bad/node";
    CHECK_RC(chmod(dir, 0700), 0);
    CHECK(telem_seglog_open(&cfg, &err) == NULL);
    CHECK_RC(err, TELEM_EINVAL);
    cfg.node = "n1";
    cfg.segment_bytes = 0;
    CHECK(telem_seglog_open(&cfg, &err) == NULL);
    CHECK_RC(err, TELEM_EINVAL);
    /* another user's directory: / is root's (skipped when run as root) */
    if (getuid() != 0) {
        telem_seglog_config_default(&cfg);
        cfg.dir = "/";
        cfg.node = "n1";
        CHECK(telem_seglog_open(&cfg, &err) == NULL);
        CHECK_RC(err, TELEM_EINVAL);
    }
}

/* A record header with a valid header checksum for any length. */
static void
forge_header(unsigned char *h, uint32_t len, unsigned kind)
{
    const unsigned char sync[4] = {0x7e, 0xec, 0x52, 0x0a};
    memcpy(h, sync, 4);
    for (int i = 0; i < 4; i++)
        h[4 + i] = (unsigned char) (len >> (8 * i));
    h[8] = (unsigned char) kind;
    h[9] = 0;
    uint32_t c = telem_crc32c(0, h, 10);
    h[10] = (unsigned char) c;
    h[11] = (unsigned char) (c >> 8);
}

static void
test_malformed(void)
{
    char path[512], bad[600];
    telem_seglog_t *log = open_log("mal", 0, 0, 0, 0);
    write_three(log, telem_now_ns(), path, sizeof path);
    telem_seglog_close(&log);
    size_t len;
    unsigned char *file = slurp(path, &len);
    unsigned char *copy = malloc(len + 64);
    snprintf(bad, sizeof bad, "%s/mal.tseg", s_dir);
    size_t hdr = 26 + 2;               /* node "n1" */
    telem_seg_info_t info;
    /* every cut of the file header, every flipped byte of it */
    int fails = 0;
    for (size_t i = 0; i < hdr; i++) {
        spit(bad, file, i);
        if (telem_seg_read(bad, on_rec, NULL, NULL, NULL) != TELEM_EPROTO)
            fails++;
        memcpy(copy, file, len);
        copy[i] ^= 0x10;
        spit(bad, copy, len);
        int rc = telem_seg_info(bad, &info);
        if (rc != TELEM_EPROTO && rc != TELEM_EVERSION)
            fails++;
    }
    CHECK_INT(fails, 0);
    /* a newer version is refused as such */
    memcpy(copy, file, len);
    copy[8] = 2;
    spit(bad, copy, len);
    CHECK_RC(telem_seg_info(bad, &info), TELEM_EVERSION);
    CHECK_RC(telem_seg_read(bad, on_rec, NULL, NULL, NULL), TELEM_EVERSION);
    CHECK_RC(telem_seg_info("/nonexistent/x.tseg", &info), TELEM_ENOTFOUND);
    /* an empty file: refused without forming a pointer from the reader's
     * window before it holds anything (NULL + 0, found by fuzz_seg) */
    spit(bad, "", 0);
    CHECK_RC(telem_seg_info(bad, &info), TELEM_EPROTO);
    CHECK_RC(telem_seg_read(bad, on_rec, NULL, NULL, NULL), TELEM_EPROTO);
    spit(bad, "not a telem file at all, not at all", 35);
    CHECK_RC(telem_seg_info(bad, &info), TELEM_EPROTO);
    /* absurd lengths with valid header checksums: skipped, never read */
    uint32_t lens[] = {0xffffffffu, TELEM_SEG_RECORD_MAX + 1,
                       TELEM_SEG_RECORD_MAX, 1u << 30, 5};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        memcpy(copy, file, hdr);
        forge_header(copy + hdr, lens[i], TELEM_SEG_REC_BLOCK);
        memcpy(copy + hdr + 12, file + hdr, len - hdr);
        spit(bad, copy, len + 12);
        seen_t t = {0};
        telem_seg_damage_t d;
        CHECK_RC(telem_seg_read(bad, on_rec, &t, NULL, &d), 0);
        CHECK_INT(t.n, 6);
        CHECK_INT(d.bad, 1);
        CHECK_INT(d.bytes_skipped, 12);
    }
    /* a file of nothing but sync markers */
    for (size_t i = 0; i + 12 <= len + 64; i += 12)
        forge_header(copy + i, 1u << 20, 2);
    memcpy(copy, file, hdr);
    spit(bad, copy, len + 64);
    telem_seg_damage_t d;
    CHECK_RC(telem_seg_read(bad, on_rec, NULL, NULL, &d), 0);
    CHECK(d.torn_tail);
    free(copy);
    free(file);
}

static void
test_write_error(void)
{
    char path[512];
    struct rlimit old, small;
    int64_t t0 = telem_now_ns();
    telem_seglog_t *log = open_log("full", 0, 0, 0, 0);
    flush_some(log, 2, t0, 0, t0);
    snprintf(path, sizeof path, "%s", telem_seglog_path(log));
    struct stat st;
    CHECK_RC(stat(path, &st), 0);
    /* the disk "fills": writes past the current size fail (EFBIG) */
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    small = old;
    small.rlim_cur = (rlim_t) st.st_size + 100;
    CHECK_RC(setrlimit(RLIMIT_FSIZE, &small), 0);
    for (int i = 0; i < 20; i++) {
        size_t len;
        char key[32];
        snprintf(key, sizeof key, "w%d", i);
        unsigned char *b = mk_block(t0, SEC, i, 60, &len);
        telem_chunk_t c = mk_chunk(key, 0, 0, b, len, 1);
        CHECK_RC(telem_seglog_put_chunk(log, &c), 0);
        free(b);
    }
    CHECK_RC(telem_seglog_commit(log, t0), TELEM_EIO);
    struct stat st2;
    CHECK_RC(stat(path, &st2), 0);
    CHECK_INT(st2.st_size, st.st_size);          /* cut back */
    telem_seglog_stats_t ls;
    telem_seglog_stats(log, &ls);
    CHECK_INT(ls.write_errors, 1);
    CHECK(ls.pending_bytes > 0);
    /* room again: the pending flush goes out with the next */
    CHECK_RC(setrlimit(RLIMIT_FSIZE, &old), 0);
    flush_some(log, 1, t0 + 60 * SEC, 60, t0);
    telem_seglog_close(&log);
    telem_seg_damage_t d;
    seen_t s = {0};
    CHECK_RC(telem_seg_read(path, on_rec, &s, NULL, &d), 0);
    CHECK_INT(d.bad, 0);
    CHECK_INT(d.records, 2 * 2 + 20 * 2 + 1);
}

static int
on_iseries(void *arg, const telem_seg_iseries_t *s, uint64_t other)
{
    int *n = arg;
    (void) other;
    if (!s) {
        n[2]++;
        return 0;
    }
    n[0]++;
    n[1] += (int) s->nblocks;
    return 0;
}

static void
test_dump(void)
{
    char path[512];
    int err = 0;
    int64_t t0 = telem_now_ns();
    snprintf(path, sizeof path, "%s/d1.tdump", s_dir);
    telem_dump_t *d = telem_dump_open(path, &err);
    CHECK(d != NULL);
    CHECK(telem_dump_open(path, &err) == NULL);     /* never overwrites */
    CHECK_RC(err, TELEM_EIO);
    const char *nodes[] = {"n1", "n2"};
    for (int n = 0; n < 2; n++) {
        telem_meta_t m = {"a", TELEM_METRIC_GAUGE, "s", "seconds"};
        CHECK_RC(telem_dump_put_meta(d, nodes[n], &m), 0);
        CHECK_RC(telem_dump_put_snapshot(d, nodes[n], "{\"cpu\":1}", 9, t0),
                 0);
        for (int b = 0; b < 3; b++) {
            size_t len;
            unsigned char *blk = mk_block(t0 + b * 100 * SEC, SEC, b, 100,
                                          &len);
            telem_chunk_t c = mk_chunk("a", 0, (uint64_t) b * 100, blk, len,
                                       1);
            CHECK_RC(telem_dump_put_chunk(d, nodes[n], &c), 0);
            free(blk);
        }
    }
    CHECK_RC(telem_dump_put_chunk(d, "bad/node", NULL), TELEM_EINVAL);
    CHECK_RC(telem_dump_close(&d), 0);
    CHECK(d == NULL);
    int counts[3] = {0};
    CHECK_RC(telem_seg_read_index(path, on_iseries, counts), 0);
    CHECK_INT(counts[0], 2);
    CHECK_INT(counts[1], 6);
    CHECK_INT(counts[2], 4);
    telem_seg_damage_t dm;
    seen_t s = {0};
    CHECK_RC(telem_seg_read(path, on_rec, &s, NULL, &dm), 0);
    CHECK_INT(dm.bad, 0);
    CHECK_INT(dm.no_index, 0);
    /* 2 x (meta, snapshot, series, 3 blocks) + INDEX records */
    CHECK(dm.records >= 12 + 2);
    /* a torn dump: no footer, read by scanning */
    size_t len;
    unsigned char *file = slurp(path, &len);
    for (size_t cut = 1; cut <= 40; cut++) {
        char p2[600];
        snprintf(p2, sizeof p2, "%s/torn.tdump", s_dir);
        spit(p2, file, len - cut);
        seen_t t = {0};
        CHECK_RC(telem_seg_read_index(p2, on_iseries, counts),
                 TELEM_ENOTFOUND);
        CHECK_RC(telem_seg_read(p2, on_rec, &t, NULL, &dm), 0);
        CHECK_INT(dm.no_index, 1);
        CHECK(t.n >= 12);
    }
    free(file);
}

/* Random flushes against a model of what was committed; then random
 * damage never crashes and never yields a block that was not written. */
typedef struct {
    char key[16];
    uint64_t seq;
    unsigned char *blk;
    size_t len;
} model_t;

typedef struct {
    model_t *m;
    int n, at, wrong;
} cmp_t;

static int
on_cmp(void *arg, const telem_seg_rec_t *r)
{
    cmp_t *c = arg;
    if (r->kind != TELEM_SEG_REC_BLOCK)
        return 0;
    int found = 0;
    for (int i = 0; i < c->n && !found; i++)
        found = strcmp(c->m[i].key, r->chunk.key) == 0 &&
                c->m[i].seq == r->chunk.first_seq &&
                c->m[i].len == r->chunk.block_len &&
                memcmp(c->m[i].blk, r->chunk.block, c->m[i].len) == 0;
    if (c->at >= 0 && (c->at >= c->n ||
                       strcmp(c->m[c->at].key, r->chunk.key) != 0 ||
                       c->m[c->at].seq != r->chunk.first_seq))
        c->wrong++;
    if (c->at >= 0)
        c->at++;
    c->wrong += !found;
    return 0;
}

static void
test_random(void)
{
    enum { N = 400 };
    static model_t m[N];
    char names[64][64];
    unsigned seed = 12345;
    int64_t t0 = telem_now_ns();
    telem_seglog_t *log = open_log("rand", 3000, 0, 0, 0);
    for (int i = 0; i < N; i++) {
        snprintf(m[i].key, sizeof m[i].key, "r%u", rand_r(&seed) % 30);
        m[i].seq = (uint64_t) i;
        m[i].blk = mk_block(t0 + i * SEC, 1 + rand_r(&seed) % 5, i,
                            1 + rand_r(&seed) % 200, &m[i].len);
        telem_chunk_t c = mk_chunk(m[i].key, 0, m[i].seq, m[i].blk, m[i].len,
                                   (int) (rand_r(&seed) % 2));
        CHECK_RC(telem_seglog_put_chunk(log, &c), 0);
        if (rand_r(&seed) % 7 == 0)
            CHECK_RC(telem_seglog_commit(log, t0), 0);
    }
    CHECK_RC(telem_seglog_commit(log, t0), 0);
    telem_seglog_close(&log);
    int nseg = count_segments("rand", names, 64);
    CHECK(nseg > 3);
    cmp_t c = {m, N, 0, 0};
    for (int i = 0; i < nseg; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/rand/%s", s_dir, names[i]);
        telem_seg_damage_t d;
        CHECK_RC(telem_seg_read(p, on_cmp, &c, NULL, &d), 0);
        CHECK_INT(d.bad + d.orphans, 0);
    }
    CHECK_INT(c.at, N);
    CHECK_INT(c.wrong, 0);
    /* damage: flips, cuts, garbage */
    char p[700], bad[600];
    snprintf(p, sizeof p, "%s/rand/%s", s_dir, names[1]);
    snprintf(bad, sizeof bad, "%s/fuzz.tseg", s_dir);
    size_t len;
    unsigned char *file = slurp(p, &len);
    unsigned char *copy = malloc(len);
    for (int round = 0; round < 300; round++) {
        memcpy(copy, file, len);
        size_t n = len;
        int k = 1 + (int) (rand_r(&seed) % 8);
        for (int j = 0; j < k; j++)
            copy[rand_r(&seed) % len] = (unsigned char) rand_r(&seed);
        if (rand_r(&seed) % 3 == 0)
            n = rand_r(&seed) % len;
        spit(bad, copy, n);
        cmp_t f = {m, N, -1, 0};
        telem_seg_damage_t d;
        int rc = telem_seg_read(bad, on_cmp, &f, NULL, &d);
        CHECK(rc == 0 || rc == TELEM_EPROTO || rc == TELEM_EVERSION);
        CHECK_INT(f.wrong, 0);
    }
    free(copy);
    free(file);
    for (int i = 0; i < N; i++)
        free(m[i].blk);
}

int
main(void)
{
    if (test_tmpdir(s_dir, sizeof s_dir, "test_seg") != 0) {
        fprintf(stderr, "no temporary directory\n");
        return 1;
    }
    test_round_trip();
    test_every_byte();
    test_rotation();
    test_bounds();
    test_permissions();
    test_malformed();
    test_write_error();
    test_dump();
    test_random();
    test_rmtree(s_dir);
    return check_report("test_seg");
}
