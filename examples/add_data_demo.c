/* add_data_demo.c - records a few metrics through telem.h, then finalizes.
 *
 * Every step records four metrics, one per telemetry level:
 *   <metric>          level 1, value = step number (0, 1, 2, ...)
 *   <metric>_detail   level 2, value = step / 2
 *   <metric>_debug    level 3, value = step * step
 *   <metric>_trace    level 4, value = -step
 * so TELEM_LEVEL decides how many reach telemd.  At the end it calls
 * telem_finalize() and prints one line of key=value counters, which the
 * integration tests parse.  Used by tests/it_*.sh and the README.
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

#define S_TAGS_MAX 8
#define S_NAME_MAX 255

typedef struct {
    long count;
    double duration_s;
    long interval_ms;
    const char *metric;
    const char *tags[2 * S_TAGS_MAX];
    int ntags;
    int quiet;
    const char *until_file;
} s_opts_t;

static void
s_usage(FILE *out)
{
    fprintf(out,
        "usage: add_data_demo [options]\n"
        "Records <metric> (level 1), <metric>_detail (2), <metric>_debug (3)\n"
        "and <metric>_trace (4) once per step, then calls telem_finalize().\n"
        "\n"
        "  --count N         steps to record (default 1000)\n"
        "  --duration S      record for S seconds instead of a count\n"
        "  --interval-ms MS  pause between steps (default 0)\n"
        "  --until-file PATH after the steps, go on until PATH exists (a test\n"
        "                    ends a steady load when it has seen what it waits for)\n"
        "  --metric NAME     base metric name (default demo_value)\n"
        "  --tag KEY=VALUE   extra tag on every sample (up to 8)\n"
        "  --quiet           print nothing but errors\n"
        "  --help            this text\n"
        "\n"
        "Environment: TELEM_LEVEL, TELEM_NODE, TELEM_RUNDIR, TELEM_INGEST,\n"
        "TELEM_CTL, TELEM_RANK, TELEM_FINALIZE_MS (see telem.h).\n"
        "Prints: metric=... steps=... accepted=... skipped=... refused=...\n"
        "queued=... sent=... dropped=... filtered=... finalize=ok|no_telemd|\n"
        "timeout|error (the reason in words goes to stderr)\n"
        "Exit status: 0 when telemd confirmed everything, 2 when finalize\n"
        "failed (no telemd, timeout), 1 on a usage error.\n");
}

static int
s_number(const char *s, double lo, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo) || v > 1e12)
        return -1;
    *out = v;
    return 0;
}

static int
s_tag(s_opts_t *o, char *arg)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1] || o->ntags == S_TAGS_MAX)
        return -1;
    *eq = '\0';
    o->tags[2 * o->ntags] = arg;
    o->tags[2 * o->ntags + 1] = eq + 1;
    o->ntags++;
    return 0;
}

static int
s_parse(int argc, char **argv, s_opts_t *o)
{
    static const struct option longopts[] = {
        { "count", required_argument, NULL, 'c' },
        { "duration", required_argument, NULL, 'd' },
        { "interval-ms", required_argument, NULL, 'i' },
        { "metric", required_argument, NULL, 'm' },
        { "tag", required_argument, NULL, 't' },
        { "quiet", no_argument, NULL, 'q' },
        { "until-file", required_argument, NULL, 'u' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 } };
    double v;
    int c;
    while ((c = getopt_long(argc, argv, "c:d:i:m:t:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': if (s_number(optarg, 0, &v)) return -1; o->count = (long) v; break;
        case 'd': if (s_number(optarg, 0, &v)) return -1; o->duration_s = v; break;
        case 'i': if (s_number(optarg, 0, &v)) return -1; o->interval_ms = (long) v; break;
        case 'm': o->metric = optarg; break;
        case 't': if (s_tag(o, optarg)) return -1; break;
        case 'q': o->quiet = 1; break;
        case 'u': o->until_file = optarg; break;
        case 'h': s_usage(stdout); exit(0);
        default: return -1;
        }
    }
    if (optind != argc || !*o->metric || strlen(o->metric) > S_NAME_MAX - 7)
        return -1;
    return 0;
}

static double
s_now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
s_pause_until(double when)
{
    struct timespec ts;
    ts.tv_sec = (time_t) when;
    ts.tv_nsec = (long) ((when - (double) ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Records one sample with the user's tags; extra arguments past ntags
 * pairs are not read. */
static int
s_record(const s_opts_t *o, const char *name, double value, int level)
{
    const char *const *t = o->tags;
    return telem_add_data_tags(name, value, 0, level, o->ntags, t[0], t[1],
                               t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9],
                               t[10], t[11], t[12], t[13], t[14], t[15]);
}

/* One word for telem_finalize()'s result. */
static const char *
s_result(int rc)
{
    switch (rc) {
    case 0: return "ok";
    case TELEM_ECONN: return "no_telemd";
    case TELEM_ETIMEDOUT: return "timeout";
    default: return "error";
    }
}

int
main(int argc, char **argv)
{
    s_opts_t o = { .count = 1000, .metric = "demo_value" };
    if (s_parse(argc, argv, &o)) {
        s_usage(stderr);
        return 1;
    }
    char names[4][S_NAME_MAX + 1];
    static const char *const suffix[4] = { "", "_detail", "_debug", "_trace" };
    for (int l = 0; l < 4; l++)
        snprintf(names[l], sizeof names[l], "%s%s", o.metric, suffix[l]);
    telem_describe(names[0], "gauge", "", "Step number of add_data_demo.");

    long steps = 0, accepted = 0, skipped = 0, refused = 0;
    double start = s_now(CLOCK_MONOTONIC);
    double next = start;
    for (;; steps++) {
        if ((o.duration_s > 0 ? s_now(CLOCK_MONOTONIC) - start >= o.duration_s
                              : steps >= o.count)
            && (!o.until_file || access(o.until_file, F_OK) == 0))
            break;
        double s = (double) steps;
        const double values[4] = { s, s / 2, s * s, -s };
        for (int l = 0; l < 4; l++) {
            int rc = s_record(&o, names[l], values[l], l + 1);
            accepted += rc == 0;
            skipped += rc == 1;
            refused += rc < 0;
        }
        if (o.interval_ms > 0) {
            next += o.interval_ms / 1e3;
            s_pause_until(next);
        }
    }

    int rc = telem_finalize();
    telem_stats_t st;
    telem_stats(&st);
    if (!o.quiet)
        printf("metric=%s steps=%ld accepted=%ld skipped=%ld refused=%ld "
               "queued=%llu sent=%llu dropped=%llu filtered=%llu finalize=%s\n",
               o.metric, steps, accepted, skipped, refused,
               (unsigned long long) st.queued, (unsigned long long) st.sent,
               (unsigned long long) st.dropped,
               (unsigned long long) st.filtered,
               s_result(rc));
    if (rc)
        fprintf(stderr, "add_data_demo: finalize: %s\n", telem_strerror(rc));
    return rc == 0 ? 0 : 2;
}
