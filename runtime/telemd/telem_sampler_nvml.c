/* telem_sampler_nvml.c - level 3 GPU metrics through NVML, loaded at run time.
 *
 * libnvidia-ml is opened with dlopen() when the sampler opens
 * (telem_nvml.c), so telem builds and runs without the NVIDIA driver or
 * CUDA headers.  No library, a library without NVML's four required entry
 * points, an NVML that fails to initialise (no driver loaded) or zero GPUs
 * all make open() return TELEM_EUNSUPPORTED, and telemd runs on without
 * GPU metrics.  An older driver that lacks an optional entry point loses
 * only the series that need it: open() logs one line naming what is
 * missing (this sampler logs, unlike the others, because only it can say
 * which fields an old driver leaves out).
 *
 * Every metric carries the tag gpu=<NVML index>; NVLink counters add
 * link=<link>, the clock-event flags reason=<name>, XID counts xid=<code>.
 * A query that fails for one device (a GPU that does not report power,
 * a field the board does not have) skips that value for this call only; a
 * GPU that NVML calls lost (fallen off the bus) gives gpu_lost 1 and
 * nothing else for that call.  sample() fails only when no device
 * answered anything.  XID events come from a thread of their own
 * (telem_nvml_xid.c) and are counted here at each tick.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_gpu_meta.h"
#include "telem_log.h"
#include "telem_nvml.h"
#include "telem_nvml_xid.h"
#include "telem_sampler.h"

#define S_GPUS_MAX 64
#define S_XID_SEEN_MAX 256      /* distinct (gpu, xid) counted */

typedef struct {
    tnvml_device_t dev;         /* NULL where the handle failed */
    char index[12];             /* "0", "1", ...: the gpu tag */
    unsigned int nlinks;        /* NVLinks that answered at open */
    unsigned char links[TNVML_NVLINK_MAX_LINKS];
    char link_tag[TNVML_NVLINK_MAX_LINKS][4];
    bool have_xid;
    unsigned long long xid_last;
} s_gpu_t;

typedef struct {
    unsigned int gpu;
    char code[24];              /* the xid tag */
    double count;
} s_xid_seen_t;

typedef struct {
    void *lib;                  /* dlopen handle */
    tnvml_api_t api;
    bool initialised;           /* nvmlInit succeeded: shut down on close */
    unsigned int ngpus;
    s_gpu_t gpus[S_GPUS_MAX];
    tnvml_xid_t *xid;           /* NULL: no XID events here */
    s_xid_seen_t seen[S_XID_SEEN_MAX];
    size_t nseen;
} s_nvml_t;

/* One NVML call's context: the device, where to emit, what was given. */
typedef struct {
    s_nvml_t *self;
    s_gpu_t *g;
    telem_sampler_emit_fn emit;
    void *arg;
    int n;                      /* values emitted */
    bool lost;                  /* NVML said GPU_IS_LOST */
} s_call_t;

/* The clock-event (throttle) reasons NVML names, bit by bit. */
static const struct {
    unsigned long long bit;
    const char *name;
} s_reasons[] = {
    {0x1, "gpu_idle"}, {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"}, {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"}, {0x100, "display_clock_setting"},
};
#define S_NREASONS (sizeof s_reasons / sizeof s_reasons[0])

#define G TELEM_METRIC_GAUGE
#define C TELEM_METRIC_COUNTER
static const telem_meta_t s_metrics[] = {
    TELEM_GPU_META_UTILIZATION,
    TELEM_GPU_META_MEMORY_UTILIZATION,
    TELEM_GPU_META_POWER,
    TELEM_GPU_META_TEMPERATURE,
    TELEM_GPU_META_MEMORY_USED,
    TELEM_GPU_META_MEMORY_TOTAL,
    TELEM_GPU_META_SM_CLOCK,
    TELEM_GPU_META_MEMORY_CLOCK,
    TELEM_GPU_META_POWER_LIMIT,
    TELEM_GPU_META_ENERGY,
    {"gpu_clocks_event_reasons", G, "",
     "NVML's clock-event (throttle) reasons bitmask: why the clocks are "
     "below their maximum (tag gpu)."},
    TELEM_GPU_META_CLOCKS_EVENT,
    TELEM_GPU_META_ECC_CORRECTED,
    TELEM_GPU_META_ECC_UNCORRECTED,
    {"gpu_retired_pages_sbe", G, "",
     "Memory pages retired for multiple single-bit ECC errors (tag gpu)."},
    {"gpu_retired_pages_dbe", G, "",
     "Memory pages retired for a double-bit ECC error (tag gpu)."},
    {"gpu_retired_pages_pending", G, "",
     "1 while a page retirement waits for the next driver load (tag gpu)."},
    {"gpu_remapped_rows_correctable", G, "",
     "Memory rows remapped for correctable errors (tag gpu)."},
    {"gpu_remapped_rows_uncorrectable", G, "",
     "Memory rows remapped for uncorrectable errors (tag gpu)."},
    {"gpu_remapped_rows_pending", G, "",
     "1 while a row remapping waits for a GPU reset (tag gpu)."},
    {"gpu_remapped_rows_failure", G, "",
     "1 once a row remapping failed: the GPU needs service (tag gpu)."},
    {"gpu_pcie_replays_total", C, "",
     "PCIe replays (retransmissions) of the GPU's link (tag gpu)."},
    {"gpu_nvlink_active", G, "",
     "1 while the NVLink named by tag link is active, else 0 (tags gpu, "
     "link)."},
    {"gpu_nvlink_crc_flit_errors_total", C, "",
     "NVLink data-link CRC errors in flow-control digits (tags gpu, link)."},
    {"gpu_nvlink_crc_data_errors_total", C, "",
     "NVLink data-link CRC errors in data (tags gpu, link)."},
    {"gpu_nvlink_replay_errors_total", C, "",
     "NVLink data-link replays (tags gpu, link)."},
    {"gpu_nvlink_recovery_errors_total", C, "",
     "NVLink data-link recoveries (tags gpu, link)."},
    {"gpu_recovery_action", G, "",
     "What the driver asks for: 0 none, 1 GPU reset, 2 node reboot, 3 "
     "drain peer-to-peer, 4 drain and reset (tag gpu; only where the "
     "driver has the field)."},
    TELEM_GPU_META_LOST,
    {"gpu_xid_last", G, "",
     "Code of the most recent XID error event of the GPU since telemd "
     "started (tag gpu; absent until one arrives)."},
    {"gpu_xid_total", C, "",
     "XID error events of the code named by tag xid since telemd started "
     "(tags gpu, xid; a series appears with its first event)."},
    {NULL, G, NULL, NULL}
};
#undef G
#undef C

/* ---- emitting ---------------------------------------------------------- */

static void
s_put(s_call_t *c, const char *metric, double v)
{
    telem_tag_t tag = {"gpu", c->g->index};
    c->emit(c->arg, metric, &tag, 1, v);
    c->n++;
}

static void
s_put2(s_call_t *c, const char *metric, const char *key, const char *val,
       double v)
{
    telem_tag_t tags[2] = {{"gpu", c->g->index}, {key, val}};
    c->emit(c->arg, metric, tags, 2, v);
    c->n++;
}

/* True when rc is a success; notes a lost GPU. */
static bool
s_ok(s_call_t *c, tnvml_return_t rc)
{
    if (rc == TNVML_ERROR_GPU_IS_LOST)
        c->lost = true;
    return rc == TNVML_SUCCESS;
}

/* ---- the fields, by group ---------------------------------------------- */

static void
s_basic(s_call_t *c)
{
    const tnvml_api_t *a = &c->self->api;
    tnvml_device_t d = c->g->dev;
    tnvml_utilization_t u;
    if (a->get_utilization && s_ok(c, a->get_utilization(d, &u))) {
        s_put(c, "gpu_utilization", u.gpu);
        s_put(c, "gpu_memory_utilization", u.memory);
    }
    unsigned int mw, t;
    if (!c->lost && a->get_power && s_ok(c, a->get_power(d, &mw)))
        s_put(c, "gpu_power_w", mw / 1000.0);
    if (!c->lost && a->get_temperature
        && s_ok(c, a->get_temperature(d, TNVML_TEMPERATURE_GPU, &t)))
        s_put(c, "gpu_temperature_c", t);
    tnvml_memory_t m;
    if (!c->lost && a->get_memory && s_ok(c, a->get_memory(d, &m))) {
        s_put(c, "gpu_memory_used_bytes", (double) m.used);
        s_put(c, "gpu_memory_total_bytes", (double) m.total);
    }
}

static void
s_clocks_power(s_call_t *c)
{
    const tnvml_api_t *a = &c->self->api;
    tnvml_device_t d = c->g->dev;
    unsigned int mhz, mw;
    if (a->get_clock && s_ok(c, a->get_clock(d, TNVML_CLOCK_SM, &mhz)))
        s_put(c, "gpu_sm_clock_hertz", mhz * 1e6);
    if (!c->lost && a->get_clock
        && s_ok(c, a->get_clock(d, TNVML_CLOCK_MEM, &mhz)))
        s_put(c, "gpu_memory_clock_hertz", mhz * 1e6);
    if (!c->lost && a->get_power_limit && s_ok(c, a->get_power_limit(d, &mw)))
        s_put(c, "gpu_power_limit_w", mw / 1000.0);
    unsigned long long mj, mask;
    if (!c->lost && a->get_energy && s_ok(c, a->get_energy(d, &mj)))
        s_put(c, "gpu_energy_joules_total", (double) mj / 1000.0);
    if (c->lost || !a->get_clocks_event
        || !s_ok(c, a->get_clocks_event(d, &mask)))
        return;
    s_put(c, "gpu_clocks_event_reasons", (double) mask);
    for (size_t i = 0; i < S_NREASONS; i++)
        s_put2(c, "gpu_clocks_event", "reason", s_reasons[i].name,
               (mask & s_reasons[i].bit) ? 1 : 0);
}

static void
s_memory_health(s_call_t *c)
{
    const tnvml_api_t *a = &c->self->api;
    tnvml_device_t d = c->g->dev;
    unsigned long long n;
    if (a->get_ecc && s_ok(c, a->get_ecc(d, TNVML_MEMORY_ERROR_CORRECTED,
                                         TNVML_VOLATILE_ECC, &n)))
        s_put(c, "gpu_ecc_corrected_errors_total", (double) n);
    if (!c->lost && a->get_ecc
        && s_ok(c, a->get_ecc(d, TNVML_MEMORY_ERROR_UNCORRECTED,
                              TNVML_VOLATILE_ECC, &n)))
        s_put(c, "gpu_ecc_uncorrected_errors_total", (double) n);
    /* A count of 0 asks only for the count: NVML answers SUCCESS (none)
     * or INSUFFICIENT_SIZE with the count set. */
    static const char *const pages[] = {"gpu_retired_pages_sbe",
                                        "gpu_retired_pages_dbe"};
    for (int cause = 0; cause < 2 && !c->lost && a->get_retired_pages;
         cause++) {
        unsigned int count = 0;
        tnvml_return_t rc = a->get_retired_pages(d, cause, &count, NULL);
        if (s_ok(c, rc) || rc == TNVML_ERROR_INSUFFICIENT_SIZE)
            s_put(c, pages[cause], count);
    }
    unsigned int pending, corr, unc, fail;
    if (!c->lost && a->get_retired_pending
        && s_ok(c, a->get_retired_pending(d, &pending)))
        s_put(c, "gpu_retired_pages_pending", pending != 0);
    if (!c->lost && a->get_remapped_rows
        && s_ok(c, a->get_remapped_rows(d, &corr, &unc, &pending, &fail))) {
        s_put(c, "gpu_remapped_rows_correctable", corr);
        s_put(c, "gpu_remapped_rows_uncorrectable", unc);
        s_put(c, "gpu_remapped_rows_pending", pending != 0);
        s_put(c, "gpu_remapped_rows_failure", fail != 0);
    }
}

static void
s_links(s_call_t *c)
{
    static const struct {
        int counter;
        const char *metric;
    } errs[] = {
        {TNVML_NVLINK_ERROR_DL_CRC_FLIT, "gpu_nvlink_crc_flit_errors_total"},
        {TNVML_NVLINK_ERROR_DL_CRC_DATA, "gpu_nvlink_crc_data_errors_total"},
        {TNVML_NVLINK_ERROR_DL_REPLAY, "gpu_nvlink_replay_errors_total"},
        {TNVML_NVLINK_ERROR_DL_RECOVERY, "gpu_nvlink_recovery_errors_total"},
    };
    const tnvml_api_t *a = &c->self->api;
    tnvml_device_t d = c->g->dev;
    unsigned int replays;
    if (a->get_pcie_replay && s_ok(c, a->get_pcie_replay(d, &replays)))
        s_put(c, "gpu_pcie_replays_total", replays);
    for (unsigned int i = 0; i < c->g->nlinks && !c->lost; i++) {
        unsigned int link = c->g->links[i], active;
        const char *tag = c->g->link_tag[i];
        if (s_ok(c, a->get_nvlink_state(d, link, &active)))
            s_put2(c, "gpu_nvlink_active", "link", tag, active != 0);
        for (size_t k = 0; k < 4 && !c->lost && a->get_nvlink_errors; k++) {
            unsigned long long v;
            if (s_ok(c, a->get_nvlink_errors(d, link, errs[k].counter, &v)))
                s_put2(c, errs[k].metric, "link", tag, (double) v);
        }
    }
}

static void
s_recovery(s_call_t *c)
{
    const tnvml_api_t *a = &c->self->api;
    if (!a->get_field_values)
        return;
    tnvml_field_value_t f;
    memset(&f, 0, sizeof f);
    f.field_id = TNVML_FI_GPU_RECOVERY_ACTION;
    if (!s_ok(c, a->get_field_values(c->g->dev, 1, &f))
        || f.nvml_return != TNVML_SUCCESS)
        return;                 /* a driver without the field: no series */
    double v;
    switch (f.value_type) {
    case TNVML_VALUE_UINT: v = f.value.ui; break;
    case TNVML_VALUE_ULONG: v = (double) f.value.ul; break;
    case TNVML_VALUE_ULONGLONG: v = (double) f.value.ull; break;
    case TNVML_VALUE_SLONGLONG: v = (double) f.value.sll; break;
    case TNVML_VALUE_SINT: v = f.value.si; break;
    default: return;
    }
    s_put(c, "gpu_recovery_action", v);
}

/* ---- XIDs -------------------------------------------------------------- */

static s_xid_seen_t *
s_seen(s_nvml_t *self, unsigned int gpu, unsigned long long xid)
{
    char code[24];
    snprintf(code, sizeof code, "%llu", xid);
    for (size_t i = 0; i < self->nseen; i++)
        if (self->seen[i].gpu == gpu && strcmp(self->seen[i].code, code) == 0)
            return &self->seen[i];
    if (self->nseen == S_XID_SEEN_MAX)
        return NULL;
    s_xid_seen_t *s = &self->seen[self->nseen++];
    s->gpu = gpu;
    memcpy(s->code, code, sizeof code);
    s->count = 0;
    return s;
}

/* Counts the XIDs that came since the last tick, then emits them all. */
static int
s_xids(s_nvml_t *self, telem_sampler_emit_fn emit, void *arg)
{
    tnvml_xid_rec_t recs[64];
    size_t n;
    while ((n = tnvml_xid_take(self->xid, recs, 64, NULL)) > 0)
        for (size_t i = 0; i < n; i++) {
            s_gpu_t *g = &self->gpus[recs[i].gpu];
            g->have_xid = true;
            g->xid_last = recs[i].xid;
            s_xid_seen_t *s = s_seen(self, recs[i].gpu, recs[i].xid);
            if (s)
                s->count++;
        }
    int emitted = 0;
    for (unsigned int i = 0; i < self->ngpus; i++)
        if (self->gpus[i].have_xid) {
            telem_tag_t tag = {"gpu", self->gpus[i].index};
            emit(arg, "gpu_xid_last", &tag, 1,
                 (double) self->gpus[i].xid_last);
            emitted++;
        }
    for (size_t i = 0; i < self->nseen; i++) {
        telem_tag_t tags[2] = {{"gpu", self->gpus[self->seen[i].gpu].index},
                               {"xid", self->seen[i].code}};
        emit(arg, "gpu_xid_total", tags, 2, self->seen[i].count);
        emitted++;
    }
    return emitted;
}

/* ---- open, sample, close ----------------------------------------------- */

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_nvml_t *self = *state_p;
    tnvml_xid_stop(&self->xid);
    if (self->initialised)
        self->api.shutdown();
    if (self->lib)
        dlclose(self->lib);
    free(self);
    *state_p = NULL;
}

/* The NVLinks of g that answer (active or not). */
static void
s_find_links(s_nvml_t *self, s_gpu_t *g)
{
    if (!self->api.get_nvlink_state)
        return;
    for (unsigned int l = 0; l < TNVML_NVLINK_MAX_LINKS; l++) {
        unsigned int active;
        if (self->api.get_nvlink_state(g->dev, l, &active) != TNVML_SUCCESS)
            continue;
        g->links[g->nlinks] = (unsigned char) l;
        snprintf(g->link_tag[g->nlinks], sizeof g->link_tag[0], "%u", l);
        g->nlinks++;
    }
}

/* Initialises NVML and takes a handle for each GPU.  Returns 0, or
 * TELEM_EUNSUPPORTED when NVML fails or sees no GPU. */
static int
s_open_devices(s_nvml_t *self)
{
    if (self->api.init() != TNVML_SUCCESS)
        return TELEM_EUNSUPPORTED;
    self->initialised = true;
    unsigned int count = 0;
    if (self->api.get_count(&count) != TNVML_SUCCESS || count == 0)
        return TELEM_EUNSUPPORTED;
    if (count > S_GPUS_MAX)
        count = S_GPUS_MAX;
    unsigned int nhandles = 0;
    tnvml_device_t devs[S_GPUS_MAX];
    for (unsigned int i = 0; i < count; i++) {
        s_gpu_t *g = &self->gpus[i];
        if (self->api.get_handle(i, &g->dev) != TNVML_SUCCESS)
            g->dev = NULL;
        else {
            nhandles++;
            s_find_links(self, g);
        }
        devs[i] = g->dev;
        snprintf(g->index, sizeof g->index, "%u", i);
    }
    self->ngpus = count;
    if (nhandles == 0)
        return TELEM_EUNSUPPORTED;
    int rc;
    self->xid = tnvml_xid_start(&self->api, devs, count, &rc);
    if (!self->xid)
        telem_log(TELEM_LOG_INFO, "nvml: no XID events here (%s): "
                  "gpu_xid_* are not recorded", telem_strerror(rc));
    return 0;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    int rc = TELEM_EINVAL;
    s_nvml_t *self = env ? calloc(1, sizeof *self) : NULL;
    if (!self) {
        if (err)
            *err = env ? TELEM_ENOMEM : rc;
        return NULL;
    }
    rc = TELEM_EUNSUPPORTED;
    self->lib = telem_nvml_load(env->nvml_library, &self->api);
    if (!self->lib)
        goto out;
    rc = s_open_devices(self);
    char missing[1024];
    if (rc == 0 && telem_nvml_missing(&self->api, missing, sizeof missing))
        telem_log(TELEM_LOG_INFO, "nvml: the driver's library lacks %s: the "
                  "values they give are not sampled", missing);
out:
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    return self;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_nvml_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    int nvalues = 0;
    for (unsigned int i = 0; i < self->ngpus; i++) {
        if (!self->gpus[i].dev)
            continue;
        s_call_t c = {self, &self->gpus[i], emit, arg, 0, false};
        void (*const groups[])(s_call_t *) = {s_basic, s_clocks_power,
                                              s_memory_health, s_links,
                                              s_recovery};
        for (size_t k = 0; k < 5 && !c.lost; k++)
            groups[k](&c);
        s_put(&c, "gpu_lost", c.lost);
        nvalues += c.n - 1;
    }
    if (self->xid)
        nvalues += s_xids(self, emit, arg);
    return nvalues > 0 ? 0 : TELEM_EIO;
}

const telem_sampler_vt_t telem_sampler_nvml = {
    .name = "nvml",
    .min_level = 3,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
