/* run_counts.c - the counter table of telem_run (run_counts.h).
 *
 * The cells are one array the counting side writes with relaxed atomics;
 * everything the flush needs besides them (the totals already pushed, the
 * two metric names of each slot, built on first use) lives in a second
 * array only the flushing thread touches, so counting never shares a cache
 * line with the flush's bookkeeping beyond the cells themselves.
 */
#include "run_counts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_types.h"

#define S_METRIC_MAX 64              /* metric and label key, NUL included */

typedef struct {
    uint64_t hits;                   /* totals at the last flush */
    uint64_t bytes;
    char *hits_name;                 /* "metric{key=\"label\"}", on first use */
    char *bytes_name;
} s_pushed_t;

struct run_counts {
    size_t n;
    run_counts_cell_t *cells;
    s_pushed_t *pushed;
    char hits_metric[S_METRIC_MAX];
    char bytes_metric[S_METRIC_MAX];
    char key[S_METRIC_MAX];
    run_counts_label_fn *label;
    void *label_arg;
    uint64_t failed;
};

static int
s_copy_name(char *dst, const char *src)
{
    if (!src || !*src || strlen(src) >= S_METRIC_MAX)
        return -1;
    strcpy(dst, src);
    return 0;
}

run_counts_t *
run_counts_new(size_t nslots, const char *hits_metric,
               const char *bytes_metric, const char *label_key,
               run_counts_label_fn *label, void *label_arg)
{
    run_counts_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n = nslots;
    c->cells = calloc(nslots ? nslots : 1, sizeof *c->cells);
    c->pushed = calloc(nslots ? nslots : 1, sizeof *c->pushed);
    c->label = label;
    c->label_arg = label_arg;
    if (!c->cells || !c->pushed || s_copy_name(c->hits_metric, hits_metric)
        || s_copy_name(c->bytes_metric, bytes_metric)
        || s_copy_name(c->key, label_key))
        run_counts_destroy(&c);
    return c;
}

void
run_counts_destroy(run_counts_t **counts_p)
{
    if (!counts_p || !*counts_p)
        return;
    run_counts_t *c = *counts_p;
    for (size_t i = 0; c->pushed && i < c->n; i++) {
        free(c->pushed[i].hits_name);
        free(c->pushed[i].bytes_name);
    }
    free(c->pushed);
    free(c->cells);
    free(c);
    *counts_p = NULL;
}

run_counts_cell_t *
run_counts_cells(run_counts_t *counts)
{
    return counts->cells;
}

size_t
run_counts_size(const run_counts_t *counts)
{
    return counts->n;
}

uint64_t
run_counts_failed(const run_counts_t *counts)
{
    return counts->failed;
}

void
run_counts_total(run_counts_t *counts, size_t slot, uint64_t *hits,
                 uint64_t *bytes)
{
    run_counts_cell_t *cell = &counts->cells[slot];
    if (hits)
        *hits = atomic_load_explicit(&cell->hits, memory_order_relaxed);
    if (bytes)
        *bytes = atomic_load_explicit(&cell->bytes, memory_order_relaxed);
}

/* A label value as a metric's label writes it: '\\' and '"' escaped, no
 * line breaks (a newline becomes "\n"). */
static void
s_escape(char *dst, size_t size, const char *src)
{
    size_t o = 0;
    for (; *src && o + 3 < size; src++) {
        if (*src == '\\' || *src == '"' || *src == '\n')
            dst[o++] = '\\';
        dst[o++] = *src == '\n' ? 'n' : *src;
    }
    dst[o] = '\0';
}

void
run_counts_label(run_counts_t *counts, size_t slot, char *buf, size_t size)
{
    char label[RUN_COUNTS_LABEL_MAX] = "";
    if (!counts->label
        || counts->label(counts->label_arg, slot, label, sizeof label)
        || !label[0])
        snprintf(label, sizeof label, "unknown");
    label[sizeof label - 1] = '\0';
    snprintf(buf, size, "%s", label);
}

static char *
s_name(const run_counts_t *c, const char *metric, const char *label)
{
    char esc[2 * RUN_COUNTS_LABEL_MAX + 1];
    s_escape(esc, sizeof esc, label);
    size_t len = strlen(metric) + strlen(c->key) + strlen(esc) + 6;
    char *name = len <= TELEM_NAME_MAX + 1 ? malloc(len) : NULL;
    if (name)
        snprintf(name, len, "%s{%s=\"%s\"}", metric, c->key, esc);
    return name;
}

/* Builds a slot's two metric names the first time it moves. */
static int
s_names(run_counts_t *c, size_t slot)
{
    s_pushed_t *p = &c->pushed[slot];
    if (p->hits_name)
        return 0;
    char label[RUN_COUNTS_LABEL_MAX];
    run_counts_label(c, slot, label, sizeof label);
    p->hits_name = s_name(c, c->hits_metric, label);
    p->bytes_name = s_name(c, c->bytes_metric, label);
    if (p->hits_name && p->bytes_name)
        return 0;
    free(p->hits_name);
    free(p->bytes_name);
    p->hits_name = p->bytes_name = NULL;
    return TELEM_ENOMEM;
}

static int
s_give(run_counts_t *c, run_counts_sink_fn *sink, void *arg,
       const char *name, uint64_t delta)
{
    if (!delta)
        return 0;
    if (sink(arg, name, (double) delta) < 0)
        c->failed++;
    return 1;
}

int
run_counts_flush(run_counts_t *counts, run_counts_sink_fn *sink, void *arg)
{
    int given = 0, rc = 0;
    for (size_t i = 0; i < counts->n; i++) {
        uint64_t hits, bytes;
        run_counts_total(counts, i, &hits, &bytes);
        s_pushed_t *p = &counts->pushed[i];
        if (hits == p->hits && bytes == p->bytes)
            continue;
        if (s_names(counts, i)) {
            rc = TELEM_ENOMEM;
            continue;
        }
        given += s_give(counts, sink, arg, p->hits_name, hits - p->hits);
        given += s_give(counts, sink, arg, p->bytes_name, bytes - p->bytes);
        p->hits = hits;
        p->bytes = bytes;
    }
    return rc ? rc : given;
}
