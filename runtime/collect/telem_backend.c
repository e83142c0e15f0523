/* telem_backend.c - the backend registry and the thin layer over the
 * vtables.
 *
 * Backends are plug-ins (const vtables in telem_backend_cpu.c and
 * telem_backend_cuda.c, which call nothing here); this file finds them by
 * name, keeps the opened state and the device list together in one
 * telem_backend_t, and checks arguments once so a backend
 * only ever sees a valid device index.  It also owns the one parser of
 * device lists ("0,2-3"), used for $TELEM_CPU_DEVICES and --devices flags.
 */
#include "telem_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_why.h"

struct telem_backend {
    const telem_backend_vt_t *vt;
    void *state;
    telem_backend_device_t *devs;
    size_t ndevs;
};

struct telem_backend_kernel {
    const telem_backend_vt_t *vt;
    void *k;
};

struct telem_backend_load {
    const telem_backend_vt_t *vt;
    void *l;
};

static const telem_backend_vt_t *const s_backends[] = {
    &telem_backend_cpu,
    &telem_backend_cuda,
};

const telem_backend_vt_t *
telem_backend_at(size_t i)
{
    return i < sizeof s_backends / sizeof s_backends[0] ? s_backends[i]
                                                         : NULL;
}

const telem_backend_vt_t *
telem_backend_find(const char *name)
{
    const telem_backend_vt_t *vt;
    for (size_t i = 0; name && (vt = telem_backend_at(i)) != NULL; i++)
        if (strcmp(vt->name, name) == 0)
            return vt;
    return NULL;
}

int
telem_backend_has_kernel(const telem_backend_vt_t *vt, const char *kernel)
{
    for (size_t i = 0; vt && kernel && vt->kernels[i]; i++)
        if (strcmp(vt->kernels[i], kernel) == 0)
            return 1;
    return 0;
}

telem_backend_t *
telem_backend_open(const char *name, char *why, size_t why_size, int *err)
{
    int rc = TELEM_ENOMEM;
    telem_why(why, why_size, "%s", "");
    const telem_backend_vt_t *vt = telem_backend_find(name);
    telem_backend_t *b = NULL;
    if (!vt) {
        rc = TELEM_ENOTFOUND;
        telem_why(why, why_size, "no backend called '%s' (cpu, cuda)",
                  name ? name : "(null)");
        goto out;
    }
    b = calloc(1, sizeof *b);
    if (!b)
        goto out;
    b->vt = vt;
    rc = vt->open(&b->state, &b->devs, &b->ndevs, why, why_size);
    if (rc == 0 && b->ndevs == 0) {
        rc = TELEM_EUNSUPPORTED;
        telem_why(why, why_size, "backend %s found no device", vt->name);
    }
out:
    if (rc && b)
        telem_backend_close(&b);
    if (err)
        *err = rc;
    return b;
}

void
telem_backend_close(telem_backend_t **b_p)
{
    if (!b_p || !*b_p)
        return;
    telem_backend_t *b = *b_p;
    if (b->state)
        b->vt->close(&b->state);
    free(b->devs);
    free(b);
    *b_p = NULL;
}

const telem_backend_vt_t *
telem_backend_vt(const telem_backend_t *b)
{
    return b->vt;
}

const char *
telem_backend_name(const telem_backend_t *b)
{
    return b->vt->name;
}

size_t
telem_backend_ndevices(const telem_backend_t *b)
{
    return b->ndevs;
}

const telem_backend_device_t *
telem_backend_device(const telem_backend_t *b, size_t i)
{
    return i < b->ndevs ? &b->devs[i] : NULL;
}

int
telem_backend_bind(telem_backend_t *b, size_t dev, char *why,
                   size_t why_size)
{
    if (dev >= b->ndevs) {
        telem_why(why, why_size, "no %s device %zu (this machine has %zu)",
                  b->vt->name, dev, b->ndevs);
        return TELEM_EINVAL;
    }
    return b->vt->bind(b->state, dev, why, why_size);
}

telem_backend_kernel_t *
telem_backend_kernel_new(telem_backend_t *b, size_t dev, const char *kernel,
                         char *why, size_t why_size, int *err)
{
    int rc = TELEM_ENOMEM;
    double warm;
    telem_backend_kernel_t *k = NULL;
    if (!kernel)
        kernel = b->vt->kernels[0];
    if (!telem_backend_has_kernel(b->vt, kernel)) {
        rc = TELEM_ENOTFOUND;
        telem_why(why, why_size, "backend %s has no kernel '%s' (default %s)",
                  b->vt->name, kernel, b->vt->kernels[0]);
        goto out;
    }
    if (dev >= b->ndevs) {
        rc = TELEM_EINVAL;
        telem_why(why, why_size, "no %s device %zu (this machine has %zu)",
                  b->vt->name, dev, b->ndevs);
        goto out;
    }
    if (!(k = calloc(1, sizeof *k)))
        goto out;
    k->vt = b->vt;
    rc = b->vt->kernel_new(b->state, dev, kernel, &k->k, why, why_size);
    if (rc == 0 && (rc = b->vt->kernel_run(k->k, &warm)) != 0)
        telem_why(why, why_size, "the %s kernel failed its first run: %s",
                  kernel, telem_strerror(rc));
out:
    if (rc)
        telem_backend_kernel_destroy(&k);
    if (err)
        *err = rc;
    return k;
}

int
telem_backend_kernel_run(telem_backend_kernel_t *k, double *seconds)
{
    return k->vt->kernel_run(k->k, seconds);
}

void
telem_backend_kernel_destroy(telem_backend_kernel_t **k_p)
{
    if (!k_p || !*k_p)
        return;
    if ((*k_p)->k)
        (*k_p)->vt->kernel_destroy(&(*k_p)->k);
    free(*k_p);
    *k_p = NULL;
}

telem_backend_load_t *
telem_backend_load_new(telem_backend_t *b, size_t dev, char *why,
                       size_t why_size, int *err)
{
    int rc = TELEM_ENOMEM;
    telem_backend_load_t *l = NULL;
    if (dev >= b->ndevs) {
        rc = TELEM_EINVAL;
        telem_why(why, why_size, "no %s device %zu (this machine has %zu)",
                  b->vt->name, dev, b->ndevs);
        goto out;
    }
    if (!(l = calloc(1, sizeof *l)))
        goto out;
    l->vt = b->vt;
    rc = b->vt->load_new(b->state, dev, &l->l, why, why_size);
out:
    if (rc)
        telem_backend_load_destroy(&l);
    if (err)
        *err = rc;
    return l;
}

int
telem_backend_load_run(telem_backend_load_t *l, int64_t busy_ns)
{
    if (busy_ns <= 0)
        return TELEM_EINVAL;
    return l->vt->load_run(l->l, busy_ns);
}

void
telem_backend_load_destroy(telem_backend_load_t **l_p)
{
    if (!l_p || !*l_p)
        return;
    if ((*l_p)->l)
        (*l_p)->vt->load_destroy(&(*l_p)->l);
    free(*l_p);
    *l_p = NULL;
}

/* Reads one decimal number in [0, max]; advances *s. */
static int
s_number(const char **s, long max, long *out)
{
    char *end;
    if (**s < '0' || **s > '9')
        return TELEM_EINVAL;
    errno = 0;
    long v = strtol(*s, &end, 10);
    if (errno || v > max)
        return TELEM_EINVAL;
    *s = end;
    *out = v;
    return 0;
}

static int
s_push(long v, long *out, size_t cap, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        if (out[i] == v)
            return TELEM_EINVAL;
    if (*n == cap)
        return TELEM_ETOOBIG;
    out[(*n)++] = v;
    return 0;
}

int
telem_backend_device_list_parse(const char *s, long max, long *out, size_t cap,
                                size_t *n)
{
    long lo, hi;
    int rc;
    *n = 0;
    if (!s || !*s)
        return TELEM_EINVAL;
    for (;;) {
        if ((rc = s_number(&s, max, &lo)) != 0)
            return rc;
        hi = lo;
        if (*s == '-') {
            s++;
            if ((rc = s_number(&s, max, &hi)) != 0 || hi < lo)
                return TELEM_EINVAL;
        }
        for (long v = lo; v <= hi; v++)
            if ((rc = s_push(v, out, cap, n)) != 0)
                return rc;
        if (*s == '\0')
            return 0;
        if (*s++ != ',')
            return TELEM_EINVAL;
    }
}
