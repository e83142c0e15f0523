/* telem_client_report_dump.c - `telem_client report --dump FILE...`: the
 * job report of a finished job, from its dump files.
 *
 * The same job data object as the live report (telem_client_report.c):
 * the series of the charted metrics (collector and node metrics) from
 * every node, in the live report's order (metric, tags, node), the nodes
 * the files hold, and the restarts and events: the run directory's with
 * --rundir, else those the dumps hold (ANNOTATION records, dump
 * --rundir).  The files are read through the history index (telem_hist.h),
 * so several dumps (several nodes, overlapping ranges, several runs)
 * merge without duplicate points; a damaged file gives a warning and what
 * could be read.
 *
 * Call order: telem_client.c calls this file; it calls
 * telem_client_report.c's shared writer and runtime/store's reader.
 */
#include "telem_client.h"
#include "telem_web_job.h"

#include <stdlib.h>
#include <string.h>

#include "telem_hist.h"
#include "telem_time.h"

#define S_PROG "telem_client"

typedef struct {
    json_t *series;            /* the result */
    const char **names;        /* charted metrics */
    size_t n, cap;
} s_walk_t;

static int
s_pick(void *arg, const char *node, const telem_series_t *s)
{
    (void) node;
    s_walk_t *w = arg;
    if (!telem_client_report_charted(s->metric))
        return 0;
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->names[i], s->metric) == 0)
            return 0;
    if (w->n == w->cap)
        return 0;
    w->names[w->n++] = strdup(s->metric);
    return 0;
}

static int
s_take(void *arg, const char *node, const telem_series_t *s)
{
    (void) node;
    s_walk_t *w = arg;
    if (s->npoints)
        json_array_append_new(w->series, telem_client_report_series_json(s));
    return 0;
}

/* Orders the series as the analysis client does: metric, tags, node. */
static int
s_cmp(const void *pa, const void *pb)
{
    json_t *a = *(json_t *const *) pa, *b = *(json_t *const *) pb;
    int c = strcmp(json_string_value(json_object_get(a, "metric")),
                   json_string_value(json_object_get(b, "metric")));
    if (c)
        return c;
    char *ta = json_dumps(json_object_get(a, "tags"), JSON_SORT_KEYS);
    char *tb = json_dumps(json_object_get(b, "tags"), JSON_SORT_KEYS);
    c = ta && tb ? strcmp(ta, tb) : 0;
    free(ta);
    free(tb);
    return c;
}

static json_t *
s_sorted(json_t *series)
{
    size_t n = json_array_size(series);
    json_t **v = calloc(n ? n : 1, sizeof *v);
    json_t *out = json_array();
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_array_get(series, i);
    if (v)
        qsort(v, n, sizeof *v, s_cmp);
    for (size_t i = 0; v && i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    json_decref(series);
    return out;
}

telem_hist_t *
telem_client_hist_open(const char *const *dumps, size_t n, const char *what)
{
    telem_hist_t *h = telem_hist_new(NULL);
    for (size_t i = 0; h && i < n; i++) {
        telem_seg_damage_t dmg;
        int rc = telem_hist_add_file(h, dumps[i], &dmg);
        if (rc) {
            fprintf(stderr, S_PROG ": cannot read the dump %s: %s\n",
                    dumps[i], telem_strerror(rc));
            telem_hist_destroy(&h);
        } else if (dmg.bad || dmg.torn_tail)
            fprintf(stderr, S_PROG ": warning: %s is damaged: %llu "
                    "stretch(es), %llu bytes skipped%s; %s shows "
                    "what could be read\n", dumps[i],
                    (unsigned long long) dmg.bad,
                    (unsigned long long) dmg.bytes_skipped,
                    dmg.torn_tail ? " (cut short)" : "", what);
    }
    return h;
}

/* The dumps' job events of `type` as telem_web_job.h gives them. */
static json_t *
s_notes(telem_hist_t *h, telem_seg_note_t type)
{
    json_t *out = json_array();
    for (uint32_t i = 0; i < telem_hist_nnotes(h); i++) {
        const telem_hist_note_t *n = telem_hist_note(h, i);
        json_t *e = n->type == type ? json_loadb(n->json, n->len, 0, NULL)
                                    : NULL;
        if (json_is_object(e))
            json_array_append(out, e);
        json_decref(e);
    }
    return out;
}

/* "snapshots": {node: its newest snapshot in the files}. */
static json_t *
s_snapshots(telem_hist_t *h)
{
    json_t *out = json_object();
    for (uint32_t i = 0; i < telem_hist_nnodes(h); i++) {
        const char *json = NULL;
        size_t len = 0;
        const char *node = telem_hist_node(h, i);
        json_t *doc = telem_hist_snapshot(h, node, &json, &len, NULL) == 0
                      ? json_loadb(json, len, 0, NULL) : NULL;
        if (json_is_object(doc))
            json_object_set(out, node, doc);
        json_decref(doc);
    }
    return out;
}

static json_t *
s_job(telem_hist_t *h, const char *rundir, const char *first)
{
    json_t *job = rundir ? telem_web_job_nodes(rundir, S_PROG, NULL) : NULL;
    if (job)
        return job;
    json_t *nodes = json_array();
    for (uint32_t i = 0; i < telem_hist_nnodes(h); i++)
        json_array_append_new(nodes, json_pack(
            "{s:s, s:s, s:I}", "name", telem_hist_node(h, i), "state",
            "active", "rank", (json_int_t) i));
    return json_pack("{s:s, s:i, s:i, s:o}", "rundir", first, "launcher_pid",
                     0, "restarts", 0, "nodes", nodes);
}

int
telem_client_report_dump(const char *const *dumps, size_t n,
                         const char *rundir, const char *path,
                         int64_t start_ns)
{
    telem_hist_t *h = telem_client_hist_open(dumps, n, "the report");
    if (!h)
        return 1;
    const char *names[TELEM_QUERY_METRICS_MAX];
    s_walk_t w = { json_array(), names, 0, TELEM_QUERY_METRICS_MAX };
    telem_store_query_t q = { .flags = TELEM_QUERY_LIST };
    telem_hist_query(h, NULL, &q, s_pick, &w);
    q = (telem_store_query_t) { .metrics = names, .nmetrics = (uint32_t) w.n,
                                .start_ns = start_ns > 0 ? start_ns : 0 };
    if (w.n)
        telem_hist_query(h, NULL, &q, s_take, &w);
    json_t *data = json_pack(
        "{s:i, s:I, s:o, s:o, s:[], s:o}", "version", 1, "generated_ms",
        (json_int_t) (telem_now_ns() / TELEM_NS_PER_MS),
        "restarts", rundir ? telem_web_job_restarts(rundir, S_PROG, NULL)
                           : s_notes(h, TELEM_SEG_NOTE_RESTART),
        "events", rundir ? telem_web_job_events(rundir, S_PROG, NULL)
                         : s_notes(h, TELEM_SEG_NOTE_EVENT),
        "missing", "series", s_sorted(w.series));
    int code = 1;
    if (data) {
        json_object_set_new(data, "job", s_job(h, rundir, dumps[0]));
        json_object_set_new(data, "snapshots", s_snapshots(h));
        char title[4200];
        snprintf(title, sizeof title, "telem job report: %s%s", dumps[0],
                 n > 1 ? " and more dumps" : "");
        code = telem_client_report_write(path, data, title);
    }
    for (size_t i = 0; i < w.n; i++)
        free((char *) names[i]);
    json_decref(data);
    telem_hist_destroy(&h);
    return code;
}
