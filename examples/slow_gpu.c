/* slow_gpu.c - example application for telem_launch: eigenvalues of
 * random matrices, checkpointed in the distributed dictionary, resumed
 * after a restart without redoing finished work.
 *
 * The job's work is `--tasks` tasks of `--iterations` iterations each.  An
 * iteration draws an M x M matrix of the Gaussian orthogonal ensemble
 * (Wigner: off-diagonal N(0,1), diagonal N(0,2)), computes its eigenvalues
 * with gsl_eigen_symm and adds eigenvalue / sqrt(M) to the task's
 * histogram.  As M grows that histogram tends to Wigner's semicircle,
 * rho(x) = sqrt(4 - x^2) / (2 pi) on [-2, 2], which the end checks.
 *
 * Workers: one thread per device (`--devices`, default 1) on every node of
 * the job; worker w of W (w = rank * devices + device) does the tasks t
 * with t mod W == w.  Each task's state (iterations done and histogram,
 * as text) is one key "task/<t>" in the dictionary namespace `--ns`,
 * written after every iteration with compare-and-set on the key's
 * version: the key is the task's checkpoint mark, acknowledged only once
 * replicated, and a stale writer can never overwrite newer state.
 * Every iteration's random numbers come from (seed, task, iteration)
 * alone, so the final histogram does not depend on how the work was
 * split, interrupted or resumed: a run that lost a node and resumed gives
 * the very same histogram (same checksum) as an undisturbed one, and an
 * iteration counted twice would change it.
 *
 * With TELEM_RESTARTED=1 each worker resumes its tasks from the
 * dictionary (a task moves to another worker when the node set changed);
 * on a first run it creates them and refuses a namespace that already
 * holds a run.  When a task is complete its worker sets the event
 * "<ns>/done/<t>"; rank 0 waits for every task's event, merges the
 * histograms and prints the result: the number of eigenvalues, the
 * histogram's checksum, the largest distance between the histogram's and
 * the semicircle's distribution functions, and the verdict (pass when
 * every eigenvalue was counted once and that distance is within
 * `--tolerance`); `--plot FILE` writes an SVG picture.
 *
 * Telemetry (telem.h): slow_gpu_iteration_seconds (level 1, tag gpu),
 * slow_gpu_task_done (level 2, tag task), slow_gpu_eigen_max (level 3),
 * and each iteration's computation as the section "iteration" (level 1:
 * telem_section_seconds and telem_section_step, tags section and rank),
 * which the straggler detector compares across ranks.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <telem/ddict.h>
#include <telem/telem.h>

#include "slow_gpu.h"

#define S_RANGE 2.5                 /* histogram over [-S_RANGE, S_RANGE] */

typedef struct {
    const sg_opts_t *o;
    int worker, nworkers, device;
    long computed;                  /* iterations done by this run */
    long resumed;                   /* tasks found partly done */
    int rc;
} s_worker_t;

/* ---- task state, as text in the dictionary ------------------------------ */

int
sg_state_format(const sg_opts_t *o, const sg_task_t *t, char **out,
                size_t *len)
{
    size_t cap = 128 + (size_t) (o->bins + 2) * 21;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    size_t n = (size_t) snprintf(buf, cap, "slow_gpu 1 size %d bins %d seed "
                                 "%lu iterations %d done %d counts",
                                 o->size, o->bins, o->seed, o->iterations,
                                 t->done);
    for (int b = 0; b < o->bins + 2; b++)
        n += (size_t) snprintf(buf + n, cap - n, " %" PRIu64, t->counts[b]);
    *out = buf;
    *len = n;
    return 0;
}

int
sg_state_parse(const sg_opts_t *o, const char *text, sg_task_t *t)
{
    int size, bins, iters, done, off = 0;
    unsigned long seed;
    if (sscanf(text, "slow_gpu 1 size %d bins %d seed %lu iterations %d "
               "done %d counts%n", &size, &bins, &seed, &iters, &done,
               &off) != 5 || off == 0)
        return -1;
    if (size != o->size || bins != o->bins || seed != o->seed
        || iters != o->iterations || done < 0 || done > iters)
        return -2;
    const char *p = text + off;
    for (int b = 0; b < bins + 2; b++) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno)
            return -1;
        t->counts[b] = v;
        p = end;
    }
    t->done = done;
    return 0;
}

/* ---- one iteration ------------------------------------------------------ */

typedef struct {
    gsl_matrix *a;
    gsl_vector *eval;
    gsl_eigen_symm_workspace *ws;
    gsl_rng *rng;
} s_work_t;

static void
s_work_free(s_work_t *w)
{
    gsl_matrix_free(w->a);
    gsl_vector_free(w->eval);
    if (w->ws)
        gsl_eigen_symm_free(w->ws);
    if (w->rng)
        gsl_rng_free(w->rng);
}

static int
s_work_init(s_work_t *w, int m)
{
    memset(w, 0, sizeof *w);
    w->a = gsl_matrix_alloc((size_t) m, (size_t) m);
    w->eval = gsl_vector_alloc((size_t) m);
    w->ws = gsl_eigen_symm_alloc((size_t) m);
    w->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (w->a && w->eval && w->ws && w->rng)
        return 0;
    s_work_free(w);
    return -1;
}

/* The seed of one iteration: a mix of (seed, task, iteration). */
static unsigned long
s_iteration_seed(unsigned long seed, int task, int iteration)
{
    uint64_t x = (uint64_t) seed * 0x9E3779B97F4A7C15ull
                 ^ ((uint64_t) task << 32 | (uint32_t) iteration);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (unsigned long) (x ? x : 1);
}

/* Draws the matrix of (task, iteration) and adds its scaled eigenvalues
 * to counts; returns the largest eigenvalue.  With --work-scale F the
 * matrix is drawn and its eigenvalues computed F times (gsl_eigen_symm
 * overwrites the matrix), the same each time: F times the work, one
 * result. */
static double
s_iteration(s_work_t *w, const sg_opts_t *o, int task, int iteration,
            uint64_t *counts)
{
    size_t m = (size_t) o->size;
    for (int rep = 0; rep < o->work_scale; rep++) {
        gsl_rng_set(w->rng, s_iteration_seed(o->seed, task, iteration));
        for (size_t i = 0; i < m; i++) {
            gsl_matrix_set(w->a, i, i, M_SQRT2 * gsl_ran_gaussian_ziggurat(
                                                     w->rng, 1.0));
            for (size_t j = i + 1; j < m; j++) {
                double g = gsl_ran_gaussian_ziggurat(w->rng, 1.0);
                gsl_matrix_set(w->a, i, j, g);
                gsl_matrix_set(w->a, j, i, g);
            }
        }
        gsl_eigen_symm(w->a, w->eval, w->ws);
    }
    double scale = 1.0 / sqrt((double) m), top = -INFINITY;
    for (size_t i = 0; i < m; i++) {
        double x = gsl_vector_get(w->eval, i) * scale;
        top = x > top ? x : top;
        counts[sg_bin(o, x)]++;
    }
    return top;
}

int
sg_bin(const sg_opts_t *o, double x)
{
    if (x < -S_RANGE)
        return o->bins;                     /* underflow */
    if (x >= S_RANGE)
        return o->bins + 1;                 /* overflow */
    int b = (int) ((x + S_RANGE) / (2 * S_RANGE) * o->bins);
    return b < o->bins ? b : o->bins - 1;
}

double
sg_edge(const sg_opts_t *o, int b)
{
    return -S_RANGE + 2 * S_RANGE * b / o->bins;
}

/* ---- a task ------------------------------------------------------------- */

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Loads task t (creating it on a first run); *version gets its version. */
static int
s_task_load(ddict_t *d, s_worker_t *wk, int t, sg_task_t *task,
            uint64_t *version)
{
    const sg_opts_t *o = wk->o;
    char key[32];
    int klen = snprintf(key, sizeof key, "task/%d", t);
    void *val = NULL;
    size_t vlen;
    int rc = ddict_get(d, key, (size_t) klen, &val, &vlen, version);
    if (rc == TELEM_ENOTFOUND) {
        memset(task->counts, 0, (size_t) (o->bins + 2) * sizeof *task->counts);
        task->done = 0;
        *version = 0;
        return 0;
    }
    if (rc) {
        fprintf(stderr, "slow_gpu: task %d: %s\n", t, telem_strerror(rc));
        return rc;
    }
    if (!o->restarted) {
        fprintf(stderr, "slow_gpu: namespace '%s' already holds task %d of "
                "a run: use another --ns or a new run directory\n", o->ns, t);
        free(val);
        return TELEM_ESTATE;
    }
    rc = sg_state_parse(o, val, task);
    free(val);
    if (rc)
        fprintf(stderr, "slow_gpu: task %d: the dictionary holds %s\n", t,
                rc == -2 ? "a run with other parameters" : "unreadable state");
    return rc ? TELEM_EINVAL : 0;
}

/* Stores task t if its version is still *version. */
static int
s_task_store(ddict_t *d, const sg_opts_t *o, int t, const sg_task_t *task,
             uint64_t *version)
{
    char key[32], *text;
    size_t len;
    int klen = snprintf(key, sizeof key, "task/%d", t);
    if (sg_state_format(o, task, &text, &len))
        return TELEM_ENOMEM;
    int rc = ddict_cas(d, key, (size_t) klen, text, len, *version, version);
    free(text);
    if (rc == TELEM_ECONFLICT)
        fprintf(stderr, "slow_gpu: task %d was written by another worker: "
                "stopping\n", t);
    else if (rc)
        fprintf(stderr, "slow_gpu: task %d: %s\n", t, telem_strerror(rc));
    return rc;
}

/* The hold of --hold-at: in a held run (TELEM_RESTART_COUNT below
 * --hold-runs), waits (in notified slices) until the hold event is set; a
 * run that the launcher restarts is stopped while it waits, and the next
 * run holds again only if it is held too. */
static int
s_hold(ddict_t *d, s_worker_t *wk, int t, int done)
{
    const sg_opts_t *o = wk->o;
    char ev[DDICT_NS_LIMIT + 216];
    int rc;
    if (o->hold_event)
        snprintf(ev, sizeof ev, "%s", o->hold_event);
    else
        snprintf(ev, sizeof ev, "%s/release", o->ns);
    if ((rc = ddict_event_is_set(d, ev)) != 0)
        return rc < 0 ? rc : 0;
    printf("slow_gpu: %s: task %d holds at iteration %d of %d until event "
           "'%s' is set or the job restarts\n", getenv("TELEM_NODE") ?
           getenv("TELEM_NODE") : "-", t, done, o->iterations, ev);
    fflush(stdout);
    while ((rc = ddict_event_wait(d, ev, o->timeout_ms)) == TELEM_ETIMEDOUT)
        ;
    return rc;
}

/* --pace: waits for this worker's next turn, k S + (w + 0.5) S / W on the
 * wall clock (CLOCK_REALTIME, the clock of the collectors' schedule):
 * worker w's share of every period S, halfway through it. */
static void
s_pace(const s_worker_t *wk)
{
    double pace = wk->o->pace;
    if (pace <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double) ts.tv_sec + ts.tv_nsec / 1e9;
    double phase = (wk->worker + 0.5) * pace / wk->nworkers;
    double next = (floor((now - phase) / pace) + 1) * pace + phase;
    ts.tv_sec = (time_t) next;
    ts.tv_nsec = (long) ((next - (double) ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int
s_task_run(ddict_t *d, s_worker_t *wk, s_work_t *w, int t)
{
    const sg_opts_t *o = wk->o;
    sg_task_t task;
    uint64_t version;
    char dev[16], name[32];
    task.counts = calloc((size_t) o->bins + 2, sizeof *task.counts);
    if (!task.counts)
        return TELEM_ENOMEM;
    snprintf(dev, sizeof dev, "%d", wk->device);
    snprintf(name, sizeof name, "%d", t);
    int rc = s_task_load(d, wk, t, &task, &version);
    if (rc == 0 && task.done > 0) {
        wk->resumed++;
        printf("slow_gpu: %s: task %d resumed at iteration %d of %d\n",
               getenv("TELEM_NODE") ? getenv("TELEM_NODE") : "-", t,
               task.done, o->iterations);
        fflush(stdout);
    }
    int hold = o->hold_at > 0 && o->restart_count < o->hold_runs
               ? (int) ceil(o->hold_at * o->iterations) : -1;
    while (rc == 0 && task.done < o->iterations) {
        if (task.done == hold && (rc = s_hold(d, wk, t, task.done)) != 0)
            break;
        s_pace(wk);
        double t0 = s_now();
        telem_section_t sec = telem_section_begin("iteration");
        double top = s_iteration(w, o, t, task.done, task.counts);
        telem_section_end(&sec);
        task.done++;
        if ((rc = s_task_store(d, o, t, &task, &version)) != 0)
            break;
        wk->computed++;
        telem_add_data_tags("slow_gpu_iteration_seconds", s_now() - t0, 0, 1,
                            1, "gpu", dev);
        telem_add_data_tags("slow_gpu_task_done", task.done, 0, 2, 1, "task",
                            name);
        telem_add_data("slow_gpu_eigen_max", top, 0, 3);
    }
    free(task.counts);
    if (rc == 0) {
        char ev[DDICT_NS_LIMIT + 32];
        snprintf(ev, sizeof ev, "%s/done/%d", o->ns, t);
        rc = ddict_event_set(d, ev);
    }
    return rc;
}

static void *
s_worker(void *arg)
{
    s_worker_t *wk = arg;
    s_work_t w;
    int err = 0;
    ddict_t *d = ddict_open(NULL, wk->o->ns, wk->o->timeout_ms, &err);
    if (!d || s_work_init(&w, wk->o->size) != 0) {
        fprintf(stderr, "slow_gpu: worker %d: %s\n", wk->worker,
                d ? "out of memory" : telem_strerror(err));
        wk->rc = d ? TELEM_ENOMEM : err;
        ddict_close(&d);
        return NULL;
    }
    for (int t = wk->worker; t < wk->o->tasks && !wk->rc; t += wk->nworkers)
        wk->rc = s_task_run(d, wk, &w, t);
    s_work_free(&w);
    ddict_close(&d);
    return NULL;
}

/* ---- the job ------------------------------------------------------------ */

static int
s_run_workers(const sg_opts_t *o, long *computed, long *resumed)
{
    s_worker_t wk[SG_DEVICES_MAX];
    pthread_t th[SG_DEVICES_MAX];
    int rc = 0, started = 0;
    for (int i = 0; i < o->devices; i++) {
        wk[i] = (s_worker_t) { o, o->rank * o->devices + i,
                               o->nnodes * o->devices, i, 0, 0, 0 };
        if (pthread_create(&th[i], NULL, s_worker, &wk[i]) != 0) {
            rc = TELEM_ENOMEM;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        rc = rc ? rc : wk[i].rc;
        *computed += wk[i].computed;
        *resumed += wk[i].resumed;
    }
    return rc;
}

/* Rank 0: waits for every task, merges their histograms into counts. */
static int
s_collect(const sg_opts_t *o, uint64_t *counts)
{
    int err = 0, rc = 0;
    ddict_t *d = ddict_open(NULL, o->ns, o->timeout_ms, &err);
    if (!d) {
        fprintf(stderr, "slow_gpu: %s\n", telem_strerror(err));
        return err;
    }
    sg_task_t task = { calloc((size_t) o->bins + 2, sizeof(uint64_t)), 0 };
    for (int t = 0; t < o->tasks && rc == 0 && task.counts; t++) {
        char ev[DDICT_NS_LIMIT + 32], key[32];
        snprintf(ev, sizeof ev, "%s/done/%d", o->ns, t);
        /* Other nodes may take long: wait in slices, each notified. */
        while ((rc = ddict_event_wait(d, ev, o->timeout_ms))
               == TELEM_ETIMEDOUT)
            ;
        void *val = NULL;
        size_t vlen;
        int klen = snprintf(key, sizeof key, "task/%d", t);
        if (rc == 0 && (rc = ddict_get(d, key, (size_t) klen, &val, &vlen,
                                       NULL)) == 0
            && (sg_state_parse(o, val, &task) || task.done != o->iterations))
            rc = TELEM_EINVAL;
        free(val);
        for (int b = 0; rc == 0 && b < o->bins + 2; b++)
            counts[b] += task.counts[b];
        if (rc)
            fprintf(stderr, "slow_gpu: task %d: %s\n", t, telem_strerror(rc));
    }
    rc = task.counts ? rc : TELEM_ENOMEM;
    free(task.counts);
    ddict_close(&d);
    return rc;
}

int
main(int argc, char **argv)
{
    sg_opts_t o;
    int rc = sg_opts_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    telem_init();
    long computed = 0, resumed = 0;
    rc = s_run_workers(&o, &computed, &resumed);
    printf("slow_gpu: %s: rank %d computed %ld iteration(s) in this run, "
           "resumed %ld task(s)\n", getenv("TELEM_NODE") ? getenv("TELEM_NODE")
           : "-", o.rank, computed, resumed);
    fflush(stdout);
    int status = rc ? 1 : 0;
    if (rc == 0 && o.rank == 0) {
        uint64_t *counts = calloc((size_t) o.bins + 2, sizeof *counts);
        rc = counts ? s_collect(&o, counts) : TELEM_ENOMEM;
        status = rc ? 1 : sg_report(&o, counts);
        free(counts);
    }
    telem_finalize();
    return status;
}
