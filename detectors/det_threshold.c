/* det_threshold.c - the threshold and proc-threshold detectors.
 *
 * threshold compares any metric with a value (> >= < <= ==) and fires when
 * the comparison has held for `duration` seconds, per node or per value of
 * a tag (per=gpu: each device separately).  "Held for d" is read off the
 * data, not a timer: walking back from a series' newest point, the run of
 * points that satisfy the comparison started at t0, and it has held for
 * newest - t0.  So a sampling gap never resets it and the decision is the
 * same whenever the watcher happens to look.  A group (a node, or a node
 * and tag value) holds when any of its series holds; it is reported once
 * and cleared when new data shows the comparison false.
 *
 * proc-threshold is the same engine fixed to num_running_processes > limit
 * per node, with act severity: a node drowning in processes hurts the job.
 */
#include "det.h"
#include "det_ents.h"
#include "det_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_ops[] = { ">", ">=", "<", "<=", "==", NULL };
static const char *const s_sevs[] = { "warn", "act", NULL };

enum { T_METRIC, T_OP, T_VALUE, T_DURATION, T_PER, T_SEVERITY, T_NPARAMS };
enum { P_LIMIT, P_DURATION, P_SEVERITY, P_NPARAMS };

static const det_param_def_t s_tparams[T_NPARAMS] = {
    [T_METRIC] = { "metric", DET_PARAM_STR, 0, 0, 0, 0, "", NULL,
        "the metric compared", 1 },
    [T_OP] = { "op", DET_PARAM_STR, 0, 0, 0, 0, ">", s_ops,
        "comparison: the metric OP value" },
    [T_VALUE] = { "value", DET_PARAM_NUM, 0, -1e300, 1e300, 0, NULL, NULL,
        "the value compared with" },
    [T_DURATION] = { "duration", DET_PARAM_NUM, 0, 0, 86400, 0, NULL, NULL,
        "seconds the comparison must have held (0: the newest point)" },
    [T_PER] = { "per", DET_PARAM_STR, 0, 0, 0, 0, "node", NULL,
        "\"node\", or a tag key: judge each node and value of that tag "
        "separately (series without the tag are skipped)" },
    [T_SEVERITY] = { "severity", DET_PARAM_STR, 0, 0, 0, 0, "warn", s_sevs,
        "severity of the events" },
};

static const det_param_def_t s_pparams[P_NPARAMS] = {
    [P_LIMIT] = { "limit", DET_PARAM_NUM, 1024, 0, 1e12, 0, NULL, NULL,
        "fires when num_running_processes > limit" },
    [P_DURATION] = { "duration", DET_PARAM_NUM, 0, 0, 86400, 0, NULL, NULL,
        "seconds it must have stayed over the limit" },
    [P_SEVERITY] = { "severity", DET_PARAM_STR, 0, 0, 0, 0, "act", s_sevs,
        "severity of the events" },
};

/* What one run compares, whichever detector it is. */
typedef struct {
    const char *metric;
    const char *op;
    double value;
    double duration;
    const char *per;
    det_severity_t sev;
} s_rule_t;

static int
s_cmp(const char *op, double x, double v)
{
    if (isnan(x))
        return 0;
    switch (op[0]) {
    case '>': return op[1] ? x >= v : x > v;
    case '<': return op[1] ? x <= v : x < v;
    default: return x == v;
    }
}

/* Seconds the comparison has held at the newest point of s, or -1. */
static double
s_held(const s_rule_t *r, const det_series_t *s)
{
    if (s->n == 0 || !s_cmp(r->op, s->val[s->n - 1], r->value))
        return -1;
    size_t j = s->n - 1;
    while (j > 0 && s_cmp(r->op, s->val[j - 1], r->value))
        j--;
    return (double) (s->ts[s->n - 1] - s->ts[j]) / 1e9;
}

/* Looks at one series and updates its group. */
static int
s_series(det_ents_state_t *st, const s_rule_t *r, const det_series_t *s,
         int64_t now)
{
    const char *host = det_util_tag(s, "host");
    const char *node = host ? host : s->node ? s->node : "";
    const char *dev = "";
    if (strcmp(r->per, "node") != 0 && !(dev = det_util_tag(s, r->per)))
        return 0;
    long i = det_ents_get(&st->ents, node, dev, now);
    if (i < 0)
        return TELEM_ENOMEM;
    det_ents_entry_t *e = &st->ents.v[i];
    double held = s_held(r, s);
    if (e->seen_run != st->run)
        e->held = -1;
    e->seen_run = st->run;
    if (held >= r->duration && held >= e->held) {
        e->hold_run = st->run;
        e->held = held;
        e->value = s->val[s->n - 1];
        e->last_ts = s->ts[s->n - 1];
    }
    return 0;
}

static int
s_event(const s_rule_t *r, const det_ents_entry_t *e, det_events_t *out)
{
    char text[1200], where[600];
    if (*e->device)
        snprintf(where, sizeof where, "node '%s', %s %s", e->node, r->per,
                 e->device);
    else
        snprintf(where, sizeof where, "node '%s'", e->node);
    snprintf(text, sizeof text, "%s: %s is %.6g, %s %.6g, for %.3g s "
             "(required %.3g s)", where, r->metric, e->value, r->op, r->value,
             e->held, r->duration);
    det_evidence_t ev[] = {
        { "value", e->value }, { "threshold", r->value },
        { "held_s", e->held }, { "duration_s", r->duration },
    };
    det_device_t dv = { e->node, e->device };
    det_event_t ee = {
        .detector = "threshold", .severity = r->sev, .ts_ns = e->last_ts,
        .nodes = &e->node, .nnodes = 1, .devices = &dv,
        .ndevices = *e->device ? 1 : 0, .score = e->value, .evidence = ev,
        .nevidence = sizeof ev / sizeof ev[0], .text = text,
    };
    return det_events_add(out, &ee);
}

static int
s_eval(det_ents_state_t *st, const s_rule_t *r, const det_input_t *in,
       det_events_t *out)
{
    st->run++;
    int rc = 0;
    for (size_t i = 0; i < in->nseries && !rc; i++) {
        const det_series_t *s = &in->series[i];
        if (s->metric && s->ts && s->val && strcmp(s->metric, r->metric) == 0)
            rc = s_series(st, r, s, in->now_ns);
    }
    for (size_t i = 0; i < st->ents.n && !rc; i++) {
        det_ents_entry_t *e = &st->ents.v[i];
        if (e->seen_run != st->run)
            continue;                       /* no data: undecided */
        if (e->hold_run != st->run) {
            e->active = 0;
            continue;
        }
        if (!e->active && (rc = s_event(r, e, out)) == 0)
            e->active = 1;
    }
    return rc ? rc : det_ents_prune(&st->ents,
                                    st->run > 100 ? st->run - 100 : 0);
}

static det_severity_t
s_sev(const char *name)
{
    return strcmp(name, "act") == 0 ? DET_SEV_ACT : DET_SEV_WARN;
}

static int64_t
s_start(int64_t now_ns, double duration)
{
    return now_ns - (int64_t) ((duration * 1.5 + 10) * 1e9);
}

/* ---- threshold --------------------------------------------------------- */

static int
s_tcheck(const det_params_t *p, char *why, size_t why_size)
{
    return det_util_params_nonempty(p, T_PER, "per", why, why_size);
}

static void
s_tneeds(const void *state, const det_params_t *p, int64_t now_ns,
         det_needs_t *out)
{
    (void) state;
    out->metrics[0] = det_params_str(p, T_METRIC);
    out->nmetrics = *out->metrics[0] ? 1 : 0;
    out->start_ns = s_start(now_ns, det_params_num(p, T_DURATION));
}

static int
s_trun(void *state, const det_params_t *p, const det_input_t *in,
       det_events_t *out)
{
    s_rule_t r = {
        det_params_str(p, T_METRIC), det_params_str(p, T_OP),
        det_params_num(p, T_VALUE), det_params_num(p, T_DURATION),
        det_params_str(p, T_PER), s_sev(det_params_str(p, T_SEVERITY)),
    };
    if (!*r.metric)
        return 0;
    return s_eval(state, &r, in, out);
}

static void
s_describe(const void *state, const det_params_t *p,
           void (*fn)(void *arg, const char *key, const char *value),
           void *arg)
{
    (void) p;
    const det_ents_state_t *st = state;
    char buf[1024];
    size_t total = det_ents_active_list(&st->ents, buf, sizeof buf);
    fn(arg, "firing", total ? buf : "none");
}

const det_vtable_t det_threshold = {
    .name = "threshold",
    .doc = "Any metric compared with a value (> >= < <= ==) for a duration, "
           "per node or per tag value.  Score: the newest value.",
    .params = s_tparams,
    .nparams = T_NPARAMS,
    .create = det_ents_state_new,
    .destroy = det_ents_state_destroy,
    .check = s_tcheck,
    .needs = s_tneeds,
    .run = s_trun,
    .describe = s_describe,
};

/* ---- proc-threshold ---------------------------------------------------- */

static void
s_pneeds(const void *state, const det_params_t *p, int64_t now_ns,
         det_needs_t *out)
{
    (void) state;
    out->metrics[0] = "num_running_processes";
    out->nmetrics = 1;
    out->start_ns = s_start(now_ns, det_params_num(p, P_DURATION));
}

static int
s_prun(void *state, const det_params_t *p, const det_input_t *in,
       det_events_t *out)
{
    s_rule_t r = {
        "num_running_processes", ">", det_params_num(p, P_LIMIT),
        det_params_num(p, P_DURATION), "node",
        s_sev(det_params_str(p, P_SEVERITY)),
    };
    return s_eval(state, &r, in, out);
}

const det_vtable_t det_proc_threshold = {
    .name = "proc-threshold",
    .doc = "A node whose num_running_processes (processes of the job's "
           "user) exceeds a limit, for a duration.  Score: the count.",
    .params = s_pparams,
    .nparams = P_NPARAMS,
    .create = det_ents_state_new,
    .destroy = det_ents_state_destroy,
    .needs = s_pneeds,
    .run = s_prun,
    .describe = s_describe,
};
