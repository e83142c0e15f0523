/* launch_job_dump.c - `telem_launch --dump DIR`: the job's history into a
 * dump file when the job ends, before the node daemons stop (as Dragon's
 * db-dump example dumps its databases at the end of a run).
 *
 * The dump asks every node whose telemd still runs (the launcher's
 * launch/telemd_nodes, nodes taken out of the job included) through
 * ac_dump() (analysis/ac/ac_dump.h) for everything they hold, into
 * DIR/job-<UTC time>-<launcher pid>.tdump (DIR created mode 0700), with
 * the run directory's detector events and restarts.  It runs
 * in the job's loop, at its end: nothing else is left to do then.  A
 * failed dump is logged and never changes the job's exit code. */
#include "launch_job_int.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ac_dump.h"
#include "telem_log.h"
#include "telem_time.h"

#define S_DUMP_TIMEOUT_MS 10000

static int
s_path(const launch_job_t *self, char *path, size_t size)
{
    if (mkdir(self->cfg.dump_dir, 0700) != 0 && errno != EEXIST) {
        telem_log(TELEM_LOG_ERROR, "--dump: cannot create %s: %s",
                  self->cfg.dump_dir, strerror(errno));
        return -1;
    }
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32];
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    return (size_t) snprintf(path, size, "%s/job-%s-%ld.tdump",
                             self->cfg.dump_dir, stamp, (long) getpid())
           < size ? 0 : -1;
}

void
launch_job_dump(launch_job_t *self)
{
    char nodes[TELEM_PATH_MAX + 32], path[TELEM_PATH_MAX + 64];
    if (!self->cfg.dump_dir || s_path(self, path, sizeof path))
        return;
    snprintf(nodes, sizeof nodes, "%s/telemd_nodes", self->launch_dir);
    int err = 0;
    ac_t *ac = ac_connect(nodes, S_DUMP_TIMEOUT_MS, &err);
    if (!ac) {
        telem_log(TELEM_LOG_ERROR, "--dump: no node to ask (%s): %s", nodes,
                  telem_strerror(err));
        return;
    }
    ac_dump_opts_t o = { .timeout_ms = S_DUMP_TIMEOUT_MS,
                         .rundir = self->rundir };
    ac_dump_stats_t st;
    char why[1200] = "";
    int64_t t0 = telem_mono_ns();
    int rc = ac_dump(ac, &o, path, &st, why, sizeof why);
    ac_close(&ac);
    if (rc && rc != TELEM_EPARTIAL) {
        telem_log(TELEM_LOG_ERROR, "--dump: %s", why);
        return;
    }
    if (rc)
        telem_log(TELEM_LOG_WARN, "--dump: %s", why);
    telem_log(TELEM_LOG_INFO, "dump written: %s (%llu series, %llu points, "
              "%llu bytes of blocks, %.1f s)", path,
              (unsigned long long) st.series, (unsigned long long) st.points,
              (unsigned long long) st.block_bytes,
              (double) (telem_mono_ns() - t0) / 1e9);
}
