/* test_samplers_node.c - the node samplers beside proc: per-core CPU,
 * meminfo detail, disk IOPS/latency/busy and interface errors in the proc
 * sampler; psi, vmstat, numa and cpufreq.
 *
 * Exact values from the fixture trees of tests/data/node (copied from real
 * machines; bad/ holds malformed and truncated variants) and from
 * snapshots the test writes under a temporary directory, rewritten in
 * place between calls; each sampler is unsupported without its source.
 * Then each sampler against this machine's /proc and /sys, with the cost
 * of one sample() call printed beside the proc sampler's.
 */
#include "tmpdir.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sampler_rec.h"
#include "telem_time.h"

#define NS_S TELEM_NS_PER_SEC
#define T0 (INT64_C(1700000000) * NS_S)
#define GOOD TELEM_TEST_DATA "/node/good"
#define BAD TELEM_TEST_DATA "/node/bad"

static int
s_near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1.0);
}

#define CHECK_NEAR(a, b)                                                     \
    do {                                                                     \
        double x_ = (a), y_ = (b);                                           \
        if (!s_near(x_, y_))                                                 \
            fprintf(stderr, "%s:%d: %s ~ %s: %.17g != %.17g\n", __FILE__,    \
                    __LINE__, #a, #b, x_, y_);                               \
        CHECK(s_near(x_, y_));                                               \
    } while (0)

static void
s_mkdir(const char *dir, const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* ---- proc: per-core CPU -------------------------------------------------- */

static const char s_stat1[] =
    "cpu  200 0 100 1600 100 0 0 0 0 0\n"
    "cpu0 100 0 50 800 50 0 0 0 0 0\n"
    "cpu1 100 0 50 800 50 0 0 0 0 0\n"
    "ctxt 10\nprocs_running 2\n";
/* cpu0: +10 user +10 nice +20 system +40 idle +10 iowait +5 irq +5 softirq
 * (100 jiffies); cpu1: +80 idle, iowait 4 down, +20 steal (96 jiffies);
 * the node line twice cpu0's. */
static const char s_stat2[] =
    "cpu  220 20 140 1680 120 10 10 0 0 0\n"
    "cpu0 110 10 70 840 60 5 5 0 0 0\n"
    "cpu1 100 0 50 880 46 0 0 20 0 0\n"
    "ctxt 30\nprocs_running 2\n";
static const char s_stat3[] =          /* cpu1 offline */
    "cpu  220 20 140 1680 120 10 10 0 0 0\n"
    "cpu0 110 10 70 840 60 5 5 0 0 0\n"
    "ctxt 30\nprocs_running 2\n";

static void
s_check_modes(const rec_t *r, const char *prefix, const char *tags,
              const double want[6])
{
    static const char *const modes[6] = {
        "", "_user", "_system", "_iowait", "_irq", "_steal"
    };
    for (int k = 0; k < 6; k++) {
        char metric[64];
        snprintf(metric, sizeof metric, "%s%s_percent", prefix, modes[k]);
        if (want[k] < 0)
            CHECK(!rec_find(r, metric, tags));
        else
            CHECK_NEAR(rec_value(r, metric, tags), want[k]);
    }
}

static void
test_proc_cores(void)
{
    char root[64];
    CHECK(test_tmpdir(root, sizeof root, "telem_node") == 0);
    rec_write(root, "stat", s_stat1);
    telem_sampler_env_t env = {.job_uid = getuid(), .proc_root = root};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_proc, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_proc, st, T0, r) == 0);
    CHECK(rec_count(r, "cpu_core_percent") == 0);       /* no rates yet */
    CHECK(rec_count(r, "cpu_user_percent") == 0);

    rec_write(root, "stat", s_stat2);
    CHECK(rec_sample(&telem_sampler_proc, st, T0 + 2 * NS_S, r) == 0);
    s_check_modes(r, "cpu", "", (const double[6]) {50, 20, 20, 10, 10, 0});
    s_check_modes(r, "cpu_core", "cpu=0",
                  (const double[6]) {50, 20, 20, 10, 10, 0});
    /* cpu1: busy = 96 - (80 - 4); its iowait went down: left out. */
    s_check_modes(r, "cpu_core", "cpu=1",
                  (const double[6]) {20.0 / 96 * 100, 0, 0, -1, 0,
                                     20.0 / 96 * 100});
    CHECK(rec_count(r, "cpu_core_percent") == 2);

    /* cpu1 goes offline, then comes back: no rate on its first read. */
    rec_write(root, "stat", s_stat3);
    CHECK(rec_sample(&telem_sampler_proc, st, T0 + 3 * NS_S, r) == 0);
    CHECK(rec_count(r, "cpu_core_percent") == 0);       /* no jiffy passed */
    rec_write(root, "stat", s_stat2);
    CHECK(rec_sample(&telem_sampler_proc, st, T0 + 4 * NS_S, r) == 0);
    CHECK(!rec_find(r, "cpu_core_percent", "cpu=1"));

    /* Malformed core lines are skipped, the rest still read. */
    rec_write(root, "stat", "cpu  1 1 1 1\ncpu 5 5\ncpux 1 2 3 4\ncpu9\n"
              "cpu99999999999 1 2 3 4 5\ncpu2 1 2\ncpu3: 1 2 3 4\nctxt 1\n");
    CHECK(rec_sample(&telem_sampler_proc, st, T0 + 5 * NS_S, r) == 0);
    CHECK(rec_count(r, "cpu_core_percent") == 0);
    telem_sampler_proc.close(&st);
    free(r);
    CHECK(test_rmtree(root) == 0);
}

/* ---- proc: meminfo detail, disks, interfaces ----------------------------- */

static void
test_proc_meminfo(void)
{
    telem_sampler_env_t env = {.job_uid = getuid(),
                               .proc_root = GOOD "/proc"};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_proc, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_proc, st, T0, r) == 0);
    CHECK_EQ(rec_value(r, "mem_total_bytes", ""), 24683656.0 * 1024);
    CHECK_EQ(rec_value(r, "mem_active_bytes", ""), 1296876.0 * 1024);
    CHECK_EQ(rec_value(r, "mem_dirty_bytes", ""), 30424.0 * 1024);
    CHECK_EQ(rec_value(r, "mem_shmem_bytes", ""), 8952.0 * 1024);
    CHECK_EQ(rec_value(r, "mem_slab_reclaimable_bytes", ""), 386728.0 * 1024);
    CHECK_EQ(rec_value(r, "mem_committed_bytes", ""), 1554784.0 * 1024);
    CHECK_EQ(rec_value(r, "hugepages", ""), 0.0);
    CHECK_EQ(rec_value(r, "hugepage_size_bytes", ""), 2048.0 * 1024);
    CHECK(rec_find(r, "mem_writeback_bytes", "") != NULL);
    CHECK(rec_find(r, "mem_commit_limit_bytes", "") != NULL);
    CHECK(rec_count(r, "mem_active_bytes") == 1);    /* not Active(anon) */
    telem_sampler_proc.close(&st);

    /* Detail fields that are malformed are left out, alone. */
    char root[64];
    CHECK(test_tmpdir(root, sizeof root, "telem_node") == 0);
    rec_write(root, "meminfo", "MemTotal: 1000 kB\nDirty: x kB\nSlab:\n"
              "Shmem 5 kB\nActive(file): 7 kB\nHugePages_Free: 3\n");
    env.proc_root = root;
    CHECK(rec_open(&telem_sampler_proc, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_proc, st, T0, r) == 0);
    CHECK(!rec_find(r, "mem_dirty_bytes", ""));
    CHECK(!rec_find(r, "mem_slab_bytes", ""));
    CHECK(!rec_find(r, "mem_shmem_bytes", ""));
    CHECK(!rec_find(r, "mem_active_bytes", ""));
    CHECK_EQ(rec_value(r, "hugepages_free", ""), 3.0);
    CHECK_EQ(rec_value(r, "used_ram", ""), 100.0);
    telem_sampler_proc.close(&st);
    free(r);
    CHECK(test_rmtree(root) == 0);
}

static const char s_net_head[] =
    "Inter-|   Receive                                                |  "
    "Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|"
    "bytes    packets errs drop fifo colls carrier compressed\n";

static void
s_write_devs(const char *root, int snap)
{
    char text[2048];
    snprintf(text, sizeof text, "%s  eth0: 1000 10 %d %d 0 0 0 0 500 5 %d 3 "
             "0 0 0 0\n  eth1: 1 1 0 0 0 0 0 0 1\n", s_net_head,
             snap ? 11 : 1, snap ? 6 : 2, snap ? 2 : 0);
    rec_write(root, "net/dev", text);
    /* sda: +200 reads, +2000 sectors, +400 ms reading, +1000 ms of I/O;
     * sdb in the 7-field layout of old kernels; sdc busy past 100 %. */
    snprintf(text, sizeof text,
             "   8 0 sda %d 0 %d %d 200 0 1600 400 0 %d 450 0 0 0 0\n"
             "   8 16 sdb 1 0 %d 0 1 0 8\n"
             "   8 32 sdc 1 0 8 0 1 0 8 0 0 %d 0\n",
             snap ? 300 : 100, snap ? 2800 : 800, snap ? 450 : 50,
             snap ? 1300 : 300, snap ? 10 : 2, snap ? 9000 : 0);
    rec_write(root, "diskstats", text);
}

static void
test_proc_devices(void)
{
    char root[64];
    CHECK(test_tmpdir(root, sizeof root, "telem_node") == 0);
    s_mkdir(root, "net");
    s_write_devs(root, 0);
    telem_sampler_env_t env = {.job_uid = getuid(), .proc_root = root};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_proc, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_proc, st, T0, r) == 0);
    CHECK(!rec_find(r, "disk_reads_per_second", "disk=sda"));
    s_write_devs(root, 1);
    CHECK(rec_sample(&telem_sampler_proc, st, T0 + 2 * NS_S, r) == 0);
    CHECK_EQ(rec_value(r, "net_rx_errors_per_second", "iface=eth0"), 5.0);
    CHECK_EQ(rec_value(r, "net_rx_drops_per_second", "iface=eth0"), 2.0);
    CHECK_EQ(rec_value(r, "net_tx_errors_per_second", "iface=eth0"), 1.0);
    CHECK_EQ(rec_value(r, "net_tx_drops_per_second", "iface=eth0"), 0.0);
    CHECK(!rec_find(r, "net_rx_bytes_per_second", "iface=eth1"));  /* short */
    CHECK_EQ(rec_value(r, "disk_reads_per_second", "disk=sda"), 100.0);
    CHECK_EQ(rec_value(r, "disk_writes_per_second", "disk=sda"), 0.0);
    CHECK_EQ(rec_value(r, "disk_read_bytes_per_second", "disk=sda"),
             2000.0 * 512 / 2);
    CHECK_NEAR(rec_value(r, "disk_read_latency_seconds", "disk=sda"), 0.002);
    CHECK_EQ(rec_value(r, "disk_write_latency_seconds", "disk=sda"), 0.0);
    CHECK_EQ(rec_value(r, "disk_busy_percent", "disk=sda"), 50.0);
    CHECK_EQ(rec_value(r, "disk_read_bytes_per_second", "disk=sdb"),
             8.0 * 512 / 2);
    CHECK(!rec_find(r, "disk_busy_percent", "disk=sdb"));
    CHECK(!rec_find(r, "disk_read_latency_seconds", "disk=sdb"));
    CHECK_EQ(rec_value(r, "disk_busy_percent", "disk=sdc"), 100.0);
    telem_sampler_proc.close(&st);
    free(r);
    CHECK(test_rmtree(root) == 0);
}

/* ---- psi ------------------------------------------------------------------ */

static void
test_psi(void)
{
    telem_sampler_env_t env = {.proc_root = GOOD "/proc"};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_psi, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_psi, st, T0, r) == 0);
    CHECK_EQ(r->n, 12);
    CHECK_EQ(rec_value(r, "pressure_cpu_some_percent", ""), 78.73);
    CHECK_EQ(rec_value(r, "pressure_cpu_some_seconds_total", ""),
             11454197760.0 / 1e6);
    CHECK_EQ(rec_value(r, "pressure_io_some_percent", ""), 0.65);
    CHECK_EQ(rec_value(r, "pressure_io_full_seconds_total", ""),
             260259580.0 / 1e6);
    CHECK_EQ(rec_value(r, "pressure_memory_full_percent", ""), 0.0);
    telem_sampler_psi.close(&st);
    CHECK(st == NULL);

    /* Malformed files: nothing to read, so unsupported. */
    env.proc_root = BAD "/proc";
    CHECK(rec_open(&telem_sampler_psi, &st, &env) == TELEM_EUNSUPPORTED);
    env.proc_root = "/nonexistent";
    CHECK(rec_open(&telem_sampler_psi, &st, &env) == TELEM_EUNSUPPORTED);
    CHECK(rec_open(&telem_sampler_psi, &st, NULL) == TELEM_EINVAL);

    /* Only cpu (kernels before 5.13 have no cpu "full" line); a file that
     * turns bad later is skipped, the sampler fails once nothing reads. */
    char root[64];
    CHECK(test_tmpdir(root, sizeof root, "telem_node") == 0);
    s_mkdir(root, "pressure");
    rec_write(root, "pressure/cpu",
              "some avg10=150.00 avg60=0.00 avg300=0.00 total=7\n");
    env.proc_root = root;
    CHECK(rec_open(&telem_sampler_psi, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_psi, st, T0, r) == 0);
    CHECK_EQ(r->n, 2);
    CHECK_EQ(rec_value(r, "pressure_cpu_some_percent", ""), 100.0);
    rec_write(root, "pressure/cpu", "some avg10=1.00\n");
    CHECK(rec_sample(&telem_sampler_psi, st, T0, r) != 0);
    CHECK_EQ(r->n, 0);
    telem_sampler_psi.close(&st);
    free(r);
    CHECK(test_rmtree(root) == 0);
}

/* ---- vmstat --------------------------------------------------------------- */

static void
test_vmstat(void)
{
    telem_sampler_env_t env = {.proc_root = GOOD "/proc"};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_vmstat, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_vmstat, st, T0, r) == 0);
    CHECK_EQ(r->n, 1);                  /* no rates on the first call */
    CHECK_EQ(rec_value(r, "vm_oom_kills_total", ""), 0.0);
    telem_sampler_vmstat.close(&st);

    char root[64];
    CHECK(test_tmpdir(root, sizeof root, "telem_node") == 0);
    env.proc_root = root;
    rec_write(root, "vmstat", "nr_free_pages 5\npgfault 1000\n"
              "pgmajfault 10\npswpin 0\npswpout 5\noom_kill 1\n");
    CHECK(rec_open(&telem_sampler_vmstat, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_vmstat, st, T0, r) == 0);
    rec_write(root, "vmstat", "nr_free_pages 5\npgfault 3000\n"
              "pgmajfault 14\npswpin 0\npswpout 9\noom_kill 2\n");
    CHECK(rec_sample(&telem_sampler_vmstat, st, T0 + 2 * NS_S, r) == 0);
    CHECK_EQ(rec_value(r, "vm_page_faults_per_second", ""), 1000.0);
    CHECK_EQ(rec_value(r, "vm_major_page_faults_per_second", ""), 2.0);
    CHECK_EQ(rec_value(r, "vm_swap_in_pages_per_second", ""), 0.0);
    CHECK_EQ(rec_value(r, "vm_swap_out_pages_per_second", ""), 2.0);
    CHECK_EQ(rec_value(r, "vm_oom_kills_total", ""), 2.0);
    /* A counter that went down, a field gone, a clock step back. */
    rec_write(root, "vmstat", "pgfault 10\npgmajfault 20\npswpin 1\n");
    CHECK(rec_sample(&telem_sampler_vmstat, st, T0 + 3 * NS_S, r) == 0);
    CHECK(!rec_find(r, "vm_page_faults_per_second", ""));
    CHECK_EQ(rec_value(r, "vm_major_page_faults_per_second", ""), 6.0);
    CHECK(!rec_find(r, "vm_swap_out_pages_per_second", ""));
    CHECK(!rec_find(r, "vm_oom_kills_total", ""));
    CHECK(rec_sample(&telem_sampler_vmstat, st, T0, r) == 0);
    CHECK_EQ(r->n, 0);
    rec_write(root, "vmstat", "pgfault\n");
    CHECK(rec_sample(&telem_sampler_vmstat, st, T0 + 4 * NS_S, r)
          == TELEM_EPROTO);
    telem_sampler_vmstat.close(&st);

    env.proc_root = BAD "/proc";
    CHECK(rec_open(&telem_sampler_vmstat, &st, &env) == TELEM_EUNSUPPORTED);
    env.proc_root = "/nonexistent";
    CHECK(rec_open(&telem_sampler_vmstat, &st, &env) == TELEM_EUNSUPPORTED);
    free(r);
    CHECK(test_rmtree(root) == 0);
}

/* ---- numa, cpufreq -------------------------------------------------------- */

static void
test_numa(void)
{
    telem_sampler_env_t env = {.sys_root = GOOD "/sys"};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_numa, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_numa, st, T0, r) == 0);
    CHECK_EQ(r->n, 18);
    CHECK_EQ(rec_value(r, "numa_mem_total_bytes", "numa_node=1"),
             8742688.0 * 1024);
    CHECK_EQ(rec_value(r, "numa_mem_used_bytes", "numa_node=1"),
             2794232.0 * 1024);
    CHECK_EQ(rec_value(r, "numa_mem_file_bytes", "numa_node=0"),
             1948224.0 * 1024);
    CHECK_EQ(rec_value(r, "numa_hugepages_free", "numa_node=0"), 0.0);
    telem_sampler_numa.close(&st);

    env.sys_root = BAD "/sys";
    CHECK(rec_open(&telem_sampler_numa, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_numa, st, T0, r) == TELEM_EPROTO);
    CHECK_EQ(r->n, 0);
    telem_sampler_numa.close(&st);
    env.sys_root = "/nonexistent";
    CHECK(rec_open(&telem_sampler_numa, &st, &env) == TELEM_EUNSUPPORTED);
    env.sys_root = GOOD "/proc";        /* a directory without nodes */
    CHECK(rec_open(&telem_sampler_numa, &st, &env) == TELEM_EUNSUPPORTED);
    free(r);
}

static void
test_cpufreq(void)
{
    telem_sampler_env_t env = {.sys_root = GOOD "/sys"};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_cpufreq, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_cpufreq, st, T0, r) == 0);
    CHECK_EQ(r->n, 2);                  /* cpu2 has no cpufreq */
    CHECK_EQ(rec_value(r, "cpu_frequency_hertz", "cpu=0"), 2.4e9);
    CHECK_EQ(rec_value(r, "cpu_frequency_hertz", "cpu=1"), 3.1e9);
    telem_sampler_cpufreq.close(&st);

    env.sys_root = BAD "/sys";
    CHECK(rec_open(&telem_sampler_cpufreq, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_cpufreq, st, T0, r) == TELEM_EPROTO);
    CHECK_EQ(r->n, 0);
    telem_sampler_cpufreq.close(&st);
    env.sys_root = "/nonexistent";
    CHECK(rec_open(&telem_sampler_cpufreq, &st, &env) == TELEM_EUNSUPPORTED);
    free(r);
}

/* ---- this machine, and the cost of a call -------------------------------- */

/* Median-free but robust enough: the fastest of 5 runs of n calls. */
static double
s_cost_us(const telem_sampler_vt_t *vt, void *st, rec_t *r)
{
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        int64_t t = telem_mono_ns();
        for (int i = 0; i < 50; i++)
            rec_sample(vt, st, telem_now_ns(), r);
        double us = (double) (telem_mono_ns() - t) / 50 / 1e3;
        if (us < best)
            best = us;
    }
    return best;
}

static void
test_real(void)
{
    const telem_sampler_vt_t *const vts[] = {
        &telem_sampler_proc, &telem_sampler_psi, &telem_sampler_vmstat,
        &telem_sampler_numa, &telem_sampler_cpufreq, &telem_sampler_fs
    };
    telem_sampler_env_t env = {.job_uid = getuid()};
    rec_t *r = calloc(1, sizeof *r);
    for (size_t i = 0; i < sizeof vts / sizeof vts[0]; i++) {
        void *st;
        int rc = rec_open(vts[i], &st, &env);
        CHECK(rc == 0 || rc == TELEM_EUNSUPPORTED);
        if (rc != 0) {
            printf("%-8s not available here\n", vts[i]->name);
            continue;
        }
        CHECK(rec_sample(vts[i], st, telem_now_ns(), r) == 0);
        for (size_t k = 0; k < r->n; k++)
            CHECK(r->v[k].value >= 0.0);
        double us = s_cost_us(vts[i], st, r);
        printf("%-8s %3zu values, %7.1f us per sample()\n", vts[i]->name,
               r->n, us);
        vts[i]->close(&st);
    }
    free(r);
}

static void
s_check_vtable(const telem_sampler_vt_t *vt, const char *name)
{
    CHECK(strcmp(vt->name, name) == 0);
    CHECK(vt->min_level == 2);
    size_t n = 0;
    for (const telem_meta_t *m = vt->metrics; m->metric; m++, n++) {
        CHECK(strspn(m->metric, "abcdefghijklmnopqrstuvwxyz0123456789_")
              == strlen(m->metric));
        CHECK(m->unit && m->doc && strlen(m->doc) > 10);
        CHECK(rec_meta(vt->metrics, m->metric) == m);
        /* Prometheus's rule: a counter's name ends in _total, a gauge's
         * does not. */
        size_t l = strlen(m->metric);
        int total = l > 6 && strcmp(m->metric + l - 6, "_total") == 0;
        CHECK(total == (m->type == TELEM_METRIC_COUNTER));
    }
    CHECK(n > 0);
    void *none = NULL;
    vt->close(NULL);
    vt->close(&none);
}

int
main(void)
{
    s_check_vtable(&telem_sampler_proc, "proc");
    s_check_vtable(&telem_sampler_psi, "psi");
    s_check_vtable(&telem_sampler_vmstat, "vmstat");
    s_check_vtable(&telem_sampler_numa, "numa");
    s_check_vtable(&telem_sampler_cpufreq, "cpufreq");
    s_check_vtable(&telem_sampler_fs, "fs");
    test_proc_cores();
    test_proc_meminfo();
    test_proc_devices();
    test_psi();
    test_vmstat();
    test_numa();
    test_cpufreq();
    test_real();
    return check_report("test_samplers_node");
}
