/* test_samplers_hw.c - the ib, hw, nfs, lustre and job samplers.
 *
 * Against the fixture trees of tests/data/samplers_hw: good/ holds the real
 * layouts (an mlx5 port's counters and hw_counters, coretemp, nvme, a power
 * meter and an amdgpu hwmon, a thermal zone, an NFSv4 and an NFSv3 mount
 * in mountstats, a Lustre llite stats file and health_check, two processes
 * of the test's user, a Slurm step cgroup tree); bad/ holds truncated and
 * garbage variants of each.  Exact values and tags, what malformed input
 * leaves out, TELEM_EUNSUPPORTED where a source is absent, that files kept
 * open are re-read, and that every series is described.  The walk of /proc
 * the proc and job samplers share: once a round, a new round sees what
 * changed.  The job sampler on this machine's /proc (as root): a process of
 * a uid nothing else runs as, with known threads and open files, counted
 * exactly, alone and through a shared walk.  Then each
 * sampler's cost per sample() call on the fixtures and on this machine,
 * printed beside the proc sampler's.
 */
#include "tmpdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "telem_procwalk.h"
#include "telem_sampler.h"
#include "telem_time.h"

#ifndef TELEM_TEST_DATA
#error "TELEM_TEST_DATA must name tests/data (tests/CMakeLists.txt)"
#endif
#define GOOD TELEM_TEST_DATA "/samplers_hw/good"
#define BAD TELEM_TEST_DATA "/samplers_hw/bad"

typedef struct {
    char metric[64];
    char tags[256];                 /* "k=v,k=v" */
    double value;
} rec_t;

typedef struct {
    const telem_meta_t *metas;
    rec_t v[256];
    size_t n;
} recorder_t;

static void
s_record(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    recorder_t *r = arg;
    const telem_meta_t *m = r->metas;
    while (m->metric && strcmp(m->metric, metric) != 0)
        m++;
    if (!m->metric) {
        fprintf(stderr, "metric %s has no meta entry\n", metric);
        s_failures++;
    }
    CHECK(isfinite(value));
    CHECK(r->n < sizeof r->v / sizeof r->v[0]);
    if (r->n >= sizeof r->v / sizeof r->v[0])
        return;
    rec_t *e = &r->v[r->n++];
    snprintf(e->metric, sizeof e->metric, "%s", metric);
    size_t off = 0;
    e->tags[0] = '\0';
    for (uint32_t i = 0; i < ntags; i++)
        off += (size_t) snprintf(e->tags + off, sizeof e->tags - off, "%s%s=%s",
                                 i ? "," : "", tags[i].key, tags[i].value);
    e->value = value;
}

/* The value of metric{tags}, NAN when absent. */
static double
s_get(const recorder_t *r, const char *metric, const char *tags)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].metric, metric) == 0
            && strcmp(r->v[i].tags, tags) == 0)
            return r->v[i].value;
    return NAN;
}

static size_t
s_count(const recorder_t *r, const char *metric)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += strcmp(r->v[i].metric, metric) == 0;
    return n;
}

#define CHECK_VAL(r, metric, tags, want)                                     \
    do {                                                                     \
        double got_ = s_get(r, metric, tags), want_ = (want);                \
        s_checks++;                                                          \
        if (!(fabs(got_ - want_) <= 1e-9 * fabs(want_) + 1e-12)) {           \
            fprintf(stderr, "%s:%d: %s{%s} == %g, expected %g\n", __FILE__,  \
                    __LINE__, metric, tags, got_, want_);          \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)
#define CHECK_NONE(r, metric, tags) CHECK(isnan(s_get(r, metric, tags)))

/* Opens vt on the roots, samples once into r; returns the sample's rc or
 * the open's code. */
static int
s_run(const telem_sampler_vt_t *vt, const char *proc, const char *sys,
      const char *node, recorder_t *r)
{
    telem_sampler_env_t env = { .node = node, .job_uid = getuid(),
                                .proc_root = proc, .sys_root = sys };
    int err = 1;
    memset(r, 0, sizeof *r);
    r->metas = vt->metrics;
    void *st = vt->open(&env, &err);
    if (!st)
        return err;
    CHECK_RC(err, 0);
    int rc = vt->sample(st, 1, s_record, r);
    vt->close(&st);
    CHECK(st == NULL);
    return rc;
}

static void
test_ib(void)
{
    recorder_t r;
    const char *p1 = "device=mlx5_0,port=1";
    CHECK_RC(s_run(&telem_sampler_ib, GOOD "/proc", GOOD "/sys", "n1", &r), 0);
    CHECK_VAL(&r, "ib_symbol_error_total", p1, 3);
    CHECK_VAL(&r, "ib_link_downed_total", p1, 2);
    CHECK_VAL(&r, "ib_port_xmit_wait_total", p1, 123456);
    CHECK_VAL(&r, "ib_vl15_dropped_total", p1, 0);
    CHECK_VAL(&r, "ib_port_xmit_data_bytes_total", p1, 4000);
    CHECK_VAL(&r, "ib_port_rcv_data_bytes_total", p1, 8000);
    CHECK_VAL(&r, "ib_out_of_buffer_total", p1, 11);
    CHECK_VAL(&r, "ib_out_of_sequence_total", p1, 12);
    CHECK_VAL(&r, "ib_local_ack_timeout_err_total", p1, 14);
    CHECK_VAL(&r, "ib_roce_adp_retrans_total", p1, 16);
    CHECK_VAL(&r, "ib_other_total", "device=mlx5_0,port=1,"
              "counter=vendor_new_counter", 99);
    CHECK_INT(s_count(&r, "ib_other_total"), 1);   /* not lifespan */
    CHECK_VAL(&r, "ib_state", p1, 4);
    CHECK_VAL(&r, "ib_phys_state", p1, 5);
    CHECK_VAL(&r, "ib_rate_bytes_per_second", p1, 200e9 / 8);
    CHECK_VAL(&r, "ib_state", "device=mlx5_1,port=1", 1);
    CHECK_VAL(&r, "ib_rate_bytes_per_second", "device=mlx5_1,port=1",
              2.5e9 / 8);
    CHECK_INT(r.n, 21 + 12 + 3 + 4);

    /* Garbage, empty and overflowing counters and states give nothing. */
    CHECK_RC(s_run(&telem_sampler_ib, BAD "/proc", BAD "/sys", "n1", &r), 0);
    CHECK_INT(r.n, 1);
    CHECK_VAL(&r, "ib_link_error_recovery_total", p1, 8);

    /* No InfiniBand: skipped. */
    CHECK_RC(s_run(&telem_sampler_ib, GOOD "/proc", GOOD "/proc", "n1", &r),
             TELEM_EUNSUPPORTED);
    CHECK_RC(s_run(&telem_sampler_ib, GOOD "/proc", "/nonexistent", "n1", &r),
             TELEM_EUNSUPPORTED);
    CHECK(telem_sampler_ib.open(NULL, NULL) == NULL);
}

static void
test_hw(void)
{
    recorder_t r;
    CHECK_RC(s_run(&telem_sampler_hw, GOOD "/proc", GOOD "/sys", "n1", &r), 0);
    CHECK_VAL(&r, "hwmon_temp_celsius",
              "chip=coretemp,sensor=Package id 0,hwmon=hwmon0", 45);
    CHECK_VAL(&r, "hwmon_temp_celsius",
              "chip=coretemp,sensor=Core 0,hwmon=hwmon0", 43);
    CHECK_VAL(&r, "hwmon_temp_celsius", "chip=nvme,sensor=temp1,hwmon=hwmon1",
              -5);
    CHECK_VAL(&r, "hwmon_power_watts",
              "chip=acpi_power_meter,sensor=power1,hwmon=hwmon2", 245.5);
    CHECK_VAL(&r, "hwmon_power_watts", "chip=amdgpu,sensor=PPT,hwmon=hwmon3",
              1);                   /* input preferred to average */
    CHECK_VAL(&r, "thermal_zone_temp_celsius",
              "zone=thermal_zone0,type=x86_pkg_temp", 47);
    CHECK_INT(r.n, 6);

    CHECK_RC(s_run(&telem_sampler_hw, BAD "/proc", BAD "/sys", "n1", &r), 0);
    CHECK_INT(r.n, 1);
    CHECK_VAL(&r, "hwmon_temp_celsius",
              "chip=coretemp,sensor=temp3,hwmon=hwmon0", 41);

    CHECK_RC(s_run(&telem_sampler_hw, GOOD "/proc", "/nonexistent", "n1", &r),
             TELEM_EUNSUPPORTED);
}

/* A sensor file kept open is read again: rewritten in place, the next
 * sample sees the new value; a sensor that goes away is skipped. */
static void
test_hw_reread(void)
{
    char dir[64], path[1024];
    if (test_tmpdir(dir, sizeof dir, "samplers_hw") != 0) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "mkdir -p %s/class/hwmon/hwmon0 && "
             "echo 30000 >%s/class/hwmon/hwmon0/temp1_input && "
             "echo 1000000 >%s/class/hwmon/hwmon0/power1_input",
             dir, dir, dir);
    CHECK(system(path) == 0);
    telem_sampler_env_t env = { .proc_root = "/proc", .sys_root = dir };
    int err;
    recorder_t r = { .metas = telem_sampler_hw.metrics };
    void *st = telem_sampler_hw.open(&env, &err);
    CHECK(st != NULL);
    if (st) {
        CHECK_RC(telem_sampler_hw.sample(st, 1, s_record, &r), 0);
        CHECK_VAL(&r, "hwmon_temp_celsius", "chip=hwmon0,sensor=temp1,"
                  "hwmon=hwmon0", 30);
        snprintf(path, sizeof path, "echo 31500 >%s/class/hwmon/hwmon0/"
                 "temp1_input && echo x >%s/class/hwmon/hwmon0/power1_input",
                 dir, dir);
        CHECK(system(path) == 0);
        r.n = 0;
        CHECK_RC(telem_sampler_hw.sample(st, 2, s_record, &r), 0);
        CHECK_INT(r.n, 1);
        CHECK_VAL(&r, "hwmon_temp_celsius", "chip=hwmon0,sensor=temp1,"
                  "hwmon=hwmon0", 31.5);
        snprintf(path, sizeof path, "echo >%s/class/hwmon/hwmon0/temp1_input",
                 dir);
        CHECK(system(path) == 0);
        r.n = 0;
        CHECK_RC(telem_sampler_hw.sample(st, 3, s_record, &r), TELEM_EIO);
        CHECK_INT(r.n, 0);
        telem_sampler_hw.close(&st);
    }
    test_rmtree(dir);
}

static void
test_nfs(void)
{
    recorder_t r;
    const char *home = "mountpoint=/home,server=10.0.0.1";
    CHECK_RC(s_run(&telem_sampler_nfs, GOOD "/proc", GOOD "/sys", "n1", &r),
             0);
    CHECK_VAL(&r, "nfs_ops_total", "mountpoint=/home,server=10.0.0.1,op=READ",
              100);
    CHECK_VAL(&r, "nfs_op_retransmissions_total",
              "mountpoint=/home,server=10.0.0.1,op=READ", 3);
    CHECK_VAL(&r, "nfs_ops_total",
              "mountpoint=/home,server=10.0.0.1,op=WRITE", 20);
    CHECK_VAL(&r, "nfs_op_retransmissions_total",
              "mountpoint=/home,server=10.0.0.1,op=OPEN", 1);
    CHECK_NONE(&r, "nfs_ops_total",
               "mountpoint=/home,server=10.0.0.1,op=COMMIT");
    CHECK_VAL(&r, "nfs_retransmissions_total", home, 4);
    CHECK_VAL(&r, "nfs_major_timeouts_total", home, 1);
    CHECK_VAL(&r, "nfs_read_bytes_total", home, 1300);
    CHECK_VAL(&r, "nfs_write_bytes_total", home, 2400);
    const char *scr = "mountpoint=/mnt/scratch,server=nfs2";
    CHECK_VAL(&r, "nfs_ops_total", "mountpoint=/mnt/scratch,server=nfs2,"
              "op=GETATTR", 4);
    CHECK_VAL(&r, "nfs_retransmissions_total", scr, 0);
    CHECK_VAL(&r, "nfs_read_bytes_total", scr, 10);
    CHECK_INT(r.n, 4 * 2 + 4 + 1 * 2 + 4);

    /* Short, garbage and colon-less lines are skipped; only OPEN parses. */
    CHECK_RC(s_run(&telem_sampler_nfs, BAD "/proc", BAD "/sys", "n1", &r), 0);
    const char *data = "mountpoint=/data,server=10.0.0.1";
    CHECK_VAL(&r, "nfs_ops_total", "mountpoint=/data,server=10.0.0.1,op=OPEN",
              2);
    CHECK_VAL(&r, "nfs_retransmissions_total", data, 2);
    CHECK_VAL(&r, "nfs_major_timeouts_total", data, 1);
    CHECK_NONE(&r, "nfs_read_bytes_total", data);
    CHECK_INT(r.n, 2 + 2);

    /* No mountstats, and one without NFS (this machine's, usually). */
    CHECK_RC(s_run(&telem_sampler_nfs, "/nonexistent", GOOD "/sys", "n1", &r),
             TELEM_EUNSUPPORTED);
}

static void
test_lustre(void)
{
    recorder_t r;
    CHECK_RC(s_run(&telem_sampler_lustre, GOOD "/proc", GOOD "/sys", "n1",
                   &r), 0);
    CHECK_VAL(&r, "lustre_read_ops_total", "fs=scratch", 21);
    CHECK_VAL(&r, "lustre_read_bytes_total", "fs=scratch", 8392704);
    CHECK_VAL(&r, "lustre_write_ops_total", "fs=scratch", 3);
    CHECK_VAL(&r, "lustre_write_bytes_total", "fs=scratch", 2098176);
    CHECK_VAL(&r, "lustre_health_ok", "", 1);
    CHECK_INT(r.n, 5);

    /* The debugfs layout, with garbage stats: only the health check. */
    CHECK_RC(s_run(&telem_sampler_lustre, BAD "/proc", BAD "/sys", "n1", &r),
             0);
    CHECK_VAL(&r, "lustre_health_ok", "", 0);
    CHECK_INT(r.n, 1);

    CHECK_RC(s_run(&telem_sampler_lustre, "/nonexistent", "/nonexistent",
                   "n1", &r), TELEM_EUNSUPPORTED);
}

static void
test_job(void)
{
    recorder_t r;
    CHECK_RC(s_run(&telem_sampler_job, GOOD "/proc", GOOD "/sys", "n1", &r),
             0);
    CHECK_VAL(&r, "job_threads", "", 4);
    CHECK_VAL(&r, "job_open_files", "", 4);
    CHECK_VAL(&r, "job_step_cpu_seconds_total", "job=42,step=0", 2.5);
    CHECK_VAL(&r, "job_step_memory_bytes", "job=42,step=0", 104857600);
    CHECK_VAL(&r, "job_step_memory_max_bytes", "job=42,step=0", 1073741824);
    CHECK_VAL(&r, "job_step_oom_kills_total", "job=42,step=0", 1);
    CHECK_VAL(&r, "job_step_cpu_seconds_total", "job=42,step=batch", 0.001);
    CHECK_VAL(&r, "job_step_memory_bytes", "job=42,step=batch", 4096);
    CHECK_NONE(&r, "job_step_memory_max_bytes", "job=42,step=batch");
    CHECK_VAL(&r, "job_step_oom_kills_total", "job=42,step=batch", 0);
    CHECK_INT(r.n, 2 + 4 + 3);

    /* Another node's scope is not this node's; without the plain
     * slurmstepd.scope there are no step series. */
    CHECK_RC(s_run(&telem_sampler_job, GOOD "/proc", GOOD "/sys", "n2", &r),
             0);
    CHECK_INT(r.n, 2);

    /* Malformed cgroup files, and directories that are not jobs or steps. */
    CHECK_RC(s_run(&telem_sampler_job, BAD "/proc", BAD "/sys", NULL, &r), 0);
    CHECK_VAL(&r, "job_threads", "", 0);
    CHECK_INT(r.n, 2);

    CHECK_RC(s_run(&telem_sampler_job, "/nonexistent", GOOD "/sys", "n1", &r),
             TELEM_EUNSUPPORTED);
}

/* ---- the walk of /proc the proc and job samplers share ------------------ */

/* Opens vt with env and samples it at `round` into r (emptied first). */
static void
s_round(const telem_sampler_vt_t *vt, void *st, int64_t round, recorder_t *r)
{
    memset(r, 0, sizeof *r);
    r->metas = vt->metrics;
    CHECK_RC(vt->sample(st, round, s_record, r), 0);
}

static void
test_procwalk_shared(void)
{
    char dir[128], path[256];
    CHECK_RC(test_tmpdir(dir, sizeof dir, "procwalk"), 0);
    static const char *const dirs[] = {
        "proc", "proc/300", "proc/300/task", "proc/300/task/300",
        "proc/300/task/301", "proc/300/fd", "proc/300/fd/0"
    };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, dirs[i]);
        CHECK_RC(mkdir(path, 0700), 0);
    }
    snprintf(path, sizeof path, "%s/proc", dir);
    int err = 1;
    telem_procwalk_t *w = telem_procwalk_new(path, getuid(), &err);
    CHECK(w != NULL && err == 0);
    telem_sampler_env_t env = { .node = "n1", .job_uid = getuid(),
                                .proc_root = path, .sys_root = "/nonexistent",
                                .procwalk = w };
    void *proc = telem_sampler_proc.open(&env, &err);
    void *job = telem_sampler_job.open(&env, &err);
    CHECK(proc != NULL && job != NULL);
    if (!w || !proc || !job)
        goto out;
    recorder_t rp, rj;
    s_round(&telem_sampler_proc, proc, 5, &rp);
    s_round(&telem_sampler_job, job, 5, &rj);
    CHECK_INT(telem_procwalk_walks(w), 1);
    CHECK_VAL(&rp, "num_running_processes", "", 1);
    CHECK_VAL(&rj, "job_threads", "", 2);
    CHECK_VAL(&rj, "job_open_files", "", 1);

    /* A process that starts within the round counts from the next one. */
    snprintf(path, sizeof path, "%s/proc/301", dir);
    CHECK_RC(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/proc/301/task", dir);
    CHECK_RC(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/proc/301/task/301", dir);
    CHECK_RC(mkdir(path, 0700), 0);
    s_round(&telem_sampler_job, job, 5, &rj);
    CHECK_VAL(&rj, "job_threads", "", 2);
    CHECK_INT(telem_procwalk_walks(w), 1);
    s_round(&telem_sampler_proc, proc, 6, &rp);
    s_round(&telem_sampler_job, job, 6, &rj);
    CHECK_INT(telem_procwalk_walks(w), 2);
    CHECK_VAL(&rp, "num_running_processes", "", 2);
    CHECK_VAL(&rj, "job_threads", "", 3);
    CHECK_VAL(&rj, "job_open_files", "", 1);
out:
    telem_sampler_proc.close(&proc);
    telem_sampler_job.close(&job);
    telem_procwalk_destroy(&w);
    CHECK(w == NULL);
    telem_procwalk_destroy(&w);             /* accepts NULL */
    CHECK(telem_procwalk_new("/nonexistent", 0, &err) == NULL);
    CHECK_RC(err, TELEM_EUNSUPPORTED);
    test_rmtree(dir);
}

/* ---- the job sampler on this machine's /proc ---------------------------- */

/* A uid that owns no /proc/<pid> here, or 0 when none of those tried. */
static uid_t
s_free_uid(void)
{
    for (uid_t uid = 64000; uid < 64100; uid++) {
        DIR *d = opendir("/proc");
        if (!d)
            return 0;
        struct dirent *de;
        bool used = false;
        while (!used && (de = readdir(d)) != NULL) {
            struct stat st;
            used = de->d_name[0] >= '1' && de->d_name[0] <= '9'
                   && fstatat(dirfd(d), de->d_name, &st, 0) == 0
                   && st.st_uid == uid;
        }
        closedir(d);
        if (!used)
            return uid;
    }
    return 0;
}

static void *
s_block(void *arg)
{
    char c;
    (void) arg;
    while (read(3, &c, 1) > 0)
        ;
    return NULL;
}

/* The job's process: becomes uid (which makes it non-dumpable: its fd/ is
 * root's then, its task/ still uid's), keeps its pipe ends as 3 and 4,
 * fds 0-2 as inherited and nfiles more, runs nthreads - 1 more threads,
 * writes its open-file count to 4 and waits for EOF on 3. */
static void
s_job_child(uid_t uid, int in, int out, int nfiles, int nthreads)
{
    if (dup2(in, 3) < 0 || dup2(out, 4) < 0)
        _exit(1);
    for (int fd = 5; fd < 1024; fd++)
        close(fd);
    if (setgroups(0, NULL) || setresgid(uid, uid, uid)
        || setresuid(uid, uid, uid))
        _exit(1);
    for (int i = 0; i < nfiles; i++)
        if (open("/dev/null", O_RDONLY) < 0)
            _exit(1);
    for (int i = 1; i < nthreads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, s_block, NULL) != 0)
            _exit(1);
    }
    int files = 2 + nfiles;
    for (int fd = 0; fd < 3; fd++)
        files += fcntl(fd, F_GETFD) != -1;
    if (write(4, &files, sizeof files) != (ssize_t) sizeof files)
        _exit(1);
    s_block(NULL);
    _exit(0);
}

static void
test_job_live(void)
{
    uid_t uid = geteuid() == 0 ? s_free_uid() : 0;
    if (!uid) {
        printf("job live: not run (needs root and a uid no process uses)\n");
        return;
    }
    int down[2], up[2];
    CHECK_RC(pipe(down), 0);
    CHECK_RC(pipe(up), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        s_job_child(uid, down[0], up[1], 7, 4);
    }
    close(down[0]);
    close(up[1]);
    int files = -1;
    CHECK(read(up[0], &files, sizeof files) == (ssize_t) sizeof files);

    telem_sampler_env_t env = { .node = "n1", .job_uid = uid,
                                .proc_root = "/proc", .sys_root = "/sys" };
    recorder_t r;
    memset(&r, 0, sizeof r);
    r.metas = telem_sampler_job.metrics;
    int err = 1;
    void *st = telem_sampler_job.open(&env, &err);
    CHECK(st != NULL);
    if (st) {
        CHECK_RC(telem_sampler_job.sample(st, 1, s_record, &r), 0);
        telem_sampler_job.close(&st);
    }
    CHECK_VAL(&r, "job_threads", "", 4);
    CHECK_VAL(&r, "job_open_files", "", files);

    /* The same through the walk the proc sampler shares, as in telemd. */
    env.procwalk = telem_procwalk_new("/proc", uid, &err);
    CHECK(env.procwalk != NULL);
    void *proc = telem_sampler_proc.open(&env, &err);
    st = telem_sampler_job.open(&env, &err);
    CHECK(proc != NULL && st != NULL);
    if (env.procwalk && proc && st) {
        recorder_t rp;
        s_round(&telem_sampler_proc, proc, 7, &rp);
        s_round(&telem_sampler_job, st, 7, &r);
        CHECK_VAL(&rp, "num_running_processes", "", 1);
        CHECK_VAL(&r, "job_threads", "", 4);
        CHECK_VAL(&r, "job_open_files", "", files);
        CHECK_INT(telem_procwalk_walks(env.procwalk), 1);
    }
    telem_sampler_proc.close(&proc);
    telem_sampler_job.close(&st);
    telem_procwalk_destroy(&env.procwalk);
    printf("job live: uid %u, %d open files, 4 threads\n", (unsigned) uid,
           files);

    close(down[1]);
    close(up[0]);
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- cost per sample() call ---------------------------------------------- */

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
s_ignore(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    (void) metric, (void) tags, (void) ntags, (void) value;
    (*(size_t *) arg)++;
}

static void
s_cost(const telem_sampler_vt_t *vt, const char *proc, const char *sys,
       const char *where)
{
    telem_sampler_env_t env = { .node = "n1", .job_uid = getuid(),
                                .proc_root = proc, .sys_root = sys };
    int err;
    void *st = vt->open(&env, &err);
    if (!st) {
        printf("cost %-7s %-8s not available: %s\n", vt->name, where,
               telem_strerror(err));
        return;
    }
    size_t n = 0;
    int calls = 0;
    double t0 = s_now(), t;
    do {
        vt->sample(st, (int64_t) calls + 1, s_ignore, &n);
        calls++;
    } while ((t = s_now()) - t0 < 0.2 && calls < 20000);
    vt->close(&st);
    printf("cost %-7s %-8s %8.1f us/call, %5.1f series/call\n", vt->name,
           where, (t - t0) / calls * 1e6, (double) n / calls);
}

static void
test_cost(void)
{
    const telem_sampler_vt_t *vts[] = {
        &telem_sampler_ib, &telem_sampler_hw, &telem_sampler_nfs,
        &telem_sampler_lustre, &telem_sampler_job
    };
    for (size_t i = 0; i < sizeof vts / sizeof vts[0]; i++)
        s_cost(vts[i], GOOD "/proc", GOOD "/sys", "fixture");
    for (size_t i = 0; i < sizeof vts / sizeof vts[0]; i++)
        s_cost(vts[i], "/proc", "/sys", "machine");
    s_cost(&telem_sampler_proc, "/proc", "/sys", "machine");
}

int
main(void)
{
    test_ib();
    test_hw();
    test_hw_reread();
    test_nfs();
    test_lustre();
    test_job();
    test_procwalk_shared();
    test_job_live();
    test_cost();
    return check_report("test_samplers_hw");
}
