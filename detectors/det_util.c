/* det_util.c - leave-one-out statistics, a string map and small helpers
 * for the built-in detectors.
 *
 * det_loo() is the costly step of slowgpu at large device counts.  Done
 * naively (a median and a MAD of the n-1 others, for each of n devices) it
 * costs O(n^2 log n), 1000 devices being about 4 s of sorting per round.
 * Here the values are sorted once (GSL's index sort gives every value's
 * rank), each device's peer median comes from the sorted array in O(1) by
 * skipping its own rank, and since that median takes at most three distinct
 * values, at most three arrays of absolute deviations are sorted; a
 * device's peer MAD is the median of one of them with its own deviation
 * skipped (found by binary search: any equal copy leaves the same multiset).
 */
#include "det_util.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- leave-one-out median and MAD -------------------------------------- */

void
det_scratch_free(det_scratch_t *s)
{
    free(s->sorted);
    for (int i = 0; i < 3; i++)
        free(s->dev[i]);
    free(s->perm);
    free(s->rank);
    memset(s, 0, sizeof *s);
}

static int
s_scratch_grow(det_scratch_t *s, size_t n)
{
    if (n <= s->cap)
        return 0;
    det_scratch_free(s);
    s->sorted = malloc(n * sizeof(double));
    s->perm = malloc(n * sizeof(size_t));
    s->rank = malloc(n * sizeof(size_t));
    for (int i = 0; i < 3; i++)
        s->dev[i] = malloc(n * sizeof(double));
    if (!s->sorted || !s->perm || !s->rank || !s->dev[0] || !s->dev[1] ||
        !s->dev[2]) {
        det_scratch_free(s);
        return TELEM_ENOMEM;
    }
    s->cap = n;
    return 0;
}

double
det_median_skip(const double *sorted, size_t n, size_t skip)
{
    size_t m = skip < n ? n - 1 : n;
    if (m == 0)
        return NAN;
    size_t lo = (m - 1) / 2, hi = m / 2;
    size_t a = lo + (skip < n && lo >= skip);
    size_t b = hi + (skip < n && hi >= skip);
    return a == b ? sorted[a] : sorted[a] + (sorted[b] - sorted[a]) / 2;
}

/* Index of the first element >= v in sorted[0..n). */
static size_t
s_lower_bound(const double *sorted, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The sorted deviation array around m: one of three cached slots. */
static const double *
s_devs_around(det_scratch_t *s, const double *x, size_t n, double m,
              int *used)
{
    for (int k = 0; k < *used; k++)
        if (s->dev_med[k] == m)
            return s->dev[k];
    int k = *used < 3 ? (*used)++ : 2;   /* never more than 3; be safe */
    for (size_t j = 0; j < n; j++)
        s->dev[k][j] = fabs(x[j] - m);
    gsl_sort(s->dev[k], 1, n);
    s->dev_med[k] = m;
    return s->dev[k];
}

int
det_loo(det_scratch_t *s, const double *x, size_t n, double *med,
        double *mad)
{
    if (n < 2) {
        for (size_t i = 0; i < n; i++)
            med[i] = mad[i] = NAN;
        return 0;
    }
    if (s_scratch_grow(s, n))
        return TELEM_ENOMEM;
    gsl_sort_index(s->perm, x, 1, n);
    for (size_t j = 0; j < n; j++) {
        s->sorted[j] = x[s->perm[j]];
        s->rank[s->perm[j]] = j;
    }
    int used = 0;
    for (size_t i = 0; i < n; i++) {
        med[i] = det_median_skip(s->sorted, n, s->rank[i]);
        const double *d = s_devs_around(s, x, n, med[i], &used);
        size_t pos = s_lower_bound(d, n, fabs(x[i] - med[i]));
        mad[i] = det_median_skip(d, n, pos);
    }
    return 0;
}

/* ---- tags, keys, text -------------------------------------------------- */

const char *
det_tag(const det_series_t *s, const char *key)
{
    for (size_t i = 0; i < s->ntags; i++)
        if (s->tags[i].key && strcmp(s->tags[i].key, key) == 0)
            return s->tags[i].value;
    return NULL;
}

char *
det_key(char *buf, size_t size, const char *a, const char *b, const char *c)
{
    int n = snprintf(buf, size, "%s\x1f%s\x1f%s", a ? a : "", b ? b : "",
                     c ? c : "");
    return n >= 0 && (size_t) n < size ? buf : NULL;
}

void
det_fmt_seconds(char *buf, size_t size, double s)
{
    if (fabs(s) < 1)
        snprintf(buf, size, "%.3g ms", s * 1e3);
    else
        snprintf(buf, size, "%.3g s", s);
}

/* ---- string map -------------------------------------------------------- */

typedef struct {
    char *key;
    long val;
} s_slot_t;

struct det_map {
    s_slot_t *slots;
    size_t cap;       /* power of two */
    size_t n;
};

static uint64_t
s_hash(const char *k)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *k; k++)
        h = (h ^ (unsigned char) *k) * 1099511628211ULL;
    return h;
}

det_map_t *
det_map_new(void)
{
    det_map_t *self = calloc(1, sizeof *self);
    if (self && !(self->slots = calloc(16, sizeof *self->slots))) {
        free(self);
        return NULL;
    }
    if (self)
        self->cap = 16;
    return self;
}

void
det_map_clear(det_map_t *self)
{
    for (size_t i = 0; i < self->cap; i++) {
        free(self->slots[i].key);
        self->slots[i].key = NULL;
    }
    self->n = 0;
}

void
det_map_destroy(det_map_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    det_map_clear(*self_p);
    free((*self_p)->slots);
    free(*self_p);
    *self_p = NULL;
}

size_t
det_map_count(const det_map_t *self)
{
    return self->n;
}

static s_slot_t *
s_find(s_slot_t *slots, size_t cap, const char *key)
{
    size_t i = (size_t) s_hash(key) & (cap - 1);
    while (slots[i].key && strcmp(slots[i].key, key) != 0)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

long
det_map_get(const det_map_t *self, const char *key)
{
    s_slot_t *s = s_find(self->slots, self->cap, key);
    return s->key ? s->val : -1;
}

static int
s_map_grow(det_map_t *self)
{
    size_t cap = self->cap * 2;
    s_slot_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < self->cap; i++)
        if (self->slots[i].key)
            *s_find(slots, cap, self->slots[i].key) = self->slots[i];
    free(self->slots);
    self->slots = slots;
    self->cap = cap;
    return 0;
}

int
det_map_put(det_map_t *self, const char *key, long val)
{
    if (2 * (self->n + 1) > self->cap && s_map_grow(self))
        return TELEM_ENOMEM;
    s_slot_t *s = s_find(self->slots, self->cap, key);
    if (!s->key) {
        if (!(s->key = strdup(key)))
            return TELEM_ENOMEM;
        self->n++;
    }
    s->val = val;
    return 0;
}

/* ---- entity tables ----------------------------------------------------- */

long
det_ents_get(det_ents_t *t, const char *node, const char *device,
             int64_t now)
{
    char key[2 * 256 + 8];
    if (!device)
        device = "";
    if (!det_key(key, sizeof key, node, device, NULL))
        return -1;
    if (!t->map && !(t->map = det_map_new()))
        return -1;
    long i = det_map_get(t->map, key);
    if (i >= 0)
        return i;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        det_ent_t *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    det_ent_t *e = &t->v[t->n];
    memset(e, 0, sizeof *e);
    size_t kl = strlen(key) + 1, nl = strlen(node) + 1, dl = strlen(device) + 1;
    if (!(e->key = malloc(kl + nl + dl)) ||
        det_map_put(t->map, key, (long) t->n)) {
        free(e->key);
        return -1;
    }
    memcpy(e->key, key, kl);
    e->node = memcpy(e->key + kl, node, nl);
    e->device = memcpy(e->key + kl + nl, device, dl);
    e->last_ts = now;
    return (long) t->n++;
}

int
det_ents_prune(det_ents_t *t, uint64_t keep_run)
{
    size_t stale = 0, k = 0;
    for (size_t i = 0; i < t->n; i++)
        stale += t->v[i].seen_run < keep_run;
    if (t->n < 1024 || 2 * stale < t->n)
        return 0;
    det_map_clear(t->map);
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].seen_run < keep_run) {
            free(t->v[i].key);
            continue;
        }
        t->v[k] = t->v[i];
        if (det_map_put(t->map, t->v[k].key, (long) k))
            return TELEM_ENOMEM;
        k++;
    }
    t->n = k;
    return 0;
}

void
det_ents_free(det_ents_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].key);
    free(t->v);
    det_map_destroy(&t->map);
    memset(t, 0, sizeof *t);
}

int
det_ents_state_create(void **state)
{
    det_ents_state_t *st = calloc(1, sizeof *st);
    *state = st;
    return st ? 0 : TELEM_ENOMEM;
}

void
det_ents_state_destroy(void **state)
{
    det_ents_state_t *st = *state;
    det_ents_free(&st->ents);
    free(st);
    *state = NULL;
}

size_t
det_ents_active_list(const det_ents_t *t, char *buf, size_t size)
{
    size_t len = 0, shown = 0, total = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        const det_ent_t *e = &t->v[i];
        if (!e->active)
            continue;
        total++;
        if (len + strlen(e->node) + strlen(e->device) + 8 >= size)
            continue;
        len += (size_t) snprintf(buf + len, size - len, "%s%s%s%s",
                                 shown++ ? ", " : "", e->node,
                                 *e->device ? "/" : "", e->device);
    }
    if (total > shown)
        snprintf(buf + len, size - len, " and %zu more", total - shown);
    return total;
}

int
det_params_nonempty(const det_params_t *p, size_t i, const char *name,
                    char *why, size_t why_size)
{
    if (*det_params_str(p, i))
        return 0;
    snprintf(why, why_size, "%s must not be empty", name);
    return TELEM_EINVAL;
}
