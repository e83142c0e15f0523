/* det_slowgpu.c - the slowgpu detector: series to rounds, device state.
 *
 * Collectors push one figure per device per round (the round's median
 * kernel time, higher = slower), stamped with the round's timestamp, which
 * is the same for every device of a collector group.  So a round is simply
 * every sample with one timestamp, split by the "group" tag, and devices
 * are compared within their round: no clock alignment, no resampling.
 *
 * The detector is incremental: it remembers the newest round it judged and
 * asks only for newer data (plus, at the start, `window` seconds of
 * history).  A round is judged once, when it is complete: every device
 * seen in the new data has reported it, or a newer round exists.  The last
 * SG_KEEP_ROUNDS judged rounds are kept (their median and MAD), so a sample
 * that arrives after its round was judged (a device so slow that it reports
 * after the next round of the others, a node that answered late) is still
 * compared with the devices of its round, alone, as if it had been left
 * out; older samples than that, or a dead device's, are simply missing.
 * A device's first `settle` rounds (its start-up) are counted but left out
 * of every comparison, as the device judged and as anyone's peer.
 * Rules and events live in det_slowgpu_rules.c.
 */
#include "det_slowgpu.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_grow.h"

static const char *const s_rules[] = { "robust", "dragon", "both", NULL };

static const det_param_def_t s_params[SG_NPARAMS] = {
    [SG_METRIC] = { "metric", DET_PARAM_STR, 0, 0, 0, 0, "cg_dgemm_seconds",
        NULL, "per-round time of each device (higher = slower), one "
        "sample per round with the round's common timestamp", 1 },
    [SG_RULE] = { "rule", DET_PARAM_STR, 0, 0, 0, 0, "robust", s_rules,
        "robust: leave-one-out median/MAD, effect size, k of n rounds, "
        "plus drift; dragon: Dragon's pooled z-score of each device's mean "
        "over its last samples; both: each rule reports on its own" },
    [SG_EFFECT] = { "effect", DET_PARAM_NUM, 0.06, 0, 10, 0, NULL, NULL,
        "minimum slowdown against the peer median (0.06 = 6 % slower)" },
    [SG_Z] = { "z", DET_PARAM_NUM, 3.0, 0, 1e6, 0, NULL, NULL,
        "minimum robust z: (time - peer median) / max(1.4826 MAD, "
        "mad_floor x peer median, noise wander x peer median)" },
    [SG_MAD_FLOOR] = { "mad_floor", DET_PARAM_NUM, 0.01, 1e-6, 1, 0, NULL,
        NULL, "floor of the peers' scaled MAD, relative to their median "
        "(guards identical peers and 2-device jobs)" },
    [SG_K] = { "k", DET_PARAM_NUM, 4, 1, 64, 1, NULL, NULL,
        "rounds out of the device's last n that must be slow (4 of 5: a "
        "real slowdown is slow in nearly every round, a shared machine's "
        "bursts rarely last four rounds)" },
    [SG_N] = { "n", DET_PARAM_NUM, 5, 1, 64, 1, NULL, NULL,
        "persistence window in rounds" },
    [SG_DRIFT] = { "drift", DET_PARAM_NUM, 10, 0, 1e6, 0, NULL, NULL,
        "CUSUM threshold, in units of the device's own noise, on its ratio "
        "to its peers against its baseline (warn); 0 turns drift off" },
    [SG_SLACK] = { "slack", DET_PARAM_NUM, 1, 0, 100, 0, NULL, NULL,
        "CUSUM allowance per round, in units of the device's noise" },
    [SG_WARMUP] = { "warmup", DET_PARAM_NUM, 32, 2, SG_RING_MAX, 1, NULL,
        NULL, "rounds after its start-up (settle) whose median ratio and "
        "MAD set a device's baseline and noise before drift is judged" },
    [SG_DRAGON_Z] = { "dragon_z", DET_PARAM_NUM, 2.5, 0, 1e6, 0, NULL, NULL,
        "Dragon's rule: z-score threshold" },
    [SG_DRAGON_SAMPLES] = { "dragon_samples", DET_PARAM_NUM, 4, 1,
        SG_RING_MAX, 1, NULL, NULL,
        "Dragon's rule: samples averaged per device" },
    [SG_WINDOW] = { "window", DET_PARAM_NUM, 120, 1, 86400, 0, NULL, NULL,
        "seconds of history read at the start and after a gap" },
    [SG_NOISE] = { "noise", DET_PARAM_NUM, 32, 0, SG_RING_MAX, 1, NULL,
        NULL, "rounds of each device's ratio to its peers whose "
        "round-to-round change (the larger of the median and the 90th "
        "percentile absolute successive difference, as a standard "
        "deviation; the median over the group's devices) also floors the "
        "z scale, so devices that wander more than the peers' spread "
        "shows need z times that wander to act; 0 turns it off" },
    [SG_SETTLE] = { "settle", DET_PARAM_NUM, 10, 0, 1e6, 1, NULL, NULL,
        "a device's first rounds, its start-up (cold caches, clocks "
        "ramping, the job and the watcher starting beside it), that are "
        "ignored: not judged, not a peer of others, not in its noise or "
        "drift baseline" },
    [SG_LEARN] = { "learn", DET_PARAM_NUM, 20, 1, SG_RING_MAX, 1, NULL,
        NULL, "changes of its ratio to its peers, after settle, that a "
        "device must have (its own noise known) before it is judged, when "
        "noise is on; at most noise" },
};

/* ---- state ------------------------------------------------------------- */

static void *
s_create(void)
{
    det_slowgpu_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->map = det_map_new();
    st->groups = det_map_new();
    st->last_ts = INT64_MIN;
    if (!st->map || !st->groups) {
        det_map_destroy(&st->map);
        det_map_destroy(&st->groups);
        free(st);
        return NULL;
    }
    return st;
}

static void
s_free_devs(det_slowgpu_state_t *st)
{
    for (size_t i = 0; i < st->ndevs; i++)
        free(st->devs[i].key);
    st->ndevs = 0;
}

static void
s_destroy(void **state)
{
    det_slowgpu_state_t *st = *state;
    s_free_devs(st);
    free(st->devs);
    det_map_destroy(&st->map);
    det_map_destroy(&st->groups);
    det_util_scratch_free(&st->scratch);
    free(st->round.dev);
    free(st->round.x);
    free(st->round.med);
    free(st->round.mad);
    free(st->round.tmp);
    free(st->ents);
    free(st);
    *state = NULL;
}

static int
s_check(const det_params_t *p, char *why, size_t why_size)
{
    if (det_params_num(p, SG_K) > det_params_num(p, SG_N)) {
        snprintf(why, why_size, "k (%g) must not exceed n (%g)",
                 det_params_num(p, SG_K), det_params_num(p, SG_N));
        return TELEM_EINVAL;
    }
    /* The noise window holds at most `noise` changes: a larger `learn`
     * would never be reached and no device would ever be judged. */
    if (det_params_num(p, SG_NOISE) > 0 &&
        det_params_num(p, SG_LEARN) > det_params_num(p, SG_NOISE)) {
        snprintf(why, why_size, "learn (%g) must not exceed noise (%g)",
                 det_params_num(p, SG_LEARN), det_params_num(p, SG_NOISE));
        return TELEM_EINVAL;
    }
    return 0;
}

int
det_slowgpu_settled(const det_slowgpu_dev_t *d, const det_params_t *p)
{
    return (double) d->rounds >= det_params_num(p, SG_SETTLE);
}

static void
s_needs(const void *state, const det_params_t *p, int64_t now_ns,
        det_needs_t *out)
{
    const det_slowgpu_state_t *st = state;
    int64_t window = (int64_t) (det_params_num(p, SG_WINDOW) * 1e9);
    out->metrics[0] = det_params_str(p, SG_METRIC);
    out->nmetrics = 1;
    out->start_ns = now_ns - window;
    int64_t from = st->last_ts == INT64_MIN ? INT64_MIN : st->last_ts + 1;
    for (size_t i = 0; i < st->nkept; i++)      /* late samples of kept */
        if (st->kept[i].ts < from)              /* rounds are still judged */
            from = st->kept[i].ts;
    if (from != INT64_MIN && from > out->start_ns)
        out->start_ns = from;
}

/* Index of the device of series s (created if new), or -1 (no memory). */
static long
s_device(det_slowgpu_state_t *st, const det_series_t *s)
{
    const char *group = det_util_tag(s, "group");
    const char *host = det_util_tag(s, "host");
    const char *node = host ? host : s->node ? s->node : "";
    const char *device = s->device ? s->device : "";
    char key[3 * 256 + 8];
    if (!det_util_key(key, sizeof key, group, node, device))
        return -1;
    long i = det_map_get(st->map, key);
    if (i >= 0)
        return i;
    long g = det_map_get(st->groups, group ? group : "");
    if (g < 0) {
        g = st->ngroups;
        if (det_map_put(st->groups, group ? group : "", g))
            return -1;
        st->ngroups++;
    }
    if (telem_grow((void **) &st->devs, &st->capdevs, st->ndevs + 1,
                   sizeof *st->devs, 16))
        return -1;
    det_slowgpu_dev_t *d = &st->devs[st->ndevs];
    memset(d, 0, sizeof *d);
    /* One allocation: "key\0node\0device\0". */
    size_t kl = strlen(key) + 1, nl = strlen(node) + 1, dl = strlen(device) + 1;
    if (!(d->key = malloc(kl + nl + dl)) ||
        det_map_put(st->map, key, (long) st->ndevs)) {
        free(d->key);
        return -1;
    }
    memcpy(d->key, key, kl);
    d->node = memcpy(d->key + kl, node, nl);
    d->device = memcpy(d->key + kl + nl, device, dl);
    d->group = (uint32_t) g;
    d->last_ts = INT64_MIN;
    d->last_lr = NAN;
    return (long) st->ndevs++;
}

/* ---- from series to rounds --------------------------------------------- */

static int
s_push(det_slowgpu_state_t *st, int64_t ts, uint32_t dev, double v)
{
    if (telem_grow((void **) &st->ents, &st->capents, st->nents + 1,
                   sizeof *st->ents, 256))
        return TELEM_ENOMEM;
    st->ents[st->nents++] = (det_slowgpu_ent_t) { ts, st->devs[dev].group,
                                                  dev, v };
    return 0;
}

/* First index of a point newer than `after` in ts[0..n). */
static size_t
s_first_after(const int64_t *ts, size_t n, int64_t after)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Gathers every usable sample newer than the last judged round. */
static int
s_collect(det_slowgpu_state_t *st, const det_params_t *p, const det_input_t *in)
{
    const char *metric = det_params_str(p, SG_METRIC);
    int64_t oldest = in->now_ns - (int64_t) (det_params_num(p,
                                                            SG_WINDOW) * 1e9);
    st->nents = 0;
    for (size_t i = 0; i < in->nseries; i++) {
        const det_series_t *s = &in->series[i];
        if (!s->metric || strcmp(s->metric, metric) != 0 || !s->ts || !s->val ||
            s->n == 0 || s->ts[s->n - 1] < oldest)
            continue;
        long d = s_device(st, s);
        if (d < 0)
            return TELEM_ENOMEM;
        /* Everything newer than the device's own last judged round: rounds
         * still to judge, and late samples of rounds judged without it. */
        int64_t mine = st->devs[d].last_ts;
        size_t j = s_first_after(s->ts, s->n, mine > oldest - 1 ? mine
                                                                : oldest - 1);
        if (j == s->n)
            continue;
        st->devs[d].seen_run = st->run;
        for (; j < s->n; j++)
            if (isfinite(s->val[j]) && s->val[j] > 0 &&
                s_push(st, s->ts[j], (uint32_t) d, s->val[j]))
                return TELEM_ENOMEM;
    }
    return 0;
}

static int
s_ent_cmp(const void *a, const void *b)
{
    const det_slowgpu_ent_t *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return (x->dev > y->dev) - (x->dev < y->dev);
}

/* 1 if the newest timestamp is complete: every live device has it (a
 * device is live when the new data holds it or it was in the last round
 * judged; one that died stops being live after one round). */
static int
s_newest_ready(const det_slowgpu_state_t *st)
{
    size_t live = 0, at_max = 0;
    int64_t maxts = st->ents[st->nents - 1].ts;
    for (size_t i = 0; i < st->ndevs; i++)      /* new data, or in the */
        live += st->devs[i].seen_run == st->run ||  /* last round judged */
                (st->last_ts != INT64_MIN && st->devs[i].last_ts == st->last_ts);
    for (size_t i = st->nents; i > 0 && st->ents[i - 1].ts == maxts; i--)
        at_max += i == st->nents || st->ents[i].dev != st->ents[i - 1].dev ||
                  st->ents[i].group != st->ents[i - 1].group;
    return at_max >= live;
}

static int
s_round_grow(det_slowgpu_state_t *st, size_t n)
{
    if (n <= st->round_cap)
        return 0;
    det_slowgpu_round_t *r = &st->round;
    uint32_t *dev = realloc(r->dev, n * sizeof *dev);
    if (dev)
        r->dev = dev;
    double *x = realloc(r->x, n * sizeof *x);
    if (x)
        r->x = x;
    double *med = realloc(r->med, n * sizeof *med);
    if (med)
        r->med = med;
    double *mad = realloc(r->mad, n * sizeof *mad);
    if (mad)
        r->mad = mad;
    double *tmp = realloc(r->tmp, n * sizeof *tmp);
    if (tmp)
        r->tmp = tmp;
    if (!dev || !x || !med || !mad || !tmp)
        return TELEM_ENOMEM;
    st->round_cap = n;
    return 0;
}

/* Keeps the round just gathered in st->round (its median and scaled MAD
 * over all its devices) for samples that arrive after it was judged. */
static void
s_keep(det_slowgpu_state_t *st, uint32_t group)
{
    det_slowgpu_round_t *r = &st->round;
    if (r->n == 0)
        return;
    const double *sorted = st->scratch.sorted;   /* left by det_util_loo */
    double med = r->n == 1 ? r->x[0] : det_util_median_skip(sorted, r->n, r->n);
    for (size_t i = 0; i < r->n; i++)
        r->tmp[i] = fabs(r->x[i] - med);
    gsl_sort(r->tmp, 1, r->n);
    det_slowgpu_kept_t *k = &st->kept[st->kept_pos];
    *k = (det_slowgpu_kept_t) { r->ts, group, r->n, med,
                       DET_UTIL_MAD_SCALE * det_util_median_skip(r->tmp, r->n,
                                                                 r->n) };
    st->kept_pos = (st->kept_pos + 1) % SG_KEEP_ROUNDS;
    st->nkept += st->nkept < SG_KEEP_ROUNDS;
}

/* Moves the settled devices of r to its front, keeping their order;
 * returns how many there are.  A device in its start-up is neither judged
 * nor anyone's peer: a collector that has just started can be slower or
 * faster than it will be, and as a peer it would move the others' median
 * (with 3 devices, one start-up round 30 % fast makes both others look
 * 15 % slow). */
static size_t
s_settled_first(const det_slowgpu_state_t *st, const det_params_t *p,
                det_slowgpu_round_t *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->nall; i++) {
        if (!det_slowgpu_settled(&st->devs[r->dev[i]], p))
            continue;
        for (size_t j = i; j > k; j--) {            /* rotate i down to k */
            uint32_t dv = r->dev[j];
            double xv = r->x[j];
            r->dev[j] = r->dev[j - 1], r->x[j] = r->x[j - 1];
            r->dev[j - 1] = dv, r->x[j - 1] = xv;
        }
        k++;
    }
    return k;
}

/* Judges the entries [a, b) (one timestamp, one group). */
static int
s_round(det_slowgpu_state_t *st, const det_params_t *p, size_t a, size_t b,
        det_events_t *out)
{
    if (s_round_grow(st, b - a))
        return TELEM_ENOMEM;
    det_slowgpu_round_t *r = &st->round;
    r->ts = st->ents[a].ts;
    r->nall = 0;
    for (size_t i = a; i < b; i++) {
        if (r->nall && r->dev[r->nall - 1] == st->ents[i].dev)
            continue;                       /* one value per device */
        r->dev[r->nall] = st->ents[i].dev;
        r->x[r->nall++] = st->ents[i].val;
    }
    r->n = s_settled_first(st, p, r);
    if (det_util_loo(&st->scratch, r->x, r->n, r->med, r->mad))
        return TELEM_ENOMEM;
    for (size_t i = 0; i < r->n; i++)
        r->mad[i] *= DET_UTIL_MAD_SCALE;
    r->peers = r->n ? r->n - 1 : 0;
    r->late = 0;
    st->rounds++;
    s_keep(st, st->ents[a].group);
    return det_slowgpu_judge(st, p, r, out);
}

/* Judges the late samples [a, b) (one timestamp, one group, a round that
 * was judged without them) against the round as it was kept. */
static int
s_late(det_slowgpu_state_t *st, const det_params_t *p, size_t a, size_t b,
       det_events_t *out)
{
    const det_slowgpu_kept_t *k = NULL;
    for (size_t i = 0; i < st->nkept && !k; i++)
        if (st->kept[i].ts == st->ents[a].ts &&
            st->kept[i].group == st->ents[a].group)
            k = &st->kept[i];
    det_slowgpu_round_t *r = &st->round;
    for (size_t i = a; k && i < b; i++) {
        if (st->devs[st->ents[i].dev].last_ts >= k->ts)
            continue;                   /* judged (or a newer one) already */
        int settled = det_slowgpu_settled(&st->devs[st->ents[i].dev], p);
        *r = (det_slowgpu_round_t) { .ts = k->ts, .n = (size_t) settled,
                            .nall = 1, .peers = k->n, .late = 1, .dev = r->dev,
                            .x = r->x, .med = r->med, .mad = r->mad,
                            .tmp = r->tmp };
        r->dev[0] = st->ents[i].dev;
        r->x[0] = st->ents[i].val;
        r->med[0] = k->med;
        r->mad[0] = k->mad;
        int rc = det_slowgpu_judge(st, p, r, out);
        if (rc)
            return rc;
    }
    return 0;
}

/* Forgets devices that have not reported for a whole window, once they are
 * the majority (keeps memory bounded under churn). */
static int
s_prune(det_slowgpu_state_t *st, int64_t oldest)
{
    size_t stale = 0, k = 0;
    for (size_t i = 0; i < st->ndevs; i++)
        stale += st->devs[i].seen_run != st->run && st->devs[i].last_ts < oldest;
    if (st->ndevs < 64 || 2 * stale < st->ndevs)
        return 0;
    det_map_clear(st->map);
    for (size_t i = 0; i < st->ndevs; i++) {
        det_slowgpu_dev_t *d = &st->devs[i];
        if (d->seen_run != st->run && d->last_ts < oldest) {
            free(d->key);
            continue;
        }
        st->devs[k] = *d;
        if (det_map_put(st->map, st->devs[k].key, (long) k))
            return TELEM_ENOMEM;
        k++;
    }
    st->ndevs = k;
    return 0;
}

static int
s_run(void *state, const det_params_t *p, const det_input_t *in,
      det_events_t *out)
{
    det_slowgpu_state_t *st = state;
    st->run++;
    int rc = s_collect(st, p, in);
    if (rc || st->nents == 0)
        return rc;
    qsort(st->ents, st->nents, sizeof *st->ents, s_ent_cmp);
    int64_t maxts = st->ents[st->nents - 1].ts;
    int newest_ok = s_newest_ready(st);
    for (size_t a = 0, b; a < st->nents; a = b) {
        for (b = a + 1; b < st->nents && st->ents[b].ts == st->ents[a].ts &&
                        st->ents[b].group == st->ents[a].group; b++)
            ;
        if (st->ents[a].ts <= st->last_ts) {
            if ((rc = s_late(st, p, a, b, out)) != 0)
                return rc;
            continue;
        }
        if (st->ents[a].ts == maxts && !newest_ok)
            break;
        if ((rc = s_round(st, p, a, b, out)) != 0)
            return rc;
        st->last_ts = st->ents[a].ts;
    }
    int64_t window = (int64_t) (det_params_num(p, SG_WINDOW) * 1e9);
    return s_prune(st, in->now_ns - window);
}

/* ---- status ------------------------------------------------------------ */

static void
s_describe(const void *state, const det_params_t *p,
           void (*fn)(void *arg, const char *key, const char *value),
           void *arg)
{
    (void) p;
    const det_slowgpu_state_t *st = state;
    char buf[1024];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long) st->rounds);
    fn(arg, "rounds", buf);
    snprintf(buf, sizeof buf, "%zu", st->ndevs);
    fn(arg, "devices", buf);
    size_t len = 0, shown = 0, total = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->ndevs; i++) {
        const det_slowgpu_dev_t *d = &st->devs[i];
        if (!d->peer_active && !d->drift_active && !d->dragon_active)
            continue;
        total++;
        if (len + 80 + strlen(d->node) >= sizeof buf)
            continue;
        len += (size_t) snprintf(buf + len, sizeof buf - len,
                                 "%s%s/%s (%s%s%s)",
                                 shown++ ? ", " : "", d->node, d->device,
                                 d->peer_active ? "slow" : "",
                                 d->drift_active ? " drift" : "",
                                 d->dragon_active ? " dragon" : "");
    }
    if (total > shown)
        snprintf(buf + len, sizeof buf - len, " and %zu more", total - shown);
    fn(arg, "flagged", total ? buf : "none");
}

const det_vtable_t det_slowgpu = {
    .name = "slowgpu",
    .doc = "A device slower than its peers in the same round: leave-one-out "
           "median and MAD, a minimum effect size and k-of-n persistence "
           "(act); drift of its ratio to its peers against its own history "
           "(warn); or Dragon's pooled z-score (rule dragon, act).  Score: "
           "the fractional slowdown against the peer median (Dragon: z).",
    .params = s_params,
    .nparams = SG_NPARAMS,
    .create = s_create,
    .destroy = s_destroy,
    .check = s_check,
    .needs = s_needs,
    .run = s_run,
    .describe = s_describe,
};
