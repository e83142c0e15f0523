/* det.c - detector instances, their parameters, event lists and the
 * registry of built-in detectors.
 *
 * Everything here is bookkeeping around the vtables: parameters live in two
 * arrays (numbers, strings) indexed like the vtable's table, so a detector
 * reads them by index at every run and a change made while the watcher runs
 * (det_set) takes effect at the next run with no reconfiguration step.  An
 * event is copied into one allocation (the struct, its arrays and strings),
 * so a list of events frees with one call per event.
 */
#include "det.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_why.h"

struct det_params {
    const det_vtable_t *vt;
    double *num;
    char **str;
};

struct det {
    const det_vtable_t *vt;
    char label[DET_LABEL_MAX + 1];
    det_params_t p;
    void *state;
    det_events_t *scratch;       /* what one run emits, before labelling */
    int paused;
    uint64_t runs;
    uint64_t nevents;
};

struct det_events {
    det_event_t **v;
    size_t n, cap;
};

/* ---- registry ---------------------------------------------------------- */

static const det_vtable_t *const s_registry[] = {
    &det_slowgpu, &det_proc_threshold, &det_threshold, &det_heartbeat,
    &det_gpu_health, &det_straggler,
};

const det_vtable_t *const *
det_registry(size_t *n)
{
    *n = sizeof s_registry / sizeof s_registry[0];
    return s_registry;
}

const det_vtable_t *
det_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof s_registry / sizeof s_registry[0];
         i++)
        if (strcmp(s_registry[i]->name, name) == 0)
            return s_registry[i];
    return NULL;
}

const char *
det_severity_name(det_severity_t sev)
{
    return sev == DET_SEV_WARN ? "warn" : sev == DET_SEV_ACT ? "act" : "?";
}

/* ---- parameters -------------------------------------------------------- */

double
det_params_num(const det_params_t *p, size_t i)
{
    return i < p->vt->nparams ? p->num[i] : NAN;
}

const char *
det_params_str(const det_params_t *p, size_t i)
{
    return i < p->vt->nparams && p->str[i] ? p->str[i] : "";
}

static long
s_param_index(const det_vtable_t *vt, const char *name)
{
    for (size_t i = 0; name && i < vt->nparams; i++)
        if (strcmp(vt->params[i].name, name) == 0)
            return (long) i;
    return -1;
}

/* Parses and range-checks one value without storing it. */
static int
s_parse_value(const det_param_def_t *d, const char *value, double *num,
              char *why, size_t why_size)
{
    if (d->type == DET_PARAM_STR) {
        if (strlen(value) > DET_VALUE_MAX) {
            telem_why(why, why_size, "%s: value longer than 255 bytes",
                      d->name);
            return TELEM_EINVAL;
        }
        for (size_t i = 0; d->choices && d->choices[i]; i++)
            if (strcmp(d->choices[i], value) == 0)
                return 0;
        if (d->choices) {
            telem_why(why, why_size,
                      "%s: '%s' is not one of the choices "
                      "(see --list)",
                      d->name, value);
            return TELEM_EINVAL;
        }
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end || !isfinite(v)) {
        telem_why(why, why_size, "%s: '%s' is not a number", d->name, value);
        return TELEM_EINVAL;
    }
    if (v < d->min || v > d->max || (d->integer && v != floor(v))) {
        char range[96];
        snprintf(range, sizeof range, "%s%g..%g", d->integer ? "a whole "
                 "number in " : "", d->min, d->max);
        telem_why(why, why_size, "%s: out of range, expected %s", d->name,
                  range);
        return TELEM_EINVAL;
    }
    *num = v;
    return 0;
}

int
det_set(det_t *self, const char *name, const char *value, char *why,
        size_t why_size)
{
    long i = s_param_index(self->vt, name);
    if (i < 0) {
        telem_why(why, why_size, "%s has no parameter '%s'", self->vt->name,
                  name ? name : "");
        return TELEM_ENOTFOUND;
    }
    if (!value) {
        telem_why(why, why_size, "%s: no value", name);
        return TELEM_EINVAL;
    }
    const det_param_def_t *d = &self->vt->params[i];
    double num = self->p.num[i];
    if (d->required && !*value) {
        telem_why(why, why_size, "%s must not be empty", name);
        return TELEM_EINVAL;
    }
    int rc = s_parse_value(d, value, &num, why, why_size);
    if (rc)
        return rc;
    char *copy = NULL;
    if (d->type == DET_PARAM_STR && !(copy = strdup(value)))
        return TELEM_ENOMEM;
    /* Apply, check the whole set, roll back on refusal. */
    double old_num = self->p.num[i];
    char *old_str = self->p.str[i];
    self->p.num[i] = num;
    if (copy)
        self->p.str[i] = copy;
    if (self->vt->check && (rc = self->vt->check(&self->p, why, why_size))) {
        self->p.num[i] = old_num;
        self->p.str[i] = old_str;
        free(copy);
        return TELEM_EINVAL;
    }
    if (copy)
        free(old_str);
    return 0;
}

int
det_check(const det_t *self, char *why, size_t why_size)
{
    for (size_t i = 0; i < self->vt->nparams; i++) {
        const det_param_def_t *d = &self->vt->params[i];
        if (d->type == DET_PARAM_STR && d->required &&
            !*det_params_str(&self->p, i)) {
            telem_why(why, why_size, "%s needs %s=...", self->vt->name,
                      d->name);
            return TELEM_EINVAL;
        }
    }
    if (self->vt->check && self->vt->check(&self->p, why, why_size))
        return TELEM_EINVAL;
    return 0;
}

/* Shortest %g form that reads back to the same double. */
static void
s_format_num(double v, char *buf, size_t size)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

int
det_get(const det_t *self, const char *name, char *buf, size_t size)
{
    long i = s_param_index(self->vt, name);
    if (i < 0)
        return TELEM_ENOTFOUND;
    char tmp[DET_VALUE_MAX + 1];
    if (self->vt->params[i].type == DET_PARAM_NUM)
        s_format_num(self->p.num[i], tmp, sizeof tmp);
    else
        snprintf(tmp, sizeof tmp, "%s", det_params_str(&self->p, (size_t) i));
    if (strlen(tmp) >= size)
        return TELEM_ETOOBIG;
    memcpy(buf, tmp, strlen(tmp) + 1);
    return 0;
}

/* ---- instances --------------------------------------------------------- */

static int
s_label_ok(const char *label)
{
    size_t n = strlen(label);
    if (n == 0 || n > DET_LABEL_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (iscntrl((unsigned char) label[i]))
            return 0;
    return 1;
}

static int
s_defaults(det_t *self)
{
    const det_vtable_t *vt = self->vt;
    self->p.vt = vt;
    self->p.num = calloc(vt->nparams ? vt->nparams : 1, sizeof(double));
    self->p.str = calloc(vt->nparams ? vt->nparams : 1, sizeof(char *));
    if (!self->p.num || !self->p.str)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < vt->nparams; i++) {
        const det_param_def_t *d = &vt->params[i];
        self->p.num[i] = d->def;
        if (d->type == DET_PARAM_STR &&
            !(self->p.str[i] = strdup(d->def_str ? d->def_str : "")))
            return TELEM_ENOMEM;
    }
    return 0;
}

det_t *
det_new(const det_vtable_t *vt, const char *label, int *err)
{
    int rc = TELEM_EINVAL;
    det_t *self = NULL;
    if (!vt || !vt->run || !vt->needs || (label && !s_label_ok(label)))
        goto out;
    rc = TELEM_ENOMEM;
    if (!(self = calloc(1, sizeof *self)))
        goto out;
    self->vt = vt;
    snprintf(self->label, sizeof self->label, "%s", label ? label : vt->name);
    if ((rc = s_defaults(self)) != 0)
        goto out;
    rc = TELEM_ENOMEM;
    if (!(self->scratch = det_events_new()))
        goto out;
    if (vt->create && !(self->state = vt->create()))
        goto out;
    return self;
out:
    det_destroy(&self);
    if (err)
        *err = rc;
    return NULL;
}

void
det_destroy(det_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    det_t *self = *self_p;
    if (self->vt->destroy && self->state)
        self->vt->destroy(&self->state);
    for (size_t i = 0; self->p.str && i < self->vt->nparams; i++)
        free(self->p.str[i]);
    free(self->p.str);
    free(self->p.num);
    det_events_destroy(&self->scratch);
    free(self);
    *self_p = NULL;
}

const char *det_label(const det_t *self) { return self->label; }
const det_vtable_t *det_vtable(const det_t *self) { return self->vt; }
void det_pause(det_t *self, int paused) { self->paused = paused != 0; }
int det_paused(const det_t *self) { return self->paused; }
uint64_t det_runs(const det_t *self) { return self->runs; }
uint64_t det_nevents(const det_t *self) { return self->nevents; }

void
det_needs(const det_t *self, int64_t now_ns, det_needs_t *out)
{
    memset(out, 0, sizeof *out);
    self->vt->needs(self->state, &self->p, now_ns, out);
}

/* Copies `e` with `label` as its detector (see det_events_add). */
static int s_events_add(det_events_t *self, const det_event_t *e,
                        const char *label);

int
det_run(det_t *self, const det_input_t *in, det_events_t *out)
{
    if (self->paused)
        return 0;
    det_events_clear(self->scratch);
    int rc = self->vt->run(self->state, &self->p, in, self->scratch);
    self->runs++;
    for (size_t i = 0; i < self->scratch->n; i++) {
        int arc = s_events_add(out, self->scratch->v[i], self->label);
        if (arc)
            return arc;
        self->nevents++;
    }
    det_events_clear(self->scratch);
    return rc;
}

void
det_describe(const det_t *self,
             void (*fn)(void *arg, const char *key, const char *value),
             void *arg)
{
    if (self->vt->describe)
        self->vt->describe(self->state, &self->p, fn, arg);
}

/* ---- event lists ------------------------------------------------------- */

det_events_t *
det_events_new(void)
{
    return calloc(1, sizeof(det_events_t));
}

void
det_events_destroy(det_events_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    det_events_clear(*self_p);
    free((*self_p)->v);
    free(*self_p);
    *self_p = NULL;
}

void
det_events_clear(det_events_t *self)
{
    for (size_t i = 0; i < self->n; i++)
        free(self->v[i]);
    self->n = 0;
}

size_t
det_events_count(const det_events_t *self)
{
    return self->n;
}

const det_event_t *
det_events_get(const det_events_t *self, size_t i)
{
    return i < self->n ? self->v[i] : NULL;
}

int
det_events_add(det_events_t *self, const det_event_t *e)
{
    return s_events_add(self, e, e ? e->detector : NULL);
}

/* Bump allocator over the one block an event lives in. */
typedef struct {
    char *p;
} s_bump_t;

static void *
s_take(s_bump_t *b, size_t size)
{
    void *r = b->p;
    b->p += (size + 7) & ~(size_t) 7;
    return r;
}

static const char *
s_copy_str(s_bump_t *b, const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(s_take(b, n), s, n);
}

static size_t
s_str_size(const char *s)
{
    return (strlen(s) + 1 + 7) & ~(size_t) 7;
}

/* 1 if `name` already is among the first n nodes. */
static int
s_has_node(const char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0)
            return 1;
    return 0;
}

static int
s_has_device(const det_device_t *v, size_t n, const det_device_t *d)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].node, d->node) == 0 &&
            strcmp(v[i].device, d->device) == 0)
            return 1;
    return 0;
}

static int
s_event_valid(const det_event_t *e, const char *label)
{
    if (!e || !label || !e->text ||
        (e->severity != DET_SEV_WARN && e->severity != DET_SEV_ACT) ||
        (e->nnodes && !e->nodes) || (e->ndevices && !e->devices) ||
        (e->nevidence && !e->evidence))
        return 0;
    for (size_t i = 0; i < e->nnodes; i++)
        if (!e->nodes[i])
            return 0;
    for (size_t i = 0; i < e->ndevices; i++)
        if (!e->devices[i].node || !e->devices[i].device)
            return 0;
    for (size_t i = 0; i < e->nevidence; i++)
        if (!e->evidence[i].name)
            return 0;
    return 1;
}

/* Bytes the copy of `e` needs (an upper bound: duplicates counted). */
static size_t
s_event_size(const det_event_t *e, const char *label)
{
    size_t nn = e->nnodes + e->ndevices;
    size_t size = sizeof(det_event_t) + 8 + s_str_size(label) +
                  s_str_size(e->text) + (nn + 1) * sizeof(char *) +
                  (e->ndevices + 1) * sizeof(det_device_t) +
                  (e->nevidence + 1) * sizeof(det_evidence_t);
    for (size_t i = 0; i < e->nnodes; i++)
        size += s_str_size(e->nodes[i]);
    for (size_t i = 0; i < e->ndevices; i++)
        size += s_str_size(e->devices[i].node) +
                s_str_size(e->devices[i].device);
    for (size_t i = 0; i < e->nevidence; i++)
        size += s_str_size(e->evidence[i].name);
    return size;
}

/* Fills c's node and device lists from e, each name once. */
static void
s_copy_hosts(s_bump_t *b, det_event_t *c, const det_event_t *e)
{
    const char **nodes = s_take(b, (e->nnodes + e->ndevices + 1) *
                                       sizeof(char *));
    det_device_t *devs = s_take(b, (e->ndevices + 1) * sizeof *devs);
    size_t nn = 0, nd = 0;
    for (size_t i = 0; i < e->nnodes; i++)
        if (!s_has_node(nodes, nn, e->nodes[i]))
            nodes[nn++] = s_copy_str(b, e->nodes[i]);
    for (size_t i = 0; i < e->ndevices; i++) {
        if (s_has_device(devs, nd, &e->devices[i]))
            continue;
        devs[nd].node = s_copy_str(b, e->devices[i].node);
        devs[nd].device = s_copy_str(b, e->devices[i].device);
        if (!s_has_node(nodes, nn, devs[nd].node))
            nodes[nn++] = devs[nd].node;
        nd++;
    }
    c->nodes = nodes;
    c->nnodes = nn;
    c->devices = devs;
    c->ndevices = nd;
}

static int
s_events_add(det_events_t *self, const det_event_t *e, const char *label)
{
    if (!self || !s_event_valid(e, label))
        return TELEM_EINVAL;
    if (telem_grow((void **) &self->v, &self->cap, self->n + 1,
                   sizeof *self->v, 8))
        return TELEM_ENOMEM;
    char *block = malloc(s_event_size(e, label));
    if (!block)
        return TELEM_ENOMEM;
    s_bump_t b = { block };
    det_event_t *c = s_take(&b, sizeof *c);
    *c = *e;
    c->detector = s_copy_str(&b, label);
    c->text = s_copy_str(&b, e->text);
    s_copy_hosts(&b, c, e);
    det_evidence_t *ev = s_take(&b, (e->nevidence + 1) * sizeof *ev);
    for (size_t i = 0; i < e->nevidence; i++) {
        ev[i].name = s_copy_str(&b, e->evidence[i].name);
        ev[i].value = e->evidence[i].value;
    }
    c->evidence = ev;
    self->v[self->n++] = c;
    return 0;
}
