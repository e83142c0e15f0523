/* launch_job_start.c - what the launcher starts on the nodes and with
 * which words: telemd, telem_dictd, the collectors, the watcher and the
 * detector commands beside it, telem_agg; one node at a time (supervision's restarts) or one kind on
 * many nodes at once (the job's start: launch_job_spawn_nodes(), one Slurm
 * step per kind under Slurm).
 *
 * Split from the process table (launch_job_procs.c), which keeps the
 * processes once they run: this file decides the commands, that one runs
 * and stops them.  Calls go down to launch_job_procs.c and
 * launch_job_files.c only.
 */
#include "launch_job_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_time.h"

/* An observer is up once started (the node daemons once "ready"). */
static void
s_observer_up(launch_job_t *self, size_t i, launch_job_role_t role)
{
    if (role == LAUNCH_ROLE_COLLECT || role == LAUNCH_ROLE_WATCH
        || role == LAUNCH_ROLE_AGG || LAUNCH_ROLE_IS_DETCMD(role)) {
        self->nodes[i].sup[role].state = LAUNCH_SUP_RUNNING;
        self->nodes[i].sup[role].up_once = 1;
        launch_job_files_write_daemons(self);
    }
}

/* Spawns a daemon for node i with the environment launch_job_env() gives. */
static launch_job_proc_t *
s_spawn_role(launch_job_t *self, size_t i, launch_job_role_t role,
             const char *const *argv)
{
    launch_argv_t kv = { 0 };
    launch_env_t *env = launch_job_env(self, i, role, &kv);
    launch_job_proc_t *p = env ? launch_job_spawn(self, i, role, argv, env,
                                                  (const char *const *) kv.v)
                       : NULL;
    launch_env_destroy(&env);
    launch_argv_clear(&kv);
    if (p)
        s_observer_up(self, i, role);
    return p;
}

const char *
launch_job_bind_addr(const launch_job_t *self, size_t i)
{
    if (self->cfg.bind_addr)
        return self->cfg.bind_addr;
    return launch_source_addr(self->source, launch_state_name(self->state, i));
}

/* ---- telemd ---------------------------------------------------------------- */

/* telemd's words for node i. */
static int
s_telemd_argv(launch_job_t *self, size_t i, launch_argv_t *a)
{
    char level[16], http_port[16], port[16];
    snprintf(level, sizeof level, "%d", self->cfg.level);
    snprintf(http_port, sizeof http_port, "%d", self->cfg.metrics_port);
    launch_job_node_t *nd = &self->nodes[i];
    snprintf(port, sizeof port, "%ld", nd->keep_port);
    const char *bind = launch_job_bind_addr(self, i);
    const char *words[] = { self->bin_telemd, "--keys", self->keys_dir,
                            "--rundir", self->rundir, "--level", level, NULL };
    int rc = launch_argv_addv(a, words);
    if (!rc && !launch_source_daemon_names_itself(self->source))
        rc = launch_argv_add(a, "--node")
             || launch_argv_add(a, launch_state_name(self->state, i));
    if (!rc && bind)
        rc = launch_argv_add(a, "--bind") || launch_argv_add(a, bind);
    if (!rc && nd->keep_port > 0)  /* a restart: clients keep their endpoint */
        rc = launch_argv_add(a, "--port") || launch_argv_add(a, port);
    if (!rc && self->cfg.metrics_port >= 0)
        rc = launch_argv_add(a, "--http-port")
             || launch_argv_add(a, http_port);
    if (!rc && self->cfg.metrics_port >= 0 && self->cfg.metrics_bind)
        rc = launch_argv_add(a, "--http-bind")
             || launch_argv_add(a, self->cfg.metrics_bind);
    if (!rc && self->cfg.sys_root)
        rc = launch_argv_add(a, "--sys-root")
             || launch_argv_add_node(a, self->cfg.sys_root,
                                     launch_state_name(self->state, i));
    return rc ? TELEM_ENOMEM : 0;
}

/* Node i's record before its telemd starts. */
static void
s_telemd_reset(launch_job_t *self, size_t i)
{
    launch_job_node_t *nd = &self->nodes[i];
    nd->ready = 0;
    nd->misses = 0;
    /* A restarted telemd's node keeps its last endpoint in the node files
       until the new one prints its own. */
    if (nd->sup[LAUNCH_ROLE_TELEMD].restarts == 0)
        nd->endpoint[0] = '\0';
    nd->reported[0] = nd->metrics[0] = '\0';
    nd->started_ns = telem_mono_ns();
}

int
launch_job_start_telemd(launch_job_t *self, size_t i)
{
    launch_argv_t argv = { 0 };
    launch_job_node_t *nd = &self->nodes[i];
    s_telemd_reset(self, i);
    nd->telemd = s_telemd_argv(self, i, &argv) ? NULL
                 : s_spawn_role(self, i, LAUNCH_ROLE_TELEMD,
                                (const char *const *) argv.v);
    launch_argv_clear(&argv);
    return nd->telemd ? 0 : TELEM_EIO;
}

/* ---- telem_dictd ------------------------------------------------------------ */

/* "a,b,c": the nodes that are not DOWN, the dictionary's node set;
 * malloc'd, NULL when out of memory. */
static char *
s_dict_list(const launch_job_t *self)
{
    size_t len = 1;
    for (size_t k = 0; k < self->n; k++)
        if (launch_state_node(self->state, k) != LAUNCH_NODE_DOWN)
            len += strlen(launch_state_name(self->state, k)) + 1;
    char *list = calloc(1, len);
    for (size_t k = 0; list && k < self->n; k++)
        if (launch_state_node(self->state, k) != LAUNCH_NODE_DOWN)
            strcat(strcat(list, *list ? "," : ""),
                   launch_state_name(self->state, k));
    return list;
}

/* telem_dictd's words for node i, its first map being `list`. */
static int
s_dictd_argv(launch_job_t *self, size_t i, const char *list, launch_argv_t *a)
{
    launch_job_node_t *nd = &self->nodes[i];
    const char *bind = launch_job_bind_addr(self, i);
    const char *words[] = { self->bin_dictd, "--node",
                            launch_state_name(self->state, i), "--rundir",
                            self->rundir, "--nodefile", self->dict_nodefile,
                            "--nodes", list, "--keys", self->keys_dir, NULL };
    char port[24];
    snprintf(port, sizeof port, "%ld", nd->dict_keep_port);
    int rc = launch_argv_addv(a, words);
    if (!rc && bind)
        rc = launch_argv_add(a, "--bind") || launch_argv_add(a, bind);
    if (!rc && bind && nd->dict_keep_port > 0)
        rc = launch_argv_add(a, "--port") || launch_argv_add(a, port);
    return rc ? TELEM_ENOMEM : 0;
}

int
launch_job_start_dictd(launch_job_t *self, size_t i)
{
    launch_job_node_t *nd = &self->nodes[i];
    nd->dict_ready = 0;
    if (!self->dict)
        return 0;
    launch_argv_t argv = { 0 };
    char *list = s_dict_list(self);
    nd->dictd = !list || s_dictd_argv(self, i, list, &argv) ? NULL
                : s_spawn_role(self, i, LAUNCH_ROLE_DICTD,
                               (const char *const *) argv.v);
    free(list);
    launch_argv_clear(&argv);
    return nd->dictd ? 0 : TELEM_EIO;
}

/* ---- telem_collect --------------------------------------------------------- */

/* Local virtual nodes share this machine: one telem_collect on the first
 * active node runs every node's collectors and maps them onto this
 * machine's devices.  Elsewhere every active node runs its own
 * telem_collect --node NAME, on its own devices. */
static int
s_collect_per_node(const launch_job_t *self)
{
    return launch_source_kind(self->source) != LAUNCH_SOURCE_LOCAL;
}

/* telem_collect's words for node i. */
static int
s_collect_argv(launch_job_t *self, size_t i, launch_argv_t *a)
{
    int rc = launch_argv_add(a, self->bin_collect)
             || launch_argv_split(a, self->cfg.collect, NULL);
    if (!rc && s_collect_per_node(self))
        rc = launch_argv_add(a, "--node")
             || launch_argv_add(a, launch_state_name(self->state, i));
    return rc ? TELEM_EINVAL : 0;
}

/* ---- one kind on many nodes --------------------------------------------------- */

/* Starts telemd, telem_dictd (its first map `list`) or telem_collect on
 * nodes idx[0..n) at once (launch_job_spawn_nodes()) and sets their
 * records.  Returns how many started. */
static size_t
s_start_many(launch_job_t *self, launch_job_role_t role, const size_t *idx,
             size_t n, const char *list)
{
    launch_argv_t *argvs = calloc(n ? n : 1, sizeof *argvs);
    launch_job_proc_t **recs = calloc(n ? n : 1, sizeof *recs);
    size_t started = 0;
    int rc = argvs && recs ? 0 : TELEM_ENOMEM;
    for (size_t k = 0; !rc && k < n; k++) {
        if (role == LAUNCH_ROLE_TELEMD)
            s_telemd_reset(self, idx[k]);
        rc = role == LAUNCH_ROLE_TELEMD ? s_telemd_argv(self, idx[k],
                                                        &argvs[k])
             : role == LAUNCH_ROLE_DICTD ? s_dictd_argv(self, idx[k], list,
                                                        &argvs[k])
             : s_collect_argv(self, idx[k], &argvs[k]);
    }
    if (!rc)
        started = launch_job_spawn_nodes(self, role, idx, n, argvs, recs);
    for (size_t k = 0; !rc && k < n; k++) {
        launch_job_node_t *nd = &self->nodes[idx[k]];
        if (role == LAUNCH_ROLE_TELEMD)
            nd->telemd = recs[k];
        else if (role == LAUNCH_ROLE_DICTD)
            nd->dictd = recs[k];
        else if (recs[k])
            s_observer_up(self, idx[k], role);
    }
    for (size_t k = 0; argvs && k < n; k++)
        launch_argv_clear(&argvs[k]);
    free(argvs);
    free(recs);
    return started;
}

int
launch_job_start_daemons(launch_job_t *self)
{
    size_t *idx = calloc(self->n ? self->n : 1, sizeof *idx);
    char *list = self->dict ? s_dict_list(self) : NULL;
    int rc = idx && (list || !self->dict) ? 0 : TELEM_ENOMEM;
    for (size_t i = 0; idx && i < self->n; i++)
        idx[i] = i;
    for (size_t i = 0; i < self->n; i++)
        self->nodes[i].dict_ready = 0;
    if (!rc && s_start_many(self, LAUNCH_ROLE_TELEMD, idx, self->n, NULL)
                   < self->n)
        rc = TELEM_EIO;
    if (!rc && self->dict
        && s_start_many(self, LAUNCH_ROLE_DICTD, idx, self->n, list) < self->n)
        rc = TELEM_EIO;
    free(idx);
    free(list);
    return rc;
}

static int
s_start_collect(launch_job_t *self, size_t i)
{
    launch_argv_t argv = { 0 };
    int rc = 0;
    if (self->cfg.collect && s_collect_argv(self, i, &argv) == 0)
        rc = s_spawn_role(self, i, LAUNCH_ROLE_COLLECT,
                          (const char *const *) argv.v) ? 0 : TELEM_EIO;
    launch_argv_clear(&argv);
    return rc;
}

static int
s_start_watch(launch_job_t *self, size_t i)
{
    launch_argv_t argv = { 0 };
    if (self->cfg.ndetectors == 0 || access(self->bin_watch, X_OK) != 0)
        return 0;
    int rc = launch_argv_add(&argv, self->bin_watch);
    char period[32];
    snprintf(period, sizeof period, "%.9g",
             (double) self->cfg.watch_period_ns / 1e9);
    if (!rc && self->cfg.watch_period_ns > 0)
        rc = launch_argv_add(&argv, "--period")
             || launch_argv_add(&argv, period);
    for (size_t d = 0; !rc && d < self->cfg.ndetectors; d++)
        rc = launch_argv_add(&argv, "--detector")
             || launch_argv_add(&argv, self->cfg.detectors[d]);
    /* A resilient job is restarted on the watcher's request; otherwise
       the watcher only reports. */
    if (!rc && self->cfg.resilient)
        rc = launch_argv_add(&argv, "--restart-endpoint")
             || launch_argv_add(&argv, self->restart_ep);
    if (!rc)
        rc = s_spawn_role(self, i, LAUNCH_ROLE_WATCH,
                          (const char *const *) argv.v) ? 0 : TELEM_EIO;
    launch_argv_clear(&argv);
    return rc;
}

/* --detector-cmd k on node i: its words as a shell splits them (checked
 * when the command line was read), in the watcher's environment plus
 * TELEM_WATCH_PERIOD and TELEM_WATCH_RESTART (launch_job_env()). */
static int
s_start_detcmd(launch_job_t *self, size_t i, size_t k)
{
    if (k >= self->cfg.ndetector_cmds)
        return 0;
    launch_argv_t argv = { 0 };
    int rc = launch_argv_split(&argv, self->cfg.detector_cmds[k], NULL);
    if (!rc)
        rc = s_spawn_role(self, i, (launch_job_role_t) (LAUNCH_ROLE_DETCMD
                                                        + (int) k),
                          (const char *const *) argv.v) ? 0 : TELEM_EIO;
    launch_argv_clear(&argv);
    return rc;
}

void
launch_job_start_observers(launch_job_t *self, size_t i)
{
    size_t *idx = calloc(self->n ? self->n : 1, sizeof *idx), n = 0;
    for (size_t k = 0; idx && k < self->n; k++)
        if (launch_state_node(self->state, k) == LAUNCH_NODE_ACTIVE)
            idx[n++] = k;
    if (!s_collect_per_node(self) || !idx)
        s_start_collect(self, i);
    else if (self->cfg.collect)
        s_start_many(self, LAUNCH_ROLE_COLLECT, idx, n, NULL);
    free(idx);
    launch_job_start_agg(self, i);
    s_start_watch(self, i);
    for (size_t k = 0; k < self->cfg.ndetector_cmds; k++)
        s_start_detcmd(self, i, k);
}

int
launch_job_start_role(launch_job_t *self, size_t i, launch_job_role_t role)
{
    switch (role) {
    case LAUNCH_ROLE_TELEMD: return launch_job_start_telemd(self, i);
    case LAUNCH_ROLE_DICTD: return launch_job_start_dictd(self, i);
    case LAUNCH_ROLE_COLLECT: return s_start_collect(self, i);
    case LAUNCH_ROLE_WATCH: return s_start_watch(self, i);
    case LAUNCH_ROLE_AGG:
        launch_job_start_agg(self, i);
        return 0;
    default:
        if (LAUNCH_ROLE_IS_DETCMD(role))
            return s_start_detcmd(self, i, (size_t) (role
                                                     - LAUNCH_ROLE_DETCMD));
        return TELEM_EINVAL;
    }
}

/* Prints where telem_agg serves and the tunnel a user runs on a login node
 * to reach it (the node's loopback is not reachable from elsewhere): when
 * it first starts, and again when it moves to a new first node. */
static void
s_announce_agg(launch_job_t *self, size_t i)
{
    if (self->agg_announced == i + 1)
        return;
    self->agg_announced = i + 1;
    char host[256] = "";
    if (launch_source_kind(self->source) == LAUNCH_SOURCE_LOCAL)
        gethostname(host, sizeof host - 1);
    else
        snprintf(host, sizeof host, "%s", launch_state_name(self->state, i));
    int port = self->cfg.agg_port;
    /* The URL carries the job's token (the launcher's own output, read by
       the job's user); a token of the user's own stays in its file. */
    char query[96] = "";
    if (self->agg_token[0])
        snprintf(query, sizeof query, "?token=%s", self->agg_token);
    else if (self->cfg.agg_token_file)
        snprintf(query, sizeof query, " with the token in --agg-token-file");
    if (port == 0)
        telem_log(TELEM_LOG_INFO, "telem_agg on %s: dashboard and OpenTSDB "
                  "API at the address in %s/telem_agg/url (token in %s)",
                  launch_state_name(self->state, i), self->rundir,
                  launch_job_keys_token_file(self));
    else
        telem_log(TELEM_LOG_INFO, "telem_agg on %s: dashboard and OpenTSDB "
                  "API at http://localhost:%d/ there; from a login node run "
                  "'ssh -NL localhost:%d:localhost:%d %s' and open "
                  "http://localhost:%d/%s", launch_state_name(self->state, i),
                  port, port, port, host, port, query);
}

void
launch_job_start_agg(launch_job_t *self, size_t i)
{
    if (self->cfg.agg_port < 0 || self->cfg.level < 1
        || launch_job_count(self, LAUNCH_ROLE_AGG) > 0
        || access(self->bin_agg, X_OK) != 0)
        return;
    char port[16], nodes[TELEM_PATH_MAX + 16];
    snprintf(port, sizeof port, "%d", self->cfg.agg_port);
    /* Every node whose telemd runs: a node taken out of the job stays
       visible with its history (launch_job_files.c). */
    snprintf(nodes, sizeof nodes, "%s/telemd_nodes", self->launch_dir);
    launch_argv_t argv = { 0 };
    const char *words[] = { self->bin_agg, "--rundir", self->rundir,
                            "--nodefile", nodes, "--port", port,
                            "--launch-endpoint", self->restart_ep, NULL };
    int rc = launch_argv_addv(&argv, words);
    if (!rc && self->cfg.agg_bind)
        rc = launch_argv_add(&argv, "--bind")
             || launch_argv_add(&argv, self->cfg.agg_bind);
    const char *token = launch_job_keys_token_file(self);
    if (!rc && token)
        rc = launch_argv_add(&argv, "--token-file")
             || launch_argv_add(&argv, token);
    if (!rc && s_spawn_role(self, i, LAUNCH_ROLE_AGG,
                            (const char *const *) argv.v))
        s_announce_agg(self, i);
    launch_argv_clear(&argv);
}

size_t
launch_job_stop_agg_off(launch_job_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->nprocs; i++) {
        const launch_job_proc_t *p = self->procs[i];
        if (p->role == LAUNCH_ROLE_AGG && !p->stopping
            && launch_state_node(self->state, p->node) != LAUNCH_NODE_ACTIVE) {
            self->nodes[p->node].sup[LAUNCH_ROLE_AGG].state
                = LAUNCH_SUP_STOPPED;
            n += launch_job_stop(self, LAUNCH_ROLE_AGG, (long) p->node);
        }
    }
    if (n)
        launch_job_files_write_daemons(self);
    return n;
}

