/* push_demo.c - pushes counters and gauges through telem.h, as
 * tau_metric_proxy's collectors do, then finalizes.
 *
 * Counters are summed by telemd over every process of the node
 * (telem_counter_add()); gauges stay per process (telem_gauge_set()).
 * Names carry labels in Prometheus syntax:
 *
 *   push_demo --counter 'demo_hits_total{op="read"}' --count 1000
 *
 * At the end it calls telem_finalize() and prints one line of key=value
 * counters, which tests/it_push.sh parses.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <telem/telem.h>
#include <telem/telem_error.h>

#define S_MAX 16

typedef struct {
    long count;
    double delta;
    const char *counters[S_MAX];
    int ncounters;
    const char *gauge;
    const char *bad[S_MAX];
    int nbad;
    long flood;
    const char *doc;
    int quiet;
    double rate;
    const char *until_file;
    long steps;
} s_opts_t;

static void
s_usage(FILE *out)
{
    fprintf(out,
        "usage: push_demo [options]\n"
        "Adds --delta to each --counter --count times (telem_counter_add),\n"
        "sets --gauge to the step number at each step (telem_gauge_set),\n"
        "then calls telem_finalize().\n"
        "\n"
        "  --counter NAME    a counter, with labels: 'hits_total{op=\"read\"}'\n"
        "                    (repeatable, up to 16; default demo_hits_total)\n"
        "  --count N         steps (default 1000)\n"
        "  --delta D         added to each counter per step (default 1)\n"
        "  --gauge NAME      a gauge set to the step number at each step\n"
        "  --doc TEXT        describe each counter's metric with TEXT\n"
        "  --bad NAME        also push NAME once, expecting a refusal\n"
        "                    (repeatable, up to 16)\n"
        "  --flood N         push N counters of distinct label sets\n"
        "                    (demo_flood_total{id=\"0\"} ...), once each\n"
        "  --rate R          at most R steps a second (default: as fast as it\n"
"                    can), a steady load\n"
"  --until-file PATH after the steps, go on until PATH exists (a test\n"
"                    ends a steady load when it has seen what it waits for)\n"
"  --quiet           print nothing but errors\n"
        "  --help            this text\n"
        "\n"
        "Environment: TELEM_LEVEL, TELEM_NODE, TELEM_RUNDIR, TELEM_INGEST,\n"
        "TELEM_CTL, TELEM_RANK, TELEM_FINALIZE_MS (see telem.h).\n"
        "Prints: steps=... accepted=... full=... invalid=... bad_refused=...\n"
        "queued=... sent=... dropped=... finalize=ok|no_telemd|timeout|error\n"
        "(accepted: counter increments taken, so a counter's node total\n"
        "grows by accepted * delta / counters).\n"
        "Exit status: 0 when telemd confirmed everything, 2 when finalize\n"
        "failed, 1 on a usage error or a --bad name that was accepted.\n");
}

static int
s_number(const char *arg, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(arg, &end);
    return errno || end == arg || *end ? -1 : 0;
}

static int
s_parse(int argc, char **argv, s_opts_t *o)
{
    static const struct option longopts[] = {
        { "counter", required_argument, NULL, 'c' },
        { "count", required_argument, NULL, 'n' },
        { "delta", required_argument, NULL, 'd' },
        { "gauge", required_argument, NULL, 'g' },
        { "doc", required_argument, NULL, 'D' },
        { "bad", required_argument, NULL, 'b' },
        { "flood", required_argument, NULL, 'F' },
        { "quiet", no_argument, NULL, 'q' },
        { "rate", required_argument, NULL, 'r' },
        { "until-file", required_argument, NULL, 'u' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    double v;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (o->ncounters == S_MAX)
                return -1;
            o->counters[o->ncounters++] = optarg;
            break;
        case 'b':
            if (o->nbad == S_MAX)
                return -1;
            o->bad[o->nbad++] = optarg;
            break;
        case 'n': case 'd': case 'F':
            if (s_number(optarg, &v) || v < 0)
                return -1;
            if (c == 'd')
                o->delta = v;
            else if (c == 'n')
                o->count = (long) v;
            else
                o->flood = (long) v;
            break;
        case 'r':
            if (s_number(optarg, &o->rate) || o->rate <= 0)
                return -1;
            break;
        case 'g': o->gauge = optarg; break;
        case 'D': o->doc = optarg; break;
        case 'q': o->quiet = 1; break;
        case 'u': o->until_file = optarg; break;
        case 'h': s_usage(stdout); exit(0);
        default: return -1;
        }
    }
    if (optind != argc)
        return -1;
    if (o->ncounters == 0)
        o->counters[o->ncounters++] = "demo_hits_total";
    return 0;
}

static const char *
s_finalize_word(int rc)
{
    return rc == 0 ? "ok" : rc == TELEM_ECONN ? "no_telemd"
         : rc == TELEM_ETIMEDOUT ? "timeout" : "error";
}

/* Sleeps until step `done` is due at `rate` steps a second from the
 * first call. */
static void
s_pace(double rate, long done, struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (done == 1)
        *start = now;
    double due = (double) done / rate;
    double el = (double) (now.tv_sec - start->tv_sec)
                + (now.tv_nsec - start->tv_nsec) / 1e9;
    if (due > el) {
        double w = due - el;
        struct timespec ts = { (time_t) w, (long) ((w - (long) w) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

/* The pushes; returns the number of --bad names that were refused. */
static int
s_push(s_opts_t *o, long *accepted, long *full)
{
    struct timespec start = { 0, 0 };
    for (int k = 0; o->doc && k < o->ncounters; k++)
        telem_describe(o->counters[k], "counter", "", o->doc);
    long i;
    for (i = 0; i < o->count
                || (o->until_file && access(o->until_file, F_OK) != 0); i++) {
        for (int k = 0; k < o->ncounters; k++) {
            int rc = telem_counter_add(o->counters[k], o->delta);
            *accepted += rc == 0;
            *full += rc == TELEM_EFULL;
        }
        if (o->gauge)
            telem_gauge_set(o->gauge, (double) i);
        if (o->rate > 0)
            s_pace(o->rate, i + 1, &start);
    }
    o->steps = i;
    for (long f = 0; f < o->flood; f++) {
        char name[64];
        snprintf(name, sizeof name, "demo_flood_total{id=\"%ld\"}", f);
        telem_counter_add(name, 1);
    }
    int refused = 0;
    for (int k = 0; k < o->nbad; k++)
        refused += telem_counter_add(o->bad[k], 1) == TELEM_EINVAL;
    return refused;
}

int
main(int argc, char **argv)
{
    s_opts_t o = { .count = 1000, .delta = 1 };
    if (s_parse(argc, argv, &o) != 0) {
        s_usage(stderr);
        return 1;
    }
    long accepted = 0, full = 0;
    int refused = s_push(&o, &accepted, &full);
    int rc = telem_finalize();
    telem_stats_t st;
    telem_stats(&st);
    if (!o.quiet)
        printf("steps=%ld accepted=%ld full=%ld invalid=%llu bad_refused=%d "
               "queued=%llu sent=%llu dropped=%llu finalize=%s\n",
               o.steps, accepted, full, (unsigned long long) st.invalid,
               refused, (unsigned long long) st.queued,
               (unsigned long long) st.sent, (unsigned long long) st.dropped,
               s_finalize_word(rc));
    if (rc)
        fprintf(stderr, "push_demo: finalize: %s\n", telem_strerror(rc));
    if (refused != o.nbad)
        return 1;
    return rc ? 2 : 0;
}
