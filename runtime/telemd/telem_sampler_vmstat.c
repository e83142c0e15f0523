/* telem_sampler_vmstat.c - level 2 virtual memory events from
 * <proc_root>/vmstat: page faults, major page faults, pages swapped in and
 * out, and processes killed by the OOM killer.
 *
 * vmstat is "name value" per line, every value a counter since boot.  The
 * fault and swap counters become rates against the previous call, as the
 * proc sampler does with its counters (*_per_second gauges); oom_kill
 * (Linux 4.13 and later) is kept as the counter it is, vm_oom_kills_total,
 * since an OOM kill is an event to count rather than a rate.  The file is
 * opened once and re-read with pread(); the sampler is unsupported when it
 * cannot be read or has none of these fields.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_sampler.h"
#include "telem_stext.h"
#include "telem_time.h"

enum { S_PGFAULT, S_PGMAJFAULT, S_PSWPIN, S_PSWPOUT, S_OOM_KILL, S_N };

static const struct {
    const char *key;            /* field name and its blank */
    const char *metric;
    bool rate;
} s_fields[S_N] = {
    {"pgfault ", "vm_page_faults_per_second", true},
    {"pgmajfault ", "vm_major_page_faults_per_second", true},
    {"pswpin ", "vm_swap_in_pages_per_second", true},
    {"pswpout ", "vm_swap_out_pages_per_second", true},
    {"oom_kill ", "vm_oom_kills_total", false},
};

static const telem_meta_t s_metrics[] = {
    {"vm_page_faults_per_second", TELEM_METRIC_GAUGE, "1/s",
     "Page faults per second, minor and major (pgfault in /proc/vmstat)."},
    {"vm_major_page_faults_per_second", TELEM_METRIC_GAUGE, "1/s",
     "Major page faults per second, those that had to read from disk "
     "(pgmajfault in /proc/vmstat)."},
    {"vm_swap_in_pages_per_second", TELEM_METRIC_GAUGE, "1/s",
     "Pages swapped in per second (pswpin in /proc/vmstat)."},
    {"vm_swap_out_pages_per_second", TELEM_METRIC_GAUGE, "1/s",
     "Pages swapped out per second (pswpout in /proc/vmstat)."},
    {"vm_oom_kills_total", TELEM_METRIC_COUNTER, "",
     "Processes killed by the kernel's OOM killer since boot (oom_kill in "
     "/proc/vmstat)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    int proc_fd;
    int fd;
    telem_stext_t text;
    uint64_t prev[S_N];
    unsigned have_prev;         /* bit per field */
    bool have_ns;
    int64_t prev_ns;
} s_vmstat_t;

/* Fills v[] from the file; returns a bit per field found. */
static unsigned
s_parse(char *buf, uint64_t v[S_N])
{
    unsigned found = 0;
    char *pos = buf, *line;
    while (found != (1u << S_N) - 1
           && (line = telem_stext_line(&pos)) != NULL) {
        for (int i = 0; i < S_N; i++) {
            size_t klen = strlen(s_fields[i].key);
            if (!(found & (1u << i))
                && strncmp(line, s_fields[i].key, klen) == 0
                && telem_stext_u64s(line + klen, &v[i], 1) == 1) {
                found |= 1u << i;
                break;
            }
        }
    }
    return found;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    s_vmstat_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    int rc = telem_stext_read(&self->text, self->proc_fd, "vmstat",
                              &self->fd);
    if (rc != 0)
        return rc;
    uint64_t v[S_N] = {0};
    unsigned found = s_parse(self->text.buf, v);
    double dt = self->have_ns && now_ns > self->prev_ns
        ? (double) (now_ns - self->prev_ns) / (double) TELEM_NS_PER_SEC : 0.0;
    for (int i = 0; i < S_N; i++) {
        if (!(found & (1u << i)))
            continue;
        if (!s_fields[i].rate)
            emit(arg, s_fields[i].metric, NULL, 0, (double) v[i]);
        else if (self->have_prev & (1u << i) && dt > 0.0
                 && v[i] >= self->prev[i])
            emit(arg, s_fields[i].metric, NULL, 0,
                 (double) (v[i] - self->prev[i]) / dt);
        self->prev[i] = v[i];
    }
    self->have_prev = found;
    self->have_ns = true;
    self->prev_ns = now_ns;
    return found ? 0 : TELEM_EPROTO;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_vmstat_t *self = *state_p;
    if (self->fd >= 0)
        close(self->fd);
    if (self->proc_fd >= 0)
        close(self->proc_fd);
    telem_stext_free(&self->text);
    free(self);
    *state_p = NULL;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_vmstat_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        self->fd = -1;
        self->proc_fd = open(env->proc_root ? env->proc_root : "/proc",
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint64_t v[S_N];
        if (self->proc_fd < 0
            || telem_stext_read(&self->text, self->proc_fd, "vmstat",
                                &self->fd) != 0
            || s_parse(self->text.buf, v) == 0)
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

const telem_sampler_vt_t telem_sampler_vmstat = {
    .name = "vmstat",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
