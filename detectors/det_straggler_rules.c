/* det_straggler_rules.c - the straggler detector's scores, persistence,
 * attribution and sentences.
 *
 * In one window, each rank's median step time m_r gives
 *   relative score   min_j m_j / m_r   (the fastest rank's median), and
 *   individual score best_r / m_r      (its own best window median so far),
 * as NVIDIA's resiliency extension defines them.  A rank is slow when its
 * relative score is below `relative`, or its individual score below
 * `individual`, also once divided by the job's median individual score,
 * while that median is not below `individual` itself (a phase that slows
 * every rank together, a checkpoint or an evaluation, moves every
 * individual score and no relative one).  A node is slow in a window
 * when one of its ranks is, and it is a straggler when it was slow in k of
 * its last n windows: one event per node, naming its slowest rank.
 *
 * Attribution before acting: the node's test kernels (the collectors'
 * per-round times, slowgpu's metric) against the other nodes', and its GPU
 * health fields.  Either off: the hardware, act (the launcher excludes the
 * node).  Both normal, or not collected: warn, naming the rank, and point
 * at data balance and I/O, since a rank that is slow on hardware that
 * times normally has more work or waits for something.  The kernels are
 * medians over the last hw_window seconds, so a node found within a few
 * seconds of slowing down (short steps) still has mostly normal kernel
 * rounds there: while a warned node stays slow, its attribution is asked
 * again in every window it is slow in, and once its kernels (or health
 * fields) are off it is reported again, as the hardware (act).  Kernels
 * count only from collectors that have run for hw_window: until then a
 * straggler's report waits, and is made at a later run (with or without a
 * new window) once they have.
 */
#include "det_straggler.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det_util.h"

static const char *const s_throttle[] = { "sw_thermal_slowdown",
    "hw_thermal_slowdown", "hw_slowdown", "hw_power_brake_slowdown",
    "sw_power_cap", NULL };

/* What decided the attribution of one node. */
typedef struct {
    double kratio;             /* its slowest device / the others (NAN) */
    double kmine, kothers;     /* the medians compared */
    size_t nmine, nothers;     /* devices on it, on the other nodes */
    int wait;                  /* kernels that do not cover hw_window yet */
    char health[160];          /* the first health field off ("" none) */
} s_attr_t;

/* Whether rank r is slow in a window whose median individual score is
 * ind_med: its relative score is below `relative`, or its individual
 * score is below `individual` both as it stands and against ind_med (not
 * in a phase, ind_med below `individual` itself).  The second bar keeps a
 * slowdown that every rank shares, but that each window's median caught a
 * little differently, from naming one rank: live, a vCPU that changed
 * speed by 1.4x slowed both ranks of a job on it, one to individual 0.71
 * and the other to 0.79 or more (a median of 0.75 or more: no phase). */
static int
s_rank_slow(const det_straggler_rank_t *r, const det_params_t *p,
            double ind_med)
{
    double ind = det_params_num(p, ST_INDIVIDUAL);
    return r->rel < det_params_num(p, ST_RELATIVE) ||
           (ind_med >= ind && r->ind < ind && r->ind < ind * ind_med);
}

/* Median of the values of s newer than `from`; NAN without any. */
static double
s_series_median(const det_series_t *s, int64_t from, double *buf)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n && n < 4096; i++)
        if (s->ts[i] >= from && isfinite(s->val[i]) && s->val[i] > 0)
            buf[n++] = s->val[i];
    return det_straggler_median(buf, n);
}

static const char *
s_node_of(const det_series_t *s)
{
    const char *h = det_util_tag(s, "host");
    return h ? h : s->node ? s->node : "";
}

/* One kernel point of another node. */
typedef struct {
    int64_t ts;
    double val;
} s_kpt_t;

static int
s_kpt_cmp(const void *x, const void *y)
{
    const s_kpt_t *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->val > b->val) - (a->val < b->val);
}

/* Turns the other nodes' points pt[0..n) into one (timestamp, median)
 * per round, in pt[0..return). */
static size_t
s_rounds(s_kpt_t *pt, size_t n)
{
    qsort(pt, n, sizeof *pt, s_kpt_cmp);
    size_t out = 0;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && pt[b].ts == pt[a].ts; b++)
            ;
        double m = (b - a) % 2 ? pt[a + (b - a) / 2].val
                               : (pt[a + (b - a) / 2 - 1].val +
                                  pt[a + (b - a) / 2].val) / 2;
        pt[out++] = (s_kpt_t) { pt[a].ts, m };
    }
    return out;
}

/* One of the node's devices against the other nodes in the same rounds:
 * the median over its rounds since `from` of its time over their median,
 * and the two medians (*mine, *others); NAN when under half of its rounds
 * pair up (collectors not on one schedule).  *recent: the same median over
 * its rounds since `recent_from` only (NAN without any).  buf holds
 * 4 x 4096 values. */
static double
s_paired(const det_series_t *s, int64_t from, int64_t recent_from,
         const s_kpt_t *r, size_t nr, double *buf, double *mine,
         double *others, double *recent)
{
    size_t n = 0, all = 0, first_recent = SIZE_MAX;
    double *x = buf + 4096, *y = buf + 8192, *z = buf + 12288;
    for (size_t i = 0, j = 0; i < s->n && n < 4096; i++) {
        if (s->ts[i] < from || !isfinite(s->val[i]) || s->val[i] <= 0)
            continue;
        all++;
        while (j < nr && r[j].ts < s->ts[i])
            j++;
        if (j == nr || r[j].ts != s->ts[i])
            continue;
        if (s->ts[i] >= recent_from && first_recent == SIZE_MAX)
            first_recent = n;
        buf[n] = s->val[i] / r[j].val;
        x[n] = s->val[i];
        y[n++] = r[j].val;
    }
    if (n == 0 || 2 * n < all)
        return NAN;
    *recent = NAN;
    if (first_recent < n) {
        memcpy(z, buf + first_recent, (n - first_recent) * sizeof *z);
        *recent = det_straggler_median(z, n - first_recent);
    }
    *mine = det_straggler_median(x, n);
    *others = det_straggler_median(y, n);
    return det_straggler_median(buf, n);
}

/* Collects the kernel points of [from, now] into a: the other nodes'
 * into pt (*npt), the node's series (indices into idx, *nidx), and the
 * unpaired medians (kmine: the slowest device's, kothers).  Only devices
 * whose collectors have run for hw_window (the series' oldest point at or
 * before `from`) count: a collector's first rounds are its start-up (cold
 * caches, clocks ramping, the job starting beside it), and a median of a
 * few rounds is noise.  a->wait is set while the node has a device that
 * has not run that long, or while other nodes have devices and none has:
 * the report waits (det_straggler_pending()). */
static void
s_kernel_points(const det_params_t *p, const det_input_t *in,
                const char *node, int64_t from, s_attr_t *a, double *buf,
                double *others, s_kpt_t *pt, size_t *npt, size_t *idx,
                size_t *nidx)
{
    const char *metric = det_params_str(p, ST_KERNELS);
    size_t young = 0;
    a->kmine = NAN;
    for (size_t i = 0; *metric && i < in->nseries; i++) {
        const det_series_t *s = &in->series[i];
        if (!s->metric || strcmp(s->metric, metric) != 0 || !s->ts || !s->val)
            continue;
        double m = s_series_median(s, from, buf);
        if (!isfinite(m))
            continue;
        int mine = strcmp(s_node_of(s), node) == 0;
        if (s->ts[0] > from) {                  /* not run hw_window yet */
            a->wait |= mine;
            young += !mine;
            continue;
        }
        if (mine) {
            idx[(*nidx)++] = i;
            if (a->nmine++ == 0 || m > a->kmine)
                a->kmine = m;
            continue;
        }
        others[a->nothers++] = m;
        for (size_t j = 0; j < s->n; j++)
            if (s->ts[j] >= from && isfinite(s->val[j]) && s->val[j] > 0)
                pt[(*npt)++] = (s_kpt_t) { s->ts[j], s->val[j] };
    }
    if (a->nothers == 0 && young > 0)
        a->wait = 1;
}

/* The node's test kernels against the other nodes'.  Compared round by
 * round where the collectors share a schedule (one timestamp a round):
 * each device's median of its time over the other nodes' median in the
 * same round, so that the machine's changes of speed, which every device
 * of a round sees alike, cancel; a device counts with the lesser of that
 * median over hw_window and over its newest third (kernels that were slow
 * a while ago and time normally now are not the reason its rank is slow
 * now), the node's slowest device for the node.  Otherwise each device's
 * median over hw_window, the slowest against the median of the others'. */
static int
s_kernels(const det_params_t *p, const det_input_t *in, const char *node,
          s_attr_t *a)
{
    int64_t span = (int64_t) (det_params_num(p, ST_HW_WINDOW) * 1e9);
    int64_t from = in->now_ns - span, recent_from = in->now_ns - span / 3;
    size_t npts = 0, nidx = 0;
    for (size_t i = 0; i < in->nseries; i++)
        npts += in->series[i].n;
    double *buf = malloc(4 * 4096 * sizeof *buf);
    double *others = malloc((in->nseries + 1) * sizeof *others);
    size_t *idx = malloc((in->nseries + 1) * sizeof *idx);
    s_kpt_t *pt = malloc((npts + 1) * sizeof *pt);
    int rc = !buf || !others || !idx || !pt ? TELEM_ENOMEM : 0;
    if (!rc) {
        npts = 0;
        s_kernel_points(p, in, node, from, a, buf, others, pt, &npts, idx,
                        &nidx);
        a->kothers = det_straggler_median(others, a->nothers);
        a->kratio = a->nmine && a->nothers ? a->kmine / a->kothers : NAN;
        size_t nr = s_rounds(pt, npts);
        double worst = NAN, wm = NAN, wo = NAN, m, o, rec;
        for (size_t i = 0; i < nidx; i++) {
            double r = s_paired(&in->series[idx[i]], from, recent_from, pt,
                                nr, buf, &m, &o, &rec);
            if (isnan(r)) {
                worst = NAN;                    /* not on one schedule */
                break;
            }
            r = fmin(r, isnan(rec) ? 1.0 : rec);
            if (isnan(worst) || r > worst)
                worst = r, wm = m, wo = o;
        }
        if (!isnan(worst))
            a->kratio = worst, a->kmine = wm, a->kothers = wo;
    }
    free(buf);
    free(others);
    free(idx);
    free(pt);
    return rc;
}

/* The first of the node's GPU health fields that is off, into a->health. */
static void
s_health(const det_params_t *p, const det_input_t *in, const char *node,
         s_attr_t *a)
{
    int64_t from = in->now_ns - (int64_t) (det_params_num(p, ST_HW_WINDOW) * 1e9);
    for (size_t i = 0; i < in->nseries && !*a->health; i++) {
        const det_series_t *s = &in->series[i];
        if (!s->metric || !s->ts || !s->val || strcmp(s_node_of(s), node))
            continue;
        const char *gpu = det_util_tag(s, "gpu");
        gpu = gpu ? gpu : "?";
        int level = strcmp(s->metric, "gpu_lost") == 0 ||
                    strcmp(s->metric, "gpu_remapped_rows_failure") == 0;
        int clocks = strcmp(s->metric, "gpu_clocks_event") == 0;
        int xid = strcmp(s->metric, "gpu_xid_total") == 0;
        const char *reason = det_util_tag(s, "reason");
        int listed = 0;
        for (size_t k = 0; clocks && reason && s_throttle[k]; k++)
            listed |= strcmp(reason, s_throttle[k]) == 0;
        double first = NAN;
        for (size_t j = 0; j < s->n && !*a->health; j++) {
            if (s->ts[j] < from || !isfinite(s->val[j]))
                continue;
            if (isnan(first))
                first = s->val[j];
            if ((level || (clocks && listed)) && s->val[j] >= 1)
                snprintf(a->health, sizeof a->health, "%s%s%s%s 1 on GPU %s",
                         s->metric, clocks ? "{reason=" : "",
                         clocks ? reason : "", clocks ? "}" : "", gpu);
            else if (xid && s->val[j] > first)
                snprintf(a->health, sizeof a->health, "gpu_xid_total{xid=%s} "
                         "%g -> %g on GPU %s", det_util_tag(s, "xid")
                         ? det_util_tag(s, "xid") : "?", first, s->val[j],
                         gpu);
        }
    }
}

/* The attribution clause of the sentence; returns 1 for the hardware. */
static int
s_attribute(const det_params_t *p, const s_attr_t *a, char *buf, size_t size)
{
    const char *metric = det_params_str(p, ST_KERNELS);
    double eff = det_params_num(p, ST_HW_EFFECT);
    int kslow = isfinite(a->kratio) && a->kratio >= 1 + eff;
    char kern[320];
    if (isfinite(a->kratio))
        snprintf(kern, sizeof kern, "test kernels %s %+.1f %% against the "
                 "other nodes' (%.3g s against %.3g s, off from %+.0f %%)",
                 metric, 100 * (a->kratio - 1), a->kmine, a->kothers,
                 100 * eff);
    else if (a->nmine)
        snprintf(kern, sizeof kern, "test kernels %s run on no other node "
                 "to compare with", metric);
    else
        snprintf(kern, sizeof kern, "no test kernels (%s) run on it",
                 *metric ? metric : "kernels off");
    if (kslow || *a->health) {
        size_t len = (size_t) snprintf(buf, size, "the hardware: ");
        if (kslow)
            len += (size_t) snprintf(buf + len, len < size ? size - len : 0,
                                     "%s%s", kern, *a->health ? "; " : "");
        if (*a->health && len < size)
            snprintf(buf + len, size - len, "GPU health %s", a->health);
        return 1;
    }
    snprintf(buf, size, "not the hardware: %s, %s", kern,
             det_params_num(p, ST_HEALTH) > 0
             ? "no GPU health field off" : "health fields not consulted");
    return 0;
}

/* The node's ranks that were slow in the window that judged it last,
 * "3, 5" (at most 8). */
static void
s_slow_ranks(const det_straggler_state_t *st, const det_params_t *p,
             uint32_t nodeix, double ind_med, char *buf, size_t size,
             size_t *count)
{
    const det_straggler_node_t *nd = &st->nodes[nodeix];
    size_t len = 0;
    *count = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->nranks; i++) {
        const det_straggler_rank_t *r = &st->ranks[i];
        if (r->nodeix != nodeix || r->mark != nd->mark ||
            !s_rank_slow(r, p, ind_med))
            continue;
        if (++*count <= 8 && len < size)
            len += (size_t) snprintf(buf + len, size - len, "%s%s",
                                     *count > 1 ? ", " : "", r->rank);
    }
    if (*count > 8 && len < size)
        snprintf(buf + len, size - len, " and %zu more", *count - 8);
}

/* Writes the event of node nodeix, a straggler in the window of its
 * pend_* fields, once its attribution's data is there (until then nothing
 * is written, and a first report stays pending); `again`: it was reported
 * as not the hardware before, and is reported only when its hardware is
 * off now. */
static int
s_report(det_straggler_state_t *st, const det_params_t *p,
         const det_input_t *in, uint32_t nodeix, int again,
         det_events_t *out)
{
    det_straggler_node_t *nd = &st->nodes[nodeix];
    const det_straggler_rank_t *r = &st->ranks[nd->worst];
    const char *section = st->secs[nd->section].name;
    double best = nd->pend_best;
    int slow_windows = nd->pend_slow;
    s_attr_t a = { .kratio = NAN };
    if (*det_params_str(p, ST_KERNELS) && s_kernels(p, in, nd->node, &a))
        return TELEM_ENOMEM;
    if (det_params_num(p, ST_HEALTH) > 0)
        s_health(p, in, nd->node, &a);
    if (a.wait && !*a.health)
        return 0;                       /* the kernels are not there yet */
    char attr[640], ranks[160], text[1400];
    int hw = s_attribute(p, &a, attr, sizeof attr);
    if (again && !hw)
        return 0;
    nd->pending = 0;
    nd->active = 1;
    nd->hw = hw;
    size_t nslow;
    s_slow_ranks(st, p, nodeix, nd->pend_ind_med, ranks, sizeof ranks,
                 &nslow);
    int n = (int) det_params_num(p, ST_N);
    char head[400];
    if (hw)
        snprintf(head, sizeof head, "node '%s' is a straggler in section "
                 "'%s' (rank%s %s)", nd->node, section, nslow > 1 ? "s" : "",
                 ranks);
    else
        snprintf(head, sizeof head, "rank %s on node '%s' is a straggler in "
                 "section '%s'%s%s%s", r->rank, nd->node, section,
                 nslow > 1 ? " (with ranks " : "", nslow > 1 ? ranks : "",
                 nslow > 1 ? ")" : "");
    snprintf(text, sizeof text, "%s: %s%s takes %.3g s a step against the "
             "fastest rank's %.3g s (relative score %.2f, individual %.2f; "
             "thresholds %.2f, %.2f) in %d of its last %d windows of %d "
             "steps, up to step %lld; %s; %s", head, hw ? "rank " : "it",
             hw ? r->rank : "", r->med, best,
             r->rel, r->ind, det_params_num(p, ST_RELATIVE),
             det_params_num(p, ST_INDIVIDUAL), slow_windows, n,
             (int) det_params_num(p, ST_STEPS), (long long) nd->pend_end, attr,
             again ? "asking to exclude the node (named before as not the "
                     "hardware: its kernels or health fields are off now)"
             : hw ? "asking to exclude the node"
                : "it is not excluded: the rank has more to do or waits "
                  "longer than the others on hardware that times normally, "
                  "so look at its share of the data (balance) or its I/O");
    det_evidence_t ev[8];
    size_t nev = 0;
    ev[nev++] = (det_evidence_t) { "median", r->med };
    ev[nev++] = (det_evidence_t) { "best_median", best };
    ev[nev++] = (det_evidence_t) { "relative", r->rel };
    ev[nev++] = (det_evidence_t) { "individual", r->ind };
    ev[nev++] = (det_evidence_t) { "windows_slow", slow_windows };
    ev[nev++] = (det_evidence_t) { "hardware", hw };
    if (isfinite(a.kratio))
        ev[nev++] = (det_evidence_t) { "kernel_ratio", a.kratio };
    const char *nodes[1] = { nd->node };
    det_event_t e = { .detector = "straggler",
                      .severity = hw ? DET_SEV_ACT : DET_SEV_WARN,
                      .ts_ns = r->last_ts, .nodes = nodes, .nnodes = 1,
                      .score = r->med / best - 1, .evidence = ev,
                      .nevidence = nev, .text = text };
    return det_events_add(out, &e);
}

/* Scores every rank of w: relative, individual; returns the median
 * individual score (below `individual`: a phase). */
static double
s_score(det_straggler_state_t *st, const det_straggler_window_t *w,
        double *best_out)
{
    double best = INFINITY;
    for (size_t i = 0; i < w->n; i++)
        if (st->ranks[w->ranks[i]].med < best)
            best = st->ranks[w->ranks[i]].med;
    for (size_t i = 0; i < w->n; i++) {
        det_straggler_rank_t *r = &st->ranks[w->ranks[i]];
        r->rel = best / r->med;
        r->ind = r->best > 0 ? r->best / r->med : 1;
        st->tmp[i] = r->ind;
        if (r->best <= 0 || r->med < r->best)
            r->best = r->med;
    }
    *best_out = best;
    return det_straggler_median(st->tmp, w->n);
}

int
det_straggler_judge(det_straggler_state_t *st, const det_params_t *p,
                    const det_input_t *in, const det_straggler_window_t *w,
                    det_events_t *out)
{
    double best;
    double ind_med = s_score(st, w, &best);
    uint64_t mark = st->secs[w->section].windows + 1;
    for (size_t i = 0; i < w->n; i++) {
        det_straggler_rank_t *r = &st->ranks[w->ranks[i]];
        det_straggler_node_t *nd = &st->nodes[r->nodeix];
        r->mark = mark;
        if (nd->mark != mark) {
            nd->mark = mark;
            nd->slow = 0;
            nd->worst = w->ranks[i];
        }
        nd->slow |= s_rank_slow(r, p, ind_med);
        if (r->med > st->ranks[nd->worst].med)
            nd->worst = w->ranks[i];
    }
    int k = (int) det_params_num(p, ST_K), n = (int) det_params_num(p, ST_N);
    uint64_t mask = n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
    for (size_t i = 0; i < st->nnodes; i++) {
        det_straggler_node_t *nd = &st->nodes[i];
        if (nd->section != w->section || nd->mark != mark)
            continue;
        nd->bits = (nd->bits << 1) | (uint64_t) nd->slow;
        nd->nbits += nd->nbits < 64;
        int cnt = __builtin_popcountll(nd->bits & mask);
        int rc = 0;
        if (cnt >= k && (!nd->active || (!nd->hw && nd->slow))) {
            nd->pending = !nd->active;          /* a first report */
            nd->pend_end = w->end;
            nd->pend_best = best;
            nd->pend_ind_med = ind_med;
            nd->pend_slow = cnt;
            /* again: its hardware off now? */
            rc = s_report(st, p, in, (uint32_t) i, nd->active, out);
        } else if (!nd->active) {
            nd->pending = 0;                    /* no longer a straggler */
        } else if ((nd->bits & mask) == 0 && nd->nbits >= (uint32_t) n) {
            nd->active = 0;                     /* n clean windows */
            nd->hw = 0;
        }
        if (rc)
            return rc;
    }
    return 0;
}

int
det_straggler_pending(det_straggler_state_t *st, const det_params_t *p,
                      const det_input_t *in, det_events_t *out)
{
    for (size_t i = 0; i < st->nnodes; i++) {
        if (!st->nodes[i].pending)
            continue;
        int rc = s_report(st, p, in, (uint32_t) i, 0, out);
        if (rc)
            return rc;
    }
    return 0;
}
