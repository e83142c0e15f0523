/* telem_section_gpu.c - the device time of a section (telem.h,
 * telem_section_begin_gpu): two CUDA events on the caller's stream, read
 * once the second has completed, never waited for.
 *
 * The driver.  libtelem never loads CUDA itself: it looks for the
 * libcuda.so.1 the process has already loaded (dlopen with RTLD_NOLOAD),
 * or opens $TELEM_CUDA_LIBRARY when that is set (tests point it at a
 * test-only library with the driver's ABI).  The few entry points used
 * are declared here, matching the CUDA driver C ABI, as the collectors'
 * cuda backend does.  Looked up once; a process without them gets plain
 * sections.
 *
 * Pairs.  A fixed table of TELEM_SECTION_GPU_PENDING pairs under one
 * mutex (a GPU section is a step of device work: its begin and end cost
 * an event record each, microseconds, next to which the mutex is
 * nothing).  A pair keeps its two events for reuse while the thread's
 * current context is the one they were made in; in another context they
 * are destroyed and made again.  States: free -> begun (begin event
 * recorded) -> ended (end event recorded, section name and stamp kept) ->
 * free when read or dropped.  Every free -> begun step gives the pair a
 * new generation, which the handle carries.
 *
 * Reading.  At every GPU begin and end, and at telem_flush() and
 * telem_finalize() (the flush hook of telem_int.h), each ended pair's end
 * event is queried: complete -> its elapsed time is recorded as
 * telem_section_gpu_seconds at the section's own end stamp; not ready ->
 * left for later; an error -> dropped.  At finalize a pair still running
 * is dropped too (both counted as failed).
 */
#include "telem.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "telem_int.h"
#include "telem_section_gpu.h"

#define S_DEFAULT_LIBRARY "libcuda.so.1"
#define S_NOT_READY 600                     /* CUDA_ERROR_NOT_READY */
#define S_NPAIRS TELEM_SECTION_GPU_PENDING

/* The CUDA driver ABI, as much of it as we use. */
typedef int s_cu_result_t;                  /* CUresult; 0 is CUDA_SUCCESS */
typedef struct s_cu_ctx *s_cu_ctx_t;        /* CUcontext */
typedef struct s_cu_event *s_cu_event_t;    /* CUevent */
typedef struct s_cu_stream *s_cu_stream_t;  /* CUstream; NULL = default */

typedef struct {
    s_cu_result_t (*ctx_get_current)(s_cu_ctx_t *);
    s_cu_result_t (*event_create)(s_cu_event_t *, unsigned int);
    s_cu_result_t (*event_record)(s_cu_event_t, s_cu_stream_t);
    s_cu_result_t (*event_query)(s_cu_event_t);
    s_cu_result_t (*event_elapsed)(float *, s_cu_event_t, s_cu_event_t);
    s_cu_result_t (*event_destroy)(s_cu_event_t);
} s_cu_api_t;

enum { S_FREE = 0, S_BEGUN, S_ENDED };

typedef struct {
    int state;
    uint32_t gen;
    s_cu_ctx_t ctx;               /* where a and b were made */
    s_cu_event_t a, b;            /* NULL until made */
    s_cu_stream_t stream;
    const char *name;             /* the section's (ended) */
    int64_t ts_ns;                /* the section's end (ended) */
} s_pair_t;

static struct {
    pthread_once_t once;
    int ok;                       /* the entry points were found */
    s_cu_api_t cu;
    pthread_mutex_t mu;
    s_pair_t pairs[S_NPAIRS];
    uint32_t gen;
    uint32_t nended;
    _Atomic uint64_t recorded, unavailable, failed, full;
} s_gpu = { .once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER };

static void s_flush_hook(int final);

static int
s_bind(void *lib, void **fn, const char *name, const char *fallback)
{
    *fn = dlsym(lib, name);
    if (!*fn && fallback)
        *fn = dlsym(lib, fallback);
    return *fn != NULL;
}

static void
s_load(void)
{
    const char *path = getenv("TELEM_CUDA_LIBRARY");
    void *lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL)
                              : dlopen(S_DEFAULT_LIBRARY,
                                       RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return;
    s_cu_api_t *a = &s_gpu.cu;
    s_gpu.ok = s_bind(lib, (void **) &a->ctx_get_current, "cuCtxGetCurrent",
                      NULL)
        && s_bind(lib, (void **) &a->event_create, "cuEventCreate", NULL)
        && s_bind(lib, (void **) &a->event_record, "cuEventRecord", NULL)
        && s_bind(lib, (void **) &a->event_query, "cuEventQuery", NULL)
        && s_bind(lib, (void **) &a->event_elapsed, "cuEventElapsedTime",
                  NULL)
        && s_bind(lib, (void **) &a->event_destroy, "cuEventDestroy_v2",
                  "cuEventDestroy");
    if (s_gpu.ok)
        tapi_set_flush_hook(s_flush_hook);
    /* The library stays open: its events live as long as the process. */
}

static void
s_count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Frees pair p; locked. */
static void
s_release(s_pair_t *p)
{
    if (p->state == S_ENDED)
        s_gpu.nended--;
    p->state = S_FREE;
    p->name = NULL;
}

/* Events of pair p made in context ctx; locked.  0 or -1. */
static int
s_events(s_pair_t *p, s_cu_ctx_t ctx)
{
    if (p->a && p->ctx != ctx) {
        s_gpu.cu.event_destroy(p->a);
        s_gpu.cu.event_destroy(p->b);
        p->a = p->b = NULL;
    }
    if (!p->a) {
        if (s_gpu.cu.event_create(&p->a, 0) != 0) {
            p->a = NULL;
            return -1;
        }
        if (s_gpu.cu.event_create(&p->b, 0) != 0) {
            s_gpu.cu.event_destroy(p->a);
            p->a = p->b = NULL;
            return -1;
        }
        p->ctx = ctx;
    }
    return 0;
}

/* Reads every ended pair whose end event completed; with `final`, drops
 * the ones still running.  Locked.  The samples are written after the
 * lock is let go: they go to telem_add_data_tags(). */
typedef struct {
    const char *name;
    int64_t ts_ns;
    double seconds;
} s_done_t;

static size_t
s_collect(int final, s_done_t *done)
{
    size_t n = 0;
    for (uint32_t i = 0; i < S_NPAIRS && s_gpu.nended; i++) {
        s_pair_t *p = &s_gpu.pairs[i];
        if (p->state != S_ENDED)
            continue;
        s_cu_result_t rc = s_gpu.cu.event_query(p->b);
        if (rc == S_NOT_READY && !final)
            continue;
        float ms = 0;
        if (rc == 0 && s_gpu.cu.event_elapsed(&ms, p->a, p->b) == 0
            && ms >= 0) {
            done[n++] = (s_done_t) { p->name, p->ts_ns, (double) ms / 1e3 };
        } else {
            s_count(&s_gpu.failed);       /* an error, or running at the end */
        }
        s_release(p);
    }
    return n;
}

static void
s_record(const s_done_t *done, size_t n)
{
    const char *rank = telem_section_rank();
    for (size_t i = 0; i < n; i++)
        if (telem_add_data_tags("telem_section_gpu_seconds", done[i].seconds,
                                done[i].ts_ns, 1, 2, "section", done[i].name,
                                "rank", rank) == 0)
            s_count(&s_gpu.recorded);
}

/* Reads what has completed (locks, then records unlocked). */
static void
s_read(int final)
{
    s_done_t done[S_NPAIRS];
    pthread_mutex_lock(&s_gpu.mu);
    size_t n = s_collect(final, done);
    pthread_mutex_unlock(&s_gpu.mu);
    s_record(done, n);
}

static void
s_flush_hook(int final)
{
    s_read(final);
}

int
tsg_begin(void *stream, uint32_t *idx, uint32_t *gen)
{
    pthread_once(&s_gpu.once, s_load);
    s_cu_ctx_t ctx = NULL;
    if (!s_gpu.ok || s_gpu.cu.ctx_get_current(&ctx) != 0 || !ctx) {
        s_count(&s_gpu.unavailable);
        return -1;
    }
    s_read(0);
    pthread_mutex_lock(&s_gpu.mu);
    s_pair_t *p = NULL;
    for (uint32_t i = 0; i < S_NPAIRS && !p; i++)
        if (s_gpu.pairs[i].state == S_FREE)
            p = &s_gpu.pairs[i];
    int rc = -1;
    if (!p) {
        s_count(&s_gpu.full);
    } else if (s_events(p, ctx) != 0
               || s_gpu.cu.event_record(p->a, stream) != 0) {
        s_count(&s_gpu.failed);
    } else {
        p->state = S_BEGUN;
        p->gen = ++s_gpu.gen;
        p->stream = stream;
        *idx = (uint32_t) (p - s_gpu.pairs);
        *gen = p->gen;
        rc = 0;
    }
    pthread_mutex_unlock(&s_gpu.mu);
    return rc;
}

void
tsg_end(uint32_t idx, uint32_t gen, const char *name, int64_t ts_ns)
{
    if (idx >= S_NPAIRS || !s_gpu.ok)
        return;
    pthread_mutex_lock(&s_gpu.mu);
    s_pair_t *p = &s_gpu.pairs[idx];
    if (p->state == S_BEGUN && p->gen == gen) {
        if (s_gpu.cu.event_record(p->b, p->stream) == 0) {
            p->state = S_ENDED;
            p->name = name;
            p->ts_ns = ts_ns;
            s_gpu.nended++;
        } else {
            s_count(&s_gpu.failed);
            s_release(p);
        }
    }
    pthread_mutex_unlock(&s_gpu.mu);
    s_read(0);
}

void
telem_section_gpu_stats(telem_section_gpu_stats_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s_gpu.mu);
    for (uint32_t i = 0; i < S_NPAIRS; i++)
        out->pending += s_gpu.pairs[i].state != S_FREE;
    pthread_mutex_unlock(&s_gpu.mu);
    out->recorded = atomic_load(&s_gpu.recorded);
    out->unavailable = atomic_load(&s_gpu.unavailable);
    out->failed = atomic_load(&s_gpu.failed);
    out->full = atomic_load(&s_gpu.full);
}
