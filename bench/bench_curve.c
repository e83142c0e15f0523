/* bench_curve.c - what CURVE (the job's key on every TCP socket) costs
 * telem: each figure with CURVE and without, measured in one run, side by
 * side, with the ratio and the target.
 *
 *   1. ac_query of a 3,600-point series against real telemd processes,
 *      p50 and p99 (target: CURVE p99 <= 10 ms)
 *   2. the watcher's tick at 1,000 devices on 8 telemd processes over TCP
 *      (target: CURVE p50 <= 10 ms)
 *   3. a raw PUSH/PULL of 64-sample batches over TCP: telem's ingest is
 *      ipc only, so this is what a TCP ingest would pay, not what telem
 *      pays (reported)
 *   4. the dictionary's pipelined puts and gets against real telem_dictd
 *      processes (target: CURVE >= 0.5x plain)
 *   5. a storm of 1,000 clients connecting to one ROUTER, with libzmq's
 *      default listen backlog (100) and telem's (1024) (reported)
 * The parts are in bench_curve_*.c (bench_curve.h says which is where).
 *
 * The job's key is made here (telem_keys_create) in a private directory;
 * this process runs telem's ZAP handler (telem_zap_new) for its own CURVE
 * servers (parts 3 and 5), the daemons run their own.  czmq's signal
 * handler is switched off, so Ctrl-C ends the benchmark at once; every
 * daemon it started dies with it (bench_curve_proc.c).
 *
 * Output: the parts' details, then the table; lines starting "row<TAB>"
 * carry the same figures for bench_curve.sh, which runs this several
 * times and prints the medians.
 */
#include <czmq.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_curve.h"
#include "telem_error.h"
#include "telem_zap.h"

#define S_STORM_LIMIT_S 60.0

void
bcurve_add(bcurve_table_t *t, const bcurve_row_t *row)
{
    if (t->n >= BCURVE_ROWS_MAX)
        bench_die("bench_curve", "too many rows");
    t->row[t->n++] = *row;
}

void
bcurve_client_keys(const bcurve_ctx_t *ctx, int curve)
{
    setenv(TELEM_KEYS_ENV, curve ? ctx->keys_dir : "", 1);
}

/* ---- the table --------------------------------------------------------- */

/* How many times worse CURVE is; with a timeout, a bound. */
static double
s_ratio(const bcurve_row_t *r)
{
    return r->rate ? r->plain / r->curve : r->curve / r->plain;
}

static void
s_value(char *buf, size_t size, double v, int timed_out)
{
    if (timed_out)
        snprintf(buf, size, ">%.0f (T)", v);
    else
        snprintf(buf, size, "%.3f", v);
}

static void
s_print_row(const bcurve_row_t *r)
{
    char p[32], c[32], ratio[32];
    s_value(p, sizeof p, r->plain, r->timed_out & 1);
    s_value(c, sizeof c, r->curve, r->timed_out & 2);
    snprintf(ratio, sizeof ratio, "%s%.2f",
             r->timed_out == 2 ? ">" : r->timed_out == 1 ? "<" : "",
             s_ratio(r));
    if (r->timed_out == 3)
        snprintf(ratio, sizeof ratio, "?");
    printf("  %-62s %10s %10s %7s %-13s %-20s %s\n", r->what, p, c, ratio,
           r->rate ? "plain/CURVE" : "CURVE/plain",
           r->target ? r->target : "(reported)",
           r->target ? (r->met ? "met" : "NOT MET") : "-");
}

static void
s_print_table(const bcurve_table_t *t)
{
    printf("\n== CURVE against plain TCP, same run ((T): timed out at the "
           "bound shown; ratio: how many times worse CURVE is)\n");
    printf("  %-62s %10s %10s %7s %-13s %-20s %s\n", "figure", "plain",
           "CURVE", "ratio", "(which)", "target", "verdict");
    for (int i = 0; i < t->n; i++)
        s_print_row(&t->row[i]);
    for (int i = 0; i < t->n; i++) {
        const bcurve_row_t *r = &t->row[i];
        printf("row\t%s\t%s\t%.6g\t%.6g\t%d\t%d\t%d\t%s\n", r->id,
               r->what, r->plain, r->curve, r->rate, r->timed_out,
               r->target ? r->met : -1, r->target ? r->target : "-");
    }
    for (int i = 0; i < t->n; i++) {
        const bcurve_row_t *r = &t->row[i];
        char name[160], peer[48], ratio[48];
        snprintf(name, sizeof name, "CURVE: %s", r->what);
        snprintf(peer, sizeof peer, "plain TCP %.3f", r->plain);
        snprintf(ratio, sizeof ratio, "%.2f %s", s_ratio(r),
                 r->rate ? "plain/CURVE" : "CURVE/plain");
        bench_figure(name, r->target, peer, ratio,
                     r->target && r->timed_out == 0 ? r->met : -1, "%.3f%s",
                     r->curve, r->timed_out & 2 ? " (timed out)" : "");
    }
}

/* ---- set-up ------------------------------------------------------------ */

/* The soft open-file limit up to the hard one: 1,000 connections take
 * two descriptors each in this process, and libzmq aborts on EMFILE. */
static void
s_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 4096)
        bench_die("bench_curve", "open-file limit %llu: the storm needs "
                  "4096", (unsigned long long) rl.rlim_cur);
}

static void
s_print_env(void)
{
    char line[128] = "?";
    FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
    if (f) {
        if (!fgets(line, sizeof line, f))
            snprintf(line, sizeof line, "?");
        fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    printf("# net.core.somaxconn=%s  RLIMIT_NOFILE=%llu  czmq io threads=1\n",
           line, (unsigned long long) rl.rlim_cur);
}

static void
s_print_load(const char *when)
{
    char line[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(line, sizeof line, f))
            snprintf(line, sizeof line, "?");
        fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
    printf("# /proc/loadavg %s: %s\n", when, line);
}

/* Runs before czmq's own exit handler (registered earlier, when the ZAP
 * handler started czmq): after a failure (bench_die), sockets are still
 * open in czmq's context and its zmq_ctx_term would wait for them
 * forever, so such an exit skips the handlers.  The daemons die with
 * us all the same (bench_curve_proc.c). */
static void
s_on_exit(int status, void *arg)
{
    (void) arg;
    if (status != 0) {
        fflush(NULL);
        _exit(status);
    }
}

static int
s_wanted(const char *only, const char *part)
{
    if (!only)
        return 1;
    size_t n = strlen(part);
    for (const char *p = only; (p = strstr(p, part)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

static const char s_usage[] =
"Usage: bench_curve [-o PARTS] [-s SECONDS]\n"
"What CURVE costs telem: each figure over plain TCP and over CURVE, one\n"
"run, side by side.  Starts telemd and telem_dictd from its own directory.\n"
"  -o PARTS    only these parts, comma-separated (query, watch, push,\n"
"              dict, storm)\n"
"  -s SECONDS  bound on each connection storm (default 60)\n";

static void
s_parse(int argc, char **argv, bcurve_ctx_t *ctx)
{
    int c;
    while ((c = getopt(argc, argv, "o:s:h")) != -1) {
        switch (c) {
        case 'o': ctx->only = optarg; break;
        case 's': ctx->storm_limit_s = atof(optarg); break;
        case 'h': fputs(s_usage, stdout); exit(0);
        default: fputs(s_usage, stderr); exit(2);
        }
    }
    if (optind != argc || ctx->storm_limit_s <= 0) {
        fputs(s_usage, stderr);
        exit(2);
    }
}

static void
s_run_parts(const bcurve_ctx_t *ctx, bcurve_table_t *t)
{
    static const struct {
        const char *name;
        void (*fn)(const bcurve_ctx_t *, bcurve_table_t *);
    } parts[] = {
        { "query", bcurve_part_query }, { "watch", bcurve_part_watch },
        { "push", bcurve_part_push }, { "dict", bcurve_part_dict },
        { "storm", bcurve_part_storm },
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (s_wanted(ctx->only, parts[i].name)) {
            parts[i].fn(ctx, t);
            fflush(stdout);
        }
}

int
main(int argc, char **argv)
{
    bcurve_ctx_t ctx = { .argv0 = argv[0],
                         .storm_limit_s = S_STORM_LIMIT_S };
    s_parse(argc, argv, &ctx);
    s_raise_nofile();
    zsys_handler_set(NULL);
    bench_print_machine("bench_curve");
    s_print_load("at the start");
    s_print_env();
    char dir[256], keys_dir[320], why[256];
    bench_tmpdir(dir, sizeof dir, "curve");
    snprintf(keys_dir, sizeof keys_dir, "%s/keys", dir);
    int err = 0;
    telem_keys_t *keys = telem_keys_create(keys_dir, &err, why, sizeof why);
    if (!keys)
        bench_die("telem_keys_create", "%s", why);
    telem_zap_t *zap = telem_zap_new(keys, &err);
    if (!zap)
        bench_die("telem_zap_new", "%s", telem_strerror(err));
    on_exit(s_on_exit, NULL);
    ctx.dir = dir;
    ctx.keys_dir = keys_dir;
    ctx.keys = keys;
    bcurve_table_t *t = calloc(1, sizeof *t);
    if (!t)
        bench_die("bench_curve", "out of memory");
    s_run_parts(&ctx, t);
    s_print_table(t);
    uint64_t allowed = 0, refused = 0;
    telem_zap_counts(zap, &allowed, &refused);
    printf("# this process's ZAP handler: %llu handshakes allowed, %llu "
           "refused\n", (unsigned long long) allowed,
           (unsigned long long) refused);
    s_print_load("at the end");
    telem_zap_destroy(&zap);
    telem_keys_destroy(&keys);
    bench_rmtree(dir);
    free(t);
    return 0;
}
