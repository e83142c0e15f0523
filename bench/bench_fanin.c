/* bench_fanin.c - fan-in costs of one job on N namespaced nodes.
 *
 * bench/fanin.sh makes N nodes with bench/cluster/nsnodes.sh (a network
 * and UTS namespace each, on a bridge) and runs this once per size.  It
 * starts the job with the real telem_launch and its template source
 * (`--exec-template "nsnodes.sh exec DIR {node}" --hosts n1,...`): telemd
 * and telem_dictd on every node, telem_agg on n1, the program
 * (bench_restart_prog, which records when it runs) everywhere, every TCP
 * socket CURVE with the job's key.  Then, from the root namespace, it times
 * (p50, p99 of wall time, and the CPU of the process that fans out):
 *   startup  telem_launch exec -> the program running on every node;
 *   query    one ac_query of the newest point of 10 node metrics on every
 *            node (this process fans out);
 *   watch    one watcher round, watch_tick() with slowgpu over 8 devices a
 *            node (what telem_watch runs every period; this process);
 *   agg      one POST /api/query to telem_agg, sum:1m-avg over every node,
 *            as Grafana sends it (telem_agg fans out; its CPU from /proc);
 *   restart  a restart request excluding one node, answered by the
 *            launcher: its own stop + re-form + start, and request -> the
 *            program running again everywhere (the launcher's CPU).
 * The device timings slowgpu reads are written by a feeder between timed
 * operations (bench_fanin_ops.c says why).  It prints a table and one
 * machine-readable line per operation: RESULT<TAB>N<TAB>op<TAB>p50 ms
 * <TAB>p99 ms<TAB>CPU ms per op<TAB>samples<TAB>failed samples.
 */
#include "bench_fanin.h"

#include "bench_common.h"
#include "telem_proto_watch.h"
#include "telem_time.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

extern char **environ;

#define S_WARM 8                    /* untimed rounds: slowgpu's history */

typedef struct {
    const char *template_, *hosts, *bindir, *rundir, *agg_bind;
    int rounds, restarts, level, check, wait_s, slurm;
    int relays[8];                   /* --relays: K of each phase */
    int nrelays, bad;
    char **names;
    char *names_buf;                 /* the names' storage */
    size_t n;
    pid_t launcher;
    int pidfd, ifd;
    char rb[PATH_MAX];
} s_job_t;

static const char s_usage[] =
"usage: bench_fanin --template T --hosts LIST --bindir DIR --rundir DIR\n"
"                   [--rounds R] [--restarts K] [--level L] [--wait S]\n"
"                   [--relays K[,K...]] [--check] [--slurm]\n"
"                   [--agg-bind ADDR]\n"
"Starts telem_launch --exec-template T --hosts LIST (every host active,\n"
"--resilient --exhaust-resources) with bench_restart_prog from DIR, then\n"
"times R rounds of an ac_query, a watcher round (slowgpu) and a telem_agg\n"
"query over every node, and K restarts each excluding one node.  RUNDIR\n"
"must not exist.  --check exits 1 when a node did not answer or a\n"
"restart did not exclude its node.  --wait bounds each wait (default 300).\n"
"--relays K,...: after the direct rounds' warm-up, for each K in turn,\n"
"start one telem_relay per K nodes (RUNDIR/relays) and a second telem_agg\n"
"reading it, and run R more rounds alternating the direct path and the\n"
"path through the relays (ops query/rK, watch/rK, agg/rK; CONN lines).\n"
"--slurm: run inside a Slurm allocation of the LIST nodes (salloc -N):\n"
"the launcher gets neither the template nor the hosts and starts each\n"
"daemon kind and the program as one srun step; T (with {node}) is then\n"
"used only to start the relays of --relays on their nodes.\n"
"--agg-bind: telem_agg's address on the first node (default 0.0.0.0,\n"
"which the template turns into the node's; under Slurm give n1's).\n";

static void
s_split_hosts(s_job_t *j)
{
    char *copy = strdup(j->hosts), *save = NULL;
    size_t cap = 1;
    for (const char *p = j->hosts; *p; p++)
        cap += *p == ',';
    j->names = calloc(cap, sizeof *j->names);
    if (!copy || !j->names)
        bench_die("bench_fanin", "out of memory");
    j->names_buf = copy;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
        j->names[j->n++] = w;
    if (j->n == 0)
        bench_die("bench_fanin", "--hosts lists no host");
}

/* --relays K[,K...]: each K 2-1000, at most 8; exit 2 otherwise. */
static void
s_relays_arg(s_job_t *j, const char *arg)
{
    const char *p = arg;
    int ok = *p != '\0';
    while (ok && *p) {
        char *end;
        long k = strtol(p, &end, 10);
        ok = end != p && k >= 2 && k <= 1000 && j->nrelays < 8
             && (*end == '\0' || (*end == ',' && end[1] != '\0'));
        if (ok)
            j->relays[j->nrelays++] = (int) k;
        p = *end ? end + 1 : end;
    }
    if (!ok) {
        fprintf(stderr, "bench_fanin: --relays '%s': K[,K...], each 2-1000,"
                " at most 8\n", arg);
        exit(2);
    }
}

static void
s_args(int argc, char **argv, s_job_t *j)
{
    static const struct option o[] = {
        { "template", 1, 0, 't' }, { "hosts", 1, 0, 'H' },
        { "bindir", 1, 0, 'b' }, { "rundir", 1, 0, 'd' },
        { "rounds", 1, 0, 'r' }, { "restarts", 1, 0, 'k' },
        { "level", 1, 0, 'L' }, { "wait", 1, 0, 'w' },
        { "check", 0, 0, 'c' }, { "relays", 1, 0, 'R' },
        { "slurm", 0, 0, 'S' }, { "agg-bind", 1, 0, 'A' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    *j = (s_job_t) { .rounds = 20, .restarts = 3, .level = 2, .wait_s = 300,
                     .agg_bind = "0.0.0.0" };
    int c;
    while ((c = getopt_long(argc, argv, "h", o, NULL)) != -1)
        switch (c) {
        case 't': j->template_ = optarg; break;
        case 'H': j->hosts = optarg; break;
        case 'b': j->bindir = optarg; break;
        case 'd': j->rundir = optarg; break;
        case 'r': j->rounds = atoi(optarg); break;
        case 'k': j->restarts = atoi(optarg); break;
        case 'L': j->level = atoi(optarg); break;
        case 'w': j->wait_s = atoi(optarg); break;
        case 'c': j->check = 1; break;
        case 'S': j->slurm = 1; break;
        case 'A': j->agg_bind = optarg; break;
        case 'R': s_relays_arg(j, optarg); break;
        case 'h': fputs(s_usage, stdout); exit(0);
        default: fputs(s_usage, stderr); exit(2);
        }
    if ((!j->template_ && (!j->slurm || j->nrelays)) || !j->hosts
        || !j->bindir || !j->rundir
        || optind != argc || j->rounds < 1 || j->restarts < 0
        || j->level < 2 || j->level > 4 || j->wait_s < 1) {
        fputs(s_usage, stderr);
        exit(2);
    }
    s_split_hosts(j);
    if ((size_t) j->restarts >= j->n)
        bench_die("bench_fanin", "%d restarts need more than %zu nodes",
                  j->restarts, j->n);
}

static void
s_spawn_launcher(s_job_t *j)
{
    char launch[PATH_MAX + 32], prog[PATH_MAX + 32], log[PATH_MAX + 32],
         nodes[16], level[16];
    snprintf(launch, sizeof launch, "%s/telem_launch", j->bindir);
    snprintf(prog, sizeof prog, "%s/bench_restart_prog", j->bindir);
    snprintf(log, sizeof log, "%s/launcher.log", j->rundir);
    snprintf(nodes, sizeof nodes, "%zu", j->n);
    snprintf(level, sizeof level, "%d", j->level);
    /* Under Slurm the allocation names the nodes and each gets its own
       NodeAddr; on the template's nodes `--bind 0.0.0.0` is turned into
       the node's address by the template. */
    char *argv[64];
    int k = 0;
    argv[k++] = launch;
    if (!j->slurm) {
        const char *src[] = { "--exec-template", j->template_, "--hosts",
                              j->hosts, "--bind", "0.0.0.0" };
        for (size_t i = 0; i < sizeof src / sizeof *src; i++)
            argv[k++] = (char *) src[i];
    }
    const char *rest[] = { "--nodes", nodes, "--idle", "0",
        "--resilient", "--exhaust-resources", "--max-restarts", "-1",
        "--backoff", "0", "--agg-bind", j->agg_bind,
        "--agg-port", "0", "--relays", "off", "--telemetry-level", level,
        /* N nodes' daemons on this machine's 2 cores: a telemd starved
           for 3 s is this harness's doing, not a hung node, and a restart
           it triggered would stop the one being measured. */
        "--heartbeat-timeout", "5",
        "--start-timeout",
        "600", "--rundir", j->rundir, "--log-level", "warn", "--",
        prog, NULL };
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        argv[k++] = (char *) rest[i];
    j->launcher = bench_spawn_logged(launch, argv, log, "bench_fanin");
    j->pidfd = (int) syscall(SYS_pidfd_open, j->launcher, 0);
    if (j->pidfd < 0)
        bench_die("bench_fanin", "pidfd_open: %s", strerror(errno));
}

/* Waits until `want` programs of run `run` started; their latest stamp. */
static int64_t
s_wait_run(const s_job_t *j, int run, size_t want)
{
    size_t seen = 0;
    int64_t hi = 0, deadline = bench_now_ns() + (int64_t) j->wait_s * 1000000000;
    char prefix[32], buf[16384] __attribute__((aligned(8)));
    int plen = snprintf(prefix, sizeof prefix, "%d.", run);
    while (seen < want) {
        struct pollfd p[2] = { { j->ifd, POLLIN, 0 }, { j->pidfd, POLLIN, 0 } };
        int64_t left = (deadline - bench_now_ns()) / 1000000;
        if (left <= 0 || poll(p, 2, (int) left) <= 0)
            bench_die("bench_fanin", "run %d: %zu of %zu programs started in "
                      "%d s (see %s/launcher.log)", run, seen, want,
                      j->wait_s, j->rundir);
        if (!(p[0].revents & POLLIN))
            bench_die("bench_fanin", "run %d: telem_launch exited with %zu "
                      "of %zu programs started (see %s/launcher.log)", run,
                      seen, want, j->rundir);
        ssize_t len = read(j->ifd, buf, sizeof buf);
        for (ssize_t off = 0; off < len;) {
            const struct inotify_event *e = (const void *) (buf + off);
            off += (ssize_t) (sizeof *e + e->len);
            if (!e->len || strncmp(e->name, prefix, (size_t) plen) != 0)
                continue;
            int64_t ns = bench_read_stamp(j->rb, e->name, "bench_fanin");
            hi = ns > hi ? ns : hi;
            seen++;
        }
    }
    return hi;
}

/* The first line of `path` into buf (newline cut); 0, or -1 if none. */
static int
s_read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    int ok = f && fgets(buf, (int) size, f) != NULL;
    if (f)
        fclose(f);
    if (ok)
        buf[strcspn(buf, "\r\n")] = '\0';
    return ok && *buf ? 0 : -1;
}

/* The pid of the launcher's daemon `role` on `node` (launch/daemons), or
 * of any node when node is NULL; 0 if none. */
static long
s_daemon_pid(const s_job_t *j, const char *node, const char *role)
{
    char path[PATH_MAX + 32], line[1024], n[256], r[32], st[32];
    long pid, found = 0;
    snprintf(path, sizeof path, "%s/launch/daemons", j->rundir);
    FILE *f = fopen(path, "r");
    while (f && !found && fgets(line, sizeof line, f))
        if (sscanf(line, "%255[^\t]\t%31[^\t]\t%31[^\t]\t%ld", n, r, st,
                   &pid) == 4 && strcmp(r, role) == 0
            && (!node || strcmp(n, node) == 0))
            found = pid;
    if (f)
        fclose(f);
    return found;
}

/* 1 if `pid`'s command name is `comm` and its command line names the
 * job's run directory. */
static int
s_is_ours(long pid, const char *comm, const char *rundir)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    if (s_read_line(path, buf, sizeof buf) != 0 || strcmp(buf, comm) != 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    for (ssize_t i = 0; i < n; i++)
        buf[i] = buf[i] ? buf[i] : ' ';
    buf[n] = '\0';
    return strstr(buf, rundir) != NULL;
}

/* telem_agg's own pid.  Under Slurm the launcher runs it as a one-node
 * srun and launch/daemons names srun: then the telem_agg process that
 * names this run directory, from /proc; 0 if none. */
static long
s_agg_pid(const s_job_t *j)
{
    long pid = s_daemon_pid(j, NULL, "agg");
    if (pid > 0 && s_is_ours(pid, "telem_agg", j->rundir))
        return pid;
    DIR *d = opendir("/proc");
    struct dirent *e;
    long found = 0;
    while (d && !found && (e = readdir(d)) != NULL) {
        char *end;
        long p = strtol(e->d_name, &end, 10);
        if (*end == '\0' && p > 0 && s_is_ours(p, "telem_agg", j->rundir))
            found = p;
    }
    if (d)
        closedir(d);
    return found;
}

/* Sum of the CPU of every telemd and telem_dictd of the job, and the
 * launcher's, in ns. */
static void
s_daemons_cpu(const s_job_t *j, int64_t *telemd, int64_t *dictd,
              int64_t *launcher)
{
    *telemd = *dictd = 0;
    for (size_t k = 0; k < j->n; k++) {
        long a = s_daemon_pid(j, j->names[k], "telemd");
        long b = s_daemon_pid(j, j->names[k], "dictd");
        *telemd += a > 0 ? fanin_proc_cpu_ns(a) : 0;
        *dictd += b > 0 ? fanin_proc_cpu_ns(b) : 0;
    }
    *launcher = fanin_proc_cpu_ns((long) j->launcher);
}

/* What the idle job costs: every node's daemons and the launcher (its
 * heartbeat) over a 5 s window, in % of one core. */
static void
s_idle_cost(const s_job_t *j)
{
    int64_t t0, d0, l0, t1, d1, l1;
    s_daemons_cpu(j, &t0, &d0, &l0);
    int64_t w0 = bench_now_ns();
    struct timespec five = { 5, 0 };
    while (nanosleep(&five, &five) != 0 && errno == EINTR)
        ;
    s_daemons_cpu(j, &t1, &d1, &l1);
    double w = (double) (bench_now_ns() - w0);
    printf("idle job, 5 s window: telemd %.3f %% of a core each (%.1f %% "
           "all %zu), telem_dictd %.3f %% each (%.1f %% all), launcher "
           "%.1f %%\n", 100.0 * (double) (t1 - t0) / w / (double) j->n,
           100.0 * (double) (t1 - t0) / w, j->n,
           100.0 * (double) (d1 - d0) / w / (double) j->n,
           100.0 * (double) (d1 - d0) / w, 100.0 * (double) (l1 - l0) / w);
    printf("IDLE\t%zu\t%.4f\t%.4f\t%.3f\n", j->n,
           100.0 * (double) (t1 - t0) / w / (double) j->n,
           100.0 * (double) (d1 - d0) / w / (double) j->n,
           100.0 * (double) (l1 - l0) / w);
}

/* Waits (bounded, on the launcher's pidfd as a clock) until `path` holds
 * a line. */
static void
s_wait_file(const s_job_t *j, const char *path, char *buf, size_t size)
{
    int64_t deadline = bench_now_ns() + (int64_t) j->wait_s * 1000000000;
    while (s_read_line(path, buf, size) != 0) {
        struct pollfd p = { j->pidfd, POLLIN, 0 };
        if (bench_now_ns() > deadline || poll(&p, 1, 20) != 0)
            bench_die("bench_fanin", "no %s (launcher %s)", path,
                      p.revents ? "exited" : "still running");
    }
}

/* One restart request excluding `node`; dies unless it is acknowledged. */
static void
s_request(const s_job_t *j, void *zctx, const char *node)
{
    char ep[PATH_MAX + 32], buf[8192];
    snprintf(ep, sizeof ep, "ipc://%s/launch/restart.sock", j->rundir);
    void *s = zmq_socket(zctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_connect(s, ep) != 0)
        bench_die("bench_fanin", "connect %s", ep);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    const char *exclude[] = { node }, *det[] = { "bench" };
    telem_restart_t r = { 7, telem_now_ns(), "fan-in benchmark", exclude, 1,
                          NULL, 0, det, 1 };
    const void *data;
    size_t size;
    telem_msg_t m;
    if (telem_proto_encode_restart(enc, &r, &data, &size) != 0
        || zmq_send(s, data, size, 0) < 0)
        bench_die("bench_fanin", "cannot send the restart request");
    zmq_pollitem_t item = { s, 0, ZMQ_POLLIN, 0 };
    int len = zmq_poll(&item, 1, j->wait_s * 1000) == 1
              ? zmq_recv(s, buf, sizeof buf, 0) : -1;
    if (len < 0 || (size_t) len > sizeof buf
        || telem_proto_decode(dec, buf, (size_t) len, &m) != 0
        || (int) m.type != TELEM_MSG_RESTART_ACK || m.u.restart_ack.code)
        bench_die("bench_fanin", "restart excluding %s not acknowledged",
                  node);
    telem_proto_decoder_destroy(&dec);
    telem_proto_encoder_destroy(&enc);
    zmq_close(s);
}

/* The machine's busy CPU time so far (every core: /proc/stat's user,
 * nice, system, irq, softirq and steal), ns; 0 when unreadable. */
static int64_t
s_machine_busy_ns(void)
{
    unsigned long long v[8] = { 0 };
    FILE *f = fopen("/proc/stat", "r");
    int ok = f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
                         &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                         &v[7]) == 8;
    if (f)
        fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return ok && hz > 0 ? (int64_t) (busy * (1000000000ULL / (unsigned) hz))
                        : 0;
}

/* The launcher's stop + re-form + start of restart `k` (1-based), ns;
 * the three in split_ms. */
static int64_t
s_restart_line(const s_job_t *j, int k, double split_ms[3])
{
    char path[PATH_MAX + 32], line[8192];
    snprintf(path, sizeof path, "%s/launch/restarts.log", j->rundir);
    FILE *f = fopen(path, "r");
    double stop, reform, back, start;
    int seen = 0, ok = 0;
    while (f && !ok && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "; stop ");
        if (p && ++seen == k)
            ok = sscanf(p, "; stop %lf s, re-form %lf s, back-off %lf s, "
                        "start %lf s", &stop, &reform, &back, &start) == 4;
    }
    if (f)
        fclose(f);
    if (!ok)
        bench_die("bench_fanin", "no restart line %d in %s", k, path);
    split_ms[0] = stop * 1e3;
    split_ms[1] = reform * 1e3;
    split_ms[2] = start * 1e3;
    return (int64_t) ((stop + reform + start) * 1e9);
}

/* The state of `node` in the launcher's job file ("active", "down"...). */
static void
s_job_state(const s_job_t *j, const char *node, char *out, size_t size)
{
    char path[PATH_MAX + 32], line[1024], n[256], st[32];
    snprintf(path, sizeof path, "%s/launch/job", j->rundir);
    snprintf(out, size, "?");
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '#' && sscanf(line, "%255[^\t]\t%31[^\t]", n, st) == 2
            && strcmp(n, node) == 0)
            snprintf(out, size, "%s", st);
    if (f)
        fclose(f);
}

static void
s_report(size_t n, fanin_op_t *op, const char *note)
{
    size_t k = op->n;
    if (k == 0)
        return;
    bench_sort_i64(op->wall, k);
    double p50 = (double) bench_percentile_sorted(op->wall, k, 50) / 1e6;
    double p99 = (double) bench_percentile_sorted(op->wall, k, 99) / 1e6;
    double cpu = (double) op->cpu_total / (double) k / 1e6;
    printf("  %-8s %9.2f %9.2f %10.2f %5zu %5zu  %s\n", op->name, p50, p99,
           cpu, k, op->bad, note);
    printf("RESULT\t%zu\t%s\t%.3f\t%.3f\t%.3f\t%zu\t%zu\n", n,
            op->name, p50, p99, cpu, k, op->bad);
}

/* One fan-out path: an analysis client (direct or through relays), its
 * own watcher, and a telem_agg; its three operations' samples. */
typedef struct {
    char tag[16];                    /* "" direct, else "rK" */
    char names[3][24];
    ac_t *ac;
    watch_t *watch;
    const char *url;
    long agg_pid;
    fanin_op_t ops[3];
    int round;                       /* rounds run (the first S_WARM untimed) */
    size_t events;
} s_path_t;

static void
s_path_init(s_path_t *p, const char *tag, ac_t *ac, const char *url,
            long agg_pid, size_t cap)
{
    static const char *const base[3] = { "query", "watch", "agg" };
    *p = (s_path_t) { .ac = ac, .url = url, .agg_pid = agg_pid };
    snprintf(p->tag, sizeof p->tag, "%s", tag);
    char why[256];
    p->watch = watch_new(ac);
    if (!p->watch || watch_add_detector(p->watch, "slowgpu", why, sizeof why))
        bench_die("watch_add_detector", "%s", p->watch ? why : "watch_new");
    watch_set_timeout(p->watch, 10000);
    for (int i = 0; i < 3; i++) {
        snprintf(p->names[i], sizeof p->names[i], "%s%s%s", base[i],
                 *tag ? "/" : "", tag);
        fanin_op_init(&p->ops[i], p->names[i], cap);
    }
}

/* (a), (b), (c) once on path p, for round ts. */
static void
s_path_round(const s_job_t *j, s_path_t *p, int64_t ts, const char *token)
{
    int64_t c0 = fanin_self_cpu_ns(), w0 = bench_now_ns();
    size_t miss;
    size_t got = fanin_query_latest(p->ac, &miss);
    int64_t w1 = bench_now_ns(), c1 = fanin_self_cpu_ns();
    int missing_a = miss || got < FANIN_QUERY_SERIES * j->n;
    if (watch_tick(p->watch, ts + 500000000))
        bench_die("watch_tick", "failed");
    int64_t w2 = bench_now_ns(), c2 = fanin_self_cpu_ns();
    int64_t a0 = fanin_proc_cpu_ns(p->agg_pid);
    size_t bytes;
    int status = fanin_agg_query(p->url, token, ts / 1000000000 + 1, &bytes);
    int64_t w3 = bench_now_ns(), a1 = fanin_proc_cpu_ns(p->agg_pid);
    p->events += det_events_count(watch_events(p->watch));
    if (p->round++ < S_WARM)
        return;
    fanin_op_add(&p->ops[0], w1 - w0, c1 - c0);
    fanin_op_add(&p->ops[1], w2 - w1, c2 - c1);
    fanin_op_add(&p->ops[2], w3 - w2, a1 - a0);
    p->ops[0].bad += (size_t) missing_a;
    p->ops[1].bad += watch_nmissing(p->watch) > 0;
    p->ops[2].bad += status != 200 || bytes < 100;
}

/* S_WARM + R rounds: the feeder writes one round (stamped 1 s after the
 * last, *r counting across phases), then every path runs it, the order
 * rotating each round so that drift and warm caches favour none. */
static void
s_rounds(s_job_t *j, fanin_feed_t *feed, int64_t t0, int *r, s_path_t **p,
         size_t np, const char *token)
{
    long slow = (long) j->n / 2;
    for (int k = 0; k < S_WARM + j->rounds; k++, (*r)++) {
        int64_t ts = t0 + (int64_t) *r * 1000000000;
        fanin_feed_round(feed, *r, ts, *r >= S_WARM / 2 ? slow : -1);
        for (size_t i = 0; i < np; i++)
            s_path_round(j, p[((size_t) k + i) % np], ts, token);
    }
}

/* /proc/loadavg's first three fields, into buf. */
static const char *
s_loadavg(char *buf, size_t size)
{
    FILE *f = fopen("/proc/loadavg", "r");
    float a = 0, b = 0, c = 0;
    int ok = f && fscanf(f, "%f %f %f", &a, &b, &c) == 3;
    if (f)
        fclose(f);
    snprintf(buf, size, ok ? "%.2f %.2f %.2f" : "?", a, b, c);
    return buf;
}

/* One relay phase: relays of K nodes, a client and a telem_agg through
 * them, rounds alternating with the direct path; reports the relayed
 * path and the connections each fan-out process holds. */
static void
s_relay_phase(s_job_t *j, fanin_feed_t *feed, int64_t t0, int *r,
              s_path_t *direct, const char *token, int k)
{
    fanin_relay_opts_t o = { j->template_, j->rundir, j->bindir, j->names,
                             j->n, (size_t) k, j->wait_s };
    char path[PATH_MAX + 32], dir[PATH_MAX + 32], url[512], tag[16], la[64];
    int64_t s0 = bench_now_ns();
    fanin_relays_t *rl = fanin_relays_start(&o);
    size_t nr = fanin_relays_count(rl);
    printf("%zu relays of %d nodes started and ready in %.1f ms\n", nr, k,
           (double) (bench_now_ns() - s0) / 1e6);
    snprintf(path, sizeof path, "%s/relays", j->rundir);
    snprintf(dir, sizeof dir, "%s/agg-r%d", j->rundir, k);
    pid_t agg = fanin_agg_start(&o, path, dir, url, sizeof url);
    int err = 0;
    setenv("TELEM_RELAYS", path, 1);
    snprintf(path, sizeof path, "%s/nodes", j->rundir);
    ac_t *ac = ac_connect(path, 10000, &err);
    setenv("TELEM_RELAYS", "", 1);
    if (!ac || ac_relay_count(ac) != nr)
        bench_die("ac_connect", "through %zu relays: %s", nr,
                  ac ? "not every relay in use" : telem_strerror(err));
    snprintf(tag, sizeof tag, "r%d", k);
    s_path_t relayed;
    s_path_init(&relayed, tag, ac, url, (long) agg, (size_t) j->rounds + 8);
    s_path_t *paths[2] = { direct, &relayed };
    int64_t rc0 = fanin_relays_cpu_ns(rl);
    s_rounds(j, feed, t0, r, paths, 2, token);
    double rcpu = (double) (fanin_relays_cpu_ns(rl) - rc0)
                  / (S_WARM + j->rounds) / 1e6;
    char why[512];
    int same = fanin_same_answers(direct->ac, ac, t0, t0 + (int64_t) *r
                                  * 1000000000, why, sizeof why) == 0;
    j->bad += !same;
    printf("relays of %d: answers %s: %s\n", k, same ? "identical"
           : "DIFFER", why);
    const char *reps[64], *neps[1024];
    size_t nre = 0, nne = 0;
    for (size_t i = 0; i < nr && nre < 64; i++)
        reps[nre++] = ac_relay_endpoint(ac, i);
    for (size_t i = 0; i < ac_node_count(direct->ac) && nne < 1024; i++)
        neps[nne++] = ac_node_endpoint(direct->ac, i);
    size_t c_self_r = fanin_tcp_conns((long) getpid(), reps, nre);
    size_t c_self_d = fanin_tcp_conns((long) getpid(), neps, nne);
    size_t c_agg_r = fanin_tcp_conns((long) agg, NULL, 0);
    size_t c_agg_d = fanin_tcp_conns(direct->agg_pid, NULL, 0);
    printf("relays of %d: TCP connections held: this process %zu through "
           "relays, %zu direct; telem_agg %zu through relays, %zu direct; "
           "the %zu relays' CPU %.2f ms a round (query + watch + agg); "
           "load %s\n", k, c_self_r, c_self_d, c_agg_r, c_agg_d, nr, rcpu,
           s_loadavg(la, sizeof la));
    printf("CONN\t%zu\t%s\t%zu\t%zu\t%zu\t%zu\t%zu\t%.3f\n", j->n, tag, nr,
           c_self_d, c_self_r, c_agg_d, c_agg_r, rcpu);
    const char *notes[] = { "through relays", "through relays",
                            "telem_agg through relays" };
    for (int i = 0; i < 3; i++) {
        s_report(j->n, &relayed.ops[i], notes[i]);
        j->bad += relayed.ops[i].bad > 0;
        fanin_op_free(&relayed.ops[i]);
    }
    watch_destroy(&relayed.watch);
    ac_close(&ac);
    j->bad += fanin_stop_pid(agg, 10) != 0;
    j->bad += fanin_relays_stop(&rl) != 0;
}

/* The direct rounds (the launcher's telem_agg: it reads no relays file,
 * docs/performance.md says why), then each relay phase; the direct
 * path's samples go to ops[0..2]. */
static void
s_measure(s_job_t *j, ac_t *ac, const char *url, const char *token,
          long agg_pid, fanin_op_t *ops)
{
    fanin_feed_t *feed = fanin_feed_new(j->rundir,
                                        (const char *const *) j->names, j->n);
    int phases = 1 + j->nrelays, r = 0;
    int64_t t0 = telem_now_ns()
                 - (int64_t) (phases * (S_WARM + j->rounds) + 2) * 1000000000;
    s_path_t direct;
    s_path_init(&direct, "", ac, url, agg_pid,
                (size_t) (phases * (S_WARM + j->rounds)));
    s_path_t *one[1] = { &direct };
    s_rounds(j, feed, t0, &r, one, 1, token);
    for (int i = 0; i < j->nrelays; i++)
        s_relay_phase(j, feed, t0, &r, &direct, token, j->relays[i]);
    printf("slowgpu events over %d rounds (node %s device 3 is 20 %% slow): "
           "%zu\n", r, j->names[j->n / 2], direct.events);
    for (int i = 0; i < 3; i++) {
        const char *name = ops[i].name;    /* direct's names die here */
        fanin_op_free(&ops[i]);
        ops[i] = direct.ops[i];
        ops[i].name = name;
    }
    watch_destroy(&direct.watch);
    fanin_feed_destroy(&feed);
}

/* K restarts, each excluding the last active node. */
static void
s_restarts(s_job_t *j, fanin_op_t *ops)
{
    void *zctx = zmq_ctx_new();
    for (int k = 1; k <= j->restarts; k++) {
        const char *victim = j->names[j->n - (size_t) k];
        int64_t c0 = fanin_proc_cpu_ns((long) j->launcher);
        int64_t m0 = s_machine_busy_ns();
        int64_t t_req = telem_now_ns();
        s_request(j, zctx, victim);
        int64_t hi = s_wait_run(j, k, j->n - (size_t) k);
        int64_t c1 = fanin_proc_cpu_ns((long) j->launcher);
        int64_t m1 = s_machine_busy_ns();
        double split[3];
        int64_t own = s_restart_line(j, k, split);
        char st[32];
        s_job_state(j, victim, st, sizeof st);
        int out = strcmp(st, "active") != 0;
        /* Every node's share of a restart runs on this machine's cores:
           their busy time over the core count is the least wall time the
           restart could take here, whatever the launcher did. */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        double busy_ms = (double) (m1 - m0) / 1e6;
        printf("restart %d excluding %s: launcher %.2f ms (stop %.0f, "
               "re-form %.0f, start %.0f; its CPU %.1f ms), request -> "
               "running on %zu nodes %.2f ms; machine busy %.0f CPU-ms "
               "(floor on %ld cores %.0f ms); %s is %s\n", k, victim,
               (double) own / 1e6, split[0], split[1], split[2],
               (double) (c1 - c0) / 1e6, j->n - (size_t) k,
               (double) (hi - t_req) / 1e6, busy_ms, ncpu,
               ncpu > 0 ? busy_ms / (double) ncpu : 0.0, victim, st);
        printf("RESTART\t%zu\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t"
               "%.1f\t%ld\n", j->n, k, (double) own / 1e6, split[0],
               split[1], split[2], (double) (c1 - c0) / 1e6,
               (double) (hi - t_req) / 1e6, busy_ms, ncpu);
        fanin_op_add(&ops[3], own, c1 - c0);
        fanin_op_add(&ops[4], hi - t_req, 0);
        ops[3].bad += !out;
    }
    zmq_ctx_term(zctx);
}

static void
s_stop(s_job_t *j)
{
    kill(j->launcher, SIGTERM);
    int status;
    while (waitpid(j->launcher, &status, 0) < 0 && errno == EINTR)
        ;
    close(j->pidfd);
}

int
main(int argc, char **argv)
{
    s_job_t j;
    s_args(argc, argv, &j);
    if (mkdir(j.rundir, 0700) != 0)
        bench_die("bench_fanin", "mkdir %s: %s", j.rundir, strerror(errno));
    snprintf(j.rb, sizeof j.rb, "%s/rb", j.rundir);
    j.ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (mkdir(j.rb, 0700) != 0 || j.ifd < 0
        || inotify_add_watch(j.ifd, j.rb, IN_MOVED_TO) < 0)
        bench_die("bench_fanin", "%s: %s", j.rb, strerror(errno));
    bench_print_machine("bench_fanin");
    fanin_op_t ops[6];
    const char *names[] = { "query", "watch", "agg", "restart", "rst-all",
                            "startup" };
    for (int i = 0; i < 6; i++)
        fanin_op_init(&ops[i], names[i], (size_t) j.rounds + 8);
    int64_t m0 = s_machine_busy_ns();
    int64_t t_exec = telem_now_ns();
    s_spawn_launcher(&j);
    int64_t hi = s_wait_run(&j, 0, j.n);
    int64_t m1 = s_machine_busy_ns();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    fanin_op_add(&ops[5], hi - t_exec, 0);
    printf("%zu nodes: job started in %.1f ms (launcher exec -> program "
           "running on every node); machine busy %.0f CPU-ms (floor on %ld "
           "cores %.0f ms)\n", j.n, (double) (hi - t_exec) / 1e6,
           (double) (m1 - m0) / 1e6, ncpu,
           ncpu > 0 ? (double) (m1 - m0) / 1e6 / (double) ncpu : 0.0);
    char path[PATH_MAX + 64], url[512], token[256];
    snprintf(path, sizeof path, "%s/telem_agg/url", j.rundir);
    s_wait_file(&j, path, url, sizeof url);
    snprintf(path, sizeof path, "%s/keys/agg.token", j.rundir);
    s_wait_file(&j, path, token, sizeof token);
    long agg_pid = s_agg_pid(&j);
    if (agg_pid <= 0)
        bench_die("bench_fanin", "no telem_agg process of %s", j.rundir);
    s_idle_cost(&j);
    snprintf(path, sizeof path, "%s/keys", j.rundir);
    setenv("TELEM_KEYS", path, 1);
    setenv("TELEM_RELAYS", "", 1);       /* this client: direct */
    snprintf(path, sizeof path, "%s/nodes", j.rundir);
    int err = 0;
    ac_t *ac = ac_connect(path, 10000, &err);
    if (!ac || ac_node_count(ac) != j.n)
        bench_die("ac_connect", "%s: %s", path, telem_strerror(err));
    for (size_t k = 0; k < j.n && j.n <= 16; k++)  /* for the test */
        printf("%s%s=%s%s", k ? " " : "endpoints: ", ac_node_name(ac, k),
               ac_node_endpoint(ac, k), k + 1 == j.n ? "\n" : "");
    s_measure(&j, ac, url, token, agg_pid, ops);
    ac_close(&ac);
    s_restarts(&j, ops);
    int bad = j.bad;
    s_stop(&j);
    printf("%zu nodes; times in ms; CPU: of the process that fans out "
           "(query, watch: this one; agg: telem_agg; restart: the launcher)"
           "\n  %-8s %9s %9s %10s %5s %5s\n", j.n, "op", "p50", "p99",
           "CPU/op", "n", "bad");
    const char *notes[] = { "ac_query, newest point of 10 series a node",
        "watch_tick, slowgpu, 8 devices a node", "POST /api/query "
        "sum:1m-avg, last hour", "launcher's stop + re-form + start",
        "request -> program running on every node", "exec -> program "
        "running on every node" };
    for (int i = 0; i < 6; i++) {
        s_report(j.n, &ops[i], notes[i]);
        bad += j.check && ops[i].bad > 0;
        fanin_op_free(&ops[i]);
    }
    close(j.ifd);
    free(j.names);
    free(j.names_buf);
    return bad ? 1 : 0;
}
