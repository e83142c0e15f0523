/* telem_nvml_xid.h - PRIVATE to the nvml sampler: XID events from NVML's
 * event set, gathered on a thread of their own.
 *
 * NVML hands out XID errors (nvmlEventTypeXidCriticalError) through an
 * event set that a caller waits on (nvmlEventSetWait_v2, blocking up to a
 * timeout).  Waiting on telemd's actor thread would stall sampling and
 * ingest, so a thread of this module waits instead and puts each XID in a
 * bounded queue; the sampler takes them at its next tick.  The queue's
 * lock is held only to copy records, never across an NVML call, so taking
 * never waits for the event thread's wait.  A full queue drops the newest
 * and counts them.
 */
#ifndef TELEM_NVML_XID_H
#define TELEM_NVML_XID_H

#include <stddef.h>
#include <stdint.h>

#include "telem_nvml.h"

typedef struct tnvml_xid tnvml_xid_t;

typedef struct {
    unsigned int gpu;           /* index into the devices given at start */
    unsigned long long xid;     /* the XID code */
} tnvml_xid_rec_t;

/* Creates an event set, registers XID events for every non-NULL device
 * of devs[0..n) and starts the thread.  Returns NULL with *err set to
 * TELEM_EUNSUPPORTED (the library lacks the event calls, or no device
 * accepted the registration), TELEM_ENOMEM or TELEM_EIO (no thread). */
tnvml_xid_t *tnvml_xid_start(const tnvml_api_t *api,
                             const tnvml_device_t *devs, unsigned int n,
                             int *err);

/* Moves up to max queued XIDs into out, oldest first; returns how many.
 * *dropped (may be NULL) gets the number dropped on a full queue since
 * the start.  Called from one thread (the sampler's). */
size_t tnvml_xid_take(tnvml_xid_t *x, tnvml_xid_rec_t *out, size_t max,
                      uint64_t *dropped);

/* How many devices accepted the registration. */
unsigned int tnvml_xid_devices(const tnvml_xid_t *x);

/* Stops the thread (it leaves its wait within TNVML_XID_WAIT_MS), frees
 * the event set; accepts NULL and nulls *x_p. */
void tnvml_xid_stop(tnvml_xid_t **x_p);

#define TNVML_XID_WAIT_MS 250u
#define TNVML_XID_QUEUE 1024u

#endif
