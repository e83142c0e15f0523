/* telemd_push.c - counter increments into the node's counter series
 * (telemd_push.h).
 *
 * The checks mirror the pushing side's (telem_promname.h) so that a
 * sender that is not libtelem cannot put a name into a counter series
 * that a Prometheus scrape could not carry; the sum itself is the
 * store's (telem_store_counter_add()).  Refusals are counted and logged
 * at most 5 lines a minute, each naming the metric and the reason, then
 * one line with the number of lines held back.
 */
#include "telemd_push.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "telem_log.h"
#include "telem_promname.h"

struct telemd_push {
    telem_store_t *store;
    char *node;
    uint64_t refused;
    telem_ratelimit_t log;
};

telemd_push_t *
telemd_push_new(telem_store_t *store, const char *node)
{
    telemd_push_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->node = strdup(node);
    self->log = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(60, 5);
    if (!self->node)
        telemd_push_destroy(&self);
    return self;
}

void
telemd_push_destroy(telemd_push_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->node);
    free(*self_p);
    *self_p = NULL;
}

static int
s_refuse(telemd_push_t *self, const telem_sample_t *s, int rc,
         const char *why)
{
    self->refused++;
    telem_log_limited(&self->log, TELEM_LOG_WARN,
                      "refused a pushed sample of '%.64s': %s (%llu refused "
                      "since start)", s->metric, why,
                      (unsigned long long) self->refused);
    return rc;
}

/* The reason a counter increment breaks the rules, or NULL. */
static const char *
s_counter_why(const telem_sample_t *s)
{
    if (!telem_promname_metric_ok(s->metric))
        return "metric name is not [a-zA-Z_:][a-zA-Z0-9_:]*";
    if (!isfinite(s->value) || s->value < 0)
        return "increment is negative or not finite";
    if (s->ntags > TELEM_PROMNAME_LABELS)
        return "more than 8 labels";
    for (uint32_t i = 0; i < s->ntags; i++)
        if (!telem_promname_label_ok(s->tags[i].key))
            return "a label name is not [a-zA-Z_][a-zA-Z0-9_]*, or is "
                   "reserved (host, pid, __*)";
    return NULL;
}

int
telemd_push_sample(telemd_push_t *self, const telem_sample_t *s,
                   int64_t now_ns)
{
    if (s->kind != TELEM_SAMPLE_COUNTER_ADD)
        return s_refuse(self, s, TELEM_EINVAL, "unknown sample kind");
    const char *why = s_counter_why(s);
    if (why)
        return s_refuse(self, s, TELEM_EINVAL, why);
    telem_tag_t tags[TELEM_PROMNAME_LABELS + 1];
    if (s->ntags)
        memcpy(tags, s->tags, s->ntags * sizeof *tags);
    tags[s->ntags] = (telem_tag_t) { "host", self->node };
    int rc = telem_store_counter_add(self->store, s->metric, tags,
                                     s->ntags + 1, s->ts_ns, s->value,
                                     now_ns);
    if (rc == TELEM_EFULL)
        return s_refuse(self, s, rc, "counter series cap or memory cap "
                        "reached");
    if (rc)
        return s_refuse(self, s, rc, telem_strerror(rc));
    return 0;
}

uint64_t
telemd_push_refused(const telemd_push_t *self)
{
    return self->refused;
}
