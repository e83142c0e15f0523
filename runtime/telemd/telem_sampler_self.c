/* telem_sampler_self.c - level 4: telemd's own counters as metrics.
 *
 * telemd hands a callback in the environment (self_stats) that fills a
 * telem_sampler_self_stats_t; this sampler turns it into telemd_* metrics
 * so the agent's size, ingest rate and losses can be queried and graphed
 * like any other series.  The ingest rate is computed from the ingested
 * counter against the previous call, so the first call has none.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "telem_sampler.h"
#include "telem_time.h"

typedef struct {
    void (*stats)(void *arg, telem_sampler_self_stats_t *out);
    void *stats_arg;
    bool have_prev;
    int64_t prev_ns;
    uint64_t prev_ingested;
} s_self_t;

static const telem_meta_t s_metrics[] = {
    {"telemd_series", TELEM_METRIC_GAUGE, "",
     "Series held in telemd's store."},
    {"telemd_points", TELEM_METRIC_GAUGE, "",
     "Points held in telemd's store."},
    {"telemd_mem_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Memory used by telemd's store."},
    {"telemd_mem_cap_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Memory cap of telemd's store."},
    {"telemd_ingested_total", TELEM_METRIC_COUNTER, "",
     "Samples telemd accepted since it started."},
    {"telemd_dropped_total", TELEM_METRIC_COUNTER, "",
     "Samples telemd refused since it started (level, caps)."},
    {"telemd_bad_messages_total", TELEM_METRIC_COUNTER, "",
     "Frames telemd rejected as malformed since it started."},
    {"telemd_expired_total", TELEM_METRIC_COUNTER, "",
     "Points dropped from telemd's store as older than the retention "
     "window since it started."},
    {"telemd_ingest_rate", TELEM_METRIC_GAUGE, "1/s",
     "Samples per second telemd accepted since the previous sample."},
    {"telemd_ingest_queue", TELEM_METRIC_GAUGE, "",
     "Messages waiting on telemd's ingest socket."},
    {"telemd_counter_series", TELEM_METRIC_GAUGE, "",
     "Node series of pushed counters (at most 10,000)."},
    {"telemd_push_refused_total", TELEM_METRIC_COUNTER, "",
     "Pushed samples telemd refused since it started (malformed counter "
     "increments, counters past their cap)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

/* Fails with TELEM_EINVAL when the environment has no self_stats callback. */
static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    int rc = TELEM_EINVAL;
    s_self_t *self = NULL;
    if (env && env->self_stats) {
        rc = TELEM_ENOMEM;
        self = calloc(1, sizeof *self);
    }
    if (err)
        *err = self ? 0 : rc;
    if (!self)
        return NULL;
    self->stats = env->self_stats;
    self->stats_arg = env->self_stats_arg;
    return self;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    free(*state_p);
    *state_p = NULL;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    s_self_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    telem_sampler_self_stats_t st = {0};
    self->stats(self->stats_arg, &st);
    emit(arg, "telemd_series", NULL, 0, (double) st.nseries);
    emit(arg, "telemd_points", NULL, 0, (double) st.npoints);
    emit(arg, "telemd_mem_bytes", NULL, 0, (double) st.mem_bytes);
    emit(arg, "telemd_mem_cap_bytes", NULL, 0, (double) st.mem_cap_bytes);
    emit(arg, "telemd_ingested_total", NULL, 0, (double) st.ingested);
    emit(arg, "telemd_dropped_total", NULL, 0, (double) st.dropped);
    emit(arg, "telemd_bad_messages_total", NULL, 0,
         (double) st.bad_messages);
    emit(arg, "telemd_expired_total", NULL, 0, (double) st.expired);
    emit(arg, "telemd_ingest_queue", NULL, 0, (double) st.ingest_queue);
    emit(arg, "telemd_counter_series", NULL, 0, (double) st.counter_series);
    emit(arg, "telemd_push_refused_total", NULL, 0,
         (double) st.push_refused);
    /* No rate across a clock step backwards or a counter reset. */
    if (self->have_prev && now_ns > self->prev_ns
        && st.ingested >= self->prev_ingested)
        emit(arg, "telemd_ingest_rate", NULL, 0,
             (double) (st.ingested - self->prev_ingested)
             * (double) TELEM_NS_PER_SEC / (double) (now_ns - self->prev_ns));
    self->have_prev = true;
    self->prev_ns = now_ns;
    self->prev_ingested = st.ingested;
    return 0;
}

const telem_sampler_vt_t telem_sampler_self = {
    .name = "self",
    .min_level = 4,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
