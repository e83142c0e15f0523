/* watch.c - the watcher's core: detectors, queries, one tick.
 *
 * Each tick asks every detector what it needs, merges that into at most
 * two fan-out queries (the union of the windowed metrics from the oldest
 * start any detector asked for; the newest point of every series when a
 * detector such as heartbeat wants it, asked only of the nodes that
 * answered the first query so a dead node costs one deadline, not two),
 * turns the answers into plain arrays without copying points (watch_input_t)
 * and runs the detectors.  Nodes that did not answer are passed to the
 * detectors as missing: a dead node is data, never a reason to stop.
 * Control requests (watch_control) read and change the same detector
 * instances between ticks.
 */
#include "watch.h"
#include "telem_grow.h"
#include "telem_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct watch {
    ac_t *ac;
    det_t *dets[WATCH_DETECTORS_MAX];
    size_t ndets;
    det_needs_t needs[WATCH_DETECTORS_MAX];
    det_events_t *events;
    watch_merge_t *merge;
    watch_input_t *input;
    int timeout_ms;
    char **missing;
    size_t nmissing;
    watch_stats_t stats;
    /* control replies */
    telem_watch_ctl_reply_t reply;
    telem_watch_row_t *rows;
    size_t nrows, caprows;
    char **strs;
    size_t nstrs, capstrs;
    int nomem;
};

/* ---- the watcher ------------------------------------------------------- */

watch_t *
watch_new(ac_t *ac)
{
    watch_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->ac = ac;
    self->timeout_ms = AC_TIMEOUT_DEFAULT_MS;
    self->events = det_events_new();
    self->input = watch_input_new();
    self->merge = watch_merge_new();
    if (!self->events || !self->input || !self->merge)
        watch_destroy(&self);
    return self;
}

static void
s_free_missing(watch_t *self)
{
    for (size_t i = 0; i < self->nmissing; i++)
        free(self->missing[i]);
    free(self->missing);
    self->missing = NULL;
    self->nmissing = 0;
}

static void
s_free_strs(watch_t *self)
{
    for (size_t i = 0; i < self->nstrs; i++)
        free(self->strs[i]);
    self->nstrs = 0;
}

void
watch_destroy(watch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    watch_t *self = *self_p;
    for (size_t i = 0; i < self->ndets; i++)
        det_destroy(&self->dets[i]);
    det_events_destroy(&self->events);
    watch_merge_destroy(&self->merge);
    watch_input_destroy(&self->input);
    s_free_missing(self);
    s_free_strs(self);
    free(self->strs);
    free(self->rows);
    free(self);
    *self_p = NULL;
}

size_t watch_ndetectors(const watch_t *self) { return self->ndets; }
det_t *watch_detector(const watch_t *self, size_t i)
{
    return i < self->ndets ? self->dets[i] : NULL;
}
const det_events_t *watch_events(const watch_t *self) { return self->events; }
size_t watch_nmissing(const watch_t *self) { return self->nmissing; }
const char *watch_missing(const watch_t *self, size_t i)
{
    return i < self->nmissing ? self->missing[i] : NULL;
}
const watch_stats_t *watch_stats(const watch_t *self) { return &self->stats; }

void
watch_set_ac(watch_t *self, ac_t *ac)
{
    self->ac = ac;
}

void
watch_set_timeout(watch_t *self, int timeout_ms)
{
    self->timeout_ms = timeout_ms > 0 ? timeout_ms : AC_TIMEOUT_DEFAULT_MS;
}

det_t *
watch_find(const watch_t *self, const char *label)
{
    for (size_t i = 0; label && i < self->ndets; i++)
        if (strcmp(det_label(self->dets[i]), label) == 0)
            return self->dets[i];
    return NULL;
}

/* Applies "P=V,P=V" to d. */
static int
s_apply_settings(det_t *d, char *list, char *why, size_t why_size)
{
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) {
            snprintf(why, why_size, "'%s' is not PARAM=VALUE", tok);
            return TELEM_EINVAL;
        }
        *eq = '\0';
        int rc = det_set(d, tok, eq + 1, why, why_size);
        if (rc)
            return rc;
    }
    return 0;
}

/* The label for a new NAME without one: NAME, else NAME-2, NAME-3... */
static void
s_free_label(const watch_t *self, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s", name);
    for (int k = 2; watch_find(self, buf); k++)
        snprintf(buf, size, "%s-%d", name, k);
}

int
watch_add_detector(watch_t *self, const char *spec, char *why, size_t why_size)
{
    int rc = TELEM_ENOMEM;
    det_t *d = NULL;
    char *copy = strdup(spec), label[DET_LABEL_MAX + 1] = "";
    if (!copy)
        return rc;
    char *colon = strchr(copy, ':'), *name = copy, *eq = strchr(copy, '=');
    if (colon)
        *colon = '\0';
    if (eq && (!colon || eq < colon)) {        /* LABEL=NAME[:...] */
        *eq = '\0';
        name = eq + 1;
        snprintf(label, sizeof label, "%s", copy);
    }
    const det_vtable_t *vt = det_find(name);
    rc = TELEM_ENOTFOUND;
    if (!vt) {
        snprintf(why, why_size, "no detector '%s' (see --list)", name);
        goto out;
    }
    rc = TELEM_EINVAL;
    if (*label && watch_find(self, label)) {
        snprintf(why, why_size, "two detectors labelled '%s'", label);
        goto out;
    }
    if (!*label)
        s_free_label(self, name, label, sizeof label);
    rc = TELEM_EFULL;
    if (self->ndets == WATCH_DETECTORS_MAX) {
        snprintf(why, why_size, "at most %d detectors", WATCH_DETECTORS_MAX);
        goto out;
    }
    if (!(d = det_new(vt, label, &rc))) {
        snprintf(why, why_size, "bad detector label '%s'", label);
        goto out;
    }
    if (colon && (rc = s_apply_settings(d, colon + 1, why, why_size)) != 0)
        goto out;
    if ((rc = det_check(d, why, why_size)) != 0)
        goto out;
    self->dets[self->ndets++] = d;
    d = NULL;
    rc = 0;
out:
    det_destroy(&d);
    free(copy);
    return rc;
}

int
watch_set_spec(watch_t *self, const char *spec, char *why, size_t why_size)
{
    char *copy = strdup(spec);
    if (!copy)
        return TELEM_ENOMEM;
    int rc = TELEM_EINVAL;
    char *eq = strchr(copy, '=');
    char *dot = eq ? memrchr(copy, '.', (size_t) (eq - copy)) : NULL;
    if (!eq || !dot || dot == copy || dot + 1 == eq) {
        snprintf(why, why_size, "'%s' is not LABEL.PARAM=VALUE", spec);
        goto out;
    }
    *dot = *eq = '\0';
    det_t *d = watch_find(self, copy);
    rc = TELEM_ENOTFOUND;
    if (!d) {
        snprintf(why, why_size, "no detector labelled '%s'", copy);
        goto out;
    }
    rc = det_set(d, dot + 1, eq + 1, why, why_size);
out:
    free(copy);
    return rc;
}

/* ---- one tick ---------------------------------------------------------- */

/* Adds name to list (no duplicates).  0 or TELEM_ETOOBIG. */
static int
s_add_name(const char **list, size_t *n, size_t max, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(list[i], name) == 0)
            return 0;
    if (*n == max)
        return TELEM_ETOOBIG;
    list[(*n)++] = name;
    return 0;
}

typedef struct {
    const char *metrics[TELEM_QUERY_METRICS_MAX];
    size_t nmetrics;
    int64_t start_ns;
    int latest, latest_all;
    const char *latest_metrics[TELEM_QUERY_METRICS_MAX];
    size_t nlatest;
} s_plan_t;

/* Merges the needs of every running detector into at most two queries. */
static int
s_plan(watch_t *self, int64_t now_ns, s_plan_t *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->start_ns = now_ns;
    for (size_t i = 0; i < self->ndets; i++) {
        if (det_paused(self->dets[i]))
            continue;
        det_needs_t *nd = &self->needs[i];
        det_needs(self->dets[i], now_ns, nd);
        for (size_t j = 0; j < nd->nmetrics; j++)
            if (s_add_name(pl->metrics, &pl->nmetrics,
                           TELEM_QUERY_METRICS_MAX, nd->metrics[j]))
                return TELEM_ETOOBIG;
        if (nd->nmetrics && nd->start_ns < pl->start_ns)
            pl->start_ns = nd->start_ns;
        if (!nd->latest)
            continue;
        pl->latest = 1;
        pl->latest_all |= nd->nlatest_metrics == 0;
        for (size_t j = 0; j < nd->nlatest_metrics; j++)
            if (s_add_name(pl->latest_metrics, &pl->nlatest,
                           TELEM_QUERY_METRICS_MAX, nd->latest_metrics[j]))
                return TELEM_ETOOBIG;
    }
    if (pl->start_ns <= 0)
        pl->start_ns = 1;            /* 0 would mean "the default" */
    return 0;
}

/* Remembers the nodes missing from r (once each). */
static int
s_note_missing(watch_t *self, const ac_result_t *r)
{
    for (size_t i = 0; r && i < ac_result_nmissing(r); i++) {
        const char *name = ac_result_missing(r, i);
        int dup = 0;
        for (size_t j = 0; j < self->nmissing && !dup; j++)
            dup = strcmp(self->missing[j], name) == 0;
        if (dup)
            continue;
        char **v = realloc(self->missing,
                           (self->nmissing + 1) * sizeof *v);
        if (!v)
            return TELEM_ENOMEM;
        self->missing = v;
        if (!(v[self->nmissing] = strdup(name)))
            return TELEM_ENOMEM;
        self->nmissing++;
    }
    return 0;
}

static int
s_add_result(watch_t *self, const ac_result_t *r, int latest)
{
    for (size_t i = 0; r && i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        if (watch_input_add(self->input, ac_result_series_node(r, i), s,
                            latest))
            return TELEM_ENOMEM;
        self->stats.series++;
        self->stats.points += s->npoints;
    }
    return s_note_missing(self, r);
}

/* Runs one query; *out may stay NULL when nothing was to be asked. */
static int
s_query(watch_t *self, const ac_query_t *q, ac_result_t **out)
{
    int rc = ac_query(self->ac, q, out);
    if (!*out)
        return rc;                    /* refused before sending */
    return 0;                         /* partial answers are data */
}

/* The nodes that answered r, for the second query. */
static size_t
s_answered(const watch_t *self, const char **names)
{
    size_t n = 0;
    for (size_t i = 0; i < ac_node_count(self->ac); i++) {
        const char *name = ac_node_name(self->ac, i);
        int gone = 0;
        for (size_t j = 0; j < self->nmissing && !gone; j++)
            gone = strcmp(self->missing[j], name) == 0;
        if (!gone)
            names[n++] = name;
    }
    return n;
}

static int
s_queries(watch_t *self, const s_plan_t *pl, ac_result_t **ra, ac_result_t **rb)
{
    int rc = 0;
    if (pl->nmetrics) {
        ac_query_t q = { .metrics = pl->metrics, .nmetrics = pl->nmetrics,
                         .start_ns = pl->start_ns,
                         .timeout_ms = self->timeout_ms };
        if ((rc = s_query(self, &q, ra)) != 0 ||
            (rc = s_add_result(self, *ra, 0)) != 0)
            return rc;
    }
    if (!pl->latest)
        return 0;
    size_t nn = ac_node_count(self->ac);
    const char **names = calloc(nn ? nn : 1, sizeof *names);
    if (!names)
        return TELEM_ENOMEM;
    size_t nask = s_answered(self, names);
    if (nask) {
        ac_query_t q = {
            .metrics = pl->latest_all ? NULL : pl->latest_metrics,
            .nmetrics = pl->latest_all ? 0 : pl->nlatest,
            .flags = TELEM_QUERY_LATEST, .nodes = names, .nnodes = nask,
            .timeout_ms = self->timeout_ms,
        };
        if ((rc = s_query(self, &q, rb)) == 0)
            rc = s_add_result(self, *rb, 1);
    }
    free(names);
    return rc;
}

int
watch_tick(watch_t *self, int64_t now_ns)
{
    if (!self->ac)
        return TELEM_ESTATE;
    int64_t t0 = telem_mono_ns();
    ac_result_t *ra = NULL, *rb = NULL;
    s_plan_t *pl = malloc(sizeof *pl);
    int rc = pl ? s_plan(self, now_ns, pl) : TELEM_ENOMEM;
    s_free_missing(self);
    watch_input_clear(self->input);
    self->stats.series = self->stats.points = 0;
    if (rc == 0)
        rc = s_queries(self, pl, &ra, &rb);
    self->stats.last_query_ns = telem_mono_ns() - t0;
    if (rc == 0) {
        size_t nn = ac_node_count(self->ac);
        const char **nodes = calloc(nn ? nn : 1, sizeof *nodes);
        for (size_t i = 0; nodes && i < nn; i++)
            nodes[i] = ac_node_name(self->ac, i);
        det_input_t in = { .now_ns = now_ns, .nodes = nodes, .nnodes = nn,
                           .missing = (const char *const *) self->missing,
                           .nmissing = self->nmissing };
        watch_input_fill(self->input, &in);
        rc = nodes ? watch_run(self, &in) : TELEM_ENOMEM;
        free(nodes);
    }
    ac_result_destroy(&ra);
    ac_result_destroy(&rb);
    free(pl);
    self->stats.ticks++;
    self->stats.last_tick_ns = telem_mono_ns() - t0;
    return rc;
}

int
watch_run(watch_t *self, const det_input_t *in)
{
    det_events_clear(self->events);
    for (size_t i = 0; i < self->ndets; i++) {
        int rc = det_run(self->dets[i], in, self->events);
        if (rc)
            return rc;
    }
    int rc = watch_merge_apply(self->merge, &self->events, in->now_ns);
    if (rc)
        return rc;
    self->stats.events += det_events_count(self->events);
    return 0;
}

/* ---- control ----------------------------------------------------------- */

/* A copy of s kept until the next control call; "" when out of memory. */
static const char *
s_keep(watch_t *self, const char *s)
{
    if (telem_grow((void **) &self->strs, &self->capstrs, self->nstrs + 1,
                   sizeof(char *), 64) == 0) {
        char *c = strdup(s);
        if (c)
            return self->strs[self->nstrs++] = c;
    }
    self->nomem = 1;
    return "";
}

static void
s_row(watch_t *self, const char *det, const char *key, const char *value)
{
    if (telem_grow((void **) &self->rows, &self->caprows, self->nrows + 1,
                   sizeof *self->rows, 64)) {
        self->nomem = 1;
        return;
    }
    self->rows[self->nrows++] = (telem_watch_row_t) {
        s_keep(self, det), s_keep(self, key), s_keep(self, value) };
}

static void
s_row_u64(watch_t *self, const char *det, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long) v);
    s_row(self, det, key, buf);
}

typedef struct {
    watch_t *self;
    const char *label;
} s_desc_arg_t;

static void
s_desc_line(void *arg, const char *key, const char *value)
{
    s_desc_arg_t *a = arg;
    s_row(a->self, a->label, key, value);
}

static void
s_status(watch_t *self, const char *const *extra, size_t nextra)
{
    const watch_stats_t *st = &self->stats;
    char buf[64];
    s_row_u64(self, "", "ticks", st->ticks);
    s_row_u64(self, "", "events", st->events);
    s_row_u64(self, "", "nodes", self->ac ? ac_node_count(self->ac) : 0);
    s_row_u64(self, "", "series", st->series);
    s_row_u64(self, "", "points", st->points);
    snprintf(buf, sizeof buf, "%.3f", (double) st->last_tick_ns / 1e6);
    s_row(self, "", "last_tick_ms", buf);
    for (size_t i = 0; i < self->nmissing; i++)
        s_row(self, "", "missing", self->missing[i]);
    for (size_t i = 0; i + 1 < nextra; i += 2)
        s_row(self, "", extra[i], extra[i + 1]);
    for (size_t i = 0; i < self->ndets; i++) {
        det_t *d = self->dets[i];
        const char *label = det_label(d);
        s_row(self, label, "detector", det_vtable(d)->name);
        s_row(self, label, "state", det_paused(d) ? "paused" : "running");
        s_row_u64(self, label, "runs", det_runs(d));
        s_row_u64(self, label, "events", det_nevents(d));
        s_desc_arg_t a = { self, label };
        det_describe(d, s_desc_line, &a);
    }
}

static void
s_thresholds(watch_t *self, det_t *only)
{
    for (size_t i = 0; i < self->ndets; i++) {
        det_t *d = self->dets[i];
        if (only && d != only)
            continue;
        const det_vtable_t *vt = det_vtable(d);
        for (size_t j = 0; j < vt->nparams; j++) {
            char v[DET_VALUE_MAX + 1];
            if (det_get(d, vt->params[j].name, v, sizeof v) == 0)
                s_row(self, det_label(d), vt->params[j].name, v);
        }
    }
}

static int
s_fail(watch_t *self, int code, const char *msg)
{
    self->reply.code = code;
    self->reply.message = s_keep(self, msg);
    return code;
}

/* The detector a request names, or NULL with the reply set to an error. */
static det_t *
s_target(watch_t *self, const telem_watch_ctl_t *req)
{
    det_t *d = watch_find(self, req->detector);
    if (d)
        return d;
    char msg[512];
    int len = snprintf(msg, sizeof msg, "no detector '%s'; running:",
                       req->detector ? req->detector : "");
    for (size_t i = 0; i < self->ndets && len > 0 && (size_t) len < sizeof msg; i++)
        len += snprintf(msg + len, sizeof msg - (size_t) len, " %s",
                        det_label(self->dets[i]));
    s_fail(self, TELEM_ENOTFOUND, msg);
    return NULL;
}

static void
s_set(watch_t *self, const telem_watch_ctl_t *req)
{
    det_t *d = s_target(self, req);
    if (!d)
        return;
    char old[DET_VALUE_MAX + 1] = "", now[DET_VALUE_MAX + 1] = "", why[512];
    det_get(d, req->param, old, sizeof old);
    int rc = det_set(d, req->param, req->value ? req->value : "", why,
                     sizeof why);
    if (rc) {
        s_fail(self, rc, why);
        return;
    }
    det_get(d, req->param, now, sizeof now);
    s_row(self, det_label(d), req->param, now);
    /* A cut message is fine: it is a human summary of the change. */
    int n = snprintf(why, sizeof why, "%.120s.%.120s: %.120s -> %.120s",
                     det_label(d), req->param, old, now);
    (void) n;
    self->reply.message = s_keep(self, why);
}

const telem_watch_ctl_reply_t *
watch_control(watch_t *self, const telem_watch_ctl_t *req,
              const char *const *extra,
              size_t nextra)
{
    s_free_strs(self);
    self->nrows = 0;
    self->nomem = 0;
    memset(&self->reply, 0, sizeof self->reply);
    self->reply.id = req->id;
    self->reply.message = "";
    det_t *d;
    switch (req->op) {
    case TELEM_WCTL_STATUS:
        s_status(self, extra, nextra);
        break;
    case TELEM_WCTL_THRESHOLDS:
        d = req->detector && *req->detector ? s_target(self, req) : NULL;
        if (d || !req->detector || !*req->detector)
            s_thresholds(self, d);
        break;
    case TELEM_WCTL_SET:
        s_set(self, req);
        break;
    case TELEM_WCTL_PAUSE:
    case TELEM_WCTL_RESUME:
        if ((d = s_target(self, req)) != NULL) {
            det_pause(d, req->op == TELEM_WCTL_PAUSE);
            s_row(self, det_label(d), "state",
                  det_paused(d) ? "paused" : "running");
        }
        break;
    default:
        s_fail(self, TELEM_EUNSUPPORTED, "unknown control operation");
    }
    if (self->nomem) {
        s_free_strs(self);
        self->nrows = 0;
        self->reply.code = TELEM_ENOMEM;
        self->reply.message = "out of memory";
    }
    self->reply.rows = self->reply.code ? NULL : self->rows;
    self->reply.nrows = self->reply.code ? 0 : (uint32_t) self->nrows;
    return &self->reply;
}
