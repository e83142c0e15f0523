/* test_detectors_gpu_health.c - the gpu-health detector's rules on
 * scripted series: what acts (fatal XIDs, growing uncorrectable ECC
 * errors, a row-remapping failure, a lost or unanswering GPU, a recovery
 * action), what only warns (lasting throttling, corrected-error storms,
 * InfiniBand ports down, flapping or counting errors), what stays quiet (a
 * clean run, a non-fatal condition, bad data), each reported once with
 * the GPU, the field and from -> to; its parameters checked and changed
 * while it runs.
 */
#include "check.h"
#include "det.h"
#include "watch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define T0 INT64_C(1700000000000000000)
#define SEC INT64_C(1000000000)
#define PTS 256
#define SERIES 16

typedef struct {
    char node[16], metric[64];
    det_tag_t tags[4];
    char tv[4][32];
    size_t ntags;
    int64_t ts[PTS];
    double val[PTS];
    size_t n;
} s_ser_t;

typedef struct {
    s_ser_t s[SERIES];
    size_t n;
    s_ser_t l[SERIES];        /* LATEST answers */
    size_t nl;
    det_series_t view[SERIES], lview[SERIES];
} s_tab_t;

/* A series: node, metric, then up to three tag pairs (key, value, ...). */
static s_ser_t *
s_new(s_ser_t *v, size_t *n, const char *node, const char *metric,
      const char *k1, const char *v1, const char *k2, const char *v2)
{
    s_ser_t *s = &v[(*n)++];
    memset(s, 0, sizeof *s);
    snprintf(s->node, sizeof s->node, "%s", node);
    snprintf(s->metric, sizeof s->metric, "%s", metric);
    const char *kv[] = { k1, v1, k2, v2, "host", node };
    for (size_t i = 0; i < 6; i += 2) {
        if (!kv[i])
            continue;
        snprintf(s->tv[s->ntags], sizeof s->tv[0], "%s", kv[i + 1]);
        s->tags[s->ntags] = (det_tag_t) { kv[i], s->tv[s->ntags] };
        s->ntags++;
    }
    return s;
}

static s_ser_t *
s_gpu(s_tab_t *t, const char *node, const char *metric, const char *gpu,
      const char *k, const char *v)
{
    return s_new(t->s, &t->n, node, metric, "gpu", gpu, k, v);
}

static void
s_push(s_ser_t *s, int64_t ts, double v)
{
    s->ts[s->n] = ts;
    s->val[s->n++] = v;
}

static det_input_t
s_input(s_tab_t *t, int64_t now)
{
    for (size_t i = 0; i < t->n; i++)
        t->view[i] = (det_series_t) { t->s[i].node, NULL, t->s[i].metric,
                                      t->s[i].tags, t->s[i].ntags,
                                      t->s[i].ts, t->s[i].val, t->s[i].n };
    for (size_t i = 0; i < t->nl; i++)
        t->lview[i] = (det_series_t) { t->l[i].node, NULL, t->l[i].metric,
                                       t->l[i].tags, t->l[i].ntags,
                                       t->l[i].ts, t->l[i].val, t->l[i].n };
    return (det_input_t) { .now_ns = now, .series = t->view,
                           .nseries = t->n, .latest = t->lview,
                           .nlatest = t->nl };
}

static det_t *
s_det(const char *const *settings)
{
    det_t *d = det_new(det_find("gpu-health"), NULL, NULL);
    CHECK(d != NULL);
    for (size_t i = 0; settings && settings[i]; i += 2) {
        char why[256];
        int rc = det_set(d, settings[i], settings[i + 1], why, sizeof why);
        if (rc)
            fprintf(stderr, "det_set %s=%s: %s\n", settings[i],
                    settings[i + 1], why);
        CHECK_INT(rc, 0);
    }
    return d;
}

/* Runs d on t at now; returns the events (cleared first). */
static const det_events_t *
s_run(det_t *d, s_tab_t *t, int64_t now, det_events_t *ev)
{
    det_events_clear(ev);
    det_input_t in = s_input(t, now);
    CHECK_INT(det_run(d, &in, ev), 0);
    return ev;
}

static int
s_has(const det_events_t *ev, size_t i, const char *text)
{
    const det_event_t *e = det_events_get(ev, i);
    if (e && strstr(e->text, text))
        return 1;
    fprintf(stderr, "event %zu: '%s' lacks '%s'\n", i, e ? e->text : "(none)",
            text);
    return 0;
}

/* ---- parameters -------------------------------------------------------- */

static void
test_params(void)
{
    det_t *d = s_det(NULL);
    char why[256], buf[256];
    CHECK_INT(det_get(d, "xid", buf, sizeof buf), 0);
    CHECK(strcmp(buf, "table") == 0);
    CHECK_INT(det_set(d, "xid", "table+13+43", why, sizeof why), 0);
    CHECK_INT(det_set(d, "xid", "48+79", why, sizeof why), 0);
    const char *bad[] = { "", "tab", "13+", "+13", "0", "12345", "1 3",
                          "table+-1", NULL };
    for (size_t i = 0; bad[i]; i++)
        CHECK_INT(det_set(d, "xid", bad[i], why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_get(d, "xid", buf, sizeof buf), 0);
    CHECK(strcmp(buf, "48+79") == 0);      /* a refusal changes nothing */
    CHECK_INT(det_set(d, "throttle_reasons", "Hw Slowdown", why, sizeof why),
              TELEM_EINVAL);
    CHECK_INT(det_set(d, "throttle_reasons", "", why, sizeof why), 0);
    CHECK_INT(det_set(d, "throttle_k", "6", why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "throttle_k") != NULL);
    CHECK_INT(det_set(d, "recovery", "5", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_set(d, "ecc_uncorrected", "-1", why, sizeof why),
              TELEM_EINVAL);
    CHECK_INT(det_set(d, "silent", "x", why, sizeof why), TELEM_EINVAL);
    CHECK_INT(det_set(d, "nosuch", "1", why, sizeof why), TELEM_ENOTFOUND);
    det_needs_t nd;
    det_needs(d, T0, &nd);
    CHECK_INT(nd.nmetrics, 16);
    CHECK(nd.latest == 1 && nd.nlatest_metrics == 0);
    CHECK(nd.start_ns == T0 - 60 * SEC);
    CHECK_INT(det_set(d, "silent", "0", why, sizeof why), 0);
    det_needs(d, T0, &nd);
    CHECK(nd.latest == 0);
    det_destroy(&d);
}

/* ---- acting rules ------------------------------------------------------ */

static void
test_xid(void)
{
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det((const char *[]) { "silent", "0", NULL });
    s_ser_t *temp = s_gpu(&t, "n2", "gpu_clocks_event", "0", "reason",
                          "gpu_idle");
    for (int i = 0; i < 5; i++)
        s_push(temp, T0 + i * SEC, 0);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 5 * SEC, ev)), 0);
    /* XID 79 appears on n2's GPU 0: one act event naming all of it. */
    s_ser_t *x = s_gpu(&t, "n2", "gpu_xid_total", "0", "xid", "79");
    s_push(x, T0 + 6 * SEC, 1);
    s_push(x, T0 + 7 * SEC, 1);
    s_run(d, &t, T0 + 7 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    CHECK(e && e->severity == DET_SEV_ACT);
    CHECK(e && e->nnodes == 1 && strcmp(e->nodes[0], "n2") == 0);
    CHECK(e && e->ndevices == 1 && strcmp(e->devices[0].device, "0") == 0);
    CHECK(s_has(ev, 0, "GPU 0 on node 'n2': XID 79 (GPU has fallen off the "
                       "bus): gpu_xid_total{xid=79} 0 -> 1"));
    CHECK(e && e->ts_ns == T0 + 6 * SEC && e->score == 1);
    /* Seen again: nothing new; it grows: once more. */
    s_push(x, T0 + 8 * SEC, 1);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 8 * SEC, ev)), 0);
    s_push(x, T0 + 9 * SEC, 2);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 9 * SEC, ev)), 1);
    CHECK(s_has(ev, 0, "1 -> 2"));
    /* A non-fatal XID warns, with its meaning; xid= makes it act. */
    s_ser_t *x13 = s_gpu(&t, "n1", "gpu_xid_total", "3", "xid", "13");
    s_push(x13, T0 + 10 * SEC, 1);
    s_run(d, &t, T0 + 10 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_WARN);
    CHECK(s_has(ev, 0, "XID 13 (graphics engine exception)"));
    char why[128];
    CHECK_INT(det_set(d, "xid", "table+13", why, sizeof why), 0);
    s_push(x13, T0 + 11 * SEC, 2);
    s_run(d, &t, T0 + 11 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_ACT);
    /* An XID outside the table: named as such. */
    s_ser_t *x999 = s_gpu(&t, "n1", "gpu_xid_total", "3", "xid", "999");
    s_push(x999, T0 + 12 * SEC, 1);
    s_run(d, &t, T0 + 12 * SEC, ev);
    CHECK(s_has(ev, 0, "XID 999 (not in the table of fatal XIDs)"));
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_WARN);
    /* 63 acts only where row remapping failed. */
    s_ser_t *x63 = s_gpu(&t, "n3", "gpu_xid_total", "1", "xid", "63");
    s_push(x63, T0 + 13 * SEC, 1);
    s_run(d, &t, T0 + 13 * SEC, ev);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_WARN);
    CHECK(s_has(ev, 0, "row remapping did not fail"));
    s_ser_t *rf = s_gpu(&t, "n3", "gpu_remapped_rows_failure", "1", NULL,
                        NULL);
    s_push(rf, T0 + 14 * SEC, 1);
    s_run(d, &t, T0 + 14 * SEC, ev);        /* the failure itself acts */
    CHECK_INT(det_events_count(ev), 1);
    s_push(x63, T0 + 15 * SEC, 2);
    s_push(rf, T0 + 15 * SEC, 1);
    s_run(d, &t, T0 + 15 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_ACT);
    CHECK(s_has(ev, 0, "XID 63 (ECC page retirement or row remapping "
                       "recording event) with row remapping failed"));
    det_destroy(&d);
    det_events_destroy(&ev);
}

/* The catalog's reset class acts, NVLink5 codes decided by a subcode the
 * event lacks warn; each with the catalog's meaning. */
static void
test_xid_catalog(void)
{
    static const struct {
        const char *code;
        int act;
        const char *meaning;
    } want[] = {
        { "46", 1, "GPU stopped processing (GPU timeout)" },
        { "109", 1, "context switch timeout error" },
        { "143", 1, "GPU initialization error" },
        { "149", 1, "NVLink NETIR error (link fatal)" },
        { "158", 1, "GPU fatal timeout" },
        { "167", 1, "PCIe fatal timeout" },
        { "92", 1, "high single-bit ECC error rate" },
        { "94", 1, "contained ECC error" },
        { "144", 0, "NVLink SAW error" },
        { "157", 0, "resource retirement failure" },
        { "171", 0, "uncorrectable DRAM error (detail of XID 48)" },
    };
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det((const char *[]) { "silent", "0", NULL });
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char gpu[8], text[160];
        snprintf(gpu, sizeof gpu, "%zu", i);
        s_ser_t *x = s_gpu(&t, "n1", "gpu_xid_total", gpu, "xid",
                           want[i].code);
        s_push(x, T0 + (int64_t) (i + 1) * SEC, 1);
        s_run(d, &t, T0 + (int64_t) (i + 1) * SEC, ev);
        CHECK_INT(det_events_count(ev), 1);
        CHECK(det_events_get(ev, 0)->severity
              == (want[i].act ? DET_SEV_ACT : DET_SEV_WARN));
        snprintf(text, sizeof text, "XID %s (%s)", want[i].code,
                 want[i].meaning);
        CHECK(s_has(ev, 0, text));
    }
    det_destroy(&d);
    det_events_destroy(&ev);
}

static void
test_ecc_and_levels(void)
{
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det((const char *[]) { "silent", "0", NULL });
    s_ser_t *u = s_gpu(&t, "n2", "gpu_ecc_uncorrected_errors_total", "0",
                       NULL, NULL);
    s_ser_t *old = s_gpu(&t, "n1", "gpu_ecc_uncorrected_errors_total", "0",
                         NULL, NULL);
    s_ser_t *rf = s_gpu(&t, "n2", "gpu_remapped_rows_failure", "1", NULL,
                        NULL);
    s_ser_t *lost = s_gpu(&t, "n1", "gpu_lost", "2", NULL, NULL);
    s_ser_t *rec = s_gpu(&t, "n3", "gpu_recovery_action", "0", NULL, NULL);
    for (int i = 0; i < 3; i++) {
        s_push(u, T0 + i * SEC, 0);
        s_push(old, T0 + i * SEC, 5);     /* errors from before the job */
        s_push(rf, T0 + i * SEC, 0);
        s_push(lost, T0 + i * SEC, 0);
        s_push(rec, T0 + i * SEC, 0);
    }
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 3 * SEC, ev)), 0);
    s_push(u, T0 + 3 * SEC, 1);
    s_push(old, T0 + 3 * SEC, 5);
    s_run(d, &t, T0 + 4 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_ACT);
    CHECK(s_has(ev, 0, "GPU 0 on node 'n2': uncorrectable ECC errors grew: "
                       "gpu_ecc_uncorrected_errors_total 0 -> 1"));
    /* Levels: each reported once while it holds, again after it cleared. */
    s_push(rf, T0 + 4 * SEC, 1);
    s_push(lost, T0 + 4 * SEC, 1);
    s_push(rec, T0 + 4 * SEC, 1);
    s_run(d, &t, T0 + 5 * SEC, ev);
    CHECK_INT(det_events_count(ev), 3);
    for (size_t i = 0; i < det_events_count(ev); i++)
        CHECK(det_events_get(ev, i)->severity == DET_SEV_ACT);
    CHECK(s_has(ev, 0, "GPU 1 on node 'n2': row remapping failed, the GPU "
                       "needs service: gpu_remapped_rows_failure 0 -> 1"));
    CHECK(s_has(ev, 1, "GPU 2 on node 'n1': GPU lost"));
    CHECK(s_has(ev, 2, "the driver asks for recovery: GPU reset: "
                       "gpu_recovery_action 0 -> 1"));
    s_push(rf, T0 + 5 * SEC, 1);
    s_push(lost, T0 + 5 * SEC, 1);
    s_push(rec, T0 + 5 * SEC, 1);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 6 * SEC, ev)), 0);
    s_push(rf, T0 + 6 * SEC, 0);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 7 * SEC, ev)), 0);
    s_push(rf, T0 + 7 * SEC, 1);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 8 * SEC, ev)), 1);
    /* recovery=2: a reset request no longer acts, a drain does. */
    char why[128];
    CHECK_INT(det_set(d, "recovery", "2", why, sizeof why), 0);
    s_push(rec, T0 + 8 * SEC, 0);
    s_push(rec, T0 + 9 * SEC, 1);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 9 * SEC, ev)), 0);
    s_push(rec, T0 + 10 * SEC, 3);
    s_run(d, &t, T0 + 10 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(s_has(ev, 0, "drain peer-to-peer: gpu_recovery_action 1 -> 3"));
    det_destroy(&d);
    det_events_destroy(&ev);
}

static void
test_silence(void)
{
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det(NULL);                 /* silent 15 s */
    s_ser_t *cpu = s_new(t.l, &t.nl, "n1", "cpu_percent", NULL, NULL, NULL,
                         NULL);
    s_ser_t *g0 = s_new(t.l, &t.nl, "n1", "gpu_temperature_c", "gpu", "0",
                        NULL, NULL);
    s_ser_t *g1 = s_new(t.l, &t.nl, "n1", "gpu_temperature_c", "gpu", "1",
                        NULL, NULL);
    s_ser_t *x1 = s_new(t.l, &t.nl, "n1", "gpu_xid_total", "gpu", "1",
                        "xid", "13");
    s_push(cpu, T0, 1);
    s_push(g0, T0, 40);
    s_push(g1, T0, 40);
    s_push(x1, T0, 1);
    CHECK_INT(det_events_count(s_run(d, &t, T0, ev)), 0);
    /* GPU 1's series stop (its XID count goes on): after 15 s it acts. */
    cpu->ts[0] = g0->ts[0] = x1->ts[0] = T0 + 10 * SEC;
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 10 * SEC, ev)), 0);
    cpu->ts[0] = g0->ts[0] = x1->ts[0] = T0 + 20 * SEC;
    s_run(d, &t, T0 + 20 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_ACT);
    CHECK(s_has(ev, 0, "GPU 1 on node 'n1': stopped answering: its gpu_* "
                       "series lag 20 s"));
    cpu->ts[0] = g0->ts[0] = T0 + 30 * SEC;
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 30 * SEC, ev)), 0);
    /* The node itself silent (no answer): nothing more is said. */
    t.nl = 0;
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 90 * SEC, ev)), 0);
    det_destroy(&d);
    det_events_destroy(&ev);
}

/* ---- warnings ---------------------------------------------------------- */

static void
test_throttle_and_storms(void)
{
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det((const char *[]) { "silent", "0", NULL });
    s_ser_t *th = s_gpu(&t, "n2", "gpu_clocks_event", "0", "reason",
                        "hw_thermal_slowdown");
    s_ser_t *idle = s_gpu(&t, "n2", "gpu_clocks_event", "0", "reason",
                          "gpu_idle");
    s_ser_t *ce = s_gpu(&t, "n1", "gpu_ecc_corrected_errors_total", "0",
                        NULL, NULL);
    s_ser_t *ce2 = s_gpu(&t, "n1", "gpu_ecc_corrected_errors_total", "1",
                         NULL, NULL);
    /* 1 0 1 1: three of the last five, no warning; the fourth warns. */
    double pat[] = { 1, 0, 1, 1 };
    for (int i = 0; i < 4; i++) {
        s_push(th, T0 + i * SEC, pat[i]);
        s_push(idle, T0 + i * SEC, 1);
        s_push(ce, T0 + i * SEC, 100 + 50 * i);   /* 50 per second */
        s_push(ce2, T0 + i * SEC, i < 2 ? 0 : 1); /* one */
    }
    s_run(d, &t, T0 + 4 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_WARN);
    CHECK(s_has(ev, 0, "GPU 0 on node 'n1': corrected ECC error storm: "
                       "gpu_ecc_corrected_errors_total 100 -> 250 in 3 s "
                       "(50 /s"));
    s_push(th, T0 + 4 * SEC, 1);
    s_run(d, &t, T0 + 5 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(det_events_get(ev, 0)->severity == DET_SEV_WARN);
    CHECK(s_has(ev, 0, "GPU 0 on node 'n2': throttled (hw_thermal_slowdown)"
                       ": gpu_clocks_event{reason=hw_thermal_slowdown} 0 -> 1"
                       ", held in 4 of its last 5 samples"));
    s_push(th, T0 + 5 * SEC, 1);
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 6 * SEC, ev)), 0);
    /* Off: throttle_reasons without it. */
    char why[128];
    CHECK_INT(det_set(d, "throttle_reasons", "sw_power_cap", why,
                      sizeof why), 0);
    for (int i = 6; i < 12; i++)
        s_push(th, T0 + i * SEC, 0);
    s_run(d, &t, T0 + 12 * SEC, ev);
    CHECK_INT(det_events_count(ev), 0);
    det_destroy(&d);
    det_events_destroy(&ev);
}

/* AMD's and Intel's reason names are in the default list (AMD's by
 * prefix: temp_*, ppt*); a range the user set (Intel's sw_range) is not. */
static void
test_throttle_vendors(void)
{
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det((const char *[]) { "silent", "0", NULL });
    s_ser_t *amd = s_gpu(&t, "n1", "gpu_clocks_event", "0", "reason",
                         "temp_hotspot");
    s_ser_t *intel = s_gpu(&t, "n2", "gpu_clocks_event", "1", "reason",
                           "thermal_limit");
    s_ser_t *range = s_gpu(&t, "n2", "gpu_clocks_event", "0", "reason",
                           "sw_range");
    for (int i = 0; i < 5; i++) {
        s_push(amd, T0 + i * SEC, 1);
        s_push(intel, T0 + i * SEC, 1);
        s_push(range, T0 + i * SEC, 1);
    }
    s_run(d, &t, T0 + 5 * SEC, ev);
    CHECK_INT(det_events_count(ev), 2);
    int amd_seen = 0, intel_seen = 0;
    for (size_t i = 0; i < det_events_count(ev); i++) {
        const char *text = det_events_get(ev, i)->text;
        amd_seen += strstr(text, "GPU 0 on node 'n1': throttled "
                                 "(temp_hotspot)") != NULL;
        intel_seen += strstr(text, "GPU 1 on node 'n2': throttled "
                                   "(thermal_limit)") != NULL;
    }
    CHECK_INT(amd_seen, 1);
    CHECK_INT(intel_seen, 1);
    char why[256];
    const char *bad[] = { "*", "te*mp", "*temp", "temp_**", NULL };
    for (size_t i = 0; bad[i]; i++)
        CHECK_INT(det_set(d, "throttle_reasons", bad[i], why, sizeof why),
                  TELEM_EINVAL);
    CHECK_INT(det_set(d, "throttle_reasons", "sw_*", why, sizeof why), 0);
    for (int i = 5; i < 10; i++)
        s_push(range, T0 + i * SEC, 1);
    s_run(d, &t, T0 + 10 * SEC, ev);
    CHECK_INT(det_events_count(ev), 1);
    CHECK(s_has(ev, 0, "GPU 0 on node 'n2': throttled (sw_range)"));
    det_destroy(&d);
    det_events_destroy(&ev);
}

static void
test_ib(void)
{
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det((const char *[]) { "silent", "0", NULL });
    s_ser_t *st = s_new(t.s, &t.n, "n1", "ib_state", "device", "mlx5_0",
                        "port", "1");
    s_ser_t *fl = s_new(t.s, &t.n, "n2", "ib_state", "device", "mlx5_1",
                        "port", "1");
    s_ser_t *se = s_new(t.s, &t.n, "n3", "ib_symbol_error_total", "device",
                        "mlx5_0", "port", "1");
    s_ser_t *ok = s_new(t.s, &t.n, "n3", "ib_port_rcv_errors_total",
                        "device", "mlx5_0", "port", "1");
    for (int i = 0; i < 3; i++) {
        s_push(st, T0 + i * SEC, 4);
        s_push(fl, T0 + i * SEC, 4);
        s_push(se, T0 + i * SEC, 7);
        s_push(ok, T0 + i * SEC, 2);
    }
    CHECK_INT(det_events_count(s_run(d, &t, T0 + 3 * SEC, ev)), 0);
    s_push(st, T0 + 3 * SEC, 1);
    s_push(se, T0 + 3 * SEC, 19);
    s_run(d, &t, T0 + 4 * SEC, ev);
    CHECK_INT(det_events_count(ev), 2);
    CHECK(s_has(ev, 0, "InfiniBand mlx5_0/1 on node 'n1': link down: "
                       "ib_state 4 -> 1 (4 is active)"));
    CHECK(s_has(ev, 1, "InfiniBand mlx5_0/1 on node 'n3': InfiniBand error "
                       "counter grew: ib_symbol_error_total 7 -> 19"));
    for (size_t i = 0; i < det_events_count(ev); i++) {
        CHECK(det_events_get(ev, i)->severity == DET_SEV_WARN);
        CHECK_INT(det_events_get(ev, i)->ndevices, 0);
    }
    /* The port flaps: 4 1 4 1 within the window: down (twice: it came
     * back in between), then flapping. */
    double f[] = { 1, 4, 1 };
    for (int i = 0; i < 3; i++)
        s_push(fl, T0 + (4 + i) * SEC, f[i]);
    s_run(d, &t, T0 + 7 * SEC, ev);
    CHECK_INT(det_events_count(ev), 3);
    CHECK(s_has(ev, 0, "link down: ib_state 4 -> 1"));
    CHECK(s_has(ev, 1, "link down: ib_state 4 -> 1"));
    CHECK(s_has(ev, 2, "InfiniBand mlx5_1/1 on node 'n2': link flapping: "
                       "ib_state 4 -> 1, 3 changes of state"));
    det_destroy(&d);
    det_events_destroy(&ev);
}

/* ---- quiet ------------------------------------------------------------- */

static void
test_clean_and_bad(void)
{
    s_tab_t t = { 0 };
    det_events_t *ev = det_events_new();
    det_t *d = s_det(NULL);
    const char *gpus[] = { "0", "1" };
    s_ser_t *v[8];
    size_t nv = 0;
    for (size_t g = 0; g < 2; g++) {
        v[nv++] = s_gpu(&t, "n1", "gpu_ecc_uncorrected_errors_total",
                        gpus[g], NULL, NULL);
        v[nv++] = s_gpu(&t, "n1", "gpu_clocks_event", gpus[g], "reason",
                        "sw_power_cap");
        v[nv++] = s_gpu(&t, "n1", "gpu_lost", gpus[g], NULL, NULL);
        v[nv++] = s_gpu(&t, "n1", "gpu_recovery_action", gpus[g], NULL,
                        NULL);
    }
    s_ser_t *temp = s_new(t.l, &t.nl, "n1", "gpu_temperature_c", "gpu", "0",
                          NULL, NULL);
    s_ser_t *cpu = s_new(t.l, &t.nl, "n1", "cpu_percent", NULL, NULL, NULL,
                         NULL);
    size_t total = 0;
    for (int r = 0; r < 100; r++) {
        for (size_t i = 0; i < nv; i++)   /* power cap 1 in 3 samples */
            s_push(v[i], T0 + r * SEC, i % 4 == 1 ? r % 3 == 0 : 0);
        temp->ts[0] = cpu->ts[0] = T0 + r * SEC;
        temp->n = cpu->n = 1;
        total += det_events_count(s_run(d, &t, T0 + r * SEC, ev));
        if (r % 40 == 39)                 /* a window's worth kept */
            for (size_t i = 0; i < nv; i++)
                v[i]->n = 0;
    }
    CHECK_INT(total, 0);
    CHECK_INT(det_runs(d), 100);
    /* Bad data: NaN values, no tags, an unknown metric, empty series. */
    s_tab_t b = { 0 };
    s_ser_t *nan = s_gpu(&b, "n1", "gpu_lost", "0", NULL, NULL);
    s_push(nan, T0, NAN);
    s_ser_t *bare = s_new(b.s, &b.n, "n1", "gpu_xid_total", NULL, NULL, NULL,
                          NULL);
    s_push(bare, T0, 1);
    s_ser_t *other = s_new(b.s, &b.n, "n1", "something_else", NULL, NULL,
                           NULL, NULL);
    s_push(other, T0, 1);
    s_new(b.s, &b.n, "n1", "gpu_remapped_rows_failure", "gpu", "0", NULL,
          NULL);
    det_t *d2 = s_det(NULL);
    s_run(d2, &b, T0 + SEC, ev);
    for (size_t i = 0; i < det_events_count(ev); i++)
        CHECK(det_events_get(ev, i)->severity == DET_SEV_WARN);
    det_destroy(&d2);
    det_destroy(&d);
    det_events_destroy(&ev);
}

/* ---- beside slowgpu: one device, one event ---------------------------- */

static void
s_event(det_events_t *ev, const char *det, det_severity_t sev,
        const char *node, const char *dev, const char *text)
{
    det_device_t dv = { node, dev };
    det_event_t e = { .detector = det, .severity = sev, .ts_ns = T0,
                      .nodes = &node, .nnodes = 1, .devices = &dv,
                      .ndevices = *dev ? 1 : 0, .text = text };
    CHECK_INT(det_events_add(ev, &e), 0);
}

static void
test_merge(void)
{
    watch_merge_t *m = watch_merge_new();
    det_events_t *ev = det_events_new();
    /* One tick: slowgpu and gpu-health on n2's GPU 0, heartbeat on n1. */
    s_event(ev, "slowgpu", DET_SEV_ACT, "n2", "0", "device 0 on node 'n2' "
            "is 30 % slower");
    s_event(ev, "heartbeat", DET_SEV_ACT, "n1", "", "node 'n1' reported "
            "nothing");
    s_event(ev, "gpu-health", DET_SEV_WARN, "n2", "0", "GPU 0 on node 'n2'"
            ": throttled (hw_thermal_slowdown)");
    CHECK_INT(watch_merge_apply(m, &ev, T0), 0);
    CHECK_INT(det_events_count(ev), 2);
    const det_event_t *e = det_events_get(ev, 0);
    CHECK(strcmp(e->detector, "slowgpu+gpu-health") == 0);
    CHECK(e->severity == DET_SEV_ACT && e->ndevices == 1);
    CHECK(strcmp(e->text, "device 0 on node 'n2' is 30 % slower; also "
                 "gpu-health: GPU 0 on node 'n2': throttled "
                 "(hw_thermal_slowdown)") == 0);
    CHECK(strcmp(det_events_get(ev, 1)->detector, "heartbeat") == 0);
    /* Later ticks: a warning first, the act after it carries it. */
    watch_merge_t *m2 = watch_merge_new();
    det_events_clear(ev);
    s_event(ev, "gpu-health", DET_SEV_WARN, "n3", "1", "throttled");
    CHECK_INT(watch_merge_apply(m2, &ev, T0), 0);
    det_events_clear(ev);
    s_event(ev, "slowgpu", DET_SEV_ACT, "n3", "1", "slower");
    s_event(ev, "slowgpu", DET_SEV_ACT, "n3", "2", "slower too");
    CHECK_INT(watch_merge_apply(m2, &ev, T0 + 10 * SEC), 0);
    CHECK_INT(det_events_count(ev), 2);
    CHECK(strcmp(det_events_get(ev, 0)->text, "slower; also gpu-health "
                 "earlier: throttled") == 0);
    CHECK(strcmp(det_events_get(ev, 0)->detector, "slowgpu+gpu-health") == 0);
    CHECK(strcmp(det_events_get(ev, 1)->text, "slower too") == 0);
    /* Past the window: on its own again. */
    det_events_clear(ev);
    s_event(ev, "gpu-health", DET_SEV_WARN, "n3", "2", "throttled");
    CHECK_INT(watch_merge_apply(m2, &ev, T0 + (WATCH_MERGE_WINDOW_S + 11)
                                             * SEC), 0);
    CHECK(strcmp(det_events_get(ev, 0)->text, "throttled") == 0);
    watch_merge_destroy(&m);
    watch_merge_destroy(&m2);
    det_events_destroy(&ev);
}

/* Long sentences: the merged text keeps every detector's sentence whole
 * while they fit in what a restart request carries (TELEM_TEXT_MAX), and
 * ends with "; and N more" for those that do not, never cut inside one. */
static void
test_merge_long(void)
{
    static char a[1500], b[1500], c[1500];
    memset(a, 'a', sizeof a - 1);
    memset(b, 'b', sizeof b - 1);
    memset(c, 'c', sizeof c - 1);
    watch_merge_t *m = watch_merge_new();
    det_events_t *ev = det_events_new();
    s_event(ev, "slowgpu", DET_SEV_ACT, "n2", "0", a);
    s_event(ev, "gpu-health", DET_SEV_WARN, "n2", "0", b);
    s_event(ev, "straggler", DET_SEV_WARN, "n2", "0", c);
    CHECK_INT(watch_merge_apply(m, &ev, T0), 0);
    CHECK_INT(det_events_count(ev), 1);
    const det_event_t *e = det_events_get(ev, 0);
    CHECK(strcmp(e->detector, "slowgpu+gpu-health+straggler") == 0);
    size_t len = strlen(e->text);
    CHECK(len < TELEM_TEXT_MAX);
    CHECK(strncmp(e->text, a, sizeof a - 1) == 0);
    char also[1600];
    snprintf(also, sizeof also, "; also gpu-health: %s", b);
    CHECK(strstr(e->text, also) != NULL);
    CHECK(strchr(e->text, 'c') == NULL);        /* none of it, not a part */
    CHECK(len > 12 && strcmp(e->text + len - 12, "; and 1 more") == 0);
    /* Short ones: all of them, no tail. */
    det_events_clear(ev);
    s_event(ev, "slowgpu", DET_SEV_ACT, "n3", "1", "slower");
    s_event(ev, "gpu-health", DET_SEV_WARN, "n3", "1", "throttled");
    s_event(ev, "straggler", DET_SEV_WARN, "n3", "1", "behind");
    CHECK_INT(watch_merge_apply(m, &ev, T0 + SEC), 0);
    CHECK(strcmp(det_events_get(ev, 0)->text, "slower; also gpu-health: "
                 "throttled; also straggler: behind") == 0);
    watch_merge_destroy(&m);
    det_events_destroy(&ev);
}

int
main(void)
{
    CHECK(det_find("gpu-health") != NULL);
    test_params();
    test_xid();
    test_xid_catalog();
    test_ecc_and_levels();
    test_silence();
    test_throttle_and_storms();
    test_throttle_vendors();
    test_ib();
    test_clean_and_bad();
    test_merge();
    test_merge_long();
    return check_report("test_detectors_gpu_health");
}
