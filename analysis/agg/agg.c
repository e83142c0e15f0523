/* agg.c - the HTTP API's handler, shared by telem_agg and telem_view: the
 * routing of every request to its endpoint (agg_query.c, agg_meta.c,
 * agg_job.c, agg_ops.c) or to an embedded file of the dashboard
 * (telem_web.h), over the configured data source (agg_src.h); and the
 * live source's pool of analysis clients that follows the node file.
 *
 * Why a pool: the HTTP module runs handlers on several threads at once and
 * an ac_t belongs to one thread at a time; a client per request would
 * reconnect to every node each time.  A client remembers the node file it
 * was made from (device, inode, size, change time): when telem_launch
 * replaces the file on a restart, the next borrower reconnects. */
#include "agg.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_web.h"
#include "tsdb_agg.h"
#include "tsdb_filter.h"

#define S_POOL_MAX 64

typedef struct {
    ac_t *ac;
    int busy;
    struct stat made_from;     /* the node file the client read */
    struct stat relays_from;   /* the relays file it read (st_ino 0:
                                  none) */
} s_slot_t;

struct agg {
    char nodefile[TELEM_PATH_MAX];
    char rundir[TELEM_PATH_MAX];
    char launch_ep[TELEM_PATH_MAX + 32];
    int timeout_ms;
    unsigned pool;
    s_slot_t slots[S_POOL_MAX];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    telem_ratelimit_t rl;      /* under mu */
    int has_token;             /* writes allowed (agg_cfg_t) */
    void *zctx;                /* put and reboot sockets */
    telem_keys_t *keys;        /* the job's: CURVE to a TCP restart
                                  endpoint; NULL */
    const agg_src_vt_t *vt;    /* the data source */
    void *src;
};

static int
s_copy(char *dst, size_t size, const char *src)
{
    return (size_t) snprintf(dst, size, "%s", src) < size ? 0 : TELEM_EINVAL;
}

static int
s_paths(agg_t *self, const agg_cfg_t *cfg)
{
    int rc = cfg->rundir ? telem_rundir_resolve(self->rundir,
                                                sizeof self->rundir,
                                                cfg->rundir)
                         : telem_rundir_default(self->rundir,
                                                sizeof self->rundir);
    const char *env = getenv("TELEM_NODEFILE");
    if (!rc && cfg->nodefile)
        rc = s_copy(self->nodefile, sizeof self->nodefile, cfg->nodefile);
    else if (!rc && env && *env)
        rc = s_copy(self->nodefile, sizeof self->nodefile, env);
    else if (!rc)
        rc = (size_t) snprintf(self->nodefile, sizeof self->nodefile,
                               "%s/nodes", self->rundir)
                     < sizeof self->nodefile ? 0 : TELEM_EINVAL;
    env = getenv("TELEM_LAUNCH_ENDPOINT");
    if (!rc && cfg->launch_ep)
        rc = s_copy(self->launch_ep, sizeof self->launch_ep, cfg->launch_ep);
    else if (!rc && env && *env)
        rc = s_copy(self->launch_ep, sizeof self->launch_ep, env);
    else if (!rc)
        rc = (size_t) snprintf(self->launch_ep, sizeof self->launch_ep,
                               "ipc://%s/launch/restart.sock", self->rundir)
                     < sizeof self->launch_ep ? 0 : TELEM_EINVAL;
    return rc ? TELEM_EINVAL : 0;
}

agg_t *
agg_new(const agg_cfg_t *cfg, int *err)
{
    int rc = TELEM_ENOMEM;
    agg_t *self = calloc(1, sizeof *self);
    if (self && !(rc = s_paths(self, cfg))) {
        self->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms
                                               : AC_TIMEOUT_DEFAULT_MS;
        self->pool = cfg->pool ? cfg->pool : 4;
        self->has_token = cfg->has_token;
        self->pool = self->pool > S_POOL_MAX ? S_POOL_MAX : self->pool;
        self->rl = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(10, 5);
        pthread_mutex_init(&self->mu, NULL);
        pthread_cond_init(&self->cv, NULL);
        self->zctx = zmq_ctx_new();
        /* Keys only for the live job (telem_view reads files). */
        rc = !self->zctx ? TELEM_ENOMEM : cfg->src_vt ? 0
             : telem_keys_find(self->rundir, self->nodefile, &self->keys,
                               NULL, 0);
        self->vt = cfg->src_vt ? cfg->src_vt : &agg_live_vt;
        self->src = cfg->src_vt ? cfg->src : self;
    }
    if (rc && self) {
        if (self->zctx)
            zmq_ctx_term(self->zctx);
        telem_keys_destroy(&self->keys);
        free(self);
        self = NULL;
    }
    if (err)
        *err = rc;
    return self;
}

void
agg_destroy(agg_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    agg_t *self = *self_p;
    for (unsigned i = 0; i < self->pool; i++)
        ac_close(&self->slots[i].ac);
    pthread_mutex_destroy(&self->mu);
    pthread_cond_destroy(&self->cv);
    zmq_ctx_term(self->zctx);
    telem_keys_destroy(&self->keys);
    free(self);
    *self_p = NULL;
}

int agg_timeout_ms(const agg_t *self) { return self->timeout_ms; }
const char *agg_rundir(const agg_t *self) { return self->rundir; }
const char *agg_launch_ep(const agg_t *self) { return self->launch_ep; }
void *agg_zctx(agg_t *self) { return self->zctx; }
const telem_keys_t *agg_keys(const agg_t *self) { return self->keys; }
const agg_src_vt_t *agg_src_vt(const agg_t *self) { return self->vt; }
void *agg_src(const agg_t *self) { return self->src; }

/* ---- the pool ---------------------------------------------------------- */

static int
s_same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino
           && a->st_size == b->st_size
           && a->st_ctim.tv_sec == b->st_ctim.tv_sec
           && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The relays file a client of the node file reads, as it is now (all
 * zero when there is none): a rewritten one (telem_launch regroups its
 * relays after a restart) makes the slots reconnect, as a node file
 * does. */
static void
s_relays_stat(const agg_t *self, struct stat *st)
{
    char path[TELEM_PATH_MAX];
    memset(st, 0, sizeof *st);
    if (ac_relays_path(self->nodefile, path, sizeof path) != 1
        || stat(path, st) != 0)
        memset(st, 0, sizeof *st);
}

/* Connects slot s to the node file as it is now (s->ac NULL on failure). */
static void
s_connect(agg_t *self, s_slot_t *s, char *why, size_t why_size)
{
    struct stat st, rst;
    s_relays_stat(self, &rst);
    if (stat(self->nodefile, &st) != 0) {
        snprintf(why, why_size, "no node file %s: %s (is the job running?)",
                 self->nodefile, strerror(errno));
        ac_close(&s->ac);
        return;
    }
    if (s->ac && s_same_file(&st, &s->made_from)
        && s_same_file(&rst, &s->relays_from))
        return;
    ac_close(&s->ac);
    int err = 0;
    s->ac = ac_connect(self->nodefile, self->timeout_ms, &err);
    if (s->ac) {
        s->made_from = st;
        s->relays_from = rst;
    }
    else if (ac_nodefile_check(self->nodefile, NULL, why, why_size) == 0)
        snprintf(why, why_size, "cannot connect to the nodes of %s: %s",
                 self->nodefile, telem_strerror(err));
}

ac_t *
agg_ac_get(agg_t *self, char *why, size_t why_size)
{
    pthread_mutex_lock(&self->mu);
    s_slot_t *s = NULL;
    while (!s) {
        for (unsigned i = 0; i < self->pool && !s; i++)
            if (!self->slots[i].busy)
                s = &self->slots[i];
        if (!s)
            pthread_cond_wait(&self->cv, &self->mu);
    }
    s->busy = 1;
    pthread_mutex_unlock(&self->mu);
    /* Connecting reads a file and opens sockets: outside the lock. */
    s_connect(self, s, why, why_size);
    if (s->ac)
        return s->ac;
    pthread_mutex_lock(&self->mu);
    s->busy = 0;
    pthread_cond_broadcast(&self->cv);
    pthread_mutex_unlock(&self->mu);
    return NULL;
}

void
agg_ac_put(agg_t *self, ac_t *ac)
{
    pthread_mutex_lock(&self->mu);
    for (unsigned i = 0; ac && i < self->pool; i++)
        if (self->slots[i].ac == ac)
            self->slots[i].busy = 0;
    pthread_cond_broadcast(&self->cv);
    pthread_mutex_unlock(&self->mu);
}

/* ---- helpers shared by the endpoints ----------------------------------- */

void
agg_note_missing(agg_t *self, telem_http_req_t *req, const agg_rows_t *r)
{
    size_t n = agg_rows_nmissing(r);
    if (n == 0)
        return;
    char line[2048] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof line - 1; i++) {
        int w = snprintf(line + len, sizeof line - len, "%s%s (%s)",
                         i ? ", " : "", agg_rows_missing(r, i),
                         agg_rows_missing_message(r, i));
        len += w > 0 ? (size_t) w : 0;
    }
    /* A header value may hold no CR or LF; the messages are ours, but a
       node name comes from the node file. */
    for (char *p = line; *p; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    telem_http_req_add_header(req, "X-Telem-Missing", line);
    pthread_mutex_lock(&self->mu);
    telem_log_limited(&self->rl, TELEM_LOG_WARN, "%s %s: partial answer, "
                      "missing %s", telem_http_req_method(req),
                      telem_http_req_path(req), line);
    pthread_mutex_unlock(&self->mu);
}

/* ---- the mains' shared option --------------------------------------- */

int
agg_read_token(const char *prog, const char *path, char *token, size_t size)
{
    struct stat st;
    FILE *f = fopen(path, "re");
    if (!f || fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "%s: cannot read --token-file %s: %s\n", prog, path,
                strerror(errno));
        if (f)
            fclose(f);
        return 2;
    }
    int bad = (st.st_mode & 077) || st.st_uid != geteuid();
    int ok = !bad && fgets(token, (int) size, f) != NULL;
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
    if (bad)
        fprintf(stderr, "%s: --token-file %s must be owned by you and not "
                "readable by group or others (chmod 600 %s)\n", prog, path,
                path);
    else if (!ok || strlen(token) < 8 || strchr(token, ' '))
        fprintf(stderr, "%s: --token-file %s must hold a token of 8 to 510 "
                "characters without spaces on its first line\n", prog, path);
    else
        return 0;
    return 2;
}

/* ---- small endpoints --------------------------------------------------- */

static void
s_aggregators(telem_http_req_t *req)
{
    json_t *a = json_array();
    for (size_t i = 0; tsdb_agg_names[i]; i++)
        json_array_append_new(a, json_string(tsdb_agg_names[i]));
    telem_http_reply_json(req, 200, a);
}

/* OpenTSDB's /api/version keys; "version" is the API telem speaks. */
static void
s_version(agg_t *self, telem_http_req_t *req)
{
    char impl[128];
    snprintf(impl, sizeof impl, "%s " TELEM_AGG_VERSION, self->vt->name);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
                          "version", "2.4.0", "short_revision", "",
                          "full_revision", "", "repo_status", "MODIFIED",
                          "timestamp", "0", "user", "", "host", "",
                          "repo", "");
    json_object_set_new(o, "implementation", json_string(impl));
    telem_http_reply_json(req, 200, o);
}

static void
s_asset(telem_http_req_t *req, const telem_web_asset_t *a)
{
    telem_http_req_add_header(req, "Cache-Control", "no-cache");
    telem_http_reply(req, 200, a->type, a->data, a->len);
}

/* ---- routing ----------------------------------------------------------- */

typedef enum { S_GET = 1, S_POST = 2 } s_methods_t;

typedef struct {
    const char *path;
    unsigned methods;
    void (*fn)(agg_t *, telem_http_req_t *);
} s_route_t;

/* put and reboot where the source has them; elsewhere (a dump) a 501 in
 * OpenTSDB's error shape saying why. */
static void
s_offline(agg_t *self, telem_http_req_t *req, const char *what)
{
    char details[256];
    snprintf(details, sizeof details, "%s serves recorded data (dump "
             "files): %s needs the live job's telem_agg", self->vt->name,
             what);
    telem_http_reply_error(req, 501, "Not implemented for recorded data",
                           details);
}

/* Writes and restarts change the job: never served to whoever reaches the
   port without proving the token. */
static int
s_tokenless(agg_t *self, telem_http_req_t *req, const char *what)
{
    if (self->has_token || !self->vt->put)
        return 0;
    char details[256];
    snprintf(details, sizeof details, "%s needs %s to run with a token "
             "(--token-file; telem_launch makes one for its jobs): any user "
             "of this machine can reach this port", what, self->vt->name);
    telem_http_reply_error(req, 403, "Forbidden", details);
    return 1;
}

static void
s_put(agg_t *self, telem_http_req_t *req)
{
    if (s_tokenless(self, req, "/api/put"))
        return;
    if (self->vt->put)
        self->vt->put(self->src, req);
    else
        s_offline(self, req, "/api/put");
}

static void
s_reboot(agg_t *self, telem_http_req_t *req)
{
    if (s_tokenless(self, req, "/api/reboot"))
        return;
    if (self->vt->reboot)
        self->vt->reboot(self->src, req);
    else
        s_offline(self, req, "/api/reboot");
}

static const s_route_t s_routes[] = {
    { "/api/query", S_GET | S_POST, agg_query },
    { "/api/suggest", S_GET | S_POST, agg_suggest },
    { "/api/search/lookup", S_GET | S_POST, agg_lookup },
    { "/api/put", S_POST, s_put },
    { "/api/reboot", S_POST, s_reboot },
    { "/telem/job", S_GET, agg_job },
    { "/telem/snapshot", S_GET, agg_snapshot },
};

/* The path without one trailing '/' ("/api/query/" is "/api/query"). */
static void
s_trim(const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "%s", path);
    size_t n = strlen(buf);
    if (n > 1 && buf[n - 1] == '/')
        buf[n - 1] = '\0';
}

static void
s_method_not_allowed(telem_http_req_t *req, unsigned methods)
{
    telem_http_req_add_header(req, "Allow", methods == S_POST ? "POST"
                              : methods == S_GET ? "GET" : "GET, POST");
    telem_http_reply_error(req, 405, "Method not allowed", "The HTTP "
                           "method is not allowed for this endpoint");
}

static int
s_method(const telem_http_req_t *req)
{
    const char *m = telem_http_req_method(req);
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ? S_GET
           : strcmp(m, "POST") == 0 ? S_POST : 0;
}

void
agg_handle(telem_http_req_t *req, void *arg)
{
    agg_t *self = arg;
    char path[1024];
    s_trim(telem_http_req_path(req), path, sizeof path);
    unsigned m = (unsigned) s_method(req);
    for (size_t i = 0; i < sizeof s_routes / sizeof *s_routes; i++)
        if (strcmp(path, s_routes[i].path) == 0) {
            if (m & s_routes[i].methods)
                s_routes[i].fn(self, req);
            else
                s_method_not_allowed(req, s_routes[i].methods);
            return;
        }
    const char *fixed[] = { "/api/aggregators", "/api/config/filters",
                            "/api/version" };
    for (size_t i = 0; i < 3; i++)
        if (strcmp(path, fixed[i]) == 0) {
            if (m != S_GET && m != S_POST)
                s_method_not_allowed(req, S_GET | S_POST);
            else if (i == 0)
                s_aggregators(req);
            else if (i == 1)
                telem_http_reply_json(req, 200, tsdb_filter_config_json());
            else
                s_version(self, req);
            return;
        }
    const telem_web_asset_t *a = telem_web_asset(telem_http_req_path(req));
    if (a && m == S_GET)
        s_asset(req, a);
    else if (a)
        s_method_not_allowed(req, S_GET);
    else
        telem_http_reply_error(req, 404, "Endpoint not found", "The "
                               "requested endpoint was not found");
}
