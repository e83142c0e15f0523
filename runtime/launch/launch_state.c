/* launch_state.c - the launcher's node state machine (see launch_state.h).
 *
 * A flat array of nodes with a state each; ranks are recomputed from the
 * array on demand, so there is no second structure to keep in step.  Every
 * decision a failure leads to is taken in launch_state_fail(), in the order the
 * header lists the rules, so the rules read top to bottom in one place.
 */
#include "launch_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

typedef struct {
    char *name;
    launch_state_node_t st;
} s_node_t;

struct launch_state {
    s_node_t *nodes;
    size_t n;               /* N + K */
    size_t want;            /* N */
    launch_state_config_t cfg;
    long restarts;
    long noop_restarts;     /* restarts that downed no node */
};

void
launch_state_config_defaults(launch_state_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_restarts = 10;
    cfg->backoff_ns = INT64_C(1000000000);
    cfg->backoff_max_ns = INT64_C(30000000000);
}

/* Resolves N and K from the config and the allocation size. */
static void
s_resolve(const launch_state_config_t *cfg, size_t alloc, long *n, long *k)
{
    long a = (long) alloc;
    *n = cfg->nodes_given ? cfg->nodes
                          : (cfg->idle_given ? a - cfg->idle : a);
    *k = cfg->idle_given ? cfg->idle : a - *n;
}

int
launch_state_config_check(const launch_state_config_t *cfg, size_t alloc,
                          char *why,
                          size_t why_size)
{
    long n, k;
    char dummy[8];
    if (!why || !why_size) {
        why = dummy;            /* room for a first character is enough */
        why_size = sizeof dummy;
    }
    *why = '\0';
    if (!cfg)
        return TELEM_EINVAL;
    s_resolve(cfg, alloc, &n, &k);
    if (alloc == 0)
        snprintf(why, why_size, "the allocation has no node");
    else if (cfg->nodes_given && cfg->nodes < 1)
        snprintf(why, why_size, "--nodes %ld: at least one node must run "
                 "the program", cfg->nodes);
    else if (cfg->idle_given && cfg->idle < 0)
        snprintf(why, why_size, "--idle %ld: the number of reserve nodes "
                 "cannot be negative", cfg->idle);
    else if (n > (long) alloc)
        snprintf(why, why_size, "--nodes %ld is more than the %zu nodes of "
                 "the allocation", n, alloc);
    else if (n < 1)
        snprintf(why, why_size, "--idle %ld leaves no node of the %zu in "
                 "the allocation to run the program", k, alloc);
    else if (n + k > (long) alloc)
        snprintf(why, why_size, "--nodes %ld plus --idle %ld needs %ld "
                 "nodes, the allocation has %zu", n, k, n + k, alloc);
    else if (cfg->backoff_ns < 0 || cfg->backoff_max_ns < 0)
        snprintf(why, why_size, "the restart back-off cannot be negative");
    return *why ? TELEM_EINVAL : 0;
}

launch_state_t *
launch_state_new(const char *const *names, size_t n,
                 const launch_state_config_t *cfg,
                 int *err)
{
    int err_ignored;
    if (!err)
        err = &err_ignored;
    int dummy;
    if (!err)
        err = &dummy;
    *err = TELEM_EINVAL;
    if (!names || launch_state_config_check(cfg, n, NULL, 0))
        return NULL;
    long want, idle;
    s_resolve(cfg, n, &want, &idle);
    *err = TELEM_ENOMEM;
    launch_state_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->n = (size_t) (want + idle);
    self->want = (size_t) want;
    self->cfg = *cfg;
    self->nodes = calloc(self->n, sizeof *self->nodes);
    if (!self->nodes)
        goto fail;
    for (size_t i = 0; i < self->n; i++) {
        if (!names[i] || !(self->nodes[i].name = strdup(names[i]))) {
            *err = names[i] ? TELEM_ENOMEM : TELEM_EINVAL;
            goto fail;
        }
        self->nodes[i].st = i < self->want ? LAUNCH_NODE_ACTIVE
                                           : LAUNCH_NODE_IDLE;
    }
    *err = 0;
    return self;
fail:
    launch_state_destroy(&self);
    return NULL;
}

void
launch_state_destroy(launch_state_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    launch_state_t *self = *self_p;
    for (size_t i = 0; self->nodes && i < self->n; i++)
        free(self->nodes[i].name);
    free(self->nodes);
    free(self);
    *self_p = NULL;
}

size_t
launch_state_size(const launch_state_t *self)
{
    return self->n;
}

const char *
launch_state_name(const launch_state_t *self, size_t i)
{
    return i < self->n ? self->nodes[i].name : NULL;
}

launch_state_node_t
launch_state_node(const launch_state_t *self, size_t i)
{
    return i < self->n ? self->nodes[i].st : LAUNCH_NODE_DOWN;
}

long
launch_state_rank(const launch_state_t *self, size_t i)
{
    if (i >= self->n || self->nodes[i].st != LAUNCH_NODE_ACTIVE)
        return -1;
    long rank = 0;
    for (size_t j = 0; j < i; j++)
        rank += self->nodes[j].st == LAUNCH_NODE_ACTIVE;
    return rank;
}

long
launch_state_find(const launch_state_t *self, const char *name)
{
    for (size_t i = 0; name && i < self->n; i++)
        if (strcmp(self->nodes[i].name, name) == 0)
            return (long) i;
    return -1;
}

size_t
launch_state_count(const launch_state_t *self, launch_state_node_t st)
{
    size_t c = 0;
    for (size_t i = 0; i < self->n; i++)
        c += self->nodes[i].st == st;
    return c;
}

long
launch_state_restarts(const launch_state_t *self)
{
    return self->restarts;
}

static int64_t
s_backoff(const launch_state_config_t *cfg, long restart)
{
    if (restart <= 1 || cfg->backoff_ns == 0)
        return 0;
    int64_t d = cfg->backoff_ns;
    for (long i = 2; i < restart && d < cfg->backoff_max_ns; i++)
        d = d > INT64_MAX / 2 ? INT64_MAX : d * 2;
    return d < cfg->backoff_max_ns ? d : cfg->backoff_max_ns;
}

/* Promotes reserves in allocation order until N nodes are active. */
static size_t
s_promote(launch_state_t *self)
{
    size_t active = launch_state_count(self, LAUNCH_NODE_ACTIVE), promoted = 0;
    for (size_t i = 0; i < self->n && active < self->want; i++)
        if (self->nodes[i].st == LAUNCH_NODE_IDLE) {
            self->nodes[i].st = LAUNCH_NODE_ACTIVE;
            active++;
            promoted++;
        }
    return promoted;
}

int
launch_state_fail(launch_state_t *self, const size_t *idx, size_t n,
                  launch_state_outcome_t *out)
{
    if (!out || (!idx && n))
        return TELEM_EINVAL;
    memset(out, 0, sizeof *out);
    for (size_t j = 0; j < n; j++) {
        if (idx[j] >= self->n || self->nodes[idx[j]].st == LAUNCH_NODE_DOWN)
            continue;
        if (self->nodes[idx[j]].st == LAUNCH_NODE_ACTIVE)
            out->downed_active++;
        else
            out->downed_idle++;
        self->nodes[idx[j]].st = LAUNCH_NODE_DOWN;
    }
    if (out->downed_active == 0 && out->downed_idle > 0)
        return 0;                               /* LAUNCH_VERDICT_NONE */
    if (self->cfg.max_restarts >= 0
        && self->restarts >= self->cfg.max_restarts) {
        out->verdict = LAUNCH_VERDICT_BUDGET;
        return 0;
    }
    if (out->downed_active == 0 && self->noop_restarts >= 1) {
        out->verdict = LAUNCH_VERDICT_BOOTLOOP;
        return 0;
    }
    out->promoted = s_promote(self);
    size_t active = launch_state_count(self, LAUNCH_NODE_ACTIVE);
    if (active == 0 || (active < self->want && !self->cfg.exhaust)) {
        out->verdict = LAUNCH_VERDICT_UNRECOVERABLE;
        return 0;
    }
    if (out->downed_active == 0)
        self->noop_restarts++;
    out->verdict = LAUNCH_VERDICT_RESTART;
    out->restart = ++self->restarts;
    out->backoff_ns = s_backoff(&self->cfg, out->restart);
    return 0;
}

const char *
launch_state_verdict_name(launch_state_verdict_t v)
{
    static const char *const names[] = { "none", "restart", "unrecoverable",
                                         "budget", "bootloop" };
    return (unsigned) v < 5 ? names[v] : "unknown";
}

const char *
launch_state_node_name(launch_state_node_t st)
{
    static const char *const names[] = { "active", "idle", "down" };
    return (unsigned) st < 3 ? names[st] : "unknown";
}
