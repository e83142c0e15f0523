/* launch_job_sup.c - supervision of the node daemons: a telemd,
 * telem_dictd, telem_collect, telem_watch, a --detector-cmd command or
 * telem_agg that dies is started
 * again on its node, without touching the program, for as long as the node
 * itself is alive.
 *
 * Why: a daemon's death is not a node's.  Restarting the whole job without
 * a node whose hardware is fine (the rule before supervision) costs a
 * restart and a reserve for a crash that a restart of one process cures.
 * The node is still taken out when the node itself is lost: its telemd
 * stops answering the heartbeat (launch_job_loop.c), or a daemon cannot be
 * started there again (the command fails, it is not ready within the
 * start timeout, or through srun or a remote shell it ends before it is
 * ready: the way there is gone).  Those go up through self->on_node_lost.
 *
 * Each daemon of each node has a record (launch_job_node_t.sup).  A death
 * after the daemon was up counts in a window that opens at the first death
 * (daemon_window_ns); death k of the window is followed by a restart after
 * daemon_backoff_ns * 2^(k-1), at most daemon_backoff_max_ns, and the death
 * that makes daemon_restarts pauses the daemon for daemon_pause_ns
 * instead; after the pause its count starts again.  Every death, restart
 * and pause is one line on the launcher's output and in launch/daemons.log,
 * and launch/daemons holds every daemon's state.
 *
 * A restarted telemd keeps its node name, run directory (its ipc sockets,
 * lock and files) and TCP port (--port, its last one), so the node file's
 * entry stays valid and every client (the analysis client, telem_agg,
 * telem_watch, the program's own pushes) reconnects through ZeroMQ by
 * itself.  If that port cannot be bound (it ends before it is ready), the
 * next try takes any port: the node files are rewritten, telem_agg follows
 * them, and telem_watch, which reads them once, is started again.  A
 * restarted telem_dictd replays its log (every acknowledged write it
 * owned is there: a write is acknowledged only once every owner has it)
 * and rejoins by a re-form of the dictionary on the same nodes, which
 * wipes it if the map moved on while it was away and hands it the newer
 * entries; a re-form that fails fails the node.
 */
#include "launch_job_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_time.h"

static const char *
s_name(launch_job_role_t role)
{
    switch (role) {
    case LAUNCH_ROLE_TELEMD: return "telemd";
    case LAUNCH_ROLE_DICTD: return "telem_dictd";
    case LAUNCH_ROLE_COLLECT: return "telem_collect";
    case LAUNCH_ROLE_WATCH: return "telem_watch";
    case LAUNCH_ROLE_AGG: return "telem_agg";
    default: break;
    }
    static const char *const det[LAUNCH_DETCMD_MAX] = {
        "detector-cmd 1", "detector-cmd 2", "detector-cmd 3", "detector-cmd 4"
    };
    return LAUNCH_ROLE_IS_DETCMD(role) ? det[role - LAUNCH_ROLE_DETCMD]
                                       : "program";
}

static int
s_node_daemon(launch_job_role_t role)
{
    return role == LAUNCH_ROLE_TELEMD || role == LAUNCH_ROLE_DICTD;
}

static double
s_sec(int64_t ns)
{
    return (double) ns / 1e9;
}

void
launch_job_sup_init(launch_job_t *self)
{
    for (size_t i = 0; i < self->n; i++)
        for (int r = 0; r < LAUNCH_SUP_ROLES; r++) {
            launch_job_sup_t *s = &self->nodes[i].sup[r];
            memset(s, 0, sizeof *s);
            s->job = self;
            s->node = i;
            s->role = (launch_job_role_t) r;
            s->timer = -1;
        }
}

/* One line: the launcher's output and launch/daemons.log. */
static void
s_report(launch_job_t *self, telem_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_report(launch_job_t *self, telem_log_level_t level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    telem_log(level, "%s", line);
    launch_job_files_log_daemon(self, line);
}

static void
s_timer_cancel(launch_job_sup_t *s)
{
    if (s->timer >= 0)
        zloop_timer_end(s->job->loop, s->timer);
    s->timer = -1;
}

static void
s_timer_set(launch_job_sup_t *s, int64_t ns, zloop_timer_fn *fn)
{
    s_timer_cancel(s);
    size_t ms = ns <= 0 ? 1 : (size_t) ((ns + TELEM_NS_PER_MS - 1)
                                        / TELEM_NS_PER_MS);
    s->timer = zloop_timer(s->job->loop, ms, 1, fn, s);
}

/* The port of a "tcp://HOST:PORT" endpoint, else 0. */
static long
s_tcp_port(const char *ep)
{
    const char *colon = strrchr(ep, ':');
    if (strncmp(ep, "tcp://", 6) != 0 || !colon || colon < ep + 6)
        return 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return *end == '\0' && port > 0 && port < 65536 ? port : 0;
}

/* Whether the role should run now on node i: node daemons while the node
 * is in the job, observers while the program runs. */
static int
s_wanted(const launch_job_t *self, const launch_job_sup_t *s)
{
    if (self->phase == LAUNCH_PHASE_ENDING
        || launch_state_node(self->state, s->node) == LAUNCH_NODE_DOWN)
        return 0;
    return s_node_daemon(s->role) || self->phase == LAUNCH_PHASE_RUNNING;
}

static int
s_on_start_deadline(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_sup_t *s = arg;
    launch_job_t *self = s->job;
    s->timer = -1;
    if (s->state != LAUNCH_SUP_STARTING || !s_wanted(self, s))
        return launch_job_loop_result(self);
    char why[160];
    snprintf(why, sizeof why, "%s was restarted but not ready within %.0f s",
             s_name(s->role), s_sec(self->cfg.start_timeout_ns));
    s->state = LAUNCH_SUP_STOPPED;
    self->on_node_lost(self, s->node, "start", why);
    return launch_job_loop_result(self);
}

/* Starts the daemon again (the back-off or the pause is over). */
static void
s_restart(launch_job_sup_t *s)
{
    launch_job_t *self = s->job;
    const char *node = launch_state_name(self->state, s->node);
    if (!s_wanted(self, s)) {
        s->state = LAUNCH_SUP_STOPPED;
        launch_job_files_write_daemons(self);
        return;
    }
    s->restarts++;
    if (launch_job_start_role(self, s->node, s->role) != 0) {
        s->state = LAUNCH_SUP_STOPPED;
        char why[160];
        snprintf(why, sizeof why, "%s could not be started again",
                 s_name(s->role));
        if (s_node_daemon(s->role))
            self->on_node_lost(self, s->node, "start", why);
        else
            s_report(self, TELEM_LOG_ERROR, "daemon %s on %s: %s; it is "
                     "not restarted", s_name(s->role), node, why);
        launch_job_files_write_daemons(self);
        return;
    }
    if (s_node_daemon(s->role)) {        /* restarted when it is ready */
        s->state = LAUNCH_SUP_STARTING;
        s_timer_set(s, self->cfg.start_timeout_ns, s_on_start_deadline);
    } else {
        s->state = LAUNCH_SUP_RUNNING;
        s_report(self, TELEM_LOG_WARN, "daemon %s on %s restarted (restart "
                 "%ld)", s_name(s->role), node, s->restarts);
    }
    launch_job_files_write_daemons(self);
}

static int
s_on_restart_due(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_sup_t *s = arg;
    s->timer = -1;
    s_restart(s);
    return launch_job_loop_result(s->job);
}

static int
s_on_pause_end(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_sup_t *s = arg;
    s->timer = -1;
    s->deaths = 0;
    if (s_wanted(s->job, s))
        s_report(s->job, TELEM_LOG_WARN, "daemon %s on %s: pause over, "
                 "starting it again", s_name(s->role),
                 launch_state_name(s->job->state, s->node));
    s_restart(s);
    return launch_job_loop_result(s->job);
}

/* Back-off of death k (1-based) of the window. */
static int64_t
s_backoff(const launch_job_config_t *c, int k)
{
    int64_t d = c->daemon_backoff_ns;
    for (int i = 1; i < k && d < c->daemon_backoff_max_ns; i++)
        d *= 2;
    return d < c->daemon_backoff_max_ns ? d : c->daemon_backoff_max_ns;
}

/* Counts a death in the window and schedules the restart or the pause. */
static void
s_schedule(launch_job_t *self, launch_job_sup_t *s, const char *how)
{
    const launch_job_config_t *c = &self->cfg;
    const char *node = launch_state_name(self->state, s->node);
    int64_t now = telem_mono_ns();
    if (s->deaths == 0 || now - s->window_start_ns > c->daemon_window_ns) {
        s->deaths = 0;
        s->window_start_ns = now;
    }
    s->deaths++;
    snprintf(s->last, sizeof s->last, "%s", how);
    if (s->deaths >= c->daemon_restarts) {
        s->state = LAUNCH_SUP_PAUSED;
        s->until_rt_ns = telem_now_ns() + c->daemon_pause_ns;
        s_timer_set(s, c->daemon_pause_ns, s_on_pause_end);
        s_report(self, TELEM_LOG_WARN, "daemon %s on %s %s: paused for "
                 "%.3f s after %d deaths in %.3f s (at most %d in %.0f s); "
                 "it is tried again then; node %s stays in the job",
                 s_name(s->role), node, how, s_sec(c->daemon_pause_ns),
                 s->deaths, s_sec(now - s->window_start_ns),
                 c->daemon_restarts, s_sec(c->daemon_window_ns), node);
        return;
    }
    int64_t delay = s_backoff(c, s->deaths);
    s->state = LAUNCH_SUP_WAITING;
    s->until_rt_ns = telem_now_ns() + delay;
    s_timer_set(s, delay, s_on_restart_due);
    s_report(self, TELEM_LOG_WARN, "daemon %s on %s %s; restarting it in "
             "%.3f s (death %d of at most %d in %.0f s)", s_name(s->role),
             node, how, s_sec(delay), s->deaths, c->daemon_restarts,
             s_sec(c->daemon_window_ns));
}

int
launch_job_sup_on_death(launch_job_t *self, const launch_job_proc_t *p,
                        const char *how)
{
    if (self->cfg.daemon_exclude || p->role == LAUNCH_ROLE_PROGRAM
        || p->role == LAUNCH_ROLE_RELAY || p->role >= LAUNCH_SUP_ROLES
        || self->phase == LAUNCH_PHASE_ENDING)
        return 0;
    launch_job_node_t *nd = &self->nodes[p->node];
    launch_job_sup_t *s = &nd->sup[p->role];
    if (s_node_daemon(p->role) && !s->up_once)
        return 0;                   /* never came up: a start failure */
    int before_ready = s->state == LAUNCH_SUP_STARTING;
    s_timer_cancel(s);
    if (before_ready && s_node_daemon(p->role)
        && launch_source_kind(self->source) != LAUNCH_SOURCE_LOCAL) {
        char why[256];
        snprintf(why, sizeof why, "%s could not be restarted (it %s before "
                 "it was ready)", s_name(p->role), how);
        s->state = LAUNCH_SUP_STOPPED;
        self->on_node_lost(self, p->node, "start", why);
        return 1;
    }
    if (p->role == LAUNCH_ROLE_DICTD)
        nd->dict_keep_port = before_ready ? 0
                             : s_tcp_port(nd->dict_endpoint);
    if (p->role == LAUNCH_ROLE_TELEMD) {
        /* Its port again, unless binding it may be what failed. */
        nd->keep_port = before_ready ? 0 : s_tcp_port(nd->endpoint);
        snprintf(nd->prev_endpoint, sizeof nd->prev_endpoint, "%s",
                 nd->endpoint);
    }
    s_schedule(self, s, how);
    launch_job_files_write_daemons(self);
    return 1;
}

/* A restarted telem_dictd rejoins the dictionary: a re-form on the same
 * nodes (launch_job_dict.c).  Not while a restart of the job stops the
 * program (its own re-form follows), nor before the first map. */
static void
s_dict_rejoin(launch_job_t *self, size_t i)
{
    if (!self->dict_formed || self->phase == LAUNCH_PHASE_STOPPING
        || self->phase == LAUNCH_PHASE_ENDING)
        return;
    char why[256], line[320];
    int64_t t0 = telem_mono_ns();
    if (launch_job_dict_reform(self, why, sizeof why) != 0) {
        snprintf(line, sizeof line, "telem_dictd was restarted but could not "
                 "rejoin the dictionary: %s", why);
        self->on_node_lost(self, i, "daemon", line);
        return;
    }
    s_report(self, TELEM_LOG_INFO, "daemon telem_dictd on %s rejoined the "
             "dictionary (re-form %.3f s)", launch_state_name(self->state, i),
             s_sec(telem_mono_ns() - t0));
}

/* Stops every running process of `role` and starts it again on its node
 * once it has ended. */
static void
s_respawn_role(launch_job_t *self, launch_job_role_t role);

void
launch_job_sup_on_ready(launch_job_t *self, size_t i, launch_job_role_t role)
{
    launch_job_node_t *nd = &self->nodes[i];
    launch_job_sup_t *s = &nd->sup[role];
    int restarted = s->state == LAUNCH_SUP_STARTING;
    s_timer_cancel(s);
    s->state = LAUNCH_SUP_RUNNING;
    s->up_once = 1;
    if (restarted) {
        const launch_job_proc_t *p = role == LAUNCH_ROLE_TELEMD ? nd->telemd
                                                                 : nd->dictd;
        long pid = p ? (long) p->pid : 0;
        int moved = role == LAUNCH_ROLE_TELEMD
                    && strcmp(nd->prev_endpoint, nd->endpoint) != 0;
        s_report(self, TELEM_LOG_WARN, "daemon %s on %s restarted (pid %ld, "
                 "restart %ld)%s%s%s", s_name(role),
                 launch_state_name(self->state, i), pid, s->restarts,
                 role != LAUNCH_ROLE_TELEMD ? "" : moved
                 ? "; new query endpoint " : "; same query endpoint ",
                 role == LAUNCH_ROLE_TELEMD ? nd->endpoint : "",
                 moved ? " (node files rewritten)" : "");
        if (role == LAUNCH_ROLE_TELEMD && self->phase != LAUNCH_PHASE_STARTING)
            launch_job_files_write(self);
        if (moved && self->phase == LAUNCH_PHASE_RUNNING)
            for (int r = LAUNCH_ROLE_WATCH; r < LAUNCH_SUP_ROLES; r++)
                if (r == LAUNCH_ROLE_WATCH || LAUNCH_ROLE_IS_DETCMD(r))
                    s_respawn_role(self, (launch_job_role_t) r);
        if (role == LAUNCH_ROLE_DICTD)
            s_dict_rejoin(self, i);
    }
    launch_job_files_write_daemons(self);
}

static void
s_respawn_role(launch_job_t *self, launch_job_role_t role)
{
    size_t n = 0;
    for (size_t k = 0; k < self->nprocs; k++) {
        launch_job_proc_t *p = self->procs[k];
        if (p->role != role || p->stopping)
            continue;
        p->respawn = 1;
        n += launch_job_stop(self, (int) role, (long) p->node);
    }
    if (n) {
        size_t ms = (size_t) (self->cfg.grace_ns / TELEM_NS_PER_MS) + 2;
        zloop_timer(self->loop, ms, 1, launch_job_on_kill_due, self);
        s_report(self, TELEM_LOG_INFO, "daemon %s started again: it reads the "
                 "node file once, and a node's endpoint changed", s_name(role));
    }
}

void
launch_job_sup_respawn(launch_job_t *self, const launch_job_proc_t *p)
{
    if (self->phase != LAUNCH_PHASE_RUNNING
        || launch_state_node(self->state, p->node) != LAUNCH_NODE_ACTIVE)
        return;
    if (launch_job_start_role(self, p->node, p->role) != 0)
        s_report(self, TELEM_LOG_ERROR, "daemon %s on %s could not be started "
                 "again", s_name(p->role),
                 launch_state_name(self->state, p->node));
    launch_job_files_write_daemons(self);
}

static void
s_forget(launch_job_sup_t *s)
{
    s_timer_cancel(s);
    s->state = LAUNCH_SUP_STOPPED;
    s->deaths = 0;
}

void
launch_job_sup_reset_observers(launch_job_t *self)
{
    for (size_t i = 0; i < self->n; i++) {
        s_forget(&self->nodes[i].sup[LAUNCH_ROLE_COLLECT]);
        s_forget(&self->nodes[i].sup[LAUNCH_ROLE_WATCH]);
        for (int k = 0; k < LAUNCH_DETCMD_MAX; k++)
            s_forget(&self->nodes[i].sup[LAUNCH_ROLE_DETCMD + k]);
    }
}

void
launch_job_sup_forget_node(launch_job_t *self, size_t i)
{
    for (int r = 0; r < LAUNCH_SUP_ROLES; r++)
        s_forget(&self->nodes[i].sup[r]);
    launch_job_files_write_daemons(self);
}
