/* test_sampler_nvml.c - the nvml sampler and the snapshot's GPUs against
 * the test-only NVML (tests/nvml_test, scripted by TELEM_NVML_TEST_SCRIPT).
 *
 * Every field's mapping (units converted, flags split, tags), an error
 * returned by each query (only its own series go), a GPU lost, an old
 * driver's library without some entry points (only their series go, the
 * older names are found), malformed scripts (NVML does not initialise:
 * the sampler is unsupported), XID events delivered while sample() goes
 * on (no sample() waits for the event thread), the snapshot's GPU names,
 * and the cost of one sample() call.
 */
#include "tmpdir.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "telem_sampler.h"
#include "telem_sysinfo.h"
#include "telem_time.h"

typedef struct {
    char key[160];              /* "metric{k=v,k=v}" */
    double value;
} rec_t;

typedef struct {
    rec_t v[4096];
    size_t n;
} recorder_t;

static char s_dir[512];

static const telem_meta_t *
s_meta(const char *metric)
{
    for (const telem_meta_t *m = telem_sampler_nvml.metrics; m->metric; m++)
        if (strcmp(m->metric, metric) == 0)
            return m;
    return NULL;
}

static void
s_record(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    recorder_t *r = arg;
    if (!s_meta(metric)) {
        fprintf(stderr, "metric %s has no meta entry\n", metric);
        s_failures++;
    }
    CHECK(isfinite(value));
    CHECK(ntags >= 1 && ntags <= 2 && strcmp(tags[0].key, "gpu") == 0);
    REQUIRE(r->n < sizeof r->v / sizeof r->v[0]);
    rec_t *e = &r->v[r->n++];
    int len = snprintf(e->key, sizeof e->key, "%s{", metric);
    for (uint32_t i = 0; i < ntags; i++)
        len += snprintf(e->key + len, sizeof e->key - (size_t) len, "%s%s=%s",
                        i ? "," : "", tags[i].key, tags[i].value);
    snprintf(e->key + len, sizeof e->key - (size_t) len, "}");
    e->value = value;
}

/* The value of key ("metric{gpu=0}"), NAN when absent. */
static double
s_val(const recorder_t *r, const char *key)
{
    for (size_t i = r->n; i-- > 0;)
        if (strcmp(r->v[i].key, key) == 0)
            return r->v[i].value;
    return NAN;
}

/* Series whose key starts with prefix. */
static size_t
s_count(const recorder_t *r, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += strncmp(r->v[i].key, prefix, strlen(prefix)) == 0;
    return n;
}

/* Writes a script and points the test library at it. */
static void
s_script(const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/script", s_dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
    setenv("TELEM_NVML_TEST_SCRIPT", path, 1);
}

static void *
s_open(const char *lib, int *rc)
{
    telem_sampler_env_t env = {.node = "n1", .nvml_library = lib};
    return telem_sampler_nvml.open(&env, rc);
}

/* One GPU with every field, as an H100 might answer. */
#define S_FULL0                                                              \
    "gpu 0 name NVIDIA H100 80GB HBM3\n"                                     \
    "gpu 0 uuid GPU-5a1b2c3d-0000-1111-2222-333344445555\n"                  \
    "gpu 0 pci 00000000:18:00.0\n"                                           \
    "gpu 0 vbios 96.00.74.00.0D\n"                                           \
    "gpu 0 inforom G520.0200.00.05\n"                                        \
    "gpu 0 util 87 45\ngpu 0 power_mw 350125\ngpu 0 temp 61\n"               \
    "gpu 0 memory 85899345920 1073741824\n"                                  \
    "gpu 0 clock_sm_mhz 1980\ngpu 0 clock_mem_mhz 2619\n"                    \
    "gpu 0 power_limit_mw 700000\ngpu 0 energy_mj 123456789\n"               \
    "gpu 0 clocks_event 0x24\ngpu 0 ecc 3 1\ngpu 0 retired 2 1 1\n"          \
    "gpu 0 remapped 5 1 0 1\ngpu 0 pcie_replay 7\n"                          \
    "gpu 0 nvlink 0 1 4 5 6 7\ngpu 0 nvlink 3 0 0 0 1 0\n"                   \
    "gpu 0 recovery 4\n"

static void
s_check_full0(const recorder_t *r)
{
    CHECK_EQ(s_val(r, "gpu_utilization{gpu=0}"), 87);
    CHECK_EQ(s_val(r, "gpu_memory_utilization{gpu=0}"), 45);
    CHECK_EQ(s_val(r, "gpu_power_w{gpu=0}"), 350.125);
    CHECK_EQ(s_val(r, "gpu_temperature_c{gpu=0}"), 61);
    CHECK_EQ(s_val(r, "gpu_memory_total_bytes{gpu=0}"), 85899345920.0);
    CHECK_EQ(s_val(r, "gpu_memory_used_bytes{gpu=0}"), 1073741824.0);
    CHECK_EQ(s_val(r, "gpu_sm_clock_hertz{gpu=0}"), 1980e6);
    CHECK_EQ(s_val(r, "gpu_memory_clock_hertz{gpu=0}"), 2619e6);
    CHECK_EQ(s_val(r, "gpu_power_limit_w{gpu=0}"), 700);
    CHECK_EQ(s_val(r, "gpu_energy_joules_total{gpu=0}"), 123456.789);
    CHECK_EQ(s_val(r, "gpu_clocks_event_reasons{gpu=0}"), 0x24);
    CHECK_EQ(s_val(r, "gpu_clocks_event{gpu=0,reason=sw_power_cap}"), 1);
    CHECK_EQ(s_val(r, "gpu_clocks_event{gpu=0,reason=sw_thermal_slowdown}"), 1);
    CHECK_EQ(s_val(r, "gpu_clocks_event{gpu=0,reason=gpu_idle}"), 0);
    CHECK_EQ(s_val(r, "gpu_clocks_event{gpu=0,reason=hw_slowdown}"), 0);
    CHECK_INT(s_count(r, "gpu_clocks_event{gpu=0,"), 9);
    CHECK_EQ(s_val(r, "gpu_ecc_corrected_errors_total{gpu=0}"), 3);
    CHECK_EQ(s_val(r, "gpu_ecc_uncorrected_errors_total{gpu=0}"), 1);
    CHECK_EQ(s_val(r, "gpu_retired_pages_sbe{gpu=0}"), 2);
    CHECK_EQ(s_val(r, "gpu_retired_pages_dbe{gpu=0}"), 1);
    CHECK_EQ(s_val(r, "gpu_retired_pages_pending{gpu=0}"), 1);
    CHECK_EQ(s_val(r, "gpu_remapped_rows_correctable{gpu=0}"), 5);
    CHECK_EQ(s_val(r, "gpu_remapped_rows_uncorrectable{gpu=0}"), 1);
    CHECK_EQ(s_val(r, "gpu_remapped_rows_pending{gpu=0}"), 0);
    CHECK_EQ(s_val(r, "gpu_remapped_rows_failure{gpu=0}"), 1);
    CHECK_EQ(s_val(r, "gpu_pcie_replays_total{gpu=0}"), 7);
    CHECK_EQ(s_val(r, "gpu_nvlink_active{gpu=0,link=0}"), 1);
    CHECK_EQ(s_val(r, "gpu_nvlink_active{gpu=0,link=3}"), 0);
    CHECK_EQ(s_val(r, "gpu_nvlink_crc_flit_errors_total{gpu=0,link=0}"), 4);
    CHECK_EQ(s_val(r, "gpu_nvlink_crc_data_errors_total{gpu=0,link=0}"), 5);
    CHECK_EQ(s_val(r, "gpu_nvlink_replay_errors_total{gpu=0,link=0}"), 6);
    CHECK_EQ(s_val(r, "gpu_nvlink_recovery_errors_total{gpu=0,link=0}"), 7);
    CHECK_EQ(s_val(r, "gpu_nvlink_replay_errors_total{gpu=0,link=3}"), 1);
    CHECK_INT(s_count(r, "gpu_nvlink_active{gpu=0,"), 2);
    CHECK_EQ(s_val(r, "gpu_recovery_action{gpu=0}"), 4);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=0}"), 0);
}

/* Every field of GPU 0; GPU 1 with only a temperature (a board without
 * the rest: no series for them). */
static void
test_fields(const char *lib)
{
    s_script("# two GPUs\ngpus 2\n" S_FULL0 "gpu 1 temp 40\n");
    int rc;
    void *st = s_open(lib, &rc);
    CHECK_RC(rc, 0);
    REQUIRE(st);
    recorder_t *r = calloc(1, sizeof *r);
    CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record, r), 0);
    s_check_full0(r);
    CHECK_EQ(s_val(r, "gpu_temperature_c{gpu=1}"), 40);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=1}"), 0);
    size_t n1 = 0;
    for (size_t i = 0; i < r->n; i++)
        n1 += strstr(r->v[i].key, "gpu=1") != NULL;
    CHECK_INT(n1, 2);
    /* Every metric but the XID ones was emitted. */
    for (const telem_meta_t *m = telem_sampler_nvml.metrics; m->metric; m++) {
        char prefix[80];
        snprintf(prefix, sizeof prefix, "%s{", m->metric);
        if (strncmp(m->metric, "gpu_xid", 7) != 0 && !s_count(r, prefix)) {
            fprintf(stderr, "%s never emitted\n", m->metric);
            s_failures++;
        }
    }
    free(r);
    telem_sampler_nvml.close(&st);
    CHECK(st == NULL);
}

/* An error from each query removes exactly its own series. */
static void
test_field_errors(const char *lib)
{
    static const struct {
        const char *what;       /* the query made to fail */
        const char *gone[4];    /* series keys that must go */
    } cases[] = {
        {"util", {"gpu_utilization{gpu=0}", "gpu_memory_utilization{gpu=0}"}},
        {"power_mw", {"gpu_power_w{gpu=0}"}},
        {"temp", {"gpu_temperature_c{gpu=0}"}},
        {"memory", {"gpu_memory_used_bytes{gpu=0}"}},
        {"clock_sm_mhz", {"gpu_sm_clock_hertz{gpu=0}"}},
        {"clock_mem_mhz", {"gpu_memory_clock_hertz{gpu=0}"}},
        {"power_limit_mw", {"gpu_power_limit_w{gpu=0}"}},
        {"energy_mj", {"gpu_energy_joules_total{gpu=0}"}},
        {"clocks_event", {"gpu_clocks_event_reasons{gpu=0}",
                          "gpu_clocks_event{gpu=0,reason=gpu_idle}"}},
        {"ecc", {"gpu_ecc_corrected_errors_total{gpu=0}",
                 "gpu_ecc_uncorrected_errors_total{gpu=0}"}},
        {"retired", {"gpu_retired_pages_sbe{gpu=0}",
                     "gpu_retired_pages_pending{gpu=0}"}},
        {"remapped", {"gpu_remapped_rows_failure{gpu=0}"}},
        {"pcie_replay", {"gpu_pcie_replays_total{gpu=0}"}},
        {"nvlink_errors", {"gpu_nvlink_crc_flit_errors_total{gpu=0,link=0}"}},
        {"recovery", {"gpu_recovery_action{gpu=0}"}},
    };
    recorder_t *full = calloc(1, sizeof *full), *r = calloc(1, sizeof *r);
    char script[4096];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(script, sizeof script, "gpus 1\n" S_FULL0
                 "gpu 0 fail %s 999\n", cases[c].what);
        s_script(c == 0 ? "gpus 1\n" S_FULL0 : script);
        int rc;
        void *st = s_open(lib, &rc);
        REQUIRE(st);
        recorder_t *into = c == 0 ? full : r;
        into->n = 0;
        CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record,
                                           into), 0);
        if (c == 0) {           /* the reference run first, then case 0 */
            s_script(script);
            telem_sampler_nvml.close(&st);
            st = s_open(lib, &rc);
            REQUIRE(st);
            r->n = 0;
            CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record,
                                               r), 0);
        }
        size_t ngone = 0;
        for (size_t g = 0; g < 4 && cases[c].gone[g]; g++) {
            if (!isnan(s_val(r, cases[c].gone[g]))) {
                fprintf(stderr, "fail %s: %s still there\n", cases[c].what,
                        cases[c].gone[g]);
                s_failures++;
            }
            ngone++;
        }
        /* Everything else stays: fewer series by what the query gives. */
        CHECK(r->n < full->n && r->n >= full->n - 11);
        CHECK_EQ(s_val(r, "gpu_lost{gpu=0}"), 0);
        CHECK(ngone > 0);
        telem_sampler_nvml.close(&st);
    }
    free(full);
    free(r);
}

/* A GPU fallen off the bus: gpu_lost 1 and nothing else of it. */
static void
test_lost(const char *lib)
{
    s_script("gpus 2\n" S_FULL0 "gpu 1 temp 40\ngpu 1 lost\n");
    int rc;
    void *st = s_open(lib, &rc);
    REQUIRE(st);
    recorder_t *r = calloc(1, sizeof *r);
    CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record, r), 0);
    s_check_full0(r);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=1}"), 1);
    CHECK(isnan(s_val(r, "gpu_temperature_c{gpu=1}")));
    telem_sampler_nvml.close(&st);
    /* Every GPU lost: the call fails, and still says so. */
    s_script("gpus 1\ngpu 0 temp 40\ngpu 0 lost\n");
    st = s_open(lib, &rc);
    REQUIRE(st);
    r->n = 0;
    CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record, r),
             TELEM_EIO);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=0}"), 1);
    CHECK_INT(r->n, 1);
    telem_sampler_nvml.close(&st);
    free(r);
}

static void
test_malformed(const char *lib)
{
    static const char *const bad[] = {
        "gpus 0\n", "gpus x\n", "gpus 17\n", "gpus 2\ngpu 2 temp 40\n",
        "gpu 0 temp\n", "gpu 0 temp 1 2\n", "gpu 0 temp -1\n",
        "gpu 0 temp 12abc\n", "bogus 1\n", "xid 0 79\n", "xid 3 79 10\n",
        "gpu 0 fail temp 0\n", "gpu 0 fail nothing 3\n", "gpu 0 name\n",
        "gpu 0 nvlink 18 1 0 0 0 0\n", "gpu 0 nvlink 0 1 0 0\n",
        "gpu 0 handle 1\n", "gpu\n", "gpu 0\n", "driver\n", "init_fail\n",
        "gpu 0 util 99999999999999999999999 1\n",
        "at\n", "at x gpu 0 temp 1\n", "at 10\n", "at 10 xid 0 79 1\n",
        "at 10 gpu 0 temp\n", "at 10 gpu 5 temp 1\n", "at -1 gpu 0 temp 1\n",
    };
    int rc;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s_script(bad[i]);
        void *st = s_open(lib, &rc);
        CHECK(st == NULL);
        if (rc != TELEM_EUNSUPPORTED)
            fprintf(stderr, "script %zu: %s", i, bad[i]);
        CHECK_RC(rc, TELEM_EUNSUPPORTED);
    }
    s_script("init_fail 9\n");          /* NVML_ERROR_DRIVER_NOT_LOADED */
    CHECK(s_open(lib, &rc) == NULL && rc == TELEM_EUNSUPPORTED);
    s_script("gpus 1\ngpu 0 fail handle 15\n");   /* the only GPU gone */
    CHECK(s_open(lib, &rc) == NULL && rc == TELEM_EUNSUPPORTED);
    unsetenv("TELEM_NVML_TEST_SCRIPT");
    CHECK(s_open(lib, &rc) == NULL && rc == TELEM_EUNSUPPORTED);
}

/* XIDs arrive on the event thread while sample() is called in a loop:
 * each is counted once, by code and GPU, and no sample() call waits for
 * the thread's NVML wait (TNVML_XID_WAIT_MS, 250 ms). */
static void
test_xid(const char *lib, int old)
{
    s_script("gpus 3\ngpu 0 temp 50\ngpu 1 temp 51\ngpu 2 temp 52\n"
             "gpu 2 fail register 3\n"
             "xid 0 79 400\nxid 1 48 600\nxid 0 79 600\nxid 0 63 700\n"
             "xid 2 31 400\n");
    int rc;
    void *st = s_open(lib, &rc);
    REQUIRE(st);
    recorder_t *r = calloc(1, sizeof *r);
    CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record, r), 0);
    CHECK_INT(s_count(r, "gpu_xid"), 0);        /* none due yet */
    int64_t deadline = telem_mono_ns() + 20 * TELEM_NS_PER_SEC, worst = 0;
    int calls = 0, done = 0;
    while (!done && telem_mono_ns() < deadline) {
        r->n = 0;
        int64_t t0 = telem_mono_ns();
        CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record, r), 0);
        int64_t took = telem_mono_ns() - t0;
        worst = took > worst ? took : worst;
        calls++;
        done = s_val(r, "gpu_xid_total{gpu=0,xid=79}") == 2
               && s_val(r, "gpu_xid_total{gpu=0,xid=63}") == 1
               && s_val(r, "gpu_xid_total{gpu=1,xid=48}") == 1;
        struct timespec d = {0, 2000000};     /* a 2 ms sampling period */
        nanosleep(&d, NULL);
    }
    CHECK(done);
    CHECK_EQ(s_val(r, "gpu_xid_last{gpu=0}"), 63);
    CHECK_EQ(s_val(r, "gpu_xid_last{gpu=1}"), 48);
    CHECK(isnan(s_val(r, "gpu_xid_last{gpu=2}")));     /* not registered */
    CHECK_INT(s_count(r, "gpu_xid_total{"), 3);
    printf("xid%s: %d sample() calls while the events came, the slowest "
           "%.3f ms\n", old ? " (old driver)" : "", calls, worst / 1e6);
    CHECK(worst < 100 * 1000000LL);
    int64_t t0 = telem_mono_ns();
    telem_sampler_nvml.close(&st);
    CHECK(telem_mono_ns() - t0 < 2 * TELEM_NS_PER_SEC);   /* thread stops */
    free(r);
}

/* An older driver: no remapped rows, field values or energy; the clock
 * reasons and the event wait under their older names. */
static void
test_old_driver(const char *old)
{
    s_script("gpus 1\n" S_FULL0);
    int rc;
    void *st = s_open(old, &rc);
    CHECK_RC(rc, 0);
    REQUIRE(st);
    recorder_t *r = calloc(1, sizeof *r);
    CHECK_RC(telem_sampler_nvml.sample(st, telem_now_ns(), s_record, r), 0);
    CHECK(isnan(s_val(r, "gpu_remapped_rows_failure{gpu=0}")));
    CHECK(isnan(s_val(r, "gpu_recovery_action{gpu=0}")));
    CHECK(isnan(s_val(r, "gpu_energy_joules_total{gpu=0}")));
    CHECK_EQ(s_val(r, "gpu_clocks_event_reasons{gpu=0}"), 0x24);
    CHECK_EQ(s_val(r, "gpu_ecc_uncorrected_errors_total{gpu=0}"), 1);
    CHECK_EQ(s_val(r, "gpu_temperature_c{gpu=0}"), 61);
    telem_sampler_nvml.close(&st);
    free(r);
    test_xid(old, 1);
}

static json_t *
s_snapshot(const char *lib)
{
    telem_sysinfo_opts_t o = {.node = "n1", .live = 1, .nvml_library = lib};
    char *text = NULL;
    size_t len;
    REQUIRE(telem_sysinfo_collect(&o, &text, &len) == 0);
    json_t *doc = json_loads(text, 0, NULL);
    free(text);
    REQUIRE(doc);
    return doc;
}

static void
test_sysinfo(const char *lib)
{
    s_script("gpus 2\ndriver 550.54.15\nnvml 12.550.54.15\n" S_FULL0
             "gpu 1 name NVIDIA H100 80GB HBM3\n");
    json_t *doc = s_snapshot(lib);
    CHECK_STR(json_string_value(json_object_get(doc, "gpu_driver")),
              "550.54.15");
    CHECK_STR(json_string_value(json_object_get(doc, "nvml_version")),
              "12.550.54.15");
    json_t *gpus = json_object_get(doc, "gpus");
    CHECK_INT(json_array_size(gpus), 2);
    json_t *g = json_array_get(gpus, 0);
    CHECK_INT(json_integer_value(json_object_get(g, "index")), 0);
    CHECK_STR(json_string_value(json_object_get(g, "vendor")), "NVIDIA");
    CHECK_STR(json_string_value(json_object_get(g, "name")),
              "NVIDIA H100 80GB HBM3");
    CHECK_STR(json_string_value(json_object_get(g, "uuid")),
              "GPU-5a1b2c3d-0000-1111-2222-333344445555");
    CHECK_STR(json_string_value(json_object_get(g, "pci_bus_id")),
              "00000000:18:00.0");
    CHECK_STR(json_string_value(json_object_get(g, "vbios_version")),
              "96.00.74.00.0D");
    CHECK_STR(json_string_value(json_object_get(g, "inforom_version")),
              "G520.0200.00.05");
    CHECK_INT(json_integer_value(json_object_get(g, "memory_total_bytes")),
              85899345920LL);
    g = json_array_get(gpus, 1);          /* what it does not give: null */
    CHECK_STR(json_string_value(json_object_get(g, "name")),
              "NVIDIA H100 80GB HBM3");
    CHECK(json_is_null(json_object_get(g, "uuid")));
    CHECK(json_is_null(json_object_get(g, "pci_bus_id")));
    CHECK(json_is_null(json_object_get(g, "vbios_version")));
    json_decref(doc);
    s_script("gpus x\n");                 /* NVML does not initialise */
    doc = s_snapshot(lib);
    CHECK(!json_object_get(doc, "gpus"));
    json_t *sk = json_object_get(doc, "skipped");
    size_t i;
    json_t *e;
    int found = 0;
    json_array_foreach(sk, i, e)
        found |= strcmp(json_string_value(json_object_get(e, "source")),
                        "gpus") == 0;
    CHECK(found);
    json_decref(doc);
}

/* The cost of one sample() of 8 GPUs with every field and 4 NVLinks each
 * (the test library answers at once: this is the sampler's own cost). */
static void
bench_sample(const char *lib)
{
    char script[16384];
    int len = snprintf(script, sizeof script, "gpus 8\n");
    for (int g = 0; g < 8; g++)
        len += snprintf(script + len, sizeof script - (size_t) len,
            "gpu %d util 87 45\ngpu %d power_mw 350125\ngpu %d temp 61\n"
            "gpu %d memory 85899345920 1073741824\ngpu %d clock_sm_mhz 1980\n"
            "gpu %d clock_mem_mhz 2619\ngpu %d power_limit_mw 700000\n"
            "gpu %d energy_mj 123456789\ngpu %d clocks_event 0x24\n"
            "gpu %d ecc 3 1\ngpu %d retired 2 1 1\ngpu %d remapped 5 1 0 1\n"
            "gpu %d pcie_replay 7\ngpu %d recovery 0\n"
            "gpu %d nvlink 0 1 1 2 3 4\ngpu %d nvlink 1 1 1 2 3 4\n"
            "gpu %d nvlink 2 1 1 2 3 4\ngpu %d nvlink 3 1 1 2 3 4\n",
            g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g);
    s_script(script);
    int rc;
    void *st = s_open(lib, &rc);
    REQUIRE(st);
    recorder_t *r = calloc(1, sizeof *r);
    enum { N = 2000 };
    int64_t t0 = telem_mono_ns();
    for (int i = 0; i < N; i++) {
        r->n = 0;
        telem_sampler_nvml.sample(st, telem_now_ns(), s_record, r);
    }
    double us = (telem_mono_ns() - t0) / 1e3 / N;
    printf("bench: one sample() of 8 GPUs, %zu values: %.1f us "
           "(%.3f us a value, the recorder included)\n", r->n, us,
           us / (double) r->n);
    telem_sampler_nvml.close(&st);
    free(r);
}

int
main(void)
{
    REQUIRE(test_tmpdir(s_dir, sizeof s_dir, "sampler_nvml") == 0);
    test_fields(NVML_TEST_LIB);
    test_field_errors(NVML_TEST_LIB);
    test_lost(NVML_TEST_LIB);
    test_malformed(NVML_TEST_LIB);
    test_xid(NVML_TEST_LIB, 0);
    test_old_driver(NVML_TEST_OLD_LIB);
    test_sysinfo(NVML_TEST_LIB);
    bench_sample(NVML_TEST_LIB);
    test_rmtree(s_dir);
    return check_report("test_sampler_nvml");
}
