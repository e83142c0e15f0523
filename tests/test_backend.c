/* test_backend.c - unit tests for the device backends and the collector's
 * round loop.
 *
 * cpu: discovery matches the affinity mask, $TELEM_CPU_DEVICES restricts
 * and is validated, bind pins the calling thread to exactly its core, the
 * DGEMM kernel returns positive finite seconds, the load keeps the core
 * busy for the time asked.  cuda: a missing library is skipped cleanly with
 * a reason; where a GPU is present its kernel is run too.  The round loop:
 * runs the asked number of rounds, stamps samples epoch + k * period, takes
 * the median and MAD of the repetitions, honours a stop descriptor and
 * refuses bad configurations.  No assertion depends on timing beyond
 * "a busy load lasts at least as long as asked".
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telem.h"
#include "telem_backend.h"
#include "telem_collector.h"
#include "telem_error.h"
#include "telem_time.h"

static void
test_list_parse(void)
{
    long v[8];
    size_t n;
    CHECK(telem_backend_device_list_parse("0,2-3", 100, v, 8, &n) == 0);
    CHECK(n == 3 && v[0] == 0 && v[1] == 2 && v[2] == 3);
    CHECK(telem_backend_device_list_parse("7", 100, v, 8, &n) == 0 && n == 1
          && v[0] == 7);
    CHECK(telem_backend_device_list_parse("3-1", 100, v, 8,
                                          &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse("", 100, v, 8, &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse(NULL, 100, v, 8, &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse("1,1", 100, v, 8,
                                          &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse("1,", 100, v, 8, &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse("a", 100, v, 8, &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse("-1", 100, v, 8, &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse("101", 100, v, 8,
                                          &n) == TELEM_EINVAL);
    CHECK(telem_backend_device_list_parse("0-9", 100, v, 8,
                                          &n) == TELEM_ETOOBIG);
}

static void
test_registry(void)
{
    char why[256];
    int err = 0;
    CHECK(telem_backend_find("cpu") == &telem_backend_cpu);
    CHECK(telem_backend_find("cuda") == &telem_backend_cuda);
    CHECK(telem_backend_find("tpu") == NULL);
    CHECK(telem_backend_at(0) && telem_backend_at(1) && !telem_backend_at(2));
    CHECK(telem_backend_has_kernel(&telem_backend_cpu, "dgemm"));
    CHECK(!telem_backend_has_kernel(&telem_backend_cpu, "fma"));
    CHECK(telem_backend_open("tpu", why, sizeof why, &err) == NULL);
    CHECK(err == TELEM_ENOTFOUND && strstr(why, "tpu"));
}

static void
test_cpu_discovery(void)
{
    cpu_set_t allowed;
    char why[256];
    int err = 0;
    CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    telem_backend_t *b = telem_backend_open("cpu", why, sizeof why, &err);
    CHECK(b && err == 0);
    if (!b)
        return;
    CHECK(telem_backend_ndevices(b) == (size_t) CPU_COUNT(&allowed));
    int prev = -1;
    for (size_t i = 0; i < telem_backend_ndevices(b); i++) {
        int core = atoi(telem_backend_device(b, i)->id);
        CHECK(CPU_ISSET(core, &allowed) && core > prev);
        CHECK(*telem_backend_device(b, i)->name);
        prev = core;
    }
    CHECK(telem_backend_device(b, telem_backend_ndevices(b)) == NULL);
    telem_backend_close(&b);
    CHECK(b == NULL);
    telem_backend_close(&b);
}

static void
test_cpu_env(void)
{
    cpu_set_t allowed;
    char why[256], list[32];
    int err = 0, last = -1;
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            last = c;
    snprintf(list, sizeof list, "%d", last);
    setenv("TELEM_CPU_DEVICES", list, 1);
    telem_backend_t *b = telem_backend_open("cpu", why, sizeof why, &err);
    CHECK(b && telem_backend_ndevices(b) == 1);
    CHECK(b && atoi(telem_backend_device(b, 0)->id) == last);
    telem_backend_close(&b);
    static const char *const bad[] = { "x", "0,0", "2-1", "5000" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TELEM_CPU_DEVICES", bad[i], 1);
        b = telem_backend_open("cpu", why, sizeof why, &err);
        CHECK(b == NULL && err == TELEM_EINVAL && *why);
    }
    unsetenv("TELEM_CPU_DEVICES");
}

typedef struct {
    telem_backend_t *b;
    size_t dev;
    int rc;
    cpu_set_t after;
} bind_arg_t;

static void *
s_bind_thread(void *p)
{
    bind_arg_t *a = p;
    a->rc = telem_backend_bind(a->b, a->dev, NULL, 0);
    sched_getaffinity(0, sizeof a->after, &a->after);
    return NULL;
}

static void
test_cpu_bind(void)
{
    int err;
    telem_backend_t *b = telem_backend_open("cpu", NULL, 0, &err);
    CHECK(b != NULL);
    if (!b)
        return;
    for (size_t d = 0; d < telem_backend_ndevices(b) && d < 4; d++) {
        bind_arg_t a = { .b = b, .dev = d };
        pthread_t t;
        CHECK(pthread_create(&t, NULL, s_bind_thread, &a) == 0);
        pthread_join(t, NULL);
        CHECK(a.rc == 0);
        CHECK(CPU_COUNT(&a.after) == 1);
        CHECK(CPU_ISSET(atoi(telem_backend_device(b, d)->id), &a.after));
    }
    char why[128];
    CHECK(telem_backend_bind(b, telem_backend_ndevices(b), why, sizeof why)
          == TELEM_EINVAL);
    telem_backend_close(&b);
}

static void
test_cpu_kernel_and_load(void)
{
    int err;
    char why[256];
    telem_backend_t *b = telem_backend_open("cpu", NULL, 0, &err);
    CHECK(b != NULL);
    if (!b)
        return;
    telem_backend_kernel_t *k = telem_backend_kernel_new(b, 0, NULL, why,
                                                         sizeof why, &err);
    CHECK(k && err == 0);
    for (int i = 0; k && i < 3; i++) {
        double s = -1;
        CHECK(telem_backend_kernel_run(k, &s) == 0);
        CHECK(isfinite(s) && s > 0 && s < 10);
    }
    telem_backend_kernel_destroy(&k);
    CHECK(k == NULL);
    CHECK(!telem_backend_kernel_new(b, 0, "fma", why, sizeof why, &err)
          && err == TELEM_ENOTFOUND && strstr(why, "dgemm"));
    CHECK(!telem_backend_kernel_new(b, telem_backend_ndevices(b), "dgemm", why,
                                    sizeof why, &err) && err == TELEM_EINVAL);
    telem_backend_load_t *l = telem_backend_load_new(b, 0, why, sizeof why,
                                                     &err);
    CHECK(l != NULL);
    int64_t t0 = telem_mono_ns();
    CHECK(l && telem_backend_load_run(l, 2 * TELEM_NS_PER_MS) == 0);
    CHECK(telem_mono_ns() - t0 >= 2 * TELEM_NS_PER_MS);
    CHECK(l && telem_backend_load_run(l, 0) == TELEM_EINVAL);
    telem_backend_load_destroy(&l);
    telem_backend_close(&b);
}

static void
test_cuda(void)
{
    char why[256] = "";
    int err = 0;
    setenv("TELEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    telem_backend_t *b = telem_backend_open("cuda", why, sizeof why, &err);
    CHECK(b == NULL && err == TELEM_EUNSUPPORTED);
    CHECK(strstr(why, "/nonexistent/libcuda.so.1") != NULL);
    unsetenv("TELEM_CUDA_LIBRARY");
    b = telem_backend_open("cuda", why, sizeof why, &err);
    if (!b) {
        CHECK(err == TELEM_EUNSUPPORTED && *why);
        printf("cuda backend skipped: %s\n", why);
        return;
    }
    /* A GPU is here: its kernel must give real figures. */
    printf("cuda backend: %zu device(s), %s\n", telem_backend_ndevices(b),
           telem_backend_device(b, 0)->name);
    CHECK(telem_backend_bind(b, 0, why, sizeof why) == 0);
    telem_backend_kernel_t *k = telem_backend_kernel_new(b, 0, "fma", why,
                                                         sizeof why, &err);
    CHECK(k != NULL);
    for (int i = 0; k && i < 3; i++) {
        double s = -1;
        CHECK(telem_backend_kernel_run(k, &s) == 0 && isfinite(s) && s > 0);
    }
    telem_backend_kernel_destroy(&k);
    telem_backend_close(&b);
}

/* ---- the round loop ---------------------------------------------------- */

typedef struct {
    int calls;
    int device;
} fn_arg_t;

/* Figures cycle 1, 2, 9 (x 1 ms): median 2 ms, MAD 1 ms per round. */
static int
s_test_fn(void *p, int device, double *figure)
{
    fn_arg_t *a = p;
    static const double seq[] = { 1e-3, 2e-3, 9e-3 };
    a->device = device;
    *figure = seq[a->calls++ % 3];
    return 0;
}

static telem_collector_config_t
s_config(fn_arg_t *arg)
{
    return (telem_collector_config_t) {
        .backend = "cpu", .metric = "unit_test_figure", .fn = s_test_fn,
        .fn_arg = arg, .device = -1, .pin = -1,
        .period_ns = 20 * TELEM_NS_PER_MS, .reps = 3, .group = "unit",
        .rounds = 4, .stop_fd = -1,
    };
}

static void
test_loop_rounds(void)
{
    fn_arg_t arg = { 0, 0 };
    telem_collector_config_t c = s_config(&arg);
    telem_collector_stats_t st;
    char why[256];
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == 0);
    CHECK(st.rounds == 4 && st.failed == 0);
    CHECK(arg.calls == 12 && arg.device == -1);
    CHECK(st.epoch_ns > 0 && st.epoch_ns % c.period_ns == 0);
    CHECK(st.last_ts_ns > st.epoch_ns);
    CHECK((st.last_ts_ns - st.epoch_ns) % c.period_ns == 0);
    CHECK(fabs(st.last_median - 2e-3) < 1e-12);
    CHECK(fabs(st.last_spread - 1e-3) < 1e-12);

    /* An explicit epoch in the past: timestamps stay on its grid. */
    arg.calls = 0;
    c.epoch_ns = 1000000007;
    c.phase_ns = 5 * TELEM_NS_PER_MS;
    c.rounds = 2;
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == 0);
    CHECK(st.rounds == 2 && st.epoch_ns == 1000000007);
    CHECK((st.last_ts_ns - c.epoch_ns) % c.period_ns == 0);
}

static void
test_loop_stop_and_errors(void)
{
    fn_arg_t arg = { 0, 0 };
    telem_collector_config_t c = s_config(&arg);
    telem_collector_stats_t st;
    char why[256];
    int fds[2];
    CHECK(pipe(fds) == 0);
    CHECK(write(fds[1], "x", 1) == 1);
    c.stop_fd = fds[0];
    c.rounds = 0;
    c.period_ns = 3600 * TELEM_NS_PER_SEC;    /* would wait an hour */
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == 0);
    CHECK(st.rounds == 0 && arg.calls == 0);
    close(fds[0]);
    close(fds[1]);

    c = s_config(&arg);
    c.reps = 0;
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == TELEM_EINVAL);
    c = s_config(&arg);
    c.phase_ns = c.period_ns;
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == TELEM_EINVAL);
    c = s_config(&arg);
    c.metric = NULL;
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == TELEM_EINVAL);
    c = s_config(&arg);
    c.fn = NULL;
    c.kernel = "nope";
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == TELEM_ENOTFOUND);
    c = s_config(&arg);
    c.backend = "tpu";
    CHECK(telem_collector_run(&c, &st, why, sizeof why) == TELEM_ENOTFOUND);
    char metric[300];
    CHECK(telem_collector_metric(metric, sizeof metric, "dgemm") == 0);
    CHECK(strcmp(metric, "cg_dgemm_seconds") == 0);
}

int
main(void)
{
    /* No telemd: the collector's samples are dropped and counted. */
    char rundir[] = "/tmp/test_backend.XXXXXX";
    if (!mkdtemp(rundir))
        return 1;
    setenv("TELEM_RUNDIR", rundir, 1);
    setenv("TELEM_NODE", "unit", 1);
    setenv("TELEM_FINALIZE_MS", "200", 1);
    unsetenv("TELEM_CPU_DEVICES");
    test_list_parse();
    test_registry();
    test_cpu_discovery();
    test_cpu_env();
    test_cpu_bind();
    test_cpu_kernel_and_load();
    test_cuda();
    test_loop_rounds();
    test_loop_stop_and_errors();
    telem_finalize();
    rmdir(rundir);
    return check_report("test_backend");
}
