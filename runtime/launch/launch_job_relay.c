/* launch_job_relay.c - the job's relays (telem_relay, docs/relay.md): one
 * per group of active nodes, and the relays file that tells clients
 * about them.
 *
 * --relays auto|off|K: the active nodes, in allocation order, are cut into
 * groups of K (auto: 32, and only when more than 64 nodes are active); a
 * group of one node gets no relay (its client asks it directly anyway).
 * Each relay runs on its group's first node, started through the node
 * source like telemd (so under Slurm or a template it runs there, bound to
 * the node's address or --bind), with the job's key, the node file and
 * its group.  Its "query" line (else its "ipc" line) and "ready" come back
 * through its output pipe.
 *
 * Nothing waits for relays: clients without the file ask the nodes
 * directly.  The file is written, atomically and 0600, beside the node
 * file (RUNDIR/relays) and as launch/relays (beside launch/telemd_nodes,
 * which telem_agg reads) once every relay is ready or the start deadline
 * passed (then with the ready ones), and again whenever a relay goes away.
 * After a restart the groups are made again: a relay whose group is
 * unchanged keeps running, the others are stopped and new ones started
 * (each with a new name, so an ipc socket of a stopping relay is never
 * reused).  A relay that dies is not restarted: its group drops out of the
 * file (its nodes are asked directly) until the next regroup.
 *
 * Calls go down only: launch_job.c calls this file, which calls
 * launch_job_procs.c.
 */
#include "launch_job_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_log.h"
#include "telem_time.h"

#define S_AUTO_GROUP 32         /* --relays auto: nodes per relay ... */
#define S_AUTO_MIN 65           /* ... from this many active nodes on */

typedef struct {
    launch_job_proc_t *proc;    /* NULL once it ended */
    size_t node;                /* the node it runs on (its group's first) */
    char name[24];              /* rN */
    char *group;                /* "a,b,c" */
    char endpoint[TELEM_PATH_MAX];
    int ready;
} s_relay_t;

struct launch_job_relays {
    s_relay_t *v;
    size_t n, cap;
    unsigned long seq;          /* names r1, r2, ... in this job */
    int timer;                  /* start deadline; -1 none */
    int written;                /* a relays file exists */
    char bin[TELEM_PATH_MAX + 16];
    char file[TELEM_PATH_MAX + 16];     /* beside the node file */
    char file2[TELEM_PATH_MAX + 16];    /* launch/relays */
};

/* Nodes per relay for `active` active nodes; 0: no relays. */
static size_t
s_group_size(const launch_job_t *self, size_t active)
{
    long k = self->cfg.relays;
    if (k == 0)
        return 0;
    if (k < 0)
        return active >= S_AUTO_MIN ? S_AUTO_GROUP : 0;
    return (size_t) k;
}

static launch_job_relays_t *
s_get(launch_job_t *self)
{
    if (self->relays)
        return self->relays;
    launch_job_relays_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->timer = -1;
    const char *slash = strrchr(self->bin_telemd, '/');
    int dirlen = slash ? (int) (slash - self->bin_telemd) + 1 : 0;
    snprintf(r->bin, sizeof r->bin, "%.*stelem_relay", dirlen,
             self->bin_telemd);
    slash = strrchr(self->nodefile, '/');
    dirlen = slash ? (int) (slash - self->nodefile) + 1 : 0;
    snprintf(r->file, sizeof r->file, "%.*srelays", dirlen, self->nodefile);
    snprintf(r->file2, sizeof r->file2, "%s/relays", self->launch_dir);
    self->relays = r;
    return r;
}

static int
s_write_one(const launch_job_relays_t *r, const char *path)
{
    char tmp[TELEM_PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long) getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        goto fail;
    }
    fprintf(f, "# relays of the job, written by telem_launch[%ld]\n",
            (long) getpid());
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].proc && r->v[i].ready && !r->v[i].proc->stopping)
            fprintf(f, "%s\t%s\t%s\n", r->v[i].name, r->v[i].endpoint,
                    r->v[i].group);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        goto fail;
    return 0;
fail:
    telem_log(TELEM_LOG_ERROR, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return TELEM_EIO;
}

static void
s_remove_files(launch_job_relays_t *r)
{
    if (!r->written)
        return;
    unlink(r->file);
    unlink(r->file2);
    r->written = 0;
}

/* Writes both relays files with the ready relays; removes them when no
 * relay is ready. */
static void
s_write(launch_job_t *self)
{
    launch_job_relays_t *r = self->relays;
    size_t ready = 0;
    for (size_t i = 0; i < r->n; i++)
        ready += r->v[i].proc && r->v[i].ready && !r->v[i].proc->stopping;
    if (!ready || self->phase == LAUNCH_PHASE_ENDING) {
        s_remove_files(r);
        return;
    }
    if (s_write_one(r, r->file) == 0 && s_write_one(r, r->file2) == 0)
        r->written = 1;
    telem_log(TELEM_LOG_INFO, "relays file %s: %zu relay(s)", r->file, ready);
}

static void
s_timer_cancel(launch_job_t *self)
{
    launch_job_relays_t *r = self->relays;
    if (r->timer >= 0)
        zloop_timer_end(self->loop, r->timer);
    r->timer = -1;
}

static int
s_on_deadline(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_t *self = arg;
    launch_job_relays_t *r = self->relays;
    r->timer = -1;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].proc && !r->v[i].ready)
            telem_log(TELEM_LOG_WARN, "relay %s on %s not ready in time: "
                      "its nodes are asked directly", r->v[i].name,
                      launch_state_name(self->state, r->v[i].node));
    s_write(self);
    return launch_job_loop_result(self);
}

/* Whether every live relay is ready: then the file is written now. */
static void
s_check_ready(launch_job_t *self)
{
    launch_job_relays_t *r = self->relays;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].proc && !r->v[i].proc->stopping && !r->v[i].ready)
            return;
    s_timer_cancel(self);
    s_write(self);
}

/* Removes entry i (its process ended or was never started). */
static void
s_drop(launch_job_relays_t *r, size_t i)
{
    free(r->v[i].group);
    r->v[i] = r->v[--r->n];
}

static int
s_start(launch_job_t *self, size_t node, char *group_p)
{
    launch_job_relays_t *r = self->relays;
    if (telem_grow((void **) &r->v, &r->cap, r->n + 1, sizeof *r->v, 8)) {
        free(group_p);
        return TELEM_ENOMEM;
    }
    s_relay_t *e = &r->v[r->n];
    memset(e, 0, sizeof *e);
    e->node = node;
    e->group = group_p;
    snprintf(e->name, sizeof e->name, "r%lu", ++r->seq);
    const char *bind = launch_job_bind_addr(self, node);
    const char *argv[] = { r->bin, "--keys", self->keys_dir, "--nodefile",
                           self->nodefile, "--rundir", self->rundir,
                           "--group", group_p, "--name", e->name,
                           bind ? "--bind" : NULL, bind, NULL };
    launch_argv_t kv = { 0 };
    launch_env_t *env = launch_job_env(self, node, LAUNCH_ROLE_RELAY, &kv);
    e->proc = env ? launch_job_spawn(self, node, LAUNCH_ROLE_RELAY, argv, env,
                                     (const char *const *) kv.v)
                  : NULL;
    launch_env_destroy(&env);
    launch_argv_clear(&kv);
    if (!e->proc) {
        free(group_p);
        return TELEM_EIO;
    }
    r->n++;
    return 0;
}

/* The group of active nodes starting at the k-th active node: up to `size`
 * names, comma-separated (malloc'd), its first node in *first; NULL when
 * out of memory. */
static char *
s_group(const launch_job_t *self, const size_t *act, size_t nact, size_t k,
        size_t size, size_t *first)
{
    size_t len = 1;
    size_t end = k + size < nact ? k + size : nact;
    for (size_t j = k; j < end; j++)
        len += strlen(launch_state_name(self->state, act[j])) + 1;
    char *list = calloc(1, len);
    for (size_t j = k; list && j < end; j++)
        strcat(strcat(list, j > k ? "," : ""),
               launch_state_name(self->state, act[j]));
    *first = act[k];
    return list;
}

/* The index of the live relay serving exactly `group`, or r->n. */
static size_t
s_find(const launch_job_relays_t *r, const char *group)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].proc && !r->v[i].proc->stopping
            && strcmp(r->v[i].group, group) == 0)
            return i;
    return r->n;
}

/* Stops every live relay whose group is not in want[0..n). */
static size_t
s_stop_stale(launch_job_t *self, char **want, size_t n)
{
    launch_job_relays_t *r = self->relays;
    size_t stopped = 0;
    for (size_t i = 0; i < r->n; i++) {
        s_relay_t *e = &r->v[i];
        if (!e->proc || e->proc->stopping)
            continue;
        size_t k = 0;
        while (k < n && strcmp(want[k], e->group) != 0)
            k++;
        if (k == n && launch_job_stop(self, LAUNCH_ROLE_RELAY,
                                      (long) e->node)) {
            e->ready = 0;
            stopped++;
        }
    }
    return stopped;
}

/* Starts a relay for every group of want[0..n) that none serves (takes
 * the strings); returns how many started. */
static size_t
s_start_missing(launch_job_t *self, char **want, const size_t *first,
                size_t n)
{
    launch_job_relays_t *r = self->relays;
    size_t started = 0;
    for (size_t k = 0; k < n; k++) {
        if (s_find(r, want[k]) < r->n) {
            free(want[k]);
            continue;
        }
        if (access(r->bin, X_OK) != 0) {
            telem_log(TELEM_LOG_WARN, "no relays: %s: %s", r->bin,
                      strerror(errno));
            free(want[k]);
            continue;
        }
        started += s_start(self, first[k], want[k]) == 0;
    }
    return started;
}

void
launch_job_relays_update(launch_job_t *self)
{
    size_t *act = calloc(self->n ? self->n : 1, sizeof *act), nact = 0;
    for (size_t i = 0; act && i < self->n; i++)
        if (launch_state_node(self->state, i) == LAUNCH_NODE_ACTIVE)
            act[nact++] = i;
    size_t size = s_group_size(self, nact);
    if (!act || (!size && !self->relays) || !s_get(self)) {
        free(act);
        return;
    }
    size_t ngroups = size ? (nact + size - 1) / size : 0, nwant = 0;
    char **want = calloc(ngroups ? ngroups : 1, sizeof *want);
    size_t *first = calloc(ngroups ? ngroups : 1, sizeof *first);
    for (size_t k = 0; size && want && first && k + 1 < nact; k += size)
        if ((want[nwant] = s_group(self, act, nact, k, size, &first[nwant])))
            nwant++;
    size_t stopped = s_stop_stale(self, want, nwant);
    if (stopped)
        zloop_timer(self->loop, (size_t) (self->cfg.grace_ns
                                          / TELEM_NS_PER_MS) + 1, 1,
                    launch_job_on_kill_due, self);
    size_t started = s_start_missing(self, want, first, nwant);
    free(want);
    free(first);
    free(act);
    if (started) {
        telem_log(TELEM_LOG_INFO, "%zu relay(s) started, %zu stopped",
                  started, stopped);
        s_timer_cancel(self);
        self->relays->timer = zloop_timer(self->loop, (size_t) (
            self->cfg.start_timeout_ns / TELEM_NS_PER_MS) + 1, 1,
            s_on_deadline, self);
        if (stopped)
            s_write(self);      /* without the stopped ones, at once */
    } else
        s_check_ready(self);
}

/* A relay's "query" (TCP) or "ipc" endpoint; one bound to every address
 * is reached through its node's name. */
static void
s_endpoint(const launch_job_t *self, s_relay_t *e, const char *key,
           const char *ep)
{
    if (strcmp(key, "ipc") == 0 && *e->endpoint)
        return;                         /* TCP first */
    launch_job_reach_endpoint(e->endpoint, sizeof e->endpoint,
                              launch_state_name(self->state, e->node), ep);
}

/* The relay p runs, or NULL. */
static s_relay_t *
s_of_proc(launch_job_t *self, const launch_job_proc_t *p)
{
    launch_job_relays_t *r = self->relays;
    for (size_t i = 0; r && i < r->n; i++)
        if (r->v[i].proc == p)
            return &r->v[i];
    return NULL;
}

void
launch_job_relays_line(launch_job_t *self, launch_job_proc_t *p,
                       const char *line)
{
    s_relay_t *e = s_of_proc(self, p);
    if (!e)
        return;
    if (strncmp(line, "query\t", 6) == 0)
        s_endpoint(self, e, "query", line + 6);
    else if (strncmp(line, "ipc\t", 4) == 0)
        s_endpoint(self, e, "ipc", line + 4);
    else if (strcmp(line, "ready") == 0 && *e->endpoint && !p->stopping) {
        e->ready = 1;
        telem_log(TELEM_LOG_DEBUG, "relay %s on %s at %s: %s", e->name,
                  launch_state_name(self->state, e->node), e->endpoint,
                  e->group);
        s_check_ready(self);
    }
}

void
launch_job_relays_exit(launch_job_t *self, launch_job_proc_t *p,
                       const char *how)
{
    s_relay_t *e = s_of_proc(self, p);
    if (!e)
        return;
    int was_ready = e->ready;
    if (!p->stopping && self->phase != LAUNCH_PHASE_ENDING)
        telem_log(TELEM_LOG_WARN, "relay %s on %s %s: its nodes (%s) are "
                  "asked directly", e->name,
                  launch_state_name(self->state, e->node), how, e->group);
    s_drop(self->relays, (size_t) (e - self->relays->v));
    if (was_ready && !p->stopping)
        s_write(self);
    else
        s_check_ready(self);
}

void
launch_job_relays_close(launch_job_t *self)
{
    launch_job_relays_t *r = self->relays;
    if (!r)
        return;
    if (r->timer >= 0 && self->loop)
        zloop_timer_end(self->loop, r->timer);
    s_remove_files(r);
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].group);
    free(r->v);
    free(r);
    self->relays = NULL;
}
