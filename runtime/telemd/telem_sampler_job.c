/* telem_sampler_job.c - level 2: the job's threads and open files, and the
 * CPU and memory of its Slurm steps' cgroups.
 *
 * Threads and files: the entries of /proc/<pid>/task (one per thread) and
 * /proc/<pid>/fd (one per open file) of every process of the job's user,
 * from the walk of /proc it shares with the proc sampler's process count
 * (telem_procwalk.h: on procfs one fstatat of task/ gives the owner and
 * the threads, one of fd/ the open files; nothing is parsed).  With one
 * walk for both, and the owner from task/, the two samplers cost 1.39 ms
 * of CPU a call here instead of 2.76 (129 processes, job user root;
 * bench_samplers, medians of 3 runs).
 *
 * Slurm steps: Slurm 22.05's cgroup/v2 plugin puts every step under the
 * slurmstepd scope systemd made for slurmd:
 *   /sys/fs/cgroup/system.slice/slurmstepd.scope/job_<id>/step_<id>/
 * (step_<n>, step_batch, step_extern, step_interactive; the step's tasks
 * are below it in user/task_<n>, slurmstepd itself in slurm/), and with
 * --enable-multiple-slurmd (Debian's build) the scope is named
 * <node>_slurmstepd.scope.  Both are looked for, the node's first.  Of
 * each step: cpu.stat usage_usec, memory.current, memory.max (absent when
 * "max") and memory.events oom_kill; tags job and step (the names less
 * their job_ / step_ prefix).  Where there is no such scope (cgroup v1, no
 * cgroup plugin) those series are not emitted.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_sampler.h"
#include "telem_sampler_files.h"

#define S_PATH_MAX 512

static const telem_meta_t s_metrics[] = {
    {"job_threads", TELEM_METRIC_GAUGE, "",
     "Threads of the job user's processes (entries of /proc/<pid>/task)."},
    {"job_open_files", TELEM_METRIC_GAUGE, "",
     "Open file descriptors of the job user's processes (entries of "
     "/proc/<pid>/fd)."},
    {"job_step_cpu_seconds_total", TELEM_METRIC_COUNTER, "seconds",
     "CPU time of a Slurm step's cgroup (cpu.stat usage_usec; tags job, "
     "step)."},
    {"job_step_memory_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Memory charged to a Slurm step's cgroup (memory.current; tags job, "
     "step)."},
    {"job_step_memory_max_bytes", TELEM_METRIC_GAUGE, "bytes",
     "A Slurm step's memory limit (memory.max, when not \"max\"; tags job, "
     "step)."},
    {"job_step_oom_kills_total", TELEM_METRIC_COUNTER, "",
     "Processes of a Slurm step killed by the OOM killer (memory.events "
     "oom_kill; tags job, step)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    telem_procwalk_t *walk;         /* env's, or own_walk */
    telem_procwalk_t *own_walk;     /* made when env lends none */
    int sys_fd;                     /* sys_root, or -1 */
    char scopes[2][S_PATH_MAX];     /* relative to sys_root */
    telem_sampler_emit_fn emit;
    void *arg;
    const char *job;                /* the job being walked */
    int nsteps;                     /* steps seen this call */
} s_job_t;

static void
s_do_procs(s_job_t *self, int64_t now_ns)
{
    telem_procwalk_counts_t c;
    telem_procwalk_counts(self->walk, self->own_walk ? 0 : now_ns, &c);
    self->emit(self->arg, "job_threads", NULL, 0, (double) c.threads);
    self->emit(self->arg, "job_open_files", NULL, 0, (double) c.files);
}

/* The number after `key` at the start of a line of text, or -1. */
static int
s_keyed(const char *text, const char *key, uint64_t *out)
{
    size_t kl = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
        if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
            return telem_sfile_u64(l + kl, out, NULL) == 0 ? 0 : -1;
    return -1;
}

static void
s_do_step(int job_fd, const char *step, void *arg)
{
    s_job_t *self = arg;
    if (strncmp(step, "step_", 5) != 0 || !step[5])
        return;
    telem_tag_t tags[2] = {{"job", self->job}, {"step", step + 5}};
    char path[S_PATH_MAX], buf[TELEM_SFILE_TEXT_MAX];
    uint64_t v;
    self->nsteps++;
    snprintf(path, sizeof path, "%s/cpu.stat", step);
    if (telem_sfile_read_at(job_fd, path, buf, sizeof buf) > 0
        && s_keyed(buf, "usage_usec", &v) == 0)
        self->emit(self->arg, "job_step_cpu_seconds_total", tags, 2,
                   (double) v / 1e6);
    snprintf(path, sizeof path, "%s/memory.current", step);
    if (telem_sfile_read_at(job_fd, path, buf, sizeof buf) > 0
        && telem_sfile_u64(buf, &v, NULL) == 0)
        self->emit(self->arg, "job_step_memory_bytes", tags, 2, (double) v);
    snprintf(path, sizeof path, "%s/memory.max", step);
    if (telem_sfile_read_at(job_fd, path, buf, sizeof buf) > 0
        && telem_sfile_u64(buf, &v, NULL) == 0)
        self->emit(self->arg, "job_step_memory_max_bytes", tags, 2,
                   (double) v);
    snprintf(path, sizeof path, "%s/memory.events", step);
    if (telem_sfile_read_at(job_fd, path, buf, sizeof buf) > 0
        && s_keyed(buf, "oom_kill", &v) == 0)
        self->emit(self->arg, "job_step_oom_kills_total", tags, 2,
                   (double) v);
}

static void
s_do_job(int scope_fd, const char *job, void *arg)
{
    s_job_t *self = arg;
    if (strncmp(job, "job_", 4) != 0 || !job[4])
        return;
    self->job = job + 4;
    telem_sfile_each(scope_fd, job, s_do_step, self);
}

static void
s_do_cgroups(s_job_t *self)
{
    if (self->sys_fd < 0)
        return;
    for (int i = 0; i < 2; i++)
        if (self->scopes[i][0]
            && telem_sfile_each(self->sys_fd, self->scopes[i], s_do_job,
                                self) >= 0)
            return;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_job_t *self = *state_p;
    telem_procwalk_destroy(&self->own_walk);
    if (self->sys_fd >= 0)
        close(self->sys_fd);
    free(self);
    *state_p = NULL;
}

/* Fails with TELEM_EUNSUPPORTED when proc_root is not a readable
 * directory. */
static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_job_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        self->sys_fd = open(env->sys_root ? env->sys_root : "/sys",
                            O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (env->node && *env->node)
            snprintf(self->scopes[0], sizeof self->scopes[0],
                     "fs/cgroup/system.slice/%s_slurmstepd.scope", env->node);
        snprintf(self->scopes[1], sizeof self->scopes[1],
                 "fs/cgroup/system.slice/slurmstepd.scope");
        if (!(self->walk = env->procwalk))
            self->walk = self->own_walk =
                telem_procwalk_new(env->proc_root, env->job_uid, &rc);
    }
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    return self;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    s_job_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    self->emit = emit;
    self->arg = arg;
    self->nsteps = 0;
    s_do_procs(self, now_ns);
    s_do_cgroups(self);
    return 0;
}

const telem_sampler_vt_t telem_sampler_job = {
    .name = "job",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
