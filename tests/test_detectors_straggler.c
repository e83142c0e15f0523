/* test_detectors_straggler.c - the straggler detector on fixed tables of
 * section series: a phase where every rank slows together (quiet), ranks
 * that join late and a rank whose step counter restarts (lined up, quiet,
 * then still judged), data imbalance on healthy kernels (a warning that
 * names the rank), individual scores judged against the job's (a
 * slowdown the ranks share in part names none), a straggler whose node's
 * kernels or health fields are off too (an act on the node; with short
 * steps, a warning first and the act once the kernels are off over
 * hw_window; kernels compared round by round, so a machine whose speed
 * changes for every device at once does not make a node's kernels look
 * off, and kernels that recovered are not blamed), its report waiting
 * until the kernels cover hw_window, 2 to 1,024 ranks, several ranks of a
 * node judged as that node, malformed series, the warning of a job that
 * marks no sections, and the parameters.
 */
#include "check.h"
#include "det.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 INT64_C(1700000000000000000)
#define SEC INT64_C(1000000000)
#define PTS 512
#define VIEW 60                 /* points handed over: the watcher's window */

/* One series with its own tag storage. */
typedef struct {
    char metric[40], node[24], tv[3][24];
    det_tag_t tags[4];
    size_t ntags;
    int64_t ts[PTS];
    double val[PTS];
    size_t n;
} s_ser_t;

typedef struct {
    s_ser_t *s;
    size_t n, cap;
    det_series_t *view;
    gsl_rng *rng;
} s_tab_t;

static s_tab_t *
s_tab(size_t cap)
{
    s_tab_t *t = calloc(1, sizeof *t);
    t->s = calloc(cap, sizeof *t->s);
    t->view = calloc(cap, sizeof *t->view);
    t->cap = cap;
    t->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(t->rng, 2929);
    return t;
}

static void
s_tab_free(s_tab_t **t_p)
{
    gsl_rng_free((*t_p)->rng);
    free((*t_p)->s);
    free((*t_p)->view);
    free(*t_p);
    *t_p = NULL;
}

/* A series: metric, node, then tag pairs (NULL key: none). */
static size_t
s_new(s_tab_t *t, const char *metric, const char *node, const char *k1,
      const char *v1, const char *k2, const char *v2)
{
    s_ser_t *s = &t->s[t->n];
    snprintf(s->metric, sizeof s->metric, "%s", metric);
    snprintf(s->node, sizeof s->node, "%s", node);
    const char *kv[] = { "host", node, k1, v1, k2, v2 };
    for (size_t i = 0; i < 6; i += 2) {
        if (!kv[i])
            continue;
        snprintf(s->tv[s->ntags], sizeof s->tv[0], "%s", kv[i + 1]);
        s->tags[s->ntags] = (det_tag_t) { kv[i], s->tv[s->ntags] };
        s->ntags++;
    }
    return t->n++;
}

/* A rank's pair of section series; returns the seconds series (the step
 * series is the next one). */
static size_t
s_rank(s_tab_t *t, const char *node, const char *section, const char *rank)
{
    size_t i = s_new(t, "telem_section_seconds", node, "section", section,
                     "rank", rank);
    s_new(t, "telem_section_step", node, "section", section, "rank", rank);
    return i;
}

static void
s_push(s_ser_t *s, int64_t ts, double v)
{
    if (s->n == PTS) {
        memmove(s->ts, s->ts + PTS / 2, PTS / 2 * sizeof *s->ts);
        memmove(s->val, s->val + PTS / 2, PTS / 2 * sizeof *s->val);
        s->n = PTS / 2;
    }
    s->ts[s->n] = ts;
    s->val[s->n++] = v;
}

/* One end of a section: seconds and step with the same timestamp. */
static void
s_step(s_tab_t *t, size_t i, int64_t ts, double secs, int64_t step)
{
    s_push(&t->s[i], ts, secs);
    s_push(&t->s[i + 1], ts, (double) step);
}

static double
s_noise(s_tab_t *t, double sd)
{
    return 1 + gsl_ran_gaussian(t->rng, sd);
}

static det_input_t
s_input(s_tab_t *t, int64_t now)
{
    for (size_t i = 0; i < t->n; i++) {
        s_ser_t *s = &t->s[i];
        size_t off = s->n > VIEW ? s->n - VIEW : 0;
        t->view[i] = (det_series_t) { s->node, NULL, s->metric, s->tags,
                                      s->ntags, s->ts + off, s->val + off,
                                      s->n - off };
    }
    return (det_input_t) { .now_ns = now, .series = t->view,
                           .nseries = t->n };
}

static det_t *
s_det(const char *const *kv)
{
    det_t *d = det_new(det_find("straggler"), NULL, NULL);
    char why[256];
    for (size_t i = 0; kv && kv[i]; i += 2)
        if (det_set(d, kv[i], kv[i + 1], why, sizeof why)) {
            fprintf(stderr, "set %s=%s: %s\n", kv[i], kv[i + 1], why);
            exit(1);
        }
    return d;
}

/* Runs d on t at `now`, appending to ev. */
static void
s_run(det_t *d, s_tab_t *t, int64_t now, det_events_t *ev)
{
    det_input_t in = s_input(t, now);
    CHECK_INT(det_run(d, &in, ev), 0);
}

/* A job of `ranks` ranks, `per` per node, 1 s steps: rank `slow` (or
 * none: -1) takes `factor` times as long from step `from` on; the kernels
 * of every node (when `kern`) run at 10 ms, the slow rank's node's at
 * `kfactor` times that.  Returns the first step an event came at, or -1;
 * events go to ev. */
typedef struct {
    size_t ranks, per, steps;
    long slow;
    double factor, kfactor, noise;
    size_t from;
    int kern;
} s_job_t;

static long
s_job(const s_job_t *j, det_t *d, det_events_t *ev)
{
    size_t nodes = (j->ranks + j->per - 1) / j->per;
    s_tab_t *t = s_tab(2 * j->ranks + nodes);
    size_t *rs = calloc(j->ranks, sizeof *rs), *ks = calloc(nodes, sizeof *ks);
    char node[24], rank[24];
    for (size_t r = 0; r < j->ranks; r++) {
        snprintf(node, sizeof node, "n%zu", r / j->per);
        snprintf(rank, sizeof rank, "%zu", r);
        rs[r] = s_rank(t, node, "step", rank);
    }
    for (size_t k = 0; j->kern && k < nodes; k++) {
        snprintf(node, sizeof node, "n%zu", k);
        ks[k] = s_new(t, "cg_dgemm_seconds", node, "gpu", "0", NULL, NULL);
    }
    long first = -1;
    for (size_t s = 0; s < j->steps; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        for (size_t r = 0; r < j->ranks; r++) {
            double f = (long) r == j->slow && s >= j->from ? j->factor : 1;
            s_step(t, rs[r], ts + (int64_t) r * 1000, 0.5 * f *
                   s_noise(t, j->noise), (int64_t) s);
        }
        for (size_t k = 0; j->kern && k < nodes; k++) {
            int bad = j->slow >= 0 && k == (size_t) j->slow / j->per &&
                      s >= j->from;
            s_push(&t->s[ks[k]], ts, 0.01 * (bad ? j->kfactor : 1) *
                   s_noise(t, 0.01));
        }
        size_t before = det_events_count(ev);
        s_run(d, t, ts + SEC / 2, ev);
        if (first < 0 && det_events_count(ev) > before)
            first = (long) s;
    }
    free(rs);
    free(ks);
    s_tab_free(&t);
    return first;
}

/* Evidence `name` of e, or NAN. */
static double
s_evidence(const det_event_t *e, const char *name)
{
    for (size_t i = 0; i < e->nevidence; i++)
        if (strcmp(e->evidence[i].name, name) == 0)
            return e->evidence[i].value;
    return NAN;
}

static void
test_imbalance_warns(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_job_t j = { 4, 1, 80, 2, 1.5, 1.0, 0.01, 30, 1 };
    long at = s_job(&j, d, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(at >= 30 && at <= 30 + 20);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_INT(e->severity, DET_SEV_WARN);
        CHECK_INT(e->nnodes, 1);
        CHECK_STR(e->nodes[0], "n2");
        CHECK(strstr(e->text, "rank 2 on node 'n2' is a straggler in "
                     "section 'step'") == e->text);
        CHECK(strstr(e->text, "not the hardware: test kernels "
                     "cg_dgemm_seconds") != NULL);
        CHECK(strstr(e->text, "balance") && strstr(e->text, "I/O"));
        CHECK(strstr(e->text, "'step': it takes 0.7") != NULL);
        CHECK(strstr(e->text, "relative score 0.6") != NULL);
        CHECK(fabs(e->score - 0.5) < 0.05);
    }
    det_events_destroy(&ev);
    det_destroy(&d);
}

static void
test_hardware_acts(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_job_t j = { 4, 1, 80, 1, 1.5, 1.3, 0.01, 30, 1 };
    s_job(&j, d, ev);
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_INT(e->severity, DET_SEV_ACT);
        CHECK_STR(e->nodes[0], "n1");
        CHECK(strstr(e->text, "node 'n1' is a straggler in section 'step' "
                     "(rank 1)") == e->text);
        CHECK(strstr(e->text, "the hardware: test kernels cg_dgemm_seconds "
                     "+") != NULL);
        CHECK(fabs(s_evidence(e, "kernel_ratio") - 1.3) < 0.02);
        CHECK(strstr(e->text, "asking to exclude the node") != NULL);
    }
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* Four ranks on nodes n0-n3, each with a kernel series (gpu 0). */
static void
s_four(s_tab_t *t, size_t rs[4], size_t ks[4])
{
    char rank[24], node[24];
    for (size_t r = 0; r < 4; r++) {
        snprintf(rank, sizeof rank, "%zu", r);
        snprintf(node, sizeof node, "n%zu", r);
        rs[r] = s_rank(t, node, "step", rank);
        ks[r] = s_new(t, "cg_dgemm_seconds", node, "gpu", "0", NULL, NULL);
    }
}

/* Short steps (0.1 s), a rank 50 % and its kernels 30 % slower from step
 * 200 (20 s in: the collectors have run hw_window, which a first report
 * waits for): named within 20 steps while hw_window holds mostly normal
 * rounds (warn), reported again as the hardware (act) once they are off
 * there; with normal kernels, the warning only.  Events into ev, steps in
 * at[]. */
static size_t
s_short_steps(double kfactor, det_events_t *ev, long at[2])
{
    det_t *d = s_det(NULL);
    s_tab_t *t = s_tab(16);
    size_t rs[4], ks[4];
    s_four(t, rs, ks);
    at[0] = at[1] = -1;
    for (size_t s = 0; s < 400; s++) {
        int64_t ts = T0 + (int64_t) s * SEC / 10;
        for (size_t r = 0; r < 4; r++)
            s_step(t, rs[r], ts, 0.05 * (r == 3 && s >= 200 ? 1.5 : 1.0) *
                   s_noise(t, 0.01), (int64_t) s);
        if (s % 5)
            continue;                           /* rounds of 0.5 s */
        for (size_t r = 0; r < 4; r++)
            s_push(&t->s[ks[r]], ts, 0.01 * (r == 3 && s >= 200 ? kfactor
                                             : 1.0) * s_noise(t, 0.01));
        size_t before = det_events_count(ev);
        s_run(d, t, ts + SEC / 20, ev);
        if (det_events_count(ev) > before && before < 2)
            at[before] = (long) s;
    }
    s_tab_free(&t);
    det_destroy(&d);
    return det_events_count(ev);
}

static void
test_short_steps_act_later(void)
{
    det_events_t *ev = det_events_new();
    long at[2];
    CHECK_INT(s_short_steps(1.3, ev, at), 2);
    const det_event_t *w = det_events_get(ev, 0), *a = det_events_get(ev, 1);
    CHECK(at[0] >= 200 && at[0] <= 220);
    CHECK(at[1] > at[0] && at[1] <= 200 + 150);   /* within hw_window */
    if (w && a) {
        CHECK_INT(w->severity, DET_SEV_WARN);
        CHECK(strstr(w->text, "rank 3 on node 'n3'") == w->text);
        CHECK(strstr(w->text, "not the hardware") != NULL);
        CHECK_INT(a->severity, DET_SEV_ACT);
        CHECK_STR(a->nodes[0], "n3");
        CHECK(strstr(a->text, "node 'n3' is a straggler in section 'step' "
                     "(rank 3)") == a->text);
        CHECK(strstr(a->text, "the hardware: test kernels cg_dgemm_seconds "
                     "+") != NULL);
        CHECK(s_evidence(a, "kernel_ratio") >= 1.05);
        CHECK(s_evidence(w, "kernel_ratio") < 1.05);
        CHECK(strstr(a->text, "named before as not the hardware") != NULL);
    }
    det_events_clear(ev);
    CHECK_INT(s_short_steps(1.0, ev, at), 1);    /* imbalance: warn only */
    w = det_events_get(ev, 0);
    if (w)
        CHECK_INT(w->severity, DET_SEV_WARN);
    det_events_destroy(&ev);
}

/* Every third round 1.7x slower for every device at once, and a node whose
 * collector missed 3 in 4 fast rounds: its kernels' median and the
 * others' land in different modes, its rounds match theirs.  Its slow rank
 * is not the hardware; with kernels 30 % slower in every round it is. */
static const det_event_t *
s_modes(double kfactor, det_events_t *ev)
{
    det_t *d = s_det(NULL);
    s_tab_t *t = s_tab(16);
    size_t rs[4], ks[4];
    s_four(t, rs, ks);
    for (size_t s = 0; s < 80; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        double speed = s % 3 == 2 ? 1.7 : 1.0;
        for (size_t r = 0; r < 4; r++) {
            s_step(t, rs[r], ts, 0.5 * (r == 2 && s >= 30 ? 1.5 : 1.0) *
                   s_noise(t, 0.01), (int64_t) s);
            if (r == 2 && speed == 1.0 && s % 4)
                continue;                       /* a fast round missed */
            s_push(&t->s[ks[r]], ts, 0.01 * speed * (r == 2 && s >= 30
                                                     ? kfactor : 1.0) *
                   s_noise(t, 0.01));
        }
        s_run(d, t, ts + SEC / 2, ev);
    }
    s_tab_free(&t);
    det_destroy(&d);
    return det_events_count(ev) == 1 ? det_events_get(ev, 0) : NULL;
}

static void
test_kernels_round_by_round(void)
{
    det_events_t *ev = det_events_new();
    for (int hw = 0; hw < 2; hw++) {
        det_events_clear(ev);
        const det_event_t *e = s_modes(hw ? 1.3 : 1.0, ev);
        CHECK(e != NULL);
        if (e) {
            CHECK_INT(e->severity, hw ? DET_SEV_ACT : DET_SEV_WARN);
            CHECK(fabs(s_evidence(e, "kernel_ratio") - (hw ? 1.3 : 1.0)) <
                  0.03);
        }
    }
    det_events_destroy(&ev);
}

/* Kernels 30 % slow from step 10 to 43, normal since; the rank 50 %
 * slower from step 38 (more work): when it is named (window up to step
 * 49) over half of hw_window holds slow rounds, its newest third none. */
static void
test_recovered_kernels_warn(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(16);
    size_t rs[4], ks[4];
    s_four(t, rs, ks);
    for (size_t s = 0; s < 70; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        for (size_t r = 0; r < 4; r++) {
            s_step(t, rs[r], ts, 0.5 * (r == 1 && s >= 38 ? 1.5 : 1.0) *
                   s_noise(t, 0.01), (int64_t) s);
            s_push(&t->s[ks[r]], ts, 0.01 * (r == 1 && s >= 10 && s < 44
                                             ? 1.3 : 1.0) *
                   s_noise(t, 0.01));
        }
        s_run(d, t, ts + SEC / 2, ev);
    }
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_INT(e->severity, DET_SEV_WARN);
        CHECK_STR(e->nodes[0], "n1");
        CHECK(s_evidence(e, "kernel_ratio") < 1.05);
    }
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* Kernels that time normally but a GPU that throttles: the hardware. */
static void
test_health_acts(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(16);
    size_t rs[3], hs;
    char rank[24], node[24];
    for (size_t r = 0; r < 3; r++) {
        snprintf(rank, sizeof rank, "%zu", r);
        snprintf(node, sizeof node, "n%zu", r);
        rs[r] = s_rank(t, node, "step", rank);
    }
    hs = s_new(t, "gpu_clocks_event", "n0", "gpu", "1", "reason",
               "hw_thermal_slowdown");
    size_t idle = s_new(t, "gpu_clocks_event", "n1", "gpu", "0", "reason",
                        "gpu_idle");
    for (size_t s = 0; s < 60; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        for (size_t r = 0; r < 3; r++)
            s_step(t, rs[r], ts, 0.5 * (r == 0 && s >= 20 ? 1.5 : 1.0),
                   (int64_t) s);
        s_push(&t->s[hs], ts, s >= 20);
        s_push(&t->s[idle], ts, 1);             /* not a slowdown reason */
        s_run(d, t, ts + SEC / 2, ev);
    }
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_INT(e->severity, DET_SEV_ACT);
        CHECK_STR(e->nodes[0], "n0");
        CHECK(strstr(e->text, "the hardware: GPU health gpu_clocks_event"
                     "{reason=hw_thermal_slowdown} 1 on GPU 1") != NULL);
    }
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* No kernels collected: a slow rank is not blamed on the hardware. */
static void
test_no_kernels_warns(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_job_t j = { 3, 1, 60, 0, 2.0, 1.0, 0.01, 20, 0 };
    s_job(&j, d, ev);
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_INT(e->severity, DET_SEV_WARN);
        CHECK(strstr(e->text, "no test kernels (cg_dgemm_seconds) run on "
                     "it") != NULL);
    }
    det_events_destroy(&ev);
    det_destroy(&d);
}

static void
s_waiting(void *arg, const char *key, const char *value)
{
    if (strcmp(key, "waiting") == 0)
        snprintf(arg, 64, "%s", value);
}

/* A straggler found before the collectors have run hw_window (15 s): the
 * report waits for kernels that cover it, then comes at a run that judges
 * no new window (the ranks have stopped stepping).  The slow rank's node's
 * first kernel rounds are its collector's start-up, 40 % slower: an
 * attribution from them would blame the hardware; over the whole window
 * it is not the hardware. */
static void
test_kernels_wait(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(16);
    size_t rs[3], ks[3];
    char rank[24], node[24], waiting[64] = "";
    for (size_t r = 0; r < 3; r++) {
        snprintf(rank, sizeof rank, "%zu", r);
        snprintf(node, sizeof node, "n%zu", r);
        rs[r] = s_rank(t, node, "step", rank);
        ks[r] = s_new(t, "cg_dgemm_seconds", node, "gpu", "0", NULL, NULL);
    }
    for (size_t s = 0; s < 30; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        for (size_t r = 0; s <= 14 && r < 3; r++)     /* they hold at 14 */
            s_step(t, rs[r], ts, 0.5 * (r == 1 ? 1.5 : 1.0) *
                   s_noise(t, 0.01), (int64_t) s);
        for (size_t r = 0; r < 3; r++)
            s_push(&t->s[ks[r]], ts, 0.01 * (r == 1 && s < 3 ? 1.4 : 1.0) *
                   s_noise(t, 0.01));
        s_run(d, t, ts + SEC / 2, ev);
        if (s == 13) {
            det_describe(d, s_waiting, waiting);
            CHECK_STR(waiting, "n1");
        }
        CHECK_INT(det_events_count(ev), s < 15 ? 0 : 1);
    }
    det_describe(d, s_waiting, waiting);
    CHECK_STR(waiting, "none");
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_INT(e->severity, DET_SEV_WARN);
        CHECK_STR(e->nodes[0], "n1");
        CHECK(strstr(e->text, "rank 1 on node 'n1' is a straggler") ==
              e->text);
        CHECK(strstr(e->text, "up to step 13; not the hardware: test "
                     "kernels cg_dgemm_seconds") != NULL);
    }
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* Every rank twice as slow for 24 steps (a checkpoint, an evaluation):
 * no relative score moves, and the individual ones all move together. */
static void
test_phase_quiet(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(16);
    size_t rs[8];
    char rank[24], node[24];
    for (size_t r = 0; r < 8; r++) {
        snprintf(rank, sizeof rank, "%zu", r);
        snprintf(node, sizeof node, "n%zu", r);
        rs[r] = s_rank(t, node, "step", rank);
    }
    for (size_t s = 0; s < 120; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        double f = s >= 40 && s < 64 ? 2.0 : s >= 90 ? 1.6 : 1.0;
        for (size_t r = 0; r < 8; r++)
            s_step(t, rs[r], ts, 0.5 * f * s_noise(t, 0.02), (int64_t) s);
        s_run(d, t, ts + SEC / 2, ev);
    }
    CHECK_INT(det_events_count(ev), 0);
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* A job of nr (at most 4) ranks, each on its own node, 1 s steps: rank r
 * takes base[r] s, times f[r] in steps [from, to); returns the events. */
static size_t
s_flip_job(det_t *d, det_events_t *ev, size_t nr, const double *base,
           const double *f, size_t from, size_t to, size_t steps)
{
    s_tab_t *t = s_tab(16);
    size_t rs[4];
    char rank[24], node[24];
    for (size_t r = 0; r < nr; r++) {
        snprintf(rank, sizeof rank, "%zu", r);
        snprintf(node, sizeof node, "n%zu", r);
        rs[r] = s_rank(t, node, "step", rank);
    }
    for (size_t s = 0; s < steps; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        for (size_t r = 0; r < nr; r++)
            s_step(t, rs[r], ts, base[r] * (s >= from && s < to ? f[r] : 1) *
                   s_noise(t, 0.005), (int64_t) s);
        s_run(d, t, ts + SEC / 2, ev);
    }
    s_tab_free(&t);
    return det_events_count(ev);
}

/* Both ranks of a job slowed for 16 steps by the machine (a vCPU that
 * changes speed), one window median catching 1.4x and the other 1.25x:
 * individual scores 0.71 and 0.8, a median of 0.76, no phase.  The
 * individual score against the job's median (0.94) names no rank; a rank
 * alone 1.4x slower than its best among 4 (the median 1) is named, even
 * as the fastest rank but one. */
static void
test_individual_against_job(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    double base2[] = { 0.5, 0.5 }, f2[] = { 1.4, 1.25 };
    CHECK_INT(s_flip_job(d, ev, 2, base2, f2, 30, 46, 80), 0);
    det_destroy(&d);
    d = s_det(NULL);
    double base4[] = { 0.4, 0.5, 0.5, 0.5 }, f4[] = { 1.4, 1, 1, 1 };
    CHECK_INT(s_flip_job(d, ev, 4, base4, f4, 30, 80, 80), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_STR(e->nodes[0], "n0");
        CHECK(strstr(e->text, "rank 0 on node 'n0' is a straggler") ==
              e->text);
        CHECK(strstr(e->text, "individual 0.7") != NULL);
        CHECK(strstr(e->text, "relative score 0.8") != NULL);
    }
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* A rank that joins late (its step counter at 0 while the others are at
 * 50) and a rank whose counter restarts: lined up, quiet; the restarted
 * rank slowed later is found. */
static void
test_late_and_restarted(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(16);
    size_t rs[4];
    char rank[24], node[24];
    for (size_t r = 0; r < 4; r++) {
        snprintf(rank, sizeof rank, "%zu", r);
        snprintf(node, sizeof node, "n%zu", r);
        rs[r] = s_rank(t, node, "step", rank);
    }
    int64_t step[4] = { 0, 0, 0, 0 };
    for (size_t s = 0; s < 160; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        for (size_t r = 0; r < 4; r++) {
            if (r == 3 && s < 50)
                continue;                       /* joins at 50, step 0 */
            if (r == 2 && s == 70)
                step[r] = 0;                    /* restarts at step 0 */
            double f = r == 2 && s >= 110 ? 1.6 : 1.0;
            s_step(t, rs[r], ts, 0.5 * f * s_noise(t, 0.01), step[r]++);
        }
        size_t before = det_events_count(ev);
        s_run(d, t, ts + SEC / 2, ev);
        if (s < 110)
            CHECK_INT(det_events_count(ev), before);
    }
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e)
        CHECK(strstr(e->text, "rank 2 on node 'n2'") == e->text);
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* 2 to 1,024 ranks (8 per node from 64 on): the slow rank's node, once,
 * within 20 steps; no other node. */
static void
test_scales(void)
{
    size_t sizes[] = { 2, 3, 8, 64, 256, 1024 };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        det_t *d = s_det(NULL);
        det_events_t *ev = det_events_new();
        size_t per = sizes[i] >= 64 ? 8 : 1;
        s_job_t j = { sizes[i], per, 60, (long) sizes[i] - 1, 1.5, 1.3,
                      0.02, 24, 1 };
        long at = s_job(&j, d, ev);
        char node[24];
        snprintf(node, sizeof node, "n%zu", (sizes[i] - 1) / per);
        CHECK_INT(det_events_count(ev), 1);
        CHECK(at >= 24 && at <= 24 + 20);
        const det_event_t *e = det_events_get(ev, 0);
        if (e) {
            CHECK_STR(e->nodes[0], node);
            CHECK_INT(e->severity, DET_SEV_ACT);
        }
        if (det_events_count(ev) != 1 || at < 24 || at > 44)
            fprintf(stderr, "  with %zu ranks: %zu events, first at %ld\n",
                    sizes[i], det_events_count(ev), at);
        det_events_destroy(&ev);
        det_destroy(&d);
    }
}

/* Two slow ranks of one node: one event for the node, naming both. */
static void
test_node_judged_once(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(16);
    size_t rs[8];
    char rank[24], node[24];
    for (size_t r = 0; r < 8; r++) {
        snprintf(rank, sizeof rank, "%zu", r);
        snprintf(node, sizeof node, "n%zu", r / 4);
        rs[r] = s_rank(t, node, "step", rank);
    }
    for (size_t s = 0; s < 60; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        for (size_t r = 0; r < 8; r++)
            s_step(t, rs[r], ts, 0.5 * ((r == 5 || r == 6) && s >= 20 ? 1.5
                                        : 1.0) * s_noise(t, 0.01),
                   (int64_t) s);
        s_run(d, t, ts + SEC / 2, ev);
    }
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_STR(e->nodes[0], "n1");
        CHECK(strstr(e->text, "(with ranks 5, 6)") != NULL);
    }
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* Bad points and bad series are skipped: no event, no crash, and the good
 * ranks are still judged. */
static void
test_malformed(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(16);
    size_t a = s_rank(t, "n0", "step", "0");
    size_t b = s_rank(t, "n1", "step", "1");
    size_t c = s_rank(t, "n2", "step", "2");
    size_t norank = s_new(t, "telem_section_seconds", "n3", "section", "step",
                          NULL, NULL);
    size_t nostep = s_new(t, "telem_section_seconds", "n4", "section", "step",
                          "rank", "4");
    double bad[] = { NAN, -1, 0, INFINITY };
    for (size_t s = 0; s < 60; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        s_step(t, a, ts, 0.5, (int64_t) s);
        s_step(t, b, ts, 0.5, (int64_t) s);
        if (s % 5 == 4) {                       /* bad values for rank 2 */
            s_push(&t->s[c], ts, bad[s / 5 % 4]);
            s_push(&t->s[c + 1], ts, (double) s);
        } else if (s % 5 == 3) {                /* a fractional step */
            s_push(&t->s[c], ts, 9.0);
            s_push(&t->s[c + 1], ts, s + 0.5);
        } else if (s % 5 == 2) {                /* unpaired timestamps */
            s_push(&t->s[c], ts, 9.0);
            s_push(&t->s[c + 1], ts + 1, (double) s);
        } else
            s_step(t, c, ts, 0.5, (int64_t) s);
        s_push(&t->s[norank], ts, 50.0);
        s_push(&t->s[nostep], ts, 50.0);
        s_run(d, t, ts + SEC / 2, ev);
    }
    /* A series whose arrays are missing. */
    det_series_t nul = { "n5", NULL, "telem_section_seconds", NULL, 0, NULL,
                         NULL, 3 };
    det_input_t in = { .now_ns = T0 + 61 * SEC, .series = &nul, .nseries = 1 };
    CHECK_INT(det_run(d, &in, ev), 0);
    CHECK_INT(det_events_count(ev), 0);
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* Timestamps that go back inside a series are taken once. */
static void
test_replayed_points(void)
{
    det_t *d = s_det(NULL);
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(8);
    size_t a = s_rank(t, "n0", "step", "0");
    size_t b = s_rank(t, "n1", "step", "1");
    for (size_t s = 0; s < 40; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        s_step(t, a, ts, 0.5, (int64_t) s);
        s_step(t, b, ts, 0.5, (int64_t) s);
        s_run(d, t, ts + SEC / 2, ev);
        s_run(d, t, ts + SEC / 2, ev);          /* the same data again */
    }
    CHECK_INT(det_events_count(ev), 0);
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

static void
s_line(void *arg, const char *key, const char *value)
{
    if (strcmp(key, "sections") == 0)
        snprintf(arg, 256, "%s", value);
}

/* A job that marks no section: one warning after `nodata` s that says how
 * to add them; none where sections are recorded. */
static void
test_no_sections(void)
{
    det_t *d = s_det((const char *const[]) { "nodata", "10", NULL });
    det_events_t *ev = det_events_new();
    s_tab_t *t = s_tab(4);
    size_t k = s_new(t, "cg_dgemm_seconds", "n0", "gpu", "0", NULL, NULL);
    char sections[256] = "";
    for (size_t s = 0; s < 30; s++) {
        int64_t ts = T0 + (int64_t) s * SEC;
        s_push(&t->s[k], ts, 0.01);
        s_run(d, t, ts, ev);
        if (s == 9)
            CHECK_INT(det_events_count(ev), 0);
    }
    det_describe(d, s_line, sections);
    CHECK_STR(sections, "none recorded yet");
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    if (e) {
        CHECK_INT(e->severity, DET_SEV_WARN);
        CHECK_INT(e->nnodes, 0);
        CHECK(strstr(e->text, "no section recorded in 10 s") == e->text);
        CHECK(strstr(e->text, "telem_section_begin(\"step\")") != NULL);
        CHECK(strstr(e->text, "with telem.section(\"step\"):") != NULL);
    }
    det_events_destroy(&ev);
    det_destroy(&d);
    /* With sections: no warning. */
    d = s_det((const char *const[]) { "nodata", "10", NULL });
    ev = det_events_new();
    size_t r = s_rank(t, "n0", "step", "0");
    for (size_t s = 0; s < 30; s++) {
        int64_t ts = T0 + (int64_t) (30 + s) * SEC;
        s_step(t, r, ts, 0.5, (int64_t) s);
        s_run(d, t, ts, ev);
    }
    CHECK_INT(det_events_count(ev), 0);
    det_describe(d, s_line, sections);
    CHECK(strncmp(sections, "step (", 6) == 0);
    s_tab_free(&t);
    det_events_destroy(&ev);
    det_destroy(&d);
}

/* Parameters: checked together, changed while it runs. */
static void
test_params(void)
{
    det_t *d = s_det(NULL);
    char why[256], buf[64];
    CHECK_INT(det_get(d, "relative", buf, sizeof buf), 0);
    CHECK_STR(buf, "0.75");
    CHECK_INT(det_set(d, "k", "4", why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "k (4) must not exceed n (3)") != NULL);
    CHECK_INT(det_set(d, "stride", "9", why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "stride (9) must not exceed steps (8)") != NULL);
    CHECK_INT(det_set(d, "relative", "1.5", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_set(d, "steps", "x", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_set(d, "nope", "1", why, sizeof why), TELEM_ENOTFOUND);
    det_events_t *ev = det_events_new();
    /* 10 % slower: not at 0.75, found once the threshold is 0.93. */
    s_job_t j = { 4, 1, 50, 3, 1.1, 1.0, 0.01, 10, 1 };
    s_job(&j, d, ev);
    CHECK_INT(det_events_count(ev), 0);
    det_destroy(&d);
    d = s_det((const char *const[]) { "relative", "0.93", NULL });
    long at = s_job(&j, d, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(at >= 10 && at <= 30);
    /* Only the named section is judged. */
    det_destroy(&d);
    det_events_clear(ev);
    d = s_det((const char *const[]) { "relative", "0.93", "section", "fwd",
                                      NULL });
    s_job(&j, d, ev);
    CHECK_INT(det_events_count(ev), 0);
    det_events_destroy(&ev);
    det_destroy(&d);
}

int
main(void)
{
    test_imbalance_warns();
    test_hardware_acts();
    test_short_steps_act_later();
    test_kernels_round_by_round();
    test_recovered_kernels_warn();
    test_no_kernels_warns();
    test_kernels_wait();
    test_health_acts();
    test_phase_quiet();
    test_individual_against_job();
    test_late_and_restarted();
    test_scales();
    test_node_judged_once();
    test_malformed();
    test_replayed_points();
    test_no_sections();
    test_params();
    return check_report("test_detectors_straggler");
}
