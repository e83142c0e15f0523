/* det_slowgpu_rules.c - how slowgpu judges one round.
 *
 * Robust rule (act).  Device i's time x is compared with the median m of
 * the other devices of its round and their MAD (scaled by 1.4826, floored
 * at mad_floor x m so that identical peers or a single peer do not divide
 * by zero).  The round counts as slow for i when x/m >= 1 + effect AND
 * (x - m) / scale >= z: an effect size that matters to the job and a
 * deviation the peers' own spread cannot explain.  Leaving i out keeps a
 * slow device from pulling its own reference up, which is what lets 2 and 3
 * devices work at all.  The device is flagged when k of its last n rounds
 * were slow, once, until a run of n clean rounds clears it.  With 2
 * devices the slower one is named (a fault slows a device down; it does
 * not make a healthy one faster), and the event says so with what decided:
 * the gap, its persistence, its z and which floor set the scale, and each
 * device's own time against its baseline once both have one.
 *
 * Noise floor (parameter noise).  The peers' spread in one round says
 * nothing about how much a device wanders from round to round, and with 2
 * or 3 devices it says almost nothing at all.  So each device also keeps
 * the changes of its log ratio to its peers between consecutive rounds,
 * the last `noise` of them; its noise as a standard deviation is the
 * larger of what their median (/ 0.6745 sqrt 2) and their 90th percentile
 * (/ 1.645 sqrt 2) say: the same for Gaussian changes, but a machine with
 * bursts of a few slow rounds shows them in the tail, which a median
 * ignores.  A device that has just become slow adds one large change,
 * and a device that has always been slow adds none, so a real slowdown
 * does not hide itself.  The median of that over the round's devices (at
 * most SG_NOISE_DEVS of them) floors the z scale as well.  On a quiet
 * machine it is below the effect size and changes nothing; on a shared
 * one it raises the bar to z times what its devices really do between
 * rounds.
 *
 * Start-up (settle, learn).  A device's first `settle` rounds never reach
 * these rules' robust part (det_slowgpu.c leaves them out of the round's
 * comparison), and after them it is judged only once it has `learn`
 * changes of its own: a collector's first rounds (cold caches, clocks
 * ramping, the job and the watcher starting on the same cores) are not
 * its normal, and a noise learned from a handful of changes is often half
 * the real one.  Judging those is what made a fresh detector act on a
 * clean device.
 *
 * Drift (warn).  The ratio x/m is also tracked against the device's own
 * history: its first `warmup` ratios after its start-up give a baseline
 * (their median) and a noise level s (their scaled MAD, floored at
 * mad_floor x baseline, and raised to the peers' relative spread of the
 * round or to the round's noise floor when that is larger),
 * and a one-sided CUSUM in units of that noise, S = max(0, S + min(z, 3) -
 * slack) with z = (ratio - baseline) / s, fires when S > drift.  Measuring
 * in the device's own noise keeps a noisy machine from raising alarms a
 * quiet one would need; clipping each step at 3 keeps one preempted round
 * from tripping it; a steady creep below the effect size adds up.
 *
 * Dragon's rule (rule dragon or both; act).  Each device's mean over its
 * last dragon_samples values is z-scored against the pooled mean and
 * population standard deviation of those means over every device of the
 * round; z > dragon_z fires.  One outlier among G devices reaches at most
 * z = sqrt(G - 1), so with the default 2.5 it cannot fire below 8 devices.
 */
#include "det_slowgpu.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "device 3 on node 'n2'" (or "node 'n2'" for a per-node kernel). */
static void
s_name(char *buf, size_t size, const det_slowgpu_dev_t *d)
{
    if (*d->device)
        snprintf(buf, size, "device %s on node '%s'", d->device, d->node);
    else
        snprintf(buf, size, "node '%s'", d->node);
}

static int
s_emit(det_events_t *out, const det_slowgpu_dev_t *d, int64_t ts,
       det_severity_t sev,
       double score, const det_evidence_t *ev, size_t nev, const char *text)
{
    det_util_event_t e = {
        .detector = "slowgpu", .severity = sev, .ts_ns = ts,
        .node = d->node, .device = d->device, .score = score,
        .evidence = ev, .nevidence = nev, .text = text,
    };
    return det_util_emit(out, &e);
}

static int
s_popcount(uint64_t v)
{
    int c = 0;
    for (; v; v &= v - 1)
        c++;
    return c;
}

/* What decided a robust-rule event: the device's ratio to its peer
 * median, its z, the z scale relative to the median and which floor set
 * it, and the k of n count. */
typedef struct {
    double ratio, z, rel;
    const char *scale_by;
    int count, n;
} s_verdict_t;

/* The text of a 2-device event.  The two devices are each other's only
 * reference, so the text names what decided: the gap, its persistence and
 * its z against the noise, each device's own time against its baseline
 * when both have one (as support when the named one rose more, otherwise
 * said to be no support), and the rule that names the slower one. */
static void
s_two_text(char *text, size_t size, const det_slowgpu_state_t *st,
           const det_params_t *p, const det_slowgpu_round_t *r, size_t i,
           const s_verdict_t *v)
{
    const det_slowgpu_dev_t *d = &st->devs[r->dev[i]];
    const det_slowgpu_dev_t *o = &st->devs[r->dev[1 - i]];
    uint32_t warmup = (uint32_t) det_params_num(p, SG_WARMUP);
    char who[600], other[600], hist[300];
    s_name(who, sizeof who, d);
    s_name(other, sizeof other, o);
    int based = d->nwarm >= warmup && o->nwarm >= warmup;
    double dc = based ? 100 * (r->x[i] / d->base_s - 1) : 0;
    double oc = based ? 100 * (r->x[1 - i] / o->base_s - 1) : 0;
    if (based && dc > 0 && dc > oc)
        snprintf(hist, sizeof hist, "its own time rose %.1f %% against its "
                 "first %u rounds after start-up, the other's changed "
                 "%+.1f %%", dc, warmup, oc);
    else if (based)
        /* Both moved with the machine since their baselines (a busy
         * start-up, a clock change): history cannot say which changed,
         * and the line must not look as if it backed the rule below. */
        snprintf(hist, sizeof hist, "against their own first %u rounds "
                 "after start-up its time changed %+.1f %% and the other's "
                 "%+.1f %%, so both moved with the machine since then and "
                 "the gap, timed in the same rounds, decides", warmup, dc,
                 oc);
    else
        snprintf(hist, sizeof hist, "no baseline of its own yet (its "
                 "first %u rounds after start-up)", warmup);
    snprintf(text, size, "%s is the slower of 2 devices: %.1f %% slower "
             "than %s (%.4g s against %.4g s) in %d of its last %d rounds, "
             "z %.1f against %s (%.2g %% of the other's time); %s; of 2 "
             "devices the slower one is named, as a fault slows a device "
             "down and does not make its peer faster", who,
             100 * (v->ratio - 1), other, r->x[i], r->med[i], v->count, v->n,
             v->z, v->scale_by, 100 * v->rel, hist);
}

static int
s_peer_event(const det_slowgpu_state_t *st, const det_params_t *p,
             const det_slowgpu_round_t *r, size_t i, const s_verdict_t *v,
             det_events_t *out)
{
    const det_slowgpu_dev_t *d = &st->devs[r->dev[i]];
    char who[600], text[2000];
    s_name(who, sizeof who, d);
    if (r->n == 2 && !r->late)
        s_two_text(text, sizeof text, st, p, r, i, v);
    else
        snprintf(text, sizeof text, "%s is %.1f %% slower than the median of "
                 "its %zu peers (%.4g s against %.4g s, robust z %.1f) in %d "
                 "of its last %d rounds", who, 100 * (v->ratio - 1), r->peers,
                 r->x[i], r->med[i], v->z, v->count, v->n);
    det_evidence_t ev[] = {
        { "value_s", r->x[i] }, { "peer_median_s", r->med[i] },
        { "peer_mad_s", r->mad[i] }, { "ratio", v->ratio }, { "z", v->z },
        { "slow_rounds", v->count }, { "rounds", v->n },
        { "devices", (double) r->peers + 1 }, { "noise", r->noise },
    };
    return s_emit(out, d, r->ts, DET_SEV_ACT, v->ratio - 1, ev,
                  sizeof ev / sizeof ev[0], text);
}

/* Keeps the newest `w` changes of d's log ratio (w = 0: none). */
static void
s_lr_push(det_slowgpu_dev_t *d, double lr, uint32_t w)
{
    if (!isfinite(lr))
        return;
    double last = d->last_lr;
    d->last_lr = lr;
    if (w == 0 || !isfinite(last))
        return;
    if (d->nlr > w)
        d->nlr = w;                 /* the window was made smaller */
    d->lr[d->lr_pos % w] = fabs(lr - last);
    d->lr_pos = (d->lr_pos + 1) % w;
    d->nlr += d->nlr < w;
}

/* 1 while d has fewer than `learn` changes of its own (noise on). */
static int
s_learning(const det_slowgpu_dev_t *d, const det_params_t *p)
{
    return det_params_num(p, SG_NOISE) > 0 &&
           (double) d->nlr < det_params_num(p, SG_LEARN);
}

/* d's noise as a relative standard deviation from its successive changes:
 * the larger of what their median and their 90th percentile say (for
 * Gaussian changes both say the same; a machine whose devices have bursts
 * of a few slow rounds shows them in the upper tail, which the median
 * alone ignores).  NAN while it is learning. */
static double
s_wander(const det_slowgpu_dev_t *d, const det_params_t *p, double *v)
{
    size_t n = d->nlr;
    if (n == 0 || s_learning(d, p))
        return NAN;
    memcpy(v, d->lr, n * sizeof *v);
    gsl_sort(v, 1, n);
    double med = det_util_median_skip(v, n, n) / (0.6744897501960817 * M_SQRT2);
    double q90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.9) /
                 (1.6448536269514722 * M_SQRT2);
    return fmax(med, q90);
}

/* The round's noise floor: the median wander of (up to SG_NOISE_DEVS
 * evenly spread) settled devices of the round, as a relative figure; 0
 * when off, NAN while every device is still learning. */
static double
s_round_noise(const det_slowgpu_state_t *st, const det_params_t *p,
              const det_slowgpu_round_t *r)
{
    double w[SG_NOISE_DEVS], v[SG_RING_MAX];
    size_t m = 0, step = r->n > SG_NOISE_DEVS ? r->n / SG_NOISE_DEVS : 1;
    if (det_params_num(p, SG_NOISE) <= 0)
        return 0;
    for (size_t i = 0; i < r->n && m < SG_NOISE_DEVS; i += step) {
        double x = s_wander(&st->devs[r->dev[i]], p, v);
        if (isfinite(x))
            w[m++] = x;
    }
    if (m == 0)
        return NAN;
    gsl_sort(w, 1, m);
    return expm1(det_util_median_skip(w, m, m));
}

/* Robust rule for device i of the round. */
static int
s_peer(det_slowgpu_state_t *st, const det_params_t *p,
       const det_slowgpu_round_t *r, size_t i,
       det_events_t *out)
{
    det_slowgpu_dev_t *d = &st->devs[r->dev[i]];
    double m = r->med[i];
    /* Judged only once the round's noise is known and the device has its
     * own history: a device that joined late is not judged on the others'
     * noise alone. */
    int learning = isnan(r->noise) || s_learning(d, p);
    double floor = det_params_num(p, SG_MAD_FLOOR) * m;
    double wander = learning ? 0 : r->noise * m;
    double scale = fmax(fmax(r->mad[i], floor), wander);
    double ratio = r->x[i] / m, z = (r->x[i] - m) / scale;
    s_lr_push(d, log(ratio), (uint32_t) det_params_num(p, SG_NOISE));
    int slow = !learning && ratio >= 1 + det_params_num(p, SG_EFFECT) &&
               z >= det_params_num(p, SG_Z);
    int n = (int) det_params_num(p, SG_N), k = (int) det_params_num(p, SG_K);
    d->slow_bits = (d->slow_bits << 1) | (uint64_t) slow;
    d->nbits += d->nbits < SG_RING_MAX;
    d->ratio = ratio;
    uint64_t mask = n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
    int count = s_popcount(d->slow_bits & mask);
    if (d->peer_active && count == 0)
        d->peer_active = 0;
    if (d->peer_active || count < k)
        return 0;
    d->peer_active = 1;
    s_verdict_t v = {
        ratio, z, scale / m,
        scale == wander ? "the devices' round-to-round noise"
        : scale == floor ? "the floor mad_floor" : "the peers' spread",
        count, (int) (d->nbits < (uint32_t) n ? d->nbits : (uint32_t) n),
    };
    return s_peer_event(st, p, r, i, &v, out);
}

/* Sets d's baseline ratio and noise from its warm-up ratios. */
static void
s_set_baseline(det_slowgpu_dev_t *d, double floor)
{
    double v[SG_RING_MAX];
    size_t n = d->nwarm;
    memcpy(v, d->warm, n * sizeof *v);
    gsl_sort(v, 1, n);
    d->base = det_util_median_skip(v, n, n);
    for (size_t j = 0; j < n; j++)
        v[j] = fabs(d->warm[j] - d->base);
    gsl_sort(v, 1, n);
    d->sigma = fmax(DET_UTIL_MAD_SCALE * det_util_median_skip(v, n, n),
                    floor * d->base);
    memcpy(v, d->warm_s, n * sizeof *v);
    gsl_sort(v, 1, n);
    d->base_s = det_util_median_skip(v, n, n);
}

/* Drift of device i's ratio to its peers against its own baseline. */
static int
s_drift(det_slowgpu_state_t *st, const det_params_t *p,
        const det_slowgpu_round_t *r, size_t i,
        det_events_t *out)
{
    det_slowgpu_dev_t *d = &st->devs[r->dev[i]];
    double h = det_params_num(p, SG_DRIFT);
    uint32_t warmup = (uint32_t) det_params_num(p, SG_WARMUP);
    if (!isfinite(d->ratio))
        return 0;
    if (d->nwarm < warmup) {        /* the baseline, drift on or off */
        d->warm_s[d->nwarm] = r->x[i];
        d->warm[d->nwarm++] = d->ratio;
        if (d->nwarm == warmup)
            s_set_baseline(d, det_params_num(p, SG_MAD_FLOOR));
        return 0;
    }
    if (h <= 0)
        return 0;
    /* The noise now: the larger of the device's own (warm-up) and the
     * peers' spread in this round, so a machine that got noisier since
     * the warm-up does not look like a drift. */
    double now = r->peers >= 2 ? r->mad[i] / r->med[i] : 0;
    if (isfinite(r->noise))         /* and the devices' round-to-round */
        now = fmax(now, r->noise);  /* noise, bursts included */
    double z = (d->ratio - d->base) / fmax(d->sigma, now);
    d->cusum = fmax(0, d->cusum + fmin(z, SG_DRIFT_CLIP) -
                           det_params_num(p, SG_SLACK));
    if (d->drift_active && d->cusum == 0)
        d->drift_active = 0;
    if (d->drift_active || d->peer_active || d->cusum <= h)
        return 0;
    d->drift_active = 1;
    char who[600], text[1200];
    s_name(who, sizeof who, d);
    snprintf(text, sizeof text, "%s has drifted slower against its peers: "
             "ratio to the peer median %.3f now against a baseline of %.3f "
             "(noise %.3g; CUSUM %.1f noise units over %.3g)", who, d->ratio,
             d->base, d->sigma, d->cusum, h);
    det_evidence_t ev[] = {
        { "ratio", d->ratio }, { "baseline", d->base },
        { "noise", d->sigma }, { "cusum", d->cusum }, { "threshold", h },
        { "value_s", r->x[i] }, { "peer_median_s", r->med[i] },
    };
    return s_emit(out, d, r->ts, DET_SEV_WARN, d->ratio - d->base, ev,
                  sizeof ev / sizeof ev[0], text);
}

static void
s_ring_push(det_slowgpu_dev_t *d, double v)
{
    d->ring[d->ring_pos] = v;
    d->ring_pos = (d->ring_pos + 1) % SG_RING_MAX;
    d->nring += d->nring < SG_RING_MAX;
}

/* Mean of the newest k values of d's ring. */
static double
s_ring_mean(const det_slowgpu_dev_t *d, uint32_t k)
{
    double sum = 0;
    for (uint32_t j = 1; j <= k; j++)
        sum += d->ring[(d->ring_pos + SG_RING_MAX - j) % SG_RING_MAX];
    return sum / k;
}

static int
s_dragon_event(const det_slowgpu_dev_t *d, const det_slowgpu_round_t *r,
               double mean,
               double mu, double sd, double z, size_t m, det_events_t *out)
{
    char who[600], text[1200];
    s_name(who, sizeof who, d);
    snprintf(text, sizeof text, "%s: Dragon's rule, z %.2f (mean of its last "
             "samples %.4g s against the pooled mean %.4g s, std %.3g s, over "
             "%zu devices)", who, z, mean, mu, sd, m);
    det_evidence_t ev[] = {
        { "mean_s", mean }, { "pooled_mean_s", mu }, { "pooled_std_s", sd },
        { "z", z }, { "devices", (double) m },
    };
    return s_emit(out, d, r->ts, DET_SEV_ACT, z, ev, sizeof ev / sizeof ev[0],
                  text);
}

/* Dragon's pooled z-score over the devices of the round. */
static int
s_dragon(det_slowgpu_state_t *st, const det_params_t *p,
         const det_slowgpu_round_t *r, det_events_t *out)
{
    uint32_t k = (uint32_t) det_params_num(p, SG_DRAGON_SAMPLES);
    double thr = det_params_num(p, SG_DRAGON_Z), sum = 0, ss = 0;
    size_t m = 0;
    for (size_t i = 0; i < r->nall; i++) {
        const det_slowgpu_dev_t *d = &st->devs[r->dev[i]];
        r->tmp[i] = d->nring >= k ? s_ring_mean(d, k) : NAN;
        if (!isnan(r->tmp[i])) {
            sum += r->tmp[i];
            m++;
        }
    }
    if (m < 2)
        return 0;
    double mu = sum / m;
    for (size_t i = 0; i < r->nall; i++)
        if (!isnan(r->tmp[i]))
            ss += (r->tmp[i] - mu) * (r->tmp[i] - mu);
    double sd = sqrt(ss / m);
    for (size_t i = 0; i < r->nall; i++) {
        det_slowgpu_dev_t *d = &st->devs[r->dev[i]];
        if (isnan(r->tmp[i]))
            continue;
        double z = sd > 0 ? (r->tmp[i] - mu) / sd : 0;
        if (z <= thr) {
            d->dragon_active = 0;
            continue;
        }
        if (d->dragon_active)
            continue;
        d->dragon_active = 1;
        int rc = s_dragon_event(d, r, r->tmp[i], mu, sd, z, m, out);
        if (rc)
            return rc;
    }
    return 0;
}

int
det_slowgpu_judge(det_slowgpu_state_t *st, const det_params_t *p,
                  det_slowgpu_round_t *r, det_events_t *out)
{
    const char *rule = det_params_str(p, SG_RULE);
    int robust = strcmp(rule, "dragon") != 0;
    int dragon = strcmp(rule, "robust") != 0;
    int rc = 0;
    for (size_t i = 0; i < r->nall; i++) {
        det_slowgpu_dev_t *d = &st->devs[r->dev[i]];
        d->last_ts = r->ts;
        d->rounds++;
        s_ring_push(d, r->x[i]);
    }
    r->noise = robust ? s_round_noise(st, p, r) : 0;
    for (size_t i = 0; robust && r->peers >= 1 && i < r->n && !rc; i++) {
        rc = s_peer(st, p, r, i, out);
        if (!rc)
            rc = s_drift(st, p, r, i, out);
    }
    if (!rc && dragon && !r->late)
        rc = s_dragon(st, p, r, out);
    return rc;
}
