/* telem_gpulib.c - a GPU vendor library's entry points, found at run time
 * (telem_gpulib.h).  The same walk as telem_nvml.c's, over a table the
 * backend gives.
 */
#include "telem_gpulib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "telem_error.h"

typedef void (*s_fn_t)(void);

void *
telem_gpulib_load(const char *library, const telem_gpulib_entry_t *entries,
                  size_t n, void *api, size_t api_size)
{
    memset(api, 0, api_size);
    void *lib = library ? dlopen(library, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const telem_gpulib_entry_t *e = &entries[i];
        void *sym = dlsym(lib, e->name);
        if (!sym && e->older)
            sym = dlsym(lib, e->older);
        if (!sym && e->required) {
            dlclose(lib);
            memset(api, 0, api_size);
            return NULL;
        }
        /* POSIX gives a dlsym() result and a function pointer one size
         * and representation; memcpy converts without a cast ISO C leaves
         * undefined. */
        _Static_assert(sizeof sym == sizeof(s_fn_t), "pointer sizes");
        memcpy((char *) api + e->offset, &sym, sizeof sym);
    }
    return lib;
}

int
telem_gpulib_missing(const telem_gpulib_entry_t *entries, size_t n,
                     const void *api, char *buf, size_t size)
{
    int count = 0;
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        void *p;
        memcpy(&p, (const char *) api + entries[i].offset, sizeof p);
        if (p)
            continue;
        if (size > len) {
            int w = snprintf(buf + len, size - len, "%s%s",
                             count ? ", " : "", entries[i].name);
            len += w > 0 ? (size_t) w : 0;
        }
        count++;
    }
    return count;
}

int
telem_gpulib_sample(void *state, size_t ngpus, telem_gpulib_gpu_fn one_gpu,
                    telem_sampler_emit_fn emit, void *arg)
{
    if (!state || !emit || !one_gpu)
        return TELEM_EINVAL;
    int nvalues = 0;
    for (size_t i = 0; i < ngpus; i++)
        nvalues += one_gpu(state, i, emit, arg);
    return nvalues > 0 ? 0 : TELEM_EIO;
}
