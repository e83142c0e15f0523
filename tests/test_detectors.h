/* test_detectors.h - fixed tables for the detector tests (tests only).
 *
 * A table is a set of series (node, device, metric) whose points the test
 * appends round by round, then hands to a detector as a det_input_t, the
 * way telem_watch does.  Noise comes from GSL's generator with a fixed
 * seed, so every run of a test sees the same numbers.
 */
#ifndef TEST_DETECTORS_H
#define TEST_DETECTORS_H

#include "check.h"
#include "det.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FX_UNUSED __attribute__((unused))
#define FX_PTS_MAX 1024
#define FX_T0 INT64_C(1700000000000000000)
#define FX_PERIOD INT64_C(1000000000)

typedef struct {
    char node[128];
    char device[24];
    char metric[64];
    det_tag_t tags[3];
    int64_t ts[FX_PTS_MAX];
    double val[FX_PTS_MAX];
    size_t n;
} fx_series_t;

typedef struct {
    fx_series_t *s;
    size_t n;
    det_series_t *view;
    gsl_rng *rng;
} fx_t;

/* A table of n series of `metric`, `per_node` devices per node; nodes are
 * called n0, n1, ... and devices 0..per_node-1 (tag gpu; no gpu tag when
 * per_node is 0: one node-level series per node). */
FX_UNUSED static fx_t *
fx_new(size_t n, size_t per_node, const char *metric)
{
    fx_t *fx = calloc(1, sizeof *fx);
    fx->s = calloc(n, sizeof *fx->s);
    fx->view = calloc(n, sizeof *fx->view);
    fx->n = n;
    fx->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(fx->rng, 12345);
    for (size_t i = 0; i < n; i++) {
        fx_series_t *s = &fx->s[i];
        snprintf(s->node, sizeof s->node, "n%zu", per_node ? i / per_node : i);
        snprintf(s->device, sizeof s->device, "%zu",
                 per_node ? i % per_node : 0);
        snprintf(s->metric, sizeof s->metric, "%s", metric);
    }
    return fx;
}

FX_UNUSED static void
fx_destroy(fx_t **fx_p)
{
    fx_t *fx = *fx_p;
    gsl_rng_free(fx->rng);
    free(fx->s);
    free(fx->view);
    free(fx);
    *fx_p = NULL;
}

FX_UNUSED static void
fx_push(fx_t *fx, size_t i, int64_t ts, double v)
{
    fx_series_t *s = &fx->s[i];
    if (s->n == FX_PTS_MAX) {               /* keep the newest half */
        memmove(s->ts, s->ts + FX_PTS_MAX / 2, FX_PTS_MAX / 2 * sizeof *s->ts);
        memmove(s->val, s->val + FX_PTS_MAX / 2,
                FX_PTS_MAX / 2 * sizeof *s->val);
        s->n = FX_PTS_MAX / 2;
    }
    s->ts[s->n] = ts;
    s->val[s->n++] = v;
}

/* Gaussian noise factor 1 + N(0, sd). */
FX_UNUSED static double
fx_noise(fx_t *fx, double sd)
{
    return 1 + gsl_ran_gaussian(fx->rng, sd);
}

/* Builds the input: every series (with_gpu: tagged gpu), now = now_ns. */
FX_UNUSED static det_input_t
fx_input(fx_t *fx, int64_t now_ns, int with_gpu)
{
    for (size_t i = 0; i < fx->n; i++) {
        fx_series_t *s = &fx->s[i];
        s->tags[0] = (det_tag_t) { "gpu", s->device };
        s->tags[1] = (det_tag_t) { "host", s->node };
        fx->view[i] = (det_series_t) {
            .node = s->node, .device = with_gpu ? s->device : NULL,
            .metric = s->metric, .tags = with_gpu ? s->tags : s->tags + 1,
            .ntags = with_gpu ? 2 : 1, .ts = s->ts, .val = s->val, .n = s->n,
        };
    }
    return (det_input_t) { .now_ns = now_ns, .series = fx->view,
                           .nseries = fx->n };
}

FX_UNUSED static det_t *
fx_det(const char *name, const char *const *settings)
{
    int err = 0;
    det_t *d = det_new(det_find(name), NULL, &err);
    if (!d) {
        fprintf(stderr, "det_new(%s): %d\n", name, err);
        exit(1);
    }
    for (size_t i = 0; settings && settings[i]; i += 2) {
        char why[256];
        if (det_set(d, settings[i], settings[i + 1], why, sizeof why)) {
            fprintf(stderr, "det_set %s=%s: %s\n", settings[i],
                    settings[i + 1], why);
            exit(1);
        }
    }
    return d;
}

#endif
