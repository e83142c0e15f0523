/* telem_sampler_cpufreq.c - level 2 current frequency of each core, from
 * <sys_root>/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq (kHz, as
 * the cpufreq driver last set or measured it; Documentation/admin-guide/
 * pm/cpufreq.rst), tag cpu.
 *
 * The files are found and opened once, at open(), and re-read with pread()
 * each call.  Cores brought online later are not followed until telemd
 * restarts.  The sampler is unsupported where no core has cpufreq (virtual
 * machines usually have none).
 */
#include <stdio.h>
#include <stdlib.h>

#include "telem_sampler.h"
#include "telem_stext.h"

static const telem_meta_t s_metrics[] = {
    {"cpu_frequency_hertz", TELEM_METRIC_GAUGE, "hertz",
     "Current frequency of a core (tag cpu; scaling_cur_freq in "
     "/sys/devices/system/cpu/cpuN/cpufreq)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    telem_stext_file_t *files;
    size_t n;
    telem_stext_t text;
} s_cpufreq_t;

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_cpufreq_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    int nok = 0, last = TELEM_EIO;
    for (size_t i = 0; i < self->n; i++) {
        telem_stext_file_t *f = &self->files[i];
        uint64_t khz;
        int rc = telem_stext_read(&self->text, -1, "", &f->fd);
        if (rc == 0 && telem_stext_u64s(self->text.buf, &khz, 1) != 1)
            rc = TELEM_EPROTO;
        if (rc != 0) {
            last = rc;
            continue;
        }
        telem_tag_t tag = {"cpu", f->name};
        emit(arg, "cpu_frequency_hertz", &tag, 1, (double) khz * 1000.0);
        nok++;
    }
    return nok > 0 ? 0 : last;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_cpufreq_t *self = *state_p;
    telem_stext_files_free(&self->files, self->n);
    telem_stext_free(&self->text);
    free(self);
    *state_p = NULL;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_cpufreq_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/devices/system/cpu",
                 env->sys_root ? env->sys_root : "/sys");
        int n = telem_stext_open_numbered(dir, "cpu",
                                          "cpufreq/scaling_cur_freq",
                                          &self->files);
        self->n = n > 0 ? (size_t) n : 0;
        rc = n == TELEM_ENOMEM ? n : n <= 0 ? TELEM_EUNSUPPORTED : 0;
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

const telem_sampler_vt_t telem_sampler_cpufreq = {
    .name = "cpufreq",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
