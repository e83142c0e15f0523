/* test_detectors_rules.c - threshold, proc-threshold and heartbeat on fixed
 * tables; parameters by name; event lists; the registry.
 *
 * Node names here hold quotes, spaces, commas, UTF-8 and '=' on purpose:
 * detectors treat names as opaque strings.  slowgpu is in
 * test_detectors.c.
 */
#include "test_detectors.h"

#include <math.h>

#define S(x) ((int64_t) (x) * FX_PERIOD)

/* Appends one point per series per second from t0 to t1 (seconds after
 * FX_T0) with value v. */
static void
fill(fx_t *fx, size_t i, int t0, int t1, double v)
{
    for (int t = t0; t <= t1; t++)
        fx_push(fx, i, FX_T0 + S(t), v);
}

static size_t
run_at(det_t *d, fx_t *fx, int t, det_events_t *evs, int with_gpu)
{
    size_t before = det_events_count(evs);
    det_input_t in = fx_input(fx, FX_T0 + S(t), with_gpu);
    CHECK_INT(det_run(d, &in, evs), 0);
    return det_events_count(evs) - before;
}

/* ---- threshold --------------------------------------------------------- */

static void
test_threshold_duration(void)
{
    fx_t *fx = fx_new(3, 0, "cpu_percent");
    snprintf(fx->s[1].node, sizeof fx->s[1].node, "n 'one', \"quoted\" =é");
    det_t *d = fx_det("threshold", (const char *const[]) {
        "metric", "cpu_percent", "op", ">", "value", "90", "duration", "5",
        NULL });
    det_events_t *evs = det_events_new();
    fill(fx, 0, 0, 20, 50);
    fill(fx, 1, 0, 9, 50);
    fill(fx, 1, 10, 20, 95);               /* over 90 from t=10 */
    fill(fx, 2, 0, 20, 90);                /* equal: not > 90 */
    CHECK_INT(run_at(d, fx, 20, evs, 0), 1);
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && e->nnodes == 1 && strcmp(e->nodes[0], fx->s[1].node) == 0);
    CHECK(e && e->severity == DET_SEV_WARN && e->ndevices == 0);
    CHECK(e && fabs(e->score - 95) < 1e-12);
    CHECK(e && strstr(e->text, "for 10 s") != NULL);
    CHECK_INT(run_at(d, fx, 21, evs, 0), 0);        /* reported once */
    fill(fx, 1, 21, 21, 10);                        /* clears */
    CHECK_INT(run_at(d, fx, 22, evs, 0), 0);
    fill(fx, 1, 22, 26, 99);                        /* 4 s: not yet */
    CHECK_INT(run_at(d, fx, 26, evs, 0), 0);
    fill(fx, 1, 27, 27, 99);                        /* 5 s: fires again */
    CHECK_INT(run_at(d, fx, 27, evs, 0), 1);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

static void
test_threshold_ops(void)
{
    static const struct { const char *op; double v; int fires; } cases[] = {
        { ">", 5, 0 }, { ">=", 5, 1 }, { "<", 5, 0 }, { "<=", 5, 1 },
        { "==", 5, 1 }, { "==", 5.5, 0 }, { "<", 6, 1 }, { ">", 4, 1 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fx_t *fx = fx_new(1, 0, "m");
        char v[32];
        snprintf(v, sizeof v, "%g", cases[c].v);
        det_t *d = fx_det("threshold", (const char *const[]) {
            "metric", "m", "op", cases[c].op, "value", v, NULL });
        det_events_t *evs = det_events_new();
        fill(fx, 0, 0, 3, 5);
        fx_push(fx, 0, FX_T0 + S(4), NAN);   /* NaN never satisfies */
        CHECK_INT(run_at(d, fx, 4, evs, 0), 0);
        fill(fx, 0, 5, 5, 5);
        CHECK_INT(run_at(d, fx, 5, evs, 0), (size_t) cases[c].fires);
        det_events_destroy(&evs);
        det_destroy(&d);
        fx_destroy(&fx);
    }
}

/* per=gpu: each device judged on its own, the device named in the event;
 * series without the tag are skipped. */
static void
test_threshold_per_tag(void)
{
    fx_t *fx = fx_new(4, 2, "gpu_temperature");
    det_t *d = fx_det("threshold", (const char *const[]) {
        "metric", "gpu_temperature", "op", ">=", "value", "85", "per", "gpu",
        "severity", "act", NULL });
    det_events_t *evs = det_events_new();
    for (size_t i = 0; i < 4; i++)
        fill(fx, i, 0, 3, i == 3 || i == 2 ? 90 : 60);
    CHECK_INT(run_at(d, fx, 3, evs, 1), 2);
    for (size_t k = 0; k < det_events_count(evs); k++) {
        const det_event_t *e = det_events_get(evs, k);
        CHECK_STR(e->nodes[0], "n1");
        CHECK_INT(e->ndevices, 1);
        CHECK(e->severity == DET_SEV_ACT);
    }
    CHECK_INT(run_at(d, fx, 3, evs, 0), 0);  /* no gpu tag: nothing */
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

static void
test_proc_threshold(void)
{
    fx_t *fx = fx_new(3, 0, "num_running_processes");
    det_t *d = fx_det("proc-threshold", (const char *const[]) {
        "limit", "100", NULL });
    det_events_t *evs = det_events_new();
    fill(fx, 0, 0, 5, 40);
    fill(fx, 1, 0, 5, 100);                /* at the limit: fine */
    fill(fx, 2, 0, 5, 101);
    CHECK_INT(run_at(d, fx, 5, evs, 0), 1);
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && strcmp(e->nodes[0], "n2") == 0 && e->severity == DET_SEV_ACT);
    CHECK_STR(e ? e->detector : NULL, "proc-threshold");
    det_needs_t nd;
    det_needs(d, FX_T0, &nd);
    CHECK_STR(nd.metrics[0], "num_running_processes");
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* ---- heartbeat --------------------------------------------------------- */

static det_input_t
hb_input(fx_t *fx, int t, const char *const *nodes, size_t nnodes,
         const char *const *missing, size_t nmissing)
{
    det_input_t in = fx_input(fx, FX_T0 + S(t), 1);
    in.latest = in.series;
    in.nlatest = in.nseries;
    in.series = NULL;
    in.nseries = 0;
    in.nodes = nodes;
    in.nnodes = nnodes;
    in.missing = missing;
    in.nmissing = nmissing;
    return in;
}

static void
test_heartbeat_nodes(void)
{
    fx_t *fx = fx_new(2, 0, "cpu_percent");
    snprintf(fx->s[1].node, sizeof fx->s[1].node, "node \"b\" ünïcode");
    const char *nodes[] = { "n0", fx->s[1].node, "never" };
    det_t *d = fx_det("heartbeat", (const char *const[]) { "timeout", "5",
                      NULL });
    det_events_t *evs = det_events_new();
    det_needs_t nd;
    det_needs(d, FX_T0, &nd);
    CHECK(nd.latest == 1 && nd.nlatest_metrics == 0 && nd.nmetrics == 0);
    fill(fx, 0, 0, 0, 1);
    fill(fx, 1, 0, 0, 1);
    for (int t = 0; t <= 4; t++) {
        fill(fx, 0, t, t, 1);
        fill(fx, 1, t, t, 1);
        det_input_t in = hb_input(fx, t, nodes, 3, NULL, 0);
        CHECK_INT(det_run(d, &in, evs), 0);
    }
    CHECK_INT(det_events_count(evs), 0);
    /* Node b stops answering at t=5: lost once its newest point (t=4) is
     * more than 5 s old; "never" (no data at all) when its grace is over. */
    const char *missing[] = { fx->s[1].node };
    size_t lost_b = 0, lost_never = 0;
    for (int t = 5; t <= 12; t++) {
        fill(fx, 0, t, t, 1);
        fx->s[1].n = 5;                     /* nothing new from b */
        det_input_t in = hb_input(fx, t, nodes, 3, missing, 1);
        size_t before = det_events_count(evs);
        CHECK_INT(det_run(d, &in, evs), 0);
        for (size_t k = before; k < det_events_count(evs); k++) {
            const det_event_t *e = det_events_get(evs, k);
            if (strcmp(e->nodes[0], fx->s[1].node) == 0) {
                lost_b++;
                CHECK(t == 10);
                CHECK(strstr(e->text, "did not answer") != NULL);
            } else if (strcmp(e->nodes[0], "never") == 0) {
                lost_never++;
                CHECK(t == 6);
            } else {
                CHECK(0);
            }
        }
    }
    CHECK_INT(lost_b, 1);
    CHECK_INT(lost_never, 1);
    /* b comes back, then goes quiet again: reported a second time. */
    fill(fx, 1, 13, 13, 1);
    det_input_t in = hb_input(fx, 13, nodes, 3, NULL, 0);
    CHECK_INT(det_run(d, &in, evs), 0);
    size_t before = det_events_count(evs);
    in = hb_input(fx, 19, nodes, 3, NULL, 0);
    CHECK_INT(det_run(d, &in, evs), 0);
    CHECK_INT(det_events_count(evs) - before, 2);   /* b and n0 */
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* per=gpu with a metric: one collector of a node going quiet is named
 * with its device while the node itself keeps reporting. */
static void
test_heartbeat_collectors(void)
{
    fx_t *fx = fx_new(4, 2, "cg_dgemm_seconds");
    det_t *d = fx_det("heartbeat", (const char *const[]) {
        "timeout", "3", "metric", "cg_dgemm_seconds", "per", "gpu", NULL });
    det_events_t *evs = det_events_new();
    det_needs_t nd;
    det_needs(d, FX_T0, &nd);
    CHECK(nd.latest == 1 && nd.nlatest_metrics == 1);
    for (int t = 0; t <= 10; t++) {
        for (size_t i = 0; i < 4; i++)
            if (!(i == 3 && t > 4))
                fill(fx, i, t, t, 0.01);
        det_input_t in = hb_input(fx, t, NULL, 0, NULL, 0);
        CHECK_INT(det_run(d, &in, evs), 0);
    }
    CHECK_INT(det_events_count(evs), 1);
    const det_event_t *e = det_events_get(evs, 0);
    CHECK(e && e->ndevices == 1 && strcmp(e->devices[0].node, "n1") == 0 &&
          strcmp(e->devices[0].device, "1") == 0);
    CHECK(e && e->nevidence >= 1 && e->evidence[0].value > 3);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* ---- parameters -------------------------------------------------------- */

static void
test_params(void)
{
    det_t *d = fx_det("slowgpu", NULL);
    char buf[DET_VALUE_MAX + 1], why[256];
    CHECK_INT(det_get(d, "effect", buf, sizeof buf), 0);
    CHECK_STR(buf, "0.06");
    CHECK_INT(det_get(d, "metric", buf, sizeof buf), 0);
    CHECK_STR(buf, "cg_dgemm_seconds");
    CHECK_INT(det_set(d, "effect", "0.1", why, sizeof why), 0);
    CHECK_INT(det_get(d, "effect", buf, sizeof buf), 0);
    CHECK_STR(buf, "0.1");
    CHECK_INT(det_set(d, "effect", "abc", why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "not a number") != NULL);
    CHECK_INT(det_set(d, "effect", "11", why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "out of range") != NULL);
    CHECK_INT(det_set(d, "effect", "nan", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_set(d, "k", "1.5", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_set(d, "nope", "1", why, sizeof why), TELEM_ENOTFOUND);
    CHECK_INT(det_set(d, "rule", "zscore", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_set(d, "rule", "both", why, sizeof why), 0);
    CHECK_INT(det_set(d, "metric", "", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_get(d, "metric", buf, sizeof buf), 0);
    CHECK_STR(buf, "cg_dgemm_seconds");     /* refused: unchanged */
    CHECK_INT(det_get(d, "effect", buf, 2), TELEM_ETOOBIG);
    CHECK_INT(det_get(d, "nope", buf, sizeof buf), TELEM_ENOTFOUND);
    /* Every parameter of every detector reads back what its default is. */
    size_t n;
    const det_vtable_t *const *all = det_registry(&n);
    CHECK_INT(n, 6);
    for (size_t i = 0; i < n; i++) {
        det_t *x = fx_det(all[i]->name, NULL);
        CHECK(det_find(all[i]->name) == all[i]);
        CHECK(all[i]->doc && *all[i]->doc);
        for (size_t j = 0; j < all[i]->nparams; j++) {
            const det_param_def_t *pd = &all[i]->params[j];
            CHECK(pd->doc && *pd->doc);
            CHECK_INT(det_get(x, pd->name, buf, sizeof buf), 0);
            if (pd->type == DET_PARAM_NUM)
                CHECK(strtod(buf, NULL) == pd->def);
        }
        det_destroy(&x);
    }
    CHECK(det_find("nope") == NULL);
    int err = 0;
    CHECK(det_new(det_find("slowgpu"), "bad\nlabel", &err) == NULL);
    CHECK_INT(err, TELEM_EINVAL);
    det_t *l = det_new(det_find("threshold"), "hot cpu", &err);
    CHECK(l && strcmp(det_label(l), "hot cpu") == 0);
    det_destroy(&l);
    det_destroy(&l);                        /* NULL is fine */
    det_destroy(&d);
}

/* A paused detector does nothing; it resumes where it was. */
static void
test_pause(void)
{
    fx_t *fx = fx_new(1, 0, "m");
    det_t *d = fx_det("threshold", (const char *const[]) { "metric", "m",
                      NULL });
    det_events_t *evs = det_events_new();
    fill(fx, 0, 0, 3, 1);
    det_pause(d, 1);
    CHECK_INT(det_paused(d), 1);
    CHECK_INT(run_at(d, fx, 3, evs, 0), 0);
    CHECK_INT(det_runs(d), 0);
    det_pause(d, 0);
    CHECK_INT(run_at(d, fx, 3, evs, 0), 1);
    CHECK_INT(det_runs(d), 1);
    CHECK_INT(det_nevents(d), 1);
    det_events_destroy(&evs);
    det_destroy(&d);
    fx_destroy(&fx);
}

/* ---- event lists ------------------------------------------------------- */

static void
test_events_copy_and_dedupe(void)
{
    det_events_t *evs = det_events_new();
    char node[32] = "a \"quoted\" host";
    const char *nodes[] = { node, "b", node, "b" };
    det_device_t devs[] = { { node, "0" }, { "c", "1" }, { node, "0" } };
    det_evidence_t ev[] = { { "ratio", 1.2 } };
    det_event_t e = {
        .detector = "x", .severity = DET_SEV_ACT, .ts_ns = 7, .nodes = nodes,
        .nnodes = 4, .devices = devs, .ndevices = 3, .score = 0.2,
        .evidence = ev, .nevidence = 1, .text = "t",
    };
    CHECK_INT(det_events_add(evs, &e), 0);
    node[0] = 'Z';                          /* the copy is independent */
    const det_event_t *c = det_events_get(evs, 0);
    CHECK_INT(c->nnodes, 3);                /* a.., b, c (from devices) */
    CHECK_STR(c->nodes[0], "a \"quoted\" host");
    CHECK_STR(c->nodes[1], "b");
    CHECK_STR(c->nodes[2], "c");
    CHECK_INT(c->ndevices, 2);
    CHECK_STR(c->evidence[0].name, "ratio");
    CHECK(c->evidence[0].value == 1.2);
    e.severity = 0;
    CHECK_INT(det_events_add(evs, &e), TELEM_EINVAL);
    e.severity = DET_SEV_WARN;
    e.text = NULL;
    CHECK_INT(det_events_add(evs, &e), TELEM_EINVAL);
    CHECK_INT(det_events_count(evs), 1);
    CHECK(det_events_get(evs, 1) == NULL);
    CHECK_STR(det_severity_name(DET_SEV_ACT), "act");
    CHECK_STR(det_severity_name(DET_SEV_WARN), "warn");
    det_events_clear(evs);
    CHECK_INT(det_events_count(evs), 0);
    det_events_destroy(&evs);
    det_events_destroy(&evs);
}

int
main(void)
{
    test_threshold_duration();
    test_threshold_ops();
    test_threshold_per_tag();
    test_proc_threshold();
    test_heartbeat_nodes();
    test_heartbeat_collectors();
    test_params();
    test_pause();
    test_events_copy_and_dedupe();
    return check_report("test_detectors_rules");
}
