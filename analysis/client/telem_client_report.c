/* telem_client_report.c - `telem_client report`: one self-contained HTML
 * file about a job.
 *
 * Gathers the job data object of analysis/web/telem_web.h: the nodes and
 * their states, the restarts and the detector events from the run
 * directory's files (analysis/web/telem_web_job.h), the series of the
 * collector metrics (cg_*_seconds), of a few node metrics and of the
 * dashboard's rows (per-core CPU, pressure, InfiniBand, GPU health) from
 * every node through the analysis client, the nodes that did not answer, and
 * hands it to telem_web_report_write(), which writes the page with its
 * data.  The file is written to a temporary name beside the target and
 * renamed, so a reader never sees half a report.
 *
 * Call order: telem_client.c calls this file; it calls
 * telem_client_result.c and analysis/web.
 */
#include "telem_client.h"
#include "telem_web_job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_paths.h"
#include "telem_time.h"
#include "telem_web.h"

#define S_PROG "telem_client"

/* The node metrics charted beside the collectors' (telemd, level 2). */
static const char *const s_node_metrics[] = {
    "cpu_percent", "used_ram", "load_average", "num_running_processes",
};
#define S_NNODE_METRICS (sizeof s_node_metrics / sizeof s_node_metrics[0])

/* cg_<kernel>_seconds, not cg_<kernel>_seconds_spread. */
static int
s_is_collector_metric(const char *m)
{
    size_t n = strlen(m);
    return n > 11 && strncmp(m, "cg_", 3) == 0
        && strcmp(m + n - 8, "_seconds") == 0;
}

/* The rows below the node metrics (telem.js draws them): per-core CPU,
 * pressure, InfiniBand and GPU health, by name prefix. */
static const char *const s_row_prefixes[] = {
    "cpu_core_percent", "pressure_", "ib_", "gpu_",
};
#define S_NROW_PREFIXES (sizeof s_row_prefixes / sizeof s_row_prefixes[0])

/* pressure_*_percent (not the _seconds_total counters), cpu_core_percent
 * (not the per-mode split), every ib_* and gpu_* series. */
static int
s_is_row_metric(const char *m)
{
    size_t n = strlen(m);
    for (size_t k = 0; k < S_NROW_PREFIXES; k++) {
        size_t p = strlen(s_row_prefixes[k]);
        if (strncmp(m, s_row_prefixes[k], p) != 0)
            continue;
        if (k == 0)
            return m[p] == '\0';
        if (k == 1)
            return n > 8 && strcmp(m + n - 8, "_percent") == 0;
        return 1;
    }
    return 0;
}

int
telem_client_report_charted(const char *m)
{
    for (size_t k = 0; k < S_NNODE_METRICS; k++)
        if (strcmp(m, s_node_metrics[k]) == 0)
            return 1;
    return s_is_collector_metric(m) || s_is_row_metric(m);
}

/* ---- missing nodes ----------------------------------------------------- */

/* Adds r's missing nodes to the array `missing` ({"node", "why"}), each
 * node once. */
static void
s_add_missing(json_t *missing, const ac_result_t *r)
{
    for (size_t i = 0; i < ac_result_nmissing(r); i++) {
        const char *node = ac_result_missing(r, i);
        size_t k;
        json_t *m;
        json_array_foreach(missing, k, m)
            if (strcmp(json_string_value(json_object_get(m, "node")),
                       node) == 0)
                break;
        if (k < json_array_size(missing))
            continue;
        json_array_append_new(missing, json_pack(
            "{s:s, s:s}", "node", node, "why",
            ac_result_missing_message(r, i)));
    }
}

/* ---- series -------------------------------------------------------------- */

json_t *
telem_client_report_series_json(const telem_series_t *s)
{
    json_t *tags = json_object(), *dps = json_array();
    for (uint32_t t = 0; tags && t < s->ntags; t++)
        json_object_set_new(tags, s->tags[t].key,
                            json_string(s->tags[t].value));
    for (uint32_t p = 0; dps && p < s->npoints; p++) {
        json_t *v = json_real(s->values[p]);   /* NULL for NaN, inf */
        json_array_append_new(dps, json_pack(
            "[I, o]", (json_int_t) (s->ts[p] / 1000000),
            v ? v : json_null()));
    }
    return json_pack("{s:s, s:o, s:[], s:o}", "metric", s->metric,
                     "tags", tags, "aggregateTags", "dps", dps);
}

/* The metrics to chart, from the catalog: collector metrics and the node
 * metrics some node has.  Returns how many were put in names[max]. */
static size_t
s_pick_metrics(ac_t *ac, json_t *missing, const char **names, size_t max,
               ac_result_t **catalog)
{
    size_t n = 0;
    ac_metrics(ac, catalog);
    if (!*catalog)
        return 0;
    s_add_missing(missing, *catalog);
    for (size_t i = 0; i < ac_result_nseries(*catalog) && n < max; i++) {
        const char *m = ac_result_series(*catalog, i)->metric;
        if (telem_client_report_charted(m)
            && (n == 0 || strcmp(names[n - 1], m) != 0))
            names[n++] = m;    /* the catalog is sorted by metric */
    }
    return n;
}

/* Queries the chosen metrics since start_ns into the array `series`. */
static void
s_query_series(ac_t *ac, int64_t start_ns, json_t *series, json_t *missing)
{
    const char *names[TELEM_QUERY_METRICS_MAX];
    ac_result_t *catalog = NULL, *r = NULL;
    size_t n = s_pick_metrics(ac, missing, names, TELEM_QUERY_METRICS_MAX,
                              &catalog);
    if (n) {
        ac_query_t q = { .metrics = names, .nmetrics = n,
                         .start_ns = start_ns };
        ac_query(ac, &q, &r);
    }
    if (r) {
        s_add_missing(missing, r);
        if (ac_result_ntruncated(r))
            fprintf(stderr, S_PROG ": %zu node(s) cut their reply to the size "
                    "limit: use a later --start\n", ac_result_ntruncated(r));
    }
    for (size_t i = 0; i < ac_result_nseries(r); i++)
        json_array_append_new(series, telem_client_report_series_json(ac_result_series(r, i)));
    ac_result_destroy(&r);
    ac_result_destroy(&catalog);
}

/* Without a launcher's job file: the node file's nodes, all active, and
 * the restarts the log holds. */
static json_t *
s_job_from_nodes(const char *rundir, const ac_t *ac, size_t restarts)
{
    json_t *nodes = json_array();
    for (size_t i = 0; ac && nodes && i < ac_node_count(ac); i++)
        json_array_append_new(nodes, json_pack(
            "{s:s, s:s, s:I}", "name", ac_node_name(ac, i), "state", "active",
            "rank", (json_int_t) i));
    return json_pack("{s:s, s:i, s:I, s:o}", "rundir", rundir, "launcher_pid",
                     0, "restarts", (json_int_t) restarts, "nodes", nodes);
}

/* Without a node file: every active node of the job is missing. */
static void
s_all_missing(json_t *missing, const json_t *job, const char *why)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(job, "nodes"), i, n)
        if (strcmp(json_string_value(json_object_get(n, "state")),
                   "active") == 0)
            json_array_append_new(missing, json_pack(
                "{s:O, s:s}", "node", json_object_get(n, "name"), "why", why));
}

/* ---- writing ----------------------------------------------------------- */

/* Writes the report to a temporary file beside path and renames it into
 * place.  0 or -1 (said on stderr). */
static int
s_write_atomic(const char *path, const json_t *data, const char *title)
{
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.%ld", path, (long) getpid()) < 0)
        return -1;
    FILE *f = fopen(tmp, "we");
    int rc = f ? telem_web_report_write(f, data, title) : TELEM_EIO;
    int saved = errno;
    if (f && fclose(f) != 0 && rc == 0) {
        rc = TELEM_EIO;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = TELEM_EIO;
        saved = errno;
    }
    if (rc) {
        fprintf(stderr, S_PROG ": cannot write %s: %s\n", path,
                rc == TELEM_EIO && saved ? strerror(saved)
                                         : telem_strerror(rc));
        unlink(tmp);
    }
    free(tmp);
    return rc ? -1 : 0;
}

static const char *
s_plural(size_t n)
{
    return n == 1 ? "" : "s";
}

/* "wrote job.html: 3 nodes, 12 series, 2 events, 1 restart" */
static void
s_summary(const char *path, const json_t *data)
{
    size_t nodes = json_array_size(json_object_get(
        json_object_get(data, "job"), "nodes"));
    size_t series = json_array_size(json_object_get(data, "series"));
    size_t events = json_array_size(json_object_get(data, "events"));
    size_t restarts = json_array_size(json_object_get(data, "restarts"));
    size_t missing = json_array_size(json_object_get(data, "missing"));
    printf("wrote %s: %zu node%s, %zu series, %zu event%s, %zu restart%s",
           path, nodes, s_plural(nodes), series, events, s_plural(events),
           restarts, s_plural(restarts));
    if (missing)
        printf(", %zu node%s missing", missing, s_plural(missing));
    printf("\n");
}

/* ---- the report ---------------------------------------------------------- */

/* The node file to read: --nodefile; with --rundir the launcher's
 * <rundir>/launch/telemd_nodes when there is one (every node whose telemd
 * runs, nodes taken out of the job included, so that the report shows
 * what got them taken out); $TELEM_NODEFILE; <--rundir>/nodes; else NULL
 * (ac_connect's default). */
static const char *
s_nodefile(const telem_client_opts_t *o, const char *rundir_arg, char *buf,
           size_t size)
{
    const char *env = getenv("TELEM_NODEFILE");
    if (o->nodefile)
        return o->nodefile;
    if (rundir_arg) {
        snprintf(buf, size, "%s/launch/telemd_nodes", rundir_arg);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    if ((env && *env) || !rundir_arg)
        return NULL;
    snprintf(buf, size, "%s/nodes", rundir_arg);
    return buf;
}

/* "snapshots": {node: its system snapshot} of the nodes that have one
 * (the dashboard's "Node systems"); nodes without are left out. */
static void
s_snapshots(ac_t *ac, int timeout_ms, json_t *data)
{
    json_t *out = json_object();
    ac_snapshot_result_t *r = NULL;
    ac_snapshot(ac, -1, timeout_ms, &r);
    for (size_t i = 0; r && i < ac_snapshot_result_count(r); i++) {
        size_t len = 0;
        const char *text = ac_snapshot_result_json(r, i, &len);
        json_t *doc = text ? json_loadb(text, len, 0, NULL) : NULL;
        if (json_is_object(doc))
            json_object_set(out, ac_snapshot_result_node(r, i), doc);
        json_decref(doc);
    }
    ac_snapshot_result_destroy(&r);
    json_object_set_new(data, "snapshots", out);
}

/* Series and missing nodes from the nodes; the job from the node file when
 * the launcher's is missing.  Returns the job object (owned). */
static json_t *
s_from_nodes(const telem_client_opts_t *o, const char *rundir_arg,
             const char *rundir, int64_t start_ns, json_t *job, json_t *data)
{
    char nodefile[TELEM_PATH_MAX + 8], why[512] = "";
    const char *nf = s_nodefile(o, rundir_arg, nodefile, sizeof nodefile);
    int err = 0;
    ac_t *ac = ac_connect(nf, o->timeout_ms, &err);
    if (!ac) {
        if (ac_nodefile_check(nf, NULL, why, sizeof why) == 0)
            snprintf(why, sizeof why, "%s", ac_strerror(err));
        fprintf(stderr, S_PROG ": no series: %s\n", why);
    } else {
        s_query_series(ac, start_ns, json_object_get(data, "series"),
                       json_object_get(data, "missing"));
        s_snapshots(ac, o->timeout_ms, data);
    }
    if (!job)
        job = s_job_from_nodes(rundir, ac, json_array_size(
            json_object_get(data, "restarts")));
    if (!ac && job)
        s_all_missing(json_object_get(data, "missing"), job, why);
    ac_close(&ac);
    return job;
}

int
telem_client_report(const telem_client_opts_t *o, const char *rundir_arg,
                    const char *path, int64_t start_ns)
{
    char rundir[TELEM_PATH_MAX];
    if (rundir_arg ? telem_rundir_resolve(rundir, sizeof rundir, rundir_arg)
                   : telem_rundir_default(rundir, sizeof rundir)) {
        fprintf(stderr, S_PROG ": run directory path too long\n");
        return 1;
    }
    json_t *job = telem_web_job_nodes(rundir, S_PROG, NULL);
    json_t *data = json_pack(
        "{s:i, s:I, s:o, s:o, s:[], s:[]}", "version", 1, "generated_ms",
        (json_int_t) (telem_now_ns() / TELEM_NS_PER_MS),
        "restarts", telem_web_job_restarts(rundir, S_PROG, NULL),
        "events", telem_web_job_events(rundir, S_PROG, NULL), "missing",
        "series");
    if (!data) {
        json_decref(job);
        fprintf(stderr, S_PROG ": out of memory\n");
        return 1;
    }
    job = s_from_nodes(o, rundir_arg, rundir, start_ns, job, data);
    json_object_set_new(data, "job", job ? job : json_object());
    char title[TELEM_PATH_MAX + 32];
    snprintf(title, sizeof title, "telem job report: %s", rundir);
    int code = telem_client_report_write(path, data, title);
    json_decref(data);
    return code;
}

int
telem_client_report_write(const char *path, const json_t *data,
                          const char *title)
{
    if (s_write_atomic(path, data, title) != 0)
        return 1;
    s_summary(path, data);
    return json_array_size(json_object_get(data, "missing")) ? 3 : 0;
}
