/* launch_job.c - the job supervisor's life cycle: start, run, fail,
 * restart, end (see launch_job.h).
 *
 * Everything happens in one czmq zloop: a signalfd (SIGCHLD, SIGINT,
 * SIGTERM, SIGHUP, blocked and read here, so no signal races with the
 * loop), telemd's output pipes, the restart request socket, the heartbeat
 * timer and one timer per phase.  The job moves through phases
 * (STARTING -> RUNNING -> STOPPING -> BACKOFF -> STARTING ..., ENDING at
 * any point); after every event s_advance() checks whether the phase is
 * complete, so nothing waits by sleeping and every wait has a deadline.
 */
#include "launch_job_int.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_time.h"
#include "telem_why.h"

#define S_GIVE_UP_NS (5 * TELEM_NS_PER_SEC) /* after SIGKILL, stop waiting */

static void s_advance(launch_job_t *self);

void
launch_job_config_defaults(launch_job_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    launch_state_config_defaults(&cfg->nodes);
    cfg->level = 2;
    cfg->grace_ns = 5 * TELEM_NS_PER_SEC;
    cfg->heartbeat_ns = TELEM_NS_PER_SEC;
    cfg->heartbeat_timeout_ns = TELEM_NS_PER_SEC;
    cfg->heartbeat_misses = 3;
    cfg->start_timeout_ns = 30 * TELEM_NS_PER_SEC;
    cfg->agg_port = 4242;
    cfg->relays = -1;
    cfg->metrics_port = -1;
    cfg->daemon_restarts = 5;
    cfg->daemon_window_ns = 300 * TELEM_NS_PER_SEC;
    cfg->daemon_pause_ns = 300 * TELEM_NS_PER_SEC;
    cfg->daemon_backoff_ns = TELEM_NS_PER_SEC;
    cfg->daemon_backoff_max_ns = 60 * TELEM_NS_PER_SEC;
}

static size_t
s_ms(int64_t ns)
{
    return ns <= 0 ? 1 : (size_t) ((ns + TELEM_NS_PER_MS - 1) / TELEM_NS_PER_MS);
}

static double
s_sec(int64_t ns)
{
    return (double) ns / 1e9;
}

/* ---- timers ------------------------------------------------------------ */

static void
s_timer_cancel(launch_job_t *self)
{
    if (self->timer >= 0)
        zloop_timer_end(self->loop, self->timer);
    self->timer = -1;
}

static void
s_timer_set(launch_job_t *self, int64_t ns, zloop_timer_fn *fn)
{
    s_timer_cancel(self);
    self->timer = zloop_timer(self->loop, s_ms(ns), 1, fn, self);
}

int
launch_job_loop_result(const launch_job_t *self)
{
    return self->phase == LAUNCH_PHASE_ENDING && self->nprocs == 0 ? -1 : 0;
}

int
launch_job_on_kill_due(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_t *self = arg;
    launch_job_kill_due(self, telem_mono_ns());
    return launch_job_loop_result(self);
}

/* Stops processes and arms the timer that kills what is left after the
 * grace period. */
static void
s_stop(launch_job_t *self, int role, long node)
{
    if (launch_job_stop(self, role, node))
        zloop_timer(self->loop, s_ms(self->cfg.grace_ns) + 1, 1,
                    launch_job_on_kill_due, self);
}

/* ---- ending ------------------------------------------------------------ */

static int
s_on_give_up(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_t *self = arg;
    telem_log(TELEM_LOG_ERROR, "%zu process(es) did not end after SIGKILL; "
              "giving up on them", self->nprocs);
    return -1;
}

void
launch_job_end(launch_job_t *self, int code, const char *why)
{
    if (self->phase == LAUNCH_PHASE_ENDING)
        return;
    self->phase = LAUNCH_PHASE_ENDING;
    self->exit_code = code;
    telem_log(code ? TELEM_LOG_WARN : TELEM_LOG_INFO,
              "job ends (exit %d): %s", code, why);
    launch_job_dump(self);
    s_stop(self, -1, -1);
    s_timer_set(self, self->cfg.grace_ns + S_GIVE_UP_NS, s_on_give_up);
    /* With nothing left to reap, no exit event would end the loop. */
    zloop_timer(self->loop, 1, 1, launch_job_on_kill_due, self);
}

/* ---- starting the program ---------------------------------------------- */

/* Prints and logs the line of a restart that has completed (or been
 * refused, with `verdict` saying why). */
static void
s_restart_line(launch_job_t *self, const char *verdict)
{
    launch_job_restart_t *r = &self->rs;
    char budget[32] = "unlimited", active[512] = "", reform[200] = "";
    char line[sizeof r->trigger + sizeof r->nodes + sizeof r->promoted
              + sizeof r->why + sizeof active + sizeof reform + 256];
    telem_why_end(r->why, sizeof r->why, &r->why_dropped);
    if (*r->reform_error)
        snprintf(reform, sizeof reform, " (failed: %s)", r->reform_error);
    if (self->cfg.nodes.max_restarts >= 0)
        snprintf(budget, sizeof budget, "%ld", self->cfg.nodes.max_restarts);
    for (size_t i = 0; i < self->n; i++)
        if (launch_state_node(self->state, i) == LAUNCH_NODE_ACTIVE
            && strlen(active) + strlen(launch_state_name(self->state, i)) + 2
                   < sizeof active)
            strcat(strcat(active, *active ? "," : ""),
                   launch_state_name(self->state, i));
    if (verdict)
        snprintf(line, sizeof line, "restart refused (%s): trigger %s; "
                 "nodes %s; why: %s; %ld of %s restarts done; job ends",
                 verdict, r->trigger, *r->nodes ? r->nodes : "none", r->why,
                 launch_state_restarts(self->state), budget);
    else
        snprintf(line, sizeof line, "restart %ld (of at most %s): trigger "
                 "%s; nodes %s; promoted %s; why: %s; stop %.3f s, re-form "
                 "%.3f s%s, back-off %.3f s, start %.3f s; active %s",
                 r->number, budget, r->trigger, *r->nodes ? r->nodes : "none",
                 *r->promoted ? r->promoted : "none", r->why,
                 s_sec(r->t_stopped - r->t0),
                 s_sec(r->t_reformed - r->t_stopped), reform,
                 s_sec(r->t_backoff_end - r->t_reformed),
                 s_sec(telem_mono_ns() - r->t_backoff_end), active);
    telem_log(TELEM_LOG_WARN, "%s", line);
    launch_job_files_log_restart(self, line);
}

static void
s_start_programs(launch_job_t *self)
{
    size_t *idx = calloc(self->n ? self->n : 1, sizeof *idx), n = 0;
    for (size_t i = 0; idx && i < self->n; i++)
        if (launch_state_node(self->state, i) == LAUNCH_NODE_ACTIVE)
            idx[n++] = i;
    size_t started = idx ? launch_job_spawn_programs(self, idx, n) : 0;
    size_t first = n ? idx[0] : self->n;
    free(idx);
    if (started < n || !n) {
        launch_job_end(self, LAUNCH_EXIT_PROGRAM,
                       "the program could not be started");
        return;
    }
    /* Relays first: the observers then find no relay that is stopping. */
    launch_job_relays_update(self);
    launch_job_start_observers(self, first);
    self->phase = LAUNCH_PHASE_RUNNING;
    self->runs++;
    if (self->rs.pending) {
        self->rs.pending = 0;
        s_restart_line(self, NULL);
    } else
        telem_log(TELEM_LOG_INFO, "program started on %zu node(s), %zu in "
                  "reserve", launch_state_count(self->state,
                                                LAUNCH_NODE_ACTIVE),
                  launch_state_count(self->state, LAUNCH_NODE_IDLE));
}

/* Forms the dictionary's first map on the job's nodes, once: the
 * servers may have replayed an earlier map from their logs (a job run
 * again in the same run directory), and a re-form makes every server
 * agree on this job's node set while keeping what the logs hold. */
static int
s_dict_form(launch_job_t *self)
{
    if (!self->dict || self->dict_formed)
        return 0;
    char why[256];
    int64_t t0 = telem_mono_ns();
    if (launch_job_dict_reform(self, why, sizeof why) != 0) {
        char line[320];
        snprintf(line, sizeof line, "the dictionary could not be formed: %s",
                 why);
        launch_job_end(self, LAUNCH_EXIT_START, line);
        return -1;
    }
    self->dict_formed = 1;
    telem_log(TELEM_LOG_INFO, "dictionary formed on %zu node(s) in %.3f s",
              self->n - launch_state_count(self->state, LAUNCH_NODE_DOWN),
              s_sec(telem_mono_ns() - t0));
    return 0;
}

/* Starts the program when every node is ready (launch_job_node_ready()). */
static void
s_try_start(launch_job_t *self)
{
    for (size_t i = 0; i < self->n; i++)
        if (!launch_job_node_ready(self, i))
            return;
    s_timer_cancel(self);
    if (s_dict_form(self) != 0)
        return;
    int64_t t0 = telem_mono_ns();
    launch_job_files_write(self);
    int64_t t1 = telem_mono_ns();
    s_start_programs(self);
    telem_log(TELEM_LOG_DEBUG, "files written in %.3f s, programs spawned "
              "in %.3f s", s_sec(t1 - t0), s_sec(telem_mono_ns() - t1));
}

static int
s_on_start_timeout(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_t *self = arg;
    self->timer = -1;
    char why[128];
    for (size_t i = 0;
         i < self->n && self->phase == LAUNCH_PHASE_STARTING; i++) {
        if (launch_state_node(self->state, i) == LAUNCH_NODE_DOWN
            || launch_job_node_ready(self, i))
            continue;
        snprintf(why, sizeof why, "%s was not ready within %.0f s",
                 self->nodes[i].ready ? "telem_dictd" : "telemd",
                 s_sec(self->cfg.start_timeout_ns));
        launch_job_node_failed(self, i, "start", why);
    }
    return launch_job_loop_result(self);
}

static void
s_enter_starting(launch_job_t *self)
{
    self->phase = LAUNCH_PHASE_STARTING;
    s_timer_set(self, self->cfg.start_timeout_ns, s_on_start_timeout);
    s_try_start(self);
}

void
launch_job_on_ready(launch_job_t *self, size_t i)
{
    self->ac_stale = 1;
    /* A telemd ready after the start (a reserve's that was still starting
       when the active nodes were ready, a restarted one's) is not in the
       files the start wrote: launch/telemd_nodes and the /metrics targets
       are written again. */
    if (self->phase != LAUNCH_PHASE_STARTING)
        launch_job_files_write(self);
    telem_log(TELEM_LOG_DEBUG, "%s: telemd %s, telem_dictd %s",
              launch_state_name(self->state, i),
              self->nodes[i].ready ? self->nodes[i].endpoint : "not ready",
              !self->dict ? "not used"
              : self->nodes[i].dict_ready ? "ready" : "not ready");
    if (self->phase == LAUNCH_PHASE_STARTING)
        s_try_start(self);
}

void
launch_job_reach_endpoint(char *out, size_t size, const char *node,
                          const char *ep)
{
    static const char any[] = "tcp://0.0.0.0:";
    if (strncmp(ep, any, sizeof any - 1) == 0)
        snprintf(out, size, "tcp://%s:%s", node, ep + sizeof any - 1);
    else
        snprintf(out, size, "%s", ep);
}

/* One line of telem_dictd's start-up output: "endpoint<TAB>EP", "ready"
 * (it registers its endpoint in the dictionary node file itself). */
static void
s_dictd_line(launch_job_t *self, launch_job_proc_t *p, const char *line)
{
    launch_job_node_t *nd = &self->nodes[p->node];
    if (nd->dictd == p && strncmp(line, "endpoint\t", 9) == 0)
        snprintf(nd->dict_endpoint, sizeof nd->dict_endpoint, "%s",
                 line + 9);
    if (strcmp(line, "ready") != 0 || nd->dictd != p)
        return;
    nd->dict_ready = 1;
    launch_job_sup_on_ready(self, p->node, LAUNCH_ROLE_DICTD);
    if (launch_state_node(self->state, p->node) != LAUNCH_NODE_DOWN)
        launch_job_on_ready(self, p->node);
}

/* Keeps telemd's /metrics URL ("http://HOST:PORT/metrics") as the
 * Prometheus target HOST:PORT; one bound to every address is reached
 * through the node's name. */
static void
s_metrics_target(launch_job_node_t *nd, const char *node, const char *url)
{
    static const char scheme[] = "http://";
    if (strncmp(url, scheme, sizeof scheme - 1) != 0)
        return;
    const char *host = url + sizeof scheme - 1;
    const char *end = strchr(host, '/');
    size_t len = end ? (size_t) (end - host) : strlen(host);
    const char *port = memrchr(host, ':', len);
    if (!port)
        return;
    size_t hlen = (size_t) (port - host);
    int any = (hlen == 7 && strncmp(host, "0.0.0.0", 7) == 0)
              || (hlen == 4 && strncmp(host, "[::]", 4) == 0);
    snprintf(nd->metrics, sizeof nd->metrics, "%.*s%.*s",
             any ? 255 : (int) hlen, any ? node : host, (int) (len - hlen),
             port);
}

/* One line of telemd's start-up output. */
static void
s_telemd_line(launch_job_t *self, launch_job_proc_t *p, const char *line)
{
    launch_job_node_t *nd = &self->nodes[p->node];
    const char *tab = strchr(line, '\t');
    if (strcmp(line, "ready") == 0) {
        const char *want = launch_state_name(self->state, p->node);
        if (launch_source_daemon_names_itself(self->source)
            && strcmp(nd->reported, want) != 0) {
            char why[TELEM_NAME_MAX * 2 + 64];
            snprintf(why, sizeof why, "telemd sent to %s runs as node '%s'",
                     want, nd->reported);
            launch_job_node_failed(self, p->node, "start", why);
            return;
        }
        nd->ready = 1;
        launch_job_sup_on_ready(self, p->node, LAUNCH_ROLE_TELEMD);
        launch_job_on_ready(self, p->node);
        return;
    }
    if (!tab)
        return;
    size_t klen = (size_t) (tab - line);
    if (klen == 4 && strncmp(line, "node", 4) == 0)
        snprintf(nd->reported, sizeof nd->reported, "%s", tab + 1);
    else if (klen == 5 && strncmp(line, "query", 5) == 0)
        launch_job_reach_endpoint(nd->endpoint, sizeof nd->endpoint,
                                  launch_state_name(self->state, p->node),
                                  tab + 1);
    else if (klen == 3 && strncmp(line, "ctl", 3) == 0 && !*nd->endpoint)
        snprintf(nd->endpoint, sizeof nd->endpoint, "%s", tab + 1);
    else if (klen == 7 && strncmp(line, "metrics", 7) == 0)
        s_metrics_target(nd, launch_state_name(self->state, p->node),
                         tab + 1);
}

void
launch_job_on_line(launch_job_t *self, launch_job_proc_t *p, const char *line)
{
    if (p->role == LAUNCH_ROLE_DICTD)
        s_dictd_line(self, p, line);
    else if (p->role == LAUNCH_ROLE_RELAY)
        launch_job_relays_line(self, p, line);
    else
        s_telemd_line(self, p, line);
}

/* ---- restarting -------------------------------------------------------- */

static int
s_on_backoff_end(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_t *self = arg;
    self->timer = -1;
    self->rs.t_backoff_end = telem_mono_ns();
    s_enter_starting(self);
    return launch_job_loop_result(self);
}

/* The --detector-cmd processes still running. */
static size_t
s_count_detcmds(const launch_job_t *self)
{
    size_t n = 0;
    for (int k = 0; k < LAUNCH_DETCMD_MAX; k++)
        n += launch_job_count(self, LAUNCH_ROLE_DETCMD + k);
    return n;
}

static void
s_advance(launch_job_t *self)
{
    if (self->phase != LAUNCH_PHASE_STOPPING
        || launch_job_count(self, LAUNCH_ROLE_PROGRAM)
        || launch_job_count(self, LAUNCH_ROLE_WATCH)
        || launch_job_count(self, LAUNCH_ROLE_COLLECT)
        || launch_job_count_stopping(self, LAUNCH_ROLE_AGG)
        || s_count_detcmds(self))
        return;
    self->rs.t_stopped = telem_mono_ns();
    /* A failed re-form is reported in the restart line; the program is
       started anyway and sees the dictionary's errors itself. */
    if (launch_job_dict_reform(self, self->rs.reform_error,
                               sizeof self->rs.reform_error) == 0)
        self->rs.reform_error[0] = '\0';
    self->rs.t_reformed = telem_mono_ns();
    self->ac_stale = 1;
    launch_job_files_write(self);
    if (self->rs.backoff_ns > 0) {
        self->phase = LAUNCH_PHASE_BACKOFF;
        s_timer_set(self, self->rs.backoff_ns, s_on_backoff_end);
        return;
    }
    self->rs.t_backoff_end = self->rs.t_reformed;
    s_enter_starting(self);
}

/* Appends "name" to a comma-separated list in buf. */
static void
s_list_add(char *buf, size_t size, const char *name)
{
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", len ? "," : "", name);
}

/* Stops the processes of a node taken out of the job.  With keep_telemd
 * its telemd stays until the job ends, so that the node's history (what
 * got it taken out) stays readable: launch/telemd_nodes lists it. */
static void
s_stop_node(launch_job_t *self, size_t i, int keep_telemd)
{
    launch_job_sup_forget_node(self, i);
    if (!keep_telemd || !self->nodes[i].telemd) {
        s_stop(self, -1, (long) i);
        self->nodes[i].ready = 0;
    } else
        for (int role = LAUNCH_ROLE_DICTD; role < LAUNCH_SUP_ROLES; role++)
            if (role != LAUNCH_ROLE_RELAY)
                s_stop(self, role, (long) i);
    self->nodes[i].dict_ready = 0;
}

/* Whether a node failed by `trigger` keeps its telemd: not when the
 * failure is the node's daemons themselves or their start. */
static int
s_keeps_telemd(const char *trigger)
{
    return strcmp(trigger, "heartbeat") != 0 && strcmp(trigger, "daemon") != 0
           && strcmp(trigger, "start") != 0 && strcmp(trigger, "slurmd") != 0;
}

/* Takes node i, just gone DOWN, out of the dictionary node file: its
 * server is stopped (or cut off), and a client that found it there would
 * wait for it; the re-form that follows leaves it out of the map. */
static void
s_forget_dict(launch_job_t *self, size_t i)
{
    const char *name = launch_state_name(self->state, i);
    if (self->dict && telem_nodefile_unregister(self->dict_nodefile, name))
        telem_log(TELEM_LOG_WARN, "cannot take %s out of %s: %s", name,
                  self->dict_nodefile, strerror(errno));
}

/* Gives node i, lost, back to Slurm (launch_source_release): it then no
 * longer takes the allocation with it when Slurm marks it DOWN. */
static void
s_release(launch_job_t *self, size_t i)
{
    char why[512];
    const char *name = launch_state_name(self->state, i);
    int rc = launch_source_release(self->source, name, why, sizeof why);
    if (rc < 0)
        telem_log(TELEM_LOG_WARN, "%s stays in the Slurm allocation: %s; if "
                  "Slurm marks it DOWN the allocation may end (salloc/sbatch "
                  "--no-kill keeps it)", name, why);
    else if (rc == 1)
        telem_log(TELEM_LOG_INFO, "%s given back to Slurm: the allocation "
                  "goes on without it", name);
}

/* Lists, comparing with the states before the failure, the nodes that
 * went down (whose processes it stops and whose dictionary entry it
 * removes; a lost one it gives back to Slurm) and the reserves promoted. */
static void
s_note_changes(launch_job_t *self, const launch_state_node_t *before,
               int keep_telemd, char *down, char *promoted, size_t size)
{
    down[0] = promoted[0] = '\0';
    for (size_t i = 0; i < self->n; i++) {
        launch_state_node_t now = launch_state_node(self->state, i);
        const char *name = launch_state_name(self->state, i);
        if (before[i] != LAUNCH_NODE_DOWN && now == LAUNCH_NODE_DOWN) {
            s_list_add(down, size, name);
            s_stop_node(self, i, keep_telemd);
            s_forget_dict(self, i);
            if (!keep_telemd)       /* the node itself is lost */
                s_release(self, i);
        } else if (before[i] == LAUNCH_NODE_IDLE && now == LAUNCH_NODE_ACTIVE) {
            s_list_add(promoted, size, name);
        }
    }
    self->ac_stale = 1;
}

/* Fills the restart record; a restart still pending (a failure during a
 * restart) is merged into the new one, so its line names everything. */
static void
s_record(launch_job_t *self, const char *trigger, const char *why,
         const char *down, const char *promoted)
{
    launch_job_restart_t *r = &self->rs;
    if (!r->pending) {
        r->trigger[0] = r->why[0] = r->nodes[0] = r->promoted[0] =
            r->reform_error[0] = '\0';
        r->why_dropped = 0;
    } else
        telem_log(TELEM_LOG_INFO, "restart %ld is merged into the next one "
                  "(a failure during the restart)", r->number);
    unsigned no_trigger = 0;
    telem_why_clause(r->trigger, sizeof r->trigger, "+", trigger,
                     &no_trigger);
    telem_why_clause(r->why, sizeof r->why, "; ", why, &r->why_dropped);
    if (*down)
        s_list_add(r->nodes, sizeof r->nodes, down);
    if (*promoted)
        s_list_add(r->promoted, sizeof r->promoted, promoted);
}

static int
s_verdict_exit(launch_state_verdict_t v)
{
    return v == LAUNCH_VERDICT_UNRECOVERABLE ? LAUNCH_EXIT_UNRECOVERABLE
                                         : LAUNCH_EXIT_BUDGET;
}

/* The failure of nodes idx[0..n) (n may be 0), detected by `trigger`. */
static void
s_fail(launch_job_t *self, const size_t *idx, size_t n, const char *trigger,
       const char *why, int allowed, int not_allowed_code)
{
    if (self->phase == LAUNCH_PHASE_ENDING)
        return;
    if (!allowed) {
        launch_job_end(self, not_allowed_code, why);
        return;
    }
    launch_state_node_t before[self->n ? self->n : 1];
    for (size_t i = 0; i < self->n; i++)
        before[i] = launch_state_node(self->state, i);
    launch_state_outcome_t o;
    char down[256], promoted[256];
    launch_state_fail(self->state, idx, n, &o);
    s_note_changes(self, before, s_keeps_telemd(trigger), down, promoted,
                   sizeof down);
    if (o.verdict == LAUNCH_VERDICT_NONE) {
        telem_log(TELEM_LOG_WARN, "reserve node %s lost (%s): %s; %zu "
                  "reserve(s) left", down, trigger, why,
                  launch_state_count(self->state, LAUNCH_NODE_IDLE));
        launch_job_files_write(self);
        return;
    }
    s_record(self, trigger, why, down, promoted);
    if (o.verdict != LAUNCH_VERDICT_RESTART) {
        s_restart_line(self, launch_state_verdict_name(o.verdict));
        launch_job_end(self, s_verdict_exit(o.verdict), "no restart possible");
        return;
    }
    self->rs.pending = 1;
    self->rs.number = o.restart;
    self->rs.backoff_ns = o.backoff_ns;
    self->rs.t0 = telem_mono_ns();
    self->phase = LAUNCH_PHASE_STOPPING;
    s_timer_cancel(self);
    s_stop(self, LAUNCH_ROLE_PROGRAM, -1);
    s_stop(self, LAUNCH_ROLE_WATCH, -1);
    for (int k = 0; k < LAUNCH_DETCMD_MAX; k++)
        s_stop(self, LAUNCH_ROLE_DETCMD + k, -1);
    s_stop(self, LAUNCH_ROLE_COLLECT, -1);
    launch_job_sup_reset_observers(self);
    /* telem_agg stays while its node does (launch_job_start_agg()). */
    if (launch_job_stop_agg_off(self))
        zloop_timer(self->loop, s_ms(self->cfg.grace_ns) + 1, 1,
                    launch_job_on_kill_due, self);
    s_advance(self);
}

void
launch_job_nodes_failed(launch_job_t *self, const size_t *idx, size_t n,
                        const char *trigger, const char *why)
{
    s_fail(self, idx, n, trigger, why, self->cfg.resilient,
           self->runs ? LAUNCH_EXIT_UNRECOVERABLE : LAUNCH_EXIT_START);
}

void
launch_job_begin(launch_job_t *self)
{
    int64_t t0 = telem_mono_ns();
    if (launch_job_start_daemons(self) != 0) {
        launch_job_end(self, LAUNCH_EXIT_START,
                       "telemd or telem_dictd could not be started");
        return;
    }
    telem_log(TELEM_LOG_DEBUG, "daemons of %zu node(s) spawned in %.3f s",
              self->n, s_sec(telem_mono_ns() - t0));
    s_enter_starting(self);
}

void
launch_job_node_failed(launch_job_t *self, size_t i, const char *trigger,
                       const char *why)
{
    char line[768];
    snprintf(line, sizeof line, "%s: %s", launch_state_name(self->state, i),
             why);
    s_fail(self, &i, 1, trigger, line, self->cfg.resilient,
           self->runs ? LAUNCH_EXIT_UNRECOVERABLE : LAUNCH_EXIT_START);
}

int
launch_job_request_restart(launch_job_t *self, const char *const *names,
                           size_t n,
                           const char *trigger, const char *why)
{
    if (self->phase == LAUNCH_PHASE_ENDING)
        return TELEM_ESTATE;
    size_t idx[n ? n : 1];
    for (size_t k = 0; k < n; k++) {
        long i = launch_state_find(self->state, names[k]);
        if (i < 0)
            return TELEM_ENOTFOUND;
        idx[k] = (size_t) i;
    }
    s_fail(self, idx, n, trigger, why, self->cfg.resilient,
           LAUNCH_EXIT_UNRECOVERABLE);
    return 0;
}

/* ---- process exits ----------------------------------------------------- */

static void
s_program_exit(launch_job_t *self, launch_job_proc_t *p, const char *how,
               int ok)
{
    launch_job_node_t *nd = &self->nodes[p->node];
    if (nd->program == p)
        nd->program = NULL;
    if (self->phase != LAUNCH_PHASE_RUNNING || p->stopping) {
        s_advance(self);
        return;
    }
    if (ok) {
        nd->done = 1;
        for (size_t i = 0; i < self->n; i++)
            if (launch_state_node(self->state, i) == LAUNCH_NODE_ACTIVE
                && !self->nodes[i].done)
                return;
        launch_job_end(self, LAUNCH_EXIT_OK,
                       "the program finished on every node");
        return;
    }
    char line[768];
    if (self->cfg.restart_on_failure) {
        snprintf(line, sizeof line, "%s: program %s",
                 launch_state_name(self->state, p->node), how);
        s_fail(self, &p->node, 1, "crash", line, 1, LAUNCH_EXIT_PROGRAM);
        return;
    }
    snprintf(line, sizeof line, "the program on %s %s",
             launch_state_name(self->state, p->node), how);
    launch_job_end(self, LAUNCH_EXIT_PROGRAM, line);
}

void
launch_job_on_exit(launch_job_t *self, launch_job_proc_t *p, int status)
{
    char how[sizeof p->how];
    if (p->how[0])
        snprintf(how, sizeof how, "%s", p->how);
    else
        launch_proc_status_describe(status, how, sizeof how);
    launch_job_node_t *nd = &self->nodes[p->node];
    const char *node = launch_state_name(self->state, p->node);
    if (p->role == LAUNCH_ROLE_PROGRAM) {
        s_program_exit(self, p, how, WIFEXITED(status)
                                     && WEXITSTATUS(status) == 0);
        return;
    }
    if (p->role == LAUNCH_ROLE_RELAY) {
        launch_job_relays_exit(self, p, how);
        s_advance(self);
        return;
    }
    if (p->role == LAUNCH_ROLE_TELEMD && nd->telemd == p) {
        nd->telemd = NULL;
        nd->ready = 0;
        self->ac_stale = 1;
    }
    if (p->role == LAUNCH_ROLE_DICTD && nd->dictd == p) {
        nd->dictd = NULL;
        nd->dict_ready = 0;
    }
    if (p->stopping || self->phase == LAUNCH_PHASE_ENDING) {
        if (p->respawn)
            launch_job_sup_respawn(self, p);
        s_advance(self);
        return;
    }
    /* The telemd a node taken out of the job kept: only its history. */
    if (launch_state_node(self->state, p->node) == LAUNCH_NODE_DOWN) {
        telem_log(TELEM_LOG_WARN, "%s on %s (taken out of the job) %s",
                  launch_job_role_name(p->role), node, how);
        launch_job_files_write(self);
        s_advance(self);
        return;
    }
    /* A daemon is restarted on its node (launch_job_sup.c)... */
    if (launch_job_sup_on_death(self, p, how)) {
        s_advance(self);
        return;
    }
    /* ... unless asked not to (--daemon-failure exclude) or it never came
       up: then the node's daemons are the node, losing either fails it. */
    if (p->role == LAUNCH_ROLE_TELEMD || p->role == LAUNCH_ROLE_DICTD) {
        char why[256];
        snprintf(why, sizeof why, "%s %s", p->role == LAUNCH_ROLE_TELEMD
                 ? "telemd" : "telem_dictd", how);
        launch_job_node_failed(self, p->node, "daemon", why);
        return;
    }
    telem_log(TELEM_LOG_WARN, "%s on %s %s; it is not restarted",
              launch_job_role_name(p->role), node, how);
    s_advance(self);
}
