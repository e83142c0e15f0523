/* agg_dump.c - the dump data source (agg_src.h): a finished job's dump
 * and segment files through the history index (telem_hist.h), for
 * telem_view.  An argument that is a directory adds its segment and dump
 * files (a node's flush log, readable after a crash without a dump), or,
 * when it holds none, those of each NODE/log below it (a run directory).
 *
 * The files are read once at start (a dump with an index: only its
 * index); queries read the blocks they need.  The history has one user
 * at a time, so a mutex serialises the HTTP threads' queries; answers
 * are copied into rows under it and sorted as the analysis client sorts
 * them, so the same request gives the same answer as telem_agg's.  As in
 * telemd's store, a range query leaves out series with no point in the
 * range.  Nothing is ever missing (every node is in the files); nothing
 * can be changed (no put, no reboot). */
#include "agg_dump.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_time.h"

struct agg_dump {
    telem_hist_t *hist;
    pthread_mutex_t mu;
    char files[2048];          /* the files' names, for the job object */
};

static void
s_damage(const char *path, const telem_seg_damage_t *d)
{
    /* A dump ends in its index: without one it was cut short (at a record
       boundary, so nothing else shows it) or never finished. */
    if (d->bad || d->torn_tail || d->orphans || d->no_index)
        telem_log(TELEM_LOG_WARN, "%s is damaged: %llu stretch(es), %llu "
                  "bytes skipped%s%s%s; serving what could be read", path,
                  (unsigned long long) d->bad,
                  (unsigned long long) d->bytes_skipped,
                  d->torn_tail ? ", cut short" : "",
                  d->orphans ? ", blocks of unknown series" : "",
                  d->no_index ? ", no index at its end (cut short or not "
                                "finished; read by scanning)" : "");
}

/* Adds directory dir's segment and dump files; when it holds none, those
 * of every dir/NODE/log (a run directory: each node's flush log).
 * *added: the files added. */
static int
s_add_dir(telem_hist_t *h, const char *dir, telem_seg_damage_t *d,
          uint64_t *added)
{
    telem_hist_stats_t st;
    telem_hist_stats(h, &st);
    uint64_t before = st.files;
    int rc = telem_hist_add_dir(h, dir, d);
    telem_hist_stats(h, &st);
    DIR *dp = rc == 0 && st.files == before ? opendir(dir) : NULL;
    struct dirent *e;
    while (dp && rc == 0 && (e = readdir(dp)) != NULL) {
        char sub[TELEM_PATH_MAX];
        struct stat sb;
        if (e->d_name[0] == '.' ||
            (size_t) snprintf(sub, sizeof sub, "%s/%s/log", dir, e->d_name)
                >= sizeof sub ||
            stat(sub, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        telem_seg_damage_t sd;
        rc = telem_hist_add_dir(h, sub, &sd);
        d->bad += sd.bad;
        d->bytes_skipped += sd.bytes_skipped;
        d->torn_tail |= sd.torn_tail;
        d->orphans += sd.orphans;
    }
    if (dp)
        closedir(dp);
    telem_hist_stats(h, &st);
    *added = st.files - before;
    return rc;
}

/* Adds one command-line argument: a file, or a directory (s_add_dir). */
static int
s_add(telem_hist_t *h, const char *path, telem_seg_damage_t *d, char *why,
      size_t why_size)
{
    struct stat sb;
    uint64_t added = 0;
    int rc;
    memset(d, 0, sizeof *d);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        rc = s_add_dir(h, path, d, &added);
        if (rc == 0 && added == 0) {
            snprintf(why, why_size, "%s holds no segment (*%s) or dump "
                     "(*%s) file, nor NODE/log directories holding some",
                     path, TELEM_SEG_SUFFIX, TELEM_DUMP_SUFFIX);
            return TELEM_ENOTFOUND;
        }
    } else {
        rc = telem_hist_add_file(h, path, d);
    }
    if (rc)
        snprintf(why, why_size, "cannot read %s: %s%s", path,
                 telem_strerror(rc), rc == TELEM_EPROTO
                 ? " (not a telem dump or segment file)" : "");
    return rc;
}

agg_dump_t *
agg_dump_new(const char *const *files, size_t n, char *why, size_t why_size)
{
    agg_dump_t *self = calloc(1, sizeof *self);
    int rc = self ? 0 : TELEM_ENOMEM;
    if (self && !(self->hist = telem_hist_new(&rc))) {
        free(self);
        self = NULL;
    }
    for (size_t i = 0; self && i < n; i++) {
        telem_seg_damage_t d;
        rc = s_add(self->hist, files[i], &d, why, why_size);
        if (rc) {
            agg_dump_destroy(&self);
            return NULL;
        }
        s_damage(files[i], &d);
        size_t len = strlen(self->files);
        snprintf(self->files + len, sizeof self->files - len, "%s%s",
                 len ? " " : "", files[i]);
    }
    if (!self)
        snprintf(why, why_size, "%s", telem_strerror(rc));
    else
        pthread_mutex_init(&self->mu, NULL);
    return self;
}

void
agg_dump_destroy(agg_dump_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_hist_destroy(&(*self_p)->hist);
    pthread_mutex_destroy(&(*self_p)->mu);
    free(*self_p);
    *self_p = NULL;
}

void
agg_dump_lock(agg_dump_t *self)
{
    pthread_mutex_lock(&self->mu);
}

void
agg_dump_unlock(agg_dump_t *self)
{
    pthread_mutex_unlock(&self->mu);
}

telem_hist_t *
agg_dump_hist(agg_dump_t *self)
{
    return self->hist;
}

/* ---- the source -------------------------------------------------------- */

typedef struct {
    agg_rows_t *rows;
    int list;
    int rc;
} s_take_t;

static int
s_take(void *arg, const char *node, const telem_series_t *s)
{
    s_take_t *t = arg;
    if (!t->list && s->npoints == 0)
        return 0;
    t->rc = agg_rows_add(t->rows, node, s);
    return t->rc;
}

static int
s_query(void *src, const agg_src_query_t *q, agg_rows_t **out, char *why,
        size_t why_size)
{
    agg_dump_t *self = src;
    s_take_t t = { agg_rows_new(), (q->flags & TELEM_QUERY_LIST) != 0, 0 };
    telem_store_query_t sq = { 0 };
    sq.metrics = q->metric ? &q->metric : NULL;
    sq.nmetrics = q->metric ? 1 : 0;
    sq.start_ns = q->start_ns > 0 ? q->start_ns : 0;
    sq.end_ns = q->end_ns > 0 ? q->end_ns : 0;
    sq.flags = q->flags;
    int rc = t.rows ? 0 : TELEM_ENOMEM;
    pthread_mutex_lock(&self->mu);
    if (!rc && !q->nodes)
        rc = telem_hist_query(self->hist, NULL, &sq, s_take, &t);
    for (size_t i = 0; !rc && q->nodes && i < q->nnodes; i++)
        rc = telem_hist_query(self->hist, q->nodes[i], &sq, s_take, &t);
    pthread_mutex_unlock(&self->mu);
    if (rc) {
        snprintf(why, why_size, "reading the dump files: %s",
                 telem_strerror(rc));
        agg_rows_destroy(&t.rows);
    } else {
        agg_rows_sort(t.rows);
    }
    *out = t.rows;
    return rc;
}

static int
s_has_node(void *src, const char *node)
{
    agg_dump_t *self = src;
    int has = 0;
    pthread_mutex_lock(&self->mu);
    for (uint32_t i = 0; !has && i < telem_hist_nnodes(self->hist); i++)
        has = strcmp(telem_hist_node(self->hist, i), node) == 0;
    pthread_mutex_unlock(&self->mu);
    return has;
}

/* The files' job events of `type` (the objects telem_web_job.h reads),
 * under the lock. */
static json_t *
s_notes(agg_dump_t *self, telem_seg_note_t type)
{
    json_t *out = json_array();
    for (uint32_t i = 0; i < telem_hist_nnotes(self->hist); i++) {
        const telem_hist_note_t *n = telem_hist_note(self->hist, i);
        json_t *e = n->type == type ? json_loadb(n->json, n->len, 0, NULL)
                                    : NULL;
        if (json_is_object(e))
            json_array_append(out, e);
        json_decref(e);
    }
    return out;
}

/* The job data object of telem_web.h: the files' nodes, all "active",
 * and "range" {start_ms, end_ms}: the time the files cover, which the
 * dashboard shows instead of the live page's last minutes. */
static json_t *
s_job(void *src)
{
    agg_dump_t *self = src;
    json_t *nodes = json_array();
    telem_hist_stats_t st;
    pthread_mutex_lock(&self->mu);
    for (uint32_t i = 0; i < telem_hist_nnodes(self->hist); i++)
        json_array_append_new(nodes, json_pack(
            "{s:s, s:s, s:I}", "name", telem_hist_node(self->hist, i),
            "state", "active", "rank", (json_int_t) i));
    telem_hist_stats(self->hist, &st);
    json_t *restarts = s_notes(self, TELEM_SEG_NOTE_RESTART);
    json_t *events = s_notes(self, TELEM_SEG_NOTE_EVENT);
    pthread_mutex_unlock(&self->mu);
    json_t *range = st.first_ts <= st.last_ts
        ? json_pack("{s:I, s:I}", "start_ms",
                    (json_int_t) (st.first_ts / TELEM_NS_PER_MS), "end_ms",
                    (json_int_t) ((st.last_ts + TELEM_NS_PER_MS - 1)
                                  / TELEM_NS_PER_MS))
        : json_null();
    json_t *job = json_pack("{s:s, s:i, s:I, s:o, s:o}", "rundir",
                            self->files, "launcher_pid", 0, "restarts",
                            (json_int_t) json_array_size(restarts), "nodes",
                            nodes, "range", range);
    return json_pack("{s:i, s:I, s:o, s:[], s:o, s:o}", "version", 1,
                     "generated_ms",
                     (json_int_t) (telem_now_ns() / TELEM_NS_PER_MS), "job",
                     job, "missing", "restarts", restarts, "events", events);
}

/* The dumps' events and restarts (ANNOTATION records, written from the
 * run directory by ac_dump), as telem_agg answers them from the run
 * directory itself. */
static json_t *
s_annotations(void *src, int64_t start_ms, int64_t end_ms)
{
    agg_dump_t *self = src;
    pthread_mutex_lock(&self->mu);
    json_t *events = s_notes(self, TELEM_SEG_NOTE_EVENT);
    json_t *restarts = s_notes(self, TELEM_SEG_NOTE_RESTART);
    pthread_mutex_unlock(&self->mu);
    json_t *out = agg_annotations_of(events, restarts, start_ms, end_ms);
    json_decref(events);
    json_decref(restarts);
    return out;
}

/* The node's newest snapshot in the files (SNAPSHOT records). */
static int
s_snapshot(void *src, const char *node, int timeout_ms, char **json,
           size_t *len, char *why, size_t why_size)
{
    agg_dump_t *self = src;
    const char *text = NULL;
    (void) timeout_ms;
    pthread_mutex_lock(&self->mu);
    int rc = telem_hist_snapshot(self->hist, node, &text, len, NULL);
    if (rc == 0 && !(*json = malloc(*len + 1)))
        rc = TELEM_ENOMEM;
    else if (rc == 0)
        memcpy(*json, text, *len + 1);
    pthread_mutex_unlock(&self->mu);
    if (rc)
        snprintf(why, why_size, "%s: %s", node, rc == TELEM_ENOTFOUND
                 ? "no snapshot of this node in the files"
                 : telem_strerror(rc));
    return rc;
}

const agg_src_vt_t agg_dump_vt = {
    .name = "telem_view",
    .query = s_query,
    .has_node = s_has_node,
    .job = s_job,
    .annotations = s_annotations,
    .job_series = NULL,
    .snapshot = s_snapshot,
    .put = NULL,
    .reboot = NULL,
};
