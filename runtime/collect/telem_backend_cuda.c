/* telem_backend_cuda.c - the cuda device backend, through the driver API
 * loaded at run time.
 *
 * libcuda.so.1 ($TELEM_CUDA_LIBRARY overrides) is opened with dlopen when
 * the backend opens, so telem builds without CUDA and runs where there is
 * none: the few driver types and entry points used are declared here,
 * matching the CUDA driver C ABI.  No library, a missing entry point,
 * cuInit failing (no driver, no device) all give TELEM_EUNSUPPORTED and a
 * sentence; the caller logs it once.
 *
 * A device is a CUDA ordinal.  bind() makes the device's primary context
 * current on the calling thread.  The kernel "fma" is a fixed PTX module
 * (below) loaded with cuModuleLoadData, so the driver JIT-compiles it for
 * whatever GPU is there: S_GRID blocks of S_BLOCK threads, each running a
 * dependent chain of 8 x S_ITERS single-precision FMAs and storing the
 * result (so nothing can be optimised away).  On an H100 a repetition
 * takes a few milliseconds.  A repetition is timed with two events around
 * the launch, after cuCtxSynchronize has drained earlier work, so only this
 * kernel's execution is measured.  The load launches the same kernel back
 * to back until its time is used up.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_backend.h"
#include "telem_error.h"
#include "telem_time.h"

#define S_DEFAULT_LIBRARY "libcuda.so.1"
#define S_GRID 1024u
#define S_BLOCK 256u
#define S_ITERS 32768u
#define S_DEVICES_MAX 256

/* The CUDA driver ABI, as much of it as we use. */
typedef int s_cu_result_t;                  /* CUresult; 0 is CUDA_SUCCESS */
typedef int s_cu_device_t;                  /* CUdevice */
typedef struct s_cu_ctx *s_cu_ctx_t;        /* CUcontext */
typedef struct s_cu_mod *s_cu_module_t;     /* CUmodule */
typedef struct s_cu_fn *s_cu_function_t;    /* CUfunction */
typedef struct s_cu_event *s_cu_event_t;    /* CUevent */
typedef struct s_cu_stream *s_cu_stream_t;  /* CUstream; NULL = default */
typedef unsigned long long s_cu_deviceptr_t;

typedef struct {
    s_cu_result_t (*init)(unsigned int);
    s_cu_result_t (*device_count)(int *);
    s_cu_result_t (*device_get)(s_cu_device_t *, int);
    s_cu_result_t (*device_name)(char *, int, s_cu_device_t);
    s_cu_result_t (*device_bus_id)(char *, int, s_cu_device_t);
    s_cu_result_t (*ctx_retain)(s_cu_ctx_t *, s_cu_device_t);
    s_cu_result_t (*ctx_release)(s_cu_device_t);
    s_cu_result_t (*ctx_set_current)(s_cu_ctx_t);
    s_cu_result_t (*ctx_synchronize)(void);
    s_cu_result_t (*module_load_data)(s_cu_module_t *, const void *);
    s_cu_result_t (*module_get_function)(s_cu_function_t *, s_cu_module_t,
                                         const char *);
    s_cu_result_t (*module_unload)(s_cu_module_t);
    s_cu_result_t (*launch)(s_cu_function_t, unsigned, unsigned, unsigned,
                            unsigned, unsigned, unsigned, unsigned,
                            s_cu_stream_t, void **, void **);
    s_cu_result_t (*event_create)(s_cu_event_t *, unsigned int);
    s_cu_result_t (*event_record)(s_cu_event_t, s_cu_stream_t);
    s_cu_result_t (*event_synchronize)(s_cu_event_t);
    s_cu_result_t (*event_elapsed)(float *, s_cu_event_t, s_cu_event_t);
    s_cu_result_t (*event_destroy)(s_cu_event_t);
    s_cu_result_t (*mem_alloc)(s_cu_deviceptr_t *, size_t);
    s_cu_result_t (*mem_free)(s_cu_deviceptr_t);
    s_cu_result_t (*error_name)(s_cu_result_t, const char **);
} s_cu_api_t;

typedef struct {
    void *lib;
    s_cu_api_t api;
    int ndevs;
    s_cu_device_t devs[S_DEVICES_MAX];
    s_cu_ctx_t ctx[S_DEVICES_MAX];          /* retained primary contexts */
} s_cuda_t;

/* One prepared FMA kernel on one device (also used by the load). */
typedef struct {
    const s_cu_api_t *api;
    s_cu_ctx_t ctx;
    s_cu_module_t module;
    s_cu_function_t fn;
    s_cu_deviceptr_t out;
    s_cu_event_t start, stop;
} s_fma_t;

static const char *const s_kernels[] = { "fma", NULL };

/* The kernel: out[i] = the end of a dependent FMA chain of thread i. */
static const char s_ptx[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry telem_fma(\n"
    "    .param .u64 telem_fma_out,\n"
    "    .param .u32 telem_fma_iters\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .f32 %f<4>;\n"
    "    .reg .b32 %r<8>;\n"
    "    .reg .b64 %rd<4>;\n"
    "    ld.param.u64 %rd1, [telem_fma_out];\n"
    "    ld.param.u32 %r1, [telem_fma_iters];\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %tid.x;\n"
    "    mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "    cvt.rn.f32.u32 %f1, %r5;\n"
    "    mov.f32 %f2, 0f3F7FFFEF;\n"
    "    mov.f32 %f3, 0f3A83126F;\n"
    "    mul.f32 %f1, %f1, %f3;\n"
    "    mov.u32 %r6, 0;\n"
    "$L_loop:\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    fma.rn.f32 %f1, %f1, %f2, %f3;\n"
    "    add.s32 %r6, %r6, 1;\n"
    "    setp.lt.u32 %p1, %r6, %r1;\n"
    "    @%p1 bra $L_loop;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mul.wide.u32 %rd3, %r5, 4;\n"
    "    add.s64 %rd2, %rd2, %rd3;\n"
    "    st.global.f32 [%rd2], %f1;\n"
    "    ret;\n"
    "}\n";

static const char *
s_err(const s_cu_api_t *api, s_cu_result_t r)
{
    const char *name = NULL;
    if (api->error_name && api->error_name(r, &name) == 0 && name)
        return name;
    return "CUDA error";
}

/* Resolves the first of two symbol names that exists. */
static void *
s_sym(void *lib, const char *name, const char *alt)
{
    void *p = dlsym(lib, name);
    return p || !alt ? p : dlsym(lib, alt);
}

static int
s_resolve(void *lib, s_cu_api_t *a)
{
#define S_BIND(field, name, alt) \
    (*(void **) &a->field = s_sym(lib, name, alt)) != NULL
    int ok = S_BIND(init, "cuInit", NULL)
        && S_BIND(device_count, "cuDeviceGetCount", NULL)
        && S_BIND(device_get, "cuDeviceGet", NULL)
        && S_BIND(device_name, "cuDeviceGetName", NULL)
        && S_BIND(device_bus_id, "cuDeviceGetPCIBusId", NULL)
        && S_BIND(ctx_retain, "cuDevicePrimaryCtxRetain", NULL)
        && S_BIND(ctx_release, "cuDevicePrimaryCtxRelease_v2",
                  "cuDevicePrimaryCtxRelease")
        && S_BIND(ctx_set_current, "cuCtxSetCurrent", NULL)
        && S_BIND(ctx_synchronize, "cuCtxSynchronize", NULL)
        && S_BIND(module_load_data, "cuModuleLoadData", NULL)
        && S_BIND(module_get_function, "cuModuleGetFunction", NULL)
        && S_BIND(module_unload, "cuModuleUnload", NULL)
        && S_BIND(launch, "cuLaunchKernel", NULL)
        && S_BIND(event_create, "cuEventCreate", NULL)
        && S_BIND(event_record, "cuEventRecord", NULL)
        && S_BIND(event_synchronize, "cuEventSynchronize", NULL)
        && S_BIND(event_elapsed, "cuEventElapsedTime", NULL)
        && S_BIND(event_destroy, "cuEventDestroy_v2", "cuEventDestroy")
        && S_BIND(mem_alloc, "cuMemAlloc_v2", "cuMemAlloc")
        && S_BIND(mem_free, "cuMemFree_v2", "cuMemFree");
#undef S_BIND
    *(void **) &a->error_name = dlsym(lib, "cuGetErrorName");
    return ok;
}

static void
s_close(void **state_p)
{
    s_cuda_t *st = *state_p;
    if (!st)
        return;
    for (int i = 0; i < st->ndevs; i++)
        if (st->ctx[i])
            st->api.ctx_release(st->devs[i]);
    if (st->lib)
        dlclose(st->lib);
    free(st);
    *state_p = NULL;
}

/* Loads the library and initialises the driver. */
static int
s_load(s_cuda_t *st, char *why, size_t why_size)
{
    const char *path = getenv("TELEM_CUDA_LIBRARY");
    if (!path || !*path)
        path = S_DEFAULT_LIBRARY;
    /* Never unmapped: after cuInit the driver may keep threads of its own
     * running inside the library. */
    st->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!st->lib) {
        const char *e = dlerror();
        snprintf(why, why_size, "cannot load %s: %s", path, e ? e : "?");
        return TELEM_EUNSUPPORTED;
    }
    if (!s_resolve(st->lib, &st->api)) {
        snprintf(why, why_size, "%s lacks a CUDA driver entry point", path);
        return TELEM_EUNSUPPORTED;
    }
    s_cu_result_t r = st->api.init(0);
    if (r) {
        snprintf(why, why_size, "cuInit failed: %s", s_err(&st->api, r));
        return TELEM_EUNSUPPORTED;
    }
    return 0;
}

static int
s_discover(s_cuda_t *st, telem_backend_device_t **devs_p, char *why,
           size_t why_size)
{
    int n = 0;
    s_cu_result_t r = st->api.device_count(&n);
    if (r || n <= 0) {
        snprintf(why, why_size, "no CUDA device (%s)",
                 r ? s_err(&st->api, r) : "count 0");
        return TELEM_EUNSUPPORTED;
    }
    if (n > S_DEVICES_MAX)
        n = S_DEVICES_MAX;
    telem_backend_device_t *devs = calloc((size_t) n, sizeof *devs);
    if (!devs)
        return TELEM_ENOMEM;
    for (int i = 0; i < n; i++) {
        if ((r = st->api.device_get(&st->devs[i], i)) != 0) {
            snprintf(why, why_size, "cuDeviceGet(%d): %s", i,
                     s_err(&st->api, r));
            free(devs);
            return TELEM_EUNSUPPORTED;
        }
        snprintf(devs[i].id, sizeof devs[i].id, "%d", i);
        if (st->api.device_name(devs[i].name, (int) sizeof devs[i].name,
                                st->devs[i]))
            snprintf(devs[i].name, sizeof devs[i].name, "CUDA device %d", i);
        if (st->api.device_bus_id(devs[i].bus, (int) sizeof devs[i].bus,
                                  st->devs[i]))
            devs[i].bus[0] = '\0';
    }
    st->ndevs = n;
    *devs_p = devs;
    return 0;
}

static int
s_open(void **state_p, telem_backend_device_t **devs_p, size_t *ndevs_p,
       char *why, size_t why_size)
{
    s_cuda_t *st = calloc(1, sizeof *st);
    if (!st)
        return TELEM_ENOMEM;
    int rc = s_load(st, why, why_size);
    if (rc == 0)
        rc = s_discover(st, devs_p, why, why_size);
    if (rc) {
        void *p = st;
        s_close(&p);
        return rc;
    }
    *ndevs_p = (size_t) st->ndevs;
    *state_p = st;
    return 0;
}

/* Retains (once) and makes current the primary context of device dev. */
static int
s_current(s_cuda_t *st, size_t dev, char *why, size_t why_size)
{
    s_cu_result_t r = 0;
    if (!st->ctx[dev] && (r = st->api.ctx_retain(&st->ctx[dev],
                                                 st->devs[dev])) != 0)
        st->ctx[dev] = NULL;
    if (r == 0)
        r = st->api.ctx_set_current(st->ctx[dev]);
    if (r) {
        snprintf(why, why_size, "CUDA device %zu: no context: %s", dev,
                 s_err(&st->api, r));
        return TELEM_EIO;
    }
    return 0;
}

static int
s_bind(void *state, size_t dev, char *why, size_t why_size)
{
    return s_current(state, dev, why, why_size);
}

static void
s_fma_destroy(void **k_p)
{
    s_fma_t *k = *k_p;
    if (!k)
        return;
    k->api->ctx_set_current(k->ctx);
    if (k->start)
        k->api->event_destroy(k->start);
    if (k->stop)
        k->api->event_destroy(k->stop);
    if (k->out)
        k->api->mem_free(k->out);
    if (k->module)
        k->api->module_unload(k->module);
    free(k);
    *k_p = NULL;
}

static int
s_fma_new(void *state, size_t dev, void **k_p, char *why, size_t why_size)
{
    s_cuda_t *st = state;
    int rc = s_current(st, dev, why, why_size);
    if (rc)
        return rc;
    s_fma_t *k = calloc(1, sizeof *k);
    if (!k)
        return TELEM_ENOMEM;
    const s_cu_api_t *a = k->api = &st->api;
    k->ctx = st->ctx[dev];
    s_cu_result_t r = a->module_load_data(&k->module, s_ptx);
    const char *step = "cuModuleLoadData";
    if (!r && (r = a->module_get_function(&k->fn, k->module, "telem_fma")))
        step = "cuModuleGetFunction";
    if (!r && (r = a->mem_alloc(&k->out, (size_t) S_GRID * S_BLOCK * 4)))
        step = "cuMemAlloc";
    if (!r && ((r = a->event_create(&k->start, 0))
               || (r = a->event_create(&k->stop, 0))))
        step = "cuEventCreate";
    if (r) {
        snprintf(why, why_size, "CUDA device %zu: %s: %s", dev, step,
                 s_err(a, r));
        void *p = k;
        s_fma_destroy(&p);
        return TELEM_EIO;
    }
    *k_p = k;
    return 0;
}

static s_cu_result_t
s_launch(s_fma_t *k)
{
    unsigned iters = S_ITERS;
    void *params[] = { &k->out, &iters };
    return k->api->launch(k->fn, S_GRID, 1, 1, S_BLOCK, 1, 1, 0, NULL,
                          params, NULL);
}

static int
s_kernel_new(void *state, size_t dev, const char *kernel, void **k_p,
             char *why, size_t why_size)
{
    (void) kernel;
    return s_fma_new(state, dev, k_p, why, why_size);
}

static int
s_kernel_run(void *kp, double *seconds)
{
    s_fma_t *k = kp;
    const s_cu_api_t *a = k->api;
    float ms = 0;
    s_cu_result_t r = a->ctx_set_current(k->ctx);
    if (!r)
        r = a->ctx_synchronize();
    if (!r)
        r = a->event_record(k->start, NULL);
    if (!r)
        r = s_launch(k);
    if (!r)
        r = a->event_record(k->stop, NULL);
    if (!r)
        r = a->event_synchronize(k->stop);
    if (!r)
        r = a->event_elapsed(&ms, k->start, k->stop);
    if (r || !(ms > 0))
        return TELEM_EIO;
    *seconds = ms / 1e3;
    return 0;
}

static int
s_load_run(void *kp, int64_t busy_ns)
{
    s_fma_t *k = kp;
    const s_cu_api_t *a = k->api;
    int64_t end = telem_mono_ns() + busy_ns;
    s_cu_result_t r = a->ctx_set_current(k->ctx);
    while (!r && telem_mono_ns() < end) {
        /* Two in flight keep the device busy between host wake-ups. */
        if (!(r = s_launch(k)) && !(r = s_launch(k)))
            r = a->ctx_synchronize();
    }
    return r ? TELEM_EIO : 0;
}

const telem_backend_vt_t telem_backend_cuda = {
    .name = "cuda",
    .kernels = s_kernels,
    .open = s_open,
    .close = s_close,
    .bind = s_bind,
    .kernel_new = s_kernel_new,
    .kernel_run = s_kernel_run,
    .kernel_destroy = s_fma_destroy,
    .load_new = s_fma_new,
    .load_run = s_load_run,
    .load_destroy = s_fma_destroy,
};
