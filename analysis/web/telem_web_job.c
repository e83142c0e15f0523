/* telem_web_job.c - the job data object from the run directory's files
 * (telem_web_job.h).  Every line is checked before it is used: the files
 * are written by other processes and may be torn, truncated or stale. */
#include "telem_web_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "telem_time.h"

#define S_LOG_MAX (1u << 20)
#define S_EVENTS_MAX (4u << 20)

/* Up to the last `max` bytes of path, from the first whole line. */
static char *
s_tail(const char *path, size_t max)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long from = size > (long) max ? size - (long) max : 0;
    if (size >= 0 && fseek(f, from, SEEK_SET) == 0
        && (buf = malloc((size_t) (size - from) + 1))) {
        size_t n = fread(buf, 1, (size_t) (size - from), f);
        buf[n] = '\0';
        if (from > 0) {                  /* drop the partial first line */
            char *nl = strchr(buf, '\n');
            size_t skip = nl ? (size_t) (nl - buf) + 1 : n;
            memmove(buf, buf + skip, n - skip + 1);
        }
    }
    fclose(f);
    return buf;
}

static void
s_skip(json_t *o)
{
    json_object_set_new(o, "skipped", json_integer(json_integer_value(
        json_object_get(o, "skipped")) + 1));
}

/* "name\tstate\trank\tendpoint" -> {"name","state","rank"}, or NULL. */
static json_t *
s_node(char *line)
{
    char *f[4] = { 0 }, *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(line, "\t", &save); t && n < 4;
         t = strtok_r(NULL, "\t", &save))
        f[n++] = t;
    char *end = NULL;
    long rank = n == 4 ? strtol(f[2], &end, 10) : 0;
    if (n != 4 || *end || !*f[0] || (strcmp(f[1], "active") != 0
        && strcmp(f[1], "idle") != 0 && strcmp(f[1], "down") != 0))
        return NULL;
    return json_pack("{s:s, s:s, s:I}", "name", f[0], "state", f[1], "rank",
                     (json_int_t) rank);
}

static json_t *
s_job(json_t *top, const char *rundir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/launch/job", rundir);
    json_t *job = json_pack("{s:s, s:I, s:I, s:[]}", "rundir", rundir,
                            "launcher_pid", (json_int_t) 0, "restarts",
                            (json_int_t) 0, "nodes");
    char *text = s_tail(path, S_LOG_MAX), *save = NULL;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        long pid = 0, restarts = 0;
        if (*l == '#') {
            if (sscanf(l, "# telem_launch pid %ld restart %*s restarts %ld",
                       &pid, &restarts) == 2) {
                json_object_set_new(job, "launcher_pid", json_integer(pid));
                json_object_set_new(job, "restarts", json_integer(restarts));
            }
            continue;
        }
        json_t *node = s_node(l);
        if (node)
            json_array_append_new(json_object_get(job, "nodes"), node);
        else
            s_skip(top);
    }
    free(text);
    return job;
}

/* "2026-11-24T10:00:00Z rest" -> ms since the epoch and rest, or -1. */
static int64_t
s_iso(const char *l, const char **rest)
{
    struct tm tm = { 0 };
    const char *p = strptime(l, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    if (!p)
        return -1;
    *rest = p;
    return (int64_t) timegm(&tm) * 1000;
}

static json_t *
s_restarts(json_t *top, const char *rundir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/launch/restarts.log", rundir);
    json_t *out = json_array();
    char *text = s_tail(path, S_LOG_MAX), *save = NULL;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        const char *rest = NULL;
        int64_t t = s_iso(l, &rest);
        if (t < 0 || !*rest)
            s_skip(top);
        else
            json_array_append_new(out, json_pack("{s:I, s:s}", "time_ms",
                                                 (json_int_t) t, "line",
                                                 rest));
    }
    free(text);
    return out;
}

static int
s_strings(json_t *a)
{
    size_t i;
    json_t *v;
    if (!json_is_array(a))
        return 0;
    json_array_foreach(a, i, v)
        if (!json_is_string(v))
            return 0;
    return 1;
}

/* One events.jsonl line as the data object's event, or NULL. */
static json_t *
s_event(const char *line)
{
    json_t *e = json_loads(line, 0, NULL), *out = NULL;
    json_t *t = json_object_get(e, "time_ms");
    const char *det = json_string_value(json_object_get(e, "detector"));
    const char *sev = json_string_value(json_object_get(e, "severity"));
    const char *text = json_string_value(json_object_get(e, "text"));
    json_t *nodes = json_object_get(e, "nodes");
    json_t *devs = json_object_get(e, "devices");
    if (json_is_integer(t) && det && sev && text && s_strings(nodes)
        && json_is_array(devs))
        out = json_pack("{s:O, s:s, s:s, s:O, s:O, s:s}", "time_ms", t,
                        "detector", det, "severity", sev, "nodes", nodes,
                        "devices", devs, "text", text);
    json_decref(e);
    return out;
}

static json_t *
s_events(json_t *top, const char *rundir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/telem_watch/events.jsonl", rundir);
    json_t *out = json_array();
    char *text = s_tail(path, S_EVENTS_MAX), *save = NULL;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        json_t *e = s_event(l);
        if (e)
            json_array_append_new(out, e);
        else
            s_skip(top);
    }
    free(text);
    return out;
}

json_t *
telem_web_job_read(const char *rundir)
{
    json_t *o = json_pack("{s:i, s:I, s:i}", "version", 1, "generated_ms",
                          (json_int_t) (telem_now_ns() / TELEM_NS_PER_MS),
                          "skipped", 0);
    if (!o)
        return NULL;
    json_object_set_new(o, "job", s_job(o, rundir));
    json_object_set_new(o, "restarts", s_restarts(o, rundir));
    json_object_set_new(o, "events", s_events(o, rundir));
    return o;
}
