/* telem_collector_loop.c - a collector's rounds: absolute schedule, timed
 * repetitions, median and MAD, two samples per round.
 *
 * The schedule is computed from the epoch every time (round k starts at
 * epoch + k * period + phase), never by adding a period to "now", so
 * collectors do not drift apart however long they run.  Waiting for a
 * round is one ppoll() on the stop descriptor with the time left as its
 * timeout (repeated only if it wakes early), so a stop request ends the
 * wait at once.  With `spread`, repetition j waits the same way for its
 * own time in the round (start + phase + j x period / reps): devices that
 * take turns on one core, each at its own phase, then sample the whole
 * round at nearly the same instants, so a machine whose speed changes
 * within a round changes every device's figure alike.  Median and MAD
 * come from GSL (quickselect based; a round has a handful of figures).
 */
#include "telem_collector.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "telem.h"
#include "telem_backend.h"
#include "telem_error.h"
#include "telem_proto.h"
#include "telem_time.h"

#define S_REPS_MAX 1000

typedef struct {
    const telem_collector_config_t *cfg;
    telem_backend_t *backend;
    telem_backend_kernel_t *kernel;
    char metric[TELEM_NAME_MAX + 1];
    char spread[TELEM_NAME_MAX + 1];
    char gpu[24];
    double *figs, *work;
} s_run_t;

int
telem_collector_metric(char *buf, size_t size, const char *kernel)
{
    int n = snprintf(buf, size, "cg_%s_seconds", kernel);
    return n < 0 || (size_t) n >= size ? TELEM_ETOOBIG : 0;
}

static int
s_check(const telem_collector_config_t *c, char *why, size_t why_size)
{
    const char *bad = NULL;
    if (c->period_ns <= 0)
        bad = "the period must be above 0";
    else if (c->phase_ns < 0 || c->phase_ns >= c->period_ns)
        bad = "the phase must be at least 0 and below the period";
    else if (c->reps < 1 || c->reps > S_REPS_MAX)
        bad = "repetitions must be 1-1000";
    else if (c->spread && c->phase_ns >= c->period_ns / c->reps)
        bad = "with spread repetitions the phase must be below period/reps";
    else if (!c->group || !*c->group || strlen(c->group) > TELEM_NAME_MAX)
        bad = "the group name must be 1-255 bytes";
    else if (c->device < -1 || c->pin < -1)
        bad = "device and pin must be -1 or an index";
    else if (c->fn && (!c->metric || !*c->metric
                       || strlen(c->metric) > TELEM_NAME_MAX - 7))
        bad = "a user test needs a metric name of 1-248 bytes";
    else if (c->epoch_ns < 0)
        bad = "the epoch must not be negative";
    if (bad)
        snprintf(why, why_size, "%s", bad);
    return bad ? TELEM_EINVAL : 0;
}

/* Opens the backend, pins, prepares the kernel, names the metrics. */
static int
s_setup(s_run_t *r, char *why, size_t why_size)
{
    const telem_collector_config_t *c = r->cfg;
    int rc;
    int pin = c->pin >= 0 ? c->pin : c->device;
    r->backend = telem_backend_open(c->backend ? c->backend : "cpu", why,
                                    why_size, &rc);
    if (!r->backend)
        return rc;
    if (pin >= 0 && (rc = telem_backend_bind(r->backend, (size_t) pin, why,
                                             why_size)) != 0)
        return rc;
    if (!c->fn) {
        const char *kernel = c->kernel ? c->kernel
                             : telem_backend_vt(r->backend)->kernels[0];
        r->kernel = telem_backend_kernel_new(r->backend,
                                             pin >= 0 ? (size_t) pin : 0,
                                             kernel, why, why_size, &rc);
        if (!r->kernel)
            return rc;
        if (telem_collector_metric(r->metric, sizeof r->metric, kernel))
            return TELEM_ETOOBIG;
    } else {
        snprintf(r->metric, sizeof r->metric, "%s", c->metric);
    }
    if (snprintf(r->spread, sizeof r->spread, "%s_spread", r->metric)
        >= (int) sizeof r->spread) {
        snprintf(why, why_size, "metric name %s is too long", r->metric);
        return TELEM_ETOOBIG;
    }
    snprintf(r->gpu, sizeof r->gpu, "%d", c->device);
    r->figs = calloc((size_t) c->reps, sizeof *r->figs);
    r->work = calloc((size_t) c->reps, sizeof *r->work);
    return r->figs && r->work ? 0 : TELEM_ENOMEM;
}

static void
s_teardown(s_run_t *r)
{
    telem_backend_kernel_destroy(&r->kernel);
    telem_backend_close(&r->backend);
    free(r->figs);
    free(r->work);
}

static void
s_describe(const s_run_t *r)
{
    char doc[TELEM_NAME_MAX * 2];
    snprintf(doc, sizeof doc, "Median over a round's repetitions of the "
             "figure of collector test %s (higher = slower); tags gpu, "
             "backend, group.", r->metric);
    telem_describe(r->metric, "gauge", r->cfg->fn ? "" : "s", doc);
    snprintf(doc, sizeof doc, "Median absolute deviation of the "
             "repetitions of %s in one round (unscaled).", r->metric);
    telem_describe(r->spread, "gauge", r->cfg->fn ? "" : "s", doc);
}

/* Waits until realtime `target`.  Returns 1 if stop_fd became readable. */
static int
s_wait_until(int stop_fd, int64_t target)
{
    struct pollfd p = { .fd = stop_fd, .events = POLLIN };
    for (;;) {
        int64_t left = target - telem_now_ns();
        if (left <= 0)
            left = 0;
        struct timespec ts = { (time_t) (left / TELEM_NS_PER_SEC),
                               (long) (left % TELEM_NS_PER_SEC) };
        int n = ppoll(&p, stop_fd >= 0 ? 1 : 0, &ts, NULL);
        if (n > 0)
            return 1;
        if (left == 0 && n == 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return 1;
    }
}

/* Runs the repetitions of the round whose first one starts at `start`
 * (realtime); fills its median and MAD.  Returns TELEM_EIO when no
 * repetition gave a figure, 1 on a stop request. */
static int
s_round(s_run_t *r, int64_t start, double *median, double *mad)
{
    const telem_collector_config_t *c = r->cfg;
    size_t n = 0;
    for (int i = 0; i < c->reps; i++) {
        double x = NAN;
        if (c->spread && i > 0 &&
            s_wait_until(c->stop_fd, start + i * (c->period_ns / c->reps)))
            return 1;
        int rc = c->fn ? c->fn(c->fn_arg, c->device, &x)
                       : telem_backend_kernel_run(r->kernel, &x);
        if (rc == 0 && isfinite(x) && x >= 0)
            r->figs[n++] = x;
    }
    if (n == 0)
        return TELEM_EIO;
    *mad = gsl_stats_mad0(r->figs, 1, n, r->work);
    *median = gsl_stats_median(r->figs, 1, n);
    return 0;
}

static int
s_push(const s_run_t *r, const char *metric, double v, int64_t ts)
{
    const telem_collector_config_t *c = r->cfg;
    const char *backend = telem_backend_name(r->backend);
    if (c->device >= 0)
        return telem_add_data_tags(metric, v, ts, 1, 3, "gpu", r->gpu,
                                   "backend", backend, "group", c->group);
    return telem_add_data_tags(metric, v, ts, 1, 2, "backend", backend,
                               "group", c->group);
}

/* The first round whose start is at or after now. */
static uint64_t
s_next_round(const telem_collector_config_t *c, int64_t epoch)
{
    int64_t since = telem_now_ns() - epoch - c->phase_ns;
    if (since <= 0)
        return 0;
    return (uint64_t) ((since + c->period_ns - 1) / c->period_ns);
}

static void
s_loop(s_run_t *r, telem_collector_stats_t *st)
{
    const telem_collector_config_t *c = r->cfg;
    uint64_t k = s_next_round(c, st->epoch_ns);
    while (c->rounds == 0 || st->rounds + st->failed < c->rounds) {
        int64_t ts = st->epoch_ns + (int64_t) k * c->period_ns;
        if (s_wait_until(c->stop_fd, ts + c->phase_ns))
            break;
        double median, mad;
        int rc = s_round(r, ts + c->phase_ns, &median, &mad);
        if (rc == 1)
            break;                  /* stopped inside a round */
        if (rc == 0) {
            st->refused += s_push(r, r->metric, median, ts) < 0;
            st->refused += s_push(r, r->spread, mad, ts) < 0;
            st->rounds++;
            st->last_ts_ns = ts;
            st->last_median = median;
            st->last_spread = mad;
        } else {
            st->failed++;
        }
        uint64_t next = s_next_round(c, st->epoch_ns);
        if (next > k + 1)
            st->skipped += next - k - 1;
        k = next > k + 1 ? next : k + 1;
    }
}

int
telem_collector_run(const telem_collector_config_t *cfg,
                    telem_collector_stats_t *st_out, char *why,
                    size_t why_size)
{
    telem_collector_stats_t st;
    s_run_t r = { .cfg = cfg };
    memset(&st, 0, sizeof st);
    if (why && why_size)
        why[0] = '\0';
    int rc = s_check(cfg, why, why_size);
    if (rc)
        goto out;
    st.epoch_ns = cfg->epoch_ns;
    if (st.epoch_ns == 0)
        st.epoch_ns = (telem_now_ns() / cfg->period_ns + 1) * cfg->period_ns;
    telem_init();           /* the sender thread starts unpinned */
    if ((rc = s_setup(&r, why, why_size)) != 0)
        goto out;
    s_describe(&r);
    s_loop(&r, &st);
out:
    s_teardown(&r);
    if (st_out)
        *st_out = st;
    return rc;
}
