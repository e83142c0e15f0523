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
 * printed; the missing nodes are always named on stderr).  The command
 * line is parsed and checked by telem_client_cli.c, once, before any
 * socket is opened; this file runs the mode it names.
 *
 * Call order: this file calls telem_client_cli.c, telem_client_report.c,
 * telem_client_track.c, telem_client_result.c and telem_client_fmt.c;
 * none of them calls back into it.
 */
#include "telem_client_cli.h"
#include "telem_nodesock.h"
#include "telem_paths.h"
#include "telem_time.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_PROG "telem_client"

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
s_run_query(ac_t *ac, const telem_client_cli_t *cli)
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
    telem_client_fmt_u64(f, st->bad_messages);
    telem_client_fmt_u64(f, st->denied);
    telem_client_fmt_u64(f, st->refused_peers);
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
        "flush_errors", "bad", "denied", "refused_peers"
    };
    ac_status_result_t *r = NULL;
    int rc = ac_control(ac, node, op, arg, 0, &r);
    size_t n = ac_status_result_count(r), nm = 0;
    const char **missing = calloc(n + 1, sizeof *missing);
    telem_client_fmt_t *f = telem_client_fmt_new(o->fmt, o->out, "nodes",
                                                 cols, 19, -1);
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
s_control(ac_t *ac, const telem_client_cli_t *cli)
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
s_snapshot(ac_t *ac, const telem_client_cli_t *cli)
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
s_run(telem_client_cli_t *cli)
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
    telem_client_cli_t cli = { .o = { .fmt = TELEM_CLIENT_FMT_MD, .hz = 1.0,
                           .out = stdout },
                    .level = -1 };
    int code = telem_client_cli_parse(&cli, argc, argv);
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
