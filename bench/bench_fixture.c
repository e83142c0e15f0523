/* bench_fixture.c - reading the recorded series (bench_fixture.h). */
#include "bench_fixture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"

static void
s_name(bench_series_t *s, json_t *js)
{
    json_t *tags = json_object_get(js, "tags");
    size_t k = (size_t) snprintf(s->name, sizeof s->name, "%s{", s->metric);
    const char *key;
    json_t *v;
    int first = 1;
    json_object_foreach(tags, key, v) {
        if (k < sizeof s->name)
            k += (size_t) snprintf(s->name + k, sizeof s->name - k,
                                   "%s%s=\"%s\"", first ? "" : ",", key,
                                   json_string_value(v));
        first = 0;
    }
    if (k < sizeof s->name - 1)
        snprintf(s->name + k, sizeof s->name - k, "}");
}

static void
s_series(bench_series_t *s, json_t *js)
{
    snprintf(s->metric, sizeof s->metric, "%s",
             json_string_value(json_object_get(js, "metric")));
    s_name(s, js);
    json_t *pts = json_object_get(js, "points");
    s->n = (uint32_t) json_array_size(pts);
    s->ts = malloc((s->n + 1) * sizeof *s->ts);
    s->val = malloc((s->n + 1) * sizeof *s->val);
    if (!s->ts || !s->val)
        bench_die("bench_fixture", "out of memory");
    s->ts[s->n] = 0;
    s->val[s->n] = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        json_t *p = json_array_get(pts, i);
        s->ts[i] = json_integer_value(json_array_get(p, 0));
        json_t *v = json_array_get(p, 1);
        s->val[i] = json_is_null(v) ? NAN : json_number_value(v);
    }
}

void
bench_fixture_load(bench_fixture_t *f, const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
    FILE *in = popen(cmd, "r");
    json_error_t err;
    json_t *root = in ? json_loadf(in, 0, &err) : NULL;
    if (in)
        pclose(in);
    json_t *arr = root ? json_object_get(root, "series") : NULL;
    if (!root || json_array_size(arr) == 0)
        bench_die("bench_fixture", "cannot read series from %s", path);
    f->path = path;
    f->ns = json_array_size(arr);
    f->s = calloc(f->ns, sizeof *f->s);
    if (!f->s)
        bench_die("bench_fixture", "out of memory");
    f->npoints = 0;
    for (size_t i = 0; i < f->ns; i++) {
        s_series(&f->s[i], json_array_get(arr, i));
        f->npoints += f->s[i].n;
    }
    json_decref(root);
}

void
bench_fixture_free(bench_fixture_t *f)
{
    for (size_t i = 0; f->s && i < f->ns; i++) {
        free(f->s[i].ts);
        free(f->s[i].val);
    }
    free(f->s);
    f->s = NULL;
    f->ns = 0;
}
