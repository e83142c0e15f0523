/* telem_backend_cpu.c - the cpu device backend: a device is a core.
 *
 * Devices are the cores in $TELEM_CPU_DEVICES, else every core in the
 * process's affinity mask, ascending.  bind() pins the calling thread with
 * sched_setaffinity.  The one kernel, "dgemm", multiplies two fixed
 * S_DGEMM_N x S_DGEMM_N matrices through GSL's CBLAS (gsl_blas_dgemm):
 * about 3 ms a repetition on a current x86 core with GSL's reference
 * CBLAS, short enough that collectors sharing a core rarely overlap, long
 * enough that timer resolution and scheduler ticks do not dominate.  The
 * matrices are filled once with fixed values, so every repetition does the
 * same arithmetic on the same data.  The load is a busy loop of dependent
 * floating-point work that checks the monotonic clock every few thousand
 * operations.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>

#include "telem_backend.h"
#include "telem_error.h"
#include "telem_time.h"

#define S_DGEMM_N 160
#define S_SPIN_CHECK 4096       /* loop iterations between clock reads */

typedef struct {
    int cores[CPU_SETSIZE];     /* device index -> core number */
    size_t n;
} s_cpu_t;

typedef struct {
    gsl_matrix *a, *b, *c;
} s_dgemm_t;

typedef struct {
    volatile double sink;       /* keeps the busy work observable */
} s_spin_t;

static const char *const s_kernels[] = { "dgemm", NULL };

static void
s_model_name(char *buf, size_t size)
{
    char line[512];
    snprintf(buf, size, "cpu core");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon += strspn(colon + 1, " \t") + 1;
        colon[strcspn(colon, "\n")] = '\0';
        if (*colon)
            snprintf(buf, size, "%s", colon);
        break;
    }
    fclose(f);
}

/* Fills st->cores from $TELEM_CPU_DEVICES or the affinity mask. */
static int
s_cores(s_cpu_t *st, const cpu_set_t *allowed, char *why, size_t why_size)
{
    const char *env = getenv("TELEM_CPU_DEVICES");
    long list[CPU_SETSIZE];
    size_t n = 0;
    if (env && *env) {
        if (telem_backend_device_list_parse(env, CPU_SETSIZE - 1, list,
                                            CPU_SETSIZE, &n)) {
            snprintf(why, why_size, "TELEM_CPU_DEVICES='%s' is not a list of "
                     "distinct core numbers such as 2,3 or 0-3", env);
            return TELEM_EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
            if (!CPU_ISSET((int) list[i], allowed)) {
                snprintf(why, why_size, "TELEM_CPU_DEVICES names core %ld, "
                         "which this process may not run on", list[i]);
                return TELEM_EINVAL;
            }
            st->cores[i] = (int) list[i];
        }
        st->n = n;
        return 0;
    }
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, allowed))
            st->cores[st->n++] = c;
    return 0;
}

static int
s_open(void **state_p, telem_backend_device_t **devs_p, size_t *ndevs_p,
       char *why, size_t why_size)
{
    cpu_set_t allowed;
    char model[TELEM_BACKEND_DEVICE_NAME_MAX];
    int rc;
    s_cpu_t *st = calloc(1, sizeof *st);
    if (!st)
        return TELEM_ENOMEM;
    if (sched_getaffinity(0, sizeof allowed, &allowed)) {
        snprintf(why, why_size, "sched_getaffinity: %s", strerror(errno));
        free(st);
        return TELEM_EIO;
    }
    if ((rc = s_cores(st, &allowed, why, why_size)) != 0) {
        free(st);
        return rc;
    }
    telem_backend_device_t *devs = calloc(st->n ? st->n : 1, sizeof *devs);
    if (!devs) {
        free(st);
        return TELEM_ENOMEM;
    }
    s_model_name(model, sizeof model);
    for (size_t i = 0; i < st->n; i++) {
        snprintf(devs[i].id, sizeof devs[i].id, "%d", st->cores[i]);
        snprintf(devs[i].name, sizeof devs[i].name, "%s", model);
    }
    *devs_p = devs;
    *ndevs_p = st->n;
    *state_p = st;
    return 0;
}

static void
s_close(void **state_p)
{
    free(*state_p);
    *state_p = NULL;
}

static int
s_bind(void *state, size_t dev, char *why, size_t why_size)
{
    const s_cpu_t *st = state;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(st->cores[dev], &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        int e = errno;
        snprintf(why, why_size, "cannot pin to core %d: %s", st->cores[dev],
                 strerror(e));
        errno = e;
        return TELEM_EIO;
    }
    return 0;
}

static void
s_dgemm_free(s_dgemm_t *d)
{
    gsl_matrix_free(d->a);
    gsl_matrix_free(d->b);
    gsl_matrix_free(d->c);
    free(d);
}

static int
s_kernel_new(void *state, size_t dev, const char *kernel, void **k_p,
             char *why, size_t why_size)
{
    (void) state, (void) dev, (void) kernel, (void) why, (void) why_size;
    s_dgemm_t *d = calloc(1, sizeof *d);
    if (!d)
        return TELEM_ENOMEM;
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    d->a = gsl_matrix_alloc(S_DGEMM_N, S_DGEMM_N);
    d->b = gsl_matrix_alloc(S_DGEMM_N, S_DGEMM_N);
    d->c = gsl_matrix_calloc(S_DGEMM_N, S_DGEMM_N);
    gsl_set_error_handler(old);
    if (!d->a || !d->b || !d->c) {
        s_dgemm_free(d);
        return TELEM_ENOMEM;
    }
    for (size_t i = 0; i < S_DGEMM_N; i++)
        for (size_t j = 0; j < S_DGEMM_N; j++) {
            gsl_matrix_set(d->a, i, j, (double) ((i * 7 + j) % 13) / 13.0);
            gsl_matrix_set(d->b, i, j, (double) ((i + j * 5) % 11) / 11.0);
        }
    *k_p = d;
    return 0;
}

static int
s_kernel_run(void *k, double *seconds)
{
    s_dgemm_t *d = k;
    int64_t t0 = telem_mono_ns();
    int rc = gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, d->a, d->b, 0.0,
                            d->c);
    int64_t t1 = telem_mono_ns();
    if (rc)
        return TELEM_EIO;
    *seconds = (double) (t1 - t0 > 0 ? t1 - t0 : 1) / 1e9;
    return 0;
}

static void
s_kernel_destroy(void **k_p)
{
    s_dgemm_free(*k_p);
    *k_p = NULL;
}

static int
s_load_new(void *state, size_t dev, void **l_p, char *why, size_t why_size)
{
    (void) state, (void) dev, (void) why, (void) why_size;
    s_spin_t *s = calloc(1, sizeof *s);
    if (!s)
        return TELEM_ENOMEM;
    s->sink = 1.0;
    *l_p = s;
    return 0;
}

static int
s_load_run(void *l, int64_t busy_ns)
{
    s_spin_t *s = l;
    int64_t end = telem_mono_ns() + busy_ns;
    double x = s->sink;
    do {
        for (int i = 0; i < S_SPIN_CHECK; i++)
            x = x * 1.0000001 + 1e-9;
        if (x > 1e6)
            x = 1.0;
    } while (telem_mono_ns() < end);
    s->sink = x;
    return 0;
}

static void
s_load_destroy(void **l_p)
{
    free(*l_p);
    *l_p = NULL;
}

const telem_backend_vt_t telem_backend_cpu = {
    .name = "cpu",
    .kernels = s_kernels,
    .open = s_open,
    .close = s_close,
    .bind = s_bind,
    .kernel_new = s_kernel_new,
    .kernel_run = s_kernel_run,
    .kernel_destroy = s_kernel_destroy,
    .load_new = s_load_new,
    .load_run = s_load_run,
    .load_destroy = s_load_destroy,
};
