/* bench_straggler_rank.c - one rank of bench_straggler's instrumented job.
 *
 * Every step does a fixed amount of real work, the collectors' kernel
 * with more rows: C = A B through GSL's CBLAS, A rows x 160 and B 160 x
 * 160 (the cpu collector multiplies 160 x 160 by 160 x 160), and marks it
 * as a program does, telem_section_begin("step") / telem_section_end()
 * into the node's telemd (TELEM_NODE, TELEM_RUNDIR and TELEM_RANK from the
 * environment, as telem_launch sets them).  Step k starts at the realtime
 * instant epoch + k x period + phase: the rank's slot of the core it
 * shares with the other ranks and the collectors (bench_slots.h), so all
 * ranks are measured on the same hardware at nearly the same instants.
 *
 * --extra FROM:TO:FACTOR gives the steps [FROM, TO) FACTOR times the rows,
 * FACTOR times the work on the same hardware (data imbalance).  The rank
 * also times its own section calls (begin plus end, less two reads of the
 * clock, measured alone first) and, after telem_finalize(), writes
 * "p50_ns p99_ns steps dropped begin_p50_ns end_p50_ns clock_ns" to
 * --cost FILE.
 *
 * Usage: bench_straggler_rank --epoch NS --period S --phase S --steps N
 *        --core C [--rows R] [--extra FROM:TO:FACTOR]... [--cost FILE]
 */
#include <getopt.h>
#include <gsl/gsl_blas.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_slots.h"
#include "telem.h"
#include "telem_time.h"

#define S_N 160                 /* the collectors' DGEMM size */
#define S_EXTRA_MAX 64

typedef struct {
    int64_t from, to;
    double factor;
} s_extra_t;

typedef struct {
    int64_t epoch, period_ns, phase_ns, steps;
    int core, rows;
    s_extra_t extra[S_EXTRA_MAX];
    int nextra;
    const char *cost;
} s_opts_t;

static void
s_usage(void)
{
    fputs("usage: bench_straggler_rank --epoch NS --period S --phase S "
          "--steps N --core C\n       [--rows R] [--extra FROM:TO:FACTOR]... "
          "[--cost FILE]\n", stderr);
    exit(2);
}

static void
s_parse(int argc, char **argv, s_opts_t *o)
{
    static const struct option longs[] = {
        { "epoch", 1, NULL, 'e' }, { "period", 1, NULL, 'p' },
        { "phase", 1, NULL, 'P' }, { "steps", 1, NULL, 's' },
        { "core", 1, NULL, 'c' }, { "rows", 1, NULL, 'r' },
        { "extra", 1, NULL, 'x' }, { "cost", 1, NULL, 'o' },
        { NULL, 0, NULL, 0 } };
    *o = (s_opts_t) { .core = -1, .rows = S_N };
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'e': o->epoch = atoll(optarg); break;
        case 'p': o->period_ns = llround(atof(optarg) * 1e9); break;
        case 'P': o->phase_ns = llround(atof(optarg) * 1e9); break;
        case 's': o->steps = atoll(optarg); break;
        case 'c': o->core = atoi(optarg); break;
        case 'r': o->rows = atoi(optarg); break;
        case 'o': o->cost = optarg; break;
        case 'x': {
            s_extra_t *x = &o->extra[o->nextra];
            long long a, b;
            if (o->nextra == S_EXTRA_MAX ||
                sscanf(optarg, "%lld:%lld:%lf", &a, &b, &x->factor) != 3 ||
                a < 0 || b <= a || x->factor < 1 || x->factor > 4)
                s_usage();
            x->from = a, x->to = b;
            o->nextra++;
            break;
        }
        default: s_usage();
        }
    }
    if (o->epoch <= 0 || o->period_ns <= 0 || o->phase_ns < 0 ||
        o->phase_ns >= o->period_ns || o->steps < 1 || o->core < 0 ||
        o->rows < 1 || o->rows > 4 * S_N)
        s_usage();
}

/* The rows of step k: --rows, times the factor of an --extra range. */
static size_t
s_rows(const s_opts_t *o, int64_t k)
{
    double f = 1;
    for (int i = 0; i < o->nextra; i++)
        if (k >= o->extra[i].from && k < o->extra[i].to)
            f = o->extra[i].factor;
    return (size_t) llround(o->rows * f);
}

/* The median of back-to-back reads of the monotonic clock. */
static int64_t
s_clock_cost(void)
{
    int64_t d[1001];
    for (int i = 0; i < 1001; i++) {
        int64_t a = telem_mono_ns();
        d[i] = telem_mono_ns() - a;
    }
    bench_sort_i64(d, 1001);
    return d[500];
}

int
main(int argc, char **argv)
{
    s_opts_t o;
    s_parse(argc, argv, &o);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(o.core, &set);
    if (sched_setaffinity(0, sizeof set, &set))
        bench_die("bench_straggler_rank", "cannot pin to core %d", o.core);
    size_t maxrows = s_rows(&o, 0);
    for (int i = 0; i < o.nextra; i++) {
        size_t r = (size_t) llround(o.rows * o.extra[i].factor);
        maxrows = r > maxrows ? r : maxrows;
    }
    gsl_matrix *a = gsl_matrix_alloc(maxrows, S_N);
    gsl_matrix *b = gsl_matrix_alloc(S_N, S_N);
    gsl_matrix *c = gsl_matrix_calloc(maxrows, S_N);
    int64_t *cost = malloc((size_t) o.steps * sizeof *cost);
    int64_t *cbeg = malloc((size_t) o.steps * sizeof *cbeg);
    int64_t *cend = malloc((size_t) o.steps * sizeof *cend);
    if (!a || !b || !c || !cost || !cbeg || !cend)
        bench_die("bench_straggler_rank", "out of memory");
    for (size_t i = 0; i < maxrows; i++)
        for (size_t j = 0; j < S_N; j++)
            gsl_matrix_set(a, i, j, (double) (i * S_N + j) / 1e4);
    gsl_matrix_set_all(b, 0.25);
    if (telem_init())       /* the sender thread inherits the pinning */
        bench_die("bench_straggler_rank", "telem_init failed");
    gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, a, b, 0.0, c);  /* warm */
    int64_t clk = s_clock_cost();
    int64_t dropped = 0, n = 0;
    for (int64_t k = 0; k < o.steps; k++) {
        bench_slots_until(o.epoch + k * o.period_ns + o.phase_ns);
        size_t rows = s_rows(&o, k);
        gsl_matrix_view av = gsl_matrix_submatrix(a, 0, 0, rows, S_N);
        gsl_matrix_view cv = gsl_matrix_submatrix(c, 0, 0, rows, S_N);
        int64_t t0 = telem_mono_ns();
        telem_section_t h = telem_section_begin("step");
        int64_t t1 = telem_mono_ns();
        gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, &av.matrix, b, 0.0,
                       &cv.matrix);
        int64_t t2 = telem_mono_ns();
        int rc = telem_section_end(&h);
        int64_t t3 = telem_mono_ns();
        dropped += rc < 0;
        cost[n] = (t1 - t0) + (t3 - t2) - 2 * clk;
        cbeg[n] = t1 - t0 - clk;
        cend[n++] = t3 - t2 - clk;
    }
    int rc = telem_finalize();
    bench_sort_i64(cost, (size_t) n);
    bench_sort_i64(cbeg, (size_t) n);
    bench_sort_i64(cend, (size_t) n);
    if (o.cost) {
        FILE *f = fopen(o.cost, "w");
        if (!f || fprintf(f, "%lld %lld %lld %lld %lld %lld %lld\n",
                          (long long) cost[n / 2],
                          (long long) cost[n * 99 / 100], (long long) n,
                          (long long) dropped, (long long) cbeg[n / 2],
                          (long long) cend[n / 2], (long long) clk) < 0 ||
            fclose(f))
            bench_die("bench_straggler_rank", "cannot write %s", o.cost);
    }
    gsl_matrix_free(a);
    gsl_matrix_free(b);
    gsl_matrix_free(c);
    free(cost);
    free(cbeg);
    free(cend);
    return rc ? 1 : 0;
}
