/* test_block.c - unit tests for the compressed block codec (telem_block.h).
 *
 * Round trips must be exact bit for bit, through every way a block is
 * made (telem_block_encode with each value codec, the open writer's
 * snapshot, its finished block) and every way it is read (decode, the
 * iterator): adversarial series (NaN payloads, infinities, -0.0,
 * subnormals, huge jumps, constant series, counters with resets, duplicate
 * timestamps, extreme timestamps) and seeded random ones.  Malformed
 * input: every truncation and a flipped bit in every byte of several
 * blocks must be refused (the checksum), and the same damage with the
 * checksum recomputed (a forged block) must give an error or a
 * well-formed decode, never a crash: the sanitizer build runs this too.
 * Out-of-order points are refused by append and placed by insert.
 * Nothing here depends on machine speed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "telem_block.h"

#define SEC INT64_C(1000000000)
#define MAXN 4096

static uint64_t s_rng = 0x9e3779b97f4a7c15u;

static uint64_t
s_rand(void)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return s_rng;
}

static double
s_from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, 8);
    return v;
}

static uint64_t
s_to_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

/* Points as decoded equal the ones given, bit for bit. */
static int
s_same(const int64_t *ts, const double *val, const int64_t *ts2,
       const double *val2, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (ts[i] != ts2[i] || s_to_bits(val[i]) != s_to_bits(val2[i]))
            return 0;
    return 1;
}

static int64_t s_dts[TELEM_BLOCK_MAX_POINTS];
static double s_dval[TELEM_BLOCK_MAX_POINTS];

/* Decodes buf both ways and compares with the points. */
static void
s_check_decodes(const unsigned char *buf, size_t len, const int64_t *ts,
                const double *val, uint32_t n)
{
    telem_block_info_t info;
    CHECK_RC(telem_block_decode(buf, len, s_dts, s_dval,
                                TELEM_BLOCK_MAX_POINTS, &info), 0);
    CHECK_INT(info.npoints, n);
    CHECK_INT(info.size, len);
    CHECK(info.first_ts == ts[0] && info.last_ts == ts[n - 1]);
    CHECK(s_same(ts, val, s_dts, s_dval, n));
    telem_block_iter_t *it = telem_block_iter_new();
    REQUIRE(it);
    CHECK_RC(telem_block_iter_reset(it, buf, len, NULL), 0);
    uint32_t k = 0;
    int64_t t;
    double v;
    int ok = 1, rc;
    while ((rc = telem_block_iter_next(it, &t, &v)) == 1) {
        ok &= k < n && t == ts[k] && s_to_bits(v) == s_to_bits(val[k]);
        k++;
    }
    CHECK(ok && rc == 0 && k == n);
    telem_block_iter_destroy(&it);
    CHECK(it == NULL);
}

/* Every way of making a block, each decoded both ways.  Returns the size
 * of the automatic encoding. */
static size_t
s_roundtrip(const int64_t *ts, const double *val, uint32_t n)
{
    static const telem_block_vcodec_t codecs[] = {
        TELEM_BLOCK_VAL_AUTO, TELEM_BLOCK_VAL_RAW, TELEM_BLOCK_VAL_XOR,
        TELEM_BLOCK_VAL_DEC, TELEM_BLOCK_VAL_BITS, TELEM_BLOCK_VAL_DECX,
        TELEM_BLOCK_VAL_RATIO};
    size_t auto_len = 0;
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        telem_block_opts_t o;
        telem_block_opts_default(&o);
        o.value_codec = codecs[c];
        unsigned char *buf = NULL;
        size_t len = 0;
        int rc = telem_block_encode(ts, val, n, &o, &buf, &len);
        if ((codecs[c] == TELEM_BLOCK_VAL_DEC
             || codecs[c] == TELEM_BLOCK_VAL_RATIO) && rc == TELEM_EINVAL)
            continue;           /* cannot code these: refused, documented */
        CHECK_RC(rc, 0);
        if (rc)
            continue;
        s_check_decodes(buf, len, ts, val, n);
        if (codecs[c] == TELEM_BLOCK_VAL_AUTO)
            auto_len = len;
        else
            CHECK(auto_len <= len);
        free(buf);
    }
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.max_points = TELEM_BLOCK_MAX_POINTS;
    telem_block_writer_t *w = telem_block_writer_new(&o, NULL);
    REQUIRE(w);
    int ok = 1;
    for (uint32_t i = 0; i < n; i++)
        ok &= telem_block_writer_append(w, ts[i], val[i]) == 0;
    CHECK(ok && telem_block_writer_count(w) == n);
    size_t size = telem_block_writer_snapshot_size(w), len;
    unsigned char *snap = malloc(size);
    REQUIRE(snap);
    CHECK_RC(telem_block_writer_snapshot(w, snap, size, &len), 0);
    CHECK_INT(len, size);
    s_check_decodes(snap, len, ts, val, n);
    free(snap);
    unsigned char *fin;
    CHECK_RC(telem_block_writer_finish(w, &fin, &len), 0);
    CHECK_INT(len, auto_len);
    s_check_decodes(fin, len, ts, val, n);
    CHECK_INT(telem_block_writer_count(w), 0);
    free(fin);
    telem_block_writer_destroy(&w);
    return auto_len;
}

/* --- adversarial series ------------------------------------------------- */

static int64_t s_ts[MAXN];
static double s_val[MAXN];

static void
s_regular(uint32_t n, int64_t t0, int64_t step)
{
    for (uint32_t i = 0; i < n; i++)
        s_ts[i] = t0 + (int64_t) i * step;
}

static void
test_special_values(void)
{
    const double specials[] = {
        NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0,
        s_from_bits(0x7ff0000000000001u),     /* signalling NaN */
        s_from_bits(0x7ff8dead0000beefu),     /* NaN with a payload */
        s_from_bits(0xfff4000000000001u),
        s_from_bits(1),                       /* smallest subnormal */
        s_from_bits(0x000fffffffffffffu),     /* largest subnormal */
        1.7976931348623157e308, -1.7976931348623157e308, 2.2250738585072014e-308,
        0.1, 1e300, -1e-300, 9007199254740993.0, 123456789012345678.0};
    size_t ns = sizeof specials / sizeof specials[0];
    s_regular(MAXN, 1700000000 * SEC, SEC);
    for (uint32_t i = 0; i < 300; i++)
        s_val[i] = specials[(i * 7) % ns];
    s_roundtrip(s_ts, s_val, 300);
    /* Each alone, and each between ordinary values. */
    for (size_t k = 0; k < ns; k++) {
        s_val[0] = specials[k];
        s_roundtrip(s_ts, s_val, 1);
        for (uint32_t i = 0; i < 40; i++)
            s_val[i] = i % 5 == 2 ? specials[k] : (double) i;
        s_roundtrip(s_ts, s_val, 40);
    }
}

static void
test_timestamps(void)
{
    for (uint32_t i = 0; i < 64; i++)
        s_val[i] = (double) i;
    /* Duplicates, huge jumps, the extremes of int64. */
    int64_t dup[8] = {5, 5, 5, 6, 6, 1000 * SEC, 1000 * SEC, INT64_MAX};
    s_roundtrip(dup, s_val, 8);
    int64_t ext[5] = {INT64_MIN, INT64_MIN, -1, 0, INT64_MAX};
    s_roundtrip(ext, s_val, 5);
    int64_t ext2[3] = {INT64_MIN, INT64_MAX, INT64_MAX};
    s_roundtrip(ext2, s_val, 3);
    int64_t ext3[4] = {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX};
    s_roundtrip(ext3, s_val, 4);
    /* All equal, two points, negative times. */
    s_regular(64, -77 * SEC, 0);
    s_roundtrip(s_ts, s_val, 64);
    s_regular(2, -77 * SEC, 3);
    s_roundtrip(s_ts, s_val, 2);
    /* 1 s with nanosecond jitter, 0.5 s grid with a missed round. */
    for (uint32_t i = 0; i < 600; i++) {
        s_ts[i] = 1795563990402860996 + (int64_t) i * SEC
                  + (int64_t) (s_rand() % 3000) - (i == 300 ? 0 : 70000);
        s_val[i] = (double) i;
    }
    s_roundtrip(s_ts, s_val, 600);
    s_regular(600, 1795564000000000000, SEC / 2);
    for (uint32_t i = 200; i < 600; i++)
        s_ts[i] += SEC / 2;
    s_roundtrip(s_ts, s_val, 600);
}

static void
test_values(void)
{
    s_regular(MAXN, 1700000000 * SEC, SEC);
    /* Constant: almost nothing but the header. */
    for (uint32_t i = 0; i < 1000; i++)
        s_val[i] = 42.0;
    CHECK(s_roundtrip(s_ts, s_val, 1000) < 40);
    for (uint32_t i = 0; i < 1000; i++)
        s_val[i] = 0.30000000000000004;
    CHECK(s_roundtrip(s_ts, s_val, 1000) < 48);
    /* A counter with resets, and one that wraps past int64 as doubles. */
    double c = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        c = i % 97 == 96 ? 0 : c + (double) (s_rand() % 5000);
        s_val[i] = c;
    }
    s_roundtrip(s_ts, s_val, 1000);
    for (uint32_t i = 0; i < 100; i++)
        s_val[i] = i % 2 ? 9.2e18 : -9.2e18;
    s_roundtrip(s_ts, s_val, 100);
    /* Decimals: two places (load averages), uptime-like steady steps. */
    for (uint32_t i = 0; i < 1000; i++)
        s_val[i] = (double) (s_rand() % 400) / 100.0;
    s_roundtrip(s_ts, s_val, 1000);
    for (uint32_t i = 0; i < 1000; i++)
        s_val[i] = (double) (2580892 + 100 * (int64_t) i) / 100.0;
    CHECK(s_roundtrip(s_ts, s_val, 1000) < 60);
    /* Huge jumps between tiny and huge magnitudes. */
    for (uint32_t i = 0; i < 200; i++)
        s_val[i] = i % 3 == 0 ? 1e-300 : i % 3 == 1 ? 1e300 : -5e-324;
    s_roundtrip(s_ts, s_val, 200);
}

/* The codec the automatic choice takes for points already in s_ts, s_val
 * (after checking the round trips). */
static telem_block_vcodec_t
s_chosen(uint32_t n)
{
    s_roundtrip(s_ts, s_val, n);
    unsigned char *buf;
    size_t len;
    telem_block_info_t info;
    REQUIRE(telem_block_encode(s_ts, s_val, n, NULL, &buf, &len) == 0);
    REQUIRE(telem_block_info(buf, len, &info) == 0);
    free(buf);
    return info.value_codec;
}

static void
test_choice(void)
{
    s_regular(MAXN, 1700000000 * SEC, SEC);
    /* Integer gauges and counters: decimal integers. */
    for (uint32_t i = 0; i < 500; i++)
        s_val[i] = (double) (4096 * (int64_t) (s_rand() % 100000));
    CHECK_INT(s_chosen(500), TELEM_BLOCK_VAL_DEC);
    /* Percentages of counts and ratios of memory: ratios. */
    for (uint32_t i = 0; i < 500; i++) {
        double total = (double) (195 + s_rand() % 10);
        double idle = (double) (s_rand() % 195);
        s_val[i] = (total - idle) / total * 100.0;
    }
    CHECK_INT(s_chosen(500), TELEM_BLOCK_VAL_RATIO);
    for (uint32_t i = 0; i < 500; i++)
        s_val[i] = (double) (520000 + s_rand() % 9000) / 24684092.0;
    CHECK_INT(s_chosen(500), TELEM_BLOCK_VAL_RATIO);
    s_val[7] = -0.0;                    /* not a ratio: another codec */
    CHECK(s_chosen(500) != TELEM_BLOCK_VAL_RATIO);
    s_val[7] = -s_val[8];               /* negative ratios are ratios */
    CHECK_INT(s_chosen(500), TELEM_BLOCK_VAL_RATIO);
    /* Differences of timings in seconds: decimals with corrections. */
    for (uint32_t i = 0; i < 500; i++) {
        double a = (double) (1300000 + s_rand() % 200000) / 1e9;
        double b = (double) (1300000 + s_rand() % 200000) / 1e9;
        s_val[i] = fabs(a - b);
    }
    CHECK_INT(s_chosen(500), TELEM_BLOCK_VAL_DECX);
    /* Constant, not decimal: bit patterns, no bit a point. */
    for (uint32_t i = 0; i < 500; i++)
        s_val[i] = s_from_bits(0x7ff8000000000123u);
    CHECK_INT(s_chosen(500), TELEM_BLOCK_VAL_BITS);
    /* Noise: XOR or raw, whichever is smaller. */
    for (uint32_t i = 0; i < 500; i++)
        s_val[i] = s_from_bits(s_rand());
    telem_block_vcodec_t c = s_chosen(500);
    CHECK(c == TELEM_BLOCK_VAL_RAW || c == TELEM_BLOCK_VAL_BITS
          || c == TELEM_BLOCK_VAL_XOR);
    /* A ratio codec forced on values it cannot code is refused. */
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.value_codec = TELEM_BLOCK_VAL_RATIO;
    unsigned char *buf;
    size_t len;
    s_val[0] = M_PI;
    CHECK_RC(telem_block_encode(s_ts, s_val, 3, &o, &buf, &len),
             TELEM_EINVAL);
    o.value_codec = TELEM_BLOCK_VAL_DEC;
    CHECK_RC(telem_block_encode(s_ts, s_val, 3, &o, &buf, &len),
             TELEM_EINVAL);
    o.value_codec = (telem_block_vcodec_t) 9;
    CHECK_RC(telem_block_encode(s_ts, s_val, 3, &o, &buf, &len),
             TELEM_EINVAL);
}

static void
test_random(void)
{
    for (int round = 0; round < 200; round++) {
        uint32_t n = 1 + (uint32_t) (s_rand() % 700);
        int64_t t = (int64_t) s_rand();
        int kind = round % 7;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t r = s_rand();
            if (i > 0) {
                uint64_t step = kind == 4 ? r % 3
                                : r % (UINT64_C(1) << (r % 40));
                t = (uint64_t) t + step > (uint64_t) INT64_MAX
                    && t > 0 ? INT64_MAX : t + (int64_t) step;
            }
            s_ts[i] = t;
            s_val[i] = kind == 0 ? s_from_bits(s_rand())
                     : kind == 1 ? (double) (int64_t) (r % 100000) - 50000
                     : kind == 2 ? (double) (r % 1000) / 1000.0
                     : kind == 3 ? (i ? s_val[i - 1] : 0) + (double) (r % 7)
                                   * 0.25
                     : kind == 5 ? (double) (r % 1000) / (double) (1 + r % 977)
                                   * 100.0
                     : kind == 6 ? (double) (r % 100000) / 1e9
                                   - (double) (r % 77777) / 1e9
                     : sin((double) i / 10.0);
        }
        s_roundtrip(s_ts, s_val, n);
    }
}

static void
test_limits(void)
{
    static int64_t ts[TELEM_BLOCK_MAX_POINTS + 1];
    static double val[TELEM_BLOCK_MAX_POINTS + 1];
    for (uint32_t i = 0; i <= TELEM_BLOCK_MAX_POINTS; i++) {
        ts[i] = (int64_t) i * 250 * 1000000;
        val[i] = (double) (i % 17);
    }
    s_roundtrip(ts, val, TELEM_BLOCK_MAX_POINTS);
    unsigned char *buf;
    size_t len;
    CHECK_RC(telem_block_encode(ts, val, TELEM_BLOCK_MAX_POINTS + 1, NULL,
                                &buf, &len), TELEM_EINVAL);
    CHECK_RC(telem_block_encode(ts, val, 0, NULL, &buf, &len), TELEM_EINVAL);
    CHECK_RC(telem_block_encode(ts, val, 10, NULL, &buf, &len), 0);
    int64_t small_ts[9];
    double small_val[9];
    CHECK_RC(telem_block_decode(buf, len, small_ts, small_val, 9, NULL),
             TELEM_ETOOBIG);
    telem_block_info_t info;
    CHECK_RC(telem_block_info(buf, len, &info), 0);
    /* Blocks laid end to end: the header says where one ends. */
    unsigned char two[512];
    REQUIRE(2 * len <= sizeof two);
    memcpy(two, buf, len);
    memcpy(two + len, buf, len);
    CHECK_RC(telem_block_info(two, 2 * len, &info), 0);
    CHECK_INT(info.size, len);
    CHECK_RC(telem_block_info(two + info.size, len, &info), 0);
    buf[0] = 2;
    CHECK_RC(telem_block_info(buf, len, &info), TELEM_EVERSION);
    free(buf);
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.ts_unit_ns = 0;
    int err = 0;
    CHECK(telem_block_writer_new(&o, &err) == NULL && err == TELEM_EINVAL);
    CHECK_RC(telem_block_encode(ts, val, 3, &o, &buf, &len), TELEM_EINVAL);
    o.ts_unit_ns = 1;
    o.max_points = 3;
    telem_block_writer_t *w = telem_block_writer_new(&o, &err);
    REQUIRE(w);
    for (int i = 0; i < 3; i++)
        CHECK_RC(telem_block_writer_append(w, i, 1.0), 0);
    CHECK_RC(telem_block_writer_append(w, 5, 1.0), TELEM_EFULL);
    CHECK_RC(telem_block_writer_insert(w, 1, 1.0), TELEM_EFULL);
    telem_block_writer_reset(w);
    CHECK_RC(telem_block_writer_finish(w, &buf, &len), TELEM_ESTATE);
    char tiny[4];
    CHECK_RC(telem_block_writer_snapshot(w, tiny, sizeof tiny, &len),
             TELEM_ESTATE);
    CHECK_RC(telem_block_writer_append(w, 1, 1.0), 0);
    CHECK_RC(telem_block_writer_snapshot(w, tiny, sizeof tiny, &len),
             TELEM_ETOOBIG);
    telem_block_writer_destroy(&w);
    telem_block_writer_destroy(&w);     /* NULL is fine */
}


/* --- order and resolution ----------------------------------------------- */

static void
test_order(void)
{
    int64_t ts[3] = {10, 9, 11};
    double val[3] = {1, 2, 3};
    unsigned char *buf;
    size_t len;
    CHECK_RC(telem_block_encode(ts, val, 3, NULL, &buf, &len), TELEM_EINVAL);
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.max_points = 1000;
    telem_block_writer_t *w = telem_block_writer_new(&o, NULL);
    REQUIRE(w);
    CHECK_RC(telem_block_writer_append(w, 10, 1.0), 0);
    CHECK_RC(telem_block_writer_append(w, 20, 2.0), 0);
    size_t before = telem_block_writer_snapshot_size(w);
    CHECK_RC(telem_block_writer_append(w, 15, 3.0), TELEM_EINVAL);
    CHECK_INT(telem_block_writer_count(w), 2);
    CHECK_INT(telem_block_writer_snapshot_size(w), before);
    telem_block_writer_reset(w);
    /* Random inserts against a model kept sorted, equal times in arrival
     * order. */
    static int64_t mts[1000];
    static double mval[1000];
    uint32_t n = 0;
    for (uint32_t i = 0; i < 600; i++) {
        int64_t t = (int64_t) (s_rand() % 200) * SEC;
        double v = (double) i;
        CHECK_RC(telem_block_writer_insert(w, t, v), 0);
        uint32_t pos = n;
        while (pos > 0 && mts[pos - 1] > t)
            pos--;
        memmove(mts + pos + 1, mts + pos, (n - pos) * sizeof *mts);
        memmove(mval + pos + 1, mval + pos, (n - pos) * sizeof *mval);
        mts[pos] = t;
        mval[pos] = v;
        n++;
    }
    CHECK_INT(telem_block_writer_count(w), n);
    CHECK(telem_block_writer_first(w) == mts[0]
          && telem_block_writer_last(w) == mts[n - 1]);
    CHECK_RC(telem_block_writer_finish(w, &buf, &len), 0);
    s_check_decodes(buf, len, mts, mval, n);
    free(buf);
    telem_block_writer_destroy(&w);
}

static int64_t
s_floor(int64_t t, int64_t u)
{
    int64_t q = t / u;
    return (t % u < 0 ? q - 1 : q) * u;
}

static void
test_units(void)
{
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.ts_unit_ns = 1000000;
    static int64_t want[600];
    for (uint32_t i = 0; i < 600; i++) {
        s_ts[i] = -300 * SEC + (int64_t) i * SEC + 402859000
                  + (int64_t) (s_rand() % 3000);
        s_val[i] = (double) (s_rand() % 100);
        want[i] = s_floor(s_ts[i], o.ts_unit_ns);
    }
    unsigned char *exact, *ms;
    size_t elen, mlen;
    CHECK_RC(telem_block_encode(s_ts, s_val, 600, NULL, &exact, &elen), 0);
    CHECK_RC(telem_block_encode(s_ts, s_val, 600, &o, &ms, &mlen), 0);
    s_check_decodes(exact, elen, s_ts, s_val, 600);
    s_check_decodes(ms, mlen, want, s_val, 600);
    CHECK(mlen + 600 < elen);           /* > 1 byte a point saved */
    free(exact);
    free(ms);
    telem_block_writer_t *w = telem_block_writer_new(&o, NULL);
    REQUIRE(w);
    for (uint32_t i = 0; i < 600; i++)
        CHECK_RC(telem_block_writer_append(w, s_ts[i], s_val[i]), 0);
    CHECK_RC(telem_block_writer_finish(w, &ms, &mlen), 0);
    s_check_decodes(ms, mlen, want, s_val, 600);
    free(ms);
    /* Rounding down would leave int64: rounded up instead. */
    o.ts_unit_ns = 10;
    int64_t edge[2] = {INT64_MIN + 1, INT64_MIN + 15};
    int64_t edge_want[2] = {INT64_MIN + 8, INT64_MIN + 8};
    CHECK_RC(telem_block_encode(edge, s_val, 2, &o, &ms, &mlen), 0);
    s_check_decodes(ms, mlen, edge_want, s_val, 2);
    free(ms);
    /* Deltas that wrap around 2^64 leave residuals the unit does not
     * divide: the open block recodes itself in nanoseconds. */
    telem_block_writer_t *w2 = NULL;
    o.ts_unit_ns = 1000;
    w2 = telem_block_writer_new(&o, NULL);
    REQUIRE(w2);
    int64_t wrap[4] = {-9223372036854775000, -9223372036854774000,
                       9223372036854775000, 9223372036854775000};
    for (int i = 0; i < 4; i++)
        CHECK_RC(telem_block_writer_append(w2, wrap[i], s_val[i]), 0);
    size_t size = telem_block_writer_snapshot_size(w2), len;
    unsigned char *snap = malloc(size);
    REQUIRE(snap);
    CHECK_RC(telem_block_writer_snapshot(w2, snap, size, &len), 0);
    s_check_decodes(snap, len, wrap, s_val, 4);
    free(snap);
    CHECK_RC(telem_block_writer_finish(w2, &ms, &mlen), 0);
    s_check_decodes(ms, mlen, wrap, s_val, 4);
    free(ms);
    telem_block_writer_destroy(&w2);
    telem_block_writer_destroy(&w);
}

/* --- damage ------------------------------------------------------------- */

/* CRC-32C written out bitwise, independent of the codec's. */
static uint32_t
s_crc(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

static void
s_put_crc(unsigned char *p, size_t len)
{
    uint32_t c = s_crc(p, len - 4);
    for (int i = 0; i < 4; i++)
        p[len - 4 + i] = (unsigned char) (c >> (8 * i));
}

/* Decode and iterator agree on buf: both refuse it, or both give the
 * same well-formed points.  Returns 1 when it decoded. */
static int
s_agree(const unsigned char *buf, size_t len)
{
    telem_block_info_t info;
    int rc = telem_block_decode(buf, len, s_dts, s_dval,
                                TELEM_BLOCK_MAX_POINTS, &info);
    int ok = 1;
    if (rc == 0) {
        ok &= info.npoints >= 1 && info.size <= len;
        ok &= s_dts[0] == info.first_ts
              && s_dts[info.npoints - 1] == info.last_ts;
        for (uint32_t i = 1; i < info.npoints; i++)
            ok &= s_dts[i] >= s_dts[i - 1];
    }
    else
        ok &= rc == TELEM_EPROTO || rc == TELEM_EVERSION;
    telem_block_iter_t *it = telem_block_iter_new();
    REQUIRE(it);
    int irc = telem_block_iter_reset(it, buf, len, NULL);
    uint32_t k = 0;
    int64_t t;
    double v;
    while (irc == 0 && (irc = telem_block_iter_next(it, &t, &v)) == 1) {
        if (rc == 0)
            ok &= k < info.npoints && t == s_dts[k]
                  && s_to_bits(v) == s_to_bits(s_dval[k]);
        k++;
        irc = 0;
    }
    ok &= rc == 0 ? irc == 0 && k == info.npoints : irc != 0;
    telem_block_iter_destroy(&it);
    CHECK(ok);
    return rc == 0;
}

/* Every truncation and every flipped bit of one block, then the same flips
 * with the checksum made to match. */
static void
s_damage(const unsigned char *blk, size_t len)
{
    unsigned char *p = malloc(len);
    REQUIRE(p);
    int refused = 1;
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(p, blk, cut);
        telem_block_info_t info;
        refused &= telem_block_info(p, cut, &info) != 0;
        refused &= !s_agree(p, cut);
    }
    CHECK(refused);
    int forged_ok = 0;
    for (size_t i = 0; i < len; i++)
        for (int b = 0; b < 8; b++) {
            memcpy(p, blk, len);
            p[i] ^= (unsigned char) (1u << b);
            refused &= !s_agree(p, len);
            s_put_crc(p, len);
            forged_ok += s_agree(p, len);
        }
    CHECK(refused);
    /* Random bytes behind a good checksum and a plausible header. */
    for (int round = 0; round < 2000; round++) {
        memcpy(p, blk, len);
        size_t from = 2 + (size_t) (s_rand() % (len - 2));
        for (size_t i = from; i < len - 4; i++)
            if (s_rand() % 4 == 0)
                p[i] = (unsigned char) s_rand();
        s_put_crc(p, len);
        forged_ok += s_agree(p, len);
    }
    (void) forged_ok;
    free(p);
}

/* Damages a block of each codec made by telem_block_encode(). */
static void
s_damage_encoded(void)
{
    unsigned char *blk;
    size_t len;
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    for (uint32_t i = 0; i < 120; i++) {
        s_ts[i] = 1795563990402860996 + (int64_t) i * SEC
                  + (int64_t) (s_rand() % 3000);
        s_val[i] = i % 9 == 0 ? NAN : (double) (s_rand() % 1000) / 10.0;
    }
    static const telem_block_vcodec_t codecs[] = {
        TELEM_BLOCK_VAL_RAW, TELEM_BLOCK_VAL_XOR, TELEM_BLOCK_VAL_BITS,
        TELEM_BLOCK_VAL_DECX};
    for (int c = 0; c < 4; c++) {
        o.value_codec = codecs[c];
        CHECK_RC(telem_block_encode(s_ts, s_val, 40, &o, &blk, &len), 0);
        s_damage(blk, len);
        free(blk);
    }
    for (uint32_t i = 0; i < 120; i++)
        s_val[i] = (double) (s_rand() % 1000) / 10.0;
    CHECK_RC(telem_block_encode(s_ts, s_val, 120, NULL, &blk, &len), 0);
    s_damage(blk, len);
    free(blk);
    /* A ratio block and a block of decimals with corrections. */
    for (uint32_t i = 0; i < 60; i++)
        s_val[i] = (double) (s_rand() % 200) / (double) (190 + i % 13) * 100;
    o.value_codec = TELEM_BLOCK_VAL_RATIO;
    CHECK_RC(telem_block_encode(s_ts, s_val, 60, &o, &blk, &len), 0);
    s_damage(blk, len);
    free(blk);
    for (uint32_t i = 0; i < 60; i++)
        s_val[i] = (double) (s_rand() % 99999) / 1e9 - 3e-5;
    o.value_codec = TELEM_BLOCK_VAL_DECX;
    CHECK_RC(telem_block_encode(s_ts, s_val, 60, &o, &blk, &len), 0);
    s_damage(blk, len);
    free(blk);
    s_regular(50, 0, SEC);
    for (uint32_t i = 0; i < 50; i++)
        s_val[i] = 7;
    CHECK_RC(telem_block_encode(s_ts, s_val, 50, NULL, &blk, &len), 0);
    s_damage(blk, len);
    free(blk);
}

static void
test_damage(void)
{
    unsigned char *blk;
    size_t len;
    s_damage_encoded();
    telem_block_writer_t *w = telem_block_writer_new(NULL, NULL);
    REQUIRE(w);
    for (uint32_t i = 0; i < 30; i++)
        CHECK_RC(telem_block_writer_append(w, s_ts[i] + (i % 3), s_val[i] + i),
                 0);
    size_t size = telem_block_writer_snapshot_size(w);
    blk = malloc(size);
    REQUIRE(blk);
    CHECK_RC(telem_block_writer_snapshot(w, blk, size, &len), 0);
    s_damage(blk, len);
    free(blk);
    telem_block_writer_destroy(&w);
    /* A count over the limit is refused before anything is decoded. */
    unsigned char big[32] = {1, 0, 0x80, 0x80, 0x04};     /* n = 65536 */
    s_put_crc(big, sizeof big);
    telem_block_info_t info;
    CHECK_RC(telem_block_info(big, sizeof big, &info), TELEM_EPROTO);
    CHECK_INT(s_crc((const unsigned char *) "123456789", 9), 0xe3069283u);
}

int
main(void)
{
    test_special_values();
    test_timestamps();
    test_values();
    test_random();
    test_choice();
    test_limits();
    test_order();
    test_units();
    test_damage();
    return check_report("test_block");
}
