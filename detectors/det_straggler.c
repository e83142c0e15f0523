/* det_straggler.c - the straggler detector: sections to steps, windows.
 *
 * A program marks its steps with sections (telem.h, telem.section in
 * Python); every end of a section writes telem_section_seconds{section,
 * rank} and telem_section_step{section,rank} with one timestamp, the host
 * tag naming the node.  So a point of one pairs with the point of the
 * other that has the same timestamp, and a rank's history is a list of
 * (step, seconds).
 *
 * Ranks are lined up by step: a window is the steps [end - steps + 1,
 * end] of a section, judged once every live rank (one that reported in
 * the last `stale` seconds) has reached `end`, then moved on by `stride`
 * steps.  A rank far behind (more than the ring holds) does not hold the
 * others up: it is judged on its own newest steps.  A rank whose step
 * counter goes back (the process restarted, or resumed at a checkpoint's
 * step) or that joins after the section's windows have passed its step is
 * shifted so its next step lands in the window being gathered; its first
 * `settle` steps after any start are ignored (start-up: compilation,
 * caches, the data loader filling).  Scores, persistence, attribution and
 * events are det_straggler_rules.c's.
 */
#include "det_straggler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det_util.h"
#include "telem_grow.h"

#define S_SECONDS "telem_section_seconds"
#define S_STEP "telem_section_step"

static const det_param_def_t s_params[ST_NPARAMS] = {
    [ST_SECTION] = { "section", DET_PARAM_STR, 0, 0, 0, 0, "", NULL,
        "the section judged (empty: every section the program marks)" },
    [ST_STEPS] = { "steps", DET_PARAM_NUM, 8, 2, 128, 1, NULL, NULL,
        "steps per window: each rank's median over them is its figure" },
    [ST_STRIDE] = { "stride", DET_PARAM_NUM, 4, 1, 128, 1, NULL, NULL,
        "steps between the ends of two windows (at most steps)" },
    [ST_RELATIVE] = { "relative", DET_PARAM_NUM, 0.75, 0, 1, 0, NULL, NULL,
        "relative score threshold: the fastest rank's median over the "
        "rank's median in the same window (NVRx: 0.75)" },
    [ST_INDIVIDUAL] = { "individual", DET_PARAM_NUM, 0.75, 0, 1, 0, NULL,
        NULL, "individual score threshold: the rank's own best window "
        "median so far over its median now; not judged while the job's "
        "median individual score is below it too (a phase)" },
    [ST_K] = { "k", DET_PARAM_NUM, 2, 1, 64, 1, NULL, NULL,
        "windows out of the node's last n that must be slow" },
    [ST_N] = { "n", DET_PARAM_NUM, 3, 1, 64, 1, NULL, NULL,
        "persistence window in windows" },
    [ST_SETTLE] = { "settle", DET_PARAM_NUM, 2, 0, 1e6, 1, NULL, NULL,
        "steps after a rank starts (or restarts) that are ignored" },
    [ST_STALE] = { "stale", DET_PARAM_NUM, 30, 1, 86400, 0, NULL, NULL,
        "seconds without a step after which a rank no longer holds a "
        "window up" },
    [ST_WINDOW] = { "window", DET_PARAM_NUM, 60, 1, 86400, 0, NULL, NULL,
        "seconds of data read each run (sections, kernels, health)" },
    [ST_NODATA] = { "nodata", DET_PARAM_NUM, 60, 0, 86400, 0, NULL, NULL,
        "seconds after the first run with no section recorded before it "
        "warns, once, that the program marks none; 0: never" },
    [ST_KERNELS] = { "kernels", DET_PARAM_STR, 0, 0, 0, 0,
        "cg_dgemm_seconds", NULL, "the collectors' per-round test kernel "
        "time (slowgpu's metric) that attributes a slow node to its "
        "hardware; empty: none" },
    [ST_HW_EFFECT] = { "hw_effect", DET_PARAM_NUM, 0.05, 0, 10, 0, NULL,
        NULL, "the node's slowest device median over the other nodes' "
        "device median, minus 1, from which its kernels are off" },
    [ST_HEALTH] = { "health", DET_PARAM_NUM, 1, 0, 1, 1, NULL, NULL,
        "1: a node whose GPU health fields are off (lost, row-remapping "
        "failure, slowdown throttling, a new XID) is the hardware too" },
    [ST_HW_WINDOW] = { "hw_window", DET_PARAM_NUM, 15, 1, 86400, 0, NULL,
        NULL, "seconds of kernel and health data, up to the newest, that "
        "attribute a straggler (at most window)" },
};

/* ---- state ------------------------------------------------------------- */

static void *
s_create(void)
{
    det_straggler_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->rank_map = det_map_new();
    st->node_map = det_map_new();
    st->sec_map = det_map_new();
    st->pair_map = det_map_new();
    st->first_run_ns = INT64_MIN;
    st->seen_ns = INT64_MIN;
    if (!st->rank_map || !st->node_map || !st->sec_map || !st->pair_map) {
        det_map_destroy(&st->pair_map);
        det_map_destroy(&st->rank_map);
        det_map_destroy(&st->node_map);
        det_map_destroy(&st->sec_map);
        free(st);
        return NULL;
    }
    return st;
}

static void
s_destroy(void **state)
{
    det_straggler_state_t *st = *state;
    for (size_t i = 0; i < st->nranks; i++)
        free(st->ranks[i].key);
    for (size_t i = 0; i < st->nnodes; i++)
        free(st->nodes[i].key);
    for (size_t i = 0; i < st->nsecs; i++)
        free(st->secs[i].name);
    free(st->ranks);
    free(st->nodes);
    free(st->secs);
    det_map_destroy(&st->rank_map);
    det_map_destroy(&st->node_map);
    det_map_destroy(&st->sec_map);
    det_map_destroy(&st->pair_map);
    free(st->tmp);
    free(st->idx);
    free(st);
    *state = NULL;
}

static int
s_check(const det_params_t *p, char *why, size_t why_size)
{
    if (det_params_num(p, ST_K) > det_params_num(p, ST_N)) {
        snprintf(why, why_size, "k (%g) must not exceed n (%g)",
                 det_params_num(p, ST_K), det_params_num(p, ST_N));
        return TELEM_EINVAL;
    }
    if (det_params_num(p, ST_STRIDE) > det_params_num(p, ST_STEPS)) {
        snprintf(why, why_size, "stride (%g) must not exceed steps (%g): "
                 "steps between windows would never be judged",
                 det_params_num(p, ST_STRIDE), det_params_num(p, ST_STEPS));
        return TELEM_EINVAL;
    }
    if (det_params_num(p, ST_HW_WINDOW) > det_params_num(p, ST_WINDOW)) {
        snprintf(why, why_size, "hw_window (%g) must not exceed window (%g)",
                 det_params_num(p, ST_HW_WINDOW),
                 det_params_num(p, ST_WINDOW));
        return TELEM_EINVAL;
    }
    return 0;
}

static void
s_needs(const void *state, const det_params_t *p, int64_t now_ns,
        det_needs_t *out)
{
    (void) state;
    static const char *const health[] = { "gpu_lost",
        "gpu_remapped_rows_failure", "gpu_clocks_event", "gpu_xid_total" };
    size_t n = 0;
    out->metrics[n++] = S_SECONDS;
    out->metrics[n++] = S_STEP;
    if (*det_params_str(p, ST_KERNELS))
        out->metrics[n++] = det_params_str(p, ST_KERNELS);
    if (det_params_num(p, ST_HEALTH) > 0)
        for (size_t i = 0; i < sizeof health / sizeof *health; i++)
            out->metrics[n++] = health[i];
    out->nmetrics = n;
    out->start_ns = now_ns - (int64_t) (det_params_num(p, ST_WINDOW) * 1e9);
}

double
det_straggler_median(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    for (size_t i = 1; i < n; i++) {            /* windows are small */
        double v = x[i];
        size_t j = i;
        for (; j > 0 && x[j - 1] > v; j--)
            x[j] = x[j - 1];
        x[j] = v;
    }
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* Index of entry `key` of `map`, or -1 when absent. */
static long
s_find(const det_map_t *map, const char *key)
{
    return det_map_get(map, key);
}

static long
s_section(det_straggler_state_t *st, const char *name)
{
    long i = s_find(st->sec_map, name);
    if (i >= 0)
        return i;
    if (telem_grow((void **) &st->secs, &st->capsecs, st->nsecs + 1,
                   sizeof *st->secs, 4))
        return -1;
    char *copy = strdup(name);
    if (!copy || det_map_put(st->sec_map, name, (long) st->nsecs)) {
        free(copy);
        return -1;
    }
    st->secs[st->nsecs] = (det_straggler_sec_t) { copy, INT64_MIN, 0 };
    return (long) st->nsecs++;
}

static long
s_node(det_straggler_state_t *st, uint32_t sec, const char *node)
{
    char key[2 * 256 + 8];
    if (!det_util_key(key, sizeof key, st->secs[sec].name, node, NULL))
        return -1;
    long i = s_find(st->node_map, key);
    if (i >= 0)
        return i;
    if (telem_grow((void **) &st->nodes, &st->capnodes, st->nnodes + 1,
                   sizeof *st->nodes, 16))
        return -1;
    size_t kl = strlen(key) + 1, nl = strlen(node) + 1;
    det_straggler_node_t *d = &st->nodes[st->nnodes];
    memset(d, 0, sizeof *d);
    if (!(d->key = malloc(kl + nl)) ||
        det_map_put(st->node_map, key, (long) st->nnodes)) {
        free(d->key);
        return -1;
    }
    memcpy(d->key, key, kl);
    d->node = memcpy(d->key + kl, node, nl);
    d->section = sec;
    d->worst = -1;
    return (long) st->nnodes++;
}

/* Index of the rank (created if new), or -1 (no memory, names too long). */
static long
s_rank(det_straggler_state_t *st, const char *section, const char *node,
       const char *rank)
{
    char key[3 * 256 + 8];
    if (!det_util_key(key, sizeof key, section, node, rank))
        return -1;
    long i = s_find(st->rank_map, key);
    if (i >= 0)
        return i;
    long sec = s_section(st, section);
    long nd = sec < 0 ? -1 : s_node(st, (uint32_t) sec, node);
    if (nd < 0 || telem_grow((void **) &st->ranks, &st->capranks,
                             st->nranks + 1, sizeof *st->ranks, 16))
        return -1;
    det_straggler_rank_t *r = &st->ranks[st->nranks];
    memset(r, 0, sizeof *r);
    size_t kl = strlen(key) + 1, nl = strlen(node) + 1, rl = strlen(rank) + 1;
    if (!(r->key = malloc(kl + nl + rl)) ||
        det_map_put(st->rank_map, key, (long) st->nranks)) {
        free(r->key);
        return -1;
    }
    memcpy(r->key, key, kl);
    r->node = memcpy(r->key + kl, node, nl);
    r->rank = memcpy(r->key + kl + nl, rank, rl);
    r->section = (uint32_t) sec;
    r->nodeix = (uint32_t) nd;
    r->last_ts = INT64_MIN;
    r->last_raw = -1;
    r->rel = r->ind = NAN;
    return (long) st->nranks++;
}

/* ---- from series to steps ---------------------------------------------- */

static int64_t
s_newest(const det_straggler_rank_t *r)
{
    return r->ring[(r->pos + ST_RING - 1) % ST_RING].step;
}

/* Takes one (raw step, seconds) point of rank r. */
static void
s_add(det_straggler_state_t *st, const det_params_t *p,
      det_straggler_rank_t *r, int64_t raw, double secs)
{
    const det_straggler_sec_t *sec = &st->secs[r->section];
    int64_t start = sec->end == INT64_MIN ? INT64_MIN
                    : sec->end - (int64_t) det_params_num(p, ST_STEPS) + 1;
    if (r->last_raw >= 0 && raw <= r->last_raw) {   /* counter went back */
        r->restarts++;
        r->since_start = 0;
        r->nring = r->pos = 0;
    }
    if (r->nring == 0 && start != INT64_MIN && raw + r->offset < start)
        r->offset = start - raw;        /* late joiner or restarted rank */
    r->last_raw = raw;
    if ((double) ++r->since_start <= det_params_num(p, ST_SETTLE))
        return;
    r->ring[r->pos] = (det_straggler_pt_t) { raw + r->offset, secs };
    r->pos = (r->pos + 1) % ST_RING;
    r->nring += r->nring < ST_RING;
}

/* Maps every telem_section_step series of `in` by section, node and rank
 * (pair_map), so each seconds series finds its partner in one lookup. */
static int
s_index_steps(det_straggler_state_t *st, const det_input_t *in)
{
    det_map_clear(st->pair_map);
    for (size_t i = 0; i < in->nseries; i++) {
        const det_series_t *t = &in->series[i];
        if (!t->metric || strcmp(t->metric, S_STEP) != 0)
            continue;
        const char *h = det_util_tag(t, "host");
        const char *node = h ? h : t->node ? t->node : "";
        const char *sec = det_util_tag(t, "section");
        const char *rank = det_util_tag(t, "rank");
        char key[3 * 256 + 8];
        if (sec && rank && det_util_key(key, sizeof key, sec, node, rank) &&
            det_map_put(st->pair_map, key, (long) i))
            return TELEM_ENOMEM;
    }
    return 0;
}

/* Takes the new points of one telem_section_seconds series. */
static int
s_take(det_straggler_state_t *st, const det_params_t *p, const det_input_t *in,
       const det_series_t *s)
{
    const char *host = det_util_tag(s, "host");
    const char *node = host ? host : s->node;
    const char *sec = det_util_tag(s, "section");
    const char *rank = det_util_tag(s, "rank");
    const char *want = det_params_str(p, ST_SECTION);
    if (!node || !*node || !sec || !*sec || !rank || !*rank || !s->ts ||
        !s->val || (*want && strcmp(want, sec) != 0))
        return 0;                               /* malformed: skipped */
    char key[3 * 256 + 8];
    long j = det_util_key(key, sizeof key, sec, node, rank)
             ? det_map_get(st->pair_map, key) : -1;
    if (j < 0 || !in->series[j].ts || !in->series[j].val)
        return 0;
    const det_series_t *t = &in->series[j];
    long ri = s_rank(st, sec, node, rank);
    if (ri < 0)
        return TELEM_ENOMEM;
    det_straggler_rank_t *r = &st->ranks[ri];
    for (size_t a = 0, b = 0; a < s->n && b < t->n;) {
        if (s->ts[a] != t->ts[b]) {             /* unpaired point */
            s->ts[a] < t->ts[b] ? a++ : b++;
            continue;
        }
        int64_t ts = s->ts[a];
        double secs = s->val[a], step = t->val[b];
        a++, b++;
        if (ts <= r->last_ts || !isfinite(secs) || secs <= 0 ||
            !isfinite(step) || step < 0 || step > 9e15 || step != floor(step))
            continue;
        r->last_ts = ts;
        if (ts > st->seen_ns)
            st->seen_ns = ts;
        s_add(st, p, r, (int64_t) step, secs);
    }
    return 0;
}

/* ---- windows ----------------------------------------------------------- */

static int
s_scratch(det_straggler_state_t *st, size_t n)
{
    if (n <= st->captmp)
        return 0;
    double *tmp = realloc(st->tmp, n * sizeof *tmp);
    if (tmp)
        st->tmp = tmp;
    long *idx = realloc(st->idx, n * sizeof *idx);
    if (idx)
        st->idx = idx;
    if (!tmp || !idx)
        return TELEM_ENOMEM;
    st->captmp = n;
    return 0;
}

/* Median of rank r over the steps [lo, hi], or over its newest `w` steps
 * when it lags behind lo; NAN with too few steps (under half a window). */
static double
s_rank_median(const det_straggler_rank_t *r, int64_t lo, int64_t hi,
              size_t w)
{
    double x[ST_RING];
    size_t n = 0, need = (w + 1) / 2;
    int lag = r->nring && s_newest(r) < lo;
    for (uint32_t i = 0; i < r->nring && n < (lag ? w : ST_RING); i++) {
        const det_straggler_pt_t *pt = &r->ring[(r->pos + ST_RING - 1 - i) %
                                                ST_RING];
        if (lag || (pt->step >= lo && pt->step <= hi))
            x[n++] = pt->secs;
    }
    return n >= need ? det_straggler_median(x, n) : NAN;
}

/* Judges every window of section `sec` that is complete. */
static int
s_windows(det_straggler_state_t *st, const det_params_t *p,
          const det_input_t *in, uint32_t sec, det_events_t *out)
{
    det_straggler_sec_t *s = &st->secs[sec];
    int64_t w = (int64_t) det_params_num(p, ST_STEPS);
    int64_t stride = (int64_t) det_params_num(p, ST_STRIDE);
    int64_t live_from = in->now_ns - (int64_t) (det_params_num(p, ST_STALE) *
                                                1e9);
    for (;;) {
        int64_t lo_new = INT64_MAX, hi_new = INT64_MIN, first = INT64_MAX;
        size_t n = 0;
        for (size_t i = 0; i < st->nranks; i++) {
            const det_straggler_rank_t *r = &st->ranks[i];
            if (r->section != sec || !r->nring || r->last_ts < live_from)
                continue;
            int64_t nw = s_newest(r);
            const det_straggler_pt_t *old = &r->ring[(r->pos + ST_RING -
                                                      r->nring) % ST_RING];
            lo_new = nw < lo_new ? nw : lo_new;
            hi_new = nw > hi_new ? nw : hi_new;
            first = old->step < first ? old->step : first;
            n++;
        }
        if (n == 0)
            return 0;
        if (s->end == INT64_MIN)
            s->end = first + w - 1;
        if (s->end < hi_new - ST_RING + w)      /* after a gap: catch up */
            s->end = hi_new - ST_RING + w;
        if (lo_new < s->end && hi_new < s->end + ST_RING - w)
            return 0;                           /* not complete yet */
        if (s_scratch(st, n))
            return TELEM_ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < st->nranks; i++) {
            det_straggler_rank_t *r = &st->ranks[i];
            if (r->section != sec || !r->nring || r->last_ts < live_from)
                continue;
            r->med = s_rank_median(r, s->end - w + 1, s->end, (size_t) w);
            if (isfinite(r->med))
                st->idx[k++] = (long) i;
        }
        det_straggler_window_t win = { sec, s->end, st->idx, k };
        int rc = k ? det_straggler_judge(st, p, in, &win, out) : 0;
        if (rc)
            return rc;
        s->windows += k > 0;
        s->end += stride;
    }
}

static int
s_run(void *state, const det_params_t *p, const det_input_t *in,
      det_events_t *out)
{
    det_straggler_state_t *st = state;
    if (st->first_run_ns == INT64_MIN)
        st->first_run_ns = in->now_ns;
    int rc0 = s_index_steps(st, in);
    if (rc0)
        return rc0;
    for (size_t i = 0; i < in->nseries; i++) {
        const det_series_t *s = &in->series[i];
        if (s->metric && strcmp(s->metric, S_SECONDS) == 0) {
            int rc = s_take(st, p, in, s);
            if (rc)
                return rc;
        }
    }
    for (size_t sec = 0; sec < st->nsecs; sec++) {
        int rc = s_windows(st, p, in, (uint32_t) sec, out);
        if (rc)
            return rc;
    }
    if ((rc0 = det_straggler_pending(st, p, in, out)) != 0)
        return rc0;
    double nodata = det_params_num(p, ST_NODATA);
    if (st->seen_ns != INT64_MIN || st->nodata_told || nodata <= 0 ||
        (double) (in->now_ns - st->first_run_ns) < nodata * 1e9)
        return 0;
    st->nodata_told = 1;
    char text[640];
    snprintf(text, sizeof text, "no section recorded in %g s: straggler "
             "compares the ranks' step times, and this program marks no "
             "steps (no telem_section_seconds / telem_section_step series); "
             "mark each step: in C, telem_section_begin(\"step\") and "
             "telem_section_end(\"step\") around it (telem.h); in Python, "
             "`with telem.section(\"step\"):` or the @telem.section(\"step\") "
             "decorator (docs/python.md)", nodata);
    det_event_t e = { .detector = "straggler", .severity = DET_SEV_WARN,
                      .ts_ns = in->now_ns,
                      .score = nodata, .text = text };
    return det_events_add(out, &e);
}

/* ---- status ------------------------------------------------------------ */

static void
s_describe(const void *state, const det_params_t *p,
           void (*fn)(void *arg, const char *key, const char *value),
           void *arg)
{
    (void) p;
    const det_straggler_state_t *st = state;
    char buf[1024];
    size_t len = 0, total = 0, shown = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->nsecs; i++)
        if (len + strlen(st->secs[i].name) + 40 < sizeof buf)
            len += (size_t) snprintf(buf + len, sizeof buf - len,
                                     "%s%s (%llu windows)", i ? ", " : "",
                                     st->secs[i].name, (unsigned long long)
                                     st->secs[i].windows);
    fn(arg, "sections", st->nsecs ? buf : st->seen_ns == INT64_MIN
                                          ? "none recorded yet" : "none");
    snprintf(buf, sizeof buf, "%zu", st->nranks);
    fn(arg, "ranks", buf);
    len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->nnodes; i++) {
        const det_straggler_node_t *d = &st->nodes[i];
        if (!d->active)
            continue;
        total++;
        if (len + strlen(d->node) + strlen(st->secs[d->section].name) + 8 >=
            sizeof buf)
            continue;
        len += (size_t) snprintf(buf + len, sizeof buf - len, "%s%s (%s)",
                                 shown++ ? ", " : "", d->node,
                                 st->secs[d->section].name);
    }
    if (total > shown)
        snprintf(buf + len, sizeof buf - len, " and %zu more", total - shown);
    fn(arg, "flagged", total ? buf : "none");
    len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->nnodes; i++) {
        const det_straggler_node_t *d = &st->nodes[i];
        if (d->pending && len + strlen(d->node) + 4 < sizeof buf)
            len += (size_t) snprintf(buf + len, sizeof buf - len, "%s%s",
                                     len ? ", " : "", d->node);
    }
    fn(arg, "waiting", len ? buf : "none");
}

const det_vtable_t det_straggler = {
    .name = "straggler",
    .doc = "A rank (judged as its node) slower than the job's fastest rank "
           "in the same steps of a section (relative score), or than its "
           "own best (individual score, not in a phase that slows every "
           "rank), in k of n windows; acts (excludes the node) when the "
           "node's test kernels or GPU health fields are off too, warns "
           "naming the rank otherwise.  Score: the fractional slowdown "
           "against the fastest rank's median.",
    .params = s_params,
    .nparams = ST_NPARAMS,
    .create = s_create,
    .destroy = s_destroy,
    .check = s_check,
    .needs = s_needs,
    .run = s_run,
    .describe = s_describe,
};
