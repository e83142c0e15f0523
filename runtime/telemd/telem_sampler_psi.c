/* telem_sampler_psi.c - level 2 pressure stall information (PSI) from
 * <proc_root>/pressure/{cpu,memory,io}.
 *
 * Each file has a "some" line (share of time at least one task stalled on
 * the resource) and, since Linux 5.13 for cpu, a "full" line (all non-idle
 * tasks stalled at once):
 *     some avg10=1.53 avg60=0.87 avg300=0.27 total=4217563
 * (Documentation/accounting/psi.rst).  For each line it emits avg10, the
 * kernel's own 10-second running average in percent, and total, the stall
 * time in microseconds since boot, as seconds (a counter).  avg60 and
 * avg300 are left to queries over the stored series.
 *
 * The three files are opened once and re-read with pread().  The sampler
 * is unsupported when none of them can be read (kernels without
 * CONFIG_PSI, or booted with psi=0, where reading fails).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_sampler.h"
#include "telem_stext.h"

#define S_RES 3

static const char *const s_files[S_RES] = {"cpu", "memory", "io"};

/* metric names by resource, then some/full, then avg10/total */
static const char *const s_names[S_RES][2][2] = {
    {{"pressure_cpu_some_percent", "pressure_cpu_some_seconds_total"},
     {"pressure_cpu_full_percent", "pressure_cpu_full_seconds_total"}},
    {{"pressure_memory_some_percent", "pressure_memory_some_seconds_total"},
     {"pressure_memory_full_percent", "pressure_memory_full_seconds_total"}},
    {{"pressure_io_some_percent", "pressure_io_some_seconds_total"},
     {"pressure_io_full_percent", "pressure_io_full_seconds_total"}},
};

#define AVG " stalled over the last 10 seconds, the kernel's running " \
            "average, 0-100 (avg10 in /proc/pressure/"
#define TOT " since boot (total in /proc/pressure/"
#define PSI(res, what, who) \
    {"pressure_" res "_" what "_percent", TELEM_METRIC_GAUGE, "percent", \
     "Share of the time " who AVG res ")."}, \
    {"pressure_" res "_" what "_seconds_total", TELEM_METRIC_COUNTER, \
     "seconds", "Time " who TOT res ")."}
#define SOME "at least one task was"
#define FULL "every non-idle task was at once"

static const telem_meta_t s_metrics[] = {
    PSI("cpu", "some", SOME " waiting for a CPU,"),
    PSI("cpu", "full", FULL),
    PSI("memory", "some", SOME " stalled on memory,"),
    PSI("memory", "full", FULL " stalled on memory,"),
    PSI("io", "some", SOME " stalled on I/O,"),
    PSI("io", "full", FULL " stalled on I/O,"),
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    int dir_fd;
    int fds[S_RES];
    telem_stext_t text;
} s_psi_t;

/* Parses "avg10=A ... total=T" after the some/full word. */
static bool
s_parse_line(const char *s, double *avg10, uint64_t *total)
{
    const char *a = strstr(s, "avg10="), *t = strstr(s, "total=");
    return a && t && telem_stext_doubles(a + 6, avg10, 1) == 1
        && *avg10 >= 0.0 && telem_stext_u64s(t + 6, total, 1) == 1;
}

/* Reads one resource's file and emits its lines; 0 when at least one line
 * was understood. */
static int
s_do_res(s_psi_t *self, int r, telem_sampler_emit_fn emit, void *arg)
{
    int rc = telem_stext_read(&self->text, self->dir_fd, s_files[r],
                              &self->fds[r]);
    if (rc != 0)
        return rc;
    char *pos = self->text.buf, *line;
    bool found = false;
    while ((line = telem_stext_line(&pos)) != NULL) {
        int kind = telem_stext_starts(line, "some ") ? 0
                 : telem_stext_starts(line, "full ") ? 1 : -1;
        double avg10;
        uint64_t total;
        if (kind < 0 || !s_parse_line(line + 5, &avg10, &total))
            continue;
        emit(arg, s_names[r][kind][0], NULL, 0, avg10 > 100.0 ? 100.0 : avg10);
        emit(arg, s_names[r][kind][1], NULL, 0, (double) total / 1e6);
        found = true;
    }
    return found ? 0 : TELEM_EPROTO;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_psi_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    int nok = 0, last = TELEM_EIO;
    for (int r = 0; r < S_RES; r++) {
        int rc = s_do_res(self, r, emit, arg);
        if (rc == 0)
            nok++;
        else
            last = rc;
    }
    return nok > 0 ? 0 : last;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_psi_t *self = *state_p;
    for (int r = 0; r < S_RES; r++)
        if (self->fds[r] >= 0)
            close(self->fds[r]);
    if (self->dir_fd >= 0)
        close(self->dir_fd);
    telem_stext_free(&self->text);
    free(self);
    *state_p = NULL;
}

static void
s_ignore(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    (void) arg, (void) metric, (void) tags, (void) ntags, (void) value;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_psi_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        for (int r = 0; r < S_RES; r++)
            self->fds[r] = -1;
        int proc = open(env->proc_root ? env->proc_root : "/proc",
                        O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        self->dir_fd = proc < 0 ? -1
                     : openat(proc, "pressure",
                              O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc >= 0)
            close(proc);
        /* Present only if something can be read now. */
        if (self->dir_fd < 0 || s_sample(self, 0, s_ignore, NULL) != 0)
            rc = TELEM_EUNSUPPORTED;
    }
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        self = NULL;
    }
    if (err)
        *err = rc;
    return self;
}

const telem_sampler_vt_t telem_sampler_psi = {
    .name = "psi",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
