/* telem_view_export.c - `telem_view --export csv|json`: the points of dump
 * files written out instead of served.
 *
 * CSV (RFC 4180; a field holding a comma, quote or line break is quoted,
 * quotes doubled), one point a line:
 *   node,metric,tags,timestamp_ns,value
 * tags "k1=v1;k2=v2" (sorted by key, host included); values "%.17g"
 * (exact round trip), nan, inf, -inf as C prints them.
 * JSON, one document:
 *   {"series": [{"node", "metric", "tags": {k: v}, "type": "gauge"|
 *    "counter", "unit", "points": [[timestamp_ns, value], ...]}, ...]}
 * values as JSON numbers with 17 significant digits; NaN and the
 * infinities, which JSON has no number for, as the strings "NaN",
 * "Infinity", "-Infinity".
 * Series come sorted by node, then metric and tags; points in time order,
 * duplicates across files removed (telem_hist.h). */
#include "telem_view.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    FILE *out;
    int json;
    uint64_t series, points;
} s_export_t;

static void
s_csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static void
s_csv(s_export_t *e, const char *node, const telem_series_t *s)
{
    char tags[TELEM_TAGS_MAX * (2 * TELEM_NAME_MAX + 2) + 1] = "";
    size_t len = 0;
    for (uint32_t t = 0; t < s->ntags; t++)
        len += (size_t) snprintf(tags + len, sizeof tags - len, "%s%s=%s",
                                 t ? ";" : "", s->tags[t].key,
                                 s->tags[t].value);
    for (uint32_t p = 0; p < s->npoints; p++) {
        s_csv_field(e->out, node);
        fputc(',', e->out);
        s_csv_field(e->out, s->metric);
        fputc(',', e->out);
        s_csv_field(e->out, tags);
        fprintf(e->out, ",%lld,%.17g\n", (long long) s->ts[p], s->values[p]);
    }
}

static void
s_json_str(FILE *out, const char *s)
{
    json_t *j = json_string(s);
    if (j)
        json_dumpf(j, out, JSON_ENCODE_ANY);
    else
        fputs("\"\"", out);       /* not UTF-8: never from a valid dump */
    json_decref(j);
}

static void
s_json(s_export_t *e, const char *node, const telem_series_t *s)
{
    FILE *o = e->out;
    fputs(e->series ? ",\n  {\"node\": " : "\n  {\"node\": ", o);
    s_json_str(o, node);
    fputs(", \"metric\": ", o);
    s_json_str(o, s->metric);
    fputs(", \"tags\": {", o);
    for (uint32_t t = 0; t < s->ntags; t++) {
        fputs(t ? ", " : "", o);
        s_json_str(o, s->tags[t].key);
        fputs(": ", o);
        s_json_str(o, s->tags[t].value);
    }
    fprintf(o, "}, \"type\": \"%s\", \"unit\": ", s->type
            == TELEM_METRIC_COUNTER ? "counter" : "gauge");
    s_json_str(o, s->unit ? s->unit : "");
    fputs(", \"points\": [", o);
    for (uint32_t p = 0; p < s->npoints; p++) {
        double v = s->values[p];
        fprintf(o, "%s[%lld, ", p ? ", " : "", (long long) s->ts[p]);
        if (isnan(v))
            fputs("\"NaN\"]", o);
        else if (isinf(v))
            fputs(v > 0 ? "\"Infinity\"]" : "\"-Infinity\"]", o);
        else
            fprintf(o, "%.17g]", v);
    }
    fputs("]}", o);
}

static int
s_one(void *arg, const char *node, const telem_series_t *s)
{
    s_export_t *e = arg;
    if (s->npoints == 0)
        return 0;
    if (e->json)
        s_json(e, node, s);
    else
        s_csv(e, node, s);
    e->series++;
    e->points += s->npoints;
    return ferror(e->out) ? TELEM_EIO : 0;
}

int
telem_view_export(telem_hist_t *h, const telem_view_export_t *x, FILE *out,
                  uint64_t *series, uint64_t *points)
{
    s_export_t e = { out, x->json, 0, 0 };
    telem_store_query_t q = { 0 };
    q.metrics = x->metrics;
    q.nmetrics = (uint32_t) x->nmetrics;
    q.filters = x->tags;
    q.nfilters = (uint32_t) x->ntags;
    q.start_ns = x->start_ns;
    q.end_ns = x->end_ns;
    fputs(e.json ? "{\"series\": [" : "node,metric,tags,timestamp_ns,value\n",
          out);
    int rc = telem_hist_query(h, NULL, &q, s_one, &e);
    if (e.json)
        fputs(e.series ? "\n]}\n" : "]}\n", out);
    if (!rc && (fflush(out) != 0 || ferror(out)))
        rc = TELEM_EIO;
    *series = e.series;
    *points = e.points;
    return rc;
}
