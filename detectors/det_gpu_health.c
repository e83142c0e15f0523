/* det_gpu_health.c - the gpu-health detector: series to observations,
 * state.
 *
 * telemd records what NVML says of each GPU's health (XIDs, ECC counts,
 * remapped rows, the recovery action, lost GPUs, clock-event reasons) and
 * what sysfs says of each InfiniBand port (state, error counters).  Each
 * run reads the last `window` seconds of those series; for each series it
 * remembers the newest point it took, so a point is judged once however
 * the runs fall, and hands every series with new points to its rule
 * (det_gpu_health_rules.c).  A condition (a node, a device, what is wrong)
 * is reported once when it starts and again only after data showed it
 * gone; growth rules (an XID, uncorrectable ECC errors) report each growth.
 * The newest point of every series of the job (a LATEST query) tells
 * whether a GPU's series stopped while its node's others went on.
 */
#include "det_gpu_health.h"
#include "det_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_grow.h"

static const det_param_def_t s_params[GH_NPARAMS] = {
    [GH_XID] = { "xid", DET_PARAM_STR, 0, 0, 0, 0, "table", NULL,
        "XID codes that act, joined by '+': 'table' is the built-in table "
        "of fatal XIDs (docs/detectors.md), 'table+13+43' adds codes, "
        "'48+79' uses only those; any other XID warns" },
    [GH_ECC_UNCORRECTED] = { "ecc_uncorrected", DET_PARAM_NUM, 1, 0, 1e12,
        1, NULL, NULL, "growth of a GPU's uncorrectable ECC count "
        "(gpu_ecc_uncorrected_errors_total) over the first value seen "
        "that acts; 0: off" },
    [GH_REMAP_FAILURE] = { "remap_failure", DET_PARAM_NUM, 1, 0, 1, 1, NULL,
        NULL, "1: a row-remapping failure (gpu_remapped_rows_failure 1) "
        "acts; 0: off" },
    [GH_RECOVERY] = { "recovery", DET_PARAM_NUM, 1, 0, 4, 1, NULL, NULL,
        "smallest gpu_recovery_action that acts (1 GPU reset, 2 node "
        "reboot, 3 drain peer-to-peer, 4 drain and reset); 0: off" },
    [GH_LOST] = { "lost", DET_PARAM_NUM, 1, 0, 1, 1, NULL, NULL,
        "1: a GPU NVML calls lost (gpu_lost 1) acts; 0: off" },
    [GH_SILENT] = { "silent", DET_PARAM_NUM, 15, 0, 86400, 0, NULL, NULL,
        "seconds a GPU's gpu_* series may lag behind its node's other "
        "series before the GPU is called unanswering (acts); 0: off" },
    [GH_THROTTLE_K] = { "throttle_k", DET_PARAM_NUM, 4, 1, 64, 1, NULL, NULL,
        "samples out of the last throttle_n in which a clock-event reason "
        "of throttle_reasons held that warn" },
    [GH_THROTTLE_N] = { "throttle_n", DET_PARAM_NUM, 5, 1, 64, 1, NULL, NULL,
        "samples judged for throttling" },
    [GH_THROTTLE_REASONS] = { "throttle_reasons", DET_PARAM_STR, 0, 0, 0, 0,
        "sw_thermal_slowdown+hw_thermal_slowdown+hw_slowdown+"
        "hw_power_brake_slowdown+sw_power_cap+thermal_limit+ave_pwr_cap+"
        "burst_pwr_cap+current_limit+psu_alert+temp_*+vrhot*+prochot_gfx+"
        "ppt*", NULL,
        "the gpu_clocks_event reasons that count as throttling (NVIDIA's, "
        "Intel's and AMD's names), joined by '+'; a final * takes every "
        "reason with that prefix; empty: off" },
    [GH_ECC_CORRECTED_RATE] = { "ecc_corrected_rate", DET_PARAM_NUM, 1, 0,
        1e12, 0, NULL, NULL, "corrected ECC errors per second, over the "
        "window, that warn (a storm); 0: off" },
    [GH_REPLAY_RATE] = { "replay_rate", DET_PARAM_NUM, 1, 0, 1e12, 0, NULL,
        NULL, "PCIe replays per second, over the window, that warn; "
        "0: off" },
    [GH_IB_ERRORS] = { "ib_errors", DET_PARAM_NUM, 1, 0, 1e12, 0, NULL, NULL,
        "growth of an InfiniBand port's error counter (symbol errors, link "
        "recoveries, link downed, receive errors, integrity and overrun "
        "errors) over the window that warns; 0: off" },
    [GH_IB_FLAPS] = { "ib_flaps", DET_PARAM_NUM, 3, 0, GH_FLAPS_MAX, 1, NULL,
        NULL, "changes of an InfiniBand port's state within the window "
        "that warn as flapping; 0: off (a port going down always warns)" },
    [GH_WINDOW] = { "window", DET_PARAM_NUM, 60, 1, 86400, 0, NULL, NULL,
        "seconds of data read each run: rates, growth and flaps are judged "
        "over it" },
};

/* ---- state ------------------------------------------------------------- */

static void *
s_create(void)
{
    gh_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->track_map = det_map_new();
    st->alert_map = det_map_new();
    st->gpu_map = det_map_new();
    if (!st->track_map || !st->alert_map || !st->gpu_map) {
        det_map_destroy(&st->track_map);
        det_map_destroy(&st->alert_map);
        det_map_destroy(&st->gpu_map);
        free(st);
        return NULL;
    }
    return st;
}

static void
s_destroy(void **state)
{
    gh_state_t *st = *state;
    for (size_t i = 0; i < st->ntracks; i++)
        free(st->tracks[i].key);
    for (size_t i = 0; i < st->nalerts; i++)
        free(st->alerts[i].key);
    for (size_t i = 0; i < st->ngpus; i++)
        free(st->gpus[i].key);
    free(st->tracks);
    free(st->alerts);
    free(st->gpus);
    det_map_destroy(&st->track_map);
    det_map_destroy(&st->alert_map);
    det_map_destroy(&st->gpu_map);
    free(st);
    *state = NULL;
}

static int
s_check(const det_params_t *p, char *why, size_t why_size)
{
    if (det_params_num(p, GH_THROTTLE_K) > det_params_num(p, GH_THROTTLE_N)) {
        snprintf(why, why_size, "throttle_k (%g) must not exceed throttle_n "
                 "(%g)", det_params_num(p, GH_THROTTLE_K),
                 det_params_num(p, GH_THROTTLE_N));
        return TELEM_EINVAL;
    }
    return gh_rules_check(p, why, why_size);
}

/* "a\x1fb\x1fc" copied into one allocation with the three parts after it;
 * NULL when out of memory or too long. */
static char *
s_key3(const char *a, const char *b, const char *c, char **pa, char **pb,
       char **pc)
{
    char key[3 * 300];
    if (!det_util_key(key, sizeof key, a, b, c))
        return NULL;
    size_t kl = strlen(key) + 1, al = strlen(a) + 1, bl = strlen(b) + 1;
    size_t cl = strlen(c) + 1;
    char *m = malloc(kl + al + bl + cl);
    if (!m)
        return NULL;
    memcpy(m, key, kl);
    if (pa)
        *pa = memcpy(m + kl, a, al);
    if (pb)
        *pb = memcpy(m + kl + al, b, bl);
    if (pc)
        *pc = memcpy(m + kl + al + bl, c, cl);
    return m;
}

gh_alert_t *
gh_alert(gh_state_t *st, const char *node, const char *device,
         const char *what)
{
    char key[3 * 300];
    if (!det_util_key(key, sizeof key, node, device, what))
        return NULL;
    long i = det_map_get(st->alert_map, key);
    if (i < 0) {
        if (telem_grow((void **) &st->alerts, &st->capalerts,
                       st->nalerts + 1, sizeof *st->alerts, 16))
            return NULL;
        gh_alert_t *a = &st->alerts[st->nalerts];
        memset(a, 0, sizeof *a);
        if (!(a->key = s_key3(node, device, what, &a->node, &a->device,
                              &a->what)) ||
            det_map_put(st->alert_map, a->key, (long) st->nalerts)) {
            free(a->key);
            return NULL;
        }
        i = (long) st->nalerts++;
    }
    st->alerts[i].seen_run = st->run;
    return &st->alerts[i];
}

gh_alert_t *
gh_alert_find(gh_state_t *st, const char *node, const char *device,
              const char *what)
{
    char key[3 * 300];
    if (!det_util_key(key, sizeof key, node, device, what))
        return NULL;
    long i = det_map_get(st->alert_map, key);
    return i < 0 ? NULL : &st->alerts[i];
}

gh_gpu_t *
gh_gpu(gh_state_t *st, const char *node, const char *gpu)
{
    char key[3 * 300];
    if (!det_util_key(key, sizeof key, node, gpu, NULL))
        return NULL;
    long i = det_map_get(st->gpu_map, key);
    if (i >= 0)
        return &st->gpus[i];
    if (telem_grow((void **) &st->gpus, &st->capgpus, st->ngpus + 1,
                   sizeof *st->gpus, 16))
        return NULL;
    gh_gpu_t *g = &st->gpus[st->ngpus];
    memset(g, 0, sizeof *g);
    if (!(g->key = s_key3(node, gpu, "", &g->node, &g->gpu, NULL)) ||
        det_map_put(st->gpu_map, key, (long) st->ngpus)) {
        free(g->key);
        return NULL;
    }
    g->newest = INT64_MIN;
    st->ngpus++;
    return g;
}

gh_track_t *
gh_track_find(gh_state_t *st, const char *node, const char *metric,
              const char *tags)
{
    char key[3 * 300 + 512];
    if (!det_util_key(key, sizeof key, node, metric, tags))
        return NULL;
    long i = det_map_get(st->track_map, key);
    return i < 0 ? NULL : &st->tracks[i];
}

/* "k=v;k=v" of the series' tags other than host, in their order (the
 * store sends them sorted). */
static void
s_tagstr(const det_series_t *s, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->ntags && len < size; i++) {
        if (!s->tags[i].key || !s->tags[i].value ||
            strcmp(s->tags[i].key, "host") == 0)
            continue;
        len += (size_t) snprintf(buf + len, size - len, "%s%s=%s",
                                 len ? ";" : "", s->tags[i].key,
                                 s->tags[i].value);
    }
}

static gh_track_t *
s_track(gh_state_t *st, const char *node, const det_series_t *s)
{
    char tags[512];
    s_tagstr(s, tags, sizeof tags);
    char key[3 * 300 + 512];
    if (!det_util_key(key, sizeof key, node, s->metric, tags))
        return NULL;
    long i = det_map_get(st->track_map, key);
    if (i >= 0)
        return &st->tracks[i];
    if (telem_grow((void **) &st->tracks, &st->captracks, st->ntracks + 1,
                   sizeof *st->tracks, 64))
        return NULL;
    gh_track_t *t = &st->tracks[st->ntracks];
    memset(t, 0, sizeof *t);
    if (!(t->key = strdup(key)) ||
        det_map_put(st->track_map, key, (long) st->ntracks)) {
        free(t->key);
        return NULL;
    }
    t->last_ts = INT64_MIN;
    t->last_val = t->base = t->reported = NAN;
    st->ntracks++;
    return t;
}

/* ---- a run ------------------------------------------------------------- */

static int
s_wanted(const char *metric)
{
    for (size_t i = 0; gh_metrics[i]; i++)
        if (strcmp(gh_metrics[i], metric) == 0)
            return 1;
    return 0;
}

/* The series' device: the gpu tag, or "device/port" for InfiniBand. */
static const char *
s_device(const det_series_t *s, char *buf, size_t size)
{
    const char *gpu = det_util_tag(s, "gpu");
    if (gpu)
        return gpu;
    const char *dev = det_util_tag(s, "device"), *port = det_util_tag(s,
                                                                      "port");
    if (!dev)
        return "";
    snprintf(buf, size, "%s%s%s", dev, port ? "/" : "", port ? port : "");
    return buf;
}

/* First index of a point newer than `after`. */
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

static int
s_series(gh_state_t *st, const det_params_t *p, const det_input_t *in,
         const det_series_t *s, det_events_t *out)
{
    const char *host = det_util_tag(s, "host");
    const char *node = host ? host : s->node ? s->node : "";
    char dbuf[300];
    gh_track_t *t = s_track(st, node, s);
    if (!t)
        return TELEM_ENOMEM;
    t->seen_run = st->run;
    size_t first = s_first_after(s->ts, s->n, t->last_ts);
    if (first == s->n)
        return 0;                      /* nothing new */
    gh_obs_t o = { s, node, s_device(s, dbuf, sizeof dbuf), t, first,
                   in->now_ns };
    int rc = gh_rules_series(st, p, &o, out);
    t->last_ts = s->ts[s->n - 1];
    t->last_val = s->val[s->n - 1];
    return rc;
}

/* Conditions judged in this run whose newest data no longer holds them
 * are cleared, to be reported again if they return. */
static void
s_clear(gh_state_t *st)
{
    for (size_t i = 0; i < st->nalerts; i++) {
        gh_alert_t *a = &st->alerts[i];
        if (a->seen_run == st->run && a->hold_run != st->run)
            a->active = 0;
    }
}

static int
s_run(void *state, const det_params_t *p, const det_input_t *in,
      det_events_t *out)
{
    gh_state_t *st = state;
    st->run++;
    int rc = 0;
    for (size_t i = 0; i < in->nseries && !rc; i++) {
        const det_series_t *s = &in->series[i];
        if (s->metric && s->ts && s->val && s->n && s_wanted(s->metric))
            rc = s_series(st, p, in, s, out);
    }
    if (!rc)
        rc = gh_rules_silence(st, p, in, out);
    s_clear(st);
    return rc;
}

static void
s_needs(const void *state, const det_params_t *p, int64_t now_ns,
        det_needs_t *out)
{
    (void) state;
    size_t n = 0;
    while (gh_metrics[n] && n < DET_NEEDS_METRICS_MAX) {
        out->metrics[n] = gh_metrics[n];
        n++;
    }
    out->nmetrics = n;
    out->start_ns = now_ns - (int64_t) (det_params_num(p, GH_WINDOW) * 1e9);
    /* The newest point of every series: a GPU that went quiet while its
     * node did not. */
    out->latest = det_params_num(p, GH_SILENT) > 0;
    out->nlatest_metrics = 0;
}

static void
s_describe(const void *state, const det_params_t *p,
           void (*fn)(void *arg, const char *key, const char *value),
           void *arg)
{
    (void) p;
    const gh_state_t *st = state;
    char buf[1024];
    size_t len = 0, n = 0, shown = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->nalerts; i++) {
        const gh_alert_t *a = &st->alerts[i];
        if (!a->active)
            continue;
        n++;
        int w = snprintf(buf + len, sizeof buf - len, "%s%s%s%s %s",
                         len ? ", " : "", a->node, *a->device ? "/" : "",
                         a->device, a->what);
        if (w > 0 && len + (size_t) w < sizeof buf - 32) {
            len += (size_t) w;
            shown++;
        } else {
            buf[len] = '\0';
        }
    }
    if (n > shown)
        snprintf(buf + len, sizeof buf - len, " and %zu more", n - shown);
    fn(arg, "firing", n ? buf : "none");
    snprintf(buf, sizeof buf, "%zu", st->ntracks);
    fn(arg, "series", buf);
}

const det_vtable_t det_gpu_health = {
    .name = "gpu-health",
    .doc = "A GPU whose health fields say it is failing: a fatal XID, "
           "growing uncorrectable ECC errors, a row-remapping failure, a "
           "lost or unanswering GPU, a recovery action asking for a reset "
           "or drain (act); lasting throttling, corrected-error storms, "
           "InfiniBand ports that go down, flap or count errors (warn).  "
           "Score: the value that decided.",
    .params = s_params,
    .nparams = GH_NPARAMS,
    .create = s_create,
    .destroy = s_destroy,
    .check = s_check,
    .needs = s_needs,
    .run = s_run,
    .describe = s_describe,
};
