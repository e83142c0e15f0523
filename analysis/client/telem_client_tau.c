/* telem_client_tau.c - telem_client --tau: the documents of
 * tau_metric_proxy's client, field for field.
 *
 * tau's client writes lists of flat records:
 *   -l      {"name", "doc", "type"}   type TAU_METRIC_COUNTER or _GAUGE
 *   -v, -g  {"name", "ts", "value"}   ts in seconds, fractional
 *   -t, -T  a list of ticks, each a list of {"name", "ts", "value"}
 * where a name carries its labels in Prometheus syntax,
 * strace_hits_total{scall="read"}.  Here a series' name is its metric
 * with every tag but host as a label (host too when more than one node
 * was asked, so that two nodes' series never share a name), sorted by
 * key; ts is the newest point's time written exactly, nanoseconds as
 * nine decimals ("1667486717.483395123"), in every format; values use
 * "%.17g" (JSON: null for NaN and infinities).
 *
 * Formats, as tau writes them: json indented by four (ticks of a track
 * on one line each); yaml a sequence of mappings; txt a "# name doc type"
 * (or "# name ts value") header, then one record a line, fields one
 * blank apart, a field with a blank in it (or empty) in double quotes
 * with \" and \\ escaped; md a list, "* **name** (TYPE) : doc" and
 * "* name = **value** @ ts", under a "# List of ..." title.  Missing
 * nodes go to stderr only, as tau has no place for them.
 *
 * Call order: telem_client.c and telem_client_track.c call this file; it
 * calls telem_client_result.c and telem_client_fmt.c.
 */
#include "telem_client.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_NAME_MAX (TELEM_PROMNAME_TEXT_MAX + 2 * TELEM_TAGS_MAX * 2 \
                    * (TELEM_NAME_MAX + 4))

typedef enum { S_LIST, S_VALUES, S_TRACK } s_shape_t;

struct telem_client_tau {
    telem_client_fmt_kind_t kind;
    FILE *out;
    s_shape_t shape;
    size_t nrows;            /* rows in the document */
    size_t tick_rows;        /* rows in the current tick */
    size_t nticks;           /* ticks written */
    int started;
    int ended;
};

static const char *
s_type(telem_metric_type_t t)
{
    return t == TELEM_METRIC_COUNTER ? "TAU_METRIC_COUNTER"
                                     : "TAU_METRIC_GAUGE";
}

int
telem_client_tau_name(char *buf, size_t size, const telem_series_t *s,
                      int keep_host)
{
    static const char *const skip[] = { "host", NULL };
    return telem_promname_format(buf, size, s->metric, s->tags, s->ntags,
                                 keep_host ? NULL : skip);
}

/* ts ns as exact fractional seconds. */
static void
s_ts(char *buf, size_t size, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t) 0 - (uint64_t) ns : (uint64_t) ns;
    snprintf(buf, size, "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "",
             a / 1000000000u, a % 1000000000u);
}

static void
s_json_str(FILE *out, const char *s)
{
    char *clean = telem_client_fmt_utf8(s);
    json_t *j = clean ? json_string(clean) : NULL;
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(text ? text : "\"\"", out);
    free(text);
    json_decref(j);
    free(clean);
}

/* txt: a field, quoted when it holds a blank or is empty. */
static void
s_txt_field(FILE *out, const char *s, int last)
{
    if (*s && !strpbrk(s, " \t")) {
        fputs(s, out);
    } else {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"' || *s == '\\')
                fputc('\\', out);
            fputc(*s == '\n' ? ' ' : *s, out);
        }
        fputc('"', out);
    }
    fputc(last ? '\n' : ' ', out);
}

/* The document's opening, once, before the first row (or at the end). */
static void
s_start(telem_client_tau_t *t)
{
    if (t->started)
        return;
    t->started = 1;
    if (t->kind == TELEM_CLIENT_FMT_JSON)
        fputs(t->shape == S_TRACK ? "[" : "[\n", t->out);
    else if (t->kind == TELEM_CLIENT_FMT_MD)
        fprintf(t->out, "# List of telem %s\n\n",
                t->shape == S_LIST ? "Metrics" : "Values");
    else if (t->kind == TELEM_CLIENT_FMT_TXT)
        fputs(t->shape == S_LIST ? "# name doc type\n" : "# name ts value\n",
              t->out);
}

static telem_client_tau_t *
s_new(telem_client_fmt_kind_t kind, FILE *out, s_shape_t shape)
{
    telem_client_tau_t *t = calloc(1, sizeof *t);
    if (t)
        *t = (telem_client_tau_t) { .kind = kind, .out = out,
                                    .shape = shape };
    return t;
}

static void
s_list_row(telem_client_tau_t *t, const char *name, const char *doc,
           telem_metric_type_t type)
{
    s_start(t);
    FILE *out = t->out;
    switch (t->kind) {
    case TELEM_CLIENT_FMT_JSON:
        fputs(t->nrows ? ",\n    {\n        \"name\": " : "    {\n"
              "        \"name\": ", out);
        s_json_str(out, name);
        fputs(",\n        \"doc\": ", out);
        s_json_str(out, doc);
        fprintf(out, ",\n        \"type\": \"%s\"\n    }", s_type(type));
        break;
    case TELEM_CLIENT_FMT_YAML:
        fputs("- name: ", out);
        telem_client_fmt_yaml_quote(out, name);
        fputs("\n  doc: ", out);
        telem_client_fmt_yaml_quote(out, doc);
        fprintf(out, "\n  type: %s\n", s_type(type));
        break;
    case TELEM_CLIENT_FMT_TXT:
        s_txt_field(out, name, 0);
        s_txt_field(out, doc, 0);
        s_txt_field(out, s_type(type), 1);
        break;
    default:
        fprintf(out, "* **%s** (%s) : %s\n", name, s_type(type), doc);
        break;
    }
    t->nrows++;
}

/* A value as tau's JSON and YAML carry it. */
static void
s_value_text(char *buf, size_t size, double v, int yaml)
{
    if (isfinite(v))
        snprintf(buf, size, "%.17g", v);
    else if (!yaml)
        snprintf(buf, size, "null");
    else
        snprintf(buf, size, isnan(v) ? ".nan" : v > 0 ? ".inf" : "-.inf");
}

static void
s_value_json(telem_client_tau_t *t, const char *name, const char *ts,
             const char *v)
{
    FILE *out = t->out;
    if (t->shape == S_TRACK) {
        fputs(t->tick_rows ? ", " : t->nticks ? ",\n[" : "\n[", out);
        fputs("{\"name\": ", out);
        s_json_str(out, name);
        fprintf(out, ", \"ts\": %s, \"value\": %s}", ts, v);
        return;
    }
    fputs(t->nrows ? ",\n    {\n        \"name\": " : "    {\n"
          "        \"name\": ", out);
    s_json_str(out, name);
    fprintf(out, ",\n        \"ts\": %s,\n        \"value\": %s\n    }", ts, v);
}

void
telem_client_tau_value(telem_client_tau_t *t, const char *name,
                       int64_t ts_ns, double value)
{
    char ts[40], v[40];
    if (t->ended)
        return;
    s_start(t);
    s_ts(ts, sizeof ts, ts_ns);
    s_value_text(v, sizeof v, value, t->kind == TELEM_CLIENT_FMT_YAML);
    FILE *out = t->out;
    switch (t->kind) {
    case TELEM_CLIENT_FMT_JSON:
        s_value_json(t, name, ts, v);
        break;
    case TELEM_CLIENT_FMT_YAML:
        fputs(t->shape == S_TRACK && !t->tick_rows ? "- - name: "
              : t->shape == S_TRACK ? "  - name: " : "- name: ", out);
        telem_client_fmt_yaml_quote(out, name);
        fprintf(out, t->shape == S_TRACK ? "\n    ts: %s\n    value: %s\n"
                : "\n  ts: %s\n  value: %s\n", ts, v);
        break;
    case TELEM_CLIENT_FMT_TXT:
        snprintf(v, sizeof v, "%.17g", value);
        s_txt_field(out, name, 0);
        s_txt_field(out, ts, 0);
        s_txt_field(out, v, 1);
        break;
    default:
        snprintf(v, sizeof v, "%.17g", value);
        fprintf(out, "* %s = **%s** @ %s\n", name, v, ts);
        break;
    }
    t->nrows++;
    t->tick_rows++;
}

void
telem_client_tau_tick_end(telem_client_tau_t *t)
{
    if (t->tick_rows && t->shape == S_TRACK
        && t->kind == TELEM_CLIENT_FMT_JSON)
        fputc(']', t->out);
    t->nticks += t->tick_rows != 0;
    t->tick_rows = 0;
}

int
telem_client_tau_flush(telem_client_tau_t *t, int end)
{
    if (end && !t->ended) {
        telem_client_tau_tick_end(t);
        s_start(t);
        if (t->kind == TELEM_CLIENT_FMT_JSON)
            fputs(t->shape == S_TRACK ? "\n]\n" : t->nrows ? "\n]\n" : "]\n",
                  t->out);
        else if (t->kind == TELEM_CLIENT_FMT_YAML && !t->nrows)
            fputs("[]\n", t->out);
        t->ended = 1;
    }
    return fflush(t->out) != 0 || ferror(t->out) ? TELEM_EIO : 0;
}

telem_client_tau_t *
telem_client_tau_track_new(telem_client_fmt_kind_t kind, FILE *out)
{
    return s_new(kind, out, S_TRACK);
}

void
telem_client_tau_destroy(telem_client_tau_t **t_p)
{
    if (!t_p || !*t_p)
        return;
    free(*t_p);
    *t_p = NULL;
}

/* ---- one-shot modes ---------------------------------------------------- */

/* Ends the document; returns the exit code for rc. */
static int
s_finish(telem_client_tau_t *t, int rc)
{
    int code = telem_client_result_exit_code(rc);
    if (!t || telem_client_tau_flush(t, 1) != 0) {
        fprintf(stderr, "telem_client: writing the output failed\n");
        code = 1;
    }
    return code;
}

int
telem_client_tau_list(ac_t *ac, const telem_client_opts_t *o)
{
    ac_query_t q = { .tags = o->tags, .ntags = o->ntags,
                     .flags = TELEM_QUERY_LIST };
    ac_result_t *r = NULL;
    int rc = ac_query(ac, &q, &r);
    if (r)
        telem_client_result_missing_report(r);
    telem_client_tau_t *t = s_new(o->fmt, o->out, S_LIST);
    char *name = malloc(S_NAME_MAX);
    int keep_host = ac_node_count(ac) > 1;
    for (size_t i = 0; t && name && i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        telem_client_tau_name(name, S_NAME_MAX, s, keep_host);
        s_list_row(t, name, s->doc, s->type);
    }
    int code = name ? s_finish(t, rc) : 1;
    free(name);
    telem_client_tau_destroy(&t);
    ac_result_destroy(&r);
    return code;
}

int
telem_client_tau_values(ac_t *ac, const telem_client_opts_t *o)
{
    ac_query_t q = { .metrics = o->metrics, .nmetrics = o->nmetrics,
                     .tags = o->tags, .ntags = o->ntags,
                     .flags = TELEM_QUERY_LATEST };
    ac_result_t *r = NULL;
    int rc = ac_query(ac, &q, &r);
    if (r)
        telem_client_result_missing_report(r);
    telem_client_tau_t *t = s_new(o->fmt, o->out, S_VALUES);
    char *name = malloc(S_NAME_MAX);
    int keep_host = ac_node_count(ac) > 1;
    for (size_t i = 0; t && name && i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        if (!s->npoints || !telem_client_result_selected(o, s))
            continue;
        telem_client_tau_name(name, S_NAME_MAX, s, keep_host);
        telem_client_tau_value(t, name, s->ts[s->npoints - 1],
                               s->values[s->npoints - 1]);
    }
    size_t absent = telem_client_result_absent(o, r, 1);
    int code = name ? s_finish(t, rc) : 1;
    if (absent)
        code = 1;
    free(name);
    telem_client_tau_destroy(&t);
    ac_result_destroy(&r);
    return code;
}
