/* run_tids.c - the traced threads' table (run_tids.h): open addressing
 * with linear probing over a power-of-two array; a deletion shifts the
 * entries of its probe run back so lookups never need tombstones.
 */
#include "run_tids.h"

#include <stdlib.h>

#include "telem_grow.h"

#define S_MIN_CAP 64

struct run_tids {
    run_tid_t *v;
    size_t cap;                 /* a power of two */
    size_t n;
};

run_tids_t *
run_tids_new(void)
{
    run_tids_t *t = calloc(1, sizeof *t);
    if (t && !(t->v = calloc(S_MIN_CAP, sizeof *t->v))) {
        free(t);
        return NULL;
    }
    if (t)
        t->cap = S_MIN_CAP;
    return t;
}

void
run_tids_destroy(run_tids_t **tids_p)
{
    if (!tids_p || !*tids_p)
        return;
    free((*tids_p)->v);
    free(*tids_p);
    *tids_p = NULL;
}

static inline size_t
s_home(const run_tids_t *t, pid_t tid)
{
    return (size_t) telem_hash_mix64((uint64_t) tid) & (t->cap - 1);
}

run_tid_t *
run_tids_get(run_tids_t *tids, pid_t tid)
{
    for (size_t i = s_home(tids, tid);; i = (i + 1) & (tids->cap - 1)) {
        if (tids->v[i].tid == tid)
            return &tids->v[i];
        if (tids->v[i].tid == 0)
            return NULL;
    }
}

/* Puts an entry known to be absent; the table has room. */
static run_tid_t *
s_insert(run_tids_t *t, run_tid_t e)
{
    size_t i = s_home(t, e.tid);
    while (t->v[i].tid)
        i = (i + 1) & (t->cap - 1);
    t->v[i] = e;
    t->n++;
    return &t->v[i];
}

static int
s_grow(run_tids_t *t)
{
    run_tid_t *old = t->v;
    size_t old_cap = t->cap;
    run_tid_t *v = calloc(old_cap * 2, sizeof *v);
    if (!v)
        return -1;
    t->v = v;
    t->cap = old_cap * 2;
    t->n = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].tid)
            s_insert(t, old[i]);
    free(old);
    return 0;
}

run_tid_t *
run_tids_put(run_tids_t *tids, pid_t tid)
{
    run_tid_t *e = run_tids_get(tids, tid);
    if (e)
        return e;
    if (2 * (tids->n + 1) > tids->cap && s_grow(tids))
        return NULL;
    return s_insert(tids, (run_tid_t) { tid, RUN_TID_NO_CALL, 0 });
}

void
run_tids_del(run_tids_t *tids, pid_t tid)
{
    run_tid_t *e = run_tids_get(tids, tid);
    if (!e)
        return;
    size_t mask = tids->cap - 1, hole = (size_t) (e - tids->v);
    tids->v[hole].tid = 0;
    tids->n--;
    /* Backward shift: move up every entry of the run whose home is not
       between the hole and itself (cyclically). */
    for (size_t i = (hole + 1) & mask; tids->v[i].tid; i = (i + 1) & mask) {
        size_t home = s_home(tids, tids->v[i].tid);
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            tids->v[hole] = tids->v[i];
            tids->v[i].tid = 0;
            hole = i;
        }
    }
}

void
run_tids_clear(run_tids_t *tids)
{
    for (size_t i = 0; i < tids->cap; i++)
        tids->v[i].tid = 0;
    tids->n = 0;
}

size_t
run_tids_count(const run_tids_t *tids)
{
    return tids->n;
}

size_t
run_tids_capacity(const run_tids_t *tids)
{
    return tids->cap;
}

run_tid_t *
run_tids_at(run_tids_t *tids, size_t i)
{
    return &tids->v[i];
}
