/* test_samplers.c - the proc, nvml and self samplers.
 *
 * proc: exact parsing and exact rates against proc trees the test writes
 * under a temporary directory (two or more snapshots, files rewritten in
 * place between calls), missing and garbage files, both whole-disk rules;
 * then sane ranges against the real /proc.  nvml: the unsupported paths
 * (no library, a library without NVML's symbols); on a machine with a GPU
 * it also checks real values.  self: values and the ingest rate.  Every
 * value any sampler emits must be described in its metrics table.
 */
#include "tmpdir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "telem_sampler.h"
#include "telem_time.h"

#define NS_S TELEM_NS_PER_SEC

/* ---- recording what a sampler emits -------------------------------------- */

typedef struct {
    char metric[64];
    char tag_key[32];
    char tag_value[64];
    uint32_t ntags;
    double value;
} rec_t;

typedef struct {
    const telem_meta_t *metas;
    rec_t v[512];
    size_t n;
} recorder_t;

static const telem_meta_t *
s_meta(const telem_meta_t *metas, const char *metric)
{
    for (; metas && metas->metric; metas++)
        if (strcmp(metas->metric, metric) == 0)
            return metas;
    return NULL;
}

/* The emit callback: copies what it gets (tags are only lent) and checks
 * that the metric is described and the value finite. */
static void
s_record(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    recorder_t *r = arg;
    CHECK(metric != NULL);
    if (!metric)
        return;
    if (!s_meta(r->metas, metric)) {
        fprintf(stderr, "metric %s has no meta entry\n", metric);
        s_failures++;
    }
    CHECK(isfinite(value));
    CHECK(ntags <= 1);
    CHECK(ntags == 0 || tags != NULL);
    CHECK(r->n < sizeof r->v / sizeof r->v[0]);
    if (r->n >= sizeof r->v / sizeof r->v[0])
        return;
    rec_t *e = &r->v[r->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->metric, sizeof e->metric, "%s", metric);
    if (ntags >= 1 && tags) {
        snprintf(e->tag_key, sizeof e->tag_key, "%s", tags[0].key);
        snprintf(e->tag_value, sizeof e->tag_value, "%s", tags[0].value);
    }
    e->ntags = ntags;
    e->value = value;
}

/* The value recorded for metric (and tag value, when given), or NULL. */
static const rec_t *
s_find(const recorder_t *r, const char *metric, const char *tag_value)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].metric, metric) == 0
            && (!tag_value || strcmp(r->v[i].tag_value, tag_value) == 0))
            return &r->v[i];
    return NULL;
}

static size_t
s_count(const recorder_t *r, const char *metric)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += strcmp(r->v[i].metric, metric) == 0;
    return n;
}

/* Value of a metric that must be there; NAN (and a failure) when not. */
static double
s_value(const recorder_t *r, const char *metric, const char *tag_value)
{
    const rec_t *e = s_find(r, metric, tag_value);
    if (!e) {
        fprintf(stderr, "missing %s %s\n", metric,
                tag_value ? tag_value : "");
        s_failures++;
        return NAN;
    }
    return e->value;
}

/* vt->open() in the form the checks read: the state goes to *st and the
 * code is returned: 0 with a state, the sampler's code without one; 98
 * or 99 when state and code disagree (a state with a code, or NULL with
 * 0), which no check accepts. */
static int
s_open(const telem_sampler_vt_t *vt, void **st, const telem_sampler_env_t *env)
{
    int rc = 1;
    *st = vt->open(env, &rc);
    if (*st)
        return rc == 0 ? 0 : 99;
    return rc != 0 ? rc : 98;
}

static int
s_sample(const telem_sampler_vt_t *vt, void *state, int64_t now,
         recorder_t *r)
{
    r->metas = vt->metrics;
    r->n = 0;
    return vt->sample(state, now, s_record, r);
}

/* ---- writing proc trees -------------------------------------------------- */

/* Writes (truncating in place, as /proc content changes) dir/rel. */
static void
s_write(const char *dir, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

static void
s_mkdir(const char *dir, const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* /proc/stat with a long intr line, so reading has to grow its buffer. */
static void
s_write_stat(const char *proc, const char *cpu, unsigned long ctxt)
{
    size_t cap = 300000;
    char *text = malloc(cap);
    CHECK(text != NULL);
    if (!text)
        return;
    int n = snprintf(text, cap, "cpu  %s\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
                     "intr 123456", cpu);
    for (int i = 0; i < 60000; i++)
        n += snprintf(text + n, cap - (size_t) n, " %d", i % 3);
    snprintf(text + n, cap - (size_t) n,
             "\nctxt %lu\nbtime 1700000000\nprocesses 4242\n"
             "procs_running 3\nprocs_blocked 0\n", ctxt);
    s_write(proc, "stat", text);
    free(text);
}

static const char s_netdev_head[] =
    "Inter-|   Receive                                                |  "
    "Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|"
    "bytes    packets errs drop fifo colls carrier compressed\n";

/* One net/dev line for iface with the given rx and tx byte counters. */
static int
s_netdev_line(char *out, size_t size, const char *iface,
              unsigned long rx, unsigned long tx)
{
    return snprintf(out, size, "%6s: %8lu 10 0 0 0 0 0 0 %8lu 20 0 0 0 0 0 0\n",
                    iface, rx, tx);
}

/* One diskstats line: sectors read and written, other fields fixed. */
static int
s_disk_line(char *out, size_t size, int major, int minor, const char *name,
            unsigned long rd, unsigned long wr)
{
    return snprintf(out, size, "%4d %7d %s 11 0 %lu 5 22 0 %lu 6 0 7 8 "
                    "0 0 0 0 0 0\n", major, minor, name, rd, wr);
}

static void
s_write_diskstats(const char *proc, unsigned long k)
{
    static const char *const names[] = {
        "sda", "sda1", "loop0", "ram0", "zram0", "nvme0n1", "nvme0n1p1",
        "nvme0n10", "dm-0", "mmcblk0", "mmcblk0p1", "sdp", "sdp2"
    };
    char text[4096];
    int n = 0;
    for (int i = 0; i < (int) (sizeof names / sizeof names[0]); i++)
        n += s_disk_line(text + n, sizeof text - (size_t) n, 8, i, names[i],
                         1000 * k * (unsigned long) (i + 1),
                         2000 * k * (unsigned long) (i + 1));
    s_write(proc, "diskstats", text);
}

/* Builds root/proc with every file and pid directories 100 and 200 owned
 * by us, 300 by uid 4242 when we may chown, and a plain file 400.  Returns
 * whether the chown worked. */
static int
s_build_tree(const char *root, char *proc, size_t size)
{
    snprintf(proc, size, "%s/proc", root);
    s_mkdir(root, "proc");
    s_mkdir(proc, "net");
    s_mkdir(proc, "100");
    s_mkdir(proc, "200");
    s_mkdir(proc, "300");
    s_write(proc, "400", "not a process\n");
    char path[512];
    snprintf(path, sizeof path, "%s/300", proc);
    int chowned = chown(path, 4242, 4242) == 0;
    snprintf(path, sizeof path, "%s/self", proc);
    CHECK(symlink("100", path) == 0);
    s_write(proc, "meminfo",
            "MemTotal:        1000000 kB\nMemFree:          200000 kB\n"
            "MemAvailable:     250000 kB\nBuffers:           10000 kB\n"
            "Cached:            30000 kB\nSwapCached:            0 kB\n"
            "SwapTotal:           4000 kB\nSwapFree:            1000 kB\n"
            "HugePages_Total:       0\n");
    s_write(proc, "loadavg", "0.50 1.25 2.75 2/300 12345\n");
    s_write(proc, "uptime", "12345.67 20000.00\n");
    return chowned;
}

/* ---- proc: fixture tree -------------------------------------------------- */

static void
s_check_first_call(const recorder_t *r, int chowned)
{
    CHECK_EQ(s_value(r, "mem_total_bytes", NULL), 1000000.0 * 1024);
    CHECK_EQ(s_value(r, "mem_available_bytes", NULL), 250000.0 * 1024);
    CHECK_EQ(s_value(r, "mem_used_bytes", NULL), 750000.0 * 1024);
    CHECK_EQ(s_value(r, "used_ram", NULL), 75.0);
    CHECK_EQ(s_value(r, "swap_used_bytes", NULL), 3000.0 * 1024);
    CHECK_EQ(s_value(r, "load_average", NULL), 0.5);
    CHECK_EQ(s_value(r, "load_average_5", NULL), 1.25);
    CHECK_EQ(s_value(r, "load_average_15", NULL), 2.75);
    CHECK_EQ(s_value(r, "uptime_seconds", NULL), 12345.67);
    CHECK_EQ(s_value(r, "procs_running", NULL), 3.0);
    CHECK_EQ(s_value(r, "num_running_processes", NULL), chowned ? 2.0 : 3.0);
    /* The first call has no rates. */
    CHECK(!s_find(r, "cpu_percent", NULL));
    CHECK(!s_find(r, "context_switches_per_second", NULL));
    CHECK(!s_find(r, "net_rx_bytes_per_second", NULL));
    CHECK(!s_find(r, "net_tx_bytes_per_second", NULL));
    CHECK(!s_find(r, "disk_read_bytes_per_second", NULL));
    CHECK(!s_find(r, "disk_write_bytes_per_second", NULL));
}

static void
s_write_netdev(const char *proc, int snapshot)
{
    char text[2048];
    int n = snprintf(text, sizeof text, "%s", s_netdev_head);
    n += s_netdev_line(text + n, sizeof text - (size_t) n, "lo", 100u * 7,
                       100u * 7 * (unsigned) snapshot);
    if (snapshot == 1) {
        n += s_netdev_line(text + n, sizeof text - (size_t) n, "eth0",
                           1000, 2000);
        s_netdev_line(text + n, sizeof text - (size_t) n, "ib0", 5000, 0);
    }
    else if (snapshot == 2) {
        n += s_netdev_line(text + n, sizeof text - (size_t) n, "eth0",
                           3000, 2500);
        s_netdev_line(text + n, sizeof text - (size_t) n, "ib0", 4000, 100);
    }
    else {  /* ib0 gone, eth1 new, written without a blank after the colon */
        n += s_netdev_line(text + n, sizeof text - (size_t) n, "eth0",
                           3500, 2600);
        snprintf(text + n, sizeof text - (size_t) n,
                 "eth1:77 1 0 0 0 0 0 0 88 1 0 0 0 0 0 0\n");
    }
    s_write(proc, "net/dev", text);
}

/* Rates between snapshots 1 and 2, two seconds apart. */
static void
s_check_second_call(const recorder_t *r)
{
    /* 25 % busy: 50 of 200 jiffies; guest time (already in user) ignored. */
    CHECK_EQ(s_value(r, "cpu_percent", NULL), 25.0);
    CHECK_EQ(s_value(r, "context_switches_per_second", NULL), 1000.0);
    CHECK_EQ(s_value(r, "net_rx_bytes_per_second", "eth0"), 1000.0);
    CHECK_EQ(s_value(r, "net_tx_bytes_per_second", "eth0"), 250.0);
    /* ib0's rx counter went down: no rx rate; tx still has one. */
    CHECK(!s_find(r, "net_rx_bytes_per_second", "ib0"));
    CHECK_EQ(s_value(r, "net_tx_bytes_per_second", "ib0"), 50.0);
    CHECK(!s_find(r, "net_rx_bytes_per_second", "lo"));
    CHECK_EQ(s_count(r, "net_rx_bytes_per_second"), 1);
    CHECK_EQ(s_count(r, "net_tx_bytes_per_second"), 2);
    const rec_t *e = s_find(r, "net_tx_bytes_per_second", "ib0");
    CHECK(e && strcmp(e->tag_key, "iface") == 0 && e->ntags == 1);
}

/* Disk rates between diskstats written with k=1 and k=3 two seconds apart:
 * device i read 2000*(i+1) sectors more, wrote 4000*(i+1) more. */
static void
s_check_disks(const recorder_t *r, const char *const *whole, size_t nwhole)
{
    static const char *const all[] = {
        "sda", "sda1", "loop0", "ram0", "zram0", "nvme0n1", "nvme0n1p1",
        "nvme0n10", "dm-0", "mmcblk0", "mmcblk0p1", "sdp", "sdp2"
    };
    CHECK_EQ(s_count(r, "disk_read_bytes_per_second"), nwhole);
    CHECK_EQ(s_count(r, "disk_write_bytes_per_second"), nwhole);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int expected = 0;
        for (size_t j = 0; j < nwhole; j++)
            expected |= strcmp(all[i], whole[j]) == 0;
        const rec_t *rd = s_find(r, "disk_read_bytes_per_second", all[i]);
        CHECK((rd != NULL) == expected);
        if (!rd || !expected)
            continue;
        CHECK(strcmp(rd->tag_key, "disk") == 0);
        CHECK_EQ(rd->value, 2000.0 * (double) (i + 1) * 512 / 2);
        CHECK_EQ(s_value(r, "disk_write_bytes_per_second", all[i]),
                 4000.0 * (double) (i + 1) * 512 / 2);
    }
}

/* Calls three to five on the fixture tree: interfaces that come and go and
 * a clock that steps back. */
static void
s_check_later_calls(void *st, recorder_t *r, const char *proc, int64_t t0)
{
    /* Interfaces come and go: a new one has no rate on first sight. */
    s_write_netdev(proc, 3);
    CHECK(s_sample(&telem_sampler_proc, st, t0 + 3 * NS_S, r) == 0);
    CHECK_EQ(s_value(r, "net_rx_bytes_per_second", "eth0"), 500.0);
    CHECK_EQ(s_value(r, "net_tx_bytes_per_second", "eth0"), 100.0);
    CHECK(!s_find(r, "net_rx_bytes_per_second", "eth1"));
    CHECK(!s_find(r, "net_tx_bytes_per_second", "ib0"));
    CHECK(!s_find(r, "cpu_percent", NULL));     /* no jiffies passed */
    CHECK_EQ(s_value(r, "disk_read_bytes_per_second", "sda"), 0.0);

    /* A clock step backwards gives no rates, and the next call measures
     * from the step. */
    CHECK(s_sample(&telem_sampler_proc, st, t0 + 1 * NS_S, r) == 0);
    CHECK(!s_find(r, "net_rx_bytes_per_second", NULL));
    CHECK(!s_find(r, "context_switches_per_second", NULL));
    s_write_netdev(proc, 3);
    CHECK(s_sample(&telem_sampler_proc, st, t0 + 5 * NS_S, r) == 0);
    CHECK_EQ(s_value(r, "net_rx_bytes_per_second", "eth1"), 0.0);
    CHECK_EQ(s_value(r, "context_switches_per_second", NULL), 0.0);
}

static void
test_proc_fixture(void)
{
    char root[] = "/tmp/telem_samplers_XXXXXX", proc[256];
    CHECK(mkdtemp(root) != NULL);
    int chowned = s_build_tree(root, proc, sizeof proc);
    s_write_stat(proc, "100 10 50 1000 40 5 5 0 7 0", 5000);
    s_write_netdev(proc, 1);
    s_write_diskstats(proc, 1);

    telem_sampler_env_t env = {.node = "n1", .job_uid = getuid(),
                               .proc_root = proc};
    void *st = NULL;
    recorder_t *r = calloc(1, sizeof *r);
    CHECK(s_open(&telem_sampler_proc, &st, &env) == 0 && st != NULL);
    int64_t t0 = INT64_C(1700000000) * NS_S;
    CHECK(s_sample(&telem_sampler_proc, st, t0, r) == 0);
    s_check_first_call(r, chowned);

    s_write_stat(proc, "130 10 65 1150 40 8 7 0 20 0", 7000);
    s_write_netdev(proc, 2);
    s_write_diskstats(proc, 3);
    CHECK(s_sample(&telem_sampler_proc, st, t0 + 2 * NS_S, r) == 0);
    s_check_second_call(r);
    static const char *const whole[] = {
        "sda", "nvme0n1", "nvme0n10", "dm-0", "mmcblk0", "sdp"
    };
    s_check_disks(r, whole, sizeof whole / sizeof whole[0]);

    s_check_later_calls(st, r, proc, t0);

    /* The job's user is whoever env says. */
    telem_sampler_proc.close(&st);
    CHECK(st == NULL);
    env.job_uid = 4242;
    CHECK(s_open(&telem_sampler_proc, &st, &env) == 0);
    CHECK(s_sample(&telem_sampler_proc, st, t0, r) == 0);
    CHECK_EQ(s_value(r, "num_running_processes", NULL), chowned ? 1.0 : 0.0);
    telem_sampler_proc.close(&st);
    free(r);
    CHECK(test_rmtree(root) == 0);
}

/* With a sys/block directory beside proc, it alone says what is a disk. */
static void
test_proc_sys_block(void)
{
    char root[] = "/tmp/telem_samplers_XXXXXX", proc[256];
    CHECK(mkdtemp(root) != NULL);
    s_build_tree(root, proc, sizeof proc);
    s_mkdir(root, "sys");
    s_mkdir(root, "sys/block");
    s_mkdir(root, "sys/block/sda");
    s_mkdir(root, "sys/block/loop0");
    s_mkdir(root, "sys/block/nvme0n1p1");   /* believed, though odd */
    s_write_diskstats(proc, 1);

    /* A trailing slash on proc_root must not change where sys/ is. */
    char proc_slash[300];
    snprintf(proc_slash, sizeof proc_slash, "%s/", proc);
    telem_sampler_env_t env = {.job_uid = getuid(), .proc_root = proc_slash};
    void *st = NULL;
    recorder_t *r = calloc(1, sizeof *r);
    CHECK(s_open(&telem_sampler_proc, &st, &env) == 0);
    int64_t t0 = INT64_C(1700000000) * NS_S;
    CHECK(s_sample(&telem_sampler_proc, st, t0, r) == 0);
    s_write_diskstats(proc, 3);
    CHECK(s_sample(&telem_sampler_proc, st, t0 + 2 * NS_S, r) == 0);
    static const char *const whole[] = {"sda", "nvme0n1p1"};
    s_check_disks(r, whole, 2);
    telem_sampler_proc.close(&st);
    free(r);
    CHECK(test_rmtree(root) == 0);
}

/* Missing files skip their metrics; MemAvailable is estimated on kernels
 * without it; garbage is skipped without harm. */
static void
test_proc_missing_and_garbage(void)
{
    char root[] = "/tmp/telem_samplers_XXXXXX", proc[256];
    CHECK(mkdtemp(root) != NULL);
    snprintf(proc, sizeof proc, "%s/proc", root);
    s_mkdir(root, "proc");
    s_write(proc, "meminfo",
            "MemTotal: 1000000 kB\nMemFree: 100000 kB\nBuffers: 50000 kB\n"
            "Cached: 150000 kB\n");
    telem_sampler_env_t env = {.job_uid = 4242, .proc_root = proc};
    void *st = NULL;
    recorder_t *r = calloc(1, sizeof *r);
    CHECK(s_open(&telem_sampler_proc, &st, &env) == 0);
    CHECK(s_sample(&telem_sampler_proc, st, NS_S, r) == 0);
    CHECK_EQ(s_value(r, "used_ram", NULL), 70.0);
    CHECK_EQ(s_value(r, "mem_available_bytes", NULL), 300000.0 * 1024);
    CHECK_EQ(s_value(r, "num_running_processes", NULL), 0.0);
    CHECK(!s_find(r, "swap_used_bytes", NULL));
    CHECK(!s_find(r, "load_average", NULL));
    CHECK(!s_find(r, "procs_running", NULL));
    CHECK_EQ(r->n, 8);     /* and MemFree, Buffers, Cached as they are */

    static const char *const files[] = {
        "stat", "meminfo", "loadavg", "uptime", "diskstats"
    };
    static const char *const junk[] = {
        "", "\n\n\n", "cpu \ncpu x y z\nctxt\nprocs_running -1\n",
        "MemTotal: kB\nMemTotal:\n: 5\n", "1 2\n", "nan\n",
        "  8 0\n  8 0 sda\n  8 0 sda 1 2 x\n\x01\x02\xff garbage\n",
        "MemTotal: 0 kB\nMemAvailable: 5 kB\n"
    };
    s_mkdir(proc, "net");
    for (size_t j = 0; j < sizeof junk / sizeof junk[0]; j++) {
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
            s_write(proc, files[i], junk[j]);
        s_write(proc, "net/dev", junk[j]);
        s_sample(&telem_sampler_proc, st, NS_S * (int64_t) (2 + j), r);
        CHECK(!s_find(r, "used_ram", NULL));
        CHECK(!s_find(r, "cpu_percent", NULL));
    }
    telem_sampler_proc.close(&st);

    /* No proc tree at all: the sampler is unsupported. */
    CHECK(test_rmtree(root) == 0);
    CHECK(s_open(&telem_sampler_proc, &st, &env) == TELEM_EUNSUPPORTED);
    CHECK(st == NULL);
    free(r);
}

/* ---- proc: the real /proc ------------------------------------------------ */

static void
test_proc_real(void)
{
    telem_sampler_env_t env = {.job_uid = getuid(), .proc_root = NULL};
    void *st = NULL;
    recorder_t *r = calloc(1, sizeof *r);
    CHECK(s_open(&telem_sampler_proc, &st, &env) == 0 && st != NULL);
    if (!st)
        return;
    CHECK(s_sample(&telem_sampler_proc, st, telem_now_ns(), r) == 0);
    CHECK(!s_find(r, "cpu_percent", NULL));
    /* cpu_percent needs a jiffy to pass between calls: wait for one,
     * bounded, without depending on how long it takes. */
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 1000 && !s_find(r, "cpu_percent", NULL); i++) {
        nanosleep(&ten_ms, NULL);
        CHECK(s_sample(&telem_sampler_proc, st, telem_now_ns(), r) == 0);
    }
    double cpu = s_value(r, "cpu_percent", NULL);
    CHECK(cpu >= 0.0 && cpu <= 100.0);
    double used = s_value(r, "used_ram", NULL);
    CHECK(used >= 0.0 && used <= 100.0);
    CHECK(s_value(r, "mem_total_bytes", NULL) > 0.0);
    CHECK(s_value(r, "mem_used_bytes", NULL)
          <= s_value(r, "mem_total_bytes", NULL));
    CHECK(s_value(r, "num_running_processes", NULL) >= 1.0);
    CHECK(s_value(r, "load_average", NULL) >= 0.0);
    CHECK(s_value(r, "procs_running", NULL) >= 1.0);   /* this test runs */
    CHECK(s_value(r, "uptime_seconds", NULL) > 0.0);
    CHECK(s_value(r, "context_switches_per_second", NULL) >= 0.0);
    for (size_t i = 0; i < r->n; i++) {
        CHECK(r->v[i].value >= 0.0);
        CHECK(strcmp(r->v[i].tag_value, "lo") != 0);
    }
    telem_sampler_proc.close(&st);
    free(r);
}

/* ---- nvml ---------------------------------------------------------------- */

static void
test_nvml(void)
{
    void *st = (void *) &st;
    CHECK(s_open(&telem_sampler_nvml, &st, NULL) == TELEM_EINVAL);
    telem_sampler_env_t env = {.nvml_library = "/nonexistent/libnvml.so.1"};
    st = (void *) &st;
    CHECK(s_open(&telem_sampler_nvml, &st, &env) == TELEM_EUNSUPPORTED);
    CHECK(st == NULL);
    env.nvml_library = "libm.so.6";     /* loads, but is no NVML */
    st = (void *) &st;
    CHECK(s_open(&telem_sampler_nvml, &st, &env) == TELEM_EUNSUPPORTED);
    CHECK(st == NULL);

    /* The default library: absent here, or a real GPU to read. */
    env.nvml_library = NULL;
    int rc = s_open(&telem_sampler_nvml, &st, &env);
    CHECK(rc == 0 || rc == TELEM_EUNSUPPORTED);
    if (rc == 0) {
        recorder_t *r = calloc(1, sizeof *r);
        CHECK(s_sample(&telem_sampler_nvml, st, telem_now_ns(), r) == 0);
        CHECK(s_value(r, "gpu_memory_total_bytes", "0") > 0.0);
        double util = s_value(r, "gpu_utilization", "0");
        CHECK(util >= 0.0 && util <= 100.0);
        CHECK(s_value(r, "gpu_temperature_c", "0") > 0.0);
        for (size_t i = 0; i < r->n; i++)
            CHECK(strcmp(r->v[i].tag_key, "gpu") == 0);
        printf("nvml: %zu values from the GPUs here\n", r->n);
        free(r);
    }
    telem_sampler_nvml.close(&st);
    CHECK(st == NULL);
}

/* ---- self ---------------------------------------------------------------- */

static void
s_fake_stats(void *arg, telem_sampler_self_stats_t *out)
{
    *out = *(const telem_sampler_self_stats_t *) arg;
}

static void
test_self(void)
{
    telem_sampler_env_t env = {0};
    void *st = (void *) &st;
    CHECK(s_open(&telem_sampler_self, &st, &env) == TELEM_EINVAL);
    CHECK(st == NULL);
    CHECK(telem_sampler_self.open(&env, NULL) == NULL);   /* err may be NULL */

    telem_sampler_self_stats_t stats = {
        .nseries = 12, .npoints = 3400, .mem_bytes = 56000,
        .mem_cap_bytes = 1 << 20, .ingested = 5000, .dropped = 7,
        .bad_messages = 2, .expired = 99, .ingest_queue = 3,
        .counter_series = 4, .push_refused = 5
    };
    env.self_stats = s_fake_stats;
    env.self_stats_arg = &stats;
    CHECK(s_open(&telem_sampler_self, &st, &env) == 0);
    recorder_t *r = calloc(1, sizeof *r);
    int64_t t0 = INT64_C(1700000000) * NS_S;
    CHECK(s_sample(&telem_sampler_self, st, t0, r) == 0);
    CHECK_EQ(s_value(r, "telemd_series", NULL), 12);
    CHECK_EQ(s_value(r, "telemd_points", NULL), 3400);
    CHECK_EQ(s_value(r, "telemd_mem_bytes", NULL), 56000);
    CHECK_EQ(s_value(r, "telemd_mem_cap_bytes", NULL), 1 << 20);
    CHECK_EQ(s_value(r, "telemd_ingested_total", NULL), 5000);
    CHECK_EQ(s_value(r, "telemd_dropped_total", NULL), 7);
    CHECK_EQ(s_value(r, "telemd_bad_messages_total", NULL), 2);
    CHECK_EQ(s_value(r, "telemd_expired_total", NULL), 99);
    CHECK_EQ(s_value(r, "telemd_ingest_queue", NULL), 3);
    CHECK_EQ(s_value(r, "telemd_pushed_series", NULL), 4);
    CHECK_EQ(s_value(r, "telemd_push_refused_total", NULL), 5);
    CHECK(!s_find(r, "telemd_ingest_rate", NULL));

    stats.ingested += 1000;
    CHECK(s_sample(&telem_sampler_self, st, t0 + NS_S / 2, r) == 0);
    CHECK_EQ(s_value(r, "telemd_ingest_rate", NULL), 2000.0);
    CHECK_EQ(s_value(r, "telemd_ingested_total", NULL), 6000);

    stats.ingested = 10;        /* telemd restarted: no negative rate */
    CHECK(s_sample(&telem_sampler_self, st, t0 + NS_S, r) == 0);
    CHECK(!s_find(r, "telemd_ingest_rate", NULL));
    telem_sampler_self.close(&st);
    CHECK(st == NULL);
    free(r);
}

/* ---- the vtables and their metric tables --------------------------------- */

static void
s_check_vtable(const telem_sampler_vt_t *vt, const char *name, int level)
{
    CHECK(strcmp(vt->name, name) == 0);
    CHECK(vt->min_level == level);
    CHECK(vt->open && vt->sample && vt->close && vt->metrics);
    size_t n = 0;
    for (const telem_meta_t *m = vt->metrics; m->metric; m++, n++) {
        CHECK(strlen(m->metric) > 0 && strlen(m->metric) <= TELEM_NAME_MAX);
        CHECK(strspn(m->metric, "abcdefghijklmnopqrstuvwxyz0123456789_")
              == strlen(m->metric));
        CHECK(m->type == TELEM_METRIC_GAUGE || m->type == TELEM_METRIC_COUNTER);
        CHECK(m->unit != NULL);
        CHECK(m->doc != NULL && strlen(m->doc) > 10);
        CHECK(s_meta(vt->metrics, m->metric) == m);     /* no duplicates */
    }
    CHECK(n > 0);
    /* close accepts NULL and a pointer to NULL. */
    void *none = NULL;
    vt->close(NULL);
    vt->close(&none);
}

int
main(void)
{
    s_check_vtable(&telem_sampler_proc, "proc", 2);
    s_check_vtable(&telem_sampler_nvml, "nvml", 3);
    s_check_vtable(&telem_sampler_self, "self", 4);
    test_proc_fixture();
    test_proc_sys_block();
    test_proc_missing_and_garbage();
    test_proc_real();
    test_nvml();
    test_self();
    return check_report("test_samplers");
}
