/* scale_work.c - example application that records its own metrics with
 * telem_add_data at every telemetry level, for the demo and the docs.
 *
 * Work: for each matrix order n of --sizes, --steps times, solve A x = b
 * for a random dense A (GSL: LU decomposition and solve) and measure the
 * residual.  What it records, by level (TELEM_LEVEL decides what is kept;
 * a sample above it costs a comparison and is counted as skipped):
 *   level 1  scale_work_step_seconds   tag size     time of one solve
 *            scale_work_progress                    fraction of all steps
 *   level 2  scale_work_gflops         tag size     (2/3 n^3 + 2 n^2) / time
 *   level 3  scale_work_residual       tag size     max |A x - b|
 *   level 4  scale_work_pivot_min      tag size     smallest |U_ii|
 * and each solve as the section "step" (level 1: telem_section_seconds and
 * telem_section_step, tags section and rank; two samples a solve), which
 * the straggler detector compares across ranks.
 * Every sample also carries host, pid and rank (TELEM_RANK) tags.  It
 * prints one line per size and, at the end, telem_stats() (what was
 * queued, skipped by level, dropped) and whether telem_finalize() had
 * every sample confirmed by telemd.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_rng.h>

#include <telem/telem.h>
#include <telem/telem_error.h>

#define S_SIZES_MAX 16

typedef struct {
    long sizes[S_SIZES_MAX];
    int nsizes;
    long steps;
    unsigned long seed;
} s_opts_t;

static const char s_usage[] =
"Usage: scale_work [OPTIONS]\n"
"Example application: solves dense linear systems of growing order with\n"
"GSL and records its own metrics with telem_add_data at levels 1-4\n"
"(step time, progress; GFLOP/s; residual; smallest pivot).\n"
"\n"
"Options:\n"
"  -s, --sizes LIST   matrix orders, comma-separated, 2-2000, at most 16\n"
"                     (default 64,128,256)\n"
"  -n, --steps N      solves per order, 1-100000 (default 20)\n"
"      --seed S       random seed (default 1; the rank is added)\n"
"  -h, --help         show this help\n"
"\n"
"Environment: TELEM_LEVEL (0-4), TELEM_NODE, TELEM_RANK, TELEM_RUNDIR\n"
"(see telem.h; telem_launch sets them).\n"
"Exit status: 0 done, 1 failure (memory, a singular matrix), 2 bad\n"
"command line.  A missing telemd is not a failure: samples are dropped\n"
"and counted.\n";

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
s_bad(const char *flag, const char *value, const char *why)
{
    fprintf(stderr, "scale_work: invalid %s '%s': %s\n"
            "Try 'scale_work --help'.\n", flag, value, why);
    return 2;
}

static int
s_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int
s_parse(int argc, char **argv, s_opts_t *o)
{
    static const struct option opts[] = {
        { "sizes", 1, NULL, 's' }, { "steps", 1, NULL, 'n' },
        { "seed", 1, NULL, 'S' }, { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    *o = (s_opts_t) { { 64, 128, 256 }, 3, 20, 1 };
    int c;
    char buf[512], *end;
    while ((c = getopt_long(argc, argv, "s:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (snprintf(buf, sizeof buf, "%s", optarg) >= (int) sizeof buf)
                return s_bad("--sizes", optarg, "too long");
            o->nsizes = 0;
            for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t;
                 t = strtok_r(NULL, ",", &sv))
                if (o->nsizes == S_SIZES_MAX
                    || s_long(t, 2, 2000, &o->sizes[o->nsizes++]))
                    return s_bad("--sizes", optarg, "at most 16 orders, "
                                 "each 2-2000");
            if (!o->nsizes)
                return s_bad("--sizes", optarg, "no order");
            break;
        case 'n':
            if (s_long(optarg, 1, 100000, &o->steps))
                return s_bad("--steps", optarg, "expected 1-100000");
            break;
        case 'S':
            o->seed = strtoul(optarg, &end, 10);
            if (!*optarg || *end)
                return s_bad("--seed", optarg, "not a number");
            break;
        case 'h': fputs(s_usage, stdout); return 0;
        default: fputs("Try 'scale_work --help'.\n", stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "scale_work: unexpected argument '%s'\n"
                "Try 'scale_work --help'.\n", argv[optind]);
        return 2;
    }
    return -1;
}

/* One solve of order n; records its metrics.  Returns 0, or -1 when the
 * matrix is singular. */
static int
s_step(gsl_rng *rng, size_t n, const char *tag, double progress,
       double *seconds)
{
    gsl_matrix *a = gsl_matrix_alloc(n, n), *lu = gsl_matrix_alloc(n, n);
    gsl_vector *b = gsl_vector_alloc(n), *x = gsl_vector_alloc(n);
    gsl_permutation *p = gsl_permutation_alloc(n);
    int rc = -1, sign;
    if (!a || !lu || !b || !x || !p)
        goto out;
    for (size_t i = 0; i < n; i++) {
        gsl_vector_set(b, i, gsl_rng_uniform(rng) - 0.5);
        for (size_t j = 0; j < n; j++)
            gsl_matrix_set(a, i, j, gsl_rng_uniform(rng) - 0.5);
    }
    gsl_matrix_memcpy(lu, a);
    double t0 = s_now();
    telem_section_t sec = telem_section_begin("step");
    int bad = gsl_linalg_LU_decomp(lu, p, &sign)
              || gsl_linalg_LU_solve(lu, p, b, x);
    telem_section_end(&sec);
    if (bad)
        goto out;
    double dt = s_now() - t0, res = 0, piv = INFINITY, nn = (double) n;
    for (size_t i = 0; i < n; i++) {
        double r = -gsl_vector_get(b, i);
        for (size_t j = 0; j < n; j++)
            r += gsl_matrix_get(a, i, j) * gsl_vector_get(x, j);
        res = fmax(res, fabs(r));
        piv = fmin(piv, fabs(gsl_matrix_get(lu, i, i)));
    }
    telem_add_data_tags("scale_work_step_seconds", dt, 0, 1, 1, "size", tag);
    telem_add_data("scale_work_progress", progress, 0, 1);
    telem_add_data_tags("scale_work_gflops", (2.0 / 3 * nn * nn * nn
                        + 2 * nn * nn) / (dt > 0 ? dt : 1e-9) / 1e9, 0, 2, 1,
                        "size", tag);
    telem_add_data_tags("scale_work_residual", res, 0, 3, 1, "size", tag);
    telem_add_data_tags("scale_work_pivot_min", piv, 0, 4, 1, "size", tag);
    *seconds = dt;
    rc = piv > 0 ? 0 : -1;
out:
    gsl_matrix_free(a);
    gsl_matrix_free(lu);
    gsl_vector_free(b);
    gsl_vector_free(x);
    gsl_permutation_free(p);
    return rc;
}

static void
s_describe(void)
{
    telem_describe("scale_work_step_seconds", "gauge", "s",
                   "time of one LU solve");
    telem_describe("scale_work_progress", "gauge", "",
                   "fraction of all steps done");
    telem_describe("scale_work_gflops", "gauge", "GFLOP/s",
                   "solve rate: (2/3 n^3 + 2 n^2) / time");
    telem_describe("scale_work_residual", "gauge", "", "max |A x - b|");
    telem_describe("scale_work_pivot_min", "gauge", "",
                   "smallest pivot of the LU decomposition");
}

int
main(int argc, char **argv)
{
    s_opts_t o;
    int rc = s_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    const char *rank = getenv("TELEM_RANK");
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        return 1;
    gsl_rng_set(rng, o.seed + (rank ? strtoul(rank, NULL, 10) : 0));
    telem_init();
    s_describe();
    long done = 0, total = o.steps * o.nsizes;
    rc = 0;
    for (int k = 0; k < o.nsizes && rc == 0; k++) {
        char tag[16];
        double sum = 0, dt = 0;
        snprintf(tag, sizeof tag, "%ld", o.sizes[k]);
        for (long s = 0; s < o.steps && rc == 0; s++, sum += dt)
            rc = s_step(rng, (size_t) o.sizes[k], tag,
                        (double) ++done / (double) total, &dt);
        double n = (double) o.sizes[k];
        printf("scale_work: rank %s: order %ld: %ld solve(s), mean %.6f s, "
               "%.3f GFLOP/s\n", rank ? rank : "0", o.sizes[k], o.steps,
               sum / (double) o.steps, (2.0 / 3 * n * n * n + 2 * n * n)
               * (double) o.steps / (sum > 0 ? sum : 1e-9) / 1e9);
    }
    gsl_rng_free(rng);
    int level = telem_level();
    telem_stats_t st;
    telem_stats(&st);          /* before finalize, which frees the counters */
    int fin = telem_finalize();
    printf("scale_work: level %d: queued %llu, skipped by level %llu, "
           "dropped %llu; finalize: %s\n", level,
           (unsigned long long) st.queued, (unsigned long long) st.filtered,
           (unsigned long long) st.dropped,
           fin == 0 ? "ok" : telem_strerror(fin));
    if (rc)
        fprintf(stderr, "scale_work: a singular matrix\n");
    return rc ? 1 : 0;
}
