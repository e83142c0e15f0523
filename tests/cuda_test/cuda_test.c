/* cuda_test.c - a test-only CUDA driver: the ABI of exactly the entry
 * points libtelem's section device time uses (telem_section_gpu.c),
 * answering as the test's environment says.  Built by the tests for
 * test_section_gpu, never installed, never loaded outside them.
 *
 * The device clock advances by $TELEM_CUDA_TEST_MS milliseconds (default
 * 5) at every event record, so the device time of a begin/end pair with
 * no record between them is that value.  A recorded event answers
 * cuEventQuery with CUDA_ERROR_NOT_READY $TELEM_CUDA_TEST_NOT_READY times
 * (default 0) before it completes: the work "runs" until it has been
 * asked that often.  $TELEM_CUDA_TEST_CTX: 0 no current context, 1 (the
 * default) or 2 two different contexts.  $TELEM_CUDA_TEST_FAIL=1: every
 * cuEventRecord fails.  The environment is read at every call, so a test
 * changes it between phases.  The synchronizing calls are here only to
 * abort: the caller must never wait for the device.
 */
#include <pthread.h>
#include <stdlib.h>

#define S_API __attribute__((visibility("default")))
#define S_SUCCESS 0
#define S_INVALID_VALUE 1
#define S_INVALID_HANDLE 400
#define S_NOT_READY 600
#define S_LAUNCH_FAILED 719

typedef struct s_event {
    unsigned magic;
    long ctx;
    double t_ms;                  /* device clock at the record */
    int recorded;
    int not_ready;                /* queries left before it completes */
} s_event_t;

#define S_MAGIC 0x45564e54u

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static double s_clock_ms;
static char s_ctx[2];             /* two distinct addresses */

static long
s_env(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static double
s_env_d(const char *name, double dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtod(v, NULL) : dflt;
}

S_API int
cuCtxGetCurrent(void **ctx)
{
    if (!ctx)
        return S_INVALID_VALUE;
    long c = s_env("TELEM_CUDA_TEST_CTX", 1);
    *ctx = c == 0 ? NULL : &s_ctx[c == 2];
    return S_SUCCESS;
}

S_API int
cuEventCreate(s_event_t **ev, unsigned int flags)
{
    if (!ev || flags != 0)
        return S_INVALID_VALUE;
    s_event_t *e = calloc(1, sizeof *e);
    if (!e)
        return 2;                 /* CUDA_ERROR_OUT_OF_MEMORY */
    e->magic = S_MAGIC;
    e->ctx = s_env("TELEM_CUDA_TEST_CTX", 1);
    *ev = e;
    return S_SUCCESS;
}

S_API int
cuEventRecord(s_event_t *e, void *stream)
{
    (void) stream;
    if (!e || e->magic != S_MAGIC)
        return S_INVALID_HANDLE;
    if (e->ctx != s_env("TELEM_CUDA_TEST_CTX", 1))
        return 201;               /* CUDA_ERROR_INVALID_CONTEXT */
    if (s_env("TELEM_CUDA_TEST_FAIL", 0))
        return S_LAUNCH_FAILED;
    pthread_mutex_lock(&s_mu);
    s_clock_ms += s_env_d("TELEM_CUDA_TEST_MS", 5);
    e->t_ms = s_clock_ms;
    e->recorded = 1;
    e->not_ready = (int) s_env("TELEM_CUDA_TEST_NOT_READY", 0);
    pthread_mutex_unlock(&s_mu);
    return S_SUCCESS;
}

S_API int
cuEventQuery(s_event_t *e)
{
    if (!e || e->magic != S_MAGIC || !e->recorded)
        return S_INVALID_HANDLE;
    pthread_mutex_lock(&s_mu);
    int rc = e->not_ready > 0 ? S_NOT_READY : S_SUCCESS;
    if (e->not_ready > 0)
        e->not_ready--;
    pthread_mutex_unlock(&s_mu);
    return rc;
}

S_API int
cuEventElapsedTime(float *ms, s_event_t *a, s_event_t *b)
{
    if (!ms || !a || !b || a->magic != S_MAGIC || b->magic != S_MAGIC)
        return S_INVALID_HANDLE;
    if (!a->recorded || !b->recorded || b->not_ready > 0)
        return S_NOT_READY;
    *ms = (float) (b->t_ms - a->t_ms);
    return S_SUCCESS;
}

S_API int
cuEventDestroy_v2(s_event_t *e)
{
    if (!e || e->magic != S_MAGIC)
        return S_INVALID_HANDLE;
    e->magic = 0;
    free(e);
    return S_SUCCESS;
}

S_API int
cuEventSynchronize(s_event_t *e)
{
    (void) e;
    abort();
}

S_API int
cuStreamSynchronize(void *stream)
{
    (void) stream;
    abort();
}

S_API int
cuCtxSynchronize(void)
{
    abort();
}
