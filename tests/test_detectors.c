/* test_detectors.c - slowgpu and the leave-one-out statistics on fixed
 * tables.
 *
 * Rounds are fed one at a time, the way telem_watch feeds them, with
 * Gaussian noise of a fixed seed.  Checks are on decisions: which device is
 * named, in which round, and that clean data gives no event at all; 2, 3,
 * 4, 8, 64 and 1000 devices; one and two slow devices; identical peers
 * (zero MAD); missing series and rounds; slow drift; and Dragon's rule,
 * which cannot fire below 8 devices where slowgpu does.  Threshold,
 * heartbeat, parameters and event lists are in test_detectors_rules.c.
 */
#include "test_detectors.h"
#include "det_util.h"

#include <math.h>

#define BASE 0.010     /* seconds per round of a healthy device */

typedef double (*factor_fn)(size_t dev, size_t round, const void *arg);

/* Feeds rounds [r0, r0 + nrounds) with value BASE * f() * noise(sd) per
 * device, one det_run per round; events accumulate in evs. */
static void
sim(fx_t *fx, det_t *d, size_t r0, size_t nrounds, double sd, factor_fn f,
    const void *arg, det_events_t *evs)
{
    for (size_t r = r0; r < r0 + nrounds; r++) {
        int64_t ts = FX_T0 + (int64_t) r * FX_PERIOD;
        for (size_t i = 0; i < fx->n; i++)
            fx_push(fx, i, ts, BASE * f(i, r, arg) * fx_noise(fx, sd));
        det_input_t in = fx_input(fx, ts + FX_PERIOD / 2, 1);
        CHECK_INT(det_run(d, &in, evs), 0);
    }
}

static size_t
ev_round(const det_event_t *e)
{
    return (size_t) ((e->ts_ns - FX_T0) / FX_PERIOD);
}

/* Events naming series i of fx. */
static size_t
ev_count_for(const det_events_t *evs, const fx_t *fx, size_t i,
             det_severity_t sev)
{
    size_t c = 0;
    for (size_t k = 0; k < det_events_count(evs); k++) {
        const det_event_t *e = det_events_get(evs, k);
        c += e->severity == sev && e->ndevices == 1 &&
             strcmp(e->devices[0].node, fx->s[i].node) == 0 &&
             strcmp(e->devices[0].device, fx->s[i].device) == 0;
    }
    return c;
}

static double
f_clean(size_t dev, size_t round, const void *arg)
{
    (void) dev, (void) round, (void) arg;
    return 1;
}

/* arg: {slow device a, slow device b (or SIZE_MAX), factor, from round} */
typedef struct {
    size_t a, b;
    double factor;
    size_t from;
} slow_t;

static double
f_slow(size_t dev, size_t round, const void *arg)
{
    const slow_t *s = arg;
    return (dev == s->a || dev == s->b) && round >= s->from ? s->factor : 1;
}

/* ---- leave-one-out statistics ------------------------------------------ */

static int
cmp_d(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double
brute_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
test_loo_matches_brute_force(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    det_scratch_t sc = { 0 };
    double x[80], med[80], mad[80], peers[80], dev[80];
    for (size_t n = 2; n <= 80; n++) {
        for (int rep = 0; rep < 5; rep++) {
            for (size_t i = 0; i < n; i++)   /* rep 0-1: many ties */
                x[i] = rep < 2 ? (double) gsl_rng_uniform_int(rng, 4)
                               : gsl_rng_uniform(rng) * 10;
            CHECK_INT(det_loo(&sc, x, n, med, mad), 0);
            for (size_t i = 0; i < n; i++) {
                size_t k = 0;
                for (size_t j = 0; j < n; j++)
                    if (j != i)
                        peers[k++] = x[j];
                double m = brute_median(peers, k);
                for (size_t j = 0; j < k; j++)
                    dev[j] = fabs(peers[j] - m);
                double md = brute_median(dev, k);
                CHECK(fabs(med[i] - m) < 1e-12);
                CHECK(fabs(mad[i] - md) < 1e-12);
            }
        }
    }
    double one = 1, m1, a1;
    CHECK_INT(det_loo(&sc, &one, 1, &m1, &a1), 0);
    CHECK(isnan(m1) && isnan(a1));
    double sorted[] = { 1, 2, 3, 4 };
    CHECK(det_median_skip(sorted, 4, 4) == 2.5);
    CHECK(det_median_skip(sorted, 4, 0) == 3);
    CHECK(det_median_skip(sorted, 4, 3) == 2);
    CHECK(isnan(det_median_skip(sorted, 1, 0)));
    det_scratch_free(&sc);
    gsl_rng_free(rng);
}

/* ---- slowgpu, robust rule ---------------------------------------------- */

/* One device 10 % slower from round 10 (after the noise floor's learning
 * rounds) is flagged (act) by round 12, within 3 rounds, and is the only
 * device ever named; nothing before. */
static void
check_one_slow(size_t ndev, size_t per_node, size_t slow_dev)
{
    fx_t *fx = fx_new(ndev, per_node, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", NULL);
    det_events_t *evs = det_events_new();
    slow_t s = { slow_dev, SIZE_MAX, 1.10, 10 };
    sim(fx, d, 0, 40, 0.01, f_slow, &s, evs);
    CHECK_INT(ev_count_for(evs, fx, slow_dev, DET_SEV_ACT), 1);
    CHECK_INT(det_events_count(evs), 1);
    const det_event_t *e = det_events_get(evs, 0);
    if (e) {
        CHECK(ev_round(e) >= 10 && ev_round(e) <= 12);
        CHECK_INT(e->nnodes, 1);
        CHECK_STR(e->detector, "slowgpu");
        CHECK(e->score > 0.05 && e->score < 0.15);
        CHECK(strstr(e->text, "slower") != NULL);
        if (ndev == 2)
            CHECK(strstr(e->text, "only other device") != NULL);
    }
    if (!e || ev_round(e) > 12)
        fprintf(stderr, "  (with %zu devices)\n", ndev);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

static void
test_one_slow_device_any_count(void)
{
    check_one_slow(2, 1, 1);     /* 2 nodes, one device each */
    check_one_slow(2, 2, 0);     /* 1 node, 2 devices */
    check_one_slow(3, 1, 2);
    check_one_slow(4, 2, 3);
    check_one_slow(8, 4, 5);
    check_one_slow(64, 8, 17);
    check_one_slow(1000, 8, 999);
}

static void
test_clean_rounds_no_event(void)
{
    static const size_t counts[] = { 2, 3, 4, 8, 64 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        fx_t *fx = fx_new(counts[c], 2, "cg_dgemm_seconds");
        det_t *d = fx_det("slowgpu", NULL);
        det_events_t *evs = det_events_new();
        sim(fx, d, 0, 300, 0.01, f_clean, NULL, evs);
        CHECK_INT(det_events_count(evs), 0);
        det_events_destroy(&evs);
        det_destroy(&d);
        fx_destroy(&fx);
    }
}

/* Heavy-tailed noise: every device has a preempted round (1.5-3x slower)
 * once in every 5 rounds, never two within 3 rounds.  Isolated spikes never
 * make an event (3 of 3 rounds must be slow), over 500 rounds of 3, 8 and
 * 64 devices, whatever their size. */
static double
f_spikes(size_t dev, size_t round, const void *arg)
{
    (void) arg;
    if ((round + dev * 7) % 5 != 0)
        return 1;
    return 1.5 + (double) ((round / 5 + dev) % 7) / 4;
}

static void
test_spiky_rounds_no_event(void)
{
    static const size_t counts[] = { 3, 8, 64 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        fx_t *fx = fx_new(counts[c], 4, "cg_dgemm_seconds");
        det_t *d = fx_det("slowgpu", NULL);
        det_events_t *evs = det_events_new();
        sim(fx, d, 0, 500, 0.02, f_spikes, NULL, evs);
        CHECK_INT(det_events_count(evs), 0);
        for (size_t i = 0; i < det_events_count(evs) && i < 3; i++)
            fprintf(stderr, "  unexpected: %s\n", det_events_get(evs, i)->text);
        det_events_destroy(&evs);
        det_destroy(&d);
        fx_destroy(&fx);
    }
}

/* A machine whose devices wander 5 % from round to round (a shared VM):
 * without the noise floor, 2 and 3 clean devices report that noise as
 * slow devices; with it (the default) 600 clean rounds give no event, a
 * 50 % slower device is still named within 3 rounds, and nothing is
 * judged during the first, learning rounds. */
static void
test_noise_floor(void)
{
    static const size_t counts[] = { 2, 3 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        fx_t *fx = fx_new(counts[c], 1, "cg_dgemm_seconds");
        det_t *off = fx_det("slowgpu", (const char *const[]) { "noise", "0",
                                                               NULL });
        det_events_t *evs = det_events_new();
        sim(fx, off, 0, 600, 0.05, f_clean, NULL, evs);
        CHECK(det_events_count(evs) > 0);
        det_events_clear(evs);
        fx_t *fx2 = fx_new(counts[c], 1, "cg_dgemm_seconds");
        det_t *d = fx_det("slowgpu", NULL);
        sim(fx2, d, 0, 600, 0.05, f_clean, NULL, evs);
        CHECK_INT(det_events_count(evs), 0);
        slow_t s = { 0, SIZE_MAX, 1.5, 600 };
        sim(fx2, d, 600, 10, 0.05, f_slow, &s, evs);
        CHECK_INT(ev_count_for(evs, fx2, 0, DET_SEV_ACT), 1);
        const det_event_t *e = det_events_get(evs, 0);
        CHECK(e && ev_round(e) >= 600 && ev_round(e) <= 602);
        det_events_destroy(&evs);
        det_destroy(&off);
        det_destroy(&d);
        fx_destroy(&fx);
        fx_destroy(&fx2);
    }
    /* Slow from the first round: named once the noise is known (7 rounds
     * of ratios), not before. */
    fx_t *fx = fx_new(3, 1, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", NULL);
    det_events_t *evs = det_events_new();
    slow_t s = { 1, SIZE_MAX, 1.3, 0 };
    sim(fx, d, 0, 20, 0.01, f_slow, &s, evs);
    CHECK_INT(ev_count_for(evs, fx, 1, DET_SEV_ACT), 1);
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && ev_round(e) >= 7 && ev_round(e) <= 9);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

static void
test_two_slow_devices(void)
{
    static const size_t counts[] = { 4, 8, 64 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c];
        fx_t *fx = fx_new(n, 4, "cg_dgemm_seconds");
        det_t *d = fx_det("slowgpu", NULL);
        det_events_t *evs = det_events_new();
        slow_t s = { 0, n - 1, 1.25, 3 };
        sim(fx, d, 0, 20, 0.01, f_slow, &s, evs);
        CHECK_INT(ev_count_for(evs, fx, 0, DET_SEV_ACT), 1);
        CHECK_INT(ev_count_for(evs, fx, n - 1, DET_SEV_ACT), 1);
        CHECK_INT(det_events_count(evs), 2);
        det_events_destroy(&evs);
        det_destroy(&d);
        fx_destroy(&fx);
    }
}

/* Identical peers: MAD 0 is floored, no NaN, no division by zero; a device
 * within the effect size is never flagged however small the spread. */
static void
test_zero_mad(void)
{
    fx_t *fx = fx_new(6, 3, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", NULL);
    det_events_t *evs = det_events_new();
    slow_t small = { 2, SIZE_MAX, 1.05, 0 };
    sim(fx, d, 0, 30, 0.0, f_slow, &small, evs);
    CHECK_INT(det_events_count(evs), 0);
    sim(fx, d, 30, 30, 0.0, f_clean, NULL, evs);
    CHECK_INT(det_events_count(evs), 0);
    slow_t big = { 4, SIZE_MAX, 1.10, 60 };
    sim(fx, d, 60, 5, 0.0, f_slow, &big, evs);
    CHECK_INT(ev_count_for(evs, fx, 4, DET_SEV_ACT), 1);
    const det_event_t *e = det_events_get(evs, 0);
    for (size_t i = 0; e && i < e->nevidence; i++)
        CHECK(isfinite(e->evidence[i].value));
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* A round missing a device is judged without it; a device whose series
 * stops does not stall the others; NaN and non-positive values are
 * skipped; series of other metrics are ignored. */
static void
test_missing_series(void)
{
    fx_t *fx = fx_new(5, 1, "cg_dgemm_seconds");
    snprintf(fx->s[4].metric, sizeof fx->s[4].metric, "other_metric");
    det_t *d = fx_det("slowgpu", NULL);
    det_events_t *evs = det_events_new();
    for (size_t r = 0; r < 30; r++) {
        int64_t ts = FX_T0 + (int64_t) r * FX_PERIOD;
        for (size_t i = 0; i < 5; i++) {
            if (i == 0 && r >= 10)
                continue;                   /* device 0 dies at round 10 */
            if (i == 1 && r % 3 == 0)
                continue;                   /* device 1 misses rounds */
            double v = BASE * (i == 3 && r >= 12 ? 1.3 : 1) * fx_noise(fx, 0.01);
            if (i == 2 && r % 5 == 0)
                v = r % 10 ? NAN : -1;      /* garbage is skipped */
            fx_push(fx, i, ts, i == 4 ? 1e9 : v);
        }
        det_input_t in = fx_input(fx, ts + FX_PERIOD / 2, 1);
        CHECK_INT(det_run(d, &in, evs), 0);
    }
    CHECK_INT(det_events_count(evs), 1);
    CHECK_INT(ev_count_for(evs, fx, 3, DET_SEV_ACT), 1);
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && ev_round(e) <= 14);
    /* An empty input and an input of unrelated series are no error. */
    det_input_t empty = { .now_ns = FX_T0 };
    CHECK_INT(det_run(d, &empty, evs), 0);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* The newest round is judged only once every live device has reported it
 * (or a newer round exists): a late device is not compared half-way. */
static void
test_round_completeness(void)
{
    fx_t *fx = fx_new(4, 1, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", (const char *const[]) { "k", "1", "n", "1",
                                                         "noise", "0", NULL });
    det_events_t *evs = det_events_new();
    sim(fx, d, 0, 3, 0.0, f_clean, NULL, evs);
    int64_t ts = FX_T0 + 3 * FX_PERIOD;
    for (size_t i = 0; i < 3; i++)       /* device 3 late; 2 is slow */
        fx_push(fx, i, ts, BASE * (i == 2 ? 1.5 : 1));
    det_input_t in = fx_input(fx, ts + 1, 1);
    CHECK_INT(det_run(d, &in, evs), 0);
    CHECK_INT(det_events_count(evs), 0);  /* round 3 not complete yet */
    fx_push(fx, 3, ts, BASE);
    in = fx_input(fx, ts + 2, 1);
    CHECK_INT(det_run(d, &in, evs), 0);
    CHECK_INT(ev_count_for(evs, fx, 2, DET_SEV_ACT), 1);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* A device so slow that its sample of round k arrives after everybody's
 * round k+1: round k is judged without it, then its late sample is judged
 * against the round as kept, so it is still flagged, and only it. */
static void
test_late_device(void)
{
    fx_t *fx = fx_new(5, 1, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", NULL);
    det_events_t *evs = det_events_new();
    for (size_t r = 0; r < 12; r++) {
        int64_t ts = FX_T0 + (int64_t) r * FX_PERIOD;
        for (size_t i = 0; i < 4; i++)
            fx_push(fx, i, ts, BASE * fx_noise(fx, 0.01));
        if (r > 0)          /* device 4's previous round, late and slow */
            fx_push(fx, 4, ts - FX_PERIOD, 1.6 * BASE * fx_noise(fx, 0.01));
        det_input_t in = fx_input(fx, ts + FX_PERIOD / 2, 1);
        CHECK_INT(det_run(d, &in, evs), 0);
    }
    CHECK_INT(ev_count_for(evs, fx, 4, DET_SEV_ACT), 1);
    CHECK_INT(det_events_count(evs), 1);
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && strstr(e->text, "its 4 peers") != NULL);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* ---- drift and persistence --------------------------------------------- */

static double
f_creep(size_t dev, size_t round, const void *arg)
{
    (void) arg;
    if (dev != 1 || round < 20)
        return 1;
    double f = 1 + 0.002 * (double) (round - 20);
    return f > 1.05 ? 1.05 : f;
}

static void
test_drift(void)
{
    fx_t *fx = fx_new(6, 2, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", NULL);
    det_events_t *evs = det_events_new();
    sim(fx, d, 0, 120, 0.005, f_creep, NULL, evs);
    CHECK_INT(ev_count_for(evs, fx, 1, DET_SEV_WARN), 1);
    CHECK_INT(det_events_count(evs), 1);  /* never an act: under 6 % */
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && strstr(e->text, "drifted") != NULL);
    CHECK(e && ev_round(e) > 25);
    /* drift=0 turns it off. */
    det_events_clear(evs);
    fx_t *fx2 = fx_new(6, 2, "cg_dgemm_seconds");
    det_t *d2 = fx_det("slowgpu", (const char *const[]) { "drift", "0", NULL });
    sim(fx2, d2, 0, 120, 0.005, f_creep, NULL, evs);
    CHECK_INT(det_events_count(evs), 0);
    for (size_t i = 0; i < det_events_count(evs); i++)
        fprintf(stderr, "  unexpected: %s\n", det_events_get(evs, i)->text);
    det_events_destroy(&evs);
    det_destroy(&d);
    det_destroy(&d2);
    fx_destroy(&fx);
    fx_destroy(&fx2);
}

/* A device slow in one round of every three never reaches k=3 (or 2) of
 * n=3, but does with k=1; clearing needs n clean rounds, then it fires again. */
static double
f_every_third(size_t dev, size_t round, const void *arg)
{
    (void) arg;
    return dev == 0 && round % 3 == 2 ? 1.3 : 1;
}

static void
test_persistence(void)
{
    fx_t *fx = fx_new(4, 1, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", (const char *const[]) { "drift", "0", NULL });
    det_events_t *evs = det_events_new();
    sim(fx, d, 0, 30, 0.0, f_every_third, NULL, evs);
    CHECK_INT(det_events_count(evs), 0);
    slow_t s = { 0, SIZE_MAX, 1.3, 0 };
    sim(fx, d, 30, 5, 0.0, f_slow, &s, evs);       /* flagged once */
    sim(fx, d, 35, 5, 0.0, f_clean, NULL, evs);    /* cleared */
    sim(fx, d, 40, 5, 0.0, f_slow, &s, evs);       /* flagged again */
    CHECK_INT(ev_count_for(evs, fx, 0, DET_SEV_ACT), 2);
    char why[128];
    CHECK_INT(det_set(d, "k", "4", why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "k") != NULL);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* ---- Dragon's rule ----------------------------------------------------- */

static void
test_dragon_cannot_fire_below_8(void)
{
    for (size_t n = 2; n <= 7; n++) {
        fx_t *fx = fx_new(n, 1, "cg_dgemm_seconds");
        det_t *dr = fx_det("slowgpu", (const char *const[]) { "rule", "dragon",
                                                              NULL });
        det_t *ro = fx_det("slowgpu", NULL);
        det_events_t *evs = det_events_new(), *evr = det_events_new();
        slow_t s = { n - 1, SIZE_MAX, 1.10, 0 };
        for (size_t r = 0; r < 50; r++) {
            int64_t ts = FX_T0 + (int64_t) r * FX_PERIOD;
            for (size_t i = 0; i < n; i++)
                fx_push(fx, i, ts, BASE * f_slow(i, r, &s) * fx_noise(fx, 0.005));
            det_input_t in = fx_input(fx, ts + 1, 1);
            CHECK_INT(det_run(dr, &in, evs), 0);
            CHECK_INT(det_run(ro, &in, evr), 0);
        }
        CHECK_INT(det_events_count(evs), 0);
        CHECK_INT(ev_count_for(evr, fx, n - 1, DET_SEV_ACT), 1);
        det_events_destroy(&evs);
        det_events_destroy(&evr);
        det_destroy(&dr);
        det_destroy(&ro);
        fx_destroy(&fx);
    }
    /* With 32 quiet devices Dragon's rule does fire on a 10 % slowdown. */
    fx_t *fx = fx_new(32, 8, "cg_dgemm_seconds");
    det_t *dr = fx_det("slowgpu", (const char *const[]) { "rule", "dragon",
                                                          NULL });
    det_events_t *evs = det_events_new();
    slow_t s = { 9, SIZE_MAX, 1.10, 0 };
    sim(fx, dr, 0, 10, 0.005, f_slow, &s, evs);
    CHECK_INT(ev_count_for(evs, fx, 9, DET_SEV_ACT), 1);
    CHECK_INT(det_events_count(evs), 1);
    det_events_destroy(&evs);
    det_destroy(&dr);
    fx_destroy(&fx);
}

/* ---- incremental needs, status ----------------------------------------- */

static void
count_line(void *arg, const char *key, const char *value)
{
    if (strcmp(key, "flagged") == 0)
        snprintf(arg, 256, "%s", value);
}

static void
test_needs_and_status(void)
{
    fx_t *fx = fx_new(4, 4, "cg_dgemm_seconds");
    det_t *d = fx_det("slowgpu", NULL);
    det_events_t *evs = det_events_new();
    det_needs_t nd;
    det_needs(d, FX_T0, &nd);
    CHECK_INT(nd.nmetrics, 1);
    CHECK_STR(nd.metrics[0], "cg_dgemm_seconds");
    CHECK(nd.start_ns == FX_T0 - 120 * FX_PERIOD);
    slow_t s = { 2, SIZE_MAX, 1.5, 0 };
    sim(fx, d, 0, 12, 0.0, f_slow, &s, evs);
    det_needs(d, FX_T0 + 12 * FX_PERIOD, &nd);
    /* From the oldest of the 8 rounds kept for late samples (4..11). */
    CHECK(nd.start_ns == FX_T0 + 4 * FX_PERIOD);
    char flagged[256] = "";
    det_describe(d, count_line, flagged);
    CHECK_STR(flagged, "n0/2 (slow)");
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

int
main(void)
{
    test_loo_matches_brute_force();
    test_one_slow_device_any_count();
    test_clean_rounds_no_event();
    test_spiky_rounds_no_event();
    test_noise_floor();
    test_two_slow_devices();
    test_zero_mad();
    test_missing_series();
    test_round_completeness();
    test_late_device();
    test_drift();
    test_persistence();
    test_dragon_cannot_fire_below_8();
    test_needs_and_status();
    return check_report("test_detectors");
}
