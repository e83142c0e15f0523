/* bench_add_data.c - cost of telem_add_data() to the application thread.
 *
 * Measures, on one application thread and in one run:
 *   - calls/s of telem_add_data() with a real (in-process) telemd receiving
 *     the samples, with two extra tags, with no telemd at all (the drop
 *     path) and with the level filtering the sample out;
 *   - per-call latency p50/p99 over 1e6 calls, each call timed with
 *     clock_gettime(CLOCK_MONOTONIC), next to that timer's own overhead;
 *   - the floor: one clock_gettime(CLOCK_REALTIME) per call, which every
 *     timestamped sample pays, reported as "x floor";
 *   - what happened to the samples: telem_stats() queued/sent/dropped and
 *     what telemd says it ingested after an acknowledged flush;
 *   - a section: one telem_section_begin()/telem_section_end() pair (two
 *     samples), ns per pair next to telem_add_data's ns per call.
 * Targets (issue): >= 5 M calls/s, p99 <= 2 us, a section pair <= 100 ns.
 *
 * `bench_add_data --c-reference` measures only telem_add_data and the
 * section pair with a telemd running and prints two lines,
 * "add_data_ns <ns per call>" and "section_pair_ns <ns per pair>", then
 * the same as the calling thread's CPU time ("add_data_cpu_ns",
 * "section_pair_cpu_ns"): the C figures bench/bench_python.py sets the
 * Python API against.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "bench_common.h"
#include "telem.h"
#include "telem_error.h"

#define S_CALLS 2000000       /* calls per throughput repetition */
#define S_REPS 3
#define S_LAT_CALLS 1000000   /* individually timed calls */
#define S_WARMUP 20000

typedef struct {
    uint64_t ok, full, filtered, other;
} s_rc_count_t;

typedef bench_lat_t s_lat_t;

/* Keeps the compiler from dropping the floor loop's clock reads. */
static volatile int64_t s_sink;

static void
s_count(s_rc_count_t *c, int rc)
{
    if (rc == 0)
        c->ok++;
    else if (rc == 1)
        c->filtered++;
    else if (rc == TELEM_EFULL)
        c->full++;
    else
        c->other++;
}

/* ns per clock_gettime(CLOCK_REALTIME): what a timestamp costs at least. */
static double
s_floor_ns(void)
{
    double best = 1e30;
    for (int r = 0; r < S_REPS; r++) {
        int64_t t0 = bench_now_ns();
        for (int i = 0; i < S_CALLS; i++) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            s_sink += ts.tv_nsec;
        }
        double ns = (double) (bench_now_ns() - t0) / S_CALLS;
        if (ns < best)
            best = ns;
    }
    return best;
}

/* Two back-to-back monotonic reads: what timing one call adds to it. */
static void
s_timer_overhead(int64_t *lat, s_lat_t *out)
{
    for (size_t i = 0; i < S_LAT_CALLS; i++) {
        int64_t t0 = bench_now_ns();
        lat[i] = bench_now_ns() - t0;
    }
    bench_summarise(lat, S_LAT_CALLS, out);
}

typedef enum { S_PLAIN, S_TAGS, S_FILTERED, S_SECTION } s_call_t;

static inline int
s_call(s_call_t kind, double v)
{
    switch (kind) {
    case S_TAGS:
        return telem_add_data_tags("bench.add_data_tags", v, 0, 1, 2,
                                   "phase", "fwd", "layer", "7");
    case S_FILTERED:
        return telem_add_data("bench.filtered", v, 0, 2);
    case S_SECTION: {
        telem_section_t h = telem_section_begin("bench_step");
        return telem_section_end(&h);
    }
    default:
        return telem_add_data("bench.add_data", v, 0, 1);
    }
}

/* The calling thread's CPU time, ns. */
static int64_t
s_thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Median calls/s over S_REPS runs of S_CALLS calls; the queue is flushed
 * (acknowledged, when a telemd runs) before each run.  *delivered is the
 * median rate at which samples reached telemd: samples sent during the run
 * and its closing flush, over the time until that flush returned.
 * *cpu_ns (when given) is the median of the calling thread's own CPU time
 * per call: on a machine shared with other work the wall time also holds
 * other processes' time slices, the thread's CPU time only its calls. */
static double
s_rate_cpu(s_call_t kind, int flush_ms, s_rc_count_t *rcs, double *delivered,
           double *cpu_ns)
{
    double rates[S_REPS], dl[S_REPS], cpu[S_REPS];
    for (int r = 0; r < S_REPS; r++) {
        telem_flush(flush_ms);
        telem_stats_t a, b;
        telem_stats(&a);
        int64_t t0 = bench_now_ns(), c0 = s_thread_ns();
        for (int i = 0; i < S_CALLS; i++)
            s_count(rcs, s_call(kind, (double) i));
        int64_t t1 = bench_now_ns();
        cpu[r] = (double) (s_thread_ns() - c0) / S_CALLS;
        rates[r] = S_CALLS * 1e9 / (double) (t1 - t0);
        telem_flush(flush_ms);
        telem_stats(&b);
        dl[r] = (double) (b.sent - a.sent) * 1e9
                / (double) (bench_now_ns() - t0);
    }
    if (delivered)
        *delivered = bench_median_d(dl, S_REPS);
    if (cpu_ns)
        *cpu_ns = bench_median_d(cpu, S_REPS);
    return bench_median_d(rates, S_REPS);
}

static double
s_rate(s_call_t kind, int flush_ms, s_rc_count_t *rcs, double *delivered)
{
    return s_rate_cpu(kind, flush_ms, rcs, delivered, NULL);
}

static void
s_latency(int flush_ms, int64_t *lat, s_lat_t *out, s_rc_count_t *rcs)
{
    telem_flush(flush_ms);
    for (size_t i = 0; i < S_LAT_CALLS; i++) {
        int64_t t0 = bench_now_ns();
        int rc = telem_add_data("bench.add_data", (double) i, 0, 1);
        lat[i] = bench_now_ns() - t0;
        s_count(rcs, rc);
    }
    bench_summarise(lat, S_LAT_CALLS, out);
}

static void
s_env(const char *rundir, const char *node, const char *finalize_ms)
{
    setenv("TELEM_RUNDIR", rundir, 1);
    setenv("TELEM_NODE", node, 1);
    setenv("TELEM_LEVEL", "1", 1);
    setenv("TELEM_FINALIZE_MS", finalize_ms, 1);
    unsetenv("TELEM_INGEST");
    unsetenv("TELEM_RANK");
}

static void
s_init(void)
{
    int rc = telem_init();
    if (rc)
        bench_die("telem_init", "%s", telem_strerror(rc));
    s_rc_count_t warm = { 0 };
    for (int i = 0; i < S_WARMUP; i++)
        s_count(&warm, telem_add_data("bench.warmup", i, 0, 1));
}

/* One throughput row; cpu_ns < 0: the thread's CPU time was not taken. */
static void
s_row_rate(const char *what, double rate, double floor_ns, double cpu_ns)
{
    double ns = 1e9 / rate;
    printf("  %-44s %12.0f %9.1f %8.2f", what, rate, ns, ns / floor_ns);
    if (cpu_ns >= 0)
        printf(" %9.1f\n", cpu_ns);
    else
        printf(" %9s\n", "-");
}

static void
s_row_lat(const char *what, const s_lat_t *l)
{
    printf("  %-44s %8lld %8lld %9lld %10lld\n", what, (long long) l->p50,
           (long long) l->p99, (long long) l->p999, (long long) l->max);
}

static void
s_row_stats(const char *what, const telem_stats_t *st, const s_rc_count_t *c)
{
    printf("  %-22s queued %10llu  sent %10llu  dropped %10llu  filtered "
           "%9llu  (rc: ok %llu, EFULL %llu, other %llu)\n", what,
           (unsigned long long) st->queued, (unsigned long long) st->sent,
           (unsigned long long) st->dropped, (unsigned long long) st->filtered,
           (unsigned long long) c->ok, (unsigned long long) c->full,
           (unsigned long long) c->other);
}

typedef struct {
    double floor_ns;
    s_lat_t l_timer, l_up, l_down;
    double r_up, r_tags, r_filt, r_down, r_section;
    double cpu_up, cpu_section;       /* thread CPU ns per call */
    double d_up, d_tags;              /* delivered to telemd, samples/s */
    s_rc_count_t c_up, c_down;
    telem_stats_t st_up, st_down;
    int flush_rc;
    int64_t ingested;
} s_results_t;

/* No telemd: the run directory exists but nobody listens. */
static void
s_phase_down(s_results_t *r, int64_t *lat)
{
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "nodaemon");
    s_env(dir, "nodaemon", "200");
    s_init();
    r->r_down = s_rate(S_PLAIN, 200, &r->c_down, NULL);
    s_latency(200, lat, &r->l_down, &r->c_down);
    telem_stats(&r->st_down);
    telem_finalize();
    bench_rmtree(dir);
}

/* A real telemd (in-process actor, so on the other core). */
static void
s_phase_up(s_results_t *r, int64_t *lat, void *zctx)
{
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "adddata");
    telemd_t *td = bench_telemd_start(dir, "benchnode", 1, 300,
                                      (size_t) 1 << 30, 0);
    s_env(dir, "benchnode", "5000");
    s_init();
    s_rc_count_t c = { 0 };
    r->r_up = s_rate_cpu(S_PLAIN, 5000, &r->c_up, &r->d_up, &r->cpu_up);
    r->r_tags = s_rate(S_TAGS, 5000, &c, &r->d_tags);
    r->r_filt = s_rate(S_FILTERED, 5000, &c, NULL);
    r->r_section = s_rate_cpu(S_SECTION, 5000, &c, NULL, &r->cpu_section);
    s_latency(5000, lat, &r->l_up, &r->c_up);
    r->flush_rc = telem_flush(10000);
    telem_stats(&r->st_up);
    r->ingested = bench_ingested(zctx, telemd_ctl_endpoint(td));
    telem_finalize();
    telemd_destroy(&td);
    bench_rmtree(dir);
    r->c_up.ok += c.ok;
    r->c_up.full += c.full;
    r->c_up.filtered += c.filtered;
    r->c_up.other += c.other;
}

static void
s_report(const s_results_t *r)
{
    printf("\nthroughput, one thread, median of %d x %d calls\n", S_REPS,
           S_CALLS);
    printf("  %-44s %12s %9s %8s %9s\n", "case", "calls/s", "ns/call",
           "x floor", "cpu ns");
    s_row_rate("clock_gettime(CLOCK_REALTIME) only (floor)",
               1e9 / r->floor_ns, r->floor_ns, -1);
    s_row_rate("telem_add_data, telemd running", r->r_up, r->floor_ns,
               r->cpu_up);
    s_row_rate("telem_add_data_tags (2 tags), telemd running", r->r_tags,
               r->floor_ns, -1);
    s_row_rate("telem_add_data, level-filtered", r->r_filt, r->floor_ns, -1);
    s_row_rate("telem_add_data, no telemd (drop path)", r->r_down,
               r->floor_ns, -1);
    s_row_rate("section begin/end pair (2 samples), telemd up",
               r->r_section, r->floor_ns, r->cpu_section);
    printf("  (ns/call: wall time; cpu ns: the calling thread's own CPU time "
           "per call,\n   which leaves out other processes' time slices on a "
           "shared machine)\n");

    printf("\nper-call latency, %d calls each timed with CLOCK_MONOTONIC "
           "(ns, timer overhead not subtracted)\n", S_LAT_CALLS);
    printf("  %-44s %8s %8s %9s %10s\n", "case", "p50", "p99", "p99.9", "max");
    s_row_lat("timer overhead (empty interval)", &r->l_timer);
    s_row_lat("telem_add_data, telemd running", &r->l_up);
    s_row_lat("telem_add_data, no telemd", &r->l_down);

    printf("\nwhere the samples went (telem_stats; final flush: %s)\n",
           r->flush_rc == 0 ? "acknowledged" : telem_strerror(r->flush_rc));
    s_row_stats("telemd running:", &r->st_up, &r->c_up);
    printf("  %-22s delivered to telemd while calling flat out: %.0f/s "
           "(add_data), %.0f/s (2 tags)\n", "", r->d_up, r->d_tags);
    printf("  %-22s ingested by telemd %lld (its status after the flush)\n",
           "", (long long) r->ingested);
    s_row_stats("no telemd:", &r->st_down, &r->c_down);

    printf("\ntargets\n");
    printf("  calls/s >= 5,000,000 (telemd running)   %12.0f  %s\n", r->r_up,
           bench_verdict(r->r_up >= 5e6));
    printf("  p99 <= 2,000 ns (telemd running)        %12lld  %s\n",
           (long long) r->l_up.p99, bench_verdict(r->l_up.p99 <= 2000));
    printf("  section pair <= 100 ns (telemd running, thread CPU) %6.1f  %s"
           "  (wall %.1f)\n", r->cpu_section,
           bench_verdict(r->cpu_section <= 100), 1e9 / r->r_section);
    printf("  ns per call / floor (telemd running)    %12.2f\n",
           (1e9 / r->r_up) / r->floor_ns);
    char ratio[64], peer[64];
    snprintf(ratio, sizeof ratio, "%.2fx the floor",
             (1e9 / r->r_up) / r->floor_ns);
    snprintf(peer, sizeof peer, "clock_gettime %.0f ns", r->floor_ns);
    bench_figure("telem_add_data calls/s, one thread, telemd running",
                 ">= 5 M/s", peer, ratio, r->r_up >= 5e6, "%.1f M/s",
                 r->r_up / 1e6);
    bench_figure("telem_add_data p99 per call", "<= 2,000 ns", NULL, NULL,
                 r->l_up.p99 <= 2000, "%lld ns", (long long) r->l_up.p99);
    snprintf(ratio, sizeof ratio, "%.2fx add_data",
             r->cpu_section / r->cpu_up);
    snprintf(peer, sizeof peer, "telem_add_data %.0f ns", r->cpu_up);
    bench_figure("section begin/end pair, one thread, telemd running "
                 "(the thread's CPU time)", "<= 100 ns", peer, ratio,
                 r->cpu_section <= 100, "%.0f ns (wall %.0f ns)",
                 r->cpu_section, 1e9 / r->r_section);
}

/* The C figures bench_python.py compares the Python API with. */
static void
s_c_reference(void)
{
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "cref");
    telemd_t *td = bench_telemd_start(dir, "benchnode", 1, 300,
                                      (size_t) 1 << 30, 0);
    s_env(dir, "benchnode", "5000");
    s_init();
    s_rc_count_t c = { 0 };
    double add_cpu, sec_cpu;
    double add = s_rate_cpu(S_PLAIN, 5000, &c, NULL, &add_cpu);
    double sec = s_rate_cpu(S_SECTION, 5000, &c, NULL, &sec_cpu);
    telem_finalize();
    telemd_destroy(&td);
    bench_rmtree(dir);
    printf("add_data_ns %.1f\nsection_pair_ns %.1f\nadd_data_cpu_ns %.1f\n"
           "section_pair_cpu_ns %.1f\n", 1e9 / add, 1e9 / sec, add_cpu,
           sec_cpu);
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--c-reference") == 0) {
        s_c_reference();
        return 0;
    }
    bench_print_machine("bench_add_data");
    int64_t *lat = malloc(S_LAT_CALLS * sizeof *lat);
    void *zctx = zmq_ctx_new();
    if (!lat || !zctx)
        bench_die("bench_add_data", "out of memory");
    s_results_t r = { 0 };
    s_timer_overhead(lat, &r.l_timer);
    r.floor_ns = s_floor_ns();
    s_phase_down(&r, lat);
    s_phase_up(&r, lat, zctx);
    s_report(&r);
    zmq_ctx_term(zctx);
    free(lat);
    return 0;
}
