/* bench_dict_restore.c - how fast a job gets its checkpoint back from
 * telem's dictionary: 1 GiB of large values on one node.
 *
 * One telem_dictd (ipc, replication 1, --sync batch) in a private run
 * directory: by default a server actor inside this process (ddict_actor),
 * with --process the telem_dictd program beside this one, as in a job,
 * where the server and the job are different processes with a ZeroMQ
 * I/O thread each (docs/performance.md compares the two).  The client writes the values
 * (4 MiB each by default, each key's bytes different) into a namespace
 * and marks a checkpoint; then:
 *   1. restore in place: ddict_restore() and a read of every value back
 *      through the client API (what a job restarted on live servers does),
 *      on the fast path: one batch of ddict_batch_get_into() straight into
 *      the job's own memory (a buffer allocated and touched once before any
 *      timing, as a job's arrays exist before it restores them); the
 *      engine streams the values through a window of requests.  The same
 *      read through zero-copy views of whole-value frames
 *      (ddict_batch_get, batches of 16, the path before get_into) runs in
 *      the same process for the ratio;
 *   2. log replay: the server is stopped, and a new server object replays
 *      its log (what a restarted telem_dictd does before it serves), once
 *      with the log in the page cache and once after the cache was told to
 *      drop the file (posix_fadvise DONTNEED), i.e. read from the disk;
 *   3. restart and restore: a new actor (replay of the dropped log),
 *      ddict_open, ddict_restore and the fast-path read, end to end.
 * Each step runs --reps times; the median is printed in GB/s (10^9 B/s) of
 * value bytes, against the 1 GB/s target.  Every value read is checked:
 * its length, and 64 bytes at every 64 KiB and at its end against the
 * bytes written under that key.
 */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "bench_common.h"
#include "ddict.h"
#include "ddict_actor.h"
#include "ddict_server.h"
#include "telem_error.h"
#include "telem_paths.h"

#define S_BATCH 16
#define S_REPS_MAX 9
#define S_PROBE_STEP (64u << 10)  /* one 64-byte probe per step of a value */

typedef struct {
    uint64_t total;          /* value bytes */
    size_t vsize;
    int nvals;
    int reps;
    uint8_t *pat;            /* value i is pat + 8 * i, vsize bytes */
    uint8_t *job;            /* the job's memory: value i at i * vsize */
    char rundir[TELEM_PATH_MAX];
    char nodefile[TELEM_PATH_MAX + 16];
    char log[TELEM_PATH_MAX + 16];
    int process;             /* --process: telem_dictd as its own process */
    char dictd[TELEM_PATH_MAX];
} s_ctx_t;

/* The server: an actor in this process, or a telem_dictd process. */
typedef struct {
    ddict_actor_t *actor;
    pid_t pid;
} s_server_t;

static void
s_check(int rc, const char *what)
{
    if (rc)
        bench_die("bench_dict_restore", "%s: %s", what, telem_strerror(rc));
}

/* Starts telem_dictd and waits for its "ready" line. */
static pid_t
s_spawn(s_ctx_t *c)
{
    int fds[2];
    if (pipe(fds))
        bench_die("bench_dict_restore", "pipe failed");
    char *argv[] = { c->dictd, "--node", "n1", "--rundir", c->rundir,
                     "--nodefile", c->nodefile, "--replicas", "1",
                     "--sync", "batch", NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, c->dictd, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc)
        bench_die("bench_dict_restore", "cannot start %s", c->dictd);
    FILE *out = fdopen(fds[0], "r");
    char line[512];
    int ready = 0;
    while (out && !ready && fgets(line, sizeof line, out))
        ready = strcmp(line, "ready\n") == 0;
    if (out)
        fclose(out);            /* telem_dictd writes nothing more */
    if (!ready)
        bench_die("bench_dict_restore", "%s did not start", c->dictd);
    return pid;
}

static s_server_t
s_start(s_ctx_t *c)
{
    s_server_t srv = { NULL, 0 };
    if (c->process) {
        srv.pid = s_spawn(c);
        return srv;
    }
    ddict_actor_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.node = "n1";
    cfg.rundir = c->rundir;
    cfg.nodefile = c->nodefile;
    cfg.server.replicas = 1;
    cfg.server.sync = DDICT_SYNC_BATCH;
    int err = 0;
    srv.actor = ddict_actor_new(&cfg, &err);
    s_check(srv.actor ? 0 : err, "ddict_actor_new");
    return srv;
}

static void
s_stop(s_server_t *srv)
{
    ddict_actor_destroy(&srv->actor);
    if (srv->pid > 0) {
        int st = 0;
        kill(srv->pid, SIGTERM);
        waitpid(srv->pid, &st, 0);
        srv->pid = 0;
    }
}

static int
s_key(char *buf, int i)
{
    return snprintf(buf, 32, "ckpt-%06d", i);
}

static const uint8_t *
s_val(const s_ctx_t *c, int i)
{
    return c->pat + 8 * (size_t) i;
}

/* Checks value i's length and 64 bytes at every S_PROBE_STEP and at its
 * end. */
static void
s_verify(const s_ctx_t *c, int i, const uint8_t *v, size_t vl)
{
    const uint8_t *want = s_val(c, i);
    int bad = vl != c->vsize;
    for (size_t at = 0; !bad && at + 64 <= vl; at += S_PROBE_STEP)
        bad = memcmp(v + at, want + at, 64) != 0;
    if (bad || memcmp(v + vl - 64, want + vl - 64, 64) != 0)
        bench_die("bench_dict_restore", "value %d is wrong", i);
}

static void
s_write_all(s_ctx_t *c, ddict_t *d)
{
    ddict_batch_t *b = ddict_batch_new();
    char keys[S_BATCH][32];
    for (int i = 0; i < c->nvals;) {
        ddict_batch_clear(b);
        for (int k = 0; k < S_BATCH && i < c->nvals; k++, i++) {
            int kl = s_key(keys[k], i);
            ddict_batch_put(b, keys[k], (size_t) kl, s_val(c, i), c->vsize);
        }
        s_check(ddict_batch_exec(d, b), "write");
        for (size_t k = 0; k < ddict_batch_size(b); k++)
            s_check(ddict_batch_result(b, k, NULL, NULL, NULL), "put");
    }
    ddict_batch_destroy(&b);
}

/* Reads every value back as zero-copy views, batches of S_BATCH. */
static void
s_read_views(s_ctx_t *c, ddict_t *d)
{
    ddict_batch_t *b = ddict_batch_new();
    char keys[S_BATCH][32];
    for (int i = 0; i < c->nvals;) {
        ddict_batch_clear(b);
        int first = i;
        for (int k = 0; k < S_BATCH && i < c->nvals; k++, i++) {
            int kl = s_key(keys[k], i);
            ddict_batch_get(b, keys[k], (size_t) kl);
        }
        s_check(ddict_batch_exec(d, b), "read");
        for (size_t k = 0; k < ddict_batch_size(b); k++) {
            const void *v;
            size_t vl;
            s_check(ddict_batch_result(b, k, &v, &vl, NULL), "get");
            s_verify(c, first + (int) k, v, vl);
        }
    }
    ddict_batch_destroy(&b);
}

/* The fast path: every value into its place in the job's memory, one
 * batch. */
static void
s_read_into(s_ctx_t *c, ddict_t *d)
{
    ddict_batch_t *b = ddict_batch_new();
    char (*keys)[32] = malloc((size_t) c->nvals * sizeof *keys);
    if (!b || !keys)
        bench_die("bench_dict_restore", "out of memory");
    for (int i = 0; i < c->nvals; i++) {
        int kl = s_key(keys[i], i);
        s_check(ddict_batch_get_into(b, keys[i], (size_t) kl,
                                     c->job + (size_t) i * c->vsize,
                                     c->vsize), "batch");
    }
    s_check(ddict_batch_exec(d, b), "read");
    for (int i = 0; i < c->nvals; i++) {
        const void *v;
        size_t vl;
        s_check(ddict_batch_result(b, (size_t) i, &v, &vl, NULL), "get");
        if (v != c->job + (size_t) i * c->vsize)
            bench_die("bench_dict_restore", "value %d not in place", i);
        s_verify(c, i, v, vl);
    }
    free(keys);
    ddict_batch_destroy(&b);
}

static double
s_gbps(const s_ctx_t *c, int64_t ns)
{
    return (double) c->total / (double) ns;
}

static double
s_minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double) ru.ru_minflt;
}

/* Step 1: restore on the running server and read everything; *faults
 * gets the page faults the process took meanwhile. */
static double
s_restore_in_place(s_ctx_t *c, ddict_t *d, int views, double *faults)
{
    double f0 = s_minflt();
    int64_t t0 = bench_now_ns();
    uint64_t id = 0;
    s_check(ddict_restore(d, &id), "restore");
    if (id != 1)
        bench_die("bench_dict_restore", "restored checkpoint %llu, not 1",
                  (unsigned long long) id);
    if (views)
        s_read_views(c, d);
    else
        s_read_into(c, d);
    double gbps = s_gbps(c, bench_now_ns() - t0);
    *faults = s_minflt() - f0;
    return gbps;
}

static int
s_discard(void *arg, zmq_msg_t *route, const char *peer, zmq_msg_t *frames,
          size_t n)
{
    (void) arg;
    (void) peer;
    if (route)
        zmq_msg_close(route);
    for (size_t i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
    return 0;
}

static void
s_drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        bench_die("bench_dict_restore", "cannot open %s", path);
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* Step 2: a server object replays the log (no sockets). */
static double
s_replay(s_ctx_t *c, int cold, uint64_t *log_bytes)
{
    if (cold)
        s_drop_cache(c->log);
    ddict_server_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.node = "n1";
    cfg.log_path = c->log;
    cfg.replicas = 1;
    cfg.sync = DDICT_SYNC_BATCH;
    int err = 0;
    int64_t t0 = bench_now_ns();
    ddict_server_t *s = ddict_server_new(&cfg, s_discard, NULL, &err);
    int64_t ns = bench_now_ns() - t0;
    s_check(s ? 0 : err, "ddict_server_new (replay)");
    ddict_server_stats_t st;
    ddict_server_stats(s, &st);
    *log_bytes = st.log_bytes;
    ddict_server_destroy(&s);
    return s_gbps(c, ns);
}

/* Step 3: restart the server, open, restore, read everything; *replay
 * gets the seconds until the server was up. */
static double
s_restart(s_ctx_t *c, double *replay)
{
    s_drop_cache(c->log);
    int64_t t0 = bench_now_ns();
    s_server_t srv = s_start(c);
    *replay = (double) (bench_now_ns() - t0) / 1e9;
    int err = 0;
    ddict_t *d = ddict_open(c->nodefile, "job", 60000, &err);
    s_check(d ? 0 : err, "ddict_open");
    uint64_t id = 0;
    s_check(ddict_restore(d, &id), "restore");
    s_read_into(c, d);
    int64_t ns = bench_now_ns() - t0;
    ddict_close(&d);
    s_stop(&srv);
    return s_gbps(c, ns);
}

static void
s_parse(int argc, char **argv, s_ctx_t *c)
{
    static const struct option longs[] = {
        { "mib", 1, 0, 'm' }, { "value-mib", 1, 0, 'v' },
        { "reps", 1, 0, 'k' }, { "process", 0, 0, 'P' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    long mib = 1024, vmib = 4;
    int o;
    while ((o = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        if (o == 'm')
            mib = atol(optarg);
        else if (o == 'v')
            vmib = atol(optarg);
        else if (o == 'k')
            c->reps = atoi(optarg);
        else if (o == 'P')
            c->process = 1;
        else if (o == 'h') {
            puts("Usage: bench_dict_restore [--mib N (1024)] "
                 "[--value-mib N (4)] [--reps N (3)] [--process]\n"
                 "  --process  run the server as the telem_dictd program "
                 "beside this one\n"
                 "             (default: a server actor in this process)");
            exit(0);
        } else {
            exit(2);
        }
    }
    if (optind != argc || mib < 1 || mib > 65536 || vmib < 1 || vmib > 256
        || vmib > mib || c->reps < 1 || c->reps > S_REPS_MAX) {
        fprintf(stderr, "bench_dict_restore: bad command line\n");
        exit(2);
    }
    c->vsize = (size_t) vmib << 20;
    c->nvals = (int) (mib / vmib);
    c->total = (uint64_t) c->nvals * c->vsize;
}

static double
s_report(const char *what, double *v, int reps)
{
    double m = bench_median_d(v, (size_t) reps);
    printf("%-48s %8.2f GB/s  (min %.2f, max %.2f)  %s\n", what, m, v[0],
           v[reps - 1], m >= 1.0 ? "met" : "MISS");
    return m;
}

/* The values' bytes, and the job's memory, touched once. */
static void
s_buffers(s_ctx_t *c)
{
    size_t patlen = c->vsize + 8 * (size_t) c->nvals;
    c->pat = malloc(patlen);
    c->job = malloc(c->total);
    if (!c->pat || !c->job)
        bench_die("bench_dict_restore", "out of memory");
    for (size_t i = 0; i < patlen; i++)
        c->pat[i] = (uint8_t) (i * 2654435761u >> 13);
    memset(c->job, 0, c->total);
}

int
main(int argc, char **argv)
{
    s_ctx_t c;
    memset(&c, 0, sizeof c);
    c.reps = 3;
    s_parse(argc, argv, &c);
    ssize_t len = readlink("/proc/self/exe", c.dictd, sizeof c.dictd - 16);
    if (len <= 0)
        bench_die("bench_dict_restore", "readlink /proc/self/exe failed");
    c.dictd[len] = 0;
    char *slash = strrchr(c.dictd, '/');
    snprintf(slash + 1, sizeof c.dictd - (size_t) (slash + 1 - c.dictd),
             "telem_dictd");
    bench_print_machine("bench_dict_restore (checkpoint restore)");
    printf("# server: %s\n", c.process ? "telem_dictd, its own process"
                                       : "an actor in this process");
    bench_tmpdir(c.rundir, sizeof c.rundir, "dictrestore");
    snprintf(c.nodefile, sizeof c.nodefile, "%s/dict_nodes", c.rundir);
    snprintf(c.log, sizeof c.log, "%s/n1/dict.log", c.rundir);
    s_buffers(&c);
    s_server_t srv = s_start(&c);
    int err = 0;
    ddict_t *d = ddict_open(c.nodefile, "job", 60000, &err);
    s_check(d ? 0 : err, "ddict_open");
    int64_t t0 = bench_now_ns();
    s_write_all(&c, d);
    double wr = s_gbps(&c, bench_now_ns() - t0);
    t0 = bench_now_ns();
    s_check(ddict_checkpoint(d, 1), "checkpoint");
    double ck_ms = (double) (bench_now_ns() - t0) / 1e6;
    printf("# %llu MiB in %d values of %zu MiB, one node, sync batch\n",
           (unsigned long long) (c.total >> 20), c.nvals, c.vsize >> 20);
    printf("%-48s %8.2f GB/s\n", "write (batches of 16 puts, synced)", wr);
    printf("%-48s %8.1f ms\n", "ddict_checkpoint (values shared)", ck_ms);
    double into[S_REPS_MAX], views[S_REPS_MAX], cold[S_REPS_MAX];
    double warm[S_REPS_MAX], restart[S_REPS_MAX], up[S_REPS_MAX];
    double fi[S_REPS_MAX], fv[S_REPS_MAX];
    for (int r = 0; r < c.reps; r++) {     /* alternated: same conditions */
        into[r] = s_restore_in_place(&c, d, 0, &fi[r]);
        views[r] = s_restore_in_place(&c, d, 1, &fv[r]);
    }
    ddict_close(&d);
    s_stop(&srv);
    uint64_t log_bytes = 0;
    for (int r = 0; r < c.reps; r++) {
        warm[r] = s_replay(&c, 0, &log_bytes);
        cold[r] = s_replay(&c, 1, &log_bytes);
        restart[r] = s_restart(&c, &up[r]);
    }
    printf("# log %llu MiB\n", (unsigned long long) (log_bytes >> 20));
    double mi = s_report("restore in place + read all into job memory",
                         into, c.reps);
    double mv = s_report("  same, zero-copy views of whole values", views,
                         c.reps);
    printf("%-48s %8.2f x\n", "  ratio get_into / views (same run)", mi / mv);
    printf("%-48s %8.0f / %.0f  (of %llu pages)\n",
           "  page faults per read, get_into / views",
           bench_median_d(fi, (size_t) c.reps),
           bench_median_d(fv, (size_t) c.reps),
           (unsigned long long) (c.total / 4096));
    s_report("log replay, file in page cache", warm, c.reps);
    s_report("log replay, file dropped from cache", cold, c.reps);
    s_report("restart: replay + open + restore + read all", restart, c.reps);
    printf("%-48s %8.2f s of %.2f s\n", "  of which replay (server up)",
           bench_median_d(up, (size_t) c.reps),
           (double) c.total / 1e9 / bench_median_d(restart, (size_t) c.reps));
    free(c.pat);
    free(c.job);
    bench_rmtree(c.rundir);
    return 0;
}
