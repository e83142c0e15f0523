/* test_section_gpu.c - a section's device time (telem.h:
 * telem_section_begin_gpu) through libtelem into a real telemd actor in
 * this process, with the test-only CUDA driver (tests/cuda_test) as the
 * process's driver.
 *
 * Scenarios:
 *   no driver     (this program run again without $TELEM_CUDA_LIBRARY, no
 *                 libcuda loaded): GPU sections are plain sections, counted
 *                 unavailable; the CPU samples are recorded.
 *   later, never waited for
 *                 the driver's events answer "not ready" twice after each
 *                 record: right after three GPU sections their device
 *                 times are not all recorded; flushes (which query, never
 *                 synchronize: the test driver aborts on any synchronizing
 *                 call) bring them in; each is the device clock's 5 ms, at
 *                 the timestamp of its section's telem_section_seconds.
 *   no context    no current context: a plain section, counted.
 *   failed record every event record fails: the CPU part is recorded,
 *                 the device part dropped and counted.
 *   other context the context changes: the pair's events are made again
 *                 in it and the device time is recorded.
 *   full          events that never complete: 256 pairs wait, the 257th
 *                 section has no device part (counted full), its CPU part
 *                 is recorded; finalize drops the 256 (counted failed).
 *   a plain section never touches the driver (no pair taken).
 */
#include "tmpdir.h"

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
#include "telem_time.h"
#include "telemd_actor.h"

#ifndef CUDA_TEST_LIB
#error "CUDA_TEST_LIB: the path of the test-only CUDA driver"
#endif

static const telem_series_t *
s_find(const ac_result_t *r, const char *metric, const char *section)
{
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        for (uint32_t k = 0; k < s->ntags; k++)
            if (strcmp(s->metric, metric) == 0
                && strcmp(s->tags[k].key, "section") == 0
                && strcmp(s->tags[k].value, section) == 0)
                return s;
    }
    return NULL;
}

static ac_result_t *
s_query(ac_t *ac)
{
    const char *metrics[] = { "telem_section_seconds",
                              "telem_section_gpu_seconds" };
    ac_query_t q = { .metrics = metrics, .nmetrics = 2,
                     .start_ns = -60 * TELEM_NS_PER_SEC };
    ac_result_t *r = NULL;
    REQUIRE(ac_query(ac, &q, &r) == 0);
    return r;
}

/* The number of points of metric for section, 0 when there is none. */
static uint32_t
s_points(const ac_result_t *r, const char *metric, const char *section)
{
    const telem_series_t *s = s_find(r, metric, section);
    return s ? s->npoints : 0;
}

static void
s_sections(const char *name, int n)
{
    for (int i = 0; i < n; i++) {
        telem_section_t h = telem_section_begin_gpu(name, NULL);
        CHECK_RC(telem_section_end(&h), 0);
    }
}

/* Run without a driver: prints "unavailable recorded". */
static int
s_no_driver(void)
{
    unsetenv("TELEM_CUDA_LIBRARY");
    s_sections("nolib", 2);
    telem_section_gpu_stats_t st;
    telem_section_gpu_stats(&st);
    printf("%llu %llu %llu\n", (unsigned long long) st.unavailable,
           (unsigned long long) st.recorded, (unsigned long long) st.pending);
    telem_finalize();
    return 0;
}

static void
s_test_no_driver(void)
{
    char cmd[256], out[128] = "";
    snprintf(cmd, sizeof cmd, "env -u TELEM_CUDA_LIBRARY /proc/%ld/exe "
             "--no-driver", (long) getpid());
    FILE *p = popen(cmd, "r");
    REQUIRE(p);
    if (!fgets(out, sizeof out, p))
        out[0] = '\0';
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
    CHECK_STR(out, "2 0 0");
}

static void
s_stats(telem_section_gpu_stats_t *st)
{
    telem_section_gpu_stats(st);
}

static void
s_test_later(ac_t *ac)
{
    setenv("TELEM_CUDA_TEST_NOT_READY", "2", 1);
    s_sections("later", 3);
    telem_section_gpu_stats_t st;
    s_stats(&st);
    CHECK(st.recorded < 3);
    CHECK_INT(st.recorded + st.pending, 3);
    for (int i = 0; i < 10 && st.pending; i++) {
        CHECK_RC(telem_flush(20000), 0);
        s_stats(&st);
    }
    CHECK_INT(st.pending, 0);
    CHECK_INT(st.recorded, 3);
    CHECK_RC(telem_flush(20000), 0);
    ac_result_t *r = s_query(ac);
    const telem_series_t *g = s_find(r, "telem_section_gpu_seconds", "later");
    const telem_series_t *c = s_find(r, "telem_section_seconds", "later");
    REQUIRE(g && c);
    CHECK_INT(g->npoints, 3);
    CHECK_INT(c->npoints, 3);
    for (uint32_t i = 0; i < g->npoints && i < c->npoints; i++) {
        CHECK(g->values[i] > 0.0049 && g->values[i] < 0.0051);
        CHECK_INT(g->ts[i], c->ts[i]);
    }
    int rank = 0;
    for (uint32_t k = 0; k < g->ntags; k++)
        rank += strcmp(g->tags[k].key, "rank") == 0
                && strcmp(g->tags[k].value, "2") == 0;
    CHECK_INT(rank, 1);
    ac_result_destroy(&r);
    unsetenv("TELEM_CUDA_TEST_NOT_READY");
}

static void
s_test_refused(ac_t *ac)
{
    telem_section_gpu_stats_t a, b;
    s_stats(&a);
    setenv("TELEM_CUDA_TEST_CTX", "0", 1);
    s_sections("noctx", 2);
    unsetenv("TELEM_CUDA_TEST_CTX");
    setenv("TELEM_CUDA_TEST_FAIL", "1", 1);
    s_sections("failed", 2);
    unsetenv("TELEM_CUDA_TEST_FAIL");
    setenv("TELEM_CUDA_TEST_CTX", "2", 1);
    s_sections("otherctx", 2);
    unsetenv("TELEM_CUDA_TEST_CTX");
    for (int i = 0; i < 4; i++) {        /* a plain section: no pair */
        telem_section_t h = telem_section_begin("plain");
        CHECK_INT(h.gpu, 0);
        CHECK_RC(telem_section_end(&h), 0);
    }
    CHECK_RC(telem_flush(20000), 0);
    s_stats(&b);
    CHECK_INT(b.unavailable - a.unavailable, 2);
    CHECK_INT(b.failed - a.failed, 2);
    CHECK_INT(b.recorded - a.recorded, 2);
    CHECK_INT(b.pending, 0);
    ac_result_t *r = s_query(ac);
    CHECK_INT(s_points(r, "telem_section_seconds", "noctx"), 2);
    CHECK_INT(s_points(r, "telem_section_gpu_seconds", "noctx"), 0);
    CHECK_INT(s_points(r, "telem_section_seconds", "failed"), 2);
    CHECK_INT(s_points(r, "telem_section_gpu_seconds", "failed"), 0);
    CHECK_INT(s_points(r, "telem_section_gpu_seconds", "otherctx"), 2);
    CHECK_INT(s_points(r, "telem_section_seconds", "plain"), 4);
    CHECK_INT(s_points(r, "telem_section_gpu_seconds", "plain"), 0);
    ac_result_destroy(&r);
}

static void
s_test_full(ac_t *ac)
{
    telem_section_gpu_stats_t a, b;
    s_stats(&a);
    setenv("TELEM_CUDA_TEST_NOT_READY", "1000000000", 1);
    s_sections("full", TELEM_SECTION_GPU_PENDING + 1);
    s_stats(&b);
    CHECK_INT(b.pending, TELEM_SECTION_GPU_PENDING);
    CHECK_INT(b.full - a.full, 1);
    CHECK_RC(telem_flush(20000), 0);
    ac_result_t *r = s_query(ac);
    CHECK_INT(s_points(r, "telem_section_seconds", "full"),
              TELEM_SECTION_GPU_PENDING + 1);
    CHECK_INT(s_points(r, "telem_section_gpu_seconds", "full"), 0);
    ac_result_destroy(&r);
    CHECK_RC(telem_finalize(), 0);
    s_stats(&b);
    CHECK_INT(b.pending, 0);
    CHECK_INT(b.failed - a.failed, TELEM_SECTION_GPU_PENDING);
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--no-driver") == 0)
        return s_no_driver();
    telem_log_init("test_section_gpu", TELEM_LOG_ERROR);
    char dir[TELEM_PATH_MAX];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_section_gpu") == 0);
    setenv("TELEM_RUNDIR", dir, 1);
    setenv("TELEM_NODE", "n1", 1);
    setenv("TELEM_FINALIZE_MS", "20000", 1);
    setenv("TELEM_RANK", "2", 1);
    unsetenv("TELEM_INGEST");
    unsetenv("TELEM_CTL");
    unsetenv("TELEM_LEVEL");
    telemd_config_t cfg = { .node = "n1", .rundir = dir, .level = 1,
                            .window_ns = 300 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    int err = 0;
    telemd_t *d = telemd_new(&cfg, &err);
    REQUIRE(d);
    s_test_no_driver();
    setenv("TELEM_CUDA_LIBRARY", CUDA_TEST_LIB, 1);
    const char *name = "n1", *ep = telemd_ctl_endpoint(d);
    ac_t *ac = ac_connect_nodes(&name, &ep, 1, 10000, &err);
    REQUIRE(ac);
    REQUIRE(telem_init() == 0);
    s_test_later(ac);
    s_test_refused(ac);
    s_test_full(ac);
    ac_close(&ac);
    telemd_destroy(&d);
    test_rmtree(dir);
    return check_report("test_section_gpu");
}
