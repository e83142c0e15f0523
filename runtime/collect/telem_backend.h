/* telem_backend.h - device backends: what a "device" is, how to pin to it,
 * how to time a fixed kernel on it, and how to load it.
 *
 * Collectors (telem_collector.h) and the load generator (telem_load) see a
 * device only through a backend.  A backend is a const vtable (a plug-in):
 *   cpu   a device is a core; pinning is sched_setaffinity; the kernel is a
 *         fixed-size DGEMM through GSL's CBLAS; load is a busy loop.
 *   cuda  a device is a CUDA device; libcuda.so.1 is loaded with dlopen at
 *         run time (nothing CUDA is needed to build); the kernel is a fixed
 *         FMA loop loaded from PTX, timed with events after a synchronize;
 *         load is the same kernel, launched back to back.
 * A backend that is not present on a machine (no libcuda, no GPU) fails to
 * open with TELEM_EUNSUPPORTED and a sentence saying why; callers print
 * that sentence once and go on without it.  This library never logs.
 *
 * Device list.  Opening a backend discovers this machine's devices once, in
 * a fixed order; a device is named by its index in that list.
 *   cpu   $TELEM_CPU_DEVICES ("2,3", "0-3,8") if set, else every core the
 *         process may run on (sched_getaffinity), in ascending order.  A
 *         listed core the process may not run on is an error.
 *   cuda  CUDA device ordinals 0..n-1 (after CUDA_VISIBLE_DEVICES);
 *         $TELEM_CUDA_LIBRARY names another libcuda to load.
 *
 * Figures.  A kernel run returns the seconds one repetition took; higher
 * means slower.  The work per repetition is fixed (never calibrated per
 * device), so figures of like devices compare directly.
 *
 * Thread safety: one telem_backend_t, and the kernels and loads made from
 * it, are used by one thread at a time.  telem_backend_bind() pins the
 * calling thread (threads it creates afterwards inherit the pinning).
 */
#ifndef TELEM_BACKEND_H
#define TELEM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TELEM_BACKEND_DEVICE_ID_MAX 64
#define TELEM_BACKEND_DEVICE_NAME_MAX 128

/* One device of this machine. */
typedef struct {
    char id[TELEM_BACKEND_DEVICE_ID_MAX];      /* cpu: core number ("3");
                                          cuda: ordinal ("0") */
    char name[TELEM_BACKEND_DEVICE_NAME_MAX];  /* cpu: processor model;
                                          cuda: device name */
    char bus[TELEM_BACKEND_DEVICE_ID_MAX];     /* cuda: PCI bus id; cpu: "" */
} telem_backend_device_t;

/* The plug-in interface.  Every function returns 0 or a negative
 * telem_err_t; `why` receives a sentence on failure where it is passed. */
typedef struct telem_backend_vt {
    const char *name;                   /* "cpu", "cuda" */
    /* Built-in kernels, NULL-terminated; the first is the default. */
    const char *const *kernels;
    /* Loads what the backend needs and lists the devices into a new array
     * (*devs_p, *ndevs_p; freed by the caller with free()). */
    int (*open)(void **state_p, telem_backend_device_t **devs_p,
                size_t *ndevs_p, char *why, size_t why_size);
    void (*close)(void **state_p);
    /* Pins the calling thread to device `dev` (an index). */
    int (*bind)(void *state, size_t dev, char *why, size_t why_size);
    /* Prepares `kernel` on `dev`; *k_p is freed by kernel_destroy. */
    int (*kernel_new)(void *state, size_t dev, const char *kernel,
                      void **k_p, char *why, size_t why_size);
    /* Runs one repetition; *seconds is its duration. */
    int (*kernel_run)(void *k, double *seconds);
    void (*kernel_destroy)(void **k_p);
    /* Prepares contention on `dev`; load_run keeps the device busy for
     * about busy_ns nanoseconds, then returns. */
    int (*load_new)(void *state, size_t dev, void **l_p, char *why,
                    size_t why_size);
    int (*load_run)(void *l, int64_t busy_ns);
    void (*load_destroy)(void **l_p);
} telem_backend_vt_t;

extern const telem_backend_vt_t telem_backend_cpu;
extern const telem_backend_vt_t telem_backend_cuda;

typedef struct telem_backend telem_backend_t;
typedef struct telem_backend_kernel telem_backend_kernel_t;
typedef struct telem_backend_load telem_backend_load_t;

/* The backend called `name`, or NULL.  Thread-safe. */
const telem_backend_vt_t *telem_backend_find(const char *name);

/* Backend i of the built-in list ("cpu", "cuda"), or NULL past the end. */
const telem_backend_vt_t *telem_backend_at(size_t i);

/* 1 if `kernel` is a built-in kernel of backend `vt`, else 0. */
int telem_backend_has_kernel(const telem_backend_vt_t *vt, const char *kernel);

/* Opens backend `name` and discovers its devices.  Returns the backend, or
 * NULL with *err set: TELEM_ENOTFOUND (no backend of that name),
 * TELEM_EUNSUPPORTED (not present on this machine), TELEM_EINVAL (a bad
 * $TELEM_CPU_DEVICES), TELEM_ENOMEM; `why` (if why_size > 0) gets a
 * sentence.  A backend with zero devices is TELEM_EUNSUPPORTED. */
telem_backend_t *telem_backend_open(const char *name, char *why,
                                    size_t why_size, int *err);

/* Frees the backend; accepts NULL or a pointer to NULL and nulls it.
 * Kernels and loads made from it must be destroyed first. */
void telem_backend_close(telem_backend_t **b_p);

/* The backend's vtable and name. */
const telem_backend_vt_t *telem_backend_vt(const telem_backend_t *b);
const char *telem_backend_name(const telem_backend_t *b);

/* Number of devices, and device i (NULL when out of range; owned by b). */
size_t telem_backend_ndevices(const telem_backend_t *b);
const telem_backend_device_t *telem_backend_device(const telem_backend_t *b,
                                                   size_t i);

/* Pins the calling thread to device `dev`.  Returns 0, TELEM_EINVAL (no
 * such device) or TELEM_EIO (the system refused; errno kept). */
int telem_backend_bind(telem_backend_t *b, size_t dev, char *why,
                       size_t why_size);

/* Prepares built-in kernel `kernel` (NULL: the backend's default) on device
 * `dev` and runs it once untimed (page faults, JIT), so the first timed
 * repetition is like the others.  Returns NULL with *err on failure
 * (TELEM_ENOTFOUND: unknown kernel; TELEM_EINVAL: no such device). */
telem_backend_kernel_t *telem_backend_kernel_new(telem_backend_t *b,
                                                 size_t dev,
                                                 const char *kernel,
                                                 char *why, size_t why_size,
                                                 int *err);

/* Runs one timed repetition; *seconds > 0 on success. */
int telem_backend_kernel_run(telem_backend_kernel_t *k, double *seconds);

/* Frees the kernel; accepts NULL or a pointer to NULL and nulls it. */
void telem_backend_kernel_destroy(telem_backend_kernel_t **k_p);

/* Prepares contention on device `dev` (the calling thread should be bound
 * to it first on cpu).  Returns NULL with *err on failure. */
telem_backend_load_t *telem_backend_load_new(telem_backend_t *b, size_t dev,
                                             char *why, size_t why_size,
                                             int *err);

/* Keeps the device busy for about busy_ns (> 0) nanoseconds. */
int telem_backend_load_run(telem_backend_load_t *l, int64_t busy_ns);

/* Frees the load; accepts NULL or a pointer to NULL and nulls it. */
void telem_backend_load_destroy(telem_backend_load_t **l_p);

/* Parses a device list "0,2,5-7" (ascending or not; duplicates refused)
 * into out[0..*n).  Returns 0, TELEM_EINVAL (syntax, a number over `max`
 * or a duplicate) or TELEM_ETOOBIG (more than cap entries). */
int telem_backend_device_list_parse(const char *s, long max, long *out,
                                    size_t cap, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
