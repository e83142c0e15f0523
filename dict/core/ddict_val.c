/* ddict_val.c - immutable, reference-counted value bytes (ddict_val.h).
 *
 * One allocation per value: the header, then (for ddict_val_new) the
 * bytes themselves.  The count is a C11 atomic: a release on one thread
 * and a hold on another never lose an update.  The last release uses
 * acquire-release ordering so the thread that frees sees every read of
 * the other holders finished.
 */
#include "ddict_val.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct ddict_val {
    atomic_size_t refs;
    const void *data;
    size_t size;
    ddict_val_free_fn *free_fn;  /* NULL: the bytes follow the header */
    void *hint;
    _Alignas(max_align_t) unsigned char bytes[];
};

ddict_val_t *
ddict_val_new(const void *data, size_t size)
{
    ddict_val_t *self = malloc(sizeof *self + size);
    if (!self)
        return NULL;
    atomic_init(&self->refs, 1);
    if (size)
        memcpy(self->bytes, data, size);
    self->data = self->bytes;
    self->size = size;
    self->free_fn = NULL;
    self->hint = NULL;
    return self;
}

ddict_val_t *
ddict_val_wrap(const void *data, size_t size, ddict_val_free_fn *free_fn,
               void *hint)
{
    ddict_val_t *self = malloc(sizeof *self);
    if (!self)
        return NULL;
    atomic_init(&self->refs, 1);
    self->data = data;
    self->size = size;
    self->free_fn = free_fn;
    self->hint = hint;
    return self;
}

ddict_val_t *
ddict_val_hold(ddict_val_t *self)
{
    atomic_fetch_add_explicit(&self->refs, 1, memory_order_relaxed);
    return self;
}

void
ddict_val_release(ddict_val_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_val_t *self = *self_p;
    *self_p = NULL;
    if (atomic_fetch_sub_explicit(&self->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (self->free_fn)
        self->free_fn((void *) self->data, self->hint);
    free(self);
}

const void *
ddict_val_data(const ddict_val_t *self)
{
    return self->size ? self->data : "";
}

size_t
ddict_val_size(const ddict_val_t *self)
{
    return self->size;
}
