/* telem_client_cli.c - telem_client's command line: the usage and each
 * mode's help, the options and operands, and the checks that need the
 * whole command line (telem_client_cli.h).
 *
 * Call order: telem_client.c calls telem_client_cli_parse(); this file
 * calls only runtime/common's telem_cli.h and the name parser.
 */
#include "telem_client_cli.h"
#include "telem_cli.h"
#include "telem_paths.h"
#include "telem_time.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_PROG "telem_client"
/* A usage error: the message, the --help hint, exit status 2. */
#define S_BAD(...) telem_cli_error(S_PROG, __VA_ARGS__)

/* ---- help -------------------------------------------------------------- */

static const char s_usage[] =
    "usage: telem_client [--nodefile F | -u PATH] [--timeout MS]\n"
    "                    [-f md|json|yaml|txt] [-o FILE] [--tau] MODE\n"
    "modes:\n"
    "  -l, --list           list metrics (name, type, unit, doc, series, nodes)\n"
    "  -v, --values         latest value of every series\n"
    "  -g, --get a,b        latest values of the named metrics; a name may\n"
    "                       carry labels: 'hits_total{scall=\"read\"}'\n"
    "  -t, --track-all      track every metric whose value changes\n"
    "  -T, --track a,b      track the named metrics (names as for -g)\n"
    "  query [METRIC[,METRIC]]  series with their points\n"
    "  status               per-node agent status\n"
    "  nodes                the node list\n"
    "  level L [NODE]       set the telemetry level (0-4) of all nodes or one\n"
    "  shutdown [NODE]      stop the agents of all nodes or one\n"
    "  report -o FILE       the job as one self-contained HTML file\n"
    "  snapshot [NODE]      each node's one-time system snapshot\n"
    "  dump -o FILE [METRIC[,METRIC]]  the job's history into a dump file\n"
    "options:\n"
    "  --nodefile F         node file (default $TELEM_NODEFILE, else <rundir>/nodes)\n"
    "  -u, --unix PATH      ask one node: its directory <rundir>/<node> or a\n"
    "                       socket in it (ctl.sock, ingest.sock), or a node file\n"
    "  --tau                -l, -v, -g, -t, -T as tau_metric_proxy's client\n"
    "                       writes them: {name, doc, type}, {name, ts, value}\n"
    "  --timeout MS         deadline for each call (default 2000)\n"
    "  -f, --format FMT     md (default), json, yaml or txt\n"
    "  -o, --output FILE    write to FILE instead of stdout\n"
    "  --rundir DIR         run directory (report; default $TELEM_RUNDIR, ...)\n"
    "  --dump FILE          report, snapshot: from a dump file (repeatable),\n"
    "                       not the nodes\n"
    "  --tag k=v            only series with tag k=v (v \"*\": tag present);\n"
    "                       repeatable; with -l, -v, -g, -t, -T, query\n"
    "  -h, --help           this help, or a mode's help after the mode\n"
    "Nodes at tcp:// endpoints are reached with CURVE when the job's key is\n"
    "found: $TELEM_KEYS, else keys/ beside the node file, else <rundir>/keys.\n"
    "exit: 0 ok, 1 error, 2 bad command line, 3 some nodes did not answer\n";

static const char *const s_mode_help[] = {
    [M_LIST] = "telem_client -l: one row per metric: name, type, unit, doc,\n"
        "number of series and the nodes that have it.\n",
    [M_VALUES] = "telem_client -v [--tag k=v]: the newest point of every series\n"
        "(node, metric, tags, type, unit, time_ns, value; in json and yaml a\n"
        "\"series\" list whose \"points\" hold one [time_ns, value]).\n",
    [M_GET] = "telem_client -g a,b [--tag k=v]: the newest point of every series\n"
        "of metrics a and b, as for -v.  Exit 1 if a metric has no series.\n",
    [M_TRACK_ALL] = "telem_client -t [-F HZ] [-d SECONDS]: at each tick (default\n"
        "1 Hz), the series whose newest value differs from the value last\n"
        "written for them (all of them at the first tick).  Stops after -d\n"
        "seconds or on Ctrl-C/SIGTERM, leaving a complete document.  Each\n"
        "tick waits at most --timeout ms (default: the tick period, within\n"
        "100-2000 ms).  Exit 3 if some node missed a tick.\n",
    [M_TRACK] = "telem_client -T a,b [-F HZ] [-d SECONDS]: as -t for metrics a, b.\n",
    [M_QUERY] = "telem_client query [METRIC[,METRIC]] [--tag k=v ...] [--start T]\n"
        "    [--end T] [--max-points N]\n"
        "T: nanoseconds since the epoch, a number with a unit (s, m, h, d, ms,\n"
        "us, ns; \"1700000000s\"), relative to now when negative (-60s, -5m),\n"
        "or \"now\".  Default: the last 300 s.  N: newest points per series.\n",
    [M_STATUS] = "telem_client status: per node: level, series, points, memory,\n"
        "samples ingested and dropped, uptime; nodes that did not answer.\n",
    [M_NODES] = "telem_client nodes: the node file's nodes and endpoints.\n",
    [M_LEVEL] = "telem_client level L [NODE]: sets the telemetry level (0 off,\n"
        "1 user, 2 node, 3 GPU, 4 telem's own metrics) on every node or on\n"
        "NODE; prints each node's status after the change.\n",
    [M_SHUTDOWN] = "telem_client shutdown [NODE]: asks every node's agent (or\n"
        "NODE's) to exit; prints each node's last status.\n",
    [M_REPORT] = "telem_client report -o FILE [--start T] [--rundir DIR]: one HTML\n"
        "file about the job, readable offline: nodes and states, restarts\n"
        "(<rundir>/launch), detector events (<rundir>/telem_watch/events.jsonl),\n"
        "charts of every cg_*_seconds metric per device and of cpu_percent,\n"
        "used_ram, load_average and num_running_processes per node.  T as for\n"
        "query; default: everything the nodes keep.  Exit 3 if some node did\n"
        "not answer (the file is still written).\n"
        "With --dump FILE (repeatable) the series come from dump files\n"
        "(telem_client dump, telem_launch --dump) instead of the nodes: the\n"
        "report of a finished job, with the restarts and events the dumps\n"
        "hold (dump --rundir); --rundir reads them from the run directory.\n",
    [M_DUMP] = "telem_client dump -o FILE [METRIC[,METRIC]] [--tag k=v ...]\n"
        "    [--start T] [--end T]\n"
        "Writes the job's history (every node's series in the range, their\n"
        "metric metas) into the dump file FILE (docs/store.md's dump format,\n"
        "read by telem_view and report --dump).  T as for query; default:\n"
        "everything the nodes keep, up to now.  --rundir DIR adds the job's\n"
        "detector events and restarts (telem_view shows them as telem_agg\n"
        "does).  Progress on stderr when it\n"
        "takes long.  Exit 3 if some node did not answer (the dump holds the\n"
        "others), 1 if none did or the file cannot be written (an existing\n"
        "FILE is never overwritten).\n",
    [M_SNAPSHOT] = "telem_client snapshot [NODE]: the system snapshot each node's\n"
        "telemd took at start (CPU, caches, NUMA, memory, boot time, kernel,\n"
        "OS, disks, network, GPUs, telem's configuration).  txt: an lscpu-like\n"
        "summary per node; md: node, field, value rows; json and yaml: each\n"
        "node's whole document.  Exit 3 if some node did not answer.\n"
        "With --dump FILE (repeatable) the snapshots come from dump files\n"
        "(each node's newest) instead of the nodes.\n",
};

/* ---- argument parsing -------------------------------------------------- */

/* A time argument; see the query help. */
static int
s_parse_time(const char *s, int64_t *ns)
{
    static const struct { const char *unit; double mult; } units[] = {
        { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
        { "m", 60e9 }, { "h", 3600e9 }, { "d", 86400e9 },
    };
    if (strcmp(s, "now") == 0) {
        *ns = telem_now_ns();
        return 0;
    }
    int64_t v;
    if (telem_cli_int64(s, INT64_MIN, INT64_MAX, &v) == 0) {
        *ns = v;
        return 0;
    }
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || !isfinite(d))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) != 0)
            continue;
        double r = d * units[i].mult;
        if (!(r > -9.2e18 && r < 9.2e18))
            return -1;
        *ns = (int64_t) llround(r);
        return 0;
    }
    return -1;
}

/* Splits "a,b,c" (kept in cli->list) into cli->sels, and their metrics,
 * each once, into cli->o.metrics. */
static int
s_parse_metrics(telem_client_cli_t *cli, const char *arg)
{
    free(cli->list);
    free(cli->o.metrics);
    free(cli->sels);
    cli->o.metrics = NULL;
    cli->o.nmetrics = cli->o.nsels = 0;
    cli->list = strdup(arg);
    size_t n = 1;
    for (const char *p = arg; *p; p++)
        n += *p == ',';
    cli->o.metrics = calloc(n, sizeof *cli->o.metrics);
    cli->o.sels = cli->sels = calloc(n, sizeof *cli->sels);
    if (!cli->list || !cli->o.metrics || !cli->sels)
        return -1;
    char *p = cli->list, *item;
    while ((item = telem_client_result_next_item(&p)) != NULL) {
        telem_promname_t *sel = &cli->sels[cli->o.nsels++];
        if (telem_client_result_selector(item, sel) != 0)
            return -1;
        size_t m = 0;
        while (m < cli->o.nmetrics && strcmp(cli->o.metrics[m], item) != 0)
            m++;
        if (m == cli->o.nmetrics)
            cli->o.metrics[cli->o.nmetrics++] = item;
    }
    return cli->o.nmetrics <= TELEM_QUERY_METRICS_MAX ? 0 : -1;
}

static int
s_parse_tag(telem_client_cli_t *cli, char *arg)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1] || cli->o.ntags == TELEM_TAGS_MAX)
        return -1;
    *eq = '\0';
    if (strlen(arg) > TELEM_NAME_MAX || strlen(eq + 1) > TELEM_NAME_MAX)
        return -1;
    cli->o.tags[cli->o.ntags++] = (telem_tag_t) { arg, eq + 1 };
    return 0;
}

static int
s_set_mode(telem_client_cli_t *cli, telem_client_mode_t m)
{
    if (cli->mode != M_NONE && cli->mode != m)
        return S_BAD("choose one mode");
    cli->mode = m;
    return 0;
}

enum { O_NODEFILE = 256, O_TIMEOUT, O_TAG, O_START, O_END, O_MAXPTS,
       O_RUNDIR, O_TAU, O_DUMP };

static const struct option s_longopts[] = {
    { "nodefile", required_argument, NULL, O_NODEFILE },
    { "timeout", required_argument, NULL, O_TIMEOUT },
    { "format", required_argument, NULL, 'f' },
    { "output", required_argument, NULL, 'o' },
    { "list", no_argument, NULL, 'l' },
    { "values", no_argument, NULL, 'v' },
    { "get", required_argument, NULL, 'g' },
    { "track-all", no_argument, NULL, 't' },
    { "track", required_argument, NULL, 'T' },
    { "frequency", required_argument, NULL, 'F' },
    { "duration", required_argument, NULL, 'd' },
    { "tag", required_argument, NULL, O_TAG },
    { "start", required_argument, NULL, O_START },
    { "end", required_argument, NULL, O_END },
    { "max-points", required_argument, NULL, O_MAXPTS },
    { "rundir", required_argument, NULL, O_RUNDIR },
    { "unix", required_argument, NULL, 'u' },
    { "tau", no_argument, NULL, O_TAU },
    { "dump", required_argument, NULL, O_DUMP },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int
s_time_option(telem_client_cli_t *cli, int c, const char *arg)
{
    int64_t t;
    if (s_parse_time(arg, &t))
        return S_BAD("bad time '%s' (ns since epoch, -60s, -5m, now)", arg);
    if (c == O_START) {
        cli->start_ns = t;
    } else {
        cli->end_ns = t;
        cli->have_end = 1;
    }
    cli->have_range = 1;
    return 0;
}

static int
s_track_option(telem_client_cli_t *cli, int c, const char *arg)
{
    double d;
    int hz = c == 'F';
    if (telem_cli_number(arg, 0, hz ? 10000 : 1e9, &d) || d <= 0)
        return S_BAD(hz ? "bad -F '%s' (Hz, above 0, at most 10000)"
                        : "bad -d '%s' (seconds, above 0)", arg);
    if (hz)
        cli->o.hz = d;
    else
        cli->o.duration_s = d;
    cli->have_track = 1;
    return 0;
}

/* One option, for telem_cli_parse_spec(); returns 0 or the exit code 2. */
static int
s_option(void *ctx, int c, char *arg)
{
    telem_client_cli_t *cli = ctx;
    int64_t v;
    switch (c) {
    case O_NODEFILE: cli->o.nodefile = arg; return 0;
    case O_RUNDIR: cli->rundir = arg; return 0;
    case 'u': cli->o.unix_path = arg; return 0;
    case O_TAU: cli->o.tau = 1; return 0;
    case O_DUMP:
        if (cli->ndumps == TELEM_CLIENT_DUMPS_MAX)
            return S_BAD("at most %d --dump files", TELEM_CLIENT_DUMPS_MAX);
        cli->dumps[cli->ndumps++] = arg;
        return 0;
    case 'o': cli->out_path = arg; return 0;
    case 'l': return s_set_mode(cli, M_LIST);
    case 'v': return s_set_mode(cli, M_VALUES);
    case 't': return s_set_mode(cli, M_TRACK_ALL);
    case O_START: case O_END: return s_time_option(cli, c, arg);
    case O_TIMEOUT:
        if (telem_cli_int64(arg, 1, 3600000, &v))
            return S_BAD("bad --timeout '%s' (milliseconds, 1 to 3600000)", arg);
        cli->o.timeout_ms = (int) v;
        return 0;
    case 'f':
        if (telem_client_fmt_parse(arg, &cli->o.fmt))
            return S_BAD("unknown format '%s' (md, json, yaml, txt)", arg);
        return 0;
    case 'g': case 'T':
        if (s_set_mode(cli, c == 'g' ? M_GET : M_TRACK))
            return 2;
        if (s_parse_metrics(cli, arg))
            return S_BAD("bad metric list '%s' (a,b,... each a name, "
                         "optionally with labels: m{k=\"v\"})", arg);
        return 0;
    case 'F': case 'd': return s_track_option(cli, c, arg);
    case O_TAG:
        if (s_parse_tag(cli, arg))
            return S_BAD("bad --tag '%s' (k=v, at most 16 tags)", arg);
        return 0;
    case O_MAXPTS:
        if (telem_cli_int64(arg, 0, UINT32_MAX, &v))
            return S_BAD("bad --max-points '%s'", arg);
        cli->max_points = (uint32_t) v;
        cli->have_range = 1;
        cli->have_end = 1;
        return 0;
    default:
        return telem_cli_hint(S_PROG);
    }
}

/* One operand: a subcommand word, the query's metric list, or a level or
   node name. */
static int
s_positional(telem_client_cli_t *cli, const char *a)
{
    static const struct { const char *word; telem_client_mode_t mode; } words[] = {
        { "query", M_QUERY }, { "status", M_STATUS }, { "nodes", M_NODES },
        { "level", M_LEVEL }, { "shutdown", M_SHUTDOWN },
        { "report", M_REPORT }, { "snapshot", M_SNAPSHOT },
        { "dump", M_DUMP },
    };
    int64_t v;
    if ((cli->mode == M_QUERY || cli->mode == M_DUMP) && !cli->list)
        return s_parse_metrics(cli, a) ? S_BAD("bad metric list '%s'", a) : 0;
    if (cli->mode == M_LEVEL && cli->level < 0) {
        if (telem_cli_int64(a, 0, 4, &v))
            return S_BAD("bad level '%s' (0 to 4)", a);
        cli->level = v;
        return 0;
    }
    if ((cli->mode == M_LEVEL || cli->mode == M_SHUTDOWN
         || cli->mode == M_SNAPSHOT) && !cli->node) {
        cli->node = a;
        return 0;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(a, words[i].word) == 0)
            return s_set_mode(cli, words[i].mode);
    return S_BAD("unexpected argument '%s'", a);
}

/* Rules that need the whole command line. */
static int
s_validate(const telem_client_cli_t *cli)
{
    telem_client_mode_t m = cli->mode;
    if (m == M_NONE) {
        fputs(s_usage, stderr);
        return 2;
    }
    if (cli->have_range && m != M_QUERY && m != M_DUMP
        && (m != M_REPORT || cli->have_end))
        return S_BAD("--start goes with query, dump and report; --end with "
                     "query and dump; --max-points with query");
    if (m == M_DUMP && cli->max_points)
        return S_BAD("--max-points goes with query, not dump");
    if (m == M_DUMP && !cli->out_path)
        return S_BAD("dump needs -o FILE");
    if (cli->ndumps && m != M_REPORT && m != M_SNAPSHOT)
        return S_BAD("--dump goes with report and snapshot");
    if (cli->rundir && m != M_REPORT && m != M_DUMP)
        return S_BAD("--rundir goes with report and dump");
    if (m == M_REPORT && !cli->out_path)
        return S_BAD("report needs -o FILE");
    if (cli->have_track && m != M_TRACK && m != M_TRACK_ALL)
        return S_BAD("-F and -d go with -t or -T");
    if (cli->o.ntags && m >= M_STATUS && m != M_DUMP)
        return S_BAD("--tag goes with -l, -v, -g, -t, -T, query and dump");
    if (cli->o.tau && m > M_TRACK)
        return S_BAD("--tau goes with -l, -v, -g, -t and -T");
    if (cli->o.unix_path && cli->o.nodefile)
        return S_BAD("give -u or --nodefile, not both");
    if (cli->o.unix_path && m == M_REPORT)
        return S_BAD("report reads a job's node file: --nodefile, not -u");
    if (m == M_LEVEL && cli->level < 0)
        return S_BAD("level needs a level, 0 to 4");
    /* The range as the query will see it, defaults included, so that an
     * empty one is a usage error here rather than a refusal later. */
    int64_t now = telem_now_ns();
    int64_t s = cli->start_ns < 0 ? now + cli->start_ns
              : cli->start_ns ? cli->start_ns : now - AC_WINDOW_DEFAULT_NS;
    int64_t e = cli->end_ns < 0 ? now + cli->end_ns
              : cli->end_ns ? cli->end_ns : now;
    if (m == M_DUMP && (cli->start_ns < 0 ? now + cli->start_ns
                        : cli->start_ns) > e)
        return S_BAD("--start is after --end");
    if (m == M_QUERY && (s < 0 || e < 0))
        return S_BAD("--start and --end must not be before 1970");
    if (m == M_QUERY && s > e)
        return S_BAD("--start is after --end (default start: 300 s "
                     "ago; default end: now)");
    return 0;
}

/* The operands, in order, for telem_cli_parse_spec(). */
static int
s_operands(void *arg, int argc, char **argv)
{
    int rc = 0;
    for (int i = 0; i < argc && !rc; i++)
        rc = s_positional(arg, argv[i]);
    return rc;
}

/* --help, once the whole command line is read: the mode's help first. */
static void
s_help(void *arg)
{
    const telem_client_cli_t *cli = arg;
    if (cli->mode != M_NONE)
        fputs(s_mode_help[cli->mode], stdout);
    fputs(s_usage, stdout);
}

int
telem_client_cli_parse(telem_client_cli_t *cli, int argc, char **argv)
{
    static const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = "f:o:lvg:tT:F:d:u:h",
        .longopts = s_longopts, .option = s_option, .operands = s_operands,
        .help = s_help,
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, cli);
    if (rc)
        return rc == 1 ? 0 : rc;
    rc = s_validate(cli);
    return rc ? rc : -1;
}
