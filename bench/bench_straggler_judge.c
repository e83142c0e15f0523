/* bench_straggler_judge.c - bench_straggler's judging: telem's straggler
 * detector, NVRx's rule and Dragon's rule on one recording.
 *
 * telem: the real detector through its vtable, fed as telem_watch feeds
 * it: every tick (-T, telem_watch's default 1 s) the series its needs
 * name (telem_section_seconds and telem_section_step of every rank,
 * tagged host, pid, rank and section; cg_dgemm_seconds of every device,
 * tagged host, gpu and group) over its window, each point from when it
 * would have reached telemd (a section end after libtelem's 100 ms sender
 * tick; a collector round at the round's end).  Judged at its defaults
 * and with relative=0.93, the setting docs/detectors.md gives for finding
 * ranks 10 % slower.  Its acts (the hardware) and warns (not the
 * hardware) are counted apart.
 *
 * NVRx's rule (nvidia-resiliency-ext's straggler package): once per report
 * interval, each rank's median section time; relative score = the fastest
 * rank's median over the rank's; a rank is a straggler when it is below
 * the threshold (identify_stragglers' default 0.75).  Its interval here is
 * one of telem's windows, 8 steps, not overlapping; no persistence, no
 * attribution.  Also shown at 0.93, beside telem's row at 0.93.
 *
 * Dragon's rule (its SlowGPUDetector's z-score, applied to step times):
 * each rank's mean over its last 4 steps, z-scored against the mean and
 * the population standard deviation of those means pooled over every
 * rank; z > 2.5 is a straggler.  It is slowgpu's rule=dragon, run here
 * with every step a round and every rank a device (settle 0: Dragon has
 * no start-up rule).
 *
 * A detection is a first event naming a rank (telem: a node and its
 * slowest rank; acting again only after it cleared).  NVRx and Dragon
 * have no attribution: a detection is a straggler to act on.  Their
 * detections are taken at the first watcher tick after the data that
 * decided them reached telemd, as telem's are.
 */
#include "bench_straggler.h"
#include "bench_common.h"
#include "bench_det_params.h"
#include "bench_slots.h"
#include "det.h"
#include "telem_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_IN_STEPS 20          /* the target: named within 20 steps */
#define S_IN_SECS 30.0         /* or 30 s, whichever comes first */
#define S_NVRX_STEPS 8

/* One detection: when (a watcher tick), which node and rank (device
 * index; -1: none named), and whether it acts. */
typedef struct {
    int64_t t;
    int node, dev, act;
} s_det_t;

typedef struct {
    const char *name;
    int telem;                 /* acts and warns told apart */
    s_det_t *v;
    size_t n, cap;
} s_row_t;

static void
s_add(s_row_t *r, int64_t t, int node, int dev, int act)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->v = realloc(r->v, r->cap * sizeof *r->v);
        if (!r->v)
            bench_die("bench_straggler", "out of memory");
    }
    r->v[r->n++] = (s_det_t) { t, node, dev, act };
}

#define SECS(rec, d, k) ((rec)->secs[(size_t) (d) * (size_t) (rec)->nsteps \
                                     + (size_t) (k)])
#define TS(rec, d, k) ((rec)->ts[(size_t) (d) * (size_t) (rec)->nsteps \
                                 + (size_t) (k)])

static int64_t
s_pns(const bs_rec_t *rec)
{
    return llround(rec->period * 1e9);
}

/* The first watcher tick at or after t. */
static int64_t
s_tick_after(const bs_rec_t *rec, const bs_judge_opts_t *jo, int64_t t)
{
    int64_t tk = llround(jo->tick * 1e9), since = t - rec->epoch;
    return rec->epoch + (since <= 0 ? 0 : (since + tk - 1) / tk) * tk;
}

static int
s_node_index(const bs_rec_t *rec, const char *node)
{
    for (int d = 0; node && d < rec->ndev; d += rec->per_node)
        if (strcmp(rec->node[d], node) == 0)
            return d / rec->per_node;
    return -1;
}

static int
s_rank_index(const bs_rec_t *rec, const char *rank)
{
    for (int d = 0; d < rec->ndev; d++)
        if (strcmp(rec->rank[d], rank) == 0)
            return d;
    return -1;
}


/* ---- telem's straggler, as telem_watch feeds it ------------------------ */

/* One device's points as the watcher would get them. */
typedef struct {
    int64_t *ts, *kts;
    double *secs, *step, *kval;
    size_t n, nk;
    det_tag_t tags[4], ktags[3];
} s_pts_t;

static void
s_points(const bs_rec_t *rec, int d, s_pts_t *p)
{
    size_t ns = (size_t) rec->nsteps, nr = (size_t) rec->nrounds;
    p->ts = malloc(ns * sizeof *p->ts);
    p->secs = malloc(ns * sizeof *p->secs);
    p->step = malloc(ns * sizeof *p->step);
    p->kts = malloc(nr * sizeof *p->kts);
    p->kval = malloc(nr * sizeof *p->kval);
    if (!p->ts || !p->secs || !p->step || !p->kts || !p->kval)
        bench_die("bench_straggler", "out of memory");
    p->n = p->nk = 0;
    for (int k = 0; k < rec->nsteps; k++)
        if (TS(rec, d, k) && isfinite(SECS(rec, d, k)) &&
            (!p->n || TS(rec, d, k) > p->ts[p->n - 1])) {
            p->ts[p->n] = TS(rec, d, k);
            p->secs[p->n] = SECS(rec, d, k);
            p->step[p->n++] = k;
        }
    int64_t cpns = llround(rec->cperiod * 1e9);
    for (int j = 0; j < rec->nrounds; j++) {
        double v = rec->kern[(size_t) d * nr + (size_t) j];
        if (isfinite(v)) {
            p->kts[p->nk] = rec->epoch + j * cpns;
            p->kval[p->nk++] = v;
        }
    }
    p->tags[0] = (det_tag_t) { "host", rec->node[d] };
    p->tags[1] = (det_tag_t) { "pid", rec->pid[d] };
    p->tags[2] = (det_tag_t) { "rank", rec->rank[d] };
    p->tags[3] = (det_tag_t) { "section", "step" };
    p->ktags[0] = (det_tag_t) { "gpu", rec->gpu[d] };
    p->ktags[1] = (det_tag_t) { "group", "bench" };
    p->ktags[2] = (det_tag_t) { "host", rec->node[d] };
}

static void
s_points_free(s_pts_t *p)
{
    free(p->ts), free(p->secs), free(p->step), free(p->kts), free(p->kval);
}

/* First index of ts[0..n) at or after t. */
static size_t
s_lower(const int64_t *ts, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The rank an event names: the target when it is its slowest rank ("rank
 * R on node ..." or "...: rank R takes") or among the node's slow ranks
 * it lists ("(with ranks 6, 7)", "(ranks 6, 7)"); else its slowest. */
static int
s_event_rank(const bs_rec_t *rec, const char *text)
{
    char r[16];
    const char *t = rec->rank[rec->ndev - 1];
    const char *list = strstr(text, "ranks ");
    const char *end = list ? strchr(list, ')') : NULL;
    for (const char *q = list ? list + 6 : NULL; q && q < end;) {
        size_t n = strcspn(q, ",)");
        if (n == strlen(t) && strncmp(q, t, n) == 0)
            return rec->ndev - 1;
        q += n;
        q += strspn(q, ", ");
    }
    const char *p = strncmp(text, "rank ", 5) == 0 ? text : strstr(text,
                                                                   ": rank ");
    if (!p || sscanf(p + (p == text ? 5 : 7), "%15s", r) != 1)
        return -1;
    return s_rank_index(rec, r);
}

static void
s_telem(const bs_rec_t *rec, const bs_judge_opts_t *jo, const char *params,
        s_row_t *row)
{
    int err = 0;
    det_t *d = det_new(det_find("straggler"), NULL, &err);
    if (!d)
        bench_die("straggler", "cannot create");
    bench_det_params(d, params, "bench_straggler", 0);
    bench_det_params(d, jo->params, "bench_straggler", 1);
    s_pts_t pts[BS_MAXDEV];
    det_series_t s[3 * BS_MAXDEV];
    for (int i = 0; i < rec->ndev; i++)
        s_points(rec, i, &pts[i]);
    det_events_t *evs = det_events_new();
    int64_t tk = llround(jo->tick * 1e9), lag = llround(jo->lag * 1e9);
    int64_t cpns = llround(rec->cperiod * 1e9);
    int64_t end = rec->epoch + (rec->nsteps + 1) * s_pns(rec) + 2 * tk;
    for (int64_t now = rec->epoch + tk; now <= end; now += tk) {
        det_needs_t nd;
        det_needs(d, now, &nd);
        size_t n = 0;
        for (int i = 0; i < rec->ndev; i++) {
            const s_pts_t *p = &pts[i];
            size_t lo = s_lower(p->ts, p->n, nd.start_ns);
            size_t hi = s_lower(p->ts, p->n, now - lag + 1);
            s[n++] = (det_series_t) { rec->node[i], NULL,
                                      "telem_section_seconds", p->tags, 4,
                                      p->ts + lo, p->secs + lo, hi - lo };
            s[n++] = (det_series_t) { rec->node[i], NULL,
                                      "telem_section_step", p->tags, 4,
                                      p->ts + lo, p->step + lo, hi - lo };
            lo = s_lower(p->kts, p->nk, nd.start_ns);
            hi = s_lower(p->kts, p->nk, now - cpns + 1);
            s[n++] = (det_series_t) { rec->node[i], rec->gpu[i],
                                      "cg_dgemm_seconds", p->ktags, 3,
                                      p->kts + lo, p->kval + lo, hi - lo };
        }
        det_input_t in = { .now_ns = now, .series = s, .nseries = n };
        det_events_clear(evs);
        if (det_run(d, &in, evs))
            bench_die("straggler", "run failed");
        for (size_t e = 0; e < det_events_count(evs); e++) {
            const det_event_t *ev = det_events_get(evs, e);
            if (ev->nnodes == 0)
                continue;               /* "no section recorded" */
            s_add(row, now, s_node_index(rec, ev->nodes[0]),
                  s_event_rank(rec, ev->text), ev->severity == DET_SEV_ACT);
        }
    }
    det_events_destroy(&evs);
    det_destroy(&d);
    for (int i = 0; i < rec->ndev; i++)
        s_points_free(&pts[i]);
}

/* ---- NVRx's and Dragon's rules ----------------------------------------- */

static void
s_nvrx(const bs_rec_t *rec, const bs_judge_opts_t *jo, double thr,
       s_row_t *row)
{
    int prev[BS_MAXDEV] = { 0 };
    double x[S_NVRX_STEPS], med[BS_MAXDEV];
    int64_t lag = llround(jo->lag * 1e9);
    for (int w0 = 0; w0 + S_NVRX_STEPS <= rec->nsteps; w0 += S_NVRX_STEPS) {
        double best = INFINITY;
        int64_t done = 0;
        for (int d = 0; d < rec->ndev; d++) {
            size_t n = 0;
            for (int k = w0; k < w0 + S_NVRX_STEPS; k++)
                if (isfinite(SECS(rec, d, k))) {
                    x[n++] = SECS(rec, d, k);
                    done = TS(rec, d, k) > done ? TS(rec, d, k) : done;
                }
            med[d] = n >= (S_NVRX_STEPS + 1) / 2 ? bench_median_d(x, n) : NAN;
            if (med[d] < best)
                best = med[d];
        }
        for (int d = 0; d < rec->ndev; d++) {
            int slow = isfinite(med[d]) && best / med[d] < thr;
            if (slow && !prev[d])
                s_add(row, s_tick_after(rec, jo, done + lag),
                      d / rec->per_node, d, 1);
            prev[d] = slow;
        }
    }
}

static void
s_dragon(const bs_rec_t *rec, const bs_judge_opts_t *jo, s_row_t *row)
{
    int err = 0;
    det_t *d = det_new(det_find("slowgpu"), NULL, &err);
    if (!d)
        bench_die("slowgpu", "cannot create");
    bench_det_params(d, "rule=dragon,metric=telem_section_seconds,settle=0",
                     "bench_straggler", 1);
    det_events_t *evs = det_events_new();
    det_series_t s[BS_MAXDEV];
    det_tag_t tags[BS_MAXDEV][1];
    int64_t ts = INT64_C(1700000000000000000), lag = llround(jo->lag * 1e9);
    for (int k = 0; k < rec->nsteps; k++, ts += TELEM_NS_PER_SEC) {
        size_t n = 0;
        int64_t done = 0;
        for (int i = 0; i < rec->ndev; i++) {
            if (!isfinite(SECS(rec, i, k)))
                continue;
            done = TS(rec, i, k) > done ? TS(rec, i, k) : done;
            tags[i][0] = (det_tag_t) { "host", rec->node[i] };
            s[n++] = (det_series_t) { rec->node[i], rec->rank[i],
                                      "telem_section_seconds", tags[i], 1,
                                      &ts, &SECS(rec, i, k), 1 };
        }
        det_input_t in = { .now_ns = ts + 1, .series = s, .nseries = n };
        det_events_clear(evs);
        if (n && det_run(d, &in, evs))
            bench_die("slowgpu", "run failed");
        for (size_t e = 0; e < det_events_count(evs); e++) {
            const det_event_t *ev = det_events_get(evs, e);
            if (ev->ndevices == 0 || ev->severity != DET_SEV_ACT)
                continue;
            s_add(row, s_tick_after(rec, jo, done + lag),
                  s_node_index(rec, ev->devices[0].node),
                  s_rank_index(rec, ev->devices[0].device), 1);
        }
    }
    det_events_destroy(&evs);
    det_destroy(&d);
}

/* ---- scoring ----------------------------------------------------------- */

/* Whether step k of the target is clean: in no segment, nor in the
 * `guard` steps after one. */
static int
s_clean_step(const bs_rec_t *rec, const bs_judge_opts_t *jo, int k)
{
    for (int i = 0; i < rec->nseg; i++)
        if (k >= rec->seg[i].start &&
            k < rec->seg[i].start + rec->seg[i].len + jo->guard)
            return 0;
    return 1;
}

/* The first detection naming the target in segment i (-1: none); *other
 * counts detections of the target's node naming another rank there. */
static long
s_first(const bs_rec_t *rec, const bs_judge_opts_t *jo, const s_row_t *r,
        int i, int *other)
{
    int t = rec->ndev - 1, tn = t / rec->per_node;
    int64_t pns = s_pns(rec), a = rec->epoch + rec->seg[i].start * pns;
    int64_t b = a + (rec->seg[i].len + jo->guard) * pns;
    long first = -1;
    for (size_t e = 0; e < r->n; e++) {
        if (r->v[e].t < a || r->v[e].t >= b || r->v[e].node != tn)
            continue;
        if (r->v[e].dev != t)
            ++*other;
        else if (first < 0)
            first = (long) e;
    }
    return first;
}

/* The first act on the target's node in segment i (-1: none). */
static long
s_first_act(const bs_rec_t *rec, const bs_judge_opts_t *jo,
            const s_row_t *r, int i)
{
    int tn = (rec->ndev - 1) / rec->per_node;
    int64_t pns = s_pns(rec), a = rec->epoch + rec->seg[i].start * pns;
    int64_t b = a + (rec->seg[i].len + jo->guard) * pns;
    for (size_t e = 0; e < r->n; e++)
        if (r->v[e].t >= a && r->v[e].t < b && r->v[e].node == tn &&
            r->v[e].act)
            return (long) e;
    return -1;
}

typedef struct {
    int segs, named, intime, other, acts;
    double steps[BS_MAXSEG], secs[BS_MAXSEG], act_secs[BS_MAXSEG];
} s_cls_t;

/* "median / max" of v[0..n) (reordered), or "-". */
static void
s_medmax(char *buf, size_t size, double *v, int n, const char *fmt)
{
    if (n == 0) {
        snprintf(buf, size, "-");
        return;
    }
    bench_sort_d(v, (size_t) n);
    char f[32];
    snprintf(f, sizeof f, "%s / %s", fmt, fmt);
    snprintf(buf, size, f, bench_median_d(v, (size_t) n), v[n - 1]);
}

static void
s_class_line(const char *name, const char *cls, s_cls_t *c, int telem)
{
    char st[48], se[48], ac[48] = "-", as[40];
    s_medmax(st, sizeof st, c->steps, c->named, "%.0f");
    s_medmax(se, sizeof se, c->secs, c->named, "%.1f");
    s_medmax(as, sizeof as, c->act_secs, c->acts, "%.1f");
    if (telem)
        snprintf(ac, sizeof ac, "%d (%s s)", c->acts, as);
    printf("  %-22s %-6s %4d  %5d  %7d  %5d  %-13s %-13s %s\n", name, cls,
           c->segs, c->named, c->intime, c->other, st, se, ac);
}

/* Load segments by class; returns the class table of row r. */
static void
s_loads(const bs_rec_t *rec, const bs_judge_opts_t *jo, const s_row_t *r,
        s_cls_t cls[BENCH_SLOTS_NBINS])
{
    int64_t pns = s_pns(rec);
    double limit = fmin(S_IN_STEPS * rec->period, S_IN_SECS);
    memset(cls, 0, BENCH_SLOTS_NBINS * sizeof *cls);
    for (int i = 0; i < rec->nseg; i++) {
        int b = bench_slots_bin(rec->seg[i].slowdown);
        if (rec->seg[i].kind != BS_LOAD || b < 0)
            continue;
        s_cls_t *c = &cls[b];
        c->segs++;
        long e = s_first(rec, jo, r, i, &c->other);
        if (e < 0)
            continue;
        int64_t a = rec->epoch + rec->seg[i].start * pns;
        double secs = (double) (r->v[e].t - a) / 1e9;
        c->steps[c->named] = floor(secs / rec->period);
        c->secs[c->named++] = secs;
        c->intime += secs <= limit + 1e-9;
        long f = s_first_act(rec, jo, r, i);
        if (f >= 0)
            c->act_secs[c->acts++] = (double) (r->v[f].t - a) / 1e9;
    }
}

typedef struct {
    long clean;                /* clean rank-steps */
    int acts, warns;           /* false detections */
    int imb_segs[8], imb_named[8], imb_hw[8];
    double imb_level[8];
    int nimb;
} s_false_t;

static void
s_false(const bs_rec_t *rec, const bs_judge_opts_t *jo, const s_row_t *r,
        s_false_t *f)
{
    int t = rec->ndev - 1, tn = t / rec->per_node;
    int64_t pns = s_pns(rec);
    memset(f, 0, sizeof *f);
    for (int d = 0; d < rec->ndev; d++)
        for (int k = 0; k < rec->nsteps; k++)
            f->clean += isfinite(SECS(rec, d, k)) &&
                        (d != t || s_clean_step(rec, jo, k));
    for (size_t e = 0; e < r->n; e++) {
        int64_t k = (r->v[e].t - rec->epoch) / pns;
        int clean = k >= rec->nsteps || s_clean_step(rec, jo, (int) k);
        if (r->v[e].node != tn || clean) {
            f->acts += r->v[e].act;
            f->warns += !r->v[e].act;
        }
    }
    for (int i = 0; i < rec->nseg; i++) {
        if (rec->seg[i].kind != BS_IMBALANCE)
            continue;
        int c = 0, other = 0;
        while (c < f->nimb && f->imb_level[c] != rec->seg[i].level)
            c++;
        if (c == f->nimb && f->nimb < 8)
            f->imb_level[f->nimb++] = rec->seg[i].level;
        if (c == 8)
            continue;
        long e = s_first(rec, jo, r, i, &other);
        f->imb_segs[c]++;
        f->imb_named[c] += e >= 0;
        f->imb_hw[c] += s_first_act(rec, jo, r, i) >= 0;
    }
}

static void
s_false_line(const s_row_t *r, const s_false_t *f)
{
    char cnt[64], rate[64], imb[256] = "";
    double per = f->clean ? 1e4 / (double) f->clean : NAN;
    if (r->telem) {
        snprintf(cnt, sizeof cnt, "%d acts, %d warns", f->acts, f->warns);
        snprintf(rate, sizeof rate, "%.2f / %.2f", f->acts * per,
                 f->warns * per);
    } else {
        snprintf(cnt, sizeof cnt, "%d", f->acts + f->warns);
        snprintf(rate, sizeof rate, "%.2f", (f->acts + f->warns) * per);
    }
    size_t len = 0;
    for (int c = 0; c < f->nimb && len < sizeof imb; c++)
        len += (size_t) snprintf(imb + len, sizeof imb - len,
                                 "%sx%.2f: %d/%d named, %d %s", c ? "; " : "",
                                 f->imb_level[c], f->imb_named[c],
                                 f->imb_segs[c], r->telem ? f->imb_hw[c]
                                 : f->imb_named[c], r->telem ? "hardware"
                                 : "to act on");
    printf("  %-22s %8ld  %-18s %-15s %s\n", r->name, f->clean, cnt, rate,
           imb);
}

/* ---- the report -------------------------------------------------------- */

/* Steps missing or longer than their slot, collector rounds missing: a
 * recording where work the benchmark did not start took the core (other
 * real-time processes, a throttled real-time budget) does not describe
 * the detectors. */
static int
s_quality(const bs_rec_t *rec)
{
    double slot = rec->period / (2 * rec->ndev);
    long over = 0, miss = 0, rmiss = 0;
    size_t ns = (size_t) rec->ndev * (size_t) rec->nsteps;
    size_t nr = (size_t) rec->ndev * (size_t) rec->nrounds;
    for (size_t i = 0; i < ns; i++) {
        miss += !isfinite(rec->secs[i]);
        over += isfinite(rec->secs[i]) && rec->secs[i] > slot;
    }
    for (size_t i = 0; i < nr; i++)
        rmiss += !isfinite(rec->kern[i]);
    double po = 100.0 * (double) over / (double) ns;
    double pm = 100.0 * (double) miss / (double) ns;
    double pr = 100.0 * (double) rmiss / (double) nr;
    printf("  recording: %.2f %% of the rank-steps longer than their slot "
           "(%.3g ms), %.2f %% missing; %.2f %% of the collector rounds "
           "missing\n", po, slot * 1e3, pm, pr);
    int bad = po > 2 || pm > 1 || pr > 5;
    if (bad)
        printf("  SKIPPED: this recording is not valid: work this benchmark "
               "did not start took the core (ranks overran their slots or "
               "rounds were lost); its figures do not describe the "
               "detectors (tables below, no FIGURE lines)\n");
    return !bad;
}

/* The relative scores of clean ranks (NVRx's windows of the clean
 * stretch): how far below 1 the machine's own noise puts them. */
static void
s_score_noise(const bs_rec_t *rec)
{
    size_t cap = (size_t) rec->ndev * (size_t) (rec->clean / S_NVRX_STEPS +
                                                1), n = 0;
    double *r = malloc(cap * sizeof *r), x[S_NVRX_STEPS], med[BS_MAXDEV];
    if (!r)
        bench_die("bench_straggler", "out of memory");
    for (int w0 = 0; w0 + S_NVRX_STEPS <= rec->clean; w0 += S_NVRX_STEPS) {
        double best = INFINITY;
        for (int d = 0; d < rec->ndev; d++) {
            size_t m = 0;
            for (int k = w0; k < w0 + S_NVRX_STEPS; k++)
                if (isfinite(SECS(rec, d, k)))
                    x[m++] = SECS(rec, d, k);
            med[d] = m ? bench_median_d(x, m) : NAN;
            best = med[d] < best ? med[d] : best;
        }
        for (int d = 0; d < rec->ndev && n < cap; d++)
            if (isfinite(med[d]))
                r[n++] = best / med[d];
    }
    if (n) {
        size_t b93 = 0, b75 = 0;
        for (size_t i = 0; i < n; i++)
            b93 += r[i] < 0.93, b75 += r[i] < 0.75;
        bench_sort_d(r, n);
        printf("  relative scores of the clean stretch's ranks (%d-step "
               "windows, %zu rank-windows): p1 %.3f p5 %.3f p10 %.3f p50 "
               "%.3f; below 0.93 in %.1f %%, below 0.75 in %.1f %%\n",
               S_NVRX_STEPS, n, r[n / 100], r[n / 20], r[n / 10], r[n / 2],
               100.0 * (double) b93 / (double) n,
               100.0 * (double) b75 / (double) n);
    }
    free(r);
}

static int
s_measure(bs_rec_t *rec)
{
    int rpr = (int) llround(rec->cperiod / rec->period);
    printf("segments (telem_load --duty, or the target's work factor) and "
           "the slowdown they caused, target / median of the others, of "
           "the rank's steps (of the device's kernels):\n ");
    for (int i = 0; i < rec->nseg; i++) {
        bs_seg_t *sg = &rec->seg[i];
        sg->slowdown = bench_slots_slowdown(rec->secs, rec->ndev, rec->nsteps,
                                            sg->start + 1,
                                            sg->start + sg->len);
        sg->kernel = bench_slots_slowdown(rec->kern, rec->ndev, rec->nrounds,
                                          sg->start / rpr + 1,
                                          (sg->start + sg->len) / rpr);
        printf(" %s%g:%.3f(%.3f)", sg->kind == BS_LOAD ? "duty " : "work x",
               sg->level, sg->slowdown, sg->kernel);
    }
    printf("\n");
    int ok = s_quality(rec);
    printf("  clean stretch: steps %.3f, kernels %.3f\n",
           bench_slots_slowdown(rec->secs, rec->ndev, rec->nsteps, 0,
                                rec->clean),
           bench_slots_slowdown(rec->kern, rec->ndev, rec->nrounds, 0,
                                rec->clean / rpr));
    bench_slots_noise(rec->secs, rec->ndev, rec->nsteps, 0, rec->clean,
                      "rank", "step");
    bench_slots_noise(rec->kern, rec->ndev, rec->nrounds, 0, rec->clean / rpr,
                      "device", "round");
    s_score_noise(rec);
    return ok;
}

/* FIGURE lines of telem row r, its peers (NVRx 0.75, Dragon) beside. */
static void
s_figures(const bs_rec_t *rec, const s_row_t *r, const s_cls_t *c10,
          const s_false_t *f, const s_cls_t *n10, const s_false_t *nf,
          const s_cls_t *d10, const s_false_t *df)
{
    char name[160], peer[160], meas[96];
    double per = f->clean ? 1e4 / (double) f->clean : NAN;
    snprintf(name, sizeof name, "straggler (%s): 10 %% slower rank named "
             "within 20 steps or 30 s", r->name + 6);
    snprintf(peer, sizeof peer, "NVRx 0.75 %d/%d, Dragon %d/%d",
             n10->intime, n10->segs, d10->intime, d10->segs);
    snprintf(meas, sizeof meas, "%d/%d segments", c10->intime, c10->segs);
    bench_figure(name, "every segment", peer, NULL,
                 c10->segs > 0 && c10->intime == c10->segs, "%s", meas);
    snprintf(name, sizeof name, "straggler (%s): false acts per 10,000 "
             "clean rank-steps", r->name + 6);
    snprintf(peer, sizeof peer, "NVRx 0.75 %.2f, Dragon %.2f",
             (nf->acts + nf->warns) * 1e4 / (double) nf->clean,
             (df->acts + df->warns) * 1e4 / (double) df->clean);
    bench_figure(name, "0", peer, NULL, f->acts == 0, "%.2f (%d in %ld)",
                 f->acts * per, f->acts, f->clean);
    snprintf(name, sizeof name, "straggler (%s): false warns per 10,000 "
             "clean rank-steps", r->name + 6);
    bench_figure(name, NULL, NULL, NULL, -1, "%.2f (%d)", f->warns * per,
                 f->warns);
    int segs = 0, hw = 0, named = 0, nn = 0, dn = 0;
    for (int i = 0; i < f->nimb; i++) {
        segs += f->imb_segs[i], hw += f->imb_hw[i];
        named += f->imb_named[i];
        nn += nf->imb_named[i], dn += df->imb_named[i];
    }
    snprintf(name, sizeof name, "straggler (%s): data imbalance called the "
             "hardware", r->name + 6);
    snprintf(peer, sizeof peer, "acted on: NVRx 0.75 %d/%d, Dragon %d/%d",
             nn, segs, dn, segs);
    bench_figure(name, "never", peer, NULL, hw == 0, "%d/%d segments (%d "
                 "named, warned)", hw, segs, named);
    (void) rec;
}

int
bs_judge(bs_rec_t *rec, const bs_judge_opts_t *jo)
{
    int ok = s_measure(rec);
    printf("  section begin + end in the ranks (median over ranks): p50 %.0f "
           "ns, p99 %.0f ns; section ends refused: %lld\n\n", rec->cost_p50,
           rec->cost_p99, (long long) rec->dropped);
    s_row_t rows[] = { { .name = "telem defaults", .telem = 1 },
                       { .name = "telem relative=0.93", .telem = 1 },
                       { .name = "NVRx 0.75" }, { .name = "NVRx 0.93" },
                       { .name = "Dragon z 2.5" } };
    enum { R_TD, R_T93, R_N75, R_N93, R_DR, R_N };
    s_telem(rec, jo, "", &rows[R_TD]);
    s_telem(rec, jo, "relative=0.93", &rows[R_T93]);
    s_nvrx(rec, jo, 0.75, &rows[R_N75]);
    s_nvrx(rec, jo, 0.93, &rows[R_N93]);
    s_dragon(rec, jo, &rows[R_DR]);
    s_cls_t cls[R_N][BENCH_SLOTS_NBINS];
    s_false_t fl[R_N];
    printf("load segments by the slowdown they caused: named (the first "
           "detection naming the target rank, from the load's start to %d "
           "steps after its end), within %d steps or %.0f s, whichever comes "
           "first; detections of its node naming another rank; steps and "
           "seconds from the load's start to the watcher tick (%.3g s) that "
           "named it, median / max; telem: segments in which it acted on "
           "the node (the hardware), and seconds to that act, median / "
           "max\n", jo->guard, S_IN_STEPS, S_IN_SECS, jo->tick);
    printf("  %-22s %-6s %4s  %5s  %7s  %5s  %-13s %-13s %s\n", "detector",
           "class", "segs", "named", "in time", "other", "steps", "seconds",
           "acts");
    for (int r = 0; r < R_N; r++) {
        s_loads(rec, jo, &rows[r], cls[r]);
        for (int b = 0; b < BENCH_SLOTS_NBINS; b++)
            if (cls[r][b].segs)
                s_class_line(rows[r].name, bench_slots_bins[b].name,
                             &cls[r][b], rows[r].telem);
    }
    printf("\nfalse detections (another node, or the target in a clean "
           "step: not in a segment nor in the %d steps after one) per clean "
           "rank-steps; imbalance segments: named, and called the hardware "
           "(telem) or a straggler to act on (no attribution)\n", jo->guard);
    printf("  %-22s %8s  %-18s %-15s %s\n", "detector", "clean", "false",
           "per 10,000", "imbalance");
    for (int r = 0; r < R_N; r++) {
        s_false(rec, jo, &rows[r], &fl[r]);
        s_false_line(&rows[r], &fl[r]);
    }
    for (int r = R_TD; r <= R_T93 && ok; r++)
        s_figures(rec, &rows[r], &cls[r][1], &fl[r], &cls[R_N75][1],
                  &fl[R_N75], &cls[R_DR][1], &fl[R_DR]);
    size_t n = 0;
    double *x = malloc((size_t) rec->ndev * (size_t) rec->clean * sizeof *x);
    if (!x)
        bench_die("bench_straggler", "out of memory");
    for (int d = 0; d < rec->ndev; d++)
        for (int k = 0; k < rec->clean && k < rec->nsteps; k++)
            if (isfinite(SECS(rec, d, k)))
                x[n++] = SECS(rec, d, k);
    double med = n ? bench_median_d(x, n) : NAN;
    free(x);
    char peer[64], ratio[32];
    snprintf(peer, sizeof peer, "step %.3g ms", med * 1e3);
    snprintf(ratio, sizeof ratio, "%.1e of a step", rec->cost_p50 / 1e9 / med);
    if (ok)
        bench_figure("section begin + end in a rank between steps, p50 "
                     "(bench_straggler)", "<= 100 ns", peer, ratio,
                     rec->cost_p50 <= 100, "%.0f ns (p99 %.0f ns)",
                     rec->cost_p50, rec->cost_p99);
    for (int r = 0; r < R_N; r++)
        free(rows[r].v);
    return ok;
}
