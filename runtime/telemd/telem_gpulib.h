/* telem_gpulib.h - PRIVATE to telemd: finds a GPU vendor library's entry
 * points at run time, for the AMD (rocm_smi) and Intel (Level Zero Sysman)
 * backends.
 *
 * A backend describes its API as a struct of function pointers and a table
 * naming each pointer's symbol (with an older spelling where the same ABI
 * was exported under another name) and whether it is required.
 * telem_gpulib_load() dlopen()s the library and fills the struct; a missing
 * required symbol fails the load, a missing optional one leaves its pointer
 * NULL and only the values that need it are left out (telem_gpulib_missing()
 * names them for the one log line).  The loader keeps no state of its own;
 * it is thread-safe as dlopen() and dlsym() are.  telem_gpulib_sample() is
 * the per-GPU loop the vendor samplers share.
 */
#ifndef TELEM_GPULIB_H
#define TELEM_GPULIB_H

#include <stdbool.h>
#include <stddef.h>

#include "telem_sampler.h"

typedef struct {
    const char *name;           /* symbol */
    const char *older;          /* older symbol with the same ABI, or NULL */
    size_t offset;              /* of the pointer in the API struct */
    bool required;
} telem_gpulib_entry_t;

#define TELEM_GPULIB_E(type, field, name, older, req) \
    {name, older, offsetof(type, field), req}

/* Opens `library` and fills api (api_size bytes, all function pointers)
 * from the n entries.  Returns the dlopen() handle (the caller dlclose()s
 * it), or NULL with api zeroed when the library cannot be loaded or lacks
 * a required entry point. */
void *telem_gpulib_load(const char *library,
                        const telem_gpulib_entry_t *entries, size_t n,
                        void *api, size_t api_size);

/* One GPU of a vendor sampler's sample() (index i of the sampler's state):
 * emits that GPU's values through emit, then its gpu_lost, and returns how
 * many values it emitted before gpu_lost (0: the GPU answered nothing). */
typedef int (*telem_gpulib_gpu_fn)(void *state, size_t i,
                                   telem_sampler_emit_fn emit, void *arg);

/* The sample() of the rsmi and ze samplers: one_gpu for each of their
 * ngpus GPUs.  Returns 0 when some GPU gave a value, TELEM_EIO when none
 * did, TELEM_EINVAL without a state or emit. */
int telem_gpulib_sample(void *state, size_t ngpus, telem_gpulib_gpu_fn one_gpu,
                        telem_sampler_emit_fn emit, void *arg);

/* Writes into buf the names of the optional entry points api lacks,
 * separated by ", " ("" when none; cut to size).  Returns how many. */
int telem_gpulib_missing(const telem_gpulib_entry_t *entries, size_t n,
                         const void *api, char *buf, size_t size);

#endif
