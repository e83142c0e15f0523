/* test_sampler_gpu_vendors.c - the AMD (rsmi) and Intel (ze) samplers and
 * the snapshot's AMD and Intel GPUs against the test-only rocm_smi and
 * Level Zero libraries (tests/rsmi_test, tests/ze_test), scripted by
 * TELEM_RSMI_TEST_SCRIPT and TELEM_ZE_TEST_SCRIPT.
 *
 * Every field's mapping (units, tags, sums, rates, flags), errors of single
 * queries (only their series go), a GPU that stops answering or is lost,
 * libraries without optional entry points (an older rocm_smi, a Level Zero
 * loader with only the core device-finding set), malformed scripts (the
 * library does not initialise: the sampler is unsupported), the
 * snapshot's GPU names, and the cost of one sample() call.  Every name
 * two samplers emit is described (type, unit, help) the same way by both,
 * as telemd keeps one description per name.
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
    char key[200];
    double value;
} rec_t;

typedef struct {
    const telem_sampler_vt_t *vt;
    rec_t v[2048];
    size_t n;
} recorder_t;

static char s_dir[512];

static void
s_record(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    recorder_t *r = arg;
    const telem_meta_t *m = r->vt->metrics;
    while (m->metric && strcmp(m->metric, metric) != 0)
        m++;
    if (!m->metric) {
        fprintf(stderr, "metric %s has no meta entry\n", metric);
        s_failures++;
    }
    CHECK(isfinite(value));
    CHECK(ntags >= 2 && strcmp(tags[0].key, "gpu") == 0
          && strcmp(tags[1].key, "vendor") == 0);
    REQUIRE(r->n < sizeof r->v / sizeof r->v[0]);
    rec_t *e = &r->v[r->n++];
    int len = snprintf(e->key, sizeof e->key, "%s{", metric);
    for (uint32_t i = 0; i < ntags; i++)
        len += snprintf(e->key + len, sizeof e->key - (size_t) len, "%s%s=%s",
                        i ? "," : "", tags[i].key, tags[i].value);
    snprintf(e->key + len, sizeof e->key - (size_t) len, "}");
    e->value = value;
}

static double
s_val(const recorder_t *r, const char *key)
{
    for (size_t i = r->n; i-- > 0;)
        if (strcmp(r->v[i].key, key) == 0)
            return r->v[i].value;
    return NAN;
}

static void
s_script(const char *var, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", s_dir, var);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
    setenv(var, path, 1);
}

static void *
s_open(const telem_sampler_vt_t *vt, const char *lib, int *rc)
{
    telem_sampler_env_t env = {.node = "n1", .rsmi_library = lib,
                               .ze_library = lib};
    return vt->open(&env, rc);
}

/* Opens, samples `calls` times into r (the last call's values), closes. */
static void
s_run(const telem_sampler_vt_t *vt, const char *lib, int calls,
      recorder_t *r)
{
    int rc;
    void *st = s_open(vt, lib, &rc);
    CHECK_INT(rc, 0);
    REQUIRE(st);
    r->vt = vt;
    for (int i = 0; i < calls; i++) {
        r->n = 0;
        CHECK_INT(vt->sample(st, telem_now_ns(), s_record, r), 0);
    }
    vt->close(&st);
    CHECK(st == NULL);
}

/* ---- AMD ----------------------------------------------------------------- */

#define S_AMD0                                                               \
    "driver 6.2.4\n"                                                         \
    "gpu 0 name Instinct MI210\ngpu 0 vendor Advanced Micro Devices, Inc.\n" \
    "gpu 0 serial 692209000123\ngpu 0 vbios 113-D67301-063\n"                \
    "gpu 0 unique_id 0x1a2b3c4d5e6f7081\ngpu 0 pci_id 0x0000c300\n"          \
    "gpu 0 busy 93\ngpu 0 mem_busy 41\n"                                     \
    "gpu 0 vram 68702699520 1073741824\ngpu 0 power_uw 287000000\n"          \
    "gpu 0 cap_uw 300000000\ngpu 0 energy 1000000 15259\n"                   \
    "gpu 0 temp_edge 45000\ngpu 0 temp_junction 61500\n"                     \
    "gpu 0 temp_memory 53000\ngpu 0 clk_sys 1700000000\n"                    \
    "gpu 0 clk_mem 1600000000\ngpu 0 throttle 0x5\n"                         \
    "gpu 0 ecc 0 3 0\ngpu 0 ecc 2 4 1\n"

static void
test_amd_fields(void)
{
    s_script("TELEM_RSMI_TEST_SCRIPT", "gpus 2\n" S_AMD0
             "gpu 1 temp_junction 70000\ngpu 1 fail busy 3\n"
             "gpu 1 vram 100 50\n");
    recorder_t *r = calloc(1, sizeof *r);
    s_run(&telem_sampler_rsmi, RSMI_TEST_LIB, 1, r);
#define A(m) s_val(r, m "{gpu=0,vendor=amd}")
    CHECK_EQ(A("gpu_utilization"), 93);
    CHECK_EQ(A("gpu_memory_utilization"), 41);
    CHECK_EQ(A("gpu_memory_total_bytes"), 68702699520.0);
    CHECK_EQ(A("gpu_memory_used_bytes"), 1073741824.0);
    CHECK_EQ(A("gpu_power_w"), 287);
    CHECK_EQ(A("gpu_power_limit_w"), 300);
    CHECK(fabs(A("gpu_energy_joules_total") - 15.259) < 1e-3);
    CHECK_EQ(A("gpu_temperature_c"), 45);              /* edge */
    CHECK_EQ(A("gpu_temperature_junction_c"), 61.5);
    CHECK_EQ(A("gpu_temperature_memory_c"), 53);
    CHECK_EQ(A("gpu_sm_clock_hertz"), 1.7e9);
    CHECK_EQ(A("gpu_memory_clock_hertz"), 1.6e9);
    CHECK_EQ(A("gpu_throttle_status"), 5);
    CHECK_EQ(A("gpu_throttled"), 1);
    CHECK_EQ(A("gpu_ecc_corrected_errors_total"), 7);
    CHECK_EQ(A("gpu_ecc_uncorrected_errors_total"), 1);
    CHECK_EQ(A("gpu_lost"), 0);
#undef A
    CHECK_EQ(s_val(r, "gpu_ecc_block_corrected_errors_total"
                      "{gpu=0,vendor=amd,block=umc}"), 3);
    CHECK_EQ(s_val(r, "gpu_ecc_block_uncorrected_errors_total"
                      "{gpu=0,vendor=amd,block=gfx}"), 1);
    CHECK(isnan(s_val(r, "gpu_ecc_block_corrected_errors_total"
                         "{gpu=0,vendor=amd,block=sdma}")));
    /* GPU 1: no edge sensor (junction stands in), busy fails, no ECC */
    CHECK_EQ(s_val(r, "gpu_temperature_c{gpu=1,vendor=amd}"), 70);
    CHECK(isnan(s_val(r, "gpu_utilization{gpu=1,vendor=amd}")));
    CHECK(isnan(s_val(r, "gpu_ecc_corrected_errors_total{gpu=1,vendor=amd}")));
    CHECK(isnan(s_val(r, "gpu_throttled{gpu=1,vendor=amd}")));
    CHECK_EQ(s_val(r, "gpu_memory_used_bytes{gpu=1,vendor=amd}"), 50);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=1,vendor=amd}"), 0);
    free(r);
}

/* Throttling: rocm_smi 5.2 gives the ASIC's own bits only; a newer
 * library (a struct of 1,832 bytes) the ASIC-independent bits too, as one
 * gpu_clocks_event flag per reason. */
static void
test_amd_throttle(void)
{
    recorder_t *r = calloc(1, sizeof *r);
#define T(g, m) s_val(r, m "{gpu=" #g ",vendor=amd}")
#define R(g, why) s_val(r, "gpu_clocks_event{gpu=" #g ",vendor=amd,reason=" \
                        why "}")
    s_script("TELEM_RSMI_TEST_SCRIPT", "gpus 4\n"
             "gpu 0 throttle 0x5 0x1000000000000011\n" /* ppt0, spl, bit 60 */
             "gpu 1 throttle 0 0\n"
             "gpu 2 throttle 0xffffffff 0x1000000000\n"  /* temp_hotspot */
             "gpu 3 throttle 0x5 0xffffffffffffffff\n");
    s_run(&telem_sampler_rsmi, RSMI_TEST_LIB, 1, r);
    CHECK_EQ(T(0, "gpu_throttle_status"), 5);
    CHECK_EQ(T(0, "gpu_throttled"), 1);
    CHECK_EQ(R(0, "ppt0"), 1);
    CHECK_EQ(R(0, "spl"), 1);
    CHECK_EQ(R(0, "other"), 1);
    CHECK_EQ(R(0, "ppt1"), 0);
    CHECK_EQ(R(0, "temp_hotspot"), 0);
    CHECK_EQ(R(0, "fit"), 0);
    int flags = 0;
    for (size_t i = 0; i < r->n; i++)
        flags += strncmp(r->v[i].key, "gpu_clocks_event{gpu=0,", 23) == 0;
    CHECK_INT(flags, 35);                       /* 34 named, and other */
    CHECK_EQ(T(1, "gpu_throttled"), 0);
    CHECK_EQ(R(1, "temp_hotspot"), 0);
    CHECK_EQ(R(1, "other"), 0);
    /* no ASIC bits in the table (all ones): the named flags decide */
    CHECK(isnan(T(2, "gpu_throttle_status")));
    CHECK_EQ(T(2, "gpu_throttled"), 1);
    CHECK_EQ(R(2, "temp_hotspot"), 1);
    CHECK_EQ(R(2, "prochot_gfx"), 0);
    /* no independent bits in the table: no flags */
    CHECK_EQ(T(3, "gpu_throttled"), 1);
    CHECK(isnan(R(3, "ppt0")));
    /* rocm_smi 5.2's struct: the ASIC's bits, no flags */
    s_script("TELEM_RSMI_TEST_SCRIPT", "gpu 0 throttle 0x20\n");
    s_run(&telem_sampler_rsmi, RSMI_TEST_LIB, 1, r);
    CHECK_EQ(T(0, "gpu_throttle_status"), 0x20);
    CHECK_EQ(T(0, "gpu_throttled"), 1);
    CHECK(isnan(R(0, "ppt0")));
    CHECK(isnan(R(0, "other")));
#undef T
#undef R
    free(r);
}

static void
test_amd_gone_old_malformed(void)
{
    recorder_t *r = calloc(1, sizeof *r);
    s_script("TELEM_RSMI_TEST_SCRIPT", "gpus 2\n" S_AMD0 "gpu 1 gone\n");
    s_run(&telem_sampler_rsmi, RSMI_TEST_LIB, 1, r);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=1,vendor=amd}"), 1);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=0,vendor=amd}"), 0);
    /* an older library: no gpu_metrics, no energy counter */
    s_script("TELEM_RSMI_TEST_SCRIPT", S_AMD0);
    s_run(&telem_sampler_rsmi, RSMI_TEST_OLD_LIB, 1, r);
    CHECK_EQ(s_val(r, "gpu_utilization{gpu=0,vendor=amd}"), 93);
    CHECK(isnan(s_val(r, "gpu_throttled{gpu=0,vendor=amd}")));
    CHECK(isnan(s_val(r, "gpu_energy_joules_total{gpu=0,vendor=amd}")));
    free(r);
    static const char *const bad[] = {
        "gpus 0\n", "gpus 17\n", "gpu 0 busy\n", "gpu 0 busy x\n",
        "gpu 0 busy 1 2\n", "gpu 3 busy 1\n", "gpu 0 nosuch 1\n",
        "gpu 0 ecc 14 1 1\n", "gpu 0 fail busy 0\n", "gpu 0 name\n",
        "gpu 0 throttle 1 x\n", "gpu 0 throttle 1 2 3\n",
        "init_fail 8\n", "gpus -1\n", "bogus\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s_script("TELEM_RSMI_TEST_SCRIPT", bad[i]);
        int rc;
        void *st = s_open(&telem_sampler_rsmi, RSMI_TEST_LIB, &rc);
        CHECK(st == NULL);
        CHECK_INT(rc, TELEM_EUNSUPPORTED);
    }
    int rc;
    CHECK(!s_open(&telem_sampler_rsmi, "/nonexistent/librocm_smi64.so.1",
                  &rc));
    CHECK_INT(rc, TELEM_EUNSUPPORTED);
    CHECK(!s_open(&telem_sampler_rsmi, ZE_TEST_LIB, &rc));  /* no rsmi_init */
    CHECK_INT(rc, TELEM_EUNSUPPORTED);
    CHECK(!telem_sampler_rsmi.open(NULL, &rc));
    CHECK_INT(rc, TELEM_EINVAL);
}

/* ---- Intel --------------------------------------------------------------- */

#define S_ZE0                                                                \
    "gpu 0 name Intel(R) Data Center GPU Max 1550\n"                         \
    "gpu 0 serial LQAC2340A123\ngpu 0 driver 1.3.27642\n"                    \
    "gpu 0 pci 0 0x29 0 0\ngpu 0 firmware GSC 102.0.0.1234\n"                \
    "gpu 0 engine 1000 0 750000 1000000\n"                                   \
    "gpu 0 energy 5000000 0 400000000 1000000\n"                             \
    "gpu 0 mem 68719476736 34359738368\ngpu 0 mem 68719476736 68719476736\n" \
    "gpu 0 temp 1 55\ngpu 0 temp 1 63\ngpu 0 temp 2 48\ngpu 0 temp 0 99\n"   \
    "gpu 0 freq 0 1600 0x9\ngpu 0 freq 1 3200 0\n"                           \
    "gpu 0 ras 0 0 0 0 2 0 5 0\ngpu 0 ras 1 1 0 0 0 0 3 0\n"

static void
test_ze_fields(const char *lib)
{
    s_script("TELEM_ZE_TEST_SCRIPT", "gpus 2\n" S_ZE0 "gpu 1 lost\n");
    recorder_t *r = calloc(1, sizeof *r);
    s_run(&telem_sampler_ze, lib, 2, r);
#define Z(m) s_val(r, m "{gpu=0,vendor=intel}")
    CHECK_EQ(Z("gpu_utilization"), 75);
    CHECK_EQ(Z("gpu_power_w"), 400);
    CHECK_EQ(Z("gpu_energy_joules_total"), 405);
    CHECK_EQ(Z("gpu_memory_total_bytes"), 137438953472.0);
    CHECK_EQ(Z("gpu_memory_used_bytes"), 34359738368.0);
    CHECK_EQ(Z("gpu_temperature_c"), 63);               /* the hottest */
    CHECK_EQ(Z("gpu_temperature_memory_c"), 48);
    CHECK_EQ(Z("gpu_sm_clock_hertz"), 1.6e9);
    CHECK_EQ(Z("gpu_memory_clock_hertz"), 3.2e9);
    CHECK_EQ(Z("gpu_throttle_reasons"), 9);
    CHECK_EQ(Z("gpu_throttled"), 1);
    CHECK_EQ(Z("gpu_lost"), 0);
#undef Z
    CHECK_EQ(s_val(r, "gpu_clocks_event{gpu=0,vendor=intel,"
                      "reason=ave_pwr_cap}"), 1);
    CHECK_EQ(s_val(r, "gpu_clocks_event{gpu=0,vendor=intel,"
                      "reason=thermal_limit}"), 1);
    CHECK_EQ(s_val(r, "gpu_clocks_event{gpu=0,vendor=intel,"
                      "reason=burst_pwr_cap}"), 0);
    CHECK_EQ(s_val(r, "gpu_ras_errors_total{gpu=0,vendor=intel,"
                      "type=correctable,category=cache_errors}"), 5);
    CHECK_EQ(s_val(r, "gpu_ras_errors_total{gpu=0,vendor=intel,"
                      "type=uncorrectable,category=reset}"), 1);
    CHECK_EQ(s_val(r, "gpu_ras_errors_total{gpu=0,vendor=intel,"
                      "type=uncorrectable,category=cache_errors}"), 3);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=1,vendor=intel}"), 1);
    CHECK(isnan(s_val(r, "gpu_temperature_c{gpu=1,vendor=intel}")));
    /* the first call has no rate yet */
    s_run(&telem_sampler_ze, lib, 1, r);
    CHECK(isnan(s_val(r, "gpu_utilization{gpu=0,vendor=intel}")));
    CHECK(isnan(s_val(r, "gpu_power_w{gpu=0,vendor=intel}")));
    CHECK_EQ(s_val(r, "gpu_energy_joules_total{gpu=0,vendor=intel}"), 5);
    free(r);
}

static void
test_ze_errors(void)
{
    recorder_t *r = calloc(1, sizeof *r);
    s_script("TELEM_ZE_TEST_SCRIPT", S_ZE0 "gpu 0 fail temp 0x78000003\n"
             "gpu 0 fail ras 0x78000003\n");
    s_run(&telem_sampler_ze, ZE_TEST_LIB, 2, r);
    CHECK(isnan(s_val(r, "gpu_temperature_c{gpu=0,vendor=intel}")));
    CHECK(isnan(s_val(r, "gpu_ras_errors_total{gpu=0,vendor=intel,"
                         "type=correctable,category=reset}")));
    CHECK_EQ(s_val(r, "gpu_utilization{gpu=0,vendor=intel}"), 75);
    CHECK_EQ(s_val(r, "gpu_lost{gpu=0,vendor=intel}"), 0);
    free(r);
    static const char *const bad[] = {
        "gpus 0\n", "gpus 9\n", "gpu 0 engine 1 2 3\n", "gpu 0 mem x 1\n",
        "gpu 1 mem 1 1\n", "gpu 0 ras 0 1 2\n", "gpu 0 fail nosuch 1\n",
        "gpu 0 firmware GSC\n", "gpu 0 pci 1 2 3\n", "init_fail 0x70000001\n",
        "nonsense 1\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s_script("TELEM_ZE_TEST_SCRIPT", bad[i]);
        int rc;
        void *st = s_open(&telem_sampler_ze, ZE_TEST_LIB, &rc);
        CHECK(st == NULL);
        CHECK_INT(rc, TELEM_EUNSUPPORTED);
    }
    int rc;
    CHECK(!s_open(&telem_sampler_ze, RSMI_TEST_LIB, &rc));  /* not ze */
    CHECK_INT(rc, TELEM_EUNSUPPORTED);
}

/* ---- the snapshot -------------------------------------------------------- */

static void
test_sysinfo(void)
{
    s_script("TELEM_RSMI_TEST_SCRIPT", "gpus 2\n" S_AMD0);
    s_script("TELEM_ZE_TEST_SCRIPT", S_ZE0);
    telem_sysinfo_opts_t o = {.node = "n1", .live = 1,
                              .nvml_library = "/nonexistent/libnvml.so",
                              .rsmi_library = RSMI_TEST_LIB,
                              .ze_library = ZE_TEST_LIB};
    char *text = NULL;
    size_t len;
    REQUIRE(telem_sysinfo_collect(&o, &text, &len) == 0);
    json_t *doc = json_loads(text, 0, NULL);
    free(text);
    REQUIRE(doc);
    json_t *gpus = json_object_get(doc, "gpus");
    CHECK_INT(json_array_size(gpus), 3);
    json_t *g = json_array_get(gpus, 0);
#define S(obj, k) json_string_value(json_object_get(obj, k))
    CHECK_STR(S(g, "vendor"), "AMD");
    CHECK_STR(S(g, "name"), "Instinct MI210");
    CHECK_STR(S(g, "uuid"), "0x1a2b3c4d5e6f7081");
    CHECK_STR(S(g, "serial"), "692209000123");
    CHECK_STR(S(g, "pci_bus_id"), "0000:c3:00.0");
    CHECK_STR(S(g, "vbios_version"), "113-D67301-063");
    CHECK_STR(S(g, "driver"), "6.2.4");
    CHECK_INT(json_integer_value(json_object_get(g, "memory_total_bytes")),
              68702699520LL);
    g = json_array_get(gpus, 1);
    CHECK_STR(S(g, "vendor"), "AMD");
    CHECK(json_is_null(json_object_get(g, "name")));
    g = json_array_get(gpus, 2);
    CHECK_STR(S(g, "vendor"), "Intel");
    CHECK_STR(S(g, "name"), "Intel(R) Data Center GPU Max 1550");
    CHECK_STR(S(g, "uuid"), "00010203-0405-0607-0809-0a0b0c0d0e0f");
    CHECK_STR(S(g, "serial"), "LQAC2340A123");
    CHECK_STR(S(g, "pci_bus_id"), "0000:29:00.0");
    CHECK_STR(S(g, "driver"), "1.3.27642");
    CHECK_STR(S(json_object_get(g, "firmware"), "GSC"), "102.0.0.1234");
#undef S
    json_decref(doc);
}

/* ---- one description per name ------------------------------------------ */

static void
test_shared_metas(void)
{
    const telem_sampler_vt_t *const vts[] = {
        &telem_sampler_proc, &telem_sampler_nvml, &telem_sampler_self,
        &telem_sampler_psi, &telem_sampler_vmstat, &telem_sampler_numa,
        &telem_sampler_cpufreq, &telem_sampler_fs, &telem_sampler_ib,
        &telem_sampler_hw, &telem_sampler_nfs, &telem_sampler_lustre,
        &telem_sampler_job, &telem_sampler_rsmi, &telem_sampler_ze,
    };
    const size_t nvt = sizeof vts / sizeof vts[0];
    int shared = 0;
    for (size_t a = 0; a < nvt; a++)
        for (const telem_meta_t *m = vts[a]->metrics; m && m->metric; m++) {
            CHECK(m->doc && m->doc[0] && m->unit);
            for (size_t b = a + 1; b < nvt; b++)
                for (const telem_meta_t *o = vts[b]->metrics; o && o->metric;
                     o++) {
                    if (strcmp(m->metric, o->metric) != 0)
                        continue;
                    shared++;
                    if (m->type != o->type || strcmp(m->unit, o->unit) != 0
                        || strcmp(m->doc, o->doc) != 0) {
                        fprintf(stderr, "%s: described by %s and %s "
                                "differently\n", m->metric, vts[a]->name,
                                vts[b]->name);
                        s_failures++;
                    }
                }
        }
    /* pairs of samplers sharing a name: nvml and rsmi 14, nvml and ze 10,
     * rsmi and ze 12 */
    CHECK(shared >= 36);
}

/* The cost of one sample() of 8 GPUs of each vendor with every field. */
static void
bench(const telem_sampler_vt_t *vt, const char *lib, const char *var,
      const char *one)
{
    char script[16384], line[2048];
    int len = snprintf(script, sizeof script, "gpus 8\n");
    for (int g = 0; g < 8; g++) {
        snprintf(line, sizeof line, "%s", one);
        for (char *p = line; (p = strstr(p, "gpu 0 ")); p += 6)
            p[4] = (char) ('0' + g);
        len += snprintf(script + len, sizeof script - (size_t) len, "%s",
                        line);
    }
    s_script(var, script);
    int rc;
    void *st = s_open(vt, lib, &rc);
    REQUIRE(st);
    recorder_t *r = calloc(1, sizeof *r);
    r->vt = vt;
    enum { N = 2000 };
    int64_t t0 = telem_mono_ns();
    for (int i = 0; i < N; i++) {
        r->n = 0;
        vt->sample(st, telem_now_ns(), s_record, r);
    }
    double us = (double) (telem_mono_ns() - t0) / 1e3 / N;
    printf("bench: %s: one sample() of 8 GPUs, %zu values: %.1f us (%.3f us "
           "a value, the recorder included)\n", vt->name, r->n, us,
           us / (double) r->n);
    vt->close(&st);
    free(r);
}

int
main(void)
{
    REQUIRE(test_tmpdir(s_dir, sizeof s_dir, "sampler_gpu_vendors") == 0);
    test_amd_fields();
    test_amd_throttle();
    test_amd_gone_old_malformed();
    test_ze_fields(ZE_TEST_LIB);
    test_ze_fields(ZE_TEST_CORE_LIB);
    test_ze_errors();
    test_sysinfo();
    test_shared_metas();
    bench(&telem_sampler_rsmi, RSMI_TEST_LIB, "TELEM_RSMI_TEST_SCRIPT",
          S_AMD0);
    bench(&telem_sampler_ze, ZE_TEST_LIB, "TELEM_ZE_TEST_SCRIPT", S_ZE0);
    test_rmtree(s_dir);
    return check_report("test_sampler_gpu_vendors");
}
