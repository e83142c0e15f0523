/* telem_nvml_xid.c - the XID event thread of the nvml sampler
 * (telem_nvml_xid.h).
 *
 * The thread loops on nvmlEventSetWait_v2 with a short timeout so that a
 * stop is seen within TNVML_XID_WAIT_MS.  An error other than the timeout
 * (a GPU lost, a driver in trouble) could make the wait return at once
 * every time; the thread then waits on its stop condition for the same
 * period before it tries again, so it never spins and still stops at once.
 */
#include "telem_nvml_xid.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "telem_error.h"

struct tnvml_xid {
    const tnvml_api_t *api;
    tnvml_device_t devs[64];
    unsigned int ndevs, nregistered;
    tnvml_event_set_t set;
    pthread_t thread;
    pthread_mutex_t lock;       /* guards everything below */
    pthread_cond_t wake;        /* signalled by stop */
    bool stop;
    tnvml_xid_rec_t queue[TNVML_XID_QUEUE];
    size_t head, count;
    uint64_t dropped;
};

static void
s_push(tnvml_xid_t *x, unsigned int gpu, unsigned long long xid)
{
    pthread_mutex_lock(&x->lock);
    if (x->count == TNVML_XID_QUEUE)
        x->dropped++;
    else {
        x->queue[(x->head + x->count) % TNVML_XID_QUEUE] =
            (tnvml_xid_rec_t) {gpu, xid};
        x->count++;
    }
    pthread_mutex_unlock(&x->lock);
}

/* The index of dev among the devices, or n when it is none of them. */
static unsigned int
s_index(const tnvml_xid_t *x, tnvml_device_t dev)
{
    for (unsigned int i = 0; i < x->ndevs; i++)
        if (x->devs[i] && x->devs[i] == dev)
            return i;
    return x->ndevs;
}

/* Waits on the stop condition for TNVML_XID_WAIT_MS; true once stopped. */
static bool
s_pause(tnvml_xid_t *x)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long) TNVML_XID_WAIT_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&x->lock);
    while (!x->stop)
        if (pthread_cond_timedwait(&x->wake, &x->lock, &until) != 0)
            break;
    bool stop = x->stop;
    pthread_mutex_unlock(&x->lock);
    return stop;
}

static bool
s_stopped(tnvml_xid_t *x)
{
    pthread_mutex_lock(&x->lock);
    bool stop = x->stop;
    pthread_mutex_unlock(&x->lock);
    return stop;
}

static void *
s_run(void *arg)
{
    tnvml_xid_t *x = arg;
    while (!s_stopped(x)) {
        tnvml_event_t ev = {0};
        tnvml_return_t rc = x->api->event_set_wait(x->set, &ev,
                                                   TNVML_XID_WAIT_MS);
        if (rc == TNVML_SUCCESS) {
            unsigned int gpu = s_index(x, ev.device);
            if ((ev.event_type & TNVML_EVENT_XID_CRITICAL) && gpu < x->ndevs)
                s_push(x, gpu, ev.event_data);
        } else if (rc != TNVML_ERROR_TIMEOUT && s_pause(x))
            break;
    }
    return NULL;
}

/* Registers XID events for each device; returns how many accepted. */
static unsigned int
s_register(tnvml_xid_t *x)
{
    unsigned int n = 0;
    for (unsigned int i = 0; i < x->ndevs; i++)
        if (x->devs[i] && x->api->register_events(x->devs[i],
                              TNVML_EVENT_XID_CRITICAL, x->set)
                          == TNVML_SUCCESS)
            n++;
    return n;
}

tnvml_xid_t *
tnvml_xid_start(const tnvml_api_t *api, const tnvml_device_t *devs,
                unsigned int n, int *err)
{
    *err = TELEM_EUNSUPPORTED;
    if (!api->event_set_create || !api->register_events
        || !api->event_set_wait || !api->event_set_free)
        return NULL;
    tnvml_xid_t *x = calloc(1, sizeof *x);
    if (!x) {
        *err = TELEM_ENOMEM;
        return NULL;
    }
    x->api = api;
    x->ndevs = n < 64 ? n : 64;
    for (unsigned int i = 0; i < x->ndevs; i++)
        x->devs[i] = devs[i];
    if (api->event_set_create(&x->set) != TNVML_SUCCESS) {
        free(x);
        return NULL;
    }
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->wake, NULL);
    if ((x->nregistered = s_register(x)) > 0
        && pthread_create(&x->thread, NULL, s_run, x) == 0) {
        *err = 0;
        return x;
    }
    if (x->nregistered > 0)
        *err = TELEM_EIO;
    api->event_set_free(x->set);
    pthread_cond_destroy(&x->wake);
    pthread_mutex_destroy(&x->lock);
    free(x);
    return NULL;
}

size_t
tnvml_xid_take(tnvml_xid_t *x, tnvml_xid_rec_t *out, size_t max,
               uint64_t *dropped)
{
    pthread_mutex_lock(&x->lock);
    size_t n = x->count < max ? x->count : max;
    for (size_t i = 0; i < n; i++)
        out[i] = x->queue[(x->head + i) % TNVML_XID_QUEUE];
    x->head = (x->head + n) % TNVML_XID_QUEUE;
    x->count -= n;
    if (dropped)
        *dropped = x->dropped;
    pthread_mutex_unlock(&x->lock);
    return n;
}

unsigned int
tnvml_xid_devices(const tnvml_xid_t *x)
{
    return x ? x->nregistered : 0;
}

void
tnvml_xid_stop(tnvml_xid_t **x_p)
{
    if (!x_p || !*x_p)
        return;
    tnvml_xid_t *x = *x_p;
    pthread_mutex_lock(&x->lock);
    x->stop = true;
    pthread_cond_signal(&x->wake);
    pthread_mutex_unlock(&x->lock);
    pthread_join(x->thread, NULL);
    x->api->event_set_free(x->set);
    pthread_cond_destroy(&x->wake);
    pthread_mutex_destroy(&x->lock);
    free(x);
    *x_p = NULL;
}
