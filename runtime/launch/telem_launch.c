/* telem_launch.c - the launcher's command line: parse and validate flags,
 * pick the node source, run the job, return its exit code.
 *
 * Everything the job does lives in launch_job.c and its siblings; this
 * file only turns words into a launch_job_config_t, so that every flag is
 * checked in one place with a message that names it.  The words are read
 * by telem_cli's shared loop with a '+' in front of the short options:
 * the first operand is the program, and every word after it is the
 * program's own, even one that looks like a flag of ours.
 */
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_argv.h"
#include "launch_detect.h"
#include "launch_job.h"
#include "telem_cli.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_time.h"

#define S_PROG "telem_launch"
#define S_STR_(x) #x
#define S_STR(x) S_STR_(x)
#define S_DETECTORS_MAX 16

static const char s_usage[] =
"Usage: telem_launch [OPTIONS] [--] PROGRAM [ARGS...]\n"
"Runs PROGRAM once on every active node of a job under telem: starts and\n"
"supervises telemd (and telem_dictd, collectors, telem_watch where asked for\n"
"and built) on every node, and with --resilient restarts the program on the\n"
"remaining and reserve nodes when a node fails.\n"
"\n"
"Nodes:\n"
"  -l, --local N            N virtual nodes n1..nN on this machine (default\n"
"                           outside a Slurm allocation; N defaults to\n"
"                           --nodes plus --idle, else 1)\n"
"      --slurm              the nodes of the Slurm allocation (default when\n"
"                           SLURM_JOB_NODELIST is set); commands run by srun\n"
"  -x, --exec-template T    run commands on a host through template T, e.g.\n"
"                           'ssh {node}' ({node}: the host); needs --hosts\n"
"      --hosts LIST         comma-separated hosts for --exec-template\n"
"  -n, --nodes N            nodes that run the program (default: all but idle)\n"
"  -i, --idle K             reserve nodes (default: allocation minus N)\n"
"\n"
"Resilience:\n"
"  -r, --resilient          restart around a failed node instead of ending\n"
"  -e, --exhaust-resources  with no reserve left, go on with fewer nodes,\n"
"                           down to one\n"
"  -R, --max-restarts R     restart budget (default 10; -1: unlimited)\n"
"      --backoff SECONDS    delay before the 2nd restart, doubling after it,\n"
"                           at most 30 s (default 1; 0: none)\n"
"  -f, --restart-on-failure a program exiting non-zero fails its node\n"
"      --grace SECONDS      stop signal (SIGTERM; SIGINT to srun under Slurm)\n"
"                           to SIGKILL when stopping (default 5)\n"
"      --heartbeat SECONDS  telemd status request period (default 1; 0: off)\n"
"      --heartbeat-timeout SECONDS  deadline of one request (default 1)\n"
"      --heartbeat-misses M misses in a row that fail a node (default 3)\n"
"      --start-timeout SECONDS  for telemd to be ready (default 30)\n"
"\n"
"Node daemons (telemd, telem_dictd, telem_collect, telem_watch, telem_agg):\n"
"      --daemon-failure restart|exclude  a daemon that dies is started again\n"
"                           on its node, the program goes on (restart, the\n"
"                           default); exclude: a dead telemd or telem_dictd\n"
"                           fails its node, nothing is restarted\n"
"      --daemon-backoff SECONDS  delay before the first restart, doubling\n"
"                           per death (default 1)\n"
"      --daemon-backoff-max SECONDS  cap of that delay (default 60)\n"
"      --daemon-restarts N  the Nth death within --daemon-window pauses the\n"
"                           daemon (default 5)\n"
"      --daemon-window SECONDS  counted from the first death (default 300)\n"
"      --daemon-pause SECONDS  pause before it is tried again (default 300)\n"
"\n"
"Telemetry:\n"
"  -L, --telemetry-level L  0-4 (default: $TELEM_LEVEL, else 2)\n"
"  -d, --detector NAME      run telem_watch with this detector on the first\n"
"                           active node (repeatable; needs telem_watch);\n"
"                           each is checked against the data it needs\n"
"                           before the job starts; slowgpu without\n"
"                           --collect starts the collectors it reads\n"
"      --detector-cmd 'CMD ARGS'  run CMD beside telem_watch on the first\n"
"                           active node, started, stopped and supervised as\n"
"                           it is (a Python telem.Detector: '/usr/bin/python3\n"
"                           mydet.py'); split as a shell would; it gets the\n"
"                           watcher's environment plus TELEM_WATCH_PERIOD\n"
"                           and TELEM_WATCH_RESTART (1 with --resilient);\n"
"                           repeatable, 4 at most\n"
"      --watch-period SECONDS  telem_watch's round (its --period) and the\n"
"                           detector commands' TELEM_WATCH_PERIOD\n"
"                           (0.05-3600; default 1)\n"
"      --collect ARGS       run telem_collect ARGS: under Slurm or a\n"
"                           template one per active node (--node NODE, its\n"
"                           own devices); on local nodes one for them all\n"
"      --agg-port N         telem_agg's port on the first active node: the\n"
"                           dashboard and Grafana's OpenTSDB API (default\n"
"                           4242; 0: any free one; at level 1 or more)\n"
"      --agg-bind ADDR      telem_agg's address (default 127.0.0.1)\n"
"      --agg-token-file F   telem_agg's bearer token is the one in F\n"
"                           (default: the job's own, RUNDIR/keys/agg.token)\n"
"      --no-agg             do not start telem_agg\n"
"      --relays auto|off|K  start a telem_relay per group of K active nodes\n"
"                           on the group's first node and write the relays\n"
"                           file beside the node file (auto, the default:\n"
"                           groups of 32 when more than 64 nodes are\n"
"                           active; off: none)\n"
"      --dump DIR           at the end of the job, write its history from\n"
"                           every node to DIR/job-TIME-PID.tdump (for\n"
"                           telem_view and telem_client report --dump)\n"
"      --bind ADDR          telemd's TCP query address (default 127.0.0.1)\n"
"      --metrics-port N     every telemd serves GET /metrics for Prometheus\n"
"                           on port N (0: a free port per node; default:\n"
"                           none, or 0 with --prometheus-config)\n"
"      --metrics-bind ADDR  address of /metrics (default 127.0.0.1)\n"
"      --sys-root DIR       every telemd reads /sys metrics from DIR, a path\n"
"                           on its node, {node}: the node's name (telemd\n"
"                           --sys-root; default /sys)\n"
"      --prometheus-config FILE  write a Prometheus configuration scraping\n"
"                           every node's /metrics to FILE, its targets to\n"
"                           FILE.targets.yml (rewritten as nodes change)\n"
"      --rundir DIR         run directory (default: $TELEM_RUNDIR,\n"
"                           $XDG_RUNTIME_DIR/telem or /tmp/telem-UID)\n"
"      --bindir DIR         where telemd and friends are (default: the\n"
"                           directory of telem_launch)\n"
"      --log-level LVL      error, warn, info (default) or debug\n"
"  -h, --help, -V, --version\n"
"\n"
"The program gets TELEM_LEVEL, TELEM_NODE, TELEM_RANK, TELEM_NNODES,\n"
"TELEM_RESTART_COUNT, TELEM_RESTARTED=1 (after a restart), TELEM_NODEFILE,\n"
"TELEM_RUNDIR, TELEM_LAUNCH_ENDPOINT and TELEM_KEYS.  Every TCP socket of\n"
"the job is CURVE with the job's key pair, made in RUNDIR/keys (mode 0600)\n"
"when the job starts and removed when it ends; only its holders get in\n"
"(docs/security.md).  Every restart prints one line:\n"
"trigger, nodes, why, restart number and the time of each step.\n"
"SIGINT/SIGTERM stop the whole job on every node.\n"
"\n"
"Exit status:\n"
"  0    the program ended 0 on every active node\n"
"  1    the program failed (and is not restarted)\n"
"  2    bad command line\n"
"  3    unrecoverable: a node failed and no restart is possible (not\n"
"       --resilient, or fewer nodes left than needed)\n"
"  4    restart budget spent (--max-restarts), or a second restart with no\n"
"       node to blame (boot-loop brake)\n"
"  5    the job could not start (run directory, daemons)\n"
"  128+S  stopped by signal S (130: SIGINT, 143: SIGTERM)\n";

typedef struct {
    launch_job_config_t job;
    long local;              /* 0: not given */
    int slurm;
    const char *template_;
    const char *hosts;
    const char *detectors[S_DETECTORS_MAX];
    const char *detector_cmds[LAUNCH_DETCMD_MAX];
    char bindir[PATH_MAX];
    telem_log_level_t loglevel;
} s_args_t;

/* Parses all of `s` as a whole number in [lo, hi] (written as an integer
   or as a float with no fraction, "2e3"). */
static int
s_integer(const char *s, double lo, double hi, double *out)
{
    double v;
    if (telem_cli_number(s, lo, hi, &v) || v != floor(v))
        return TELEM_EINVAL;
    *out = v;
    return 0;
}

/* Parses a count into *out, or explains the flag's range. */
static int
s_count(const char *flag, const char *v, double lo, double hi, long *out)
{
    double d;
    if (s_integer(v, lo, hi, &d)) {
        char why[96];
        snprintf(why, sizeof why, "an integer from %.0f to %.0f", lo, hi);
        return telem_cli_bad(S_PROG, flag, v, why);
    }
    *out = (long) d;
    return 0;
}

static int
s_seconds(const char *flag, const char *v, double lo, int64_t *out)
{
    if (telem_cli_seconds(v, lo, 86400.0 * 365, out)) {
        char why[96];
        snprintf(why, sizeof why, "seconds, at least %g", lo);
        return telem_cli_bad(S_PROG, flag, v, why);
    }
    return 0;
}

enum {
    O_SLURM = 256, O_HOSTS, O_BACKOFF, O_GRACE, O_HB, O_HB_TIMEOUT,
    O_HB_MISSES, O_START_TIMEOUT, O_COLLECT, O_BIND, O_AGG_PORT, O_AGG_BIND,
    O_AGG_TOKEN, O_NO_AGG, O_RUNDIR, O_BINDIR, O_LOGLEVEL, O_METRICS_PORT,
    O_METRICS_BIND, O_PROM_CONFIG, O_DAEMON_FAILURE, O_DAEMON_BACKOFF,
    O_DAEMON_BACKOFF_MAX, O_DAEMON_RESTARTS, O_DAEMON_WINDOW, O_DAEMON_PAUSE,
    O_DUMP, O_RELAYS, O_DETECTOR_CMD, O_WATCH_PERIOD, O_SYS_ROOT
};

/* --detector-cmd and --watch-period (launch_job_start.c). */
static int
s_option_detcmd(s_args_t *a, int c, const char *v)
{
    launch_job_config_t *j = &a->job;
    if (c == O_WATCH_PERIOD) {
        double d;
        if (telem_cli_number(v, 0.05, 3600, &d))
            return telem_cli_bad(S_PROG, "--watch-period", v,
                                 "seconds from 0.05 to 3600");
        j->watch_period_ns = (int64_t) llround(d * 1e9);
        return 0;
    }
    if (c != O_DETECTOR_CMD)
        return -1;
    if (j->ndetector_cmds == LAUNCH_DETCMD_MAX)
        return telem_cli_bad(S_PROG, "--detector-cmd", v,
                             "too many detector commands (4 at most)");
    launch_argv_t words = { 0 };
    int rc = launch_argv_split(&words, v, NULL);
    launch_argv_clear(&words);
    if (rc)
        return telem_cli_bad(S_PROG, "--detector-cmd", v, "a command and its "
                             "arguments, split as a shell would (a quote "
                             "left open, a command substitution, or no "
                             "word)");
    a->detector_cmds[j->ndetector_cmds++] = v;
    return 0;
}

/* The --daemon-* flags (launch_job_sup.c). */
static int
s_option_daemons(s_args_t *a, int c, const char *v)
{
    launch_job_config_t *j = &a->job;
    long n = 0;
    int rc;
    switch (c) {
    case O_DAEMON_FAILURE:
        if (strcmp(v, "restart") != 0 && strcmp(v, "exclude") != 0)
            return telem_cli_bad(S_PROG, "--daemon-failure", v,
                                 "restart or exclude");
        j->daemon_exclude = strcmp(v, "exclude") == 0;
        return 0;
    case O_DAEMON_BACKOFF:
        return s_seconds("--daemon-backoff", v, 0.001, &j->daemon_backoff_ns);
    case O_DAEMON_BACKOFF_MAX:
        return s_seconds("--daemon-backoff-max", v, 0.001,
                         &j->daemon_backoff_max_ns);
    case O_DAEMON_RESTARTS:
        if ((rc = s_count("--daemon-restarts", v, 1, 1000000, &n)) == 0)
            j->daemon_restarts = (int) n;
        return rc;
    case O_DAEMON_WINDOW:
        return s_seconds("--daemon-window", v, 0.001, &j->daemon_window_ns);
    case O_DAEMON_PAUSE:
        return s_seconds("--daemon-pause", v, 0.001, &j->daemon_pause_ns);
    default: return -1;
    }
}

static int
s_option_nodes(s_args_t *a, int c, const char *v)
{
    launch_job_config_t *j = &a->job;
    long n = 0;
    int rc;
    switch (c) {
    case 'l':
        rc = s_count("--local", v, 1, 4096, &a->local);
        return rc;
    case 'n':
        if ((rc = s_count("--nodes", v, 1, 1e6, &n)) == 0) {
            j->nodes.nodes = n;
            j->nodes.nodes_given = 1;
        }
        return rc;
    case 'i':
        if ((rc = s_count("--idle", v, 0, 1e6, &n)) == 0) {
            j->nodes.idle = n;
            j->nodes.idle_given = 1;
        }
        return rc;
    case 'R':
        return s_count("--max-restarts", v, -1, 1e9, &j->nodes.max_restarts);
    case O_BACKOFF:
        if ((rc = s_seconds("--backoff", v, 0, &j->nodes.backoff_ns)) == 0
            && j->nodes.backoff_ns > j->nodes.backoff_max_ns)
            j->nodes.backoff_max_ns = j->nodes.backoff_ns;
        return rc;
    case O_SLURM: a->slurm = 1; return 0;
    case 'x': a->template_ = v; return 0;
    case O_HOSTS: a->hosts = v; return 0;
    default: return -1;
    }
}

static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    launch_job_config_t *j = &a->job;
    long n = 0;
    int rc = s_option_nodes(a, c, v);
    if (rc < 0)
        rc = s_option_daemons(a, c, v);
    if (rc < 0)
        rc = s_option_detcmd(a, c, v);
    if (rc >= 0)
        return rc;
    switch (c) {
    case 'r': j->resilient = 1; return 0;
    case 'e': j->nodes.exhaust = 1; return 0;
    case 'f': j->restart_on_failure = 1; return 0;
    case O_GRACE: return s_seconds("--grace", v, 0, &j->grace_ns);
    case O_HB: return s_seconds("--heartbeat", v, 0, &j->heartbeat_ns);
    case O_HB_TIMEOUT:
        return s_seconds("--heartbeat-timeout", v, 0.001,
                         &j->heartbeat_timeout_ns);
    case O_HB_MISSES:
        if ((rc = s_count("--heartbeat-misses", v, 1, 1000, &n)) == 0)
            j->heartbeat_misses = (int) n;
        return rc;
    case O_START_TIMEOUT:
        return s_seconds("--start-timeout", v, 0.001, &j->start_timeout_ns);
    case 'L':
        if ((rc = s_count("--telemetry-level", v, 0, 4, &n)) == 0)
            j->level = (int) n;
        return rc;
    case 'd':
        if (j->ndetectors == S_DETECTORS_MAX)
            return telem_cli_bad(S_PROG, "--detector", v,
                                 "too many detectors (16 at most)");
        a->detectors[j->ndetectors++] = v;
        return 0;
    case O_COLLECT: {
        launch_argv_t words = { 0 };
        rc = launch_argv_split(&words, v, NULL);
        launch_argv_clear(&words);
        if (rc)
            return telem_cli_bad(S_PROG, "--collect", v, "telem_collect's "
                                 "options, split as a shell would (a quote "
                                 "left open, or none: for its defaults "
                                 "give '--backend cpu')");
        j->collect = v;
        return 0;
    }
    case O_AGG_PORT:
        if ((rc = s_count("--agg-port", v, 0, 65535, &n)) == 0)
            j->agg_port = (int) n;
        return rc;
    case O_AGG_BIND: j->agg_bind = v; return 0;
    case O_AGG_TOKEN: j->agg_token_file = v; return 0;
    case O_NO_AGG: j->agg_port = -1; return 0;
    case O_DUMP: j->dump_dir = v; return 0;
    case O_RELAYS: {
        if (strcmp(v, "auto") == 0 || strcmp(v, "off") == 0) {
            j->relays = strcmp(v, "off") == 0 ? 0 : -1;
            return 0;
        }
        double d;
        if (s_integer(v, 2, 1e6, &d))
            return telem_cli_bad(S_PROG, "--relays", v, "auto, off, or the "
                                 "nodes per relay (2 or more)");
        j->relays = (long) d;
        return 0;
    }
    case O_BIND: j->bind_addr = v; return 0;
    case O_METRICS_PORT:
        if ((rc = s_count("--metrics-port", v, 0, 65535, &n)) == 0)
            j->metrics_port = (int) n;
        return rc;
    case O_METRICS_BIND: j->metrics_bind = v; return 0;
    case O_SYS_ROOT: j->sys_root = v; return 0;
    case O_PROM_CONFIG: j->prometheus_config = v; return 0;
    case O_RUNDIR: j->rundir = v; return 0;
    case O_BINDIR: snprintf(a->bindir, sizeof a->bindir, "%s", v); return 0;
    default: return LAUNCH_EXIT_USAGE;
    }
}

static const struct option s_opts[] = {
    { "local", 1, 0, 'l' }, { "slurm", 0, 0, O_SLURM },
    { "exec-template", 1, 0, 'x' }, { "hosts", 1, 0, O_HOSTS },
    { "nodes", 1, 0, 'n' }, { "idle", 1, 0, 'i' },
    { "resilient", 0, 0, 'r' }, { "exhaust-resources", 0, 0, 'e' },
    { "max-restarts", 1, 0, 'R' }, { "backoff", 1, 0, O_BACKOFF },
    { "restart-on-failure", 0, 0, 'f' }, { "grace", 1, 0, O_GRACE },
    { "heartbeat", 1, 0, O_HB }, { "heartbeat-timeout", 1, 0, O_HB_TIMEOUT },
    { "heartbeat-misses", 1, 0, O_HB_MISSES },
    { "start-timeout", 1, 0, O_START_TIMEOUT },
    { "telemetry-level", 1, 0, 'L' }, { "detector", 1, 0, 'd' },
    { "collect", 1, 0, O_COLLECT }, { "bind", 1, 0, O_BIND },
    { "agg-port", 1, 0, O_AGG_PORT }, { "agg-bind", 1, 0, O_AGG_BIND },
    { "agg-token-file", 1, 0, O_AGG_TOKEN }, { "no-agg", 0, 0, O_NO_AGG },
    { "dump", 1, 0, O_DUMP }, { "relays", 1, 0, O_RELAYS },
    { "detector-cmd", 1, 0, O_DETECTOR_CMD },
    { "watch-period", 1, 0, O_WATCH_PERIOD },
    { "metrics-port", 1, 0, O_METRICS_PORT },
    { "metrics-bind", 1, 0, O_METRICS_BIND },
    { "sys-root", 1, 0, O_SYS_ROOT },
    { "prometheus-config", 1, 0, O_PROM_CONFIG },
    { "daemon-failure", 1, 0, O_DAEMON_FAILURE },
    { "daemon-backoff", 1, 0, O_DAEMON_BACKOFF },
    { "daemon-backoff-max", 1, 0, O_DAEMON_BACKOFF_MAX },
    { "daemon-restarts", 1, 0, O_DAEMON_RESTARTS },
    { "daemon-window", 1, 0, O_DAEMON_WINDOW },
    { "daemon-pause", 1, 0, O_DAEMON_PAUSE },
    { "rundir", 1, 0, O_RUNDIR }, { "bindir", 1, 0, O_BINDIR },
    { "log-level", 1, 0, O_LOGLEVEL }, { "help", 0, 0, 'h' },
    { "version", 0, 0, 'V' }, { 0, 0, 0, 0 }
};

/* The operands: the program and its arguments, all of them kept. */
static int
s_program(void *arg, int argc, char **argv)
{
    s_args_t *a = arg;
    if (argc == 0)
        return telem_cli_error(S_PROG, "no program to run");
    a->job.program = (const char *const *) argv;
    a->job.detectors = a->detectors;
    a->job.detector_cmds = a->detector_cmds;
    return 0;
}

/* Returns 0 to go on, 1 after --help/--version, or LAUNCH_EXIT_USAGE. */
static int
s_parse(s_args_t *a, int argc, char **argv)
{
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage,
        .shortopts = "+l:x:n:i:reR:fL:d:hV", .longopts = s_opts,
        .option = s_option, .operands = s_program,
        .version = S_PROG " 0.1.0 (protocol " S_STR(TELEM_PROTO_VERSION) ")",
        .log_level = &a->loglevel,
    };
    return telem_cli_parse_spec(&spec, argc, argv, a);
}

static int
s_check_sources(const s_args_t *a)
{
    int n = (a->local > 0) + a->slurm + (a->template_ != NULL);
    if (n > 1)
        return telem_cli_error(S_PROG, "choose one of --local, --slurm and "
                               "--exec-template");
    if (!a->template_ != !a->hosts)
        return telem_cli_error(S_PROG, "--exec-template and --hosts go "
                               "together");
    return 0;
}

/* Picks the node source: the flags, else Slurm inside an allocation,
 * else local nodes. */
static launch_source_t *
s_source(const s_args_t *a, int *code)
{
    char why[512] = "";
    int err = 0;
    const char *nodelist = getenv("SLURM_JOB_NODELIST");
    launch_source_t *src;
    *code = LAUNCH_EXIT_USAGE;
    if (a->template_) {
        src = launch_source_new_template(a->template_, a->hosts, why,
                                         sizeof why,
                                         &err);
    } else if (a->slurm || (!a->local && nodelist && *nodelist)) {
        src = launch_source_new_slurm(nodelist, why, sizeof why, &err);
        if (!src && err != TELEM_EINVAL)
            *code = LAUNCH_EXIT_START;
    } else {
        const launch_state_config_t *c = &a->job.nodes;
        long n = a->local;
        if (!n)
            n = (c->nodes_given ? c->nodes : 1) + (c->idle_given ? c->idle : 0);
        src = launch_source_new_local((size_t) n, &err);
        if (!src)
            snprintf(why, sizeof why, "cannot make %ld local nodes", n);
    }
    if (!src)
        fprintf(stderr, "telem_launch: %s\n", why);
    return src;
}

static void
s_default_bindir(s_args_t *a, const char *argv0)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(exe, sizeof exe, "%s", argv0);
        n = (ssize_t) strlen(exe);
    }
    exe[n] = '\0';
    snprintf(a->bindir, sizeof a->bindir, "%s", dirname(exe));
}

static void
s_defaults(s_args_t *a, const char *argv0)
{
    memset(a, 0, sizeof *a);
    launch_job_config_defaults(&a->job);
    const char *env = getenv("TELEM_LEVEL");
    double v;
    if (env && s_integer(env, 0, 4, &v) == 0)
        a->job.level = (int) v;
    a->loglevel = TELEM_LOG_INFO;
    s_default_bindir(a, argv0);
}

int
main(int argc, char **argv)
{
    s_args_t a;
    s_defaults(&a, argv[0]);
    int rc = s_parse(&a, argc, argv);
    if (rc)
        return rc == 1 ? LAUNCH_EXIT_OK : rc;
    if ((rc = s_check_sources(&a)) != 0)
        return rc;
    if (a.job.ndetector_cmds && a.job.level == 0)
        return telem_cli_error(S_PROG, "--detector-cmd: telemetry level 0 "
                               "records nothing for a detector to read; "
                               "give --telemetry-level 1 or more");
    telem_log_init("telem_launch", a.loglevel);
    a.job.bindir = a.bindir;
    launch_source_t *src = s_source(&a, &rc);
    if (!src)
        return rc;
    /* Local nodes share this host: one port cannot serve them all. */
    if (a.job.metrics_port > 0 && launch_source_count(src) > 1
        && launch_source_kind(src) == LAUNCH_SOURCE_LOCAL) {
        launch_source_destroy(&src);
        return telem_cli_error(S_PROG, "--metrics-port: local nodes share "
                               "this host; use --metrics-port 0 (a free "
                               "port per node)");
    }
    char why[1024] = "", watch[PATH_MAX + 16], collect[128];
    snprintf(watch, sizeof watch, "%s/telem_watch", a.bindir);
    int err = launch_detect_check(&a.job, watch, launch_source_kind(src)
                                  == LAUNCH_SOURCE_LOCAL, collect,
                                  sizeof collect, why, sizeof why);
    if (err) {
        launch_source_destroy(&src);
        fprintf(stderr, "telem_launch: %s\n", why);
        return LAUNCH_EXIT_USAGE;
    }
    launch_job_t *job = launch_job_new(&a.job, &src, why, sizeof why, &err);
    if (!job) {
        fprintf(stderr, "telem_launch: %s\n", why);
        return err == TELEM_EINVAL ? LAUNCH_EXIT_USAGE : LAUNCH_EXIT_START;
    }
    rc = launch_job_run(job);
    launch_job_destroy(&job);
    return rc;
}
