/* telemd_agent.c - what telemd does with a message once it has the bytes.
 *
 * Ingest: decode a batch, drop samples above the node's level, add the
 * host tag, append to the store.  The batch's tags with host are put into
 * the store's canonical form once per batch (a prepared tag set) and the
 * samples without tags of their own are appended with that set, many at a
 * time, so the common case pays for sorting and copying tags once per
 * batch and the store can overlap the lookups of many series; a sample
 * with tags of its own has them merged with the batch's, per sample.
 * Counter increments (pushed by telem_counter_add()) go to the node's
 * counter series (telemd_push.c).
 * Requests: queries walk the store and are answered with one reply frame
 * (cut, and marked truncated, before the protocol's size limit:
 * telemd_reply.c); control
 * requests read or change the agent's state.  End-of-stream tokens from
 * batches are kept in a small ring so a process can confirm, with
 * TELEM_CTL_SYNC, that all it sent has arrived.
 * Every input refused, whatever the reason, is counted (bad_messages, or
 * denied for control over plain TCP) and logged with one rate limit.
 * The system snapshot and /metrics' snapshots are telemd_agent_info.c's.
 */
#include "telemd_agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_log.h"
#include "telem_proto.h"
#include "telem_sampler.h"
#include "telem_store.h"
#include "telem_time.h"
#include "telemd_history.h"
#include "telemd_log.h"
#include "telemd_push.h"
#include "telemd_reply.h"

#define S_REPLY_BUDGET (TELEM_PROTO_MAX_MSG - (1u << 20))
#define S_EXPIRE_EVERY_NS (TELEM_NS_PER_SEC / 4)   /* each call seals a
                                   bounded share: ingest waits little */
/* Expiry comes back after S_EXPIRE_EVERY_NS while points arrive faster
   than one call seals them in a second (the store seals 10,000 points a
   call; a quarter of that since the last call keeps the quick pace), else
   after S_EXPIRE_IDLE_NS: an idle agent then wakes once a second (with its
   sampling tick) instead of four times, and every call still seals all
   that came since the one before. */
#define S_EXPIRE_IDLE_NS TELEM_NS_PER_SEC
#define S_EXPIRE_BUSY_POINTS 2500u
#define S_FLUSH_DEFAULT_NS (120 * TELEM_NS_PER_SEC)

static const telem_sampler_vt_t *const s_samplers[] = {
    &telem_sampler_proc, &telem_sampler_nvml, &telem_sampler_self,
    &telem_sampler_psi, &telem_sampler_vmstat, &telem_sampler_numa,
    &telem_sampler_cpufreq, &telem_sampler_fs,
    &telem_sampler_ib, &telem_sampler_hw, &telem_sampler_nfs,
    &telem_sampler_lustre, &telem_sampler_job,
    &telem_sampler_rsmi, &telem_sampler_ze,
};
_Static_assert(sizeof s_samplers / sizeof s_samplers[0]
                   == TELEMD_AGENT_SAMPLERS, "one state per sampler");

static void
s_self_stats(void *arg, telem_sampler_self_stats_t *out)
{
    telemd_agent_t *self = arg;
    telem_store_stats_t st;
    telem_store_stats(self->store, &st);
    out->nseries = st.nseries;
    out->npoints = st.npoints;
    out->mem_bytes = st.mem_bytes;
    out->mem_cap_bytes = st.mem_cap_bytes;
    out->ingested = st.appended;
    out->dropped = st.dropped;
    out->bad_messages = self->bad_messages;
    out->expired = st.expired;
    out->ingest_queue = self->queue_depth;
    out->counter_series = st.ncounters;
    out->push_refused = telemd_push_refused(self->push);
}

static void
s_open_samplers(telemd_agent_t *self)
{
    const char *proc_root = self->cfg.proc_root ? self->cfg.proc_root
                                                : "/proc";
    /* NULL when proc_root cannot be read: the samplers then say so. */
    self->procwalk = telem_procwalk_new(proc_root, self->cfg.job_uid, NULL);
    telem_sampler_env_t env = {
        .node = self->node,
        .job_uid = self->cfg.job_uid,
        .proc_root = proc_root,
        .sys_root = self->cfg.sys_root ? self->cfg.sys_root : "/sys",
        .nvml_library = self->cfg.nvml_library,
        .rsmi_library = self->cfg.rsmi_library,
        .ze_library = self->cfg.ze_library,
        .self_stats = s_self_stats,
        .self_stats_arg = self,
        .procwalk = self->procwalk,
    };
    for (size_t i = 0; i < TELEMD_AGENT_SAMPLERS; i++) {
        const telem_sampler_vt_t *vt = s_samplers[i];
        int rc;
        self->sampler_state[i] = vt->open(&env, &rc);
        if (!self->sampler_state[i]) {
            telem_log(TELEM_LOG_INFO, "sampler %s not available: %s "
                      "(its level %d metrics are skipped)",
                      vt->name, telem_strerror(rc), vt->min_level);
            continue;
        }
        for (const telem_meta_t *m = vt->metrics; m && m->metric; m++)
            telem_store_describe(self->store, m);
    }
}

/* Opens the flush log (cfg.log_dir) and reloads the store from it. */
static int
s_open_log(telemd_agent_t *self)
{
    self->flush_ns = self->cfg.flush_ns > 0 ? self->cfg.flush_ns
                                            : S_FLUSH_DEFAULT_NS;
    self->next_flush_mono = self->started_mono + self->flush_ns;
    if (!self->cfg.log_dir)
        return 0;
    int rc = 0;
    self->log = telemd_log_open(&self->cfg, &rc);
    if (!self->log) {
        telem_log(TELEM_LOG_ERROR, "flush log %s: %s (use --log-dir for "
                  "another directory, or --no-log)", self->cfg.log_dir,
                  telem_strerror(rc));
        return rc;
    }
    if (self->sysinfo)
        (void) telemd_log_snapshot(self->log, self->sysinfo,
                                   self->sysinfo_len, telem_now_ns());
    return telemd_log_reload(self->log, self->store, telem_now_ns());
}

telemd_agent_t *
telemd_agent_new(const telemd_config_t *cfg, int *err)
{
    int rc = TELEM_EINVAL;
    telemd_agent_t *self = NULL;
    if (!cfg || !cfg->node || cfg->level < 0 || cfg->level > 4
        || cfg->window_ns <= 0 || cfg->interval_ns <= 0)
        goto out;
    rc = TELEM_ENOMEM;
    if (!(self = calloc(1, sizeof *self)))
        goto out;
    self->cfg = *cfg;
    self->node = strdup(cfg->node);
    telem_store_config_t scfg;
    telem_store_config_default(&scfg);
    scfg.window_ns = cfg->window_ns;
    if (cfg->mem_cap_bytes)
        scfg.mem_cap_bytes = cfg->mem_cap_bytes;
    self->store = telem_store_new(&scfg, &rc);
    self->dec = telem_proto_decoder_new();
    self->enc = telem_proto_encoder_new();
    self->batch_tags = telem_store_tags_new();
    self->reply = telemd_reply_new(S_REPLY_BUDGET);
    if (self->store && self->node)
        self->push = telemd_push_new(self->store, self->node);
    if (self->store)
        rc = TELEM_ENOMEM;     /* whatever else is missing */
    if (!self->node || !self->store || !self->dec || !self->enc
        || !self->batch_tags || !self->push || !self->reply) {
        telemd_agent_destroy(&self);
        goto out;
    }
    rc = 0;
    self->cfg.node = self->node;
    self->level = cfg->level;
    self->interval_ns = cfg->interval_ns;
    self->started_mono = telem_mono_ns();
    self->next_sample_mono = self->started_mono;
    self->next_expire_mono = self->started_mono + S_EXPIRE_EVERY_NS;
    self->bad_log = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(10, 5);
    self->sampler_log = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(60, 3);
    s_open_samplers(self);
    telemd_agent_sysinfo_take(self);
    if (cfg->slurmd_node)
        self->slurmd = telemd_slurmd_start(cfg->proc_root, cfg->slurmd_node);
    if ((rc = s_open_log(self)) != 0)
        telemd_agent_destroy(&self);
out:
    if (err)
        *err = rc;
    return self;
}

void
telemd_agent_destroy(telemd_agent_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telemd_agent_t *self = *self_p;
    for (size_t i = 0; i < TELEMD_AGENT_SAMPLERS; i++)
        if (self->sampler_state[i])
            s_samplers[i]->close(&self->sampler_state[i]);
    telem_procwalk_destroy(&self->procwalk);
    telemd_reply_destroy(&self->reply);
    telemd_log_destroy(&self->log);
    telem_store_destroy(&self->store);
    telem_proto_decoder_destroy(&self->dec);
    telem_proto_encoder_destroy(&self->enc);
    telem_store_tags_destroy(&self->batch_tags);
    telemd_push_destroy(&self->push);
    telemd_slurmd_destroy(&self->slurmd);
    free(self->sysinfo);
    free(self->node);
    free(self);
    *self_p = NULL;
}

/* Copies the tags other than host to out[*n...]; the node sets host. */
static void
s_add_tags(telem_tag_t *out, uint32_t *n, const telem_tag_t *tags,
           uint32_t ntags)
{
    for (uint32_t i = 0; i < ntags; i++)
        if (strcmp(tags[i].key, "host") != 0)
            out[(*n)++] = tags[i];
}

/* Appends one sample that has tags of its own: the batch's tags, then the
 * sample's (a repeated key keeps the sample's value), then host. */
static void
s_append_tagged(telemd_agent_t *self, const telem_batch_t *b,
                const telem_sample_t *s, int64_t now)
{
    telem_tag_t tags[2 * TELEM_TAGS_MAX + 1];
    uint32_t n = 0;
    s_add_tags(tags, &n, b->tags, b->ntags);
    s_add_tags(tags, &n, s->tags, s->ntags);
    if (n >= TELEM_TAGS_MAX) {
        telem_store_count_dropped(self->store, 1);
        return;
    }
    tags[n++] = (telem_tag_t) { "host", self->node };
    telem_store_append(self->store, s->metric, tags, n, s->ts_ns, s->value,
                       now);
}

/* Prepares self->batch_tags from the batch's tags and host.  Returns 0, or
 * TELEM_ETOOBIG when they leave no room for host (every sample without
 * tags of its own is then dropped, as the store would refuse it). */
static int
s_prepare_batch_tags(telemd_agent_t *self, const telem_batch_t *b)
{
    telem_tag_t tags[TELEM_TAGS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->ntags && n < TELEM_TAGS_MAX; i++)
        if (strcmp(b->tags[i].key, "host") != 0)
            tags[n++] = b->tags[i];
    if (n >= TELEM_TAGS_MAX)
        return TELEM_ETOOBIG;
    tags[n++] = (telem_tag_t) { "host", self->node };
    /* Tags the store refuses leave the set refused: appends count them. */
    telem_store_tags_set(self->batch_tags, tags, n);
    return 0;
}

/* Appends the pending samples (those with the batch's tags only). */
static void
s_flush_pending(telemd_agent_t *self, int64_t now)
{
    telem_store_append_many(self->store, self->batch_tags, self->pending,
                            self->npending, now);
    self->npending = 0;
}

/* Files the samples of a batch: those without tags of their own go to the
 * store TELEMD_AGENT_PENDING at a time (telem_store_append_many), in order with the
 * others, which are appended one by one. */
static void
s_ingest_batch(telemd_agent_t *self, const telem_batch_t *b)
{
    int64_t now = telem_now_ns();
    uint64_t dropped = 0;          /* above the level, or no room for host */
    int batch_rc = 1;              /* 1: batch tags not prepared yet */
    for (uint32_t i = 0; i < b->nsamples; i++) {
        const telem_sample_t *s = &b->samples[i];
        if (self->level == 0 || s->level > self->level) {
            dropped++;
            continue;
        }
        if (s->kind != TELEM_SAMPLE_VALUE) {
            s_flush_pending(self, now);
            telemd_push_sample(self->push, s, now);
            continue;
        }
        if (s->ntags > 0) {
            s_flush_pending(self, now);
            s_append_tagged(self, b, s, now);
            continue;
        }
        if (batch_rc == 1)
            batch_rc = s_prepare_batch_tags(self, b);
        if (batch_rc) {
            dropped++;
            continue;
        }
        self->pending[self->npending++] = (telem_store_point_t) {
            s->metric, s->ts_ns, s->value };
        if (self->npending == TELEMD_AGENT_PENDING)
            s_flush_pending(self, now);
    }
    s_flush_pending(self, now);
    if (dropped)
        telem_store_count_dropped(self->store, dropped);
    if (b->fin_token) {
        self->tokens[self->token_next] = b->fin_token;
        self->token_next = (self->token_next + 1) % TELEMD_AGENT_TOKENS;
    }
}

static int
s_dispatch_data(telemd_agent_t *self, const telem_msg_t *m)
{
    if (m->type == TELEM_MSG_BATCH) {
        s_ingest_batch(self, &m->u.batch);
        return 0;
    }
    if (m->type == TELEM_MSG_META) {
        telem_store_describe(self->store, &m->u.meta);
        return 0;
    }
    return TELEM_EPROTO;
}

static void
s_bad_message(telemd_agent_t *self, const char *where, int rc)
{
    self->bad_messages++;
    telem_log_limited(&self->bad_log, TELEM_LOG_WARN,
                      "rejected %s message: %s (%s)", where, telem_strerror(rc),
                      telem_proto_decoder_error(self->dec));
}

void
telemd_agent_reject(telemd_agent_t *self, const char *why)
{
    self->bad_messages++;
    telem_log_limited(&self->bad_log, TELEM_LOG_WARN, "rejected: %s", why);
}

int
telemd_agent_ingest(telemd_agent_t *self, const void *data, size_t size)
{
    telem_msg_t m;
    int rc = telem_proto_decode(self->dec, data, size, &m);
    if (rc == 0 && s_dispatch_data(self, &m) != 0) {
        rc = TELEM_EPROTO;
        self->bad_messages++;
        telem_log_limited(&self->bad_log, TELEM_LOG_WARN,
                          "ignored %s message on the ingest socket",
                          telem_proto_msg_type_name(m.type));
        return rc;
    }
    if (rc)
        s_bad_message(self, "ingest", rc);
    return rc;
}

/* ---- queries ---------------------------------------------------------- */

static int
s_encode_error(telemd_agent_t *self, uint64_t id, int code, const char *text,
               const void **reply, size_t *size)
{
    telem_error_msg_t e = { .id = id, .code = code, .message = text };
    return telem_proto_encode_error(self->enc, &e, reply, size);
}

static int
s_query(telemd_agent_t *self, const telem_query_t *q, const void **reply,
        size_t *size)
{
    telemd_reply_t *r = self->reply;
    telemd_reply_reset(r);
    /* The request minus its id is what the store walks. */
    telem_store_query_t sq = {
        .metrics = q->metrics, .nmetrics = q->nmetrics,
        .filters = q->filters, .nfilters = q->nfilters,
        .start_ns = q->start_ns, .end_ns = q->end_ns,
        .max_points = q->max_points, .flags = q->flags,
    };
    int64_t now = telem_now_ns();
    /* --history bounds what queries reach, in memory as in the log. */
    if (self->cfg.history_ns > 0 && sq.start_ns < now - self->cfg.history_ns)
        sq.start_ns = now - self->cfg.history_ns;
    telem_hist_t *hist = NULL;
    if (self->log && telemd_history_reaches(&sq, now,
                                            telem_store_window(self->store)))
        hist = telemd_log_hist(self->log);
    int rc = hist ? telemd_history_query(self->store, hist, self->node, &sq,
                                         now, self->cfg.history_ns,
                                         telemd_reply_collect, r)
                  : telem_store_query(self->store, &sq, now,
                                      telemd_reply_collect, r);
    if (rc < 0) {
        telemd_reply_reset(r);
        return s_encode_error(self, q->id, rc, "query failed", reply, size);
    }
    uint32_t n = telemd_reply_count(r);
    telem_series_t *series = malloc((n ? n : 1) * sizeof *series);
    if (!series)
        return s_encode_error(self, q->id, TELEM_ENOMEM, "out of memory",
                              reply, size);
    for (uint32_t i = 0; i < n; i++)
        series[i] = *telemd_reply_series(r, i);
    telem_query_reply_t qr = {
        .id = q->id, .node = self->node, .series = series,
        .nseries = n, .truncated = (uint8_t) telemd_reply_truncated(r),
    };
    rc = telem_proto_encode_query_reply(self->enc, &qr, reply, size);
    free(series);
    telemd_reply_reset(r);
    if (rc)
        return s_encode_error(self, q->id, rc, "reply could not be encoded",
                              reply, size);
    return 0;
}

/* ---- control ---------------------------------------------------------- */

static void
s_status(telemd_agent_t *self, telem_status_t *st)
{
    telem_store_stats_t ss;
    telem_store_stats(self->store, &ss);
    *st = (telem_status_t) {
        .node = self->node,
        .pid = (int64_t) getpid(),
        .level = self->level,
        .window_ns = telem_store_window(self->store),
        .interval_ns = self->interval_ns,
        .uptime_ns = telem_mono_ns() - self->started_mono,
        .nseries = ss.nseries,
        .npoints = ss.npoints,
        .mem_bytes = ss.mem_bytes,
        .mem_cap_bytes = ss.mem_cap_bytes,
        .ingested = ss.appended,
        .dropped = ss.dropped,
        .bad_messages = self->bad_messages,
        .push_refused = telemd_push_refused(self->push),
        .denied = self->denied,
    };
    if (self->cfg.zap) {
        uint64_t allowed;
        telem_zap_counts(self->cfg.zap, &allowed, &st->refused_peers);
    }
    if (self->log) {
        telemd_log_stats_t ls;
        telemd_log_stats(self->log, &ls);
        st->log_bytes = ls.bytes;
        st->log_segments = ls.segments;
        st->flushes = ls.flushes;
        st->last_flush_ns = ls.last_flush_ns;
        st->flush_errors = ls.flush_errors;
    }
}

static int
s_token_seen(const telemd_agent_t *self, uint64_t token)
{
    for (uint32_t i = 0; i < TELEMD_AGENT_TOKENS; i++)
        if (self->tokens[i] == token)
            return 1;
    return 0;
}

static int
s_control(telemd_agent_t *self, const telem_control_t *c, telemd_from_t from,
          const void **reply, size_t *size)
{
    telem_control_reply_t cr = { .id = c->id, .op = c->op };
    char why[256];
    if (from != TELEMD_FROM_JOB && c->op != TELEM_CTL_STATUS
        && c->op != TELEM_CTL_SYNC) {
        self->denied++;
        telem_log_limited(&self->bad_log, TELEM_LOG_WARN, "refused control "
                          "operation %d over plain TCP", (int) c->op);
        return s_encode_error(self, c->id, TELEM_EPERM, "control over plain "
                              "TCP is refused: start telemd with the job's "
                              "keys (--keys) or use its ipc socket", reply,
                              size);
    }
    switch (c->op) {
    case TELEM_CTL_STATUS:
        if (telemd_slurmd_lost(self->slurmd, why, sizeof why))
            return s_encode_error(self, c->id, TELEM_ESTATE, why, reply,
                                  size);
        break;
    case TELEM_CTL_SHUTDOWN:
        telem_log(TELEM_LOG_INFO, "shutdown requested");
        self->stopping = 1;
        break;
    case TELEM_CTL_HANDOVER:
        telem_log(TELEM_LOG_INFO, "hand-over requested: draining, flushing "
                  "and exiting");
        self->stopping = 1;
        self->handing_over = 1;
        break;
    case TELEM_CTL_SET_LEVEL:
        if (c->arg < 0 || c->arg > 4)
            return s_encode_error(self, c->id, TELEM_EINVAL,
                                  "level must be 0 to 4", reply, size);
        telem_log(TELEM_LOG_INFO, "level %d -> %d", self->level, (int) c->arg);
        self->level = (int) c->arg;
        break;
    case TELEM_CTL_SYNC:
        cr.synced = c->arg != 0 && s_token_seen(self, (uint64_t) c->arg);
        break;
    case TELEM_CTL_SET_WINDOW:
        if (telem_store_set_window(self->store, c->arg) != 0)
            return s_encode_error(self, c->id, TELEM_EINVAL,
                                  "window must be positive", reply, size);
        break;
    default:
        return s_encode_error(self, c->id, TELEM_EINVAL,
                              "unknown control operation", reply, size);
    }
    s_status(self, &cr.status);
    return telem_proto_encode_control_reply(self->enc, &cr, reply, size);
}

int
telemd_agent_request(telemd_agent_t *self, const void *data, size_t size,
                     telemd_from_t from, const void **reply,
                     size_t *reply_size)
{
    telem_msg_t m;
    *reply = NULL;
    *reply_size = 0;
    int rc = telem_proto_decode(self->dec, data, size, &m);
    if (rc) {
        s_bad_message(self, "request", rc);
        char why[256];
        snprintf(why, sizeof why, "%s", telem_proto_decoder_error(self->dec));
        s_encode_error(self, 0, rc, why, reply, reply_size);
        return rc;
    }
    switch ((int) m.type) {   /* the families' types are ints */
    case TELEM_MSG_QUERY:
        return s_query(self, &m.u.query, reply, reply_size);
    case TELEM_MSG_CONTROL:
        return s_control(self, &m.u.control, from, reply, reply_size);
    case TELEM_MSG_SYSINFO:
        return telemd_agent_sysinfo_reply(self, &m.u.sysinfo, reply,
                                          reply_size);
    default: {
        /* Batches and metadata belong on the ingest socket only: taken
           here, any host that reaches the TCP port could write into the
           store, and the sender would wait for a reply that never came. */
        char why[160];
        snprintf(why, sizeof why, "not a request (%s): this socket takes "
                 "query, control and sysinfo only",
                 telem_proto_msg_type_name(m.type));
        return telemd_agent_refuse(self, TELEM_EPROTO, why, reply,
                                   reply_size);
    }
    }
}

int
telemd_agent_refuse(telemd_agent_t *self, int code, const char *why,
                    const void **reply, size_t *reply_size)
{
    telemd_agent_reject(self, why);
    *reply = NULL;
    *reply_size = 0;
    s_encode_error(self, 0, code, why, reply, reply_size);
    return code;
}

/* ---- sampling ---------------------------------------------------------- */

static void
s_emit(void *arg, const char *metric, const telem_tag_t *tags, uint32_t ntags,
       double value)
{
    telemd_agent_t *self = arg;
    telem_tag_t all[TELEM_TAGS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < ntags && n < TELEM_TAGS_MAX - 1; i++)
        all[n++] = tags[i];
    all[n++] = (telem_tag_t) { "host", self->node };
    telem_store_append(self->store, metric, all, n, self->sample_now, value,
                       self->sample_now);
}

/* The time of this sampling round on the interval grid: the multiple of
 * the interval nearest to now (the epoch is a grid point; ticks are
 * scheduled at grid points, telemd_agent_tick), so every round of a
 * series is exactly one interval after the one before and its timestamps
 * compress to almost nothing (delta-of-delta 0).  The first round, at
 * start, takes the grid point before now (never a time in the future).
 * Returns 0 when that grid point was sampled already. */
static int64_t
s_round_time(telemd_agent_t *self)
{
    int64_t now = telem_now_ns(), ivl = self->interval_ns;
    int64_t t = self->last_round_ns ? (now + ivl / 2) / ivl * ivl
                                    : now / ivl * ivl;
    if (t <= self->last_round_ns)
        return 0;
    self->last_round_ns = t;
    return t;
}

static void
s_run_samplers(telemd_agent_t *self)
{
    if (!(self->sample_now = s_round_time(self)))
        return;
    for (size_t i = 0; i < TELEMD_AGENT_SAMPLERS; i++) {
        const telem_sampler_vt_t *vt = s_samplers[i];
        if (!self->sampler_state[i] || self->level < vt->min_level)
            continue;
        int rc = vt->sample(self->sampler_state[i], self->sample_now, s_emit,
                            self);
        if (rc)
            telem_log_limited(&self->sampler_log, TELEM_LOG_WARN,
                              "sampler %s: %s", vt->name, telem_strerror(rc));
    }
}

int64_t
telemd_agent_tick(telemd_agent_t *self)
{
    int64_t now = telem_mono_ns();
    if (now >= self->next_sample_mono) {
        if (self->level >= 2)
            s_run_samplers(self);
        /* The next tick at the next grid point of realtime (ticks missed
           while busy are skipped). */
        int64_t real = telem_now_ns();
        self->next_sample_mono = now + self->interval_ns
                                 - real % self->interval_ns;
    }
    if (now >= self->next_expire_mono) {
        telem_store_expire(self->store, telem_now_ns());
        telem_store_stats_t ss;
        telem_store_stats(self->store, &ss);
        int busy = ss.appended - self->expire_appended >= S_EXPIRE_BUSY_POINTS;
        self->expire_appended = ss.appended;
        self->next_expire_mono = now + (busy ? S_EXPIRE_EVERY_NS
                                             : S_EXPIRE_IDLE_NS);
    }
    if (self->log && now >= self->next_flush_mono) {
        telemd_log_flush(self->log, self->store, telem_now_ns());
        self->next_flush_mono += self->flush_ns;
        if (self->next_flush_mono <= now)
            self->next_flush_mono = now + self->flush_ns;
    }
    int64_t next = self->next_sample_mono < self->next_expire_mono
                       ? self->next_sample_mono : self->next_expire_mono;
    return self->log && self->next_flush_mono < next ? self->next_flush_mono
                                                     : next;
}

int
telemd_agent_stopping(const telemd_agent_t *self)
{
    return self->stopping;
}

int
telemd_agent_handing_over(const telemd_agent_t *self)
{
    return self->handing_over;
}

void
telemd_agent_finish(telemd_agent_t *self)
{
    telem_store_stats_t ss;
    telem_store_stats(self->store, &ss);
    if (!self->log) {
        telem_log(TELEM_LOG_INFO, "received %llu samples since start; no "
                  "log (--no-log)", (unsigned long long) ss.appended);
        return;
    }
    int64_t t0 = telem_mono_ns();
    int rc = telemd_log_sync(self->log, self->store, telem_now_ns());
    telem_log(rc ? TELEM_LOG_ERROR : TELEM_LOG_INFO, "received %llu samples "
              "since start; final flush %s in %.1f ms",
              (unsigned long long) ss.appended,
              rc ? telem_strerror(rc) : "done",
              (telem_mono_ns() - t0) / 1e6);
}

void
telemd_agent_set_queue_depth(telemd_agent_t *self, uint64_t depth)
{
    self->queue_depth = depth;
}
