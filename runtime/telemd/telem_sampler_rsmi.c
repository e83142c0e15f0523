/* telem_sampler_rsmi.c - level 3 AMD GPU metrics through rocm_smi, loaded
 * at run time.
 *
 * librocm_smi64 is opened with dlopen() when the sampler opens
 * (telem_rsmi.c), so telem builds and runs without ROCm.  No library, one
 * without rocm_smi's three required entry points, an rsmi_init that fails
 * or zero GPUs make open() return TELEM_EUNSUPPORTED and telemd runs on
 * without AMD metrics; a library that lacks an optional entry point loses
 * only the series that need it, named in one log line at open.
 *
 * Series share NVIDIA's names where the meaning is the same
 * (gpu_utilization, gpu_power_w, gpu_temperature_c, gpu_memory_*_bytes,
 * gpu_*_clock_hertz, gpu_ecc_*_errors_total, gpu_lost) and carry the tags
 * gpu=<rocm_smi index> and vendor=amd, so a detector reads every vendor's
 * GPUs through one name and tells them apart by the vendor tag (NVIDIA's
 * series have no vendor tag).  gpu_temperature_c is the edge sensor, or
 * the junction where the GPU has no edge sensor (MI300).  ECC counts are
 * summed over the blocks that answered at open and also given per block.
 * Throttling: the ASIC's own throttle status bits (gpu_throttle_status,
 * gpu_throttled) and, where rocm_smi gives the ASIC-independent bits
 * (rocm_smi 6 and later), one gpu_clocks_event{reason} flag per reason the
 * amdgpu driver names, as NVIDIA's and Intel's; the 5.x library (Debian
 * 12's) drops those bits, so with it there are no named flags.
 * A query that fails skips its value for this call; a GPU of which no query
 * answers gives gpu_lost 1.  sample() fails only when no GPU answered.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_gpu_meta.h"
#include "telem_gpulib.h"
#include "telem_log.h"
#include "telem_rsmi.h"
#include "telem_sampler.h"

#define S_GPUS_MAX 64

typedef struct {
    uint32_t index;
    char tag[12];               /* the gpu tag */
    uint16_t blocks;            /* ECC blocks that answered at open */
} s_gpu_t;

/* What rsmi_dev_gpu_metrics_info_get writes into: as much as any rocm_smi
 * writes (telem_rsmi.h). */
typedef union {
    trsmi_gpu_metrics_v13_t m;
    unsigned char bytes[TRSMI_GPU_METRICS_BUF];
} s_metrics_buf_t;

typedef struct {
    void *lib;
    trsmi_api_t api;
    bool initialised;
    uint32_t ngpus;
    s_gpu_t gpus[S_GPUS_MAX];
    s_metrics_buf_t metrics;
} s_rsmi_t;

typedef struct {
    const trsmi_api_t *a;
    const s_gpu_t *g;
    s_metrics_buf_t *metrics;
    telem_sampler_emit_fn emit;
    void *arg;
    int n;                      /* values emitted */
} s_call_t;

#define G TELEM_METRIC_GAUGE
#define C TELEM_METRIC_COUNTER
static const telem_meta_t s_metrics[] = {
    TELEM_GPU_META_UTILIZATION,
    TELEM_GPU_META_MEMORY_UTILIZATION,
    TELEM_GPU_META_POWER,
    TELEM_GPU_META_POWER_LIMIT,
    TELEM_GPU_META_ENERGY,
    TELEM_GPU_META_TEMPERATURE,
    {"gpu_temperature_junction_c", G, "celsius",
     "GPU junction (hotspot) temperature (tags gpu, vendor)."},
    TELEM_GPU_META_TEMPERATURE_MEMORY,
    TELEM_GPU_META_MEMORY_USED,
    TELEM_GPU_META_MEMORY_TOTAL,
    TELEM_GPU_META_SM_CLOCK,
    TELEM_GPU_META_MEMORY_CLOCK,
    TELEM_GPU_META_ECC_CORRECTED,
    TELEM_GPU_META_ECC_UNCORRECTED,
    {"gpu_ecc_block_corrected_errors_total", C, "",
     "Correctable ECC errors of the block named by tag block (tags gpu, "
     "vendor, block)."},
    {"gpu_ecc_block_uncorrected_errors_total", C, "",
     "Uncorrectable ECC errors of the block named by tag block (tags gpu, "
     "vendor, block)."},
    {"gpu_throttle_status", G, "",
     "The GPU's throttle status bits from its gpu_metrics table (ASIC "
     "specific; 0 when not throttled) (tags gpu, vendor)."},
    TELEM_GPU_META_CLOCKS_EVENT,
    TELEM_GPU_META_THROTTLED,
    TELEM_GPU_META_LOST,
    {NULL, G, NULL, NULL}
};
#undef G
#undef C

/* ---- emitting ---------------------------------------------------------- */

static void
s_put(s_call_t *c, const char *metric, double v)
{
    telem_tag_t tags[2] = {{"gpu", c->g->tag}, {"vendor", "amd"}};
    c->emit(c->arg, metric, tags, 2, v);
    c->n++;
}

static void
s_put_block(s_call_t *c, const char *metric, unsigned int bit, double v)
{
    telem_tag_t tags[3] = {{"gpu", c->g->tag}, {"vendor", "amd"},
                           {"block", telem_rsmi_block_name(bit)}};
    c->emit(c->arg, metric, tags, 3, v);
    c->n++;
}

/* ---- the fields, by group ---------------------------------------------- */

static void
s_activity(s_call_t *c)
{
    const trsmi_api_t *a = c->a;
    uint32_t i = c->g->index, pct;
    uint64_t total, used;
    if (a->busy_percent && a->busy_percent(i, &pct) == TRSMI_SUCCESS)
        s_put(c, "gpu_utilization", pct);
    if (a->memory_busy_percent
        && a->memory_busy_percent(i, &pct) == TRSMI_SUCCESS)
        s_put(c, "gpu_memory_utilization", pct);
    if (a->memory_usage
        && a->memory_usage(i, TRSMI_MEM_TYPE_VRAM, &used) == TRSMI_SUCCESS)
        s_put(c, "gpu_memory_used_bytes", (double) used);
    if (a->memory_total
        && a->memory_total(i, TRSMI_MEM_TYPE_VRAM, &total) == TRSMI_SUCCESS)
        s_put(c, "gpu_memory_total_bytes", (double) total);
}

static void
s_power(s_call_t *c)
{
    const trsmi_api_t *a = c->a;
    uint32_t i = c->g->index;
    uint64_t uw, count, ts;
    float res;
    if (a->power_ave && a->power_ave(i, 0, &uw) == TRSMI_SUCCESS)
        s_put(c, "gpu_power_w", (double) uw / 1e6);
    if (a->power_cap && a->power_cap(i, 0, &uw) == TRSMI_SUCCESS)
        s_put(c, "gpu_power_limit_w", (double) uw / 1e6);
    /* the accumulator counts units of `res` microjoules */
    if (a->energy_count && a->energy_count(i, &count, &res, &ts)
                               == TRSMI_SUCCESS && res > 0)
        s_put(c, "gpu_energy_joules_total", (double) count * res / 1e6);
}

static void
s_temperatures(s_call_t *c)
{
    const trsmi_api_t *a = c->a;
    if (!a->temp_metric)
        return;
    uint32_t i = c->g->index;
    int64_t edge, junction, mem;
    bool have_edge = a->temp_metric(i, TRSMI_TEMP_TYPE_EDGE,
                                    TRSMI_TEMP_CURRENT, &edge) == TRSMI_SUCCESS;
    bool have_junction = a->temp_metric(i, TRSMI_TEMP_TYPE_JUNCTION,
                                        TRSMI_TEMP_CURRENT, &junction)
                         == TRSMI_SUCCESS;
    if (have_edge || have_junction)
        s_put(c, "gpu_temperature_c",
              (double) (have_edge ? edge : junction) / 1000.0);
    if (have_junction)
        s_put(c, "gpu_temperature_junction_c", (double) junction / 1000.0);
    if (a->temp_metric(i, TRSMI_TEMP_TYPE_MEMORY, TRSMI_TEMP_CURRENT, &mem)
        == TRSMI_SUCCESS)
        s_put(c, "gpu_temperature_memory_c", (double) mem / 1000.0);
}

static void
s_clocks(s_call_t *c)
{
    static const struct {
        int type;
        const char *metric;
    } clks[] = {{TRSMI_CLK_TYPE_SYS, "gpu_sm_clock_hertz"},
                {TRSMI_CLK_TYPE_MEM, "gpu_memory_clock_hertz"}};
    if (!c->a->clk_freq)
        return;
    for (size_t k = 0; k < 2; k++) {
        trsmi_frequencies_t f;
        memset(&f, 0, sizeof f);
        if (c->a->clk_freq(c->g->index, clks[k].type, &f) == TRSMI_SUCCESS
            && f.current < f.num_supported
            && f.current < TRSMI_MAX_NUM_FREQUENCIES)
            s_put(c, clks[k].metric, (double) f.frequency[f.current]);
    }
}

static void
s_ecc(s_call_t *c)
{
    if (!c->a->ecc_count || !c->g->blocks)
        return;
    double corr = 0, unc = 0;
    int answered = 0;
    for (unsigned int b = 0; b < TRSMI_GPU_BLOCKS; b++) {
        trsmi_error_count_t ec;
        if (!(c->g->blocks & (1u << b))
            || c->a->ecc_count(c->g->index, 1ull << b, &ec) != TRSMI_SUCCESS)
            continue;
        answered++;
        corr += (double) ec.correctable_err;
        unc += (double) ec.uncorrectable_err;
        s_put_block(c, "gpu_ecc_block_corrected_errors_total", b,
                    (double) ec.correctable_err);
        s_put_block(c, "gpu_ecc_block_uncorrected_errors_total", b,
                    (double) ec.uncorrectable_err);
    }
    if (answered) {
        s_put(c, "gpu_ecc_corrected_errors_total", corr);
        s_put(c, "gpu_ecc_uncorrected_errors_total", unc);
    }
}

static void
s_put_reason(s_call_t *c, const char *reason, double v)
{
    telem_tag_t tags[3] = {{"gpu", c->g->tag}, {"vendor", "amd"},
                           {"reason", reason}};
    c->emit(c->arg, "gpu_clocks_event", tags, 3, v);
    c->n++;
}

/* The throttle status of the gpu_metrics table: the ASIC's own bits as
 * they are, and, where the library gives them (rocm_smi 6 and later, on a
 * table 1.3 or newer), the ASIC-independent bits as one flag per named
 * reason.  A 5.x library writes only the first 96 bytes: the pattern
 * left after them says so.  All ones is a field the table lacks. */
static void
s_throttle(s_call_t *c)
{
    s_metrics_buf_t *b = c->metrics;
    const size_t v1 = sizeof b->m.v1, v13 = sizeof b->m;
    memset(b->bytes, 0, v1);
    memset(b->bytes + v1, 0xa5, v13 - v1);
    if (!c->a->gpu_metrics
        || c->a->gpu_metrics(c->g->index, &b->m.v1) != TRSMI_SUCCESS
        || b->m.v1.format_revision != 1)
        return;                 /* only the dGPU format has these bits */
    bool v6 = false;
    for (size_t i = v1; i < v13 && !v6; i++)
        v6 = b->bytes[i] != 0xa5;
    uint32_t dep = b->m.v1.throttle_status;
    uint64_t indep = b->m.indep_throttle_status;
    bool have_dep = dep != UINT32_MAX, have_indep = v6 && indep != UINT64_MAX;
    if (have_dep)
        s_put(c, "gpu_throttle_status", dep);
    if (have_dep || have_indep)
        s_put(c, "gpu_throttled", (have_dep && dep) || (have_indep && indep));
    if (!have_indep)
        return;
    uint64_t unnamed = 0;
    for (unsigned int bit = 0; bit < 64; bit++) {
        const char *name = telem_rsmi_throttler_name(bit);
        if (name)
            s_put_reason(c, name, (double) ((indep >> bit) & 1u));
        else
            unnamed |= indep & (UINT64_C(1) << bit);
    }
    s_put_reason(c, "other", unnamed != 0);
}

/* ---- open, sample, close ----------------------------------------------- */

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_rsmi_t *self = *state_p;
    if (self->initialised)
        self->api.shut_down();
    if (self->lib)
        dlclose(self->lib);
    free(self);
    *state_p = NULL;
}

/* The ECC blocks of GPU i that answer. */
static uint16_t
s_find_blocks(const trsmi_api_t *a, uint32_t i)
{
    uint16_t blocks = 0;
    for (unsigned int b = 0; a->ecc_count && b < TRSMI_GPU_BLOCKS; b++) {
        trsmi_error_count_t ec;
        if (a->ecc_count(i, 1ull << b, &ec) == TRSMI_SUCCESS)
            blocks |= (uint16_t) (1u << b);
    }
    return blocks;
}

static int
s_open_devices(s_rsmi_t *self)
{
    if (self->api.init(0) != TRSMI_SUCCESS)
        return TELEM_EUNSUPPORTED;
    self->initialised = true;
    uint32_t count = 0;
    if (self->api.num_devices(&count) != TRSMI_SUCCESS || count == 0)
        return TELEM_EUNSUPPORTED;
    if (count > S_GPUS_MAX)
        count = S_GPUS_MAX;
    for (uint32_t i = 0; i < count; i++) {
        s_gpu_t *g = &self->gpus[i];
        g->index = i;
        snprintf(g->tag, sizeof g->tag, "%u", (unsigned) i);
        g->blocks = s_find_blocks(&self->api, i);
    }
    self->ngpus = count;
    return 0;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_rsmi_t *self = env ? calloc(1, sizeof *self) : NULL;
    if (!self) {
        if (err)
            *err = env ? TELEM_ENOMEM : TELEM_EINVAL;
        return NULL;
    }
    int rc = TELEM_EUNSUPPORTED;
    self->lib = telem_rsmi_load(env->rsmi_library, &self->api);
    if (self->lib)
        rc = s_open_devices(self);
    char missing[1024];
    if (rc == 0 && telem_rsmi_missing(&self->api, missing, sizeof missing))
        telem_log(TELEM_LOG_INFO, "rsmi: the library lacks %s: the values "
                  "they give are not sampled", missing);
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    return self;
}

/* One GPU: every group of fields, then gpu_lost (no query answered). */
static int
s_sample_gpu(void *state, size_t i, telem_sampler_emit_fn emit, void *arg)
{
    static void (*const groups[])(s_call_t *) = {s_activity, s_power,
                                                 s_temperatures, s_clocks,
                                                 s_ecc, s_throttle};
    s_rsmi_t *self = state;
    s_call_t c = {&self->api, &self->gpus[i], &self->metrics, emit, arg, 0};
    for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++)
        groups[k](&c);
    int n = c.n;
    s_put(&c, "gpu_lost", n == 0);
    return n;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    const s_rsmi_t *self = state;
    return telem_gpulib_sample(state, self ? self->ngpus : 0, s_sample_gpu,
                               emit, arg);
}

const telem_sampler_vt_t telem_sampler_rsmi = {
    .name = "rsmi",
    .min_level = 3,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
