/* telem_view.c - a finished job's telemetry from its dump files: the same
 * HTTP API and dashboard as telem_agg, or the points written out.
 *
 *   telem_view [--port N] [--bind ADDR] [options] DUMP|DIR...
 *   telem_view --export csv|json [-o FILE] [--start T] [--end T]
 *              [--metric M]... [--tag k=v]... DUMP...
 *
 * A thin main: it reads the command line, reads the files into the dump
 * data source (agg_dump.c: telem_hist.h over dump and segment files), and
 * either starts the HTTP front end (runtime/http) with the aggregator of
 * telem_agg (agg.c) over that source, until SIGINT, SIGTERM or SIGHUP, or
 * writes the export (telem_view_export.c) and exits.  Signals are read
 * from a signalfd, as in telem_agg. */
#include "agg.h"
#include "telem_web.h"
#include "agg_cli.h"
#include "agg_dump.h"
#include "telem_view.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "telem_cli.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_signals.h"

#define S_PROG "telem_view"
#define S_PORT_DEFAULT 4242
#define S_FILES_MAX 256

static const char s_usage[] =
"Usage: telem_view [options] DUMP|DIR...\n"
"       telem_view --export csv|json [-o FILE] [--start T] [--end T]\n"
"                  [--metric M]... [--tag k=v]... DUMP|DIR...\n"
"\n"
"Serve a finished job's telemetry from its dump files (telem_client dump,\n"
"telem_launch --dump; segment files of a node's log too) with telem_agg's\n"
"HTTP API: OpenTSDB 2.4 (for Grafana) and the dashboard at /.  Several\n"
"files (nodes, ranges, runs) merge without duplicate points.  /api/put\n"
"and /api/reboot answer 501: there is no live job.  A DIR argument reads\n"
"its segment (*.tseg) and dump (*.tdump) files: a node's flush log\n"
"(RUNDIR/NODE/log), history after a crash with no dump made; a run\n"
"directory reads every NODE/log in it.\n"
"\n"
"Options:\n"
"  -p, --port N            TCP port (0: any free one)             [4242]\n"
"  -b, --bind ADDR         address to listen on              [127.0.0.1]\n"
"      --token-file F      require 'Authorization: Bearer TOKEN' (F: mode\n"
"                          0600, yours)\n"
"      --max-body BYTES    largest request body (larger: 413)    [1048576]\n"
"      --max-conns N       connections at once                        [64]\n"
"      --threads N         worker threads                              [4]\n"
"      --cors              allow cross-origin requests\n"
"      --log-level LVL     error, warn, info, debug                  [info]\n"
"Export (instead of serving):\n"
"  -e, --export FMT        csv (node,metric,tags,timestamp_ns,value) or\n"
"                          json ({\"series\": [...]}); see docs/telem_view.md\n"
"  -o, --output FILE       write to FILE (replaced atomically)  [stdout]\n"
"      --start T, --end T  range: ns since the epoch, or a number with a\n"
"                          unit (1700000000s, 1700000000000ms); negative:\n"
"                          before the end of the files' data   [all of it]\n"
"      --metric M          only metric M (repeatable)\n"
"      --tag k=v           only series with tag k=v (v \"*\": present)\n"
"  -h, --help              show this help\n"
"  -V, --version           show the version\n"
"\n"
"Exit: 0, 1 (a file cannot be read, the server cannot start, the export\n"
"cannot be written), 2 (bad command line).  See docs/telem_view.md.\n";

typedef struct {
    telem_http_opts_t http;
    const char *token_file;
    char token[512];
    const char *files[S_FILES_MAX];
    size_t nfiles;
    int export_fmt;                /* 0 none, 1 csv, 2 json */
    const char *out_path;
    int64_t start_ns, end_ns;
    const char *metrics[TELEM_QUERY_METRICS_MAX];
    size_t nmetrics;
    telem_tag_t tags[TELEM_TAGS_MAX];
    size_t ntags;
} s_args_t;

/* ns, or a number with s/ms/us/ns. */
static int
s_time(const char *v, int64_t *out)
{
    static const struct { const char *u; double m; } units[] = {
        { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
    if (telem_cli_int64(v, INT64_MIN / 2, INT64_MAX / 2, out) == 0)
        return 0;
    char *end = NULL;
    double d = strtod(v, &end);
    for (size_t i = 0; end != v && i < 4; i++)
        if (strcmp(end, units[i].u) == 0 && d * units[i].m > -9e18
            && d * units[i].m < 9e18) {
            *out = (int64_t) (d * units[i].m);
            return 0;
        }
    return -1;
}

static int
s_tag(s_args_t *a, char *v)
{
    char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1] || a->ntags == TELEM_TAGS_MAX)
        return telem_cli_bad(S_PROG, "--tag", v, "k=v, at most 16");
    *eq = '\0';
    a->tags[a->ntags++] = (telem_tag_t) { v, eq + 1 };
    return 0;
}

static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    int rc = agg_cli_http_option(S_PROG, c, v, &a->http);
    if (rc >= 0)
        return rc;
    switch (c) {
    case 'T': a->token_file = v; return 0;
    case 'e':
        a->export_fmt = strcmp(v, "csv") == 0 ? 1 : strcmp(v, "json") == 0
                        ? 2 : 0;
        return a->export_fmt ? 0 : telem_cli_bad(S_PROG, "--export", v,
                                                 "csv or json");
    case 'o': a->out_path = v; return 0;
    case 's': case 'E':
        return s_time(v, c == 's' ? &a->start_ns : &a->end_ns)
               ? telem_cli_bad(S_PROG, c == 's' ? "--start" : "--end", v,
                               "ns since the epoch, or 1700000000s, ms, us")
               : 0;
    case 'm':
        if (a->nmetrics == TELEM_QUERY_METRICS_MAX)
            return telem_cli_error(S_PROG, "at most %d --metric",
                                   TELEM_QUERY_METRICS_MAX);
        a->metrics[a->nmetrics++] = v;
        return 0;
    case 'g': return s_tag(a, v);
    default: return 2;
    }
}

static int
s_operands(void *arg, int argc, char **argv)
{
    s_args_t *a = arg;
    for (int i = 0; i < argc; i++) {
        if (a->nfiles == S_FILES_MAX)
            return telem_cli_error(S_PROG, "at most %d dump files",
                                   S_FILES_MAX);
        a->files[a->nfiles++] = argv[i];
    }
    return 0;
}

static int
s_parse(s_args_t *a, int argc, char **argv, telem_log_level_t *level)
{
    static const struct option opts[] = {
        { "port", 1, 0, 'p' }, { "bind", 1, 0, 'b' },
        { "token-file", 1, 0, 'T' }, { "max-body", 1, 0, 'B' },
        { "max-conns", 1, 0, 'C' }, { "threads", 1, 0, 'H' },
        { "cors", 0, 0, 'O' }, { "export", 1, 0, 'e' },
        { "output", 1, 0, 'o' }, { "start", 1, 0, 's' }, { "end", 1, 0, 'E' },
        { "metric", 1, 0, 'm' }, { "tag", 1, 0, 'g' },
        { "log-level", 1, 0, 'l' }, { "help", 0, 0, 'h' },
        { "version", 0, 0, 'V' }, { 0, 0, 0, 0 }
    };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = ":p:b:e:o:hV",
        .longopts = opts, .option = s_option, .operands = s_operands,
        .log_level = level,
        .version = "telem_view " TELEM_AGG_VERSION " (OpenTSDB API 2.4)",
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, a);
    if (rc == 0 && a->nfiles == 0)
        rc = telem_cli_error(S_PROG, "no dump file given (telem_view "
                             "DUMP...; make one with telem_client dump)");
    if (rc == 0 && !a->export_fmt && (a->out_path || a->nmetrics || a->ntags
                                      || a->start_ns || a->end_ns))
        rc = telem_cli_error(S_PROG, "-o, --start, --end, --metric and --tag "
                             "go with --export");
    if (rc == 0 && a->token_file && (rc = agg_read_token(
            S_PROG, a->token_file, a->token, sizeof a->token)) == 0)
        a->http.token = a->token;
    return rc;
}

/* Negative --start/--end: before the end of the files' data. */
static int64_t
s_abs(int64_t v, int64_t last)
{
    return v < 0 ? last + v : v;
}

static int
s_export(s_args_t *a, agg_dump_t *d)
{
    telem_hist_t *h = agg_dump_hist(d);
    telem_hist_stats_t st;
    telem_hist_stats(h, &st);
    telem_view_export_t x = { a->export_fmt == 2, a->metrics, a->nmetrics,
                              a->tags, a->ntags, s_abs(a->start_ns,
                                                       st.last_ts),
                              s_abs(a->end_ns, st.last_ts) };
    char tmp[4200] = "";
    FILE *out = stdout;
    if (a->out_path) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", a->out_path,
                 (long) getpid());
        if (!(out = fopen(tmp, "we"))) {
            fprintf(stderr, S_PROG ": cannot write %s: %s\n", tmp,
                    strerror(errno));
            return 1;
        }
    }
    uint64_t ns = 0, np = 0;
    int rc = telem_view_export(h, &x, out, &ns, &np);
    if (out != stdout && fclose(out) != 0 && !rc)
        rc = TELEM_EIO;
    if (!rc && *tmp && rename(tmp, a->out_path) != 0)
        rc = TELEM_EIO;
    if (rc) {
        fprintf(stderr, S_PROG ": export failed: %s\n", rc == TELEM_EIO
                ? strerror(errno) : telem_strerror(rc));
        if (*tmp)
            unlink(tmp);
        return 1;
    }
    telem_hist_stats_t after;
    telem_hist_stats(h, &after);
    if (after.bad > st.bad)
        fprintf(stderr, S_PROG ": warning: %llu damaged block(s) could not "
                "be read and were skipped; the export holds the rest\n",
                (unsigned long long) (after.bad - st.bad));
    fprintf(stderr, S_PROG ": exported %llu series, %llu points%s%s\n",
            (unsigned long long) ns, (unsigned long long) np,
            a->out_path ? " to " : "", a->out_path ? a->out_path : "");
    return 0;
}

static int
s_serve(s_args_t *a, agg_dump_t *d, int sigfd)
{
    int err = 0;
    char why[512] = "";
    agg_cfg_t cfg = { .src_vt = &agg_dump_vt, .src = d, .rundir = "/" };
    agg_t *agg = agg_new(&cfg, &err);
    if (!agg) {
        telem_log(TELEM_LOG_ERROR, "cannot start: %s", telem_strerror(err));
        return 1;
    }
    telem_http_t *http = telem_http_new(&a->http, agg_handle, agg, &err, why,
                                        sizeof why);
    if (!http) {
        agg_destroy(&agg);
        return 1;
    }
    char url[600];
    agg_cli_url(&a->http, telem_http_port(http), url, sizeof url);
    printf("telem_view: serving %s (OpenTSDB API, dashboard at /) from %zu "
           "file%s%s\n", url, a->nfiles,
           a->nfiles == 1 ? "" : "s", a->http.token
           ? "; a bearer token is required" : "");
    fflush(stdout);
    agg_cli_wait_stop(sigfd);
    telem_http_destroy(&http);
    agg_destroy(&agg);
    return 0;
}

int
main(int argc, char **argv)
{
    static s_args_t a;
    a.http.port = S_PORT_DEFAULT;
    a.http.name = S_PROG;
    a.http.open_paths = telem_web_open_paths();
    telem_log_level_t level = TELEM_LOG_INFO;
    int rc = s_parse(&a, argc, argv, &level);
    if (rc)
        return rc == 1 ? 0 : rc;
    telem_log_init(S_PROG, level);
    char why[4400] = "";
    agg_dump_t *d = agg_dump_new(a.files, a.nfiles, why, sizeof why);
    if (!d) {
        fprintf(stderr, S_PROG ": %s\n", why);
        return 1;
    }
    if (a.export_fmt) {
        rc = s_export(&a, d);
        agg_dump_destroy(&d);
        return rc;
    }
    int sigfd = telem_signals_open_stop(0);
    if (sigfd < 0) {
        telem_log(TELEM_LOG_ERROR, "cannot block the stop signals: %s",
                  strerror(errno));
        agg_dump_destroy(&d);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = s_serve(&a, d, sigfd);
    close(sigfd);
    agg_dump_destroy(&d);
    return rc;
}
