/* telem_client_dump.c - `telem_client dump -o FILE`: the job's history
 * into a dump file through ac_dump() (analysis/ac/ac_dump.h).
 *
 * Progress: a dump of a large job takes a while; after the first second
 * a line on stderr says how far it is, at most once a second (metric i
 * of n, points, bytes), and the end prints one summary line on stdout.
 *
 * Call order: telem_client.c calls this file; it calls analysis/ac.
 */
#include "telem_client.h"

#include <stdio.h>
#include <string.h>

#include "ac_dump.h"
#include "telem_time.h"

#define S_PROG "telem_client"

typedef struct {
    int64_t t0;
    int64_t last;
} s_progress_t;

static void
s_progress(void *arg, const ac_dump_stats_t *st)
{
    s_progress_t *p = arg;
    int64_t now = telem_mono_ns();
    if (now - p->t0 < TELEM_NS_PER_SEC || now - p->last < TELEM_NS_PER_SEC)
        return;
    p->last = now;
    fprintf(stderr, S_PROG ": dump: metric %zu of %zu (%s), %llu series, "
            "%llu points, %llu bytes so far\n", st->metric_index + 1,
            st->nmetrics, st->metric ? st->metric : "",
            (unsigned long long) st->series,
            (unsigned long long) st->points,
            (unsigned long long) st->block_bytes);
}

int
telem_client_dump(ac_t *ac, const telem_client_opts_t *o, const char *path,
                  const char *rundir, int64_t start_ns, int64_t end_ns)
{
    s_progress_t p = { telem_mono_ns(), 0 };
    ac_dump_opts_t d = { 0 };
    d.start_ns = start_ns;
    d.end_ns = end_ns;
    d.metrics = o->metrics;
    d.nmetrics = o->nmetrics;
    d.tags = o->tags;
    d.ntags = o->ntags;
    d.timeout_ms = o->timeout_ms;
    d.progress = s_progress;
    d.progress_arg = &p;
    d.rundir = rundir;
    ac_dump_stats_t st;
    char why[1200] = "";
    int rc = ac_dump(ac, &d, path, &st, why, sizeof why);
    if (rc && rc != TELEM_EPARTIAL) {
        fprintf(stderr, S_PROG ": dump: %s%s\n", why, rc == TELEM_EIO
                && strstr(why, "exists") ? " (choose another -o FILE)" : "");
        return 1;
    }
    if (rc == TELEM_EPARTIAL)
        fprintf(stderr, S_PROG ": dump: %s\n", why);
    if (st.cut)
        fprintf(stderr, S_PROG ": dump: %llu range(s) narrower than 1 ms "
                "were still cut to the reply limit: some points are "
                "missing\n", (unsigned long long) st.cut);
    printf("wrote %s: %llu series, %llu points, %llu blocks, %llu bytes of "
           "blocks (%.2f bytes/point), %zu metric%s, %llu queries, %llu job "
           "event%s\n", path,
           (unsigned long long) st.series, (unsigned long long) st.points,
           (unsigned long long) st.blocks,
           (unsigned long long) st.block_bytes,
           st.points ? (double) st.block_bytes / (double) st.points : 0.0,
           st.nmetrics, st.nmetrics == 1 ? "" : "s",
           (unsigned long long) st.queries, (unsigned long long) st.notes,
           st.notes == 1 ? "" : "s");
    return rc == TELEM_EPARTIAL ? 3 : 0;
}
