/* det_gpu_health_rules.c - gpu-health's rules, its table of XIDs and its
 * sentences (det_gpu_health.h).
 *
 * Three kinds of rule:
 *   growth  a counter that grew is reported at each growth (an XID, whose
 *           series counts from 0 since telemd started; uncorrectable ECC
 *           errors, against the first value seen);
 *   level   a condition that holds at a point (remapping failed, GPU lost,
 *           a recovery action, throttling k of n samples, an InfiniBand
 *           port down or flapping) is reported when it starts, once;
 *   window  a counter's growth or rate over the window read (corrected-
 *           error storms, PCIe replays, InfiniBand error counters).
 * Every sentence names the node, the GPU (or InfiniBand device/port), the
 * field and what its value did (from -> to).
 */
#include "det_gpu_health.h"
#include "det_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gh_metrics[] = {
    "gpu_xid_total", "gpu_ecc_uncorrected_errors_total",
    "gpu_remapped_rows_failure", "gpu_recovery_action", "gpu_lost",
    "gpu_clocks_event", "gpu_ecc_corrected_errors_total",
    "gpu_pcie_replays_total", "ib_state", "ib_phys_state",
    "ib_link_downed_total", "ib_symbol_error_total",
    "ib_link_error_recovery_total", "ib_port_rcv_errors_total",
    "ib_local_link_integrity_errors_total",
    "ib_excessive_buffer_overrun_errors_total", NULL
};

/* XID codes and their meaning, from NVIDIA's Xid catalog for Ampere and
 * newer GPUs ("Analyzing Xid Errors with the Xid Catalog", GPU Deployment
 * and Management Documentation; docs/detectors.md has the table with
 * each code's immediate action there).  fatal 1: the catalog's immediate
 * action resets the GPU or restarts the node or VM (RESET_GPU, RESTART_BM,
 * RESTART_VM, the XID 48 and NVLink workflows), or its name calls it fatal
 * (158, 167); and 92 and 94, which the catalog lets run on (IGNORE,
 * RESTART_APP) but which mean failing memory under a job that cannot
 * afford it.  2: fatal only where row remapping failed (63 records a
 * remapping, which fails only with gpu_remapped_rows_failure).  0: an
 * application or transient error, or an NVLink error whose subcode (not
 * in the event) decides, reported as a warning. */
static const struct {
    unsigned code;
    int fatal;
    const char *meaning;
} s_xids[] = {
    { 8, 0, "GPU stopped processing (idle timeout)" },
    { 13, 0, "graphics engine exception" },
    { 31, 0, "GPU memory page fault" },
    { 32, 0, "invalid or corrupted push buffer stream" },
    { 43, 0, "GPU stopped processing" },
    { 45, 0, "preemptive cleanup, due to previous errors" },
    { 46, 1, "GPU stopped processing (GPU timeout)" },
    { 48, 1, "double-bit ECC error (DBE)" },
    { 54, 0, "auxiliary power is not connected to the GPU board" },
    { 62, 1, "internal micro-controller halt" },
    { 63, 2, "ECC page retirement or row remapping recording event" },
    { 64, 1, "ECC page retirement or row remapper recording failure" },
    { 68, 0, "NVDEC0 exception" },
    { 69, 0, "graphics engine class error" },
    { 74, 1, "NVLink error" },
    { 79, 1, "GPU has fallen off the bus" },
    { 92, 1, "high single-bit ECC error rate" },
    { 94, 1, "contained ECC error" },
    { 95, 1, "uncontained ECC error" },
    { 109, 1, "context switch timeout error" },
    { 110, 1, "security fault error" },
    { 119, 1, "GSP RPC timeout" },
    { 120, 1, "GSP error" },
    { 121, 0, "C2C link corrected error" },
    { 136, 1, "link training failed" },
    { 137, 0, "NVLink privilege error" },
    { 140, 1, "unrecovered ECC error" },
    { 143, 1, "GPU initialization error" },
    { 144, 0, "NVLink SAW error" },
    { 145, 0, "NVLink RLW error" },
    { 146, 0, "NVLink TLW error" },
    { 147, 0, "NVLink TREX error" },
    { 148, 0, "NVLink NVLPW_CTRL error" },
    { 149, 1, "NVLink NETIR error (link fatal)" },
    { 150, 0, "NVLink MSE error" },
    { 151, 1, "key rotation error" },
    { 154, 0, "GPU recovery action changed" },
    { 155, 1, "NVLink SW defined error" },
    { 156, 1, "resource retirement event" },
    { 157, 0, "resource retirement failure" },
    { 158, 1, "GPU fatal timeout" },
    { 159, 0, "CHI non-data error" },
    { 160, 0, "channel retirement event" },
    { 161, 0, "channel retirement failure" },
    { 167, 1, "PCIe fatal timeout" },
    { 169, 0, "internal micro-controller halt (SEC2)" },
    { 171, 0, "uncorrectable DRAM error (detail of XID 48)" },
    { 172, 0, "uncorrectable SRAM error (detail of XID 48)" },
};

#define S_NXIDS (sizeof s_xids / sizeof s_xids[0])

static const char *const s_recovery[] = {
    "none", "GPU reset", "node reboot", "drain peer-to-peer",
    "drain and reset",
};

const char *
gh_xid_meaning(unsigned code)
{
    for (size_t i = 0; i < S_NXIDS; i++)
        if (s_xids[i].code == code)
            return s_xids[i].meaning;
    return "";
}

static int
s_table_fatal(unsigned code)
{
    for (size_t i = 0; i < S_NXIDS; i++)
        if (s_xids[i].code == code)
            return s_xids[i].fatal;
    return 0;
}

/* Calls fn on each '+'-separated word of list; stops at a non-zero. */
static int
s_words(const char *list, int (*fn)(const char *w, size_t n, void *arg),
        void *arg)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, "+");
        int rc = fn(p, n, arg);
        if (rc)
            return rc;
        p += n + (p[n] == '+');
    }
    return 0;
}

/* A word of the xid list: "table" or a code 1-9999. */
static int
s_xid_word(const char *w, size_t n, unsigned *code)
{
    if (n == 5 && strncmp(w, "table", 5) == 0) {
        *code = 0;
        return 0;
    }
    unsigned v = 0;
    if (n == 0 || n > 4)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (w[i] < '0' || w[i] > '9')
            return -1;
        v = v * 10 + (unsigned) (w[i] - '0');
    }
    *code = v;
    return v ? 0 : -1;
}

typedef struct {
    unsigned code;
    int fatal;
    int bad;
} s_xid_arg_t;

static int
s_xid_visit(const char *w, size_t n, void *arg)
{
    s_xid_arg_t *a = arg;
    unsigned c;
    if (s_xid_word(w, n, &c)) {
        a->bad = 1;
        return 1;
    }
    if (c == 0 && s_table_fatal(a->code) > a->fatal)
        a->fatal = s_table_fatal(a->code);
    else if (c && c == a->code)
        a->fatal = 1;
    return 0;
}

int
gh_xid_fatal(const det_params_t *p, unsigned code)
{
    s_xid_arg_t a = { code, 0, 0 };
    s_words(det_params_str(p, GH_XID), s_xid_visit, &a);
    return a.bad ? 0 : a.fatal;
}

/* A reason name, or a prefix of names ending with '*' ("temp_*"). */
static int
s_reason_word(const char *w, size_t n, void *arg)
{
    (void) arg;
    if (n == 0 || n > 64 || (n == 1 && w[0] == '*'))
        return 1;
    for (size_t i = 0; i < n; i++)
        if (!(w[i] == '_' || (w[i] >= 'a' && w[i] <= 'z') ||
              (w[i] >= '0' && w[i] <= '9') || (w[i] == '*' && i == n - 1)))
            return 1;
    return 0;
}

int
gh_rules_check(const det_params_t *p, char *why, size_t why_size)
{
    s_xid_arg_t a = { 0, 0, 0 };
    const char *xid = det_params_str(p, GH_XID);
    if (!*xid || xid[strlen(xid) - 1] == '+' ||
        s_words(xid, s_xid_visit, &a) || a.bad) {
        snprintf(why, why_size, "xid: '%s' is not 'table' and codes "
                 "1-9999 joined by '+'", xid);
        return TELEM_EINVAL;
    }
    const char *r = det_params_str(p, GH_THROTTLE_REASONS);
    if (s_words(r, s_reason_word, NULL)) {
        snprintf(why, why_size, "throttle_reasons: '%s' is not reason "
                 "names (a-z, 0-9, _; a final * for a prefix) joined by "
                 "'+'", r);
        return TELEM_EINVAL;
    }
    return 0;
}

/* ---- events ------------------------------------------------------------ */

/* "GPU 0 on node 'n2'", "InfiniBand mlx5_0/1 on node 'n1'", "node 'n1'". */
static void
s_who(const gh_obs_t *o, char *buf, size_t size)
{
    int ib = strncmp(o->s->metric, "ib_", 3) == 0;
    if (*o->device)
        snprintf(buf, size, "%s %s on node '%s'", ib ? "InfiniBand" : "GPU",
                 o->device, o->node);
    else
        snprintf(buf, size, "node '%s'", o->node);
}

/* "gpu_xid_total{xid=79}": the metric and its tags other than host and
 * the one that names the device. */
static void
s_field(const det_series_t *s, char *buf, size_t size)
{
    size_t len = (size_t) snprintf(buf, size, "%s", s->metric);
    int first = 1;
    for (size_t i = 0; i < s->ntags && len < size; i++) {
        const char *k = s->tags[i].key;
        if (!k || !s->tags[i].value || strcmp(k, "host") == 0 ||
            strcmp(k, "gpu") == 0 || strcmp(k, "device") == 0 ||
            strcmp(k, "port") == 0)
            continue;
        len += (size_t) snprintf(buf + len, size - len, "%s%s=%s",
                                 first ? "{" : ",", k, s->tags[i].value);
        first = 0;
    }
    if (!first && len < size)
        snprintf(buf + len, size - len, "}");
}

/* "3", or "nothing" for a value never seen. */
static void
s_num(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "nothing");
    else
        snprintf(buf, size, "%.15g", v);
}

typedef struct {
    det_severity_t sev;
    int64_t ts;
    double from, to, threshold;
    const char *what;          /* "XID 79 (GPU has fallen off the bus)" */
    const char *extra;         /* after the values, or "" */
} s_ev_t;

static int
s_emit(const gh_obs_t *o, const s_ev_t *e, det_events_t *out)
{
    char who[400], field[300], from[40], to[40], text[1200];
    s_who(o, who, sizeof who);
    s_field(o->s, field, sizeof field);
    s_num(e->from, from, sizeof from);
    s_num(e->to, to, sizeof to);
    snprintf(text, sizeof text, "%s: %s: %s %s -> %s%s", who, e->what, field,
             from, to, e->extra);
    det_evidence_t ev[] = {
        { "from", e->from }, { "to", e->to }, { "threshold", e->threshold },
    };
    int gpu = *o->device && strncmp(o->s->metric, "gpu_", 4) == 0;
    det_util_event_t ee = {
        .detector = "gpu-health", .severity = e->sev, .ts_ns = e->ts,
        .node = o->node, .device = gpu ? o->device : NULL, .score = e->to,
        .evidence = ev, .nevidence = sizeof ev / sizeof *ev, .text = text,
    };
    return det_util_emit(out, &ee);
}

/* The value before point j of the observation (NAN: none). */
static double
s_prev(const gh_obs_t *o, size_t j)
{
    return j > o->first_new ? o->s->val[j - 1] : o->t->last_val;
}

/* A level condition at point j: reported when it starts; `holds` for the
 * newest point keeps it active.  Returns 1 when it must be reported. */
static int
s_edge(gh_state_t *st, const gh_obs_t *o, gh_alert_t *a, int holds, size_t j)
{
    int report = holds && !a->active;
    if (holds)
        a->active = 1;
    else if (j + 1 < o->s->n)
        a->active = 0;                /* cleared inside the new points */
    if (j + 1 == o->s->n && holds)
        a->hold_run = st->run;
    return report;
}

/* ---- growth ------------------------------------------------------------ */

static int
s_xid(gh_state_t *st, const det_params_t *p, const gh_obs_t *o,
      det_events_t *out)
{
    const char *tag = det_util_tag(o->s, "xid");
    unsigned code = tag ? (unsigned) strtoul(tag, NULL, 10) : 0;
    gh_track_t *t = o->t;
    if (isnan(t->reported))
        t->reported = 0;             /* the count starts with telemd */
    int rc = 0;
    for (size_t j = o->first_new; j < o->s->n && !rc; j++) {
        double v = o->s->val[j], prev = s_prev(o, j);
        if (!isnan(prev) && v < prev)
            t->reported = 0;         /* telemd restarted */
        if (!(v > t->reported))
            continue;
        int fatal = gh_xid_fatal(p, code);
        char rtag[64], what[256];
        snprintf(rtag, sizeof rtag, "gpu=%s", o->device);
        gh_track_t *rm = gh_track_find(st, o->node,
                                       "gpu_remapped_rows_failure", rtag);
        int remap_failed = rm && rm->last_val >= 1;
        const char *meaning = gh_xid_meaning(code);
        snprintf(what, sizeof what, "XID %u (%s)%s", code,
                 *meaning ? meaning : "not in the table of fatal XIDs",
                 fatal == 2 && remap_failed ? " with row remapping failed"
                 : fatal == 2 ? ", row remapping did not fail" : "");
        s_ev_t e = { fatal == 1 || (fatal == 2 && remap_failed)
                     ? DET_SEV_ACT : DET_SEV_WARN, o->s->ts[j],
                     isnan(prev) || v < prev ? 0 : prev, v, NAN, what, "" };
        rc = s_emit(o, &e, out);
        t->reported = v;
    }
    return rc;
}

static int
s_ecc_uncorrected(const det_params_t *p, const gh_obs_t *o,
                  det_events_t *out)
{
    double thr = det_params_num(p, GH_ECC_UNCORRECTED);
    gh_track_t *t = o->t;
    size_t j = o->first_new;
    if (isnan(t->base)) {              /* the first value seen */
        t->base = t->reported = o->s->val[j];
        j++;
    }
    int rc = 0;
    for (; j < o->s->n && !rc; j++) {
        double v = o->s->val[j], prev = s_prev(o, j);
        if (!isnan(prev) && v < prev)
            t->base = t->reported = v;    /* the driver was reloaded */
        if (thr <= 0 || v - t->base < thr || !(v > t->reported))
            continue;
        char extra[128];
        snprintf(extra, sizeof extra, " (%.15g since the first value seen, "
                 "threshold %.15g)", v - t->base, thr);
        s_ev_t e = { DET_SEV_ACT, o->s->ts[j], prev, v, thr,
                     "uncorrectable ECC errors grew", extra };
        rc = s_emit(o, &e, out);
        t->reported = v;
    }
    return rc;
}

/* ---- level ------------------------------------------------------------- */

/* A condition v >= min at each new point (min <= 0: off). */
static int
s_level(gh_state_t *st, const gh_obs_t *o, double min, const char *what,
        det_events_t *out)
{
    gh_alert_t *a = gh_alert(st, o->node, o->device, o->s->metric);
    if (!a)
        return TELEM_ENOMEM;
    int rc = 0;
    for (size_t j = o->first_new; j < o->s->n && !rc; j++) {
        double v = o->s->val[j];
        if (!s_edge(st, o, a, min > 0 && v >= min, j))
            continue;
        char w[200];
        if (strcmp(o->s->metric, "gpu_recovery_action") == 0)
            snprintf(w, sizeof w, "%s: %s", what, v >= 0 && v <= 4
                     ? s_recovery[(int) v] : "an unknown action");
        else
            snprintf(w, sizeof w, "%s", what);
        s_ev_t e = { DET_SEV_ACT, o->s->ts[j], s_prev(o, j), v, min, w, "" };
        rc = s_emit(o, &e, out);
    }
    return rc;
}

static int
s_popcount(uint64_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* Whether `reason` is one of the '+'-joined words of list, or starts with
 * a word's prefix ("temp_*"). */
static int
s_in_list(const char *list, const char *reason)
{
    size_t len = strlen(reason);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, "+");
        int prefix = n > 0 && p[n - 1] == '*';
        if (prefix ? len >= n - 1 && strncmp(p, reason, n - 1) == 0
                   : n == len && strncmp(p, reason, n) == 0)
            return 1;
        p += n + (p[n] == '+');
    }
    return 0;
}

static int
s_throttle(gh_state_t *st, const det_params_t *p, const gh_obs_t *o,
           det_events_t *out)
{
    const char *reason = det_util_tag(o->s, "reason");
    if (!reason || !s_in_list(det_params_str(p, GH_THROTTLE_REASONS), reason))
        return 0;
    char what[128];
    snprintf(what, sizeof what, "throttle %s", reason);
    gh_alert_t *a = gh_alert(st, o->node, o->device, what);
    if (!a)
        return TELEM_ENOMEM;
    int k = (int) det_params_num(p, GH_THROTTLE_K);
    int n = (int) det_params_num(p, GH_THROTTLE_N);
    uint64_t mask = n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
    gh_track_t *t = o->t;
    int rc = 0;
    for (size_t j = o->first_new; j < o->s->n && !rc; j++) {
        double v = o->s->val[j];
        t->bits = (t->bits << 1) | (uint64_t) (v >= 1);
        t->nbits += t->nbits < 64;
        int count = s_popcount(t->bits & mask);
        if (!s_edge(st, o, a, count >= k, j))
            continue;
        char w[200], extra[128];
        snprintf(w, sizeof w, "throttled (%s)", reason);
        snprintf(extra, sizeof extra, ", held in %d of its last %d samples "
                 "(throttle_k %d)", count, t->nbits < (uint32_t) n
                 ? (int) t->nbits : n, k);
        s_ev_t e = { DET_SEV_WARN, o->s->ts[j], 0, v, k, w, extra };
        rc = s_emit(o, &e, out);
    }
    return rc;
}

/* ---- InfiniBand port state --------------------------------------------- */

static int
s_ib_state(gh_state_t *st, const det_params_t *p, const gh_obs_t *o,
           det_events_t *out)
{
    int phys = strcmp(o->s->metric, "ib_phys_state") == 0;
    double up = phys ? 5 : 4;          /* LinkUp, ACTIVE */
    char wd[64], wf[64];            /* one pair per metric: the two */
    snprintf(wd, sizeof wd, "%s down", o->s->metric);   /* states judge */
    snprintf(wf, sizeof wf, "%s flapping", o->s->metric); /* apart */
    gh_alert_t *down = gh_alert(st, o->node, o->device, wd);
    gh_alert_t *flap = gh_alert(st, o->node, o->device, wf);
    if (!down || !flap)
        return TELEM_ENOMEM;
    gh_track_t *t = o->t;
    int64_t from = o->now_ns - (int64_t) (det_params_num(p, GH_WINDOW) * 1e9);
    double nflaps = det_params_num(p, GH_IB_FLAPS);
    int rc = 0;
    for (size_t j = o->first_new; j < o->s->n && !rc; j++) {
        double v = o->s->val[j], prev = s_prev(o, j);
        if (!isnan(prev) && v != prev) {
            t->flaps[t->flap_pos] = o->s->ts[j];
            t->flap_pos = (t->flap_pos + 1) % GH_FLAPS_MAX;
            t->nflaps += t->nflaps < GH_FLAPS_MAX;
        }
        t->was_up |= v == up;
        int changes = 0;
        for (uint32_t f = 0; f < t->nflaps; f++)
            changes += t->flaps[f] >= from;
        char extra[128];
        if (s_edge(st, o, down, t->was_up && v != up, j)) {
            snprintf(extra, sizeof extra, " (%g is %s)", up,
                     phys ? "LinkUp" : "active");
            s_ev_t e = { DET_SEV_WARN, o->s->ts[j], prev, v, up, "link down",
                         extra };
            rc = s_emit(o, &e, out);
        }
        if (!rc && s_edge(st, o, flap, nflaps > 0 && changes >= nflaps, j)) {
            snprintf(extra, sizeof extra, ", %d changes of state in the last "
                     "%g s (ib_flaps %g)", changes,
                     det_params_num(p, GH_WINDOW), nflaps);
            s_ev_t e = { DET_SEV_WARN, o->s->ts[j], prev, v, nflaps,
                         "link flapping", extra };
            rc = s_emit(o, &e, out);
        }
    }
    return rc;
}

/* ---- window ------------------------------------------------------------ */

/* Growth of a counter over the input's window, from its newest reset:
 * sets *from, *to and *secs. */
static void
s_growth(const det_series_t *s, double *from, double *to, double *secs)
{
    size_t j0 = 0;
    for (size_t j = 1; j < s->n; j++)
        if (s->val[j] < s->val[j - 1])
            j0 = j;                   /* a reset: count from there */
    *from = s->val[j0];
    *to = s->val[s->n - 1];
    *secs = (double) (s->ts[s->n - 1] - s->ts[j0]) / 1e9;
}

/* A storm: rate > thr per second (rate 1), or growth >= thr (rate 0). */
static int
s_window(gh_state_t *st, const det_params_t *p, const gh_obs_t *o, double thr,
         int rate, const char *what, det_events_t *out)
{
    if (thr <= 0)
        return 0;
    gh_alert_t *a = gh_alert(st, o->node, o->device, o->s->metric);
    if (!a)
        return TELEM_ENOMEM;
    double from, to, secs;
    s_growth(o->s, &from, &to, &secs);
    double r = secs > 0 ? (to - from) / secs : 0;
    int holds = rate ? secs >= 1 && r > thr : to - from >= thr;
    if (!s_edge(st, o, a, holds, o->s->n - 1))
        return 0;
    char extra[200];
    if (rate)
        snprintf(extra, sizeof extra, " in %.3g s (%.3g /s, threshold "
                 "%.3g /s)", secs, r, thr);
    else
        snprintf(extra, sizeof extra, " in %.3g s of the last %g s "
                 "(threshold %.15g)", secs, det_params_num(p, GH_WINDOW),
                 thr);
    s_ev_t e = { DET_SEV_WARN, o->s->ts[o->s->n - 1], from, to, thr, what,
                 extra };
    return s_emit(o, &e, out);
}

/* ---- dispatch ---------------------------------------------------------- */

int
gh_rules_series(gh_state_t *st, const det_params_t *p, const gh_obs_t *o,
                det_events_t *out)
{
    const char *m = o->s->metric;
    if (strcmp(m, "gpu_xid_total") == 0)
        return s_xid(st, p, o, out);
    if (strcmp(m, "gpu_ecc_uncorrected_errors_total") == 0)
        return s_ecc_uncorrected(p, o, out);
    if (strcmp(m, "gpu_remapped_rows_failure") == 0)
        return s_level(st, o, det_params_num(p, GH_REMAP_FAILURE),
                       "row remapping failed, the GPU needs service", out);
    if (strcmp(m, "gpu_lost") == 0)
        return s_level(st, o, det_params_num(p, GH_LOST),
                       "GPU lost (fallen off the bus)", out);
    if (strcmp(m, "gpu_recovery_action") == 0)
        return s_level(st, o, det_params_num(p, GH_RECOVERY),
                       "the driver asks for recovery", out);
    if (strcmp(m, "gpu_clocks_event") == 0)
        return s_throttle(st, p, o, out);
    if (strcmp(m, "gpu_ecc_corrected_errors_total") == 0)
        return s_window(st, p, o, det_params_num(p, GH_ECC_CORRECTED_RATE), 1,
                        "corrected ECC error storm", out);
    if (strcmp(m, "gpu_pcie_replays_total") == 0)
        return s_window(st, p, o, det_params_num(p, GH_REPLAY_RATE), 1,
                        "PCIe replay storm", out);
    if (strcmp(m, "ib_state") == 0 || strcmp(m, "ib_phys_state") == 0)
        return s_ib_state(st, p, o, out);
    return s_window(st, p, o, det_params_num(p, GH_IB_ERRORS), 0,
                    "InfiniBand error counter grew", out);
}

/* ---- silence ----------------------------------------------------------- */

/* Whether a series of the LATEST answer is one of a GPU's own. */
static int
s_gpu_series(const det_series_t *s)
{
    return strncmp(s->metric, "gpu_", 4) == 0 &&
           strcmp(s->metric, "gpu_lost") != 0 &&
           strncmp(s->metric, "gpu_xid_", 8) != 0;
}

/* Newest point of node `node`'s series without a gpu tag in this run. */
typedef struct {
    det_map_t *map;
    int64_t *newest;
    size_t n;
} s_nodes_t;

static int
s_node_newest(s_nodes_t *nn, const char *node, int64_t ts)
{
    long i = det_map_get(nn->map, node);
    if (i < 0) {
        int64_t *v = realloc(nn->newest, (nn->n + 1) * sizeof *v);
        if (!v)
            return TELEM_ENOMEM;
        nn->newest = v;
        if (det_map_put(nn->map, node, (long) nn->n))
            return TELEM_ENOMEM;
        i = (long) nn->n++;
        v[i] = INT64_MIN;
    }
    if (ts > nn->newest[i])
        nn->newest[i] = ts;
    return 0;
}

static int
s_observe_latest(gh_state_t *st, const det_input_t *in, s_nodes_t *nn)
{
    for (size_t i = 0; i < in->nlatest; i++) {
        const det_series_t *s = &in->latest[i];
        if (!s->metric || !s->ts || s->n == 0)
            continue;
        const char *host = det_util_tag(s, "host");
        const char *node = host ? host : s->node ? s->node : "";
        const char *gpu = det_util_tag(s, "gpu");
        int64_t ts = s->ts[s->n - 1];
        if (!gpu) {
            if (s_node_newest(nn, node, ts))
                return TELEM_ENOMEM;
            continue;
        }
        if (!s_gpu_series(s))
            continue;
        gh_gpu_t *g = gh_gpu(st, node, gpu);
        if (!g)
            return TELEM_ENOMEM;
        if (ts > g->newest)
            g->newest = ts;
    }
    return 0;
}

static int
s_silent_event(const gh_gpu_t *g, double lag, double limit, int64_t ts,
               det_events_t *out)
{
    char text[800];
    snprintf(text, sizeof text, "GPU %s on node '%s': stopped answering: "
             "its gpu_* series lag %.3g s behind the node's other series "
             "(silent %.3g s)", g->gpu, g->node, lag, limit);
    det_evidence_t ev[] = { { "lag_s", lag }, { "threshold", limit } };
    const char *node = g->node;
    det_device_t dv = { g->node, g->gpu };
    det_event_t ee = {
        .detector = "gpu-health", .severity = DET_SEV_ACT, .ts_ns = ts,
        .nodes = &node, .nnodes = 1, .devices = &dv, .ndevices = 1,
        .score = lag, .evidence = ev, .nevidence = 2, .text = text,
    };
    return det_events_add(out, &ee);
}

int
gh_rules_silence(gh_state_t *st, const det_params_t *p, const det_input_t *in,
                 det_events_t *out)
{
    double limit = det_params_num(p, GH_SILENT);
    if (limit <= 0 || in->nlatest == 0)
        return 0;
    s_nodes_t nn = { det_map_new(), NULL, 0 };
    int rc = nn.map ? s_observe_latest(st, in, &nn) : TELEM_ENOMEM;
    for (size_t i = 0; i < st->ngpus && !rc; i++) {
        gh_gpu_t *g = &st->gpus[i];
        long k = det_map_get(nn.map, g->node);
        if (k < 0 || g->newest == INT64_MIN)
            continue;                 /* the node did not answer */
        double lag = (double) (nn.newest[k] - g->newest) / 1e9;
        gh_alert_t *lost = gh_alert_find(st, g->node, g->gpu, "gpu_lost");
        gh_alert_t *a = gh_alert(st, g->node, g->gpu, "silent");
        if (!a) {
            rc = TELEM_ENOMEM;
            break;
        }
        int holds = lag > limit && !(lost && lost->active);
        if (holds)
            a->hold_run = st->run;
        if (holds && !a->active) {
            a->active = 1;
            rc = s_silent_event(g, lag, limit, nn.newest[k], out);
        }
    }
    det_map_destroy(&nn.map);
    free(nn.newest);
    return rc;
}
