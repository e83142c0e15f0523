/* ac_dump_main.c - ac_dump(): the range, the catalog, the metas, the
 * snapshots and the job's events around the series (ac_dump.c), and the
 * file's life.
 *
 * The catalog (a TELEM_QUERY_LIST query with the dump's filters) names
 * the metrics to fetch and gives every node's meta of each (type, unit,
 * doc), written as META records.  The file is created only once some
 * node has answered the catalog, and removed again when the dump fails
 * before its end, so a failed dump leaves no half file behind. */
#include "ac_dump_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_time.h"
#include "telem_web_job.h"

int
ac__dump_fail(ac__dump_t *d, int rc, const char *what)
{
    if (!d->failed && d->why_size) {
        if (rc == TELEM_EIO && errno)
            snprintf(d->why, d->why_size, "%s: %s", what, strerror(errno));
        else
            snprintf(d->why, d->why_size, "%s: %s", what, telem_strerror(rc));
    }
    d->failed = 1;
    return rc;
}

void
ac__dump_note_missing(ac__dump_t *d, const ac_result_t *r)
{
    for (size_t i = 0; i < ac_result_nmissing(r); i++) {
        const char *node = ac_result_missing(r, i);
        char probe[300];
        snprintf(probe, sizeof probe, "%s (", node);
        if (strstr(d->missing, probe) == d->missing
            || (strstr(d->missing, probe) && strstr(d->missing, probe)[-1]
                == ' '))
            continue;
        size_t len = strlen(d->missing);
        snprintf(d->missing + len, sizeof d->missing - len, "%s%s (%s)",
                 len ? ", " : "", node, ac_result_missing_message(r, i));
        d->st.nodes_missing++;
    }
}

/* now + v for v < 0, `dflt` for 0, v otherwise. */
static int64_t
s_abs(int64_t v, int64_t now, int64_t dflt)
{
    return v < 0 ? now + v : v == 0 ? dflt : v;
}

/* META records: each node's meta of each metric, once (the catalog is
 * sorted by metric, tags, node); the metric names into *names. */
static int
s_metas(ac__dump_t *d, const ac_result_t *cat, const char ***names,
        size_t *n)
{
    size_t ns = ac_result_nseries(cat);
    *names = calloc(ns ? ns : 1, sizeof **names);
    const char **seen = calloc(ns ? ns : 1, sizeof *seen);
    size_t nseen = 0;
    int rc = *names && seen ? 0 : TELEM_ENOMEM;
    *n = 0;
    for (size_t i = 0; i < ns && rc == 0; i++) {
        const telem_series_t *s = ac_result_series(cat, i);
        const char *node = ac_result_series_node(cat, i);
        if (*n == 0 || strcmp((*names)[*n - 1], s->metric) != 0) {
            (*names)[(*n)++] = s->metric;
            nseen = 0;
        }
        size_t k = 0;
        while (k < nseen && strcmp(seen[k], node) != 0)
            k++;
        if (k < nseen)
            continue;
        seen[nseen++] = node;
        telem_meta_t m = { s->metric, s->type, s->unit ? s->unit : "",
                           s->doc ? s->doc : "" };
        rc = telem_dump_put_meta(d->dump, node, &m);
    }
    free(seen);
    return rc ? ac__dump_fail(d, rc, "writing the metas") : 0;
}

/* Each selected node's system snapshot (ac_snapshot()), as a SNAPSHOT
 * record stamped with the time it was fetched.  A node without one (an
 * older telemd: TELEM_ENOTFOUND) or that does not answer is left out: a
 * dump without a snapshot is still a dump, so this never fails the dump. */
static int
s_snapshots(ac__dump_t *d)
{
    ac_snapshot_result_t *r = NULL;
    ac_snapshot(d->ac, -1, d->o.timeout_ms, &r);
    int64_t now = telem_now_ns();
    int rc = 0;
    for (size_t i = 0; r && i < ac_snapshot_result_count(r) && !rc; i++) {
        const char *node = ac_snapshot_result_node(r, i);
        size_t len = 0;
        const char *json = ac_snapshot_result_json(r, i, &len);
        int want = !d->o.nodes;
        for (size_t k = 0; !want && k < d->o.nnodes; k++)
            want = strcmp(d->o.nodes[k], node) == 0;
        if (json && want)
            rc = telem_dump_put_snapshot(d->dump, node, json, len, now);
    }
    ac_snapshot_result_destroy(&r);
    return rc ? ac__dump_fail(d, rc, "writing the snapshots") : 0;
}

/* The run directory's events and restarts of type `type` in the range,
 * one ANNOTATION record each (the object as telem_web_job.h gives it). */
static int
s_notes_of(ac__dump_t *d, json_t *list, telem_seg_note_t type)
{
    size_t i;
    json_t *e;
    int rc = list ? 0 : TELEM_ENOMEM;
    json_array_foreach(list, i, e) {
        json_int_t t = json_integer_value(json_object_get(e, "time_ms"));
        if (t < d->start_ns / TELEM_NS_PER_MS || t > d->end_ns / TELEM_NS_PER_MS)
            continue;
        char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
        rc = text ? telem_dump_put_annotation(d->dump, type, t, text,
                                              strlen(text))
                  : TELEM_ENOMEM;
        free(text);
        if (rc)
            break;
        d->st.notes++;
    }
    json_decref(list);
    return rc;
}

static int
s_notes(ac__dump_t *d)
{
    if (!d->o.rundir)
        return 0;
    int rc = s_notes_of(d, telem_web_job_events(d->o.rundir, NULL, NULL),
                        TELEM_SEG_NOTE_EVENT);
    if (rc == 0)
        rc = s_notes_of(d, telem_web_job_restarts(d->o.rundir, NULL, NULL),
                        TELEM_SEG_NOTE_RESTART);
    return rc ? ac__dump_fail(d, rc, "writing the job's events") : 0;
}

static int
s_catalog(ac__dump_t *d, ac_result_t **cat)
{
    ac_query_t q = d->q;
    q.metrics = d->o.metrics;
    q.nmetrics = d->o.nmetrics;
    q.flags = TELEM_QUERY_LIST;
    int rc = ac_query(d->ac, &q, cat);
    if (!*cat)
        return ac__dump_fail(d, rc, "the catalog query was refused");
    d->st.queries++;
    ac__dump_note_missing(d, *cat);
    if (rc == TELEM_ETIMEDOUT || (rc && ac_result_nmissing(*cat)
                                  == (d->o.nodes ? d->o.nnodes
                                      : ac_node_count(d->ac)))) {
        snprintf(d->why, d->why_size, "no node answered: %s", d->missing);
        d->failed = 1;
        return rc ? rc : TELEM_ETIMEDOUT;
    }
    return 0;
}

static int
s_run(ac__dump_t *d, const char *path)
{
    ac_result_t *cat = NULL;
    const char **names = NULL;
    size_t n = 0;
    int rc = s_catalog(d, &cat);
    if (rc == 0 && !(d->dump = telem_dump_open(path, &rc)))
        rc = ac__dump_fail(d, rc, path);
    int made = d->dump != NULL;
    if (rc == 0)
        rc = s_metas(d, cat, &names, &n);
    if (rc == 0)
        rc = ac__dump_series(d, names, n);
    if (rc == 0)
        rc = s_snapshots(d);
    if (rc == 0)
        rc = s_notes(d);
    int crc = telem_dump_close(&d->dump);
    if (rc == 0 && crc)
        rc = ac__dump_fail(d, crc, "closing the dump");
    if (rc && made)
        unlink(path);
    free(names);
    ac_result_destroy(&cat);
    return rc;
}

int
ac_dump(ac_t *ac, const ac_dump_opts_t *o, const char *path,
        ac_dump_stats_t *st, char *why, size_t why_size)
{
    ac__dump_t d = { .ac = ac, .why = why, .why_size = why_size };
    if (why_size)
        *why = '\0';
    if (!ac || !o || !path || !*path) {
        snprintf(why, why_size, "no client, options or path");
        return TELEM_EINVAL;
    }
    d.o = *o;
    int64_t now = telem_now_ns();
    d.start_ns = s_abs(o->start_ns, now, 1);
    d.end_ns = s_abs(o->end_ns, now, now);
    if (d.start_ns > d.end_ns || d.start_ns <= 0) {
        snprintf(why, why_size, "the range is empty: start after end");
        return TELEM_EINVAL;
    }
    d.q.tags = o->tags;
    d.q.ntags = o->ntags;
    d.q.nodes = o->nodes;
    d.q.nnodes = o->nnodes;
    d.q.timeout_ms = o->timeout_ms;
    int rc = s_run(&d, path);
    if (st)
        *st = d.st;
    if (rc == 0 && d.st.nodes_missing) {
        snprintf(why, why_size, "some nodes are missing from the dump: %s",
                 d.missing);
        rc = TELEM_EPARTIAL;
    }
    return rc;
}
