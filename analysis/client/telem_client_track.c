/* telem_client_track.c - telem_client -t / -T: what changed, tick by tick.
 *
 * Ticks sit on a fixed grid (t0 + k * period, monotonic clock) and the
 * loop sleeps to an absolute time, so the rate does not drift with the
 * time a query takes; a tick missed while a query was slow is skipped,
 * not made up in a burst.  Each tick asks every node for the newest point
 * of each series and writes only series whose value differs from the value
 * last written for it (every series at the first tick): a sampler that
 * records the same value again makes a new point but no change, so no
 * series ever shows the same value twice in a row.  SIGINT
 * and SIGTERM only set s_stop; the loop ends, the document is closed and
 * flushed, so a stopped run still leaves valid JSON/YAML.  Missing nodes
 * are reported on stderr when the set of missing nodes changes.  With
 * --tau the rows go to tau's document instead (telem_client_tau.c), one
 * list per tick that had changes.
 *
 * Call order: telem_client.c calls telem_client_track(); this file calls
 * telem_client_tau.c, telem_client_result.c and telem_client_fmt.c, never
 * telem_client.c.
 */
#include "telem_client.h"
#include "telem_time.h"

#include <czmq.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <time.h>

/* Set by SIGINT/SIGTERM; the loop checks it. */
static volatile sig_atomic_t s_stop;

typedef struct {
    double v;                /* the value last written */
    uint64_t seen;           /* last tick the series was in a reply */
} s_last_t;

typedef struct {
    ac_t *ac;
    const telem_client_opts_t *o;
    telem_client_fmt_t *f;
    telem_client_tau_t *tau; /* --tau: instead of f */
    int keep_host;           /* --tau: more than one node asked */
    zhashx_t *last;          /* series key -> s_last_t */
    int timeout_ms;
    uint64_t tick;
    char *missing;           /* missing node names at the last tick */
    char **ever;             /* every node missing at some tick */
    size_t never;
    char key[(TELEM_NAME_MAX + 2) * (2 * TELEM_TAGS_MAX + 2)];
} s_track_t;

static void
s_on_signal(int sig)
{
    (void) sig;
    s_stop = 1;
}

static void
s_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;   /* no SA_RESTART: a sleep ends at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static void
s_last_free(void **item)
{
    free(*item);
    *item = NULL;
}

/* node \x1f metric \x1f key=value \x1f ...: unique per series. */
static void
s_key(char *buf, size_t size, const char *node, const telem_series_t *s)
{
    int n = snprintf(buf, size, "%s\x1f%s", node, s->metric);
    for (uint32_t i = 0; i < s->ntags && n >= 0 && (size_t) n < size; i++)
        n += snprintf(buf + n, size - (size_t) n, "\x1f%s=%s", s->tags[i].key,
                      s->tags[i].value);
}

/* 1 if v differs from the value last written for key (and records it), 0
 * if not, -1 when out of memory.  Values are compared bit for bit, so 0.0
 * and -0.0 differ. */
static int
s_changed(s_track_t *t, const char *key, double v)
{
    s_last_t *l = zhashx_lookup(t->last, key);
    if (l) {
        l->seen = t->tick;
        if (memcmp(&l->v, &v, sizeof v) == 0)
            return 0;
    } else {
        if (!(l = malloc(sizeof *l)))
            return -1;
        l->seen = t->tick;
        if (zhashx_insert(t->last, key, l) != 0) {
            free(l);
            return -1;
        }
    }
    l->v = v;
    return 1;
}

/* Forgets series that were not in this tick's (complete) reply. */
static void
s_prune(s_track_t *t)
{
    zlistx_t *keys = zhashx_keys(t->last);
    for (const char *k = keys ? zlistx_first(keys) : NULL; k;
         k = zlistx_next(keys)) {
        s_last_t *l = zhashx_lookup(t->last, k);
        if (l && l->seen != t->tick)
            zhashx_delete(t->last, k);
    }
    zlistx_destroy(&keys);
}

/* Adds r's missing nodes to those ever missing (for the document's end). */
static void
s_remember_missing(s_track_t *t, const ac_result_t *r)
{
    for (size_t i = 0; i < ac_result_nmissing(r); i++) {
        const char *name = ac_result_missing(r, i);
        size_t k = 0;
        while (k < t->never && strcmp(t->ever[k], name) != 0)
            k++;
        if (k < t->never)
            continue;
        char **grown = realloc(t->ever, (t->never + 1) * sizeof *grown);
        if (!grown)
            return;
        t->ever = grown;
        if ((t->ever[t->never] = strdup(name)) != NULL)
            t->never++;
    }
}

/* Reports missing nodes when the set differs from the last tick's. */
static void
s_missing(s_track_t *t, const ac_result_t *r)
{
    s_remember_missing(t, r);
    size_t len = 1;
    for (size_t i = 0; i < ac_result_nmissing(r); i++)
        len += strlen(ac_result_missing(r, i)) + 1;
    char *now = malloc(len);
    if (!now)
        return;
    now[0] = '\0';
    for (size_t i = 0; i < ac_result_nmissing(r); i++) {
        strcat(now, ac_result_missing(r, i));
        strcat(now, "\n");
    }
    if (!t->missing || strcmp(now, t->missing) != 0) {
        if (*now)
            telem_client_result_missing_report(r);
        else if (t->missing)
            fprintf(stderr, "telem_client: every node answers again\n");
    }
    free(t->missing);
    t->missing = now;
}

static void
s_row(s_track_t *t, const char *node, const telem_series_t *s)
{
    if (t->tau) {
        /* The key buffer is free again once the change is known. */
        telem_client_tau_name(t->key, sizeof t->key, s, t->keep_host);
        telem_client_tau_value(t->tau, t->key, s->ts[s->npoints - 1],
                               s->values[s->npoints - 1]);
        return;
    }
    telem_client_fmt_str(t->f, node);
    telem_client_fmt_str(t->f, s->metric);
    telem_client_fmt_tags(t->f, s->tags, s->ntags);
    telem_client_fmt_i64(t->f, s->ts[s->npoints - 1]);
    telem_client_fmt_dbl(t->f, s->values[s->npoints - 1]);
    telem_client_fmt_row_end(t->f);
}

/* One tick: query, write the changes.  Returns ac_query()'s code. */
static int
s_tick(s_track_t *t)
{
    const telem_client_opts_t *o = t->o;
    ac_query_t q = { .metrics = o->metrics, .nmetrics = o->nmetrics,
                     .tags = o->tags, .ntags = o->ntags,
                     .flags = TELEM_QUERY_LATEST, .timeout_ms = t->timeout_ms };
    ac_result_t *r = NULL;
    int rc = ac_query(t->ac, &q, &r);
    if (!r)
        return rc;
    t->tick++;
    s_missing(t, r);
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        if (s->npoints == 0 || isnan(s->values[s->npoints - 1])
            || !telem_client_result_selected(o, s))
            continue;   /* null: nothing to track; or not asked for */
        const char *node = ac_result_series_node(r, i);
        s_key(t->key, sizeof t->key, node, s);
        int ch = s_changed(t, t->key, s->values[s->npoints - 1]);
        if (ch < 0) {
            rc = TELEM_ENOMEM;
            break;
        }
        if (ch)
            s_row(t, node, s);
    }
    if (rc == 0)
        s_prune(t);
    if (t->tau)
        telem_client_tau_tick_end(t->tau);
    ac_result_destroy(&r);
    return rc;
}

/* The first grid point after `now`. */
static int64_t
s_next(int64_t next, int64_t period, int64_t now)
{
    next += period;
    if (next <= now)
        next += ((now - next) / period + 1) * period;
    return next;
}

static void
s_sleep_until(int64_t mono_ns)
{
    struct timespec ts = { (time_t) (mono_ns / TELEM_NS_PER_SEC),
                           (long) (mono_ns % TELEM_NS_PER_SEC) };
    while (!s_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
                                       NULL) == EINTR)
        ;
}

/* The loop; returns the exit code. */
static int
s_loop(s_track_t *t)
{
    int64_t period = (int64_t) llround(1e9 / t->o->hz);
    if (period < 1)
        period = 1;
    int64_t next = telem_mono_ns();
    int64_t stop_at = t->o->duration_s > 0
        ? next + (int64_t) llround(t->o->duration_s * 1e9) : INT64_MAX;
    int incomplete = 0, answered = 0;
    while (!s_stop) {
        int rc = s_tick(t);
        if (rc == 0 || rc == TELEM_EPARTIAL)
            answered = 1;
        if (rc != 0)
            incomplete = 1;
        if (rc != 0 && rc != TELEM_EPARTIAL && rc != TELEM_ETIMEDOUT
            && rc != TELEM_ECONN)
            /* refused or out of memory */
            return telem_client_result_exit_code(rc);
        if ((t->tau ? telem_client_tau_flush(t->tau, 0)
                    : telem_client_fmt_flush(t->f)) != 0) {
            fprintf(stderr, "telem_client: writing the output failed\n");
            return 1;
        }
        next = s_next(next, period, telem_mono_ns());
        if (next >= stop_at)
            break;
        s_sleep_until(next);
    }
    if (!incomplete)
        return 0;
    return answered ? 3 : telem_client_result_exit_code(TELEM_ETIMEDOUT);
}

int
telem_client_track(ac_t *ac, const telem_client_opts_t *o)
{
    static const char *const cols[] = {
        "node", "metric", "tags", "time_ns", "value"
    };
    s_install_signals();
    long period_ms = (long) (1000.0 / o->hz);
    s_track_t t = {
        .ac = ac, .o = o,
        .timeout_ms = o->timeout_ms > 0 ? o->timeout_ms
                    : period_ms < 100 ? 100
                    : period_ms > AC_TIMEOUT_DEFAULT_MS ? AC_TIMEOUT_DEFAULT_MS
                    : (int) period_ms,
    };
    t.last = zhashx_new();
    if (o->tau) {
        t.tau = telem_client_tau_track_new(o->fmt, o->out);
        t.keep_host = ac_node_count(ac) > 1;
    } else {
        t.f = telem_client_fmt_new(o->fmt, o->out, "changes", cols, 5, -1);
    }
    int code = 1;
    if (t.last && (t.f || t.tau)) {
        zhashx_set_destructor(t.last, s_last_free);
        code = s_loop(&t);
    }
    int wrc = t.tau ? telem_client_tau_flush(t.tau, 1)
            : !t.f ? TELEM_ENOMEM
            : telem_client_fmt_end(t.f, (const char *const *) t.ever,
                                   t.never);
    if (wrc != 0) {
        fprintf(stderr, "telem_client: writing the output failed\n");
        code = 1;
    }
    telem_client_fmt_destroy(&t.f);
    telem_client_tau_destroy(&t.tau);
    zhashx_destroy(&t.last);
    free(t.missing);
    for (size_t i = 0; i < t.never; i++)
        free(t.ever[i]);
    free(t.ever);
    return code;
}
