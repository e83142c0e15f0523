/* agg_job.c - the job as the dashboard sees it: GET /telem/job, and the
 * detector events and restarts that /api/query hands Grafana as
 * annotations.
 *
 * The job data object (its shape is the dashboard's and the report's
 * contract, analysis/web/telem_web.h) is made of the launcher's files in
 * the run directory (the job file, restarts.log) and the watcher's
 * events file (telem_web_job.h reads them, bounded), plus the nodes that
 * did not answer a status request within the deadline ("missing").
 * Series are not part of it here: the live page asks /api/query for
 * them. */
#include "agg.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"
#include "telem_web_job.h"

/* "missing": the nodes that do not answer a status request. */
static json_t *
s_missing(agg_t *self)
{
    json_t *out = json_array();
    char why[512] = "";
    ac_t *ac = agg_ac_get(self, why, sizeof why);
    if (!ac)
        return out;
    ac_status_result_t *st = NULL;
    ac_status(ac, &st);
    agg_ac_put(self, ac);
    for (size_t i = 0; st && i < ac_status_result_count(st); i++)
        if (ac_status_result_code(st, i))
            json_array_append_new(out, json_pack(
                "{s:s, s:s}", "node", ac_status_result_node(st, i), "why",
                ac_status_result_message(st, i)));
    ac_status_result_destroy(&st);
    return out;
}

json_t *
agg_job_data(agg_t *self)
{
    json_t *data = telem_web_job_read(agg_rundir(self));
    if (data)
        json_object_set_new(data, "missing", s_missing(self));
    return data;
}

/* GET /telem/job: the source's job data object, series left to
 * /api/query. */
void
agg_job(agg_t *self, telem_http_req_t *req)
{
    json_t *data = agg_src_vt(self)->job(agg_src(self));
    if (!data) {
        telem_http_reply_error(req, 500, "out of memory", "");
        return;
    }
    json_object_set_new(data, "series", json_array());
    telem_http_reply_json(req, 200, data);
}

/* OpenTSDB's annotation object for one event or restart at t_ms. */
static json_t *
s_note(int64_t t_ms, const char *description, const char *notes,
       json_t *custom)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:I, s:I}", "tsuid", "",
                     "description", description, "notes", notes ? notes : "",
                     "custom", custom ? custom : json_object(), "startTime",
                     (json_int_t) (t_ms / 1000), "endTime", (json_int_t) 0);
}

json_t *
agg_annotations_of(json_t *events, json_t *restarts, int64_t start_ms,
                   int64_t end_ms)
{
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        json_int_t t = json_integer_value(json_object_get(e, "time_ms"));
        if (t < start_ms || t > end_ms)
            continue;
        const char *det = json_string_value(json_object_get(e, "detector"));
        const char *sev = json_string_value(json_object_get(e, "severity"));
        char desc[512];
        snprintf(desc, sizeof desc, "%s %s", det ? det : "event",
                 sev ? sev : "");
        json_array_append_new(out, s_note(t, desc, json_string_value(
            json_object_get(e, "text")), json_pack("{s:s}", "kind", "event")));
    }
    json_array_foreach(restarts, i, e) {
        json_int_t t = json_integer_value(json_object_get(e, "time_ms"));
        if (t >= start_ms && t <= end_ms)
            json_array_append_new(out, s_note(t, json_string_value(
                json_object_get(e, "line")), NULL, json_pack(
                "{s:s}", "kind", "restart")));
    }
    return out;
}

json_t *
agg_annotations(agg_t *self, int64_t start_ms, int64_t end_ms)
{
    json_t *events = telem_web_job_events(agg_rundir(self), NULL, NULL);
    json_t *restarts = telem_web_job_restarts(agg_rundir(self), NULL, NULL);
    json_t *out = agg_annotations_of(events, restarts, start_ms, end_ms);
    json_decref(events);
    json_decref(restarts);
    return out;
}

/* ---- the job's own series ---------------------------------------------- */

/* telem_job_restarts (the restart number at each restart) and
 * telem_job_restart_seconds{step=stop|reform|backoff|start} (how long
 * each step of each restart took), read from restarts.log: the figures
 * the launcher prints in every restart line.  "reform" is the
 * dictionary's re-form on the new node set. */
static const char *const s_steps[] = { "stop", "reform", "backoff", "start" };

struct agg_job_series {
    telem_series_t s[4];
    telem_tag_t tags[4];
    int64_t *ts;
    double *v;
};

/* "restart N (...): ...; stop A s, re-form B s..., back-off C s, start D
 * s; ..." -> N and the four figures; 0 or -1 (a refused restart). */
static int
s_parse_restart(const char *line, double *n, double fig[4])
{
    if (sscanf(line, "restart %lf (", n) != 1)
        return -1;
    const char *keys[] = { "; stop ", ", re-form ", ", back-off ",
                           ", start " };
    for (int i = 0; i < 4; i++) {
        const char *p = strstr(line, keys[i]);
        if (!p || sscanf(p + strlen(keys[i]), "%lf", &fig[i]) != 1)
            return -1;
    }
    return 0;
}

agg_job_series_t *
agg_job_series(agg_t *self, const char *metric, size_t *n)
{
    int restarts = strcmp(metric, "telem_job_restarts") == 0;
    if (!restarts && strcmp(metric, "telem_job_restart_seconds") != 0)
        return NULL;
    json_t *list = telem_web_job_restarts(agg_rundir(self), NULL, NULL);
    size_t cap = json_array_size(list) + 1, k = 0;
    agg_job_series_t *js = calloc(1, sizeof *js);
    if (js) {
        js->ts = calloc(cap, sizeof *js->ts);
        js->v = calloc(4 * cap, sizeof *js->v);
    }
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) {
        double num, fig[4];
        if (!js || !js->ts || !js->v || s_parse_restart(json_string_value(
                json_object_get(r, "line")), &num, fig))
            continue;
        js->ts[k] = json_integer_value(json_object_get(r, "time_ms"))
                    * TELEM_NS_PER_MS;
        for (int s = 0; s < 4; s++)
            js->v[s * cap + k] = restarts ? num : fig[s];
        k++;
    }
    json_decref(list);
    for (int s = 0; js && s < 4; s++) {
        js->tags[s] = (telem_tag_t) { "step", s_steps[s] };
        js->s[s] = (telem_series_t) { metric, restarts ? NULL : &js->tags[s],
            restarts ? 0 : 1, TELEM_METRIC_GAUGE, "s", "", js->ts,
            js->v + s * cap, (uint32_t) k };
    }
    *n = js && js->ts && js->v ? (restarts ? 1 : 4) : 0;
    return js;
}

const telem_series_t *
agg_job_series_get(const agg_job_series_t *js)
{
    return js->s;
}

void
agg_job_series_destroy(agg_job_series_t **js_p)
{
    if (!js_p || !*js_p)
        return;
    free((*js_p)->ts);
    free((*js_p)->v);
    free(*js_p);
    *js_p = NULL;
}
