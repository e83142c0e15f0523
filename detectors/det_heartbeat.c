/* det_heartbeat.c - the heartbeat detector: who went quiet.
 *
 * A node (per=node) or a node's series of one tag value (per=gpu: one
 * collector) is lost when the newest point it reported is older than
 * `timeout` seconds.  The figure is the data's own timestamp, so a node
 * whose agent still answers but whose samplers or collectors stopped is
 * lost too, and a node that does not answer at all (named in the query's
 * missing list) simply never advances.  Every node of the job starts with
 * a grace of one timeout from the detector's first run, so a node that
 * never reported anything is also found.  Each entity is reported once,
 * and again only after it has reported fresh data in between.
 */
#include "det.h"
#include "det_ents.h"
#include "det_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_sevs[] = { "warn", "act", NULL };

enum { H_TIMEOUT, H_METRIC, H_PER, H_SEVERITY, H_NPARAMS };

static const det_param_def_t s_params[H_NPARAMS] = {
    [H_TIMEOUT] = { "timeout", DET_PARAM_NUM, 10, 0.001, 86400, 0, NULL, NULL,
        "seconds without a new point after which the node is lost" },
    [H_METRIC] = { "metric", DET_PARAM_STR, 0, 0, 0, 0, "", NULL,
        "only this metric counts (e.g. cg_dgemm_seconds for collectors); "
        "empty: any metric" },
    [H_PER] = { "per", DET_PARAM_STR, 0, 0, 0, 0, "node", NULL,
        "\"node\", or a tag key (gpu: each collector of a node separately; "
        "only entities seen once are known)" },
    [H_SEVERITY] = { "severity", DET_PARAM_STR, 0, 0, 0, 0, "act", s_sevs,
        "severity of the events" },
};

static int
s_check(const det_params_t *p, char *why, size_t why_size)
{
    return det_util_params_nonempty(p, H_PER, "per", why, why_size);
}

static void
s_needs(const void *state, const det_params_t *p, int64_t now_ns,
        det_needs_t *out)
{
    (void) state;
    (void) now_ns;
    out->latest = 1;
    out->latest_metrics[0] = det_params_str(p, H_METRIC);
    out->nlatest_metrics = *out->latest_metrics[0] ? 1 : 0;
}

static int
s_missing(const det_input_t *in, const char *node)
{
    for (size_t i = 0; i < in->nmissing; i++)
        if (in->missing[i] && strcmp(in->missing[i], node) == 0)
            return 1;
    return 0;
}

/* Advances entities from the newest points of the input. */
static int
s_observe(det_ents_state_t *st, const det_params_t *p, const det_input_t *in)
{
    const char *metric = det_params_str(p, H_METRIC);
    const char *per = det_params_str(p, H_PER);
    int by_node = strcmp(per, "node") == 0;
    for (size_t i = 0; by_node && i < in->nnodes; i++) {
        long k = in->nodes[i] ? det_ents_get(&st->ents, in->nodes[i], "",
                                             in->now_ns) : 0;
        if (k < 0)
            return TELEM_ENOMEM;
        if (in->nodes[i])
            st->ents.v[k].seen_run = st->run;
    }
    for (size_t i = 0; i < in->nlatest; i++) {
        const det_series_t *s = &in->latest[i];
        const char *host = det_util_tag(s, "host");
        const char *node = host ? host : s->node ? s->node : "";
        const char *dev = by_node ? "" : det_util_tag(s, per);
        if (s->n == 0 || !s->ts || !dev ||
            (*metric && (!s->metric || strcmp(s->metric, metric) != 0)))
            continue;
        long k = det_ents_get(&st->ents, node, dev, in->now_ns);
        if (k < 0)
            return TELEM_ENOMEM;
        det_ents_entry_t *e = &st->ents.v[k];
        e->seen_run = st->run;
        if (s->ts[s->n - 1] > e->last_ts)
            e->last_ts = s->ts[s->n - 1];
    }
    return 0;
}

static int
s_event(const det_params_t *p, const det_input_t *in, const det_ents_entry_t *e,
        det_events_t *out)
{
    double silent = (double) (in->now_ns - e->last_ts) / 1e9;
    double timeout = det_params_num(p, H_TIMEOUT);
    int answered = !s_missing(in, e->node);
    char text[1200], what[600];
    if (*e->device)
        snprintf(what, sizeof what, "%s %s on node '%s'",
                 det_params_str(p, H_PER), e->device, e->node);
    else
        snprintf(what, sizeof what, "node '%s'", e->node);
    snprintf(text, sizeof text, "%s reported nothing%s%s for %.3g s (timeout "
             "%.3g s)%s", what, *det_params_str(p, H_METRIC) ? " of " : "",
             det_params_str(p, H_METRIC), silent, timeout,
             answered ? "" : "; its agent did not answer the last query");
    det_evidence_t ev[] = {
        { "silent_s", silent }, { "timeout_s", timeout },
        { "answered", answered },
    };
    det_device_t dv = { e->node, e->device };
    det_event_t ee = {
        .detector = "heartbeat",
        .severity = strcmp(det_params_str(p, H_SEVERITY), "act") == 0
                        ? DET_SEV_ACT : DET_SEV_WARN,
        .ts_ns = in->now_ns, .nodes = &e->node, .nnodes = 1,
        .devices = &dv, .ndevices = *e->device ? 1 : 0, .score = silent,
        .evidence = ev, .nevidence = sizeof ev / sizeof ev[0], .text = text,
    };
    return det_events_add(out, &ee);
}

static int
s_run(void *state, const det_params_t *p, const det_input_t *in,
      det_events_t *out)
{
    det_ents_state_t *st = state;
    st->run++;
    int rc = s_observe(st, p, in);
    int64_t timeout = (int64_t) (det_params_num(p, H_TIMEOUT) * 1e9);
    for (size_t i = 0; i < st->ents.n && !rc; i++) {
        det_ents_entry_t *e = &st->ents.v[i];
        if (in->now_ns - e->last_ts <= timeout) {
            e->active = 0;
            continue;
        }
        if (!e->active && (rc = s_event(p, in, e, out)) == 0)
            e->active = 1;
    }
    return rc ? rc : det_ents_prune(&st->ents,
                                    st->run > 1000 ? st->run - 1000 : 0);
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
    fn(arg, "lost", total ? buf : "none");
    snprintf(buf, sizeof buf, "%zu", st->ents.n);
    fn(arg, "watched", buf);
}

const det_vtable_t det_heartbeat = {
    .name = "heartbeat",
    .doc = "A node (or collector series) that reported nothing for a "
           "timeout is lost; nodes that do not answer queries never report.  "
           "Score: seconds since its newest point.",
    .params = s_params,
    .nparams = H_NPARAMS,
    .create = det_ents_state_new,
    .destroy = det_ents_state_destroy,
    .check = s_check,
    .needs = s_needs,
    .run = s_run,
    .describe = s_describe,
};
