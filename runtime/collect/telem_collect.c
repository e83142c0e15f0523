/* telem_collect.c - start a collector group across the job's nodes, run it
 * until SIGINT/SIGTERM, stop it cleanly.
 *
 * A thin command line over cg.h.  The only loop is cg_wait() on the
 * group's pidfds plus a signalfd, so a stop signal and a collector that
 * dies are both noticed at once.  The device map is printed before
 * "ready" so people and scripts (the integration tests, telem_load) can
 * tell which core or GPU every node's device i runs on.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cg.h"
#include "telem_backend.h"
#include "telem_cli.h"
#include "telem_error.h"
#include "telem_signals.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_time.h"

static const char s_usage[] =
"Usage: telem_collect [OPTIONS]\n"
"Starts one collector per device on every node of the node file, each\n"
"pinned to its device and timing a fixed test in rounds into its node's\n"
"telemd; runs until SIGINT or SIGTERM, then stops them all cleanly.\n"
"\n"
"Options:\n"
"  -b, --backend LIST     cpu (default), cuda, or a comma list tried in\n"
"                         order, e.g. cuda,cpu: the first present wins\n"
"  -k, --kernel K         built-in kernel (cpu: dgemm; cuda: fma)\n"
"  -d, --devices LIST     device indices per node, e.g. 0 or 0,2-3\n"
"                         (default: every device of the backend)\n"
"  -p, --period S         round period in seconds (default 1)\n"
"  -R, --reps N           repetitions per round, 1-1000 (default 5)\n"
"      --spread           spread each collector's repetitions evenly over\n"
"                         the round instead of running them back to back\n"
"  -D, --local-devices L  with local spawn: this machine's devices the\n"
"                         virtual nodes' devices are mapped onto, e.g. 1\n"
"                         (every virtual device takes turns on core 1, so\n"
"                         all are compared on the same hardware; default:\n"
"                         every device)\n"
"      --per-node         one collector per node instead of per device\n"
"  -g, --name NAME        group name, the tag group (default cg)\n"
"  -N, --nodefile FILE    the job's nodes (default: $TELEM_NODEFILE or\n"
"                         RUNDIR/nodes)\n"
"  -s, --spawn TEMPLATE   command that starts a collector on a remote\n"
"                         node, e.g. 'ssh {node}' (default: spawn here,\n"
"                         as virtual nodes)\n"
"  -n, --node NAME        only NAME's collectors, run here on this\n"
"                         machine's devices (device i on device i, phase\n"
"                         0; with --local-devices, the map all the nodes\n"
"                         would get from one local group): one\n"
"                         telem_collect per node, as telem_launch runs it\n"
"                         under Slurm; not with --spawn\n"
"      --collector PATH   collector program (default: telem_collector\n"
"                         beside this program, else on PATH); it decides\n"
"                         which kernels it runs: --kernel may then name\n"
"                         one the backend lacks (metric cg_<K>_seconds)\n"
"      --collector-arg ARG  a word put right after the collector program,\n"
"                         before its options; repeatable (at most 16, each\n"
"                         1-4096 bytes, no control characters); needs\n"
"                         --collector.  A Python collector (docs/python.md):\n"
"                         --collector /usr/bin/python3 --collector-arg\n"
"                         SCRIPT --collector-arg --telem-collector\n"
"                         --kernel NAME\n"
"  -t, --stop-timeout S   wait this long for collectors to stop before\n"
"                         killing them (default 5)\n"
"  -l, --log-level LVL    error, warn, info (default) or debug\n"
"  -h, --help             show this help\n"
"\n"
"With local spawn, device i of the k-th node runs on this machine's\n"
"device (i + k*ndev) mod nmachine; collectors sharing a device run at\n"
"different phases of the period.  The map is printed at start, one\n"
"'node NODE device I -> BACKEND device J (id ID) phase MS ms pid PID'\n"
"line per collector, then 'ready'.\n"
"Samples: cg_<kernel>_seconds and cg_<kernel>_seconds_spread, tags gpu,\n"
"backend, group, host, pid; see docs/collectors.md.\n"
"Exit status: 0 after a clean stop (every collector exited 0), 1 on a\n"
"start-up error, when every collector died for good (a dead collector\n"
"is started again after 1 s, doubling per death up to 30 s) or when one\n"
"did not end cleanly, 2 on bad usage, 3 when no listed backend is present.\n";

typedef struct {
    char *backends;
    const char *kernel, *devices, *name, *nodefile, *spawn, *collector;
    const char *only;
    const char *local;
    const char *cargs[CG_COLLECTOR_ARGS_MAX];
    size_t ncargs;
    int64_t period_ns;
    int reps, per_node, spread;
    int stop_ms;
    telem_log_level_t loglevel;
} s_args_t;

#define S_PROG "telem_collect"

static int
s_backends_ok(char *list)
{
    char *copy = strdup(list), *save = NULL, *tok;
    int ok = copy != NULL && *list;
    for (tok = copy ? strtok_r(copy, ",", &save) : NULL; ok && tok;
         tok = strtok_r(NULL, ",", &save))
        ok = telem_backend_find(tok) != NULL;
    free(copy);
    return ok;
}

static int
s_has_control(const char *v)
{
    for (const unsigned char *p = (const unsigned char *) v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    long tmp[64];
    size_t n;
    double d;
    int64_t i;
    switch (c) {
    case 'b':
        if (!s_backends_ok(v))
            return telem_cli_bad(S_PROG, "--backend", v,
                                 "cpu, cuda or a comma list");
        a->backends = v;
        return 0;
    case 'k': a->kernel = v; return 0;
    case 'd':
        if (telem_backend_device_list_parse(v, 65535, tmp, 64, &n))
            return telem_cli_bad(S_PROG, "--devices", v,
                                 "indices such as 0 or 0,2-3");
        a->devices = v;
        return 0;
    case 'p':
        if (telem_cli_seconds(v, 0.001, 86400, &a->period_ns))
            return telem_cli_bad(S_PROG, "--period", v,
                                 "seconds, from 0.001 to 86400");
        return 0;
    case 'R':
        if (telem_cli_int64(v, 1, 1000, &i))
            return telem_cli_bad(S_PROG, "--reps", v,
                                 "an integer from 1 to 1000");
        a->reps = (int) i;
        return 0;
    case 'P': a->per_node = 1; return 0;
    case 'g':
        if (!*v || strlen(v) > 255)
            return telem_cli_bad(S_PROG, "--name", v, "1-255 bytes");
        a->name = v;
        return 0;
    case 'N': a->nodefile = v; return 0;
    case 'S': a->spread = 1; return 0;
    case 'D':
        if (telem_backend_device_list_parse(v, 65535, tmp, 64, &n))
            return telem_cli_bad(S_PROG, "--local-devices", v,
                                 "indices such as 1 or 0,2-3");
        a->local = v;
        return 0;
    case 's': a->spawn = v; return 0;
    case 'n':
        if (!telem_node_valid(v))
            return telem_cli_bad(S_PROG, "--node", v, "a node name");
        a->only = v;
        return 0;
    case 'C': a->collector = v; return 0;
    case 'A':
        if (a->ncargs == CG_COLLECTOR_ARGS_MAX)
            return telem_cli_bad(S_PROG, "--collector-arg", v,
                                 "at most 16 of them");
        if (!*v || strlen(v) > CG_COLLECTOR_ARG_MAX || s_has_control(v))
            return telem_cli_bad(S_PROG, "--collector-arg", v,
                                 "1-4096 bytes, no control characters");
        a->cargs[a->ncargs++] = v;
        return 0;
    case 't':
        if (telem_cli_number(v, 0.001, 3600, &d))
            return telem_cli_bad(S_PROG, "--stop-timeout", v,
                                 "seconds, up to 3600");
        a->stop_ms = (int) ceil(d * 1000);
        return 0;
    default:
        return 2;
    }
}

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int
s_parse(s_args_t *a, int argc, char **argv)
{
    static const struct option opts[] = {
        { "backend", 1, 0, 'b' }, { "kernel", 1, 0, 'k' },
        { "devices", 1, 0, 'd' }, { "period", 1, 0, 'p' },
        { "reps", 1, 0, 'R' }, { "per-node", 0, 0, 'P' },
        { "name", 1, 0, 'g' }, { "nodefile", 1, 0, 'N' },
        { "spawn", 1, 0, 's' }, { "collector", 1, 0, 'C' },
        { "stop-timeout", 1, 0, 't' }, { "log-level", 1, 0, 'l' },
        { "spread", 0, 0, 'S' }, { "local-devices", 1, 0, 'D' },
        { "node", 1, 0, 'n' }, { "collector-arg", 1, 0, 'A' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
    };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage,
        .shortopts = "b:k:d:p:R:g:N:s:t:D:l:n:h", .longopts = opts,
        .option = s_option, .log_level = &a->loglevel,
    };
    return telem_cli_parse_spec(&spec, argc, argv, a);
}

static int
s_configure(cg_t *g, const s_args_t *a, const char *backend)
{
    int rc = cg_set_backend(g, backend);
    if (!rc && a->kernel)
        rc = cg_set_kernel(g, a->kernel);
    if (!rc)
        rc = cg_set_devices(g, a->devices);
    if (!rc)
        rc = cg_set_period(g, a->period_ns);
    if (!rc)
        rc = cg_set_reps(g, a->reps);
    if (!rc)
        rc = cg_set_spread(g, a->spread);
    if (!rc)
        rc = cg_set_local_devices(g, a->local);
    if (!rc)
        rc = cg_set_per_node(g, a->per_node);
    if (!rc)
        rc = cg_set_nodefile(g, a->nodefile);
    if (!rc)
        rc = cg_set_spawn(g, a->spawn);
    if (!rc)
        rc = cg_set_only(g, a->only);
    if (!rc && a->collector)
        rc = cg_set_collector(g, a->collector);
    for (size_t i = 0; !rc && i < a->ncargs; i++)
        rc = cg_add_collector_arg(g, a->cargs[i]);
    return rc;
}

/* Starts the group on the first present backend of the list.  Returns
 * the group, or NULL with *status the exit status. */
static cg_t *
s_start(const s_args_t *a, int *status)
{
    char *list = strdup(a->backends), *save = NULL, why[512] = "";
    *status = 3;
    for (char *b = list ? strtok_r(list, ",", &save) : NULL; b;
         b = strtok_r(NULL, ",", &save)) {
        int rc;
        cg_t *g = cg_new(a->name, &rc);
        if (g)
            rc = s_configure(g, a, b);
        if (rc == 0 && (rc = cg_start(g, why, sizeof why)) == 0) {
            free(list);
            return g;
        }
        cg_destroy(&g);
        if (rc == TELEM_EUNSUPPORTED) {
            telem_log(TELEM_LOG_WARN, "backend %s skipped: %s", b, why);
            continue;
        }
        fprintf(stderr, "telem_collect: cannot start the group: %s\n",
                *why ? why : telem_strerror(rc));
        *status = rc == TELEM_EINVAL || rc == TELEM_ENOTFOUND ? 2 : 1;
        break;
    }
    if (*status == 3)
        fprintf(stderr, "telem_collect: no backend of '%s' is present here\n",
                a->backends);
    free(list);
    return NULL;
}

static void
s_print_map(const cg_t *g)
{
    cg_info_t in;
    printf("group %s backend %s metric %s period %.3f s epoch %lld\n",
           cg_name(g), cg_backend(g), cg_metric(g), cg_period(g) / 1e9,
           (long long) cg_epoch(g));
    for (size_t i = 0; cg_info(g, i, &in) == 0; i++) {
        char dev[16] = "-";
        if (in.device >= 0)
            snprintf(dev, sizeof dev, "%d", in.device);
        printf("node %s device %s", in.node, dev);
        if (in.pin >= 0)
            printf(" -> %s device %d (id %s) phase %.1f ms", cg_backend(g),
                   in.pin, in.pin_id, in.phase_ns / 1e6);
        else
            printf(" -> spawned");
        printf(" pid %ld\n", (long) in.pid);
    }
    printf("ready\n");
    fflush(stdout);
}

/* Collectors that did not exit 0 (logs each one). */
static size_t
s_unclean(const cg_t *g)
{
    cg_info_t in;
    size_t n = 0;
    for (size_t i = 0; cg_info(g, i, &in) == 0; i++) {
        if (in.state == CG_EXITED && in.signal == 0 && in.exit_code == 0)
            continue;
        n++;
        telem_log(TELEM_LOG_WARN, "collector of node %s device %d (pid %ld) "
                  "did not end cleanly: %s %d", in.node, in.device,
                  (long) in.pid, in.state != CG_EXITED ? "still running"
                  : in.signal ? "signal" : "exit status",
                  in.signal ? in.signal : in.exit_code);
    }
    return n;
}

/* A collector that dies is started again after a back-off: 1 s, doubling
 * per death of that collector, at most S_BACKOFF_MAX_NS; one that says its
 * backend is not there (exit 3) is not. */
#define S_BACKOFF_MAX_NS (30 * TELEM_NS_PER_SEC)

typedef struct {
    unsigned char reported;
    int deaths;
    int64_t due_ns;             /* restart time; 0: none pending */
} s_slot_t;

/* Logs the collectors that exited since the last call and schedules
 * their restarts. */
static void
s_on_exits(const cg_t *g, s_slot_t *slot)
{
    cg_info_t in;
    for (size_t i = 0; cg_info(g, i, &in) == 0; i++) {
        if (in.state != CG_EXITED || slot[i].reported)
            continue;
        slot[i].reported = 1;
        telem_log(TELEM_LOG_WARN, "collector of node %s device %d (pid %ld) "
                  "ended: %s %d%s", in.node, in.device, (long) in.pid,
                  in.signal ? "signal" : "exit status",
                  in.signal ? in.signal : in.exit_code,
                  in.exit_code == 3 ? " (backend not present there)" : "");
        if (in.exit_code == 3)
            continue;
        int shift = slot[i].deaths < 5 ? slot[i].deaths : 5;
        int64_t wait = TELEM_NS_PER_SEC << shift;
        wait = wait < S_BACKOFF_MAX_NS ? wait : S_BACKOFF_MAX_NS;
        slot[i].deaths++;
        slot[i].due_ns = telem_mono_ns() + wait;
        telem_log(TELEM_LOG_WARN, "collector of node %s device %d starts "
                  "again in %.0f s (death %d)", in.node, in.device,
                  (double) wait / 1e9, slot[i].deaths);
    }
}

/* Restarts the collectors whose back-off is over; returns the ms until
 * the next one is due (-1: none). */
static int
s_restart_due(cg_t *g, s_slot_t *slot)
{
    int64_t now = telem_mono_ns(), next = -1;
    cg_info_t in;
    for (size_t i = 0; cg_info(g, i, &in) == 0; i++) {
        if (!slot[i].due_ns)
            continue;
        if (slot[i].due_ns > now) {
            int64_t left = slot[i].due_ns - now;
            next = next < 0 || left < next ? left : next;
            continue;
        }
        char why[256];
        slot[i].due_ns = 0;
        slot[i].reported = 0;
        if (cg_restart(g, i, why, sizeof why) == 0 && cg_info(g, i, &in) == 0)
            telem_log(TELEM_LOG_WARN, "collector of node %s device %d "
                      "started again (pid %ld)", in.node, in.device,
                      (long) in.pid);
        else
            telem_log(TELEM_LOG_ERROR, "collector of node %s device %d not "
                      "started again: %s", in.node, in.device, why);
    }
    return next < 0 ? -1 : (int) (next / TELEM_NS_PER_MS) + 1;
}

static int
s_pending(const s_slot_t *slot, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (slot[i].due_ns)
            return 1;
    return 0;
}

/* Runs until a stop signal (returns 0) or every collector died for good
 * (1). */
static int
s_watch(cg_t *g, int sfd)
{
    size_t n = cg_count(g);
    s_slot_t *slot = calloc(n + 1, sizeof *slot);
    int rc = 1, timeout = -1;
    while (slot) {
        struct signalfd_siginfo si;
        cg_wait(g, timeout, sfd);
        if (read(sfd, &si, sizeof si) == (ssize_t) sizeof si) {
            telem_log(TELEM_LOG_INFO, "signal %u: stopping the group",
                      si.ssi_signo);
            rc = 0;
            break;
        }
        s_on_exits(g, slot);
        timeout = s_restart_due(g, slot);
        if (cg_running(g) == 0 && !s_pending(slot, n)) {
            telem_log(TELEM_LOG_ERROR, "every collector has ended");
            break;
        }
        if (cg_running(g) == 0 && timeout > 0) {
            /* None running: wait for the next restart or a signal. */
            struct pollfd p = { .fd = sfd, .events = POLLIN };
            poll(&p, 1, timeout);
        }
    }
    free(slot);
    return rc;
}

int
main(int argc, char **argv)
{
    char backends[] = "cpu";
    s_args_t a = { .backends = backends, .name = "cg",
                   .period_ns = TELEM_NS_PER_SEC, .reps = 5,
                   .stop_ms = CG_STOP_DEFAULT_MS,
                   .loglevel = TELEM_LOG_INFO };
    int rc = s_parse(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (a.ncargs && !a.collector) {
        fprintf(stderr, "telem_collect: --collector-arg needs --collector "
                "(the words go to that program)\n");
        return 2;
    }
    if (a.only && a.spawn) {
        fprintf(stderr, "telem_collect: --node runs one node's collectors "
                "here; it cannot be combined with --spawn\n");
        return 2;
    }
    telem_log_init("telem_collect", a.loglevel);
    int sfd = telem_signals_open_stop(1);
    if (sfd < 0) {
        fprintf(stderr, "telem_collect: signalfd: %s\n", strerror(errno));
        return 1;
    }
    cg_t *g = s_start(&a, &rc);
    if (g) {
        s_print_map(g);
        rc = s_watch(g, sfd);
        int stop = cg_stop(g, a.stop_ms);
        size_t unclean = s_unclean(g);
        telem_log(stop || unclean ? TELEM_LOG_WARN : TELEM_LOG_INFO,
                  "group %s stopped%s; %zu of %zu collectors did not end "
                  "cleanly", cg_name(g), stop ? " (some had to be killed)"
                  : "", unclean, cg_count(g));
        if (rc == 0 && (stop || unclean))
            rc = 1;
        cg_destroy(&g);
    }
    close(sfd);
    return rc;
}
