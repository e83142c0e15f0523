/* bench_straggler.c - telem's straggler detector on a real instrumented
 * job's own step times, next to NVRx's and Dragon's rules on the same
 * data.
 *
 * Records a real run, then judges it offline (bench_straggler_judge.c):
 *   - N telemd agents (in-process actors, one per node) and G devices a
 *     node; every device is one rank, a real process (bench_straggler_rank)
 *     that does a fixed DGEMM per step and marks it with
 *     telem_section_begin/end through libtelem into its node's telemd, and
 *     one real telem_collector (cpu backend, the same DGEMM, 5 repetitions
 *     spread over a round of 5 steps) timing the device's test kernel;
 *   - all of them take turns on one core, each in its own slot of every
 *     step period (a rank's slot, then its collector's), so they are
 *     measured on the same hardware at nearly the same instants
 *     (bench_slots.h);
 *   - a clean stretch, then, repeated, real contention of graded strength
 *     on the target device: telem_load --duty D windowed on the target
 *     rank's slot and its collector's (a slower machine slows the job's
 *     steps and the node's test kernels alike), each load followed by a
 *     clean gap; then data imbalance: the target rank does more work (more
 *     rows in its DGEMM) on unloaded hardware, its kernels normal.
 * The last device is the target.  Ranks, collectors (priority 20) and
 * loads (30) run SCHED_FIFO unless -n is given or that is refused.  -o
 * saves the recording and -i judges a saved one again without recording.
 *
 * Usage: bench_straggler [-N nodes] [-G devices_a_node] [-p period_s]
 *                        [-c clean_steps] [-l load_steps] [-g gap_steps]
 *                        [-r repeats] [-d duty,...] [-m factor,...]
 *                        [-C cycle_ms] [-k core] [-b bindir] [-n]
 *                        [-T tick_s] [-s name=value,...]
 *                        [-o save] [-i recording]
 */
#include "bench_straggler.h"
#include "bench_common.h"
#include "bench_slots.h"
#include "ac.h"
#include "telem_time.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

#define S_REPS 5               /* collector repetitions a round = steps a
                                * round */
#define S_NODES_MAX 16

typedef struct {
    int nodes, per_node;       /* -N, -G */
    double period;             /* -p, s */
    int clean, load, gap, repeats;
    double duty[8], factor[8];
    int nduty, nfactor;
    double cycle_ms;           /* -C */
    int core;                  /* -k */
    bench_slots_t sl;          /* bindir, rt */
    const char *save, *replay;
    bs_judge_opts_t jo;
} s_opts_t;

/* ---- recording --------------------------------------------------------- */

/* The schedule: segments of load (each duty), then of imbalance (each
 * factor), `repeats` times each, every one followed by a gap. */
static void
s_schedule(const s_opts_t *o, bs_rec_t *rec)
{
    int a = o->clean;
    for (int kind = 0; kind < 2; kind++)
        for (int r = 0; r < o->repeats; r++) {
            int n = kind ? o->nfactor : o->nduty;
            for (int i = 0; i < n; i++, a += o->load + o->gap)
                rec->seg[rec->nseg++] = (bs_seg_t) {
                    .kind = kind ? BS_IMBALANCE : BS_LOAD, .start = a,
                    .len = o->load,
                    .level = kind ? o->factor[i] : o->duty[i] };
        }
    rec->nsteps = a;
}

/* The environment of a rank: this one's, with TELEM_NODE, TELEM_RUNDIR
 * and TELEM_RANK replaced.  Returns a NULL-terminated array (static
 * storage of `buf`). */
static char **
s_rank_env(char **env, size_t cap, char buf[3][600], const char *node,
           const char *rundir, const char *rank)
{
    size_t n = 0;
    for (char **e = environ; *e && n + 4 < cap; e++)
        if (strncmp(*e, "TELEM_NODE=", 11) && strncmp(*e, "TELEM_RUNDIR=", 13) &&
            strncmp(*e, "TELEM_RANK=", 11) && strncmp(*e, "TELEM_INGEST=", 13))
            env[n++] = *e;
    snprintf(buf[0], 600, "TELEM_NODE=%s", node);
    snprintf(buf[1], 600, "TELEM_RUNDIR=%s", rundir);
    snprintf(buf[2], 600, "TELEM_RANK=%s", rank);
    for (int i = 0; i < 3; i++)
        env[n++] = buf[i];
    env[n] = NULL;
    return env;
}

/* Starts rank d: its slot is at phase_ns of every period. */
static pid_t
s_rank(s_opts_t *o, const bs_rec_t *rec, int d, const char *dir,
       int64_t phase_ns)
{
    static char *env[4096];
    char envbuf[3][600], exe[600], ep[32], per[32], ph[32], st[16], core[16];
    char cost[600], extra[BS_MAXSEG][64];
    snprintf(exe, sizeof exe, "%s/bench_straggler_rank", o->sl.bindir);
    snprintf(ep, sizeof ep, "%" PRId64, rec->epoch);
    snprintf(per, sizeof per, "%.9f", o->period);
    snprintf(ph, sizeof ph, "%.9f", (double) phase_ns / 1e9);
    snprintf(st, sizeof st, "%d", rec->nsteps);
    snprintf(core, sizeof core, "%d", o->core);
    snprintf(cost, sizeof cost, "%s/cost.%d", dir, d);
    char *argv[16 + 2 * BS_MAXSEG] = { exe, "--epoch", ep, "--period", per,
                                       "--phase", ph, "--steps", st,
                                       "--core", core, "--cost", cost };
    int n = 13;
    for (int i = 0; d == rec->ndev - 1 && i < rec->nseg; i++) {
        const bs_seg_t *sg = &rec->seg[i];
        if (sg->kind != BS_IMBALANCE)
            continue;
        snprintf(extra[i], sizeof extra[i], "%d:%d:%.6g", sg->start,
                 sg->start + sg->len, sg->level);
        argv[n++] = "--extra";
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    char **envp = s_rank_env(env, sizeof env / sizeof env[0], envbuf,
                             rec->node[d], dir, rec->rank[d]);
    return bench_slots_spawn(&o->sl, argv, envp, 20);
}

/* Index of the device whose tag `key` is `val` on node `node`, or -1. */
static int
s_dev(const bs_rec_t *rec, const char *node, const char *key, const char *val)
{
    for (int d = 0; node && val && d < rec->ndev; d++)
        if (strcmp(rec->node[d], node) == 0 &&
            strcmp(strcmp(key, "rank") ? rec->gpu[d] : rec->rank[d], val) == 0)
            return d;
    return -1;
}

/* Takes one series of the query into rec. */
static void
s_take(bs_rec_t *rec, const telem_series_t *s, const telem_series_t *steps)
{
    const char *host = bench_slots_tag(s, "host");
    int64_t cpns = llround(rec->cperiod * 1e9);
    if (strcmp(s->metric, "cg_dgemm_seconds") == 0) {
        int d = s_dev(rec, host, "gpu", bench_slots_tag(s, "gpu"));
        for (uint32_t j = 0; d >= 0 && j < s->npoints; j++) {
            int64_t k = (s->ts[j] - rec->epoch) / cpns;
            if (k >= 0 && k < rec->nrounds && s->ts[j] == rec->epoch + k * cpns)
                rec->kern[(size_t) d * (size_t) rec->nrounds + (size_t) k] =
                    s->values[j];
        }
        return;
    }
    int d = s_dev(rec, host, "rank", bench_slots_tag(s, "rank"));
    if (d < 0 || !steps)
        return;
    const char *pid = bench_slots_tag(s, "pid");
    snprintf(rec->pid[d], sizeof rec->pid[d], "%s", pid ? pid : "");
    for (uint32_t a = 0, b = 0; a < s->npoints && b < steps->npoints;) {
        if (s->ts[a] != steps->ts[b]) {
            s->ts[a] < steps->ts[b] ? a++ : b++;
            continue;
        }
        double k = steps->values[b];
        if (k >= 0 && k < rec->nsteps && k == floor(k)) {
            size_t i = (size_t) d * (size_t) rec->nsteps + (size_t) k;
            rec->ts[i] = s->ts[a];
            rec->secs[i] = s->values[a];
        }
        a++, b++;
    }
}

/* Reads every step and round of the run into rec. */
static void
s_collect(bs_rec_t *rec, ac_t *ac)
{
    const char *m[] = { "telem_section_seconds", "telem_section_step",
                        "cg_dgemm_seconds" };
    ac_query_t q = { .metrics = m, .nmetrics = 3,
                     .start_ns = rec->epoch - TELEM_NS_PER_SEC,
                     .timeout_ms = 10000 };
    ac_result_t *res = NULL;
    int rc = ac_query(ac, &q, &res);
    if (rc)
        bench_die("ac_query", "%s", telem_strerror(rc));
    size_t n = ac_result_nseries(res);
    for (size_t i = 0; i < n; i++) {
        const telem_series_t *s = ac_result_series(res, i), *steps = NULL;
        if (strcmp(s->metric, "telem_section_step") == 0)
            continue;
        for (size_t j = 0; j < n && !steps &&
             strcmp(s->metric, "telem_section_seconds") == 0; j++) {
            const telem_series_t *t = ac_result_series(res, j);
            const char *k[] = { "host", "rank", "pid" };
            int same = strcmp(t->metric, "telem_section_step") == 0;
            for (int x = 0; x < 3 && same; x++) {
                const char *u = bench_slots_tag(s, k[x]);
                const char *v = bench_slots_tag(t, k[x]);
                same = u && v && strcmp(u, v) == 0;
            }
            if (same)
                steps = t;
        }
        s_take(rec, s, steps);
    }
    ac_result_destroy(&res);
}

/* Medians over the ranks of each rank's section cost (cost.D files). */
static void
s_costs(bs_rec_t *rec, const char *dir)
{
    double p50[BS_MAXDEV], p99[BS_MAXDEV], pb[BS_MAXDEV], pe[BS_MAXDEV];
    double pc[BS_MAXDEV];
    size_t n = 0;
    for (int d = 0; d < rec->ndev; d++) {
        char path[600];
        long long a, b, steps, dropped, beg, end, clk;
        snprintf(path, sizeof path, "%s/cost.%d", dir, d);
        FILE *f = fopen(path, "r");
        if (f && fscanf(f, "%lld %lld %lld %lld %lld %lld %lld", &a, &b,
                        &steps, &dropped, &beg, &end, &clk) == 7) {
            p50[n] = (double) a;
            p99[n] = (double) b;
            pb[n] = (double) beg;
            pe[n] = (double) end;
            pc[n++] = (double) clk;
            rec->dropped += dropped;
        }
        if (f)
            fclose(f);
    }
    rec->cost_p50 = n ? bench_median_d(p50, n) : NAN;
    rec->cost_p99 = n ? bench_median_d(p99, n) : NAN;
    if (n)
        printf("section calls in the ranks, medians over ranks of their "
               "p50: begin %.0f ns, end %.0f ns (a clock read %.0f ns, "
               "taken off each)\n", bench_median_d(pb, n),
               bench_median_d(pe, n), bench_median_d(pc, n));
}

static void
s_alloc(bs_rec_t *rec)
{
    size_t ns = (size_t) rec->ndev * (size_t) rec->nsteps;
    size_t nr = (size_t) rec->ndev * (size_t) rec->nrounds;
    rec->ts = calloc(ns, sizeof *rec->ts);
    rec->secs = malloc(ns * sizeof *rec->secs);
    rec->kern = malloc(nr * sizeof *rec->kern);
    if (!rec->ts || !rec->secs || !rec->kern)
        bench_die("bench_straggler", "out of memory");
    for (size_t i = 0; i < ns; i++)
        rec->secs[i] = NAN;
    for (size_t i = 0; i < nr; i++)
        rec->kern[i] = NAN;
}

static void
s_record(s_opts_t *o, bs_rec_t *rec)
{
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "straggler");
    snprintf(o->sl.log, sizeof o->sl.log, "%s/processes.log", dir);
    int nn = o->nodes;
    telemd_t *td[S_NODES_MAX];
    const char *names[S_NODES_MAX], *eps[S_NODES_MAX];
    static char nm[S_NODES_MAX][8];
    for (int k = 0; k < nn; k++) {
        snprintf(nm[k], sizeof nm[k], "n%d", k);
        td[k] = bench_telemd_start(dir, nm[k], 1, 3600, 0, 0);
        names[k] = nm[k];
        eps[k] = telemd_ctl_endpoint(td[k]);
    }
    int err = 0;
    ac_t *ac = ac_connect_nodes(names, eps, (size_t) nn, 5000, &err);
    if (!ac)
        bench_die("ac_connect_nodes", "%s", telem_strerror(err));
    int64_t pns = llround(o->period * 1e9), cpns = S_REPS * pns;
    rec->ndev = nn * o->per_node;
    rec->per_node = o->per_node;
    rec->period = o->period;
    rec->cperiod = S_REPS * o->period;
    rec->clean = o->clean, rec->load = o->load, rec->gap = o->gap;
    s_schedule(o, rec);
    rec->nrounds = (int) ((rec->nsteps + S_REPS - 1) / S_REPS);
    rec->epoch = (telem_now_ns() / cpns + 1) * cpns + 3 * TELEM_NS_PER_SEC;
    s_alloc(rec);
    int64_t slot = pns / (2 * rec->ndev);
    pid_t col[BS_MAXDEV], rk[BS_MAXDEV];
    for (int d = 0; d < rec->ndev; d++) {
        snprintf(rec->node[d], sizeof rec->node[d], "n%d", d / o->per_node);
        snprintf(rec->gpu[d], sizeof rec->gpu[d], "%d", d % o->per_node);
        snprintf(rec->rank[d], sizeof rec->rank[d], "%d", d);
        col[d] = bench_slots_collector(&o->sl, dir, rec->node[d], rec->gpu[d],
                                       o->core, rec->cperiod, S_REPS,
                                       rec->epoch, (2 * d + 1) * slot);
        rk[d] = s_rank(o, rec, d, dir, 2 * d * slot);
    }
    /* Loads start just after the target's slots of the period before
     * their first step and stop just after those of their last one. */
    int t = rec->ndev - 1;
    int64_t after = rec->epoch + 2 * (t + 1) * slot + TELEM_NS_PER_MS;
    for (int i = 0; i < rec->nseg; i++) {
        const bs_seg_t *sg = &rec->seg[i];
        if (sg->kind != BS_LOAD)
            continue;
        bench_slots_until(after + (sg->start - 1) * pns);
        pid_t lp = bench_slots_load(&o->sl, o->core, sg->level, o->cycle_ms,
                                    o->period, 2 * slot, 2 * t * slot,
                                    rec->epoch);
        bench_slots_until(after + (sg->start + sg->len - 1) * pns);
        bench_slots_stop(lp);
    }
    for (int d = 0; d < rec->ndev; d++) {
        int st = 0;
        waitpid(rk[d], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            fprintf(stderr, "bench_straggler: rank %d ended with status "
                    "%d\n", d, st);
    }
    bench_slots_until(rec->epoch + (int64_t) (rec->nrounds + 1) * cpns);
    for (int d = 0; d < rec->ndev; d++)
        bench_slots_stop(col[d]);
    s_collect(rec, ac);
    s_costs(rec, dir);
    ac_close(&ac);
    for (int k = 0; k < nn; k++)
        telemd_destroy(&td[k]);
    bench_rmtree(dir);
}

/* ---- saved recordings -------------------------------------------------- */

/* Writes the recording as text: a header, one line per segment, then per
 * device its names and three lines: step ends (ns after the epoch, -1
 * when missing), section times, kernel times ("nan" when missing). */
static void
s_save(const bs_rec_t *rec, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        bench_die("bench_straggler", "cannot write %s: %s", path,
                  strerror(errno));
    fprintf(f, "telem-bench-straggler 1\n%d %d %d %d %.9g %.9g %" PRId64
            " %d %d %d %.6g %.6g %" PRId64 "\n", rec->ndev, rec->per_node,
            rec->nsteps, rec->nrounds, rec->period, rec->cperiod, rec->epoch,
            rec->clean, rec->load, rec->gap, rec->cost_p50, rec->cost_p99,
            rec->dropped);
    for (int i = 0; i < rec->nseg; i++)
        fprintf(f, "seg %d %d %d %.9g\n", (int) rec->seg[i].kind,
                rec->seg[i].start, rec->seg[i].len, rec->seg[i].level);
    for (int d = 0; d < rec->ndev; d++) {
        size_t s0 = (size_t) d * (size_t) rec->nsteps;
        fprintf(f, "dev %s %s %s %s\nts", rec->node[d], rec->gpu[d],
                rec->rank[d], *rec->pid[d] ? rec->pid[d] : "-");
        for (int k = 0; k < rec->nsteps; k++)
            fprintf(f, " %" PRId64, rec->ts[s0 + (size_t) k]
                    ? rec->ts[s0 + (size_t) k] - rec->epoch : -1);
        fputs("\nsecs", f);
        for (int k = 0; k < rec->nsteps; k++)
            fprintf(f, " %.7g", rec->secs[s0 + (size_t) k]);
        fputs("\nkern", f);
        for (int j = 0; j < rec->nrounds; j++)
            fprintf(f, " %.7g", rec->kern[(size_t) d * (size_t) rec->nrounds
                                          + (size_t) j]);
        fputc('\n', f);
    }
    if (fclose(f))
        bench_die("bench_straggler", "cannot write %s", path);
}

static void
s_bad(const char *path, const char *what)
{
    bench_die("bench_straggler", "%s: not a recording (%s)", path, what);
}

/* 1 when the next word of f is `w`. */
static int
s_word(FILE *f, const char *w)
{
    char buf[16];
    return fscanf(f, " %15s", buf) == 1 && strcmp(buf, w) == 0;
}

/* Reads a recording s_save wrote ("-": from stdin, e.g. through zcat),
 * checking every count and value. */
static void
s_load_file(bs_rec_t *rec, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    int version = 0;
    if (!f)
        bench_die("bench_straggler", "cannot read %s: %s", path,
                  strerror(errno));
    if (fscanf(f, "telem-bench-straggler %d %d %d %d %d %lg %lg %" SCNd64
               " %d %d %d %lg %lg %" SCNd64, &version, &rec->ndev,
               &rec->per_node, &rec->nsteps, &rec->nrounds, &rec->period,
               &rec->cperiod, &rec->epoch, &rec->clean, &rec->load,
               &rec->gap, &rec->cost_p50, &rec->cost_p99,
               &rec->dropped) != 14 || version != 1)
        s_bad(path, "header");
    if (rec->ndev < 2 || rec->ndev > BS_MAXDEV || rec->per_node < 1 ||
        rec->ndev % rec->per_node || rec->nsteps < 1 ||
        rec->nsteps > 10000000 || rec->nrounds < 1 ||
        rec->nrounds > rec->nsteps || !(rec->period > 0) ||
        !(rec->cperiod >= rec->period) || rec->epoch <= 0)
        s_bad(path, "sizes");
    s_alloc(rec);
    bs_seg_t sg;
    int kind;
    while (fscanf(f, " seg %d %d %d %lg", &kind, &sg.start, &sg.len,
                  &sg.level) == 4) {
        if (rec->nseg == BS_MAXSEG || (kind != BS_LOAD && kind != BS_IMBALANCE)
            || sg.start < 0 || sg.len < 1 || sg.start + sg.len > rec->nsteps)
            s_bad(path, "segment");
        sg.kind = (bs_kind_t) kind;
        rec->seg[rec->nseg++] = sg;
    }
    for (int d = 0; d < rec->ndev; d++) {
        size_t s0 = (size_t) d * (size_t) rec->nsteps;
        if (fscanf(f, " dev %7s %7s %7s %15s", rec->node[d], rec->gpu[d],
                   rec->rank[d], rec->pid[d]) != 4 || !s_word(f, "ts"))
            s_bad(path, "device");
        for (int k = 0; k < rec->nsteps; k++) {
            int64_t off;
            if (fscanf(f, " %" SCNd64, &off) != 1 || off < -1)
                s_bad(path, "step ends");
            rec->ts[s0 + (size_t) k] = off < 0 ? 0 : rec->epoch + off;
        }
        if (!s_word(f, "secs"))
            s_bad(path, "section times");
        for (int k = 0; k < rec->nsteps; k++)
            if (fscanf(f, " %lg", &rec->secs[s0 + (size_t) k]) != 1)
                s_bad(path, "section times");
        if (!s_word(f, "kern"))
            s_bad(path, "kernel times");
        for (int j = 0; j < rec->nrounds; j++)
            if (fscanf(f, " %lg", &rec->kern[(size_t) d * (size_t)
                                             rec->nrounds + (size_t) j]) != 1)
                s_bad(path, "kernel times");
    }
    if (f != stdin)
        fclose(f);
}

/* ---- main -------------------------------------------------------------- */

static void
s_usage(FILE *f, int status)
{
    fputs("usage: bench_straggler [-N nodes] [-G devices_a_node] [-p period_s]\n"
          "       [-c clean_steps] [-l load_steps] [-g gap_steps] [-r repeats]\n"
          "       [-d duty,...] [-m factor,...] [-C cycle_ms] [-k core]\n"
          "       [-b bindir] [-n] [-T tick_s] [-s name=value,...]\n"
          "       [-o save_file] [-i recording]\n"
          "  -d  telem_load duties of the contention segments\n"
          "  -m  the target's work over the others' in the imbalance segments\n"
          "  -C  the load's duty cycle in ms\n"
          "  -T  the watcher's period the detectors are judged at (default 1)\n"
          "  -s  straggler parameters added to both telem rows\n"
          "  -o  also write the recording to save_file\n"
          "  -i  judge a saved recording instead of recording one (-: stdin)\n"
          "  -h, --help  this text\n", f);
    exit(status);
}

static int
s_list(char *arg, double *v, int cap)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(arg, ",", &save); t && n < cap;
         t = strtok_r(NULL, ",", &save))
        v[n++] = atof(t);
    return n;
}

static void
s_parse(int argc, char **argv, s_opts_t *o)
{
    *o = (s_opts_t) { .nodes = 4, .per_node = 2, .period = 0.1, .clean = 1300,
                      .load = 120, .gap = 60, .repeats = 3,
                      .duty = { 0.02, 0.08, 0.17 }, .nduty = 3,
                      .factor = { 1.10, 1.25 }, .nfactor = 2,
                      .cycle_ms = 1, .core = 1,
                      .sl = { .rt = 1, .who = "bench_straggler" },
                      .jo = { .tick = 1, .lag = 0.1, .guard = 30 } };
    snprintf(o->sl.bindir, sizeof o->sl.bindir, "%s", argv[0]);
    char *slash = strrchr(o->sl.bindir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(o->sl.bindir, sizeof o->sl.bindir, ".");
    static const struct option longs[] = { { "help", 0, NULL, 'h' },
                                           { NULL, 0, NULL, 0 } };
    int c;
    while ((c = getopt_long(argc, argv, "N:G:p:c:l:g:r:d:m:C:k:b:nT:s:o:i:h",
                            longs, NULL)) != -1) {
        switch (c) {
        case 'N': o->nodes = atoi(optarg); break;
        case 'G': o->per_node = atoi(optarg); break;
        case 'p': o->period = atof(optarg); break;
        case 'c': o->clean = atoi(optarg); break;
        case 'l': o->load = atoi(optarg); break;
        case 'g': o->gap = atoi(optarg); break;
        case 'r': o->repeats = atoi(optarg); break;
        case 'd': o->nduty = s_list(optarg, o->duty, 8); break;
        case 'm': o->nfactor = s_list(optarg, o->factor, 8); break;
        case 'C': o->cycle_ms = atof(optarg); break;
        case 'k': o->core = atoi(optarg); break;
        case 'b':
            snprintf(o->sl.bindir, sizeof o->sl.bindir, "%s", optarg);
            break;
        case 'n': o->sl.rt = 0; break;
        case 'T': o->jo.tick = atof(optarg); break;
        case 's': o->jo.params = optarg; break;
        case 'o': o->save = optarg; break;
        case 'i': o->replay = optarg; break;
        case 'h': s_usage(stdout, 0); break;
        default: s_usage(stderr, 2);
        }
    }
    int ok = o->nodes >= 2 && o->nodes <= S_NODES_MAX && o->per_node >= 1 &&
             o->nodes * o->per_node <= BS_MAXDEV && o->period >= 0.02 &&
             o->clean >= 20 && o->load >= 10 && o->gap >= o->jo.guard &&
             o->repeats >= 1 && o->nduty >= 0 && o->nfactor >= 0 &&
             o->repeats * (o->nduty + o->nfactor) <= BS_MAXSEG &&
             o->cycle_ms >= 0.1 && o->cycle_ms <= 1000 && o->core >= 0 &&
             o->jo.tick >= 0.05 && o->jo.tick <= 60;
    for (int i = 0; i < o->nduty; i++)
        ok &= o->duty[i] > 0 && o->duty[i] < 1;
    for (int i = 0; i < o->nfactor; i++)
        ok &= o->factor[i] >= 1 && o->factor[i] <= 4;
    if (!ok || optind < argc)
        s_usage(stderr, 2);
}

int
main(int argc, char **argv)
{
    s_opts_t o;
    s_parse(argc, argv, &o);
    bench_print_machine("bench_straggler");
    static bs_rec_t rec;
    if (o.replay) {
        s_load_file(&rec, o.replay);
        printf("judging the recording %s: %d ranks (%d a node) x %d steps of "
               "%.3g s, %d collector rounds of %.3g s; %d clean steps, then "
               "%d segments of %d steps, each followed by %d clean steps\n",
               o.replay, rec.ndev, rec.per_node, rec.nsteps, rec.period,
               rec.nrounds, rec.cperiod, rec.clean, rec.nseg, rec.load,
               rec.gap);
    } else {
        int64_t t0 = bench_now_ns();
        s_record(&o, &rec);
        printf("recorded %d ranks (%d nodes x %d) and their %d collectors x "
               "%d steps in %.0f s: all on core %d, each in its own slot of "
               "the %.3g s step period; collectors: %d repetitions spread over "
               "%.3g s rounds; %d clean steps, then %d segments of %d steps, "
               "each followed by %d clean steps; load cycle %.3g ms; "
               "scheduling %s\n", rec.ndev, o.nodes, o.per_node, rec.ndev,
               rec.nsteps, (bench_now_ns() - t0) / 1e9, o.core, o.period,
               S_REPS, rec.cperiod, rec.clean, rec.nseg, rec.load, rec.gap,
               o.cycle_ms, o.sl.rt ? "SCHED_FIFO" : "normal");
        if (o.save)
            s_save(&rec, o.save);
    }
    int ok = bs_judge(&rec, &o.jo);
    free(rec.ts);
    free(rec.secs);
    free(rec.kern);
    return ok ? 0 : 77;             /* run.sh: skipped, it says why */
}
