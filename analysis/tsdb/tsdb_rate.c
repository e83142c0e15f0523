/* tsdb_rate.c - OpenTSDB's rate of one series (tsdb_rate.h). */
#include "tsdb_rate.h"

tsdb_rate_opts_t
tsdb_rate_defaults(void)
{
    return (tsdb_rate_opts_t) { 0, TSDB_RATE_COUNTER_MAX, 0, 0 };
}

size_t
tsdb_rate_run(const tsdb_rate_opts_t *o, const int64_t *ts, const double *v,
              size_t n, int64_t *out_ts, double *out_v)
{
    size_t k = 0;
    for (size_t i = 1, prev = 0; i < n; i++) {
        if (ts[i] <= ts[prev])
            continue;                 /* not later: skipped */
        double secs = (double) (ts[i] - ts[prev]) / 1000.0;
        double diff = v[i] - v[prev];
        double rate = diff / secs;
        if (o->counter && diff < 0) {
            if (o->drop_resets) {
                prev = i;             /* the next rate counts from here */
                continue;
            }
            rate = (o->counter_max - v[prev] + v[i]) / secs;
            if (o->reset_value > 0 && rate > o->reset_value)
                rate = 0;
        }
        out_ts[k] = ts[i];
        out_v[k++] = rate;
        prev = i;
    }
    return k;
}
