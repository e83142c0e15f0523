/* slow_gpu_law.c - the slow_gpu example's command line and its check of
 * the result against Wigner's semicircle law, with an SVG picture.
 *
 * The check compares distribution functions at the histogram's bin edges:
 * the largest distance, against a tolerance, is the one figure that
 * decides, and it is printed beside the verdict.  It measures how far the
 * histogram is from the law, which stays small and does not grow with the
 * number of eigenvalues.  A chi-square (or any test of significance) is
 * not printed: it asks whether the counts could be independent draws from
 * the semicircle, and they are not: the eigenvalues of one matrix
 * repel each other (they are strongly correlated), and the density of an
 * M x M matrix's eigenvalues is the semicircle only as M grows (it differs
 * near +-2 at any finite M), so with enough eigenvalues such a test
 * finds the finite-M difference in every correct run (a chi-square of
 * 131.7 over 39 degrees of freedom for 2,400,000 eigenvalues of 100 x 100
 * matrices, whose distance is 0.0018).  The
 * histogram's checksum (FNV-1a over the counts) identifies the result
 * exactly, so runs that split or resumed the work differently can be
 * compared.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slow_gpu.h"

static const char s_usage[] =
"Usage: slow_gpu [OPTIONS]\n"
"Example application for telem_launch: eigenvalues of random symmetric\n"
"(Wigner, GOE) matrices, histogrammed and checkpointed per task in telem's\n"
"distributed dictionary; after a restart (TELEM_RESTARTED=1) it resumes\n"
"from the dictionary without redoing finished iterations.  Rank 0 checks\n"
"the final histogram against the semicircle law.\n"
"\n"
"Options:\n"
"  -d, --devices N      worker threads (devices) per node, 1-64 (default 1)\n"
"  -t, --tasks N        tasks of the job, 1-100000 (default 8)\n"
"  -i, --iterations N   iterations (matrices) per task (default 20)\n"
"  -m, --size M         matrix order, 2-2000 (default 100)\n"
"  -b, --bins N         histogram bins over [-2.5, 2.5], 4-1000 (default 50)\n"
"  -s, --seed S         random seed (default 1)\n"
"      --tolerance D    largest allowed distance between the histogram's\n"
"                       and the semicircle's distribution functions\n"
"                       (default 0.02)\n"
"  -n, --ns NAME        dictionary namespace (default slow_gpu)\n"
"      --timeout MS     deadline of each dictionary call (default 10000)\n"
"  -p, --plot FILE      write an SVG picture of the histogram and the law\n"
"      --hold-at F      in a held run (see --hold-runs), every task stops\n"
"                       when a fraction F (0-1) of its iterations is done\n"
"                       and waits until the dictionary event of --hold-event\n"
"                       is set or the job is restarted.  Stands for a job\n"
"                       that runs long enough for telem to act on what it\n"
"                       sees, however fast the machine (default 0: off)\n"
"      --hold-runs N    the runs that hold: those whose TELEM_RESTART_COUNT\n"
"                       is below N, 1-1000 (default 1: the first run only;\n"
"                       2: the first run and the one after the first\n"
"                       restart, for a job that is to restart twice)\n"
"      --hold-event E   the event that ends the hold in every run (default\n"
"                       NS/release; set it with: telem_dict event-set E)\n"
"      --work-scale F   compute each iteration's eigenvalues F times, 1-16\n"
"                       (default 1); the result is the same.  Given to one\n"
"                       rank (chosen by TELEM_RANK in a wrapper), it stands\n"
"                       for a rank with a larger share of the data: more\n"
"                       work per step on the same hardware\n"
"      --pace S         start each iteration of worker w of W at the next\n"
"                       k S + (w + 0.5) S / W seconds of the wall clock\n"
"                       (0-10, default 0: at once).  Virtual nodes that\n"
"                       share one core then take turns, between the turns\n"
"                       of collectors with period / reps = S (telem_collect\n"
"                       --spread), so a load in one node's turn slows that\n"
"                       node's rank and test kernels only\n"
"  -h, --help           show this help\n"
"\n"
"Environment (set by telem_launch): TELEM_RANK, TELEM_NNODES,\n"
"TELEM_RESTARTED, TELEM_RESTART_COUNT, TELEM_DICT_NODEFILE, TELEM_NODE,\n"
"TELEM_LEVEL.\n"
"Rank 0 prints 'semicircle law: PASS' or 'FAIL' with the figures that\n"
"decided: every eigenvalue counted once, and the largest distance within\n"
"--tolerance.\n"
"Exit status: 0 done (rank 0: the law holds), 1 failure (dictionary,\n"
"law), 2 bad command line.\n";

static int
s_bad(const char *flag, const char *value, const char *why)
{
    fprintf(stderr, "slow_gpu: invalid %s '%s': %s\nTry 'slow_gpu --help'.\n",
            flag, value, why);
    return 2;
}

static int
s_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int
s_env_int(const char *name, long lo, long hi, long dflt, long *out)
{
    const char *v = getenv(name);
    *out = dflt;
    if (!v || !*v)
        return 0;
    if (s_int(v, lo, hi, out) == 0)
        return 0;
    fprintf(stderr, "slow_gpu: %s='%s' is not a number in %ld-%ld\n", name, v,
            lo, hi);
    return 2;
}

static int
s_option(int c, const char *arg, sg_opts_t *o)
{
    long v;
    char *end;
    switch (c) {
    case 'd': if (s_int(arg, 1, SG_DEVICES_MAX, &v)) return s_bad("--devices", arg, "expected 1-64");
              o->devices = (int) v; return -1;
    case 't': if (s_int(arg, 1, 100000, &v)) return s_bad("--tasks", arg, "expected 1-100000");
              o->tasks = (int) v; return -1;
    case 'i': if (s_int(arg, 1, 1000000, &v)) return s_bad("--iterations", arg, "expected 1-1000000");
              o->iterations = (int) v; return -1;
    case 'm': if (s_int(arg, 2, 2000, &v)) return s_bad("--size", arg, "expected 2-2000");
              o->size = (int) v; return -1;
    case 'b': if (s_int(arg, 4, 1000, &v)) return s_bad("--bins", arg, "expected 4-1000");
              o->bins = (int) v; return -1;
    case 's': o->seed = strtoul(arg, &end, 10);
              return *arg && !*end ? -1 : s_bad("--seed", arg, "expected a number");
    case 'T': o->tolerance = strtod(arg, &end);
              return *arg && !*end && o->tolerance > 0 && o->tolerance < 1 ? -1
                     : s_bad("--tolerance", arg, "expected a number in (0, 1)");
    case 'n': if (!*arg || strlen(arg) > 100) return s_bad("--ns", arg, "expected 1-100 bytes");
              o->ns = arg; return -1;
    case 'o': if (s_int(arg, 1, 3600000, &v)) return s_bad("--timeout", arg, "expected 1-3600000");
              o->timeout_ms = v; return -1;
    case 'p': o->plot = arg; return -1;
    case 'H': o->hold_at = strtod(arg, &end);
              return *arg && !*end && o->hold_at >= 0 && o->hold_at < 1 ? -1
                     : s_bad("--hold-at", arg, "expected a fraction in [0, 1)");
    case 'R': if (s_int(arg, 1, 1000, &v)) return s_bad("--hold-runs", arg, "expected 1-1000");
              o->hold_runs = (int) v; return -1;
    case 'E': if (!*arg || strlen(arg) > 200) return s_bad("--hold-event", arg, "expected 1-200 bytes");
              o->hold_event = arg; return -1;
    case 'W': if (s_int(arg, 1, 16, &v)) return s_bad("--work-scale", arg, "expected 1-16");
              o->work_scale = (int) v; return -1;
    case 'P': o->pace = strtod(arg, &end);
              return *arg && !*end && o->pace >= 0 && o->pace <= 10 ? -1
                     : s_bad("--pace", arg, "expected seconds in [0, 10]");
    case 'h': fputs(s_usage, stdout); return 0;
    default: fputs("Try 'slow_gpu --help'.\n", stderr); return 2;
    }
}

int
sg_opts_parse(int argc, char **argv, sg_opts_t *o)
{
    static const struct option opts[] = {
        { "devices", 1, NULL, 'd' }, { "tasks", 1, NULL, 't' },
        { "iterations", 1, NULL, 'i' }, { "size", 1, NULL, 'm' },
        { "bins", 1, NULL, 'b' }, { "seed", 1, NULL, 's' },
        { "tolerance", 1, NULL, 'T' }, { "ns", 1, NULL, 'n' },
        { "timeout", 1, NULL, 'o' }, { "plot", 1, NULL, 'p' },
        { "hold-at", 1, NULL, 'H' }, { "hold-event", 1, NULL, 'E' },
        { "hold-runs", 1, NULL, 'R' }, { "work-scale", 1, NULL, 'W' },
        { "pace", 1, NULL, 'P' },
        { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    *o = (sg_opts_t) { .devices = 1, .tasks = 8, .iterations = 20,
                       .size = 100, .bins = 50, .seed = 1, .tolerance = 0.02,
                       .ns = "slow_gpu", .timeout_ms = 10000, .hold_runs = 1,
                       .work_scale = 1, .nnodes = 1 };
    int c, rc;
    while ((c = getopt_long(argc, argv, "d:t:i:m:b:s:n:p:h", opts, NULL))
           != -1)
        if ((rc = s_option(c, optarg, o)) >= 0)
            return rc;
    if (optind < argc) {
        fprintf(stderr, "slow_gpu: unexpected argument '%s'\n"
                "Try 'slow_gpu --help'.\n", argv[optind]);
        return 2;
    }
    long rank, nnodes;
    if ((rc = s_env_int("TELEM_NNODES", 1, 100000, 1, &nnodes))
        || (rc = s_env_int("TELEM_RANK", 0, nnodes - 1, 0, &rank)))
        return rc;
    o->rank = (int) rank;
    o->nnodes = (int) nnodes;
    const char *r = getenv("TELEM_RESTARTED");
    o->restarted = r && strcmp(r, "1") == 0;
    long count;
    if ((rc = s_env_int("TELEM_RESTART_COUNT", 0, 1000000, o->restarted,
                        &count)))
        return rc;
    o->restart_count = o->restarted && count < 1 ? 1 : (int) count;
    return -1;
}

/* ---- the law ------------------------------------------------------------ */

/* Distribution function of the semicircle on [-2, 2]. */
static double
s_semicircle_cdf(double x)
{
    if (x <= -2)
        return 0;
    if (x >= 2)
        return 1;
    return 0.5 + x * sqrt(4 - x * x) / (4 * M_PI) + asin(x / 2) / M_PI;
}

static double
s_semicircle(double x)
{
    return fabs(x) < 2 ? sqrt(4 - x * x) / (2 * M_PI) : 0;
}

static uint64_t
s_checksum(const uint64_t *counts, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int b = 0; b < n; b++)
        for (int k = 0; k < 8; k++) {
            h ^= (counts[b] >> (8 * k)) & 0xff;
            h *= 0x100000001b3ull;
        }
    return h;
}

static void
s_plot(const sg_opts_t *o, const uint64_t *counts, uint64_t total,
       double dist)
{
    FILE *f = fopen(o->plot, "w");
    if (!f) {
        perror(o->plot);
        return;
    }
    const double w = 640, h = 400, m = 40, top = 0.4;
    double bw = (sg_edge(o, 1) - sg_edge(o, 0));
#define SX(x) (m + ((x) + 2.5) / 5.0 * (w - 2 * m))
#define SY(y) (h - m - (y) / top * (h - 2 * m))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, h);
    for (int b = 0; b < o->bins; b++) {
        double dens = (double) counts[b] / ((double) total * bw);
        double y = SY(dens < top ? dens : top);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                "fill=\"#9ecae1\" stroke=\"#3182bd\"/>\n", SX(sg_edge(o, b)), y,
                SX(sg_edge(o, b + 1)) - SX(sg_edge(o, b)), SY(0) - y);
    }
    fprintf(f, "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" "
            "points=\"");
    for (int i = 0; i <= 400; i++) {
        double x = -2.5 + 5.0 * i / 400;
        fprintf(f, "%.2f,%.2f ", SX(x), SY(s_semicircle(x)));
    }
    fprintf(f, "\"/>\n<line x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\" "
            "stroke=\"black\"/>\n", m, SY(0), w - m, SY(0));
    for (int x = -2; x <= 2; x++)
        fprintf(f, "<text x=\"%.2f\" y=\"%.0f\" text-anchor=\"middle\">%d"
                "</text>\n", SX(x), h - m + 16, x);
    fprintf(f, "<text x=\"%.0f\" y=\"20\">slow_gpu: %" PRIu64 " eigenvalues "
            "of %dx%d GOE matrices / sqrt(M); red: semicircle sqrt(4-x^2)/"
            "(2 pi); distance %.4f</text>\n</svg>\n", m, total, o->size,
            o->size, dist);
#undef SX
#undef SY
    if (fclose(f) == 0)
        printf("slow_gpu: plot written to %s\n", o->plot);
}

/* The largest distance between the histogram's distribution function and
 * the semicircle's at the bin edges; *at gets the edge where it is. */
static double
s_distance(const sg_opts_t *o, const uint64_t *counts, uint64_t total,
           double *at)
{
    double dist = 0, cum = (double) counts[o->bins];
    *at = sg_edge(o, 0);
    for (int b = 0; b < o->bins && total; b++) {
        double hi = sg_edge(o, b + 1);
        cum += (double) counts[b];
        double d = fabs(cum / (double) total - s_semicircle_cdf(hi));
        if (d > dist) {
            dist = d;
            *at = hi;
        }
    }
    return dist;
}

int
sg_report(const sg_opts_t *o, const uint64_t *counts)
{
    uint64_t total = 0, want = (uint64_t) o->tasks * (uint64_t) o->iterations
                               * (uint64_t) o->size;
    for (int b = 0; b < o->bins + 2; b++)
        total += counts[b];
    double at, dist = s_distance(o, counts, total, &at);
    int pass = total == want && dist <= o->tolerance;
    printf("slow_gpu: %d task(s) x %d iteration(s) of %dx%d matrices: %"
           PRIu64 " eigenvalues (expected %" PRIu64 "), %" PRIu64 " outside "
           "[-2.5, 2.5]\n", o->tasks, o->iterations, o->size, o->size, total,
           want, counts[o->bins] + counts[o->bins + 1]);
    printf("slow_gpu: histogram checksum %016" PRIx64 "\n",
           s_checksum(counts, o->bins + 2));
    printf("slow_gpu: largest distance to the semicircle's distribution "
           "function %.5f at x = %.2f (tolerance %.5f)\n", dist, at,
           o->tolerance);
    if (pass)
        printf("slow_gpu: semicircle law: PASS (every eigenvalue counted "
               "once; distance %.5f <= tolerance %.5f)\n", dist, o->tolerance);
    else if (total != want)
        printf("slow_gpu: semicircle law: FAIL (%" PRIu64 " eigenvalues, "
               "expected %" PRIu64 ")\n", total, want);
    else
        printf("slow_gpu: semicircle law: FAIL (distance %.5f > tolerance "
               "%.5f)\n", dist, o->tolerance);
    if (o->plot)
        s_plot(o, counts, total, dist);
    fflush(stdout);
    return pass ? 0 : 1;
}
