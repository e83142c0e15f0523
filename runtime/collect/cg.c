/* cg.c - collector groups: settings, the node list, the device map and
 * the start of a group.
 *
 * Planning is kept apart from processes (cg_spawn.c): cg_start() first
 * decides every collector's node, device, pin and phase, then spawns.  The
 * map for local (virtual) nodes is a plain formula, documented in cg.h, so
 * a user can predict where device i of node k runs and the group prints
 * exactly what it decided.  The node list comes through the analysis
 * client's node file reader, so a node file means the same thing to every
 * telem tool.
 */
#include "cg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ac.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_time.h"

#define S_DEVICES_MAX 4096

cg_t *
cg_new(const char *name, int *err)
{
    if (err)
        *err = TELEM_ENOMEM;
    if (!name)
        name = "cg";
    if (!*name || strlen(name) > TELEM_NAME_MAX) {
        if (err)
            *err = TELEM_EINVAL;
        return NULL;
    }
    cg_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->name = strdup(name);
    g->backend = strdup("cpu");
    g->period_ns = TELEM_NS_PER_SEC;
    g->reps = 5;
    if (!g->name || !g->backend)
        cg_destroy(&g);
    else if (err)
        *err = 0;
    return g;
}

static void
s_free_nodes(char ***nodes_p, size_t n)
{
    for (size_t i = 0; *nodes_p && i < n; i++)
        free((*nodes_p)[i]);
    free(*nodes_p);
    *nodes_p = NULL;
}

void
cg_destroy(cg_t **g_p)
{
    if (!g_p || !*g_p)
        return;
    cg_t *g = *g_p;
    if (g->started)
        cg_stop(g, CG_STOP_DEFAULT_MS);
    for (size_t i = 0; i < g->ncolls; i++) {
        if (g->colls[i].pidfd >= 0)
            close(g->colls[i].pidfd);       /* one that could not be killed */
        free(g->colls[i].node);
    }
    free(g->colls);
    s_free_nodes(&g->nodes, g->nnodes);
    free(g->name);
    free(g->backend);
    free(g->kernel);
    free(g->metric);
    free(g->user_program);
    free(g->collector);
    for (size_t i = 0; i < g->ncargs; i++)
        free(g->cargs[i]);
    free(g->cargs);
    free(g->devices);
    free(g->local);
    free(g->nodefile);
    free(g->spawn);
    free(g->only);
    free(g);
    *g_p = NULL;
}

/* Replaces *dst with a copy of src (NULL allowed). */
static int
s_set_str(cg_t *g, char **dst, const char *src)
{
    if (g->started)
        return TELEM_ESTATE;
    char *copy = src ? strdup(src) : NULL;
    if (src && !copy)
        return TELEM_ENOMEM;
    free(*dst);
    *dst = copy;
    return 0;
}

int
cg_set_backend(cg_t *g, const char *backend)
{
    if (!telem_backend_find(backend))
        return TELEM_EINVAL;
    return s_set_str(g, &g->backend, backend);
}

int
cg_set_kernel(cg_t *g, const char *kernel)
{
    if (kernel && (!*kernel || strlen(kernel) > 64))
        return TELEM_EINVAL;
    int rc = s_set_str(g, &g->kernel, kernel);
    if (rc == 0)
        g->user_test = 0;
    return rc;
}

int
cg_set_user_test(cg_t *g, const char *metric, const char *program)
{
    if (!metric || !*metric || strlen(metric) > TELEM_NAME_MAX - 7
        || (program && !*program))
        return TELEM_EINVAL;
    int rc = s_set_str(g, &g->metric, metric);
    if (rc == 0)
        rc = s_set_str(g, &g->user_program, program);
    if (rc == 0)
        g->user_test = 1;
    return rc;
}

/* Parses a device list ("0,2-3"; NULL or "all": none) into *out / *n. */
static int
s_set_list(cg_t *g, const char *list, long **out, size_t *n_out)
{
    long tmp[S_DEVICES_MAX];
    size_t n = 0;
    if (g->started)
        return TELEM_ESTATE;
    if (list && strcmp(list, "all") != 0
        && telem_backend_device_list_parse(list, 65535, tmp, S_DEVICES_MAX, &n))
        return TELEM_EINVAL;
    long *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (n && !copy)
        return TELEM_ENOMEM;
    if (n)
        memcpy(copy, tmp, n * sizeof *copy);
    free(*out);
    *out = copy;
    *n_out = n;
    return 0;
}

int
cg_set_devices(cg_t *g, const char *list)
{
    return s_set_list(g, list, &g->devices, &g->ndevices);
}

int
cg_set_period(cg_t *g, int64_t period_ns)
{
    if (period_ns < TELEM_NS_PER_MS || period_ns > 86400 * TELEM_NS_PER_SEC)
        return TELEM_EINVAL;
    if (g->started)
        return TELEM_ESTATE;
    g->period_ns = period_ns;
    return 0;
}

int
cg_set_reps(cg_t *g, int reps)
{
    if (reps < 1 || reps > 1000)
        return TELEM_EINVAL;
    if (g->started)
        return TELEM_ESTATE;
    g->reps = reps;
    return 0;
}

int
cg_set_spread(cg_t *g, int spread)
{
    if (g->started)
        return TELEM_ESTATE;
    g->spread = spread != 0;
    return 0;
}

int
cg_set_local_devices(cg_t *g, const char *list)
{
    return s_set_list(g, list, &g->local, &g->nlocal);
}

int
cg_set_per_node(cg_t *g, int per_node)
{
    if (g->started)
        return TELEM_ESTATE;
    g->per_node = per_node != 0;
    return 0;
}

int
cg_set_nodefile(cg_t *g, const char *path)
{
    return s_set_str(g, &g->nodefile, path);
}

int
cg_set_nodes(cg_t *g, const char *const *names, size_t n)
{
    if (g->started)
        return TELEM_ESTATE;
    for (size_t i = 0; i < n; i++)
        if (!names || !telem_node_valid(names[i]))
            return TELEM_EINVAL;
    char **copy = n ? calloc(n, sizeof *copy) : NULL;
    if (n && !copy)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (!(copy[i] = strdup(names[i]))) {
            s_free_nodes(&copy, n);
            return TELEM_ENOMEM;
        }
    s_free_nodes(&g->nodes, g->nnodes);
    g->nodes = copy;
    g->nnodes = n;
    return 0;
}

int
cg_set_spawn(cg_t *g, const char *tmpl)
{
    if (tmpl && !*tmpl)
        tmpl = NULL;
    return s_set_str(g, &g->spawn, tmpl);
}

int
cg_set_only(cg_t *g, const char *node)
{
    if (node && !telem_node_valid(node))
        return TELEM_EINVAL;
    return s_set_str(g, &g->only, node);
}

int
cg_set_collector(cg_t *g, const char *path)
{
    if (path && !*path)
        return TELEM_EINVAL;
    return s_set_str(g, &g->collector, path);
}

int
cg_add_collector_arg(cg_t *g, const char *arg)
{
    if (!arg || !*arg || strlen(arg) > CG_COLLECTOR_ARG_MAX)
        return TELEM_EINVAL;
    for (const unsigned char *p = (const unsigned char *) arg; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return TELEM_EINVAL;
    if (g->started)
        return TELEM_ESTATE;
    if (g->ncargs == CG_COLLECTOR_ARGS_MAX)
        return TELEM_ETOOBIG;
    char **v = realloc(g->cargs, (g->ncargs + 1) * sizeof *v);
    if (!v)
        return TELEM_ENOMEM;
    g->cargs = v;
    if (!(v[g->ncargs] = strdup(arg)))
        return TELEM_ENOMEM;
    g->ncargs++;
    return 0;
}

/* ---- planning ---------------------------------------------------------- */

/* Reads the node names: explicit ones, else the node file. */
static int
s_nodes(cg_t *g, char *why, size_t why_size)
{
    size_t n = 0;
    int rc;
    if (g->nodes)
        return g->nnodes ? 0 : TELEM_ENOTFOUND;
    if ((rc = ac_nodefile_check(g->nodefile, &n, why, why_size)) != 0)
        return rc;
    ac_t *ac = ac_connect(g->nodefile, 0, &rc);
    if (!ac) {
        snprintf(why, why_size, "node file: %s", telem_strerror(rc));
        return rc;
    }
    n = ac_node_count(ac);
    const char **names = calloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; names && i < n; i++)
        names[i] = ac_node_name(ac, i);
    rc = names ? cg_set_nodes(g, names, n) : TELEM_ENOMEM;
    free(names);
    ac_close(&ac);
    return rc;
}

/* Whether `kernel` may name a metric cg_<kernel>_seconds: [A-Za-z0-9_]. */
static int
s_kernel_word(const char *kernel)
{
    for (const char *p = kernel; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9')))
            return 0;
    return *kernel != '\0';
}

/* Checks the test and names its metric.  A kernel the backend lacks is
 * the collector program's to decide when one was given. */
static int
s_test(cg_t *g, char *why, size_t why_size)
{
    if (g->user_test)
        return 0;
    const telem_backend_vt_t *vt = telem_backend_find(g->backend);
    const char *kernel = g->kernel ? g->kernel : vt->kernels[0];
    char metric[TELEM_NAME_MAX + 1];
    int theirs = g->collector && g->kernel;
    if (theirs && !telem_backend_has_kernel(vt, kernel)
        && !s_kernel_word(kernel)) {
        snprintf(why, why_size, "kernel '%s': a collector program's kernel "
                 "is letters, digits and '_' (it names cg_<kernel>_seconds)",
                 kernel);
        return TELEM_EINVAL;
    }
    if (!theirs && !telem_backend_has_kernel(vt, kernel)) {
        snprintf(why, why_size, "backend %s has no kernel '%s' (it has %s; "
                 "a collector program of your own, --collector, may run "
                 "others)", vt->name, kernel, vt->kernels[0]);
        return TELEM_ENOTFOUND;
    }
    if (telem_collector_metric(metric, sizeof metric, kernel))
        return TELEM_EINVAL;
    return s_set_str(g, &g->metric, metric);
}

/* The devices every node runs, given this machine's count (0: unknown). */
static int
s_devices(cg_t *g, size_t nmachine, char *why, size_t why_size)
{
    if (g->per_node || g->devices) {
        for (size_t i = 0; !g->spawn && i < g->ndevices; i++)
            if ((size_t) g->devices[i] >= nmachine) {
                snprintf(why, why_size, "device %ld: this machine has %zu "
                         "%s devices", g->devices[i], nmachine, g->backend);
                return TELEM_EINVAL;
            }
        return 0;
    }
    if (nmachine == 0) {
        snprintf(why, why_size, "backend %s is not present here; name the "
                 "devices of the remote nodes", g->backend);
        return TELEM_EUNSUPPORTED;
    }
    if (!(g->devices = malloc(nmachine * sizeof *g->devices)))
        return TELEM_ENOMEM;
    for (size_t i = 0; i < nmachine; i++)
        g->devices[i] = (long) i;
    g->ndevices = nmachine;
    return 0;
}

/* Fills pins and phases of the collectors (local spawn only): device i of
 * node k on machine device (i + k x per) mod the devices used (all, or the
 * local list); collectors sharing one take turns in the period (or, with
 * spread repetitions, in period / reps). */
static int
s_map(cg_t *g, const telem_backend_t *b, char *why, size_t why_size)
{
    size_t nm = telem_backend_ndevices(b);
    size_t nuse = g->nlocal ? g->nlocal : nm;
    size_t per = g->per_node ? 1 : g->ndevices;
    for (size_t i = 0; i < g->nlocal; i++)
        if ((size_t) g->local[i] >= nm) {
            snprintf(why, why_size, "local device %ld: this machine has %zu "
                     "%s devices", g->local[i], nm, g->backend);
            return TELEM_EINVAL;
        }
    size_t *share = calloc(nm, sizeof *share);
    size_t *seen = calloc(nm, sizeof *seen);
    if (!share || !seen) {
        free(share);
        free(seen);
        return TELEM_ENOMEM;
    }
    for (size_t j = 0; j < g->ncolls; j++) {
        cg__coll_t *c = &g->colls[j];
        size_t k = j / per, p = j % per;
        size_t idx = g->per_node ? 0 : (size_t) g->devices[p];
        size_t u = (idx + k * per) % nuse;
        c->pin = (int) (g->nlocal ? (size_t) g->local[u] : u);
        snprintf(c->pin_id, sizeof c->pin_id, "%s",
                 telem_backend_device(b, (size_t) c->pin)->id);
        share[c->pin]++;
    }
    int64_t turn = g->spread ? g->period_ns / g->reps : g->period_ns;
    for (size_t j = 0; j < g->ncolls; j++) {
        cg__coll_t *c = &g->colls[j];
        size_t s = seen[c->pin]++;
        c->phase_ns = (int64_t) ((double) turn * (double) s
                                 / (double) share[c->pin]);
    }
    free(share);
    free(seen);
    return 0;
}

/* Keeps only the collectors of g->only (cg_set_only): their pins are
 * the node's own devices unless a local device list asked for the map. */
static int
s_keep_only(cg_t *g, const telem_backend_t *b, char *why, size_t why_size)
{
    size_t k = 0;
    for (size_t j = 0; j < g->ncolls; j++) {
        cg__coll_t c = g->colls[j];
        if (strcmp(c.node, g->only) != 0) {
            free(c.node);
            continue;
        }
        if (b && !g->spawn && !g->nlocal && !g->per_node) {
            c.pin = c.device;
            c.phase_ns = 0;
            snprintf(c.pin_id, sizeof c.pin_id, "%s",
                     telem_backend_device(b, (size_t) c.pin)->id);
        }
        g->colls[k++] = c;
    }
    g->ncolls = k;
    if (k == 0) {
        snprintf(why, why_size, "node '%s' is not in the job's node list",
                 g->only);
        return TELEM_ENOTFOUND;
    }
    return 0;
}

/* Builds the collector list, node-major. */
static int
s_plan(cg_t *g, const telem_backend_t *b, char *why, size_t why_size)
{
    size_t per = g->per_node ? 1 : g->ndevices;
    g->ncolls = g->nnodes * per;
    if (!(g->colls = calloc(g->ncolls ? g->ncolls : 1, sizeof *g->colls)))
        return TELEM_ENOMEM;
    for (size_t j = 0; j < g->ncolls; j++) {
        cg__coll_t *c = &g->colls[j];
        c->device = g->per_node ? -1 : (int) g->devices[j % per];
        c->pin = g->spawn || g->per_node ? -1 : c->device;
        c->pidfd = -1;
        c->exit_code = -1;
        if (!(c->node = strdup(g->nodes[j / per])))
            return TELEM_ENOMEM;
    }
    int rc = g->spawn || !b ? 0 : s_map(g, b, why, why_size);
    return rc || !g->only ? rc : s_keep_only(g, b, why, why_size);
}

/* Everything before the first spawn. */
static int
s_prepare(cg_t *g, char *why, size_t why_size)
{
    int rc, err;
    char bwhy[256];
    if ((rc = s_test(g, why, why_size)) || (rc = s_nodes(g, why, why_size)))
        return rc;
    telem_backend_t *b = telem_backend_open(g->backend, bwhy, sizeof bwhy,
                                            &err);
    if (!b && !g->spawn) {
        snprintf(why, why_size, "%s", bwhy);
        return err;
    }
    rc = s_devices(g, b ? telem_backend_ndevices(b) : 0, why, why_size);
    if (rc == 0)
        rc = s_plan(g, b, why, why_size);
    telem_backend_close(&b);
    return rc;
}

int
cg_start(cg_t *g, char *why, size_t why_size)
{
    char scratch[8];
    if (!why || why_size == 0) {
        why = scratch;
        why_size = sizeof scratch;
    }
    why[0] = '\0';
    if (g->started)
        return TELEM_ESTATE;
    int rc = s_prepare(g, why, why_size);
    if (rc)
        return rc;
    g->started = 1;
    int64_t now = telem_now_ns();
    g->epoch_ns = (now / g->period_ns + 1) * g->period_ns;
    for (size_t i = 0; i < g->ncolls; i++)
        if ((rc = cg__spawn(g, i, why, why_size)) != 0) {
            cg_stop(g, 0);
            return rc;
        }
    return 0;
}

int
cg_restart(cg_t *g, size_t i, char *why, size_t why_size)
{
    char scratch[8];
    if (!why || why_size == 0) {
        why = scratch;
        why_size = sizeof scratch;
    }
    why[0] = '\0';
    if (!g->started || i >= g->ncolls)
        return g->started ? TELEM_EINVAL : TELEM_ESTATE;
    cg__coll_t *c = &g->colls[i];
    if (c->state != CG_EXITED)
        return TELEM_ESTATE;
    c->exit_code = -1;
    c->signal = 0;
    int rc = cg__spawn(g, i, why, why_size);
    if (rc)
        c->state = CG_EXITED;
    return rc;
}

/* ---- reading ----------------------------------------------------------- */

size_t
cg_count(const cg_t *g)
{
    return g->started ? g->ncolls : 0;
}

int
cg_info(const cg_t *g, size_t i, cg_info_t *out)
{
    if (i >= cg_count(g))
        return TELEM_EINVAL;
    const cg__coll_t *c = &g->colls[i];
    *out = (cg_info_t) { c->node, c->device, c->pin, c->pin_id, c->phase_ns,
                         c->pid, c->state, c->exit_code, c->signal };
    return 0;
}

int64_t cg_epoch(const cg_t *g) { return g->epoch_ns; }
const char *cg_name(const cg_t *g) { return g->name; }
const char *cg_backend(const cg_t *g) { return g->backend; }
int64_t cg_period(const cg_t *g) { return g->period_ns; }
const char *cg_metric(const cg_t *g) { return g->metric; }

int
cg_is_collector(int argc, char **argv)
{
    return argc > 1 && argv && argv[1]
           && strcmp(argv[1], TELEM_COLLECTOR_FLAG) == 0;
}

int
cg_collector_main(int argc, char **argv, const char *metric, cg_test_fn fn,
                  void *arg)
{
    return telem_collector_main(argc, argv, metric, fn, arg);
}
