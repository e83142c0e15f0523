/* telem_client.c - command line access to every node of a job.
 *
 *   telem_client [--nodefile F | -u PATH] [--timeout MS] [-f md|json|yaml|txt]
 *                [-o FILE] [--tau] MODE
 *
 * Modes: -l (metric catalog), -v (all latest values), -g a,b (latest values
 * of some metrics), -t / -T a,b (track changes, telem_client_track.c), query
 * (series with points), status (per-node agent state), nodes (the node
 * list), level and shutdown (control requests), report (the job as one
 * HTML file, telem_client_report.c), snapshot (each node's system
 * snapshot, telem_client_snapshot.c).  --tau writes -l, -v, -g, -t and -T
 * as tau_metric_proxy's client does (telem_client_tau.c).  Exit codes:
 * 0 success, 1
 * error, 2 bad command line, 3 some nodes did not answer (what came is still
 * printed; the missing nodes are always named on stderr).  Parsing and
 * checking of every argument happens here, once, before any socket is
 * opened.
 *
 * Call order: this file calls telem_client_report.c, telem_client_track.c,
 * telem_client_result.c and telem_client_fmt.c; none of them calls back
 * into it.
 */
#include "telem_client.h"
#include "telem_cli.h"
#include "telem_nodesock.h"
#include "telem_paths.h"
#include "telem_time.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_PROG "telem_client"
/* A usage error: the message, the --help hint, exit status 2. */
#define S_BAD(...) telem_cli_error(S_PROG, __VA_ARGS__)

typedef enum {
    M_NONE = 0, M_LIST, M_VALUES, M_GET, M_TRACK_ALL, M_TRACK, M_QUERY,
    M_STATUS, M_NODES, M_LEVEL, M_SHUTDOWN, M_REPORT,
    M_SNAPSHOT, M_DUMP
} s_mode_t;

typedef struct {
    telem_client_opts_t o;
    s_mode_t mode;
    const char *out_path;
    char *list;              /* -g / -T / query: copy that metrics point into */
    telem_promname_t *sels;  /* and what each element selects */
    int64_t start_ns, end_ns;
    uint32_t max_points;
    int have_range;          /* --start/--end/--max-points given */
    int have_end;            /* --end/--max-points given */
    const char *rundir;      /* report: --rundir */
    int have_track;          /* -F/-d given */
    int64_t level;           /* level: the new level, -1 until given */
    const char *node;        /* level, shutdown: one node, or NULL: all */
    const char *dumps[TELEM_CLIENT_DUMPS_MAX];   /* report --dump */
    size_t ndumps;
} s_cli_t;

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
s_parse_metrics(s_cli_t *cli, const char *arg)
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
s_parse_tag(s_cli_t *cli, char *arg)
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
s_set_mode(s_cli_t *cli, s_mode_t m)
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
s_time_option(s_cli_t *cli, int c, const char *arg)
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
s_track_option(s_cli_t *cli, int c, const char *arg)
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
    s_cli_t *cli = ctx;
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
s_positional(s_cli_t *cli, const char *a)
{
    static const struct { const char *word; s_mode_t mode; } words[] = {
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
s_validate(const s_cli_t *cli)
{
    s_mode_t m = cli->mode;
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
    const s_cli_t *cli = arg;
    if (cli->mode != M_NONE)
        fputs(s_mode_help[cli->mode], stdout);
    fputs(s_usage, stdout);
}

/* Returns -1 to go on, else the exit code. */
static int
s_parse(s_cli_t *cli, int argc, char **argv)
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

/* ---- one-shot modes ---------------------------------------------------- */

static const char *
s_type_name(telem_metric_type_t t)
{
    return t == TELEM_METRIC_COUNTER ? "counter" : "gauge";
}

/* Runs q, reports missing nodes; *r is NULL when the call was refused. */
static int
s_query(ac_t *ac, const ac_query_t *q, ac_result_t **r)
{
    int rc = ac_query(ac, q, r);
    if (*r)
        telem_client_result_missing_report(*r);
    return rc;
}

/* Ends the document with r's missing nodes and maps rc to the exit code;
 * a failed write makes the run fail. */
static int
s_finish(telem_client_fmt_t *f, const ac_result_t *r, int rc)
{
    size_t n = 0;
    const char **missing = telem_client_result_missing_names(r, &n);
    int wrc = f ? telem_client_fmt_end(f, missing, n) : TELEM_ENOMEM;
    free(missing);
    int code = telem_client_result_exit_code(rc);
    if (wrc) {
        fprintf(stderr, S_PROG ": writing the output failed\n");
        code = 1;
    }
    return code;
}

/* -v, -g (newest point only) and query: one row per series. */
static int
s_run_series(ac_t *ac, const telem_client_opts_t *o, const ac_query_t *q)
{
    static const char *const cols[] = {
        "node", "metric", "tags", "type", "unit", "points"
    };
    ac_result_t *r = NULL;
    int rc = s_query(ac, q, &r);
    telem_client_fmt_t *f = telem_client_fmt_new(o->fmt, o->out, "series",
                                                 cols, 6, 5);
    for (size_t i = 0; f && i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        if (!telem_client_result_selected(o, s))
            continue;
        telem_client_fmt_str(f, ac_result_series_node(r, i));
        telem_client_fmt_str(f, s->metric);
        telem_client_fmt_tags(f, s->tags, s->ntags);
        telem_client_fmt_str(f, s_type_name(s->type));
        telem_client_fmt_str(f, s->unit);
        telem_client_fmt_points(f, s->ts, s->values, s->npoints);
        telem_client_fmt_row_end(f);
    }
    /* A get (-g) of a metric nobody has is an error; an empty window of a
     * query is an answer. */
    int latest = (q->flags & TELEM_QUERY_LATEST) != 0;
    size_t absent = telem_client_result_absent(o, r, latest);
    int code = s_finish(f, r, rc);
    if (absent && latest)
        code = 1;
    telem_client_fmt_destroy(&f);
    ac_result_destroy(&r);
    return code;
}

static int
s_run_values(ac_t *ac, const telem_client_opts_t *o)
{
    ac_query_t q = { .metrics = o->metrics, .nmetrics = o->nmetrics,
                     .tags = o->tags, .ntags = o->ntags,
                     .flags = TELEM_QUERY_LATEST };
    return s_run_series(ac, o, &q);
}

static int
s_run_query(ac_t *ac, const s_cli_t *cli)
{
    const telem_client_opts_t *o = &cli->o;
    ac_query_t q = { .metrics = o->metrics, .nmetrics = o->nmetrics,
                     .tags = o->tags, .ntags = o->ntags,
                     .start_ns = cli->start_ns, .end_ns = cli->end_ns,
                     .max_points = cli->max_points };
    return s_run_series(ac, o, &q);
}

/* -l: one row for the series [first, end) of one metric. */
static void
s_list_row(telem_client_fmt_t *f, const ac_t *ac, const ac_result_t *r,
           size_t first, size_t end)
{
    const char *nodes[256];
    size_t nn = 0;
    /* Nodes that have the metric, in node-file order. */
    for (size_t k = 0; k < ac_node_count(ac) && nn < 256; k++)
        for (size_t i = first; i < end; i++)
            if (strcmp(ac_result_series_node(r, i), ac_node_name(ac, k)) == 0) {
                nodes[nn++] = ac_node_name(ac, k);
                break;
            }
    const telem_series_t *s = ac_result_series(r, first);
    telem_client_fmt_str(f, s->metric);
    telem_client_fmt_str(f, s_type_name(s->type));
    telem_client_fmt_str(f, s->unit);
    telem_client_fmt_str(f, s->doc);
    telem_client_fmt_u64(f, end - first);
    telem_client_fmt_list(f, nodes, nn);
    telem_client_fmt_row_end(f);
}

static int
s_run_list(ac_t *ac, const telem_client_opts_t *o)
{
    static const char *const cols[] = {
        "metric", "type", "unit", "doc", "series", "nodes"
    };
    ac_query_t q = { .tags = o->tags, .ntags = o->ntags,
                     .flags = TELEM_QUERY_LIST };
    ac_result_t *r = NULL;
    int rc = s_query(ac, &q, &r);
    telem_client_fmt_t *f = telem_client_fmt_new(o->fmt, o->out, "metrics",
                                                 cols, 6, -1);
    size_t n = ac_result_nseries(r);
    for (size_t i = 0; f && i < n;) {
        size_t end = i + 1;
        while (end < n && strcmp(ac_result_series(r, end)->metric,
                                 ac_result_series(r, i)->metric) == 0)
            end++;
        s_list_row(f, ac, r, i, end);
        i = end;
    }
    int code = s_finish(f, r, rc);
    telem_client_fmt_destroy(&f);
    ac_result_destroy(&r);
    return code;
}

static void
s_status_row(telem_client_fmt_t *f, const ac_status_result_t *r, size_t i)
{
    const telem_status_t *st = ac_status_result_status(r, i);
    telem_client_fmt_str(f, ac_status_result_node(r, i));
    if (!st) {
        telem_client_fmt_str(f, ac_status_result_message(r, i));
        telem_client_fmt_row_end(f);  /* the other cells are null */
        fprintf(stderr, S_PROG ": node '%s' did not answer: %s (%s)\n",
                ac_status_result_node(r, i), ac_status_result_message(r, i),
                ac_strerror(ac_status_result_code(r, i)));
        return;
    }
    telem_client_fmt_str(f, "ok");
    telem_client_fmt_i64(f, st->level);
    telem_client_fmt_u64(f, st->nseries);
    telem_client_fmt_u64(f, st->npoints);
    telem_client_fmt_u64(f, st->mem_bytes);
    telem_client_fmt_u64(f, st->ingested);
    telem_client_fmt_u64(f, st->dropped);
    telem_client_fmt_u64(f, st->push_refused);
    telem_client_fmt_i64(f, st->uptime_ns / TELEM_NS_PER_SEC);
    telem_client_fmt_i64(f, st->pid);
    telem_client_fmt_u64(f, st->log_bytes);
    telem_client_fmt_u64(f, st->log_segments);
    telem_client_fmt_u64(f, st->flushes);
    telem_client_fmt_i64(f, st->last_flush_ns);
    telem_client_fmt_u64(f, st->flush_errors);
    telem_client_fmt_row_end(f);
}

/* status, level, shutdown: one row per node asked. */
static int
s_run_control(ac_t *ac, const telem_client_opts_t *o, long node,
              telem_ctl_op_t op, int64_t arg)
{
    static const char *const cols[] = {
        "node", "state", "level", "series", "points", "mem_bytes",
        "ingested", "dropped", "refused", "uptime_s", "pid",
        "log_bytes", "log_segments", "flushes", "last_flush_ns",
        "flush_errors"
    };
    ac_status_result_t *r = NULL;
    int rc = ac_control(ac, node, op, arg, 0, &r);
    size_t n = ac_status_result_count(r), nm = 0;
    const char **missing = calloc(n + 1, sizeof *missing);
    telem_client_fmt_t *f = telem_client_fmt_new(o->fmt, o->out, "nodes",
                                                 cols, 16, -1);
    for (size_t i = 0; f && missing && i < n; i++) {
        s_status_row(f, r, i);
        if (ac_status_result_code(r, i))
            missing[nm++] = ac_status_result_node(r, i);
    }
    int wrc = f && missing ? telem_client_fmt_end(f, missing, nm)
                           : TELEM_ENOMEM;
    int code = telem_client_result_exit_code(rc);
    if (wrc) {
        fprintf(stderr, S_PROG ": writing the output failed\n");
        code = 1;
    }
    free(missing);
    telem_client_fmt_destroy(&f);
    ac_status_result_destroy(&r);
    return code;
}

static int
s_run_nodes(ac_t *ac, const telem_client_opts_t *o)
{
    static const char *const cols[] = { "node", "endpoint" };
    telem_client_fmt_t *f = telem_client_fmt_new(o->fmt, o->out, "nodes",
                                                 cols, 2, -1);
    for (size_t i = 0; f && i < ac_node_count(ac); i++) {
        telem_client_fmt_str(f, ac_node_name(ac, i));
        telem_client_fmt_str(f, ac_node_endpoint(ac, i));
        telem_client_fmt_row_end(f);
    }
    int code = s_finish(f, NULL, 0);
    telem_client_fmt_destroy(&f);
    return code;
}

static int
s_control(ac_t *ac, const s_cli_t *cli)
{
    long node = -1;
    if (cli->node && (node = ac_node_find(ac, cli->node)) < 0) {
        fprintf(stderr, S_PROG ": no node '%s' in the node file\n", cli->node);
        return 1;
    }
    telem_ctl_op_t op = cli->mode == M_LEVEL ? TELEM_CTL_SET_LEVEL
                      : cli->mode == M_SHUTDOWN ? TELEM_CTL_SHUTDOWN
                      : TELEM_CTL_STATUS;
    return s_run_control(ac, &cli->o, node, op,
                         cli->mode == M_LEVEL ? cli->level : 0);
}

static int
s_snapshot(ac_t *ac, const s_cli_t *cli)
{
    long node = -1;
    if (cli->node && (node = ac_node_find(ac, cli->node)) < 0) {
        fprintf(stderr, S_PROG ": no node '%s' in the node file\n", cli->node);
        return 1;
    }
    return telem_client_snapshot(ac, &cli->o, node);
}

/* ---- main -------------------------------------------------------------- */

/* -u PATH naming a node (its directory or a socket in it): that node. */
static ac_t *
s_connect_node(const telem_client_opts_t *o)
{
    char node[TELEM_NAME_MAX + 1], ep[TELEM_PATH_MAX], why[TELEM_PATH_MAX];
    int err = telem_nodesock_resolve(o->unix_path, "ctl.sock", ep, sizeof ep,
                                     node, sizeof node, why, sizeof why);
    if (err) {
        fprintf(stderr, S_PROG ": -u %s\n", why);
        return NULL;
    }
    const char *name = node, *endpoint = ep;
    ac_t *ac = ac_connect_nodes(&name, &endpoint, 1, o->timeout_ms, &err);
    if (!ac)
        fprintf(stderr, S_PROG ": cannot connect: %s\n", ac_strerror(err));
    return ac;
}

static ac_t *
s_connect(const telem_client_opts_t *o)
{
    struct stat st;
    const char *nodefile = o->nodefile;
    if (o->unix_path) {
        if (stat(o->unix_path, &st) != 0 || !S_ISREG(st.st_mode))
            return s_connect_node(o);
        nodefile = o->unix_path;            /* -u naming a node file */
    }
    int err = 0;
    ac_t *ac = ac_connect(nodefile, o->timeout_ms, &err);
    if (ac)
        return ac;
    char why[512];
    if (ac_nodefile_check(nodefile, NULL, why, sizeof why) != 0)
        fprintf(stderr, S_PROG ": %s\n", why);
    else
        fprintf(stderr, S_PROG ": cannot connect: %s\n", ac_strerror(err));
    return NULL;
}

static int
s_run(s_cli_t *cli)
{
    /* The report reads the run directory even when no node answers. */
    if (cli->mode == M_SNAPSHOT && cli->ndumps)
        return telem_client_snapshot_dump(cli->dumps, cli->ndumps, &cli->o,
                                          cli->node);
    if (cli->mode == M_REPORT && cli->ndumps)
        return telem_client_report_dump(cli->dumps, cli->ndumps, cli->rundir,
                                        cli->out_path, cli->start_ns);
    if (cli->mode == M_REPORT)
        return telem_client_report(&cli->o, cli->rundir, cli->out_path,
                                   cli->start_ns ? cli->start_ns : 1);
    ac_t *ac = s_connect(&cli->o);
    if (!ac)
        return 1;
    int code;
    switch (cli->mode) {
    case M_LIST:
        code = cli->o.tau ? telem_client_tau_list(ac, &cli->o)
                          : s_run_list(ac, &cli->o);
        break;
    case M_VALUES:
    case M_GET:
        code = cli->o.tau ? telem_client_tau_values(ac, &cli->o)
                          : s_run_values(ac, &cli->o);
        break;
    case M_QUERY:
        code = s_run_query(ac, cli);
        break;
    case M_STATUS:
    case M_LEVEL:
    case M_SHUTDOWN:
        code = s_control(ac, cli);
        break;
    case M_NODES:
        code = s_run_nodes(ac, &cli->o);
        break;
    case M_SNAPSHOT:
        code = s_snapshot(ac, cli);
        break;
    case M_DUMP:
        code = telem_client_dump(ac, &cli->o, cli->out_path, cli->rundir,
                                 cli->start_ns, cli->end_ns);
        break;
    default:
        code = telem_client_track(ac, &cli->o);
        break;
    }
    ac_close(&ac);
    return code;
}

int
main(int argc, char **argv)
{
    s_cli_t cli = { .o = { .fmt = TELEM_CLIENT_FMT_MD, .hz = 1.0,
                           .out = stdout },
                    .level = -1 };
    int code = s_parse(&cli, argc, argv);
    if (code < 0 && cli.out_path && cli.mode != M_REPORT && cli.mode != M_DUMP
        && !(cli.o.out = fopen(cli.out_path, "w"))) {
        fprintf(stderr, S_PROG ": cannot open %s: %s\n", cli.out_path,
                strerror(errno));
        code = 1;
    }
    if (code < 0)
        code = s_run(&cli);
    if (cli.o.out && cli.o.out != stdout && fclose(cli.o.out) != 0 && !code)
        code = 1;
    free(cli.list);
    free(cli.o.metrics);
    free(cli.sels);
    return code;
}
