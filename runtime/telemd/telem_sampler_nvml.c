/* telem_sampler_nvml.c - level 3 GPU metrics through NVML, loaded at run time.
 *
 * libnvidia-ml is opened with dlopen() when the sampler opens, so telem
 * builds and runs without the NVIDIA driver or CUDA headers: the handful of
 * NVML types and entry points used here are declared below, matching the
 * NVML C ABI.  No library, a library without the entry points, an NVML that
 * fails to initialise (no driver loaded) or zero GPUs all make open() return
 * TELEM_EUNSUPPORTED, and telemd runs on without GPU metrics.
 *
 * Every metric carries the tag gpu=<NVML index>.  A query that fails for one
 * device (a GPU that does not report power, a GPU fallen off the bus) skips
 * that value for this call only; sample() fails only when no device
 * answered anything.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_sampler.h"

#define S_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define S_GPUS_MAX 64

/* The NVML ABI, as much of it as we use. */
typedef int s_nvml_return_t;            /* nvmlReturn_t; 0 is NVML_SUCCESS */
typedef struct s_nvml_device *s_nvml_device_t;   /* nvmlDevice_t, opaque */
typedef struct {
    unsigned int gpu;                   /* percent of time a kernel ran */
    unsigned int memory;                /* percent of time memory was busy */
} s_nvml_utilization_t;
typedef struct {
    unsigned long long total, free, used;   /* bytes */
} s_nvml_memory_t;
#define S_NVML_SUCCESS 0
#define S_NVML_TEMPERATURE_GPU 0

typedef struct {
    s_nvml_return_t (*init)(void);
    s_nvml_return_t (*shutdown)(void);
    s_nvml_return_t (*get_count)(unsigned int *);
    s_nvml_return_t (*get_handle)(unsigned int, s_nvml_device_t *);
    s_nvml_return_t (*get_utilization)(s_nvml_device_t,
                                       s_nvml_utilization_t *);
    s_nvml_return_t (*get_power)(s_nvml_device_t, unsigned int *);
    s_nvml_return_t (*get_temperature)(s_nvml_device_t, int, unsigned int *);
    s_nvml_return_t (*get_memory)(s_nvml_device_t, s_nvml_memory_t *);
} s_nvml_api_t;

typedef struct {
    void *lib;                  /* dlopen handle */
    s_nvml_api_t api;
    bool initialised;           /* nvmlInit succeeded: shut down on close */
    unsigned int ngpus;
    s_nvml_device_t gpus[S_GPUS_MAX];   /* NULL where the handle failed */
    char index[S_GPUS_MAX][12];         /* "0", "1", ...: tag values */
} s_nvml_t;

static const telem_meta_t s_metrics[] = {
    {"gpu_utilization", TELEM_METRIC_GAUGE, "percent",
     "Percent of the last sample period during which a kernel ran on the "
     "GPU (tag gpu), as NVML reports it."},
    {"gpu_memory_utilization", TELEM_METRIC_GAUGE, "percent",
     "Percent of the last sample period during which GPU memory was read "
     "or written (tag gpu)."},
    {"gpu_power_w", TELEM_METRIC_GAUGE, "W",
     "Power drawn by the GPU board (tag gpu)."},
    {"gpu_temperature_c", TELEM_METRIC_GAUGE, "celsius",
     "GPU die temperature (tag gpu)."},
    {"gpu_memory_used_bytes", TELEM_METRIC_GAUGE, "bytes",
     "GPU memory allocated, including the few hundred MiB the driver "
     "sets aside (tag gpu)."},
    {"gpu_memory_total_bytes", TELEM_METRIC_GAUGE, "bytes",
     "GPU memory installed (tag gpu)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

/* Resolves every entry point; false when one is missing. */
static bool
s_resolve(void *lib, s_nvml_api_t *api)
{
    static const char *const names[] = {
        "nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2",
        "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature",
        "nvmlDeviceGetMemoryInfo"
    };
    void *sym[sizeof names / sizeof names[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        sym[i] = dlsym(lib, names[i]);
        if (!sym[i])
            return false;
    }
    /* POSIX lets a dlsym() result become a function pointer (the two have
     * the same size and representation); memcpy does it without a cast
     * that ISO C leaves undefined. */
    memcpy(&api->init, &sym[0], sizeof api->init);
    memcpy(&api->shutdown, &sym[1], sizeof api->shutdown);
    memcpy(&api->get_count, &sym[2], sizeof api->get_count);
    memcpy(&api->get_handle, &sym[3], sizeof api->get_handle);
    memcpy(&api->get_utilization, &sym[4], sizeof api->get_utilization);
    memcpy(&api->get_power, &sym[5], sizeof api->get_power);
    memcpy(&api->get_temperature, &sym[6], sizeof api->get_temperature);
    memcpy(&api->get_memory, &sym[7], sizeof api->get_memory);
    return true;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_nvml_t *self = *state_p;
    if (self->initialised)
        self->api.shutdown();
    if (self->lib)
        dlclose(self->lib);
    free(self);
    *state_p = NULL;
}

/* Initialises NVML and takes a handle for each GPU.  Returns 0, or
 * TELEM_EUNSUPPORTED when NVML fails or sees no GPU. */
static int
s_open_devices(s_nvml_t *self)
{
    if (self->api.init() != S_NVML_SUCCESS)
        return TELEM_EUNSUPPORTED;
    self->initialised = true;
    unsigned int count = 0;
    if (self->api.get_count(&count) != S_NVML_SUCCESS || count == 0)
        return TELEM_EUNSUPPORTED;
    if (count > S_GPUS_MAX)
        count = S_GPUS_MAX;
    unsigned int nhandles = 0;
    for (unsigned int i = 0; i < count; i++) {
        if (self->api.get_handle(i, &self->gpus[i]) != S_NVML_SUCCESS)
            self->gpus[i] = NULL;
        else
            nhandles++;
        snprintf(self->index[i], sizeof self->index[i], "%u", i);
    }
    self->ngpus = count;
    return nhandles > 0 ? 0 : TELEM_EUNSUPPORTED;
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
    self->lib = dlopen(env->nvml_library ? env->nvml_library
                                         : S_DEFAULT_LIBRARY,
                       RTLD_NOW | RTLD_LOCAL);
    if (!self->lib || !s_resolve(self->lib, &self->api))
        goto out;
    rc = s_open_devices(self);
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

/* Emits what one GPU reports; returns how many values it gave. */
static int
s_sample_gpu(s_nvml_t *self, unsigned int i, telem_sampler_emit_fn emit,
             void *arg)
{
    s_nvml_device_t dev = self->gpus[i];
    telem_tag_t tag = {"gpu", self->index[i]};
    int n = 0;
    s_nvml_utilization_t util;
    if (self->api.get_utilization(dev, &util) == S_NVML_SUCCESS) {
        emit(arg, "gpu_utilization", &tag, 1, (double) util.gpu);
        emit(arg, "gpu_memory_utilization", &tag, 1, (double) util.memory);
        n += 2;
    }
    unsigned int mw;
    if (self->api.get_power(dev, &mw) == S_NVML_SUCCESS) {
        emit(arg, "gpu_power_w", &tag, 1, (double) mw / 1000.0);
        n++;
    }
    unsigned int temp;
    if (self->api.get_temperature(dev, S_NVML_TEMPERATURE_GPU, &temp)
        == S_NVML_SUCCESS) {
        emit(arg, "gpu_temperature_c", &tag, 1, (double) temp);
        n++;
    }
    s_nvml_memory_t mem;
    if (self->api.get_memory(dev, &mem) == S_NVML_SUCCESS) {
        emit(arg, "gpu_memory_used_bytes", &tag, 1, (double) mem.used);
        emit(arg, "gpu_memory_total_bytes", &tag, 1, (double) mem.total);
        n += 2;
    }
    return n;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_nvml_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    int nvalues = 0;
    for (unsigned int i = 0; i < self->ngpus; i++)
        if (self->gpus[i])
            nvalues += s_sample_gpu(self, i, emit, arg);
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
