/* telem_sampler_ze.c - level 3 Intel GPU metrics through Level Zero
 * Sysman, loaded at run time.
 *
 * libze_loader is opened with dlopen() when the sampler opens
 * (telem_ze.c), so telem builds and runs without oneAPI.  No loader, one
 * without a device-finding set, an init that fails or zero devices make
 * open() return TELEM_EUNSUPPORTED; a missing Sysman query loses only its
 * series, named in one log line.  Each device's resources are found once
 * at open: the engine group of the whole device (ALL, else COMPUTE_ALL),
 * its memory modules (summed), the power domain of the whole device, the
 * GPU and memory temperature sensors (the hottest of each kind), the GPU
 * and memory frequency domains and the RAS error sets.
 *
 * Names are shared with NVIDIA's and AMD's where the meaning is the same
 * and carry the tags gpu=<index> and vendor=intel.  Utilization and power
 * are rates of Sysman's counters against the previous call (the first
 * call gives neither); the energy counter itself is gpu_energy_joules_total.
 * Throttle reasons are split into gpu_clocks_event{reason} with Sysman's
 * reason names.  RAS errors are counted per type and category.  A device
 * that answers ZE_RESULT_ERROR_DEVICE_LOST, or no query at all, gives
 * gpu_lost 1.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_gpu_meta.h"
#include "telem_gpulib.h"
#include "telem_log.h"
#include "telem_sampler.h"
#include "telem_ze.h"

#define S_GPUS_MAX 32
#define S_RES_MAX 16

typedef struct {
    tze_device_t dev;
    char tag[12];
    tze_handle_t engine, power, freq[2];        /* NULL: none */
    tze_handle_t mem[S_RES_MAX], temp[S_RES_MAX], ras[4];
    uint32_t nmem, ntemp, nras;
    uint32_t temp_type[S_RES_MAX], ras_type[4];
    tzes_counter_t engine_prev, power_prev;
    bool have_engine_prev, have_power_prev;
} s_gpu_t;

typedef struct {
    void *lib;
    tze_api_t api;
    int ngpus;
    s_gpu_t gpus[S_GPUS_MAX];
} s_ze_t;

typedef struct {
    const tze_api_t *a;
    s_gpu_t *g;
    telem_sampler_emit_fn emit;
    void *arg;
    int n;                      /* values emitted */
    int answered;               /* queries that succeeded */
    bool lost;
} s_call_t;

static const char *const s_reasons[] = {
    "ave_pwr_cap", "burst_pwr_cap", "current_limit", "thermal_limit",
    "psu_alert", "sw_range", "hw_range",
};
static const char *const s_categories[TZES_RAS_CATEGORIES] = {
    "reset", "programming_errors", "driver_errors", "compute_errors",
    "non_compute_errors", "cache_errors", "display_errors",
};

#define G TELEM_METRIC_GAUGE
#define C TELEM_METRIC_COUNTER
static const telem_meta_t s_metrics[] = {
    TELEM_GPU_META_UTILIZATION,
    TELEM_GPU_META_POWER,
    TELEM_GPU_META_ENERGY,
    TELEM_GPU_META_TEMPERATURE,
    TELEM_GPU_META_TEMPERATURE_MEMORY,
    TELEM_GPU_META_MEMORY_USED,
    TELEM_GPU_META_MEMORY_TOTAL,
    TELEM_GPU_META_SM_CLOCK,
    TELEM_GPU_META_MEMORY_CLOCK,
    {"gpu_throttle_reasons", G, "",
     "Sysman's throttle reasons bitmask of the GPU clock (tags gpu, "
     "vendor)."},
    TELEM_GPU_META_THROTTLED,
    TELEM_GPU_META_CLOCKS_EVENT,
    {"gpu_ras_errors_total", C, "",
     "RAS errors of the type (correctable, uncorrectable) and category "
     "named by the tags (tags gpu, vendor, type, category)."},
    TELEM_GPU_META_LOST,
    {NULL, G, NULL, NULL}
};
#undef G
#undef C

static void
s_put(s_call_t *c, const char *metric, double v)
{
    telem_tag_t tags[2] = {{"gpu", c->g->tag}, {"vendor", "intel"}};
    c->emit(c->arg, metric, tags, 2, v);
    c->n++;
}

static void
s_put4(s_call_t *c, const char *metric, const char *k1, const char *v1,
       const char *k2, const char *v2, double v)
{
    telem_tag_t tags[4] = {{"gpu", c->g->tag}, {"vendor", "intel"},
                           {k1, v1}, {k2, v2}};
    c->emit(c->arg, metric, tags, k2 ? 4 : 3, v);
    c->n++;
}

static bool
s_ok(s_call_t *c, tze_result_t rc)
{
    if (rc == TZE_ERROR_DEVICE_LOST)
        c->lost = true;
    c->answered += rc == TZE_SUCCESS;
    return rc == TZE_SUCCESS;
}

/* ---- the fields -------------------------------------------------------- */

/* The rate of counter `now` against *prev (value per timestamp unit). */
static bool
s_rate(tzes_counter_t now, tzes_counter_t *prev, bool *have, double *rate)
{
    bool ok = *have && now.timestamp > prev->timestamp
              && now.value >= prev->value;
    if (ok)
        *rate = (double) (now.value - prev->value)
                / (double) (now.timestamp - prev->timestamp);
    *prev = now;
    *have = true;
    return ok;
}

static void
s_engine_power(s_call_t *c)
{
    s_gpu_t *g = c->g;
    tzes_counter_t now;
    double r;
    if (g->engine && s_ok(c, c->a->engine_activity(g->engine, &now))
        && s_rate(now, &g->engine_prev, &g->have_engine_prev, &r))
        s_put(c, "gpu_utilization", r > 1 ? 100 : r * 100);
    if (c->lost || !g->power || !s_ok(c, c->a->power_energy(g->power, &now)))
        return;
    s_put(c, "gpu_energy_joules_total", (double) now.value / 1e6);
    if (s_rate(now, &g->power_prev, &g->have_power_prev, &r))
        s_put(c, "gpu_power_w", r);    /* uJ per us */
}

static void
s_memory_temp(s_call_t *c)
{
    s_gpu_t *g = c->g;
    double used = 0, total = 0;
    uint32_t answered = 0;
    for (uint32_t i = 0; i < g->nmem && !c->lost; i++) {
        tzes_mem_state_t st = {.stype = TZES_STYPE_MEM_STATE};
        if (!s_ok(c, c->a->memory_state(g->mem[i], &st)))
            continue;
        answered++;
        total += (double) st.size;
        used += st.size > st.free ? (double) (st.size - st.free) : 0;
    }
    if (answered) {
        s_put(c, "gpu_memory_used_bytes", used);
        s_put(c, "gpu_memory_total_bytes", total);
    }
    double hot[2] = {-1e9, -1e9};
    for (uint32_t i = 0; i < g->ntemp && !c->lost; i++) {
        double t;
        int k = g->temp_type[i] == TZES_TEMP_SENSORS_GPU ? 0 : 1;
        if (s_ok(c, c->a->temperature_state(g->temp[i], &t)) && t > hot[k])
            hot[k] = t;
    }
    if (hot[0] > -1e9)
        s_put(c, "gpu_temperature_c", hot[0]);
    if (hot[1] > -1e9)
        s_put(c, "gpu_temperature_memory_c", hot[1]);
}

static void
s_frequency(s_call_t *c)
{
    static const char *const clocks[2] = {"gpu_sm_clock_hertz",
                                          "gpu_memory_clock_hertz"};
    for (int k = 0; k < 2 && !c->lost; k++) {
        tzes_freq_state_t st = {.stype = TZES_STYPE_FREQ_STATE};
        if (!c->g->freq[k]
            || !s_ok(c, c->a->frequency_state(c->g->freq[k], &st)))
            continue;
        if (st.actual >= 0)
            s_put(c, clocks[k], st.actual * 1e6);
        if (k != 0)
            continue;
        s_put(c, "gpu_throttle_reasons", st.throttleReasons);
        s_put(c, "gpu_throttled", st.throttleReasons != 0);
        for (size_t b = 0; b < sizeof s_reasons / sizeof s_reasons[0]; b++)
            s_put4(c, "gpu_clocks_event", "reason", s_reasons[b], NULL,
                   NULL, (st.throttleReasons >> b) & 1u);
    }
}

static void
s_ras(s_call_t *c)
{
    for (uint32_t i = 0; i < c->g->nras && !c->lost; i++) {
        tzes_ras_state_t st = {.stype = TZES_STYPE_RAS_STATE};
        if (!s_ok(c, c->a->ras_state(c->g->ras[i], 0, &st)))
            continue;
        const char *type = c->g->ras_type[i] == TZES_RAS_ERROR_TYPE_CORRECTABLE
                           ? "correctable" : "uncorrectable";
        for (int k = 0; k < TZES_RAS_CATEGORIES; k++)
            s_put4(c, "gpu_ras_errors_total", "type", type, "category",
                   s_categories[k], (double) st.category[k]);
    }
}

/* ---- open, sample, close ----------------------------------------------- */

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_ze_t *self = *state_p;
    if (self->lib)
        dlclose(self->lib);   /* Level Zero has no shutdown call */
    free(self);
    *state_p = NULL;
}

/* Type and onSubdevice of resource h, through props (NULL: fails).  The
 * engine, temperature, frequency and RAS properties share their head. */
static bool
s_props(tzes_props_fn props, tze_handle_t h, uint32_t stype,
        uint32_t *type, bool *sub)
{
    union {
        tzes_engine_properties_t head;
        tzes_temp_properties_t temp;
        tzes_freq_properties_t freq;
    } p;
    memset(&p, 0, sizeof p);
    p.head.stype = stype;
    if (!props || props(h, &p) != TZE_SUCCESS)
        return false;
    *type = p.head.type;
    *sub = p.head.onSubdevice != 0;
    return true;
}

static void
s_find_resources(const tze_api_t *a, s_gpu_t *g)
{
    tze_handle_t h[S_RES_MAX];
    uint32_t n = telem_ze_enum(a->enum_engines, g->dev, h, S_RES_MAX), type;
    bool sub;
    for (int want = 0; want < 2 && !g->engine && a->engine_activity; want++)
        for (uint32_t i = 0; i < n && !g->engine; i++)
            if (s_props(a->engine_properties, h[i],
                        TZES_STYPE_ENGINE_PROPERTIES, &type, &sub)
                && !sub && type == (uint32_t) want)
                g->engine = h[i];
    if (a->memory_state)
        g->nmem = telem_ze_enum(a->enum_memory, g->dev, g->mem, S_RES_MAX);
    n = telem_ze_enum(a->enum_power, g->dev, h, S_RES_MAX);
    for (uint32_t i = 0; i < n && a->power_energy && !g->power; i++) {
        tzes_power_properties_t p = {.stype = TZES_STYPE_POWER_PROPERTIES};
        if (a->power_properties && a->power_properties(h[i], &p) == 0
            && !p.onSubdevice)
            g->power = h[i];
    }
    n = telem_ze_enum(a->enum_temperature, g->dev, h, S_RES_MAX);
    for (uint32_t i = 0; i < n && a->temperature_state; i++)
        if (s_props(a->temperature_properties, h[i],
                    TZES_STYPE_TEMP_PROPERTIES, &type, &sub)
            && (type == TZES_TEMP_SENSORS_GPU
                || type == TZES_TEMP_SENSORS_MEMORY)) {
            g->temp_type[g->ntemp] = type;
            g->temp[g->ntemp++] = h[i];
        }
    n = telem_ze_enum(a->enum_frequency, g->dev, h, S_RES_MAX);
    for (uint32_t i = 0; i < n && a->frequency_state; i++)
        if (s_props(a->frequency_properties, h[i],
                    TZES_STYPE_FREQ_PROPERTIES, &type, &sub)
            && !sub && type <= TZES_FREQ_DOMAIN_MEMORY && !g->freq[type])
            g->freq[type] = h[i];
    n = telem_ze_enum(a->enum_ras, g->dev, h, 4);
    for (uint32_t i = 0; i < n && a->ras_state; i++)
        if (s_props(a->ras_properties, h[i], TZES_STYPE_RAS_PROPERTIES,
                    &type, &sub)) {
            g->ras_type[g->nras] = type;
            g->ras[g->nras++] = h[i];
        }
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_ze_t *self = env ? calloc(1, sizeof *self) : NULL;
    if (!self) {
        if (err)
            *err = env ? TELEM_ENOMEM : TELEM_EINVAL;
        return NULL;
    }
    int rc = TELEM_EUNSUPPORTED;
    self->lib = telem_ze_load(env->ze_library, &self->api);
    tze_device_t devs[S_GPUS_MAX];
    int n = self->lib ? telem_ze_devices(&self->api, devs, S_GPUS_MAX) : -1;
    for (int i = 0; i < n; i++) {
        s_gpu_t *g = &self->gpus[i];
        g->dev = devs[i];
        snprintf(g->tag, sizeof g->tag, "%d", i);
        s_find_resources(&self->api, g);
    }
    if (n > 0) {
        self->ngpus = n;
        rc = 0;
    }
    char missing[1024];
    if (rc == 0 && telem_ze_missing(&self->api, missing, sizeof missing))
        telem_log(TELEM_LOG_INFO, "ze: the loader lacks %s: the values they "
                  "give are not sampled", missing);
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    return self;
}

/* One GPU: the groups of fields until the device is lost, then gpu_lost
 * (lost, or no query answered). */
static int
s_sample_gpu(void *state, size_t i, telem_sampler_emit_fn emit, void *arg)
{
    static void (*const groups[])(s_call_t *) = {s_engine_power,
                                                 s_memory_temp, s_frequency,
                                                 s_ras};
    s_ze_t *self = state;
    s_call_t c = {&self->api, &self->gpus[i], emit, arg, 0, 0, false};
    for (size_t k = 0; k < sizeof groups / sizeof groups[0] && !c.lost; k++)
        groups[k](&c);
    int n = c.n;
    s_put(&c, "gpu_lost", c.lost || c.answered == 0);
    return n;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    const s_ze_t *self = state;
    return telem_gpulib_sample(state, self ? (size_t) self->ngpus : 0,
                               s_sample_gpu, emit, arg);
}

const telem_sampler_vt_t telem_sampler_ze = {
    .name = "ze",
    .min_level = 3,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
