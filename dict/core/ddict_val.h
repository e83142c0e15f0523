/* ddict_val.h - a dictionary value: immutable bytes shared by reference.
 *
 * A value a server receives is held by several owners at once: the
 * store's entry, the log until its record is written, a reply or a
 * replication message in flight, the checkpoint copies of its key in
 * other namespaces, the undo record of a replicated write.  Copying a
 * large value for each of them would cost more than the request that
 * brought it (docs/performance.md, "dict"), so every holder takes a
 * reference instead (ddict_val_hold) and drops it (ddict_val_release);
 * the bytes go with the last reference.
 *
 * The bytes live in one of two places:
 *   ddict_val_new   a copy in the value's own allocation (small values,
 *                   where one allocation is cheaper than sharing);
 *   ddict_val_wrap  borrowed from an owner that keeps them alive (a
 *                   received network message, the log file's mapping):
 *                   that owner's release hook free_fn(data, hint) runs
 *                   exactly once, when the last reference is dropped.
 * This file knows nothing about sockets: the server wraps what it
 * receives and hands stored values to its transport by reference
 * (dict/dictd/ddict_server_base.c).
 *
 * Thread safety: the bytes never change after construction, and the
 * reference count is atomic, so a value may be held, read and released
 * from any thread (a transport may drop its reference from its own I/O
 * thread).  Nothing else is shared.
 */
#ifndef DDICT_VAL_H
#define DDICT_VAL_H

#include <stddef.h>

typedef struct ddict_val ddict_val_t;

/* The owner's release hook of a wrapped value (the shape of ZeroMQ's
 * zmq_free_fn): called once, on the thread that drops the last
 * reference, with the data and hint given to ddict_val_wrap. */
typedef void (ddict_val_free_fn)(void *data, void *hint);

/* A value holding a copy of data[0..size) (data may be NULL when size is
 * 0), with one reference, the caller's.  NULL: no memory. */
ddict_val_t *ddict_val_new(const void *data, size_t size);

/* A value whose bytes data[0..size) stay owned by the caller until
 * free_fn(data, hint) is called, after the last release.  One reference,
 * the caller's.  NULL: no memory; free_fn is then not called and the
 * bytes are still the caller's. */
ddict_val_t *ddict_val_wrap(const void *data, size_t size,
                            ddict_val_free_fn *free_fn, void *hint);

/* Adds a reference; returns self. */
ddict_val_t *ddict_val_hold(ddict_val_t *self);

/* Drops the caller's reference and nulls *self_p; the last one frees the
 * value (and runs a wrapped value's release hook).  Accepts NULL and a
 * pointer to NULL. */
void ddict_val_release(ddict_val_t **self_p);

/* The bytes (never NULL, even when the size is 0) and their number;
 * valid while the caller holds a reference. */
const void *ddict_val_data(const ddict_val_t *self);
size_t ddict_val_size(const ddict_val_t *self);

#endif
