/* telemd_agent_info.c - what the node agent tells of its node besides
 * queries: the one-time system snapshot, taken at start and served to
 * sysinfo requests, and the snapshots of the store's newest points that
 * GET /metrics renders (telemd_agent_int.h).  Called by telemd_agent.c
 * and telemd's actor; calls nothing of telemd_agent.c.
 */
#include "telemd_agent_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_prom.h"
#include "telem_sysinfo.h"
#include "telem_time.h"

/* ---- the one-time system snapshot --------------------------------------- */

#ifndef TELEM_VERSION_STRING
#define TELEM_VERSION_STRING "unknown"
#endif

/* Takes the snapshot once, at start (telem_sysinfo.h).  --proc-root DIR
 * is the proc root; when DIR ends in "/proc", its siblings "sys" and
 * "etc" are the other roots (a fixture tree), else the real ones.  The
 * configuration section lists telemd's settings: add a line here for a
 * new one.  Without memory the node answers requests for it with
 * TELEM_ENOTFOUND. */
void
telemd_agent_sysinfo_take(telemd_agent_t *self)
{
    const telemd_config_t *c = &self->cfg;
    const telem_sysinfo_kv_t config[] = {
        { "level", TELEM_SYSINFO_INT, self->level, 0, NULL },
        { "window_ns", TELEM_SYSINFO_INT, c->window_ns, 0, NULL },
        { "interval_ns", TELEM_SYSINFO_INT, c->interval_ns, 0, NULL },
        { "mem_cap_bytes", TELEM_SYSINFO_INT, (int64_t) c->mem_cap_bytes,
          0, NULL },
        { "rundir", TELEM_SYSINFO_STR, 0, 0, c->rundir },
        { "tcp_bind", TELEM_SYSINFO_STR, 0, 0, c->tcp_bind },
        { "http_bind", TELEM_SYSINFO_STR, 0, 0, c->http_bind },
        { "proc_root", TELEM_SYSINFO_STR, 0, 0, c->proc_root },
        { "pid", TELEM_SYSINFO_INT, (int64_t) getpid(), 0, NULL },
    };
    char root[2048] = "";
    size_t plen = c->proc_root ? strlen(c->proc_root) : 0;
    if (plen >= 5 && plen < sizeof root
        && strcmp(c->proc_root + plen - 5, "/proc") == 0)
        snprintf(root, sizeof root, "%.*s", (int) (plen - 5), c->proc_root);
    telem_sysinfo_opts_t o = {
        .node = self->node, .version = TELEM_VERSION_STRING,
        .root = *root ? root : NULL, .proc_dir = c->proc_root, .live = 1,
        .nvml_library = c->nvml_library,
        .rsmi_library = c->rsmi_library,
        .ze_library = c->ze_library,
        .config = config, .nconfig = sizeof config / sizeof config[0],
    };
    int64_t t0 = telem_mono_ns();
    int rc = telem_sysinfo_collect(&o, &self->sysinfo, &self->sysinfo_len);
    if (rc)
        telem_log(TELEM_LOG_WARN, "snapshot: not taken: %s",
                  telem_strerror(rc));
    else
        telem_log(TELEM_LOG_INFO, "snapshot: %zu bytes in %.1f ms",
                  self->sysinfo_len, (double) (telem_mono_ns() - t0) / 1e6);
}

/* ---- snapshots for /metrics -------------------------------------------- */

typedef struct {
    telemd_agent_t *agent;
    telem_prom_snap_t *snap;
    char metric[TELEM_NAME_MAX + 1];    /* the last metric looked up */
    bool described;                     /* whether it has a meta */
} s_snap_walk_t;

static int
s_snap_series(void *arg, const telem_series_t *s)
{
    s_snap_walk_t *w = arg;
    if (strcmp(w->metric, s->metric) != 0) {    /* a metric's series come
                                                   together: one lookup */
        snprintf(w->metric, sizeof w->metric, "%s", s->metric);
        w->described = telem_store_meta(w->agent->store, s->metric) != NULL;
    }
    return telem_prom_snap_add(w->snap, s, w->described);
}

int
telemd_agent_snapshot(telemd_agent_t *self, void **block_p, size_t *len)
{
    s_snap_walk_t w = { .agent = self, .snap = telem_prom_snap_new() };
    if (!w.snap)
        return TELEM_ENOMEM;
    telem_store_query_t q = { .flags = TELEM_QUERY_LATEST };
    int rc = telem_store_query(self->store, &q, telem_now_ns(),
                               s_snap_series, &w);
    if (rc == 0)
        rc = telem_prom_snap_take(w.snap, block_p, len);
    telem_prom_snap_destroy(&w.snap);
    return rc < 0 ? rc : rc ? TELEM_ENOMEM : 0;
}

/* ---- the system snapshot's request -------------------------------------- */

static int
s_error(telemd_agent_t *self, uint64_t id, int code, const char *text,
        const void **reply, size_t *size)
{
    telem_error_msg_t e = { .id = id, .code = code, .message = text };
    return telem_proto_encode_error(self->enc, &e, reply, size);
}

int
telemd_agent_sysinfo_reply(telemd_agent_t *self, const telem_sysinfo_req_t *q,
                           const void **reply, size_t *size)
{
    if (!self->sysinfo)
        return s_error(self, q->id, TELEM_ENOTFOUND,
                       "this node holds no system snapshot", reply, size);
    telem_sysinfo_rep_t r = { .id = q->id, .node = self->node,
                              .json = self->sysinfo };
    int rc = telem_proto_encode_sysinfo_reply(self->enc, &r, reply, size);
    if (rc)
        return s_error(self, q->id, rc, "the snapshot could not be encoded",
                       reply, size);
    return 0;
}

const char *
telemd_agent_sysinfo(const telemd_agent_t *self, size_t *len)
{
    if (len)
        *len = self && self->sysinfo ? self->sysinfo_len : 0;
    return self ? self->sysinfo : NULL;
}
