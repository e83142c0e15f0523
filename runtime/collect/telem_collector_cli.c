/* telem_collector_cli.c - the collector program: flags, signals, device
 * listing, finalize.
 *
 * Shared by the telem_collector binary and by user programs that carry
 * their own test function (cg_collector_main() in runtime/collect/cg.h), so both
 * accept exactly the same flags.  Signals are blocked before telem's
 * sender thread starts and read through a signalfd, which is the
 * collector's stop descriptor: a SIGTERM ends the wait for the next round
 * at once, then telem_finalize() waits for telemd's acknowledgement so the
 * last rounds are not lost at exit.
 */
#include "telem_collector.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "telem.h"
#include "telem_backend.h"
#include "telem_cli.h"
#include "telem_error.h"
#include "telem_signals.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_time.h"

static const char s_usage[] =
"Usage: telem_collector [OPTIONS]\n"
"       telem_collector --list-devices [--backend B] [--json]\n"
"One collector: times a fixed test on one device in rounds and pushes one\n"
"sample per round into the node's telemd.  Usually started by\n"
"telem_collect (or the cg_* API), one per device per node.\n"
"\n"
"Options:\n"
"  -n, --node NAME       node whose telemd receives the samples (default:\n"
"                        $TELEM_NODE, $SLURMD_NODENAME or the host name)\n"
"  -r, --rundir DIR      run directory (default: $TELEM_RUNDIR, ...)\n"
"  -b, --backend B       cpu (default) or cuda\n"
"  -k, --kernel K        built-in kernel (cpu: dgemm; cuda: fma)\n"
"  -d, --device I        device index on the node, the tag gpu (default 0)\n"
"      --per-node        a per-node test: no device, no gpu tag\n"
"      --pin J           this machine's device to run on (default: I)\n"
"  -p, --period S        round period in seconds (default 1)\n"
"  -R, --reps N          repetitions per round, 1-1000 (default 5)\n"
"      --spread          spread the repetitions evenly over the round\n"
"                        (repetition j at its start + j*period/reps)\n"
"                        instead of back to back; then --phase must be\n"
"                        below period/reps\n"
"  -e, --epoch NS        realtime ns of round 0 (default: now rounded up\n"
"                        to the period)\n"
"      --phase NS        run rounds NS after their scheduled time\n"
"                        (0 <= NS < period; timestamps are unchanged)\n"
"  -g, --group NAME      group tag (default: cg)\n"
"      --rounds N        stop after N rounds (default: run until a signal)\n"
"  -L, --list-devices    list this machine's devices and exit\n"
"  -j, --json            with --list-devices: JSON\n"
"  -l, --log-level LVL   error, warn, info (default) or debug\n"
"  -h, --help            show this help\n"
"\n"
"Each round k runs at epoch + k*period (+ phase) and pushes\n"
"cg_<kernel>_seconds (median of the repetitions, seconds, higher = slower)\n"
"and cg_<kernel>_seconds_spread (their MAD), stamped epoch + k*period,\n"
"tagged gpu, backend and group.  $TELEM_CPU_DEVICES restricts the cpu\n"
"devices (e.g. 2,3); $TELEM_CUDA_LIBRARY names another libcuda.\n"
"Stops on SIGTERM, SIGINT or SIGHUP after an acknowledged flush.\n"
"Exit status: 0 after a clean stop, 1 on a run-time error, 2 on bad\n"
"usage, 3 when the backend is not present on this machine.\n";

typedef struct {
    telem_collector_config_t cfg;
    const char *prog;
    const char *node;
    int list, json;
    telem_log_level_t loglevel;
} s_args_t;

static int
s_bad(const s_args_t *a, const char *flag, const char *value, const char *why)
{
    return telem_cli_bad(a->prog, flag, value, why);
}

/* The schedule's flags. */
static int
s_schedule_option(s_args_t *a, int c, const char *v)
{
    telem_collector_config_t *cfg = &a->cfg;
    int64_t i;
    switch (c) {
    case 'p':
        if (telem_cli_seconds(v, 0.001, 86400, &cfg->period_ns))
            return s_bad(a, "--period", v, "seconds, from 0.001 to 86400");
        return 0;
    case 'R':
        if (telem_cli_int64(v, 1, 1000, &i))
            return s_bad(a, "--reps", v, "an integer from 1 to 1000");
        cfg->reps = (int) i;
        return 0;
    case 'e':
        if (telem_cli_int64(v, 0, INT64_MAX, &cfg->epoch_ns))
            return s_bad(a, "--epoch", v, "realtime nanoseconds, >= 0");
        return 0;
    case 'H':
        if (telem_cli_int64(v, 0, 86400 * TELEM_NS_PER_SEC, &cfg->phase_ns))
            return s_bad(a, "--phase", v, "nanoseconds, >= 0");
        return 0;
    case 'S':
        cfg->spread = 1;
        return 0;
    case 'N':
        if (telem_cli_int64(v, 1, INT64_C(1000000000000000), &i))
            return s_bad(a, "--rounds", v, "a positive integer");
        cfg->rounds = (uint64_t) i;
        return 0;
    default:
        return 2;
    }
}

static int
s_option(s_args_t *a, int c, const char *v)
{
    telem_collector_config_t *cfg = &a->cfg;
    int64_t i;
    switch (c) {
    case 'n':
        if (!telem_node_valid(v))
            return s_bad(a, "--node", v, "1-255 bytes, no '/', tab or "
                         "newline");
        a->node = v;
        return 0;
    case 'r': {
        char dir[TELEM_PATH_MAX];
        return telem_rundir_resolve(dir, sizeof dir, v)
               || setenv("TELEM_RUNDIR", dir, 1) ? 1 : 0;
    }
    case 'b':
        if (!telem_backend_find(v))
            return s_bad(a, "--backend", v, "cpu or cuda");
        cfg->backend = v;
        return 0;
    case 'k': cfg->kernel = v; return 0;
    case 'd':
    case 'J':
        if (telem_cli_int64(v, 0, 65535, &i))
            return s_bad(a, c == 'd' ? "--device" : "--pin", v,
                         "an integer from 0 to 65535");
        *(c == 'd' ? &cfg->device : &cfg->pin) = (int) i;
        return 0;
    case 'P': cfg->device = -1; return 0;
    case 'g':
        if (!*v || strlen(v) > 255)
            return s_bad(a, "--group", v, "1-255 bytes");
        cfg->group = v;
        return 0;
    case 'L': a->list = 1; return 0;
    case 'j': a->json = 1; return 0;
    case 'l': return telem_cli_log_level(a->prog, v, &a->loglevel);
    default: return s_schedule_option(a, c, v);
    }
}

/* One flag for telem_cli_parse(); s_option's 1 means an unusable run
   directory. */
static int
s_flag(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    int rc = s_option(a, c, v);
    return rc == 1 ? s_bad(a, "--rundir", v, "unusable") : rc;
}

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int
s_parse(s_args_t *a, int argc, char **argv)
{
    static const struct option opts[] = {
        { "node", 1, 0, 'n' }, { "rundir", 1, 0, 'r' },
        { "backend", 1, 0, 'b' }, { "kernel", 1, 0, 'k' },
        { "device", 1, 0, 'd' }, { "per-node", 0, 0, 'P' },
        { "pin", 1, 0, 'J' }, { "period", 1, 0, 'p' }, { "reps", 1, 0, 'R' },
        { "epoch", 1, 0, 'e' }, { "phase", 1, 0, 'H' },
        { "spread", 0, 0, 'S' },
        { "group", 1, 0, 'g' }, { "rounds", 1, 0, 'N' },
        { "list-devices", 0, 0, 'L' }, { "json", 0, 0, 'j' },
        { "log-level", 1, 0, 'l' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
    };
    int rc = telem_cli_parse(a->prog, s_usage, argc, argv,
                             "n:r:b:k:d:p:R:e:g:Ljl:h", opts, s_flag, a);
    if (rc)
        return rc;
    if (a->cfg.phase_ns >= a->cfg.period_ns)
        return telem_cli_error(a->prog, "--phase must be below the period");
    if (a->cfg.spread && a->cfg.phase_ns >= a->cfg.period_ns / a->cfg.reps)
        return telem_cli_error(a->prog, "with --spread, --phase must be "
                               "below period/reps");
    return 0;
}

/* ---- --list-devices ---------------------------------------------------- */

static void
s_list_text(const telem_backend_t *b)
{
    for (size_t i = 0; i < telem_backend_ndevices(b); i++) {
        const telem_backend_device_t *d = telem_backend_device(b, i);
        printf("%s\t%zu\t%s\t%s%s%s\n", telem_backend_name(b), i, d->id,
               d->name, *d->bus ? "\t" : "", d->bus);
    }
}

static json_t *
s_list_json(const telem_backend_t *b)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < telem_backend_ndevices(b); i++) {
        const telem_backend_device_t *d = telem_backend_device(b, i);
        json_array_append_new(arr, json_pack("{s:I,s:s,s:s,s:s}", "index",
                                             (json_int_t) i, "id", d->id,
                                             "name", d->name, "bus", d->bus));
    }
    return json_pack("{s:s,s:o*}", "backend", telem_backend_name(b),
                     "devices", arr);
}

/* Lists one backend's devices; returns 1 if it was present. */
static int
s_list_one(const s_args_t *a, const telem_backend_vt_t *vt, json_t *out)
{
    char why[256];
    int err;
    telem_backend_t *b = telem_backend_open(vt->name, why, sizeof why, &err);
    if (!b) {
        telem_log(TELEM_LOG_INFO, "backend %s skipped: %s", vt->name, why);
        if (a->json)
            json_array_append_new(json_object_get(out, "unavailable"),
                                  json_pack("{s:s,s:s}", "backend", vt->name,
                                            "why", why));
        return 0;
    }
    if (a->json)
        json_array_append_new(json_object_get(out, "backends"),
                              s_list_json(b));
    else
        s_list_text(b);
    telem_backend_close(&b);
    return 1;
}

static int
s_list(const s_args_t *a)
{
    json_t *out = json_pack("{s:[],s:[]}", "backends", "unavailable");
    int found = 0;
    if (!out)
        return 1;
    if (!a->json)
        printf("BACKEND\tDEVICE\tID\tNAME\tBUS\n");
    const telem_backend_vt_t *vt;
    for (size_t i = 0; (vt = telem_backend_at(i)) != NULL; i++)
        if (!a->cfg.backend || strcmp(vt->name, a->cfg.backend) == 0)
            found += s_list_one(a, vt, out);
    if (a->json) {
        char *s = json_dumps(out, JSON_COMPACT);
        if (s)
            puts(s);
        free(s);
    }
    json_decref(out);
    fflush(stdout);
    return found ? 0 : 3;
}

/* ---- running ----------------------------------------------------------- */

static void
s_announce(const s_args_t *a)
{
    const telem_collector_config_t *c = &a->cfg;
    char node[TELEM_NAME_MAX + 1];
    if (telem_node_default(node, sizeof node))
        snprintf(node, sizeof node, "?");
    telem_log(TELEM_LOG_INFO, "node %s device %d pin %d backend %s test %s "
              "group %s period %.3f s reps %d%s epoch %lld phase %.1f ms",
              node, c->device, c->pin >= 0 ? c->pin : c->device,
              c->backend ? c->backend : "cpu",
              c->fn ? c->metric : c->kernel ? c->kernel : "(default)",
              c->group, c->period_ns / 1e9, c->reps,
              c->spread ? " (spread)" : "", (long long) c->epoch_ns,
              c->phase_ns / 1e6);
}

static int
s_run(s_args_t *a)
{
    char why[256];
    telem_collector_stats_t st;
    int fd = telem_signals_open_stop(1);
    if (fd < 0) {
        telem_log(TELEM_LOG_ERROR, "signalfd: %s", strerror(errno));
        return 1;
    }
    a->cfg.stop_fd = fd;
    s_announce(a);
    int rc = telem_collector_run(&a->cfg, &st, why, sizeof why);
    int frc = telem_finalize();
    close(fd);
    if (rc) {
        telem_log(rc == TELEM_EUNSUPPORTED ? TELEM_LOG_WARN : TELEM_LOG_ERROR,
                  "%s%s", rc == TELEM_EUNSUPPORTED ? "backend skipped: " : "",
                  why);
        if (rc == TELEM_EUNSUPPORTED)
            return 3;
        return rc == TELEM_EINVAL || rc == TELEM_ENOTFOUND ? 2 : 1;
    }
    telem_log(TELEM_LOG_INFO, "stopped after %llu rounds (%llu skipped, "
              "%llu failed, %llu samples refused); flush: %s",
              (unsigned long long) st.rounds, (unsigned long long) st.skipped,
              (unsigned long long) st.failed, (unsigned long long) st.refused,
              frc ? telem_strerror(frc) : "confirmed");
    return 0;
}

int
telem_collector_main(int argc, char **argv, const char *metric,
                     telem_collector_test_fn fn, void *arg)
{
    s_args_t a = { .prog = "telem_collector", .loglevel = TELEM_LOG_INFO };
    a.cfg = (telem_collector_config_t) {
        .metric = metric, .fn = fn, .fn_arg = arg, .device = 0, .pin = -1,
        .period_ns = TELEM_NS_PER_SEC, .reps = 5, .group = "cg",
        .stop_fd = -1,
    };
    if (argc > 1 && strcmp(argv[1], TELEM_COLLECTOR_FLAG) == 0) {
        argv[1] = argv[0];
        argc--, argv++;
    }
    if (fn)
        a.prog = argv[0];
    int rc = s_parse(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    telem_log_init(a.prog, a.loglevel);
    if (a.list)
        return s_list(&a);
    if (a.node) {
        setenv("TELEM_NODE", a.node, 1);
        unsetenv("TELEM_INGEST");
        unsetenv("TELEM_CTL");
    }
    return s_run(&a);
}
