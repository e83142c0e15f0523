/* test_section.c - sections (telem.h: telem_section_begin/end, steps,
 * rank) from the application's side, through libtelem into a real telemd
 * actor running in this process.
 *
 * Scenarios:
 *   rank          the rank comes from the first of TELEM_RANK,
 *                 SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK that
 *                 holds a non-negative integer, "0" when none does (this
 *                 program run again with each environment: the rank is
 *                 read once per process).
 *   invalid       NULL, empty and over-long names; end of NULL, of a
 *                 zeroed, an ended (twice) and a forged handle; negative
 *                 steps: TELEM_EINVAL, counted in telem_stats().invalid,
 *                 nothing queued, no crash; TELEM_LEVEL=0 gives 1 and
 *                 still advances the step; after finalize TELEM_ESTATE.
 *   recorded      ends land in telemd as telem_section_seconds and
 *                 telem_section_step with tags section, rank, host and pid,
 *                 pairwise at the same timestamps, steps from an explicit
 *                 start counting up, durations at least the time the
 *                 region was measured to take here and at most the time
 *                 around it.
 *   many names    300 names (more than the per-thread cache's 64 slots),
 *                 interleaved, each with its own steps.
 *   threads       four threads end one name concurrently: every recorded
 *                 step is distinct and as many as the ends accepted.
 *   reused text   one buffer holding "alpha", then "beta", then "al"
 *                 (the thread's last-name cache keys on the pointer): each
 *                 end lands under the text the buffer held at its begin.
 *   counter clock once 50 ms of sections have passed, begin and end read
 *                 the CPU's time-stamp counter where the kernel keeps time
 *                 with it (clock source "tsc", x86-64; expected from that
 *                 file, not from the library): the same duration bounds,
 *                 and realtime stamps within 1 ms of the clock read around
 *                 each end.
 *   table full    names past TELEM_SECTION_NAMES give TELEM_EFULL; the
 *                 known ones keep working.
 */
#include "tmpdir.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ac.h"
#include "check.h"
#include "telem.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_tick.h"
#include "telem_time.h"
#include "telemd_actor.h"

#define S_THREADS 4
#define S_THREAD_ENDS 2000
#define S_NAMES 300

static const char *const s_rank_vars[] = { "TELEM_RANK", "SLURM_PROCID",
                                           "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                           "RANK" };
#define S_NRANK_VARS (sizeof s_rank_vars / sizeof s_rank_vars[0])

static void
s_env(const char *rundir, const char *node)
{
    setenv("TELEM_RUNDIR", rundir, 1);
    setenv("TELEM_NODE", node, 1);
    setenv("TELEM_FINALIZE_MS", "20000", 1);
    unsetenv("TELEM_INGEST");
    unsetenv("TELEM_CTL");
    unsetenv("TELEM_LEVEL");
}

/* ---- rank from the environment --------------------------------------- */

/* Runs this program with `--rank` and the given assignments (NULL-ended,
 * "VAR=value"), every rank variable removed first; returns its output. */
static void
s_rank_of(char *out, size_t size, const char *const *assign)
{
    char cmd[1024];
    size_t n = (size_t) snprintf(cmd, sizeof cmd, "env");
    for (size_t i = 0; i < S_NRANK_VARS; i++)
        n += (size_t) snprintf(cmd + n, sizeof cmd - n, " -u %s",
                               s_rank_vars[i]);
    for (size_t i = 0; assign[i]; i++)
        n += (size_t) snprintf(cmd + n, sizeof cmd - n, " '%s'", assign[i]);
    snprintf(cmd + n, sizeof cmd - n, " /proc/%ld/exe --rank",
             (long) getpid());
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    REQUIRE(p);
    if (!fgets(out, (int) size, p))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    pclose(p);
}

static void
s_test_rank(void)
{
    static const struct {
        const char *assign[6];
        const char *rank;
    } cases[] = {
        { { NULL }, "0" },
        { { "RANK=7", NULL }, "7" },
        { { "RANK=7", "PMI_RANK=6", NULL }, "6" },
        { { "PMI_RANK=6", "OMPI_COMM_WORLD_RANK=5", NULL }, "5" },
        { { "OMPI_COMM_WORLD_RANK=5", "SLURM_PROCID=4", NULL }, "4" },
        { { "SLURM_PROCID=4", "TELEM_RANK=3", "RANK=9", NULL }, "3" },
        /* not a non-negative integer: the next variable wins */
        { { "TELEM_RANK=", "SLURM_PROCID=2", NULL }, "2" },
        { { "TELEM_RANK=-1", "RANK=8", NULL }, "8" },
        { { "TELEM_RANK=3x", NULL }, "0" },
        { { "TELEM_RANK=1234567890123456789012", "RANK=1", NULL }, "1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[64];
        s_rank_of(got, sizeof got, cases[i].assign);
        CHECK_STR(got, cases[i].rank);
    }
}

/* ---- invalid input, level, finalize ---------------------------------- */

static void
s_test_invalid(void)
{
    REQUIRE(telem_init() == 0);
    char longname[TELEM_NAME_MAX + 2];
    memset(longname, 's', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    telem_section_t h = telem_section_begin(NULL);
    CHECK_RC(telem_section_end(&h), TELEM_EINVAL);
    h = telem_section_begin("");
    CHECK_RC(telem_section_end(&h), TELEM_EINVAL);
    h = telem_section_begin(longname);
    CHECK_RC(telem_section_end(&h), TELEM_EINVAL);
    longname[TELEM_NAME_MAX] = '\0';             /* 255 bytes: a name */
    h = telem_section_begin(longname);
    CHECK_RC(telem_section_end(&h), 0);
    CHECK_RC(telem_section_end(&h), TELEM_EINVAL);      /* twice */
    CHECK_RC(telem_section_end(NULL), TELEM_EINVAL);
    telem_section_t zero;
    memset(&zero, 0, sizeof zero);
    CHECK_RC(telem_section_end(&zero), TELEM_EINVAL);   /* never begun */
    h = telem_section_begin("inv");
    telem_section_t forged = h;
    forged.slot += 1000;                                /* unknown entry */
    CHECK_RC(telem_section_end(&forged), TELEM_EINVAL);
    forged = h;
    forged.state ^= 1;
    CHECK_RC(telem_section_end(&forged), TELEM_EINVAL);
    forged = h;
    forged.t0_ns = INT64_MAX;                 /* in the future on any clock */
    CHECK_RC(telem_section_end(&forged), TELEM_EINVAL);
    CHECK_RC(telem_section_end(&h), 0);
    CHECK_RC(telem_section_set_step("inv", -1), TELEM_EINVAL);
    CHECK_RC(telem_section_set_step(NULL, 1), TELEM_EINVAL);
    CHECK_RC(telem_section_set_step("", 1), TELEM_EINVAL);
    CHECK_RC(telem_section_step(NULL), TELEM_EINVAL);
    CHECK_RC(telem_section_step(""), TELEM_EINVAL);
    CHECK_RC(telem_section_step("never_seen"), 0);
    CHECK_RC(telem_section_step("inv"), 1);
    telem_stats_t st;
    telem_stats(&st);
    CHECK_INT(st.invalid, 3 + 1 + 1 + 1 + 3 + 3 + 2);
    CHECK_INT(st.queued, 4);                            /* two ends */
    CHECK_RC(telem_set_level(0), 0);
    h = telem_section_begin("inv");
    CHECK_RC(telem_section_end(&h), 1);
    CHECK_RC(telem_section_step("inv"), 2);             /* still counted */
    CHECK_RC(telem_set_level(1), 0);
    CHECK_RC(telem_finalize(), TELEM_ECONN);            /* no telemd here */
    h = telem_section_begin("inv");
    CHECK_RC(telem_section_end(&h), TELEM_ESTATE);
}

/* ---- through a real telemd ------------------------------------------- */

static const char *
s_tag(const telem_series_t *s, const char *key)
{
    for (uint32_t k = 0; k < s->ntags; k++)
        if (strcmp(s->tags[k].key, key) == 0)
            return s->tags[k].value;
    return NULL;
}

/* The series of `metric` with section=`name` in r. */
static const telem_series_t *
s_find(const ac_result_t *r, const char *metric, const char *name)
{
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        const char *sec = s_tag(s, "section");
        if (strcmp(s->metric, metric) == 0 && sec && strcmp(sec, name) == 0)
            return s;
    }
    return NULL;
}

static ac_result_t *
s_query(ac_t *ac)
{
    const char *metrics[] = { "telem_section_seconds", "telem_section_step" };
    ac_query_t q = { .metrics = metrics, .nmetrics = 2,
                     .start_ns = -60 * TELEM_NS_PER_SEC };
    ac_result_t *r = NULL;
    REQUIRE(ac_query(ac, &q, &r) == 0);
    return r;
}

/* A region that takes measurable time without sleeping a guessed time. */
static volatile double s_sink;

static void
s_work(int n)
{
    double x = 0;
    for (int i = 0; i < n; i++)
        x += (double) i * 0.5;
    s_sink = x;
}

#define S_ENDS 10

static int64_t s_inner_ns[S_ENDS], s_outer_ns[S_ENDS];

static void
s_record_steps(void)
{
    CHECK_RC(telem_section_set_step("fwd", 100), 0);
    CHECK_RC(telem_section_step("fwd"), 100);
    for (int i = 0; i < S_ENDS; i++) {
        int64_t a = telem_mono_ns();
        telem_section_t h = telem_section_begin("fwd");
        int64_t b = telem_mono_ns();
        s_work(20000 * (i + 1));
        int64_t c = telem_mono_ns();
        CHECK_RC(telem_section_end(&h), 0);
        int64_t d = telem_mono_ns();
        s_inner_ns[i] = c - b;
        s_outer_ns[i] = d - a;
    }
    CHECK_RC(telem_section_step("fwd"), 100 + S_ENDS);
}

static void
s_check_steps(const ac_result_t *r)
{
    const telem_series_t *sec = s_find(r, "telem_section_seconds", "fwd");
    const telem_series_t *stp = s_find(r, "telem_section_step", "fwd");
    REQUIRE(sec && stp);
    CHECK_INT(sec->npoints, S_ENDS);
    CHECK_INT(stp->npoints, S_ENDS);
    CHECK_STR(s_tag(sec, "rank"), "5");
    CHECK_STR(s_tag(stp, "rank"), "5");
    CHECK_STR(s_tag(sec, "host"), "n1");
    char pid[24];
    snprintf(pid, sizeof pid, "%ld", (long) getpid());
    CHECK_STR(s_tag(sec, "pid"), pid);
    for (uint32_t i = 0; i < S_ENDS && i < sec->npoints && i < stp->npoints;
         i++) {
        CHECK_INT(sec->ts[i], stp->ts[i]);
        CHECK_EQ(stp->values[i], 100.0 + i);
        double lo = (double) s_inner_ns[i] / 1e9;
        double hi = (double) s_outer_ns[i] / 1e9;
        CHECK(sec->values[i] >= lo && sec->values[i] <= hi);
    }
}

/* ---- the counter clock ------------------------------------------------ */

#define S_TICK_WARM_NS (60 * TELEM_NS_PER_MS)

static int64_t s_tick_inner[S_ENDS], s_tick_outer[S_ENDS];
static int64_t s_tick_before[S_ENDS], s_tick_after[S_ENDS];

/* Whether this machine's kernel keeps time with the counter. */
static int
s_expect_ticks(void)
{
#if defined(__x86_64__)
    const char *env = getenv("TELEM_SECTION_CLOCK");
    if (env && strcmp(env, "monotonic") == 0)
        return 0;
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
                    "current_clocksource", "r");
    char src[32] = "";
    if (f) {
        if (!fgets(src, sizeof src, f))
            src[0] = '\0';
        fclose(f);
    }
    return strcmp(src, "tsc\n") == 0;
#else
    return 0;
#endif
}

static void
s_record_ticks(void)
{
    /* Sections for 60 ms: the first rate comes 50 ms after the first
     * section of the process (which s_record_steps() made). */
    int64_t t0 = telem_mono_ns();
    while (telem_mono_ns() - t0 < S_TICK_WARM_NS) {
        telem_section_t h = telem_section_begin("tick_warm");
        CHECK_RC(telem_section_end(&h), 0);
        s_work(10000);
    }
    int want = s_expect_ticks();
    CHECK_INT(tick_ready(), want);
    if (!want)
        printf("test_section: the counter clock is not used here (clock "
               "source not tsc, or not x86-64): sections read "
               "CLOCK_MONOTONIC\n");
    for (int i = 0; i < S_ENDS; i++) {
        s_tick_before[i] = telem_now_ns();
        int64_t a = telem_mono_ns();
        telem_section_t h = telem_section_begin("tick");
        int64_t b = telem_mono_ns();
        s_work(20000 * (i + 1));
        int64_t c = telem_mono_ns();
        CHECK_RC(telem_section_end(&h), 0);
        int64_t d = telem_mono_ns();
        s_tick_after[i] = telem_now_ns();
        s_tick_inner[i] = c - b;
        s_tick_outer[i] = d - a;
    }
}

static void
s_check_ticks(const ac_result_t *r)
{
    const telem_series_t *sec = s_find(r, "telem_section_seconds", "tick");
    REQUIRE(sec);
    CHECK_INT(sec->npoints, S_ENDS);
    for (uint32_t i = 0; i < S_ENDS && i < sec->npoints; i++) {
        CHECK(sec->values[i] >= (double) s_tick_inner[i] / 1e9);
        CHECK(sec->values[i] <= (double) s_tick_outer[i] / 1e9);
        CHECK(sec->ts[i] >= s_tick_before[i] - TELEM_NS_PER_MS);
        CHECK(sec->ts[i] <= s_tick_after[i] + TELEM_NS_PER_MS);
    }
}

/* ---- one buffer, several texts ---------------------------------------- */

static void
s_record_reused(void)
{
    char buf[16];
    static const char *const texts[] = { "alpha", "beta", "al" };
    for (int k = 0; k < 3; k++) {
        snprintf(buf, sizeof buf, "%s", texts[k]);
        for (int i = 0; i <= k; i++) {
            telem_section_t h = telem_section_begin(buf);
            CHECK_RC(telem_section_end(&h), 0);
        }
    }
}

static void
s_check_reused(const ac_result_t *r)
{
    static const char *const texts[] = { "alpha", "beta", "al" };
    for (uint32_t k = 0; k < 3; k++) {
        const telem_series_t *s = s_find(r, "telem_section_step", texts[k]);
        CHECK(s && s->npoints == k + 1);
    }
}

static void
s_record_many(void)
{
    char name[32];
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < S_NAMES; k++) {
            snprintf(name, sizeof name, "many_%d", k);
            telem_section_t h = telem_section_begin(name);
            CHECK_RC(telem_section_end(&h), 0);
        }
}

static void
s_check_many(const ac_result_t *r)
{
    char name[32];
    int good = 0;
    for (int k = 0; k < S_NAMES; k++) {
        snprintf(name, sizeof name, "many_%d", k);
        const telem_series_t *s = s_find(r, "telem_section_step", name);
        good += s && s->npoints == 2 && s->values[0] == 0
                && s->values[1] == 1;
    }
    CHECK_INT(good, S_NAMES);
}

static int s_accepted[S_THREADS];

static void *
s_ender(void *arg)
{
    long t = (long) (intptr_t) arg;
    int bad = 0;
    for (int i = 0; i < S_THREAD_ENDS; i++) {
        telem_section_t h = telem_section_begin("mt");
        int rc = telem_section_end(&h);
        s_accepted[t] += rc == 0;
        bad += rc != 0 && rc != TELEM_EFULL;
    }
    return (void *) (intptr_t) bad;
}

static void
s_record_threads(void)
{
    pthread_t th[S_THREADS];
    for (long t = 0; t < S_THREADS; t++)
        REQUIRE(pthread_create(&th[t], NULL, s_ender, (void *) (intptr_t) t)
                == 0);
    int bad = 0;
    for (int t = 0; t < S_THREADS; t++) {
        void *ret;
        pthread_join(th[t], &ret);
        bad += (int) (intptr_t) ret;
    }
    CHECK_INT(bad, 0);
    CHECK_RC(telem_section_step("mt"), S_THREADS * S_THREAD_ENDS);
}

static void
s_check_threads(const ac_result_t *r)
{
    const telem_series_t *stp = s_find(r, "telem_section_step", "mt");
    const telem_series_t *sec = s_find(r, "telem_section_seconds", "mt");
    REQUIRE(stp && sec);
    int accepted = 0;
    for (int t = 0; t < S_THREADS; t++)
        accepted += s_accepted[t];
    CHECK_INT(stp->npoints, accepted);
    CHECK_INT(sec->npoints, accepted);
    static unsigned char seen[S_THREADS * S_THREAD_ENDS];
    int dup = 0, out = 0;
    for (uint32_t i = 0; i < stp->npoints; i++) {
        double v = stp->values[i];
        if (v < 0 || v >= S_THREADS * S_THREAD_ENDS) {
            out++;
            continue;
        }
        dup += seen[(int) v]++ != 0;
    }
    CHECK_INT(dup, 0);
    CHECK_INT(out, 0);
}

static void
s_test_recorded(ac_t *ac)
{
    REQUIRE(telem_init() == 0);
    CHECK_STR(telem_section_rank(), "5");
    s_record_steps();
    s_record_ticks();
    s_record_reused();
    s_record_many();
    s_record_threads();
    CHECK_RC(telem_flush(20000), 0);
    ac_result_t *r = s_query(ac);
    s_check_steps(r);
    s_check_ticks(r);
    s_check_reused(r);
    s_check_many(r);
    s_check_threads(r);
    ac_result_destroy(&r);
    telem_stats_t st;
    telem_stats(&st);
    CHECK_INT(st.invalid, 0);
}

/* Fills the name table: the names past its size give TELEM_EFULL. */
static void
s_test_full(void)
{
    char name[32];
    int full = 0, ok = 0;
    for (int k = 0; k < TELEM_SECTION_NAMES + 10; k++) {
        snprintf(name, sizeof name, "fill_%d", k);
        telem_section_t h = telem_section_begin(name);
        int rc = telem_section_end(&h);
        full += rc == TELEM_EFULL;
        ok += rc == 0;
    }
    CHECK(full >= 10);
    CHECK_INT(ok + full, TELEM_SECTION_NAMES + 10);
    CHECK_RC(telem_section_set_step("fill_new_name", 1), TELEM_EFULL);
    telem_section_t h = telem_section_begin("fwd");       /* known: works */
    CHECK_RC(telem_section_end(&h), 0);
    CHECK_RC(telem_finalize(), 0);
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--rank") == 0) {
        printf("%s\n", telem_section_rank());
        return 0;
    }
    telem_log_init("test_section", TELEM_LOG_ERROR);
    s_test_rank();
    char dir[TELEM_PATH_MAX];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_section") == 0);
    for (size_t i = 0; i < S_NRANK_VARS; i++)
        unsetenv(s_rank_vars[i]);
    setenv("SLURM_PROCID", "5", 1);     /* read at the first section call */
    s_env(dir, "nosection");
    s_test_invalid();

    s_env(dir, "n1");
    telemd_config_t cfg = { .node = "n1", .rundir = dir, .level = 1,
                            .window_ns = 300 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    int err = 0;
    telemd_t *d = telemd_new(&cfg, &err);
    REQUIRE(d);
    const char *name = "n1", *ep = telemd_ctl_endpoint(d);
    ac_t *ac = ac_connect_nodes(&name, &ep, 1, 10000, &err);
    REQUIRE(ac);
    s_test_recorded(ac);
    s_test_full();
    ac_close(&ac);
    telemd_destroy(&d);
    test_rmtree(dir);
    return check_report("test_section");
}
