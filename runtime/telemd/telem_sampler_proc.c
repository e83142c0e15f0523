/* telem_sampler_proc.c - level 2 node metrics read from /proc.
 *
 * Reads stat, meminfo, loadavg, uptime, net/dev and diskstats under the
 * environment's proc_root and counts the job user's processes.  Metric names
 * follow Dragon's telemetry where it has one (cpu_percent, used_ram,
 * load_average, num_running_processes); telem_sampler_proc_meta.c lists
 * them all, telem_sampler_proc_dev.c does the interfaces and disks.
 *
 * It has to stay cheap (telemd samples every second on every node), so:
 * - the six files are opened once and re-read with pread() from offset 0
 *   (telem_stext.h), into one buffer that grows as needed and is kept
 *   between calls;
 * - the process count comes from the walk of /proc the job sampler shares
 *   (telem_procwalk.h: an fstatat or two per process, nothing opened or
 *   parsed, and one walk a round for both samplers in telemd); a
 *   directory's owner is the process's effective uid, non-dumpable or not;
 * - per-core jiffies live in a table indexed by the core's number, with
 *   its tag value formatted once; per-interface and per-disk counters in
 *   small tables whose order follows the files.
 *
 * CPU time is expressed as a percent of the interval, per mode (user =
 * user + nice, system, iowait, irq = irq + softirq, steal; guest time is
 * already part of user), node-wide and per core (tag cpu).
 *
 * A file that is missing or unparsable skips its metrics; sample() fails
 * only when nothing at all could be read.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_sampler_proc_int.h"
#include "telem_time.h"

static const char *const s_file_names[TPROC_F_COUNT] = {
    "stat", "meminfo", "loadavg", "uptime", "net/dev", "diskstats"
};

int
tproc_read(tproc_t *self, int which)
{
    return telem_stext_read(&self->text, self->proc_fd, s_file_names[which],
                            &self->fds[which]);
}

/* ---- /proc/stat ---------------------------------------------------------- */

static const char *const s_node_cpu[6] = {
    "cpu_percent", "cpu_user_percent", "cpu_system_percent",
    "cpu_iowait_percent", "cpu_irq_percent", "cpu_steal_percent"
};
static const char *const s_core_cpu[6] = {
    "cpu_core_percent", "cpu_core_user_percent", "cpu_core_system_percent",
    "cpu_core_iowait_percent", "cpu_core_irq_percent",
    "cpu_core_steal_percent"
};

static double
s_pct(double part, double whole)
{
    double pct = part / whole * 100.0;
    return pct < 0.0 ? 0.0 : pct > 100.0 ? 100.0 : pct;
}

/* Emits busy and the five modes between two reads of a cpu line (fields
 * user nice system idle iowait irq softirq steal): busy = total - idle -
 * iowait.  Nothing when no jiffy passed or idle went down; a mode whose
 * counter went down (iowait can, per core) is left out. */
static void
s_cpu_emit(const uint64_t prev[TPROC_CPU_FIELDS],
           const uint64_t cur[TPROC_CPU_FIELDS], const char *const m[6],
           const telem_tag_t *tag, telem_sampler_emit_fn emit, void *arg)
{
    uint64_t tp = 0, tc = 0;
    for (int i = 0; i < TPROC_CPU_FIELDS; i++) {
        tp += prev[i];
        tc += cur[i];
    }
    uint64_t ip = prev[3] + prev[4], ic = cur[3] + cur[4];
    if (tc <= tp || ic < ip)
        return;
    double total = (double) (tc - tp);
    uint32_t nt = tag ? 1 : 0;
    emit(arg, m[0], tag, nt, s_pct(total - (double) (ic - ip), total));
    /* (first field, second field or -1) per mode */
    static const int modes[5][2] = {{0, 1}, {2, -1}, {4, -1}, {5, 6}, {7, -1}};
    for (int k = 0; k < 5; k++) {
        int a = modes[k][0], b = modes[k][1];
        uint64_t p = prev[a] + (b >= 0 ? prev[b] : 0);
        uint64_t c = cur[a] + (b >= 0 ? cur[b] : 0);
        if (c >= p)
            emit(arg, m[k + 1], tag, nt, s_pct((double) (c - p), total));
    }
}

/* The core numbered n, growing the table; NULL past TPROC_CPUS_MAX or
 * without memory. */
static tproc_cpu_t *
s_core(tproc_t *self, uint64_t n)
{
    if (n >= TPROC_CPUS_MAX)
        return NULL;
    if (n >= self->ncpus) {
        size_t cap = self->ncpus;
        if (telem_grow((void **) &self->cpus, &cap, (size_t) n + 1,
                       sizeof *self->cpus, 8))
            return NULL;
        memset(self->cpus + self->ncpus, 0,
               (cap - self->ncpus) * sizeof *self->cpus);
        for (size_t i = self->ncpus; i < cap; i++)
            snprintf(self->cpus[i].name, sizeof self->cpus[i].name, "%u",
                     (unsigned) i);
        self->ncpus = cap;
    }
    return &self->cpus[n];
}

/* A "cpuN ..." line (rest points after "cpu"). */
static void
s_do_core(tproc_t *self, const char *rest, telem_sampler_emit_fn emit,
          void *arg)
{
    uint64_t n, v[TPROC_CPU_FIELDS] = {0};
    char *end;
    if (*rest < '0' || *rest > '9')
        return;
    n = strtoull(rest, &end, 10);
    if ((*end != ' ' && *end != '\t')
        || telem_stext_u64s(end, v, TPROC_CPU_FIELDS) < 4)
        return;
    tproc_cpu_t *c = s_core(self, n);
    if (!c)
        return;
    telem_tag_t tag = {"cpu", c->name};
    if (c->has_prev)
        s_cpu_emit(c->prev, v, s_core_cpu, &tag, emit, arg);
    memcpy(c->prev, v, sizeof v);
    c->has_prev = c->seen = true;
}

static void
s_do_node_cpu(tproc_t *self, const char *rest, telem_sampler_emit_fn emit,
              void *arg)
{
    uint64_t v[TPROC_CPU_FIELDS] = {0};
    if (telem_stext_u64s(rest, v, TPROC_CPU_FIELDS) < 4)
        return;
    if (self->have_cpu)
        s_cpu_emit(self->prev_cpu, v, s_node_cpu, NULL, emit, arg);
    memcpy(self->prev_cpu, v, sizeof v);
    self->have_cpu = true;
}

static void
s_emit_ctxt(tproc_t *self, uint64_t ctxt, telem_sampler_emit_fn emit,
            void *arg)
{
    if (self->have_ctxt && self->dt_s > 0.0 && ctxt >= self->prev_ctxt)
        emit(arg, "context_switches_per_second", NULL, 0,
             (double) (ctxt - self->prev_ctxt) / self->dt_s);
    self->prev_ctxt = ctxt;
    self->have_ctxt = true;
}

/* One line of /proc/stat; true when it was one of ours. */
static bool
s_stat_line(tproc_t *self, const char *line, telem_sampler_emit_fn emit,
            void *arg)
{
    uint64_t v;
    if (telem_stext_starts(line, "cpu ")) {
        s_do_node_cpu(self, line + 4, emit, arg);
        return true;
    }
    if (telem_stext_starts(line, "cpu")) {
        s_do_core(self, line + 3, emit, arg);
        return false;
    }
    if (telem_stext_starts(line, "ctxt ")
        && telem_stext_u64s(line + 5, &v, 1)) {
        s_emit_ctxt(self, v, emit, arg);
        return true;
    }
    if (telem_stext_starts(line, "procs_running ")
        && telem_stext_u64s(line + 14, &v, 1)) {
        emit(arg, "procs_running", NULL, 0, (double) v);
        return true;
    }
    return false;
}

static int
s_do_stat(tproc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = tproc_read(self, TPROC_F_STAT);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < self->ncpus; i++)
        self->cpus[i].seen = false;
    char *pos = self->text.buf, *line;
    bool found = false;
    while ((line = telem_stext_line(&pos)) != NULL)
        found |= s_stat_line(self, line, emit, arg);
    /* A core gone offline starts afresh when it comes back. */
    for (size_t i = 0; i < self->ncpus; i++)
        if (!self->cpus[i].seen)
            self->cpus[i].has_prev = false;
    return found ? 0 : TELEM_EPROTO;
}

/* ---- /proc/meminfo ------------------------------------------------------- */

enum {
    S_M_TOTAL, S_M_FREE, S_M_AVAILABLE, S_M_BUFFERS, S_M_CACHED,
    S_M_SWAP_TOTAL, S_M_SWAP_FREE, S_M_COUNT = 32
};

/* Fields of meminfo: the first seven in the order of the enum above; a
 * field with a metric is emitted as it is (times scale). */
static const struct {
    const char *key;
    const char *metric;
    double scale;
} s_mem[] = {
    {"MemTotal:", "mem_total_bytes", 1024}, {"MemFree:", "mem_free_bytes", 1024},
    {"MemAvailable:", NULL, 1024}, {"Buffers:", "mem_buffers_bytes", 1024},
    {"Cached:", "mem_cached_bytes", 1024},
    {"SwapTotal:", "swap_total_bytes", 1024},
    {"SwapFree:", "swap_free_bytes", 1024},
    {"SwapCached:", "swap_cached_bytes", 1024},
    {"Active:", "mem_active_bytes", 1024},
    {"Inactive:", "mem_inactive_bytes", 1024},
    {"Dirty:", "mem_dirty_bytes", 1024},
    {"Writeback:", "mem_writeback_bytes", 1024},
    {"AnonPages:", "mem_anon_bytes", 1024},
    {"Mapped:", "mem_mapped_bytes", 1024},
    {"Shmem:", "mem_shmem_bytes", 1024},
    {"Slab:", "mem_slab_bytes", 1024},
    {"SReclaimable:", "mem_slab_reclaimable_bytes", 1024},
    {"SUnreclaim:", "mem_slab_unreclaimable_bytes", 1024},
    {"PageTables:", "mem_page_tables_bytes", 1024},
    {"CommitLimit:", "mem_commit_limit_bytes", 1024},
    {"Committed_AS:", "mem_committed_bytes", 1024},
    {"HugePages_Total:", "hugepages", 1},
    {"HugePages_Free:", "hugepages_free", 1},
    {"HugePages_Rsvd:", "hugepages_reserved", 1},
    {"HugePages_Surp:", "hugepages_surplus", 1},
    {"Hugepagesize:", "hugepage_size_bytes", 1024},
    {"Hugetlb:", "mem_hugetlb_bytes", 1024},
};
#define S_MEM_N (sizeof s_mem / sizeof s_mem[0])
_Static_assert(S_MEM_N <= S_M_COUNT, "one bit per meminfo field");

/* Fills v[] and sets bit i of the result for each field found.  meminfo's
 * order is fixed, so the next field is looked for first after the last. */
static uint32_t
s_parse_meminfo(char *buf, uint64_t v[S_M_COUNT])
{
    uint32_t found = 0;
    size_t next = 0;
    char *pos = buf, *line;
    while ((line = telem_stext_line(&pos)) != NULL) {
        const char *colon = strchr(line, ':');
        if (!colon)
            continue;
        size_t klen = (size_t) (colon - line) + 1;
        for (size_t k = 0; k < S_MEM_N; k++) {
            size_t i = (next + k) % S_MEM_N;
            if (found & (1u << i) || strncmp(line, s_mem[i].key, klen) != 0
                || s_mem[i].key[klen] != '\0')
                continue;
            if (telem_stext_u64s(colon + 1, &v[i], 1) == 1)
                found |= 1u << i;
            next = i + 1;
            break;
        }
    }
    return found;
}

static int
s_do_meminfo(tproc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = tproc_read(self, TPROC_F_MEMINFO);
    if (rc != 0)
        return rc;
    uint64_t kb[S_M_COUNT] = {0};
    uint32_t found = s_parse_meminfo(self->text.buf, kb);
    for (size_t i = 0; i < S_MEM_N; i++)
        if (s_mem[i].metric && found & (1u << i))
            emit(arg, s_mem[i].metric, NULL, 0,
                 (double) kb[i] * s_mem[i].scale);
    if (found & (1u << S_M_SWAP_TOTAL) && found & (1u << S_M_SWAP_FREE)
        && kb[S_M_SWAP_TOTAL] >= kb[S_M_SWAP_FREE])
        emit(arg, "swap_used_bytes", NULL, 0,
             (double) (kb[S_M_SWAP_TOTAL] - kb[S_M_SWAP_FREE]) * 1024.0);
    if (!(found & (1u << S_M_TOTAL)) || kb[S_M_TOTAL] == 0)
        return TELEM_EPROTO;
    /* Kernels before 3.14 have no MemAvailable: estimate it. */
    uint64_t avail = (found & (1u << S_M_AVAILABLE))
        ? kb[S_M_AVAILABLE]
        : kb[S_M_FREE] + kb[S_M_BUFFERS] + kb[S_M_CACHED];
    if (avail > kb[S_M_TOTAL])
        avail = kb[S_M_TOTAL];
    uint64_t used = kb[S_M_TOTAL] - avail;
    emit(arg, "mem_available_bytes", NULL, 0, (double) avail * 1024.0);
    emit(arg, "mem_used_bytes", NULL, 0, (double) used * 1024.0);
    emit(arg, "used_ram", NULL, 0,
         (double) used / (double) kb[S_M_TOTAL] * 100.0);
    return 0;
}

/* ---- /proc/loadavg, /proc/uptime ----------------------------------------- */

static int
s_do_loadavg(tproc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = tproc_read(self, TPROC_F_LOADAVG);
    if (rc != 0)
        return rc;
    double v[3];
    if (telem_stext_doubles(self->text.buf, v, 3) != 3)
        return TELEM_EPROTO;
    emit(arg, "load_average", NULL, 0, v[0]);
    emit(arg, "load_average_5", NULL, 0, v[1]);
    emit(arg, "load_average_15", NULL, 0, v[2]);
    return 0;
}

static int
s_do_uptime(tproc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = tproc_read(self, TPROC_F_UPTIME);
    if (rc != 0)
        return rc;
    double up;
    if (telem_stext_doubles(self->text.buf, &up, 1) != 1)
        return TELEM_EPROTO;
    emit(arg, "uptime_seconds", NULL, 0, up);
    return 0;
}

/* ---- processes ----------------------------------------------------------- */

/* /proc/<pid> directories owned by the job user, from this round's walk
 * (an own walker walks on every call). */
static int
s_do_procs(tproc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    telem_procwalk_counts_t c;
    telem_procwalk_counts(self->walk, self->own_walk ? 0 : self->round_ns,
                          &c);
    emit(arg, "num_running_processes", NULL, 0, (double) c.procs);
    return 0;
}

/* ---- the vtable ---------------------------------------------------------- */

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    tproc_t *self = *state_p;
    for (int i = 0; i < TPROC_F_COUNT; i++)
        if (self->fds[i] >= 0)
            close(self->fds[i]);
    if (self->sys_block_fd >= 0)
        close(self->sys_block_fd);
    if (self->proc_dir)
        closedir(self->proc_dir);
    telem_procwalk_destroy(&self->own_walk);
    free(self->ifaces.v);
    free(self->disks.v);
    free(self->cpus);
    telem_stext_free(&self->text);
    free(self);
    *state_p = NULL;
}

/* Fails with TELEM_EUNSUPPORTED when proc_root is not a readable directory. */
static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    tproc_t *self = env ? calloc(1, sizeof *self) : NULL;
    if (!self) {
        if (err)
            *err = env ? TELEM_ENOMEM : TELEM_EINVAL;
        return NULL;
    }
    const char *root = env->proc_root ? env->proc_root : "/proc";
    for (int i = 0; i < TPROC_F_COUNT; i++)
        self->fds[i] = -1;
    self->sys_block_fd = tproc_open_sys_block(root);
    self->proc_dir = opendir(root);
    int rc = !self->proc_dir ? TELEM_EUNSUPPORTED : 0;
    if (rc == 0 && !(self->walk = env->procwalk))
        self->walk = self->own_walk = telem_procwalk_new(root, env->job_uid,
                                                         &rc);
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    self->proc_fd = dirfd(self->proc_dir);
    return self;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    tproc_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    self->round_ns = now_ns;
    /* No rates across a clock step backwards; counters still refresh. */
    self->dt_s = self->have_prev && now_ns > self->prev_ns
        ? (double) (now_ns - self->prev_ns) / (double) TELEM_NS_PER_SEC
        : 0.0;
    int (*const steps[])(tproc_t *, telem_sampler_emit_fn, void *) = {
        s_do_stat, s_do_meminfo, s_do_loadavg, s_do_uptime, tproc_do_netdev,
        tproc_do_diskstats, s_do_procs
    };
    int nok = 0, last = TELEM_EIO;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int rc = steps[i](self, emit, arg);
        if (rc == 0)
            nok++;
        else
            last = rc;
    }
    self->have_prev = true;
    self->prev_ns = now_ns;
    return nok > 0 ? 0 : last;
}

const telem_sampler_vt_t telem_sampler_proc = {
    .name = "proc",
    .min_level = 2,
    .metrics = tproc_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
