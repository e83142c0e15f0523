/* bench_detect.c - how well slowgpu finds a slow device on real collector
 * data, next to Dragon's rule on the same data.
 *
 * Records a real run, then judges it offline:
 *   - 4 telemd agents (in-process actors) and H+1 real telem_collector
 *     processes (cpu backend, DGEMM, 5 repetitions spread over the round):
 *     all of them take turns on one core, each in its own slot of every
 *     period/reps (so they never overlap and sample the round at nearly
 *     the same instants: a vCPU whose speed changes changes every device
 *     alike, and devices on different vCPUs of a VM are not comparable);
 *   - a clean stretch, then, repeated, real contention of graded strength
 *     on the target: telem_load --duty D --cycle-ms 2 windowed on the
 *     target's slot (--period/--window/--phase), so only the target is
 *     slowed;
 *   - the recorded rounds are fed, one round at a time as telem_watch feeds
 *     them, to slowgpu (robust rule, defaults or -s parameters) and to
 *     slowgpu rule=dragon, as jobs of G = 2, 3, 4, 8 and H+1 devices: the
 *     target with disjoint sets of G-1 healthy devices (15 jobs of 2
 *     devices from 15 healthy ones), each one detector fed the whole
 *     recording.
 * Reported: the slowdown each load really caused (median over its rounds
 * of target / median of the healthy devices; segments are grouped by the
 * slowdown measured), whether the target was named within k rounds of the
 * load's start (slowgpu's k of n: 4 by default, the fewest in which it
 * can name a device; "pre" when it named the target in the 10 clean rounds
 * before), the noise of the clean rounds, and false act events (naming a
 * healthy device, or the target in a clean round: the clean stretch and
 * each gap after its first 2 rounds) per clean device-round from round 10.
 * Collectors (priority 20) and loads (30) run SCHED_FIFO unless -n is given
 * or that is refused: on a shared machine, work this benchmark did not
 * start then cannot preempt them, so the contention measured is the load's.
 * The bench's own telemd actors stay at normal priority (they only store
 * samples, stamped by the collectors).  -o saves the recording and -i
 * judges a saved one again (e.g. with other -s parameters) without
 * recording.
 * Usage: bench_detect [-H healthy] [-p period_s] [-c clean_rounds]
 *                     [-l load_rounds] [-g gap_rounds] [-r repeats]
 *                     [-d duty,duty,...] [-C cycle_ms] [-b bindir] [-n]
 *                     [-o save] [-i recording] [-s name=value,...]
 */
#include "bench_common.h"
#include "bench_det_params.h"
#include "bench_slots.h"
#include "ac.h"
#include "det.h"
#include "telem_time.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NODES 4
#define S_MAXDEV 64
#define S_MAXSEG 64
#define S_METRIC "cg_dgemm_seconds"
#define S_REPS 5             /* repetitions per round, spread over it */

typedef struct {
    int healthy;             /* -H */
    double period;           /* -p, seconds */
    int clean, load, gap;    /* rounds */
    int repeats;
    double duty[8];
    int nduty;
    char bindir[512];
    int peer_core, target_core;
    int rt;                  /* collectors and load SCHED_FIFO (-n: not) */
    double cycle_ms;         /* -C, the load's duty cycle */
    const char *save;        /* -o: write the recording there */
    const char *replay;      /* -i: judge this recording, run nothing */
    const char *params;      /* -s: slowgpu parameters, name=value,... */
} s_opts_t;

typedef struct {
    int start;               /* first round of the load */
    double duty;
    double slowdown;         /* measured */
} s_seg_t;

typedef struct {
    int ndev, nrounds;       /* device ndev-1 is the target */
    double *v;               /* v[d * nrounds + k], NAN when missing */
    char node[S_MAXDEV][8], gpu[S_MAXDEV][8];
    s_seg_t seg[S_MAXSEG];
    int nseg;
} s_rec_t;

#define V(rec, d, k) ((rec)->v[(size_t) (d) * (size_t) (rec)->nrounds + (size_t) (k)])

/* ---- recording --------------------------------------------------------- */

static int
s_total_rounds(const s_opts_t *o)
{
    return o->clean + o->repeats * o->nduty * (o->load + o->gap);
}

/* Index of the device (node, gpu), or -1. */
static int
s_dev_index(const s_rec_t *rec, const char *node, const char *gpu)
{
    for (int d = 0; node && gpu && d < rec->ndev; d++)
        if (strcmp(rec->node[d], node) == 0 && strcmp(rec->gpu[d], gpu) == 0)
            return d;
    return -1;
}

/* Reads every recorded round into rec->v. */
static void
s_collect(s_rec_t *rec, ac_t *ac, int64_t epoch, int64_t pns)
{
    const char *m[] = { S_METRIC };
    ac_query_t q = { .metrics = m, .nmetrics = 1, .start_ns = epoch - 1,
                     .timeout_ms = 5000 };
    ac_result_t *res = NULL;
    int rc = ac_query(ac, &q, &res);
    if (rc)
        bench_die("ac_query", "%s", telem_strerror(rc));
    for (size_t i = 0; i < ac_result_nseries(res); i++) {
        const telem_series_t *s = ac_result_series(res, i);
        int d = s_dev_index(rec, bench_slots_tag(s, "host"), bench_slots_tag(s, "gpu"));
        for (uint32_t j = 0; d >= 0 && j < s->npoints; j++) {
            int64_t k = (s->ts[j] - epoch) / pns;
            if (k >= 0 && k < rec->nrounds && s->ts[j] == epoch + k * pns)
                V(rec, d, k) = s->values[j];
        }
    }
    ac_result_destroy(&res);
}

static void
s_record(s_opts_t *o, s_rec_t *rec)
{
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "detect");
    bench_slots_t sl = { .rt = o->rt, .who = "bench_detect" };
    snprintf(sl.bindir, sizeof sl.bindir, "%s", o->bindir);
    snprintf(sl.log, sizeof sl.log, "%s/processes.log", dir);
    telemd_t *td[S_NODES];
    const char *names[S_NODES], *eps[S_NODES];
    static char nm[S_NODES][8];
    for (int k = 0; k < S_NODES; k++) {
        snprintf(nm[k], sizeof nm[k], "n%d", k);
        td[k] = bench_telemd_start(dir, nm[k], 1, 3600, 0, 0);
        names[k] = nm[k];
        eps[k] = telemd_ctl_endpoint(td[k]);
    }
    int err = 0;
    ac_t *ac = ac_connect_nodes(names, eps, S_NODES, 5000, &err);
    if (!ac)
        bench_die("ac_connect_nodes", "%s", telem_strerror(err));
    int64_t pns = (int64_t) llround(o->period * 1e9);
    int64_t epoch = (telem_now_ns() / pns + 1) * pns + 2 * TELEM_NS_PER_SEC;
    rec->ndev = o->healthy + 1;
    rec->nrounds = s_total_rounds(o);
    rec->v = malloc((size_t) rec->ndev * (size_t) rec->nrounds * sizeof *rec->v);
    for (size_t i = 0; i < (size_t) rec->ndev * (size_t) rec->nrounds; i++)
        rec->v[i] = NAN;
    pid_t col[S_MAXDEV];
    int64_t slot = pns / S_REPS / rec->ndev;
    for (int d = 0; d < rec->ndev; d++) {
        int target = d == o->healthy;
        snprintf(rec->node[d], sizeof rec->node[d], "n%d", d % S_NODES);
        snprintf(rec->gpu[d], sizeof rec->gpu[d], "%d", d / S_NODES);
        col[d] = bench_slots_collector(&sl, dir, rec->node[d], rec->gpu[d],
                                       target ? o->target_core : o->peer_core,
                                       o->period, S_REPS, epoch, d * slot);
    }
    int a = o->clean;
    for (int r = 0; r < o->repeats; r++)
        for (int i = 0; i < o->nduty; i++, a += o->load + o->gap) {
            s_seg_t *sg = &rec->seg[rec->nseg++];
            sg->start = a;
            sg->duty = o->duty[i];
            bench_slots_until(epoch + a * pns - pns / 2);
            pid_t lp = bench_slots_load(&sl, o->target_core, o->duty[i],
                                        o->cycle_ms, o->period / S_REPS,
                                        slot, o->healthy * slot, epoch);
            bench_slots_until(epoch + (a + o->load) * pns - pns / 2);
            bench_slots_stop(lp);
        }
    bench_slots_until(epoch + (rec->nrounds + 3) * pns);
    s_collect(rec, ac, epoch, pns);
    for (int d = 0; d < rec->ndev; d++)
        bench_slots_stop(col[d]);
    o->rt = sl.rt;
    ac_close(&ac);
    for (int k = 0; k < S_NODES; k++)
        telemd_destroy(&td[k]);
    bench_rmtree(dir);
}

/* ---- saved recordings ------------------------------------------------- */

/* Writes the recording as text: a header, one line per load segment, one
 * line per device with its figure in every round ("nan" when missing). */
static void
s_save(const s_opts_t *o, const s_rec_t *rec, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        bench_die("bench_detect", "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "telem-bench-detect 1\n%d %d %d %d %d %.9g\n", rec->ndev,
            rec->nrounds, o->clean, o->load, o->gap, o->period);
    for (int i = 0; i < rec->nseg; i++)
        fprintf(f, "seg %d %.9g\n", rec->seg[i].start, rec->seg[i].duty);
    for (int d = 0; d < rec->ndev; d++) {
        fprintf(f, "dev %s %s", rec->node[d], rec->gpu[d]);
        for (int k = 0; k < rec->nrounds; k++)
            fprintf(f, " %.9g", V(rec, d, k));
        fputc('\n', f);
    }
    if (fclose(f))
        bench_die("bench_detect", "cannot write %s", path);
}

/* Reads a recording s_save wrote; the options take its shape. */
static void
s_load_file(s_opts_t *o, s_rec_t *rec, const char *path)
{
    FILE *f = fopen(path, "r");
    int version = 0;
    if (!f)
        bench_die("bench_detect", "cannot read %s: %s", path, strerror(errno));
    if (fscanf(f, "telem-bench-detect %d %d %d %d %d %d %lg", &version,
               &rec->ndev, &rec->nrounds, &o->clean, &o->load, &o->gap,
               &o->period) != 7 || version != 1 || rec->ndev < 2 ||
        rec->ndev > S_MAXDEV || rec->nrounds < 1 || rec->nrounds > 1000000)
        bench_die("bench_detect", "%s: not a recording", path);
    o->healthy = rec->ndev - 1;
    rec->v = malloc((size_t) rec->ndev * (size_t) rec->nrounds * sizeof *rec->v);
    if (!rec->v)
        bench_die("bench_detect", "out of memory");
    s_seg_t sg;
    while (rec->nseg < S_MAXSEG &&
           fscanf(f, " seg %d %lg", &sg.start, &sg.duty) == 2)
        rec->seg[rec->nseg++] = sg;
    for (int d = 0; d < rec->ndev; d++) {
        if (fscanf(f, " dev %7s %7s", rec->node[d], rec->gpu[d]) != 2)
            bench_die("bench_detect", "%s: device %d is missing", path, d);
        for (int k = 0; k < rec->nrounds; k++)
            if (fscanf(f, " %lg", &V(rec, d, k)) != 1)
                bench_die("bench_detect", "%s: device %d is short", path, d);
    }
    fclose(f);
}

/* ---- judging ----------------------------------------------------------- */

typedef struct {
    int *round;              /* every act event: its round, */
    char *target;            /* and whether it names the target */
    int cap;
    int events;              /* every event */
} s_replay_t;

/* A job the recording is cut into: the target and g-1 healthy devices
 * from healthy device `first` on. */
typedef struct {
    int g, first;
} s_job_t;


/* slowgpu's k with the -s parameters: a load segment counts as detected
 * when the target is named within that many rounds of its start. */
static int
s_seen_rounds(const s_opts_t *o)
{
    int err = 0;
    char buf[64];
    det_t *d = det_new(det_find("slowgpu"), NULL, &err);
    if (!d)
        bench_die("slowgpu", "cannot create");
    bench_det_params(d, o->params, "bench_detect", 0);
    if (det_get(d, "k", buf, sizeof buf))
        bench_die("slowgpu", "no parameter k");
    det_destroy(&d);
    return atoi(buf);
}

/* Feeds every round of job j to a fresh slowgpu with `rule` and the -s
 * parameters, one round per run. */
static s_replay_t
s_replay(const s_opts_t *o, const s_rec_t *rec, s_job_t j, const char *rule)
{
    s_replay_t out = { 0 };
    int err = 0;
    int g = j.g;
    det_t *d = det_new(det_find("slowgpu"), NULL, &err);
    char why[128];
    if (!d || det_set(d, "rule", rule, why, sizeof why))
        bench_die("slowgpu", "cannot create");
    bench_det_params(d, o->params, "bench_detect", 0);
    det_events_t *evs = det_events_new();
    static det_series_t s[S_MAXDEV];
    static det_tag_t tags[S_MAXDEV][2];
    static int64_t ts[S_MAXDEV];
    static double val[S_MAXDEV];
    int target = rec->ndev - 1;
    for (int k = 0; k < rec->nrounds; k++) {
        size_t n = 0;
        for (int i = 0; i < g; i++) {
            int dv = i == g - 1 ? target : j.first + i;
            if (isnan(V(rec, dv, k)))
                continue;
            tags[n][0] = (det_tag_t) { "gpu", rec->gpu[dv] };
            tags[n][1] = (det_tag_t) { "host", rec->node[dv] };
            ts[n] = INT64_C(1700000000000000000) + k * TELEM_NS_PER_SEC;
            val[n] = V(rec, dv, k);
            s[n] = (det_series_t) { rec->node[dv], rec->gpu[dv], S_METRIC,
                                    tags[n], 2, &ts[n], &val[n], 1 };
            n++;
        }
        det_input_t in = { .now_ns = ts[0] + 1, .series = s, .nseries = n };
        det_events_clear(evs);
        det_run(d, &in, evs);
        for (size_t e = 0; e < det_events_count(evs); e++) {
            const det_event_t *ev = det_events_get(evs, e);
            if (ev->severity != DET_SEV_ACT)
                continue;               /* drift warnings are not counted */
            int tg = strcmp(ev->devices[0].node, rec->node[target]) == 0 &&
                     strcmp(ev->devices[0].device, rec->gpu[target]) == 0;
            if (out.events == out.cap) {
                out.cap = out.cap ? 2 * out.cap : 64;
                out.round = realloc(out.round, (size_t) out.cap * sizeof (int));
                out.target = realloc(out.target, (size_t) out.cap);
                if (!out.round || !out.target)
                    bench_die("bench_detect", "out of memory");
            }
            out.round[out.events] = k;
            out.target[out.events] = (char) tg;
            out.events++;
        }
    }
    det_events_destroy(&evs);
    det_destroy(&d);
    return out;
}

/* Clean device-rounds of job j over [from, to). */
static int
s_device_rounds(const s_rec_t *rec, s_job_t j, int from, int to)
{
    int n = 0;
    for (int k = from; k < to; k++)
        for (int i = 0; i < j.g; i++)
            n += !isnan(V(rec, i == j.g - 1 ? rec->ndev - 1 : j.first + i, k));
    return n;
}

/* Whether round k is clean: before the first load, or in a gap after its
 * first 2 rounds (a load's effect may last into the round after it). */
static int
s_clean_round(const s_opts_t *o, const s_rec_t *rec, int k)
{
    for (int i = 0; i < rec->nseg; i++)
        if (k >= rec->seg[i].start && k < rec->seg[i].start + o->load + 2)
            return 0;
    return 1;
}

/* Judges every job of g devices the recording holds: the target with
 * disjoint sets of g-1 healthy devices (15 jobs of 2 devices from 15
 * healthy ones, 1 job of all of them).  Each job is one detector fed the
 * whole recording, round by round, as a watcher running through the job
 * would be.  An act event is false when it names a healthy device, or the
 * target in a clean round; a load segment is detected within k rounds
 * (s_seen_rounds) when the first event naming the target in [start - 10,
 * start + load) falls in its first k rounds ("pre" before the start,
 * "late" after).
 * Clean device-rounds are counted from round 10 (the detector learns the
 * noise in its first rounds). */
static void
s_judge(const s_opts_t *o, const s_rec_t *rec, int g, const char *rule)
{
    int njobs = (rec->ndev - 1) / (g - 1), false_ev = 0, rounds = 0;
    int segs[BENCH_SLOTS_NBINS] = { 0 }, in3[BENCH_SLOTS_NBINS] = { 0 }, pre[BENCH_SLOTS_NBINS] = { 0 },
        late[BENCH_SLOTS_NBINS] = { 0 }, seen = s_seen_rounds(o);
    for (int jb = 0; jb < njobs; jb++) {
        s_job_t j = { g, jb * (g - 1) };
        s_replay_t r = s_replay(o, rec, j, rule);
        for (int k = 10; k < rec->nrounds; k++)
            if (s_clean_round(o, rec, k))
                rounds += s_device_rounds(rec, j, k, k + 1);
        for (int e = 0; e < r.events; e++)
            false_ev += !r.target[e] || s_clean_round(o, rec, r.round[e]);
        for (int i = 0; i < rec->nseg; i++) {
            double sd = rec->seg[i].slowdown;
            int a = rec->seg[i].start, first = -1;
            for (int e = 0; e < r.events && first < 0; e++)
                if (r.target[e] && r.round[e] >= a - 10 &&
                    r.round[e] < a + o->load)
                    first = r.round[e];
            for (size_t bi = 0; bi < BENCH_SLOTS_NBINS; bi++) {
                if (!(sd >= bench_slots_bins[bi].lo && sd < bench_slots_bins[bi].hi))
                    continue;
                int when = first - a + 1;       /* rounds into the load */
                segs[bi]++;
                pre[bi] += first >= 0 && first < a;
                in3[bi] += first >= a && when <= seen;
                late[bi] += first >= a && when > seen;
            }
        }
        free(r.round);
        free(r.target);
    }
    printf("  %4d  %4d  %-7s", g, njobs,
           strcmp(rule, "robust") ? "dragon" : "slowgpu");
    for (size_t bi = 0; bi < BENCH_SLOTS_NBINS; bi++) {
        char cell[96];
        if (segs[bi] == 0)
            snprintf(cell, sizeof cell, "-");
        else
            snprintf(cell, sizeof cell, "%d/%d (%d late, %d pre)", in3[bi],
                     segs[bi], late[bi], pre[bi]);
        printf("  %-24s", cell);
    }
    printf("  %3d / %d\n", false_ev, rounds);
}

static void
s_usage(FILE *f, int status)
{
    fputs("usage: bench_detect [-H healthy] [-p period_s] [-c clean_rounds]\n"
          "       [-l load_rounds] [-g gap_rounds] [-r repeats]\n"
          "       [-d duty,duty,...] [-C cycle_ms] [-b bindir] [-n]\n"
          "       [-o save_file] [-i recording] [-s name=value,...]\n"
          "  -C  the load's duty cycle in ms (default 2)\n"
          "  -o  also write the recording to save_file\n"
          "  -i  judge a saved recording instead of recording one\n"
          "  -s  slowgpu parameters for the judging (telem_watch ctl names)\n"
          "  -h, --help  this text\n",
          f);
    exit(status);
}

static void
s_parse(int argc, char **argv, s_opts_t *o)
{
    *o = (s_opts_t) { .healthy = 15, .period = 0.5, .clean = 300, .load = 15,
                      .gap = 10, .repeats = 3,
                      .duty = { 0.05, 0.1, 0.2, 0.35 }, .nduty = 4,
                      .peer_core = 1, .target_core = 1, .rt = 1,
                      .cycle_ms = 2 };
    snprintf(o->bindir, sizeof o->bindir, "%s", argv[0]);
    char *slash = strrchr(o->bindir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(o->bindir, sizeof o->bindir, ".");
    static const struct option longs[] = { { "help", 0, NULL, 'h' },
                                           { NULL, 0, NULL, 0 } };
    int c;
    while ((c = getopt_long(argc, argv, "H:p:c:l:g:r:d:b:C:o:i:s:nh", longs,
                            NULL)) != -1) {
        switch (c) {
        case 'H': o->healthy = atoi(optarg); break;
        case 'p': o->period = atof(optarg); break;
        case 'c': o->clean = atoi(optarg); break;
        case 'l': o->load = atoi(optarg); break;
        case 'g': o->gap = atoi(optarg); break;
        case 'r': o->repeats = atoi(optarg); break;
        case 'b': snprintf(o->bindir, sizeof o->bindir, "%s", optarg); break;
        case 'n': o->rt = 0; break;
        case 'C': o->cycle_ms = atof(optarg); break;
        case 'o': o->save = optarg; break;
        case 'i': o->replay = optarg; break;
        case 's': o->params = optarg; break;
        case 'd':
            o->nduty = 0;
            for (char *t = strtok(optarg, ","); t && o->nduty < 8;
                 t = strtok(NULL, ","))
                o->duty[o->nduty++] = atof(t);
            break;
        case 'h': s_usage(stdout, 0); break;
        default: s_usage(stderr, 2);
        }
    }
    if (o->healthy < 1 || o->healthy + 1 > S_MAXDEV || o->period < 0.05 ||
        o->clean < 20 || o->load < 3 || o->gap < 5 || o->repeats < 1 ||
        o->nduty < 1 || o->repeats * o->nduty > S_MAXSEG ||
        o->cycle_ms < 0.1 || o->cycle_ms > 1000)
        s_usage(stderr, 2);
}

int
main(int argc, char **argv)
{
    s_opts_t o;
    s_parse(argc, argv, &o);
    bench_print_machine("bench_detect");
    static s_rec_t rec;
    if (o.replay) {
        s_load_file(&o, &rec, o.replay);
        printf("judging the recording %s: %d devices x %d rounds, period "
               "%.3g s; %d clean rounds, then %d x (%d load + %d gap) "
               "rounds\n", o.replay, rec.ndev, rec.nrounds, o.period,
               o.clean, rec.nseg, o.load, o.gap);
    } else {
        int64_t t0 = bench_now_ns();
        s_record(&o, &rec);
        printf("recorded %d devices x %d rounds in %.0f s: %d healthy "
               "on core %d and the target on core %d, each in its own slot "
               "of the round; "
               "period %.3g s, 5 reps; %d clean rounds, then %d x (%d load "
               "+ %d gap) rounds; load cycle %.3g ms; scheduling %s\n",
               rec.ndev, rec.nrounds, (bench_now_ns() - t0) / 1e9,
               o.healthy, o.peer_core, o.target_core, o.period, o.clean,
               rec.nseg, o.load, o.gap, o.cycle_ms,
               o.rt ? "SCHED_FIFO" : "normal");
        if (o.save)
            s_save(&o, &rec, o.save);
    }
    printf("slowgpu parameters: %s\n", o.params ? o.params : "defaults");
    printf("load (telem_load --duty) and the slowdown it caused (median "
           "target / healthy median):\n ");
    for (int i = 0; i < rec.nseg; i++) {
        rec.seg[i].slowdown = bench_slots_slowdown(rec.v, rec.ndev,
                                                   rec.nrounds,
                                                   rec.seg[i].start + 1,
                                                   rec.seg[i].start + o.load);
        printf(" %g:%.3f", rec.seg[i].duty, rec.seg[i].slowdown);
    }
    printf("\n  clean stretch: %.3f\n",
           bench_slots_slowdown(rec.v, rec.ndev, rec.nrounds, 0, o.clean));
    bench_slots_noise(rec.v, rec.ndev, rec.nrounds, 0, o.clean, "device",
                      "round");
    printf("\n");
    printf("load segments by the slowdown they caused: detected within %d "
           "rounds of the load's start (slowgpu's k) / segments (detected "
           "later; already flagged in the 10 clean rounds before), and act "
           "events on clean rounds\n", s_seen_rounds(&o));
    printf("  %4s  %4s  %-7s", "devs", "jobs", "rule");
    for (size_t bi = 0; bi < BENCH_SLOTS_NBINS; bi++)
        printf("  %-24s", bench_slots_bins[bi].name);
    printf("  false / clean device-rounds\n");
    int gs[] = { 2, 3, 4, 8, rec.ndev };
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
        int seen = gs[i] > rec.ndev;
        for (size_t j = 0; j < i && !seen; j++)
            seen = gs[j] == gs[i];
        if (seen)
            continue;
        s_judge(&o, &rec, gs[i], "robust");
        s_judge(&o, &rec, gs[i], "dragon");
    }
    free(rec.v);
    return 0;
}
